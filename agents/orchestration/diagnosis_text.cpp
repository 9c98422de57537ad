#include "agents/orchestration/diagnosis_text.h"

#include <cmath>

#include "source/analysis/vmem.h"

namespace mk::agents {

namespace {

std::string bytes_text(double bytes) {
  return analysis::format_bytes(static_cast<int64_t>(std::llround(bytes)));
}

std::string axes_text(const std::vector<int>& axes) {
  std::string out = axes.size() == 1 ? "grid axis " : "grid axes ";
  for (size_t i = 0; i < axes.size(); ++i) out += (i ? ", " : "") + std::to_string(axes[i]);
  return out;
}

// "HBM-bound", "over the VMEM budget", ...
std::string bound_text(const Diagnosis& d) {
  if (d.bound == "unknown") return "bound unknown";
  if (d.bound == "VMEM") return "over the VMEM budget";
  return d.bound + "-bound";
}

}  // namespace

std::string diagnosis_label(const Diagnosis& d) {
  std::string label = d.bound == "VMEM" ? "over VMEM" : bound_text(d);
  if (d.roofline_fraction)
    label += " \u00b7 " + percent_text(*d.roofline_fraction) + " of roofline";
  return label;
}

std::vector<std::string> diagnosis_lines(const Diagnosis& d, const std::string& score_label) {
  std::vector<std::string> lines;
  std::string bound = bound_text(d);
  if (d.bound == "unknown") {
    bound += ": the lowering facts or the model's predictions are missing";
  } else if (d.compute_s && d.memory_s && d.overhead_s) {
    bound += ": the model puts compute at " + analysis::format_seconds(*d.compute_s) +
             ", HBM traffic at " + analysis::format_seconds(*d.memory_s) +
             ", grid-step overhead at " + analysis::format_seconds(*d.overhead_s);
  }
  lines.push_back(bound);

  for (const Refetch& r : d.refetches) {
    std::string line = "re-fetched: " + r.operand + " of " + r.kernel + " " + times_text(r.ratio);
    if (!r.along_axes.empty())
      line += " along " + axes_text(r.along_axes) +
              " (its index map ignores that axis, so the same block comes back from HBM)";
    if (r.extra_bytes > 0) line += ": " + bytes_text(r.extra_bytes) + " more reads";
    lines.push_back(line);
  }

  if (d.hbm_bytes) {
    std::string line = "HBM traffic: " + bytes_text(*d.hbm_bytes);
    if (d.min_bytes && *d.min_bytes > 0)
      line += ", " + times_text(*d.hbm_bytes / *d.min_bytes) + " the task's minimum of " +
              bytes_text(*d.min_bytes);
    lines.push_back(line);
  } else if (d.min_bytes) {
    lines.push_back("HBM traffic: unknown; the task's minimum is " + bytes_text(*d.min_bytes));
  }

  if (d.vmem_bytes && d.vmem_limit_bytes) {
    const double room = *d.vmem_limit_bytes - *d.vmem_bytes;
    lines.push_back("VMEM: " + bytes_text(*d.vmem_bytes) + " per grid step of " +
                    bytes_text(*d.vmem_limit_bytes) + ": " +
                    (room >= 0 ? bytes_text(room) + " headroom" : bytes_text(-room) + " over"));
  } else if (d.vmem_bytes) {
    lines.push_back("VMEM: " + bytes_text(*d.vmem_bytes) + " per grid step (no limit known)");
  }

  if (d.roofline_s) {
    std::string line;
    if (d.roofline_fraction && *d.roofline_fraction > 0) {
      line = percent_text(*d.roofline_fraction) +
             " of the roofline: the task's minimum work takes " +
             analysis::format_seconds(*d.roofline_s) + " at the target's roofline, this kernel " +
             analysis::format_seconds(*d.roofline_s / *d.roofline_fraction);
      if (!score_label.empty()) line += ", " + score_label;
    } else {
      line = "roofline: the task's minimum work takes " + analysis::format_seconds(*d.roofline_s) +
             " at the target's roofline (no time of this kernel to compare)";
    }
    lines.push_back(line);
  }

  if (d.pallas_share)
    lines.push_back("device trace: " + percent_text(*d.pallas_share) +
                    " of the op time in Pallas kernels");
  return lines;
}

}  // namespace mk::agents

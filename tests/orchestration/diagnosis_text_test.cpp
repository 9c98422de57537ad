// The diagnosis as people read it, on constructed diagnoses: the short label, and the full
// summary's lines (the bound with the model's split, re-fetched operands with their grid axes,
// HBM bytes against the task's minimum, VMEM headroom or excess, the roofline against the named
// score); facts the diagnosis lacks are left out.
#include "agents/orchestration/diagnosis_text.h"

#include <gtest/gtest.h>

namespace mk::agents {
namespace {

bool dt_has_line(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines)
    if (l == text) return true;
  return false;
}

std::string dt_joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

Diagnosis dt_refetching_matmul() {
  Diagnosis d;
  d.bound = "HBM";
  d.compute_s = 10e-6;
  d.memory_s = 50e-6;
  d.overhead_s = 20e-6;
  d.hbm_bytes = 40.0 * (1 << 20);
  d.min_bytes = 10.0 * (1 << 20);
  d.vmem_bytes = 2.0 * (1 << 20);
  d.vmem_limit_bytes = 16.0 * (1 << 20);
  d.roofline_s = 15e-6;
  d.roofline_fraction = 0.25;
  Refetch r;
  r.operand = "b_ref";
  r.kernel = "_matmul";
  r.ratio = 8;
  r.along_axes = {0};
  r.extra_bytes = 28.0 * (1 << 20);
  d.refetches.push_back(r);
  return d;
}

TEST(DiagnosisText, TheLabelIsTheBoundAndTheRooflineFraction) {
  EXPECT_EQ(diagnosis_label(dt_refetching_matmul()), "HBM-bound \u00b7 25% of roofline");
  Diagnosis vmem;
  vmem.bound = "VMEM";
  EXPECT_EQ(diagnosis_label(vmem), "over VMEM");
  EXPECT_EQ(diagnosis_label(Diagnosis{}), "bound unknown");
}

TEST(DiagnosisText, TheFullSummaryHasOneFactALine) {
  const auto lines = diagnosis_lines(dt_refetching_matmul(), "predicted (model, v5e)");
  ASSERT_EQ(lines.size(), 5u) << dt_joined(lines);
  EXPECT_EQ(lines[0],
            "HBM-bound: the model puts compute at 10.0 us, HBM traffic at 50.0 us, grid-step "
            "overhead at 20.0 us");
  EXPECT_EQ(lines[1],
            "re-fetched: b_ref of _matmul 8x along grid axis 0 (its index map ignores that axis, "
            "so the same block comes back from HBM): 28 MiB more reads");
  EXPECT_TRUE(dt_has_line(lines, "HBM traffic: 40 MiB, 4x the task's minimum of 10 MiB"))
      << dt_joined(lines);
  EXPECT_TRUE(dt_has_line(lines, "VMEM: 2 MiB per grid step of 16 MiB: 14 MiB headroom"))
      << dt_joined(lines);
  EXPECT_TRUE(dt_has_line(lines,
                          "25% of the roofline: the task's minimum work takes 15.0 us at the "
                          "target's roofline, this kernel 60.0 us, predicted (model, v5e)"))
      << dt_joined(lines);
}

TEST(DiagnosisText, OverTheBudgetSaysByHowMuchAndMissingFactsAreLeftOut) {
  Diagnosis d;
  d.bound = "VMEM";
  d.vmem_bytes = 66.0 * (1 << 20);
  d.vmem_limit_bytes = 16.0 * (1 << 20);
  d.refetches.push_back({"args[1]", "_matmul", 2, {0, 2}, 0});
  const auto lines = diagnosis_lines(d, "");
  ASSERT_EQ(lines.size(), 3u) << dt_joined(lines);
  EXPECT_EQ(lines[0], "over the VMEM budget");
  EXPECT_NE(lines[1].find("2x along grid axes 0, 2"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[1].find("more reads"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[2], "VMEM: 66 MiB per grid step of 16 MiB: 50 MiB over");
}

TEST(DiagnosisText, AnUnknownBoundSaysWhyAndGuessesNothing) {
  const auto lines = diagnosis_lines(Diagnosis{}, "measured (device)");
  ASSERT_EQ(lines.size(), 1u) << dt_joined(lines);
  EXPECT_EQ(lines[0], "bound unknown: the lowering facts or the model's predictions are missing");
  Diagnosis device;
  device.bound = "compute";
  device.pallas_share = 0.72;
  device.roofline_s = 1e-3;  // no score: the fraction is not made up
  const auto shown = diagnosis_lines(device, "measured (device)");
  EXPECT_TRUE(dt_has_line(shown,
                          "roofline: the task's minimum work takes 1 ms at the target's "
                          "roofline (no time of this kernel to compare)"))
      << dt_joined(shown);
  EXPECT_TRUE(dt_has_line(shown, "device trace: 72% of the op time in Pallas kernels"))
      << dt_joined(shown);
}

}  // namespace
}  // namespace mk::agents

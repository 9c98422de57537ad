#include "source/pallas/kernel_regions.h"

#include <algorithm>
#include <unordered_set>

#include "source/pallas/forwarding_text.h"
#include "source/pallas/kernel_model.h"

namespace mk::pallas {

namespace {

using syntax::TopLevelUnit;
using Kind = TopLevelUnit::Kind;

bool mentions_any(std::string_view text, const std::vector<std::string>& names) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return text.find(n) != std::string_view::npos; });
}

// Calls `f` with the names a module-level statement may bind: the words after `as`, and those
// before its first `=` that is no comparison. A superset of the aliases and targets the
// extractor and evaluator read from a parse.
template <class F>
void for_each_bound_name(std::string_view text, F&& f) {
  bool after_as = false;
  syntax::for_each_word(text, [&](std::string_view w) {
    if (after_as) f(w);
    after_as = w == "as";
  });
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '=') continue;
    const char before = i > 0 ? text[i - 1] : ' ';
    const char after = i + 1 < text.size() ? text[i + 1] : ' ';
    if (after == '=' || before == '=' || before == '!' || before == '<' || before == '>') continue;
    syntax::for_each_word(text.substr(0, i), f);
    return;
  }
}

// Past blanks, newlines and comments from `i`.
size_t skip_blanks(std::string_view text, size_t i) {
  while (i < text.size()) {
    const char c = text[i];
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\\') {
      ++i;
    } else {
      break;
    }
  }
  return i;
}

// The plain name an argument list opening at `open` starts with (`kernel=name` too), when it is
// the whole argument; empty otherwise.
std::string_view first_argument_name(std::string_view text, size_t open) {
  auto name_at = [&](size_t i) {
    size_t end = i;
    while (end < text.size() && syntax::is_word_char(text[end])) ++end;
    return text.substr(i, end - i);
  };
  size_t i = skip_blanks(text, open + 1);
  std::string_view name = name_at(i);
  size_t after = skip_blanks(text, i + name.size());
  if (name == "kernel" && after < text.size() && text[after] == '=' &&
      (after + 1 >= text.size() || text[after + 1] != '=')) {
    i = skip_blanks(text, after + 1);
    name = name_at(i);
    after = skip_blanks(text, i + name.size());
  }
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return {};
  if (after < text.size() && text[after] != ',' && text[after] != ')') return {};
  return name;
}

// Calls `f` with every name `text` passes first to one of `callers` (`pallas_call(body, ...)`,
// `functools.partial(body, n=2)`, `my_call(kernel=body)`): where a kernel goes.
template <class F>
void for_each_kernel_argument(std::string_view text,
                              const std::unordered_set<std::string_view>& callers, F&& f) {
  for (size_t open = text.find('('); open != std::string_view::npos;
       open = text.find('(', open + 1)) {
    size_t end = open;
    while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\t')) --end;
    size_t start = end;
    while (start > 0 && syntax::is_word_char(text[start - 1])) --start;
    if (start == end || !callers.contains(text.substr(start, end - start))) continue;
    if (const std::string_view name = first_argument_name(text, open); !name.empty()) f(name);
  }
}

}  // namespace

KernelRegionFinder::KernelRegionFinder(std::string_view text)
    : text_(text), units_(syntax::top_level_units(text)) {
  for (size_t i = 0; i < units_.size(); ++i) {
    if (units_[i].kind == Kind::Definition) {
      binders_[units_[i].name].push_back(i);
      binder_names_.add(units_[i].name);
    }
    if (units_[i].kind != Kind::Simple) continue;
    for_each_bound_name(text_of(i), [&](std::string_view name) {
      binder_names_.add(name);
      std::vector<size_t>& units = binders_[name];
      if (units.empty() || units.back() != i) units.push_back(i);
    });
  }
}

std::string_view KernelRegionFinder::text_of(size_t unit) const {
  const syntax::ByteSpan span = units_[unit].span;
  return text_.substr(span.start, span.end - span.start);
}

std::vector<syntax::ByteSpan> KernelRegionFinder::imports() const {
  std::vector<syntax::ByteSpan> spans;
  for (const TopLevelUnit& u : units_)
    if (u.kind == Kind::Import) spans.push_back(u.span);
  return spans;
}

KernelRegionFinder::Seeds KernelRegionFinder::seeds(
    const std::vector<std::string>& callee_names) const {
  std::vector<std::string> triggers = {"pallas_call"};
  triggers.insert(triggers.end(), callee_names.begin(), callee_names.end());
  const size_t base = triggers.size();
  for (size_t i = 0; i < units_.size(); ++i) {
    const std::string_view text = text_of(i);
    if (units_[i].kind != Kind::Definition &&
        std::any_of(triggers.begin(), triggers.begin() + static_cast<std::ptrdiff_t>(base),
                    [&](const std::string& t) { return text.find(t) != std::string::npos; }))
      for_each_bound_name(text, [&](std::string_view name) { triggers.emplace_back(name); });
  }

  Seeds seeds;
  std::vector<bool> seeded(units_.size(), false);
  // Imports and compound statements always (the backend, the wrappers' modules, names bound
  // anywhere in a block). A definition that mentions pallas_call is a site; if it passes its own
  // argument on (the extractor's test for a forwarder, by text), it may be a wrapper, whose
  // callers are sites too.
  std::unordered_set<std::string_view>& wrappers = seeds.wrappers;
  syntax::NameFilter wrapper_names;
  auto add_wrapper = [&](size_t i) {
    wrapper_names.add(units_[i].name);
    return wrappers.insert(units_[i].name).second;
  };
  for (size_t i = 0; i < units_.size(); ++i) {
    const Kind kind = units_[i].kind;
    if (kind == Kind::Import || kind == Kind::Compound) {
      seeds.common.push_back(i);
    } else if (mentions_any(text_of(i), triggers)) {
      seeds.sites.push_back(i);
    } else {
      continue;
    }
    seeded[i] = true;
    if (kind == Kind::Definition &&
        std::any_of(triggers.begin(), triggers.end(),
                    [&](const auto& t) { return passes_own_argument(text_of(i), t); }))
      add_wrapper(i);
  }
  for (bool grew = !wrappers.empty(); grew;) {
    grew = false;
    for (size_t i = 0; i < units_.size(); ++i) {
      if (units_[i].kind != Kind::Definition || wrappers.contains(units_[i].name)) continue;
      std::vector<std::string_view> called;  // the wrappers it names
      syntax::for_each_word(text_of(i), [&](std::string_view w) {
        if (wrapper_names.may_contain(w) && wrappers.contains(w)) called.push_back(w);
      });
      if (called.empty()) continue;
      if (!seeded[i]) {
        seeded[i] = true;
        seeds.sites.push_back(i);
      }
      // A wrapper of a wrapper (a site already or not): its callers are sites too.
      if (std::any_of(called.begin(), called.end(),
                      [&](std::string_view w) { return passes_own_argument(text_of(i), w); }))
        grew = add_wrapper(i) || grew;
    }
  }
  std::sort(seeds.sites.begin(), seeds.sites.end());
  for (const auto& [name, flag] : TaskConventions::bindings()) {
    if (auto it = binders_.find(name); it != binders_.end())
      for (size_t i : it->second)
        if (!seeded[i]) seeds.common.push_back(i);
  }
  return seeds;
}

std::vector<bool> KernelRegionFinder::reach(const std::vector<size_t>& seeds) const {
  std::vector<bool> kept(units_.size(), false);
  std::vector<size_t> work;
  auto keep = [&](size_t i) {
    if (kept[i]) return;
    kept[i] = true;
    work.push_back(i);
  };
  for (size_t i : seeds) keep(i);
  // Whatever a kept statement names may be read by the analysis, through any of its bindings.
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    syntax::for_each_word(text_of(i), [&](std::string_view w) {
      if (!binder_names_.may_contain(w)) return;
      if (auto it = binders_.find(w); it != binders_.end())
        for (size_t b : it->second) keep(b);
    });
  }
  return kept;
}

KernelRegionFinder::Skipping KernelRegionFinder::skipping(
    const Seeds& seeds, const std::vector<std::string>& callee_names) const {
  Skipping out{std::vector<bool>(units_.size(), false), {"pallas_call", "partial"}};
  for (const std::string& name : callee_names) out.callers.insert(name);
  for (const std::vector<size_t>* group : {&seeds.common, &seeds.sites})
    for (size_t i : *group) out.seeded[i] = true;
  out.callers.insert(seeds.wrappers.begin(), seeds.wrappers.end());
  return out;
}

KernelRegions KernelRegionFinder::spans_of(const std::vector<bool>& kept,
                                           const Skipping& skipping) const {
  KernelRegions regions;
  const std::vector<bool>& seeded = skipping.seeded;
  const std::unordered_set<std::string_view>& callers = skipping.callers;
  std::unordered_set<std::string_view> kernels;
  for (size_t i = 0; i < units_.size(); ++i) {
    if (!kept[i]) continue;
    const syntax::ByteSpan span = units_[i].span;
    if (!regions.spans.empty() && regions.spans.back().end == span.start) {
      regions.spans.back().end = span.end;
    } else {
      regions.spans.push_back(span);
    }
    regions.bytes += span.end - span.start;
    for_each_kernel_argument(text_of(i), callers,
                             [&](std::string_view name) { kernels.insert(name); });
  }
  // A seed is read whole: a site's own def, a wrapper, what the task conventions bind.
  for (size_t i = 0; i < units_.size(); ++i) {
    const TopLevelUnit& u = units_[i];
    if (kept[i] && !seeded[i] && u.body.end > u.body.start && kernels.contains(u.name))
      regions.skipped.push_back({u.span.start, u.body});
  }
  return regions;
}

KernelRegions KernelRegionFinder::regions(const std::vector<std::string>& callee_names) const {
  Seeds s = seeds(callee_names);
  std::vector<size_t> all = s.common;
  all.insert(all.end(), s.sites.begin(), s.sites.end());
  return spans_of(reach(all), skipping(s, callee_names));
}

SplitKernelRegions KernelRegionFinder::split_regions(
    const std::vector<std::string>& callee_names) const {
  Seeds s = seeds(callee_names);
  SplitKernelRegions out;
  if (s.sites.size() < 2) {
    std::vector<size_t> all = s.common;
    all.insert(all.end(), s.sites.begin(), s.sites.end());
    out.all = spans_of(reach(all), skipping(s, callee_names));
    return out;
  }
  // Cut the sites where half of their text lies on each side; what they reach follows them.
  auto size_of = [&](size_t unit) { return units_[unit].span.end - units_[unit].span.start; };
  size_t total = 0;
  for (size_t i : s.sites) total += size_of(i);
  size_t cut = 1, before = size_of(s.sites[0]);
  while (cut + 1 < s.sites.size() && 2 * before < total) before += size_of(s.sites[cut++]);
  const auto middle = s.sites.begin() + static_cast<std::ptrdiff_t>(cut);
  std::vector<size_t> first = s.common, second = s.common;
  first.insert(first.end(), s.sites.begin(), middle);
  second.insert(second.end(), middle, s.sites.end());
  std::vector<bool> kept_first = reach(first);
  const std::vector<bool> kept_second = reach(second);
  const Skipping skip = skipping(s, callee_names);
  out.halves = {spans_of(kept_first, skip), spans_of(kept_second, skip)};
  // What the union of the sites reaches is the union of what each half reaches.
  for (size_t i = 0; i < kept_first.size(); ++i) kept_first[i] = kept_first[i] || kept_second[i];
  out.all = spans_of(kept_first, skip);
  return out;
}

}  // namespace mk::pallas

#include "source/pallas/kernel_regions.h"

#include <algorithm>
#include <unordered_set>

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

}  // namespace

KernelRegionFinder::KernelRegionFinder(std::string_view text)
    : text_(text), units_(syntax::top_level_units(text)) {
  for (size_t i = 0; i < units_.size(); ++i) {
    if (units_[i].kind == Kind::Definition) binders_[units_[i].name].push_back(i);
    if (units_[i].kind != Kind::Simple) continue;
    for_each_bound_name(text_of(i), [&](std::string_view name) {
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
  // anywhere in a block); a definition that mentions pallas_call may be a wrapper, whose callers
  // are sites too.
  std::unordered_set<std::string_view> wrappers;
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
    if (kind == Kind::Definition) wrappers.insert(units_[i].name);
  }
  for (bool grew = !wrappers.empty(); grew;) {
    grew = false;
    for (size_t i = 0; i < units_.size(); ++i) {
      if (seeded[i] || units_[i].kind != Kind::Definition) continue;
      bool calls = false;
      syntax::for_each_word(text_of(i),
                            [&](std::string_view w) { calls = calls || wrappers.contains(w); });
      if (!calls) continue;
      seeded[i] = true;
      seeds.sites.push_back(i);
      grew = wrappers.insert(units_[i].name).second || grew;
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
      if (auto it = binders_.find(w); it != binders_.end())
        for (size_t b : it->second) keep(b);
    });
  }
  return kept;
}

KernelRegions KernelRegionFinder::spans_of(const std::vector<bool>& kept) const {
  KernelRegions regions;
  for (size_t i = 0; i < units_.size(); ++i) {
    if (!kept[i]) continue;
    const syntax::ByteSpan span = units_[i].span;
    if (!regions.spans.empty() && regions.spans.back().end == span.start) {
      regions.spans.back().end = span.end;
    } else {
      regions.spans.push_back(span);
    }
    regions.bytes += span.end - span.start;
  }
  return regions;
}

KernelRegions KernelRegionFinder::regions(const std::vector<std::string>& callee_names) const {
  Seeds s = seeds(callee_names);
  s.common.insert(s.common.end(), s.sites.begin(), s.sites.end());
  return spans_of(reach(s.common));
}

SplitKernelRegions KernelRegionFinder::split_regions(
    const std::vector<std::string>& callee_names) const {
  Seeds s = seeds(callee_names);
  SplitKernelRegions out;
  if (s.sites.size() < 2) {
    s.common.insert(s.common.end(), s.sites.begin(), s.sites.end());
    out.all = spans_of(reach(s.common));
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
  out.halves = {spans_of(kept_first), spans_of(kept_second)};
  // What the union of the sites reaches is the union of what each half reaches.
  for (size_t i = 0; i < kept_first.size(); ++i) kept_first[i] = kept_first[i] || kept_second[i];
  out.all = spans_of(kept_first);
  return out;
}

}  // namespace mk::pallas

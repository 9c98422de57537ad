// Functions that forward their arguments to pallas_call (a project's own wrapper around it):
// what reaches pallas_call from a call of the wrapper. Plain data, so a description made from one
// file can be handed to the analysis of another.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "source/pallas/kernel_model.h"

namespace mk::pallas {

// Where one argument of the inner pallas_call comes from.
struct ForwardedArgument {
  enum class From {
    Parameter,        // the wrapper's parameter `parameter`
    ExtraPositional,  // the positional arguments the wrapper's *args took (spliced)
    ExtraKeywords,    // the keyword arguments the wrapper's **kwargs took (spliced)
  };
  From from = From::Parameter;
  std::string parameter;
  friend bool operator==(const ForwardedArgument&, const ForwardedArgument&) = default;
};

struct Forwarder {
  std::string name;  // how callers name it: "wrap" in its own file, "pkg.block.pallas_call" across
  std::vector<std::string> parameters;  // those that can be given by position, in order
  std::vector<std::string> keyword_only;
  bool star_args = false;
  bool star_kwargs = false;
  // The inner pallas_call's arguments; a keyword "" is a splice of the wrapper's **kwargs.
  std::vector<ForwardedArgument> positional;
  std::vector<std::pair<std::string, ForwardedArgument>> keywords;
  // What the keyword arguments the wrapper sets itself (to constants) make known.
  std::vector<std::string> fixed_keywords;
  std::optional<Backend> backend;
  std::optional<bool> interpret;
  std::optional<std::vector<std::string>> dimension_semantics;
  std::optional<int64_t> vmem_limit_bytes;
  // A workspace def that takes pallas_call's name but does not forward to Pallas' own (it runs
  // a kernel of its own, or none): its calls are no kernel site. Nothing above is set then.
  bool shadows_pallas_call = false;
  friend bool operator==(const Forwarder&, const Forwarder&) = default;
};

// The forwarders another file's analysis may call, keyed by the qualified name a call resolves to.
using ForwarderSet = std::map<std::string, Forwarder>;

// Changes whenever anything in the set changes (part of what a cached extraction depends on).
uint64_t fingerprint(const ForwarderSet& set);

// One call's arguments, as the inner pallas_call would receive them.
template <class Arg>
struct ArgumentList {
  std::vector<Arg> positional;
  std::vector<std::pair<std::string, Arg>> keywords;  // "" : a **splat passed on
};

// Maps a call of `f` to the inner pallas_call's arguments. `call.positional` / `keywords` are the
// call's own arguments; `splat_positional` / `splat_keywords` are its *x / **y, which go to the
// wrapper's *args / **kwargs. A positional parameter that the call leaves out (a wrapper default)
// ends the positional list: what follows cannot be placed.
template <class Arg>
ArgumentList<Arg> forward_call(const Forwarder& f, const ArgumentList<Arg>& call,
                               const std::vector<Arg>& splat_positional,
                               const std::vector<Arg>& splat_keywords) {
  std::map<std::string, Arg> named;
  std::vector<Arg> extra_positional;
  std::vector<std::pair<std::string, Arg>> extra_keywords;
  for (size_t i = 0; i < call.positional.size(); ++i) {
    if (i < f.parameters.size()) {
      named.emplace(f.parameters[i], call.positional[i]);
    } else {
      extra_positional.push_back(call.positional[i]);
    }
  }
  for (const Arg& a : splat_positional) extra_positional.push_back(a);
  auto is_named = [&](const std::string& k) {
    for (const auto* list : {&f.parameters, &f.keyword_only})
      for (const std::string& p : *list)
        if (p == k) return true;
    return false;
  };
  for (const auto& [k, a] : call.keywords) {
    if (is_named(k)) {
      named.emplace(k, a);
    } else {
      extra_keywords.emplace_back(k, a);
    }
  }
  for (const Arg& a : splat_keywords) extra_keywords.emplace_back("", a);

  ArgumentList<Arg> out;
  for (const ForwardedArgument& fa : f.positional) {
    if (fa.from == ForwardedArgument::From::ExtraPositional) {
      out.positional.insert(out.positional.end(), extra_positional.begin(), extra_positional.end());
      continue;
    }
    auto it = named.find(fa.parameter);
    if (fa.from != ForwardedArgument::From::Parameter || it == named.end()) break;
    out.positional.push_back(it->second);
  }
  for (const auto& [k, fa] : f.keywords) {
    if (fa.from == ForwardedArgument::From::ExtraKeywords) {
      out.keywords.insert(out.keywords.end(), extra_keywords.begin(), extra_keywords.end());
    } else if (fa.from == ForwardedArgument::From::Parameter) {
      if (auto it = named.find(fa.parameter); it != named.end())
        out.keywords.emplace_back(k, it->second);
    }
  }
  return out;
}

// Copies what the wrapper's own constant keywords make known onto a kernel decoded at a call of
// it, where the call did not say otherwise.
void apply_forwarded_facts(const Forwarder& f, Kernel& k);

}  // namespace mk::pallas

#include "source/pallas/forwarders.h"

#include <functional>

namespace mk::pallas {

uint64_t fingerprint(const ForwarderSet& set) {
  // A text that differs whenever any field does; std::hash over it is enough for cache keys.
  std::string text;
  auto add = [&](const std::string& s) {
    text += std::to_string(s.size());
    text += ':';
    text += s;
  };
  for (const auto& [key, f] : set) {
    add(key);
    add(f.name);
    for (const auto* list : {&f.parameters, &f.keyword_only, &f.fixed_keywords}) {
      text += '[';
      for (const std::string& p : *list) add(p);
      text += ']';
    }
    text += f.star_args ? 'a' : '-';
    text += f.star_kwargs ? 'k' : '-';
    for (const ForwardedArgument& a : f.positional) {
      text += static_cast<char>('0' + static_cast<int>(a.from));
      add(a.parameter);
    }
    for (const auto& [k, a] : f.keywords) {
      add(k);
      text += static_cast<char>('0' + static_cast<int>(a.from));
      add(a.parameter);
    }
    text += f.backend ? static_cast<char>('0' + static_cast<int>(*f.backend)) : '-';
    text += f.interpret ? (*f.interpret ? 'T' : 'F') : '-';
    if (f.dimension_semantics) {
      text += '(';
      for (const std::string& s : *f.dimension_semantics) add(s);
      text += ')';
    }
    if (f.vmem_limit_bytes) add(std::to_string(*f.vmem_limit_bytes));
    text += f.shadows_pallas_call ? 's' : '-';
    text += ';';
  }
  // 0 means "no forwarders" in the cache key; a non-empty set never hashes to it.
  const uint64_t h = std::hash<std::string>{}(text);
  return set.empty() ? 0 : (h == 0 ? 1 : h);
}

void apply_forwarded_facts(const Forwarder& f, Kernel& k) {
  if (f.backend) k.backend = *f.backend;
  if (f.interpret && !k.interpret) k.interpret = f.interpret;
  if (f.dimension_semantics && !k.dimension_semantics) {
    k.dimension_semantics = f.dimension_semantics;
    k.dimension_semantics_span = k.call_span;  // the wrapper's call says them
  }
  if (f.vmem_limit_bytes && !k.vmem_limit_bytes) k.vmem_limit_bytes = f.vmem_limit_bytes;
}

}  // namespace mk::pallas

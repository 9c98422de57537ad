// Test helper: prints the rule-based rewrites of a Python file, its derived search space and each
// value applied with apply_config, as one JSON object on stdout, for
// tests/agents/test_rewrites_lower.py. Usage: mk_rewrite_variants FILE [KERNEL]
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agents/rewrites/rule_rewrites.h"
#include "agents/tuning/search_space.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: mk_rewrite_variants FILE [KERNEL]\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "cannot read " << argv[1] << "\n";
    return 2;
  }
  std::ostringstream text;
  text << in.rdbuf();
  try {
    nlohmann::json out;
    out["variants"] = nlohmann::json::array();
    for (const auto& v : mk::agents::rule_based_rewrites(text.str(), argc > 2 ? argv[2] : "")) {
      out["variants"].push_back(
          {{"strategy", v.strategy}, {"description", v.description}, {"source", v.source}});
    }
    const auto params = mk::agents::derive_search_space(text.str());
    out["space"] = mk::agents::to_worker_space(params, 64);
    // Each non-current value written in with apply_config, one parameter at a time.
    out["configs"] = nlohmann::json::array();
    for (const auto& p : params) {
      for (size_t i = 1; i < p.values.size(); ++i) {
        const nlohmann::json config = {{p.name, p.values[i]}};
        out["configs"].push_back(
            {{"config", config}, {"source", mk::agents::apply_config(text.str(), config)}});
      }
    }
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// Shared by the Pallas model tests: parse a Python snippet and extract its kernels.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "source/pallas/kernel_extractor.h"
#include "source/syntax/python_tree.h"

namespace mk::test_util {

// Imports every test snippet starts with, plus a trivial kernel named `kernel`.
inline const std::string kPrelude =
    "import functools\n"
    "import jax\n"
    "import jax.numpy as jnp\n"
    "from jax.experimental import pallas as pl\n"
    "from jax.experimental.pallas import tpu as pltpu\n\n"
    "def kernel(x_ref, o_ref):\n"
    "    o_ref[...] = x_ref[...]\n\n";

struct Extracted {
  std::string source;
  pallas::PallasModel model;
  std::string text(pallas::Span s) const { return source.substr(s.start, s.end - s.start); }
  const pallas::Kernel& only() const {
    EXPECT_EQ(model.kernels.size(), 1u) << source;
    return model.kernels.at(0);
  }
};

inline Extracted extract(const std::string& body, bool prelude = true) {
  Extracted e;
  e.source = prelude ? kPrelude + body : body;
  syntax::PythonTree tree;
  tree.parse(e.source);
  e.model = pallas::extract_pallas_model(tree.root(), e.source);
  return e;
}

inline std::vector<std::optional<int64_t>> dims(std::initializer_list<int64_t> values) {
  std::vector<std::optional<int64_t>> out;
  for (int64_t v : values) out.emplace_back(v);
  return out;
}

}  // namespace mk::test_util

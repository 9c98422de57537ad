#include "knowledge/kernel_class.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace mk::knowledge {

namespace {

// snake_case, camelCase and digits all split into lower-case words: "FlashAttnFwd" ->
// flash, attn, fwd; "matmul_bf16" -> matmul, bf16.
std::vector<std::string> name_words(const std::vector<std::string>& names) {
  std::vector<std::string> words;
  for (const std::string& name : names) {
    std::string word;
    auto flush = [&] {
      if (!word.empty()) words.push_back(word);
      word.clear();
    };
    for (size_t i = 0; i < name.size(); ++i) {
      const char c = name[i];
      const bool upper = c >= 'A' && c <= 'Z';
      const bool lower = c >= 'a' && c <= 'z';
      const bool digit = c >= '0' && c <= '9';
      if (!upper && !lower && !digit) {
        flush();
        continue;
      }
      // A capital after a lower-case letter starts a new word (camelCase).
      if (upper && i > 0 && name[i - 1] >= 'a' && name[i - 1] <= 'z') flush();
      word.push_back(upper ? static_cast<char>(c - 'A' + 'a') : c);
    }
    flush();
  }
  return words;
}

struct ClassWords {
  std::string_view kernel_class;
  std::array<std::string_view, 12> words;  // exact words, or prefixes ending in '*'
};

// First match wins, so the more specific classes come first (a fused "attention" kernel also
// has matmuls and a softmax inside).
constexpr std::array<ClassWords, 8> kClassWords = {{
    {"attention", {"attention", "attn", "flash", "mha", "mqa", "gqa", "sdpa", "paged*"}},
    {"convolution", {"conv*", "convolution"}},
    {"matmul", {"matmul*", "gemm", "gemv", "mm", "bmm", "dot", "linear", "dense", "einsum"}},
    {"normalization", {"norm", "*norm", "layernorm", "rmsnorm", "normalize", "normalization"}},
    {"softmax", {"softmax", "logsumexp", "lse"}},
    {"scan", {"scan", "cumsum", "cumprod", "prefix"}},
    {"reduction",
     {"reduce", "reduction", "sum", "mean", "max", "min", "argmax", "argmin", "prod", "amax"}},
    {"elementwise",
     {"elementwise", "add", "mul", "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "scale",
      "copy", "activation"}},
}};

bool word_matches(std::string_view word, std::string_view pattern) {
  if (pattern.empty()) return false;
  if (pattern.back() == '*') return word.starts_with(pattern.substr(0, pattern.size() - 1));
  if (pattern.front() == '*') return word.ends_with(pattern.substr(1));
  return word == pattern;
}

}  // namespace

std::string kernel_class(const KernelFacts& facts) {
  const std::vector<std::string> words = name_words(facts.names);
  for (const ClassWords& entry : kClassWords) {
    for (const std::string& word : words) {
      for (std::string_view pattern : entry.words) {
        if (word_matches(word, pattern)) return std::string(entry.kernel_class);
      }
    }
  }

  if (facts.input_ranks.empty() || facts.output_ranks.empty()) return "other";
  const int max_in = *std::max_element(facts.input_ranks.begin(), facts.input_ranks.end());
  const int min_out = *std::min_element(facts.output_ranks.begin(), facts.output_ranks.end());
  const auto matrices = std::count_if(facts.input_ranks.begin(), facts.input_ranks.end(),
                                      [](int r) { return r >= 2; });
  // Two matrix operands and a carried grid axis: the K loop of a matmul.
  if (matrices >= 2 && min_out >= 2 && facts.has_arbitrary_axis) return "matmul";
  if (min_out < max_in || facts.has_arbitrary_axis) return "reduction";
  const bool same_rank = std::all_of(facts.input_ranks.begin(), facts.input_ranks.end(),
                                     [&](int r) { return r == max_in; }) &&
                         std::all_of(facts.output_ranks.begin(), facts.output_ranks.end(),
                                     [&](int r) { return r == max_in; });
  return same_rank ? "elementwise" : "other";
}

}  // namespace mk::knowledge

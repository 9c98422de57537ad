// USD per million tokens per model, and the cost of one call's usage.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "agents/llm/llm_client.h"

namespace mk::llm {

struct ModelPrice {
  double input_per_million = 0;
  double output_per_million = 0;
  double cached_input_per_million = 0;  // cached prompt tokens are billed at this rate instead
};

class PriceTable {
 public:
  // The built-in table (agents/llm/data/prices.json, embedded at build time).
  static PriceTable defaults();
  // Adds or replaces models from JSON text shaped like the built-in file. Throws LlmError(Config)
  // with the reason when the text is not such a table.
  void merge_json(const std::string& text, const std::string& origin);
  // merge_json of a file's contents; Config error when it cannot be read.
  void merge_file(const std::string& path);

  // Exact name first, then the longest listed prefix ("gpt-4o-2024-08-06" -> "gpt-4o").
  std::optional<ModelPrice> find(const std::string& model) const;
  // Usage::input_tokens includes the cached ones; 0 when the model has no price.
  double cost_usd(const std::string& model, const Usage& usage) const;

  void set(const std::string& model, ModelPrice price) { prices_[model] = price; }

 private:
  std::map<std::string, ModelPrice> prices_;
};

}  // namespace mk::llm

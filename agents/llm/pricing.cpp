#include "agents/llm/pricing.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace mk::llm {

extern const char* const kDefaultPricesJson;

PriceTable PriceTable::defaults() {
  static const PriceTable table = [] {
    PriceTable built_in;
    built_in.merge_json(kDefaultPricesJson, "built-in prices.json");
    return built_in;
  }();
  return table;
}

void PriceTable::merge_json(const std::string& text, const std::string& origin) {
  nlohmann::json root = nlohmann::json::parse(text, nullptr, false);
  if (root.is_discarded() || !root.is_object() || !root.contains("models") ||
      !root["models"].is_object())
    throw LlmError(
        ErrorKind::Config,
        "price table " + origin + ": expected {\"models\": {NAME: {input, output, cached_input}}}");
  for (const auto& item : root["models"].items()) {
    // Named copies: clang 14 cannot capture structured bindings in the lambda below.
    const std::string& model = item.key();
    const nlohmann::json& entry = item.value();
    auto number = [&](const char* field, bool required) {
      if (!entry.is_object() || (required && !entry.contains(field)))
        throw LlmError(ErrorKind::Config, "price table " + origin + ": model '" + model +
                                              "' needs a number '" + field + "'");
      if (!entry.contains(field)) return -1.0;
      const auto& value = entry[field];
      if (!value.is_number() || value.get<double>() < 0)
        throw LlmError(ErrorKind::Config, "price table " + origin + ": '" + model + "." + field +
                                              "' must be a number >= 0");
      return value.get<double>();
    };
    ModelPrice price;
    price.input_per_million = number("input", true);
    price.output_per_million = number("output", true);
    double cached = number("cached_input", false);
    price.cached_input_per_million = cached < 0 ? price.input_per_million : cached;
    prices_[model] = price;
  }
}

void PriceTable::merge_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw LlmError(ErrorKind::Config, "cannot read price table " + path);
  std::stringstream text;
  text << in.rdbuf();
  merge_json(text.str(), path);
}

std::optional<ModelPrice> PriceTable::find(const std::string& model) const {
  if (auto it = prices_.find(model); it != prices_.end()) return it->second;
  const ModelPrice* best = nullptr;
  size_t best_length = 0;
  for (const auto& [name, price] : prices_) {
    if (model.rfind(name, 0) == 0 && name.size() > best_length) {
      best = &price;
      best_length = name.size();
    }
  }
  if (best) return *best;
  return std::nullopt;
}

double PriceTable::cost_usd(const std::string& model, const Usage& usage) const {
  auto price = find(model);
  if (!price) return 0;
  double cached = static_cast<double>(usage.cached_input_tokens);
  double uncached = static_cast<double>(usage.input_tokens - usage.cached_input_tokens);
  if (uncached < 0) uncached = 0;
  return (uncached * price->input_per_million + cached * price->cached_input_per_million +
          static_cast<double>(usage.output_tokens) * price->output_per_million) /
         1e6;
}

}  // namespace mk::llm

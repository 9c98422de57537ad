#include "source/analysis/syntax_findings.h"

#include <string>

#include "source/syntax/node_util.h"

namespace mk::analysis {

namespace {

// The first line of what the parser could not place, short enough for one message.
std::string excerpt(TSNode node, std::string_view source) {
  std::string_view text = syntax::text_of(node, source);
  text = text.substr(0, text.find('\n'));
  if (text.size() > 40) return std::string(text.substr(0, 40)) + "...";
  return std::string(text);
}

void collect(TSNode node, std::string_view source, size_t limit, std::vector<Finding>& out) {
  if (out.size() >= limit || !ts_node_has_error(node)) return;
  const pallas::Span span{ts_node_start_byte(node), ts_node_end_byte(node)};
  if (ts_node_is_missing(node)) {
    out.push_back({"MK000", Severity::Error, span,
                   std::string("syntax error: missing '") + ts_node_type(node) + "'", kNoKernel});
    return;
  }
  if (ts_node_is_error(node)) {
    const std::string text = excerpt(node, source);
    out.push_back({"MK000", Severity::Error, span,
                   text.empty() ? "syntax error" : "syntax error at '" + text + "'", kNoKernel});
    return;
  }
  const uint32_t n = ts_node_child_count(node);
  for (uint32_t i = 0; i < n; ++i) collect(ts_node_child(node, i), source, limit, out);
}

}  // namespace

std::vector<Finding> syntax_findings(TSNode root, std::string_view source, size_t limit) {
  std::vector<Finding> out;
  collect(root, source, limit, out);
  return out;
}

}  // namespace mk::analysis

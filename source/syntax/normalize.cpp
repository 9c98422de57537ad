#include "source/syntax/normalize.h"

#include <vector>

#include "source/syntax/node_util.h"
#include "source/syntax/python_tree.h"

namespace mk::syntax {

namespace {

void collect_comments(TSNode node, std::vector<std::pair<uint32_t, uint32_t>>& out) {
  if (is(node, "comment")) {
    out.emplace_back(ts_node_start_byte(node), ts_node_end_byte(node));
    return;
  }
  const uint32_t n = ts_node_child_count(node);
  for (uint32_t i = 0; i < n; ++i) collect_comments(ts_node_child(node, i), out);
}

}  // namespace

std::string normalized_python_source(std::string_view source) {
  const std::string text(source);
  PythonTree tree;
  tree.parse(text);
  std::vector<std::pair<uint32_t, uint32_t>> comments;
  collect_comments(tree.root(), comments);

  std::string without_comments;
  without_comments.reserve(text.size());
  size_t pos = 0;
  for (const auto& [start, end] : comments) {
    without_comments.append(text, pos, start - pos);
    pos = end;
  }
  without_comments.append(text, pos, std::string::npos);

  std::string out;
  out.reserve(without_comments.size());
  size_t line_start = 0;
  while (line_start <= without_comments.size()) {
    size_t line_end = without_comments.find('\n', line_start);
    if (line_end == std::string::npos) line_end = without_comments.size();
    std::string_view line(without_comments.data() + line_start, line_end - line_start);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
      line.remove_suffix(1);
    if (!line.empty()) {
      out.append(line);
      out.push_back('\n');
    }
    line_start = line_end + 1;
  }
  return out;
}

}  // namespace mk::syntax

#include "agents/report/search_graph_svg.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "agents/report/html.h"

namespace mk::report {

namespace {

constexpr double kNodeWidth = 150;
constexpr double kNodeHeight = 48;
constexpr double kColumnWidth = 170;
constexpr double kRowHeight = 90;
constexpr double kMargin = 20;

}  // namespace

std::string status_colour(const std::string& status) {
  if (status == "correct") return "#2e8b57";
  if (status == "incorrect") return "#e08a00";
  if (status == "failed") return "#c62828";
  if (status == "evaluating") return "#1e6fd9";
  return "#8a8a8a";  // pending or unknown
}

std::vector<GraphPosition> layout_search_graph(const std::vector<agents::NodeRecord>& nodes) {
  std::map<int64_t, const agents::NodeRecord*> by_id;
  for (const auto& node : nodes) by_id.emplace(node.id, &node);

  // A parent link counts only if the parent exists and following parents never comes back.
  auto valid_parent = [&](const agents::NodeRecord& node) -> std::optional<int64_t> {
    if (!node.parent || !by_id.count(*node.parent) || *node.parent == node.id) return std::nullopt;
    std::set<int64_t> seen{node.id};
    std::optional<int64_t> cursor = node.parent;
    while (cursor) {
      if (!seen.insert(*cursor).second) return std::nullopt;
      auto it = by_id.find(*cursor);
      if (it == by_id.end()) break;
      cursor = it->second->parent;
    }
    return node.parent;
  };

  std::map<int64_t, std::vector<int64_t>> children;
  std::vector<int64_t> roots;
  for (const auto& [id, node] : by_id) {
    if (auto parent = valid_parent(*node))
      children[*parent].push_back(id);
    else
      roots.push_back(id);
  }

  std::map<int64_t, GraphPosition> placed;
  double next_leaf = 0;
  std::function<double(int64_t, int)> place = [&](int64_t id, int row) -> double {
    GraphPosition position{id, row, 0};
    auto it = children.find(id);
    if (it == children.end() || it->second.empty()) {
      position.column = next_leaf++;
    } else {
      double first = 0, last = 0;
      for (size_t k = 0; k < it->second.size(); ++k) {
        const double column = place(it->second[k], row + 1);
        if (k == 0) first = column;
        last = column;
      }
      position.column = (first + last) / 2;
    }
    placed[id] = position;
    return position.column;
  };
  for (int64_t root : roots) place(root, 0);

  std::vector<GraphPosition> out;
  for (const auto& node : nodes) {
    auto it = placed.find(node.id);
    if (it != placed.end()) out.push_back(it->second);
  }
  return out;
}

std::string render_search_graph_svg(const std::vector<agents::NodeRecord>& nodes,
                                    std::optional<int64_t> best_node) {
  if (nodes.empty()) return "<p class=\"muted\">No nodes recorded yet.</p>";
  const std::vector<GraphPosition> layout = layout_search_graph(nodes);
  std::map<int64_t, GraphPosition> position;
  double max_column = 0;
  int max_row = 0;
  for (const auto& p : layout) {
    position[p.id] = p;
    max_column = std::max(max_column, p.column);
    max_row = std::max(max_row, p.row);
  }
  auto centre_x = [&](const GraphPosition& p) {
    return kMargin + p.column * kColumnWidth + kNodeWidth / 2;
  };
  auto top_y = [&](const GraphPosition& p) { return kMargin + p.row * kRowHeight; };
  const double width = 2 * kMargin + max_column * kColumnWidth + kNodeWidth;
  const double height = 2 * kMargin + max_row * kRowHeight + kNodeHeight;

  std::string svg = "<svg class=\"graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    format_number(width, 0) + "\" height=\"" + format_number(height, 0) +
                    "\" viewBox=\"0 0 " + format_number(width, 0) + " " + format_number(height, 0) +
                    "\" role=\"img\" aria-label=\"search graph\">\n";
  // Edges first so the boxes cover their ends.
  for (const auto& node : nodes) {
    if (!node.parent) continue;
    auto child = position.find(node.id);
    auto parent = position.find(*node.parent);
    if (child == position.end() || parent == position.end()) continue;
    if (child->second.row != parent->second.row + 1) continue;  // not drawn as its child
    svg += "<line class=\"edge\" data-edge=\"" + std::to_string(*node.parent) + "-" +
           std::to_string(node.id) + "\" x1=\"" + format_number(centre_x(parent->second), 1) +
           "\" y1=\"" + format_number(top_y(parent->second) + kNodeHeight, 1) + "\" x2=\"" +
           format_number(centre_x(child->second), 1) + "\" y2=\"" +
           format_number(top_y(child->second), 1) + "\"/>\n";
  }
  for (const auto& node : nodes) {
    auto it = position.find(node.id);
    if (it == position.end()) continue;
    const GraphPosition& p = it->second;
    const bool best = best_node && *best_node == node.id;
    const double x = centre_x(p) - kNodeWidth / 2;
    const double y = top_y(p);
    const std::string id = std::to_string(node.id);
    std::string second_line = to_string(node.status);
    if (node.speedup && node.status == agents::NodeStatus::correct)
      second_line = format_speedup(*node.speedup);
    else if (node.speedup)
      second_line = to_string(node.status) + " " + format_speedup(*node.speedup);
    svg += "<a href=\"#node-" + id + "\"><g class=\"node" + std::string(best ? " best" : "") +
           "\" data-node=\"" + id + "\" data-status=\"" + html_escape(to_string(node.status)) +
           "\">";
    svg += "<title>#" + id + " " + html_escape(node.strategy) + " (" +
           html_escape(to_string(node.status)) + ")" +
           (node.description.empty() ? "" : ": " + html_escape(node.description)) + "</title>";
    svg +=
        "<rect x=\"" + format_number(x, 1) + "\" y=\"" + format_number(y, 1) + "\" width=\"" +
        format_number(kNodeWidth, 0) + "\" height=\"" + format_number(kNodeHeight, 0) +
        "\" rx=\"6\" fill=\"" + status_colour(to_string(node.status)) + "\"" +
        (best ? " stroke=\"#f5b400\" stroke-width=\"4\"" : " stroke=\"#333\" stroke-width=\"1\"") +
        "/>";
    svg += "<text x=\"" + format_number(x + 8, 1) + "\" y=\"" + format_number(y + 19, 1) + "\">#" +
           id + " " + html_escape(truncate_utf8(node.strategy, 16)) + "</text>";
    svg += "<text x=\"" + format_number(x + 8, 1) + "\" y=\"" + format_number(y + 38, 1) + "\">" +
           html_escape(truncate_utf8(second_line, 18)) + (best ? " \xE2\x98\x85 best" : "") +
           "</text>";
    svg += "</g></a>\n";
  }
  svg += "</svg>";
  return svg;
}

}  // namespace mk::report

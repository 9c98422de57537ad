#include "agents/rewrites/rewrite_support.h"

#include "source/syntax/node_util.h"

namespace mk::agents::rewrites {

using syntax::field;
using syntax::is;
using syntax::named_children;
using syntax::text_of;

TSNode node_with_span(TSNode root, pallas::Span span, const char* type) {
  TSNode node = ts_node_descendant_for_byte_range(root, span.start, span.end);
  while (!ts_node_is_null(node)) {
    if (ts_node_start_byte(node) != span.start || ts_node_end_byte(node) != span.end) {
      if (ts_node_start_byte(node) < span.start || ts_node_end_byte(node) > span.end) break;
    } else if (is(node, type)) {
      return node;
    }
    node = ts_node_parent(node);
  }
  return TSNode{};
}

TSNode keyword_argument(TSNode call, std::string_view source, std::string_view name) {
  for (TSNode arg : named_children(field(call, "arguments"))) {
    if (is(arg, "keyword_argument") && text_of(field(arg, "name"), source) == name) return arg;
  }
  return TSNode{};
}

namespace {

std::string indentation_at(std::string_view source, uint32_t offset) {
  const size_t line_start = source.rfind('\n', offset == 0 ? 0 : offset - 1);
  const size_t begin = line_start == std::string_view::npos ? 0 : line_start + 1;
  size_t end = begin;
  while (end < source.size() && (source[end] == ' ' || source[end] == '\t')) ++end;
  return std::string(source.substr(begin, end - begin));
}

}  // namespace

std::optional<SourceEdit> append_argument(TSNode call, std::string_view source,
                                          const std::string& text) {
  TSNode args = field(call, "arguments");
  if (!is(args, "argument_list")) return std::nullopt;
  auto list = named_children(args);
  const uint32_t close = ts_node_end_byte(args) - 1;
  if (list.empty()) return SourceEdit{close, close, text};
  TSNode last = list.back();
  // Is there a comma after the last argument?
  TSNode next = ts_node_next_sibling(last);
  while (is(next, "comment")) next = ts_node_next_sibling(next);
  const bool trailing_comma = !ts_node_is_null(next) && text_of(next, source) == ",";
  const uint32_t after = trailing_comma ? ts_node_end_byte(next) : ts_node_end_byte(last);
  const bool one_per_line = ts_node_start_point(last).row != ts_node_end_point(args).row &&
                            (list.size() < 2 || ts_node_start_point(list[list.size() - 2]).row !=
                                                    ts_node_start_point(last).row);
  if (one_per_line) {
    const std::string indent = indentation_at(source, ts_node_start_byte(last));
    return SourceEdit{after, after,
                      std::string(trailing_comma ? "" : ",") + "\n" + indent + text + ","};
  }
  return SourceEdit{after, after, std::string(trailing_comma ? " " : ", ") + text};
}

std::optional<std::string> pallas_tpu_alias(TSNode root, std::string_view source) {
  for (TSNode statement : named_children(root)) {
    if (is(statement, "import_from_statement") &&
        text_of(field(statement, "module_name"), source) == "jax.experimental.pallas") {
      for (TSNode item : named_children(statement)) {
        if (is(item, "aliased_import") && text_of(field(item, "name"), source) == "tpu") {
          return std::string(text_of(field(item, "alias"), source));
        }
        if (is(item, "dotted_name") && text_of(item, source) == "tpu" &&
            !syntax::same_node(item, field(statement, "module_name"))) {
          return std::string("tpu");
        }
      }
    }
    if (is(statement, "import_statement")) {
      for (TSNode item : named_children(statement)) {
        if (is(item, "aliased_import") &&
            text_of(field(item, "name"), source) == "jax.experimental.pallas.tpu") {
          return std::string(text_of(field(item, "alias"), source));
        }
      }
    }
  }
  return std::nullopt;
}

SourceEdit add_pallas_tpu_import(TSNode root, std::string_view /*source*/) {
  uint32_t after = 0;
  for (TSNode statement : named_children(root)) {
    if (is(statement, "import_statement") || is(statement, "import_from_statement") ||
        is(statement, "future_import_statement")) {
      after = ts_node_end_byte(statement);
    }
  }
  if (after == 0) return SourceEdit{0, 0, "from jax.experimental.pallas import tpu as pltpu\n"};
  return SourceEdit{after, after, "\nfrom jax.experimental.pallas import tpu as pltpu"};
}

std::optional<LambdaShape> lambda_shape(TSNode root, std::string_view source, pallas::Span span) {
  TSNode lambda = node_with_span(root, span, "lambda");
  if (ts_node_is_null(lambda)) return std::nullopt;
  LambdaShape shape;
  for (TSNode p : named_children(field(lambda, "parameters"))) {
    if (!is(p, "identifier")) return std::nullopt;  // defaults, splats: not a plain index map
    shape.params.emplace_back(text_of(p, source));
  }
  TSNode body = field(lambda, "body");
  if (is(body, "identifier")) shape.body_names.emplace_back(text_of(body, source));
  syntax::for_each_descendant(body, [&](TSNode node, size_t) {
    if (is(node, "identifier")) shape.body_names.emplace_back(text_of(node, source));
  });
  return shape;
}

}  // namespace mk::agents::rewrites

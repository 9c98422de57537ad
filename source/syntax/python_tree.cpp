#include "source/syntax/python_tree.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace mk::syntax {

namespace {

std::unique_ptr<TSParser, ParserDeleter> python_parser() {
  std::unique_ptr<TSParser, ParserDeleter> parser(ts_parser_new());
  if (!ts_parser_set_language(parser.get(), python_language())) {
    throw std::runtime_error("tree-sitter rejected the Python grammar (ABI " +
                             std::to_string(python_language_abi()) + ")");
  }
  return parser;
}

TSInputEdit input_edit(const text::ByteEdit& edit) {
  return {edit.start_byte,
          edit.old_end_byte,
          edit.new_end_byte,
          {edit.start_point.row, edit.start_point.column},
          {edit.old_end_point.row, edit.old_end_point.column},
          {edit.new_end_point.row, edit.new_end_point.column}};
}

// Unique across documents: a parse made for a closed document never matches a reopened one.
uint64_t next_generation() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

TreePtr parse_with(TSParser* parser, const TSTree* old, const std::string& text) {
  return TreePtr(
      ts_parser_parse_string(parser, old, text.data(), static_cast<uint32_t>(text.size())));
}

// The text as parse_partial's `blank` spans make it: each span's first byte reads `0`. The rest
// of a span lies outside the parse's ranges, so the parser never asks for it.
struct BlankedText {
  const std::string& text;
  const std::vector<ByteSpan>& blank;

  static const char* read(void* payload, uint32_t byte, TSPoint, uint32_t* bytes_read) {
    const auto& self = *static_cast<const BlankedText*>(payload);
    const std::string& text = self.text;
    if (byte >= text.size()) {
      *bytes_read = 0;
      return "";
    }
    // The first span ending after `byte`: it holds `byte`, or the text runs up to it.
    auto span = std::upper_bound(self.blank.begin(), self.blank.end(), byte,
                                 [](uint32_t b, const ByteSpan& s) { return b < s.end; });
    if (span != self.blank.end() && byte == span->start) {
      *bytes_read = 1;
      return "0";
    }
    if (span != self.blank.end() && byte > span->start) ++span;  // inside one: up to the next
    const uint32_t until =
        span == self.blank.end() ? static_cast<uint32_t>(text.size()) : span->start;
    *bytes_read = until - byte;
    return text.data() + byte;
  }
};

// Where ts_tree_edit moves an included range's start or end byte for the edit `e`.
uint32_t edited_range_end(uint32_t byte, const TSInputEdit& e) {
  if (byte >= e.old_end_byte) return e.new_end_byte + (byte - e.old_end_byte);
  return byte > e.start_byte ? e.start_byte : byte;
}

}  // namespace

const TSLanguage* python_language() {
  return tree_sitter_python();
}

uint32_t python_language_abi() {
  return ts_language_version(python_language());
}

PythonTree::PythonTree() : parser_(python_parser()) {}

void PythonTree::parse(const std::string& text) {
  ts_parser_set_included_ranges(parser_.get(), nullptr, 0);
  tree_ = parse_with(parser_.get(), nullptr, text);
  partial_ = false;
  blanked_ = false;
  gaps_.clear();
  edits_since_partial_.clear();
  generation_ = next_generation();
}

void PythonTree::parse_partial(const std::string& text, const std::vector<ByteSpan>& spans,
                               const std::vector<ByteSpan>& blank) {
  std::vector<TSRange> ranges;
  ranges.reserve(spans.size());
  // Points are (row, byte column): count the newlines up to each span's ends in one pass.
  TSPoint point{0, 0};
  uint32_t at = 0, line_start = 0;
  auto advance_to = [&](uint32_t byte) {
    while (at < byte) {  // memchr: a byte loop over a long file costs a quarter millisecond
      const void* newline = std::memchr(text.data() + at, '\n', byte - at);
      if (!newline) {
        at = byte;
        break;
      }
      ++point.row;
      at = line_start = static_cast<uint32_t>(static_cast<const char*>(newline) - text.data()) + 1;
    }
    point.column = byte - line_start;
    return point;
  };
  // The blank spans lie inside the ranges, so one pass in order gives the points of both.
  std::vector<TSInputEdit> unblank;
  unblank.reserve(blank.size());
  gaps_.clear();
  auto next_blank = blank.begin();
  for (const ByteSpan& span : spans) {
    uint32_t from_byte = span.start;
    TSPoint from_point = advance_to(span.start);
    for (; next_blank != blank.end() && next_blank->end <= span.end; ++next_blank) {
      const TSPoint body = advance_to(next_blank->start);
      // A blank body is left out of the ranges after its `0`: the lexer need not walk its
      // blanks. Once the edit below lays the real bytes over it, the tree's ranges miss it;
      // use_tree_ranges() puts it back.
      if (next_blank->end - next_blank->start > 1) {
        ranges.push_back(
            {from_point, advance_to(next_blank->start + 1), from_byte, next_blank->start + 1});
        gaps_.push_back(*next_blank);
        from_byte = next_blank->end;
      }
      const TSPoint to = advance_to(next_blank->end);
      if (from_byte == next_blank->end) from_point = to;
      unblank.push_back({next_blank->start, next_blank->end, next_blank->end, body, to, to});
    }
    const TSPoint end = advance_to(span.end);
    if (span.end > from_byte) ranges.push_back({from_point, end, from_byte, span.end});
  }
  if (next_blank != blank.end()) throw std::logic_error("a blank span outside the ranges");
  if (!ts_parser_set_included_ranges(parser_.get(), ranges.data(),
                                     static_cast<uint32_t>(ranges.size())))
    throw std::logic_error("included ranges out of order");
  if (blank.empty()) {
    tree_ = parse_with(parser_.get(), nullptr, text);
  } else {
    BlankedText input{text, blank};
    tree_ = TreePtr(
        ts_parser_parse(parser_.get(), nullptr, {&input, &BlankedText::read, TSInputEncodingUTF8}));
    // The real bytes, to the tree, are an edit of the same length: a reparse reads them.
    for (const TSInputEdit& e : unblank) ts_tree_edit(tree_.get(), &e);
  }
  blanked_ = !blank.empty();
  partial_ = true;
  edits_since_partial_.clear();
  generation_ = next_generation();
}

void PythonTree::edit_and_reparse(const text::ByteEdit& edit, const std::string& text) {
  if (!tree_) {
    parse(text);
    return;
  }
  const TSInputEdit e = input_edit(edit);
  ts_tree_edit(tree_.get(), &e);
  for (ByteSpan& gap : gaps_) {  // as ts_tree_edit moves the ends of the ranges around them
    gap.start = edited_range_end(gap.start, e);
    gap.end = edited_range_end(gap.end, e);
  }
  if (partial_) {
    // The tree moved its ranges with the edit; an edit inside a range widens it.
    use_tree_ranges();
    edits_since_partial_.push_back(edit);
  }
  tree_ = parse_with(parser_.get(), tree_.get(), text);
  blanked_ = false;
  gaps_.clear();  // the new tree's ranges are the parser's, whole
}

void PythonTree::read_blanked(const std::string& text) {
  if (!blanked_ || !tree_) return;
  use_tree_ranges();
  tree_ = parse_with(parser_.get(), tree_.get(), text);
  blanked_ = false;
  gaps_.clear();  // the new tree's ranges are the parser's, whole
}

void PythonTree::use_tree_ranges() {
  uint32_t count = 0;
  TSRange* ranges = ts_tree_included_ranges(tree_.get(), &count);
  // Two ranges a blank body's gap separates are one: the body is real text to read now. The
  // gaps' ends moved as the ranges' did, so they still meet exactly.
  std::vector<TSRange> joined;
  joined.reserve(count);
  auto gap = gaps_.begin();
  for (uint32_t i = 0; i < count; ++i) {
    if (!joined.empty()) {
      while (gap != gaps_.end() && gap->start < joined.back().end_byte) ++gap;
      if (gap != gaps_.end() && gap->start == joined.back().end_byte &&
          gap->end == ranges[i].start_byte) {
        joined.back().end_byte = ranges[i].end_byte;
        joined.back().end_point = ranges[i].end_point;
        ++gap;
        continue;
      }
    }
    joined.push_back(ranges[i]);
  }
  std::free(ranges);  // tree-sitter allocates with malloc unless told otherwise
  ts_parser_set_included_ranges(parser_.get(), joined.data(), static_cast<uint32_t>(joined.size()));
}

TreePtr PythonTree::adopt_full(TreePtr full, const std::string& text) {
  ts_parser_set_included_ranges(parser_.get(), nullptr, 0);
  for (const text::ByteEdit& edit : edits_since_partial_) {
    const TSInputEdit e = input_edit(edit);
    ts_tree_edit(full.get(), &e);
  }
  TreePtr partial = std::move(tree_);
  tree_ =
      edits_since_partial_.empty() ? std::move(full) : parse_with(parser_.get(), full.get(), text);
  partial_ = false;
  blanked_ = false;
  gaps_.clear();
  edits_since_partial_.clear();
  return partial;
}

TreePtr parse_python(const std::string& text, TreePtr old) {
  auto parser = python_parser();
  return parse_with(parser.get(), old.get(), text);
}

}  // namespace mk::syntax

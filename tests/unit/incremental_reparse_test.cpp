// Incremental reparse with the tree-sitter runtime the engine links (third_party/patches/): the
// tree after an edit must equal a fresh parse, and typing the first character of a new line at
// the top of a block must re-lex a few lines, not the rest of the file.
#include <gtest/gtest.h>
#include <tree_sitter/api.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <random>
#include <string>

#include "source/syntax/python_tree.h"

namespace mk {
namespace {

// Node by node: symbol, byte range, error and missing flags.
::testing::AssertionResult same_tree(TSNode a, TSNode b) {
  TSTreeCursor ca = ts_tree_cursor_new(a), cb = ts_tree_cursor_new(b);
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  for (bool more = true; more;) {
    TSNode x = ts_tree_cursor_current_node(&ca), y = ts_tree_cursor_current_node(&cb);
    if (ts_node_symbol(x) != ts_node_symbol(y) || ts_node_start_byte(x) != ts_node_start_byte(y) ||
        ts_node_end_byte(x) != ts_node_end_byte(y) ||
        ts_node_is_missing(x) != ts_node_is_missing(y) ||
        ts_node_has_error(x) != ts_node_has_error(y)) {
      result = ::testing::AssertionFailure()
               << "incremental " << ts_node_type(x) << " [" << ts_node_start_byte(x) << ", "
               << ts_node_end_byte(x) << ") vs fresh " << ts_node_type(y) << " ["
               << ts_node_start_byte(y) << ", " << ts_node_end_byte(y) << ")";
      break;
    }
    const bool down_a = ts_tree_cursor_goto_first_child(&ca);
    if (down_a != ts_tree_cursor_goto_first_child(&cb)) {
      result = ::testing::AssertionFailure() << "child count differs at " << ts_node_type(x);
      break;
    }
    if (down_a) continue;
    // Next sibling, climbing as needed; both cursors move in step.
    while (true) {
      const bool next_a = ts_tree_cursor_goto_next_sibling(&ca);
      if (next_a != ts_tree_cursor_goto_next_sibling(&cb)) {
        result = ::testing::AssertionFailure() << "sibling count differs near " << ts_node_type(x);
        more = false;
        break;
      }
      if (next_a) break;
      if (!ts_tree_cursor_goto_parent(&ca)) {
        more = false;
        break;
      }
      ts_tree_cursor_goto_parent(&cb);
    }
  }
  ts_tree_cursor_delete(&ca);
  ts_tree_cursor_delete(&cb);
  return result;
}

// A module of `functions` small functions, in the shape of the lsp_latency corpus: blocks that
// end in zero-width dedent tokens, one after another.
std::string module_of(int functions) {
  std::string text = "import math\n\nSCALE = 2\n\n";
  for (int i = 0; i < functions; ++i) {
    const std::string n = std::to_string(i);
    text += "\ndef kernel_" + n + "(x_ref, o_ref):\n    x = x_ref[...] * SCALE\n";
    text += "    o_ref[...] = math.sqrt(x) + " + n + "\n\n\n";
    text += "def helper_" + n + "(values):\n    total = 0\n    for v in values:\n";
    text += "        total += v\n    return total\n\n";
  }
  return text;
}

// Counts the tokens the lexer produced while parsing.
struct LexCounter {
  int tokens = 0;
  static void log(void* payload, TSLogType, const char* message) {
    if (std::strncmp(message, "lexed_lookahead", 15) == 0)
      ++static_cast<LexCounter*>(payload)->tokens;
  }
};

TEST(IncrementalReparse, FirstCharacterOfANewBlockLineRelexesOnlyNearby) {
  std::string text = module_of(300);  // ~3,600 lines
  TSParser* parser = ts_parser_new();
  ASSERT_TRUE(ts_parser_set_language(parser, syntax::python_language()));
  LexCounter counter;
  ts_parser_set_logger(parser, {&counter, &LexCounter::log});
  TSTree* tree =
      ts_parser_parse_string(parser, nullptr, text.data(), static_cast<uint32_t>(text.size()));
  const int full_parse_tokens = counter.tokens;
  ASSERT_GT(full_parse_tokens, 10000);

  // Enter + indent after a `def` line in the middle of the file, then the first character.
  const std::string def_line = "def kernel_150(x_ref, o_ref):";
  const size_t def_at = text.find(def_line);
  ASSERT_NE(def_at, std::string::npos);
  const uint32_t row = static_cast<uint32_t>(
      std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(def_at), '\n'));
  const uint32_t enter_at = static_cast<uint32_t>(def_at + def_line.size());
  auto insert = [&](uint32_t at, TSPoint start, const std::string& s, TSPoint new_end) {
    text.insert(at, s);
    const TSInputEdit edit{at, at, at + static_cast<uint32_t>(s.size()), start, start, new_end};
    ts_tree_edit(tree, &edit);
    counter.tokens = 0;
    TSTree* next =
        ts_parser_parse_string(parser, tree, text.data(), static_cast<uint32_t>(text.size()));
    ts_tree_delete(tree);
    tree = next;
  };
  const uint32_t column = static_cast<uint32_t>(def_line.size());
  insert(enter_at, {row, column}, "\n    ", {row + 1, 4});
  insert(enter_at + 5, {row + 1, 4}, "r", {row + 1, 5});
  const int relexed = counter.tokens;

  TSTree* fresh =
      ts_parser_parse_string(parser, nullptr, text.data(), static_cast<uint32_t>(text.size()));
  EXPECT_TRUE(same_tree(ts_tree_root_node(tree), ts_tree_root_node(fresh)));
  // The unpatched runtime skipped every following sibling whose start shares a byte with a
  // zero-width dedent and re-lexed about half of this file here (8,845 of 17,708 tokens).
  EXPECT_LT(relexed * 20, full_parse_tokens)
      << relexed << " tokens re-lexed of " << full_parse_tokens;
  ts_tree_delete(fresh);
  ts_tree_delete(tree);
  ts_parser_delete(parser);
}

TEST(IncrementalReparse, RandomTypingEqualsAFreshParse) {
  const std::string original = module_of(40);
  static const char* kSnippets[] = {"\n",   "\n    ", "\n        ", "x", " ",  ":",     "(",
                                    ")",    "r",      "= 1",        "#", "\"", "if x:", "\t",
                                    "pass", "\\",     "'''",        "[", "]",  "def "};
  for (uint32_t seed = 0; seed < 6; ++seed) {
    std::mt19937 rng(seed);
    text::TextDocument doc("file:///t.py", 1, original);
    syntax::PythonTree tree;
    tree.parse(doc.text());
    syntax::PythonTree fresh;
    for (int step = 0; step < 60; ++step) {
      const std::string& t = doc.text();
      const size_t at = std::uniform_int_distribution<size_t>(0, t.size())(rng);
      const bool erase = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
      const size_t end = erase ? std::min(t.size(), at + 1 + (rng() % 12)) : at;
      const std::string with =
          erase
              ? ""
              : kSnippets[std::uniform_int_distribution<size_t>(0, std::size(kSnippets) - 1)(rng)];
      const text::Utf16Range range{doc.position_of(at), doc.position_of(end)};
      tree.edit_and_reparse(doc.apply_change(range, with), doc.text());
      fresh.parse(doc.text());
      ASSERT_TRUE(same_tree(tree.root(), fresh.root()))
          << "seed " << seed << " step " << step << " at " << at;
    }
  }
}

}  // namespace
}  // namespace mk

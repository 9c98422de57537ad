// PythonTree: the compiled-in grammar, full parses and incremental reparses after edits.
#include "source/syntax/python_tree.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "source/syntax/node_util.h"
#include "source/text/text_document.h"

namespace mk::syntax {
namespace {

std::string sexp(TSNode node) {
  char* s = ts_node_string(node);
  std::string out(s);
  std::free(s);
  return out;
}

std::string fresh_sexp(const std::string& text) {
  PythonTree tree;
  tree.parse(text);
  return sexp(tree.root());
}

const char* kModule =
    "import jax\n"
    "from jax.experimental import pallas as pl\n"
    "\n"
    "BLOCK = (8, 128)\n"
    "\n"
    "def kernel(x_ref, o_ref):\n"
    "    o_ref[...] = x_ref[...] * 2\n"
    "\n"
    "class Runner:\n"
    "    def __call__(self, x):\n"
    "        return pl.pallas_call(kernel, out_shape=x)(x)\n";

TEST(PythonTree, GrammarAbiIsSupported) {
  const uint32_t abi = python_language_abi();
  EXPECT_GE(abi, 13u);
  EXPECT_LE(abi, 14u);
  EXPECT_NE(python_language(), nullptr);
  EXPECT_GT(ts_language_symbol_count(python_language()), 100u);
}

TEST(PythonTree, ParsesAModuleWithoutErrors) {
  PythonTree tree;
  tree.parse(kModule);
  ASSERT_NE(tree.tree(), nullptr);
  EXPECT_FALSE(tree.has_error());
  const TSNode root = tree.root();
  EXPECT_STREQ(ts_node_type(root), "module");
  const auto top = named_children(root);
  ASSERT_EQ(top.size(), 5u);
  EXPECT_TRUE(is(top[0], "import_statement"));
  EXPECT_TRUE(is(top[1], "import_from_statement"));
  EXPECT_TRUE(is(top[2], "expression_statement"));
  EXPECT_TRUE(is(top[3], "function_definition"));
  EXPECT_TRUE(is(top[4], "class_definition"));
  EXPECT_EQ(text_of(field(top[3], "name"), kModule), "kernel");
  EXPECT_EQ(ts_node_end_byte(root), std::string(kModule).size());
}

TEST(PythonTree, HalfTypedCodeStillGivesATree) {
  const std::string text =
      "def ok(x):\n"
      "    return x\n"
      "\n"
      "def broken(a, b:\n"
      "    y = (a +\n";
  PythonTree tree;
  tree.parse(text);
  ASSERT_NE(tree.tree(), nullptr);
  EXPECT_TRUE(tree.has_error());
  const TSNode root = tree.root();
  EXPECT_STREQ(ts_node_type(root), "module");
  // The complete function before the error is still a function definition.
  const auto top = named_children(root);
  ASSERT_FALSE(top.empty());
  EXPECT_TRUE(is(top[0], "function_definition"));
  EXPECT_FALSE(ts_node_has_error(top[0]));
}

TEST(PythonTree, EditBeforeAnyParseParsesFromScratch) {
  PythonTree tree;
  text::ByteEdit edit;
  tree.edit_and_reparse(edit, "x = 1\n");
  ASSERT_NE(tree.tree(), nullptr);
  EXPECT_EQ(sexp(tree.root()), fresh_sexp("x = 1\n"));
}

TEST(PythonTree, IncrementalReparseMatchesFreshParse) {
  text::TextDocument doc("u", 1, kModule);
  PythonTree tree;
  tree.parse(doc.text());
  struct Step {
    text::Utf16Range range;
    const char* text;
  };
  const std::vector<Step> steps = {
      {{{3, 15}, {3, 15}}, ", 256"},                         // BLOCK = (8, 128, 256)
      {{{6, 30}, {6, 31}}, "3"},                             // * 2 -> * 3
      {{{4, 0}, {4, 0}}, "def helper():\n    return 1\n"},   // a new function
      {{{0, 0}, {2, 0}}, ""},                                // delete the imports
      {{{5, 4}, {5, 10}}, "kern"},                           // rename a def (now line 5)
      {{{0, 0}, {0, 0}}, "# \xF0\x9F\x98\x80 comment\r\n"},  // emoji + CRLF at the top
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const text::ByteEdit edit = doc.apply_change(steps[i].range, steps[i].text);
    tree.edit_and_reparse(edit, doc.text());
    EXPECT_EQ(sexp(tree.root()), fresh_sexp(doc.text())) << "after step " << i << ":\n"
                                                         << doc.text();
    EXPECT_FALSE(tree.has_error()) << "after step " << i << ":\n" << doc.text();
  }
}

TEST(PythonTree, IncrementalReparseThroughBrokenStates) {
  text::TextDocument doc("u", 1, "def f(x):\n    return x + 1\n\nY = 2\n");
  PythonTree tree;
  tree.parse(doc.text());
  // Type a new call character by character: most intermediate states are syntax errors.
  const std::string typed = "Z = pl.pallas_call(f, grid=(4,))\n";
  for (size_t i = 0; i < typed.size(); ++i) {
    const text::ByteEdit edit = doc.apply_change(
        {{4, static_cast<uint32_t>(i)}, {4, static_cast<uint32_t>(i)}}, typed.substr(i, 1));
    tree.edit_and_reparse(edit, doc.text());
    ASSERT_EQ(sexp(tree.root()), fresh_sexp(doc.text()))
        << "after typing " << typed.substr(0, i + 1);
  }
  EXPECT_FALSE(tree.has_error());
  // Then delete it again, from the end.
  const size_t base = doc.text().size() - typed.size();
  for (size_t i = typed.size(); i > 0; --i) {
    const text::ByteEdit edit =
        doc.apply_change({doc.position_of(base + i - 1), doc.position_of(base + i)}, "");
    tree.edit_and_reparse(edit, doc.text());
    ASSERT_EQ(sexp(tree.root()), fresh_sexp(doc.text())) << "after deleting to " << i - 1;
  }
  EXPECT_EQ(doc.text(), "def f(x):\n    return x + 1\n\nY = 2\n");
}

TEST(PythonTree, RandomIncrementalEditsMatchFreshParse) {
  const std::vector<std::string> pieces = {"x",  " = ",      "1",    "(",    ")",
                                           ":",  "\n",       "    ", "def ", "return ",
                                           ", ", "\xC3\xA9", "\r\n", "#"};
  std::mt19937 rng(7);
  text::TextDocument doc("u", 1, kModule);
  PythonTree tree;
  tree.parse(doc.text());
  for (int step = 0; step < 150; ++step) {
    const uint32_t lines = doc.lines().line_count();
    const text::Utf16Position a{static_cast<uint32_t>(rng() % lines),
                                static_cast<uint32_t>(rng() % 40)};
    text::Utf16Position b = a;
    if (rng() % 2) b.character += static_cast<uint32_t>(rng() % 6);
    const text::ByteEdit edit = doc.apply_change({a, b}, pieces[rng() % pieces.size()]);
    tree.edit_and_reparse(edit, doc.text());
    ASSERT_EQ(sexp(tree.root()), fresh_sexp(doc.text())) << "step " << step << ":\n" << doc.text();
  }
}

}  // namespace
}  // namespace mk::syntax

// The first parse of a large file covers only its kernels' statements: the lexical split into
// top-level statements, the choice of what the kernels reach, the analysis of that partial tree
// (equal to a full one over the corpus, with unrelated helpers interleaved), the same statements
// cut in two halves analysed apart and merged, the kernels' bodies read as blank in those halves,
// and the partial tree kept through edits and brought up to the full one.
#include "source/pallas/kernel_regions.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "analysis_test_util.h"
#include "source/pallas/half_models.h"
#include "source/pallas/kernel_extractor.h"
#include "source/pallas/skipped_bodies.h"
#include "source/syntax/python_tree.h"
#include "source/syntax/top_level_units.h"
#include "source/text/text_document.h"

namespace mk {
namespace {

using syntax::TopLevelUnit;
using Kind = TopLevelUnit::Kind;

std::string sexp(TSNode node) {
  char* s = ts_node_string(node);
  std::string out(s);
  std::free(s);
  return out;
}

// The text of each unit, for readable expectations.
std::vector<std::string> unit_texts(const std::string& text) {
  std::vector<std::string> out;
  for (const TopLevelUnit& u : syntax::top_level_units(text))
    out.push_back(text.substr(u.span.start, u.span.end - u.span.start));
  return out;
}

// The parts of `text` the regions cover, concatenated.
std::string covered(const std::string& text, const pallas::KernelRegions& regions) {
  std::string out;
  for (const syntax::ByteSpan& s : regions.spans) out += text.substr(s.start, s.end - s.start);
  return out;
}

TEST(TopLevelUnits, FollowsStringsBracketsContinuationsAndCompoundStatements) {
  const std::string text =
      "\"\"\"Docs.\n"
      "def not_a_def():\n"
      "\"\"\"\n"
      "X = (1,\n"
      "2)\n"
      "Y = 1 + \\\n"
      "2\n"
      "# a comment at column 0\n"
      "@decorator\n"
      "@other(\n"
      ")\n"
      "def f(a=')', b=\"#\"):\n"
      "    return a\n"
      "if X:\n"
      "    pass\n"
      "else:\n"
      "    pass\n"
      "async def g():\n"
      "    pass\n"
      "class C:\n"
      "    s = '''\n"
      "def inside(): pass\n"
      "'''\n"
      "from m import (a,\n"
      "b)\n";
  const auto units = syntax::top_level_units(text);
  ASSERT_EQ(units.size(), 8u) << ::testing::PrintToString(unit_texts(text));
  const std::vector<std::string> texts = unit_texts(text);
  EXPECT_EQ(units[0].kind, Kind::Simple);  // the docstring, with its col-0 `def` inside
  EXPECT_EQ(texts[1], "X = (1,\n2)\n");
  EXPECT_EQ(texts[2], "Y = 1 + \\\n2\n# a comment at column 0\n");
  EXPECT_EQ(units[3].kind, Kind::Definition);
  EXPECT_EQ(units[3].name, "f");
  EXPECT_TRUE(texts[3].starts_with("@decorator\n@other(\n)\ndef f("));
  EXPECT_EQ(units[4].kind, Kind::Compound);
  EXPECT_EQ(texts[4], "if X:\n    pass\nelse:\n    pass\n");
  EXPECT_EQ(units[5].name, "g");
  EXPECT_EQ(units[6].name, "C");
  EXPECT_EQ(units[7].kind, Kind::Import);
  EXPECT_EQ(units.back().span.end, text.size());
}

TEST(TopLevelUnits, ADefsBodyRunsFromTheTokenAfterItsColonToWhereTheParseEndsTheDef) {
  const std::string text =
      "@decorate(lambda: 1)\n"
      "def f(a: int = 2, b: str = 'x:y') -> dict[str, int]:  # a comment: with a colon\n"
      "    \"\"\"Doc.\n"
      "\n"
      "still the docstring\"\"\"\n"
      "    return {'a': a}  # trailing\n"
      "\n"
      "    # a comment line after the body\n"
      "# between\n"
      "class C:\n"
      "    x = 1\n"
      "def g(): return 3\n"
      "async def h():\n"
      "    pass;\n"
      "x = 1\n";
  std::vector<std::string> bodies;
  for (const TopLevelUnit& u : syntax::top_level_units(text))
    bodies.push_back(text.substr(u.body.start, u.body.end - u.body.start));
  EXPECT_EQ(bodies,
            (std::vector<std::string>{
                "\"\"\"Doc.\n\nstill the docstring\"\"\"\n    return {'a': a}  # trailing\n\n"
                "    # a comment line after the body",
                "", "return 3", "pass;", ""}));
  // Over the corpus, each body starts where the parse's first statement in it does and ends with
  // its def.
  size_t defs = 0;
  std::vector<std::filesystem::path> files = test_util::corpus_files();
  files.emplace_back();  // the text above
  for (const auto& path : files) {
    const std::string source = path.empty() ? text : test_util::read_file(path);
    syntax::PythonTree tree;
    tree.parse(source);
    for (const TopLevelUnit& u : syntax::top_level_units(source)) {
      if (u.body.end == 0) continue;
      TSNode statement = ts_node_first_child_for_byte(tree.root(), u.body.start);
      if (std::string_view(ts_node_type(statement)) == "decorated_definition")
        statement = ts_node_child_by_field_name(statement, "definition", 10);
      ASSERT_STREQ(ts_node_type(statement), "function_definition")
          << path << " at " << u.body.start;
      // The block may start with a comment; its first statement is where the body does.
      TSNode first = ts_node_named_child(ts_node_child_by_field_name(statement, "body", 4), 0);
      while (std::string_view(ts_node_type(first)) == "comment")
        first = ts_node_next_named_sibling(first);
      EXPECT_EQ(ts_node_start_byte(first), u.body.start) << path;
      EXPECT_EQ(ts_node_end_byte(statement), u.body.end) << path;
      ++defs;
    }
  }
  EXPECT_GT(defs, 100u);
}

// The regions keep each of `wanted` and none of `unwanted`, and count the bytes they cover.
void expect_kept(const std::string& text, const pallas::KernelRegions& regions,
                 std::initializer_list<const char*> wanted,
                 std::initializer_list<const char*> unwanted) {
  const std::string kept = covered(text, regions);
  for (const char* w : wanted)
    EXPECT_NE(kept.find(w), std::string::npos) << w << " left out:\n" << kept;
  for (const char* u : unwanted)
    EXPECT_EQ(kept.find(u), std::string::npos) << u << " kept:\n" << kept;
  EXPECT_EQ(regions.bytes, kept.size());
}

TEST(KernelRegions, KeepsWhatTheSitesReachAndLeavesOutTheRest) {
  const std::string text =
      "import jax\n"
      "from jax.experimental import pallas as pl\n"
      "\n"
      "def unrelated(x):\n"
      "    return x + 1\n"
      "\n"
      "def tile_rows():\n"
      "    return 8\n"
      "\n"
      "ROWS = tile_rows()\n"
      "UNUSED = unrelated(3)\n"
      "\n"
      "def body(x_ref, o_ref):\n"
      "    o_ref[...] = x_ref[...]\n"
      "\n"
      "def call(x):\n"
      "    return pl.pallas_call(body, out_shape=x, grid=(ROWS,))(x)\n"
      "\n"
      "def my_call(kernel, **kw):\n"
      "    return pl.pallas_call(kernel, **kw)\n"
      "\n"
      "def user(x):\n"
      "    return my_call(body, out_shape=x)(x)\n"
      "\n"
      "def reference(x):\n"
      "    return x\n";
  const pallas::KernelRegions regions = pallas::KernelRegionFinder(text).regions({});
  expect_kept(text, regions,
              {"import jax\n", "def tile_rows", "ROWS = ", "def body", "def call", "def my_call",
               "def user", "def reference"},
              {"def unrelated", "UNUSED = "});

  // A wrapper imported from another file is named by the caller's own regions request.
  const std::string imported = "from pkg import launch\n\ndef site(x):\n    return launch(x)\n";
  EXPECT_EQ(covered(imported, pallas::KernelRegionFinder(imported).regions({})),
            "from pkg import launch\n\n");
  EXPECT_EQ(covered(imported, pallas::KernelRegionFinder(imported).regions({"launch"})), imported);
}

TEST(KernelRegions, ACallersDefIsASiteOnlyWhenItsCalleePassesItsOwnArgumentOn) {
  const std::string text =
      "from jax.experimental import pallas as pl\n"
      "\n"
      "def body(x_ref, o_ref):\n"
      "    o_ref[...] = x_ref[...]\n"
      "\n"
      "def call(x):\n"
      "    return pl.pallas_call(body, out_shape=x)(x)\n"
      "\n"
      "def bench(x):\n"
      "    return call(x) + 1\n"
      "\n"
      "def fwd(kernel, **kw):\n"
      "    return pl.pallas_call(kernel, **kw)\n"
      "\n"
      "def rows():\n"
      "    return 8\n"
      "\n"
      "def both(k, x):\n"
      "    y = pl.pallas_call(body, out_shape=call(rows))(x)\n"
      "    return fwd(k, out_shape=y)(x)\n"
      "\n"
      "def user(x):\n"
      "    return both(body, x)\n";
  const pallas::KernelRegions regions = pallas::KernelRegionFinder(text).regions({});
  // `call` hands pallas_call a kernel of its own, so a call of it is no site; `both` passes its
  // own `k` on to a wrapper, so it is one too, and `user` calls it.
  expect_kept(text, regions,
              {"def body", "def call", "def rows", "def fwd", "def both", "def user"},
              {"def bench"});
  // Only a wrapper's first argument is a kernel whose body may be read as blank: not `rows`.
  ASSERT_EQ(regions.skipped.size(), 1u);
  EXPECT_EQ(text.substr(regions.skipped[0].body.start,
                        regions.skipped[0].body.end - regions.skipped[0].body.start),
            "o_ref[...] = x_ref[...]");
  // What is left out changes nothing the analysis finds.
  syntax::PythonTree full, partial;
  full.parse(text);
  partial.parse_partial(text, regions.spans);
  const analysis::DocumentAnalysis whole =
      analysis::analyze_document(full.root(), text, test_util::v5e());
  // call; fwd and both, each its own; both through fwd; user through both and fwd.
  EXPECT_EQ(whole.model.kernels.size(), 5u);
  test_util::expect_same(analysis::analyze_document(partial.root(), text, test_util::v5e()), whole,
                         text, "wrappers");
}

// The corpus file with a helper that nothing reaches after every top-level statement.
std::string with_helpers(const std::string& text) {
  std::string out;
  int n = 0;
  for (const TopLevelUnit& u : syntax::top_level_units(text)) {
    out += text.substr(u.span.start, u.span.end - u.span.start);
    if (!out.ends_with("\n")) out += "\n";
    out += "\n\ndef _helper_" + std::to_string(n) + "(shape, start=" + std::to_string(n) +
           "):\n    total = start\n    for d in shape:\n        total *= d\n    return total\n\n\n";
    ++n;
  }
  return out;
}

TEST(KernelRegions, APartialParseAnalysesLikeAFullOneOverTheCorpus) {
  size_t files = 0, left_out = 0;
  for (const auto& path : test_util::corpus_files()) {
    for (const std::string& text :
         {test_util::read_file(path), with_helpers(test_util::read_file(path))}) {
      syntax::PythonTree full;
      full.parse(text);
      const pallas::KernelRegions regions = pallas::KernelRegionFinder(text).regions({});
      syntax::PythonTree partial;
      partial.parse_partial(text, regions.spans);
      if (!full.has_error()) {
        EXPECT_FALSE(partial.has_error()) << path;
      }
      test_util::expect_same(analysis::analyze_document(partial.root(), text, test_util::v5e()),
                             analysis::analyze_document(full.root(), text, test_util::v5e()), text,
                             path.string());
      left_out += text.size() - regions.bytes;
      ++files;
    }
  }
  EXPECT_GT(files, 40u);
  EXPECT_GT(left_out, 0u);  // the helpers were left out, so the comparison meant something
}

// Both halves parsed and analysed apart, the models merged, the checks run on the result.
// With `skip`, each half reads its kernels' bodies as blank, as the server's first parse does;
// nullopt when a half's model then read one of them (the server parses again without).
std::optional<analysis::DocumentAnalysis> analyse_halves(
    const std::string& text, const std::array<pallas::KernelRegions, 2>& halves,
    bool skip = false) {
  syntax::PythonTree trees[2];
  pallas::PallasModel models[2];
  for (int i = 0; i < 2; ++i) {
    const std::vector<pallas::SkippedBody> none, &skipped = skip ? halves[i].skipped : none;
    trees[i].parse_partial(text, halves[i].spans, pallas::skipped_spans(skipped));
    EXPECT_EQ(trees[i].blanked(), !skipped.empty());
    models[i] = pallas::extract_pallas_model(trees[i].root(), text);
    if (pallas::reads_skipped_body(models[i], skipped)) return std::nullopt;
  }
  pallas::PallasModel model = pallas::merge_half_models(std::move(models[0]), trees[0].root(),
                                                        std::move(models[1]), trees[1].root());
  std::vector<analysis::Finding> findings = analysis::check_model(model, test_util::v5e());
  return analysis::DocumentAnalysis{std::move(model), std::move(findings)};
}

// Corpus files one after another, each in a class of its own so their names stay apart: a
// module with many sites, as a large file is.
std::string concatenated_corpus(size_t files) {
  std::string out =
      "import functools\nimport jax\nimport jax.numpy as jnp\n"
      "from jax.experimental import pallas as pl\n"
      "from jax.experimental.pallas import tpu as pltpu\n\n";
  size_t n = 0;
  for (const auto& path : test_util::corpus_files()) {
    if (n == files) break;
    std::string body = test_util::read_file(path);
    if (body.find("pallas_call") == std::string::npos) continue;
    out += "class Module" + std::to_string(n++) + ":\n";
    size_t at = 0;
    while (at < body.size()) {
      const size_t end = body.find('\n', at);
      const std::string line = body.substr(at, end == std::string::npos ? end : end - at + 1);
      out += line == "\n" ? line : "    " + line;
      if (end == std::string::npos) break;
      at = end + 1;
    }
    if (!out.ends_with("\n")) out += "\n";
    out += "\n";
  }
  return out;
}

TEST(SplitRegions, TheirUnionIsTheRegionsAndEachHalfHoldsAboutHalfTheSites) {
  const std::string text = with_helpers(
      "import jax\n"
      "from jax.experimental import pallas as pl\n"
      "\n"
      "ROWS = 8\n"
      "\n"
      "def body(x_ref, o_ref):\n"
      "    o_ref[...] = x_ref[...]\n"
      "\n"
      "def my_call(kernel, **kw):\n"
      "    return pl.pallas_call(kernel, **kw)\n"
      "\n"
      "def one(x):\n"
      "    return pl.pallas_call(body, out_shape=x, grid=(ROWS,))(x)\n"
      "\n"
      "def two(x):\n"
      "    return my_call(body, out_shape=x)(x)\n"
      "\n"
      "COLS = 128\n"
      "\n"
      "def three(x):\n"
      "    return pl.pallas_call(body, out_shape=x, grid=(COLS,))(x)\n"
      "\n"
      "def four(x):\n"
      "    return my_call(body, out_shape=x, grid=(COLS,))(x)\n");
  const pallas::KernelRegionFinder finder(text);
  const pallas::SplitKernelRegions split = finder.split_regions({});
  const pallas::KernelRegions all = finder.regions({});
  EXPECT_EQ(covered(text, split.all), covered(text, all));
  const std::string first = covered(text, split.halves[0]);
  const std::string second = covered(text, split.halves[1]);
  for (const std::string& half : {first, second}) {
    EXPECT_TRUE(half.starts_with("import jax\n"));
    EXPECT_NE(half.find("from jax.experimental import pallas as pl\n"), std::string::npos);
    EXPECT_NE(half.find("def body"), std::string::npos);  // every half reaches the kernel
    EXPECT_EQ(half.find("def _helper_"), std::string::npos);
  }
  // The sites are cut in the middle; the wrapper goes with the half its callers are in.
  for (const char* in_first : {"def my_call", "def one", "def two", "ROWS = "})
    EXPECT_NE(first.find(in_first), std::string::npos) << in_first << " not in:\n" << first;
  for (const char* in_second : {"def three", "def four", "COLS = ", "def my_call"})
    EXPECT_NE(second.find(in_second), std::string::npos) << in_second << " not in:\n" << second;
  EXPECT_EQ(first.find("def three"), std::string::npos);
  EXPECT_EQ(second.find("def one"), std::string::npos);
  EXPECT_EQ(second.find("ROWS = "), std::string::npos);
  // The wrapper's own site is in both halves; merged, the model is the full parse's.
  syntax::PythonTree full;
  full.parse(text);
  const analysis::DocumentAnalysis whole =
      analysis::analyze_document(full.root(), text, test_util::v5e());
  ASSERT_EQ(whole.model.kernels.size(), 5u);
  test_util::expect_same(*analyse_halves(text, split.halves), whole, text, "four sites");

  // One site: nothing to cut.
  const std::string single =
      "from jax.experimental import pallas as pl\n"
      "def one(x):\n    return pl.pallas_call(k, out_shape=x)(x)\n";
  const pallas::SplitKernelRegions unsplit = pallas::KernelRegionFinder(single).split_regions({});
  EXPECT_TRUE(unsplit.halves[0].spans.empty() && unsplit.halves[1].spans.empty());
  EXPECT_EQ(covered(single, unsplit.all), single);
}

TEST(SplitRegions, HalvesAnalysedApartAndMergedAnalyseLikeAFullParse) {
  size_t compared = 0;
  for (const size_t files : {2u, 5u, 12u, 1000u}) {
    for (const std::string& text :
         {concatenated_corpus(files), with_helpers(concatenated_corpus(files))}) {
      syntax::PythonTree full;
      full.parse(text);
      ASSERT_FALSE(full.has_error()) << text;
      const pallas::SplitKernelRegions split = pallas::KernelRegionFinder(text).split_regions({});
      ASSERT_FALSE(split.halves[1].spans.empty());
      EXPECT_LT(split.halves[0].bytes, split.all.bytes);
      EXPECT_LT(split.halves[1].bytes, split.all.bytes);
      const analysis::DocumentAnalysis whole =
          analysis::analyze_document(full.root(), text, test_util::v5e());
      EXPECT_GE(whole.model.kernels.size(), files < 1000 ? files : 40u);
      test_util::expect_same(*analyse_halves(text, split.halves), whole, text,
                             std::to_string(files) + " files");
      ++compared;
    }
  }
  EXPECT_EQ(compared, 8u);
}

// The corpus files one after another at the top level (their names clash, alike in both parses).
std::string corpus_at_top_level() {
  std::string out;
  for (const auto& path : test_util::corpus_files()) out += test_util::read_file(path) + "\n\n";
  return out;
}

TEST(SkippedBodies, ReadAsBlankTheKernelsBodiesLeaveTheModelAFullParseGives) {
  size_t compared = 0, skipped = 0, fell_back = 0;
  std::vector<std::string> texts;
  for (const auto& path : test_util::corpus_files()) texts.push_back(test_util::read_file(path));
  texts.push_back(corpus_at_top_level());
  texts.push_back(with_helpers(corpus_at_top_level()));
  for (const std::string& text : texts) {
    syntax::PythonTree full;
    full.parse(text);
    const analysis::DocumentAnalysis whole =
        analysis::analyze_document(full.root(), text, test_util::v5e());
    const pallas::KernelRegionFinder finder(text);
    // One partial parse, and (with two sites or more) two halves.
    const pallas::KernelRegions regions = finder.regions({});
    syntax::PythonTree blank;
    blank.parse_partial(text, regions.spans, pallas::skipped_spans(regions.skipped));
    pallas::PallasModel model = pallas::extract_pallas_model(blank.root(), text);
    if (pallas::reads_skipped_body(model, regions.skipped)) {
      ++fell_back;
    } else {
      std::vector<analysis::Finding> findings = analysis::check_model(model, test_util::v5e());
      test_util::expect_same({std::move(model), std::move(findings)}, whole, text, "blank bodies");
      ++compared;
    }
    skipped += regions.skipped.size();
    const pallas::SplitKernelRegions split = finder.split_regions({});
    if (split.halves[1].spans.empty()) continue;
    if (const auto halves = analyse_halves(text, split.halves, true)) {
      test_util::expect_same(*halves, whole, text, "halves, blank bodies");
      ++compared;
    } else {
      ++fell_back;
    }
  }
  EXPECT_GT(compared, 40u);
  EXPECT_GT(skipped, 40u);  // most kernels are named defs whose bodies went blank
  EXPECT_LT(fell_back, compared / 4);
}

TEST(SkippedBodies, OnlyDefsNamedWhereAKernelGoesAndNoSeedOrIndexMap) {
  const std::string text =
      "import functools\n"
      "from jax.experimental import pallas as pl\n"
      "\n"
      "def body(x_ref, o_ref):\n"
      "    o_ref[...] = helper(x_ref[...])\n"
      "\n"
      "def helper(x):\n"
      "    return x\n"
      "\n"
      "def scaled(x_ref, o_ref, *, s):\n"
      "    o_ref[...] = x_ref[...] * s\n"
      "\n"
      "def imap(i):\n"
      "    return (i, 0)\n"
      "\n"
      "def by_keyword(x_ref, o_ref):  # passed as kernel=\n"
      "    o_ref[...] = x_ref[...]\n"
      "\n"
      "def one(x):\n"
      "    return pl.pallas_call(body, out_shape=x, grid=(8,),\n"
      "                          in_specs=[pl.BlockSpec((8, 128), imap)])(x)\n"
      "\n"
      "def two(x):\n"
      "    return pl.pallas_call(functools.partial(scaled, s=2), out_shape=x)(x)\n"
      "\n"
      "def three(x):\n"
      "    return pl.pallas_call(kernel=by_keyword, out_shape=x)(x)\n"
      "\n"
      "def four(x):\n"
      "    return pl.pallas_call(one, out_shape=x)(x)\n";
  const pallas::KernelRegions regions = pallas::KernelRegionFinder(text).regions({});
  std::vector<std::string> bodies;
  for (const pallas::SkippedBody& s : regions.skipped) {
    EXPECT_EQ(text.compare(s.def_start, 4, "def "), 0);
    bodies.push_back(text.substr(s.body.start, s.body.end - s.body.start));
  }
  // `one` is named where a kernel goes too, but it is a site: read whole.
  EXPECT_EQ(bodies,
            (std::vector<std::string>{"o_ref[...] = helper(x_ref[...])",
                                      "o_ref[...] = x_ref[...] * s", "o_ref[...] = x_ref[...]"}));

  // Read as blank, the kernels' bodies leave their headers, and their ends, to the model.
  syntax::PythonTree full, blank;
  full.parse(text);
  blank.parse_partial(text, regions.spans, pallas::skipped_spans(regions.skipped));
  ASSERT_FALSE(blank.has_error()) << sexp(blank.root());
  EXPECT_NE(sexp(blank.root())
                .find("(function_definition name: (identifier) parameters: "
                      "(parameters (identifier) (identifier)) body: (block "
                      "(expression_statement (integer))))"),
            std::string::npos)
      << sexp(blank.root());
  const pallas::PallasModel model = pallas::extract_pallas_model(blank.root(), text);
  EXPECT_FALSE(pallas::reads_skipped_body(model, regions.skipped));
  EXPECT_EQ(model, pallas::extract_pallas_model(full.root(), text));

  // A def that is a kernel somewhere and an index map elsewhere needs its body.
  const std::string both = text +
                           "\ndef five(x):\n"
                           "    return pl.pallas_call(imap, out_shape=x)(x)\n";
  const pallas::KernelRegions with_imap = pallas::KernelRegionFinder(both).regions({});
  ASSERT_EQ(with_imap.skipped.size(), 4u);
  syntax::PythonTree tree;
  tree.parse_partial(both, with_imap.spans, pallas::skipped_spans(with_imap.skipped));
  EXPECT_TRUE(pallas::reads_skipped_body(pallas::extract_pallas_model(tree.root(), both),
                                         with_imap.skipped));
}

TEST(SkippedBodies, BodiesReadAsBlankAreReadOnTheNextReparseAndByTheFullParse) {
  const std::string text = with_helpers(corpus_at_top_level());
  const pallas::KernelRegions regions = pallas::KernelRegionFinder(text).regions({});
  ASSERT_GT(regions.skipped.size(), 5u);
  syntax::PythonTree plain, blank;
  plain.parse_partial(text, regions.spans);
  blank.parse_partial(text, regions.spans, pallas::skipped_spans(regions.skipped));
  ASSERT_TRUE(blank.blanked());
  EXPECT_NE(sexp(blank.root()), sexp(plain.root()));
  syntax::PythonTree fresh;
  fresh.parse(text);
  // The full parse made from the blank tree reads the real bodies.
  const syntax::TreePtr reused = syntax::parse_python(text, blank.copy());
  EXPECT_EQ(sexp(ts_tree_root_node(reused.get())), sexp(fresh.root()));
  // So does the blank tree itself, when asked to or at the next edit.
  syntax::PythonTree asked;
  asked.parse_partial(text, regions.spans, pallas::skipped_spans(regions.skipped));
  asked.read_blanked(text);
  EXPECT_FALSE(asked.blanked());
  EXPECT_EQ(sexp(asked.root()), sexp(plain.root()));

  // What was extracted from the blank tree is reused by the full parse's extraction, alike.
  pallas::ModelCache cache, own;
  pallas::extract_pallas_model(blank.root(), text, &cache);
  const pallas::PallasModel reusing = pallas::extract_pallas_model(fresh.root(), text, &cache);
  EXPECT_EQ(reusing, pallas::extract_pallas_model(fresh.root(), text));
  pallas::extract_pallas_model(fresh.root(), text, &own);
  pallas::extract_pallas_model(fresh.root(), text, &own);
  EXPECT_EQ(cache.last_pass().reused, own.last_pass().reused);
  EXPECT_GT(cache.last_pass().reused, 5u);

  text::TextDocument doc("file:///t.py", 1, text);
  const pallas::SkippedBody& kernel = regions.skipped[regions.skipped.size() / 2];
  const text::Utf16Range at{doc.position_of(kernel.body.end), doc.position_of(kernel.body.end)};
  const text::ByteEdit edit = doc.apply_change(at, "\n    pass");
  blank.edit_and_reparse(edit, doc.text());
  plain.edit_and_reparse(edit, doc.text());
  EXPECT_FALSE(blank.blanked());
  EXPECT_EQ(sexp(blank.root()), sexp(plain.root()));
}

TEST(SkippedBodies, AnyEditReadsTheBlankBodiesAsAPartialParseWithoutThemWould) {
  // A blank body is left out of the ranges after its `0`; the first reparse must read it again
  // wherever the edit falls: before it, in it, across either end, over all of it, over two.
  const std::string text = with_helpers(corpus_at_top_level());
  const pallas::KernelRegions regions = pallas::KernelRegionFinder(text).regions({});
  ASSERT_GT(regions.skipped.size(), 5u);
  const syntax::ByteSpan one = regions.skipped[regions.skipped.size() / 2].body;
  const syntax::ByteSpan next = regions.skipped[regions.skipped.size() / 2 + 1].body;
  struct Case {
    const char* what;
    uint32_t start, end;
    std::string with;
  };
  const std::vector<Case> cases = {
      {"before", one.start - 40, one.start - 40, "\n"},
      {"at its start", one.start, one.start, "y = 1\n    "},
      {"inside", (one.start + one.end) / 2, (one.start + one.end) / 2, "  "},
      {"across its start", one.start - 2, one.start + 3, ""},
      {"across its end", one.end - 3, one.end + 2, "\n"},
      {"all of it", one.start, one.end, "pass"},
      {"over two", one.start - 5, next.end + 1, ""},
  };
  for (const Case& c : cases) {
    text::TextDocument doc("file:///t.py", 1, text);
    const text::Utf16Range range{doc.position_of(c.start), doc.position_of(c.end)};
    const text::ByteEdit edit = doc.apply_change(range, c.with);
    syntax::PythonTree plain, blank;
    plain.parse_partial(text, regions.spans);
    blank.parse_partial(text, regions.spans, pallas::skipped_spans(regions.skipped));
    blank.edit_and_reparse(edit, doc.text());
    plain.edit_and_reparse(edit, doc.text());
    EXPECT_FALSE(blank.blanked()) << c.what;
    EXPECT_EQ(sexp(blank.root()), sexp(plain.root())) << c.what;
  }
}

TEST(SplitRegions, TheAdoptedFullParseReusesWhatBothHalvesExtracted) {
  const std::string text = with_helpers(concatenated_corpus(12));
  const pallas::SplitKernelRegions split = pallas::KernelRegionFinder(text).split_regions({});
  syntax::PythonTree first, second, full;
  first.parse_partial(text, split.halves[0].spans);
  second.parse_partial(text, split.halves[1].spans);
  full.parse(text);
  auto extracted_in_full = [&](bool absorb) {
    pallas::ModelCache cache, other;
    pallas::extract_pallas_model(first.root(), text, &cache);
    pallas::extract_pallas_model(second.root(), text, &other);
    if (absorb) cache.absorb(std::move(other));
    const pallas::PallasModel model = pallas::extract_pallas_model(full.root(), text, &cache);
    EXPECT_EQ(model, pallas::extract_pallas_model(full.root(), text));
    return cache.last_pass();
  };
  // What a full tree's own cache leaves to extract again (statements it does not keep).
  pallas::ModelCache own;
  pallas::extract_pallas_model(full.root(), text, &own);
  pallas::extract_pallas_model(full.root(), text, &own);
  const pallas::ModelCache::PassStats warm = own.last_pass();
  ASSERT_GT(warm.reused, 4u);

  const pallas::ModelCache::PassStats absorbed = extracted_in_full(true);
  EXPECT_EQ(absorbed.extracted, warm.extracted);
  EXPECT_EQ(absorbed.reused, warm.reused);
  EXPECT_GT(extracted_in_full(false).extracted, warm.extracted);
}

TEST(PartialTree, EditsKeepItPartialAndTheAdoptedFullParseMatchesAFreshOne) {
  const std::string original =
      "from jax.experimental import pallas as pl\n"
      "\n"
      "def helper(x):\n"
      "    return x\n"
      "\n"
      "def body(x_ref, o_ref):\n"
      "    o_ref[...] = x_ref[...]\n"
      "\n"
      "def call(x):\n"
      "    return pl.pallas_call(body, out_shape=x)(x)\n";
  const pallas::KernelRegions regions = pallas::KernelRegionFinder(original).regions({});
  ASSERT_EQ(covered(original, regions).find("def helper"), std::string::npos);

  text::TextDocument doc("file:///t.py", 1, original);
  syntax::PythonTree tree;
  tree.parse_partial(doc.text(), regions.spans);
  ASSERT_TRUE(tree.partial());
  syntax::TreePtr full = syntax::parse_python(doc.text(), tree.copy());
  const uint64_t generation = tree.generation();

  std::mt19937 rng(7);
  const char* typed[] = {"y", "1", " ", "_", "()"};  // the module must still parse
  auto edit_at = [&](size_t at, const std::string& with) {
    const text::Utf16Range range{doc.position_of(at), doc.position_of(at)};
    tree.edit_and_reparse(doc.apply_change(range, with), doc.text());
  };
  // Typing inside the helper (left out) and inside the kernel's body (parsed).
  edit_at(doc.text().find("return x") + 8, " + 2");
  for (int i = 0; i < 20; ++i) {
    const size_t at = doc.text().find("o_ref[...] =") + rng() % 12;
    edit_at(at, typed[rng() % std::size(typed)]);
  }
  EXPECT_TRUE(tree.partial());
  EXPECT_EQ(tree.generation(), generation);

  const syntax::TreePtr was_partial = tree.adopt_full(std::move(full), doc.text());
  EXPECT_NE(was_partial, nullptr);
  EXPECT_FALSE(tree.partial());
  syntax::PythonTree fresh;
  fresh.parse(doc.text());
  EXPECT_EQ(sexp(tree.root()), sexp(fresh.root()));
  // The helper the partial tree left out is in the adopted one, with its edit.
  const auto helper = static_cast<uint32_t>(doc.text().find("def helper"));
  const TSNode def = ts_node_descendant_for_byte_range(tree.root(), helper, helper + 3);
  EXPECT_STREQ(ts_node_type(ts_node_parent(def)), "function_definition");
  EXPECT_NE(doc.text().find("return x + 2"), std::string::npos);

  // Later edits are ordinary incremental reparses of the full tree.
  edit_at(0, "import jax\n");
  fresh.parse(doc.text());
  EXPECT_EQ(sexp(tree.root()), sexp(fresh.root()));
}

TEST(PartialTree, AFullParseMadeFromThePartialOneEqualsAFreshParse) {
  for (const auto& path : test_util::corpus_files()) {
    const std::string text = with_helpers(test_util::read_file(path));
    syntax::PythonTree partial;
    partial.parse_partial(text, pallas::KernelRegionFinder(text).regions({}).spans);
    syntax::PythonTree fresh;
    fresh.parse(text);
    const syntax::TreePtr reused = syntax::parse_python(text, partial.copy());
    EXPECT_EQ(sexp(ts_tree_root_node(reused.get())), sexp(fresh.root())) << path;
  }
}

}  // namespace
}  // namespace mk

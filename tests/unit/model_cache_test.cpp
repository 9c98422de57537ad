// ModelCache: an analysis that reuses per-statement results must equal one from scratch, after
// any sequence of edits. Property test over the corpus (tests/corpus/good, tests/corpus/bad,
// examples/) with seeded random edits, plus targeted cases for each kind of dependency.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "analysis_test_util.h"
#include "knowledge/tpu_generations.h"
#include "pallas_test_util.h"
#include "source/analysis/document_analysis.h"
#include "source/pallas/model_cache.h"
#include "source/syntax/python_tree.h"
#include "source/text/text_document.h"

namespace mk {
namespace {

using test_util::corpus_files;
using test_util::expect_same;
using test_util::read_file;
using test_util::v5e;
namespace fs = std::filesystem;

// A document edited the way the server edits it: UTF-16 ranges, incremental reparse, and one
// ModelCache carried from each analysis to the next.
class EditedDocument {
 public:
  explicit EditedDocument(std::string text) : doc_("file:///t.py", 1, std::move(text)) {
    tree_.parse(doc_.text());
  }

  const std::string& text() const { return doc_.text(); }

  void replace(size_t start, size_t end, const std::string& with) {
    const text::Utf16Range range{doc_.position_of(start), doc_.position_of(end)};
    tree_.edit_and_reparse(doc_.apply_change(range, with), doc_.text());
  }

  analysis::DocumentAnalysis cached() {
    return analysis::analyze_document(tree_.root(), doc_.text(), v5e(), &cache_);
  }
  analysis::DocumentAnalysis fresh() const {
    return analysis::analyze_document(tree_.root(), doc_.text(), v5e());
  }
  const pallas::ModelCache& cache() const { return cache_; }

 private:
  text::TextDocument doc_;
  syntax::PythonTree tree_;
  pallas::ModelCache cache_;
};

// One random edit of the kinds that change what the cache depends on: typing, deleting, module
// constants changing value, lines duplicated (names bound twice) or removed, identifiers renamed,
// text inserted before everything (every span moves), and a return to the original text.
class RandomEditor {
 public:
  RandomEditor(uint32_t seed, std::string original) : rng_(seed), original_(std::move(original)) {}

  std::string apply(EditedDocument& doc) {
    const std::string& t = doc.text();
    switch (pick(9)) {
      case 0: {  // type a snippet somewhere
        static const char* kSnippets[] = {"x",
                                          " ",
                                          "\n",
                                          "\n    ",
                                          "(",
                                          ")",
                                          "1",
                                          "0",
                                          "_",
                                          ",",
                                          "= 3",
                                          ":",
                                          "# c\n",
                                          "\"",
                                          "pallas_call",
                                          "\nNUM_LANES = 256\n",
                                          "pl.BlockSpec((8, 128), lambda i: (i, 0))"};
        const size_t at = offset(t);
        const std::string s = kSnippets[pick(std::size(kSnippets))];
        doc.replace(at, at, s);
        return "insert '" + s + "' at " + std::to_string(at);
      }
      case 1: {  // delete a short range
        const size_t at = offset(t);
        const size_t end = std::min(t.size(), at + 1 + pick(20));
        doc.replace(at, end, "");
        return "delete " + std::to_string(at) + ".." + std::to_string(end);
      }
      case 2:
      case 3: {  // change an integer literal (block sizes, CONFIG values, grid extents)
        std::vector<std::pair<size_t, size_t>> numbers;
        for (size_t i = 0; i < t.size();) {
          if (std::isdigit(static_cast<unsigned char>(t[i])) &&
              (i == 0 ||
               !(std::isalnum(static_cast<unsigned char>(t[i - 1])) || t[i - 1] == '_'))) {
            size_t j = i;
            while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) ++j;
            numbers.emplace_back(i, j);
            i = j;
          } else {
            ++i;
          }
        }
        if (numbers.empty()) return "no number";
        static const char* kValues[] = {"1", "2", "3", "7", "8", "16", "100", "128", "256", "512"};
        const auto [start, end] = numbers[pick(numbers.size())];
        const std::string v = kValues[pick(std::size(kValues))];
        doc.replace(start, end, v);
        return "number at " + std::to_string(start) + " -> " + v;
      }
      case 4: {  // duplicate a line
        const auto [start, end] = line_at(t, offset(t));
        const std::string line = t.substr(start, end - start) + "\n";
        doc.replace(start, start, line);
        return "duplicate line at " + std::to_string(start);
      }
      case 5: {  // delete a line
        const auto [start, end] = line_at(t, offset(t));
        doc.replace(start, std::min(t.size(), end + 1), "");
        return "delete line at " + std::to_string(start);
      }
      case 6: {  // rename one occurrence of an identifier
        size_t at = offset(t);
        while (at < t.size() && !std::isalpha(static_cast<unsigned char>(t[at]))) ++at;
        if (at >= t.size()) return "no identifier";
        doc.replace(at, at, "z");
        return "rename at " + std::to_string(at);
      }
      case 7: {  // insert before everything
        static const char* kHeads[] = {"\n", "# header\n", "EXTRA = 1\n"};
        const std::string s = kHeads[pick(std::size(kHeads))];
        doc.replace(0, 0, s);
        return "prepend '" + s + "'";
      }
      default: {
        if (pick(4) != 0) return apply(doc);
        doc.replace(0, t.size(), original_);
        return "restore the original";
      }
    }
  }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  size_t offset(const std::string& t) { return pick(t.size() + 1); }
  static std::pair<size_t, size_t> line_at(const std::string& t, size_t at) {
    at = std::min(at, t.size());
    const size_t start = at == 0 ? 0 : t.rfind('\n', at - 1) + 1;  // npos + 1 == 0
    const size_t end = std::min(t.find('\n', at), t.size());
    return {start, end};
  }

  std::mt19937 rng_;
  std::string original_;
};

TEST(ModelCache, RandomEditsOverTheCorpusMatchAFreshAnalysis) {
  const std::vector<fs::path> files = corpus_files();
  ASSERT_GE(files.size(), 40u) << "the corpus moved? looked under " << MK_SOURCE_DIR;
  size_t reused = 0, extracted = 0, edits = 0;
  for (const fs::path& file : files) {
    const std::string original = read_file(file);
    for (uint32_t sequence = 0; sequence < 3; ++sequence) {
      const uint32_t seed =
          static_cast<uint32_t>(std::hash<std::string>{}(file.filename())) + sequence;
      EditedDocument doc(original);
      expect_same(doc.cached(), doc.fresh(), doc.text(), file.string() + " before any edit");
      RandomEditor editor(seed, original);
      std::string history;
      for (int step = 0; step < 30; ++step) {
        history += "\n  " + editor.apply(doc);
        ++edits;
        const analysis::DocumentAnalysis cached = doc.cached();
        reused += doc.cache().last_pass().reused;
        extracted += doc.cache().last_pass().extracted;
        expect_same(cached, doc.fresh(), doc.text(),
                    file.string() + " seed " + std::to_string(seed) + " after:" + history);
        if (HasFailure()) return;  // one readable failure, not hundreds
      }
    }
  }
  // The property is only worth something if the cache was actually used.
  EXPECT_GT(edits, 1000u);
  EXPECT_GT(reused, edits / 5) << "reused " << reused << ", extracted " << extracted;
}

const std::string kTwoKernels =
    test_util::kPrelude +
    "BLOCK = 128\n"
    "\n"
    "def first(x):\n"
    "    return pl.pallas_call(kernel,\n"
    "        out_shape=jax.ShapeDtypeStruct((1024, 1024), jnp.float32),\n"
    "        grid=(8,),\n"
    "        in_specs=[pl.BlockSpec((BLOCK, 1024), lambda i: (i, 0))],\n"
    "        out_specs=pl.BlockSpec((BLOCK, 1024), lambda i: (i, 0)),\n"
    "    )(x)\n"
    "\n"
    "def second(x):\n"
    "    return pl.pallas_call(kernel,\n"
    "        out_shape=jax.ShapeDtypeStruct((1024, 1024), jnp.float32),\n"
    "        grid=(8,),\n"
    "        in_specs=[pl.BlockSpec((128, 1024), lambda i: (i, 0))],\n"
    "        out_specs=pl.BlockSpec((128, 1024), lambda i: (i, 0)),\n"
    "    )(x)\n";

TEST(ModelCache, TypingInOneKernelReusesTheOtherAndMovesItsSpans) {
  EditedDocument doc(kTwoKernels);
  ASSERT_EQ(doc.cached().model.kernels.size(), 2u);
  EXPECT_EQ(doc.cache().last_pass().extracted, 2u);

  const size_t at = doc.text().find("def first(x):\n") + std::string("def first(x):\n").size();
  doc.replace(at, at, "    row_scale = 1.0 / 8\n");
  const analysis::DocumentAnalysis a = doc.cached();
  EXPECT_EQ(doc.cache().last_pass().reused, 1u);
  EXPECT_EQ(doc.cache().last_pass().extracted, 1u);
  ASSERT_EQ(a.model.kernels.size(), 2u);
  const pallas::Span call = a.model.kernels[1].call_span;
  EXPECT_EQ(doc.text().substr(call.start, call.end - call.start), "pl.pallas_call");
  expect_same(a, doc.fresh(), doc.text(), "typing in first");
}

TEST(ModelCache, ChangingAModuleConstantReanalysesTheKernelsThatReadIt) {
  EditedDocument doc(kTwoKernels);
  EXPECT_TRUE(doc.cached().findings.empty());

  const size_t at = doc.text().find("BLOCK = 128") + std::string("BLOCK = ").size();
  doc.replace(at, at + 3, "100");  // not a multiple of 8: MK001 on `first` only
  const analysis::DocumentAnalysis a = doc.cached();
  EXPECT_EQ(doc.cache().last_pass().reused, 1u);  // `second` does not read BLOCK
  EXPECT_EQ(doc.cache().last_pass().extracted, 1u);
  ASSERT_FALSE(a.findings.empty());
  for (const analysis::Finding& f : a.findings) EXPECT_EQ(f.kernel, 0u) << f.message;
  expect_same(a, doc.fresh(), doc.text(), "BLOCK = 100");
}

TEST(ModelCache, BindingAPreviouslyUnboundNameReanalysesItsReaders) {
  EditedDocument doc(kTwoKernels);
  doc.cached();
  // `second` reads `kernel`, `pl`, `jax`, `jnp`; binding `kernel` a second time makes it unknown.
  doc.replace(doc.text().size(), doc.text().size(), "\nkernel = None\n");
  const analysis::DocumentAnalysis a = doc.cached();
  EXPECT_EQ(doc.cache().last_pass().reused, 0u);
  expect_same(a, doc.fresh(), doc.text(), "kernel rebound");
  ASSERT_EQ(a.model.kernels.size(), 2u);
  EXPECT_FALSE(a.model.kernels[1].kernel_def_span.has_value());
}

TEST(ModelCache, KeepsOneEntryPerRelevantStatement) {
  EditedDocument doc(kTwoKernels);
  doc.cached();
  for (int i = 0; i < 20; ++i) {
    const size_t at = doc.text().find("def second(x):\n") + std::string("def second(x):\n").size();
    doc.replace(at, at, "    y = " + std::to_string(i) + "\n");
    doc.cached();
  }
  EXPECT_EQ(doc.cache().size(), 2u);
}

}  // namespace
}  // namespace mk

// Evaluator: constant evaluation of Python expressions over a tree-sitter tree.
#include "source/pallas/evaluator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "source/syntax/node_util.h"
#include "source/syntax/python_tree.h"

namespace mk::pallas {
namespace {

using syntax::field;
using syntax::is;
using syntax::text_of;

// A parsed source and an evaluator over it; finds `NAME = expr` anywhere (first in tree order).
class Source {
 public:
  explicit Source(std::string text) : text_(std::move(text)) {
    tree_.parse(text_);
    eval_ = std::make_unique<Evaluator>(tree_.root(), text_);
  }

  TSNode assignment_value(std::string_view name) const {
    TSNode found{};
    find(tree_.root(), name, found);
    return found;
  }

  Value value_of(std::string_view name) {
    const TSNode node = assignment_value(name);
    EXPECT_FALSE(ts_node_is_null(node)) << "no assignment to " << name;
    return eval_->eval(node);
  }

  Evaluator& evaluator() { return *eval_; }
  const std::string& text() const { return text_; }

 private:
  void find(TSNode node, std::string_view name, TSNode& found) const {
    if (!ts_node_is_null(found)) return;
    if (is(node, "assignment") && is(field(node, "left"), "identifier") &&
        text_of(field(node, "left"), text_) == name) {
      found = field(node, "right");
      return;
    }
    for (uint32_t i = 0; i < ts_node_named_child_count(node); ++i)
      find(ts_node_named_child(node, i), name, found);
  }

  std::string text_;
  syntax::PythonTree tree_;
  std::unique_ptr<Evaluator> eval_;
};

int64_t int_of(Source& s, std::string_view name) {
  const Value v = s.value_of(name);
  EXPECT_TRUE(v.is(Value::Kind::Int)) << name << " = " << v.render() << " (" << v.text << ")";
  return v.int_value;
}

std::string render_of(Source& s, std::string_view name) {
  return s.value_of(name).render();
}

TEST(FloorDiv, MatchesPythonSemantics) {
  EXPECT_EQ(floor_div(7, 2), 3);
  EXPECT_EQ(floor_div(-7, 2), -4);
  EXPECT_EQ(floor_div(7, -2), -4);
  EXPECT_EQ(floor_div(-7, -2), 3);
  EXPECT_EQ(floor_div(-8, 2), -4);
  EXPECT_EQ(floor_div(0, -3), 0);
}

TEST(Evaluator, Literals) {
  Source s(
      "A = 1_024\nB = 0x10\nC = 0o17\nD = 0b101\nE = 0X1f\nF = 2.5\nG = True\nH = None\n"
      "I = 'abc'\nJ = \"x\" 'y'\nK = -3\nL = f'{A}'\nM = 1e3\n"
      "N = ''\nO = \"\"\"doc\"\"\"\nP = 'it\"s'\nQ = b'raw'\n");
  EXPECT_EQ(int_of(s, "A"), 1024);
  EXPECT_EQ(int_of(s, "B"), 16);
  EXPECT_EQ(int_of(s, "C"), 15);
  EXPECT_EQ(int_of(s, "D"), 5);
  EXPECT_EQ(int_of(s, "E"), 31);
  EXPECT_DOUBLE_EQ(s.value_of("F").float_value, 2.5);
  EXPECT_TRUE(s.value_of("G").is(Value::Kind::Bool));
  EXPECT_TRUE(s.value_of("G").bool_value);
  EXPECT_TRUE(s.value_of("H").is(Value::Kind::None));
  EXPECT_EQ(s.value_of("I"), Value::string("abc"));
  EXPECT_EQ(s.value_of("J"), Value::string("xy"));
  // Plain literals are read between their quotes; the others through the parse's parts.
  EXPECT_EQ(s.value_of("N"), Value::string(""));
  EXPECT_EQ(s.value_of("O"), Value::string("doc"));
  EXPECT_EQ(s.value_of("P"), Value::string("it\"s"));
  EXPECT_EQ(s.value_of("Q"), Value::string("raw"));
  EXPECT_EQ(int_of(s, "K"), -3);
  EXPECT_FALSE(s.value_of("L").known());  // f-strings are not constant-folded
  EXPECT_DOUBLE_EQ(s.value_of("M").float_value, 1000.0);
}

TEST(Evaluator, TuplesAndLists) {
  Source s("A = (8, 128)\nB = [1, 2, 3]\nC = (4,)\nD = ()\nE = (*A, 256)\nF = 1, 2\n");
  EXPECT_EQ(render_of(s, "A"), "(8, 128)");
  EXPECT_EQ(render_of(s, "B"), "(1, 2, 3)");
  EXPECT_EQ(render_of(s, "C"), "(4,)");
  EXPECT_EQ(render_of(s, "D"), "()");
  EXPECT_EQ(render_of(s, "E"), "(8, 128, 256)");
  EXPECT_EQ(render_of(s, "F"), "(1, 2)");
}

TEST(Evaluator, IntegerArithmetic) {
  Source s(
      "A = 7 // 2\nB = -7 // 2\nC = 7 // -2\nD = -7 % 3\nE = 7 % -3\nF = 2 ** 10\nG = 1 << 4\n"
      "H = 1024 >> 3\nI = (3 + 4) * 2 - 1\nJ = 7 / 2\nK = 2 ** -1\nL = 5 // 0\nM = ~0\nN = 2 * "
      "3.5\n");
  EXPECT_EQ(int_of(s, "A"), 3);
  EXPECT_EQ(int_of(s, "B"), -4);
  EXPECT_EQ(int_of(s, "C"), -4);
  EXPECT_EQ(int_of(s, "D"), 2);
  EXPECT_EQ(int_of(s, "E"), -2);
  EXPECT_EQ(int_of(s, "F"), 1024);
  EXPECT_EQ(int_of(s, "G"), 16);
  EXPECT_EQ(int_of(s, "H"), 128);
  EXPECT_EQ(int_of(s, "I"), 13);
  EXPECT_TRUE(s.value_of("J").is(Value::Kind::Float));
  EXPECT_DOUBLE_EQ(s.value_of("J").float_value, 3.5);
  EXPECT_DOUBLE_EQ(s.value_of("K").float_value, 0.5);
  EXPECT_FALSE(s.value_of("L").known());  // division by zero stays unknown, no crash
  EXPECT_EQ(int_of(s, "M"), -1);
  EXPECT_DOUBLE_EQ(s.value_of("N").float_value, 7.0);
}

TEST(Evaluator, TupleConcatenationAndRepetition) {
  Source s("A = (1, 2) + (3,)\nB = (8,) * 3\nC = 2 * (1, 0)\nD = [None] + [128]\nE = (1,) * 0\n");
  EXPECT_EQ(render_of(s, "A"), "(1, 2, 3)");
  EXPECT_EQ(render_of(s, "B"), "(8, 8, 8)");
  EXPECT_EQ(render_of(s, "C"), "(1, 0, 1, 0)");
  EXPECT_EQ(render_of(s, "D"), "(None, 128)");
  EXPECT_EQ(render_of(s, "E"), "()");
}

TEST(Evaluator, NamesAndDictLookups) {
  Source s(
      "M = 1024\nCONFIG = {'M': M, 'N': 512, 'dtype': 'bfloat16'}\n"
      "TUNED_PARAMS = {'block_m': 256, 'block_n': CONFIG['N'] // 4}\n"
      "A = CONFIG['M'] // TUNED_PARAMS['block_m']\nB = TUNED_PARAMS['block_n']\n"
      "C = CONFIG['missing']\nD = CONFIG['dtype']\nE = dict(a=1, b=2)['b']\nF = len(CONFIG)\n"
      "G, H = 3, 4\n");
  EXPECT_EQ(int_of(s, "A"), 4);
  EXPECT_EQ(int_of(s, "B"), 128);
  EXPECT_FALSE(s.value_of("C").known());
  EXPECT_EQ(s.value_of("D"), Value::string("bfloat16"));
  EXPECT_EQ(int_of(s, "E"), 2);
  EXPECT_EQ(int_of(s, "F"), 3);
  const Value cfg = s.value_of("CONFIG");
  ASSERT_TRUE(cfg.get("N").has_value());
  EXPECT_EQ(cfg.get("N")->as_int(), 512);
  EXPECT_FALSE(cfg.get("K").has_value());
  Source t("G, H = 3, 4\nX = G * 10 + H\n");
  EXPECT_EQ(int_of(t, "X"), 34);
}

TEST(Evaluator, NamesBoundTwiceAreUnknownUnlessEqual) {
  Source s("A = 1\nA = 2\nX = A\nB = 5\nB = 5\nY = B\nC = 1\nC += 1\nZ = C\n");
  const Value x = s.value_of("X");
  EXPECT_FALSE(x.known());
  EXPECT_NE(x.text.find("more than once"), std::string::npos) << x.text;
  EXPECT_EQ(int_of(s, "Y"), 5);
  EXPECT_FALSE(s.value_of("Z").known());
  Source loop("for i in range(3):\n    pass\nX = i\nif True:\n    D = 7\nY = D\n");
  EXPECT_FALSE(loop.value_of("X").known());
  EXPECT_EQ(int_of(loop, "Y"), 7);  // names bound in an `if` block live in the same scope
}

TEST(Evaluator, FunctionParametersAreUnknown) {
  Source s(
      "N = 64\n"
      "def f(n, m=4, *args, k: int = 2, **kw):\n"
      "    A = n * 2\n"
      "    B = m\n"
      "    C = N * 2\n"
      "    D = k\n"
      "    N2 = N\n");
  const Value a = s.value_of("A");
  EXPECT_FALSE(a.known());
  EXPECT_FALSE(s.value_of("B").known());  // a default is not the value
  EXPECT_EQ(int_of(s, "C"), 128);         // module names are visible inside functions
  EXPECT_FALSE(s.value_of("D").known());
  const Value via_lookup = s.evaluator().lookup("n", s.assignment_value("A"));
  EXPECT_FALSE(via_lookup.known());
  EXPECT_NE(via_lookup.text.find("parameter `n` of `f`"), std::string::npos) << via_lookup.text;
  // A local shadows the module binding; a lambda parameter shadows too.
  Source t("X = 1\ndef g():\n    X = 2\n    Y = X\nZ = (lambda X: X)\nW = X\n");
  EXPECT_EQ(int_of(t, "Y"), 2);
  EXPECT_EQ(int_of(t, "W"), 1);
}

TEST(Evaluator, ImportAliasesResolveToQualifiedNames) {
  Source a("from jax.experimental import pallas as pl\nX = pl.BlockSpec\nY = pl.tpu.VMEM\n");
  EXPECT_EQ(a.value_of("X"), Value::symbol("jax.experimental.pallas.BlockSpec"));
  EXPECT_EQ(a.value_of("Y"), Value::symbol("jax.experimental.pallas.tpu.VMEM"));
  EXPECT_EQ(a.evaluator().qualified_name(a.assignment_value("X")),
            "jax.experimental.pallas.BlockSpec");

  Source b("import jax.experimental.pallas as pl\nX = pl.BlockSpec\n");
  EXPECT_EQ(b.value_of("X"), Value::symbol("jax.experimental.pallas.BlockSpec"));

  Source c("from jax.experimental.pallas import pallas_call\nX = pallas_call\n");
  EXPECT_EQ(c.value_of("X"), Value::symbol("jax.experimental.pallas.pallas_call"));

  Source d("import jax\nimport jax.numpy as jnp\nX = jax.numpy.float32\nY = jnp.bfloat16\n");
  EXPECT_EQ(d.value_of("X"), Value::symbol("jax.numpy.float32"));
  EXPECT_EQ(d.value_of("Y"), Value::symbol("jax.numpy.bfloat16"));

  Source e("from jax.experimental.pallas import tpu as pltpu\nX = pltpu.CompilerParams\n");
  EXPECT_EQ(e.value_of("X"), Value::symbol("jax.experimental.pallas.tpu.CompilerParams"));

  const auto modules = a.evaluator().imported_modules();
  ASSERT_EQ(modules.size(), 1u);
  EXPECT_EQ(modules[0], "jax.experimental.pallas");

  // A call to an imported object is a Call value naming it.
  Source f(
      "import jax\nimport jax.numpy as jnp\nS = jax.ShapeDtypeStruct((8, 128), jnp.float32)\n"
      "SH = S.shape\nDT = S.dtype\n");
  const Value call = f.value_of("S");
  EXPECT_TRUE(call.is(Value::Kind::Call));
  EXPECT_EQ(call.text, "jax.ShapeDtypeStruct");
  EXPECT_TRUE(call.names("ShapeDtypeStruct"));
  EXPECT_FALSE(call.names("DtypeStruct"));  // suffix must start at a dot
  EXPECT_EQ(render_of(f, "SH"), "(8, 128)");
  EXPECT_EQ(f.value_of("DT"), Value::symbol("jax.numpy.float32"));
}

TEST(Evaluator, Builtins) {
  Source s(
      "from jax.experimental import pallas as pl\nimport math\n"
      "A = pl.cdiv(1000, 128)\nB = pl.cdiv(1024, 128)\nC = max(3, 7, 5)\nD = min((4, 2, 9))\n"
      "E = len((1, 2, 3))\nF = int(7.9)\nG = tuple([1, 2])\nH = math.prod((2, 3, 4))\n"
      "I = range(2, 8, 3)\nJ = max(3, unknown_name)\nK = [0 for _ in range(3)]\nL = len(x)\n");
  EXPECT_EQ(int_of(s, "A"), 8);
  EXPECT_EQ(int_of(s, "B"), 8);
  EXPECT_EQ(int_of(s, "C"), 7);
  EXPECT_EQ(int_of(s, "D"), 2);
  EXPECT_EQ(int_of(s, "E"), 3);
  EXPECT_EQ(int_of(s, "F"), 7);
  EXPECT_EQ(render_of(s, "G"), "(1, 2)");
  EXPECT_EQ(int_of(s, "H"), 24);
  EXPECT_EQ(render_of(s, "I"), "(2, 5)");
  EXPECT_FALSE(s.value_of("J").known());
  EXPECT_EQ(render_of(s, "K"), "(0, 0, 0)");
  EXPECT_FALSE(s.value_of("L").known());
}

TEST(Evaluator, SubscriptsAndSlicesOfTuples) {
  Source s(
      "T = (1, 2, 3, 4, 5)\nA = T[1:3]\nB = T[-2:]\nC = T[:-1]\nD = T[-1]\nE = T[::2]\n"
      "F = T[10]\nG = T[:]\nH = T[3:1]\nI = T[0]\n");
  EXPECT_EQ(render_of(s, "A"), "(2, 3)");
  EXPECT_EQ(render_of(s, "B"), "(4, 5)");
  EXPECT_EQ(render_of(s, "C"), "(1, 2, 3, 4)");
  EXPECT_EQ(int_of(s, "D"), 5);
  EXPECT_FALSE(s.value_of("E").known());  // steps are not evaluated
  EXPECT_FALSE(s.value_of("F").known());  // out of range
  EXPECT_EQ(render_of(s, "G"), "(1, 2, 3, 4, 5)");
  EXPECT_EQ(render_of(s, "H"), "()");
  EXPECT_EQ(int_of(s, "I"), 1);
}

TEST(Evaluator, ConditionalExpressions) {
  Source s("FLAG = True\nA = 1 if FLAG else 2\nB = 3 if x else 3\nC = 3 if x else 4\n");
  EXPECT_EQ(int_of(s, "A"), 1);
  EXPECT_EQ(int_of(s, "B"), 3);  // both branches agree
  EXPECT_FALSE(s.value_of("C").known());
}

TEST(Evaluator, DefinitionsAndLambdasAreCallables) {
  Source s(
      "def kernel(x_ref):\n    pass\nK = kernel\nL = lambda i: (i, 0)\nclass C:\n    pass\nD = "
      "C\n");
  const Value k = s.value_of("K");
  ASSERT_TRUE(k.is(Value::Kind::Callable));
  EXPECT_TRUE(is(k.node, "function_definition"));
  const Value l = s.value_of("L");
  ASSERT_TRUE(l.is(Value::Kind::Callable));
  EXPECT_TRUE(is(l.node, "lambda"));
  EXPECT_FALSE(s.value_of("D").known());
}

TEST(Evaluator, SelfReferenceTerminates) {
  Source s("X = X + 1\nA = B\nB = A\nP, Q = Q, P\nT = (T, 1)\n");
  const Value x = s.value_of("X");
  EXPECT_FALSE(x.known());
  EXPECT_FALSE(s.value_of("A").known());
  const TSNode root = ts_node_parent(ts_node_parent(ts_node_parent(s.assignment_value("X"))));
  ASSERT_TRUE(is(root, "module"));
  const Value p = s.evaluator().lookup("P", root);
  EXPECT_FALSE(p.known());
  EXPECT_NE(p.text.find("refers to itself"), std::string::npos) << p.text;
  const Value t = s.evaluator().lookup("T", root);
  ASSERT_TRUE(t.is(Value::Kind::Tuple));
  EXPECT_FALSE((*t.items)[0].known());
  EXPECT_EQ((*t.items)[1].as_int(), 1);
}

TEST(Evaluator, DeeplyNestedExpressionIsCutOff) {
  std::string expr = "1";
  for (int i = 0; i < 200; ++i) expr = "(" + expr + " + 1)";
  Source s("X = " + expr + "\n");
  EXPECT_FALSE(s.value_of("X").known());  // past the depth limit: unknown, not a stack overflow
  std::string shallow = "1";
  for (int i = 0; i < 10; ++i) shallow = "(" + shallow + " + 1)";
  Source t("X = " + shallow + "\n");
  EXPECT_EQ(int_of(t, "X"), 11);
}

TEST(Evaluator, IntegerOverflowIsNotWrapped) {
  // Python integers do not wrap: a result outside int64 must not come back as a (wrong) Int.
  Source s(
      "A = 10 ** 30\nB = 2 ** 62 * 4\nC = 3 << 62\nD = 9223372036854775807 + 1\n"
      "E = (-9223372036854775807 - 1) // -1\nF = (-9223372036854775807 - 1) % -1\n");
  for (const char* name : {"A", "B", "C", "D", "E"}) {
    const Value v = s.value_of(name);
    EXPECT_FALSE(v.is(Value::Kind::Int)) << name << " = " << v.render();
  }
  EXPECT_EQ(s.value_of("F").as_int().value_or(0), 0);  // Python: 0
}

TEST(Evaluator, WalksCodeInsideFormattedStringsOnly) {
  // The walk skips the insides of plain literals, so a call or a comprehension in an f-string's
  // interpolation must still be seen: by the walk, and by the scope index built in it.
  Source s(
      "Y = 3\n"
      "Z = (\"g(2) [Y for Y in a]\", f\"{g(1)}\", Rb'h(3)', f\"{[Y for Y in range(2)]}\")\n");
  std::vector<std::string> calls;
  TSNode inner_y{};
  s.evaluator().walk_statement(1, [&](TSNode node, size_t) {
    if (is(node, "call")) calls.emplace_back(text_of(node, s.text()));
    if (is(node, "list_comprehension")) inner_y = field(node, "body");
  });
  EXPECT_EQ(calls, (std::vector<std::string>{"g(1)", "range(2)"}));
  ASSERT_TRUE(is(inner_y, "identifier"));
  const Value v = s.evaluator().eval(inner_y);
  EXPECT_FALSE(v.is(Value::Kind::Int)) << v.render();  // the comprehension's own Y, not 3
  EXPECT_EQ(int_of(s, "Y"), 3);
}

TEST(Evaluator, WithAndExceptTargetsAreLocalNames) {
  Source s(
      "N = 128\n"
      "def f(ctx):\n"
      "    with ctx() as N:\n"
      "        A = N\n"
      "def g():\n"
      "    try:\n"
      "        pass\n"
      "    except ValueError as N:\n"
      "        B = N\n");
  EXPECT_FALSE(s.value_of("A").known()) << s.value_of("A").render();
  EXPECT_FALSE(s.value_of("B").known()) << s.value_of("B").render();
}

TEST(Evaluator, ChainOfSharedNamesEvaluatesQuickly) {
  // Each name uses the previous one twice. Without memoisation this is 2^N evaluations.
  std::string src = "A0 = 1\n";
  const int n = 22;  // deep enough to be slow, shallow enough for the evaluator's depth limit
  for (int i = 1; i <= n; ++i) {
    src += "A" + std::to_string(i) + " = A" + std::to_string(i - 1) + " + A" +
           std::to_string(i - 1) + "\n";
  }
  src += "X = A" + std::to_string(n) + "\n";
  Source s(src);
  const auto start = std::chrono::steady_clock::now();
  const Value x = s.value_of("X");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(x.as_int(), int64_t{1} << n);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), 2000)
      << "evaluating a chain of " << n << " names is exponential";
}

}  // namespace
}  // namespace mk::pallas

// Constant evaluation of Python expressions over a tree-sitter tree: literals, tuples, arithmetic,
// names bound once in an enclosing scope, module-level dict entries, imports. Unknown stays
// unknown.
#pragma once

#include <tree_sitter/api.h>

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "source/pallas/value.h"

namespace mk::pallas {

// What a name is bound to in one scope (module, function or lambda).
struct Binding {
  enum class Kind { Value, Parameter, Import, Definition, Opaque };
  Kind kind = Kind::Value;
  TSNode value{};         // Value: the assigned expression; Definition: the def node
  int unpack_index = -1;  // for `a, b = (x, y)`: which element of `value`
  std::string qualified;  // Import: the qualified name
  std::string why;        // Opaque / Parameter: reason the value is unknown
  int statement = -1;     // module scope: index of the top-level statement that binds it
};

class Evaluator {
 public:
  Evaluator(TSNode root, std::string_view source);

  Value eval(TSNode expression);
  // The qualified name an expression refers to ("jax.experimental.pallas.pallas_call"), or "".
  std::string qualified_name(TSNode expression);
  // Resolves a name as seen from `at`.
  Value lookup(std::string_view name, TSNode at);
  // The module-level binding of a name, if any (task conventions use this).
  const std::vector<Binding>* module_binding(std::string_view name);
  // Every module-imported qualified name (for backend detection).
  std::vector<std::string> imported_modules();
  // The same from the top-level import statements alone, without building the module scope
  // (what a caller needs before the analysis: which other files to read).
  std::vector<std::string> top_level_imports();

  // Starts the analysis of one top-level statement: forgets memoised binding values, so the
  // result depends only on the statement and the module bindings it reads (never on what an
  // earlier statement evaluated), and starts a fresh record of those reads.
  void begin_statement();
  // Names looked up at module scope (bound there or not) since begin_statement, sorted.
  std::vector<std::string> module_reads() const;
  // Indices into top_level_statements() of the statements binding `name` at module scope, one
  // per binding in binding order; does not count as a read.
  std::vector<int> module_binding_statements(std::string_view name);

  // The module's top-level statements, in order.
  const std::vector<TSNode>& top_level_statements();
  // Calls `visit` with every descendant of top-level statement `index` in pre-order, with its
  // depth below the statement, except the insides of string literals without an f prefix (they
  // hold no code); its scopes are indexed in the same walk if they were not yet, so
  // a caller's walk over a statement and the scope index share one pass. `visit` must not
  // evaluate: the index is complete only when this returns.
  void walk_statement(size_t index, const std::function<void(TSNode, size_t)>& visit);
  // The innermost `def` enclosing a byte offset (null node at module level).
  TSNode enclosing_function(uint32_t offset);

  std::string_view source() const { return source_; }
  TSNode root() const { return root_; }

 private:
  using Scope = std::unordered_map<std::string, std::vector<Binding>>;

  // Scopes (module, defs, lambdas, comprehensions) as nested byte ranges, built in one cursor
  // walk: finding the scopes around a node must not climb with ts_node_parent, which re-descends
  // from the root in tree-sitter 0.20 and made every lookup linear in the file's length.
  struct Region {
    TSNode node;
    uint32_t start, end;
    std::vector<uint32_t> children;  // in source order
  };
  struct Statement {
    TSNode node;
    uint32_t start, end;
    bool indexed;
    std::vector<uint32_t> regions;  // the outermost regions inside this statement
  };
  void index_statement(Statement& statement,
                       const std::function<void(TSNode, size_t)>* also_visit = nullptr);
  std::vector<uint32_t> regions_at(uint32_t offset);  // innermost first

  const Scope& scope_of(TSNode scope_node);
  void add_binding(Scope& scope, std::string name, Binding binding);
  void collect_block(TSNode block, Scope& scope);
  void collect_statement(TSNode statement, Scope& scope);
  void collect_parameters(TSNode parameters, Scope& scope, std::string_view owner);
  void bind_target(TSNode target, TSNode value, int index, Scope& scope);
  Value eval_binding(const Binding& binding, std::string_view name);
  Value eval_call(TSNode call);
  Value eval_binary(TSNode node);
  Value eval_subscript(TSNode node);
  Value eval_attribute(TSNode node);
  Value eval_sequence(TSNode node);

  TSNode root_;
  std::string_view source_;
  std::unordered_map<uint64_t, Scope> scopes_;
  std::vector<Region> regions_;  // [0] is the module
  std::vector<Statement> statements_;
  std::vector<TSNode> statement_nodes_;

  std::unordered_set<uint64_t> in_progress_;
  std::unordered_map<uint64_t, Value> memo_;
  int collecting_statement_ = -1;  // top-level statement being collected into the module scope
  std::unordered_set<std::string> module_reads_;
  int depth_ = 0;
  bool depth_limited_ = false;  // the current top-level evaluation hit kMaxDepth
};

int64_t floor_div(int64_t a, int64_t b);

}  // namespace mk::pallas

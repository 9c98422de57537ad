#include "source/pallas/kernel_extractor.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "source/pallas/evaluator.h"
#include "source/pallas/forwarding_text.h"
#include "source/syntax/node_util.h"

namespace mk::pallas {

using syntax::field;
using syntax::is;
using syntax::named_children;
using syntax::text_of;
using syntax::unparen;

namespace {

Span span_of(TSNode node) {
  return {ts_node_start_byte(node), ts_node_end_byte(node)};
}

bool is_pallas_symbol(const Value& v, std::string_view name) {
  if (!v.is(Value::Kind::Symbol) && !v.is(Value::Kind::Call)) return false;
  const std::string& q = v.text;
  const bool pallas_module =
      q.rfind("jax.experimental.pallas", 0) == 0 || q.rfind("jax._src.pallas", 0) == 0;
  return pallas_module && v.names(name);
}

// Pallas' own pallas_call, or an attribute named exactly `pallas_call` of any other imported
// module (`block.pallas_call`, where a kernel library re-exports it): a kernel site either way.
// Only imports make symbols, so a local object's `.pallas_call` is never one.
bool is_pallas_call(const Value& v) {
  return v.is(Value::Kind::Symbol) && v.names("pallas_call");
}

// A pallas_call reached through a module that is not Pallas' own: its site is described from
// the call's own arguments only.
bool is_reexported_pallas_call(const Value& v) {
  return is_pallas_call(v) && !is_pallas_symbol(v, "pallas_call");
}

bool is_partial(const Value& v) {
  return v.is(Value::Kind::Symbol) && (v.text == "functools.partial");
}

// The arguments of one call expression, split into positional and keyword.
struct Arguments {
  std::vector<TSNode> positional;
  std::vector<std::pair<std::string, TSNode>> keywords;
  bool has_splat = false;

  std::optional<TSNode> keyword(std::string_view name) const {
    for (const auto& [k, v] : keywords) {
      if (k == name) return v;
    }
    return std::nullopt;
  }
  // A parameter given by position `index` or by keyword `name`.
  std::optional<TSNode> get(size_t index, std::string_view name) const {
    if (auto k = keyword(name)) return k;
    if (index < positional.size()) return positional[index];
    return std::nullopt;
  }
};

Arguments split_arguments(TSNode call, std::string_view source, size_t skip_positional = 0) {
  Arguments args;
  for (TSNode a : named_children(field(call, "arguments"))) {
    if (is(a, "keyword_argument")) {
      args.keywords.emplace_back(std::string(text_of(field(a, "name"), source)), field(a, "value"));
    } else if (is(a, "list_splat") || is(a, "dictionary_splat")) {
      args.has_splat = true;
    } else if (skip_positional > 0) {
      --skip_positional;
    } else {
      args.positional.push_back(a);
    }
  }
  return args;
}

// The parameters of a def, as a forwarder describes them.
struct ParameterList {
  std::vector<std::string> positional, keyword_only;
  std::string star_args, star_kwargs;  // names of *args / **kwargs, "" when absent
  bool has(std::string_view name) const {
    for (const auto* list : {&positional, &keyword_only})
      for (const std::string& p : *list)
        if (p == name) return true;
    return false;
  }
};

ParameterList parameters_of(TSNode def, std::string_view source) {
  ParameterList out;
  bool keyword_only = false;
  for (TSNode p : named_children(field(def, "parameters"))) {
    TSNode node = p;
    if (is(p, "typed_parameter")) node = ts_node_named_child(p, 0);
    if (is(node, "default_parameter") || is(node, "typed_default_parameter"))
      node = field(node, "name");
    if (is(node, "list_splat_pattern")) {
      out.star_args = std::string(text_of(ts_node_named_child(node, 0), source));
      keyword_only = true;
    } else if (is(node, "dictionary_splat_pattern")) {
      out.star_kwargs = std::string(text_of(ts_node_named_child(node, 0), source));
    } else if (is(node, "keyword_separator")) {
      keyword_only = true;
    } else if (is(node, "identifier")) {
      (keyword_only ? out.keyword_only : out.positional).emplace_back(text_of(node, source));
    }
  }
  return out;
}

class Extractor {
 public:
  Extractor(TSNode root, std::string_view source, const ForwarderSet* imported)
      : root_(root), source_(source), eval_(root, source), imported_(imported) {
    if (imported_) {
      for (const auto& [qualified, f] : *imported_)
        forwarder_names_.insert(qualified.substr(qualified.rfind('.') + 1));
    }
  }

  // Top-level defs of this module that forward to pallas_call, under their own names.
  std::vector<Forwarder> forwarders() {
    detect_file_backend();
    std::vector<Forwarder> out;
    for (TSNode statement : eval_.top_level_statements()) {
      TSNode def =
          is(statement, "decorated_definition") ? field(statement, "definition") : statement;
      if (!is(def, "function_definition")) continue;
      eval_.begin_statement();
      described_.clear();
      if (auto f = describe_def(def)) out.push_back(std::move(*f));
    }
    return out;
  }

  PallasModel run(ModelCache* cache) {
    PallasModel model;
    model.syntax_errors = ts_node_has_error(root_);
    detect_file_backend();
    // What every statement's kernels depend on besides the statement and the names it reads.
    uint64_t file_key = file_is_gpu_only_ ? 1 + static_cast<uint64_t>(gpu_backend_) : uint64_t{0};
    if (imported_) file_key ^= fingerprint(*imported_) * 0x9E3779B97F4A7C15ull;
    find_candidate_forwarders();
    // Only statements that can contain a pallas_call site are walked: those mentioning
    // pallas_call or a module-level alias of it. Helpers between kernels are skipped.
    const std::vector<std::string> triggers = pallas_call_names();
    const std::vector<TSNode>& statements = eval_.top_level_statements();
    for (size_t i = 0; i < statements.size(); ++i) {
      TSNode statement = statements[i];
      const std::string_view text = text_of(statement, source_);
      const bool relevant =
          std::any_of(triggers.begin(), triggers.end(),
                      [&](const std::string& t) { return text.find(t) != std::string_view::npos; });
      if (!relevant) continue;
      if (cache && cache->reuse(statement, file_key, eval_, model.kernels)) continue;
      // Each statement is analysed on its own, so a cached result equals a fresh one.
      eval_.begin_statement();
      described_.clear();  // a forwarder's reads count for every statement calling it
      const size_t first = model.kernels.size();
      walk(i, model);
      if (cache) {
        cache->store(
            static_cast<int>(i), statement, file_key, eval_,
            {model.kernels.begin() + static_cast<std::ptrdiff_t>(first), model.kernels.end()});
      }
    }
    model.task = task_conventions();
    if (cache) cache->finish_pass();
    return model;
  }

 private:
  void detect_file_backend() {
    bool tpu = false, gpu = false;
    for (const std::string& q : eval_.imported_modules()) {
      if (q.find("pallas.tpu") != std::string::npos ||
          q.find("pallas.mosaic.") != std::string::npos)
        tpu = true;
      if (q.find("pallas.triton") != std::string::npos ||
          q.find("pallas.gpu") != std::string::npos ||
          q.find("pallas.mosaic_gpu") != std::string::npos) {
        gpu = true;
        gpu_backend_ =
            q.find("mosaic_gpu") != std::string::npos ? Backend::MosaicGpu : Backend::TritonGpu;
      }
    }
    file_is_gpu_only_ = gpu && !tpu;
  }

  // "pallas_call" plus every name a module-level statement mentioning it binds (`from ...
  // import pallas_call as pc`, `call = pl.pallas_call`).
  std::vector<std::string> pallas_call_names() {
    std::vector<std::string> names = {"pallas_call"};
    names.insert(names.end(), forwarder_names_.begin(), forwarder_names_.end());
    const size_t base = names.size();
    for (TSNode statement : eval_.top_level_statements()) {
      const std::string_view text = text_of(statement, source_);
      if (std::none_of(
              names.begin(), names.begin() + static_cast<std::ptrdiff_t>(base),
              [&](const std::string& n) { return text.find(n) != std::string_view::npos; }))
        continue;
      std::vector<TSNode> targets;
      if (is(statement, "import_from_statement") || is(statement, "import_statement")) {
        for (TSNode item : named_children(statement)) {
          if (is(item, "aliased_import")) targets.push_back(field(item, "alias"));
        }
      } else if (is(statement, "expression_statement")) {
        for (TSNode child : named_children(statement)) {
          if (!is(child, "assignment")) continue;
          TSNode left = field(child, "left");
          if (is(left, "identifier")) targets.push_back(left);
          for (TSNode id : named_children(left)) {
            if (is(id, "identifier")) targets.push_back(id);
          }
        }
      }
      for (TSNode t : targets) names.emplace_back(text_of(t, source_));
    }
    return names;
  }

  // One pre-order walk over top-level statement `index`, shared with the evaluator's index of its
  // scopes, remembering each call's parent so `pallas_call(...)(x, y)` can find its operands.
  // The calls are considered after the walk, once the index they look names up in is whole.
  void walk(size_t index, PallasModel& model) {
    std::vector<TSNode> ancestors = {eval_.top_level_statements()[index]};  // [d]: at depth d
    std::vector<std::pair<TSNode, TSNode>> calls;                           // (call, parent)
    eval_.walk_statement(index, [&](TSNode node, size_t depth) {
      ancestors.resize(depth);
      ancestors.push_back(node);
      if (is(node, "call")) calls.emplace_back(node, ancestors[depth - 1]);
    });
    for (const auto& [call, parent] : calls) consider_call(call, parent, model);
  }

  void consider_call(TSNode call, TSNode parent, PallasModel& model) {
    TSNode function = field(call, "function");
    // Cheap textual filter before evaluating: every form mentions pallas_call or partial.
    std::string_view callee_text = text_of(function, source_);
    if (callee_text.find("pallas_call") == std::string_view::npos &&
        callee_text.find("partial") == std::string_view::npos &&
        (forwarder_names_.empty() ||
         !forwarder_names_.contains(std::string(callee_text.substr(callee_text.rfind('.') + 1))))) {
      // A local alias (`call = pl.pallas_call`) still resolves through the evaluator.
      if (!is(function, "identifier")) return;
    }
    Value callee = eval_.eval(function);
    if (const Forwarder* f = forwarder_for(callee)) {
      if (f->shadows_pallas_call) return;
      Arguments site_args = split_arguments(call, source_);
      ArgumentList<TSNode> given{site_args.positional, site_args.keywords};
      ArgumentList<TSNode> inner = forward_call(*f, given, {}, {});
      Arguments forwarded{inner.positional, inner.keywords, site_args.has_splat};
      Kernel k = decode_site(call, parent, function, forwarded);
      apply_forwarded_facts(*f, k);
      model.kernels.push_back(std::move(k));
      return;
    }
    if (is_pallas_call(callee)) {
      Kernel k = decode_site(call, parent, function, split_arguments(call, source_));
      if (is_reexported_pallas_call(callee))
        k.unknowns.push_back("what `" + callee.text +
                             "` does besides pallas_call (a module outside jax's Pallas; "
                             "described from this call's own arguments)");
      model.kernels.push_back(std::move(k));
      return;
    }
    if (is_partial(callee)) {
      Arguments partial_args = split_arguments(call, source_);
      if (partial_args.positional.empty()) return;
      const Value inner = eval_.eval(partial_args.positional[0]);
      const Forwarder* shadow = forwarder_for(inner);
      if (!is_pallas_call(inner) || (shadow && shadow->shadows_pallas_call)) return;
      model.kernels.push_back(
          decode_site(call, parent, partial_args.positional[0], split_arguments(call, source_, 1)));
    }
  }

  // Names of top-level defs that may forward to pallas_call, found by text alone (cheap, and a
  // superset of the real ones): a def that calls a trigger passing one of its own parameters,
  // a splat or `kernel=` first. Statements calling them are walked, and the call decides.
  void find_candidate_forwarders() {
    struct Def {
      std::string name;
      std::string_view text;
    };
    std::vector<Def> defs;
    for (TSNode statement : eval_.top_level_statements()) {
      TSNode def =
          is(statement, "decorated_definition") ? field(statement, "definition") : statement;
      if (!is(def, "function_definition")) continue;
      defs.push_back(
          {std::string(text_of(field(def, "name"), source_)), text_of(statement, source_)});
    }
    std::vector<std::string> fresh = {"pallas_call"};
    fresh.insert(fresh.end(), forwarder_names_.begin(), forwarder_names_.end());
    while (!fresh.empty()) {  // a def calling a new candidate is one too (chains)
      std::vector<std::string> next;
      for (const Def& d : defs) {
        if (forwarder_names_.contains(d.name)) continue;
        for (const std::string& t : fresh) {
          if (t == d.name || d.text.find(t) == std::string_view::npos) continue;
          if (!passes_own_argument(d.text, t)) continue;
          forwarder_names_.insert(d.name);
          next.push_back(d.name);
          break;
        }
      }
      fresh = std::move(next);
    }
  }

  // The forwarder a callee is: an imported one by qualified name, or a def of this file.
  const Forwarder* forwarder_for(const Value& callee) {
    if (callee.is(Value::Kind::Symbol)) {
      if (!imported_) return nullptr;
      auto it = imported_->find(callee.text);
      return it == imported_->end() ? nullptr : &it->second;
    }
    if (!callee.is(Value::Kind::Callable) || !is(callee.node, "function_definition"))
      return nullptr;
    const uint32_t key = ts_node_start_byte(callee.node);
    if (auto it = described_.find(key); it != described_.end())
      return it->second ? &*it->second : nullptr;
    described_[key] = std::nullopt;  // a cycle of wrappers ends here, as "not a forwarder"
    std::optional<Forwarder> f = describe_def(callee.node);
    auto& slot = described_[key];
    slot = std::move(f);
    return slot ? &*slot : nullptr;
  }

  // A def forwards when its body calls pallas_call (or a forwarder) passing the kernel on from
  // its own parameters; what it passes, and the constants it adds, are recorded.
  std::optional<Forwarder> describe_def(TSNode def) {
    const ParameterList params = parameters_of(def, source_);
    std::optional<Forwarder> result;
    syntax::for_each_descendant(field(def, "body"), [&](TSNode node, size_t) {
      if (result || !is(node, "call")) return;
      Value callee = eval_.eval(field(node, "function"));
      // A wrapper first: a workspace module's own pallas_call is one, or shadows Pallas'.
      const Forwarder* next = forwarder_for(callee);
      if (next && next->shadows_pallas_call) return;
      const bool direct = !next && is_pallas_call(callee);
      if (!direct && !next) return;
      result = describe_forwarding(node, params, direct ? nullptr : next);
    });
    if (!result) return std::nullopt;
    result->name = std::string(text_of(field(def, "name"), source_));
    result->parameters = params.positional;
    result->keyword_only = params.keyword_only;
    result->star_args = !params.star_args.empty();
    result->star_kwargs = !params.star_kwargs.empty();
    return result;
  }

  std::optional<Forwarder> describe_forwarding(TSNode call, const ParameterList& params,
                                               const Forwarder* next) {
    using From = ForwardedArgument::From;
    ArgumentList<ForwardedArgument> given;
    std::vector<ForwardedArgument> splat_positional, splat_keywords;
    std::vector<std::string> fixed;
    auto from_parameter = [&](TSNode value) -> std::optional<ForwardedArgument> {
      const std::string_view name = text_of(value, source_);
      if (is(value, "identifier") && params.has(name))
        return ForwardedArgument{From::Parameter, std::string(name)};
      return std::nullopt;
    };
    for (TSNode a : named_children(field(call, "arguments"))) {
      if (is(a, "keyword_argument")) {
        std::string key(text_of(field(a, "name"), source_));
        if (auto p = from_parameter(field(a, "value"))) {
          given.keywords.emplace_back(std::move(key), *p);
        } else {
          fixed.push_back(std::move(key));
        }
      } else if (is(a, "list_splat") || is(a, "dictionary_splat")) {
        const bool positional = is(a, "list_splat");
        const std::string_view name = text_of(ts_node_named_child(a, 0), source_);
        if (name != (positional ? params.star_args : params.star_kwargs)) continue;
        (positional ? splat_positional : splat_keywords)
            .push_back({positional ? From::ExtraPositional : From::ExtraKeywords, ""});
      } else {
        // A positional the wrapper makes itself cannot be placed: "" never binds.
        given.positional.push_back(from_parameter(a).value_or(ForwardedArgument{}));
      }
    }
    Forwarder f;
    if (next) {
      ArgumentList<ForwardedArgument> inner =
          forward_call(*next, given, splat_positional, splat_keywords);
      f = *next;
      f.positional = std::move(inner.positional);
      f.keywords = std::move(inner.keywords);
    } else {
      f.positional = given.positional;
      f.positional.insert(f.positional.end(), splat_positional.begin(), splat_positional.end());
      f.keywords = given.keywords;
      for (const ForwardedArgument& s : splat_keywords) f.keywords.emplace_back("", s);
      f.fixed_keywords = fixed;
      record_fixed_facts(call, fixed, f);
    }
    // The kernel must come from the caller; a def that runs its own kernel is not a wrapper.
    auto forwarded = [](const ForwardedArgument& a) {
      return a.from != From::Parameter || !a.parameter.empty();
    };
    bool kernel_forwarded = false;
    if (!f.positional.empty()) {
      kernel_forwarded = forwarded(f.positional.front());
    } else {
      for (const auto& [key, a] : f.keywords)
        if (key == "kernel" || (key.empty() && a.from == From::ExtraKeywords))
          kernel_forwarded = true;
    }
    if (!kernel_forwarded) return std::nullopt;
    return f;
  }

  // What the constant keyword arguments a wrapper gives pallas_call make known.
  void record_fixed_facts(TSNode call, const std::vector<std::string>& fixed, Forwarder& f) {
    const Arguments args = split_arguments(call, source_);
    auto fixes = [&](std::string_view key) {
      return std::find(fixed.begin(), fixed.end(), key) != fixed.end();
    };
    Kernel facts;
    decode_backend(args, facts);
    if (file_is_gpu_only_ || fixes("backend") || fixes("compiler_params"))
      f.backend = facts.backend;
    if (fixes("compiler_params")) {
      decode_compiler_params(args.keyword("compiler_params"), facts);
      f.dimension_semantics = facts.dimension_semantics;
      f.vmem_limit_bytes = facts.vmem_limit_bytes;
    }
    if (fixes("interpret")) {
      Value v = eval_.eval(*args.keyword("interpret"));
      if (v.is(Value::Kind::Bool)) f.interpret = v.bool_value;
    }
  }

  std::string enclosing_function(TSNode node) {
    TSNode fn = eval_.enclosing_function(ts_node_start_byte(node));
    return ts_node_is_null(fn) ? "" : std::string(text_of(field(fn, "name"), source_));
  }

  // Resolves a kernel argument to its def/lambda through names and functools.partial.
  void resolve_kernel(TSNode kernel_arg, Kernel& k) {
    Value v = eval_.eval(kernel_arg);
    for (int hops = 0; hops < 8 && v.is(Value::Kind::Call) && v.text == "functools.partial";
         ++hops) {
      Arguments inner = split_arguments(v.node, source_);
      if (inner.positional.empty()) break;
      v = eval_.eval(inner.positional[0]);
    }
    if (!v.is(Value::Kind::Callable)) {
      k.name = std::string(text_of(kernel_arg, source_));
      k.unknowns.push_back("the kernel function `" + k.name + "` is not defined in this file");
      return;
    }
    k.kernel_def_span = span_of(v.node);
    if (is(v.node, "lambda")) {
      k.name = "<lambda>";
    } else {
      TSNode name = field(v.node, "name");
      k.name = std::string(text_of(name, source_));
      k.kernel_name_span = span_of(name);
    }
  }

  Kernel decode_site(TSNode site, TSNode parent, TSNode callee_node, const Arguments& args) {
    Kernel k;
    k.site_span = span_of(site);
    k.call_span = span_of(callee_node);
    k.enclosing_function = enclosing_function(site);
    if (auto kernel_arg = args.get(0, "kernel")) {
      resolve_kernel(*kernel_arg, k);
    } else {
      k.name = "?";
      k.unknowns.push_back("no kernel function given");
    }

    decode_backend(args, k);

    // grid / specs come from grid_spec when given, else from the direct keywords.
    std::optional<TSNode> grid_node = args.keyword("grid");
    std::optional<TSNode> in_specs_node = args.keyword("in_specs");
    std::optional<TSNode> out_specs_node = args.keyword("out_specs");
    std::optional<TSNode> scratch_node = args.keyword("scratch_shapes");
    if (auto gs = args.keyword("grid_spec")) {
      Value spec = eval_.eval(*gs);
      if (spec.is(Value::Kind::Call) &&
          is_pallas_symbol(spec, spec.text.substr(spec.text.rfind('.') + 1)) &&
          spec.text.find("GridSpec") != std::string::npos) {
        k.prefetch_grid_spec = spec.text.find("PrefetchScalarGridSpec") != std::string::npos;
        Arguments g = split_arguments(spec.node, source_);
        if (k.prefetch_grid_spec) {
          if (auto n = g.get(0, "num_scalar_prefetch")) {
            if (auto v = eval_.eval(*n).as_int()) {
              k.num_scalar_prefetch = static_cast<int>(*v);
            } else {
              k.unknowns.push_back("num_scalar_prefetch");
            }
          }
          grid_node = g.get(1, "grid");
          in_specs_node = g.get(2, "in_specs");
          out_specs_node = g.get(3, "out_specs");
          scratch_node = g.get(4, "scratch_shapes");
        } else {
          grid_node = g.get(0, "grid");
          in_specs_node = g.get(1, "in_specs");
          out_specs_node = g.get(2, "out_specs");
          scratch_node = g.get(3, "scratch_shapes");
        }
      } else {
        k.unknowns.push_back("grid_spec `" + std::string(text_of(*gs, source_)) + "`");
      }
    }

    decode_grid(grid_node, k);
    decode_outputs(args.get(1, "out_shape"), out_specs_node, k);
    decode_inputs(site, parent, in_specs_node, k);
    if (scratch_node) decode_scratch(*scratch_node, k);
    decode_compiler_params(args.keyword("compiler_params"), k);
    if (auto interp = args.keyword("interpret")) {
      Value v = eval_.eval(*interp);
      if (v.is(Value::Kind::Bool)) k.interpret = v.bool_value;
    }
    if (auto aliases = args.keyword("input_output_aliases")) {
      Value v = eval_.eval(*aliases);
      k.has_input_output_aliases = !(v.is(Value::Kind::Dict) && v.entries->empty());
    }
    return k;
  }

  void decode_backend(const Arguments& args, Kernel& k) {
    if (file_is_gpu_only_) k.backend = gpu_backend_;
    if (auto backend = args.keyword("backend")) {
      Value v = eval_.eval(*backend);
      if (v.is(Value::Kind::String)) {
        if (v.text == "triton") k.backend = Backend::TritonGpu;
        if (v.text == "mosaic_gpu") k.backend = Backend::MosaicGpu;
        if (v.text == "mosaic_tpu" || v.text == "mosaic") k.backend = Backend::Tpu;
      }
    }
    if (auto params = args.keyword("compiler_params")) {
      Value v = eval_.eval(*params);
      const std::string& q = v.text;
      if (v.is(Value::Kind::Call)) {
        if (q.find("triton") != std::string::npos || q.find("Triton") != std::string::npos ||
            (q.find(".gpu.") != std::string::npos && q.find("mosaic_gpu") == std::string::npos)) {
          k.backend = Backend::TritonGpu;
        } else if (q.find("mosaic_gpu") != std::string::npos) {
          k.backend = Backend::MosaicGpu;
        } else if (q.find("tpu") != std::string::npos || q.find("TPU") != std::string::npos) {
          k.backend = Backend::Tpu;
        }
      } else if (v.is(Value::Kind::Dict)) {
        if (v.get("triton")) k.backend = Backend::TritonGpu;
        if (v.get("mosaic_gpu")) k.backend = Backend::MosaicGpu;
        if (v.get("mosaic") || v.get("mosaic_tpu")) k.backend = Backend::Tpu;
      }
    }
  }

  void decode_grid(std::optional<TSNode> grid_node, Kernel& k) {
    if (!grid_node) {
      k.grid.rank = 0;  // pallas_call's default grid is ()
      return;
    }
    k.grid.span = span_of(*grid_node);
    Value v = eval_.eval(*grid_node);
    if (auto n = v.as_int()) {
      k.grid.rank = 1;
      k.grid.extents = {*n};
    } else if (v.is(Value::Kind::Tuple)) {
      k.grid.rank = v.items->size();
      for (const Value& e : *v.items) k.grid.extents.push_back(e.as_int());
    } else if (v.is(Value::Kind::None)) {
      k.grid.rank = 0;
    } else {
      k.unknowns.push_back("grid `" + std::string(text_of(*grid_node, source_)) + "`");
    }
  }

  static std::optional<DType> dtype_of(const Value& v) {
    if (v.is(Value::Kind::String)) return dtype_from_name(v.text);
    if (v.is(Value::Kind::Symbol)) {
      const std::string& q = v.text;
      return dtype_from_name(q.substr(q.rfind('.') + 1));
    }
    return std::nullopt;
  }

  std::optional<DType> dtype_value(const Value& v) {
    if (auto d = dtype_of(v)) return d;
    if (v.is(Value::Kind::Call) && (v.names("dtype"))) {
      Arguments a = split_arguments(v.node, source_);
      if (!a.positional.empty()) return dtype_of(eval_.eval(a.positional[0]));
    }
    return std::nullopt;
  }

  static std::optional<std::vector<std::optional<int64_t>>> shape_of(const Value& v) {
    if (!v.is(Value::Kind::Tuple)) {
      if (auto n = v.as_int()) return std::vector<std::optional<int64_t>>{*n};
      return std::nullopt;
    }
    std::vector<std::optional<int64_t>> dims;
    for (const Value& d : *v.items) dims.push_back(d.as_int());
    return dims;
  }

  // Fills shape/dtype of an operand from a ShapeDtypeStruct, or an array constructor call.
  void describe_array(const Value& v, Operand& op, TSNode origin) {
    if (v.is(Value::Kind::Call)) {
      Arguments a = split_arguments(v.node, source_);
      std::optional<TSNode> shape_node, dtype_node;
      if (v.names("ShapeDtypeStruct")) {
        shape_node = a.get(0, "shape");
        dtype_node = a.get(1, "dtype");
      } else if (v.names("zeros") || v.names("ones") || v.names("empty")) {
        shape_node = a.get(0, "shape");
        dtype_node = a.get(1, "dtype");
      } else if (v.names("full")) {
        shape_node = a.get(0, "shape");
        dtype_node = a.get(2, "dtype");
      } else if (v.text.rfind("jax.random.", 0) == 0) {
        shape_node = a.get(1, "shape");
        dtype_node = a.keyword("dtype");
      }
      if (shape_node) op.array_shape = shape_of(eval_.eval(*shape_node));
      if (dtype_node) op.dtype = dtype_value(eval_.eval(*dtype_node));
      if (!dtype_node && shape_node) op.dtype = dtype_from_name("float32");
    }
    if (!op.array_shape || !op.dtype) {
      std::string what = !op.array_shape ? (op.dtype ? "shape" : "shape and dtype") : "dtype";
      std::string why = v.is(Value::Kind::Unknown) ? v.text : std::string(text_of(origin, source_));
      op.unknown_because = what + " of `" + op.label + "` unknown (" + why + ")";
    }
  }

  IndexMap decode_index_map(const Value& v, TSNode origin) {
    IndexMap m;
    m.span = span_of(origin);
    m.text = std::string(text_of(origin, source_));
    if (!v.is(Value::Kind::Callable)) return m;
    TSNode def = v.node;
    m.span = span_of(def);
    TSNode params = field(def, "parameters");
    int count = 0, required = 0;
    bool variadic = false;
    for (TSNode p : named_children(params)) {
      if (is(p, "list_splat_pattern") || is(p, "dictionary_splat_pattern")) {
        variadic = true;
      } else if (!is(p, "keyword_separator") && !is(p, "positional_separator")) {
        ++count;
        if (!is(p, "default_parameter") && !is(p, "typed_default_parameter")) ++required;
      }
    }
    m.required_arity = required;
    if (!variadic) m.arity = count;
    auto rank_of = [&](TSNode expr) -> std::optional<int> {
      expr = unparen(expr);
      if (is(expr, "tuple") || is(expr, "expression_list") || is(expr, "list")) {
        for (TSNode c : named_children(expr)) {
          if (is(c, "list_splat")) return std::nullopt;
        }
        return static_cast<int>(named_children(expr).size());
      }
      return std::nullopt;
    };
    m.result_span = m.span;
    if (is(def, "lambda")) {
      m.result_rank = rank_of(field(def, "body"));
    } else {
      // Every top-level `return` of the def must agree.
      std::optional<int> rank;
      bool consistent = true, any = false;
      std::function<void(TSNode)> visit = [&](TSNode n) {
        if (is(n, "function_definition") && !syntax::same_node(n, def)) return;
        if (is(n, "lambda")) return;
        if (is(n, "return_statement")) {
          auto kids = named_children(n);
          auto r = kids.empty() ? std::nullopt : rank_of(kids[0]);
          if (any && r != rank) consistent = false;
          if (!any) m.result_span = span_of(n);
          rank = r;
          any = true;
          return;
        }
        for (TSNode c : named_children(n)) visit(c);
      };
      visit(field(def, "body"));
      if (any && consistent) m.result_rank = rank;
    }
    return m;
  }

  static MemorySpace memory_space_of(const Value& v) {
    if (!v.is(Value::Kind::Symbol) && !v.is(Value::Kind::Call)) return MemorySpace::Unknown;
    const std::string& q = v.text;
    const std::string last = q.substr(q.rfind('.') + 1);
    if (last == "ANY") return MemorySpace::Any;
    if (last == "VMEM") return MemorySpace::Vmem;
    if (last == "SMEM") return MemorySpace::Smem;
    if (last == "HBM") return MemorySpace::Hbm;
    if (last == "SEMAPHORE") return MemorySpace::Semaphore;
    if (last == "GMEM" || last == "GPUMemorySpace") return MemorySpace::Gpu;
    return MemorySpace::Unknown;
  }

  BlockSpec decode_block_spec(const Value& v, TSNode origin) {
    BlockSpec b;
    b.span = span_of(origin);
    if (v.is(Value::Kind::None)) {
      b.whole_array = true;
      return b;
    }
    if (!(v.is(Value::Kind::Call) && v.names("BlockSpec"))) {
      b.memory_space = MemorySpace::Unknown;
      return b;
    }
    b.span = span_of(v.node);
    Arguments a = split_arguments(v.node, source_);
    std::optional<TSNode> shape_node = a.keyword("block_shape");
    std::optional<TSNode> map_node = a.keyword("index_map");
    // Old JAX took (index_map, block_shape); tell them apart by what the first argument is.
    if (!a.positional.empty()) {
      Value first = eval_.eval(a.positional[0]);
      const bool old_order = first.is(Value::Kind::Callable);
      for (size_t i = 0; i < a.positional.size() && i < 2; ++i) {
        const bool is_map = (i == 0) == old_order;
        (is_map ? map_node : shape_node) = a.positional[i];
      }
    }
    if (shape_node) {
      b.shape_span = span_of(*shape_node);
      Value shape = eval_.eval(*shape_node);
      if (shape.is(Value::Kind::Tuple)) {
        std::vector<Dim> dims;
        TSNode literal = unparen(*shape_node);
        auto literal_items = (is(literal, "tuple") || is(literal, "list")) ? named_children(literal)
                                                                           : std::vector<TSNode>{};
        for (size_t i = 0; i < shape.items->size(); ++i) {
          const Value& d = (*shape.items)[i];
          Dim dim;
          if (i < literal_items.size()) dim.text = std::string(text_of(literal_items[i], source_));
          if (d.is(Value::Kind::None) || d.names("squeezed") ||
              (d.is(Value::Kind::Call) && d.names("Squeezed"))) {
            dim.squeezed = true;
          } else if (auto n = d.as_int()) {
            dim.size = *n;
          } else if (d.is(Value::Kind::Call) &&
                     (d.names("Element") || d.names("Blocked") || d.names("BoundedSlice"))) {
            Arguments inner = split_arguments(d.node, source_);
            if (!inner.positional.empty()) dim.size = eval_.eval(inner.positional[0]).as_int();
          }
          if (dim.text.empty()) dim.text = d.render();
          dims.push_back(dim);
        }
        b.shape = std::move(dims);
      }
    }
    if (map_node) b.index_map = decode_index_map(eval_.eval(*map_node), *map_node);
    if (auto ms = a.keyword("memory_space")) {
      b.memory_space = memory_space_of(eval_.eval(*ms));
    }
    if (auto pm = a.keyword("pipeline_mode")) {
      Value mode = eval_.eval(*pm);
      if (mode.is(Value::Kind::Call) && mode.names("Buffered")) {
        Arguments inner = split_arguments(mode.node, source_);
        if (auto n = inner.get(0, "buffer_count")) {
          if (auto count = eval_.eval(*n).as_int()) b.buffer_count = static_cast<int>(*count);
        }
      }
    }
    if (!shape_node && b.memory_space == MemorySpace::Default) b.whole_array = true;
    return b;
  }

  // A spec list: a tuple/list of specs, or a single spec for one operand.
  // `entries` (optional) receives each item's own expression in the list (or the whole node).
  std::vector<std::pair<Value, TSNode>> spec_items(TSNode node, std::optional<size_t> expected,
                                                   std::vector<TSNode>* entries = nullptr) {
    Value v = eval_.eval(node);
    TSNode literal = unparen(node);
    auto literal_items = (is(literal, "tuple") || is(literal, "list")) ? named_children(literal)
                                                                       : std::vector<TSNode>{};
    std::vector<std::pair<Value, TSNode>> out;
    if (v.is(Value::Kind::Tuple)) {
      for (size_t i = 0; i < v.items->size(); ++i) {
        TSNode origin = i < literal_items.size() ? literal_items[i] : node;
        const Value& item = (*v.items)[i];
        out.emplace_back(item, item.is(Value::Kind::Call) ? item.node : origin);
        if (entries) entries->push_back(origin);
      }
    } else if (v.known() && (!expected || *expected == 1)) {
      out.emplace_back(v, v.is(Value::Kind::Call) ? v.node : node);
      if (entries) entries->push_back(node);
    }
    return out;
  }

  void decode_outputs(std::optional<TSNode> out_shape_node, std::optional<TSNode> out_specs_node,
                      Kernel& k) {
    std::vector<std::pair<Value, TSNode>> shapes;
    bool single = false;
    if (out_shape_node) {
      Value v = eval_.eval(*out_shape_node);
      if (v.is(Value::Kind::Tuple)) {
        shapes = spec_items(*out_shape_node, std::nullopt);
      } else {
        single = true;
        shapes.emplace_back(v, *out_shape_node);
      }
    }
    std::vector<std::pair<Value, TSNode>> specs;
    std::vector<TSNode> entries;
    if (out_specs_node)
      specs =
          spec_items(*out_specs_node, single ? std::optional<size_t>(1) : std::nullopt, &entries);
    const size_t n = std::max(shapes.size(), specs.size());
    for (size_t i = 0; i < n; ++i) {
      Operand op;
      op.is_output = true;
      op.label = n == 1 ? "out" : "out " + std::to_string(i);
      if (i < shapes.size()) {
        describe_array(shapes[i].first, op, shapes[i].second);
      } else {
        op.unknown_because = "shape of `" + op.label + "` unknown";
      }
      op.block =
          i < specs.size() ? decode_block_spec(specs[i].first, specs[i].second) : BlockSpec{};
      if (i < entries.size()) op.block.entry_span = span_of(entries[i]);
      if (!out_specs_node) op.block.whole_array = true;
      k.outputs.push_back(std::move(op));
    }
  }

  void decode_inputs(TSNode site, TSNode parent, std::optional<TSNode> in_specs_node, Kernel& k) {
    // Operands come from the immediate invocation: pallas_call(...)(x, y).
    std::vector<TSNode> operands;
    bool operands_known = false;
    if (is(parent, "call") && syntax::same_node(field(parent, "function"), site)) {
      Arguments call_args = split_arguments(parent, source_);
      operands = call_args.positional;
      operands_known = !call_args.has_splat && call_args.keywords.empty();
    }
    const size_t prefetch = static_cast<size_t>(std::max(0, k.num_scalar_prefetch));
    std::vector<std::pair<Value, TSNode>> specs;
    std::vector<TSNode> entries;
    if (in_specs_node) {
      std::optional<size_t> expected;
      if (operands_known && operands.size() >= prefetch) expected = operands.size() - prefetch;
      specs = spec_items(*in_specs_node, expected, &entries);
    }
    size_t n = specs.size();
    if (!in_specs_node && operands_known) n = operands.size() - std::min(operands.size(), prefetch);
    k.inputs_complete = in_specs_node
                            ? !specs.empty() || eval_.eval(*in_specs_node).is(Value::Kind::Tuple)
                            : operands_known;
    for (size_t i = 0; i < n; ++i) {
      Operand op;
      const size_t operand_index = i + prefetch;
      if (operand_index < operands.size()) {
        TSNode operand = operands[operand_index];
        op.label = std::string(text_of(operand, source_));
        Value v = eval_.eval(operand);
        // Only an untouched parameter is the task's input (a rebound one is "bound more than
        // once").
        if (!v.known() && v.text.starts_with("parameter `")) {
          if (auto from_task = task_input_for(operand)) v = *from_task;
        }
        describe_array(v, op, operand);
      } else {
        op.label = "in " + std::to_string(i);
        op.unknown_because = "shape and dtype of input " + std::to_string(i) +
                             " unknown (operands not visible here)";
      }
      if (i < specs.size()) {
        op.block = decode_block_spec(specs[i].first, specs[i].second);
        if (i < entries.size()) op.block.entry_span = span_of(entries[i]);
      } else {
        op.block.whole_array = true;
      }
      k.inputs.push_back(std::move(op));
    }
  }

  // A parameter of the task's entry point (JAXBench `workload`, MaxKernel `computation`) is the
  // matching element of what the task's inputs function (`create_inputs` / `get_inputs`) returns.
  std::optional<Value> task_input_for(TSNode operand) {
    if (!is(operand, "identifier")) return std::nullopt;
    const std::string_view name = text_of(operand, source_);
    TSNode fn = eval_.enclosing_function(ts_node_start_byte(operand));
    if (ts_node_is_null(fn)) return std::nullopt;
    const std::string_view fn_name = text_of(field(fn, "name"), source_);
    const char* inputs_fn = fn_name == "workload"      ? "create_inputs"
                            : fn_name == "computation" ? "get_inputs"
                                                       : nullptr;
    if (!inputs_fn) return std::nullopt;
    int index = -1, i = 0;
    for (TSNode p : named_children(field(fn, "parameters"))) {
      TSNode id = is(p, "identifier")
                      ? p
                      : (is(p, "typed_parameter") ? ts_node_named_child(p, 0) : TSNode{});
      if (!ts_node_is_null(id) && text_of(id, source_) == name) index = i;
      ++i;
    }
    const std::vector<Binding>* binding = eval_.module_binding(inputs_fn);
    if (index < 0 || !binding || binding->size() != 1 ||
        binding->front().kind != Binding::Kind::Definition) {
      return std::nullopt;
    }
    TSNode last_return{};
    for (TSNode statement : named_children(field(binding->front().value, "body"))) {
      if (is(statement, "return_statement")) last_return = statement;
    }
    if (ts_node_is_null(last_return) || ts_node_named_child_count(last_return) == 0)
      return std::nullopt;
    Value returned = eval_.eval(ts_node_named_child(last_return, 0));
    if (!returned.is(Value::Kind::Tuple) || static_cast<size_t>(index) >= returned.items->size())
      return std::nullopt;
    return (*returned.items)[static_cast<size_t>(index)];
  }

  void decode_scratch(TSNode node, Kernel& k) {
    Value v = eval_.eval(node);
    if (!v.is(Value::Kind::Tuple)) {
      k.unknowns.push_back("scratch_shapes `" + std::string(text_of(node, source_)) + "`");
      return;
    }
    for (const Value& item : *v.items) {
      Scratch s;
      s.span = item.is(Value::Kind::Call) ? span_of(item.node) : span_of(node);
      if (item.is(Value::Kind::Call) && (item.names("VMEM") || item.names("SMEM"))) {
        s.kind = item.names("VMEM") ? "VMEM" : "SMEM";
        s.memory_space = item.names("VMEM") ? MemorySpace::Vmem : MemorySpace::Smem;
        Arguments a = split_arguments(item.node, source_);
        if (auto shape = a.get(0, "shape")) s.shape = shape_of(eval_.eval(*shape));
        if (auto dt = a.get(1, "dtype")) s.dtype = dtype_value(eval_.eval(*dt));
      } else if (item.text.find("Semaphore") != std::string::npos) {
        s.kind = item.text.find("DMA") != std::string::npos ? "DMA semaphore" : "semaphore";
        s.memory_space = MemorySpace::Semaphore;
      } else {
        s.kind = item.render();
        k.unknowns.push_back("scratch entry " + item.render());
      }
      k.scratch.push_back(std::move(s));
    }
  }

  void decode_compiler_params(std::optional<TSNode> node, Kernel& k) {
    if (!node) return;
    Value v = eval_.eval(*node);
    std::optional<Value> semantics, vmem_limit;
    std::optional<TSNode> semantics_node;
    if (v.is(Value::Kind::Call)) {
      Arguments a = split_arguments(v.node, source_);
      if (auto s = a.keyword("dimension_semantics")) {
        semantics = eval_.eval(*s);
        semantics_node = *s;
      }
      if (auto l = a.keyword("vmem_limit_bytes")) vmem_limit = eval_.eval(*l);
    } else if (v.is(Value::Kind::Dict)) {
      std::optional<Value> mosaic = v.get("mosaic");
      if (!mosaic) mosaic = v.get("mosaic_tpu");
      if (mosaic) {
        semantics = mosaic->get("dimension_semantics");
        vmem_limit = mosaic->get("vmem_limit_bytes");
      }
    } else {
      k.unknowns.push_back("compiler_params `" + std::string(text_of(*node, source_)) + "`");
    }
    if (vmem_limit) {
      if (auto n = vmem_limit->as_int()) k.vmem_limit_bytes = *n;
    }
    if (semantics) {
      k.dimension_semantics_span = semantics_node ? span_of(*semantics_node) : span_of(*node);
      if (semantics->is(Value::Kind::Tuple)) {
        std::vector<std::string> names;
        for (const Value& s : *semantics->items) {
          if (s.is(Value::Kind::String)) {
            names.push_back(s.text);
          } else if (s.is(Value::Kind::Symbol)) {
            std::string last = s.text.substr(s.text.rfind('.') + 1);
            std::transform(last.begin(), last.end(), last.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
            names.push_back(last);
          } else {
            k.unknowns.push_back("dimension_semantics entry " + s.render());
            return;
          }
        }
        k.dimension_semantics = std::move(names);
      }
    }
  }

  TaskConventions task_conventions() {
    TaskConventions t;
    for (const auto& [name, flag] : TaskConventions::bindings())
      t.*flag = eval_.module_binding(name) != nullptr;
    return t;
  }

  TSNode root_;
  std::string_view source_;
  Evaluator eval_;
  bool file_is_gpu_only_ = false;
  Backend gpu_backend_ = Backend::TritonGpu;
  const ForwarderSet* imported_ = nullptr;
  std::unordered_set<std::string> forwarder_names_;  // callee names that may be forwarders
  // Defs described during the current statement, by start byte (nullopt: not a forwarder).
  std::unordered_map<uint32_t, std::optional<Forwarder>> described_;
};

}  // namespace

PallasModel extract_pallas_model(TSNode root, std::string_view source, ModelCache* cache,
                                 const ForwarderSet* forwarders) {
  return Extractor(root, source, forwarders).run(cache);
}

std::vector<Forwarder> find_forwarders(TSNode root, std::string_view source,
                                       const ForwarderSet* imported) {
  return Extractor(root, source, imported).forwarders();
}

std::vector<std::string> imported_names(TSNode root, std::string_view source) {
  return Evaluator(root, source).top_level_imports();
}

}  // namespace mk::pallas

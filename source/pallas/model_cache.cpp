#include "source/pallas/model_cache.h"

#include <algorithm>
#include <iterator>

#include "source/pallas/evaluator.h"
#include "source/syntax/node_util.h"

namespace mk::pallas {

namespace {

// Every byte span a kernel holds. Keep in step with kernel_model.h.
template <typename Visit>
void for_each_span(Kernel& k, Visit visit) {
  visit(k.call_span);
  visit(k.site_span);
  if (k.kernel_def_span) visit(*k.kernel_def_span);
  if (k.kernel_name_span) visit(*k.kernel_name_span);
  visit(k.grid.span);
  for (std::vector<Operand>* operands : {&k.inputs, &k.outputs}) {
    for (Operand& op : *operands) {
      visit(op.block.shape_span);
      visit(op.block.span);
      visit(op.block.entry_span);
      if (op.block.index_map) {
        visit(op.block.index_map->span);
        visit(op.block.index_map->result_span);
      }
    }
  }
  for (Scratch& s : k.scratch) visit(s.span);
  visit(k.dimension_semantics_span);
}

// {0, 0} is what an unset span holds; it is never moved.
bool unset(const Span& span) {
  return span.start == 0 && span.end == 0;
}

}  // namespace

bool ModelCache::current_starts(const Entry& entry, TSNode statement, Evaluator& eval,
                                std::vector<uint32_t>& starts) const {
  constexpr uint32_t kUnknown = UINT32_MAX;
  starts.assign(entry.sources.size(), kUnknown);
  starts[0] = ts_node_start_byte(statement);
  const std::vector<TSNode>& statements = eval.top_level_statements();
  for (const Dependency& d : entry.dependencies) {
    const std::vector<int> now = eval.module_binding_statements(d.name);
    if (now.size() != d.sources.size()) return false;
    for (size_t i = 0; i < now.size(); ++i) {
      if (now[i] < 0 || static_cast<size_t>(now[i]) >= statements.size()) return false;
      TSNode node = statements[static_cast<size_t>(now[i])];
      const Source& was = entry.sources[d.sources[i]];
      const uint32_t start = ts_node_start_byte(node);
      uint32_t& expected = starts[d.sources[i]];
      if (expected == start) continue;  // already compared (or the statement itself)
      if (expected != kUnknown || ts_node_has_error(node) ||
          syntax::text_of(node, eval.source()) != was.text) {
        return false;
      }
      expected = start;
    }
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    if (starts[i] == kUnknown) return false;
    // An unset span and a real empty span at byte 0 look alike: never move the statement at 0.
    if (entry.sources[i].start == 0 && starts[i] != 0) return false;
  }
  return true;
}

bool ModelCache::reuse(TSNode statement, uint64_t file_key, Evaluator& eval,
                       std::vector<Kernel>& out) {
  if (ts_node_has_error(statement)) return false;
  auto bucket = entries_.find(std::string(syntax::text_of(statement, eval.source())));
  if (bucket == entries_.end()) return false;
  std::vector<uint32_t> starts;
  for (Entry& entry : bucket->second) {
    if (entry.file_key != file_key || entry.symbol != ts_node_symbol(statement)) continue;
    if (!current_starts(entry, statement, eval, starts)) continue;
    for (Kernel k : entry.kernels) {
      for_each_span(k, [&](Span& span) {
        if (unset(span)) return;
        for (size_t i = 0; i < entry.sources.size(); ++i) {
          const Source& s = entry.sources[i];
          if (span.start >= s.start && span.end <= s.end) {
            span.start = span.start - s.start + starts[i];
            span.end = span.end - s.start + starts[i];
            return;
          }
        }
      });
      out.push_back(std::move(k));
    }
    entry.used = true;
    ++pass_.reused;
    return true;
  }
  return false;
}

void ModelCache::store(int index, TSNode statement, uint64_t file_key, Evaluator& eval,
                       std::vector<Kernel> kernels) {
  ++pass_.extracted;
  // A statement with syntax errors is always analysed again: its tree may depend on more than
  // its text.
  if (ts_node_has_error(statement)) return;
  const std::vector<TSNode>& statements = eval.top_level_statements();
  Entry entry;
  entry.file_key = file_key;
  entry.symbol = ts_node_symbol(statement);
  std::vector<int> source_statement = {index};
  auto add_source = [&](TSNode node) {
    entry.sources.push_back({std::string(syntax::text_of(node, eval.source())),
                             ts_node_start_byte(node), ts_node_end_byte(node)});
  };
  add_source(statement);
  for (const std::string& name : eval.module_reads()) {
    Dependency d{name, {}};
    for (int s : eval.module_binding_statements(name)) {
      if (s < 0 || static_cast<size_t>(s) >= statements.size()) return;
      auto known = std::find(source_statement.begin(), source_statement.end(), s);
      if (known == source_statement.end()) {
        TSNode node = statements[static_cast<size_t>(s)];
        if (ts_node_has_error(node)) return;
        source_statement.push_back(s);
        add_source(node);
        known = std::prev(source_statement.end());
      }
      d.sources.push_back(static_cast<size_t>(known - source_statement.begin()));
    }
    entry.dependencies.push_back(std::move(d));
  }
  // Every span must lie in one of the sources, or it could not be moved later.
  bool movable = true;
  for (Kernel& k : kernels) {
    for_each_span(k, [&](Span& span) {
      if (unset(span)) return;
      movable =
          movable && std::any_of(entry.sources.begin(), entry.sources.end(), [&](const Source& s) {
            return span.start >= s.start && span.end <= s.end;
          });
    });
  }
  if (!movable) return;
  entry.kernels = std::move(kernels);
  std::string key = entry.sources[0].text;
  entries_[std::move(key)].push_back(std::move(entry));
}

void ModelCache::finish_pass() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto& bucket = it->second;
    std::erase_if(bucket, [](const Entry& e) { return !e.used; });
    for (Entry& e : bucket) e.used = false;
    it = bucket.empty() ? entries_.erase(it) : std::next(it);
  }
  last_pass_ = pass_;
  pass_ = {};
}

void ModelCache::absorb(ModelCache&& other) {
  for (auto& [text, bucket] : other.entries_) {
    std::vector<Entry>& mine = entries_[text];
    mine.insert(mine.end(), std::make_move_iterator(bucket.begin()),
                std::make_move_iterator(bucket.end()));
  }
  other.entries_.clear();
}

size_t ModelCache::size() const {
  size_t n = 0;
  for (const auto& [text, bucket] : entries_) n += bucket.size();
  return n;
}

}  // namespace mk::pallas

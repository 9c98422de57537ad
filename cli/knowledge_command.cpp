#include "cli/knowledge_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "cli/argument_reader.h"
#include "cli/source_file.h"
#include "knowledge/store.h"

namespace mk::cli {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kKnowledgeUsage =
    "usage: maxkernel knowledge <subcommand> [options]\n"
    "  add PATH...                 index .md/.txt/.py files (directories recursively)\n"
    "  search QUERY... [--limit N] [--kind bundled|user]\n"
    "                              the passages an agent would retrieve, best first\n"
    "  lessons [--class C] [--target T] [--limit N]\n"
    "                              recorded lessons, best first (effect and recency)\n"
    "  record-lesson --class C --strategy S --effect X [--target T] [--run ID] [--notes TEXT]\n"
    "options for all: --store PATH (default $MAXKERNEL_STORE or ~/.cache/maxkernel/store.sqlite),\n"
    "                 --format text|json\n"
    "Exit status: 0 success, 1 a file could not be read or indexed, 2 bad usage or store error.\n";

struct Options {
  std::string subcommand;
  std::vector<std::string> positional;
  std::string store_path, format = "text", kind, kernel_class, target, strategy, run_id, notes;
  int limit = -1;
  double effect = 0;
  bool has_effect = false;
};

// Nullopt when every argument was taken, else the exit status (0 after --help).
std::optional<int> parse(const std::vector<std::string>& args, Options& o) {
  return read_arguments(args, "knowledge", kKnowledgeUsage, [&](ArgumentReader& r) {
    if (r.take("--store", o.store_path) || r.take("--class", o.kernel_class) ||
        r.take("--target", o.target) || r.take("--strategy", o.strategy) ||
        r.take("--run", o.run_id) || r.take("--notes", o.notes))
      return true;
    if (r.is("--format")) {
      o.format = r.value();
      if (o.format != "text" && o.format != "json")
        throw std::invalid_argument("--format must be text or json");
    } else if (r.is("--limit")) {
      o.limit = r.positive_integer();
    } else if (r.is("--kind")) {
      o.kind = r.value();
      if (o.kind != "bundled" && o.kind != "user")
        throw std::invalid_argument("--kind must be bundled or user");
    } else if (r.is("--effect")) {
      o.effect = r.number();
      o.has_effect = true;
    } else if (r.is_option()) {
      return false;
    } else if (o.subcommand.empty()) {
      o.subcommand = r.current();
    } else {
      o.positional.push_back(r.current());
    }
    return true;
  });
}

bool indexable(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".md" || ext == ".markdown" || ext == ".txt" || ext == ".py";
}

int run_add(knowledge::Store& store, const Options& o) {
  if (o.positional.empty()) throw std::invalid_argument("add needs at least one PATH");
  std::vector<fs::path> files;
  for (const std::string& arg : o.positional) {
    const fs::path p(arg);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      // Hidden folders (.git, .venv) are skipped: they hold tooling, not documentation.
      fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec);
      for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->path().filename().string().starts_with(".")) {
          if (it->is_directory(ec)) it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file(ec) && indexable(it->path())) found.push_back(it->path());
      }
      if (ec) throw std::runtime_error(arg + ": " + ec.message());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p, ec)) {
      if (!indexable(p)) throw std::invalid_argument(arg + ": not a .md, .txt or .py file");
      files.push_back(p);
    } else {
      throw std::invalid_argument(arg + ": no such file or directory");
    }
  }
  int indexed = 0, unchanged = 0, chunks = 0, failed = 0;
  json rows = json::array();
  for (const fs::path& file : files) {
    const std::string source = fs::weakly_canonical(fs::absolute(file)).string();
    try {
      const auto text = read_text_file(file);
      if (!text) throw std::runtime_error("cannot read " + file.string());
      const knowledge::IndexOutcome r =
          store.add_document(source, *text, knowledge::DocumentKind::user);
      (r.changed ? indexed : unchanged)++;
      if (r.changed) chunks += r.chunks;
      rows.push_back({{"source", source},
                      {"status", r.changed ? "indexed" : "unchanged"},
                      {"chunks", r.chunks}});
    } catch (const std::exception& e) {
      ++failed;
      std::cerr << "maxkernel knowledge add: " << e.what() << "\n";
      rows.push_back({{"source", source}, {"status", "failed"}, {"error", e.what()}});
    }
  }
  if (o.format == "json") {
    std::cout << json{{"documents", rows},
                      {"indexed", indexed},
                      {"unchanged", unchanged},
                      {"failed", failed},
                      {"chunks", chunks}}
                     .dump(2, ' ', false, json::error_handler_t::replace)
              << "\n";
  } else {
    std::cout << "indexed " << indexed << " document(s) (" << chunks << " chunks), " << unchanged
              << " unchanged" << (failed ? ", " + std::to_string(failed) + " failed" : "") << " -> "
              << store.path().string() << "\n";
  }
  return failed ? 1 : 0;
}

int run_search(knowledge::Store& store, const Options& o) {
  std::string query;
  for (const std::string& word : o.positional) query += (query.empty() ? "" : " ") + word;
  if (query.empty()) throw std::invalid_argument("search needs a QUERY");
  knowledge::SearchFilter filter;
  if (o.kind == "bundled") filter.kind = knowledge::SearchFilter::Kind::bundled;
  if (o.kind == "user") filter.kind = knowledge::SearchFilter::Kind::user;
  const auto passages = store.search(query, o.limit > 0 ? o.limit : 5, filter);
  if (o.format == "json") {
    json out = json::array();
    for (const auto& p : passages) {
      out.push_back({{"title", p.title},
                     {"heading", p.heading},
                     {"source", p.source},
                     {"kind", knowledge::to_string(p.kind)},
                     {"score", p.score},
                     {"snippet", p.snippet},
                     {"text", p.text}});
    }
    std::cout << json{{"query", query}, {"passages", out}}.dump(2, ' ', false,
                                                                json::error_handler_t::replace)
              << "\n";
    return 0;
  }
  if (passages.empty()) std::cout << "no passages match\n";
  int rank = 1;
  for (const auto& p : passages) {
    char score[32];
    std::snprintf(score, sizeof score, "%.2f", p.score);
    std::cout << rank++ << ". " << p.title << (p.heading.empty() ? "" : " > " + p.heading)
              << "  (score " << score << ")\n   " << p.source << "\n   " << p.snippet << "\n";
  }
  return 0;
}

int run_lessons(knowledge::Store& store, const Options& o) {
  const auto lessons = store.lessons_for(o.kernel_class, o.target, o.limit > 0 ? o.limit : 20);
  if (o.format == "json") {
    json out = json::array();
    for (const auto& l : lessons) {
      out.push_back({{"kernel_class", l.kernel_class},
                     {"strategy", l.strategy},
                     {"target", l.target},
                     {"effect", l.effect},
                     {"run_id", l.run_id},
                     {"notes", l.notes},
                     {"created_at", l.created_at},
                     {"rank_score", l.rank_score}});
    }
    std::cout << json{{"lessons", out}}.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (lessons.empty()) std::cout << "no lessons recorded\n";
  for (const auto& l : lessons) {
    char effect[32];
    std::snprintf(effect, sizeof effect, "%.2fx", l.effect);
    std::cout << effect << "  " << l.kernel_class << " on " << (l.target.empty() ? "?" : l.target)
              << ": " << l.strategy << (l.run_id.empty() ? "" : "  [run " + l.run_id + "]")
              << (l.notes.empty() ? "" : "\n       " + l.notes) << "\n";
  }
  return 0;
}

int run_record_lesson(knowledge::Store& store, const Options& o) {
  if (o.kernel_class.empty() || o.strategy.empty() || !o.has_effect)
    throw std::invalid_argument("record-lesson needs --class, --strategy and --effect");
  knowledge::Lesson lesson;
  lesson.kernel_class = o.kernel_class;
  lesson.strategy = o.strategy;
  lesson.target = o.target;
  lesson.effect = o.effect;
  lesson.run_id = o.run_id;
  lesson.notes = o.notes;
  const int64_t id = store.record_lesson(lesson);
  if (o.format == "json")
    std::cout << json{{"id", id}}.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  else
    std::cout << "recorded lesson " << id << "\n";
  return 0;
}

}  // namespace

int run_knowledge(const std::vector<std::string>& args) {
  Options o;
  if (auto status = parse(args, o)) return *status;
  if (o.subcommand.empty() || o.subcommand == "help") {
    std::cout << kKnowledgeUsage;
    return o.subcommand.empty() && args.empty() ? 2 : 0;
  }
  try {
    knowledge::Store store(o.store_path.empty() ? knowledge::default_store_path()
                                                : fs::path(o.store_path));
    if (o.subcommand == "add") return run_add(store, o);
    if (o.subcommand == "search") return run_search(store, o);
    if (o.subcommand == "lessons") return run_lessons(store, o);
    if (o.subcommand == "record-lesson") return run_record_lesson(store, o);
    std::cerr << "maxkernel knowledge: unknown subcommand '" << o.subcommand << "'\n"
              << kKnowledgeUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "maxkernel knowledge " << o.subcommand << ": " << e.what() << "\n";
    return 2;
  }
}

}  // namespace mk::cli

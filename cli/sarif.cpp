#include "cli/sarif.h"

#include <cctype>

#include "source/analysis/doc_links.h"

namespace mk::cli {

namespace fs = std::filesystem;

namespace {

const char* sarif_level(analysis::Severity s) {
  switch (s) {
    case analysis::Severity::Error:
      return "error";
    case analysis::Severity::Warning:
      return "warning";
    case analysis::Severity::Information:
    case analysis::Severity::Hint:
      return "note";
  }
  return "none";
}

// RFC 3986: keep the unreserved characters and the separators, escape every other byte.
std::string percent_encode(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

fs::path normal_absolute(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return abs.lexically_normal();
}

nlohmann::json rule_json(const analysis::DiagnosticCode& c) {
  const std::string url = analysis::diagnostic_help_url(c.code);
  return {{"id", c.code},
          {"name", c.slug},
          {"shortDescription", {{"text", c.title}}},
          {"fullDescription",
           {{"text", std::string(c.title) + ". Found by maxkernel's static checks of Pallas "
                                            "kernels, without running them."}}},
          {"helpUri", url},
          {"help",
           {{"text", std::string(c.title) + ". See " + url},
            {"markdown", "**" + std::string(c.code) + ": " + c.title + "**\n\nWhat it means, " +
                             "why it matters on a TPU and how to fix it: [" + c.code +
                             " in the MaxKernel docs](" + url + ")."}}}};
}

}  // namespace

fs::path default_sarif_root() {
  std::error_code ec;
  const fs::path cwd = normal_absolute(fs::current_path(ec));
  for (fs::path dir = cwd; !dir.empty(); dir = dir.parent_path()) {
    if (fs::exists(dir / ".git", ec)) return dir;
    if (dir == dir.root_path()) break;
  }
  return cwd;
}

std::optional<std::string> relative_uri(const fs::path& path, const fs::path& root) {
  const fs::path rel = normal_absolute(path).lexically_relative(normal_absolute(root));
  if (rel.empty() || *rel.begin() == "..") return std::nullopt;
  return percent_encode(rel.generic_string());
}

std::string file_uri(const fs::path& absolute, bool folder) {
  std::string path = normal_absolute(absolute).generic_string();
  if (folder && !path.ends_with("/")) path += "/";
  return "file://" + percent_encode(path);
}

nlohmann::json to_sarif(const std::vector<AnalysedFile>& files, const SarifRun& run) {
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& c : analysis::diagnostic_codes()) rules.push_back(rule_json(c));

  nlohmann::json results = nlohmann::json::array();
  for (const AnalysedFile& f : files) {
    nlohmann::json artifact;
    if (f.path == "-") {
      artifact = {{"uri", "stdin"}};  // no file to map to: code scanning drops it, others show it
    } else if (auto rel = relative_uri(f.path, run.root)) {
      artifact = {{"uri", *rel}, {"uriBaseId", "%SRCROOT%"}};
    } else {
      artifact = {{"uri", file_uri(f.path)}};
    }
    for (const analysis::Finding& d : f.reported) {
      const auto start = f.position(d.span.start);
      const auto end = f.position(d.span.end);
      results.push_back({{"ruleId", d.code},
                         {"level", sarif_level(d.severity)},
                         {"message", {{"text", d.message}}},
                         {"locations",
                          {{{"physicalLocation",
                             {{"artifactLocation", artifact},
                              {"region",
                               {{"startLine", start.line + 1},
                                {"startColumn", start.character + 1},
                                {"endLine", end.line + 1},
                                {"endColumn", end.character + 1}}}}}}}}});
    }
  }

  std::string command_line = "maxkernel check";
  for (const std::string& a : run.arguments) command_line += " " + a;
  nlohmann::json notifications = nlohmann::json::array();
  for (const std::string& e : run.errors)
    notifications.push_back({{"level", "error"}, {"message", {{"text", e}}}});
  std::error_code ec;
  nlohmann::json invocation{{"executionSuccessful", run.errors.empty()},
                            {"commandLine", command_line},
                            {"arguments", run.arguments},
                            {"workingDirectory", {{"uri", file_uri(fs::current_path(ec), true)}}}};
  if (!notifications.empty()) invocation["toolExecutionNotifications"] = notifications;

  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs",
           {{{"tool",
              {{"driver",
                {{"name", "maxkernel"},
                 {"version", "0.1.0"},
                 {"semanticVersion", "0.1.0"},
                 {"informationUri", analysis::docs_https_url("cli.md")},
                 {"rules", rules}}}}},
             {"originalUriBaseIds", {{"%SRCROOT%", {{"uri", file_uri(run.root, true)}}}}},
             {"invocations", {invocation}},
             {"columnKind", "utf16CodeUnits"},
             {"properties", {{"target", run.target}}},
             {"results", results}}}}};
}

}  // namespace mk::cli

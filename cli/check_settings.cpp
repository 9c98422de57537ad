#include "cli/check_settings.h"

#include <algorithm>
#include <sstream>

#include "cli/source_file.h"
#include "source/analysis/findings.h"

namespace mk::cli {

namespace fs = std::filesystem;

namespace {

std::string trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string_view::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r");
  return std::string(s.substr(a, b - a + 1));
}

// The line without a trailing comment (a '#' outside quotes).
std::string strip_comment(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

bool is_table_header(const std::string& line) {
  return line.starts_with("[");
}

bool is_maxkernel_table(const std::string& line) {
  std::string compact;
  for (char c : line)
    if (c != ' ' && c != '\t') compact += c;
  return compact == "[tool.maxkernel]";
}

// A TOML basic or literal string, all of `text`.
std::optional<std::string> parse_string(const std::string& text) {
  if (text.size() < 2 || (text[0] != '"' && text[0] != '\'') || text.back() != text[0])
    return std::nullopt;
  const std::string inner = text.substr(1, text.size() - 2);
  if (inner.find(text[0]) != std::string::npos) return std::nullopt;
  return inner;
}

// A one-level array of strings, all of `text`.
std::optional<std::vector<std::string>> parse_string_array(const std::string& text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
  std::vector<std::string> out;
  std::stringstream items(text.substr(1, text.size() - 2));
  std::string item;
  while (std::getline(items, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;  // a trailing comma
    auto s = parse_string(item);
    if (!s) return std::nullopt;
    out.push_back(*s);
  }
  return out;
}

bool known_prefix(const std::string& entry) {
  const auto& codes = analysis::diagnostic_codes();
  return !entry.empty() && std::any_of(codes.begin(), codes.end(), [&](const auto& c) {
    return std::string_view(c.code).starts_with(entry);
  });
}

bool matches(const std::vector<std::string>& prefixes, const std::string& code) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return code.starts_with(p); });
}

bool has_maxkernel_table(const fs::path& pyproject) {
  const auto text = read_text_file(pyproject);
  if (!text) return false;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line))
    if (is_maxkernel_table(trim(strip_comment(line)))) return true;
  return false;
}

}  // namespace

void CheckSettings::override_with(const CheckSettings& over) {
  if (over.target) target = over.target;
  // A choice of codes on the command line replaces the file's whole choice (select and ignore).
  if (over.select || over.ignore) {
    select = over.select;
    ignore = over.ignore;
  }
}

bool CheckSettings::reports(const std::string& code) const {
  if (ignore && matches(*ignore, code)) return false;
  return !select || matches(*select, code);
}

std::optional<fs::path> find_pyproject(const fs::path& start) {
  std::error_code ec;
  for (fs::path dir = fs::absolute(start, ec); !dir.empty(); dir = dir.parent_path()) {
    const fs::path candidate = dir / "pyproject.toml";
    if (fs::is_regular_file(candidate, ec) && has_maxkernel_table(candidate)) return candidate;
    if (dir == dir.root_path()) break;
  }
  return std::nullopt;
}

bool parse_code_list(const std::string& text, std::vector<std::string>& out, std::string& error) {
  out.clear();
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    if (!known_prefix(item)) {
      error = "unknown code '" + item + "' (codes are MK000 to MK008, or a prefix such as MK00)";
      return false;
    }
    out.push_back(item);
  }
  return true;
}

bool read_pyproject_settings(const fs::path& pyproject, CheckSettings& out, std::string& error) {
  const auto text = read_text_file(pyproject);
  if (!text) {
    error = "cannot read " + pyproject.string();
    return false;
  }
  std::istringstream lines(*text);
  std::string raw;
  bool inside = false;
  int number = 0;
  while (std::getline(lines, raw)) {
    ++number;
    std::string line = trim(strip_comment(raw));
    if (line.empty()) continue;
    if (is_table_header(line) && line.find('=') == std::string::npos) {
      inside = is_maxkernel_table(line);
      continue;
    }
    if (!inside) continue;
    const std::string where = pyproject.string() + ":" + std::to_string(number) + ": ";
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      error = where + "expected key = value in [tool.maxkernel]";
      return false;
    }
    const std::string key = trim(line.substr(0, eq));
    std::string value = trim(line.substr(eq + 1));
    // An array may go on over several lines.
    while (value.starts_with("[") && !value.ends_with("]") && std::getline(lines, raw)) {
      ++number;
      value += " " + trim(strip_comment(raw));
    }
    if (key == "target") {
      auto s = parse_string(value);
      if (!s) {
        error = where + "target wants a string such as \"v5e\"";
        return false;
      }
      out.target = *s;
    } else if (key == "select" || key == "ignore") {
      auto list = parse_string_array(value);
      if (!list) {
        error = where + key + " wants a list of codes such as [\"MK001\"]";
        return false;
      }
      std::vector<std::string> codes;
      std::string joined;
      for (const auto& c : *list) joined += c + ",";
      if (!parse_code_list(joined, codes, error)) {
        error = where + key + ": " + error;
        return false;
      }
      (key == "select" ? out.select : out.ignore) = codes;
    } else {
      error = where + "unknown setting '" + key + "' in [tool.maxkernel] (target, select, ignore)";
      return false;
    }
  }
  return true;
}

}  // namespace mk::cli

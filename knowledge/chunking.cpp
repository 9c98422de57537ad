// Splitting documents into passages small enough to put several into a prompt.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include "knowledge/documents.h"

namespace mk::knowledge {

namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

bool is_blank(std::string_view line) {
  return trim(line).empty();
}

// Markdown ATX heading level (1..6) of a line, or 0.
int heading_level(std::string_view line) {
  int level = 0;
  while (level < static_cast<int>(line.size()) && line[static_cast<size_t>(level)] == '#') ++level;
  if (level == 0 || level > 6) return 0;
  if (static_cast<size_t>(level) < line.size() && line[static_cast<size_t>(level)] != ' ') return 0;
  return level;
}

bool is_fence(std::string_view line) {
  const std::string_view t = trim(line);
  return t.starts_with("```") || t.starts_with("~~~");
}

// Splits a body that is too long at blank lines outside code fences; a paragraph that is
// still too long is split at line boundaries.
std::vector<std::string> split_long(std::string_view body, size_t max_chars) {
  std::vector<std::string> pieces;
  if (body.size() <= max_chars) {
    pieces.emplace_back(body);
    return pieces;
  }
  // Paragraphs: runs of lines separated by blank lines; a fenced block stays with its paragraph.
  std::vector<std::string> paragraphs;
  std::string current;
  bool in_fence = false;
  for (std::string_view line : split_lines(body)) {
    if (is_fence(line)) in_fence = !in_fence;
    if (!in_fence && is_blank(line)) {
      if (!current.empty()) paragraphs.push_back(std::move(current));
      current.clear();
      continue;
    }
    current.append(line);
    current.push_back('\n');
  }
  if (!current.empty()) paragraphs.push_back(std::move(current));

  std::string piece;
  auto flush = [&] {
    if (!trim(piece).empty()) pieces.emplace_back(trim(piece));
    piece.clear();
  };
  for (const std::string& para : paragraphs) {
    if (!piece.empty() && piece.size() + para.size() + 1 > max_chars) flush();
    if (para.size() <= max_chars) {
      if (!piece.empty()) piece.push_back('\n');
      piece += para;
      continue;
    }
    for (std::string_view line : split_lines(para)) {
      // A single line longer than max_chars is cut into pieces at UTF-8 boundaries.
      do {
        size_t take = std::min(line.size(), max_chars);
        while (take < line.size() && take > 1 &&
               (static_cast<unsigned char>(line[take]) & 0xC0) == 0x80)
          --take;
        if (!piece.empty() && piece.size() + take + 1 > max_chars) flush();
        piece.append(line.substr(0, take));
        piece.push_back('\n');
        line.remove_prefix(take);
      } while (!line.empty());
    }
  }
  flush();
  return pieces;
}

void add_section(ChunkedDocument& doc, const std::string& heading, std::string_view body,
                 size_t max_chars) {
  const std::string_view text = trim(body);
  if (text.empty()) return;
  for (std::string& piece : split_long(text, max_chars))
    doc.chunks.push_back(Chunk{heading, std::move(piece)});
}

void chunk_markdown(ChunkedDocument& doc, std::string_view content, size_t max_chars) {
  std::vector<std::string> path;  // heading text per level below the title
  std::string heading, body;
  bool in_fence = false, title_seen = false;
  int title_level = 0;
  for (std::string_view line : split_lines(content)) {
    if (is_fence(line)) in_fence = !in_fence;
    const int level = in_fence ? 0 : heading_level(line);
    if (level == 0) {
      body.append(line);
      body.push_back('\n');
      continue;
    }
    const std::string text(trim(line.substr(static_cast<size_t>(level))));
    if (!title_seen && level == 1) {
      // The first top-level heading names the document; text before it is its opening.
      title_seen = true;
      title_level = level;
      doc.title = text;
      continue;
    }
    add_section(doc, heading, body, max_chars);
    body.clear();
    const size_t depth = static_cast<size_t>(std::max(1, level - title_level));
    path.resize(depth);
    path[depth - 1] = text;
    heading.clear();
    for (const std::string& part : path) {
      if (part.empty()) continue;
      if (!heading.empty()) heading += " > ";
      heading += part;
    }
  }
  add_section(doc, heading, body, max_chars);
}

bool starts_top_level_definition(std::string_view line) {
  return line.starts_with("def ") || line.starts_with("class ") || line.starts_with("async def ") ||
         line.starts_with("@");
}

std::string definition_name(std::string_view line) {
  std::string_view t = line;
  for (std::string_view prefix : {"async def ", "def ", "class "}) {
    if (t.starts_with(prefix)) {
      t.remove_prefix(prefix.size());
      const size_t end = t.find_first_of("(:");
      return std::string(trim(t.substr(0, end)));
    }
  }
  return {};
}

void chunk_python(ChunkedDocument& doc, std::string_view content, size_t max_chars) {
  std::string heading, body;
  bool previous_was_decorator = false;
  for (std::string_view line : split_lines(content)) {
    if (starts_top_level_definition(line) && !previous_was_decorator) {
      add_section(doc, heading, body, max_chars);
      body.clear();
      heading.clear();
    }
    if (heading.empty()) heading = definition_name(line);
    previous_was_decorator = line.starts_with("@");
    body.append(line);
    body.push_back('\n');
  }
  add_section(doc, heading, body, max_chars);
}

}  // namespace

const char* to_string(DocumentKind kind) {
  return kind == DocumentKind::bundled ? "bundled" : "user";
}

ChunkedDocument chunk_document(const std::string& source, const std::string& content,
                               size_t max_chars) {
  ChunkedDocument doc;
  const std::filesystem::path path(source);
  const std::string ext = path.extension().string();
  if (ext == ".md" || ext == ".markdown") {
    chunk_markdown(doc, content, max_chars);
  } else if (ext == ".py") {
    chunk_python(doc, content, max_chars);
  } else {
    add_section(doc, "", content, max_chars);
  }
  if (doc.title.empty()) doc.title = path.filename().string();
  return doc;
}

std::string valid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t len = 0;
    uint32_t min = 0;
    if (c < 0x80) {
      len = 1;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      min = 0x10000;
    }
    bool ok = len > 0 && i + len <= text.size();
    uint32_t cp = len == 1 ? c : (c & (0x7F >> len));
    for (size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are malformed too.
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (ok) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string content_hash(const std::string& content) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : content) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace mk::knowledge

#include "agents/llm/redact.h"

#include <cctype>

namespace mk::llm {

namespace {

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool is_key_char(char c) {
  return is_word_char(c) || c == '-' || c == '*' || c == '.';
}

// Length of a key-shaped token starting at `pos`, or 0. Providers echo keys partly masked
// ("sk-PLANT****-123"), which an exact-match replacement would miss.
size_t key_token_length(std::string_view text, size_t pos) {
  if (pos > 0 && is_word_char(text[pos - 1])) return 0;
  size_t prefix = 0;
  if (text.substr(pos, 3) == "sk-") {
    prefix = 3;
  } else if (text.substr(pos, 4) == "AIza") {
    prefix = 4;
  } else {
    return 0;
  }
  size_t end = pos + prefix;
  while (end < text.size() && is_key_char(text[end])) ++end;
  while (end > pos + prefix && text[end - 1] == '.') --end;  // a sentence's full stop
  return end - pos - prefix >= 3 ? end - pos : 0;
}

}  // namespace

std::string redact(std::string_view text, const std::vector<std::string>& secrets) {
  std::string out(text);
  for (const std::string& secret : secrets) {
    if (secret.empty()) continue;
    size_t pos = 0;
    while ((pos = out.find(secret, pos)) != std::string::npos) {
      out.replace(pos, secret.size(), kRedacted);
      pos += kRedacted.size();
    }
  }
  std::string masked;
  masked.reserve(out.size());
  for (size_t i = 0; i < out.size();) {
    size_t length = key_token_length(out, i);
    if (length > 0) {
      masked += kRedacted;
      i += length;
    } else {
      masked += out[i++];
    }
  }
  return masked;
}

}  // namespace mk::llm

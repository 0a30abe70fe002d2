#include "bootstrap/shell_quote.h"

namespace tlaunch {

std::string shellQuote(std::string_view word) {
  std::string out;
  out.reserve(word.size() + 2);
  out += '\'';
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";  // close the quote, an escaped quote, reopen
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string shellJoin(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += shellQuote(w);
  }
  return out;
}

Result<std::vector<std::string>> splitShellWords(std::string_view text, std::string_view what) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {  // line continuation
      ++i;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos) {
        return fail(Errc::usage, std::string(what) + ": unterminated single quote in '" + std::string(text) + "'",
                    "close the quote or escape it with a backslash");
      }
      word.append(text.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size()) {
          const char n = text[j + 1];
          if (n == '"' || n == '\\' || n == '$' || n == '`') {
            word += n;
            ++j;
            continue;
          }
          if (n == '\n') {
            ++j;
            continue;
          }
        }
        word += text[j];
      }
      if (j >= text.size()) {
        return fail(Errc::usage, std::string(what) + ": unterminated double quote in '" + std::string(text) + "'",
                    "close the quote or escape it with a backslash");
      }
      i = j;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) {
        return fail(Errc::usage, std::string(what) + ": trailing backslash in '" + std::string(text) + "'",
                    "remove it or escape it as \\\\");
      }
      word += text[i + 1];
      ++i;
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace tlaunch

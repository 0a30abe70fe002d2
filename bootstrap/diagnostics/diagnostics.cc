#include "tlaunch/diagnostics.h"

#include "tlaunch/strings.h"

#include <cstdlib>
#include <cstdio>

namespace tlaunch {

namespace detail {
extern const char kCatalogueText[];
}  // namespace detail

namespace {

void appendLine(std::string& to, std::string_view line) {
  if (!to.empty()) to += '\n';
  to += line;
}

std::string fill(std::string_view text, std::initializer_list<DiagnosticArg> args) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '{') {
      const size_t close = text.find('}', i);
      if (close != std::string_view::npos) {
        const std::string_view name = text.substr(i + 1, close - i - 1);
        const DiagnosticArg* found = nullptr;
        for (const auto& a : args)
          if (a.name == name) found = &a;
        if (found != nullptr) {
          out += found->value;
          i = close + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

}  // namespace

Result<std::map<std::string, DiagnosticText, std::less<>>> parseCatalogue(std::string_view text) {
  std::map<std::string, DiagnosticText, std::less<>> out;
  DiagnosticText* current = nullptr;
  std::string current_name;
  bool in_hint = false;
  int line_no = 0;
  auto closeTopic = [&]() -> Result<void> {
    if (current != nullptr && current->message.empty())
      return fail(Errc::internal, "diagnostics catalogue: topic [" + current_name + "] has no message");
    return {};
  };
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = trimRightBlanks(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.size() > 2 && line.front() == '[' && line.back() == ']') {
      if (auto r = closeTopic(); !r) return tl::unexpected(r.error());
      current_name = std::string(line.substr(1, line.size() - 2));
      auto [it, fresh] = out.emplace(current_name, DiagnosticText{});
      if (!fresh)
        return fail(Errc::internal, "diagnostics catalogue line " + std::to_string(line_no) + ": topic [" +
                                        current_name + "] appears twice");
      current = &it->second;
      in_hint = false;
      continue;
    }
    if (line.empty() || line.front() == '#') continue;  // between topics and inside them alike
    if (current == nullptr)
      return fail(Errc::internal, "diagnostics catalogue line " + std::to_string(line_no) + ": text before any [topic]");
    if (line.substr(0, 3) == "-> ") {
      in_hint = true;
      appendLine(current->hint, line.substr(3));
    } else {
      appendLine(in_hint ? current->hint : current->message, line);
    }
  }
  if (auto r = closeTopic(); !r) return tl::unexpected(r.error());
  return out;
}

const std::map<std::string, DiagnosticText, std::less<>>& diagnosticsCatalogue() {
  // Parsed once; the catalogue is compiled in, so a parse error is the build's fault and the
  // unit test catches it before any user does.
  static const auto catalogue = [] {
    auto parsed = parseCatalogue(detail::kCatalogueText);
    if (!parsed) {
      std::fprintf(stderr, "tlaunch: internal error: %s\n", parsed.error().message.c_str());
      std::abort();
    }
    return std::move(*parsed);
  }();
  return catalogue;
}

Error diagnosticError(Errc code, std::string_view topic, std::initializer_list<DiagnosticArg> args) {
  const auto& catalogue = diagnosticsCatalogue();
  const auto it = catalogue.find(topic);
  if (it == catalogue.end())
    return Error{Errc::internal, "internal error: no diagnostic [" + std::string(topic) + "] in the catalogue", ""};
  return Error{code, fill(it->second.message, args), fill(it->second.hint, args)};
}

}  // namespace tlaunch

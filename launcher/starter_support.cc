#include "launcher/starter_support.h"
#include "launcher/home_directory.h"
#include "tlaunch/strings.h"

#include <sys/wait.h>
#include <unistd.h>

namespace tlaunch {

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    out.push_back(text.substr(pos, eol - pos));
    pos = eol + 1;
  }
  return out;
}

std::vector<std::string> meaningfulLines(std::string_view stderr_text, size_t max_lines) {
  std::vector<std::string> kept;
  for (std::string_view line : lines(stderr_text)) {
    line = trimBlanks(line);
    if (line.empty() || line.front() == '@') continue;
    if (line.rfind("Warning: Permanently added", 0) == 0) continue;
    kept.emplace_back(line);
  }
  if (kept.size() > max_lines) kept.erase(kept.begin(), kept.end() - static_cast<long>(max_lines));
  return kept;
}

std::string quoteToolOutput(std::string_view tool, std::string_view stderr_text, size_t max_lines) {
  const auto kept = meaningfulLines(stderr_text, max_lines);
  if (kept.empty()) return {};
  std::string out = "\n  " + std::string(tool) + " said: " + kept[0];
  for (size_t i = 1; i < kept.size(); ++i) out += "\n    " + kept[i];
  return out;
}

std::string lineContaining(std::string_view text, std::string_view needle) {
  for (std::string_view line : lines(text)) {
    if (line.find(needle) != std::string_view::npos) return std::string(trimBlanks(line));
  }
  return {};
}

bool programInPath(const std::string& program, const std::string& path_variable) {
  if (program.empty()) return false;
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  size_t pos = 0;
  while (pos <= path_variable.size()) {
    size_t colon = path_variable.find(':', pos);
    if (colon == std::string::npos) colon = path_variable.size();
    std::string dir = path_variable.substr(pos, colon - pos);
    if (dir.empty()) dir = ".";
    if (::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    pos = colon + 1;
  }
  return false;
}

std::string daemonPathFromHere(const std::string& given, const std::string& cwd, const std::string& home) {
  if (given.empty() || given.front() == '/') return given;
  if (given == "~" || given.starts_with("~/")) return underHome(given, home);
  if (given.front() == '~') return given;  // ~user/...: another user's home, not ours to guess
  if (given.find('/') == std::string::npos) return given;  // a name: found on each node's PATH
  std::string rest = given;
  while (rest.starts_with("./")) rest.erase(0, 2);
  return cwd == "/" ? "/" + rest : cwd + "/" + rest;
}

std::string secretLine(const std::string& secret) {
  if (!secret.empty() && secret.back() == '\n') return secret;
  return secret + "\n";
}

int exitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return -WTERMSIG(wait_status);
  return -1;
}

}  // namespace tlaunch

#include "launcher/deepspeed_env.h"

#include <sys/stat.h>

#include <algorithm>

#include "launcher/text_file.h"
#include "tlaunch/strings.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

namespace {

constexpr const char* kDefaultName = ".deepspeed_env";

std::string trim(const std::string& s) { return std::string(trimBlanks(s)); }

bool validName(const std::string& n) {
  if (n.empty() || (n[0] >= '0' && n[0] <= '9')) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// The value as the shell reads `export KEY=VALUE` (deepspeed's launcher hands the line to one):
// one pair of quotes removed, and a comment after the value (`"a b"  # rails`, `x # note`) left out.
std::string shellValue(const std::string& v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) {
    const auto close = v.find(v.front(), 1);
    const std::string after = close == std::string::npos ? "" : trim(v.substr(close + 1));
    if (close != std::string::npos && (after.empty() || after.front() == '#')) return v.substr(1, close - 1);
    return v;
  }
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] == '#' && (v[i - 1] == ' ' || v[i - 1] == '\t')) return trim(v.substr(0, i));
  return v;
}

bool isFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::vector<std::string> deepspeedEnvFileCandidates(const std::map<std::string, std::string>& env) {
  std::string name = kDefaultName;
  if (auto it = env.find("DS_ENV_FILE"); it != env.end() && !it->second.empty()) name = it->second;
  if (name.find('/') != std::string::npos) return {name};  // a path (./x.env, /etc/job.env), not a name to look up
  std::vector<std::string> out;
  if (auto home = env.find("HOME"); home != env.end() && !home->second.empty())
    out.push_back(home->second + (home->second.back() == '/' ? "" : "/") + name);
  out.push_back("./" + name);
  return out;
}

Result<std::vector<EnvFileEntry>> parseEnvFile(const std::string& shown_path, const std::string& text) {
  std::vector<EnvFileEntry> out;
  size_t start = 0;
  for (int line_no = 1; start < text.size() || start == 0; ++line_no) {
    auto end = text.find('\n', start);
    const std::string line = trim(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    const std::string where = shown_path + ":" + std::to_string(line_no);
    if (!line.empty() && line.front() != '#') {
      std::string body = line.rfind("export ", 0) == 0 ? trim(line.substr(7)) : line;
      const auto eq = body.find('=');
      if (eq == std::string::npos)
        return fail(Errc::usage, where + ": expected KEY=VALUE, found '" + line + "'",
                    "fix or remove the line (DeepSpeed's environment file: one KEY=VALUE per line)");
      std::string name = trim(body.substr(0, eq));
      if (!validName(name))
        return fail(Errc::usage, where + ": '" + name + "' is not a variable name",
                    "names are letters, digits and '_', not starting with a digit");
      out.push_back({name, shellValue(trim(body.substr(eq + 1))), where});
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

Result<std::vector<EnvFileEntry>> readDeepspeedEnvFiles(const std::map<std::string, std::string>& env) {
  const auto candidates = deepspeedEnvFileCandidates(env);
  std::vector<EnvFileEntry> out;
  bool found = false;
  for (const std::string& path : candidates) {
    if (!isFile(path)) continue;
    found = true;
    auto text = readTextFile(path, "DeepSpeed environment file");
    if (!text) return tl::unexpected(text.error());
    auto entries = parseEnvFile(path, *text);
    if (!entries) return tl::unexpected(entries.error());
    out.insert(out.end(), entries->begin(), entries->end());
  }
  auto named = env.find("DS_ENV_FILE");
  if (!found && named != env.end() && !named->second.empty())
    return diagnostic(Errc::usage, "ds-env-file-missing",
                      {{"file", named->second},
                       {"where", named->second.front() == '/' ? "" : " in the home directory or the current one"}});
  return out;
}

}  // namespace tlaunch

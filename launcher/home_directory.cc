#include "launcher/home_directory.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace tlaunch {

std::string homeDirectory(const std::map<std::string, std::string>& env) {
  if (auto it = env.find("HOME"); it != env.end() && !it->second.empty()) return it->second;
  const passwd* pw = ::getpwuid(::geteuid());
  return pw && pw->pw_dir ? pw->pw_dir : "";
}

std::string underHome(const std::string& path, const std::string& home) {
  if (home.empty() || !(path == "~" || path.starts_with("~/"))) return path;
  return home + path.substr(1);
}

std::string expandHomeHere(const std::string& path) {
  if (path == "~" || path.starts_with("~/")) {
    std::map<std::string, std::string> env;
    if (const char* home = std::getenv("HOME")) env["HOME"] = home;
    return underHome(path, homeDirectory(env));
  }
  if (!path.starts_with("~")) return path;
  const size_t slash = path.find('/');
  const std::string user = path.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwnam_r(user.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 || !found || !found->pw_dir)
    return path;  // no such user: the path as written
  return slash == std::string::npos ? std::string(found->pw_dir) : found->pw_dir + path.substr(slash);
}

}  // namespace tlaunch

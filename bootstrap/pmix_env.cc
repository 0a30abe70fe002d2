#include "bootstrap/pmix_env.h"

#include <algorithm>

namespace tlaunch {
namespace {

std::string_view keyOf(const std::string& entry) {
  auto eq = entry.find('=');
  return std::string_view(entry).substr(0, eq == std::string::npos ? entry.size() : eq);
}

}  // namespace

const std::string* findEnv(const std::vector<std::string>& env, std::string_view key) {
  for (const auto& e : env)
    if (keyOf(e) == key) return &e;
  return nullptr;
}

void setEnv(std::vector<std::string>& env, std::string_view key, std::string_view value) {
  std::erase_if(env, [&](const std::string& e) { return keyOf(e) == key; });
  std::string entry(key);
  entry += '=';
  entry += value;
  env.push_back(std::move(entry));
}

void dropInheritedPmixVars(std::vector<std::string>& env) {
  std::erase_if(env, [](const std::string& e) {
    std::string_view k = keyOf(e);
    return k.starts_with("PMIX_") && !k.starts_with("PMIX_MCA_");
  });
}

}  // namespace tlaunch

#pragma once
// Reading fabricEnv's settings in tests: each variable's effective value, or one setting whole.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "binding/fabric/fabric_env.h"

namespace tlaunch::testing {

inline std::map<std::string, std::string> values(const std::vector<EnvSetting>& settings) {
  std::map<std::string, std::string> out;
  for (const auto& s : settings) out[s.name] = s.effective();
  return out;
}

inline const EnvSetting& find(const std::vector<EnvSetting>& settings, const std::string& name) {
  for (const auto& s : settings)
    if (s.name == name) return s;
  FAIL("no setting " << name);
  throw;
}

}  // namespace tlaunch::testing

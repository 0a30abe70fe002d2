#pragma once
// Variables the user set for the job: with -x NAME=VALUE or inherited from the environment.
#include <functional>
#include <map>
#include <string>

namespace tlaunch {

struct UserEnvValue {
  std::string value;
  std::string source;  // "-x" or "environment"
};

// Ordered by name; looked up by string_view without a copy (std::less<>).
using UserEnv = std::map<std::string, UserEnvValue, std::less<>>;

}  // namespace tlaunch

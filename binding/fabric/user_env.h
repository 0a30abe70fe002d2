#pragma once
// Variables the user set for the job: with -x NAME=VALUE or inherited from the environment.
#include <map>
#include <string>

namespace tlaunch {

struct UserEnvValue {
  std::string value;
  std::string source;  // "-x" or "environment"
};

using UserEnv = std::map<std::string, UserEnvValue>;

}  // namespace tlaunch

#pragma once
// The command line of a test, parsed as tlaunch's main parses it.
#include <string>
#include <vector>

#include "launcher/cli_options.h"

namespace tlaunch::test {

inline ParsedCommandLine parse(std::vector<std::string> args) {
  args.insert(args.begin(), "tlaunch");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parseCommandLine(static_cast<int>(argv.size()), argv.data());
}

}  // namespace tlaunch::test

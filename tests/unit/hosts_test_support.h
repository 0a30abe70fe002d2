#pragma once
// Shared by the hosts-area unit tests: a scratch directory removed at the end of the test, and
// node targets named in order.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "launcher/daemon_starter.h"
#include "temp_dir.h"

namespace tlaunch::test {

using testing::TempDir;

// Node i is named names[i], with no ssh destination of its own.
inline std::vector<NodeTarget> targets(const std::vector<std::string>& names) {
  std::vector<NodeTarget> out;
  for (size_t i = 0; i < names.size(); ++i) out.push_back({static_cast<int>(i), names[i], "", {}});
  return out;
}

}  // namespace tlaunch::test

#pragma once
// One preflight finding, as data: daemons send lists of these to the frontend, which prints
// them as a table or JSON and stops the job on any failure.
#include <string>

namespace tlaunch {

enum class PreflightStatus { pass, warn, fail, skip };

struct PreflightItem {
  std::string check;   // stable id: "port_state", "memlock", ...
  std::string node;
  std::string device;  // "mlx4_0:1", "ib0" or ""
  PreflightStatus status = PreflightStatus::pass;
  std::string found;
  std::string expected;
  std::string fix;     // one line; empty when status is pass or skip
  bool operator==(const PreflightItem&) const = default;
};

}  // namespace tlaunch

// The preflight tests' lookup of one item of a report by check name (and device).
#pragma once

#include <string>
#include <vector>

#include "tlaunch/preflight_item.h"

namespace tlaunch::testing {

inline const PreflightItem* findItem(const std::vector<PreflightItem>& items, const std::string& check,
                                     const std::string& device = "") {
  for (const auto& i : items)
    if (i.check == check && i.device == device) return &i;
  return nullptr;
}

}  // namespace tlaunch::testing

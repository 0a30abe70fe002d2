#include "bootstrap/error_text.h"

#include <cstdio>

namespace tlaunch {

std::string describeError(const Error& e) { return e.hint.empty() ? e.message : e.message + "\n  -> " + e.hint; }

void printError(const Error& e) {
  const std::string text = "tlaunch: error: " + describeError(e) + "\n";
  std::fputs(text.c_str(), stderr);  // one write: not interleaved with other writers
}

}  // namespace tlaunch

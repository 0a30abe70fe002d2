#pragma once
// Reads a small text file the user named (a hostfile), with an error that names it.
#include <string>
#include <string_view>

#include "tlaunch/result.h"

namespace tlaunch {

// `what` names the file's role in messages ("hostfile"). Files over 64 MiB are refused.
Result<std::string> readTextFile(const std::string& path, std::string_view what);

}  // namespace tlaunch

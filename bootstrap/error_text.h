#pragma once
// How an Error reaches a user, the same everywhere: the message, then the hint on its own line
// behind an arrow. The frontend prints it as "tlaunch: error: ..."; a daemon's error travels
// to the frontend as message and hint and is printed there the same way.
#include <string>

#include "tlaunch/result.h"

namespace tlaunch {

// "message" or "message\n  -> hint".
std::string describeError(const Error& e);
// "tlaunch: error: <describeError>" on stderr.
void printError(const Error& e);

}  // namespace tlaunch

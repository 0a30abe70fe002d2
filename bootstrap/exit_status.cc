#include "tlaunch/result.h"

namespace tlaunch {

// Launcher failures use sysexits-style codes, well away from the 128+N of signals, so that a
// script can tell "tlaunch could not run the job" from "a rank failed". 126/127 follow the shell.
int exitStatusFor(Errc code) {
  switch (code) {
    case Errc::usage: return 64;  // EX_USAGE
    case Errc::program_missing: return 127;
    case Errc::program_not_executable: return 126;
    case Errc::node_unreachable:
    case Errc::node_lost: return 69;  // EX_UNAVAILABLE
    case Errc::protocol: return 76;  // EX_PROTOCOL
    case Errc::resources:
    case Errc::topology:
    case Errc::fabric:
    case Errc::preflight: return 78;  // EX_CONFIG
    case Errc::io: return 74;  // EX_IOERR
    case Errc::internal: return 70;  // EX_SOFTWARE
    case Errc::time_limit: return 124;  // as timeout(1)
  }
  return 70;
}

}  // namespace tlaunch

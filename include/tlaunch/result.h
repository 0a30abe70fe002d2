#pragma once
// Expected failures travel as values: Result<T> holds a T or an Error.
// Pure code (planners, parsers) returns Result and never logs; the caller that
// handles the error prints it once.
#include <string>
#include <utility>

#include <tl/expected.hpp>

namespace tlaunch {

enum class Errc {
  usage,            // bad flag, bad hostfile, inconsistent counts
  program_missing,  // the program to run does not exist on a node
  program_not_executable,
  node_unreachable,  // ssh/srun could not start a daemon, or it never connected
  node_lost,         // a daemon disappeared mid-job
  protocol,          // malformed frame, wrong version, failed authentication
  resources,         // GPUs short, cores short
  topology,          // hwloc could not load the topology
  fabric,            // no common fabric network, interface missing
  preflight,         // a node failed its checks
  io,                // a system call failed
  internal,
  time_limit,  // --time-limit ran out (appended: the values travel in messages)
};

struct Error {
  Errc code = Errc::internal;
  std::string message;  // what happened, naming the node when there is one
  std::string hint;     // what the user can do about it (may be empty)
};

template <class T>
using Result = tl::expected<T, Error>;

inline tl::unexpected<Error> fail(Errc code, std::string message, std::string hint = {}) {
  return tl::unexpected<Error>(Error{code, std::move(message), std::move(hint)});
}

// The frontend's exit status for an error of its own (not a rank's exit code).
int exitStatusFor(Errc code);

}  // namespace tlaunch

#pragma once
// The frontend's control socket: `tlaunch stacks` and `tlaunch status` from another terminal
// reach a running tlaunch through a unix socket in a 0700 directory of the user's
// ($XDG_RUNTIME_DIR/tlaunch, else ~/.cache/tlaunch, else /tmp/tlaunch-UID), named after the job.
// A request is one line ("stacks" or "status"); the answer is text, then the socket closes.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <asio.hpp>

#include "tlaunch/result.h"

namespace tlaunch {

// The directory, created 0700 if missing; an error if it is not ours or others may enter it.
Result<std::string> controlDirectory();

class ControlSocket {
 public:
  using Reply = std::function<void(std::string text)>;
  using Handler = std::function<void(const std::string& request, Reply reply)>;
  explicit ControlSocket(asio::io_context& io);
  ~ControlSocket();  // removes the socket file
  Result<void> open(const std::string& job_id, Handler handler);
  void close();
  const std::string& path() const { return path_; }

 private:
  void accept();
  asio::io_context& io_;
  asio::local::stream_protocol::acceptor acceptor_;
  std::string path_;
  Handler handler_;
};

// How a job's control socket answered a connection attempt.
enum class ControlReach {
  answering,  // connected
  busy,       // a listener whose queue is full: its tlaunch is stopped (Ctrl-Z) and accepts nothing
  gone,       // nothing listens: its tlaunch ended without removing the file (SIGKILL)
  failed,     // another error (no such file, permissions, a path too long): left alone
};
// Connects without ever blocking: once a stopped tlaunch's queue is full, a blocking connect()
// would wait for as long as it stays stopped. *fd: the connected descriptor (blocking,
// close-on-exec) when answering, -1 otherwise; the caller closes it.
ControlReach connectControlSocket(const std::string& path, int* fd);

// `tlaunch stacks|status [JOB]`: asks the job's tlaunch (the only one running, when JOB is
// empty), prints its answer; returns the exit status.
int runControlCommand(const std::string& request, const std::string& job);

}  // namespace tlaunch

// `tlaunch stacks` and `tlaunch status` reach a job's tlaunch through its control socket: a
// stopped tlaunch (Ctrl-Z) whose queue is full must be told apart at once, never waited for.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "launcher/control_socket.h"
#include "temp_dir.h"

using namespace tlaunch;

namespace {

// A unix stream socket bound to path, listening with that queue length (never accepting).
int listenAt(const std::string& path, int queue) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(s >= 0);
  REQUIRE(::bind(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(s, queue) == 0);
  return s;
}

ControlReach reach(const std::string& path) {
  int fd = -1;
  const ControlReach r = connectControlSocket(path, &fd);
  CHECK((fd >= 0) == (r == ControlReach::answering));
  if (fd >= 0) ::close(fd);
  return r;
}

}  // namespace

TEST_CASE("a job's control socket is answering, stopped with a full queue, or gone, told at once") {
  testing::TempDir dir{"tlaunch-control"};
  const std::string live = (dir.path() / "tl-live.sock").string();
  const std::string stopped = (dir.path() / "tl-stopped.sock").string();
  const std::string killed = (dir.path() / "tl-killed.sock").string();

  const int live_listener = listenAt(live, 16);
  CHECK(reach(live) == ControlReach::answering);

  // A tlaunch stopped with Ctrl-Z: its listener accepts nothing; earlier requests fill the queue.
  const int stopped_listener = listenAt(stopped, 1);
  std::vector<int> queued;
  for (int fd = -1; queued.size() < 64 && connectControlSocket(stopped, &fd) == ControlReach::answering;)
    queued.push_back(fd);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(reach(stopped) == ControlReach::busy);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));

  // A tlaunch killed with SIGKILL: the file stays, nothing listens.
  ::close(listenAt(killed, 1));
  CHECK(reach(killed) == ControlReach::gone);
  CHECK(reach((dir.path() / "tl-never.sock").string()) == ControlReach::failed);

  for (int fd : queued) ::close(fd);
  ::close(stopped_listener);
  ::close(live_listener);
}

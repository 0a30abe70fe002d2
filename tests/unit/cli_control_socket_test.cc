// `tlaunch stacks` and `tlaunch status` reach a job's tlaunch through its control socket: a
// stopped tlaunch (Ctrl-Z) whose queue is full must be told apart at once, never waited for.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <cstdlib>
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

// How often this thread has gone to sleep in the kernel (waited for something) so far. A call that
// never waits leaves it as it was, however loaded the machine: being preempted is counted apart
// (ru_nivcsw), and so is no time at all.
long waitsSoFar() {
  rusage usage{};
  REQUIRE(::getrusage(RUSAGE_THREAD, &usage) == 0);
  return usage.ru_nvcsw;
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
  // Told at once: the connection attempt never waits (a blocking connect would wait for as long as
  // the job stays stopped). Not a wall-clock bound, which a loaded machine exceeds without waiting.
  int fd = -1;
  const long waits = waitsSoFar();
  const ControlReach stopped_reach = connectControlSocket(stopped, &fd);
  CHECK(waitsSoFar() == waits);
  CHECK(stopped_reach == ControlReach::busy);
  CHECK(fd == -1);

  // A tlaunch killed with SIGKILL: the file stays, nothing listens.
  ::close(listenAt(killed, 1));
  CHECK(reach(killed) == ControlReach::gone);
  CHECK(reach((dir.path() / "tl-never.sock").string()) == ControlReach::failed);

  for (int fd : queued) ::close(fd);
  ::close(stopped_listener);
  ::close(live_listener);
}

TEST_CASE("a control socket client that says nothing is let go, and others are answered meanwhile") {
  testing::TempDir dir{"tlaunch-control"};
  const char* old_runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved = old_runtime ? old_runtime : "";
  ::setenv("XDG_RUNTIME_DIR", dir.path().c_str(), 1);
  asio::io_context io;
  ControlSocket control(io);
  std::vector<std::string> requests;
  REQUIRE(control.open("tl-silent", [&](const std::string& request, const ControlSocket::Reply& reply) {
    requests.push_back(request);
    reply("fine\n");
  }));
  int silent = -1;
  REQUIRE(connectControlSocket(control.path(), &silent) == ControlReach::answering);
  int asking = -1;
  REQUIRE(connectControlSocket(control.path(), &asking) == ControlReach::answering);
  REQUIRE(::write(asking, "status\n", 7) == 7);

  // Both connections end: the asking client's once it has its answer, the silent client's when
  // tlaunch lets it go (after 5 s). The test waits for both, however long a loaded machine takes;
  // the bound only ends a wait that would never end (no request timeout at all), as a failure.
  std::string answer;
  bool answered = false, closed = false;
  const auto t0 = std::chrono::steady_clock::now();
  while (!(answered && closed) && std::chrono::steady_clock::now() - t0 < std::chrono::minutes(2)) {
    io.run_for(std::chrono::milliseconds(100));
    char buf[16];
    ssize_t n = 0;
    while (!answered && (n = ::recv(asking, buf, sizeof buf, MSG_DONTWAIT)) > 0) answer.append(buf, static_cast<size_t>(n));
    answered = answered || n == 0;
    closed = closed || ::recv(silent, buf, 1, MSG_DONTWAIT) == 0;
  }
  CHECK(closed);
  CHECK(answered);
  CHECK(requests == std::vector<std::string>{"status"});
  CHECK(answer == "fine\n");
  ::close(silent);
  ::close(asking);
  if (old_runtime) ::setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  else ::unsetenv("XDG_RUNTIME_DIR");
}

// A killed tlaunch leaves its socket; the next job's removes it (the directory kept one per killed
// job), but not a live job's, nor one bound a moment ago that may not listen yet.
TEST_CASE("a job's control socket removes the sockets killed tlaunches left, older than a minute") {
  testing::TempDir dir{"tlaunch-control"};
  const char* old_runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved = old_runtime ? old_runtime : "";
  ::setenv("XDG_RUNTIME_DIR", dir.path().c_str(), 1);
  auto control = controlDirectory();
  REQUIRE(control);
  const std::string killed_old = *control + "/tl-killedold.sock";
  const std::string killed_new = *control + "/tl-killednew.sock";
  const std::string live_old = *control + "/tl-liveold.sock";
  ::close(listenAt(killed_old, 1));
  ::close(listenAt(killed_new, 1));
  const int live_listener = listenAt(live_old, 4);
  const timespec hour_ago[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  REQUIRE(::utimensat(AT_FDCWD, killed_old.c_str(), hour_ago, AT_SYMLINK_NOFOLLOW) == 0);
  REQUIRE(::utimensat(AT_FDCWD, live_old.c_str(), hour_ago, AT_SYMLINK_NOFOLLOW) == 0);
  {
    asio::io_context io;
    ControlSocket socket(io);
    REQUIRE(socket.open("tl-new", [](const std::string&, const ControlSocket::Reply&) {}));
    CHECK(::access(killed_old.c_str(), F_OK) != 0);
    CHECK(::access(killed_new.c_str(), F_OK) == 0);
    CHECK(reach(live_old) == ControlReach::answering);
  }
  ::close(live_listener);
  if (old_runtime) ::setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  else ::unsetenv("XDG_RUNTIME_DIR");
}

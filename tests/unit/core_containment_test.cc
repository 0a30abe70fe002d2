// The pieces of process containment and descriptor hygiene that can be tested without a job:
// /proc parsing and descendant walks, the close-range fallback, the saved RLIMIT_NOFILE.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bootstrap/close_fds.h"
#include "bootstrap/process_hygiene.h"
#include "daemon/containment.h"
#include "daemon/descendants.h"
#include "daemon/signal_catchers.h"
#include "bootstrap/spawn.h"
#include "daemon/job_cgroup.h"
#include "daemon/job_marked_processes.h"
#include "temp_dir.h"

using namespace tlaunch;

TEST_CASE("parseProcStat reads state, parent and group, whatever the command name") {
  ProcEntry e;
  REQUIRE(parseProcStat("1234 (we ird) (name)) S 1 1234 1234 0 -1 4194560 107 0", e));
  CHECK(e.pid == 1234);
  CHECK(e.state == 'S');
  CHECK(e.ppid == 1);
  CHECK(e.pgid == 1234);
  REQUIRE(parseProcStat("77 (sleep) Z 12 70 70 0", e));
  CHECK(e.state == 'Z');
  CHECK(e.ppid == 12);
  CHECK_FALSE(parseProcStat("", e));
  CHECK_FALSE(parseProcStat("abc (x) S 1 2", e));
  CHECK_FALSE(parseProcStat("12 (x)", e));
}

TEST_CASE("descendantsOf follows parent links, not process groups or sessions") {
  std::vector<ProcEntry> procs{{1, 0, 1, 'S'},   {10, 1, 10, 'S'}, {11, 10, 11, 'S'}, {12, 11, 99, 'S'},
                               {13, 10, 13, 'Z'}, {20, 1, 20, 'S'}, {21, 20, 21, 'S'}};
  auto d = descendantsOf(10, procs);
  std::vector<pid_t> pids;
  for (const auto& p : d) pids.push_back(p.pid);
  std::sort(pids.begin(), pids.end());
  CHECK(pids == std::vector<pid_t>{11, 12, 13});
  CHECK(descendantsOf(21, procs).empty());
  // The live system: a child of ours is found.
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();
    _exit(0);
  }
  auto mine = descendantsOf(::getpid(), listProcesses());
  CHECK(std::any_of(mine.begin(), mine.end(), [&](const ProcEntry& p) { return p.pid == child && p.ppid == ::getpid(); }));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // Pruned: the process and everything below it are left out.
  auto pruned = descendantsOf(10, procs, [](pid_t pid) { return pid == 11; });
  pids.clear();
  for (const auto& p : pruned) pids.push_back(p.pid);
  CHECK(pids == std::vector<pid_t>{13});
}

namespace {
pid_t sleepingChild() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGTERM, SIG_DFL);  // not Catch2's handler, which would report a failure from here
    ::pause();
    _exit(0);
  }
  return pid;
}
}  // namespace

// An interior daemon of the tree runs the ssh sessions that start its children: they are its
// children too, but not the job's. Containment once reaped them (their owner then lost the exit
// status it reports a failed start with) and SIGTERMed and SIGKILLed them at teardown.
TEST_CASE("Containment leaves the daemon's own children alone: not counted, signalled or reaped") {
  ::setenv("TLAUNCH_CONTAINMENT", "subreaper", 1);  // no per-job cgroup in a unit test
  REQUIRE(Containment::prepareProcess());
  asio::io_context io;
  const pid_t outsider = sleepingChild(), job = sleepingChild();
  REQUIRE(outsider > 0);
  REQUIRE(job > 0);
  {
    Containment c(io, "tlaunch.unit", [](pid_t) { return false; });
    c.leaveAlone([outsider](pid_t pid) { return pid == outsider; });
    CHECK(c.count() == 1);  // the job's process only
    c.signalOthers(SIGTERM, {});
    // The job's process dies and Containment reaps it on SIGCHLD (a zombie would still answer kill 0).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::kill(job, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
      io.run_for(std::chrono::milliseconds(20));
      io.restart();
    }
    CHECK(::kill(job, 0) != 0);
    CHECK(::kill(outsider, 0) == 0);  // not signalled
    ::kill(outsider, SIGKILL);
    io.restart();
    io.run_for(std::chrono::milliseconds(300));  // its SIGCHLD: Containment must not reap it
    int status = 0;
    CHECK(::waitpid(outsider, &status, 0) == outsider);  // its owner still can
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  }
  ::unsetenv("TLAUNCH_CONTAINMENT");
}

TEST_CASE("ownChildren: this process's children, an ended one until it is reaped, none where the kernel has no list") {
  const pid_t a = sleepingChild(), b = sleepingChild();
  REQUIRE(a > 0);
  REQUIRE(b > 0);
  auto has = [](pid_t pid) {
    auto children = ownChildren();
    REQUIRE(children);
    return std::find(children->begin(), children->end(), pid) != children->end();
  };
  CHECK(has(a));
  CHECK(has(b));
  ::kill(a, SIGKILL);
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(a), &info, WEXITED | WNOWAIT) == 0);
  CHECK(has(a));  // a zombie is still a child: reapOrphans finds it here
  int status = 0;
  REQUIRE(::waitpid(a, &status, 0) == a);
  CHECK_FALSE(has(a));
  ::kill(b, SIGKILL);
  REQUIRE(::waitpid(b, &status, 0) == b);

  // The files' form: space-separated pids per thread; a kernel without them gives nullopt.
  testing::TempDir tmp{"tlaunch-children"};
  const std::string task = tmp.path().string() + "/task";
  ::mkdir(task.c_str(), 0755);
  for (const char* tid : {"100", "101"}) ::mkdir((task + "/" + tid).c_str(), 0755);
  std::ofstream(task + "/100/children") << "12 34 ";
  std::ofstream(task + "/101/children") << "";
  auto listed = ownChildren(task);
  REQUIRE(listed);
  std::sort(listed->begin(), listed->end());
  CHECK(*listed == std::vector<pid_t>{12, 34});
  ::mkdir((task + "/102").c_str(), 0755);  // a thread without the file
  CHECK_FALSE(ownChildren(task));
  CHECK_FALSE(ownChildren(tmp.path().string() + "/none"));
}

TEST_CASE("closeListedFds closes every listed descriptor but the one kept (close_range fallback)") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const int extra = ::dup(p[0]);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (!closeListedFds(3, p[1])) _exit(2);
    bool ok = ::fcntl(p[0], F_GETFD) < 0 && ::fcntl(extra, F_GETFD) < 0 && ::fcntl(p[1], F_GETFD) >= 0 &&
              ::fcntl(0, F_GETFD) >= 0;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  ::close(p[0]);
  ::close(p[1]);
  ::close(extra);
}

TEST_CASE("markCloseOnExec sets FD_CLOEXEC") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  CHECK_FALSE(::fcntl(p[0], F_GETFD) & FD_CLOEXEC);
  markCloseOnExec(p[0]);
  CHECK(::fcntl(p[0], F_GETFD) & FD_CLOEXEC);
  ::close(p[0]);
  ::close(p[1]);
}

TEST_CASE("restoreUserNofile puts back the soft limit, keeping the hard one") {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    struct rlimit lim {};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    if (lim.rlim_max < 64) _exit(0);
    struct rlimit user = lim;
    user.rlim_cur = 64;
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
    restoreUserNofile(user);
    struct rlimit now {};
    ::getrlimit(RLIMIT_NOFILE, &now);
    _exit(now.rlim_cur == 64 && now.rlim_max == lim.rlim_max ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("processStartTime names a live process, nothing for a gone one") {
  CHECK_FALSE(processStartTime(::getpid()).empty());
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  ::waitpid(child, nullptr, 0);
  CHECK(processStartTime(child).empty());
}

TEST_CASE("JobCgroup: ranks join it, cgroup.kill ends them, a dead daemon's cgroup is removed") {
  const std::string own = ownCgroupV2Dir();
  if (own.empty() || ::access(own.c_str(), W_OK) != 0) {
    WARN("no writable cgroup v2 here: the per-job cgroup is not tested");
    return;
  }
  // A dead daemon's cgroup (same pid namespace, a pid that exited) and a live one's.
  struct stat ns {};
  REQUIRE(::stat("/proc/self/ns/pid", &ns) == 0);
  pid_t gone = ::fork();
  REQUIRE(gone >= 0);
  if (gone == 0) _exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string dead = own + "/tlaunch.unit-dead.n1." + std::to_string(ns.st_ino) + "-" + std::to_string(gone) + "-1";
  const std::string live = own + "/tlaunch.unit-live.n1." + std::to_string(ns.st_ino) + "-" + std::to_string(::getpid()) +
                           "-" + processStartTime(::getpid());
  const std::string other_ns = own + "/tlaunch.unit-ns.n1.1-" + std::to_string(gone) + "-1";
  for (const auto& d : {dead, live, other_ns}) REQUIRE(::mkdir(d.c_str(), 0700) == 0);

  std::string why_not;
  auto cg = JobCgroup::create("tlaunch.unit-test.n1", why_not);
  if (!cg) {
    for (const auto& d : {dead, live, other_ns}) ::rmdir(d.c_str());
    WARN("no per-job cgroup: " + why_not);
    return;
  }
  CHECK(::access(dead.c_str(), F_OK) != 0);      // its daemon is gone
  CHECK(::access(live.c_str(), F_OK) == 0);      // its daemon (we) is alive
  CHECK(::access(other_ns.c_str(), F_OK) == 0);  // another pid namespace: not ours to judge
  ::rmdir(live.c_str());
  ::rmdir(other_ns.c_str());

  // A rank is born inside (clone3 into the cgroup's directory; no cgroup.procs written), where
  // the kernel lets such a child live (JobCgroup::create tried).
  if (cg->dirFd() >= 0) {
    SpawnSpec spec;
    spec.exe = "/bin/sleep";
    spec.argv = {"sleep", "30"};
    spec.env = {"PATH=/usr/bin:/bin"};
    spec.stdout_pipe = spec.stderr_pipe = false;
    spec.cgroup_dir_fd = cg->dirFd();
    auto born = spawnProcess(spec);
    REQUIRE(born);
    CHECK(cg->members() == std::vector<pid_t>{born->pid});
    ::kill(born->pid, SIGKILL);
    REQUIRE(::waitpid(born->pid, nullptr, 0) == born->pid);
    if (born->pidfd >= 0) ::close(born->pidfd);
    for (int i = 0; i < 100 && cg->populated(); ++i) ::usleep(10000);
  } else {
    WARN("children born into a cgroup do not live on this kernel: ranks join through cgroup.procs");
  }

  const int procs = cg->procsFd();
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::write(procs, "0", 1) != 1) _exit(1);
    if (::fork() == 0) ::setsid();  // a grandchild in a session of its own: still inside
    ::pause();
    _exit(0);
  }
  for (int i = 0; i < 100 && cg->members().size() < 2; ++i) ::usleep(10000);
  auto members = cg->members();
  CHECK(members.size() == 2);
  CHECK(std::find(members.begin(), members.end(), child) != members.end());
  CHECK(cg->populated());
  CHECK(cg->killAll());
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  for (int i = 0; i < 100 && cg->populated(); ++i) ::usleep(10000);
  CHECK_FALSE(cg->populated());

  const std::string path = cg->path();
  CHECK(cg->remove());
  CHECK(::access(path.c_str(), F_OK) != 0);
}

TEST_CASE("JobCgroup: where the kernel kills children born into it, ranks join through cgroup.procs instead") {
  // Linux 6.18 kills a child born into a cgroup (clone3 CLONE_INTO_CGROUP) when the parent's
  // cgroup has had a cgroup.kill and the target has not. A daemon in such a cgroup must notice
  // and not use births there (its ranks would all die of SIGKILL at start).
  const std::string own = ownCgroupV2Dir();
  if (own.empty() || ::access(own.c_str(), W_OK) != 0) {
    WARN("no writable cgroup v2 here: not tested");
    return;
  }
  const std::string killed = own + "/tlaunch.unit-killed." + std::to_string(::getpid());
  REQUIRE(::mkdir(killed.c_str(), 0700) == 0);
  // Whatever happens below: the job cgroup the child made inside, then this one.
  struct RemoveAfter {
    std::string dir;
    ~RemoveAfter() {
      if (DIR* d = ::opendir(dir.c_str())) {
        std::vector<std::string> inner;
        while (const dirent* e = ::readdir(d))
          if (std::string(e->d_name).rfind("tlaunch.", 0) == 0) inner.push_back(dir + "/" + e->d_name);
        ::closedir(d);
        for (const auto& i : inner) killAndRemoveCgroup(i);
      }
      killAndRemoveCgroup(dir);
    }
  } remove_after{killed};
  std::ofstream(killed + "/cgroup.kill") << "1";  // empty: kills nothing, counts one kill
  constexpr int kSkipped = 6;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // In a child of our own, so that the test process never leaves its cgroup.
    { std::ofstream(killed + "/cgroup.procs") << "0"; }
    if (ownCgroupV2Dir() != killed) _exit(kSkipped);
    std::string why_not;
    auto cg = JobCgroup::create("tlaunch.unit-killed-parent.n1", why_not);
    if (!cg) _exit(kSkipped);
    SpawnSpec spec;
    spec.exe = "/bin/true";
    spec.argv = {"true"};
    spec.stdout_pipe = spec.stderr_pipe = false;
    spec.cgroup_dir_fd = cg->dirFd();
    spec.cgroup_procs_fd = cg->procsFd();
    auto p = spawnProcess(spec);
    int st = 0;
    const bool reaped = p && ::waitpid(p->pid, &st, 0) == p->pid;
    cg.reset();  // removes its directory (_exit runs no destructors)
    if (!reaped) _exit(4);
    _exit(WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 5);  // 5: killed at birth
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kSkipped) {
    WARN("could not move a process into a cgroup of its own or make a job cgroup there: not tested");
    return;
  }
  CHECK(WEXITSTATUS(status) == 0);
}

namespace {
// /bin/sleep with exactly `env`: /proc/<pid>/environ shows what exec was given.
pid_t sleepWithEnvironment(std::vector<std::string> env) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char sleep_path[] = "/bin/sleep", seconds[] = "30";
    char* argv[] = {sleep_path, seconds, nullptr};
    ::execve(sleep_path, argv, envp.data());
    _exit(127);
  }
  return pid;
}
}  // namespace

// A daemon killed -9 without a per-job cgroup: its watcher finds what the ranks left by the
// marks they carry, every one of them exactly (a longer job id, another node of the same job on
// this host, another variable holding the text, are not it).
TEST_CASE("job-marked processes: found by every mark of their environment, and killed") {
  const std::string job = "TLAUNCH_JOB_ID=unit-mark-" + std::to_string(::getpid());
  const std::vector<std::string> marks{job, "TLAUNCH_NODE_RANK=1"};
  const pid_t marked = sleepWithEnvironment({"A=1", job, "TLAUNCH_NODE_RANK=1", "Z=2"});
  const pid_t longer = sleepWithEnvironment({job + "-r1", "TLAUNCH_NODE_RANK=1"});
  const pid_t other_node = sleepWithEnvironment({job, "TLAUNCH_NODE_RANK=0"});
  const pid_t other = sleepWithEnvironment({"X" + job, "NOTE=" + job, "TLAUNCH_NODE_RANK=1"});
  REQUIRE((marked > 0 && longer > 0 && other_node > 0 && other > 0));
  std::vector<pid_t> found;
  for (int i = 0; i < 100 && found.empty(); ++i) {  // until the exec has happened
    ::usleep(10000);
    found = processesWithEnvironmentEntries(marks, ::geteuid(), ::getpid());
  }
  CHECK(found == std::vector<pid_t>{marked});
  CHECK(processesWithEnvironmentEntries(marks, ::geteuid() + 1, ::getpid()).empty());  // not ours
  CHECK(processesWithEnvironmentEntries({}, ::geteuid(), ::getpid()).empty());        // no marks, no one
  killMarkedProcesses(marks);
  int status = 0;
  REQUIRE(::waitpid(marked, &status, 0) == marked);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  for (pid_t pid : {longer, other_node, other}) CHECK(::waitpid(pid, &status, WNOHANG) == 0);  // still running
  for (pid_t pid : {longer, other_node, other}) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
}

// Under hidepid the daemon cannot see its user's processes that are not dumpable: -v says so
// where no cgroup makes up for it. The mount on /proc that counts is the last one.
TEST_CASE("procHidesPids reads /proc's hidepid from mountinfo") {
  const std::string plain = "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n";
  const std::string hidden = "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw,hidepid=invisible\n";
  CHECK_FALSE(procHidesPids(plain));
  CHECK(procHidesPids(hidden));
  CHECK(procHidesPids("23 1 0:22 / /proc rw - proc proc rw,hidepid=2,gid=10\n"));
  CHECK_FALSE(procHidesPids("23 1 0:22 / /proc rw - proc proc rw,hidepid=0\n"));
  CHECK_FALSE(procHidesPids("23 1 0:22 / /proc rw - proc proc rw,hidepid=off\n"));
  CHECK_FALSE(procHidesPids(hidden + "40 22 0:33 / /proc rw - proc proc rw\n"));  // mounted over again, plainly
  CHECK_FALSE(procHidesPids("50 1 0:40 / /srv/proc rw - proc proc rw,hidepid=2\n"));  // not /proc
  CHECK_FALSE(procHidesPids("60 1 0:41 / /proc rw - tmpfs tmpfs rw,hidepid=2\n"));   // not procfs
  CHECK_FALSE(procHidesPids(""));
}

TEST_CASE("a passed-on signal goes to the processes of the rank's group that catch it, else to the rank") {
  // /proc/<pid>/status's mask: bit sig-1. 0x200 = SIGUSR1 (10), 0x800 = SIGUSR2 (12).
  CHECK(catchesSignal("\nName:\tpython3\nSigCgt:\t0000000000000200\n", SIGUSR1));
  CHECK_FALSE(catchesSignal("\nName:\tpython3\nSigCgt:\t0000000000000200\n", SIGUSR2));
  CHECK(catchesSignal("\nSigCgt:\t0000000180004a02\n", SIGUSR2));
  CHECK_FALSE(catchesSignal("\nSigIgn:\t0000000000000200\n", SIGUSR1));  // ignoring is not catching
  CHECK_FALSE(catchesSignal("", SIGUSR1));
  CHECK_FALSE(catchesSignal("\nSigCgt:\tzz\n", SIGUSR1));

  // The rank (100) is `sh train.sh`, which runs python (101, catches SIGUSR1), which forked two
  // data-loader workers (102, 103) that inherited its handler; 104 left the group (setsid).
  const std::string usr1 = "\nSigCgt:\t0000000000000200\n";
  const std::vector<ProcEntry> procs{{100, 1, 100, 'S'}, {101, 100, 100, 'S'}, {102, 101, 100, 'S'},
                                     {103, 101, 100, 'S'}, {104, 101, 104, 'S'}, {105, 1, 105, 'S'}};
  std::map<pid_t, std::string> status{{101, usr1}, {102, usr1}, {103, usr1}, {104, usr1}};
  auto statusOf = [&](pid_t pid) { return status.count(pid) ? status[pid] : std::string("\nSigCgt:\t0\n"); };
  CHECK(forwardTargets(100, SIGUSR1, procs, statusOf) == std::vector<pid_t>{101});  // once, to the script
  CHECK(forwardTargets(100, SIGUSR2, procs, statusOf) == std::vector<pid_t>{100});  // nobody catches it: the rank
  // A wrapper that traps SIGUSR1 to pass it on (`trap 'kill -USR1 $child' USR1`): the wrapper alone.
  status[100] = usr1;
  CHECK(forwardTargets(100, SIGUSR1, procs, statusOf) == std::vector<pid_t>{100});
  // Two scripts side by side under a wrapper that does not catch it: each once.
  status.erase(100);
  const std::vector<ProcEntry> two{{100, 1, 100, 'S'}, {101, 100, 100, 'S'}, {106, 100, 100, 'S'}, {107, 106, 100, 'S'}};
  status[106] = usr1;
  status[107] = usr1;
  CHECK(forwardTargets(100, SIGUSR1, two, statusOf) == std::vector<pid_t>{101, 106});

  // The teardown's SIGTERM (0x4000 = bit 14). 100 is `sh train.sh`, 101 its python, 102 and 103
  // the python's data-loader workers (they inherit its handler).
  const std::string term = "\nSigCgt:\t0000000000004000\n";
  std::map<pid_t, std::string> teardown{{101, term}, {102, term}, {103, term}};
  auto teardownStatus = [&](pid_t pid) { return teardown.count(pid) ? teardown[pid] : std::string("\nSigCgt:\t0\n"); };
  auto nameOf = [](pid_t pid) { return std::string(pid == 100 ? "sh" : "python3"); };
  // The script checkpoints on SIGTERM: it alone; neither its workers (they would die first and
  // torch's SIGCHLD handler raise in the script) nor the wrapper shell (it would die at once).
  CHECK(teardownTargets(100, procs, teardownStatus, nameOf) == std::vector<pid_t>{101});
  // A shell with a trap (`trap cleanup EXIT` catches SIGTERM too, and dies of it at once, its
  // script swept with it): still the script alone; the shell's trap runs when it ends.
  teardown[100] = term;
  CHECK(teardownTargets(100, procs, teardownStatus, nameOf) == std::vector<pid_t>{101});
  // A helper beside the script that does not catch it (`python train.py & monitor & wait`): it too.
  teardown.erase(100);
  const std::vector<ProcEntry> beside{{100, 1, 100, 'S'}, {101, 100, 100, 'S'}, {102, 101, 100, 'S'}, {106, 100, 100, 'S'}};
  CHECK(teardownTargets(100, beside, teardownStatus, nameOf) == std::vector<pid_t>{101, 106});
  // The rank's own program catches it (no wrapper): it alone, its workers are its own.
  auto python = [](pid_t) { return std::string("python3"); };
  teardown[100] = term;
  CHECK(teardownTargets(100, procs, teardownStatus, python) == std::vector<pid_t>{100});
  teardown.clear();  // nobody catches it: the whole group at once, as a plain job wants
  CHECK(teardownTargets(100, procs, teardownStatus, nameOf) == std::vector<pid_t>{-100});

  SECTION("a real process that catches SIGUSR1 shows it in its status; one that does not, does not") {
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::signal(SIGUSR1, [](int) {});
      ::pause();
      ::_exit(0);
    }
    bool seen = false;
    for (int i = 0; i < 200 && !seen; ++i) {
      seen = catchesSignal(procStatus(child), SIGUSR1);
      if (!seen) ::usleep(10000);
    }
    CHECK(seen);
    CHECK_FALSE(catchesSignal(procStatus(::getpid()), SIGUSR2));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }
}

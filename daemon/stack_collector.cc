#include "daemon/stack_collector.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "daemon/rank_spawner.h"
#include "daemon/stack_target.h"

namespace tlaunch {

extern "C" char** environ;

struct StackCollector::Run {
  std::vector<Target> targets;
  size_t next = 0;
  size_t finished = 0;
  Json results = Json::array();
  Done done;
};

struct StackCollector::Probe {
  std::shared_ptr<Run> run;
  size_t slot = 0;
  pid_t pid = -1;      // gdb's
  pid_t target = -1;   // the process it attaches to: the rank, or the program it wraps
  StackTarget wrapped;  // the rank's wrapper and its program, where it is one
  WrapperOnly wrapper_only = WrapperOnly::no;
  bool was_stopped = false;  // stopped before gdb came (a user's SIGSTOP): left so after it
  bool python = false;
  std::unique_ptr<asio::posix::stream_descriptor> out;
  std::array<char, 16384> buf{};
  std::string text;
  bool cut = false;  // more than kMaxOutput came: the rest was dropped
  std::unique_ptr<asio::steady_timer> timer;
  bool timed_out = false;
  bool done = false;      // gdb is gone (reaped), or never came
  bool finished = false;  // its result is in (once)
};

namespace {

constexpr size_t kMaxOutput = 4u << 20;  // a process with thousands of threads: keep the start (thread 1 first)

std::string readFirstLine(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// The process tracing `pid` (its TracerPid), or 0.
pid_t tracerOf(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.starts_with("TracerPid:")) return static_cast<pid_t>(std::atol(line.c_str() + 10));
  return 0;
}

// Why ptrace was refused for `target`, in words a user can act on.
std::string ptraceRefusal(pid_t target) {
  std::string why = "gdb may not attach (ptrace: Operation not permitted)";
  // A process has one tracer: one already there (strace, a debugger, py-spy --native) is the reason.
  if (const pid_t tracer = tracerOf(target); tracer > 0)
    return why + "; the process is traced already, by PID " + std::to_string(tracer) + " (" +
           readFirstLine("/proc/" + std::to_string(tracer) + "/comm") + "): a process has one tracer at a time";
  const std::string scope = readFirstLine("/proc/sys/kernel/yama/ptrace_scope");
  if (scope == "1")
    return why + "; kernel.yama.ptrace_scope=1 and the rank did not accept tlaunchd as its tracer (it may have reset it, "
                 "or made itself non-dumpable)";
  if (scope == "2") return why + "; kernel.yama.ptrace_scope=2: only root (CAP_SYS_PTRACE) may attach";
  if (scope == "3") return why + "; kernel.yama.ptrace_scope=3: attaching is disabled until reboot";
  return why + "; a container without CAP_SYS_PTRACE or a seccomp profile that forbids ptrace would explain it";
}

// Whether gdb, a child of tlaunchd, may attach to a process a rank started: Yama's
// ptrace_scope 1 admits a rank only by its own tracer exception (not inherited by its
// children), unless tlaunchd has CAP_SYS_PTRACE.
bool mayTraceRanksChildren() {
  const std::string scope = readFirstLine("/proc/sys/kernel/yama/ptrace_scope");
  if (scope.empty() || scope == "0") return true;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("CapEff:", 0) == 0) {
      constexpr unsigned kCapSysPtrace = 19;
      return ((std::stoull(line.substr(7), nullptr, 16) >> kCapSysPtrace) & 1U) != 0;
    }
  return false;
}

}  // namespace

// gdb gone (done, killed, or its collection cancelled): the stop of its attach may still be
// pending in the target, and would hold the rank stopped for good (through a SIGTERM's
// checkpoint, until SIGKILL). A process stopped before gdb came stays stopped.
void StackCollector::release(const Probe& p) {
  if (p.target > 0 && !p.was_stopped) ::kill(p.target, SIGCONT);
}

StackCollector::StackCollector(asio::io_context& io, std::string node_name, std::chrono::milliseconds timeout)
    : io_(io), node_name_(std::move(node_name)), timeout_(timeout) {}

StackCollector::~StackCollector() { stopGdbs(); }

void StackCollector::stopGdbs() {
  for (auto& p : running_) {
    if (p->done || p->pid <= 0) continue;
    ::kill(-p->pid, SIGKILL);
    // Reaped within 2 s at most: a gdb in uninterruptible sleep must not freeze the daemon.
    int st = 0;
    for (int i = 0; i < 200 && ::waitpid(p->pid, &st, WNOHANG) == 0; ++i) ::usleep(10'000);
    release(*p);
    p->done = true;
    asio::error_code ignore;
    if (p->out) p->out->close(ignore);
    try {
      if (p->timer) p->timer->cancel();
    } catch (const std::exception&) {  // asio throws where the reactor refuses: its callback checks done
    }
  }
}

void StackCollector::cancel(const std::string& why) {
  cancelled_ = why;
  auto probes = running_;
  stopGdbs();
  running_.clear();
  for (auto& p : probes) finishProbe(p, why);  // and every slot not started yet (startNext)
  while (!queued_.empty()) {  // each answered at once, with `why` for every rank
    auto [targets, done] = std::move(queued_.front());
    queued_.pop_front();
    begin(std::move(targets), std::move(done));
  }
}

void StackCollector::collect(std::vector<Target> targets, Done done) {
  // One collection at a time: a second gdb on a rank the first one holds would take its stop
  // for the user's, and leave the rank stopped.
  if (active_) {
    queued_.emplace_back(std::move(targets), std::move(done));
    return;
  }
  begin(std::move(targets), std::move(done));
}

void StackCollector::begin(std::vector<Target> targets, Done done) {
  auto run = std::make_shared<Run>();
  run->targets = std::move(targets);
  run->results = Json::array();
  for (size_t i = 0; i < run->targets.size(); ++i) run->results.push_back(Json::object());
  run->done = std::move(done);
  if (run->targets.empty()) {
    run->done(std::move(run->results));
    return;
  }
  active_ = run;
  for (size_t i = 0; i < kParallel; ++i) startNext(run);
}

void StackCollector::startNext(const std::shared_ptr<Run>& run) {
  if (run->next >= run->targets.size()) return;
  const size_t slot = run->next++;
  if (!cancelled_.empty()) {  // the job is ending: no gdb stops its ranks now
    auto p = std::make_shared<Probe>();
    p->run = run;
    p->slot = slot;
    return finishProbe(p, cancelled_);
  }
  startProbe(run, slot, WrapperOnly::no);
}

void StackCollector::startProbe(const std::shared_ptr<Run>& run, size_t slot, WrapperOnly wrapper_only) {
  auto p = std::make_shared<Probe>();
  p->run = run;
  p->slot = slot;
  if (!cancelled_.empty()) return finishProbe(p, cancelled_);  // a retry on a wrapper, after cancel()
  const pid_t rank_pid = run->targets[slot].pid;
  // Found now, not when the request came: a wrapper's child may have ended (and its pid been
  // reused) while the probes before this one ran.
  const auto procs = listProcesses();
  p->wrapped = stackTargetOf(rank_pid, procs, processExeName);
  p->wrapper_only = wrapper_only;
  if (p->wrapped.wrapper.empty()) p->wrapper_only = WrapperOnly::no;
  else if (wrapper_only == WrapperOnly::no && !mayTraceRanksChildren()) p->wrapper_only = WrapperOnly::refused;
  const pid_t pid = p->wrapper_only == WrapperOnly::no ? p->wrapped.pid : rank_pid;
  p->target = pid;
  const auto entry = std::find_if(procs.begin(), procs.end(), [pid](const ProcEntry& e) { return e.pid == pid; });
  p->was_stopped = entry != procs.end() && (entry->state == 'T' || entry->state == 't');
  const char* path = std::getenv("PATH");
  auto gdb = resolveProgram("gdb", path ? path : "/usr/bin:/bin", "/", node_name_);
  if (!gdb) return finishProbe(p, "gdb is not installed on node " + node_name_ + " (Debian: apt install gdb)");
  p->python = processExeName(pid).starts_with("python");
  RankLaunch l;
  l.rank = run->targets[slot].rank;
  l.exe_path = "/bin/sh";
  // gdb's errors (ptrace refused, no py-bt) go to stderr: one pipe for both, in order.
  // Thread 1 (the main thread) first, and the Python frames (a few lines a thread) before the
  // native ones: a process of thousands of threads fills kMaxOutput, and what is cut is the
  // native stacks of its last threads (launcher/stack_merge.cc joins a thread's two passes).
  l.argv = {"sh", "-c", "exec \"$0\" \"$@\" 2>&1", *gdb, "-nx", "-batch", "-iex", "set debuginfod enabled off",
            "-ex", "set pagination off"};
  if (p->python) l.argv.insert(l.argv.end(), {"-ex", "thread apply all -ascending py-bt"});
  l.argv.insert(l.argv.end(), {"-ex", "thread apply all -ascending bt"});
  l.argv.insert(l.argv.end(), {"-p", std::to_string(pid)});
  for (char** e = environ; *e; ++e) l.env.emplace_back(*e);
  l.env.emplace_back("LC_ALL=C");  // gdb's messages as this parser knows them
  l.cwd = "/";
  auto proc = spawnRank(l);
  if (!proc) return finishProbe(p, "gdb did not start: " + proc.error().message);
  ::close(proc->stderr_fd);
  if (proc->pidfd >= 0) ::close(proc->pidfd);  // waited for after its output ends
  p->pid = proc->pid;
  p->out = std::make_unique<asio::posix::stream_descriptor>(io_, proc->stdout_fd);
  p->timer = std::make_unique<asio::steady_timer>(io_, timeout_);
  p->timer->async_wait([p, probed = pid](const asio::error_code& ec) {
    if (ec || p->done) return;
    // gdb holds the rank stopped while it walks the stacks: kill it and let the rank go on.
    p->timed_out = true;
    ::kill(-p->pid, SIGKILL);
    ::kill(probed, SIGCONT);
  });
  running_.push_back(p);
  readOutput(p);
}

void StackCollector::readOutput(const std::shared_ptr<Probe>& p) {
  p->out->async_read_some(asio::buffer(p->buf), [this, p](const asio::error_code& ec, size_t n) {
    if (ec == asio::error::operation_aborted || p->done) return;
    if (!ec) {
      if (!p->cut && p->text.size() + n > kMaxOutput) {
        p->text.append(p->buf.data(), kMaxOutput - p->text.size());
        p->cut = true;
        // The thread it was cut in goes whole: a stack without its innermost frames is no class.
        if (const size_t last = p->text.rfind("\nThread "); last != std::string::npos) p->text.resize(last + 1);
      } else if (!p->cut) {
        p->text.append(p->buf.data(), n);
      }
      return readOutput(p);
    }
    reapGdb(p, 0);
  });
}

void StackCollector::reapGdb(const std::shared_ptr<Probe>& p, int attempt) {
  // Its output has ended: gdb is exiting. Waited for on a timer, never blocking the io thread.
  int st = 0;
  if (::waitpid(p->pid, &st, WNOHANG) == 0) {
    if (attempt >= 200) ::kill(-p->pid, SIGKILL);
    p->timer->expires_after(std::chrono::milliseconds(5));
    p->timer->async_wait([this, p, attempt](const asio::error_code& ec) {
      // Already queued when cancel() reaped it: nothing more to do for it.
      if (ec != asio::error::operation_aborted && !p->done) reapGdb(p, attempt + 1);
    });
    return;
  }
  release(*p);
  std::string error;
  if (p->timed_out) error = "gdb did not finish within " + std::to_string(timeout_.count() / 1000) + " s";
  else if (p->text.find("ptrace: Operation not permitted") != std::string::npos) error = ptraceRefusal(p->target);
  else if (p->text.find("ptrace: No such process") != std::string::npos) error = "the rank exited";
  // The program a rank wraps could not be probed (refused, or it ended meanwhile: a script
  // between two commands): the rank's own stacks are better than none, or than a wrong word.
  const pid_t rank_pid = p->run->targets[p->slot].pid;
  if (!error.empty() && !p->timed_out && p->target != rank_pid && p->wrapper_only == WrapperOnly::no) {
    p->done = true;
    if (p->timer) p->timer->cancel();
    std::erase(running_, p);
    const bool ended = error == "the rank exited";
    return startProbe(p->run, p->slot, ended ? WrapperOnly::program_ended : WrapperOnly::refused);
  }
  finishProbe(p, error);
}

Json StackCollector::resultOf(const Probe& p, const std::string& error) const {
  const Target& t = p.run->targets[p.slot];
  // No node name nor pid in a note: it is shared by every rank it concerns.
  std::string note;
  const std::string& wrapper = p.wrapped.wrapper;
  const std::string& program = p.wrapped.program;
  if (!error.empty() || wrapper.empty()) {
  } else if (p.wrapper_only == WrapperOnly::no) {
    note = "the rank is a " + wrapper + " that runs " + program + ": these are the stacks of " + program;
  } else if (p.wrapper_only == WrapperOnly::program_ended) {
    note = "the rank is a " + wrapper + " whose " + program + " ended while gdb attached: these are the stacks of " +
           wrapper;
  } else {
    note = "the rank is a " + wrapper + " that runs " + program + ", which gdb may not attach to" +
           (mayTraceRanksChildren() ? ""
                                    : " (kernel.yama.ptrace_scope lets tlaunchd trace the rank itself, not what it "
                                      "starts)") +
           ": these are the stacks of " + wrapper + " (`exec " + program + " ...` in the script makes the rank the " +
           program + ")";
  }
  if (error.empty() && p.python && p.text.find("Undefined command: \"py-bt\"") != std::string::npos)
    note += std::string(note.empty() ? "" : "; ") +
            "no Python frames: gdb has no py-bt (the interpreter's gdb helpers are missing; Debian: apt install "
            "python3.11-dbg)";
  if (error.empty() && p.cut)
    note += std::string(note.empty() ? "" : "; ") + "gdb's output passed " + std::to_string(kMaxOutput >> 20) +
            " MiB (a process of many threads): the native stacks of its highest-numbered threads are left out, and "
            "its thread counts are short";
  return {{"r", t.rank}, {"gdb", error.empty() ? p.text : ""}, {"error", error}, {"note", note}};
}

void StackCollector::finishProbe(const std::shared_ptr<Probe>& p, const std::string& error) {
  if (p->finished) return;
  p->finished = true;
  p->done = true;
  if (p->timer) p->timer->cancel();
  std::erase(running_, p);
  auto run = p->run;
  run->results[p->slot] = resultOf(*p, error);
  if (++run->finished == run->targets.size()) {
    auto done = std::move(run->done);
    asio::post(io_, [done = std::move(done), results = std::move(run->results)]() mutable { done(std::move(results)); });
    if (active_ == run) active_.reset();
    // The next collection, now that no gdb holds a rank (one with no ranks ends at once).
    while (!active_ && !queued_.empty() && cancelled_.empty()) {
      auto [targets, next] = std::move(queued_.front());
      queued_.pop_front();
      begin(std::move(targets), std::move(next));
    }
    return;
  }
  startNext(run);
}

}  // namespace tlaunch

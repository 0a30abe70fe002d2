// tlaunch_scale: the real frontend (JobSession: listener, authentication, inventories, the
// plan, prepare/start, the fence, exits, shutdown) against N simulated daemons that run in a
// few event-driven processes of this same program (--sim). tests/scale/scale_bench.py runs it
// and prints the result; it is not a tool for users.
//
//   tlaunch_scale --nodes N --ranks-per-node R [--fence-bytes B] [--fences K] [--tree-radix K] [--spawn 1]
//                 [--sim-processes P] [--topology XML]
//   tlaunch_scale --sim --connect HOST:PORT --first I --count C --total N --fence-bytes B --fences K
//                 --topology XML --report FILE
//
// The frontend prints one JSON object on stdout: wall time, its own CPU time and peak RSS
// (getrusage of this process only: the simulated daemons are its children), the phase times
// it measured itself, and the simulated daemons' milestones.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "binding/topology/hwloc_topology.h"
#include "bootstrap/auth.h"
#include "bootstrap/spawn.h"
#include "launcher/child_process.h"
#include "launcher/job_session.h"
#include "tests/scale/sim_daemons.h"
#include "tlaunch/version.h"

using namespace tlaunch;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::map<std::string, std::string> values;
  bool sim = false;
  std::string get(const std::string& k, const std::string& fallback = "") const {
    auto it = values.find(k);
    return it == values.end() ? fallback : it->second;
  }
  int num(const std::string& k, int fallback) const { return std::stoi(get(k, std::to_string(fallback))); }
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--sim") a.sim = true;
    else if (k.rfind("--", 0) == 0 && i + 1 < argc) a.values[k.substr(2)] = argv[++i];
    else throw std::runtime_error("unexpected argument " + k);
  }
  return a;
}

void raiseFileLimit() {  // 4,000 nodes are 4,000 connections on each side
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

long long sinceEpochUs(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

int runSim(const Args& a) {
  scale::SimOptions o;
  const std::string hp = a.get("connect");
  const auto colon = hp.rfind(':');
  o.host = hp.substr(0, colon);
  o.port = std::stoi(hp.substr(colon + 1));
  o.first_node = a.num("first", 0);
  o.nodes = a.num("count", 0);
  o.total_nodes = a.num("total", o.nodes);
  o.fence_bytes = a.num("fence-bytes", 64);
  o.fences = std::max(1, a.num("fences", 1));
  o.spawn = a.num("spawn", 0) != 0;
  o.radix = a.num("radix", 0);
  o.process = a.num("process", 0);
  o.processes = std::max(1, a.num("processes", 1));
  if (o.spawn) o.nodes = 0;  // whole subtrees, chosen in SimDaemons::start
  if (!std::getline(std::cin, o.secret)) return 2;
  auto topo = loadTopology(a.get("topology"));
  if (!topo) {
    std::fprintf(stderr, "sim: %s\n", topo.error().message.c_str());
    return 2;
  }
  NodeInventory inv;
  inv.version = kVersion;
  inv.free_port = 29500;
  inv.topology = std::make_shared<const TopologySnapshot>(*topo);
  inv.fabric_error = "not read (simulated node)";
  asio::io_context io(1);
  scale::SimDaemons sims(io, o, std::move(inv));
  sims.start();
  io.run();
  const auto& m = sims.milestones();
  std::ofstream(a.get("report")) << "{\"authenticated\":" << sinceEpochUs(m.authenticated)
                                 << ",\"prepare\":" << sinceEpochUs(m.prepare) << ",\"start\":" << sinceEpochUs(m.start)
                                 << ",\"first_fence_done\":" << sinceEpochUs(m.first_fence_done)
                                 << ",\"fence_done\":" << sinceEpochUs(m.fence_done)
                                 << ",\"shutdown\":" << sinceEpochUs(m.shutdown) << ",\"failures\":" << sims.failures()
                                 << "}\n";
  return sims.failures() == 0 ? 0 : 1;
}

// Starts the simulated daemons: P processes of this program, each with a slice of the nodes.
class SimStarter final : public DaemonStarter {
 public:
  SimStarter(const Args& a, std::string report_dir, std::vector<std::string>& reports)
      : reports_(reports), args_(a), report_dir_(std::move(report_dir)) {}
  const char* name() const override { return "sim"; }
  Result<void> start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                     const std::string& secret) override {
    std::string connect;
    for (size_t i = 0; i + 1 < command.args.size(); ++i)
      if (command.args[i] == "--connect") connect = command.args[i + 1];
    // With tree spawn `nodes` are the frontend's direct children only; the processes simulate
    // every node, each whole subtrees.
    const int n = args_.num("nodes", 16);
    const bool spawn = static_cast<int>(nodes.size()) < n;
    const int procs = std::clamp(args_.num("sim-processes", 2), 1, static_cast<int>(nodes.size()));
    const std::string self = thisExecutable();
    if (self.empty()) return fail(Errc::io, "cannot find this program's path");
    for (int p = 0; p < procs; ++p) {
      const int first = n * p / procs, count = n * (p + 1) / procs - first;
      const std::string report = report_dir_ + "/sim" + std::to_string(p) + ".json";
      reports_.push_back(report);
      auto child = ChildProcess::spawn({self, "--sim", "--connect", connect, "--first",
                                        std::to_string(first), "--count", std::to_string(count), "--total",
                                        std::to_string(n), "--spawn", spawn ? "1" : "0", "--radix",
                                        args_.get("tree-radix", "64"), "--process", std::to_string(p), "--processes",
                                        std::to_string(procs), "--fence-bytes", args_.get("fence-bytes", "64"), "--fences", args_.get("fences", "1"),
                                        "--topology", args_.get("topology"), "--report", report},
                                       secret + "\n");
      if (!child) return tl::unexpected(child.error());
      children_.push_back(std::move(*child));
    }
    return {};
  }
  std::vector<StartFailure> poll() override {
    std::vector<StartFailure> out;
    for (auto& c : children_)
      if (c.poll() && c.status() != 0 && !reported_) {
        reported_ = true;
        out.push_back({-1, "a simulated-daemon process " + c.describeStatus() + ": " + c.outputText()});
      }
    return out;
  }
  void stop(int grace_ms) override {
    const auto deadline = Clock::now() + std::chrono::milliseconds(grace_ms);
    for (auto& c : children_) {
      while (!c.poll() && Clock::now() < deadline) ::usleep(2000);
      c.terminate(0);
      // What a simulated daemon says is why it gave up (sim_daemons.cc, failed()): the
      // frontend only sees a connection close.
      if (const std::string& said = c.outputText(); !said.empty())
        std::fprintf(stderr, "simulated-daemon process %d said:\n%s\n", c.pid(), said.c_str());
    }
  }
 private:
  std::vector<std::string>& reports_;  // the harness reads them after the session is gone
  const Args& args_;
  std::string report_dir_;
  std::vector<ChildProcess> children_;
  bool reported_ = false;
};

double cpuMs(const rusage& u) {
  return (static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3) +
         (static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3);
}

int runFrontend(const Args& a) {
  const int nodes = a.num("nodes", 16);
  const int per_node = a.num("ranks-per-node", 8);
  char tmpl[] = "/tmp/tlaunch-scale.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 2;
  const std::string report_dir = tmpl;

  SessionConfig cfg;
  cfg.spec.argv = {"true"};
  cfg.spec.procs_per_node = per_node;
  cfg.spec.nodes = nodes;
  cfg.spec.pmix = a.num("pmix", 1) != 0;  // as a user's job: every node learns the job's geometry
  cfg.spec.nccl_check = "off";
  cfg.spec.preflight = PreflightMode::off;
  cfg.spec.quiet = true;
  cfg.spec.event_grace_ms = 0;
  cfg.spec.tree_radix = a.num("tree-radix", JobSpec{}.tree_radix);  // 0: a star
  if (a.num("spawn", 0) != 0) cfg.tree_spawn = SshStarterOptions{};  // daemons start their children
  cfg.spec.connect_timeout_s = 120;
  cfg.listen_address = "127.0.0.1";
  for (int i = 0; i < nodes; ++i) cfg.nodes.push_back({i, "n" + std::to_string(i), "", {}});
  cfg.secret = newJobSecret();  // one line, as tlaunchd reads it from stdin
  cfg.plan_context.job_id = "tl-scale";
  cfg.plan_context.cwd = "/";
  cfg.plan_context.loopback_only = true;
  cfg.daemon_path = "(simulated)";

  const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  std::vector<std::string> reports;
  auto starter = std::make_unique<SimStarter>(a, report_dir, reports);
  JobOutcome outcome;
  const auto t0 = Clock::now();
  {
    asio::io_context io(1);
    OutputSink out(TagMode::full, "", devnull, 2);  // the frontend's notes (rejections, warnings) on stderr
    JobSession session(io, std::move(cfg), std::move(starter), out);
    outcome = session.run();
  }
  const auto t1 = Clock::now();
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  ::close(devnull);

  std::ostringstream sim_json;
  sim_json << "[";
  for (size_t i = 0; i < reports.size(); ++i) {
    std::ifstream in(reports[i]);
    std::string line;
    std::getline(in, line);
    sim_json << (i ? "," : "") << (line.empty() ? "null" : line);
    ::unlink(reports[i].c_str());
  }
  sim_json << "]";
  ::rmdir(report_dir.c_str());
  Json result = {{"nodes", nodes},
                 {"ranks", nodes * per_node},
                 {"exit_code", outcome.exit_code},
                 {"summary", outcome.summary},
                 {"t0_us", sinceEpochUs(t0)},
                 {"total_ms", std::chrono::duration<double, std::milli>(t1 - t0).count()},
                 {"frontend_cpu_ms", cpuMs(self)},
                 {"frontend_rss_mb", static_cast<double>(self.ru_maxrss) / 1024.0},
                 {"phase_seconds", outcome.phase_seconds},
                 {"sims", Json::parse(sim_json.str())}};
  std::cout << result.dump() << "\n";
  return outcome.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  raiseFileLimit();
  try {
    const Args a = parse(argc, argv);
    return a.sim ? runSim(a) : runFrontend(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tlaunch_scale: %s\n", e.what());
    return 2;
  }
}

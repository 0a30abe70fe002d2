// The frontend's job lifecycle in memory: the real JobSession with N scripted daemons on
// in-memory pipes (bootstrap/byte_stream.h), in one process, with no socket and no process.
// The daemons do the real handshake and sealing and report a typed inventory of a recorded
// topology; each test scripts what they send after that and checks what a user would see:
// the exit status, the summary, the failed rank and node.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "binding/topology/hwloc_topology.h"
#include "bootstrap/auth.h"
#include "bootstrap/connection.h"
#include "bootstrap/inventory_codec.h"
#include "launcher/job_session.h"
#include "launcher/ssh_starter.h"
#include "tlaunch/version.h"

using namespace tlaunch;

namespace {

const char* kTopology = "/topologies/jsc-jureca-booster-jrc5001_XeonPhi7250F_2xhfi1-OPA_no-gpu_hwloc1.11-v1fmt.xml";

// What a scripted daemon does at each step; by default it does what a healthy tlaunchd does.
struct Script {
  std::function<Json(Json inventory)> inventory = [](Json inv) { return inv; };  // what it reports
  bool report = true;                            // false: closes instead of sending its inventory
  Json prepare_answer = {{"t", "prepared"}};     // what it says to "prepare"
  std::map<int, int> exit_codes;                 // rank -> status after "start" (absent: 0)
  std::map<int, int64_t> ended_us;               // rank -> when its node saw it end (absent: not said)
  bool keep_running = false;                     // its ranks do not exit by themselves
  std::function<void(class FakeDaemon&)> after_start;  // e.g. close the connection
  bool ping = true;                              // heartbeats
  std::function<void(class FakeDaemon&)> on_tree;  // told its place in the control tree
  std::function<void(const Json&)> tree_seen;       // sees that "tree" message first
  std::function<void(class FakeDaemon&, const Json&)> on_other;  // any other message (PMIx answers...)
  // Not empty: the node's daemon never starts; the starter reports this after start_failure_after.
  std::string start_failure;
  std::chrono::milliseconds start_failure_after{0};
  bool starter_done = false;  // with start_failure: the starter can start nothing more (srun's step ended)
  // Also a daemon its warm-daemon keeper started too late, connecting first, after the
  // starter had given the node to ssh (MemoryStarter::keeperGivenUp).
  bool keeper_twin = false;
  bool via_keeper = false;  // this daemon says it was started by a keeper
  bool second_daemon = false;  // a second tlaunchd for the node connects after the first
};

class FakeDaemon {
 public:
  FakeDaemon(asio::io_context& io, std::unique_ptr<ByteStream> stream, std::string secret, NodeTarget node,
             Script script)
      : io_(io), secret_(std::move(secret)), node_(std::move(node)), script_(std::move(script)), ping_(io) {
    conn_ = Connection::create(std::move(stream));
    conn_->start([this](Json&& m) { onMessage(std::move(m)); }, [this](const std::string&) { ping_.cancel(); });
  }
  void send(const Json& msg) {
    if (conn_->isOpen()) conn_->send(msg);
  }
  void sendOutput(int rank, const std::string& text) {
    if (conn_->isOpen()) conn_->sendEncoded(std::make_shared<const std::string>(encodeOutputFrame(rank, 1, text)));
  }
  void close() {
    ping_.cancel();
    conn_->close();
  }
  asio::io_context& io() { return io_; }
  void sendLater(Json msg, std::chrono::milliseconds after) {
    auto timer = std::make_shared<asio::steady_timer>(io_, after);
    timer->async_wait([this, timer, msg = std::move(msg)](const asio::error_code& ec) {
      if (!ec) send(msg);
    });
  }

 private:
  void onMessage(Json&& msg) {
    const std::string t = getString(msg, "t");
    if (t == "challenge") {
      server_nonce_ = bytesOf(msg["nonce"]);
      client_nonce_ = randomBytes(kNonceBytes);
      conn_->send({{"t", "hello"}, {"proto", kProtocolVersion}, {"version", kVersion}, {"node", node_.name},
                   {"index", node_.index}, {"hostname", node_.name}, {"nonce", binary(client_nonce_)},
                   {"mac", binary(helloProof(secret_, server_nonce_, client_nonce_, node_.name))},
                   {"via", script_.via_keeper ? "keeper" : "ssh"}});
      conn_->sealFromNow(
          std::make_unique<FrameCipher>(secret_, server_nonce_, client_nonce_, FrameCipher::Direction::to_frontend));
    } else if (t == "welcome") {
      REQUIRE(constantTimeEquals(bytesOf(msg["mac"]), welcomeProof(secret_, server_nonce_, client_nonce_)));
      conn_->setMaxFrameBytes(kAuthenticatedMaxFrameBytes);
      conn_->openFromNow(
          std::make_unique<FrameCipher>(secret_, server_nonce_, client_nonce_, FrameCipher::Direction::to_daemon));
    } else if (t == "config") {
      if (!script_.report) return close();
      auto topo = loadTopology(std::string(TLAUNCH_FIXTURES_DIR) + kTopology);
      REQUIRE(topo);
      NodeInventory inv;
      inv.node = inv.hostname = node_.name;
      inv.version = kVersion;
      inv.free_port = 29500;
      inv.topology = std::make_shared<const TopologySnapshot>(*topo);
      inv.fabric_error = "not read (in-memory test)";
      send({{"t", "inventory"}, {"inv", script_.inventory(inventoryToJson(inv))}});
      if (script_.ping) pingLater();
    } else if (t == "prepare") {
      for (const auto& r : msg["launch"]["ranks"]) ranks_.push_back(static_cast<int>(getInt(r, "rank")));
      send(script_.prepare_answer);
    } else if (t == "start") {
      running_ = true;
      send({{"t", "started"}});
      if (script_.after_start) script_.after_start(*this);
      if (!script_.keep_running) exitAll(false);
    } else if (t == "terminate") {
      if (running_) exitAll(true);
      send({{"t", "drained"}});
    } else if (t == "shutdown") {
      close();
    } else if (t == "superseded") {
      superseded = true;
      close();
    } else if (t == "refused") {
      refused = getString(msg, "reason");
      close();
    } else if (t == "tree" && (script_.on_tree || script_.tree_seen)) {
      if (script_.tree_seen) script_.tree_seen(msg);
      if (script_.on_tree) script_.on_tree(*this);
    } else if (script_.on_other) {
      script_.on_other(*this, msg);
    }
  }

 public:
  bool superseded = false;  // told that another daemon serves its node
  std::string refused;      // why tlaunch refused it, after it proved the secret
  void exitAll(bool ours) {
    running_ = false;
    for (int r : ranks_) {
      auto it = script_.exit_codes.find(r);
      Json exit = {{"t", "exit"}, {"r", r}, {"code", ours ? 15 : it == script_.exit_codes.end() ? 0 : it->second},
                   {"signaled", ours}, {"ours", ours}, {"tail", Json::array({"rank " + std::to_string(r) + " says goodbye"})}};
      if (const auto at = script_.ended_us.find(r); at != script_.ended_us.end()) exit["at_us"] = at->second;
      send(exit);
    }
    if (!ours) send({{"t", "all_exited"}});
  }

 private:
  void pingLater() {
    ping_.expires_after(std::chrono::milliseconds(200));
    ping_.async_wait([this](const asio::error_code& ec) {
      if (ec || !conn_->isOpen()) return;
      send({{"t", "ping"}});
      pingLater();
    });
  }

  asio::io_context& io_;
  std::string secret_;
  NodeTarget node_;
  Script script_;
  std::shared_ptr<Connection> conn_;
  std::string server_nonce_, client_nonce_;
  std::vector<int> ranks_;
  bool running_ = false;  // from "start" until its ranks exit
  asio::steady_timer ping_;
};

// Starts one scripted daemon per node, connected to the session through an in-memory pipe.
class MemoryStarter final : public DaemonStarter {
 public:
  MemoryStarter(asio::io_context& io, std::function<Script(const NodeTarget&)> script_of)
      : io_(io), script_of_(std::move(script_of)) {}
  const char* name() const override { return "memory"; }
  Result<void> start(const std::vector<NodeTarget>& nodes, const DaemonCommand&, const std::string& secret) override {
    for (const auto& n : nodes) {
      Script script = script_of_(n);
      if (!script.start_failure.empty()) {
        StartFailure f{n.index, script.start_failure};
        f.starter_done = script.starter_done;
        failing_.emplace_back(Clock::now() + script.start_failure_after, f);
        continue;
      }
      if (script.keeper_twin) {
        Script twin;
        twin.via_keeper = true;
        auto [frontend_end, daemon_end] = memoryBytePipe(io_, "frontend", "memory-keeper:" + n.name);
        session->adopt(std::move(frontend_end));
        twins.push_back(std::make_unique<FakeDaemon>(io_, std::move(daemon_end), secret, n, std::move(twin)));
        given_up_.push_back(n.index);
      }
      auto [frontend_end, daemon_end] = memoryBytePipe(io_, "frontend", "memory:" + n.name);
      session->adopt(std::move(frontend_end));
      const bool second = script.second_daemon;
      daemons.push_back(std::make_unique<FakeDaemon>(io_, std::move(daemon_end), secret, n, std::move(script)));
      if (second) {
        auto [frontend_twin, twin_end] = memoryBytePipe(io_, "frontend", "memory-second:" + n.name);
        session->adopt(std::move(frontend_twin));
        twins.push_back(std::make_unique<FakeDaemon>(io_, std::move(twin_end), secret, n, Script{}));
      }
    }
    // Connections from another host that never answer the challenge, arriving while the
    // daemons are still proving the secret.
    for (int i = 0; i < strangers; ++i) {
      auto [frontend_end, stranger_end] = memoryBytePipe(io_, "frontend", "10.66.0.1:" + std::to_string(40000 + i));
      session->adopt(std::move(frontend_end));
      silent.push_back(std::move(stranger_end));
    }
    return {};
  }
  std::vector<StartFailure> poll() override {
    std::vector<StartFailure> due;
    std::erase_if(failing_, [&](const auto& f) {
      if (Clock::now() < f.first) return false;
      due.push_back(f.second);
      return true;
    });
    return due;
  }
  void stop(int) override {}
  bool keeperGivenUp(int node_index) const override {
    return std::find(given_up_.begin(), given_up_.end(), node_index) != given_up_.end();
  }

  JobSession* session = nullptr;
  std::vector<std::unique_ptr<FakeDaemon>> daemons;
  std::vector<std::unique_ptr<FakeDaemon>> twins;  // started by keepers too late
  int strangers = 0;
  std::vector<std::unique_ptr<ByteStream>> silent;

 private:
  using Clock = std::chrono::steady_clock;
  asio::io_context& io_;
  std::function<Script(const NodeTarget&)> script_of_;
  std::vector<std::pair<Clock::time_point, StartFailure>> failing_;
  std::vector<int> given_up_;
};

struct Run {
  JobOutcome outcome;
  double seconds = 0;
  std::string printed;  // what tlaunch printed, stdout and stderr together
  int superseded = 0;   // keeper twins told that another daemon serves their node
  std::vector<std::string> refused;  // why each twin was refused
};

Run runJob(int nodes, std::function<Script(const NodeTarget&)> script_of, const std::function<void(JobSpec&)>& tweak = {},
           int strangers = 0, const std::function<void(SessionConfig&)>& configure = {}) {
  SessionConfig cfg;
  cfg.in_memory = true;
  cfg.spec.argv = {"true"};
  cfg.spec.procs_per_node = 2;
  cfg.spec.nodes = nodes;
  cfg.spec.pmix = false;
  cfg.spec.nccl_check = "off";
  cfg.spec.preflight = PreflightMode::off;
  cfg.spec.kill_timeout_s = 1;
  cfg.spec.quiet = true;
  cfg.spec.event_grace_ms = 0;
  cfg.spec.tree_radix = 0;  // the scripted daemons cannot be tree parents: a star at any size
  if (tweak) tweak(cfg.spec);
  for (int i = 0; i < nodes; ++i) cfg.nodes.push_back({i, "n" + std::to_string(i), "", {}});
  cfg.secret = randomBytes(32);
  cfg.plan_context.job_id = "tl-memory";
  cfg.plan_context.cwd = "/";
  cfg.plan_context.loopback_only = true;
  if (configure) configure(cfg);
  const int devnull = ::memfd_create("tlaunch-output", MFD_CLOEXEC);  // what is printed, read after
  REQUIRE(devnull >= 0);
  Run r;
  {
    asio::io_context io(1);
    auto starter = std::make_unique<MemoryStarter>(io, std::move(script_of));
    MemoryStarter* raw = starter.get();
    raw->strangers = strangers;
    OutputSink out(TagMode::full, "", devnull, devnull);
    JobSession session(io, std::move(cfg), std::move(starter), out);
    raw->session = &session;
    const auto t0 = std::chrono::steady_clock::now();
    r.outcome = session.run();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const auto& t : raw->twins) {
      r.superseded += t->superseded ? 1 : 0;
      if (!t->refused.empty()) r.refused.push_back(t->refused);
    }
  }
  char buf[4096];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(devnull, buf, sizeof buf, at);
    if (n <= 0) break;
    r.printed.append(buf, static_cast<size_t>(n));
    at += n;
  }
  ::close(devnull);
  return r;
}

// Two nodes in a control tree of radix 1 (n1 below n0), each doing this when told its place.
Run runTreePair(const std::function<void(FakeDaemon&)>& n0_on_tree, const std::function<void(FakeDaemon&)>& n1_on_tree) {
  return runJob(
      2,
      [&](const NodeTarget& n) {
        Script s;
        s.on_tree = n.name == "n0" ? n0_on_tree : n1_on_tree;
        return s;
      },
      [](JobSpec& spec) { spec.tree_radix = 1; });
}

bool says(const JobOutcome& o, const std::string& text) { return o.summary.find(text) != std::string::npos; }

}  // namespace

TEST_CASE("in-memory pipe: bytes arrive in order, what was sent before a close is read, then eof") {
  asio::io_context io(1);
  auto pipe = memoryBytePipe(io, "a", "b");  // named members: clang 14 cannot capture a structured binding
  auto& a = pipe.first;
  auto& b = pipe.second;
  CHECK(a->peer() == "b");
  std::string got;
  std::array<char, 4> buf{};
  asio::error_code last;
  std::function<void()> read = [&] {
    b->readSome(asio::buffer(buf), [&](const asio::error_code& ec, size_t n) {
      last = ec;
      if (ec) return;
      got.append(buf.data(), n);
      read();
    });
  };
  read();
  const std::string first = "hello, ", second = "world";
  int writes = 0;
  a->write(asio::buffer(first), [&](const asio::error_code& ec, size_t n) { writes += !ec && n == first.size(); });
  a->write(asio::buffer(second), [&](const asio::error_code& ec, size_t n) { writes += !ec && n == second.size(); });
  a->close();
  io.run();
  CHECK(got == "hello, world");  // in 4-byte reads
  CHECK(writes == 2);
  CHECK(last == asio::error::eof);
  asio::error_code after;
  b->write(asio::buffer(first), [&](const asio::error_code& ec, size_t) { after = ec; });
  io.restart();
  io.run();
  CHECK(after == asio::error::broken_pipe);
}

TEST_CASE("lifecycle in memory: every rank exits 0 -> the job ends 0, each rank's status recorded") {
  auto r = runJob(3, [](const NodeTarget&) { return Script{}; });
  CHECK(r.outcome.exit_code == 0);
  CHECK(r.outcome.summary.empty());
  CHECK(r.outcome.rank_exit_codes == std::vector<int>(6, 0));
  CHECK(r.outcome.phase_seconds.contains("ranks started"));
  CHECK(r.seconds < 10);
}

TEST_CASE("lifecycle in memory: a failed rank ends the job with its status, naming rank and node") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    if (n.name == "n1") s.exit_codes[3] = 7;
    else s.keep_running = true;  // n0's ranks run until the teardown ends them
    return s;
  });
  CHECK(r.outcome.exit_code == 7);
  CHECK(r.outcome.failed_rank == 3);
  CHECK(r.outcome.failed_node == "n1");
  CHECK(says(r.outcome, "rank 3 on node n1 exited with status 7"));
  CHECK(r.outcome.stderr_tail == std::vector<std::string>{"rank 3 says goodbye"});
  CHECK_FALSE(r.outcome.node_lost);
}

// A node's exit reports wait behind its ranks' output: the rank that failed first (a long
// traceback) can be reported after the peers that failed of it. Its node's stamp decides.
TEST_CASE("lifecycle in memory: the rank that ended first is named, not the first reported") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    if (n.name == "n1") {
      s.exit_codes = {{2, 1}, {3, 6}};
      s.ended_us = {{2, 1'700'000'000'002'500}, {3, 1'700'000'000'000'000}};  // 3 ended first, reported second
    } else {
      s.keep_running = true;
    }
    return s;
  });
  CHECK(r.outcome.exit_code == 6);
  CHECK(r.outcome.failed_rank == 3);
  CHECK(r.outcome.failed_node == "n1");
  CHECK(r.outcome.summary ==
        "rank 3 on node n1 exited with status 6; 1 other rank failed after it (first: rank 2 on node n1, +2.5 ms)");
  CHECK(r.outcome.stderr_tail == std::vector<std::string>{"rank 3 says goodbye"});
  CHECK_FALSE(r.outcome.node_lost);
}

TEST_CASE("lifecycle in memory: exits without a stamp (an older tlaunchd) are ordered as they arrive") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    if (n.name == "n1") s.exit_codes = {{2, 1}, {3, 6}};
    else s.keep_running = true;
    return s;
  });
  CHECK(r.outcome.exit_code == 1);
  CHECK(r.outcome.failed_rank == 2);
  CHECK(r.outcome.summary.starts_with("rank 2 on node n1 exited with status 1; 1 other rank failed after it (first: rank 3 on node n1"));
}

// Ranks on healthy nodes lose their peers on a lost node and exit 1 within moments, before the
// frontend has decided the node is lost: the node is the reason, and --max-restarts drops it.
TEST_CASE("lifecycle in memory: ranks that fail around a lost node do not take the blame from it") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    s.keep_running = true;
    if (n.name == "n1") {
      s.after_start = [](FakeDaemon& d) { d.close(); };
    } else {
      s.exit_codes = {{0, 1}, {1, 1}};
      s.after_start = [](FakeDaemon& d) { d.exitAll(false); };
    }
    return s;
  });
  CHECK(r.outcome.exit_code == 69);
  CHECK(r.outcome.node_lost);
  CHECK(r.outcome.failed_node == "n1");
  CHECK(r.outcome.failed_rank == -1);
  CHECK(r.outcome.lost_nodes == std::vector<std::string>{"n1"});
  CHECK(says(r.outcome, "lost node n1"));
  CHECK(says(r.outcome, "; 2 ranks on other nodes failed after it (first: rank 0 on node n0)"));
  CHECK(r.outcome.rank_exit_codes[0] == 1);
}

// An authenticated daemon gone wrong must not make the frontend hold fences without end: each
// fence holds a slot per node until the job ends.
TEST_CASE("lifecycle in memory: a daemon that opens thousands of PMIx fences ends the job naming it") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    s.keep_running = true;
    if (n.name == "n1")
      s.after_start = [](FakeDaemon& d) {
        for (int seq = 1; seq <= 5000; ++seq) d.send({{"t", "fence"}, {"seq", seq}, {"collect", true}, {"d", binary("x")}});
      };
    return s;
  });
  CHECK(r.outcome.exit_code == 76);
  CHECK(r.outcome.failed_node == "n1");
  CHECK(says(r.outcome, "tlaunchd on node n1 opened more than 4096 PMIx fences at once"));
}

// A node whose own fence share would not fit in a frame sends its size instead (as
// fenceThatFits makes it): the job ends saying why, not as a lost node that a restart drops.
TEST_CASE("lifecycle in memory: a fence share too big for a frame ends the job saying why, no node lost") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    s.keep_running = true;
    if (n.name == "n1")
      s.after_start = [](FakeDaemon& d) {
        d.send({{"t", "fence"}, {"seq", 1}, {"collect", true}, {"too_big", size_t{300} << 20}});
      };
    return s;
  });
  CHECK(r.outcome.exit_code != 0);
  CHECK_FALSE(r.outcome.node_lost);
  CHECK(says(r.outcome, "the ranks' PMIx fence collects more data than tlaunch's control plane carries (over 300 MiB"));
}

// A rank that is alive but never commits its PMIx data would hold a peer's direct-modex request
// (and the peer, in MPI_Init) for ever: the frontend answers it with a timeout, and says so.
TEST_CASE("lifecycle in memory: a direct-modex request the owner never answers fails with a timeout") {
  bool timed_out = false;
  auto r = runJob(
      2,
      [&](const NodeTarget& n) {
        Script s;  // n1 is asked and never answers
        if (n.name == "n0") {
          s.keep_running = true;
          s.after_start = [](FakeDaemon& d) { d.send({{"t", "dmodex_req"}, {"id", 42}, {"rank", 2}}); };
          s.on_other = [&](FakeDaemon& d, const Json& m) {
            if (getString(m, "t") != "dmodex_done") return;
            timed_out = getInt(m, "id") == 42 && !getBool(m, "ok") && getBool(m, "timeout");
            d.exitAll(false);
          };
        }
        return s;
      },
      [](JobSpec& spec) { spec.time_limit_s = 20; }, 0,
      [](SessionConfig& cfg) { cfg.dmodex_timeout = std::chrono::milliseconds(500); });
  CHECK(timed_out);
  CHECK(r.outcome.exit_code == 0);
  CHECK(r.printed.find("rank 2 had not committed its PMIx data") != std::string::npos);
}

// A daemon that repeats a request id (a retry, or a daemon gone wrong) is served and answered
// once per id: the owner is asked once, and the frontend keeps one deadline for it.
TEST_CASE("lifecycle in memory: a repeated direct-modex request id is served and answered once") {
  std::map<int64_t, int> answers;  // request id -> dmodex_done messages to n0
  std::map<int64_t, int> serves;   // request id -> dmodex_serve messages to n1, the owner
  int answers_at_43 = -1;          // answers to 42 when 43's came (after 42's, in request order)
  auto r = runJob(
      2,
      [&](const NodeTarget& n) {
        Script s;
        s.keep_running = true;
        if (n.name == "n1")  // the owner of rank 2 never answers: every request times out
          s.on_other = [&](FakeDaemon&, const Json& m) {
            if (getString(m, "t") == "dmodex_serve") ++serves[getInt(m, "id")];
          };
        if (n.name == "n0") {
          s.exit_codes = {{0, 1}};  // rank 0 fails once the answers are in: the job ends at once
          s.after_start = [](FakeDaemon& d) {
            for (int id : {42, 42, 42, 43}) d.send({{"t", "dmodex_req"}, {"id", id}, {"rank", 2}});
          };
          s.on_other = [&](FakeDaemon& d, const Json& m) {
            if (getString(m, "t") != "dmodex_done") return;
            const int64_t id = getInt(m, "id");
            ++answers[id];
            if (id != 43) return;
            answers_at_43 = answers[42];
            d.exitAll(false);
          };
        }
        return s;
      },
      [](JobSpec& spec) { spec.time_limit_s = 20; }, 0,
      [](SessionConfig& cfg) { cfg.dmodex_timeout = std::chrono::milliseconds(300); });
  CHECK(r.outcome.failed_rank == 0);
  CHECK(answers_at_43 == 1);
  CHECK(answers[42] == 1);
  CHECK(serves[42] == 1);
  CHECK(serves[43] == 1);
}

// Past SessionConfig::dmodex_max_waiting requests at once, the next was answered "not found" without a
// word: MPI_Init failed as if a peer had published nothing. It is "out of resource", said once.
TEST_CASE("lifecycle in memory: direct-modex requests past the cap are out of resource, and said") {
  int no_room = 0, other_answers = 0;
  auto r = runJob(
      2,
      [&](const NodeTarget& n) {
        Script s;
        s.keep_running = true;
        if (n.name == "n0") {
          s.exit_codes = {{0, 1}};  // rank 0 fails once the answers are in: the job ends at once
          s.after_start = [](FakeDaemon& d) {
            for (int id = 0; id < 16 + 2; ++id) d.send({{"t", "dmodex_req"}, {"id", id}, {"rank", 2}});
          };
          s.on_other = [&](FakeDaemon& d, const Json& m) {
            if (getString(m, "t") != "dmodex_done") return;
            if (getBool(m, "no_room")) ++no_room;
            else if (no_room < 2) ++other_answers;  // the 16 waiting are answered at the job's end
            if (no_room == 2) d.exitAll(false);
          };
        }
        return s;
      },
      [](JobSpec& spec) { spec.time_limit_s = 60; }, 0,
      [](SessionConfig& cfg) {
        cfg.dmodex_timeout = std::chrono::seconds(50);
        cfg.dmodex_max_waiting = 16;
      });
  CHECK(r.outcome.failed_rank == 0);
  CHECK(no_room == 2);
  CHECK(other_answers == 0);
  const auto said = r.printed.find("PMIx direct-modex requests wait at once");
  CHECK(said != std::string::npos);
  CHECK(r.printed.find("PMIx direct-modex requests wait at once", said + 1) == std::string::npos);
}

// In a star each node's daemon speaks for its own ranks only: output it sends for another node's
// rank is not printed under that rank's tag.
TEST_CASE("lifecycle in memory: output a daemon sends for a rank of another node is dropped and said") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    if (n.name == "n1")
      s.after_start = [](FakeDaemon& d) {
        d.sendOutput(0, "forged by n1\n");  // rank 0 runs on n0
        d.sendOutput(2, "genuine from n1\n");
      };
    return s;
  });
  CHECK(r.outcome.exit_code == 0);
  CHECK(r.printed.find("genuine from n1") != std::string::npos);
  CHECK(r.printed.find("forged by n1") == std::string::npos);
  CHECK(r.printed.find("node n1 sent output of rank 0, which does not run there or below it; dropped") != std::string::npos);
}

// A node that proved the job secret could report any rank's exit: a forged failure of rank 0
// from n1 ended the job "rank 0 on node n1 exited with status 7".
TEST_CASE("lifecycle in memory: the exit of another node's rank is ignored and said") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    if (n.name == "n1")
      s.after_start = [](FakeDaemon& d) {
        d.send({{"t", "exit"}, {"r", 0}, {"code", 7}, {"signaled", false}, {"ours", false}});
      };
    return s;
  });
  CHECK(r.outcome.exit_code == 0);
  CHECK(r.outcome.summary.empty());
  CHECK(r.outcome.rank_exit_codes == std::vector<int>{0, 0, 0, 0});
  CHECK(r.printed.find("node n1 reported the exit of rank 0, which does not run there; ignored") != std::string::npos);
}

// A second tlaunchd for a node (started twice by mistake) was closed without a word before its
// welcome; it took that for a flood of strangers and connected again and again.
TEST_CASE("lifecycle in memory: a second daemon for a node is told why it is refused") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    s.second_daemon = n.name == "n1";
    return s;
  });
  CHECK(r.outcome.exit_code == 0);
  REQUIRE(r.refused.size() == 1);
  CHECK(r.refused[0] == "node n1 is connected already");
  CHECK(r.printed.find("that proved the job secret: node n1 is connected already") != std::string::npos);
}

TEST_CASE("lifecycle in memory: a daemon lost while its ranks run ends the job naming it") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    s.keep_running = true;
    if (n.name == "n1") s.after_start = [](FakeDaemon& d) { d.close(); };
    return s;
  });
  CHECK(r.outcome.exit_code == 69);
  CHECK(r.outcome.node_lost);
  CHECK(r.outcome.failed_node == "n1");
  CHECK(r.outcome.lost_nodes == std::vector<std::string>{"n1"});
  CHECK(says(r.outcome, "lost node n1"));
}

// Nodes that cannot be started are all named in one run (with 5 dead nodes among 1,000, one at
// a time would take 5 runs), and the job ends once every other node has connected, not later.
TEST_CASE("lifecycle in memory: every node that could not be started is named, the job ends once all are in") {
  auto r = runJob(5, [](const NodeTarget& n) {
    Script s;
    s.keep_running = true;
    if (n.name == "n1") s.start_failure = "n1: no route to n1: the node is down";
    if (n.name == "n3") {
      s.start_failure = "n3: no route to n3: the node is down";
      s.start_failure_after = std::chrono::milliseconds(1500);  // well after n1's
    }
    if (n.name == "n4") s.start_failure = "tlaunchd not found at /x on n4";
    return s;
  });
  CHECK(r.outcome.exit_code == 69);
  CHECK(r.outcome.node_lost);
  CHECK(r.outcome.failed_node == "n1");
  CHECK(r.outcome.lost_nodes == std::vector<std::string>{"n1", "n4", "n3"});
  CHECK_THAT(r.outcome.summary, Catch::StartsWith("could not start tlaunchd on 3 of 5 nodes:\n"
                                                  "  n1: no route to n1: the node is down\n"
                                                  "    the same on 1 more node: n3\n"
                                                  "  n4: tlaunchd not found at /x on n4"));
  CHECK(r.seconds > 1.4);  // it waited for n3's failure, and said so...
  CHECK_THAT(r.printed, Catch::Contains("could not start tlaunchd on node n1; waiting up to 12 s for the other "));
  CHECK(r.seconds < 10);   // ...not for the window (ssh's connect timeout + 2 s)
}

// Under Slurm one daemon failing ends the whole step (--kill-on-bad-exit): the daemons that had
// connected go away too. The failure is the cause; the lost nodes must not take its place.
TEST_CASE("lifecycle in memory: a start failure while a connected daemon goes away is the reason given") {
  auto r = runJob(3, [](const NodeTarget& n) {
    Script s;
    s.keep_running = true;
    if (n.name == "n0") s.report = false;  // connects, then its connection closes
    if (n.name == "n1") {
      s.start_failure = "tlaunchd not found at /x on n1";
      s.start_failure_after = std::chrono::milliseconds(100);
    }
    if (n.name == "n2") {  // still starting when n1 fails
      s.start_failure = "n2: never mind";
      s.start_failure_after = std::chrono::seconds(30);
    }
    return s;
  });
  CHECK(r.outcome.exit_code == 69);
  CHECK(r.outcome.failed_node == "n1");
  CHECK(r.outcome.lost_nodes == std::vector<std::string>{"n1"});
  CHECK_THAT(r.outcome.summary, Catch::StartsWith("could not start tlaunchd on node n1: tlaunchd not found at /x on n1"));
  CHECK_THAT(r.outcome.summary, Catch::EndsWith("1 more node had not connected yet: n2"));
  CHECK(r.seconds < 5);
}

// A starter that can start nothing more (srun's one step has ended) leaves nothing to wait for.
TEST_CASE("lifecycle in memory: a failure from a starter that is done is reported at once") {
  auto r = runJob(3, [](const NodeTarget& n) {
    Script s;
    s.keep_running = true;
    if (n.name == "n1") {
      s.start_failure = "tlaunchd on n1 ended before connecting to this frontend (srun exited with status 2)";
      s.starter_done = true;
    }
    if (n.name == "n2") {
      s.start_failure = "n2: never mind";
      s.start_failure_after = std::chrono::seconds(30);
    }
    return s;
  });
  CHECK(r.outcome.exit_code == 69);
  CHECK(r.outcome.failed_node == "n1");
  CHECK(r.seconds < 5);  // not the 12 s window
}

// --keep-daemons: n1's keeper answered after tlaunch's wait, which had handed n1 to ssh; the
// daemon the keeper started all the same connects first. It must be told to end, and the
// ssh-started one serve the node: before, whichever proved the secret first won, the other was
// refused as "connected twice" (six times, as it reconnects), and under srun its failed exit
// could end the step of the winner.
TEST_CASE("lifecycle in memory: a daemon a keeper started too late is told to end; the one started instead serves") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    s.keeper_twin = n.name == "n1";
    return s;
  });
  CHECK(r.outcome.exit_code == 0);
  CHECK(r.outcome.summary.empty());
  CHECK(r.superseded == 1);
  CHECK(r.printed.find("connected twice") == std::string::npos);
}

// Wiring the control tree (radix 1: n1 attaches to n0). n0 reports n1 lost before n1's own
// "attached", on its direct connection, is read: n1 is gone, and the job must say so at once,
// not take it for attached and stall until a phase deadline with a message that names nobody.
TEST_CASE("lifecycle in memory: a node its tree parent lost before its attach was read ends the job naming it") {
  auto r = runTreePair([](FakeDaemon& d) { d.send({{"t", "child_lost"}, {"node", 1}, {"reason", "connection reset"}}); },
                       [](FakeDaemon& d) { d.sendLater({{"t", "attached"}}, std::chrono::milliseconds(200)); });
  CHECK(r.outcome.exit_code == 69);
  CHECK(r.outcome.failed_node == "n1");
  CHECK(says(r.outcome, "lost node n1"));
  CHECK(r.seconds < 10);
}

// Wiring the tree (radix 1: n1 below n0): n0, a child of the frontend itself, says "attached"
// although it was given no parent. Its only link must stay: taken for attached, it was closed,
// and n0 with its subtree was lost without a word. (n1 cannot attach to a scripted n0 and says so.)
TEST_CASE("lifecycle in memory: a stray attached from a node without a tree parent changes nothing") {
  auto r = runTreePair([](FakeDaemon& d) { d.send({{"t", "attached"}}); },
                       [](FakeDaemon& d) { d.send({{"t", "attach_failed"}, {"reason", "scripted"}}); });
  CHECK(r.outcome.exit_code == 0);
  CHECK(r.outcome.summary.empty());
  CHECK(r.seconds < 10);
}

// Wiring the tree (radix 1: n1 below n0): n1 cannot attach and stays connected directly. n0
// then relays an exit of n1's rank as if it came from below it: it is not below it any more
// (nor ever was), and the frontend must drop it, not fail the job on a rank that never failed.
TEST_CASE("lifecycle in memory: a daemon cannot speak for a node that stayed connected directly") {
  auto r = runJob(
      2,
      [](const NodeTarget& n) {
        Script s;
        if (n.name == "n0")
          s.after_start = [](FakeDaemon& d) {
            d.send({{"t", "exit"}, {"r", 2}, {"code", 9}, {"signaled", false}, {"ours", false}, {"@src", 1}});
          };
        else
          s.on_tree = [](FakeDaemon& d) { d.send({{"t", "attach_failed"}, {"reason", "scripted"}}); };
        return s;
      },
      [](JobSpec& spec) { spec.tree_radix = 1; });
  CHECK(r.outcome.exit_code == 0);
  CHECK(r.outcome.summary.empty());
  CHECK(r.printed.find("relayed a message from node 1") != std::string::npos);
}

// Wiring the tree (radix 1: n0 <- n1 <- n2). n2's "attached" is read, n1's not yet, and n0
// relays n2's heartbeat: n2 is below n0, though its route ends at n1 for now. It was taken
// for a daemon speaking for a node not below it ("dropped", a protocol anomaly to the user).
TEST_CASE("lifecycle in memory: while the tree is wired, a node below a relay whose route ends lower is below it") {
  auto r = runJob(
      3,
      [](const NodeTarget& n) {
        Script s;
        if (n.name == "n0")
          s.on_tree = [](FakeDaemon& d) { d.sendLater({{"t", "ping"}, {"@src", 2}}, std::chrono::milliseconds(100)); };
        else if (n.name == "n1")
          s.on_tree = [](FakeDaemon& d) { d.sendLater({{"t", "attached"}}, std::chrono::milliseconds(300)); };
        else
          s.on_tree = [](FakeDaemon& d) { d.send({{"t", "attached"}}); };
        return s;
      },
      [](JobSpec& spec) { spec.tree_radix = 1; });
  // (The fake n1 relays nothing: n2, its direct link closed once attached, is lost later; only
  // the relayed heartbeat's verdict is asked here.)
  CHECK(r.printed.find("not below it") == std::string::npos);
}

// Wiring the tree (radix 1: n1 attaches to n0). n0 goes away, and only then is n1's "attached"
// read: n1 went down with n0 (its only link is gone). Taken for attached, it was left neither
// closed nor reachable, and the job waited for it to the end of the drain deadline.
TEST_CASE("lifecycle in memory: a node whose attach is read after its tree parent was lost is lost with it") {
  auto r = runTreePair([](FakeDaemon& d) { d.close(); },
                       [](FakeDaemon& d) { d.sendLater({{"t", "attached"}}, std::chrono::milliseconds(100)); });
  CHECK(r.outcome.exit_code == 69);
  CHECK(r.outcome.failed_node == "n0");
  CHECK(says(r.outcome, "lost node n0"));
  CHECK(r.seconds < 4);  // not the drain deadline (6 s here)
}

// Tree spawn (radix 1: the frontend starts n0; n0 is to start n1 over ssh, n1 then n2). n0 dies
// as soon as it is told its place, before any child joined: n1 and n2 can never connect (they
// were to reach tlaunch through n0), so the loss must count them, not only the nodes that had
// joined below it (none here).
TEST_CASE("lifecycle in memory: tree spawn: a daemon lost before its children joined counts its whole subtree") {
  auto r = runJob(
      3,
      [](const NodeTarget& n) {
        Script s;
        if (n.name == "n0") s.on_tree = [](FakeDaemon& d) { d.close(); };
        return s;
      },
      [](JobSpec& spec) { spec.tree_radix = 1; }, 0,
      [](SessionConfig& cfg) { cfg.tree_spawn = SshStarterOptions{}; });
  CHECK(r.outcome.exit_code == 69);
  CHECK(r.outcome.failed_node == "n0");
  CHECK(says(r.outcome, "lost node n0"));
  CHECK(says(r.outcome, "The 2 nodes below it in the control tree (n1, n2)"));
  CHECK(r.seconds < 10);
}

// Tree spawn with tlaunch's own host below another node (radix 1: n0, n1 below it, n2 below
// n1; n1 is this host). tlaunch starts n1's daemon itself, as a local process (no ssh to its
// own host); n0 is not asked to start it. n0 lost then takes nothing down with it: n1 has its
// own connection, and n2 was to be started by n1.
TEST_CASE("lifecycle in memory: tree spawn: tlaunch starts its own host's daemon wherever it sits in the tree") {
  std::vector<std::string> started;
  Json n0_tree;
  auto r = runJob(
      3,
      [&](const NodeTarget& n) {
        started.push_back(n.name);
        Script s;
        if (n.name == "n0") {
          s.tree_seen = [&](const Json& m) { n0_tree = m; };
          s.on_tree = [](FakeDaemon& d) { d.close(); };
        }
        return s;
      },
      [](JobSpec& spec) { spec.tree_radix = 1; }, 0,
      [](SessionConfig& cfg) {
        cfg.tree_spawn = SshStarterOptions{};
        cfg.started_by_frontend = {false, true, false};
      });
  CHECK(started == std::vector<std::string>{"n0", "n1"});
  INFO(n0_tree.dump());
  CHECK(n0_tree.value("children", Json::object()).contains("1"));  // its child in the tree still
  CHECK_FALSE(n0_tree.contains("spawn"));                          // but not one it starts
  CHECK(r.outcome.exit_code == 69);
  CHECK(r.outcome.failed_node == "n0");
  CHECK(says(r.outcome, "lost node n0"));
  CHECK_FALSE(says(r.outcome, "below it"));
}

TEST_CASE("lifecycle in memory: a daemon that is signalled fails the job even if its ranks exit 0") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    s.keep_running = true;
    if (n.name == "n0") s.after_start = [](FakeDaemon& d) { d.send({{"t", "signalled"}, {"sig", 15}}); };
    return s;
  });
  CHECK(r.outcome.exit_code == 69);
  CHECK(says(r.outcome, "node n0: its tlaunchd received SIGTERM"));
}

// scancel signals a whole Slurm step, ranks and daemons alike: a rank's exit by SIGTERM can reach
// tlaunch before its daemon's "signalled". The job was blamed on the rank (exit 143, and
// --max-restarts restarted it on a revoked allocation); the signalled daemon explains it.
namespace {
// n1's rank 2 killed by `sig`, then n1's daemon says it got SIGTERM.
Run killedThenSignalled(int sig) {
  return runJob(2, [sig](const NodeTarget& n) {
    Script s;
    s.keep_running = true;
    if (n.name == "n1")
      s.after_start = [sig](FakeDaemon& d) {
        d.send({{"t", "exit"}, {"r", 2}, {"code", sig}, {"signaled", true}, {"ours", false}});
        d.send({{"t", "signalled"}, {"sig", 15}});
      };
    return s;
  });
}
}  // namespace

TEST_CASE("lifecycle in memory: ranks killed by SIGTERM just before their daemon says it was signalled are its consequence") {
  auto r = killedThenSignalled(15);
  CHECK(r.outcome.exit_code == 69);
  CHECK(says(r.outcome, "node n1: its tlaunchd received SIGTERM"));
  CHECK(says(r.outcome, "failed after it (first: rank 2 on node n1)"));
  CHECK(r.outcome.failed_rank == -1);
}

// A node lost, and then (srun's --kill-on-bad-exit ends the step) another node's ranks killed and
// its daemon gone: that second node's end is no "the job goes on" (the job fails for the first).
TEST_CASE("lifecycle in memory: a node ending after a loss is its consequence, not a node whose part was done") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    s.keep_running = true;
    if (n.name == "n0") s.after_start = [](FakeDaemon& d) { d.close(); };
    if (n.name == "n1")
      s.after_start = [](FakeDaemon& d) {
        d.sendLater({{"t", "exit"}, {"r", 2}, {"code", 15}, {"signaled", true}, {"ours", false}}, std::chrono::milliseconds(20));
        d.sendLater({{"t", "exit"}, {"r", 3}, {"code", 15}, {"signaled", true}, {"ours", false}}, std::chrono::milliseconds(20));
        d.sendLater({{"t", "all_exited"}}, std::chrono::milliseconds(30));
        auto* self = &d;
        auto timer = std::make_shared<asio::steady_timer>(d.io(), std::chrono::milliseconds(60));
        timer->async_wait([self, timer](const asio::error_code&) { self->close(); });
      };
    return s;
  });
  CHECK(r.outcome.exit_code == 69);
  CHECK(says(r.outcome, "lost node n0"));
  CHECK(r.printed.find("the job goes on") == std::string::npos);
}

// A rank that crashed on its own (SIGSEGV) just before stays the cause.
TEST_CASE("lifecycle in memory: a rank's own crash just before its daemon is signalled stays the job's reason") {
  auto r = killedThenSignalled(11);
  CHECK(r.outcome.exit_code == 139);
  CHECK(r.outcome.failed_rank == 2);
}

TEST_CASE("lifecycle in memory: a daemon whose heartbeats stop is lost within the heartbeat timeout") {
  auto r = runJob(
      2,
      [](const NodeTarget& n) {
        Script s;
        s.keep_running = true;
        s.ping = n.name != "n1";
        return s;
      },
      [](JobSpec& spec) { spec.heartbeat_timeout_s = 1; });
  CHECK(r.outcome.exit_code == 69);
  CHECK(says(r.outcome, "lost node n1"));
  CHECK(says(r.outcome, "no heartbeat for 1 s"));
  CHECK(r.seconds < 8);
}

TEST_CASE("lifecycle in memory: a daemon lost before it reported ends the job naming it") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    s.report = n.name != "n1";
    return s;
  });
  CHECK(r.outcome.exit_code == 69);
  CHECK(says(r.outcome, "lost node n1"));
  CHECK(r.outcome.rank_exit_codes.empty());  // no rank ever started
}

TEST_CASE("lifecycle in memory: an inventory the frontend cannot read ends the job naming the node and the part") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    if (n.name == "n0")
      s.inventory = [](Json inv) {
        inv["free_port"] = "29500";
        return inv;
      };
    return s;
  });
  CHECK(r.outcome.exit_code == 76);
  CHECK(says(r.outcome, "node n0 sent an inventory tlaunch cannot read: 'free_port' is not a port number"));
}

TEST_CASE("lifecycle in memory: a node that cannot prepare (program missing) ends the job before any rank starts") {
  auto r = runJob(2, [](const NodeTarget& n) {
    Script s;
    if (n.name == "n1")
      s.prepare_answer = {{"t", "prepare_failed"},
                          {"code", static_cast<int>(Errc::program_missing)},
                          {"message", "node n1: no program 'trian.py'"},
                          {"hint", "check the path"}};
    return s;
  });
  CHECK(r.outcome.exit_code == 127);
  CHECK(says(r.outcome, "node n1: no program 'trian.py'"));
  CHECK_FALSE(r.outcome.phase_seconds.contains("ranks started"));  // the start was never sent
  CHECK(std::none_of(r.outcome.rank_exit_codes.begin(), r.outcome.rank_exit_codes.end(), [](int c) { return c >= 0; }));
}

TEST_CASE("lifecycle in memory: a flood of silent connections from one host does not push out the daemons") {
  // 600 strangers (more than twice the pending-connection cap) arrive while 4 daemons are
  // still proving the secret: the strangers displace each other, the job runs as usual.
  auto r = runJob(4, [](const NodeTarget&) { return Script{}; }, {}, 600);
  INFO(r.outcome.summary);
  CHECK(r.outcome.exit_code == 0);
  CHECK(r.outcome.summary.empty());
  CHECK(r.outcome.rank_exit_codes.size() == 8);
}

TEST_CASE("lifecycle in memory: 300 daemons connecting at once are all let in (one srun step starts them together)") {
  // Every connection arrives before any daemon says hello: the frontend must hold them all
  // while they authenticate, not drop the oldest as it would a flood of strangers.
  auto r = runJob(300, [](const NodeTarget&) { return Script{}; });
  INFO(r.outcome.summary);
  CHECK(r.outcome.exit_code == 0);
  CHECK(r.outcome.summary.empty());
  CHECK(r.outcome.rank_exit_codes.size() == 600);
}

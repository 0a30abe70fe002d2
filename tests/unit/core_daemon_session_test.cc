// tlaunchd's DaemonSession against a scripted frontend on a real TCP socket in this process: it
// proves the secret, refuses a frontend that cannot, reports this machine's inventory as the
// typed codec reads it, and exits 0 when told to shut down.
#include <catch2/catch.hpp>

#include <functional>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/connection.h"
#include "bootstrap/frame_cipher.h"
#include "bootstrap/inventory_codec.h"
#include "bootstrap/output_record.h"
#include "daemon/daemon_session.h"
#include "tests/unit/scripted_tree_child.h"
#include "bootstrap/tree_shape.h"
#include "tlaunch/version.h"

using namespace tlaunch;

namespace {

// The frontend's side of the handshake (launcher/job_session_accept.cc), scripted.
class ScriptedFrontend {
 public:
  // drop_first: the first connection is closed unanswered, as the frontend drops the oldest
  // connection not yet authenticated when strangers flood its port.
  // receive_buffer_bytes: the daemon's connection's, small so that what the frontend does not
  // read stays queued in the daemon rather than in the kernel (0: the kernel's default).
  ScriptedFrontend(asio::io_context& io, std::string secret, bool prove_secret, bool drop_first = false,
                   int receive_buffer_bytes = 0)
      : io_(io), acceptor_(listener(io, receive_buffer_bytes)), secret_(std::move(secret)), prove_(prove_secret),
        drop_first_(drop_first) {
    accept();
  }
  // After the inventory, say nothing more (a stopped frontend, or a frozen tree parent: the
  // connection stays open), with this config's heartbeats.
  void silentAfterInventory(Json config) {
    silent_ = true;
    config_ = std::move(config);
  }
  // After the inventory, place the daemon in the control tree with this "tree" message, then
  // say nothing more; what comes up is noted in `arrived` ("output" for each output record).
  void placeAfterInventory(Json tree) {
    silent_ = true;
    tree_ = std::move(tree);
  }
  int port() const { return acceptor_.local_endpoint().port(); }

  bool hello_proved = false;
  std::string hello_via;   // how the daemon says it was started ("keeper", or "" for not said)
  bool supersede = false;  // answer the welcome with "superseded" (another daemon serves the node)
  bool silent_after_welcome = false;  // no config, nothing more (frozen after the welcome)
  std::optional<NodeInventory> inventory;
  std::string inventory_error;
  bool closed = false;
  int connections = 0;
  std::vector<std::string> arrived;  // message types after the inventory, in order
  std::vector<Json> arrived_fences;  // the "fence" messages among them
  size_t output_bytes = 0;

 private:
  static asio::ip::tcp::acceptor listener(asio::io_context& io, int receive_buffer_bytes) {
    asio::ip::tcp::acceptor a(io);
    const asio::ip::tcp::endpoint at(asio::ip::make_address("127.0.0.1"), 0);
    a.open(at.protocol());
    // Before listen(): an accepted connection inherits it, and its TCP window with it.
    if (receive_buffer_bytes > 0) a.set_option(asio::socket_base::receive_buffer_size(receive_buffer_bytes));
    a.bind(at);
    a.listen();
    return a;
  }
  void accept() {
    acceptor_.async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
      if (ec) return;
      if (++connections == 1 && drop_first_) {
        socket.close();
        return accept();
      }
      conn_ = Connection::create(std::move(socket));
      conn_->start([this](Json&& m) { onMessage(std::move(m)); }, [this](const std::string&) { closed = true; });
      nonce_ = randomBytes(kNonceBytes);
      conn_->send({{"t", "challenge"}, {"proto", kProtocolVersion}, {"nonce", binary(nonce_)}});
    });
  }

  void onMessage(Json&& msg) {
    const std::string t = getString(msg, "t");
    if (t == "hello") {
      const std::string client_nonce = bytesOf(msg["nonce"]);
      hello_proved = constantTimeEquals(bytesOf(msg["mac"]),
                                        helloProof(secret_, nonce_, client_nonce, getString(msg, "node")));
      conn_->setMaxFrameBytes(kAuthenticatedMaxFrameBytes);
      conn_->openFromNow(std::make_unique<FrameCipher>(secret_, nonce_, client_nonce, FrameCipher::Direction::to_frontend));
      const std::string proof = prove_ ? welcomeProof(secret_, nonce_, client_nonce) : std::string(32, 'x');
      conn_->send({{"t", "welcome"}, {"mac", binary(proof)}});
      conn_->sealFromNow(std::make_unique<FrameCipher>(secret_, nonce_, client_nonce, FrameCipher::Direction::to_daemon));
      hello_via = getString(msg, "via");
      if (supersede) return conn_->send({{"t", "superseded"}});
      if (silent_after_welcome) return;
      conn_->setOutputHandler([this](const OutputRecord& r, OwnedBytes&&) {
        arrived.emplace_back("output");
        output_bytes += r.bytes.size();
      });
      conn_->send({{"t", "config"}, {"config", config_}});
    } else if (t == "inventory") {
      auto inv = inventoryFromJson(msg["inv"]);
      if (inv) inventory = std::move(*inv);
      else inventory_error = inv.error().message;
      if (!tree_.is_null()) conn_->send(tree_);
      if (!silent_) conn_->send({{"t", "shutdown"}});
    } else {
      arrived.push_back(t);
      if (t == "fence") arrived_fences.push_back(msg);
    }
  }

  asio::io_context& io_;
  asio::ip::tcp::acceptor acceptor_;
  std::string secret_;
  bool prove_;
  bool drop_first_;
  bool silent_ = false;
  Json config_ = Json::object();
  Json tree_;
  std::shared_ptr<Connection> conn_;
  std::string nonce_;
};

// Runs the daemon's loop and the frontend's by turns until `done` or the limit; `done` then.
bool runBothUntil(asio::io_context& io, asio::io_context& frontend_io, const std::function<bool()>& done,
                  std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < until) {
    io.run_for(std::chrono::milliseconds(5));
    frontend_io.run_for(std::chrono::milliseconds(5));
  }
  return done();
}

int runDaemon(asio::io_context& io, DaemonSession& d, std::chrono::milliseconds limit) {
  d.start();
  io.run_for(limit);
  return d.exitCode();
}

DaemonOptions optionsFor(int port, const std::string& secret) {
  DaemonOptions o;
  o.connect_host = "127.0.0.1";
  o.connect_port = port;
  o.node_index = 0;
  o.node_name = "n0";
  o.job_id = "tl-daemon-unit";
  o.secret = secret;
  return o;
}

// Node 0 of 3 (radix 2), the frontend's child, with node 2 below it welcomed: a daemon of the
// tree between a scripted frontend and a scripted child. frontend_receive_buffer: as
// ScriptedFrontend's receive_buffer_bytes.
struct InteriorDaemon {
  explicit InteriorDaemon(int frontend_receive_buffer = 0)
      : secret(newJobSecret()), fe(frontend_io, secret, true, false, frontend_receive_buffer) {
    fe.placeAfterInventory({{"t", "tree"}, {"index", 0}, {"nodes", 3}, {"radix", 2}, {"children", {{"2", "n2"}}}});
    d = std::make_unique<DaemonSession>(io, optionsFor(fe.port(), secret));
    d->start();
    REQUIRE(until([&] { return fe.inventory.has_value(); }, std::chrono::seconds(60)));
    child = std::make_unique<testing::ScriptedChild>(io, fe.inventory->probe_port, "n2", 2, secret);
    REQUIRE(until([&] { return child->welcomed; }, std::chrono::seconds(10)));
  }
  bool until(const std::function<bool()>& done, std::chrono::seconds limit) {
    return runBothUntil(io, frontend_io, done, limit);
  }
  asio::io_context io{1}, frontend_io{1};
  std::string secret;
  ScriptedFrontend fe;
  std::unique_ptr<DaemonSession> d;
  std::unique_ptr<testing::ScriptedChild> child;
};

}  // namespace

TEST_CASE("daemon session: proves the secret, reports this machine's inventory, exits 0 on shutdown") {
  asio::io_context io(1);
  const std::string secret = newJobSecret();
  ScriptedFrontend fe(io, secret, true);
  DaemonSession d(io, optionsFor(fe.port(), secret));
  const int code = runDaemon(io, d, std::chrono::seconds(60));
  CHECK(fe.hello_proved);
  INFO(fe.inventory_error);
  REQUIRE(fe.inventory);
  CHECK(fe.inventory->node == "n0");
  REQUIRE(fe.inventory->topology);  // hwloc read this machine
  CHECK_FALSE(fe.inventory->topology->numa_nodes.empty());
  CHECK(code == 0);
  CHECK(io.stopped());  // nothing of the daemon left running on the loop
}

// Started by its node's keeper after tlaunch had given the node to ssh: told so after the
// welcome, it ends at once with 0, reports nothing and does not connect again.
TEST_CASE("daemon session: a keeper's daemon told that another serves its node ends at once, reporting nothing") {
  asio::io_context io(1);
  const std::string secret = newJobSecret();
  ScriptedFrontend fe(io, secret, true);
  fe.supersede = true;
  auto opts = optionsFor(fe.port(), secret);
  opts.via_keeper = true;
  DaemonSession d(io, opts);
  const auto t0 = std::chrono::steady_clock::now();
  const int code = runDaemon(io, d, std::chrono::seconds(30));
  CHECK(fe.hello_via == "keeper");
  CHECK(code == 0);
  CHECK(io.stopped());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  CHECK_FALSE(fe.inventory);
  CHECK(fe.connections == 1);
}

TEST_CASE("daemon session: a frontend that cannot prove the secret gets no inventory, and the daemon exits non-zero") {
  asio::io_context io(1);
  const std::string secret = newJobSecret();
  ScriptedFrontend fe(io, secret, false);
  DaemonSession d(io, optionsFor(fe.port(), secret));
  const int code = runDaemon(io, d, std::chrono::seconds(30));
  CHECK(fe.hello_proved);  // the daemon proved itself first
  CHECK_FALSE(fe.inventory);
  CHECK(code != 0);
}

TEST_CASE("daemon session: a daemon with another secret is not believed, and reports nothing") {
  asio::io_context io(1);
  ScriptedFrontend fe(io, newJobSecret(), true);
  DaemonSession d(io, optionsFor(fe.port(), newJobSecret()));
  (void)runDaemon(io, d, std::chrono::seconds(30));
  CHECK_FALSE(fe.hello_proved);
  CHECK_FALSE(fe.inventory);
}

TEST_CASE("daemon session: a connection the frontend drops before authentication is made again, and the job goes on") {
  asio::io_context io(1);
  const std::string secret = newJobSecret();
  ScriptedFrontend fe(io, secret, true, /*drop_first=*/true);
  DaemonSession d(io, optionsFor(fe.port(), secret));
  const int code = runDaemon(io, d, std::chrono::seconds(60));
  CHECK(fe.connections == 2);
  REQUIRE(fe.inventory);
  CHECK(fe.inventory->node == "n0");
  CHECK(code == 0);
}

TEST_CASE("daemon session: a silent tree parent ends the node's part of the job, a silent frontend does not") {
  const Json fast = {{"heartbeat_ms", 20}, {"heartbeat_timeout_ms", 1000}};
  SECTION("upstream is the daemon's tree parent (it was started by it and connects to it)") {
    asio::io_context io(1);
    const std::string secret = newJobSecret();
    ScriptedFrontend parent(io, secret, true);
    parent.silentAfterInventory(fast);
    DaemonOptions o = optionsFor(parent.port(), secret);
    o.tree_parent = "n9";
    DaemonSession d(io, o);
    const auto t0 = std::chrono::steady_clock::now();
    const int code = runDaemon(io, d, std::chrono::seconds(20));
    REQUIRE(parent.inventory);
    CHECK(io.stopped());  // ended on its own, after the heartbeat timeout
    CHECK(code != 0);
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(1000));
  }
  SECTION("upstream is the frontend (Ctrl-Z on tlaunch keeps the job)") {
    asio::io_context io(1);
    const std::string secret = newJobSecret();
    ScriptedFrontend fe(io, secret, true);
    fe.silentAfterInventory(fast);
    DaemonSession d(io, optionsFor(fe.port(), secret));
    d.start();
    // The inventory first (hwloc and the preflight: slow on a loaded machine), then three
    // heartbeat timeouts of silence.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fe.inventory && !io.stopped() && std::chrono::steady_clock::now() < until)
      io.run_one_for(std::chrono::milliseconds(100));
    REQUIRE(fe.inventory);
    io.run_for(std::chrono::seconds(3));
    CHECK_FALSE(io.stopped());  // still there, waiting for its frontend
    CHECK_FALSE(fe.closed);
  }
}

// A tree parent frozen between its child's welcome and passing on the child's config: before
// the watch began at the welcome, the child waited for ever, a daemon outliving its job.
TEST_CASE("daemon session: a tree parent silent before the config ends its child; a silent frontend does not") {
  SECTION("upstream is the daemon's tree parent") {
    asio::io_context io(1);
    const std::string secret = newJobSecret();
    ScriptedFrontend parent(io, secret, true);
    parent.silent_after_welcome = true;
    DaemonOptions o = optionsFor(parent.port(), secret);
    o.tree_parent = "n9";
    o.tree_parent_timeout = std::chrono::milliseconds(1000);
    DaemonSession d(io, o);
    const auto t0 = std::chrono::steady_clock::now();
    const int code = runDaemon(io, d, std::chrono::seconds(20));
    CHECK(parent.hello_proved);
    CHECK_FALSE(parent.inventory);
    CHECK(io.stopped());
    CHECK(code != 0);
    const auto took = std::chrono::steady_clock::now() - t0;
    CHECK(took >= std::chrono::milliseconds(1000));
    CHECK(took < std::chrono::seconds(10));
  }
  SECTION("upstream is the frontend (stopped while it starts the job)") {
    asio::io_context io(1);
    const std::string secret = newJobSecret();
    ScriptedFrontend fe(io, secret, true);
    fe.silent_after_welcome = true;
    DaemonSession d(io, optionsFor(fe.port(), secret));
    d.start();
    io.run_for(std::chrono::seconds(3));
    CHECK(fe.hello_proved);
    CHECK_FALSE(io.stopped());
    CHECK_FALSE(fe.closed);
  }
}

// A child's share too big for a frame comes as its size (fenceThatFits) and goes up as this
// daemon's own message. Passed on still tagged with the child's number, the daemon above
// (three levels deep) dropped it as a relayed share, and the fence hung.
TEST_CASE("daemon session: a tree child's too-big fence share goes up untagged") {
  InteriorDaemon t;
  t.child->send({{"t", "fence"}, {"seq", 1}, {"collect", true}, {"too_big", size_t{300} << 20}});
  REQUIRE(t.until([&] { return !t.fe.arrived_fences.empty(); }, std::chrono::seconds(10)));
  const Json& up = t.fe.arrived_fences.front();
  CHECK(up["too_big"] == size_t{300} << 20);
  CHECK(up["seq"] == 1);
  CHECK_FALSE(up.contains(kSourceTag));
}

TEST_CASE("daemon session: a lost tree child is reported after its last output and exits, not before") {
  // The frontend does not read for a moment (busy) while a child sends 8 MiB of output, its
  // exit, and goes away: the report of its loss queues up here behind what it said last, as its
  // exit does behind its output. Sent ahead of them, it told the frontend of a lost node whose
  // ranks had in fact finished.
  InteriorDaemon t(64 * 1024);

  const std::string line(64 * 1024 - 1, 'x');
  constexpr int kLines = 128;
  for (int i = 0; i < kLines; ++i) t.child->sendOutput(4, line + "\n");
  t.child->sendBehindOutput({{"t", "exit"}, {"r", 4}, {"code", 0}, {"signaled", false}, {"ours", false}, {"tail", Json::array()}});
  t.child->sendBehindOutput({{"t", "all_exited"}});
  t.child->closeAfterFlush();
  // Only this side runs: the child's bytes and its end reach the daemon, nothing drains upward.
  t.io.run_for(std::chrono::seconds(2));
  REQUIRE(t.until([&] { return std::count(t.fe.arrived.begin(), t.fe.arrived.end(), "child_lost") == 1; },
                  std::chrono::seconds(20)));

  const auto at = [&](const std::string& type) { return std::find(t.fe.arrived.begin(), t.fe.arrived.end(), type) - t.fe.arrived.begin(); };
  CHECK(t.fe.output_bytes == kLines * (line.size() + 1));
  CHECK(at("exit") < at("child_lost"));
  CHECK(at("all_exited") < at("child_lost"));
  const auto last_output = std::find(t.fe.arrived.rbegin(), t.fe.arrived.rend(), "output").base() - t.fe.arrived.begin() - 1;
  CHECK(last_output < at("exit"));
}

// What the daemon reports and checks about its node for the frontend: the inventory, the
// listener for the other daemons' reachability probes and those probes, and the stages of the
// cross-node RDMA write test (on a worker thread, so heartbeats and teardown are still served).
#include "daemon/daemon_session.h"
#include "daemon/tree_children.h"

#include <cstdlib>

#include <spdlog/spdlog.h>

#include "daemon/rdma_pair_agent.h"
#include "binding/rdma/rdma_pair_protocol.h"
#include "binding/rdma/verbs_api.h"
#include "bootstrap/inventory_codec.h"
#include "bootstrap/node_launch_json.h"
#include "daemon/inventory.h"
#include "daemon/inventory_cache.h"
#include "daemon/peer_probe.h"
#include "daemon/stale_job_files.h"

namespace tlaunch {

namespace {

// The user's --master-port (or -x MASTER_PORT), which only a free port serves: a store already
// listening there fails rank 0 after every rank started.
bool masterPortInUse(const Json& config) {
  const long long port = getInt(config, "master_port", 0);
  return port > 0 && port <= 65535 && !portListenable(static_cast<int>(port));
}

}  // namespace

void DaemonSession::handleRdmaStage(Json&& msg) {
  // The frontend sends a stage only after the previous one's reply; should one come early, it
  // waits for the writes in flight rather than touch the endpoints beside them.
  if (rdma_worker_.joinable()) rdma_worker_.join();
  if (!rdma_agent_) {
    verbs_ = makeIbverbsApi();
    rdma_agent_ = std::make_unique<RdmaPairAgent>(*verbs_);
  }
  if (getString(msg, "t") != "rdma_write") {
    conn_->send(rdma_agent_->handle(msg));
    return;
  }
  // The writes poll for completions (up to their timeout when the path is broken): off the
  // event loop, so that heartbeats and a teardown are still served. The frontend sends the
  // next stage only after this reply.
  rdma_worker_ = std::jthread([this, msg = std::move(msg)] {
    Json reply = rdma_agent_->handle(msg);
    asio::post(io_, [this, reply = std::move(reply)] {
      if (conn_ && conn_->isOpen()) conn_->send(reply);
    });
  });
}

void DaemonSession::acceptProbes() {
  probe_acceptor_.async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket s) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of file descriptors, or another failure that would fail again at once: try again a
      // moment later instead of spinning (strangers are dropped at their 5 s deadline).
      probe_retry_.expires_after(std::chrono::milliseconds(100));
      probe_retry_.async_wait([this](const asio::error_code& e) {
        if (!e) acceptProbes();
      });
      return;
    }
    tree_->adopt(std::move(s));  // a child, or a probe (connecting was its whole test)
    // What else the kernel has queued, now: every node's probe (--check-reachability all) or
    // child may come at once, and one accept per turn of the loop let them wait for seconds
    // (past a probe's deadline) once more than the listen queue came.
    asio::error_code queued;  // the acceptor is non-blocking: an empty queue ends the loop
    for (int i = 0; i < 64 && !queued; ++i) {
      asio::ip::tcp::socket q(io_);
      probe_acceptor_.accept(q, queued);
      if (!queued) tree_->adopt(std::move(q));
    }
    acceptProbes();
  });
}

void DaemonSession::sendInventory(const Json& config) {
  InventoryRequest req;
  req.topology_xml = getString(config, "topology_xml");
  req.sysfs_root = getString(config, "sysfs_root", "/");
  // "{node}" in --sysfs-root stands for this node's name: per-node captures in tests.
  for (size_t at; (at = req.sysfs_root.find("{node}")) != std::string::npos;)
    req.sysfs_root.replace(at, 6, opts_.node_name);
  req.node_name = opts_.node_name;
  req.preflight = getString(config, "preflight", "quick");
  req.expect_rdma = getBool(config, "expect_rdma", true);
  req.gpus_required = static_cast<int>(getInt(config, "gpus_required", 0));
  if (auto it = config.find("expect_rate_gbps"); it != config.end() && it->is_number()) req.expect_rate_gbps = it->get<double>();
  if (auto it = config.find("user_env"); it != config.end() && it->is_object()) req.user_env = *it;
  req.topology_cache_dir = topologyCacheDir();
  asio::error_code ec;
  auto ep = probe_acceptor_.local_endpoint(ec);
  const int probe_port = ec ? 0 : ep.port();
  // Read on every job, never cached: a warm daemon can serve the next allocation's jobs.
  const std::string slurm_gpus = slurmStepGpus([](const char* name) { return std::getenv(name); });
  const bool use_cache = !opts_.inventory_cache.empty() && !getBool(config, "fresh_inventory");
  const Json cache_key = use_cache ? inventoryCacheKey(req) : Json();
  if (use_cache) {
    if (auto cached = loadCachedInventory(opts_.inventory_cache, cache_key)) {
      Json inv = std::move(cached->inventory);
      inv["free_port"] = pickFreePort();  // a port free a minute ago may be taken now
      inv["probe_port"] = probe_port;
      inv["cached_s"] = cached->age_s;
      if (masterPortInUse(config)) inv["master_port_in_use"] = true;
      if (slurm_gpus.empty()) inv.erase("slurm_gpus");
      else inv["slurm_gpus"] = slurm_gpus;
      topology_xml_ = std::move(cached->topology_xml);
      conn_->send({{"t", "inventory"}, {"inv", std::move(inv)}});
      return;
    }
  }
  NodeInventory inv = collectInventory(req, &topology_xml_);
  inv.probe_port = probe_port;
  Json j = inventoryToJson(inv);
  if (use_cache && worthCaching(inv)) storeCachedInventory(opts_.inventory_cache, cache_key, j, topology_xml_);
  if (!slurm_gpus.empty()) j["slurm_gpus"] = slurm_gpus;
  if (masterPortInUse(config)) j["master_port_in_use"] = true;
  conn_->send({{"t", "inventory"}, {"inv", std::move(j)}});
}

Result<void> DaemonSession::probePeers() {
  const auto& l = *launch_;
  if (l.reach.empty()) return {};
  std::string failures = describeProbeFailures(l.node_name, probeTargets(l.reach, std::chrono::seconds(5)));
  if (!failures.empty())
    return fail(Errc::fabric, failures, "check the fabric link (ip link / ibstat), the subnet and any firewall between the nodes");
  return {};
}

void DaemonSession::handleReach(const Json& msg) {
  // tlaunch preflight: the probes a job would make, answered as data.
  Json results = Json::array();
  auto targets = reachFromJson(msg.contains("targets") ? msg["targets"] : Json());
  if (targets)
    for (const auto& o : probeTargets(*targets, std::chrono::seconds(5)))
      results.push_back({{"node", o.target.node}, {"addr", o.target.addr}, {"port", o.target.port}, {"error", o.error}});
  conn_->send({{"t", "reached"}, {"results", std::move(results)}});
}

}  // namespace tlaunch

// PmixServer inside this process (libpmix runs, no rank is started; tests/pmix runs real jobs).
#include <hwloc.h>
#include <pmix.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <vector>

#include "bootstrap/pmix_env.h"
#include "bootstrap/pmix_server.h"

namespace fs = std::filesystem;
using tlaunch::PmixServer;

namespace {

// The "strand": closures posted from libpmix's thread, run when the test drains them.
struct Strand {
  std::mutex mutex;
  std::vector<std::function<void()>> queue;
  PmixServer::Post post() {
    return [this](std::function<void()> fn) {
      std::lock_guard lock(mutex);
      queue.push_back(std::move(fn));
    };
  }
};

struct TempBase {
  std::string path = "/tmp/tlaunch-pmix-unit." + std::to_string(getpid());
  TempBase() { fs::create_directory(path); }  // as tlaunchd's job directory (makeRankDir makes no parents)
  ~TempBase() { fs::remove_all(path); }
};

// How long each libpmix call may take here. The default (5 s) is the daemon's: past it libpmix
// counts as wedged, and a loaded machine that stalled the test for seconds in the middle of
// PMIx_server_deregister_nspace failed it (REQUIRE(deregisterJob(5 s)) -> {?}). What this test
// checks does not depend on the bound: the calls return as soon as libpmix answers, and the
// bound only keeps a libpmix that never answers from hanging the test.
constexpr std::chrono::milliseconds kOpBound = std::chrono::minutes(2);

tlaunch::PmixServerConfig config(const TempBase& base) {
  tlaunch::PmixServerConfig c;
  c.node_name = "nodeA";
  c.node_index = 0;
  c.tmpdir = base.path + "/srv";
  c.uid = getuid();
  c.gid = getgid();
  c.op_bound = kOpBound;
  return c;
}

tlaunch::PmixJobLayout layout(const TempBase& base) {
  tlaunch::PmixJobLayout l;
  l.nspace = "tlaunch.unit." + std::to_string(getpid());
  l.node_names = {"nodeA", "nodeB"};
  l.ranks_by_node = {{0, 1}, {2, 3}};
  l.this_node = 0;
  l.job_tmpdir = base.path + "/job";
  l.shm_dir = base.path + "/shm";
  l.tcp_if_include = "10.1.0.0/16";
  return l;
}

// A recorded machine (2 x EPYC 7402, 4 x A100), not this one.
const std::string kFixtureTopology = std::string(TLAUNCH_FIXTURES_DIR) +
                                     "/topologies/jsc-juwels-booster-jwb0004_2xEPYC7402_4xA100_4xmlx5-HDR_pci-only-gpus_hwloc2.2.xml";

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int processingUnits(hwloc_topology_t topo) { return hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU); }

int processingUnitsOf(const std::string& xml_path) {
  hwloc_topology_t topo = nullptr;
  hwloc_topology_init(&topo);
  int n = -1;
  if (hwloc_topology_set_xml(topo, xml_path.c_str()) == 0 && hwloc_topology_load(topo) == 0) n = processingUnits(topo);
  hwloc_topology_destroy(topo);
  return n;
}

std::string valueOf(const std::vector<std::string>& env, const std::string& key) {
  const std::string* e = tlaunch::findEnv(env, key);
  return e ? e->substr(key.size() + 1) : "<unset>";
}

}  // namespace

// One test case: libpmix 4.2.2 can start its server only once per process.
TEST_CASE("pmix server: registration, rank environment, cleanup, one server per process") {
  TempBase base;
  Strand strand;
  // The daemon's topology XML goes to libpmix, which then does not discover the machine itself:
  // libpmix's own topology is the recorded machine's, not this one's.
  auto with_topology = config(base);
  with_topology.topology_xml = readFile(kFixtureTopology);
  REQUIRE_FALSE(with_topology.topology_xml.empty());
  auto server = PmixServer::start(with_topology, strand.post(), {});
  REQUIRE(server);
  CHECK(fs::is_directory(base.path + "/srv"));
  pmix_topology_t pmix_topo{};
  REQUIRE(PMIx_Load_topology(&pmix_topo) == PMIX_SUCCESS);
  REQUIRE(pmix_topo.topology != nullptr);
  const int recorded = processingUnitsOf(kFixtureTopology);
  CHECK(recorded != static_cast<int>(sysconf(_SC_NPROCESSORS_CONF)));  // else the check below proves nothing
  CHECK(processingUnits(static_cast<hwloc_topology_t>(pmix_topo.topology)) == recorded);

  auto second = PmixServer::start(config(base), strand.post(), {});
  REQUIRE_FALSE(second);
  CHECK(second.error().message.find("already started") != std::string::npos);

  // A layout that places this daemon on another node is refused before anything is created.
  auto l = layout(base);
  l.this_node = 1;
  auto wrong = (*server)->registerJob(l);
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().message.find("nodeB") != std::string::npos);
  CHECK_FALSE(fs::exists(l.job_tmpdir));

  // A symlink planted where the shared-memory directory goes is refused and left as it is
  // (someone else's); the job directory made before it is removed.
  l = layout(base);
  const std::string target = base.path + "/planted-target";
  fs::create_directories(target);
  fs::create_symlink(target, l.shm_dir);
  auto planted = (*server)->registerJob(l);
  REQUIRE_FALSE(planted);
  CHECK(planted.error().message.find("symlink") != std::string::npos);
  CHECK(fs::is_symlink(l.shm_dir));
  CHECK(fs::is_directory(target));
  CHECK_FALSE(fs::exists(l.job_tmpdir));
  fs::remove(l.shm_dir);

  l = layout(base);
  REQUIRE((*server)->registerJob(l));
  CHECK(fs::is_directory(l.job_tmpdir));
  CHECK(fs::is_directory(l.shm_dir));
  auto again = (*server)->registerJob(l);
  REQUIRE_FALSE(again);
  CHECK(again.error().message.find("still registered") != std::string::npos);

  std::vector<std::string> env{"PATH=/usr/bin", "PMIX_NAMESPACE=slurm.pmix.7.0", "PMIX_DSTORE_21_BASE_PATH=/stale",
                               "OMPI_MCA_btl_tcp_if_include=eth9"};
  REQUIRE((*server)->setupFork(1, env));
  CHECK(valueOf(env, "PATH") == "/usr/bin");
  CHECK(valueOf(env, "PMIX_NAMESPACE") == l.nspace);
  CHECK(valueOf(env, "PMIX_RANK") == "1");
  CHECK(valueOf(env, "PMIX_SERVER_URI41").find("tcp4://127.0.0.1:") != std::string::npos);
  CHECK(valueOf(env, "PMIX_SECURITY_MODE") == "native");
  // libpmix's shared-memory store, as under srun; its files in this server's directory (removed
  // with it, checked below), not the stale path the rank's environment held.
  CHECK(valueOf(env, "PMIX_GDS_MODULE").rfind("ds21", 0) == 0);
  CHECK(valueOf(env, "PMIX_DSTORE_21_BASE_PATH").rfind(base.path + "/srv/", 0) == 0);
  CHECK(valueOf(env, "OMPI_MCA_btl_vader_backing_directory") == l.shm_dir);
  CHECK(valueOf(env, "OMPI_MCA_btl_tcp_if_include") == "eth9");  // the plan's settings stay as they were
  CHECK(valueOf(env, "OMPI_MCA_schizo") == "<unset>");            // planned (rank_env_builder), not added here

  std::vector<std::string> env0;
  REQUIRE((*server)->setupFork(0, env0));
  CHECK(valueOf(env0, "OMPI_MCA_btl_tcp_if_include") == "<unset>");
  std::vector<std::string> other;
  auto remote = (*server)->setupFork(2, other);
  REQUIRE_FALSE(remote);
  CHECK(remote.error().message.find("rank 2") != std::string::npos);

  REQUIRE((*server)->deregisterJob(kOpBound));
  CHECK_FALSE(fs::exists(l.job_tmpdir));
  CHECK_FALSE(fs::exists(l.shm_dir));
  std::vector<std::string> late;
  CHECK_FALSE((*server)->setupFork(1, late));

  // The same server takes the next job.
  l.nspace += ".next";
  REQUIRE((*server)->registerJob(l));
  REQUIRE((*server)->deregisterJob(kOpBound));

  server->reset();
  CHECK_FALSE(fs::exists(base.path + "/srv"));
  auto restarted = PmixServer::start(config(base), strand.post(), {});
  REQUIRE_FALSE(restarted);
  CHECK(restarted.error().message.find("already started") != std::string::npos);
}

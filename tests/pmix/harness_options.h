#pragma once
// Options of pmix_harness: a stand-in frontend plus N stand-in daemons (one process each) that
// run a real MPI/PMIx program against tlaunch's PmixServer on this machine.
#include <string>
#include <vector>

namespace harness {

struct Options {
  int nodes = 1;
  int ppn = 2;
  bool cyclic = false;       // rank r on node r % nodes (default: blocks of ppn)
  int jobs = 1;              // jobs run one after another by the same servers
  int timeout_s = 150;        // the whole run, every job: under ctest's 180 s, far above a slow machine's need
  int min_fences = 0;        // per job, as seen by the frontend
  int min_dmodex = 0;        // per job
  // Per job; -1: unchecked. 0 proves the fences carried the data: libpmix quietly falls back to
  // direct modex for data a fence lost, so MPI works even with a broken fence path.
  int max_dmodex = -1;
  int expect_abort = -1;     // pass only if a rank aborts with this status
  int expect_exit = 0;       // the job's exit code (first failing rank's code) for a pass
  int late_node_ms = 0;      // the last node registers its job this much later than the others
  bool localonly_fence_off = false;  // PMIX_MCA_pmix_server_fence_localonly_opt=0 in the daemons
  int register_uid = -1;     // register the ranks under this uid (a deliberate mismatch)
  bool expect_stuck_teardown = false;  // libpmix is expected not to answer deregistration
  // Not 127.0.0.1/32: Open MPI 4.1 matches every interface for a /32 prefix.
  std::string tcp_if = "lo";
  std::string base_dir;      // default /tmp/tlaunch-pmix-test.<pid>
  std::string job_tag;       // default: the frontend's pid
  std::vector<std::string> rank_env;  // extra K=V for every rank
  std::vector<std::string> program;   // argv of every rank

  int size() const { return nodes * ppn; }
  int nodeOf(int rank) const { return cyclic ? rank % nodes : rank / ppn; }
  std::vector<int> ranksOf(int node) const {
    std::vector<int> r;
    for (int i = 0; i < size(); ++i)
      if (nodeOf(i) == node) r.push_back(i);
    return r;
  }
  std::string nodeName(int node) const { return std::string("node") + static_cast<char>('A' + node); }
  std::string nspace(int job) const { return "tlaunch.test" + job_tag + "." + std::to_string(job); }
  std::string nodeDir(int node) const { return base_dir + "/" + nodeName(node); }
};

int runFrontend(const Options& options);
int runDaemon(const Options& options, int node, int fd);

}  // namespace harness

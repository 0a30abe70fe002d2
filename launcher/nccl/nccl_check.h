#pragma once
// --nccl-check off|warn|strict (pure parts): the NCCL debug variables a rank gets, and what the
// frontend does with the transport report once every rank has reported.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/nccl/nccl_report.h"

namespace tlaunch::nccl {

enum class CheckMode { off, warn, strict };
std::optional<CheckMode> parseCheckMode(const std::string& text);  // "off", "warn", "strict"
const char* checkModeName(CheckMode m);

// The subsystems whose INFO lines the parser reads: INIT (NET/IB/Socket devices, channels
// "via …", Init COMPLETE, and the bootstrap interface up to 2.2x), BOOTSTRAP (the bootstrap
// interface in newer NCCL: 2.28.9 on an H100 logged "Bootstrap: Using" under it alone), NET (net
// plugin selection) and ENV (NCCL_* values in 2.12+). A name NCCL does not know is ignored, and
// WARN lines are printed whatever the mask.
inline constexpr const char* kDebugSubsys = "INIT,BOOTSTRAP,NET,ENV";

// Where a rank's NCCL debug output goes: the daemon's per-rank file (NCCL expands %h and %p),
// or the rank's stderr when the user set NCCL_DEBUG themselves.
enum class LogSource { none, file, stderr_lines };

struct DebugEnv {
  LogSource source = LogSource::none;
  std::vector<std::pair<std::string, std::string>> env;  // to add to the rank's environment
};

// mode off: nothing. The user's NCCL_DEBUG (from the frontend's environment or -x) wins: the
// rank's stderr is parsed and nothing is set. Otherwise NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS and
// NCCL_DEBUG_FILE=rank_log_path (the user's own NCCL_DEBUG_SUBSYS / NCCL_DEBUG_FILE are kept).
DebugEnv debugEnv(CheckMode mode, const std::vector<std::string>& user_set, const std::string& rank_log_path);

// The file a rank's NCCL log goes to in the daemon's job directory: "DIR/nccl.rank7.%h.%p.log"
// (one file per process, should the rank start more than one).
std::string rankLogPath(const std::string& job_dir, int rank);

// What the plan expects of NCCL between nodes.
struct Expectation {
  bool rdma = false;                  // the plan chose a fabric with RDMA data ports
  std::vector<std::string> ifnames;   // the planned interface per node (bootstrap/OOB)
  // The planned interface of each tlaunch rank (its node's), by rank: names may differ between
  // nodes, so a rank is held to its own node's. Empty: any planned interface will do.
  std::vector<std::string> rank_ifnames;
};

enum class Action { none, warn, fail };

struct Decision {
  Action action = Action::none;
  std::string reason;  // the verdict, and what is wrong with it; "" when nothing is
};

// On a job that expects RDMA: NET/Socket between nodes, or a bootstrap/OOB interface other
// than a planned one, warns (warn) or fails the job (strict). A net plugin (IBext, AWS
// Libfabric/OFI) counts as RDMA. Jobs without RDMA only get the report line.
Decision decide(const NcclReport& report, const Expectation& expected, CheckMode mode);

// Exit status of a job ended by --nccl-check strict (EX_CONFIG).
inline constexpr int kStrictExit = 78;

}  // namespace tlaunch::nccl

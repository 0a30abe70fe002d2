#pragma once
// What NCCL's debug output has said so far, per process (pure, incremental): feed it lines as
// a log grows — from a file, stdin, or a daemon tailing NCCL_DEBUG_FILE — and query it at any
// time. A process is "host:pid" from NCCL's prefix; lines without one (another process's
// fragment, a shell prompt) are ignored except "NCCL version".
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "launcher/nccl/nccl_log.h"

namespace tlaunch::nccl {

struct CommState {
  std::string comm;  // "0x7f3ff4001980"
  int rank = -1;
  int nranks = -1;
  int nnodes = -1;
  bool complete = false;
};

struct WarnRecord {
  std::string text;
  int count = 0;
  bool followed_by_error = false;  // an error code was passed on ("-> 2") after it
};

struct ProcessState {
  std::string host;
  long pid = -1;
  std::string source;  // the stream it was read from (file name), for messages
  int cuda_dev = -1;
  int tag_rank = -1;   // another launcher's rank tag, when NCCL's own rank is not in the log
  std::string version;
  std::string bootstrap_if, bootstrap_address;
  std::string oob_if, oob_address;
  std::vector<NetDevice> ib_devices;      // "NET/IB : Using …" (also IBext)
  std::vector<NetDevice> socket_devices;  // "NET/Socket : Using …"
  bool ib_no_device = false;
  std::string using_network;  // the last "Using network X" / "Assigned NET plugin X to comm"
  std::string plugin;         // external net plugin loaded ("AWS Libfabric"), "" if none
  std::string plugin_version;  // "aws-ofi-nccl 1.16.2"
  std::string provider;        // libfabric provider ("efa")
  long provider_nics = -1;
  std::map<std::string, std::string> env;  // NCCL_* values NCCL reported
  std::vector<CommState> comms;            // in order of appearance
  std::map<std::string, ChannelHop> hops;  // distinct hops, keyed by their text
  std::vector<WarnRecord> warnings;        // distinct texts, in order
  int last_warning = -1;                   // index of the latest WARN seen
  long error_traces = 0;                   // non-zero "-> N" breadcrumbs
  long messages = 0;
  bool initComplete() const;
};

class NcclLogState {
 public:
  // One line of output, without its newline. `source` names the stream (a file, a rank).
  void feed(std::string_view line, std::string_view source = {});
  // Many lines at once (split at '\n'); a last line without '\n' is kept until more arrives.
  void feedText(std::string_view text, std::string_view source = {});
  // Flushes a pending partial line of feedText.
  void finish();

  const std::vector<ProcessState>& processes() const { return processes_; }
  const std::set<std::string>& versions() const { return versions_; }  // "NCCL version" lines
  long lines() const { return lines_; }
  long ncclMessages() const { return nccl_messages_; }

 private:
  ProcessState& processFor(const LogLine& line, std::string_view source);
  void apply(ProcessState& p, const Event& e);

  std::vector<ProcessState> processes_;
  std::map<std::pair<std::string, long>, std::size_t> index_;  // (host, pid) → processes_
  std::multimap<long, std::size_t> by_pid_;                     // pid → processes_
  std::set<std::string, std::less<>> known_hosts_;
  std::set<std::string> versions_;
  std::string pending_;
  std::string pending_source_;
  long lines_ = 0;
  long nccl_messages_ = 0;
};

}  // namespace tlaunch::nccl

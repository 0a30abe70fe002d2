#pragma once
// The NCCL transport report (pure): from what the log said per process (NcclLogState) to the
// answer per rank and per job — inter-node transport, HCAs, GPUDirect RDMA, bootstrap/OOB
// interface, intra-node paths, warnings and errors — and a one-line verdict.
#include <string>
#include <vector>

#include "launcher/nccl/nccl_state.h"

namespace tlaunch::nccl {

enum class Transport {
  none,     // no inter-node channel in the log (single node, or init did not get that far)
  ib,       // NCCL's IB verbs transport on InfiniBand ports
  roce,     // the same transport on RoCE ports
  socket,   // NET/Socket: TCP
  plugin,   // an external net plugin (AWS Libfabric/OFI, …): `net` names it
};
const char* transportName(Transport t);  // "none", "IB", "RoCE", "Socket", "plugin"

enum class Gdr { unknown, no, yes, partial };
const char* gdrName(Gdr g);  // "unknown", "no", "yes", "partial"

enum class Status { ok, incomplete, error };
const char* statusName(Status s);  // "ok" (Init COMPLETE), "incomplete", "error"

struct RankReport {
  std::string host;
  long pid = -1;
  std::string source;
  int cuda_dev = -1;
  int rank = -1;    // in the largest communicator the log shows; -1 unknown
  int nranks = -1;
  int nnodes = -1;  // as NCCL counted them (2.12+), -1 unknown
  Transport transport = Transport::none;
  std::string net;                // "IB", "Socket", "AWS Libfabric"
  std::vector<std::string> hcas;  // "mlx5_0:1" (IB/RoCE ports used) or interfaces (Socket)
  std::vector<std::string> links;  // link layers of the ports used: "IB", "RoCE"
  int pxn_proxy = -1;             // sends through this rank's NIC (PXN)
  Gdr gdr = Gdr::unknown;
  std::string selected_network;   // "Using network X", even when no NET channel was seen
  std::vector<std::string> listed;  // the devices NCCL listed for it: "mlx5_0:1/RoCE", "eth0"
  std::string plugin;             // external net plugin loaded
  std::string plugin_version;     // "aws-ofi-nccl 1.5.0aws"
  std::string provider;           // libfabric provider ("efa") and NIC count
  long provider_nics = -1;
  bool plugin_used = false;
  std::string bootstrap_if, bootstrap_address;
  std::string oob_if;
  std::vector<std::string> intra;  // "P2P/IPC", "P2P/CUMEM", "SHM/direct/direct", …
  std::string no_ib_reason;        // why IB was not available: "NET/IB: No device found", …
  Status status = Status::incomplete;
  std::vector<WarnRecord> warnings;
};

struct NcclReport {
  std::vector<RankReport> ranks;   // sorted by rank, then host and pid
  std::vector<std::string> versions;
  int processes = 0;
  int hosts = 0;
  int world = -1;            // the largest communicator's size
  bool ranks_unique = true;  // every process has its own rank in that communicator
  bool multi_node = false;
  Transport transport = Transport::none;  // between nodes, for the whole job
  std::vector<std::string> nets;          // NET names used between nodes
  std::vector<std::string> hcas;          // every HCA port / interface used between nodes
  Gdr gdr = Gdr::unknown;
  std::vector<std::string> bootstrap_ifs;
  std::vector<std::string> intra;
  std::string level;    // "ok", "warning", "error", "none" (no NCCL output)
  std::string verdict;  // one line
};

NcclReport buildReport(const NcclLogState& state);

// "0-3,8,10-15"
std::string rankRanges(std::vector<int> ranks);
// "mlx5_0-3", "mlx5_0-2,5-8,11", "mlx4_0:2" (ports other than 1 are kept)
std::string compactHcas(const std::vector<std::string>& ports);

}  // namespace tlaunch::nccl

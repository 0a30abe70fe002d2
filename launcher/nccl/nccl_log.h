#pragma once
// One line of NCCL_DEBUG=INFO output, classified (pure: strings in, values out, no I/O).
//
// NCCL prefixes each message with "host:pid:tid [cudaDev] " (and "file.cc:123 " before WARN).
// Around that prefix there may be another launcher's tag ("[1,0]<stdout>:", "[56] ",
// "[node1:3] ", Ray's "(RayWorkerWrapper pid=626, ip=…) "), ANSI colours, and — when several
// processes write to one file — other processes' messages cut into the same line. parseLine
// splits such a line into one entry per NCCL message it can attribute. The formats are those of
// NCCL 2.4 to 2.27; anything not recognised is kept as kind `other`, never an error.
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tlaunch::nccl {

// Where a message came from.
struct LineOrigin {
  std::string host;    // NCCL's prefix; empty for a line without one ("NCCL version 2.4.8")
  long pid = -1;
  long tid = -1;
  int cuda_dev = -1;   // the [N] after host:pid:tid
  int tag_rank = -1;   // another launcher's rank tag: [1,0]<stdout>: → 0, [56] → 56, [node:3] → 3
  long tag_pid = -1;   // Ray's "(… pid=626 …)"
};

enum class EventKind {
  other,
  version,       // name: "2.27.5+cuda12.9"
  bootstrap,     // name: interface, address
  netDevices,    // net: "IB" / "Socket" / …; devices; oob_if / oob_address
  netNoDevice,   // net: "IB" ("NET/IB : No device found.")
  usingNetwork,  // name: "IB", "Socket", "AWS Libfabric" ("Using network X", "Assigned NET plugin X to comm")
  pluginLoaded,  // name: "AWS Libfabric" ("NET/Plugin: Loaded net plugin AWS Libfabric (v6)")
  pluginNone,    // no external net plugin: NCCL's internal IB/Socket
  ofiVersion,    // name: "aws-ofi-nccl 1.16.2"
  ofiProvider,   // name: "efa"; number: NICs found
  channel,       // hop
  commInfo,      // comm, rank, nranks, nnodes ("comm 0x… rank 8 nRanks 16 nNodes 2 …", "… Init START")
  initComplete,  // comm, rank, nranks
  envSetting,    // name = value ("NCCL_IB_DISABLE set by environment to 1.")
  errorTrace,    // name: "bootstrap.cc:100"; number: the error code it passes on (NCCL's "-> 2")
  warn,          // text
};

// One entry of "NET/IB : Using [0]mlx5_0:1/RoCE …" or "NET/Socket : Using [0]eth0:10.0.0.1<0>".
struct NetDevice {
  int index = -1;
  std::string name;     // "mlx5_0", "eth0"
  int port = 0;         // HCA port; 0 for a socket interface
  std::string link;     // "IB", "RoCE"; empty for a socket interface
  std::string address;  // socket interface address
  bool operator==(const NetDevice&) const = default;
};

enum class Direction { none, send, receive };

// "Channel 00/0 : 9[1] -> 0[0] [send] via NET/IB/0(8)/GDRDMA", "Ring 00 : 1 -> 0 via P2P/IPC".
struct ChannelHop {
  int src = -1;
  int dst = -1;
  Direction direction = Direction::none;
  std::string path;     // everything after "via ": "NET/IB/0(8)/GDRDMA", "P2P/IPC/read", "SHM/direct/direct"
  std::string net;      // for NET paths: "IB", "Socket", "AWS Libfabric"
  int net_dev = -1;     // for NET paths: index into the process's device list
  int proxy_rank = -1;  // PXN: the rank whose NIC carries the traffic ("(8)")
  bool gdr = false;     // the path ends in /GDRDMA (or has it before /Shared)
  bool isNet() const { return !net.empty(); }
  // The rank that printed the line: the receiver of a [receive] hop, else the sender.
  int self() const { return direction == Direction::receive ? dst : src; }
};

struct Event {
  EventKind kind = EventKind::other;
  bool warning_level = false;  // "NCCL WARN"
  std::string text;            // the message after "NCCL INFO " / "NCCL WARN " (cleaned)
  std::string name;
  std::string address;
  std::string value;
  long number = -1;
  std::string net;
  std::vector<NetDevice> devices;
  std::string oob_if;
  std::string oob_address;
  ChannelHop hop;
  std::string comm;  // "0x7f3ff4001980"
  int rank = -1;
  int nranks = -1;
  int nnodes = -1;
};

struct LogLine {
  LineOrigin origin;
  bool at_line_start = false;  // the NCCL prefix began the line (after any launcher tag)
  Event event;
};

// Removes ANSI escape sequences and control characters other than tab.
std::string cleanText(std::string_view raw);

// The NCCL messages in one raw line (without its newline). `knownHosts` are host names already
// seen at the start of a line: they let a prefix glued to the previous message
// ("…cudaDev 0ljm:803564:803604 [1] NCCL INFO …") be cut at the right place.
std::vector<LogLine> parseLine(std::string_view raw, const std::set<std::string, std::less<>>& knownHosts = {});

// Classifies the text of one message ("NET/IB : Using …"); `warn` for NCCL WARN messages.
Event classifyMessage(std::string_view text, bool warn);

}  // namespace tlaunch::nccl

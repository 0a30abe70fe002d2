#pragma once
// --nccl-check on a node: one rank's NCCL debug output, read as it grows — from the files NCCL
// writes under NCCL_DEBUG_FILE ("DIR/nccl.rankN.%h.%p.log": every file with that prefix) or
// from the rank's stderr when the user set NCCL_DEBUG — until its first communicator's
// `Init COMPLETE`. Then the lines that matter to the transport report (bootstrap, NET devices,
// plugins, channels, WARNs, Init COMPLETE) go to the frontend, which parses them again
// (launcher/nccl). Reads are bounded; the caller drives poll() from a timer on its io thread.
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/message.h"

namespace tlaunch {

class NcclLogWatch {
 public:
  struct Limits {
    std::size_t read_chunk = std::size_t{64} << 10;   // per file per poll
    std::size_t max_bytes = std::size_t{8} << 20;     // parsed per rank, in all: then give up
    std::size_t max_summary = std::size_t{32} << 10;  // kept lines sent to the frontend
    std::size_t max_line = 4096;                // a longer line is cut
  };

  // dir: the daemon's job directory; "" when the rank's stderr is the only source.
  NcclLogWatch(std::string dir, int rank, Limits limits);
  NcclLogWatch(std::string dir, int rank) : NcclLogWatch(std::move(dir), rank, Limits{}) {}

  // Reads what the rank's files gained since the last poll (at most read_chunk each).
  void poll();
  // The same for `names`, its files in the directory (listed once for every rank: NcclWatchSet).
  void poll(const std::vector<std::string>& names);
  // Bytes of the rank's stderr (the user's own NCCL_DEBUG).
  void feed(std::string_view bytes);

  bool ready() const { return complete_ && !sent_; }         // a summary is waiting
  bool finished() const { return sent_ || exhausted_; }      // nothing more to read
  // {"t": "nccl", "r": rank, "lines": [...], "truncated": bool}; marks the summary sent.
  Json takeSummary();

 private:
  void feedText(std::string_view text, std::string& pending);
  void line(std::string_view raw);

  std::string dir_;
  int rank_;
  Limits limits_;
  std::map<std::string, std::size_t> offsets_;  // file name → bytes read
  std::map<std::string, std::string> pending_;  // per file (and "" for stderr): a partial line
  std::set<std::string, std::less<>> known_hosts_;
  std::vector<std::string> kept_;
  std::size_t kept_bytes_ = 0;
  std::size_t parsed_ = 0;
  bool truncated_ = false;
  bool complete_ = false;
  bool sent_ = false;
  bool exhausted_ = false;
};

}  // namespace tlaunch

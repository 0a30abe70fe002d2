#pragma once
// The values command-line flags accept, checked with a message that names the flag, the value
// and what is allowed. Pure: the CLI (cli_options.cc) and the unit tests call these.
#include <string>
#include <string_view>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

// Bounds of the numeric flags: far beyond any real job, well inside what the planner and the
// timers can represent (seconds become milliseconds in an int).
inline constexpr int kMaxNodes = 100'000;
inline constexpr int kMaxRanksPerNode = 4096;
inline constexpr int kMaxWorldSize = 1'000'000;
inline constexpr int kMaxSeconds = 86'400;  // timeouts: at most a day
inline constexpr int kMaxKeepDaemonsSeconds = 7 * 86'400;  // --keep-daemons: a week (tlaunchd --keep-for agrees)
inline constexpr int kMaxSshFanout = 10'000;
inline constexpr int kMaxCpusPerRank = 65'536;
inline constexpr double kMaxRateGbps = 100'000;

// A whole number in [min, max], e.g. parseBoundedInt("-p", "8", 1, 4096). The error
// (Errc::usage) reads "-p 100000000: must be a whole number from 1 to 4096".
Result<int> parseBoundedInt(std::string_view flag, std::string_view text, int min, int max);
// A decimal number in (0, max].
Result<double> parseRate(std::string_view flag, std::string_view text, double max);

// torchrun's --nnodes: "N", or "MIN:MAX" (elastic). Returns {min, max}.
Result<std::pair<int, int>> parseNnodes(std::string_view text);

// torchrun's --nproc-per-node: a count, or gpu / auto / cpu. Sets exactly one of the outputs.
struct NprocPerNode {
  int count = 0;     // a number was given
  std::string word;  // "gpu", "auto" or "cpu"
};
Result<NprocPerNode> parseNprocPerNode(std::string_view text);

// --time-limit: a duration with units ("90s", "10m", "1h30m", "2d") or H:MM:SS / MM:SS, from
// 1 s to `max_seconds` (0 too when `zero_allowed`: "0", "0s", "0:00"). A bare number is
// refused: srun reads minutes, mpirun seconds.
inline constexpr int kMaxTimeLimitSeconds = 365 * 86'400;
Result<int> parseDuration(std::string_view flag, std::string_view text, int max_seconds = kMaxTimeLimitSeconds,
                          bool zero_allowed = false);
// The timeouts documented in seconds (--connect-timeout, --kill-timeout, ...): a bare number is
// seconds, and a duration with units (30s, 2m) means what it says; from min to max seconds.
Result<int> parseSeconds(std::string_view flag, std::string_view text, int min, int max);
// 5400 → "1h30m", 600 → "10m", 45 → "45s".
std::string formatDuration(int seconds);

// --mca KEY VALUE → "OMPI_MCA_KEY=VALUE" (an export).
Result<std::string> mcaExport(std::string_view key, std::string_view value);
// --master-addr: an IP address or a host name.
Result<std::string> checkMasterAddr(std::string_view text);
// Why `text` is neither an IPv4 or IPv6 address nor a host name (RFC 1123), or "" (MASTER_ADDR's
// rule; nothing is resolved).
std::string badHostOrAddress(std::string_view text);
bool isHostOrAddress(std::string_view text);

// --net-cidr: "" when text is ADDRESS/PREFIX, else why not. --net-if: "" when text can be an
// interface name (1-15 characters, no '/', ':' or blanks), else why not.
std::string badCidr(std::string_view text);
std::string badInterfaceName(std::string_view text);

// The names --preflight-skip accepts: every check a node, the frontend or the cross-node
// comparison reports.
const std::vector<std::string>& preflightCheckNames();
// "" when `name` is a check; else the message naming it and the valid ones.
std::string unknownCheck(std::string_view name);

}  // namespace tlaunch

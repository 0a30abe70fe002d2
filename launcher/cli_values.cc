#include "launcher/cli_values.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>

#include "binding/fabric/ipv4_net.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {
std::string str(std::string_view s) { return std::string(s); }

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}
}  // namespace

Result<int> parseBoundedInt(std::string_view flag, std::string_view text, int min, int max) {
  const std::string what = str(flag) + " " + str(text) + ": must be a whole number from " + std::to_string(min) +
                           " to " + std::to_string(max);
  // Digits only (no sign, no "8x"); more than 10 digits cannot be in range and must not overflow.
  if (!allDigits(text) || text.size() > 10) return fail(Errc::usage, what);
  std::int64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  if (v < min || v > max) return fail(Errc::usage, what);
  return static_cast<int>(v);
}

Result<double> parseRate(std::string_view flag, std::string_view text, double max) {
  const std::string what = str(flag) + " " + str(text) + ": must be a number of Gb/s above 0 and at most " +
                           std::to_string(static_cast<long>(max));
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !(v > 0) || v > max)
    return fail(Errc::usage, what);
  return v;
}

Result<std::pair<int, int>> parseNnodes(std::string_view text) {
  const std::string hint = "write --nnodes N, or --nnodes MIN:MAX (torchrun's elastic form)";
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    auto n = parseBoundedInt("--nnodes", text, 1, kMaxNodes);
    if (!n) return fail(Errc::usage, n.error().message, hint);
    return std::pair{*n, *n};
  }
  auto lo = parseBoundedInt("--nnodes", text.substr(0, colon), 1, kMaxNodes);
  auto hi = parseBoundedInt("--nnodes", text.substr(colon + 1), 1, kMaxNodes);
  if (!lo || !hi)
    return fail(Errc::usage, "--nnodes " + str(text) + ": MIN and MAX must be whole numbers from 1 to " +
                                 std::to_string(kMaxNodes),
                hint);
  if (*lo > *hi) return fail(Errc::usage, "--nnodes " + str(text) + ": MIN is larger than MAX", hint);
  return std::pair{*lo, *hi};
}

Result<NprocPerNode> parseNprocPerNode(std::string_view text) {
  if (text == "gpu" || text == "auto" || text == "cpu") return NprocPerNode{0, str(text)};
  auto n = parseBoundedInt("--nproc-per-node", text, 1, kMaxRanksPerNode);
  if (!n)
    return fail(Errc::usage, "--nproc-per-node " + str(text) + ": must be gpu, auto, cpu or a whole number from 1 to " +
                                 std::to_string(kMaxRanksPerNode));
  return NprocPerNode{*n, ""};
}

namespace {

// The seconds a duration's text says ("90s", "1h30m", "1:30:00"), unbounded but for overflow
// (more than kHuge reads as kHuge + 1), or why it is no duration.
struct DurationText {
  long long seconds = 0;
  std::string error;  // "" when it is one
};

DurationText readDuration(std::string_view text) {
  constexpr long long kHuge = 1LL << 40;  // ~35,000 years: beyond every range, and times 86,400 fits
  // Digits at text[i..], their value held at kHuge + 1 at most (no overflow, even times a
  // day's seconds; a value that big is out of every range, and said so); returns how many.
  auto number = [&](size_t i, long long& n) {
    size_t j = i;
    for (n = 0; j < text.size() && text[j] >= '0' && text[j] <= '9'; ++j)
      n = std::min(n * 10 + (text[j] - '0'), kHuge + 1);
    return j - i;
  };
  DurationText out;
  if (text.find(':') != std::string_view::npos) {  // [H:]MM:SS
    int fields = 0;
    for (size_t i = 0;; ++fields) {
      long long n = 0;
      const size_t len = number(i, n);
      if (len == 0) return {0, "not a duration"};
      if (fields > 0 && n > 59) return {0, "minutes and seconds go up to 59"};
      out.seconds = std::min(out.seconds * 60 + n, kHuge + 1);
      i += len;
      if (i == text.size()) break;
      if (text[i] != ':' || fields == 2) return {0, "not a duration (H:MM:SS or MM:SS)"};
      ++i;
    }
    return out;
  }
  if (text.empty()) return {0, "empty"};
  static constexpr std::string_view units = "smhd";
  static constexpr long long scale[] = {1, 60, 3600, 86'400};
  for (size_t i = 0; i < text.size();) {
    long long n = 0;
    const size_t len = number(i, n);
    if (len == 0) return {0, "not a duration"};
    i += len;
    if (i == text.size())
      return {0, "a unit is missing (s, m, h or d): srun reads a bare number as minutes, mpirun as seconds"};
    const auto u = units.find(text[i]);
    if (u == std::string_view::npos) return {0, "unknown unit '" + std::string(1, text[i]) + "' (s, m, h or d)"};
    out.seconds = std::min(out.seconds + std::min(n, kHuge + 1) * scale[u], kHuge + 1);
    ++i;
  }
  return out;
}

}  // namespace

Result<int> parseDuration(std::string_view flag, std::string_view text, int max_seconds, bool zero_allowed) {
  const std::string range =
      std::string("must be ") + (zero_allowed ? "0 or " : "") + "from 1s to " + formatDuration(max_seconds);
  auto bad = [&](const std::string& why) {
    return fail(Errc::usage, str(flag) + " " + str(text) + ": " + why,
                "give a duration such as 90s, 10m, 1h30m, 2d or 1:30:00");
  };
  // Zero needs no unit: it means the same in any.
  if (zero_allowed && !text.empty() && text.find_first_not_of('0') == std::string_view::npos) return 0;
  const DurationText d = readDuration(text);
  if (!d.error.empty()) return bad(d.error);
  if (d.seconds == 0 && zero_allowed) return 0;
  if (d.seconds < 1 || d.seconds > max_seconds) return bad(range);
  return static_cast<int>(d.seconds);
}

Result<int> parseSeconds(std::string_view flag, std::string_view text, int min, int max) {
  const std::string range = "must be from " + std::to_string(min) + " to " + std::to_string(max) +
                            " seconds (a bare number, or with units: 30s, 2m, 1h)";
  // Read without bounds first (a bare number up to 10 digits, a duration up to overflow), so
  // that every value out of range gets the same words.
  long long seconds = 0;
  if (allDigits(text)) {
    if (text.size() > 10) return fail(Errc::usage, str(flag) + " " + str(text) + ": " + range);
    std::from_chars(text.data(), text.data() + text.size(), seconds);
  } else {
    const DurationText d = readDuration(text);
    if (!d.error.empty())
      return fail(Errc::usage, str(flag) + " " + str(text) + ": " + d.error,
                  "give seconds (30) or a duration (30s, 2m, 1h)");
    seconds = d.seconds;
  }
  if (seconds < min || seconds > max) return fail(Errc::usage, str(flag) + " " + str(text) + ": " + range);
  return static_cast<int>(seconds);
}

std::string formatDuration(int seconds) {
  std::string out;
  const int parts[] = {seconds / 86'400, seconds / 3600 % 24, seconds / 60 % 60, seconds % 60};
  const char units[] = {'d', 'h', 'm', 's'};
  for (int k = 0; k < 4; ++k)
    if (parts[k] > 0) out += std::to_string(parts[k]) + units[k];
  return out.empty() ? "0s" : out;
}

Result<std::string> mcaExport(std::string_view key, std::string_view value) {
  const bool ok = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!ok)
    return fail(Errc::usage, "--mca '" + str(key) + "': an MCA parameter name has only letters, digits and '_'",
                "e.g. --mca btl_tcp_if_include eth0");
  return "OMPI_MCA_" + str(key) + "=" + str(value);
}

std::string badHostOrAddress(std::string_view text) {
  const std::string t(text);
  in6_addr any{};
  if (::inet_pton(AF_INET, t.c_str(), &any) == 1 || ::inet_pton(AF_INET6, t.c_str(), &any) == 1) return "";
  if (const auto colon = text.rfind(':'); colon != std::string_view::npos && text.find(':') == colon && colon > 0)
    return "'" + visibleText(text) + "' looks like HOST:PORT: give the host alone and the port with --master-port " +
           "(MASTER_PORT)";
  // A host name (RFC 1123): labels of letters, digits and '-', not at a label's ends; the last
  // label not all digits (999.1.1.1 is a bad address, not a name).
  std::string_view rest = text;
  if (!rest.empty() && rest.back() == '.') rest.remove_suffix(1);
  bool ok = !rest.empty() && rest.size() <= 253;
  std::string_view label;
  while (ok && !rest.empty()) {
    const auto dot = rest.find('.');
    label = rest.substr(0, dot);
    rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
    ok = !label.empty() && label.size() <= 63 && label.front() != '-' && label.back() != '-' &&
         std::all_of(label.begin(), label.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
         }) && (dot == std::string_view::npos || !rest.empty());
  }
  if (ok && std::all_of(label.begin(), label.end(), [](char c) { return c >= '0' && c <= '9'; })) ok = false;
  return ok ? "" : "'" + visibleText(text) + "' is neither an IPv4 or IPv6 address nor a host name";
}

bool isHostOrAddress(std::string_view text) { return badHostOrAddress(text).empty(); }

Result<std::string> checkMasterAddr(std::string_view text) {
  if (const std::string why = badHostOrAddress(text); !why.empty()) return fail(Errc::usage, "--master-addr " + why);
  return str(text);
}

std::string badCidr(std::string_view text) {
  if (text.find('/') != std::string_view::npos && parseCidr(text)) return "";
  return "'" + str(text) + "' is not an IPv4 subnet: write ADDRESS/PREFIX, e.g. 10.1.0.0/16";
}

std::string badInterfaceName(std::string_view text) {
  // The kernel's rule (dev_valid_name): at most 15 bytes, no '/', ':' or white space.
  const bool ok = !text.empty() && text.size() <= 15 && text != "." && text != ".." &&
                  std::none_of(text.begin(), text.end(), [](char c) { return c == '/' || c == ':' || c <= ' '; });
  return ok ? "" : "'" + str(text) + "' cannot be a network interface name (1-15 characters, no '/', ':' or blanks)";
}

const std::vector<std::string>& preflightCheckNames() {
  // Nodes (binding/preflight_checks.cc, verbs_probe.cc), the cross-node comparison
  // (preflight_cross_node.cc) and the frontend's own tests (rdma_pair, reachability, network).
  static const std::vector<std::string> names = {
      "rdma_devices", "port_state",   "lid",          "rate",          "netdev",        "roce_gid",
      "verbs_devices", "uverbs",      "memlock",      "gpus",          "gpudirect",     "nccl_env",
      "nccl_socket_ifname", "verbs_port", "verbs_selftest", "cross_rails", "cross_rate", "cross_mtu",
      "cross_subnets", "rdma_pair",   "reachability", "network"};
  return names;
}

std::string unknownCheck(std::string_view name) {
  const auto& names = preflightCheckNames();
  if (std::find(names.begin(), names.end(), name) != names.end()) return "";
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return "unknown check '" + str(name) + "'; the checks are: " + list;
}

}  // namespace tlaunch

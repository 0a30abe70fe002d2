#include "launcher/nccl/nccl_state.h"

#include <algorithm>

#include "launcher/nccl/nccl_text.h"

namespace tlaunch::nccl {
namespace {

// Bounds against hostile or endless input: a real process has a few hundred distinct hops.
constexpr std::size_t kMaxHops = 4096;
constexpr std::size_t kMaxWarnings = 64;
constexpr std::size_t kMaxComms = 1024;
constexpr std::size_t kMaxPendingLine = 16u << 20;
constexpr int kMaxSamePidScan = 256;

std::string hopKey(const ChannelHop& hop) {
  return std::to_string(hop.src) + ">" + std::to_string(hop.dst) + ":" + std::to_string(static_cast<int>(hop.direction)) +
         ":" + hop.path;
}

}  // namespace

bool ProcessState::initComplete() const {
  return std::any_of(comms.begin(), comms.end(), [](const CommState& c) { return c.complete; });
}

void NcclLogState::feed(std::string_view line, std::string_view source) {
  ++lines_;
  for (const LogLine& parsed : parseLine(line, known_hosts_)) {
    ++nccl_messages_;
    if (parsed.origin.host.empty()) {
      if (parsed.event.kind == EventKind::version) versions_.insert(parsed.event.name);
      continue;
    }
    ProcessState& p = processFor(parsed, source);
    if (parsed.at_line_start && p.host == parsed.origin.host && known_hosts_.size() < 4096)
      known_hosts_.insert(parsed.origin.host);
    apply(p, parsed.event);
  }
}

void NcclLogState::feedText(std::string_view text, std::string_view source) {
  if (!pending_.empty() && source != pending_source_) finish();
  while (!text.empty()) {
    auto nl = text.find('\n');
    if (nl == std::string_view::npos) {
      pending_.append(text);
      pending_source_ = std::string(source);
      if (pending_.size() > kMaxPendingLine) finish();
      return;
    }
    if (pending_.empty()) {
      feed(text.substr(0, nl), source);
    } else {
      pending_.append(text.substr(0, nl));
      feed(pending_, source);
      pending_.clear();
    }
    text.remove_prefix(nl + 1);
  }
}

void NcclLogState::finish() {
  if (pending_.empty()) return;
  std::string line;
  line.swap(pending_);
  feed(line, pending_source_);
}

ProcessState& NcclLogState::processFor(const LogLine& line, std::string_view source) {
  auto key = std::make_pair(line.origin.host, line.origin.pid);
  auto it = index_.find(key);
  if (it == index_.end() && !known_hosts_.contains(line.origin.host)) {
    // A line whose start was cut off ("pseek-v2-5-0-1:627:…"): the process it ends, with that
    // pid. Only so many are looked at (pid 1 in every container).
    auto [from, to] = by_pid_.equal_range(line.origin.pid);
    for (int looked = 0; from != to && looked < kMaxSamePidScan; ++from, ++looked) {
      const std::string& host = processes_[from->second].host;
      if (!host.ends_with(line.origin.host) || host.size() == line.origin.host.size()) continue;
      // A host that begins its line is taken as cut only from a known host, cut within a name:
      // "worker-0" beside "job-worker-0" (both pid 7 in their containers) is another host.
      bool cutWithinName = isAlnum(host[host.size() - line.origin.host.size() - 1]);
      if (line.at_line_start && !(cutWithinName && known_hosts_.contains(host))) continue;
      it = index_.find(std::make_pair(host, line.origin.pid));
      break;
    }
  }
  if (it == index_.end()) {
    ProcessState p;
    p.host = line.origin.host;
    p.pid = line.origin.pid;
    p.source = std::string(source);
    it = index_.emplace(key, processes_.size()).first;
    by_pid_.emplace(p.pid, processes_.size());
    processes_.push_back(std::move(p));
  }
  ProcessState& p = processes_[it->second];
  if (p.cuda_dev < 0) p.cuda_dev = line.origin.cuda_dev;
  if (line.origin.tag_rank >= 0) p.tag_rank = line.origin.tag_rank;
  return p;
}

void NcclLogState::apply(ProcessState& p, const Event& e) {
  ++p.messages;
  switch (e.kind) {
    case EventKind::version: p.version = e.name; versions_.insert(e.name); break;
    case EventKind::bootstrap:
      p.bootstrap_if = e.name;
      p.bootstrap_address = e.address;
      break;
    case EventKind::netDevices:
      if (e.net == "Socket") {
        p.socket_devices = e.devices;
      } else {
        p.ib_devices = e.devices;
      }
      if (!e.oob_if.empty()) {
        p.oob_if = e.oob_if;
        p.oob_address = e.oob_address;
      }
      break;
    case EventKind::netNoDevice: if (e.net == "IB") p.ib_no_device = true; break;
    case EventKind::usingNetwork: p.using_network = e.name; break;
    case EventKind::pluginLoaded: p.plugin = e.name; break;
    case EventKind::pluginNone: break;
    case EventKind::ofiVersion: p.plugin_version = e.name; break;
    case EventKind::ofiProvider:
      p.provider = e.name;
      p.provider_nics = e.number;
      break;
    case EventKind::channel:
      if (p.hops.size() < kMaxHops) p.hops.emplace(hopKey(e.hop), e.hop);
      break;
    case EventKind::commInfo:
    case EventKind::initComplete: {
      auto c = std::find_if(p.comms.begin(), p.comms.end(), [&](const CommState& s) { return s.comm == e.comm; });
      if (c == p.comms.end()) {
        if (p.comms.size() >= kMaxComms) break;
        p.comms.push_back(CommState{e.comm, e.rank, e.nranks, e.nnodes, false});
        c = std::prev(p.comms.end());
      }
      c->rank = e.rank;
      c->nranks = e.nranks;
      if (e.nnodes > 0) c->nnodes = e.nnodes;
      if (e.kind == EventKind::initComplete) c->complete = true;
      break;
    }
    case EventKind::envSetting:
      if (p.env.size() < 256) p.env[e.name] = e.value;
      break;
    case EventKind::errorTrace:
      if (e.number != 0) {
        ++p.error_traces;
        if (p.last_warning >= 0) p.warnings[static_cast<std::size_t>(p.last_warning)].followed_by_error = true;
      }
      break;
    case EventKind::warn: {
      std::string text = e.text.substr(0, 512);
      auto w = std::find_if(p.warnings.begin(), p.warnings.end(), [&](const WarnRecord& r) { return r.text == text; });
      if (w != p.warnings.end()) {
        ++w->count;
        p.last_warning = static_cast<int>(w - p.warnings.begin());
      } else if (p.warnings.size() < kMaxWarnings) {
        p.warnings.push_back(WarnRecord{std::move(text), 1, false});
        p.last_warning = static_cast<int>(p.warnings.size()) - 1;
      }
      break;
    }
    case EventKind::other: break;
  }
}

}  // namespace tlaunch::nccl

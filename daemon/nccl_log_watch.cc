#include "daemon/nccl_log_watch.h"

#include <filesystem>
#include <fstream>

#include "launcher/nccl/nccl_log.h"

namespace tlaunch {

namespace fs = std::filesystem;

NcclLogWatch::NcclLogWatch(std::string dir, int rank, Limits limits)
    : dir_(std::move(dir)), rank_(rank), limits_(limits) {}

void NcclLogWatch::poll() {
  if (dir_.empty() || finished()) return;
  const std::string prefix = "nccl.rank" + std::to_string(rank_) + ".";
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with(prefix) && entry.is_regular_file(ec)) names.push_back(std::move(name));
  }
  poll(names);
}

void NcclLogWatch::poll(const std::vector<std::string>& names) {
  if (dir_.empty() || finished()) return;
  for (const auto& name : names) {
    std::ifstream in(dir_ + "/" + name, std::ios::binary);
    if (!in) continue;
    std::size_t& offset = offsets_[name];
    in.seekg(static_cast<std::streamoff>(offset));
    std::string chunk(limits_.read_chunk, '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<std::size_t>(in.gcount()));
    offset += chunk.size();
    feedText(chunk, pending_[name]);
    if (finished()) return;
  }
}

void NcclLogWatch::feed(std::string_view bytes) {
  if (!finished()) feedText(bytes, pending_[""]);
}

void NcclLogWatch::feedText(std::string_view text, std::string& pending) {
  parsed_ += text.size();
  while (!text.empty() && !complete_) {
    const auto nl = text.find('\n');
    const std::string_view part = text.substr(0, nl);
    if (pending.size() < limits_.max_line) pending.append(part.substr(0, limits_.max_line - pending.size()));
    if (nl == std::string_view::npos) break;
    line(pending);
    pending.clear();
    text.remove_prefix(nl + 1);
  }
  // A rank whose NCCL never completes init must not cost the daemon unbounded parsing.
  if (!complete_ && parsed_ >= limits_.max_bytes) exhausted_ = true;
}

void NcclLogWatch::line(std::string_view raw) {
  bool keep = false;
  for (const auto& l : nccl::parseLine(raw, known_hosts_)) {
    if (l.at_line_start && !l.origin.host.empty() && !known_hosts_.contains(l.origin.host))
      known_hosts_.insert(l.origin.host);
    if (l.event.kind != nccl::EventKind::other || l.event.warning_level) keep = true;
    if (l.event.kind == nccl::EventKind::initComplete) complete_ = true;
  }
  if (!keep) return;
  if (kept_bytes_ + raw.size() > limits_.max_summary) {
    truncated_ = true;
    return;
  }
  kept_bytes_ += raw.size();
  kept_.emplace_back(raw);
}

Json NcclLogWatch::takeSummary() {
  sent_ = true;
  return Json{{"t", "nccl"}, {"r", rank_}, {"lines", kept_}, {"truncated", truncated_}};
}

}  // namespace tlaunch

#include "launcher/split_starter.h"

#include <algorithm>

namespace tlaunch {

SplitStarter::SplitStarter(std::vector<bool> is_local, std::unique_ptr<DaemonStarter> remote)
    : is_local_(std::move(is_local)), remote_(std::move(remote)) {}

const char* SplitStarter::name() const {
  // Every node this host: none went over ssh (-v said "via ssh").
  return std::all_of(is_local_.begin(), is_local_.end(), [](bool here) { return here; }) ? local_.name()
                                                                                          : remote_->name();
}

Result<void> SplitStarter::start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                                 const std::string& secret) {
  std::vector<NodeTarget> here, there;
  for (const auto& n : nodes)
    (n.index < static_cast<int>(is_local_.size()) && is_local_[n.index] ? here : there).push_back(n);
  if (!here.empty())
    if (auto r = local_.start(here, command, secret); !r) return r;
  if (!there.empty()) return remote_->start(there, command, secret);
  return {};
}

std::vector<StartFailure> SplitStarter::poll() {
  auto out = local_.poll();
  for (auto& f : remote_->poll()) out.push_back(std::move(f));
  return out;
}

void SplitStarter::daemonConnected(int node_index) {
  if (node_index < static_cast<int>(is_local_.size()) && is_local_[node_index]) local_.daemonConnected(node_index);
  else remote_->daemonConnected(node_index);
}

void SplitStarter::daemonLost(int node_index) {
  if (node_index < static_cast<int>(is_local_.size()) && is_local_[node_index]) local_.daemonLost(node_index);
  else remote_->daemonLost(node_index);
}

void SplitStarter::stop(int grace_ms) {
  remote_->stop(grace_ms);
  local_.stop(grace_ms);
}

}  // namespace tlaunch

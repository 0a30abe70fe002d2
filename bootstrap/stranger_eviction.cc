#include "bootstrap/stranger_eviction.h"

#include <unordered_map>

namespace tlaunch {

std::string_view hostOfPeer(std::string_view peer) {
  const size_t colon = peer.rfind(':');
  return colon == std::string_view::npos ? peer : peer.substr(0, colon);
}

size_t strangerToDrop(const std::vector<std::string_view>& peers_oldest_first) {
  struct Count {
    size_t waiting = 0;
    size_t oldest = 0;  // index of that host's oldest connection
  };
  std::unordered_map<std::string_view, Count> by_host;
  for (size_t i = 0; i < peers_oldest_first.size(); ++i) {
    auto [it, fresh] = by_host.try_emplace(hostOfPeer(peers_oldest_first[i]));
    if (fresh) it->second.oldest = i;
    ++it->second.waiting;
  }
  // The host with the most waiting; among equals, the one whose oldest waited longest.
  size_t drop = 0, most = 0;
  for (const auto& [host, count] : by_host) {
    if (count.waiting > most || (count.waiting == most && count.oldest < drop)) {
      most = count.waiting;
      drop = count.oldest;
    }
  }
  return drop;
}

}  // namespace tlaunch

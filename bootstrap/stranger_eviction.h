#pragma once
// Which connection goes when too many have connected without proving the job's secret yet (the
// frontend's, a tree parent's and a warm keeper's listening sockets each hold a bounded number).
// First, the oldest if it has waited kStrangerGrace: a daemon answers its challenge within
// milliseconds, so a connection that old is not one about to prove itself. Else the oldest of
// those from the source host that holds the most of them: a flood from one host then displaces
// only its own connections, and a daemon connecting from another host keeps its place however
// fast the flood comes. (Dropping the oldest of all let anyone who can reach the port push a
// starting job's daemons out by connecting faster than strangers time out.) A flood fast enough
// to displace a daemon anyway (from many addresses of its host) costs it one try: daemons
// connect again until their --connect-timeout (DaemonSession::onClose).
#include <chrono>
#include <iterator>
#include <string_view>
#include <vector>

namespace tlaunch {

// "10.0.0.2:40122" -> "10.0.0.2", "::1:40122" -> "::1"; a peer without a port is its own host.
std::string_view hostOfPeer(std::string_view peer);

// `peers_oldest_first`: each waiting connection's peer (ByteStream::peer()), the oldest first.
// Returns the index of the one to drop (0 for one or none).
size_t strangerToDrop(const std::vector<std::string_view>& peers_oldest_first);

inline constexpr std::chrono::seconds kStrangerGrace{1};

// The same over a listener's own list (oldest first): among the items `waiting` accepts (not
// yet authenticated, still open), the one to drop, by `peerOf` (its peer string) and `sinceOf`
// (when it connected); `last` if none.
template <class It, class Waiting, class PeerOf, class SinceOf>
It strangerToDrop(It first, It last, Waiting waiting, PeerOf peerOf, SinceOf sinceOf,
                  std::chrono::steady_clock::time_point now) {
  std::vector<It> candidates;
  std::vector<std::string_view> peers;
  for (It it = first; it != last; ++it)
    if (waiting(*it)) {
      candidates.push_back(it);
      peers.push_back(peerOf(*it));
    }
  if (candidates.empty()) return last;
  if (now - sinceOf(*candidates.front()) >= kStrangerGrace) return candidates.front();
  return candidates[strangerToDrop(peers)];
}

}  // namespace tlaunch

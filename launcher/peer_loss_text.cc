#include "launcher/peer_loss_text.h"

#include <array>

namespace tlaunch {

bool looksLikePeerLoss(std::string_view message) {
  // gloo, NCCL, torch's TCPStore and c10d sockets, and the errno texts beneath them.
  static constexpr std::array<std::string_view, 10> kPeerGone = {
      "Connection closed by peer",
      "Connection reset by peer",
      "Broken pipe",
      "NCCL communicator was aborted",
      "remote process exited or there was a network error",
      "Socket Timeout",
      "Connection refused",
      "failed to recv, got 0 bytes",
      "DistNetworkError",
      "ProcessGroupNCCL's watchdog",
  };
  for (auto text : kPeerGone)
    if (message.find(text) != std::string_view::npos) return true;
  return false;
}

}  // namespace tlaunch

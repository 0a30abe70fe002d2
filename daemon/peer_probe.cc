#include "daemon/peer_probe.h"

#include <memory>

#include <asio.hpp>

#include "bootstrap/close_fds.h"

namespace tlaunch {

std::vector<ProbeOutcome> probeTargets(const std::vector<ReachTarget>& targets, std::chrono::milliseconds timeout) {
  // A private io_context keeps the deadline exact whatever else the daemon does.
  asio::io_context probe_io;
  asio::steady_timer deadline(probe_io, timeout);
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> sockets;
  std::vector<asio::error_code> results(targets.size(), asio::error::timed_out);
  size_t pending = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    asio::error_code ec;
    auto addr = asio::ip::make_address(targets[i].addr, ec);
    if (ec) {
      results[i] = ec;
      continue;
    }
    auto sock = std::make_unique<asio::ip::tcp::socket>(probe_io);
    sock->open(addr.is_v6() ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), ec);
    if (ec) {
      results[i] = ec;
      continue;
    }
    markCloseOnExec(sock->native_handle());
    sockets.push_back(std::move(sock));
    ++pending;
    sockets.back()->async_connect({addr, static_cast<unsigned short>(targets[i].port)}, [&, i](const asio::error_code& e) {
      results[i] = e;
      if (--pending == 0) deadline.cancel();
    });
  }
  deadline.async_wait([&](const asio::error_code& e) {
    if (e) return;
    for (auto& s : sockets) {
      asio::error_code ignore;
      s->close(ignore);
    }
  });
  if (pending > 0) probe_io.run();
  std::vector<ProbeOutcome> out;
  for (size_t i = 0; i < targets.size(); ++i)
    out.push_back({targets[i], !results[i]                                     ? ""
                               : results[i] == asio::error::operation_aborted ? "timed out"
                                                                               : results[i].message()});
  return out;
}

std::string describeProbeFailures(const std::string& node, const std::vector<ProbeOutcome>& outcomes) {
  std::string text;
  for (const auto& o : outcomes) {
    if (o.error.empty()) continue;
    text += (text.empty() ? "" : "; ") + std::string("node ") + node + " cannot reach node " + o.target.node + " at " +
            o.target.addr + ":" + std::to_string(o.target.port) + " (" + o.error + ")";
  }
  return text;
}

}  // namespace tlaunch

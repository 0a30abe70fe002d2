// tlaunchd's way to its upstream (the frontend, or its tree parent): the connect to the
// addresses tlaunch gave, each tried in turn within --connect-timeout, and a new connect when
// an accepted connection never gets its challenge.
#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "daemon/daemon_session.h"

namespace tlaunch {

void DaemonSession::connect(int attempt) {
  // connect_host may list several addresses (comma-separated): they are tried in order.
  asio::ip::tcp::resolver resolver(io_);
  std::vector<asio::ip::tcp::endpoint> endpoints;
  std::string unresolved;
  size_t start = 0;
  while (start <= opts_.connect_host.size()) {
    size_t comma = opts_.connect_host.find(',', start);
    std::string host = opts_.connect_host.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    asio::error_code ec;
    for (const auto& e : resolver.resolve(host, std::to_string(opts_.connect_port), ec)) endpoints.push_back(e.endpoint());
    if (ec) unresolved += " " + host + " (" + ec.message() + ")";
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (endpoints.empty()) {
    spdlog::error("cannot resolve the address of {}:{}", upstreamName(), unresolved);
    shutdown(69);
    return;
  }
  // Once, at the first try: reconnecting (a challenge that never came) stays within it, as
  // tlaunch gives up on this daemon at its --connect-timeout whatever happened meanwhile.
  if (connect_deadline_ == std::chrono::steady_clock::time_point{})
    connect_deadline_ = std::chrono::steady_clock::now() + opts_.connect_timeout;
  auto sock = std::make_shared<asio::ip::tcp::socket>(io_);
  // An address that drops packets (the frontend's host gone, a firewall) holds a connect for the
  // kernel's SYN retries: each address gets at most kConnectAttemptTimeout, then the next is
  // tried (cancel, not close: a closed socket ends the whole list), and all end at the deadline.
  auto timed_out = std::make_shared<bool>(false);
  auto before_each = [this, sock, timed_out](const asio::error_code&, const asio::ip::tcp::endpoint&) {
    *timed_out = false;
    // Half the whole time at most, so that a second address gets its turn too.
    const auto per_try = std::clamp<std::chrono::steady_clock::duration>(opts_.connect_timeout / 2, std::chrono::seconds(1),
                                                                         kConnectAttemptTimeout);
    connect_timer_.expires_at(std::min(std::chrono::steady_clock::now() + per_try, connect_deadline_));
    connect_timer_.async_wait([sock, timed_out](const asio::error_code& ec) {
      if (ec) return;
      *timed_out = true;
      asio::error_code ignored;
      sock->cancel(ignored);
    });
    return true;
  };
  asio::async_connect(*sock, endpoints, before_each, [this, sock, attempt, timed_out](const asio::error_code& cec,
                                                                                       const asio::ip::tcp::endpoint&) {
    connect_timer_.cancel();
    if (cec) {
      const bool time_left = std::chrono::steady_clock::now() < connect_deadline_;
      // ~2 s of retries for a frontend that is slow to listen (refused); timed-out tries go on
      // to the deadline.
      if (time_left && (attempt < 20 || *timed_out)) {
        auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
        t->async_wait([this, t, attempt](const asio::error_code&) { connect(attempt + 1); });
        return;
      }
      if (*timed_out)
        spdlog::error("cannot connect to {} at {}:{}: no answer within {} s", upstreamName(), opts_.connect_host,
                      opts_.connect_port, opts_.connect_timeout.count());
      else
        spdlog::error("cannot connect to {} at {}:{}: {}", upstreamName(), opts_.connect_host, opts_.connect_port,
                      cec.message());
      shutdown(69);
      return;
    }
    conn_ = Connection::create(std::move(*sock));
    conn_->start([this](Json&& m) { onMessage(std::move(m)); }, [this](const std::string& r) { onClose(r); });
    awaitChallenge();
  });
}

std::string DaemonSession::upstreamName() const {
  return opts_.tree_parent.empty() ? "the frontend" : "node " + opts_.tree_parent + " (its parent in tlaunch's control tree)";
}

void DaemonSession::awaitChallenge() {
  // The frontend speaks first. When thousands of daemons connect at once its listen queue can
  // overflow; the kernel then drops the connection's last handshake packet (with SYN cookies
  // nothing retransmits it), and this side looks connected while the frontend never saw it.
  // Connect again rather than wait for a challenge that cannot come.
  challenge_timer_.expires_after(kChallengeTimeout);
  challenge_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec || !server_nonce_.empty() || done_) return;
    if (++challenge_retries_ > kChallengeRetries) {
      spdlog::error("{} at {}:{} accepted the connection but never sent its challenge ({} tries)", upstreamName(),
                    opts_.connect_host, opts_.connect_port, kChallengeRetries + 1);
      shutdown(69);
      return;
    }
    spdlog::warn("no challenge from the frontend within {} s of connecting; connecting again",
                 std::chrono::duration_cast<std::chrono::seconds>(kChallengeTimeout).count());
    conn_->close();
    server_nonce_.clear();
    connect(0);
  });
}

}  // namespace tlaunch

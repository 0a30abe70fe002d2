// RankSupervisor's --stdin forwarding: what the frontend sends is written into the rank's stdin
// pipe under its credit, and the frontend hears when the rank takes no more (it closed its
// stdin, or ended), so that tlaunch stops reading its own (README: "reads no more of its own").
#include "daemon/rank_supervisor.h"

namespace tlaunch {

void RankSupervisor::writeStdin(int rank, const std::string& data) {
  for (auto& r : ranks_) {
    if (r->rank != rank || !r->stdin_fd || !r->watched) continue;
    r->stdin_pending += data;
    flushStdin(*r);
    return;
  }
  // Nobody to take it (the rank closed its stdin or is gone): dropped, and its credit returned.
  if (events_.stdin_written) events_.stdin_written(rank, data.size(), true);
}

void RankSupervisor::watchStdinReader(Rank& r) {
  if (!r.stdin_fd) return;
  // The write end of a pipe signals an error once no process holds its read end any more (the
  // rank closed its stdin, with whatever it started): the frontend stops reading its own then,
  // not only when the next chunk finds the pipe gone (README: "reads no more of its own").
  r.stdin_fd->async_wait(asio::posix::stream_descriptor::wait_error, [this, &r](const asio::error_code& ec) {
    if (ec != asio::error::operation_aborted) stdinGone(r);
  });
}

void RankSupervisor::stdinGone(Rank& r) {
  if (!r.stdin_fd) return;  // said already, or the frontend ended it (stdin_eof)
  r.stdin_fd.reset();
  const size_t dropped = r.stdin_pending.size() + (r.stdin_writing ? r.stdin_inflight.size() : 0);
  r.stdin_pending.clear();
  r.stdin_writing = false;
  if (events_.stdin_written && !r.stdin_close_requested) events_.stdin_written(r.rank, dropped, true);
}

void RankSupervisor::flushStdin(Rank& r) {
  if (r.stdin_writing || !r.stdin_fd) return;
  if (r.stdin_pending.empty()) {
    if (r.stdin_close_requested) r.stdin_fd.reset();
    return;
  }
  r.stdin_writing = true;
  r.stdin_inflight.swap(r.stdin_pending);
  r.stdin_pending.clear();
  asio::async_write(*r.stdin_fd, asio::buffer(r.stdin_inflight), [this, &r](const asio::error_code& ec, size_t) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) return stdinGone(r);  // the rank closed its stdin or died: the rest is dropped
    r.stdin_writing = false;
    // The frontend sends more only as the rank takes it (its stdin credit).
    if (events_.stdin_written) events_.stdin_written(r.rank, r.stdin_inflight.size(), false);
    flushStdin(r);
  });
}

void RankSupervisor::closeStdin(int rank) {
  for (auto& r : ranks_)
    if (r->rank == rank && r->watched) {
      r->stdin_close_requested = true;
      flushStdin(*r);
    }
}

}  // namespace tlaunch

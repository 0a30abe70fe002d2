// What the user does to a running job: signals (Ctrl-C, SIGUSR1/2 forwarded, Ctrl-\\ for
// stacks), `tlaunch stacks|status`, and --stdin forwarding under credit.
#include "launcher/job_session.h"
#include "launcher/job_session_link.h"

#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/close_fds.h"
#include "binding/preflight/preflight_report.h"
#include "bootstrap/node_launch_json.h"
#include "launcher/cli_values.h"
#include "launcher/cross_node_preflight.h"
#include "launcher/failure_blame.h"
#include "launcher/held_signals.h"
#include "launcher/job_inspector.h"
#include "launcher/nccl/nccl_job_check.h"
#include "launcher/phase_timing.h"
#include "launcher/pmix_collectives.h"
#include "launcher/pmix_directory.h"
#include "launcher/pmix_job_control.h"
#include "launcher/pmix_spawns.h"
#include "launcher/plan/plan_preflight.h"
#include "launcher/rank_failure_policy.h"
#include "launcher/stdin_credit.h"
#include "tlaunch/version.h"
#include "bootstrap/error_text.h"

namespace tlaunch {

void JobSession::watchSignals() {
  signals_.async_wait([this](const asio::error_code& ec, int sig) {
    if (ec) return;
    handleSignal(sig);
    watchSignals();
  });
}

void JobSession::handleSignal(int sig) {
  if (sig == SIGUSR1 || sig == SIGUSR2) {
    broadcast({{"t", "signal"}, {"sig", sig}});
    return;
  }
  if (sig == SIGQUIT && inspector_) {
    // A wrapper (`timeout 24h tlaunch ...`) passes one Ctrl-\ on to tlaunch and to its group: the
    // second within a second is the same request, not another collection that stops every rank.
    const auto now = Clock::now();
    if (last_sigquit_ != Clock::time_point{} && now - last_sigquit_ < std::chrono::seconds(1)) return;
    last_sigquit_ = now;
    if (phase_ == Phase::draining || phase_ == Phase::finishing || phase_ == Phase::done) {
      out_.note("got SIGQUIT: the job is ending (its ranks had their SIGTERM), so no stacks are collected: gdb would "
                "hold them stopped through it");
      return;
    }
    out_.note("got SIGQUIT: collecting the ranks' stacks (the job goes on)");
    inspector_->stacks([this](std::string text) {
      while (!text.empty() && text.back() == '\n') text.pop_back();
      out_.note(text);
    });
    return;
  }
  if (sig == SIGQUIT) {  // --dry-run or `tlaunch preflight`: no ranks, and Ctrl-\ never ends a job
    out_.note("got SIGQUIT: no ranks run here, so there are no stacks to collect (Ctrl-C ends tlaunch)");
    return;
  }
  // SIGTERM or SIGHUP within a second of either is the same request by another way (a batch
  // script's trap and slurmstepd, `kill` of the group and of tlaunch, systemd's SIGTERM then
  // SIGHUP for a session's scope): it must not cut the ranks' checkpoint short. Ctrl-C twice is
  // a person insisting, but not twice within kSameKeypress: the terminal's Ctrl-C reaches the
  // whole process group, and a wrapper in it (`timeout 24h tlaunch ...`, a script's trap) passes
  // it on again a millisecond later.
  constexpr auto kSameKeypress = std::chrono::milliseconds(100);
  const auto polite = [](int s) { return s == SIGTERM || s == SIGHUP; };
  const auto since_first = std::chrono::steady_clock::now() - first_interrupt_at_;
  if (interrupts_ == 1 && ((polite(sig) && polite(first_interrupt_) && since_first < std::chrono::seconds(1)) ||
                           since_first < kSameKeypress))
    return;
  ++interrupts_;
  outcome_.interrupted = true;
  if (interrupts_ == 1) {
    first_interrupt_ = sig;
    first_interrupt_at_ = std::chrono::steady_clock::now();
    // Said as it is: no rank may exist yet, or the job may be ending already.
    const std::string got = std::string("got ") + ::sigabbrev_np(sig) + ": ";
    if (cfg_.spec.preflight_only || cfg_.spec.dry_run)
      out_.note(got + "stopping");
    else if (failed_)
      out_.note(got + "the job is ending already (its ranks had their SIGTERM); again to kill them at once");
    else if (phase_ == Phase::connecting || phase_ == Phase::testing_fabric || phase_ == Phase::preparing)
      out_.note(got + "ending the job before its ranks start");
    else
      out_.note(got + "ending the job (SIGTERM to the ranks, SIGKILL after " + std::to_string(cfg_.spec.kill_timeout_s) +
                " s; again to kill at once)");
    std::string why = std::string("tlaunch was interrupted by SIG") + ::sigabbrev_np(sig);
    // Start failures gathered so far are not lost to the interrupt: they are why it waited.
    if (!failed_ && !start_failures_.empty())
      why += "; before that, " + start_failures_.describe(links_.size(), {});
    // One cancellation reaching every process of the job (scancel, `kill` of them all): ranks
    // that ended of it a moment ago (a SIGTERM handler's exit 1 included) while a daemon's
    // "signalled" report waits are its consequences, not the job's cause.
    // A rank's own crash (SIGSEGV...) stays the job's cause.
    if (!failed_ && blame_->holding() && !blame_->anyOwnCrash() &&
        ((lostNodePending() && lost_node_->signal != 0) || (sig != SIGINT && blame_->onlyKilledFromOutside())))
      why += blame_->takeAsConsequences("");
    fail(128 + sig, why);
  } else {
    if (interrupts_ == 2) out_.note(std::string("got ") + ::sigabbrev_np(sig) + " again: killing the ranks now");
    broadcast({{"t", "signal"}, {"sig", SIGKILL}});
  }
}

void JobSession::startInspector() {
  if (cfg_.spec.dry_run || cfg_.spec.preflight_only) return;
  JobInspector::Hooks hooks;
  hooks.broadcast = [this](const Json& m) { broadcast(m); };
  hooks.spawned_label = [this](int number) { return pmix_spawns_ ? pmix_spawns_->label(number) : std::string(); };
  hooks.nodes = [this] {
    std::vector<JobInspector::NodeView> v;
    const auto now = Clock::now();
    for (const auto& l : links_)
      v.push_back({l->name, reachable(l->index), std::chrono::duration<double>(now - l->last_heard).count(),
                   l->last_heard != Clock::time_point{}});
    return v;
  };
  hooks.print = [this](const std::string& text) { out_.note(text); };
  inspector_ = std::make_unique<JobInspector>(io_, cfg_.plan_context.job_id, std::move(hooks), cfg_.spec.hang_timeout_s);
  inspector_->openControlSocket();
}

void JobSession::forwardStdin() {
  Link* target = nullptr;
  for (size_t i = 0; i < plan_->nodes.size(); ++i)
    for (const auto& r : plan_->nodes[i].ranks)
      if (r.rank == cfg_.spec.stdin_rank) target = links_[i].get();
  if (!target) return;
  stdin_node_ = target->index;
  stdin_ = std::make_shared<StdinCredit>(kStdinWindow);
  // A blocking reader thread: stdin may be a regular file, which epoll cannot watch. It reads
  // only as far as the rank has taken what came before (its credit), so a rank that does not
  // read its stdin holds tlaunch's reading back instead of growing a buffer on its node.
  std::thread([this, target, rank = cfg_.spec.stdin_rank, credit = stdin_] {
    blockSessionSignals();  // Ctrl-C is the main thread's (held_signals.h)
    // Typed at a terminal that echoes: each Enter ends the line the rank's prompt is on.
    termios mode{};
    const bool echoing = ::isatty(0) == 1 && ::tcgetattr(0, &mode) == 0 && (mode.c_lflag & ECHO) != 0 &&
                         (mode.c_lflag & ICANON) != 0;
    // To the io thread, behind what came before (the bulk queue); false once the session ended.
    auto handOn = [&](Json msg, bool line_ended = false) {
      return credit->whileOpen([&] {
        asio::post(io_, [this, target, rank, line_ended, msg = std::move(msg)]() mutable {
          if (line_ended) out_.inputEchoed(rank);
          sendRouted(target->index, std::move(msg), true);
        });
      });
    };
    std::vector<char> buf(65536);
    for (;;) {
      const size_t want = credit->take(buf.size());
      if (want == 0) return;  // the session is over
      // Waits for input or for the end of forwarding (the rank closed its stdin or ended): what
      // comes after that stays unread, for whatever reads tlaunch's stdin next.
      pollfd fds[2] = {{0, POLLIN, 0}, {credit->wakeFd(), POLLIN, 0}};
      if (::poll(fds, credit->wakeFd() >= 0 ? 2 : 1, -1) < 0 && errno == EINTR) {
        credit->grant(want);
        continue;
      }
      if (fds[1].revents != 0 || !credit->whileOpen([] {})) return;
      ssize_t n = ::read(0, buf.data(), want);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) {  // EAGAIN: a stdin left O_NONBLOCK by its opener
        if (errno == EAGAIN) {
          pollfd in{0, POLLIN, 0};
          ::poll(&in, 1, 1000);
        }
        credit->grant(want);
        continue;
      }
      if (n <= 0) {
        if (n < 0) {  // `< somedir`, a closed terminal: said, not taken for a quiet end of input
          const std::string why = std::strerror(errno);
          credit->whileOpen([&] {
            asio::post(io_, [this, why, rank] {
              out_.note("cannot read tlaunch's stdin (" + why + "): rank " + std::to_string(rank) + " gets end of file");
            });
          });
        }
        handOn({{"t", "stdin_eof"}, {"r", rank}});
        return;
      }
      credit->grant(want - static_cast<size_t>(n));
      const auto data = std::string_view(buf.data(), static_cast<size_t>(n));
      const bool line_ended = echoing && data.find('\n') != std::string_view::npos;
      if (!handOn({{"t", "stdin"}, {"r", rank}, {"d", binary(data)}}, line_ended)) return;  // the session ended while read() waited
    }
  }).detach();
}

}  // namespace tlaunch

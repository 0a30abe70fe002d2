#include "launcher/job_setup.h"

#include <limits.h>
#include <unistd.h>

#include "launcher/job_environment.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

namespace {

std::string currentDirectory() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string("/");
}

Result<void> validate(const JobSpec& spec) {
  if (spec.argv.empty())
    return diagnostic(Errc::usage, "command-missing");
  if (spec.procs_per_node > 0 && spec.gpus_per_node > 0)
    return diagnostic(Errc::usage, "procs-and-gpus");
  if (!spec.nproc_per_node_word.empty() && spec.gpus_per_node > 0)
    return diagnostic(Errc::usage, "nproc-word-and-gpus", {{"word", spec.nproc_per_node_word}});
  if (!spec.nproc_per_node_word.empty() && spec.total_ranks > 0)
    return diagnostic(Errc::usage, "nproc-word-and-total", {{"word", spec.nproc_per_node_word}});
  if (spec.offline && !spec.dry_run) return diagnostic(Errc::usage, "offline-without-dry-run");
  if (spec.max_restarts > 0 && spec.stdin_rank >= 0)
    return diagnostic(Errc::usage, "stdin-and-restarts");
  return {};
}

}  // namespace

Result<JobSetup> setUpJob(const JobSpec& input, const std::map<std::string, std::string>& env, bool offline) {
  if (auto v = validate(input); !v) return tl::unexpected(v.error());
  JobSetup s;
  s.spec = input;
  auto choice = chooseLauncher(input, env, offline);  // offline: resolve names only; nothing is started
  if (!choice) return tl::unexpected(choice.error());
  s.choice = std::move(*choice);
  const RankLayout& layout = s.choice.layout;
  if (layout.nodes > 0) s.spec.nodes = layout.nodes;
  if (layout.ranks_per_node > 0 && s.spec.ranksPerNode() == 0) s.spec.procs_per_node = layout.ranks_per_node;

  auto files = readDeepspeedEnvFiles(env);
  if (!files) return tl::unexpected(files.error());
  auto forwarded = forwardEnvironment(env, s.spec.exports, *files);
  if (!forwarded) return tl::unexpected(forwarded.error());
  PlanContext& ctx = s.plan_context;
  ctx.cwd = currentDirectory();
  ctx.base_env = forwarded->base_env;
  ctx.user_set = forwarded->user_set;
  ctx.user_env = forwarded->user_env;
  // Offline, no node was asked about its network: the plan leaves it out.
  ctx.loopback_only = offline || s.choice.loopback_only;
  ctx.ranks_source = layout.source;
  for (const auto& n : s.choice.nodes) ctx.node_net_if.push_back(n.net_if);
  ctx.node_gpus = s.choice.node_gpus;
  ctx.cpu_ranks_asked = input.procs_per_node > 0 || input.nproc_per_node_word == "cpu";
  return s;
}

}  // namespace tlaunch

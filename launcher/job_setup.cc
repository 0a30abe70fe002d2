#include "launcher/job_setup.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <cstring>

#include "bootstrap/process_hygiene.h"
#include "launcher/job_environment.h"
#include "launcher/starter_support.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

namespace {

// Empty when it cannot be told (removed, or a parent not searchable): nothing to run the ranks in.
std::string currentDirectory() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string();
}

Result<void> validate(const JobSpec& spec) {
  if (spec.argv.empty())
    return diagnostic(Errc::usage, "command-missing");
  if (spec.argv.front().empty()) return diagnostic(Errc::usage, "program-not-given");  // `tlaunch -- ""`
  if (spec.procs_per_node > 0 && spec.gpus_per_node > 0)
    return diagnostic(Errc::usage, "procs-and-gpus");
  if (!spec.nproc_per_node_word.empty() && spec.gpus_per_node > 0)
    return diagnostic(Errc::usage, "nproc-word-and-gpus", {{"word", spec.nproc_per_node_word}});
  if (!spec.nproc_per_node_word.empty() && spec.total_ranks > 0)
    return diagnostic(Errc::usage, "nproc-word-and-total", {{"word", spec.nproc_per_node_word}});
  if (spec.offline && !spec.dry_run) return diagnostic(Errc::usage, "offline-without-dry-run");
  // Flags that would do nothing here: refused rather than silently ignored.
  if (spec.json && !spec.dry_run && !spec.preflight_only) return diagnostic(Errc::usage, "json-without-dry-run");
  if (spec.cpus_per_rank > 0 && spec.bind != "core")
    return diagnostic(Errc::usage, "cpus-per-rank-without-core-binding",
                      {{"bind", spec.bind}, {"what", spec.bind == "none" ? "nothing" : "whole NUMA nodes"}});
  if (spec.preflight == PreflightMode::off) {
    const char* flag = spec.preflight_strict           ? "--preflight-strict"
                       : !spec.preflight_skip.empty() ? "--preflight-skip"
                       : spec.expect_rate_gbps > 0     ? "--expect-rate"
                                                       : nullptr;
    if (flag) return diagnostic(Errc::usage, "preflight-flag-with-off", {{"flag", flag}});
  }
  if (spec.max_restarts > 0 && spec.stdin_rank >= 0)
    return diagnostic(Errc::usage, "stdin-and-restarts");
  return {};
}

// `name` is no longer the user's to win: the plan's value goes to the ranks.
void notTheUsers(PlanContext& ctx, const std::string& name) {
  ctx.user_env.erase(name);
  ctx.user_set.erase(std::remove(ctx.user_set.begin(), ctx.user_set.end(), name), ctx.user_set.end());
}

// `name` goes to no rank at all.
void forget(PlanContext& ctx, const std::string& name) {
  notTheUsers(ctx, name);
  const std::string prefix = name + "=";
  std::erase_if(ctx.base_env, [&](const std::string& kv) { return kv.starts_with(prefix); });
}

// Inside a Slurm job with GPUs (sbatch's script, an srun step) Slurm sets CUDA_VISIBLE_DEVICES and
// GPU_DEVICE_ORDINAL to this node's GPUs. That is no choice for every node: each daemon that srun
// starts reports its own node's (NodeInventory::slurm_gpus). A value the user set (-x, an env
// file, or one that differs from GPU_DEVICE_ORDINAL) stays the user's.
void dropSlurmsGpuSetting(PlanContext& ctx, const std::map<std::string, std::string>& env) {
  const auto visible = ctx.user_env.find("CUDA_VISIBLE_DEVICES");
  const auto ordinal = env.find("GPU_DEVICE_ORDINAL");
  if (visible == ctx.user_env.end() || visible->second.source != "environment" || !env.contains("SLURM_JOB_ID") ||
      ordinal == env.end() || ordinal->second != visible->second.value)
    return;
  forget(ctx, "CUDA_VISIBLE_DEVICES");
  forget(ctx, "GPU_DEVICE_ORDINAL");
}

// CUDA_VISIBLE_DEVICES set by the user (environment, -x, an env file), as torchrun users choose
// GPUs, is the GPU list of every node: the plan binds each rank to the GPU CUDA will give it and
// sets the variable itself (the chosen indices, in the order given). GPUs named by UUID are matched on each
// node against the UUIDs its driver reported. Left alone: CPU ranks (-p) and MIG instances.
Result<void> takeCudaVisibleDevices(PlanContext& ctx) {
  constexpr const char* kName = "CUDA_VISIBLE_DEVICES";
  const auto it = ctx.user_env.find(kName);
  if (it == ctx.user_env.end() || ctx.cpu_ranks_asked) return {};
  const std::string source = std::string(kName) + "=" + it->second.value + " (" + it->second.source + ")";
  auto list = gpuListFromCudaVisible(it->second.value, source);
  if (!list) list = gpuUuidListFromCudaVisible(it->second.value, source);  // by UUID: resolved per node
  if (!list) return {};  // MIG instances: CUDA's to resolve
  if (std::any_of(ctx.node_gpus.begin(), ctx.node_gpus.end(), [](const GpuList& l) { return l.given(); }))
    return fail(Errc::usage, source + " and --include/--exclude both choose GPUs",
                "choose them one way: unset CUDA_VISIBLE_DEVICES, or leave out the GPU lists of --include/--exclude");
  ctx.every_node_gpus = std::move(*list);  // also nodes srun picks, unknown until they report
  ctx.gpu_list_export.emplace(it->second.value, it->second.source);
  // A GPU rank's value comes from the plan. The base environment keeps it for ranks the list does
  // not apply to (a node where hwloc found no GPU).
  notTheUsers(ctx, kName);
  return {};
}

// `srun tlaunch ...` (torchrun's Slurm recipe runs one torchrun per node under srun): every task
// of the step would be a whole tlaunch starting the whole job, N jobs of N nodes each. One
// task's srun (`srun -n1`) and a batch script are fine.
Result<void> notOneOfManySrunTasks(const std::map<std::string, std::string>& env) {
  const auto step = env.find("SLURM_STEP_ID");
  const auto tasks = env.find("SLURM_STEP_NUM_TASKS");
  if (step == env.end() || tasks == env.end()) return {};
  const long count = std::strtol(tasks->second.c_str(), nullptr, 10);
  if (count <= 1) return {};
  return diagnostic(Errc::usage, "srun-step-of-many", {{"tasks", std::to_string(count)}});
}

}  // namespace

Result<JobSetup> setUpJob(const JobSpec& input, const std::map<std::string, std::string>& env, bool offline) {
  if (auto v = validate(input); !v) return tl::unexpected(v.error());
  if (auto s = notOneOfManySrunTasks(env); !s) return tl::unexpected(s.error());
  JobSetup s;
  s.spec = input;
  // The ranks run in it (or in -D relative to it): a removed one must not become "/".
  const std::string cwd = currentDirectory();
  if (cwd.empty() && (input.chdir.empty() || input.chdir.front() != '/'))
    return diagnostic(Errc::usage, "cwd-unknown", {{"why", std::strerror(errno)}});
  const auto home = env.find("HOME");
  s.spec.daemon_path = daemonPathFromHere(input.daemon_path, cwd.empty() ? "/" : cwd, home != env.end() ? home->second : "");
  auto choice = chooseLauncher(input, env, offline);  // offline: resolve names only; nothing is started
  if (!choice) return tl::unexpected(choice.error());
  s.choice = std::move(*choice);
  const RankLayout& layout = s.choice.layout;
  if (layout.nodes > 0) s.spec.nodes = layout.nodes;
  if (layout.ranks_per_node > 0 && s.spec.ranksPerNode() == 0) s.spec.procs_per_node = layout.ranks_per_node;
  s.spec.ranks_by_node = layout.node_ranks;

  auto files = readDeepspeedEnvFiles(env);
  if (!files) return tl::unexpected(files.error());
  auto forwarded = forwardEnvironment(env, s.spec.exports, *files, s.spec.export_flags);
  if (!forwarded) return tl::unexpected(forwarded.error());
  PlanContext& ctx = s.plan_context;
  ctx.cwd = cwd;
  // The ranks get the caller's umask and open-files limit on every node, as srun passes them on
  // (a warm daemon would otherwise give them the first job's).
  ctx.umask = currentUmask();
  if (const auto nofile = userNofileLimit().rlim_cur; nofile != RLIM_INFINITY) ctx.nofile = static_cast<long long>(nofile);
  ctx.base_env = forwarded->base_env;
  ctx.user_set = forwarded->user_set;
  ctx.user_env = forwarded->user_env;
  ctx.overridden_exports = forwarded->overridden;
  for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "NCCL_COMM_ID"})
    if (const auto it = env.find(name); it != env.end() && !ctx.user_env.contains(name))
      ctx.unused_master_env.push_back(std::string(name) + "=" + it->second);
  // Offline, no node was asked about its network: the plan leaves it out.
  ctx.loopback_only = offline || s.choice.loopback_only;
  ctx.network_unasked = offline && !s.choice.loopback_only;
  ctx.ranks_source = layout.source;
  ctx.ranks_from_slots = layout.from_slots;
  ctx.simulated_nodes = s.choice.kind == LauncherKind::local;
  for (const auto& n : s.choice.nodes) ctx.node_net_if.push_back(n.net_if);
  ctx.node_gpus = s.choice.node_gpus;
  ctx.node_max_slots = s.choice.node_max_slots;
  ctx.cpu_ranks_asked = input.procs_per_node > 0 || input.nproc_per_node_word == "cpu";
  // Daemons srun starts report their own node's GPUs; ssh or local ones see no Slurm step.
  if (s.choice.kind == LauncherKind::slurm) dropSlurmsGpuSetting(ctx, env);
  if (auto taken = takeCudaVisibleDevices(ctx); !taken) return tl::unexpected(taken.error());
  return s;
}

}  // namespace tlaunch

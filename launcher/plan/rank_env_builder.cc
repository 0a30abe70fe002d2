#include "launcher/plan/rank_env_builder.h"

#include "binding/fabric/fabric_env.h"

namespace tlaunch {

std::vector<std::string> buildRankEnv(const RankEnvInput& in, const UserEnv& user) {
  std::vector<std::string> env;
  env.reserve(40);  // the identity (29), defaults and a few of the GPU, HCA, network and PMIx ones
  // Each variable is one add(); the user's value, when there is one, wins.
  auto add = [&](std::string_view name, std::string_view value) {
    if (user.find(name) != user.end()) return;
    std::string kv;
    kv.reserve(name.size() + 1 + value.size());
    kv.append(name).append(1, '=').append(value);
    env.push_back(std::move(kv));
  };
  visitRankIdentityEnv(in.identity, in.job, add);
  // The shell's PWD is this host's, dropped with the other local-only variables; programs that
  // read it (os.environ["PWD"], a script's cd "$PWD/..") get the directory they run in.
  if (!in.cwd.empty()) add("PWD", in.cwd);
  // The two names of NCCL's async error handling are one setting: yours under either name wins
  // over both defaults (your TORCH_...=0 must not meet our old-named 1 on PyTorch before 2.2).
  const bool async_set = user.find(std::string_view("TORCH_NCCL_ASYNC_ERROR_HANDLING")) != user.end() ||
                         user.find(std::string_view("NCCL_ASYNC_ERROR_HANDLING")) != user.end();
  for (const auto& [k, v] : rankDefaultEnv(in.own_cpus, in.identity.local_world_size))
    if (!async_set || k.find("ASYNC_ERROR_HANDLING") == std::string::npos) add(k, v);

  // As DeepSpeed does: every rank of the node sees the same chosen GPUs (peers stay visible to
  // each other for P2P), and LOCAL_RANK r is CUDA device r among them. CPU ranks: the node's
  // Slurm GPUs, as srun's tasks see them.
  if (!in.visible_gpus.empty()) add("CUDA_VISIBLE_DEVICES", in.visible_gpus);
  if (!in.rocr_visible.empty()) add("ROCR_VISIBLE_DEVICES", in.rocr_visible);
  const RankBinding* b = in.binding;
  if (b && in.gpu_rank) {
    add("CUDA_DEVICE_ORDER", "PCI_BUS_ID");  // CUDA device r = GPU r in bus id order, as planned
    if (b->gpu_busid) add(kRankGpuBusIdVar, *b->gpu_busid);
    if (b->gpu_uuid) add(kRankGpuUuidVar, *b->gpu_uuid);
  }
  const std::string hca = b && b->hca ? *b->hca : "";
  // --net tcp: the rank uses no HCA, whichever is nearest.
  if (!hca.empty() && !(in.network && in.network->sockets_only)) add(kRankHcaVar, hca);

  if (in.network) {
    for (const auto& s : fabricEnv(*in.network, in.node, user, hca)) {
      // MASTER_ADDR is the rendezvous identity's (the same address: rank 0's on this network).
      if (s.name == "MASTER_ADDR" || s.overridden_by_user) continue;
      env.push_back(s.name + "=" + s.value);
    }
  } else if (!in.network_unasked) {
    for (const auto& [k, v] : loopbackEnv()) add(k, v);
    if (!hca.empty()) add("UCX_NET_DEVICES", hca);
  }

  if (in.pmix) {
    // Without a launcher it recognises, Open MPI 4.1 makes every rank a singleton (PMIX.md §2.1).
    add("OMPI_MCA_schizo", "^orte");
    if (!in.network && !in.pmix_tcp_if_include.empty()) add("OMPI_MCA_btl_tcp_if_include", in.pmix_tcp_if_include);
    // Ranks that poll while they wait take turns on too few CPUs: a Barrier of 8 ranks on 2
    // CPUs took 16-30 ms of time slices, 0.2 ms when they yield. mpirun sets it there too.
    if (in.oversubscribed) add("OMPI_MCA_mpi_yield_when_idle", "1");
    // No RDMA chosen and no GPU: Open MPI's UCX layer would pick only verbs (pml_ucx_devices
    // mlx*) or CUDA, yet every rank starts UCX to find that out (~200 ms of CPU per rank in
    // MPI_Init here); on nodes whose HCAs --net tcp leaves out, it would take them. ob1 runs
    // over shared memory and the TCP network chosen above.
    // --net tcp keeps GPU ranks off UCX too (it would take the HCAs), and ob1 off openib/uct.
    const bool sockets_only = in.network && in.network->sockets_only;
    if ((!in.gpu_rank || sockets_only) && !(in.network && in.network->rdma)) add("OMPI_MCA_pml", "ob1");
    if (sockets_only) add("OMPI_MCA_btl", "^openib,uct,ofi");  // an exclude list may name absent ones
  }
  return env;
}

const std::vector<DaemonAddedVariable>& daemonAddedVariables() {
  static const std::vector<DaemonAddedVariable> list = {
      {"PMIX_*", "PMIx_server_setup_fork: the node's server URI, namespace, rank, its temporary directories"},
      {"OMPI_MCA_btl_vader_backing_directory",
       "the job's shared-memory directory the daemon creates on the node (/dev/shm, else its job directory)"},
      {"NCCL_DEBUG*", "--nccl-check: NCCL's log settings and the per-rank log file the daemon creates"},
      {"TORCHELASTIC_ERROR_FILE", "where torch's @record writes the rank's exception, in the node's job directory"},
  };
  return list;
}

}  // namespace tlaunch

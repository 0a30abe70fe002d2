#include "launcher/launcher_choice.h"

#include <fstream>
#include <sstream>

#include "launcher/local_starter.h"
#include "launcher/node_source.h"

namespace tlaunch {

namespace {

Result<std::string> readFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return fail(Errc::usage, "cannot read hostfile " + path, "check the path");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

Result<LauncherChoice> chooseLauncher(const JobSpec& spec, const std::map<std::string, std::string>& env) {
  NodeSourceOptions src;
  src.hosts = spec.hosts;
  src.include = spec.include;
  src.exclude = spec.exclude;
  if (!spec.hostfile.empty()) {
    auto content = readFile(spec.hostfile);
    if (!content) return tl::unexpected(content.error());
    src.hostfile_name = spec.hostfile;
    src.hostfile_content = std::move(*content);
  }
  src.use_slurm_env = spec.launcher != LauncherKind::local && spec.launcher != LauncherKind::ssh;
  auto hosts = resolveNodes(src, env);
  if (!hosts) return tl::unexpected(hosts.error());
  const NodeOrigin origin = nodeOrigin(src, env);

  LauncherKind kind = spec.launcher;
  if (kind == LauncherKind::automatic) {
    kind = origin == NodeOrigin::slurm                                      ? LauncherKind::slurm
           : (origin == NodeOrigin::hosts || origin == NodeOrigin::hostfile) ? LauncherKind::ssh
                                                                             : LauncherKind::local;
  }
  LauncherChoice choice;
  if (kind == LauncherKind::local) {
    std::vector<HostEntry> chosen;
    if (hosts->empty()) {
      // Simulated nodes on this host: local0, local1, ...
      int n = spec.nodes > 0 ? spec.nodes : 1;
      if (spec.launcher != LauncherKind::local && n > 1)
        return fail(Errc::usage, "-N " + std::to_string(n) + " needs " + std::to_string(n) + " nodes, but none were given",
                    "pass --hosts/--hostfile, run inside a Slurm allocation, or add --launcher local to simulate "
                    "nodes on this host");
      for (int i = 0; i < n; ++i) chosen.push_back(HostEntry{"local" + std::to_string(i), -1, {}, {}});
    } else {
      auto sel = selectNodes(*hosts, spec.nodes, spec.ranksPerNode());
      if (!sel) return tl::unexpected(sel.error());
      chosen = std::move(*sel);
    }
    for (size_t i = 0; i < chosen.size(); ++i) choice.nodes.push_back({static_cast<int>(i), chosen[i].name, {}});
    choice.starter = std::make_unique<LocalStarter>();
    choice.listen_address = "127.0.0.1";
    return choice;
  }
  return fail(Errc::usage, "this launcher is not available yet");
}

}  // namespace tlaunch

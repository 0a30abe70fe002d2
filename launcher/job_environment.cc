#include "launcher/job_environment.h"

#include <algorithm>
#include <cstdlib>

#include "bootstrap/rank_env.h"
#include "launcher/cli_values.h"
#include "tlaunch/diagnostics.h"
#include "tlaunch/strings.h"

extern char** environ;

namespace tlaunch {

namespace {
bool startsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// tlaunch's variables that hold the same value on every rank: an export of one wins.
bool jobWideIdentity(const std::string& name) {
  static const char* const names[] = {"MASTER_ADDR", "MASTER_PORT", "ROLE_NAME", "TORCHELASTIC_RUN_ID",
                                      "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_USE_AGENT_STORE"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

// Why an export is refused: a per-rank variable cannot take one value on every rank.
std::string badExport(const std::string& name, const std::string& value) {
  const auto& ids = rankIdentityNames();
  if (std::find(ids.begin(), ids.end(), name) != ids.end() && !jobWideIdentity(name))
    return name + (name.find("RANK") != std::string::npos ? " differs per rank: tlaunch sets it on each rank"
                                                            : " comes from the job's plan: tlaunch sets it on each rank") +
           ", so it cannot be exported to all";
  // The node's PMIx server gives each of its ranks its own (namespace, rank, server socket).
  if (startsWith(name, "PMIX_") && !startsWith(name, "PMIX_MCA_"))
    return name + " is set for each rank by its node's PMIx server, so it cannot be exported";
  if (name == "MASTER_PORT") {
    const bool digits = !value.empty() && value.size() <= 5 &&
                        std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    const long port = digits ? std::strtol(value.c_str(), nullptr, 10) : 0;
    if (port < 1 || port > 65535) return "MASTER_PORT must be a port from 1 to 65535, in digits";
  }
  if (name == "MASTER_ADDR")
    if (const std::string why = badHostOrAddress(value); !why.empty()) return "MASTER_ADDR: " + why;
  return "";
}
}  // namespace

bool isLocalOnlyVariable(const std::string& name) {
  static const char* const exact[] = {"HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "TMUX", "TMUX_PANE",
                                      "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "SSH_AUTH_SOCK",
                                      "PMI_FD", "PMI_RANK", "PMI_SIZE", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE",
                                      // NCCL's bootstrap root, left from another job's script: NCCL would
                                      // rendezvous there, off the job's network (-x passes it on).
                                      "NCCL_COMM_ID"};
  for (const char* e : exact)
    if (name == e) return true;
  // Another launcher's per-step state would confuse MPI and torch in our ranks.
  // Every SLURM_* too, the job's SLURM_JOB_ID included: programs take it for "srun started me"
  // and then read SLURM_PROCID and SLURM_NTASKS (DINOv2's launcher does); -x passes it on.
  if (startsWith(name, "SLURM_") || startsWith(name, "SLURMD_") || startsWith(name, "PMIX_") ||
      startsWith(name, "TORCHELASTIC_") || startsWith(name, "TLAUNCH_"))
    return true;
  if (startsWith(name, "OMPI_") && !startsWith(name, "OMPI_MCA_")) return true;
  const auto& ids = rankIdentityNames();
  return std::find(ids.begin(), ids.end(), name) != ids.end();
}

Result<ForwardedEnvironment> forwardEnvironment(const std::map<std::string, std::string>& env,
                                                const std::vector<std::string>& exports,
                                                const std::vector<EnvFileEntry>& files,
                                                const std::map<std::string, std::string>& flags) {
  std::map<std::string, std::string> out;
  ForwardedEnvironment f;
  // tlaunch started inside a rank (a driver that launches jobs): the outer job's NCCL check set
  // NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE (a file in its job directory); they are not
  // the user's, and the inner job's NCCL logs must not go into the outer job's directory.
  const bool outer_nccl_check = [&env] {
    const auto job = env.find("TLAUNCH_JOB_ID");
    const auto file = env.find("NCCL_DEBUG_FILE");
    return job != env.end() && file != env.end() &&
           file->second.find("/tlaunch." + job->second + ".") != std::string::npos &&
           file->second.find(".nccl/nccl.rank") != std::string::npos;
  }();
  for (const auto& [k, v] : env) {
    if (isLocalOnlyVariable(k)) continue;
    if (outer_nccl_check && (k == "NCCL_DEBUG" || k == "NCCL_DEBUG_SUBSYS" || k == "NCCL_DEBUG_FILE")) continue;
    out[k] = v;
    f.user_set.push_back(k);
    f.user_env[k] = {v, "environment"};
  }
  for (const auto& e : files) {
    if (auto why = badExport(e.name, e.value); !why.empty()) return fail(Errc::usage, e.source + ": " + why, "remove that line");
    out[e.name] = e.value;
    f.user_set.push_back(e.name);
    f.user_env[e.name] = {e.value, e.source};
  }
  std::map<std::string, std::string> exported;  // by an earlier export of the list
  for (const auto& x : exports) {
    auto eq = x.find('=');
    std::string name = x.substr(0, eq);
    if (x == "ALL") continue;  // srun's --export=ALL: what tlaunch does anyway (this whole environment)
    if (x == "NONE") return diagnostic(Errc::usage, "export-srun-none", {});
    // srun's list (--export=ALL,FOO=bar): its names would become one name "ALL,FOO", FOO unset.
    if (name.find(',') != std::string::npos) {
      std::string each;
      for (size_t at = 0; at <= x.size();) {
        const size_t comma = std::min(x.find(',', at), x.size());
        const std::string part = x.substr(at, comma - at);
        if (!part.empty() && part != "ALL" && part != "NONE") each += (each.empty() ? "-x " : " -x ") + part;
        at = comma + 1;
      }
      return diagnostic(Errc::usage, "export-srun-list", {{"arg", x}, {"each", each.empty() ? "-x NAME" : each}});
    }
    if (name.empty() || name.find_first_of(" \t\n") != std::string::npos)
      return diagnostic(Errc::usage, "export-malformed", {{"arg", x}});
    if (eq == std::string::npos) {
      auto it = env.find(name);
      if (it == env.end())
        return diagnostic(Errc::usage, "export-unset", {{"name", name}});
      out[name] = it->second;
    } else {
      out[name] = x.substr(eq + 1);
    }
    if (auto why = badExport(name, out[name]); !why.empty()) return fail(Errc::usage, "-x " + x + ": " + why);
    if (auto [it, first] = exported.try_emplace(name, out[name]); !first && it->second != out[name]) {
      // Quoted as text: a value may hold an escape sequence, or be a page long.
      f.overridden.push_back(visibleText(name + "=" + it->second) + " is replaced by " + visibleText(name + "=" + out[name]));
      it->second = out[name];
    }
    f.user_set.push_back(name);
    const auto flag = flags.find(name);
    f.user_env[name] = {out[name], flag != flags.end() ? flag->second : "-x"};
  }
  for (const auto& [k, v] : out) f.base_env.push_back(k + "=" + v);
  std::sort(f.user_set.begin(), f.user_set.end());
  f.user_set.erase(std::unique(f.user_set.begin(), f.user_set.end()), f.user_set.end());
  return f;
}

std::map<std::string, std::string> currentEnvironment() {
  std::map<std::string, std::string> m;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) m[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return m;
}

}  // namespace tlaunch

#pragma once
// What the ranks inherit from the frontend: its environment (like srun's --export=ALL) minus
// what only makes sense here, plus the user's -x exports. Pure given the environment.
#include <map>
#include <string>
#include <vector>

#include "binding/fabric/user_env.h"
#include "launcher/deepspeed_env.h"
#include "tlaunch/result.h"

namespace tlaunch {

struct ForwardedEnvironment {
  std::vector<std::string> base_env;  // "K=V", sorted by name for a deterministic plan
  std::vector<std::string> user_set;  // names whose value the user chose (-x, or inherited)
  UserEnv user_env;                   // the same, with values and "-x" / "environment"
  // "NAME=dropped is replaced by NAME=used": an export replaced an earlier one's other value (a
  // wrapper's -x and the user's; -x MASTER_PORT and --master-port, whose exports come after
  // every -x). Said, not refused. A DeepSpeed file's value that -x replaces is the documented
  // precedence, not listed.
  std::vector<std::string> overridden;
};

// Variables never forwarded: identity of this host/shell/session, or of another job's step
// (SLURM_*, PMIX_*, OMPI_* other than the user's MCA settings, torchrun's own).
bool isLocalOnlyVariable(const std::string& name);

// exports: -x VAR or -x VAR=VALUE. A bare VAR must be set here. files: DeepSpeed's environment
// files' lines, in order. Precedence: the environment, then the files (as deepspeed exports
// them over it), then -x (the command line is the most explicit). flags: names whose last
// export came from a flag (--mca, --master-port), said as its source instead of "-x".
Result<ForwardedEnvironment> forwardEnvironment(const std::map<std::string, std::string>& env,
                                                const std::vector<std::string>& exports,
                                                const std::vector<EnvFileEntry>& files = {},
                                                const std::map<std::string, std::string>& flags = {});

std::map<std::string, std::string> currentEnvironment();

}  // namespace tlaunch

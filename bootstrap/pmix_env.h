#pragma once
// Pure edits of a child environment held as "K=V" strings.
#include <string>
#include <string_view>
#include <vector>

namespace tlaunch {

// The value of `key`, or nullptr when it is not set.
const std::string* findEnv(const std::vector<std::string>& env, std::string_view key);
// Sets `key` (replacing every existing entry for it).
void setEnv(std::vector<std::string>& env, std::string_view key, std::string_view value);
// Drops PMIx client state a daemon may have inherited (e.g. when itself started by
// `srun --mpi=pmix`): every PMIX_* except user-chosen PMIX_MCA_* parameters.
void dropInheritedPmixVars(std::vector<std::string>& env);

}  // namespace tlaunch

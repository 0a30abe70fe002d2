#pragma once
// NCCL's configuration files and the settings in them (or in the environment) that silently
// push NCCL off InfiniBand: NCCL_IB_DISABLE=1 and NCCL_NET=Socket.
// NCCL (src/misc/param.cc) loads $NCCL_CONF_FILE, or else ~/.nccl.conf, then /etc/nccl.conf,
// each line NAME=VALUE ('#' in column 0 = comment), without overwriting what is already set:
// the environment beats the files and the first file beats /etc/nccl.conf.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "binding/fabric/user_env.h"

namespace tlaunch {

struct NcclConfEntry {
  std::string name;
  std::string value;
  std::string file;  // "/etc/nccl.conf"
  int line = 0;      // 1-based
  std::string where() const { return file + ":" + std::to_string(line); }
};

// Pure: the entries of one file's text, as NCCL reads them (no trimming around '=').
std::vector<NcclConfEntry> parseNcclConf(std::string_view text, const std::string& file);

// Edge: the files NCCL would read, in NCCL's precedence order. `confFileEnv` is the value of
// NCCL_CONF_FILE ("" when unset), `homeDir` the user's home (NCCL uses getpwuid, not $HOME),
// `etcRoot` the root holding etc/nccl.conf ("/" normally). Missing files contribute nothing.
std::vector<NcclConfEntry> readNcclConfFiles(const std::string& confFileEnv, const std::string& homeDir,
                                             const std::string& etcRoot = "/");

// The calling user's home directory as NCCL finds it (getpwuid(getuid())->pw_dir).
std::string ncclUserHomeDir();

struct NcclSetting {
  std::string value;
  std::string source;  // "-x", "environment" or "/etc/nccl.conf:3"
};

// What NCCL would see for `name`: the environment first, then the files in order.
std::optional<NcclSetting> ncclEffectiveSetting(const std::string& name, const UserEnv& env,
                                                const std::vector<NcclConfEntry>& conf);

struct FabricWarning {
  std::string variable;  // "NCCL_IB_DISABLE"
  std::string value;     // "1"
  std::string source;    // "environment", "-x", "/etc/nccl.conf:3"
  std::string message;   // one line for the user, naming the source and what to do
};

// Warnings for NCCL_IB_DISABLE != 0 and NCCL_NET=Socket wherever they are set. When
// `launcherSetsIb` (tlaunch exports NCCL_IB_DISABLE=0 / NCCL_NET=IB), file entries are
// reported as overridden; environment / -x values always apply.
std::vector<FabricWarning> ncclTrapWarnings(const UserEnv& env, const std::vector<NcclConfEntry>& conf,
                                            bool launcherSetsIb);

}  // namespace tlaunch

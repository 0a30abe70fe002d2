#include "binding/fabric/nccl_conf.h"

#include <pwd.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tlaunch {
namespace {

bool disablesIb(const std::string& value) { return std::strtoll(value.c_str(), nullptr, 0) != 0; }
bool forcesSocket(const std::string& value) { return strcasecmp(value.c_str(), "Socket") == 0; }

void readFile(const std::string& path, std::vector<NcclConfEntry>& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::stringstream text;
  text << in.rdbuf();
  for (auto& entry : parseNcclConf(text.str(), path)) out.push_back(std::move(entry));
}

}  // namespace

std::vector<NcclConfEntry> parseNcclConf(std::string_view text, const std::string& file) {
  std::vector<NcclConfEntry> out;
  int lineNo = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    std::string_view line = text.substr(start, end == std::string_view::npos ? end : end - start);
    start = end == std::string_view::npos ? text.size() : end + 1;
    ++lineNo;
    if (!line.empty() && line.front() == '#') continue;
    auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    out.push_back(NcclConfEntry{std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)), file, lineNo});
  }
  return out;
}

std::vector<NcclConfEntry> readNcclConfFiles(const std::string& confFileEnv, const std::string& homeDir,
                                             const std::string& etcRoot) {
  std::vector<NcclConfEntry> out;
  if (!confFileEnv.empty())
    readFile(confFileEnv, out);
  else if (!homeDir.empty())
    readFile(homeDir + "/.nccl.conf", out);
  readFile((std::filesystem::path(etcRoot) / "etc/nccl.conf").string(), out);
  return out;
}

std::string ncclUserHomeDir() {
  const passwd* pw = getpwuid(getuid());
  return pw && pw->pw_dir ? pw->pw_dir : "";
}

std::optional<NcclSetting> ncclEffectiveSetting(const std::string& name, const UserEnv& env,
                                                const std::vector<NcclConfEntry>& conf) {
  if (auto it = env.find(name); it != env.end()) return NcclSetting{it->second.value, it->second.source};
  for (const auto& entry : conf)
    if (entry.name == name) return NcclSetting{entry.value, entry.where()};
  return std::nullopt;
}

std::vector<FabricWarning> ncclTrapWarnings(const UserEnv& env, const std::vector<NcclConfEntry>& conf,
                                            bool launcherSetsIb) {
  std::vector<FabricWarning> out;
  struct Trap {
    const char* name;
    bool (*bad)(const std::string&);
    const char* effect;
  };
  const Trap traps[] = {
      {"NCCL_IB_DISABLE", disablesIb, "disables InfiniBand/RoCE: NCCL falls back to slow TCP sockets"},
      {"NCCL_NET", forcesSocket, "forces NCCL onto TCP sockets instead of InfiniBand/RoCE"},
  };
  for (const auto& trap : traps) {
    if (auto it = env.find(trap.name); it != env.end() && trap.bad(it->second.value)) {
      const std::string& src = it->second.source;
      std::string from = src == "-x" ? "given with -x" : src == "environment" ? "inherited from the environment" : "from " + src;
      out.push_back(FabricWarning{trap.name, it->second.value, it->second.source,
                                  std::string(trap.name) + "=" + it->second.value + " (" + from + ") " +
                                      trap.effect + "; unset it unless that is intended"});
    }
    std::string shadowedBy;  // what NCCL reads before this entry
    if (auto it = env.find(trap.name); it != env.end()) shadowedBy = (it->second.source == "environment" ? "the environment" : it->second.source) + " sets it";
    for (const auto& entry : conf) {
      if (entry.name != trap.name) continue;
      if (trap.bad(entry.value)) {
        std::string by = !shadowedBy.empty() ? shadowedBy : launcherSetsIb ? "tlaunch sets it" : "";
        std::string status = by.empty() ? "; it applies to this job: remove the line"
                                        : "; overridden for this job (" + by +
                                              "), but other launches still get it: remove the line";
        out.push_back(FabricWarning{trap.name, entry.value, entry.where(),
                                    std::string(trap.name) + "=" + entry.value + " in " + entry.where() + " " +
                                        trap.effect + status});
      }
      if (shadowedBy.empty()) shadowedBy = entry.where() + " sets it first";  // NCCL keeps the first value
    }
  }
  return out;
}

}  // namespace tlaunch

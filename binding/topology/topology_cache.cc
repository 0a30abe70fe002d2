#include "binding/topology/topology_cache.h"

#include <fcntl.h>
#include <hwloc.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string_view>
#include <vector>

#include "tlaunch/replace_file.h"
#include "tlaunch/strings.h"
#include "tlaunch/version.h"

extern char** environ;

namespace tlaunch {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMagic = "tlaunch-topology-cache 1 ";
constexpr size_t kMaxFileBytes = 64u << 20;
constexpr const char* kPrefix = "topology-";

// A small sysfs or procfs file, or "-" when it cannot be read.
std::string smallFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "-";
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n < 0) return "-";
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<std::string> names(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool hwlocEnvironment() {
  for (char** e = environ; *e; ++e)
    if (std::string_view(*e).rfind("HWLOC_", 0) == 0) return true;
  return false;
}

std::string sha256Hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr) != 1) return "unhashed";
  return hexBytes(std::string_view(reinterpret_cast<const char*>(digest), std::min(len, 16u)));
}

// This user's directory, closed to others (not a symlink): no one else can have put a file in it.
bool isPrivateDir(const std::string& dir) {
  struct stat st{};
  return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
}

}  // namespace

std::optional<std::string> liveTopologyFacts() {
  if (hwlocEnvironment()) return std::nullopt;
  const std::string boot = smallFile("/proc/sys/kernel/random/boot_id");
  if (boot == "-" || boot.empty()) return std::nullopt;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string f;
  f += "tlaunchd " + std::string(kVersion) + ", hwloc API " + std::to_string(hwloc_get_api_version()) + "\n";
  f += "boot " + boot + "\nhost " + host + "\n";
  f += "cpus online " + smallFile("/sys/devices/system/cpu/online") + " possible " +
       smallFile("/sys/devices/system/cpu/possible") + "\n";
  f += "numa online " + smallFile("/sys/devices/system/node/online") + "\n";
  for (const char* dir : {"/sys/bus/pci/devices", "/sys/class/infiniband", "/sys/class/drm", "/sys/class/block",
                          "/sys/class/dma", "/sys/bus/dax/devices"})
    f += std::string(dir) + ": " + joinStrings(names(dir), " ") + "\n";
  for (const auto& net : names("/sys/class/net"))
    f += "net " + net + " " + smallFile("/sys/class/net/" + net + "/address") + "\n";
  // hwloc records each InfiniBand port's state (the plan prefers active ports) and addresses.
  for (const auto& dev : names("/sys/class/infiniband")) {
    const std::string ports = "/sys/class/infiniband/" + dev + "/ports/";
    for (const auto& port : names(ports))
      f += "ib " + dev + "/" + port + " " + smallFile(ports + port + "/state") + " lid " +
           smallFile(ports + port + "/lid") + " " + smallFile(ports + port + "/gids/0") + "\n";
  }
  return f;
}

std::string topologyCacheFile(const std::string& dir, const std::string& facts) {
  return dir + "/" + kPrefix + sha256Hex(facts) + ".xml";
}

std::optional<std::string> readCachedTopology(const std::string& file, const std::string& facts) {
  // The directory's name is predictable and the facts readable by anyone: another user may have
  // made it first and planted a file (a FIFO would block the open; O_NONBLOCK, and no reading
  // in such a directory at all).
  if (!isPrivateDir(fs::path(file).parent_path().string())) return std::nullopt;
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st{};
  std::string bytes;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 022) == 0 &&
      static_cast<size_t>(st.st_size) <= kMaxFileBytes) {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    for (ssize_t n; got < bytes.size() && (n = ::read(fd, bytes.data() + got, bytes.size() - got)) > 0;)
      got += static_cast<size_t>(n);
    bytes.resize(got);
  }
  ::close(fd);
  // "<magic><length of the facts>\n<facts><xml>"
  if (bytes.rfind(kMagic, 0) != 0) return std::nullopt;
  const size_t eol = bytes.find('\n', kMagic.size());
  if (eol == std::string::npos) return std::nullopt;
  const std::string length = bytes.substr(kMagic.size(), eol - kMagic.size());
  if (length != std::to_string(facts.size()) || bytes.compare(eol + 1, facts.size(), facts) != 0) return std::nullopt;
  std::string xml = bytes.substr(eol + 1 + facts.size());
  if (xml.find("<topology") == std::string::npos) return std::nullopt;
  return xml;
}

void storeCachedTopology(const std::string& dir, const std::string& file, const std::string& facts,
                         const std::string& xml) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return;
  if (!isPrivateDir(dir)) return;
  const std::string bytes = std::string(kMagic) + std::to_string(facts.size()) + "\n" + facts + xml;
  if (replaceFileContents(file, bytes, 0600) != 0) return;
  // One file per machine state: the others are stale. Another daemon's file being written is
  // left for a minute.
  const std::string keep = fs::path(file).filename().string();
  const auto now = fs::file_time_type::clock::now();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == keep || name.rfind(kPrefix, 0) != 0) continue;
    std::error_code age_ec;
    if (name.find(".tmp") != std::string::npos &&
        now - fs::last_write_time(e.path(), age_ec) < std::chrono::minutes(1) && !age_ec)
      continue;
    ::unlink(e.path().c_str());
  }
}

}  // namespace tlaunch

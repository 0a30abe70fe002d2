#include "launcher/warm_registry.h"
#include "launcher/home_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "bootstrap/auth.h"
#include "bootstrap/keeper_protocol.h"  // epochSeconds
#include "bootstrap/message.h"
#include "launcher/ssh_starter.h"
#include "launcher/text_file.h"
#include "tlaunch/replace_file.h"

namespace tlaunch {

namespace {

constexpr const char* kEntryPrefix = "node-";
constexpr const char* kFix = "run without --keep-daemons";

// Node names are host names; anything else in one is escaped so it stays one file name ('@',
// which separates the keeper's pid and start from the name, included).
std::string fileNameOf(const WarmEntry& e) {
  std::string out = kEntryPrefix;
  for (unsigned char c : e.node) {
    if (std::isalnum(c) || c == '.' || c == '-' || c == '_') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out + "@" + std::to_string(e.pid) + "-" + std::to_string(e.since) + ".json";
}

bool isEntryFileName(const std::string& name) {
  return name.rfind(kEntryPrefix, 0) == 0 && name.size() > 10 && name.compare(name.size() - 5, 5, ".json") == 0;
}

Result<std::string> readSecret(const std::string& path, bool create) {
  // O_NONBLOCK: a FIFO in its place must not hold the open (it is refused below, unread).
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    if (!create) return std::string();
    // Written whole under another name, then linked into place: a tlaunch starting at the same
    // moment either wins the link or reads the winner's complete file. A unique temporary name
    // (mkostemp, 0600): one with the pid in it could be a crashed run's, or another host's on
    // a home directory shared over NFS.
    std::string tmp = path + ".new.XXXXXX";
    const int out = ::mkostemp(tmp.data(), O_CLOEXEC);
    if (out < 0) return fail(Errc::io, "cannot create " + tmp + ": " + std::strerror(errno), kFix);
    const std::string line = newJobSecret() + "\n";
    const bool ok = ::write(out, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(out);
    const bool linked = ok && (::link(tmp.c_str(), path.c_str()) == 0 || errno == EEXIST);
    const int err = errno;
    ::unlink(tmp.c_str());
    if (!linked) return fail(Errc::io, "cannot create " + path + ": " + std::strerror(err), kFix);
    return readSecret(path, false);
  }
  if (fd < 0) return fail(Errc::io, "cannot open " + path + ": " + std::strerror(errno), "remove it, or " + std::string(kFix));
  struct stat st{};
  const bool statted = ::fstat(fd, &st) == 0;
  std::string text(128, '\0');
  const ssize_t n = statted && S_ISREG(st.st_mode) ? ::read(fd, text.data(), text.size()) : -1;
  ::close(fd);
  const std::string hint = "remove " + path + " (a new one is made), or " + kFix;
  if (!statted || !S_ISREG(st.st_mode)) return fail(Errc::io, path + " is not a regular file", hint);
  if (st.st_uid != ::geteuid())
    return fail(Errc::io, path + " belongs to another user (uid " + std::to_string(st.st_uid) + ")", hint);
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 0777));
    return fail(Errc::io, path + " can be read by other users (mode " + mode + ")",
                "chmod 600 " + path + "; if others may have read it, run `tlaunch stop-daemons` after the chmod "
                "(running keepers accept it until they stop), then remove it (a new one is made)");
  }
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.size() < 32 || text.find_first_of("\n\r") != std::string::npos) return fail(Errc::io, path + " holds no secret", hint);
  return text;
}

}  // namespace

Result<WarmRegistry> WarmRegistry::open(const std::map<std::string, std::string>& env, bool create_secret) {
  const std::string home = homeDirectory(env);
  if (home.empty() || home.front() != '/')
    return fail(Errc::usage, "warm daemons need a home directory (HOME is not set)", kFix);
  return openAt(home + "/.cache/tlaunch/daemons", create_secret, home);
}

Result<WarmRegistry> WarmRegistry::openAt(const std::string& dir, bool create_secret, const std::string& base) {
  // Only looking (a launch without --keep-daemons, stop-daemons): no directory means no warm
  // daemons, and nothing is made in the user's home for it.
  struct stat st{};
  if (!create_secret && ::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) {
    WarmRegistry none;
    none.dir_ = dir;
    return none;
  }
  if (auto ok = ensurePrivateDir(dir, "warm-daemon directory", kFix, base); !ok) return tl::unexpected(ok.error());
  auto secret = readSecret(dir + "/secret", create_secret);
  if (!secret) return tl::unexpected(secret.error());
  WarmRegistry r;
  r.dir_ = dir;
  r.secret_ = std::move(*secret);
  return r;
}

std::string WarmRegistry::keeperSecret(const std::string& slurm_job) const {
  if (slurm_job.empty() || secret_.empty()) return secret_;
  return derivedSecret(secret_, "keepers of Slurm job " + slurm_job);
}

std::string WarmRegistry::pathOf(const WarmEntry& e) const { return dir_ + "/" + fileNameOf(e); }

std::vector<WarmEntry> WarmRegistry::all(long long now) const {
  std::vector<std::string> files;
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (isEntryFileName(e->d_name)) files.push_back(dir_ + "/" + e->d_name);
    ::closedir(d);
  }
  std::vector<WarmEntry> out;
  for (const auto& file : files) {
    auto text = readTextFile(file, "warm-daemon entry");
    if (!text) continue;
    // Not JSON (another program's file): not ours to judge, left alone. An entry without an
    // address, or past its expiry, is removed below.
    Json j = Json::parse(*text, nullptr, false);
    if (!j.is_object()) continue;
    WarmEntry e;
    e.node = getString(j, "node");
    e.destination = getString(j, "destination");
    e.host = getString(j, "host");
    e.port = static_cast<int>(getInt(j, "port"));
    e.pid = getInt(j, "pid");
    e.since = getInt(j, "since");
    e.expires = getInt(j, "expires");
    e.keep_s = static_cast<int>(getInt(j, "keep_s"));
    e.slurm_job = getString(j, "slurm_job");
    e.slurm_step = getString(j, "slurm_step");
    e.unanswered = getInt(j, "unanswered");
    e.file = file;
    if (e.node.empty() || e.host.empty() || e.port <= 0 || e.port > 65535 || e.expires <= now) {
      ::unlink(file.c_str());
      continue;
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<WarmEntry> WarmRegistry::newest(const std::vector<WarmEntry>& entries, const std::string& node,
                                              const std::function<bool(const WarmEntry&)>& usable) {
  const WarmEntry* best = nullptr;
  for (const auto& e : entries)
    if (e.node == node && usable(e) && (!best || e.since > best->since)) best = &e;
  return best ? std::optional<WarmEntry>(*best) : std::nullopt;
}

Result<void> WarmRegistry::save(const WarmEntry& e) const {
  Json j = {{"node", e.node},   {"destination", e.destination}, {"host", e.host},     {"port", e.port},
                  {"pid", e.pid},     {"since", e.since},             {"expires", e.expires}, {"keep_s", e.keep_s}};
  if (!e.slurm_job.empty()) j["slurm_job"] = e.slurm_job;
  if (!e.slurm_step.empty()) j["slurm_step"] = e.slurm_step;
  if (e.unanswered != 0) j["unanswered"] = e.unanswered;
  const std::string path = pathOf(e);
  // The new file has a random name of its own: two hosts sharing this home over NFS may save at
  // once with the same pid.
  if (const int e = replaceFileContents(path, jsonText(j) + "\n", 0600); e != 0)
    return fail(Errc::io, "cannot write " + path + ": " + std::strerror(e));
  // The file it was read from under another name (an older tlaunch's) goes, unless that tlaunch
  // has since written another keeper into it.
  if (!e.file.empty() && e.file != path) {
    auto old = readTextFile(e.file, "warm-daemon entry");
    Json was = old ? Json::parse(*old, nullptr, false) : Json();
    if (was.is_object() && getInt(was, "pid") == e.pid && getInt(was, "since") == e.since) ::unlink(e.file.c_str());
  }
  return {};
}

void WarmRegistry::remove(const WarmEntry& e) const { ::unlink((e.file.empty() ? pathOf(e) : e.file).c_str()); }

bool WarmRegistry::listed(const WarmEntry& e) const {
  return ::access(pathOf(e).c_str(), F_OK) == 0 || (!e.file.empty() && ::access(e.file.c_str(), F_OK) == 0);
}

}  // namespace tlaunch

// The live topology kept between jobs of a boot (binding/topology/topology_cache.h): what a cached
// load gives, when a file is used, and that a cached load still honours the process's cpuset.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "binding/topology/hwloc_topology.h"
#include "binding/topology/topology_cache.h"
#include "binding/topology/topology_json.h"
#include "topology_test_fixtures.h"

using namespace tlaunch;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tlaunch-topocache-test.XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

std::string slurp(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const std::string& file, const std::string& bytes, mode_t mode = 0600) {
  ::unlink(file.c_str());
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  ::chmod(file.c_str(), mode);
}

// What a cache file holds for `facts`: the format topology_cache.cc writes.
std::string cacheBytes(const std::string& facts, const std::string& xml) {
  return "tlaunch-topology-cache 1 " + std::to_string(facts.size()) + "\n" + facts + xml;
}

size_t pus(const TopologySnapshot& t) {
  size_t n = 0;
  for (const auto& numa : t.numa_nodes)
    for (const auto& core : numa.cores) n += core.size();
  return n;
}

int cacheFiles(const std::string& dir) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind("topology-", 0) == 0) ++n;
  return n;
}

}  // namespace

TEST_CASE("the facts of the live topology name this boot, host and devices", "[topology][cache]") {
  auto facts = liveTopologyFacts();
  REQUIRE(facts.has_value());
  CHECK(facts->find("\nboot ") != std::string::npos);
  CHECK(facts->find("\nhost ") != std::string::npos);
  CHECK(facts->find("/sys/bus/pci/devices: ") != std::string::npos);
  CHECK(liveTopologyFacts() == facts);  // the same machine, the same facts
  CHECK(topologyCacheFile("/d", *facts) == topologyCacheFile("/d", *facts));
  CHECK(topologyCacheFile("/d", *facts) != topologyCacheFile("/d", *facts + "net eth9 00:00:00:00:00:09\n"));
}

TEST_CASE("a HWLOC_ variable in the environment turns the topology cache off", "[topology][cache]") {
  ::setenv("HWLOC_HIDE_ERRORS", "1", 1);
  const bool off = !liveTopologyFacts().has_value();
  ::unsetenv("HWLOC_HIDE_ERRORS");
  CHECK(off);
  CHECK(liveTopologyFacts().has_value());
}

TEST_CASE("the live topology loaded through the cache is the one discovery gives", "[topology][cache]") {
  TempDir tmp;
  const std::string dir = tmp.path + "/cache";
  std::string xml_plain, xml_first, xml_second;
  bool plain_cached = true, first_cached = true, second_cached = false;
  auto plain = loadTopology("", &xml_plain, "", &plain_cached);
  auto first = loadTopology("", &xml_first, dir, &first_cached);  // discovers, stores
  REQUIRE(plain.has_value());
  REQUIRE(first.has_value());
  CHECK_FALSE(plain_cached);
  CHECK_FALSE(first_cached);  // what -v reports
  REQUIRE(cacheFiles(dir) == 1);
  struct stat st{};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  const auto facts = liveTopologyFacts();
  REQUIRE(facts.has_value());
  const std::string file = topologyCacheFile(dir, *facts);
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  const std::string stored = slurp(file);

  auto second = loadTopology("", &xml_second, dir, &second_cached);  // from the file
  REQUIRE(second.has_value());
  CHECK(second_cached);
  CHECK(slurp(file) == stored);
  CHECK(topologyToJson(*first) == topologyToJson(*plain));
  CHECK(topologyToJson(*second) == topologyToJson(*plain));
  CHECK(second->live);
  CHECK(second->source == "live");
  CHECK(xml_second == xml_first);  // what the ranks' PMIx gets
  CHECK(xml_second.find("<topology") != std::string::npos);
}

TEST_CASE("a cached topology is what the next load uses, so the file is keyed by the machine", "[topology][cache]") {
  // Proof that the file is read: a recorded 4-GPU machine put under this machine's facts comes
  // back from the next load (restricted to this process's CPUs, as any cached load is).
  auto juwels = test::topologyFixture("jsc-juwels-booster");
  if (juwels.empty()) return;
  TempDir tmp;
  const auto facts = liveTopologyFacts();
  REQUIRE(facts.has_value());
  REQUIRE(::mkdir((tmp.path + "/c").c_str(), 0700) == 0);
  const std::string file = topologyCacheFile(tmp.path + "/c", *facts);
  spit(file, cacheBytes(*facts, slurp(juwels)));
  auto t = loadTopology("", nullptr, tmp.path + "/c");
  REQUIRE(t.has_value());
  CHECK(t->gpus.size() == 4);
  // Written for other facts (another boot, a device added): not used, replaced by discovery.
  spit(file, cacheBytes(*facts + "net eth9 00:00:00:00:00:09\n", slurp(juwels)));
  auto other = loadTopology("", nullptr, tmp.path + "/c");
  REQUIRE(other.has_value());
  CHECK(other->gpus.size() != 4);
  CHECK(readCachedTopology(file, *facts).has_value());  // rewritten for this machine
  // Cut short (a full disk): hwloc refuses the XML, the load discovers, the file is rewritten.
  const std::string whole = slurp(file);
  spit(file, whole.substr(0, whole.size() / 2));
  auto cut = loadTopology("", nullptr, tmp.path + "/c");
  REQUIRE(cut.has_value());
  CHECK(topologyToJson(*cut) == topologyToJson(*other));
  CHECK(slurp(file) == whole);
}

TEST_CASE("a cache file that is garbage, a symlink, a FIFO, another user's, writable by others or in an open directory is not used",
          "[topology][cache]") {
  auto juwels = test::topologyFixture("jsc-juwels-booster");
  if (juwels.empty()) return;
  TempDir tmp;
  const auto facts = liveTopologyFacts();
  REQUIRE(facts.has_value());
  const std::string dir = tmp.path + "/c";
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  const std::string file = topologyCacheFile(dir, *facts);
  const std::string good = cacheBytes(*facts, slurp(juwels));

  spit(file, good);
  CHECK(readCachedTopology(file, *facts).has_value());
  spit(file, "garbage");
  CHECK_FALSE(readCachedTopology(file, *facts).has_value());
  spit(file, good, 0620);
  CHECK_FALSE(readCachedTopology(file, *facts).has_value());
  spit(file, good, 0602);
  CHECK_FALSE(readCachedTopology(file, *facts).has_value());

  const std::string elsewhere = tmp.path + "/elsewhere.xml";
  spit(elsewhere, good);
  ::unlink(file.c_str());
  REQUIRE(::symlink(elsewhere.c_str(), file.c_str()) == 0);
  CHECK_FALSE(readCachedTopology(file, *facts).has_value());

  if (::geteuid() == 0) {
    ::unlink(file.c_str());
    spit(file, good);
    REQUIRE(::chown(file.c_str(), 65534, 65534) == 0);
    CHECK_FALSE(readCachedTopology(file, *facts).has_value());
  }

  // A FIFO in its place (nobody will ever write to it): refused at once, not waited on.
  ::unlink(file.c_str());
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(readCachedTopology(file, *facts).has_value());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));

  // A good file in a directory others may write to (another user could have made it first,
  // knowing its name): not read.
  ::unlink(file.c_str());
  spit(file, good);
  REQUIRE(::chmod(dir.c_str(), 0777) == 0);
  CHECK_FALSE(readCachedTopology(file, *facts).has_value());
  REQUIRE(::chmod(dir.c_str(), 0700) == 0);
  CHECK(readCachedTopology(file, *facts).has_value());
  if (::geteuid() == 0) {
    REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
    CHECK_FALSE(readCachedTopology(file, *facts).has_value());
    REQUIRE(::chown(dir.c_str(), 0, 0) == 0);
  }
}

TEST_CASE("nothing is written into a cache directory that is open to others or another user's", "[topology][cache]") {
  TempDir tmp;
  const auto facts = liveTopologyFacts();
  REQUIRE(facts.has_value());
  const std::string open_dir = tmp.path + "/open";
  REQUIRE(::mkdir(open_dir.c_str(), 0700) == 0);
  REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
  storeCachedTopology(open_dir, topologyCacheFile(open_dir, *facts), *facts, "<topology/>");
  CHECK(cacheFiles(open_dir) == 0);
  if (::geteuid() == 0) {
    const std::string foreign = tmp.path + "/foreign";
    REQUIRE(::mkdir(foreign.c_str(), 0700) == 0);
    REQUIRE(::chown(foreign.c_str(), 65534, 65534) == 0);
    storeCachedTopology(foreign, topologyCacheFile(foreign, *facts), *facts, "<topology/>");
    CHECK(cacheFiles(foreign) == 0);
  }
  const std::string link = tmp.path + "/link";
  const std::string target = tmp.path + "/target";
  REQUIRE(::mkdir(target.c_str(), 0700) == 0);
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  storeCachedTopology(link, topologyCacheFile(link, *facts), *facts, "<topology/>");
  CHECK(cacheFiles(target) == 0);
  // A good directory: one file, the others (another boot's) removed.
  const std::string good = tmp.path + "/good";
  REQUIRE(::mkdir(good.c_str(), 0700) == 0);
  spit(good + "/topology-0123456789abcdef0123456789abcdef.xml", "old");
  storeCachedTopology(good, topologyCacheFile(good, *facts), *facts, "<topology/>");
  CHECK(cacheFiles(good) == 1);
  CHECK(readCachedTopology(topologyCacheFile(good, *facts), *facts) == std::optional<std::string>("<topology/>"));
}

namespace {

// A cpuset cgroup (v1) allowing only CPU 0, or "" where none can be made here.
std::string cpu0Cgroup() {
  const std::string base = "/sys/fs/cgroup/cpuset";
  if (::geteuid() != 0 || !fs::exists(base + "/cpuset.cpus") || ::sysconf(_SC_NPROCESSORS_ONLN) < 2) return "";
  std::string dir = base + "/tlaunch-topocache-test-" + std::to_string(::getpid());
  if (::mkdir(dir.c_str(), 0755) != 0) return "";
  std::ofstream(dir + "/cpuset.cpus") << "0\n";
  std::ofstream(dir + "/cpuset.mems") << slurp(base + "/cpuset.mems");
  if (slurp(dir + "/cpuset.cpus") != "0\n" || slurp(dir + "/cpuset.mems").size() < 2) {
    ::rmdir(dir.c_str());
    return "";
  }
  return dir;
}

}  // namespace

TEST_CASE("a topology loaded from the cache honours the process's cpuset", "[topology][cache]") {
  const std::string cgroup = cpu0Cgroup();
  if (cgroup.empty()) {
    WARN("skipped: needs root, a cgroup v1 cpuset hierarchy and two CPUs");
    return;
  }
  TempDir tmp;
  const std::string dir = tmp.path + "/c";
  auto whole = loadTopology("", nullptr, dir);  // stores the whole machine
  REQUIRE(whole.has_value());
  REQUIRE(pus(*whole) >= 2);
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::ofstream(cgroup + "/cgroup.procs") << ::getpid() << "\n";
    auto cached = loadTopology("", nullptr, dir);
    auto plain = loadTopology("");
    const std::string line = std::to_string(cached ? pus(*cached) : 0) + " " + std::to_string(plain ? pus(*plain) : 0);
    (void)!::write(out[1], line.data(), line.size());
    ::_exit(0);
  }
  ::close(out[1]);
  char buf[64] = {};
  const ssize_t n = ::read(out[0], buf, sizeof buf - 1);
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::rmdir(cgroup.c_str());
  REQUIRE(n > 0);
  std::istringstream got(std::string(buf, static_cast<size_t>(n)));
  size_t cached_pus = 0, plain_pus = 0;
  got >> cached_pus >> plain_pus;
  CHECK(plain_pus == 1);
  CHECK(cached_pus == 1);
  CHECK(cacheFiles(dir) == 1);
}

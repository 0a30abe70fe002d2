// Where the frontend remembers its warm daemons (launcher/warm_registry.h): a private directory,
// a secret nobody else can read (refused otherwise, never silently used), one entry per keeper.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "launcher/warm_registry.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace tlaunch;
using tlaunch::testing::TempDir;

namespace {

unsigned modeOf(const fs::path& p) {
  struct stat st{};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

}  // namespace

TEST_CASE("warm registry: a private directory and a 0600 secret, made once and kept", "[hosts][warm]") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "cache" / "daemons";
  auto none = WarmRegistry::openAt(dir.string(), false);
  REQUIRE(none);
  CHECK(none->secret().empty());  // nothing made unless asked
  CHECK(none->all(0).empty());
  CHECK_FALSE(fs::exists(dir.parent_path()));
  auto made = WarmRegistry::openAt(dir.string(), true);
  REQUIRE(made);
  CHECK(made->secret().size() == 64);
  CHECK(modeOf(dir) == 0700);
  CHECK(modeOf(dir / "secret") == 0600);
  auto again = WarmRegistry::openAt(dir.string(), true);
  REQUIRE(again);
  CHECK(again->secret() == made->secret());
}

TEST_CASE("warm registry: a crashed run's temporary secret file does not stop a new one", "[hosts][warm]") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "daemons";
  REQUIRE(WarmRegistry::openAt(dir.string(), false));
  fs::create_directory(dir);  // only looking made nothing
  // The name an earlier version used: <secret>.new<pid>, left by a run killed mid-write.
  { std::ofstream(dir / ("secret.new" + std::to_string(::getpid()))) << "half"; }
  auto made = WarmRegistry::openAt(dir.string(), true);
  REQUIRE(made);
  CHECK(made->secret().size() == 64);
  CHECK(modeOf(dir / "secret") == 0600);
}

TEST_CASE("warm registry: keepers inside a Slurm allocation get a secret of that allocation only", "[hosts][warm]") {
  TempDir tmp;
  auto reg = WarmRegistry::openAt((tmp.path() / "daemons").string(), true);
  REQUIRE(reg);
  WarmEntry over_ssh, in_slurm, other_job;
  in_slurm.slurm_job = "4242";
  other_job.slurm_job = "4243";
  CHECK(reg->secretFor(over_ssh) == reg->secret());
  const std::string derived = reg->secretFor(in_slurm);
  // It travels on srun's stdin: a line of hex, neither the user's secret nor another job's.
  CHECK(derived.size() == 64);
  CHECK(derived.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(derived != reg->secret());
  CHECK(derived != reg->secretFor(other_job));
  CHECK(derived == reg->keeperSecret("4242"));  // the same on every call, for the step and its users
}

TEST_CASE("warm registry: a secret others could read or that is not ours is refused, saying how to fix it",
          "[hosts][warm]") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "daemons";
  REQUIRE(WarmRegistry::openAt(dir.string(), true));
  ::chmod((dir / "secret").c_str(), 0644);
  auto open = WarmRegistry::openAt(dir.string(), true);
  REQUIRE_FALSE(open);
  CHECK_THAT(open.error().message, Catch::Contains("can be read by other users (mode 0644)"));
  CHECK_THAT(open.error().hint, Catch::Contains("chmod 600"));

  fs::remove(dir / "secret");
  std::ofstream(tmp.path() / "elsewhere") << std::string(64, 'a') << "\n";
  fs::create_symlink(tmp.path() / "elsewhere", dir / "secret");
  auto link = WarmRegistry::openAt(dir.string(), true);
  REQUIRE_FALSE(link);
  CHECK_THAT(link.error().message, Catch::Contains(dir.string() + "/secret"));

  fs::remove(dir / "secret");
  { std::ofstream(dir / "secret") << "short\n"; }
  ::chmod((dir / "secret").c_str(), 0600);
  auto junk = WarmRegistry::openAt(dir.string(), true);
  REQUIRE_FALSE(junk);
  CHECK_THAT(junk.error().message, Catch::Contains("holds no secret"));

  // A FIFO in its place is refused at once (the open must not wait for a writer).
  fs::remove(dir / "secret");
  REQUIRE(::mkfifo((dir / "secret").c_str(), 0600) == 0);
  auto fifo = WarmRegistry::openAt(dir.string(), true);
  REQUIRE_FALSE(fifo);
  CHECK_THAT(fifo.error().message, Catch::Contains("is not a regular file"));

  fs::remove(dir / "secret");
  ::chmod(dir.c_str(), 0755);
  REQUIRE(WarmRegistry::openAt(dir.string(), true));  // our own directory is tightened
  CHECK(modeOf(dir) == 0700);
}

namespace {
std::optional<WarmEntry> newestOf(const WarmRegistry& reg, const std::string& node, long long now) {
  return WarmRegistry::newest(reg.all(now), node, [](const WarmEntry&) { return true; });
}
// A registry with a secret, in a directory of its own.
struct FreshRegistry {
  static constexpr long long kNow = 1'000'000;  // the tests' clock
  TempDir tmp;
  fs::path dir = tmp.path() / "d";
  WarmRegistry reg = openAt(dir);
  static WarmRegistry openAt(const fs::path& d) {
    auto r = WarmRegistry::openAt(d.string(), true);
    REQUIRE(r);
    return std::move(*r);
  }
};
size_t filesIn(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string().rfind("node-", 0) == 0 ? 1 : 0;
  return n;
}
}  // namespace

TEST_CASE("warm registry: entries per keeper, an expired one is forgotten", "[hosts][warm]") {
  FreshRegistry fresh;
  WarmRegistry* reg = &fresh.reg;
  const TempDir& tmp = fresh.tmp;
  const long long now = FreshRegistry::kNow;
  REQUIRE(reg->save({"node1", "node1", "10.0.0.1", 40001, 123, now - 60, now + 600, 600, "", ""}));
  REQUIRE(reg->save({"node2", "node2", "10.0.0.2", 40002, 124, now - 60, now - 1, 600, "", ""}));
  // A node name is one file name whatever it holds: nothing lands outside the directory.
  REQUIRE(reg->save({"../evil/x", "x", "10.0.0.3", 40003, 125, now, now + 600, 600, "", ""}));
  // A keeper of a Slurm allocation's keeper step says which allocation.
  REQUIRE(reg->save({"node4", "node4", "10.0.0.4", 40004, 126, now, now + 600, 600, "4242", ""}));
  CHECK(filesIn(tmp.path() / "d") == 4);
  CHECK(newestOf(*reg, "node4", now)->slurm_job == "4242");
  // ... and with what srun settings its step was made: a job asking srun for others (another
  // container image, more GPUs) is not run in it.
  WarmEntry gpus2{"node5", "node5", "10.0.0.5", 40005, 127, now, now + 600, 600, "4242", ""};
  gpus2.slurm_step = "--gres=gpu:2";
  REQUIRE(reg->save(gpus2));
  const auto five = newestOf(*reg, "node5", now);
  REQUIRE(five);
  CHECK(five->slurm_step == "--gres=gpu:2");
  CHECK(five->mayServe("4242", "--gres=gpu:2"));
  CHECK_FALSE(five->mayServe("4242", "--gres=gpu:8"));
  CHECK_FALSE(five->mayServe("4242", ""));
  CHECK(newestOf(*reg, "node4", now)->mayServe("4242", ""));
  CHECK_FALSE(newestOf(*reg, "node4", now)->mayServe("4343", ""));
  reg->remove(*five);
  CHECK_FALSE(fs::exists(tmp.path() / "evil"));
  auto one = newestOf(*reg, "node1", now);
  REQUIRE(one);
  CHECK(one->host == "10.0.0.1");
  CHECK(one->port == 40001);
  CHECK(one->keep_s == 600);
  CHECK(one->destination == "node1");
  CHECK(one->pid == 123);
  CHECK(one->since == now - 60);
  CHECK(one->slurm_job.empty());
  CHECK_FALSE(newestOf(*reg, "node2", now));  // expired: gone, and its file with it
  CHECK(filesIn(tmp.path() / "d") == 3);
  CHECK(newestOf(*reg, "../evil/x", now));
  // Something that is not an entry of ours is left alone and not used.
  { std::ofstream(tmp.path() / "d" / "node-node3.json") << "{not json"; }
  CHECK_FALSE(newestOf(*reg, "node3", now));
  CHECK(fs::exists(tmp.path() / "d" / "node-node3.json"));
  reg->remove(*one);
  CHECK_FALSE(newestOf(*reg, "node1", now));
}

TEST_CASE("warm registry: two keepers of one node are both written down and forgetting one keeps the other",
          "[hosts][warm]") {
  FreshRegistry fresh;
  WarmRegistry* reg = &fresh.reg;
  const long long now = FreshRegistry::kNow;
  // Two tlaunch started at once, or a keeper that did not answer while a new one was started.
  const WarmEntry older{"node1", "node1", "10.0.0.1", 40001, 123, now - 300, now + 600, 600, "", ""};
  const WarmEntry newer{"node1", "node1", "10.0.0.1", 40077, 456, now - 10, now + 600, 600, "", ""};
  REQUIRE(reg->save(older));
  REQUIRE(reg->save(newer));
  const auto all = reg->all(now);
  CHECK(all.size() == 2);  // stop-daemons sees both
  auto best = newestOf(*reg, "node1", now);
  REQUIRE(best);
  CHECK(best->pid == 456);  // a launch tries the newest
  // Only the usable ones count (another allocation's, another host's under that name).
  auto usable = WarmRegistry::newest(all, "node1", [](const WarmEntry& e) { return e.port == 40001; });
  REQUIRE(usable);
  CHECK(usable->pid == 123);
  // The newest is gone: the older one is still there to be tried or stopped.
  reg->remove(*best);
  auto left = newestOf(*reg, "node1", now);
  REQUIRE(left);
  CHECK(left->pid == 123);
  // A launch that got no answer from it says so in its entry, which stays.
  WarmEntry silent = *left;
  silent.unanswered = now - 5;
  REQUIRE(reg->save(silent));
  CHECK(newestOf(*reg, "node1", now)->unanswered == now - 5);
  // Saved again with a later expiry (after a job): the same entry, not a third.
  WarmEntry later = *left;
  later.expires = now + 900;
  REQUIRE(reg->save(later));
  CHECK(reg->all(now).size() == 1);
  CHECK(newestOf(*reg, "node1", now)->expires == now + 900);
}

TEST_CASE("warm registry: an entry an older tlaunch named by node alone is used and moves to the new name",
          "[hosts][warm]") {
  FreshRegistry fresh;
  WarmRegistry* reg = &fresh.reg;
  const long long now = FreshRegistry::kNow;
  const fs::path& dir = fresh.dir;
  {
    std::ofstream(dir / "node-node1.json")
        << R"({"node":"node1","destination":"node1","host":"10.0.0.1","port":40001,"pid":123,"since":999000,)"
        << R"("expires":1000600,"keep_s":600})" << "\n";
  }
  auto old = newestOf(*reg, "node1", now);
  REQUIRE(old);
  CHECK(old->pid == 123);
  REQUIRE(reg->save(*old));
  CHECK_FALSE(fs::exists(dir / "node-node1.json"));
  CHECK(reg->all(now).size() == 1);
  // An older tlaunch wrote another keeper into the old name meanwhile: that one stays.
  {
    std::ofstream(dir / "node-node1.json")
        << R"({"node":"node1","destination":"node1","host":"10.0.0.1","port":40009,"pid":999,"since":999500,)"
        << R"("expires":1000600,"keep_s":600})" << "\n";
  }
  REQUIRE(reg->save(*old));  // *old still names node-node1.json as where it came from
  CHECK(fs::exists(dir / "node-node1.json"));
  CHECK(reg->all(now).size() == 2);
}

// The command line: bounds of every numeric flag, other launchers' names, and the preflight
// subcommand sharing the job's declarations (issue 11 item 8, issue 12 item 2).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "launcher/cli_arg_checks.h"
#include "launcher/cli_options.h"
#include "cli_test_support.h"
#include "launcher/cli_values.h"
#include "launcher/foreign_flags.h"
#include "launcher/rank_failure_policy.h"

using namespace tlaunch;

namespace {

using test::parse;

bool refused(std::vector<std::string> args) {
  auto p = parse(std::move(args));
  return p.exit_now && *p.exit_now == 64;
}

bool hasExport(const JobSpec& s, const std::string& kv) {
  return std::find(s.exports.begin(), s.exports.end(), kv) != s.exports.end();
}

}  // namespace

TEST_CASE("numbers out of range are usage errors and not crashes or overflows") {
  CHECK(refused({"--stdin", "99999999999", "-p", "1", "--", "true"}));
  CHECK(refused({"--heartbeat-timeout", "3000000", "-p", "1", "--", "true"}));
  CHECK(refused({"--heartbeat-timeout", "1", "-p", "1", "--", "true"}));  // one late ping would end the job
  CHECK(refused({"-p", "100000000", "--", "true"}));
  CHECK(refused({"-g", "0", "--", "true"}));
  CHECK(refused({"-N", "100001", "-p", "1", "--", "true"}));
  CHECK(refused({"--connect-timeout", "0", "--", "true"}));
  CHECK(refused({"--kill-timeout", "-1", "--", "true"}));
  CHECK(refused({"--ssh-fanout", "1e3", "--", "true"}));
  CHECK(refused({"--cpus-per-rank", "2x", "--", "true"}));
  CHECK(refused({"--expect-rate", "nan", "--", "true"}));
  CHECK(refused({"--expect-rate", "1e9", "--", "true"}));
  CHECK(refused({"-n", "0", "--", "true"}));
  CHECK(refused({"--master-port", "70000", "--", "true"}));
  auto ok = parse({"--kill-timeout", "86400", "--heartbeat-timeout", "86400", "-p", "4096", "--stdin", "0", "--", "true"});
  CHECK_FALSE(ok.exit_now);
  CHECK(ok.spec.kill_timeout_s == 86400);
  CHECK(ok.spec.procs_per_node == 4096);
  CHECK(ok.spec.stdin_rank == 0);
}

TEST_CASE("keep-daemons takes a duration with units, 0, and at most a week") {
  CHECK(parse({"--keep-daemons", "10m", "--", "true"}).spec.keep_daemons_s == 600);
  CHECK(parse({"--keep-daemons", "0", "--", "true"}).spec.keep_daemons_s == 0);
  CHECK(parse({"--", "true"}).spec.keep_daemons_s == -1);
  CHECK(refused({"--keep-daemons", "10", "--", "true"}));  // minutes or seconds? say which
  CHECK(refused({"--keep-daemons", "8d", "--", "true"}));
  CHECK(refused({"--keep-daemons", "-1m", "--", "true"}));
  for (const char* zero : {"0s", "0m", "00:00"}) CHECK(parse({"--keep-daemons", zero, "--", "true"}).spec.keep_daemons_s == 0);
  // One range in every message: the week, not --time-limit's year.
  for (const char* far : {"8d", "365d", "400d"}) {
    auto r = parseDuration("--keep-daemons", far, kMaxKeepDaemonsSeconds, true);
    REQUIRE_FALSE(r);
    CHECK(r.error().message == std::string("--keep-daemons ") + far + ": must be 0 or from 1s to 7d");
  }
  CHECK(parse({"stop-daemons"}).command == Subcommand::stop_daemons);
}

TEST_CASE("timeouts in seconds take a bare number or a duration with units") {
  CHECK(parse({"--kill-timeout", "5", "--", "true"}).spec.kill_timeout_s == 5);
  CHECK(parse({"--kill-timeout", "5s", "--", "true"}).spec.kill_timeout_s == 5);  // was "must be a whole number"
  CHECK(parse({"--kill-timeout", "0s", "--", "true"}).spec.kill_timeout_s == 0);
  CHECK(parse({"--heartbeat-timeout", "2m", "--", "true"}).spec.heartbeat_timeout_s == 120);
  CHECK(parse({"--connect-timeout", "1m30s", "--", "true"}).spec.connect_timeout_s == 90);
  CHECK(parse({"--ssh-connect-timeout", "20s", "--hosts", "n1", "--", "true"}).spec.ssh_connect_timeout_s == 20);
  CHECK(refused({"--heartbeat-timeout", "2s", "--", "true"}));  // at least 3 s
  CHECK(refused({"--connect-timeout", "2d", "--", "true"}));    // at most a day
  CHECK(refused({"--kill-timeout", "5x", "--", "true"}));
  auto r = parseSeconds("--heartbeat-timeout", "2s", 3, 86'400);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "--heartbeat-timeout 2s: must be from 3 to 86400 seconds (a bare number, or with units: 30s, 2m, 1h)");
  // Durations past what an int holds get the flag's own range too, not a generic one.
  for (const char* huge : {"99999d", "999999999:00:00", "999999999d999999999d999999999d"}) {
    auto past = parseSeconds("--connect-timeout", huge, 1, 86'400);
    REQUIRE_FALSE(past);
    CHECK(past.error().message == "--connect-timeout " + std::string(huge) +
                                      ": must be from 1 to 86400 seconds (a bare number, or with units: 30s, 2m, 1h)");
  }
  auto grace = parseEventGrace("61s");
  REQUIRE_FALSE(grace);
  CHECK(grace.error().message == "--event-grace 61s: at most 60s");
}

TEST_CASE("bounded values say the bound") {
  auto r = parseBoundedInt("-p/--procs-per-node", "100000000", 1, kMaxRanksPerNode);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "-p/--procs-per-node 100000000: must be a whole number from 1 to 4096");
  CHECK_FALSE(parseBoundedInt("--stdin", "99999999999999999999", 0, 10));
  CHECK(*parseBoundedInt("--stdin", "7", 0, 10) == 7);
}

TEST_CASE("torchrun and srun and mpirun names mean what they mean there") {
  auto t = parse({"--nproc-per-node", "4", "--nnodes", "2", "--", "true"});
  CHECK(t.spec.procs_per_node == 4);
  CHECK(t.spec.nodes == 2);
  CHECK(parse({"--nproc-per-node", "gpu", "--", "true"}).spec.nproc_per_node_word == "gpu");
  CHECK(parse({"--nproc-per-node", "auto", "--", "true"}).spec.nproc_per_node_word == "auto");
  CHECK(refused({"--nproc-per-node", "gpus", "--", "true"}));
  CHECK(parse({"--nnodes", "2:4", "--", "true"}).spec.nodes == 4);
  CHECK(refused({"--nnodes", "4:2", "--", "true"}));
  CHECK(refused({"--nnodes", "x", "--", "true"}));
  CHECK(parse({"--ntasks-per-node", "3", "--", "true"}).spec.procs_per_node == 3);
  CHECK(parse({"--npernode", "5", "--", "true"}).spec.procs_per_node == 5);
  CHECK(parse({"-n", "12", "--", "true"}).spec.total_ranks == 12);
  CHECK(parse({"--np", "12", "--", "true"}).spec.total_ranks == 12);
  CHECK(parse({"-D", "/tmp", "-p", "1", "--", "true"}).spec.chdir == "/tmp");
  CHECK(parse({"-l", "-p", "1", "--", "true"}).spec.tag == TagMode::rank);
  CHECK(parse({"--label", "-p", "1", "--", "true"}).spec.tag == TagMode::rank);
  auto m = parse({"--mca", "btl_tcp_if_include", "eth0", "--mca", "pml", "ob1", "--", "true"});
  CHECK_FALSE(m.exit_now);
  CHECK(hasExport(m.spec, "OMPI_MCA_btl_tcp_if_include=eth0"));
  CHECK(hasExport(m.spec, "OMPI_MCA_pml=ob1"));
  CHECK(refused({"--mca", "a.b", "c", "--", "true"}));
  auto r = parse({"-x", "MASTER_ADDR=10.0.0.9", "--master-addr", "10.0.0.1", "--master-port", "29500", "--", "true"});
  CHECK_FALSE(r.exit_now);
  REQUIRE(r.spec.exports.size() == 3);
  CHECK(r.spec.exports[1] == "MASTER_ADDR=10.0.0.1");  // after -x: the flag wins
  CHECK(r.spec.exports[2] == "MASTER_PORT=29500");
  CHECK(refused({"--master-addr", "a b", "--", "true"}));
  CHECK(parse({"--net", "ib", "-p", "1", "--", "true"}).spec.net_mode == "ib");
  CHECK(refused({"--net", "rdma", "--", "true"}));
  CHECK(refused({"--net-cidr", "10.1.0.0", "-p", "1", "--", "true"}));
  CHECK(refused({"--net-cidr", "10.1.0.300/16", "-p", "1", "--", "true"}));
  CHECK(refused({"--net-if", "ib0,eth/1", "-p", "1", "--", "true"}));
  CHECK(refused({"--net-if", "averyveryverylongname", "-p", "1", "--", "true"}));
  auto net = parse({"--net-cidr", "10.1.0.0/16", "--net-if", "ib0,ib1", "-p", "1", "--", "true"});
  CHECK_FALSE(net.exit_now);
  CHECK(net.spec.net_if == std::vector<std::string>{"ib0", "ib1"});
  CHECK(parse({"--summary-json", "/tmp/s.json", "-p", "1", "--", "true"}).spec.summary_json == "/tmp/s.json");
}

TEST_CASE("other launchers' flags that tlaunch spells differently say what to give instead") {
  // mpirun's -np was read as `-n p`: "must be a whole number", with no word of -n.
  CHECK(foreignLauncherFlag("-np").value_or("").find("give -n N") != std::string::npos);
  CHECK(foreignLauncherFlag("-np16").value_or("").starts_with("-np is mpirun's flag"));
  CHECK(foreignLauncherFlag("--rdzv_endpoint=host:29400").value_or("").find("tlaunch is the rendezvous") !=
        std::string::npos);
  CHECK(foreignLauncherFlag("--host").value_or("").find("--hosts") != std::string::npos);
  CHECK(foreignLauncherFlag("--num_gpus").value_or("").find("-g N") != std::string::npos);
  CHECK_FALSE(foreignLauncherFlag("--hosts"));
  CHECK_FALSE(foreignLauncherFlag("-npx"));
  CHECK_FALSE(foreignLauncherFlag("train.py"));
  CHECK(refused({"-np", "4", "--", "true"}));
  CHECK(refused({"-np4", "--", "true"}));
  CHECK(refused({"--rdzv-endpoint", "x:1", "--nnodes", "2", "python3", "t.py"}));
  CHECK(refused({"--rdzv_backend=c10d", "python3", "t.py"}));
  CHECK(refused({"--standalone", "--nproc-per-node", "2", "python3", "t.py"}));
  CHECK(refused({"--host", "a,b", "true"}));
  // The program's own flags are its own.
  auto own = parse({"-p", "1", "python3", "-m", "train", "--standalone", "--host", "h"});
  CHECK_FALSE(own.exit_now);
  CHECK(own.spec.argv == std::vector<std::string>{"python3", "-m", "train", "--standalone", "--host", "h"});
}

TEST_CASE("preflight shares the job's options so typos are refused and not taken as defaults") {
  CHECK(refused({"preflight", "--launcher", "sssh", "--hosts", "a"}));
  CHECK(refused({"preflight", "--preflight-skip", "memlok", "--hosts", "a"}));
  CHECK(refused({"--preflight-skip", "memlock,gpudirekt", "-p", "1", "--", "true"}));
  CHECK(refused({"preflight", "-N", "0", "--hosts", "a"}));
  CHECK(unknownCheck("memlok").find("memlock") != std::string::npos);
  auto p = parse({"preflight", "--launcher", "ssh", "--hosts", "a,b", "--include", "a", "--preflight-skip",
                  "memlock,gpudirect", "--connect-timeout", "5"});
  CHECK_FALSE(p.exit_now);
  CHECK(p.command == Subcommand::preflight);
  CHECK(p.spec.launcher == LauncherKind::ssh);
  CHECK(p.spec.include == "a");
  CHECK(p.spec.connect_timeout_s == 5);
  CHECK(p.spec.preflight_skip == std::vector<std::string>{"memlock", "gpudirect"});
}

// `tlaunch --hosts n1 stop-daemons` would have ended every warm daemon of the user's, not n1's;
// `-N 2 preflight -N 4` kept the last value. Other options before a subcommand stay allowed (an
// alias such as `tlaunch --net tcp` is used with every subcommand).
TEST_CASE("a node choice before a subcommand that takes none, or an option given on both sides, is refused") {
  auto stop = parse({"--hosts", "n1", "stop-daemons"});
  REQUIRE(stop.exit_now);
  CHECK(*stop.exit_now == 64);
  CHECK(stop.refusal.find("--hosts chooses nodes, but 'stop-daemons' takes none") != std::string::npos);
  CHECK(refused({"-N", "2", "status"}));
  CHECK(refused({"--hostfile", "h", "topo"}));
  auto twice = parse({"-N", "2", "preflight", "-N", "4", "--hosts", "a,b,c,d"});
  REQUIRE(twice.exit_now);
  CHECK(twice.refusal.find("--nodes was given before and after 'preflight'") != std::string::npos);
  CHECK_FALSE(parse({"--net", "tcp", "stop-daemons"}).exit_now);
  auto before = parse({"--hosts", "a,b", "preflight", "-N", "2"});
  CHECK_FALSE(before.exit_now);
  CHECK(before.spec.hosts == "a,b");
  CHECK_FALSE(parse({"stop-daemons"}).exit_now);
  // nccl-report is parsed on its own only as the first argument; after an option it was run as
  // the job's program.
  auto report = parse({"-v", "nccl-report", "run.log"});
  REQUIRE(report.exit_now);
  CHECK(report.refusal.find("nccl-report is a subcommand") != std::string::npos);
  CHECK(parse({"-p", "1", "--", "nccl-report"}).spec.argv == std::vector<std::string>{"nccl-report"});
  // After "--" a subcommand's name is the program's (it was parsed as the subcommand, and refused).
  for (const char* name : {"status", "topo", "stacks", "preflight", "stop-daemons"}) {
    auto program = parse({"-p", "1", "--", name, "--", "x"});
    CHECK_FALSE(program.exit_now);
    CHECK(program.command == Subcommand::run);
    CHECK(program.spec.argv == std::vector<std::string>{name, "--", "x"});
  }
  CHECK(refused({"topo", "--", "x"}));  // a subcommand runs no program
  // One of tlaunch's options after "--" was run as the program ("program '-N' not found").
  auto late = parse({"-p", "1", "--", "-N", "2", "train.py"});
  REQUIRE(late.exit_now);
  CHECK(late.refusal.find("'-N' comes after --, so it would be run as the program") != std::string::npos);
  CHECK_FALSE(parse({"-p", "1", "--", "-not-an-option-of-ours"}).exit_now);
  CHECK(parse({"-p", "1", "echo", "--", "hi"}).spec.argv == std::vector<std::string>{"echo", "--", "hi"});
}

TEST_CASE("a program one or two letters from a subcommand, found nowhere on PATH, is said to look like it") {
  CHECK(subcommandLookalike("stauts", "/usr/bin:/bin") == std::optional<std::string>("status"));
  CHECK(subcommandLookalike("preflgiht", "/usr/bin:/bin") == std::optional<std::string>("preflight"));
  CHECK(subcommandLookalike("stop-daemon", "/usr/bin:/bin") == std::optional<std::string>("stop-daemons"));
  CHECK_FALSE(subcommandLookalike("status", "/usr/bin"));     // the subcommand itself is parsed as one
  CHECK_FALSE(subcommandLookalike("python3", "/usr/bin"));    // far from every name
  CHECK_FALSE(subcommandLookalike("./stauts", "/usr/bin"));   // a path is what the user means
  CHECK_FALSE(subcommandLookalike("stat", "/usr/bin:/bin"));  // coreutils' stat, 2 from "status": it exists
  CHECK(subcommandLookalike("stat", "/nowhere") == std::optional<std::string>("status"));
}

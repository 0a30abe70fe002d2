// The ssh starter: argv, failure explanations from real ssh texts, fanout, secret on stdin,
// and a real ssh run against a name that cannot resolve.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hosts_test_support.h"
#include "launcher/child_process.h"
#include "launcher/ssh_starter.h"

using namespace tlaunch;
namespace fs = std::filesystem;
using W = std::vector<std::string>;

namespace {

using test::TempDir;

void writeScript(const fs::path& file, const std::string& text) {
  std::ofstream(file) << text;
  fs::permissions(file, fs::perms::owner_all);
}

std::string readFile(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Polls until `done` or the deadline; returns every failure seen.
template <class Done>
std::vector<StartFailure> pollUntil(DaemonStarter& starter, Done done, int timeout_ms) {
  std::vector<StartFailure> all;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    auto f = starter.poll();
    all.insert(all.end(), f.begin(), f.end());
    if (done(all)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return all;
}

}  // namespace

TEST_CASE("hosts: ssh argv: exact form with reuse and extra options", "[hosts][ssh]") {
  SshStarterOptions o;
  o.connect_timeout_s = 7;
  o.control_persist_s = 90;
  o.ssh_options = {"Port=2222", "-i '/keys/my key' -l alice"};
  DaemonCommand cmd{"/opt/tlaunch/bin/tlaunchd", {"--connect", "10.0.0.1:4000", "--job-id", "j 1"}};
  auto argv = buildSshArgv(o, "/run/user/1000/tlaunch-ssh", NodeTarget{2, "node3", "", {}}, cmd);
  REQUIRE(argv);
  CHECK(*argv == W{"ssh", "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=7",
                   "-o", "ControlMaster=auto", "-o", "ControlPath=/run/user/1000/tlaunch-ssh/%C",
                   "-o", "ControlPersist=90s", "-o", "Port=2222", "-i", "/keys/my key", "-l", "alice",
                   "-o", "ServerAliveInterval=4", "-o", "ServerAliveCountMax=2", "node3",
                   "exec '/opt/tlaunch/bin/tlaunchd' '--connect' '10.0.0.1:4000' '--job-id' 'j 1' "  // NOLINT(bugprone-suspicious-missing-comma): one argument
                   "'--node-index' '2' '--node-name' 'node3'"});
}

TEST_CASE("hosts: ssh argv: no reuse, user@host destination, bad input", "[hosts][ssh]") {
  SshStarterOptions o;
  DaemonCommand cmd{"tlaunchd", {}};
  auto argv = buildSshArgv(o, "", NodeTarget{0, "n1", "bob@n1", {}}, cmd);
  REQUIRE(argv);
  CHECK(*argv == W{"ssh", "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5",
                   "-o", "ServerAliveCountMax=2", "bob@n1",
                   "exec 'tlaunchd' '--node-index' '0' '--node-name' 'n1'"});
  CHECK_FALSE(buildSshArgv(o, "", NodeTarget{0, "-oProxyCommand=x", "", {}}, cmd));
  o.ssh_options = {"-i 'unclosed"};
  auto bad = buildSshArgv(o, "", NodeTarget{0, "n1", "", {}}, cmd);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::StartsWith("--ssh-option:"));
  // What tlaunch sets itself would be ignored (ssh keeps the first value): refused, naming the flag.
  for (const auto& [given, flag] : std::vector<std::pair<std::string, std::string>>{
           {"ConnectTimeout=60", "--ssh-connect-timeout"}, {"-o controlpath=/tmp/x", "--ssh-reuse"},
           {"-oControlPersist=no", "--ssh-reuse"}, {"BatchMode no", "BatchMode=yes"}}) {
    o.ssh_options = {given};
    auto refused = buildSshArgv(o, "", NodeTarget{0, "n1", "", {}}, cmd);
    INFO(given);
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message, Catch::Contains("tlaunch sets this ssh option itself"));
    CHECK_THAT(refused.error().hint, Catch::Contains(flag));
  }
  o.ssh_options = {"ServerAliveInterval=60", "-o ConnectionAttempts=2"};  // the user's own, before tlaunch's
  auto own = buildSshArgv(o, "", NodeTarget{0, "n1", "", {}}, cmd);
  REQUIRE(own);
  const auto first = std::find_if(own->begin(), own->end(), [](const std::string& w) { return w.starts_with("ServerAliveInterval="); });
  REQUIRE(first != own->end());
  CHECK(*first == "ServerAliveInterval=60");
  o.ssh_options.clear();
  o.connect_timeout_s = 0;
  CHECK_FALSE(buildSshArgv(o, "", NodeTarget{0, "n1", "", {}}, cmd));
}

TEST_CASE("hosts: ssh control dir: private per-user place whose socket paths fit", "[hosts][ssh]") {
  CHECK(defaultSshControlDir({{"XDG_RUNTIME_DIR", "/run/user/1000"}, {"HOME", "/home/a"}}, 1000) ==
        "/run/user/1000/tlaunch-ssh");
  CHECK(defaultSshControlDir({{"HOME", "/home/a"}}, 1000) == "/home/a/.cache/tlaunch/ssh");
  const std::string deep(60, 'd');
  CHECK(defaultSshControlDir({{"HOME", "/" + deep}}, 1000) == "/tmp/tlaunch-ssh-1000");
  for (const auto& dir : {defaultSshControlDir({{"HOME", "/home/" + std::string(29, 'u')}}, 7),
                          defaultSshControlDir({{"XDG_RUNTIME_DIR", "/run/user/" + std::string(28, '9')}}, 7)}) {
    INFO(dir);
    // <dir>/<40 hex>.<16 random> plus NUL must fit sockaddr_un's 108 bytes.
    CHECK(dir.size() + 1 + 40 + 17 + 1 <= 108);
  }

  TempDir tmp;
  const std::string dir = (tmp.path() / "a" / "ctl").string();
  REQUIRE(ensurePrivateDir(dir));
  struct stat st{};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  ::chmod(dir.c_str(), 0755);
  REQUIRE(ensurePrivateDir(dir));  // tightened again
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  fs::create_directory_symlink(dir, tmp.path() / "link");
  auto link = ensurePrivateDir((tmp.path() / "link").string());
  REQUIRE_FALSE(link);
  CHECK_THAT(link.error().message, Catch::Contains("symbolic link"));
  std::ofstream(tmp.path() / "file") << "x";
  CHECK_FALSE(ensurePrivateDir((tmp.path() / "file").string()));
  CHECK_FALSE(ensurePrivateDir("relative/dir"));

  // A HOME that does not exist (a service account's /nonexistent) is not created: only what lies
  // below the base is.
  const fs::path home = tmp.path() / "home-gone";
  auto gone = ensurePrivateDir((home / ".cache/tlaunch/ssh").string(), "ssh control dir", "pass --ssh-reuse=off",
                               home.string());
  REQUIRE_FALSE(gone);
  CHECK_THAT(gone.error().message, Catch::Contains(home.string() + " does not exist"));
  CHECK_FALSE(fs::exists(home));
  fs::create_directory(home);
  REQUIRE(ensurePrivateDir((home / ".cache/tlaunch/ssh").string(), "ssh control dir", "pass --ssh-reuse=off",
                           home.string()));
  CHECK(fs::is_directory(home / ".cache/tlaunch/ssh"));
  const std::map<std::string, std::string> env{{"XDG_RUNTIME_DIR", "/run/user/7"}, {"HOME", "/home/a"}};
  CHECK(sshControlDirBase("/run/user/7/tlaunch-ssh", env) == "/run/user/7");
  CHECK(sshControlDirBase("/home/a/.cache/tlaunch/ssh", env) == "/home/a");
  CHECK(sshControlDirBase("/tmp/tlaunch-ssh-7", env) == "/tmp");
  CHECK(sshControlDirBase("/srv/ctl", env).empty());
}

// Texts recorded from OpenSSH 9.2p1 (Debian 12), bash and dash as remote shells.
TEST_CASE("hosts: explainSshFailure: real ssh texts become causes naming the node", "[hosts][ssh]") {
  const std::string path = "/opt/tlaunch/bin/tlaunchd";
  struct Case {
    int status;
    const char* stderr_text;
    const char* says;
  };
  const Case cases[] = {
      {255, "ssh: Could not resolve hostname node3: Name or service not known\n", "does not resolve"},
      {255, "ssh: Could not resolve hostname node3: Temporary failure in name resolution\n", "does not resolve"},
      {255, "ssh: connect to host node3 port 22: Connection refused\n", "connection refused"},
      {255, "ssh: connect to host node3 port 22: Connection timed out\n", "timed out"},
      {255, "Connection timed out during banner exchange\nConnection to UNKNOWN port 65535 timed out\n", "timed out"},
      {255, "ssh: connect to host node3 port 22: No route to host\n", "no route to node3"},
      {255, "ssh: connect to host node3 port 22: Network is unreachable\n", "no route to node3"},
      {255, "Warning: Permanently added 'node3' (ED25519) to the list of known hosts.\r\n"
            "root@node3: Permission denied (publickey).\r\n",
       "authentication was refused"},
      {255, "alice@node3: Permission denied (publickey,gssapi-keyex,gssapi-with-mic,password).\n",
       "authentication was refused"},
      {255, "Received disconnect from 10.0.0.3 port 22:2: Too many authentication failures\n", "authentication"},
      {255, "Host key verification failed.\n", "host key verification failed"},
      {255, "No ED25519 host key is known for node3 and you have requested strict checking.\n"
            "Host key verification failed.\n",
       "host key verification failed"},
      {255, "kex_exchange_identification: read: Connection reset by peer\nConnection reset by 10.0.0.3 port 22\n",
       "closed the connection before login"},
      // Through a ProxyJump / ProxyCommand: the proxy ended, not the node's sshd.
      {255, "kex_exchange_identification: Connection closed by remote host\nConnection closed by UNKNOWN port 65535\n",
       "through your ssh proxy"},
      {255, "command-line: line 0: Bad configuration option: foo\n", "check the --ssh-option"},
      {255, "ControlPath too long ('/home/x/.cache/tlaunch/ssh/c35daf743b6537b994ca49e9c9820454eceac5cb' >= 108 bytes)\n",
       "--ssh-reuse=off"},
      {255, "Bad owner or permissions on /root/.ssh/config\n", "unsafe permissions"},
      {127, "bash: /opt/tlaunch/bin/tlaunchd: No such file or directory\n",
       "tlaunchd not found at /opt/tlaunch/bin/tlaunchd on node3: install tlaunch there or pass --daemon-path"},
      {127, "dash: 1: exec: /opt/tlaunch/bin/tlaunchd: not found\n", "tlaunchd not found at"},
      {127, "zsh:1: no such file or directory: /opt/tlaunch/bin/tlaunchd\n", "tlaunchd not found at"},
      {127, "/opt/tlaunch/bin/tlaunchd: error while loading shared libraries: libpmix.so.2: cannot open shared "
            "object file: No such file or directory\n",
       "shared library"},
      {126, "bash: exec: /opt/tlaunch/bin/tlaunchd: cannot execute: Is a directory\n", "cannot be executed"},
      {-9, "", "killed by signal 9"},
      {3, "tlaunchd: cannot connect to 10.0.0.1:4000: Connection refused\n", "exited with status 3"},
  };
  for (const auto& c : cases) {
    INFO(c.stderr_text);
    const std::string message = explainSshFailure("node3", c.status, c.stderr_text, path);
    CHECK_THAT(message, Catch::Contains(c.says));
    CHECK_THAT(message, Catch::Contains("node3"));
    std::string last = c.stderr_text;
    while (!last.empty() && (last.back() == '\n' || last.back() == '\r')) last.pop_back();
    last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
    if (!last.empty() && last.back() == '\r') last.pop_back();
    if (!last.empty()) CHECK_THAT(message, Catch::Contains("ssh said:") && Catch::Contains(last));
  }
}

// After the daemon connected: how its session ended, for the lost node's message.
TEST_CASE("hosts: explainDaemonSessionEnd: the end of a connected daemon's ssh session", "[hosts][ssh]") {
  CHECK(explainDaemonSessionEnd(3, "") == "tlaunchd exited with status 3");
  CHECK(explainDaemonSessionEnd(-9, "") == "its ssh session was killed by signal 9 (Killed)");
  // A node that rebooted: ssh's own words follow, on lines of their own.
  const std::string rebooted = explainDaemonSessionEnd(255, "Connection to node3 closed by remote host.\r\n");
  CHECK(rebooted == "its ssh session ended with status 255: tlaunchd there was killed by a signal (kill -9, the OOM "
                    "killer: the node's `dmesg` says), or the connection to the node dropped\n  ssh said: Connection to "
                    "node3 closed by remote host.");
  // A sanitizer's report from the daemon: its last lines, not all of it.
  std::string report;
  for (int i = 0; i < 40; ++i) report += "    #" + std::to_string(i) + " 0x4f00 in frame" + std::to_string(i) + "\n";
  report += "SUMMARY: AddressSanitizer: SEGV daemon/x.cc:12 in f\n==1==ABORTING\n";
  const std::string crashed = explainDaemonSessionEnd(255, report);
  CHECK_THAT(crashed, Catch::Contains("SUMMARY: AddressSanitizer: SEGV") && Catch::Contains("ABORTING") &&
                          !Catch::Contains("frame1\n"));
  CHECK(std::count(crashed.begin(), crashed.end(), '\n') == 8);
}

// --max-restarts drops a node only for its own fault: this host's ssh configuration would
// fail on any node.
TEST_CASE("hosts: sshFailureIsLocal: this host's ssh faults are told from the node's", "[hosts][ssh]") {
  CHECK(sshFailureIsLocal(255, "unix_listener: path \"/x/%C.abc\" too long for Unix domain socket\n"));
  CHECK(sshFailureIsLocal(255, "command-line line 0: Bad configuration option: bogus\n"));
  CHECK(sshFailureIsLocal(255, "Bad owner or permissions on /root/.ssh/config\n"));
  CHECK_FALSE(sshFailureIsLocal(255, "ssh: connect to host n3 port 22: No route to host\n"));
  CHECK_FALSE(sshFailureIsLocal(255, "root@n3: Permission denied (publickey).\n"));
  CHECK_FALSE(sshFailureIsLocal(127, "sh: 1: exec: /opt/tlaunchd: not found\n"));
}

// A tree parent's failure that tlaunch would meet too (not tried again) or might not (it is).
TEST_CASE("hosts: sshFailureIsUnreachable: a node down for ssh from anywhere", "[hosts][ssh]") {
  CHECK(sshFailureIsUnreachable(255, "ssh: connect to host n3 port 22: No route to host\n"));
  CHECK(sshFailureIsUnreachable(255, "ssh: connect to host n3 port 22: Connection refused\n"));
  CHECK_FALSE(sshFailureIsUnreachable(255, "ssh: connect to host n3 port 22: Connection timed out\n"));
  CHECK_FALSE(sshFailureIsUnreachable(255, "root@n3: Permission denied (publickey).\n"));
  CHECK_FALSE(sshFailureIsUnreachable(127, "sh: 1: exec: /opt/tlaunchd: not found\n"));
}

TEST_CASE("hosts: explainSshFailure: a changed host key is told apart, banner left out", "[hosts][ssh]") {
  const std::string text =
      "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
      "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n"
      "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
      "IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\n"
      "Offending ED25519 key in /root/.ssh/known_hosts:1\n"
      "  remove with:\n"
      "  ssh-keygen -f \"/root/.ssh/known_hosts\" -R \"node3\"\n"
      "Host key for node3 has changed and you have requested strict checking.\n"
      "Host key verification failed.\n";
  const std::string message = explainSshFailure("node3", 255, text, "tlaunchd");
  CHECK_THAT(message, Catch::Contains("has CHANGED"));
  CHECK_THAT(message, Catch::Contains("ssh-keygen -R node3"));
  CHECK_THAT(message, !Catch::Contains("@@@"));
}

TEST_CASE("hosts: SshStarter: real ssh to a name that does not resolve", "[hosts][ssh]") {
  // In a network namespace of its own, with nothing but a down loopback: the name lookup fails
  // without a query leaving this machine (tests talk to nobody outside).
  if (::access("/usr/bin/ssh", X_OK) != 0 || ::geteuid() != 0 ||
      std::system("unshare -n true >/dev/null 2>&1") != 0) {
    WARN("SKIP: needs /usr/bin/ssh and root for unshare -n");
    return;
  }
  TempDir tmp;
  const fs::path isolated_ssh = tmp.path() / "isolated-ssh";
  writeScript(isolated_ssh, "#!/bin/sh\nexec unshare -n /usr/bin/ssh \"$@\"\n");
  SshStarterOptions o;
  o.ssh_program = isolated_ssh.string();
  o.connect_timeout_s = 5;
  o.control_dir = (tmp.path() / "ctl").string();
  SshStarter starter(o);
  REQUIRE(starter.start({NodeTarget{0, "nonexistent.invalid", "", {}}}, DaemonCommand{"/opt/tlaunch/bin/tlaunchd", {}},
                        "secret"));
  auto failures = pollUntil(starter, [](const auto& f) { return !f.empty(); }, 30000);
  starter.stop(100);
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].node_index == 0);
  CHECK_THAT(failures[0].message, Catch::StartsWith("nonexistent.invalid: the host name does not resolve"));
  CHECK_THAT(failures[0].message, Catch::Contains("Could not resolve hostname nonexistent.invalid"));
  CHECK(starter.warnings().empty());
  CHECK(starter.takeNotes().empty());
}

// A control directory that cannot be one turns reuse off, and the user is told (the note was
// kept in the starter and never said).
TEST_CASE("hosts: ssh reuse turned off is said as a note", "[hosts][ssh]") {
  TempDir tmp;
  const fs::path not_a_dir = tmp.path() / "file";
  { std::ofstream(not_a_dir) << "x"; }
  const fs::path idle_ssh = tmp.path() / "idle-ssh";
  writeScript(idle_ssh, "#!/bin/sh\nexec sleep 60\n");
  SshStarterOptions o;
  o.ssh_program = idle_ssh.string();
  o.connect_timeout_s = 5;
  o.control_dir = (not_a_dir / "ctl").string();
  SshStarter starter(o);
  REQUIRE(starter.start({NodeTarget{0, "nonexistent.invalid", "", {}}}, DaemonCommand{"/opt/tlaunch/bin/tlaunchd", {}},
                        "secret"));
  starter.stop(100);
  const auto notes = starter.takeNotes();
  REQUIRE(notes.size() == 1);
  CHECK_FALSE(notes[0].verbose_only);
  CHECK_THAT(notes[0].text, Catch::StartsWith("ssh connection reuse is off: "));
  CHECK(starter.takeNotes().empty());  // said once
}

// A fake ssh runs the remote command with a local shell, as sshd would on the node.
TEST_CASE("hosts: SshStarter: fanout, secret on stdin, arguments, failures, stop", "[hosts][ssh]") {
  TempDir tmp;
  const fs::path fake_ssh = tmp.path() / "fake-ssh";
  writeScript(fake_ssh, "#!/bin/sh\nfor last; do :; done\nexec /bin/sh -c \"$last\"\n");
  // The fake daemon records its arguments (NUL-separated) and the line on its stdin, then
  // waits to be stopped; node "bad" exits 3 with a message.
  const fs::path daemon = tmp.path() / "fake daemon";
  writeScript(daemon,
              "#!/bin/sh\nout=\"$1\"; shift\nfor last; do :; done\n"
              "printf '%s\\0' \"$@\" > \"$out/args.$last\"\nIFS= read -r secret\n"
              "printf '%s' \"$secret\" > \"$out/secret.$last\"\n"
              "if [ \"$last\" = bad ]; then echo 'tlaunchd: cannot connect' >&2; exit 3; fi\nexec sleep 60\n");

  SshStarterOptions o;
  o.ssh_program = fake_ssh.string();
  o.fanout = 2;
  o.reuse_connections = false;
  o.connect_timeout_s = 30;
  SshStarter starter(o);
  std::vector<NodeTarget> nodes;
  for (int i = 0; i < 5; ++i) nodes.push_back({i, i == 2 ? "bad" : "n" + std::to_string(i), "", {}});
  const std::string tricky = "a 'b' \"c\" $d; e\\f\ng";
  REQUIRE(starter.start(nodes, DaemonCommand{daemon.string(), {tmp.path().string(), tricky}}, "s3cr3t"));
  CHECK(starter.startedCount() == 2);

  // Nothing connected yet: the fanout holds the rest back.
  // (A file exists before printf has written it: wait for the contents.)
  const auto secret_of = [&](const char* node) { return readFile(tmp.path() / (std::string("secret.") + node)); };
  pollUntil(starter, [&](const auto&) { return secret_of("n0") == "s3cr3t" && secret_of("n1") == "s3cr3t"; }, 30000);
  CHECK(starter.startedCount() == 2);
  CHECK(secret_of("n0") == "s3cr3t");
  CHECK(secret_of("n1") == "s3cr3t");
  const std::string args = readFile(tmp.path() / "args.n1");
  std::string expected;
  for (const std::string& a : {tricky, std::string("--node-index"), std::string("1"), std::string("--node-name"),
                               std::string("n1")}) {
    expected += a + '\0';
  }
  CHECK(args == expected);

  starter.daemonConnected(0);
  starter.daemonConnected(1);
  auto failures = pollUntil(starter, [](const auto& f) { return !f.empty(); }, 30000);
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].node_index == 2);
  CHECK_THAT(failures[0].message, Catch::StartsWith("tlaunchd on bad exited with status 3"));
  CHECK_THAT(failures[0].message, Catch::Contains("tlaunchd: cannot connect"));

  // The failed node freed its slot: all five have started.
  pollUntil(starter, [&](const auto&) { return starter.startedCount() == 5; }, 30000);
  CHECK(starter.startedCount() == 5);
  // Let the last daemons come up before stopping them.
  pollUntil(starter, [&](const auto&) { return fs::exists(tmp.path() / "secret.n4"); }, 30000);

  const auto before = std::chrono::steady_clock::now();
  starter.stop(2000);
  CHECK(std::chrono::steady_clock::now() - before < std::chrono::seconds(3));
  CHECK(starter.poll().empty());  // stopped processes are not reported as failures
}

// What ssh prints on its stdout (a node's .bashrc that echoes, a banner) belongs to no rank:
// it is kept with ssh's stderr for the failure's explanation, never printed among the ranks'
// lines. And a helper that writes more than a pipe holds must not block while it runs.
TEST_CASE("hosts: ChildProcess: stdout is captured with stderr, and read while the child runs", "[hosts][ssh]") {
  auto echo = ChildProcess::spawn({"/bin/sh", "-c", "echo from-bashrc; echo from-ssh >&2; exit 3"}, "");
  REQUIRE(echo);
  REQUIRE(echo->waitExit(std::chrono::seconds(10)));
  CHECK_THAT(echo->outputText(), Catch::Contains("from-bashrc") && Catch::Contains("from-ssh"));
  CHECK(echo->describeStatus() == "exited with status 3");

  // 4 MiB, then it exits: it gets there only if poll() reads while it runs.
  auto chatty = ChildProcess::spawn(
      {"/bin/sh", "-c", "head -c 4194304 /dev/zero | tr '\\0' x >&2; echo; echo the-end >&2; exit 0"}, "");
  REQUIRE(chatty);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!chatty->poll() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(chatty->poll());
  CHECK_THAT(chatty->outputText(), Catch::EndsWith("\nthe-end\n"));
  CHECK(chatty->outputText().size() <= size_t{16} * 1024);  // the last 16 KiB kept
  chatty->terminate(1000);
}

// Every node whose ssh fails is reported by the starter, each with its own words.
TEST_CASE("hosts: SshStarter: several nodes failing are each reported", "[hosts][ssh]") {
  TempDir tmp;
  const fs::path fake_ssh = tmp.path() / "fake-ssh";
  // Destinations (the word before the remote command) starting with "dead" fail as an
  // unreachable host does; the others wait.
  writeScript(fake_ssh,
              "#!/bin/sh\nfor word; do host=\"$last\"; last=\"$word\"; done\n"
              "echo 'Welcome to the cluster'\n"
              "case \"$host\" in dead*) echo \"ssh: connect to host $host port 22: No route to host\" >&2; exit 255;; esac\n"
              "exec sleep 60\n");
  SshStarterOptions o;
  o.ssh_program = fake_ssh.string();
  o.reuse_connections = false;
  SshStarter starter(o);
  std::vector<NodeTarget> nodes{{0, "n0", "", {}}, {1, "dead1", "", {}}, {2, "n2", "", {}}, {3, "dead3", "", {}}};
  REQUIRE(starter.start(nodes, DaemonCommand{"tlaunchd", {}}, "s"));
  auto failures = pollUntil(starter, [](const auto& f) { return f.size() >= 2; }, 30000);
  starter.stop(100);
  REQUIRE(failures.size() == 2);
  std::sort(failures.begin(), failures.end(), [](const auto& a, const auto& b) { return a.node_index < b.node_index; });
  CHECK(failures[0].node_index == 1);
  CHECK(failures[1].node_index == 3);
  CHECK_THAT(failures[0].message, Catch::StartsWith("dead1: ") && Catch::Contains("No route to host"));
  CHECK_THAT(failures[1].message, Catch::StartsWith("dead3: ") && Catch::Contains("port 22: No route to host"));
  CHECK_THAT(failures[1].message, Catch::Contains("Welcome to the cluster"));  // ssh's stdout, in its words
}

// The nodes a tree parent could not start reach the frontend one by one: they are added to
// one starter and share its fanout (one starter each started them all at once).
TEST_CASE("hosts: SshStarter: nodes added later wait for the same fanout", "[hosts][ssh]") {
  TempDir tmp;
  const fs::path fake_ssh = tmp.path() / "fake-ssh";
  writeScript(fake_ssh, "#!/bin/sh\nexec sleep 60\n");
  SshStarterOptions o;
  o.ssh_program = fake_ssh.string();
  o.reuse_connections = false;
  o.fanout = 2;
  SshStarter starter(o);
  REQUIRE(starter.start({NodeTarget{0, "n0", "", {}}}, DaemonCommand{"tlaunchd", {}}, "s"));
  CHECK(starter.startedCount() == 1);
  REQUIRE(starter.add({NodeTarget{1, "n1", "", {}}, NodeTarget{2, "n2", "", {}}, NodeTarget{3, "n3", "", {}}}));
  CHECK(starter.startedCount() == 2);  // n0 and n1 connecting: the fanout is full
  starter.daemonConnected(0);
  starter.daemonConnected(1);
  CHECK(starter.poll().empty());
  CHECK(starter.startedCount() == 4);
  starter.stop(100);
  REQUIRE(starter.add({NodeTarget{4, "n4", "", {}}}));  // the job is ending: nothing more starts
  CHECK(starter.startedCount() == 4);
  CHECK(starter.poll().empty());
}

TEST_CASE("hosts: SshStarter: a missing ssh program is an error at start", "[hosts][ssh]") {
  SshStarterOptions o;
  o.ssh_program = "/nonexistent/ssh";
  SshStarter starter(o);
  auto r = starter.start({NodeTarget{0, "n1", "", {}}}, DaemonCommand{"tlaunchd", {}}, "s");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("/nonexistent/ssh"));
}

// Node sources: --hosts, hostfiles, --include/--exclude, Slurm environment, -N and slots.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "launcher/node_source.h"
#include "launcher/text_file.h"

using namespace tlaunch;
using Env = std::map<std::string, std::string>;

namespace {
std::vector<std::string> names(const std::vector<HostEntry>& hosts) {
  std::vector<std::string> out;
  for (const auto& h : hosts) out.push_back(h.name);
  return out;
}
std::vector<int> slots(const std::vector<HostEntry>& hosts) {
  std::vector<int> out;
  for (const auto& h : hosts) out.push_back(h.slots);
  return out;
}
using S = std::vector<std::string>;
using I = std::vector<int>;
}  // namespace

TEST_CASE("hosts: --hosts: names, slots, hostlist expressions, users", "[hosts][node_source]") {
  auto r = parseHostsOption("node1,node2:4, gpu[01-02]:8,alice@node9");
  REQUIRE(r);
  CHECK(names(*r) == S{"node1", "node2", "gpu01", "gpu02", "node9"});
  CHECK(slots(*r) == I{-1, 4, 8, 8, -1});
  CHECK((*r)[4].attrs.at("user") == "alice");
  CHECK(sshDestination((*r)[4]) == "alice@node9");
  CHECK(sshDestination((*r)[0]) == "node1");
}

TEST_CASE("hosts: --hosts: errors name the bad part", "[hosts][node_source]") {
  struct Case {
    const char* text;
    const char* says;
  };
  for (auto [text, says] : {Case{"a,,b", "empty host name"}, Case{"a:0", "from 1 to 1000000"}, Case{"a:x", "'x'"},
                            Case{"a:1:2", "more than one ':'"}, Case{"-oProxyCommand=x", "starts with '-'"},
                            Case{"no de", "contains ' '"}, Case{"n[1-", "'['"}, Case{"@n", "empty user"}}) {
    INFO(text);
    auto r = parseHostsOption(text);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Errc::usage);
    CHECK_THAT(r.error().message, Catch::Contains(says));
    CHECK_THAT(r.error().message, Catch::Contains("--hosts"));
  }
}

TEST_CASE("hosts: hostfile: Open MPI / DeepSpeed form with comments and attributes", "[hosts][node_source]") {
  const char* text =
      "# training nodes\n"
      "\n"
      "node1 slots=8 net_if=ib1   # first\n"
      "node2 slots = 8 max_slots=16\n"
      "  node3\tslots=4\r\n"
      "bob@node4 slots=2\n"
      "node[5-6] slot=1 login=carol\n"  // Open MPI's other spellings
      "fe80::1 cpu=2 max-slots=4\n";
  auto r = parseHostfile(text, "hosts.txt");
  REQUIRE(r);
  CHECK(names(*r) == S{"node1", "node2", "node3", "node4", "node5", "node6", "fe80::1"});
  CHECK(slots(*r) == I{8, 8, 4, 2, 1, 1, 2});
  CHECK((*r)[0].attrs == std::map<std::string, std::string>{{"net_if", "ib1"}});
  CHECK((*r)[1].attrs.at("max_slots") == "16");
  CHECK((*r)[3].attrs.at("user") == "bob");
  CHECK((*r)[5].attrs.at("user") == "carol");
  CHECK((*r)[6].attrs.at("max_slots") == "4");
}

TEST_CASE("hosts: hostfile: MPICH form", "[hosts][node_source]") {
  auto r = parseHostfile("node1:8\nnode2:4 net_if=eth1\nnode3\n", "machines");
  REQUIRE(r);
  CHECK(names(*r) == S{"node1", "node2", "node3"});
  CHECK(slots(*r) == I{8, 4, -1});
  CHECK((*r)[1].attrs.at("net_if") == "eth1");
}

TEST_CASE("hosts: hostfile: a byte order mark and CRLF line ends (a Windows editor's) are not part of names",
          "[hosts][node_source]") {
  auto r = parseHostfile("\xEF\xBB\xBFnode1 slots=2\r\nnode2 slots=2\r\n", "hosts.txt");
  REQUIRE(r);
  CHECK(names(*r) == S{"node1", "node2"});
  CHECK(slots(*r) == I{2, 2});
  CHECK_FALSE(parseHostfile("node1\n\xEF\xBB\xBFnode2\n", "hosts.txt"));  // only at the start is it a mark
}

TEST_CASE("hosts: names beyond DNS's limits are refused where they are written", "[hosts][node_source]") {
  // Such a name resolves nowhere, and overflowed the names of the node's job directory and cgroup
  // (the job then failed in PMIx's set-up, with a hint to turn PMIx off).
  const std::string label(64, 'a'), longest = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                                               std::string(63, 'c') + "." + std::string(61, 'd');
  REQUIRE(longest.size() == 253);
  CHECK(parseHostsOption(longest));
  CHECK(parseHostsOption(std::string(63, 'a') + ".example"));
  auto too_long = parseHostfile(longest + "x\n", "hosts.txt");
  REQUIRE_FALSE(too_long);
  CHECK_THAT(too_long.error().message, Catch::Contains("has 254 characters (at most 253)"));
  auto wide_part = parseHostsOption(label + ".example");
  REQUIRE_FALSE(wide_part);
  CHECK_THAT(wide_part.error().message, Catch::Contains("a part of 64 characters between dots (at most 63)"));
  // A NUL in a hostfile: shown, not the end of the message.
  auto nul = parseHostfile(std::string("\0\x01 g\n", 5), "hosts.txt");
  REQUIRE_FALSE(nul);
  CHECK_THAT(nul.error().message, Catch::EndsWith("in '\\x00\\x01 g'"));
}

TEST_CASE("hosts: more names than a job may have nodes are refused before they are expanded", "[hosts][node_source]") {
  CHECK(parseHostsOption("n[1-100000]"));
  auto over = parseHostsOption("n[1-100001]");
  REQUIRE_FALSE(over);
  CHECK_THAT(over.error().message, Catch::Contains("more than 100000"));
  auto file = parseHostfile("a[1-60000]\nb[1-40000]\nc1\n", "hosts.txt");
  REQUIRE_FALSE(file);
  CHECK_THAT(file.error().message, Catch::Contains("hosts.txt:3:"));
}

TEST_CASE("hosts: hostfile: bad lines give file:line and the text", "[hosts][node_source]") {
  struct Case {
    const char* text;
    const char* where;
    const char* says;
  };
  for (auto [text, where, says] :
       {Case{"node1 slots=8\nnode2 slots=eight\n", "hosts.txt:2:", "'eight'"},
        Case{"node1 slots=0\n", "hosts.txt:1:", "from 1 to 1000000"},
        Case{"# c\n\nnode1 8\n", "hosts.txt:3:", "key=value"},
        Case{"node1 slots=2 slots=3\n", "hosts.txt:1:", "twice"},
        Case{"node1:4 slots=4\n", "hosts.txt:1:", "twice"},
        Case{"node1 net_if=a net_if=b\n", "hosts.txt:1:", "'net_if' given twice"},
        Case{"node1 slots=\n", "hosts.txt:1:", "no value"},
        Case{"node1\nnode2\nNODE1 slots=2\n", "hosts.txt:3:", "listed twice (first at line 1)"},
        Case{"node[1-3]\nnode2\n", "hosts.txt:2:", "node2 is listed twice"},
        Case{"node1 slots=4 max_slots=2\n", "hosts.txt:1:", "less than slots"},
        Case{"node;1\n", "hosts.txt:1:", "contains ';'"},
        Case{"node[1-\n", "hosts.txt:1:", "'['"},
        Case{"slots=4\n", "hosts.txt:1:", "start with a host name"},
        Case{"node1 slotz=4\n", "hosts.txt:1:", "unknown key 'slotz'"},  // not a node of one rank
        Case{"node1 slot=2 slots=2\n", "hosts.txt:1:", "twice"},
        // A typo for node1:8, not an IPv6 address: it was taken as a host nobody could reach.
        Case{"node1::8\n", "hosts.txt:1:", "'node1::8' has several ':' but is not an IPv6 address"},
        Case{"fd00::1::2 slots=2\n", "hosts.txt:1:", "not an IPv6 address"},
        // Bytes that would cut the message short or garble it are shown as \xNN; UTF-8 stays.
        Case{"\x01\xff\xfe garbage\n", "hosts.txt:1:", "in '\\x01\\xff\\xfe garbage'"},
        Case{"nod\xc3\xa9 slots=1\n", "hosts.txt:1:", "host name 'nod\xc3\xa9' contains '\\xc3'"},
        Case{"node1 slots=\x1b[2J\n", "hosts.txt:1:", "slots '\\x1b[2J'"}}) {
    INFO(text);
    auto r = parseHostfile(text, "hosts.txt");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Errc::usage);
    CHECK_THAT(r.error().message, Catch::StartsWith(where));
    CHECK_THAT(r.error().message, Catch::Contains(says));
  }
  // The hint fits the error and the file's own form: max_slots below slots says what each
  // means; a duplicate of an MPICH line is shown in MPICH's form.
  auto capped = parseHostfile("node1 slots=2 max_slots=1\n", "hosts.txt");
  REQUIRE_FALSE(capped);
  CHECK_THAT(capped.error().hint, Catch::Contains("lower slots to 1 or raise max_slots"));
  auto mpich = parseHostfile("node2:2\nnode2:1\n", "hosts.txt");
  REQUIRE_FALSE(mpich);
  CHECK_THAT(mpich.error().hint, Catch::Contains("(node2:8)"));
  auto quoted = parseHostfile("node1\n  node2 slots=x  # two\n", "hosts.txt");
  REQUIRE_FALSE(quoted);
  CHECK_THAT(quoted.error().message, Catch::EndsWith("in 'node2 slots=x  # two'"));
  auto empty = parseHostfile("# nothing\n\n", "empty.txt");
  REQUIRE_FALSE(empty);
  CHECK_THAT(empty.error().message, Catch::Contains("empty.txt names no hosts"));
}

TEST_CASE("hosts: --include keeps hosts in their order, with slot indices", "[hosts][node_source]") {
  auto hosts = *parseHostfile("node1 slots=4\nnode2 slots=4\nnode3 slots=4\n", "h");
  // A slot index given twice is a typo (0,0 for 0,1), not a wish: refused, not merged.
  auto twice = applyIncludeExclude(hosts, "node3@node1:0,2,2", "");
  REQUIRE_FALSE(twice);
  CHECK_THAT(twice.error().message, Catch::Contains("slot index 2 is listed twice in 'node1:0,2,2'"));
  auto r = applyIncludeExclude(hosts, "node3@node1:0,2", "");
  REQUIRE(r);
  CHECK(names(*r) == S{"node1", "node3"});
  CHECK((*r)[0].only_slots == I{0, 2});
  CHECK((*r)[1].only_slots.empty());
  CHECK(usableSlots((*r)[0]) == 2);
  CHECK(usableSlots((*r)[1]) == 4);
  auto expr = applyIncludeExclude(hosts, "node[2-3]:1", "");
  REQUIRE(expr);
  CHECK(names(*expr) == S{"node2", "node3"});
  CHECK((*expr)[1].only_slots == I{1});
}

TEST_CASE("hosts: --exclude drops hosts or slots", "[hosts][node_source]") {
  auto hosts = *parseHostfile("node1 slots=4\nnode2 slots=2\nnode3 slots=4\n", "h");
  auto r = applyIncludeExclude(hosts, "", "node1@node2:0,1@node3:3");
  REQUIRE(r);
  CHECK(names(*r) == S{"node3"});
  CHECK((*r)[0].only_slots == I{0, 1, 2});
}

TEST_CASE("hosts: --exclude of a host without a slot count leaves the GPUs to the planner", "[hosts][node_source]") {
  auto hosts = *parseHostsOption("node1:4,node2");
  auto r = applyIncludeExclude(hosts, "", "node2:3@node2:0,3@node1:1");
  REQUIRE(r);
  CHECK(names(*r) == S{"node1", "node2"});
  CHECK((*r)[0].only_slots == I{0, 2, 3});
  CHECK((*r)[1].only_slots.empty());
  CHECK((*r)[1].excluded_slots == I{0, 3});
  CHECK(usableSlots((*r)[1]) == -1);  // known once node2 reports its GPUs
}

// A hostfile may name nodes by IPv6 address: --include/--exclude can name them too, whole or
// bracketed with slot indices (the ':' of the address is not the slot separator).
TEST_CASE("hosts: --include/--exclude name IPv6 hosts", "[hosts][node_source]") {
  auto hosts = *parseHostfile("fd00::1 slots=2\nfd00::2 slots=2\nnode3 slots=2\n", "h");
  auto r = applyIncludeExclude(hosts, "", "fd00::1@[FD00::2]:1");
  REQUIRE(r);
  CHECK(names(*r) == S{"fd00::2", "node3"});
  CHECK((*r)[0].only_slots == I{0});
  auto in = applyIncludeExclude(hosts, "[fd00::1]", "");
  REQUIRE(in);
  CHECK(names(*in) == S{"fd00::1"});
  auto unknown = applyIncludeExclude(hosts, "fd00::9", "");
  REQUIRE_FALSE(unknown);
  CHECK_THAT(unknown.error().message, Catch::Contains("--include names fd00::9, which is not among the nodes"));
  auto two = applyIncludeExclude(hosts, "[fd00::1]:0:1", "");
  REQUIRE_FALSE(two);
  CHECK_THAT(two.error().message, Catch::Contains("more than one ':'"));
}

TEST_CASE("hosts: --include/--exclude errors", "[hosts][node_source]") {
  auto hosts = *parseHostsOption("node1:4,node2");
  struct Case {
    const char* include;
    const char* exclude;
    const char* says;
  };
  for (auto [inc, exc, says] : {Case{"node1", "node2", "both"},
                                Case{"node7", "", "node7, which is not among the nodes (node[1-2])"},
                                Case{"node1:4", "", "slot 4 of node1, which has 4 slots (0-3)"},
                                Case{"node1:x", "", "'x'"},
                                Case{"node1@@node2", "", "empty entry"},
                                Case{"", "node1@node2", "leaves no nodes"}}) {
    INFO(std::string(inc) + " / " + exc);
    auto r = applyIncludeExclude(hosts, inc, exc);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Errc::usage);
    CHECK_THAT(r.error().message, Catch::Contains(says));
  }
}

TEST_CASE("hosts: SLURM_TASKS_PER_NODE forms", "[hosts][node_source][slurm]") {
  CHECK(*parseSlurmTasksPerNode("2(x3),1") == I{2, 2, 2, 1});
  CHECK(*parseSlurmTasksPerNode("8") == I{8});
  CHECK(*parseSlurmTasksPerNode("4,2(x2)") == I{4, 2, 2});
  for (const char* bad : {"2(3)", "x", "2(x)", "2(x0)", "", "1,,2"}) {
    INFO(bad);
    auto r = parseSlurmTasksPerNode(bad);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("SLURM_TASKS_PER_NODE"));
  }
}

TEST_CASE("hosts: Slurm environment: node list, slots, detection", "[hosts][node_source][slurm]") {
  Env env{{"SLURM_JOB_ID", "42"}, {"SLURM_JOB_NODELIST", "gpu[01-03],cpu7"}, {"SLURM_TASKS_PER_NODE", "8(x3),2"}};
  CHECK(insideSlurmAllocation(env));
  auto r = hostsFromSlurmEnv(env);
  REQUIRE(r);
  CHECK(names(*r) == S{"gpu01", "gpu02", "gpu03", "cpu7"});
  CHECK(slots(*r) == I{8, 8, 8, 2});

  Env old_names{{"SLURM_JOBID", "42"}, {"SLURM_NODELIST", "n[1-2]"}};
  CHECK(insideSlurmAllocation(old_names));
  CHECK(slots(*hostsFromSlurmEnv(old_names)) == I{-1, -1});

  CHECK_FALSE(insideSlurmAllocation({{"SLURM_JOB_NODELIST", "n1"}}));
  CHECK_FALSE(insideSlurmAllocation({{"SLURM_JOB_ID", "42"}}));
  CHECK_FALSE(insideSlurmAllocation({}));

  Env mismatch = env;
  mismatch["SLURM_TASKS_PER_NODE"] = "8(x2)";
  auto m = hostsFromSlurmEnv(mismatch);
  REQUIRE_FALSE(m);
  CHECK_THAT(m.error().message, Catch::Contains("covers 2 nodes but SLURM_JOB_NODELIST names 4"));
  // Not taken as slots (tlaunch inside an allocation): a step's layout, over the step's nodes
  // (`srun --pty bash` sets it so), is neither read nor refused.
  mismatch["SLURM_STEP_ID"] = "0";
  auto step = hostsFromSlurmEnv(mismatch, /*tasks_as_slots=*/false);
  REQUIRE(step);
  CHECK(names(*step) == S{"gpu01", "gpu02", "gpu03", "cpu7"});
  CHECK(slots(*step) == I{-1, -1, -1, -1});

  Env bad = env;
  bad["SLURM_JOB_NODELIST"] = "gpu[01-";
  auto b = hostsFromSlurmEnv(bad);
  REQUIRE_FALSE(b);
  CHECK_THAT(b.error().message, Catch::StartsWith("SLURM_JOB_NODELIST:"));
}

TEST_CASE("hosts: resolveNodes picks the source and rejects duplicates", "[hosts][node_source]") {
  const Env slurm{{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "s[1-2]"}};
  NodeSourceOptions hosts_opt;
  hosts_opt.hosts = "b,a";
  CHECK(nodeOrigin(hosts_opt, slurm) == NodeOrigin::hosts);
  CHECK(names(*resolveNodes(hosts_opt, slurm)) == S{"b", "a"});

  NodeSourceOptions file_opt;
  file_opt.hostfile_name = "hosts.txt";
  file_opt.hostfile_content = "f1 slots=2\nf2 slots=2\n";
  file_opt.exclude = "f1";
  CHECK(nodeOrigin(file_opt, slurm) == NodeOrigin::hostfile);
  CHECK(names(*resolveNodes(file_opt, slurm)) == S{"f2"});

  NodeSourceOptions none;
  CHECK(nodeOrigin(none, slurm) == NodeOrigin::slurm);
  CHECK(names(*resolveNodes(none, slurm)) == S{"s1", "s2"});
  Env one_task = slurm;
  one_task["SLURM_TASKS_PER_NODE"] = "1(x2)";
  CHECK(slots(*resolveNodes(none, one_task)) == I{1, 1});
  none.slurm_tasks_as_slots = false;
  CHECK(slots(*resolveNodes(none, one_task)) == I{-1, -1});
  none.use_slurm_env = false;
  CHECK(nodeOrigin(none, slurm) == NodeOrigin::none);
  CHECK(resolveNodes(none, slurm)->empty());
  none.include = "x";
  CHECK_FALSE(resolveNodes(none, {}));

  NodeSourceOptions both = file_opt;
  both.hosts = "a";
  auto e = resolveNodes(both, {});
  REQUIRE_FALSE(e);
  CHECK_THAT(e.error().message, Catch::Contains("--hosts and --hostfile"));

  NodeSourceOptions dup;
  dup.hosts = "n1,n[1-2]";
  auto d = resolveNodes(dup, {});
  REQUIRE_FALSE(d);
  CHECK_THAT(d.error().message, Catch::Contains("n1 is listed twice in --hosts"));
  dup.hosts = "Node1,node1";
  CHECK_FALSE(resolveNodes(dup, {}));
}

TEST_CASE("hosts: a heterogeneous Slurm allocation is refused, not taken for this host", "[hosts][node_source][slurm]") {
  // What `salloc -N1 : -N2` sets (Slurm 22.05): no SLURM_JOB_NODELIST, one list per component.
  const Env het{{"SLURM_JOB_ID", "3"},
                {"SLURM_HET_SIZE", "2"},
                {"SLURM_JOB_NODELIST_HET_GROUP_0", "node1"},
                {"SLURM_JOB_NODELIST_HET_GROUP_1", "node[2-3]"}};
  CHECK(heterogeneousSlurmNodes(het) == "node1 + node[2-3]");
  NodeSourceOptions none;
  auto r = resolveNodes(none, het);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Errc::usage);
  CHECK_THAT(r.error().message, Catch::Contains("Slurm job 3 is a heterogeneous allocation (node1 + node[2-3])"));
  CHECK_THAT(r.error().hint, Catch::Contains("--hosts"));
  // Named nodes, or --launcher local / ssh (no use of Slurm's variables), are the user's choice.
  none.hosts = "node1,node2";
  CHECK(resolveNodes(none, het));
  NodeSourceOptions local;
  local.use_slurm_env = false;
  CHECK(resolveNodes(local, het));
  // A homogeneous allocation, and no allocation at all, are not heterogeneous.
  CHECK_FALSE(heterogeneousSlurmNodes({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "s1"}}));
  CHECK_FALSE(heterogeneousSlurmNodes({{"SLURM_JOB_NODELIST_HET_GROUP_0", "node1"}}));

  // A heterogeneous batch job's script: the first component's list is set too. Used (as srun
  // does), the components named for the note.
  Env batch = het;
  batch["SLURM_JOB_NODELIST"] = "node1";
  CHECK_FALSE(heterogeneousSlurmNodes(batch));
  CHECK(slurmHetComponents(batch) == "node1 + node[2-3]");
  CHECK(names(*resolveNodes(NodeSourceOptions{}, batch)) == S{"node1"});
  CHECK_FALSE(slurmHetComponents({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "s1"}}));
}

TEST_CASE("hosts: selectNodes: -N takes the first nodes, slots must hold ranks per node", "[hosts][node_source]") {
  auto hosts = *parseHostfile("n1 slots=8\nn2 slots=8\nn3 slots=4\nn4\n", "h");
  CHECK(names(*selectNodes(hosts, 2, 8)) == S{"n1", "n2"});
  CHECK(names(*selectNodes(hosts, 0, 0)).size() == 4);
  CHECK(selectNodes(hosts, 4, 4));  // n4's slot count is unknown: not checked here

  auto few = selectNodes(hosts, 5, 1);
  REQUIRE_FALSE(few);
  CHECK_THAT(few.error().message, Catch::Contains("-N 5 asks for 5 nodes, but only 4 are available"));

  auto small = selectNodes(hosts, 3, 8);
  REQUIRE_FALSE(small);
  CHECK_THAT(small.error().message,
             Catch::StartsWith("n3 has 4 slots, fewer than the 8 ranks per node asked for (-p/-g 8)"));
  auto said = selectNodes(hosts, 3, 8, "-n 24 / -g 8");  // where the count came from, as the layout says it
  REQUIRE_FALSE(said);
  CHECK_THAT(said.error().message, Catch::EndsWith("asked for (-n 24 / -g 8)"));
  CHECK_THAT(small.error().hint, Catch::Contains("n3 slots=8"));

  // -n 21 -p 8 over n1..n3: 8, 8 and 5 on the last, which has 4 slots; with 4 on it, it fits.
  auto last = selectNodes(hosts, 3, 8, "-n 21 / -p 8, 5 on the last node", 5);
  REQUIRE_FALSE(last);
  CHECK_THAT(last.error().message, Catch::StartsWith("n3 has 4 slots, fewer than the 5 ranks per node"));
  CHECK(selectNodes(hosts, 3, 8, "-n 20 / -p 8, 4 on the last node", 4));

  auto narrowed = *applyIncludeExclude(hosts, "n1:0,1", "");
  auto inc = selectNodes(narrowed, 1, 4);
  REQUIRE_FALSE(inc);
  CHECK_THAT(inc.error().message, Catch::Contains("n1 has 2 usable slots after --include/--exclude"));

  CHECK_FALSE(selectNodes(hosts, -1, 1));
  CHECK(selectNodes({}, 0, 8)->empty());

  // max_slots is Open MPI's hard limit; it was checked for its syntax, then ignored.
  auto capped = *parseHostfile("m1 max_slots=2\nm2\n", "h");
  auto over = selectNodes(capped, 2, 8);
  REQUIRE_FALSE(over);
  CHECK_THAT(over.error().message, Catch::StartsWith("m1 has max_slots=2 in the hostfile, fewer than the 8 ranks"));
  CHECK(selectNodes(capped, 2, 2));
  // With slots too, the tighter limit is said with both: raising max_slots alone would run into
  // slots next (and "at most 2" was wrong: 1).
  auto both = *parseHostfile("m1 slots=1 max_slots=2\n", "h");
  auto short_both = selectNodes(both, 1, 3);
  REQUIRE_FALSE(short_both);
  CHECK_THAT(short_both.error().message, Catch::StartsWith("m1 has slots=1 max_slots=2 in the hostfile"));
  CHECK_THAT(short_both.error().hint, Catch::Contains("at most 1 ranks") && Catch::Contains("slots=3 max_slots=3"));
}

TEST_CASE("hosts: readTextFile reads a hostfile and names a missing one", "[hosts][node_source]") {
  char path[] = "/tmp/tlaunch-hostfile-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string text = "node1 slots=2\nnode2 slots=2\n";
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  auto content = readTextFile(path, "hostfile");
  ::unlink(path);
  REQUIRE(content);
  CHECK(*content == text);
  auto missing = readTextFile(path, "hostfile");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message == std::string("cannot read hostfile ") + path + ": No such file or directory");
}

#include "launcher/cli_options.h"

#include <cstdlib>
#include <iostream>
#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>

#include "launcher/cli_arg_checks.h"
#include "launcher/cli_option_helpers.h"
#include "launcher/cli_values.h"
#include "launcher/home_directory.h"
#include "launcher/export_flags_cli.h"
#include "launcher/failure_cli.h"
#include "launcher/inspect_cli.h"
#include "tlaunch/version.h"
#include "bootstrap/error_text.h"

namespace tlaunch {

namespace {

// Names of one setting (ours, torchrun's, srun's, mpirun's): given together, which one counts
// would be the order of declaration here, not the user's; refused instead.
void excludeEachOther(const std::vector<CLI::Option*>& names) {
  for (auto* a : names)
    for (auto* b : names)
      if (a != b) a->excludes(b);
}

LauncherKind launcherOf(const std::string& v) {
  return v == "local" ? LauncherKind::local : v == "ssh" ? LauncherKind::ssh : v == "slurm" ? LauncherKind::slurm
                                                                                      : LauncherKind::automatic;
}

// Which nodes, and how their daemons start: shared by a job and `tlaunch preflight`.
void addNodeOptions(CLI::App& app, JobSpec& s) {
  auto* nodes = addCount(app, "-N,--nodes", "-N/--nodes", s.nodes, 1, kMaxNodes,
                         "number of nodes (default: all given, or this host)");
  auto* nnodes = app.add_option_function<std::string>(
      "--nnodes",
      [&s](const std::string& v) {
        auto [lo, hi] = orThrow(parseNnodes(v));
        s.nodes = hi;
        s.min_nodes = lo;
      },
      "torchrun's name: N, or MIN:MAX (runs on MAX of the given nodes, the rest are spares; with fewer than MAX "
      "left, on as many as there are if at least MIN, as with --max-restarts after a node is dropped)")
      ->type_name("N|MIN:MAX");
  excludeEachOther({nodes, nnodes});
  app.add_option("-H,--hosts", s.hosts, "nodes: names, node[1-4] expressions, optional :slots, comma-separated");
  app.add_option("--hostfile", s.hostfile, "Open MPI/DeepSpeed ('host slots=8') or MPICH ('host:8') hostfile")
      ->transform(expandHomeHere, "", "");
  app.add_option("--include", s.include, "DeepSpeed-style subset, e.g. 'node1:0,1@node2'");
  app.add_option("--exclude", s.exclude, "DeepSpeed-style exclusion, e.g. 'node3@node1:7'");
  app.add_option_function<std::string>(
         "--launcher", [&s](const std::string& v) { s.launcher = launcherOf(v); },
         "how daemons are started: local (simulated nodes on this host), ssh, slurm (default: slurm inside an "
         "allocation, ssh with --hosts/--hostfile, else local)")
      ->check(CLI::IsMember({"auto", "local", "ssh", "slurm"}));
}

// How many ranks: -p/-g per node, -n in all, and the names other launchers use for them.
void addRankOptions(CLI::App& app, JobSpec& s) {
  auto* procs = addCount(app, "-p,--procs-per-node", "-p/--procs-per-node", s.procs_per_node, 1, kMaxRanksPerNode,
                         "ranks per node, without GPUs (default: the hostfile's slots, else one per GPU, else 1)");
  addCount(app, "-g,--gpus-per-node", "-g/--gpus-per-node", s.gpus_per_node, 1, kMaxRanksPerNode,
           "ranks per node, one GPU each");
  addCount(app, "-n,--np", "-n/--np", s.total_ranks, 1, kMaxWorldSize,
           "total ranks (mpirun's -n): nodes filled by their slots, else evenly");
  auto* nproc = app.add_option_function<std::string>(
      "--nproc-per-node,--nproc_per_node",
      [&s](const std::string& v) {
        auto n = orThrow(parseNprocPerNode(v));
        s.procs_per_node = n.count;
        s.nproc_per_node_word = n.word;
      },
      "torchrun's name: ranks per node, or gpu (one per GPU), auto (one per GPU, else one per core), cpu (one per "
      "core)")
      ->type_name("N|gpu|auto|cpu");
  auto* ntasks =
      addCount(app, "--ntasks-per-node", "--ntasks-per-node", s.procs_per_node, 1, kMaxRanksPerNode, "srun's name for -p");
  auto* npernode = addCount(app, "--npernode", "--npernode", s.procs_per_node, 1, kMaxRanksPerNode, "mpirun's name for -p");
  excludeEachOther({procs, nproc, ntasks, npernode});
}

void addEnvOptions(CLI::App& app, JobSpec& s) {
  app.add_option("-x,--export", s.exports, "export VAR (from this environment) or VAR=VALUE to every rank")
      ->allow_extra_args(false);
  app.add_option("-D,--chdir", s.chdir, "working directory of the ranks (default: the current one)")
      ->transform(expandHomeHere, "", "");
}

void addOutputOptions(CLI::App& app, JobSpec& s) {
  auto* tag = app.add_option_function<std::string>(
         "--tag-output",
         [&s](const std::string& v) { s.tag = v == "none" ? TagMode::none : v == "rank" ? TagMode::rank : TagMode::full; },
         "prefix of each output line: none, rank ('[3] '), full ('[node1:3] ', default)")
      ->check(CLI::IsMember({"none", "rank", "full"}));
  auto* label = app.add_flag_callback("-l,--label", [&s] { s.tag = TagMode::rank; }, "srun's name for --tag-output rank");
  excludeEachOther({tag, label});
  app.add_option("--output-dir", s.output_dir, "also write each rank's output to DIR/rank.N.out and .err")
      ->transform(expandHomeHere, "", "");
  app.add_option_function<std::string>(
         "--stdin",
         [&s](const std::string& v) {
           if (v == "none") {
             s.stdin_rank = -1;
             return;
           }
           auto rank = parseBoundedInt("--stdin", v, 0, kMaxWorldSize - 1);
           if (!rank) rank = fail(Errc::usage, rank.error().message + ", or none", rank.error().hint);
           s.stdin_rank = orThrow(std::move(rank));
         },
         "forward tlaunch's stdin to this rank (e.g. 0); default none")
      ->type_name("RANK|none");
  app.add_flag("--pty", s.stdout_terminal,
               "give each rank's stdout a pseudo-terminal, as mpirun does: C programs' printf lines come at once "
               "(in a pipe they wait for 4 KiB), and programs see a terminal (colours, progress bars)");
  app.add_option("--summary-json", s.summary_json,
                 "write the job's outcome to FILE as JSON (exit status, whose, failed rank and node, reason)")
      ->transform(expandHomeHere, "", "")
      ->type_name("FILE");
}

void addControlOptions(CLI::App& app, JobSpec& s, bool job) {
  const int day = kMaxSeconds;
  addSeconds(app, "--connect-timeout", "--connect-timeout", s.connect_timeout_s, 1, day,
           "seconds to wait for every daemon to connect (default 60)");
  addSeconds(app, "--heartbeat-timeout", "--heartbeat-timeout", s.heartbeat_timeout_s, 3, day,
           "seconds of silence after which a node is declared lost (default 15; at least 3: daemons say they "
           "live every second, and one late word must not end a job)");
  app.add_option("--daemon-path", s.daemon_path, "tlaunchd on the nodes (default: next to this tlaunch)");
  app.add_flag("-v,--verbose", s.verbose, "say what tlaunch does");
  if (!job) return;
  addCount(app, "--tree-radix", "--tree-radix", s.tree_radix, 0, kMaxNodes,
           "the frontend talks to at most this many daemons, each daemon to at most this many below it "
           "(default 64; 0: every daemon talks to the frontend)");
  app.add_option_function<std::string>(
         "--time-limit", [&s](const std::string& v) { s.time_limit_s = orThrow(parseDuration("--time-limit", v)); },
         "end the job like a failure (exit 124) once it has run this long since tlaunch started: 90s, 10m, 1h30m, "
         "2d, 1:30:00")
      ->type_name("DURATION");
  addSeconds(app, "--kill-timeout", "--kill-timeout", s.kill_timeout_s, 0, day,
           "seconds between SIGTERM and SIGKILL at teardown (default 10)");
  app.add_flag("-q,--quiet", s.quiet, "no start-of-job banner (errors and the failure summary still print)");
}

void addPlanOptions(CLI::App& app, JobSpec& s) {
  app.add_flag("--dry-run", s.dry_run, "print the plan (ranks, binding, network, environment) and exit");
  app.add_flag("--offline", s.offline, "with --dry-run: plan from --topology-xml alone, contact no node");
  app.add_flag("--report-bindings", s.report_bindings, "print the binding manifest before the job starts");
  app.add_option("--bind", s.bind, "CPU binding: none, numa, core (default)")->check(CLI::IsMember({"none", "numa", "core"}));
  addCount(app, "--cpus-per-rank", "--cpus-per-rank", s.cpus_per_rank, 1, kMaxCpusPerRank,
           "cores per rank (default: an even share)");
}

// What a node is asked about: shared by a job and `tlaunch preflight`.
void addInventoryOptions(CLI::App& app, JobSpec& s) {
  app.add_flag("--json", s.json, "with --dry-run or preflight: machine-readable output");
  app.add_option("--topology-xml", s.topology_xml, "hwloc XML topology to use instead of the live machine")
      ->transform(expandHomeHere, "", "");
  app.add_option("--sysfs-root", s.sysfs_root, "read RDMA/network sysfs facts under DIR instead of / (tests; {node} stands for the node name)");
}

void addNetOptions(CLI::App& app, JobSpec& s) {
  app.add_option("--net", s.net_mode,
                 "auto (default: the IPoIB/RoCE fabric; plain TCP when no node has RDMA), ib (require the fabric), "
                 "tcp (plain sockets even on a fabric)")
      ->check(CLI::IsMember({"auto", "ib", "tcp"}));
  app.add_option("--net-if", s.net_if, "fabric interface name(s) to use")
      ->delimiter(',')
      ->allow_extra_args(false)  // one word (commas split it): the next is the program
      ->check(CLI::Validator([](std::string& v) { return badInterfaceName(v); }, "NAME"));
  app.add_option("--net-cidr", s.net_cidr, "choose the fabric by subnet, e.g. 10.1.0.0/16")
      ->check(CLI::Validator([](std::string& v) { return badCidr(v); }, "CIDR"));
  app.add_option("--check-reachability", s.check_reachability, "ring (default; all with --preflight=full), all, off")
      ->check(CLI::IsMember({"ring", "all", "off"}));
}

void addPreflightOptions(CLI::App& app, JobSpec& s, bool job) {
  if (job) {
    app.add_option_function<std::string>(
           "--preflight",
           [&s](const std::string& v) {
             s.preflight = v == "off" ? PreflightMode::off : v == "full" ? PreflightMode::full : PreflightMode::quick;
           },
           "checks before any rank starts: quick (default), full, off")
        ->check(CLI::IsMember({"off", "quick", "full"}));
  } else {
    app.add_option_function<std::string>(
           "--level,--preflight",
           [&s](const std::string& v) { s.preflight = v == "full" ? PreflightMode::full : PreflightMode::quick; },
           "quick (default) or full")
        ->check(CLI::IsMember({"quick", "full"}));
  }
  app.add_flag("--preflight-strict", s.preflight_strict, "treat preflight warnings as failures");
  app.add_option("--preflight-skip", s.preflight_skip, "preflight checks to skip, e.g. memlock,gpudirect")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::Validator([](std::string& v) { return unknownCheck(v); }, "CHECK"));
  app.add_option_function<std::string>(
      "--expect-rate", [&s](const std::string& v) { s.expect_rate_gbps = orThrow(parseRate("--expect-rate", v, kMaxRateGbps)); },
      "expected RDMA port rate in Gb/s (warn otherwise)")
      ->type_name("GBPS");
}

void addLaunchOptions(CLI::App& app, JobSpec& s, bool job) {
  addCount(app, "--ssh-fanout", "--ssh-fanout", s.ssh_fanout, 1, kMaxSshFanout,
           "ssh connections started at once (default 64)");
  app.add_option("--ssh-option", s.ssh_options, "extra ssh option, e.g. --ssh-option='-p 2222' (repeatable)")
      ->allow_extra_args(false);
  app.add_option_function<std::string>(
         "--ssh-reuse", [&s](const std::string& v) { s.ssh_reuse = v != "off"; },
         "reuse ssh connections between launches for 60 s: on (default), off")
      ->check(CLI::IsMember({"on", "off"}));
  addSeconds(app, "--ssh-connect-timeout", "--ssh-connect-timeout", s.ssh_connect_timeout_s, 1, kMaxSeconds,
           "ssh ConnectTimeout in seconds (default 10)");
  app.add_option("--slurm-args", s.slurm_args, "extra srun arguments, e.g. --slurm-args='-p gpu -t 30'");
  if (!job) return;
  app.add_option_function<std::string>(
         "--keep-daemons",
         [&s](const std::string& v) {
           s.keep_daemons_s = orThrow(parseDuration("--keep-daemons", v, kMaxKeepDaemonsSeconds, true));
         },
         "keep the nodes' daemons this long after the job (e.g. 10m) for the next launch on them; 0 ends them; "
         "'tlaunch stop-daemons' ends them all")
      ->type_name("DURATION");
  app.add_option_function<std::string>(
         "--pmix", [&s](const std::string& v) { s.pmix = v != "off"; }, "PMIx server for MPI ranks: on (default), off")
      ->check(CLI::IsMember({"on", "off"}));
}

// Says `text` (lines after the first are hints) and marks the command line refused (exit 64).
ParsedCommandLine& refuse(ParsedCommandLine& out, const CLI::App& app, const std::string& text) {
  std::cerr << text << (text.ends_with('\n') ? "" : "\n");
  out.exit_now = 64;
  std::string first = text.substr(0, text.find('\n'));
  if (first.starts_with("tlaunch: ")) first.erase(0, 9);
  if (first.starts_with("error: ")) first.erase(0, 7);
  out.refusal = first;
  out.summary_json = out.spec.summary_json;
  if (const CLI::Option* o = app.get_option_no_throw("--summary-json"); out.summary_json.empty() && o && !o->results().empty())
    out.summary_json = o->results().front();  // the parser stopped before storing it
  return out;
}

}  // namespace

ParsedCommandLine parseCommandLine(int argc, char** argv) {
  ParsedCommandLine out;
  JobSpec& s = out.spec;
  CLI::App app{"tlaunch — start a distributed (PyTorch, DeepSpeed, MPI) job on many nodes, with one plan for "
               "ranks, GPUs, CPUs and the network.\n\n"
               "  tlaunch -N 4 -g 8 -- python train.py\n"
               "  tlaunch --hosts node[1-4] -p 2 -- ./mpi_app\n"
               "  tlaunch topo                              # this node's GPU/HCA/NUMA map\n"
               "  tlaunch preflight --hosts node[1-4]       # the checks alone\n",
               "tlaunch"};
  app.prefix_command();  // everything after the program name belongs to the program
  bool version = false;
  ExportFlags export_flags;
  app.add_flag("--version", version, "print the version and exit");
  addNodeOptions(app, s);
  addRankOptions(app, s);
  addEnvOptions(app, s);
  addExportFlags(app, export_flags);
  addOutputOptions(app, s);
  addControlOptions(app, s, true);
  addHangTimeoutOption(app, s);
  addFailureOptions(app, s);
  app.add_option("--nccl-check", s.nccl_check,
                 "NCCL transport report once every rank's NCCL is initialised: off, warn (default; warns when a job "
                 "planned on RDMA runs NCCL over sockets or another interface), strict (ends such a job, exit 78)")
      ->check(CLI::IsMember({"off", "warn", "strict"}));
  addPlanOptions(app, s);
  addInventoryOptions(app, s);
  addNetOptions(app, s);
  addPreflightOptions(app, s, true);
  addLaunchOptions(app, s, true);
  const auto inspect = addInspectSubcommands(app, s);
  auto* stop_daemons = app.add_subcommand("stop-daemons", "end the warm daemons that --keep-daemons left");
  auto* topo = app.add_subcommand("topo", "print this node's GPU/HCA/NUMA map and the rank pairing");
  topo->add_option("--topology-xml", s.topology_xml, "hwloc XML topology to show instead of the live machine")
      ->transform(expandHomeHere, "", "");
  // The same declarations as a job's: a node, launcher, network or check means the same in both.
  auto* preflight = app.add_subcommand("preflight", "run the preflight checks alone on the nodes and print a table");
  addNodeOptions(*preflight, s);
  addCount(*preflight, "-g,--gpus-per-node", "-g/--gpus-per-node", s.gpus_per_node, 1, kMaxRanksPerNode,
           "GPUs each node must have");
  addInventoryOptions(*preflight, s);
  addNetOptions(*preflight, s);
  addPreflightOptions(*preflight, s, false);
  addControlOptions(*preflight, s, false);
  addLaunchOptions(*preflight, s, false);
  app.footer(
      "Also: nccl-report [--json] [LOG...]  read NCCL_DEBUG=INFO output and say which transport and interfaces "
      "NCCL used (tlaunch nccl-report --help).\n\n"
      "Exit status: 0 when every rank exited 0; otherwise the first failed rank's status (128+N if it was killed "
      "by signal N). tlaunch's own failures: 64 usage, 69 node unreachable or lost, 70 internal error, 74 I/O, 76 protocol/authentication, "
      "78 resources/topology/fabric/preflight or --nccl-check strict, 124 --time-limit reached, 126/127 program not executable/not found, 130/143/129 when "
      "tlaunch itself got SIGINT/SIGTERM/SIGHUP. --summary-json says which.");
  // Refused before parsing, so without a summary: which argument is --summary-json's file is
  // exactly what is in doubt here (`--summary-json --dry-run`).
  const TlaunchWords split = withMpirunSwitches(app, argc, argv);
  const std::vector<std::string>& words = split.words;
  std::vector<const char*> word_ptrs;
  for (const auto& w : words) word_ptrs.push_back(w.c_str());
  // CLI11 takes the words after "--" for a subcommand too (`tlaunch -- status`): it parses
  // tlaunch's own words alone, and what follows the "--" is the program, whatever its name.
  const int nargs = split.separator >= 0 ? split.separator : static_cast<int>(word_ptrs.size());
  std::vector<std::string> after_separator;
  if (split.separator >= 0) after_separator.assign(words.begin() + split.separator, words.end());  // "--" first
  const char* const* args = word_ptrs.data();
  if (auto mistake = valueThatIsAnOption(app, nargs, args)) {
    return refuse(out, app, "tlaunch: " + *mistake);
  }
  try {
    app.parse(nargs, args);
  } catch (const CLI::CallForHelp& e) {
    out.exit_now = app.exit(e);
    return out;
  } catch (const CLI::CallForAllHelp& e) {
    out.exit_now = app.exit(e);
    return out;
  } catch (const CLI::ExcludesError& e) {  // CLI11: "--a excludes --b"
    std::string what = e.what();
    if (const auto at = what.find(" excludes "); at != std::string::npos)
      what = what.substr(0, at) + " and " + what.substr(at + 10) + " set the same thing: give one of them";
    return refuse(out, app, "tlaunch: " + what);
  } catch (const CLI::ParseError& e) {
    // CLI11: "--nodes: At Most 1 required but received 2" (the flag given twice).
    std::string what = e.what();
    static constexpr std::string_view kTwice = ": At Most 1 required but received ";
    if (const auto at = what.find(kTwice); at != std::string::npos)
      what = what.substr(0, at) + " was given " + what.substr(at + kTwice.size()) +
             " times: give it once";
    // A subcommand's own flag points to that subcommand's help.
    std::string help = "tlaunch --help' for the options";
    for (const CLI::App* sub : app.get_subcommands())
      if (sub->parsed()) help = "tlaunch " + sub->get_name() + " --help' for its options";
    return refuse(out, app, "tlaunch: " + what + "\nRun '" + help + ".");
  }
  if (version) {
    std::cout << "tlaunch " << kVersion << " (protocol " << kProtocolVersion << ")\n";
    out.exit_now = 0;
    return out;
  }
  if (auto empty = optionGivenEmpty(app)) {
    return refuse(out, app, "tlaunch: " + *empty);
  }
  if (auto e = applyExportFlags(export_flags, s); !e) {
    return refuse(out, app, "tlaunch: error: " + describeError(e.error()));
  }
  for (const char* flag : {"--ssh-fanout", "--ssh-option", "--ssh-reuse", "--ssh-connect-timeout"}) {
    const bool given = app.get_option(flag)->count() > 0 || (preflight->parsed() && preflight->get_option(flag)->count() > 0);
    if (given) s.ssh_flags_given.emplace_back(flag);
  }
  // A full preflight probes every pair of nodes, unless the user chose otherwise.
  if (s.preflight == PreflightMode::full && app.get_option("--check-reachability")->count() == 0 &&
      (!preflight->parsed() || preflight->get_option("--check-reachability")->count() == 0))
    s.check_reachability = "all";
  if (auto misplaced = optionMisplacedAroundSubcommand(app, {{topo, "it shows this host only"},
                                                             {stop_daemons, "it ends every warm daemon of yours, on every node"},
                                                             {inspect.stacks, "it asks a running job of yours on this host "
                                                                              "(name it: tlaunch stacks JOB)"},
                                                             {inspect.status, "it asks a running job of yours on this host "
                                                                              "(name it: tlaunch status JOB)"}},
                                                       *preflight))
    return refuse(out, app, "tlaunch: " + *misplaced);
  // A subcommand runs no program: anything it did not understand is a mistake.
  for (CLI::App* sub : {topo, stop_daemons, inspect.stacks, inspect.status, preflight}) {
    if (!sub->parsed()) continue;
    auto extra = sub->remaining();
    for (const auto& e : app.remaining()) extra.push_back(e);
    // The program given after "--" is named, not the "--" (`tlaunch topo -- x`: "unknown argument x").
    extra.insert(extra.end(), after_separator.begin() + (after_separator.size() > 1 ? 1 : 0), after_separator.end());
    if (extra.empty()) break;
    return refuse(out, app, "tlaunch " + sub->get_name() + ": unknown argument " + extra.front() + "\nRun 'tlaunch " +
                                sub->get_name() + " --help' for its options.");
  }
  if (topo->parsed()) out.command = Subcommand::topo;
  if (stop_daemons->parsed()) {
    out.command = Subcommand::stop_daemons;
    return out;
  }
  if (inspect.stacks->parsed() || inspect.status->parsed()) {
    out.command = inspect.stacks->parsed() ? Subcommand::stacks : Subcommand::status;
    return out;
  }
  if (preflight->parsed()) {
    out.command = Subcommand::preflight;
    s.preflight_only = true;
    if (s.preflight == PreflightMode::off) s.preflight = PreflightMode::quick;
    if (s.procs_per_node == 0 && s.gpus_per_node == 0) s.procs_per_node = 1;
    s.argv = {"true"};
  }
  const bool program_after_separator = split.separator >= 0 && app.remaining().empty();
  if (!s.preflight_only) {
    s.argv = app.remaining();
    s.argv.insert(s.argv.end(), after_separator.begin(), after_separator.end());
  }
  if (!s.argv.empty() && s.argv.front() == "--") {
    s.argv.erase(s.argv.begin());
  } else if (!s.preflight_only && !s.argv.empty() && s.argv.front() == "nccl-report") {
    // main() hands `tlaunch nccl-report` to its own parser only as the first argument; after an
    // option it would run as the job's program (and fail as one, after starting daemons).
    return refuse(out, app,
                  "tlaunch: nccl-report is a subcommand with options of its own: give it first, as in 'tlaunch "
                  "nccl-report --json LOG...' (a program of that name goes after --)");
  } else if (!s.argv.empty() && s.argv.front().size() > 1 && s.argv.front()[0] == '-') {
    // prefix_command() hands an unknown option over as the program: refuse it, unless the user
    // separated the program with "--".
    bool separated = false;
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--") separated = true;
      if (argv[i] == s.argv.front()) break;
    }
    if (!separated) {
      refuse(out, app, "tlaunch: unknown option " + s.argv.front() + "\nRun 'tlaunch --help' for the options.");
    }
  }
  if (!s.argv.empty() && !s.preflight_only && !out.exit_now) {
    if (auto why = programWordMistake(s.argv.front())) return refuse(out, app, "tlaunch: " + *why);
    if (program_after_separator)
      if (auto why = optionAsProgram(app, s.argv.front())) return refuse(out, app, "tlaunch: " + *why);
    const char* path = std::getenv("PATH");
    if (auto meant = subcommandLookalike(s.argv.front(), path ? path : ""))
      std::cerr << "tlaunch: note: no program '" << s.argv.front() << "' on this host; did you mean `tlaunch " << *meant
                << "`? (running it as the job's program)\n";
  }
  return out;
}

}  // namespace tlaunch

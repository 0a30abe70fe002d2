#include "launcher/cli_options.h"

#include <iostream>

#include <CLI/CLI.hpp>

#include "launcher/inspect_cli.h"
#include "tlaunch/version.h"

namespace tlaunch {

namespace {

void addJobOptions(CLI::App& app, JobSpec& s) {
  app.add_option("-N,--nodes", s.nodes, "number of nodes (default: all given, or this host)")->check(CLI::PositiveNumber);
  app.add_option("-p,--procs-per-node", s.procs_per_node, "ranks per node, without GPUs")->check(CLI::PositiveNumber);
  app.add_option("-g,--gpus-per-node", s.gpus_per_node, "ranks per node, one GPU each")->check(CLI::PositiveNumber);
  app.add_option("-H,--hosts", s.hosts, "nodes: names, node[1-4] expressions, optional :slots, comma-separated");
  app.add_option("--hostfile", s.hostfile, "Open MPI/DeepSpeed ('host slots=8') or MPICH ('host:8') hostfile");
  app.add_option("--include", s.include, "DeepSpeed-style subset, e.g. 'node1:0,1@node2'");
  app.add_option("--exclude", s.exclude, "DeepSpeed-style exclusion, e.g. 'node3@node1:7'");
  app.add_option_function<std::string>(
         "--launcher",
         [&s](const std::string& v) {
           s.launcher = v == "local" ? LauncherKind::local
                        : v == "ssh" ? LauncherKind::ssh
                        : v == "slurm" ? LauncherKind::slurm
                                       : LauncherKind::automatic;
         },
         "how daemons are started: local (simulated nodes on this host), ssh, slurm (default: slurm inside an "
         "allocation, ssh with --hosts/--hostfile, else local)")
      ->check(CLI::IsMember({"auto", "local", "ssh", "slurm"}));
}

void addEnvOptions(CLI::App& app, JobSpec& s) {
  app.add_option("-x,--export", s.exports, "export VAR (from this environment) or VAR=VALUE to every rank")
      ->allow_extra_args(false);
  app.add_option("--chdir", s.chdir, "working directory of the ranks (default: the current one)");
}

void addOutputOptions(CLI::App& app, JobSpec& s) {
  app.add_option_function<std::string>(
         "--tag-output",
         [&s](const std::string& v) { s.tag = v == "none" ? TagMode::none : v == "rank" ? TagMode::rank : TagMode::full; },
         "prefix of each output line: none, rank ('[3] '), full ('[node1:3] ', default)")
      ->check(CLI::IsMember({"none", "rank", "full"}));
  app.add_option("--output-dir", s.output_dir, "also write each rank's output to DIR/rank.N.out and .err");
  app.add_option_function<std::string>(
         "--stdin", [&s](const std::string& v) { s.stdin_rank = v == "none" ? -1 : std::stoi(v); },
         "forward tlaunch's stdin to this rank (e.g. 0); default none")
      ->check(CLI::IsMember({"none"}) | CLI::NonNegativeNumber);
}

void addControlOptions(CLI::App& app, JobSpec& s) {
  app.add_option("--kill-timeout", s.kill_timeout_s, "seconds between SIGTERM and SIGKILL at teardown (default 10)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--connect-timeout", s.connect_timeout_s, "seconds to wait for every daemon to connect (default 60)")
      ->check(CLI::PositiveNumber);
  app.add_option("--heartbeat-timeout", s.heartbeat_timeout_s,
                 "seconds of silence after which a node is declared lost (default 15)")
      ->check(CLI::PositiveNumber);
  app.add_option("--daemon-path", s.daemon_path, "tlaunchd on the nodes (default: next to this tlaunch)");
  app.add_flag("-v,--verbose", s.verbose, "say what tlaunch does");
  app.add_flag("-q,--quiet", s.quiet, "no start-of-job banner (errors and the failure summary still print)");
}

void addPlanOptions(CLI::App& app, JobSpec& s) {
  app.add_flag("--dry-run", s.dry_run, "print the plan (ranks, binding, network, environment) and exit");
  app.add_flag("--json", s.json, "with --dry-run or preflight: machine-readable output");
  app.add_flag("--offline", s.offline, "with --dry-run: plan from --topology-xml alone, contact no node");
  app.add_flag("--report-bindings", s.report_bindings, "print the binding manifest before the job starts");
  app.add_option("--topology-xml", s.topology_xml, "hwloc XML topology to use instead of the live machine");
  app.add_option("--sysfs-root", s.sysfs_root, "read RDMA/network sysfs facts under DIR instead of / (tests; {node} stands for the node name)");
  app.add_option("--bind", s.bind, "CPU binding: none, numa, core (default)")->check(CLI::IsMember({"none", "numa", "core"}));
  app.add_option("--cpus-per-rank", s.cpus_per_rank, "cores per rank (default: an even share)")->check(CLI::PositiveNumber);
}

void addNetOptions(CLI::App& app, JobSpec& s) {
  app.add_option("--net", s.net_mode, "auto (IPoIB/RoCE fabric, default) or tcp (allow a plain Ethernet job)")
      ->check(CLI::IsMember({"auto", "tcp"}));
  app.add_option("--net-if", s.net_if, "fabric interface name(s) to use")->delimiter(',');
  app.add_option("--net-cidr", s.net_cidr, "choose the fabric by subnet, e.g. 10.1.0.0/16");
  app.add_option("--check-reachability", s.check_reachability, "ring (default; all with --preflight=full), all, off")
      ->check(CLI::IsMember({"ring", "all", "off"}));
}

void addPreflightOptions(CLI::App& app, JobSpec& s) {
  app.add_option_function<std::string>(
         "--preflight",
         [&s](const std::string& v) {
           s.preflight = v == "off" ? PreflightMode::off : v == "full" ? PreflightMode::full : PreflightMode::quick;
         },
         "checks before any rank starts: quick (default), full, off")
      ->check(CLI::IsMember({"off", "quick", "full"}));
  app.add_flag("--preflight-strict", s.preflight_strict, "treat preflight warnings as failures");
  app.add_option("--preflight-skip", s.preflight_skip, "preflight checks to skip, e.g. memlock,gpudirect")->delimiter(',');
  app.add_option("--expect-rate", s.expect_rate_gbps, "expected RDMA port rate in Gb/s (warn otherwise)");
}

void addLaunchOptions(CLI::App& app, JobSpec& s) {
  app.add_option_function<std::string>(
         "--pmix", [&s](const std::string& v) { s.pmix = v != "off"; }, "PMIx server for MPI ranks: on (default), off")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--ssh-fanout", s.ssh_fanout, "ssh connections started at once (default 64)")->check(CLI::PositiveNumber);
  app.add_option("--ssh-option", s.ssh_options, "extra ssh option, e.g. --ssh-option='-p 2222' (repeatable)")
      ->allow_extra_args(false);
  app.add_option_function<std::string>(
         "--ssh-reuse", [&s](const std::string& v) { s.ssh_reuse = v != "off"; },
         "reuse ssh connections between launches for 60 s: on (default), off")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--ssh-connect-timeout", s.ssh_connect_timeout_s, "ssh ConnectTimeout in seconds (default 10)")
      ->check(CLI::PositiveNumber);
  app.add_option("--slurm-args", s.slurm_args, "extra srun arguments, e.g. --slurm-args='-p gpu -t 30'");
}

}  // namespace

ParsedCommandLine parseCommandLine(int argc, char** argv) {
  ParsedCommandLine out;
  JobSpec& s = out.spec;
  CLI::App app{"tlaunch — start a distributed (PyTorch, DeepSpeed, MPI) job on many nodes, with one plan for "
               "ranks, GPUs, CPUs and the network.\n\n"
               "  tlaunch -N 4 -g 8 -- python train.py\n"
               "  tlaunch --hosts node[1-4] -p 2 -- ./mpi_app\n"
               "  tlaunch topo | tlaunch preflight --hosts node[1-4]",
               "tlaunch"};
  app.prefix_command();  // everything after the program name belongs to the program
  bool version = false;
  app.add_flag("--version", version, "print the version and exit");
  addJobOptions(app, s);
  addEnvOptions(app, s);
  addOutputOptions(app, s);
  addControlOptions(app, s);
  addHangTimeoutOption(app, s);
  addPlanOptions(app, s);
  addNetOptions(app, s);
  addPreflightOptions(app, s);
  addLaunchOptions(app, s);
  const auto inspect = addInspectSubcommands(app, s);
  auto* topo = app.add_subcommand("topo", "print this node's GPU/HCA/NUMA map and the rank pairing");
  topo->add_option("--topology-xml", s.topology_xml, "hwloc XML topology to show instead of the live machine");
  auto* preflight = app.add_subcommand("preflight", "run the preflight checks alone on the nodes and print a table");
  preflight->add_option("-H,--hosts", s.hosts, "nodes to check");
  preflight->add_option("--hostfile", s.hostfile, "hostfile of the nodes to check");
  preflight->add_option("-N,--nodes", s.nodes, "number of nodes");
  preflight->add_option("-g,--gpus-per-node", s.gpus_per_node, "GPUs each node must have");
  preflight->add_flag("--json", s.json, "machine-readable output");
  preflight->add_option("--sysfs-root", s.sysfs_root, "read sysfs under DIR");
  preflight->add_option("--launcher", [&s](const CLI::results_t& r) {
    const auto& v = r.at(0);
    s.launcher = v == "local" ? LauncherKind::local : v == "ssh" ? LauncherKind::ssh : v == "slurm" ? LauncherKind::slurm : LauncherKind::automatic;
    return true;
  }, "local, ssh, slurm");
  preflight->add_option("--expect-rate", s.expect_rate_gbps, "expected port rate in Gb/s");
  preflight->add_flag("--preflight-strict", s.preflight_strict, "warnings fail too");
  preflight->add_option("--preflight-skip", s.preflight_skip, "checks to skip")->delimiter(',');
  preflight->add_option("--topology-xml", s.topology_xml, "hwloc XML topology instead of the live machine");
  preflight->add_option_function<std::string>("--level,--preflight", [&s](const std::string& v) {
    s.preflight = v == "full" ? PreflightMode::full : PreflightMode::quick;
  }, "quick (default) or full")->check(CLI::IsMember({"quick", "full"}));
  preflight->add_option("--daemon-path", s.daemon_path, "tlaunchd on the nodes");
  preflight->add_option("--ssh-option", s.ssh_options, "extra ssh option")->allow_extra_args(false);
  preflight->add_option("--net-if", s.net_if, "fabric interface name(s)")->delimiter(',');
  preflight->add_option("--net-cidr", s.net_cidr, "fabric subnet");
  preflight->add_option("--net", s.net_mode, "auto or tcp")->check(CLI::IsMember({"auto", "tcp"}));
  preflight->add_option("--check-reachability", s.check_reachability, "ring (default; all with --level full), all, off")
      ->check(CLI::IsMember({"ring", "all", "off"}));
  app.footer(
      "Exit status: 0 when every rank exited 0; otherwise the first failed rank's status (128+N if it was killed "
      "by signal N). tlaunch's own failures: 64 usage, 69 node unreachable or lost, 76 protocol/authentication, "
      "78 resources/topology/fabric/preflight, 126/127 program not executable/not found, 130/143/129 when "
      "tlaunch itself got SIGINT/SIGTERM/SIGHUP.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    out.exit_now = app.exit(e);
    return out;
  } catch (const CLI::CallForAllHelp& e) {
    out.exit_now = app.exit(e);
    return out;
  } catch (const CLI::ParseError& e) {
    std::cerr << "tlaunch: " << e.what() << "\n" << "Run 'tlaunch --help' for the options.\n";
    out.exit_now = 64;
    return out;
  }
  if (version) {
    std::cout << "tlaunch " << kVersion << " (protocol " << kProtocolVersion << ")\n";
    out.exit_now = 0;
    return out;
  }
  // A full preflight probes every pair of nodes, unless the user chose otherwise.
  if (s.preflight == PreflightMode::full && app.get_option("--check-reachability")->count() == 0 &&
      (!preflight->parsed() || preflight->get_option("--check-reachability")->count() == 0))
    s.check_reachability = "all";
  if (topo->parsed()) out.command = Subcommand::topo;
  if (inspect.stacks->parsed() || inspect.status->parsed()) {
    out.command = inspect.stacks->parsed() ? Subcommand::stacks : Subcommand::status;
    return out;
  }
  if (preflight->parsed()) {
    // The subcommand runs no program: anything it did not understand is a mistake.
    auto extra = preflight->remaining();
    for (const auto& e : app.remaining()) extra.push_back(e);
    if (!extra.empty()) {
      std::cerr << "tlaunch preflight: unknown argument " << extra.front()
                << "\nRun 'tlaunch preflight --help' for its options.\n";
      out.exit_now = 64;
      return out;
    }
    out.command = Subcommand::preflight;
    s.preflight_only = true;
    if (s.preflight == PreflightMode::off) s.preflight = PreflightMode::quick;
    if (s.procs_per_node == 0 && s.gpus_per_node == 0) s.procs_per_node = 1;
    s.argv = {"true"};
  }
  if (!s.preflight_only) s.argv = app.remaining();
  if (!s.argv.empty() && s.argv.front() == "--") {
    s.argv.erase(s.argv.begin());
  } else if (!s.argv.empty() && s.argv.front().size() > 1 && s.argv.front()[0] == '-') {
    // prefix_command() hands an unknown option over as the program: refuse it, unless the user
    // separated the program with "--".
    bool separated = false;
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--") separated = true;
      if (argv[i] == s.argv.front()) break;
    }
    if (!separated) {
      std::cerr << "tlaunch: unknown option " << s.argv.front() << "\nRun 'tlaunch --help' for the options.\n";
      out.exit_now = 64;
    }
  }
  return out;
}

}  // namespace tlaunch

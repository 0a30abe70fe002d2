#pragma once
// torchrun's and mpirun's names for the rendezvous and the MPI settings (--master-addr,
// --master-port, --mca; --node-rank refused with its reason): they become exports, so they win
// over tlaunch's values exactly as -x does. Kept out of cli_options.cc, which only calls these.
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "launcher/job_spec.h"
#include "tlaunch/result.h"

namespace tlaunch {

struct ExportFlags {
  std::string master_addr;
  int master_port = 0;
  std::vector<std::pair<std::string, std::string>> mca;
};

void addExportFlags(CLI::App& app, ExportFlags& f);
// Appends the flags' exports to s.exports; an --mca that cannot be an environment variable fails.
Result<void> applyExportFlags(const ExportFlags& f, JobSpec& s);

}  // namespace tlaunch

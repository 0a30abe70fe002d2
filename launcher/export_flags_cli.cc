#include "launcher/export_flags_cli.h"

#include "launcher/cli_option_helpers.h"
#include "launcher/cli_values.h"

namespace tlaunch {

void addExportFlags(CLI::App& app, ExportFlags& f) {
  app.add_option_function<std::string>(
      "--master-addr,--master_addr", [&f](const std::string& v) { f.master_addr = orThrow(checkMasterAddr(v)); },
      "MASTER_ADDR for every rank (default: rank 0's address on the chosen network)")
      ->type_name("ADDR");
  addCount(app, "--master-port,--master_port", "--master-port", f.master_port, 1, 65535,
           "MASTER_PORT for every rank (default: a port rank 0's node found free)");
  // torchrun runs once per node; tlaunch once for all nodes, so a node rank has no meaning here.
  // Each spelling is its own option, so that the message repeats the one the user typed.
  for (const std::string name : {"--node-rank", "--node_rank"})
    app.add_option_function<std::string>(
           name,
           [name](const std::string& v) {
             throw CLI::ValidationError(name + " " + v +
                                        ": tlaunch starts every node from one command, numbered in the order of "
                                        "--hosts/--hostfile\n  -> drop " + name + ", and run tlaunch once, not on each node");
           },
           "torchrun's, refused: node ranks follow the order of the nodes")
        ->group("");  // hidden: only there to explain itself
  app.add_option("--mca", f.mca, "Open MPI parameter, exported as OMPI_MCA_KEY=VALUE (repeatable)")
      ->allow_extra_args(false)
      ->type_name("KEY VALUE");
}

Result<void> applyExportFlags(const ExportFlags& f, JobSpec& s) {
  for (const auto& [k, v] : f.mca) {
    auto e = mcaExport(k, v);
    if (!e) return tl::unexpected(e.error());
    s.exports.push_back(*e);
    s.export_flags["OMPI_MCA_" + k] = "--mca";
  }
  if (!f.master_addr.empty()) {
    s.exports.push_back("MASTER_ADDR=" + f.master_addr);
    s.export_flags["MASTER_ADDR"] = "--master-addr";
  }
  if (f.master_port > 0) {
    s.exports.push_back("MASTER_PORT=" + std::to_string(f.master_port));
    s.export_flags["MASTER_PORT"] = "--master-port";
  }
  return {};
}

}  // namespace tlaunch

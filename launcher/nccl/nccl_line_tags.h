#pragma once
// What other tools put before NCCL's own "host:pid:tid [dev]" on a line (pure). A log read by
// `tlaunch nccl-report` has often passed through a launcher or a log collector first:
//   Open MPI   "[1,3]<stdout>:"      srun -l    "3: "          tlaunch     "[node1:3] "
//   Ray        "(Worker pid=626, ip=…) "       kubectl --prefix "[pod/job-0/main] "
//   kubectl --timestamps, Docker, journald exports: "2025-05-22T14:26:33.407Z "
//   docker compose "worker-1  | "
// Knowing them matters beyond the rank they name: a host that begins its line (after such tags)
// is a real host name; one glued to other text may be another message's tail (see nccl_log.cc).
#include <string_view>

#include "launcher/nccl/nccl_log.h"

namespace tlaunch::nccl {

// Strips the leading tags of `lead` (at most a few), filling the rank or pid they name into
// `origin`, and returns what follows them (leading spaces removed).
std::string_view stripLineTags(std::string_view lead, LineOrigin& origin);

}  // namespace tlaunch::nccl

#pragma once
// torchrun's error files (TORCHELASTIC_ERROR_FILE): torch's @record writes the exception a rank
// raised there as it is raised, before the rank's exit handlers run. When one rank's exception
// breaks its peers (their sockets to it close) and it ends last (a slow atexit, wandb.finish()),
// the peers' "connection reset" exits come first; the file's time says which rank raised first.
// The daemon gives each rank one in the job's PMIx directory, and reads it when the rank ends.
#include <cstdint>
#include <optional>
#include <string>

#include "bootstrap/message.h"

namespace tlaunch {

// The exception's first line ("ValueError: NaN loss at step 5", at most 300 bytes) and when the
// file was written (its mtime, wall-clock microseconds): {"message": ..., "at_us": ...}. Nothing
// when the file is absent, over 1 MiB, not torch's JSON, or not a regular file of this user's.
std::optional<Json> readRankErrorFile(const std::string& path);

}  // namespace tlaunch

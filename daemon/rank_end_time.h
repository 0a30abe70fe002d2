#pragma once
// When a rank ended, on its node's wall clock: the frontend names the failure that happened
// first (launcher/failure_blame.h), not the first report to arrive.
#include <sys/types.h>

#include <cstdint>

namespace tlaunch {

// When the zombie `pid` ended, wall-clock microseconds: now, less how long ago it last ran by
// the scheduler's clock of the CPU it last ran on (/proc/PID/sched, read on that CPU); now
// where that cannot be read.
int64_t rankEndedAtMicros(pid_t pid);

}  // namespace tlaunch

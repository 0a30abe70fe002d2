#pragma once
// When a rank ended, on its node's wall clock: the frontend names the failure that happened
// first (launcher/failure_blame.h), not the first report to arrive.
#include <sys/types.h>

#include <cstdint>

namespace tlaunch {

// When the zombie `pid` ended, wall-clock microseconds: now, less how long ago it last ran by
// the scheduler's clock of the CPU it last ran on (/proc/PID/sched, read on that CPU); now
// where that cannot be read. An age beyond a second is taken for a main thread that ended long
// before the others (pthread_exit), and stamped now, unless the rank was not watched for that
// long: `unwatched_ms`, the time from its start until its end was watched (a node starts its
// ranks in one batch, and watches them once the last has started).
int64_t rankEndedAtMicros(pid_t pid, int64_t unwatched_ms = 0);

}  // namespace tlaunch

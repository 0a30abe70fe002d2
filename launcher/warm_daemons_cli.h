#pragma once
// `tlaunch stop-daemons`: ends every warm daemon this user left (tlaunch --keep-daemons). A
// keeper with a job running ends once that job has; nothing of a running job is touched.
namespace tlaunch {

int runStopDaemons();

}  // namespace tlaunch

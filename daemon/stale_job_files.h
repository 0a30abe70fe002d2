#pragma once
// Files of jobs whose tlaunchd died without cleaning up (kill -9, the OOM killer): each job
// directory `<tmp>/tlaunch.<job>.<node>.<random>` holds a mark naming the daemon that made it
// (process id and start time) and the host it ran on (host name, boot id, pid-namespace inode), and a
// later daemon removes the directories, there and under /dev/shm (same name), whose daemon is
// gone. Only its own: a directory owned by another user, a symlink, an unmarked directory or
// one marked by another host (a TMPDIR shared between nodes, another container) is left alone.
#include <string>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

inline constexpr const char* kOwnerMarkFile = ".tlaunchd-owner";

// Where a daemon keeps files on its node: $TMPDIR, else /tmp.
std::string nodeTmpBase();

// nodeTmpBase() is a directory this daemon can write into. A TMPDIR that is missing or a file
// on one node is named with the node, not left to fail in PMIx's set-up (nor created).
Result<void> checkNodeTmpBase(const std::string& node_name);

// This user's directory (under nodeTmpBase) for the live topology kept between jobs of a boot
// (binding/topology/topology_cache.h): not a job directory, so the sweeper leaves it alone.
std::string topologyCacheDir();

// A node's name as part of a file or cgroup name: its first 128 bytes. A host name may have 253,
// a file or cgroup name at most 255 in all; what follows it in those names keeps them apart.
std::string nodeNameForPaths(const std::string& node);

// "tlaunch.<job>.<node>.<8 random hex digits>": the name of a node's job directory under /tmp.
// The random part because the job id is in every daemon's command line: another user who could
// predict the name could create it first in a shared directory, and the daemon, rightly
// refusing it, would fail the job (and every restart).
std::string jobDirName(const std::string& job_id, const std::string& node);

// The name of the /dev/shm twin of the job directory named `job_dir_name`: that name, ".", and a
// random part of its own. Anyone may list /tmp: a twin of the same name could be created first
// by another user between the two mkdirs (a 200 us race, won on the first try).
std::string shmTwinName(const std::string& job_dir_name);

// This host as the marks name it: "host <name>\nboot <boot id>\npidns <inode>\n". Pids and
// start times only mean something within one boot of one pid namespace.
std::string hostIdentity();

// Writes this process's mark into `dir`; false if it could not.
bool writeOwnerMark(const std::string& dir);

// Removes the "tlaunch.*" directories under `tmp_base` that this user owns, that this host
// marked, and whose daemon is gone, with their twins under `shm_base` (same rules: the name, or
// the name, ".", and anything; spawned jobs' twins too); returns the paths removed.
std::vector<std::string> removeStaleJobDirs(const std::string& tmp_base, const std::string& shm_base);

}  // namespace tlaunch

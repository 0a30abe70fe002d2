#pragma once
// What tlaunch and tlaunchd do first thing in main(): no core dumps (a dump would write the
// job secret to disk; also keeps other users' tools from ptrace-attaching), and RLIMIT_NOFILE
// raised to its hard limit (ssh launch holds ~3 descriptors per node). Children get the user's
// original soft limit back before exec (restoreUserNofile, async-signal-safe).
#include <sys/resource.h>

namespace tlaunch {

// Standard descriptors closed by the caller (`tlaunch ... >&-`, `<&-`) opened on /dev/null, then
// PR_SET_DUMPABLE 0 and the raised RLIMIT_NOFILE. Call once, first, before any thread or fork:
// otherwise the next descriptor opened (an eventfd, a socket) becomes "stdin" or "stdout".
// Returns which of them were closed (bit 0: stdin, 1: stdout, 2: stderr).
unsigned hardenProcess();

// The soft/hard RLIMIT_NOFILE this process had before hardenProcess() (the current limit if it
// was never called). Read it before fork; pass the value into the child.
struct rlimit userNofileLimit();
// This process's umask, read without changing it (/proc/self/status); -1 where it cannot be read.
int currentUmask();

// In a forked child, before exec: one raw system call, async-signal-safe.
void restoreUserNofile(const struct rlimit& limit);

}  // namespace tlaunch

#pragma once
// Closing every inherited descriptor in a forked child before exec, async-signal-safe: nothing
// of the parent's (above all its control connection) may leak into ssh, srun or a rank.
namespace tlaunch {

// Closes every fd >= first except `keep` (-1: none): close_range, or where the kernel lacks it
// (before 5.9), what /proc/self/fd lists, read with raw getdents64 into a stack buffer.
void closeFdsFrom(int first, int keep) noexcept;

// FD_CLOEXEC on a descriptor that was opened without it (Asio opens its sockets so).
void markCloseOnExec(int fd) noexcept;

// The fallback alone (for tests). False if /proc/self/fd could not be read.
bool closeListedFds(int first, int keep) noexcept;

}  // namespace tlaunch

#pragma once
// Small helpers shared by the ssh and Slurm starters.
#include <string>
#include <string_view>
#include <vector>

namespace tlaunch {

// `text` cut at each '\n' (a last line without one is a line too).
std::vector<std::string_view> lines(std::string_view text);

// The last `max_lines` lines of a helper's stderr worth showing a user: blank lines,
// '@@@' banners and "Warning: Permanently added" notes are dropped; '\r' is removed.
std::vector<std::string> meaningfulLines(std::string_view stderr_text, size_t max_lines);

// "\n  <tool> said: line1\n    line2" for the meaningful lines, or "" when there are none.
std::string quoteToolOutput(std::string_view tool, std::string_view stderr_text, size_t max_lines = 6);

// The first line containing `needle`, trimmed; "" when none does.
std::string lineContaining(std::string_view text, std::string_view needle);

// Whether `program` is runnable: a path with '/' that is executable, or a name found in
// `path_variable` (PATH's value). Edge: looks at the file system.
bool programInPath(const std::string& program, const std::string& path_variable);

// --daemon-path as every starter can use it: a relative path is `cwd`'s and "~/..." `home`'s;
// a name without '/' stays one (each node's PATH: a module-loaded tlaunch).
// ssh would read a relative path in the node's home directory (srun and the local launcher
// read it here), and "~" is quoted for the remote shell, so it is not expanded there.
std::string daemonPathFromHere(const std::string& given, const std::string& cwd, const std::string& home);

// The secret as one line for a daemon's stdin.
std::string secretLine(const std::string& secret);

// The exit code of a raw wait status, or -signal when a signal ended the process.
int exitCodeOf(int wait_status);

}  // namespace tlaunch

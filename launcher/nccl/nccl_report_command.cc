#include "launcher/nccl/nccl_report_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/nccl/nccl_report.h"
#include "launcher/nccl/nccl_report_output.h"
#include "launcher/nccl/nccl_state.h"

namespace tlaunch {
namespace {

constexpr int kUsage = 64;

const char* kHelp =
    "Usage: tlaunch nccl-report [--json] [LOG...]\n"
    "\n"
    "Reads NCCL_DEBUG=INFO output (files, or stdin when no LOG is given or LOG is -) and tells,\n"
    "per rank and for the job, what NCCL uses: the transport between nodes (NET/IB, RoCE,\n"
    "Socket, a net plugin such as AWS Libfabric), the HCAs, GPUDirect RDMA, the bootstrap\n"
    "interface, the paths within a node, and its warnings and errors. The last line is the verdict.\n"
    "\n"
    "Options:\n"
    "  --json      print one JSON object instead of the table\n"
    "  -h, --help  print this help\n"
    "\n"
    "Exit status: 0; 65 when the input holds no NCCL_DEBUG=INFO output; 64 for a bad flag or an\n"
    "unreadable file.\n";

// Feeds the whole stream to the state; false with errno set when it cannot be read.
bool feedFd(int fd, const std::string& name, nccl::NcclLogState& state) {
  std::vector<char> buffer(1 << 16);
  while (true) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    state.feedText(std::string_view(buffer.data(), static_cast<std::size_t>(n)), name);
  }
  state.finish();
  return true;
}

int usageError(const std::string& message) {
  std::cerr << "tlaunch nccl-report: " << message << "\nRun 'tlaunch nccl-report --help' for its options.\n";
  return kUsage;
}

}  // namespace

int runNcclReportCommand(int argc, char** argv) {
  bool json = false;
  bool optionsDone = false;
  std::vector<std::string> logs;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!optionsDone && arg == "--") {
      optionsDone = true;
    } else if (!optionsDone && arg == "--json") {
      json = true;
    } else if (!optionsDone && (arg == "-h" || arg == "--help")) {
      std::cout << kHelp;
      return 0;
    } else if (!optionsDone && arg.size() > 1 && arg[0] == '-') {
      return usageError("unknown option " + arg);
    } else {
      logs.push_back(arg);
    }
  }
  if (logs.empty()) logs.emplace_back("-");

  nccl::NcclLogState state;
  for (const auto& log : logs) {
    if (log == "-") {
      if (!feedFd(STDIN_FILENO, "stdin", state)) return usageError(std::string("cannot read stdin: ") + std::strerror(errno));
      continue;
    }
    int fd = ::open(log.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return usageError("cannot read " + log + ": " + std::strerror(errno));
    bool ok = feedFd(fd, log, state);
    int savedErrno = errno;
    ::close(fd);
    if (!ok) return usageError("cannot read " + log + ": " + std::strerror(savedErrno));
  }
  nccl::NcclReport report = nccl::buildReport(state);
  if (json) {
    std::cout << nccl::reportJsonText(report);
  } else {
    std::cout << nccl::reportText(report);
  }
  if (report.ranks.empty()) {
    // A script pointed at the wrong file, or a job run without NCCL's log, must not read as a
    // clean report (EX_DATAERR).
    std::cerr << "tlaunch nccl-report: no NCCL_DEBUG=INFO output in " << (logs.size() == 1 ? logs[0] : "the inputs")
              << "\n  -> run the job with NCCL_DEBUG=INFO (tlaunch -x NCCL_DEBUG=INFO ...) and pass its output\n";
    return 65;
  }
  return 0;
}

}  // namespace tlaunch

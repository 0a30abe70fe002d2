#pragma once
// `tlaunch nccl-report [--json] [LOG...]`: the NCCL transport report for logs or stdin.
namespace tlaunch {

// argv[0] is "nccl-report". Returns the exit status: 0, or 64 for a bad flag or unreadable file.
int runNcclReportCommand(int argc, char** argv);

}  // namespace tlaunch

// pmix_harness: runs a program as an N-node x K-rank PMIx job against tlaunch's PmixServer,
// without the rest of tlaunch. Each simulated node is a daemon process with its own server,
// tmpdirs and shared-memory directory; a frontend process relays fences and direct modex.
// Exit 0 when the job behaved as expected and left nothing behind.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "harness_options.h"

namespace {

void usage() {
  fprintf(stderr,
          "usage: pmix_harness [--nodes N] [--ppn K] [--cyclic] [--jobs J] [--timeout S]\n"
          "                    [--min-fences F] [--min-dmodex D] [--max-dmodex D]\n"
          "                    [--expect-abort STATUS] [--expect-exit CODE]\n"
          "                    [--localonly-fence-off] [--late-node-ms MS] [--tcp-if CIDR]\n"
          "                    [--base DIR] [--tag T] [--register-uid UID] [--expect-stuck-teardown]\n"
          "                    [--env K=V]... -- PROGRAM [ARGS...]\n");
}

}  // namespace

int main(int argc, char** argv) {
  harness::Options o;
  int i = 1;
  auto value = [&](const char* flag) -> std::string {
    if (i + 1 >= argc) {
      fprintf(stderr, "%s needs a value\n", flag);
      exit(64);
    }
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--nodes") o.nodes = std::stoi(value("--nodes"));
    else if (a == "--ppn") o.ppn = std::stoi(value("--ppn"));
    else if (a == "--cyclic") o.cyclic = true;
    else if (a == "--jobs") o.jobs = std::stoi(value("--jobs"));
    else if (a == "--timeout") o.timeout_s = std::stoi(value("--timeout"));
    else if (a == "--min-fences") o.min_fences = std::stoi(value("--min-fences"));
    else if (a == "--min-dmodex") o.min_dmodex = std::stoi(value("--min-dmodex"));
    else if (a == "--max-dmodex") o.max_dmodex = std::stoi(value("--max-dmodex"));
    else if (a == "--expect-abort") o.expect_abort = std::stoi(value("--expect-abort"));
    else if (a == "--expect-exit") o.expect_exit = std::stoi(value("--expect-exit"));
    else if (a == "--late-node-ms") o.late_node_ms = std::stoi(value("--late-node-ms"));
    else if (a == "--localonly-fence-off") o.localonly_fence_off = true;
    else if (a == "--register-uid") o.register_uid = std::stoi(value("--register-uid"));
    else if (a == "--expect-stuck-teardown") o.expect_stuck_teardown = true;
    else if (a == "--tcp-if") o.tcp_if = value("--tcp-if");
    else if (a == "--base") o.base_dir = value("--base");
    else if (a == "--tag") o.job_tag = value("--tag");
    else if (a == "--env") o.rank_env.push_back(value("--env"));
    else {
      usage();
      return 64;
    }
  }
  for (; i < argc; ++i) o.program.push_back(argv[i]);
  if (o.program.empty() || o.nodes < 1 || o.nodes > 26 || o.ppn < 1 || o.jobs < 1) {
    usage();
    return 64;
  }
  if (o.program[0].find('/') == std::string::npos) {
    fprintf(stderr, "PROGRAM must be a path (got %s)\n", o.program[0].c_str());
    return 64;
  }
  if (o.job_tag.empty()) o.job_tag = std::to_string(getpid());
  if (o.base_dir.empty()) o.base_dir = "/tmp/tlaunch-pmix-test." + o.job_tag;
  return harness::runFrontend(o);
}

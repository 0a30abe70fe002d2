#include "launcher/summary_json.h"

#include <string.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "bootstrap/message.h"

namespace tlaunch {

namespace {

const char* meaningOf(int code) {
  switch (code) {
    case 64: return "usage";
    case 69: return "node unreachable or lost";
    case 70: return "internal error";
    case 74: return "I/O error";
    case 76: return "protocol or authentication";
    case 78: return "resources, topology, fabric or preflight (or --nccl-check strict)";
    case 124: return "--time-limit reached";
    case 126: return "program not executable";
    case 127: return "program not found";
    case 129: return "tlaunch got SIGHUP";
    case 130: return "tlaunch got SIGINT";
    case 143: return "tlaunch got SIGTERM";
    default: return "";
  }
}


}  // namespace

Json outcomeToJson(const std::string& job_id, const JobOutcome& o, double wall_seconds) {
  const std::string& node = o.failed_node;
  const int signal = o.signal;
  const char* origin = o.exit_code == 0 ? "none" : o.failed_rank >= 0 ? "rank" : "tlaunch";
  Json j = {{"job_id", job_id},
            {"exit_status", o.exit_code},
            {"origin", origin},
            {"failed_rank", o.failed_rank >= 0 && o.failed_process.empty() ? Json(o.failed_rank) : Json(nullptr)},
            {"failed_process", o.failed_process.empty() ? Json(nullptr) : Json(o.failed_process)},
            {"failed_node", node.empty() ? Json(nullptr) : Json(node)},
            {"reason", o.summary.empty() ? Json(nullptr) : Json(o.summary)},
            {"signal", signal > 0 ? Json(signal) : Json(nullptr)},
            {"stderr_tail", o.stderr_tail},
            {"wall_seconds", wall_seconds},
            {"phase_seconds", o.phase_seconds.empty() ? Json(nullptr) : o.phase_seconds},
            {"rank_exit_codes", o.rank_exit_codes.empty() ? Json(nullptr) : Json(o.rank_exit_codes)},
            {"nccl", o.nccl},
            {"restarts", o.restarts.size()},
            {"restart_history", o.restarts}};
  if (std::string(origin) == "tlaunch") j["meaning"] = meaningOf(o.exit_code);
  return j;
}

Result<void> writeSummaryJson(const std::string& path, const Json& summary) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << jsonText(summary, 2) << "\n";
    f.flush();
    if (!f) return fail(Errc::io, "--summary-json " + path + ": cannot write " + tmp + ": " + ::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    return fail(Errc::io, "--summary-json " + path + ": " + ::strerror(e));
  }
  return {};
}

}  // namespace tlaunch

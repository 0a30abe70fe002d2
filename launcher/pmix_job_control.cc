#include "launcher/pmix_job_control.h"

#include <signal.h>

#include <map>
#include <vector>

#include "bootstrap/pmix_server.h"

namespace tlaunch {

void routeJobControl(int from_node, const Json& msg, int node_count, const std::function<int(int rank)>& node_of,
                     const std::function<void(int node, const Json& msg)>& send) {
  const Json id = msg.contains("id") ? msg["id"] : Json();
  const auto sig = getInt(msg, "sig");
  const bool valid = sig > 0 && sig < NSIG && msg.contains("ranks") && msg["ranks"].is_array();
  std::map<int, std::vector<int>> by_node;  // node -> ranks; empty vector: all of the node's
  bool ok = valid;
  if (valid)
    for (const auto& r : msg["ranks"]) {
      const int rank = r.is_number_integer() ? r.get<int>() : -2;
      if (rank == -1) {
        for (int n = 0; n < node_count; ++n) by_node[n].clear();
        break;
      }
      const int node = rank >= 0 ? node_of(rank) : -1;
      if (node < 0) {
        ok = false;
        break;
      }
      by_node[node].push_back(rank);
    }
  send(from_node, {{"t", "jobctl_done"}, {"id", id}, {"status", static_cast<int>(ok ? PmixReply::ok : PmixReply::not_found)}});
  if (!ok) return;
  for (const auto& [node, ranks] : by_node) {
    Json m = {{"t", "signal"}, {"sig", sig}};
    if (!ranks.empty()) m["ranks"] = ranks;
    send(node, m);
  }
}

}  // namespace tlaunch

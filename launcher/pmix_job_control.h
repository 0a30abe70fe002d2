#pragma once
// PMIx_Job_control at the frontend: a daemon's "jobctl" (signal some ranks, {-1}: all) becomes
// "signal" messages with the ranks to the nodes that host them, and "jobctl_done" to the
// requester once they are sent. A rank killed this way ends the job like any failed rank.
#include <functional>

#include "bootstrap/message.h"

namespace tlaunch {

void routeJobControl(int from_node, const Json& msg, int node_count, const std::function<int(int rank)>& node_of,
                     const std::function<void(int node, const Json& msg)>& send);

}  // namespace tlaunch

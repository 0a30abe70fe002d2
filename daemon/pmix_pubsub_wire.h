#pragma once
// The control-plane messages of PMIx publish / lookup / unpublish and of collectives among
// some ranks (connect, disconnect, subset fences) and of job control (signals to ranks), daemon
// side: requests from the node's PMIx
// server go to the frontend ("pub", "lookup", "unpub", "coll", "jobctl"); its answers
// ("pub_done", "lookup_done", "unpub_done", "coll_done", "jobctl_done") complete them.
#include <functional>
#include <string>

#include "bootstrap/message.h"
#include "bootstrap/pmix_server.h"

namespace tlaunch {

void addPubsubCallbacks(PmixServer::Callbacks& cb, const std::function<void(Json)>& send);
// `this_node`: the node's index in the job, to find its own request in a broadcast answer.
void onPubsubMessage(PmixServer& server, const std::string& type, const Json& msg, int this_node);

}  // namespace tlaunch

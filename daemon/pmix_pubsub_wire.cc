#include "daemon/pmix_pubsub_wire.h"

#include <algorithm>

namespace tlaunch {
namespace {

Json stringArray(const std::vector<std::string>& v) {
  Json out = Json::array();
  for (const auto& s : v) out.push_back(s);
  return out;
}

PmixReply replyOf(const Json& msg) {
  const auto v = getInt(msg, "status", static_cast<int>(PmixReply::bad_param));
  if (v < 0 || v > static_cast<int>(kLastPmixReply)) return PmixReply::bad_param;
  return static_cast<PmixReply>(v);
}

uint64_t idOf(const Json& msg) { return static_cast<uint64_t>(getInt(msg, "id", -1)); }

}  // namespace

void addPubsubCallbacks(PmixServer::Callbacks& cb, const std::function<void(Json)>& send) {
  cb.publish = [send](uint64_t id, const PmixPublish& p) {
    Json kv = Json::array();
    for (const auto& [key, value] : p.values) kv.push_back(Json::array({key, binary(value)}));
    send({{"t", "pub"}, {"id", id}, {"r", p.rank}, {"range", p.range}, {"persist", p.persistence}, {"kv", std::move(kv)}});
  };
  cb.lookup = [send](uint64_t id, const PmixLookup& l) {
    send({{"t", "lookup"}, {"id", id}, {"r", l.rank}, {"keys", stringArray(l.keys)}, {"range", l.range},
          {"wait", l.wait}, {"timeout", l.timeout_s}});
  };
  cb.unpublish = [send](uint64_t id, const PmixUnpublish& u) {
    send({{"t", "unpub"}, {"id", id}, {"r", u.rank}, {"keys", stringArray(u.keys)}, {"range", u.range}});
  };
  cb.collective = [send](uint64_t id, const PmixCollective& c) {
    send({{"t", "coll"}, {"id", id}, {"kind", c.kind}, {"ranks", c.ranks}, {"d", binary(c.blob)}, {"timeout", c.timeout_s}});
  };
  cb.job_control = [send](uint64_t id, int requester, const std::vector<int>& ranks, int signal) {
    send({{"t", "jobctl"}, {"id", id}, {"r", requester}, {"ranks", ranks}, {"sig", signal}});
  };
}

void onPubsubMessage(PmixServer& server, const std::string& type, const Json& msg, int this_node) {
  if (type == "pub_done") {
    server.completePublish(idOf(msg), replyOf(msg));
  } else if (type == "unpub_done") {
    server.completeUnpublish(idOf(msg), replyOf(msg));
  } else if (type == "lookup_done") {
    std::vector<PmixFound> found;
    if (msg.contains("found") && msg["found"].is_array())
      for (const auto& f : msg["found"])
        if (f.is_array() && f.size() == 3 && f[0].is_string() && f[1].is_number_integer())
          found.push_back({f[0].get<std::string>(), f[1].get<int>(), bytesOf(f[2])});
    server.completeLookup(idOf(msg), replyOf(msg), found);
  } else if (type == "jobctl_done") {
    server.completeJobControl(idOf(msg), replyOf(msg));
  } else if (type == "coll_done") {
    // Broadcast to every node ("ids": node -> request id) when most nodes took part.
    uint64_t id = idOf(msg);
    if (auto ids = msg.find("ids"); ids != msg.end()) {
      auto own = ids->is_object() ? ids->find(std::to_string(this_node)) : ids->end();
      if (own == ids->end() || !own->is_number_integer()) return;  // this node is not in it
      id = own->get<uint64_t>();
    }
    server.completeCollective(id, replyOf(msg), bytesAt(msg, "d"),
                              static_cast<uint64_t>(std::max(0LL, getInt(msg, "cid", 0))));
  }
}

}  // namespace tlaunch

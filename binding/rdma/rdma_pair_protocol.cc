#include "binding/rdma/rdma_pair_protocol.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tlaunch {

using nlohmann::json;

json rdmaInfoToJson(const RdmaEndpointInfo& i) {
  return {{"lid", i.lid},   {"global", i.global}, {"gid", json::binary(std::vector<std::uint8_t>(i.gid.begin(), i.gid.end()))},
          {"qpn", i.qpn},   {"mtu", i.mtu},       {"addr", i.addr},
          {"rkey", i.rkey}, {"size", i.size}};
}

Result<RdmaEndpointInfo> rdmaInfoFromJson(const json& j) {
  if (!j.is_object()) return fail(Errc::protocol, "RDMA endpoint data is not a map");
  for (const char* key : {"lid", "qpn", "mtu", "addr", "rkey", "size"})
    if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<long long>() < 0)
      return fail(Errc::protocol, std::string("RDMA endpoint data lacks \"") + key + "\"");
  if (!j.contains("global") || !j["global"].is_boolean() || !j.contains("gid") || !j["gid"].is_binary() ||
      j["gid"].get_binary().size() != GidBytes{}.size())
    return fail(Errc::protocol, "RDMA endpoint data has no valid GID");
  RdmaEndpointInfo i;
  i.lid = j["lid"].get<std::uint32_t>();
  i.global = j["global"].get<bool>();
  const auto& gid = j["gid"].get_binary();
  std::copy(gid.begin(), gid.end(), i.gid.begin());
  i.qpn = j["qpn"].get<std::uint32_t>();
  i.mtu = j["mtu"].get<int>();
  i.addr = j["addr"].get<std::uint64_t>();
  i.rkey = j["rkey"].get<std::uint32_t>();
  i.size = j["size"].get<std::uint64_t>();
  return i;
}

json rdmaReplyToJson(const RdmaReply& r) {
  json j = {{"id", r.id}, {"ok", r.ok}};
  if (!r.ok) {
    j["stage"] = r.stage;
    j["error"] = r.error;
  }
  if (r.info.qpn != 0) j["info"] = rdmaInfoToJson(r.info);
  if (r.bandwidth_gbps > 0) j["gbps"] = r.bandwidth_gbps;
  if (r.latency_us > 0) j["latency_us"] = r.latency_us;
  if (r.bytes > 0) j["bytes"] = r.bytes;
  return j;
}

RdmaReply rdmaReplyFromJson(const json& j) {
  RdmaReply r;
  auto malformed = [&r](std::string what) {
    r.ok = false;
    r.stage = "protocol";
    r.error = std::move(what);
    return r;
  };
  if (!j.is_object() || !j.contains("id") || !j["id"].is_string()) return malformed("a reply without an endpoint id");
  r.id = j["id"].get<std::string>();
  if (!j.contains("ok") || !j["ok"].is_boolean()) return malformed("a reply without a result");
  r.ok = j["ok"].get<bool>();
  if (auto s = j.find("stage"); s != j.end() && s->is_string()) r.stage = s->get<std::string>();
  if (auto e = j.find("error"); e != j.end() && e->is_string()) r.error = e->get<std::string>();
  if (auto i = j.find("info"); i != j.end()) {
    auto info = rdmaInfoFromJson(*i);
    if (!info) return malformed(info.error().message);
    r.info = *info;
  }
  if (auto g = j.find("gbps"); g != j.end() && g->is_number()) r.bandwidth_gbps = g->get<double>();
  if (auto l = j.find("latency_us"); l != j.end() && l->is_number()) r.latency_us = l->get<double>();
  if (auto b = j.find("bytes"); b != j.end() && b->is_number_unsigned()) r.bytes = b->get<std::uint64_t>();
  return r;
}

bool isRdmaStage(const std::string& type) {
  return std::any_of(std::begin(kRdmaStages), std::end(kRdmaStages), [&](const char* s) { return type == s; });
}

std::string rdmaDoneType(const std::string& stage) { return stage + "_done"; }

}  // namespace tlaunch

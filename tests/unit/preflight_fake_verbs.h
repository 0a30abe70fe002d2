#pragma once
// A small in-memory HCA behind VerbsApi: it enforces the RC QP state machine and resource
// ownership, performs RDMA writes with memcpy, and can be told to fail at any call. Several
// fakes joined into one fabric (joinFabric) stand for several nodes: QPs connect across them
// by LID or GID, and writes land in the other fake's registered memory.
#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "binding/rdma/verbs_api.h"

namespace tlaunch::testing {

class FakeVerbs final : public VerbsApi {
 public:
  struct Port {
    VerbsPortAttr attr;
    std::vector<GidBytes> gids;
  };
  struct Device {
    std::string name;
    std::vector<Port> ports;
    bool open_fails = false;
  };
  enum class Completion { ok, error, never, corrupt };

  std::vector<Device> devices;
  bool list_fails = false;
  std::string fail_call;  // the API call to fail ("allocPd", "qpToRtr", ...); "" = none
  int fail_occurrence = 1;
  Completion completion = Completion::ok;

  std::vector<std::string> violations;  // misuse the fake detected
  std::map<VerbsHandle, std::string> live;  // handle -> kind, for leak checks
  int writes = 0;
  std::vector<VerbsRtr> rtrs;
  std::vector<int> pkey_indexes;  // qpToInit's, in call order

  // Make `all` one fabric; `index` keeps this fake's QP numbers and keys apart from the others'.
  void joinFabric(std::vector<FakeVerbs*> all, std::uint32_t index) {
    fabric_ = std::move(all);
    next_key_ = 0x1000 + index * 0x100000;
    next_qpn_ = 0x20 + index * 0x10000;
  }

  static Port ibPort(std::uint32_t lid, int state = 4) {
    Port p;
    p.attr = VerbsPortAttr{state, state == 4 ? 5 : 3, LinkLayer::infiniband, lid, 4096, 128};
    p.gids.push_back(GidBytes{0xfe, 0x80});
    return p;
  }

  Result<std::vector<std::string>> deviceNames() override {
    if (list_fails) return fail(Errc::fabric, "ibv_get_device_list: Function not implemented");
    std::vector<std::string> names;
    for (const auto& d : devices) names.push_back(d.name);
    return names;
  }

  Result<VerbsHandle> openDevice(const std::string& name) override {
    if (shouldFail("openDevice")) return fail(Errc::fabric, "ibv_open_device(" + name + ") failed: Permission denied");
    for (std::size_t i = 0; i < devices.size(); ++i)
      if (devices[i].name == name) {
        if (devices[i].open_fails) return fail(Errc::fabric, "ibv_open_device(" + name + ") failed: Permission denied");
        VerbsHandle h = make("context");
        contexts_[h] = i;
        return h;
      }
    return fail(Errc::fabric, "ibv_open_device(" + name + ") failed: No such device");
  }

  void closeDevice(VerbsHandle ctx) override {
    for (const auto& [h, kind] : live)
      if (kind == "pd" && pdContext_[h] == ctx) violations.push_back("device closed before its PD");
    release(ctx, "context");
  }

  Result<int> portCount(VerbsHandle ctx) override { return static_cast<int>(device(ctx).ports.size()); }

  Result<VerbsPortAttr> queryPort(VerbsHandle ctx, int port) override {
    if (shouldFail("queryPort")) return fail(Errc::fabric, "ibv_query_port failed: Invalid argument");
    const Device& d = device(ctx);
    if (port < 1 || port > static_cast<int>(d.ports.size())) return fail(Errc::fabric, "ibv_query_port failed: Invalid argument");
    return d.ports[static_cast<std::size_t>(port - 1)].attr;
  }

  Result<GidBytes> queryGid(VerbsHandle ctx, int port, int index) override {
    if (shouldFail("queryGid")) return fail(Errc::fabric, "ibv_query_gid failed: Invalid argument");
    const auto& gids = device(ctx).ports.at(static_cast<std::size_t>(port - 1)).gids;
    if (index < 0 || index >= static_cast<int>(gids.size())) return fail(Errc::fabric, "ibv_query_gid failed: Invalid argument");
    return gids[static_cast<std::size_t>(index)];
  }

  Result<VerbsHandle> allocPd(VerbsHandle ctx) override {
    if (shouldFail("allocPd")) return fail(Errc::fabric, "ibv_alloc_pd failed: Cannot allocate memory");
    VerbsHandle h = make("pd");
    pdContext_[h] = ctx;
    return h;
  }

  void deallocPd(VerbsHandle pd) override {
    for (const auto& [h, mr] : mrs_)
      if (mr.pd == pd && live.count(h)) violations.push_back("PD freed before its MR");
    for (const auto& [h, qp] : qps_)
      if (qp.pd == pd && live.count(h)) violations.push_back("PD freed before its QP");
    release(pd, "pd");
  }

  Result<VerbsMr> regMr(VerbsHandle pd, void* address, std::size_t length) override {
    if (shouldFail("regMr")) return fail(Errc::fabric, "ibv_reg_mr failed: Cannot allocate memory");
    VerbsHandle h = make("mr");
    Mr mr{static_cast<std::uint8_t*>(address), length, next_key_++, next_key_++, pd};
    mrs_[h] = mr;
    return VerbsMr{h, mr.lkey, mr.rkey};
  }

  void deregMr(VerbsHandle mr) override { release(mr, "mr"); }

  Result<VerbsHandle> createCq(VerbsHandle, int) override {
    if (shouldFail("createCq")) return fail(Errc::fabric, "ibv_create_cq failed: Cannot allocate memory");
    VerbsHandle h = make("cq");
    cqs_[h];
    return h;
  }

  void destroyCq(VerbsHandle cq) override {
    for (const auto& [h, qp] : qps_)
      if (qp.cq == cq && live.count(h)) violations.push_back("CQ destroyed before its QP");
    release(cq, "cq");
  }

  Result<VerbsQp> createRcQp(VerbsHandle pd, VerbsHandle cq, int) override {
    if (shouldFail("createRcQp")) return fail(Errc::fabric, "ibv_create_qp failed: Cannot allocate memory");
    VerbsHandle h = make("qp");
    Qp qp;
    qp.qpn = next_qpn_++;
    qp.pd = pd;
    qp.cq = cq;
    qp.context = pdContext_[pd];
    qps_[h] = qp;
    return VerbsQp{h, qp.qpn};
  }

  void destroyQp(VerbsHandle qp) override { release(qp, "qp"); }

  Result<void> qpToInit(VerbsHandle h, int port, int pkey_index) override {
    Qp& qp = qps_.at(h);
    if (qp.state != 0) violations.push_back("INIT from state " + std::to_string(qp.state));
    if (shouldFail("qpToInit")) return fail(Errc::fabric, "ibv_modify_qp(INIT) failed: Invalid argument");
    qp.state = 1;
    qp.port = port;
    pkey_indexes.push_back(pkey_index);
    return {};
  }

  Result<void> qpToRtr(VerbsHandle h, const VerbsRtr& rtr) override {
    Qp& qp = qps_.at(h);
    rtrs.push_back(rtr);
    if (qp.state != 1) violations.push_back("RTR from state " + std::to_string(qp.state));
    if (shouldFail("qpToRtr")) return fail(Errc::fabric, "ibv_modify_qp(RTR) failed: Connection timed out");
    bool peerKnown = false;
    for (const FakeVerbs* node : nodes())
      for (const auto& [other, q] : node->qps_)
        peerKnown = peerKnown || ((node != this || other != h) && q.qpn == rtr.dest_qpn && node->live.count(other));
    const Port& port = device(qp.context).ports.at(static_cast<std::size_t>(rtr.port - 1));
    bool routeOk = port.attr.link_layer == LinkLayer::ethernet
                       ? rtr.global && rtr.sgid_index >= 0 && rtr.sgid_index < static_cast<int>(port.gids.size()) &&
                             anyPort([&](const Port& p) {
                               return p.attr.link_layer == LinkLayer::ethernet &&
                                      std::find(p.gids.begin(), p.gids.end(), rtr.dgid) != p.gids.end();
                             })
                       : !rtr.global && anyPort([&](const Port& p) {
                           return p.attr.link_layer == LinkLayer::infiniband && p.attr.lid == rtr.dlid;
                         });
    if (!peerKnown || !routeOk || rtr.path_mtu > port.attr.active_mtu || rtr.port != qp.port)
      return fail(Errc::fabric, "ibv_modify_qp(RTR) failed: Invalid argument");
    qp.state = 2;
    qp.dest_qpn = rtr.dest_qpn;
    return {};
  }

  Result<void> qpToRts(VerbsHandle h) override {
    Qp& qp = qps_.at(h);
    if (qp.state != 2) violations.push_back("RTS from state " + std::to_string(qp.state));
    if (shouldFail("qpToRts")) return fail(Errc::fabric, "ibv_modify_qp(RTS) failed: Invalid argument");
    qp.state = 3;
    return {};
  }

  Result<void> postRdmaWrite(VerbsHandle h, std::uint64_t wrId, const void* local, std::size_t length,
                             std::uint32_t lkey, std::uint64_t remote, std::uint32_t rkey) override {
    Qp& qp = qps_.at(h);
    if (qp.state != 3) violations.push_back("post in state " + std::to_string(qp.state));
    if (shouldFail("postRdmaWrite")) return fail(Errc::fabric, "ibv_post_send failed: Cannot allocate memory");
    const Mr* src = findMr(lkey, false, local, length);
    auto* dstAddr = reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(remote));
    const Mr* dst = nullptr;
    for (const FakeVerbs* node : nodes()) dst = dst ? dst : node->findMr(rkey, true, dstAddr, length);
    if (!src || !dst) violations.push_back("write outside a registered region");
    ++writes;
    auto& queue = cqs_.at(qp.cq);
    switch (completion) {
      case Completion::never: return {};
      case Completion::error:
        queue.push_back(VerbsCompletion{wrId, false, "transport retry counter exceeded"});
        return {};
      case Completion::ok:
      case Completion::corrupt:
        if (src && dst) std::memcpy(dstAddr, local, length);
        if (completion == Completion::corrupt && dst) dstAddr[length / 2] ^= 0xff;
        queue.push_back(VerbsCompletion{wrId, true, "success"});
        return {};
    }
    return {};
  }

  Result<std::vector<VerbsCompletion>> pollCq(VerbsHandle cq, int max) override {
    if (shouldFail("pollCq")) return fail(Errc::fabric, "ibv_poll_cq failed");
    auto& queue = cqs_.at(cq);
    std::vector<VerbsCompletion> out;
    while (!queue.empty() && static_cast<int>(out.size()) < max) {
      out.push_back(queue.front());
      queue.pop_front();
    }
    return out;
  }

 private:
  struct Mr {
    std::uint8_t* addr = nullptr;
    std::size_t length = 0;
    std::uint32_t lkey = 0, rkey = 0;
    VerbsHandle pd = 0;
  };
  struct Qp {
    int state = 0;  // 0 RESET, 1 INIT, 2 RTR, 3 RTS
    std::uint32_t qpn = 0;
    VerbsHandle pd = 0, cq = 0, context = 0;
    int port = 0;
    std::uint32_t dest_qpn = 0;
  };

  std::vector<const FakeVerbs*> nodes() const {
    if (fabric_.empty()) return {this};
    return {fabric_.begin(), fabric_.end()};
  }

  template <class Predicate>
  bool anyPort(Predicate predicate) const {
    for (const FakeVerbs* node : nodes())
      for (const auto& d : node->devices)
        for (const auto& p : d.ports)
          if (predicate(p)) return true;
    return false;
  }

  bool shouldFail(const std::string& call) {
    if (call != fail_call) return false;
    return ++calls_[call] == fail_occurrence;
  }

  VerbsHandle make(const std::string& kind) {
    VerbsHandle h = next_handle_++;
    live[h] = kind;
    return h;
  }

  void release(VerbsHandle h, const std::string& kind) {
    auto it = live.find(h);
    if (it == live.end() || it->second != kind)
      violations.push_back("release of an unknown " + kind);
    else
      live.erase(it);
  }

  const Device& device(VerbsHandle ctx) const { return devices.at(contexts_.at(ctx)); }

  const Mr* findMr(std::uint32_t key, bool remoteKey, const void* address, std::size_t length) const {
    auto* a = static_cast<const std::uint8_t*>(address);
    for (const auto& [h, mr] : mrs_)
      if (live.count(h) && (remoteKey ? mr.rkey : mr.lkey) == key && a >= mr.addr && a + length <= mr.addr + mr.length)
        return &mr;
    return nullptr;
  }

  VerbsHandle next_handle_ = 100;
  std::uint32_t next_key_ = 0x1000;
  std::uint32_t next_qpn_ = 0x20;
  std::map<VerbsHandle, std::size_t> contexts_;
  std::map<VerbsHandle, VerbsHandle> pdContext_;
  std::map<VerbsHandle, Mr> mrs_;
  std::map<VerbsHandle, Qp> qps_;
  std::map<VerbsHandle, std::deque<VerbsCompletion>> cqs_;
  std::map<std::string, int> calls_;
  std::vector<FakeVerbs*> fabric_;
};

}  // namespace tlaunch::testing

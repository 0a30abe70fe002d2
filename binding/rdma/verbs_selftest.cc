#include "binding/rdma/verbs_selftest.h"

#include <algorithm>
#include <functional>

#include "binding/fabric/roce_gid.h"
#include "binding/rdma/verbs_completion.h"

namespace tlaunch {
namespace {

using Clock = std::chrono::steady_clock;

// Releases what was created, newest first, on every path out of the test.
class Cleanup {
 public:
  Cleanup() = default;
  Cleanup(const Cleanup&) = delete;
  Cleanup& operator=(const Cleanup&) = delete;
  ~Cleanup() {
    while (!steps_.empty()) {  // newest first
      steps_.back()();
      steps_.pop_back();
    }
  }
  void push(std::function<void()> step) { steps_.push_back(std::move(step)); }

 private:
  std::vector<std::function<void()>> steps_;
};

}  // namespace

SelfTestResult runVerbsSelfTest(VerbsApi& api, const SelfTestOptions& o) {
  SelfTestResult result;
  result.port = portName(o.device, o.port);
  const std::size_t bytes = std::max<std::size_t>(o.bytes, 8);
  std::vector<std::uint8_t> src(bytes), dst(bytes, 0);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<std::uint8_t>((i * 131 + 7) & 0xff);

  Cleanup cleanup;  // declared after the buffers: MRs are deregistered before the memory goes
  auto failed = [&](std::string stage, std::string error) {
    result.stage = std::move(stage);
    result.error = std::move(error);
    return result;
  };

  auto context = api.openDevice(o.device);
  if (!context) return failed("open_device", context.error().message);
  const VerbsHandle ctx = *context;
  cleanup.push([&api, ctx] { api.closeDevice(ctx); });

  auto attr = api.queryPort(ctx, o.port);
  if (!attr) return failed("query_port", attr.error().message);
  if (attr->state != kPortStateActive)
    return failed("port_state", "port state is " + std::to_string(attr->state) + ", not ACTIVE (4)");
  const bool roce = attr->link_layer == LinkLayer::ethernet;
  if (!roce && (attr->lid == 0 || attr->lid == 0xffff)) return failed("port_state", "no LID assigned");

  VerbsRtr rtr;
  rtr.port = o.port;
  rtr.path_mtu = attr->active_mtu > 0 ? attr->active_mtu : 1024;
  rtr.dlid = attr->lid;
  if (roce) {
    if (o.gid_index < 0) return failed("query_gid", "RoCE port without a RoCE v2 GID index");
    auto gid = api.queryGid(ctx, o.port, o.gid_index);
    if (!gid) return failed("query_gid", gid.error().message);
    rtr.global = true;
    rtr.dgid = *gid;
    rtr.sgid_index = o.gid_index;
  }

  auto pd = api.allocPd(ctx);
  if (!pd) return failed("alloc_pd", pd.error().message);
  const VerbsHandle pdh = *pd;
  cleanup.push([&api, pdh] { api.deallocPd(pdh); });

  auto srcMr = api.regMr(pdh, src.data(), src.size());
  if (!srcMr) return failed("reg_mr", srcMr.error().message);
  cleanup.push([&api, h = srcMr->mr] { api.deregMr(h); });
  auto dstMr = api.regMr(pdh, dst.data(), dst.size());
  if (!dstMr) return failed("reg_mr", dstMr.error().message);
  cleanup.push([&api, h = dstMr->mr] { api.deregMr(h); });

  const int window = std::max(1, o.window);
  auto cq = api.createCq(ctx, 2 * window + 4);
  if (!cq) return failed("create_cq", cq.error().message);
  const VerbsHandle cqh = *cq;
  cleanup.push([&api, cqh] { api.destroyCq(cqh); });

  VerbsQp qps[2];
  for (auto& qp : qps) {
    auto created = api.createRcQp(pdh, cqh, window);
    if (!created) return failed("create_qp", created.error().message);
    qp = *created;
    cleanup.push([&api, h = qp.qp] { api.destroyQp(h); });
  }
  for (const auto& qp : qps)
    if (auto r = api.qpToInit(qp.qp, o.port, o.pkey_index); !r) return failed("qp_init", r.error().message);
  for (int i = 0; i < 2; ++i) {
    VerbsRtr toPeer = rtr;
    toPeer.dest_qpn = qps[1 - i].qpn;
    if (auto r = api.qpToRtr(qps[i].qp, toPeer); !r) return failed("qp_rtr", r.error().message);
  }
  for (const auto& qp : qps)
    if (auto r = api.qpToRts(qp.qp); !r) return failed("qp_rts", r.error().message);

  const VerbsHandle sender = qps[0].qp;
  const auto remote = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(dst.data()));
  auto post = [&](std::uint64_t id, std::size_t length) {
    return api.postRdmaWrite(sender, id, src.data(), length, srcMr->lkey, remote, dstMr->rkey);
  };

  // Correctness: one write of the whole buffer, then compare.
  if (auto r = post(0, bytes); !r) return failed("post_write", r.error().message);
  if (auto f = waitForCompletions(api, cqh, 1, Clock::now() + o.timeout)) return failed(f->stage, f->error);
  auto mismatch = std::mismatch(src.begin(), src.end(), dst.begin());
  if (mismatch.first != src.end())
    return failed("compare", "byte " + std::to_string(mismatch.first - src.begin()) + " of " + std::to_string(bytes) +
                                 " differs after the write");
  result.bytes_compared = bytes;

  auto timing = timeWrites(api, cqh, post, bytes, o.iterations, window, o.latency_iterations, o.timeout);
  if (!timing) return failed(timing.error().stage, timing.error().error);
  result.bandwidth_gbps = timing->bandwidth_gbps;
  result.latency_us = timing->latency_us;
  result.ok = true;
  return result;
}

std::vector<SelfTestOptions> selfTestTargets(const NodeFabric& fabric) {
  std::vector<SelfTestOptions> out;
  for (const auto& d : fabric.devices)
    for (const auto& p : d.ports) {
      if (!isRdmaDataPort(p)) continue;  // not ACTIVE, or Ethernet without a RoCE v2 IPv4 GID: not the job's
      SelfTestOptions o;
      o.device = d.name;
      o.port = p.number;
      if (p.link_layer == LinkLayer::ethernet) {
        int index = ncclRoceGidIndex(p);
        const GidEntry* g = gidAt(p, index);
        o.gid_index = g && isRoceV2Ipv4(*g) ? index : -1;
      } else {
        const auto full = std::find_if(p.pkeys.begin(), p.pkeys.end(),
                                       [](const PkeyEntry& e) { return (e.value & kPkeyFullMember) != 0; });
        o.pkey_index = full == p.pkeys.end() ? 0 : full->index;
      }
      out.push_back(o);
    }
  return out;
}

std::string verbsStageFix(const std::string& s) {
  if (s == "open_device") return "check /dev/infiniband access and the provider library (ibverbs-providers)";
  if (s == "query_port" || s == "port_state") return "the port is not usable: check the cable and the subnet manager (ibstat)";
  if (s == "query_gid") return "give the RoCE netdev an IPv4 address so that a RoCE v2 GID exists";
  if (s == "alloc_pd" || s == "reg_mr" || s == "create_cq" || s == "create_qp")
    return "the HCA refused resources: raise the memlock limit (ulimit -l unlimited) and check the driver";
  if (s == "qp_init" || s == "qp_rtr" || s == "qp_rts")
    return "QP setup failed: check the port's LID/MTU (IB) or RoCE v2 GID index and MTU (RoCE)";
  if (s == "compare") return "data arrived corrupted: check the HCA firmware and dmesg";
  return "the RDMA write did not complete: check the link (ibstat), firmware and the port's error counters";
}

PreflightItem selfTestItem(const SelfTestResult& r, const std::string& node) {
  PreflightItem item;
  item.check = "verbs_selftest";
  item.node = node;
  item.device = r.port;
  item.expected = "loopback RDMA write completes and arrives intact";
  if (r.ok) {
    item.status = PreflightStatus::pass;
    item.found = byteSizeText(r.bytes_compared) + " written and verified; " + formatNumber("%.1f", r.bandwidth_gbps) +
                 " Gb/s, " + formatNumber("%.2f", r.latency_us) + " us per 8-byte write";
    return item;
  }
  item.status = PreflightStatus::fail;
  item.found = r.stage + ": " + r.error;
  item.fix = verbsStageFix(r.stage);
  return item;
}

}  // namespace tlaunch

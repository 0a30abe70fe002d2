#include "binding/rdma/rdma_endpoint.h"

#include <algorithm>

namespace tlaunch {
namespace {

using Clock = std::chrono::steady_clock;

tl::unexpected<VerbsStageError> stageError(std::string stage, std::string error) {
  return tl::unexpected(VerbsStageError{std::move(stage), std::move(error)});
}

}  // namespace

void fillTestPattern(std::vector<std::uint8_t>& buffer, std::uint32_t seed) {
  std::uint32_t x = seed * 2654435761u + 0x9e3779b9u;
  for (auto& b : buffer) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<std::uint8_t>(x >> 24);
  }
}

RdmaEndpoint::RdmaEndpoint(VerbsApi& api, const RdmaEndpointSpec& spec)
    : api_(api), spec_(spec), buffer_(std::max<std::size_t>(spec.bytes, 8), 0) {}

RdmaEndpoint::~RdmaEndpoint() {
  // Newest first: a QP before its CQ and PD, the MR before its PD and its memory.
  if (qp_) api_.destroyQp(qp_);
  if (cq_) api_.destroyCq(cq_);
  if (mr_) api_.deregMr(mr_);
  if (pd_) api_.deallocPd(pd_);
  if (context_) api_.closeDevice(context_);
}

Staged<std::unique_ptr<RdmaEndpoint>> RdmaEndpoint::open(VerbsApi& api, const RdmaEndpointSpec& spec) {
  std::unique_ptr<RdmaEndpoint> ep(new RdmaEndpoint(api, spec));
  auto context = api.openDevice(spec.device);
  if (!context) return stageError("open_device", context.error().message);
  ep->context_ = *context;
  auto attr = api.queryPort(ep->context_, spec.port);
  if (!attr) return stageError("query_port", attr.error().message);
  if (attr->state != kPortStateActive)
    return stageError("port_state", "port state is " + std::to_string(attr->state) + ", not ACTIVE (4)");
  RdmaEndpointInfo& info = ep->info_;
  info.lid = attr->lid;
  info.mtu = attr->active_mtu > 0 ? attr->active_mtu : 1024;
  if (attr->link_layer == LinkLayer::ethernet) {
    if (spec.gid_index < 0) return stageError("query_gid", "RoCE port without a RoCE v2 GID index");
    auto gid = api.queryGid(ep->context_, spec.port, spec.gid_index);
    if (!gid) return stageError("query_gid", gid.error().message);
    info.global = true;
    info.gid = *gid;
  } else if (info.lid == 0 || info.lid == 0xffff) {
    return stageError("port_state", "no LID assigned");
  }
  auto pd = api.allocPd(ep->context_);
  if (!pd) return stageError("alloc_pd", pd.error().message);
  ep->pd_ = *pd;
  auto mr = api.regMr(ep->pd_, ep->buffer_.data(), ep->buffer_.size());
  if (!mr) return stageError("reg_mr", mr.error().message);
  ep->mr_ = mr->mr;
  ep->lkey_ = mr->lkey;
  info.rkey = mr->rkey;
  info.addr = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ep->buffer_.data()));
  info.size = ep->buffer_.size();
  auto cq = api.createCq(ep->context_, ep->window_ + 4);
  if (!cq) return stageError("create_cq", cq.error().message);
  ep->cq_ = *cq;
  auto qp = api.createRcQp(ep->pd_, ep->cq_, ep->window_);
  if (!qp) return stageError("create_qp", qp.error().message);
  ep->qp_ = qp->qp;
  info.qpn = qp->qpn;
  if (auto r = api.qpToInit(ep->qp_, spec.port, spec.pkey_index); !r) return stageError("qp_init", r.error().message);
  return ep;
}

Staged<void> RdmaEndpoint::connect(const RdmaEndpointInfo& peer) {
  if (peer.global != info_.global)
    return stageError("qp_rtr", std::string("link layers differ: this port is ") + (info_.global ? "RoCE" : "InfiniBand") +
                                    ", the peer's is " + (peer.global ? "RoCE" : "InfiniBand"));
  VerbsRtr rtr;
  rtr.port = spec_.port;
  rtr.path_mtu = std::min(info_.mtu, peer.mtu > 0 ? peer.mtu : 1024);  // as NCCL: min(local, remote)
  rtr.dest_qpn = peer.qpn;
  rtr.dlid = peer.lid;
  rtr.global = peer.global;
  rtr.dgid = peer.gid;
  rtr.sgid_index = std::max(spec_.gid_index, 0);
  if (auto r = api_.qpToRtr(qp_, rtr); !r) return stageError("qp_rtr", r.error().message);
  if (auto r = api_.qpToRts(qp_); !r) return stageError("qp_rts", r.error().message);
  return {};
}

Staged<RdmaWriteResult> RdmaEndpoint::writeTo(const RdmaEndpointInfo& peer, const RdmaWriteOptions& o) {
  RdmaWriteResult result;
  const std::size_t bytes = static_cast<std::size_t>(std::min<std::uint64_t>(buffer_.size(), peer.size));
  if (bytes < 8) return stageError("post_write", "the peer's buffer is too small (" + std::to_string(peer.size) + " bytes)");
  fillTestPattern(buffer_, o.seed);
  result.bytes = bytes;
  auto post = [&](std::uint64_t id, std::size_t length) {
    return api_.postRdmaWrite(qp_, id, buffer_.data(), length, lkey_, peer.addr, peer.rkey);
  };

  // The pattern, once, for the target to compare.
  if (auto r = post(0, bytes); !r) return stageError("post_write", r.error().message);
  if (auto f = waitForCompletions(api_, cq_, 1, Clock::now() + o.timeout)) return tl::unexpected(*f);

  // Then the same bytes again (the target's buffer keeps the pattern), timed.
  auto timing = timeWrites(api_, cq_, post, bytes, o.iterations, std::clamp(o.window, 1, window_),
                           o.latency_iterations, o.timeout);
  if (!timing) return tl::unexpected(timing.error());
  result.bandwidth_gbps = timing->bandwidth_gbps;
  result.latency_us = timing->latency_us;
  return result;
}

Staged<std::uint64_t> RdmaEndpoint::verify(std::uint32_t seed, std::uint64_t bytes) const {
  if (bytes == 0 || bytes > buffer_.size())
    return stageError("compare", "the initiator reports " + std::to_string(bytes) + " bytes written into a buffer of " +
                                     std::to_string(buffer_.size()));
  std::vector<std::uint8_t> expected(buffer_.size());
  fillTestPattern(expected, seed);
  const auto n = static_cast<std::ptrdiff_t>(bytes);
  auto mismatch = std::mismatch(expected.begin(), expected.begin() + n, buffer_.begin());
  if (mismatch.first != expected.begin() + n) {
    const auto at = mismatch.first - expected.begin();
    const bool untouched = std::all_of(buffer_.begin(), buffer_.begin() + n, [](std::uint8_t b) { return b == 0; });
    return stageError("compare", untouched ? "nothing arrived: the buffer is still zero"
                                           : "byte " + std::to_string(at) + " of " + std::to_string(bytes) +
                                                 " differs from what was written");
  }
  return bytes;
}

}  // namespace tlaunch

// VerbsApi over the real libibverbs.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

#include "binding/rdma/verbs_api.h"

namespace tlaunch {
namespace {

template <class T>
T* as(VerbsHandle h) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(h));  // NOLINT(performance-no-int-to-ptr): handles are pointers
}

template <class T>
VerbsHandle handle(T* p) {
  return static_cast<VerbsHandle>(reinterpret_cast<std::uintptr_t>(p));
}

tl::unexpected<Error> fromErrno(const std::string& call, int err) {
  return fail(Errc::fabric, call + " failed: " + std::strerror(err));
}

int mtuBytes(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
  }
  return 0;
}

ibv_mtu mtuEnum(int bytes) {
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  if (bytes >= 1024) return IBV_MTU_1024;
  if (bytes >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

class IbverbsApi final : public VerbsApi {
 public:
  Result<std::vector<std::string>> deviceNames() override {
    int count = 0;
    errno = 0;
    ibv_device** list = ibv_get_device_list(&count);
    if (!list) return fail(Errc::fabric, std::string("ibv_get_device_list: ") + std::strerror(errno ? errno : ENODEV));
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) names.emplace_back(ibv_get_device_name(list[i]));
    ibv_free_device_list(list);
    return names;
  }

  Result<VerbsHandle> openDevice(const std::string& name) override {
    int count = 0;
    ibv_device** list = ibv_get_device_list(&count);
    if (!list) return fromErrno("ibv_get_device_list", errno ? errno : ENODEV);
    ibv_context* context = nullptr;
    int err = ENODEV;
    for (int i = 0; i < count && !context; ++i) {
      if (name != ibv_get_device_name(list[i])) continue;
      errno = 0;
      context = ibv_open_device(list[i]);
      err = errno ? errno : EIO;
    }
    ibv_free_device_list(list);
    if (!context) return fromErrno("ibv_open_device(" + name + ")", err);
    return handle(context);
  }

  void closeDevice(VerbsHandle context) override { ibv_close_device(as<ibv_context>(context)); }

  Result<int> portCount(VerbsHandle context) override {
    ibv_device_attr attr{};
    if (int rc = ibv_query_device(as<ibv_context>(context), &attr)) return fromErrno("ibv_query_device", rc);
    return static_cast<int>(attr.phys_port_cnt);
  }

  Result<VerbsPortAttr> queryPort(VerbsHandle context, int port) override {
    ibv_port_attr attr{};
    if (int rc = ibv_query_port(as<ibv_context>(context), static_cast<std::uint8_t>(port), &attr))
      return fromErrno("ibv_query_port", rc);
    VerbsPortAttr out;
    out.state = attr.state;
    out.phys_state = attr.phys_state;
    out.link_layer = attr.link_layer == IBV_LINK_LAYER_ETHERNET  ? LinkLayer::ethernet
                     : attr.link_layer == IBV_LINK_LAYER_INFINIBAND ? LinkLayer::infiniband
                                                                    : LinkLayer::unknown;
    out.lid = attr.lid;
    out.active_mtu = mtuBytes(attr.active_mtu);
    out.gid_tbl_len = attr.gid_tbl_len;
    return out;
  }

  Result<GidBytes> queryGid(VerbsHandle context, int port, int index) override {
    ibv_gid gid{};
    if (int rc = ibv_query_gid(as<ibv_context>(context), static_cast<std::uint8_t>(port), index, &gid))
      return fromErrno("ibv_query_gid", rc < 0 ? errno : rc);
    GidBytes out{};
    std::memcpy(out.data(), gid.raw, out.size());
    return out;
  }

  Result<VerbsHandle> allocPd(VerbsHandle context) override {
    ibv_pd* pd = ibv_alloc_pd(as<ibv_context>(context));
    if (!pd) return fromErrno("ibv_alloc_pd", errno);
    return handle(pd);
  }

  void deallocPd(VerbsHandle pd) override { ibv_dealloc_pd(as<ibv_pd>(pd)); }

  Result<VerbsMr> regMr(VerbsHandle pd, void* address, std::size_t length) override {
    ibv_mr* mr = ibv_reg_mr(as<ibv_pd>(pd), address, length, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!mr) return fromErrno("ibv_reg_mr", errno);
    return VerbsMr{handle(mr), mr->lkey, mr->rkey};
  }

  void deregMr(VerbsHandle mr) override { ibv_dereg_mr(as<ibv_mr>(mr)); }

  Result<VerbsHandle> createCq(VerbsHandle context, int depth) override {
    ibv_cq* cq = ibv_create_cq(as<ibv_context>(context), depth, nullptr, nullptr, 0);
    if (!cq) return fromErrno("ibv_create_cq", errno);
    return handle(cq);
  }

  void destroyCq(VerbsHandle cq) override { ibv_destroy_cq(as<ibv_cq>(cq)); }

  Result<VerbsQp> createRcQp(VerbsHandle pd, VerbsHandle cq, int maxSendWr) override {
    ibv_qp_init_attr init{};
    init.send_cq = as<ibv_cq>(cq);
    init.recv_cq = as<ibv_cq>(cq);
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = static_cast<std::uint32_t>(maxSendWr);
    init.cap.max_recv_wr = 1;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(as<ibv_pd>(pd), &init);
    if (!qp) return fromErrno("ibv_create_qp", errno);
    return VerbsQp{handle(qp), qp->qp_num};
  }

  void destroyQp(VerbsHandle qp) override { ibv_destroy_qp(as<ibv_qp>(qp)); }

  Result<void> qpToInit(VerbsHandle qp, int port, int pkey_index) override {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = static_cast<std::uint16_t>(pkey_index);
    attr.port_num = static_cast<std::uint8_t>(port);
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    if (int rc = ibv_modify_qp(as<ibv_qp>(qp), &attr,
                               IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return fromErrno("ibv_modify_qp(INIT)", rc);
    return {};
  }

  Result<void> qpToRtr(VerbsHandle qp, const VerbsRtr& rtr) override {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = mtuEnum(rtr.path_mtu);
    attr.dest_qp_num = rtr.dest_qpn;
    attr.rq_psn = 0;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 12;
    attr.ah_attr.dlid = static_cast<std::uint16_t>(rtr.dlid);
    attr.ah_attr.sl = 0;
    attr.ah_attr.port_num = static_cast<std::uint8_t>(rtr.port);
    if (rtr.global) {
      attr.ah_attr.is_global = 1;
      std::memcpy(attr.ah_attr.grh.dgid.raw, rtr.dgid.data(), rtr.dgid.size());
      attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(rtr.sgid_index);
      attr.ah_attr.grh.hop_limit = 255;
    }
    if (int rc = ibv_modify_qp(as<ibv_qp>(qp), &attr,
                               IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      return fromErrno("ibv_modify_qp(RTR)", rc);
    return {};
  }

  Result<void> qpToRts(VerbsHandle qp) override {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    attr.sq_psn = 0;
    attr.max_rd_atomic = 1;
    if (int rc = ibv_modify_qp(as<ibv_qp>(qp), &attr,
                               IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                   IBV_QP_MAX_QP_RD_ATOMIC))
      return fromErrno("ibv_modify_qp(RTS)", rc);
    return {};
  }

  Result<void> postRdmaWrite(VerbsHandle qp, std::uint64_t wrId, const void* local, std::size_t length,
                             std::uint32_t lkey, std::uint64_t remote, std::uint32_t rkey) override {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(local);
    sge.length = static_cast<std::uint32_t>(length);
    sge.lkey = lkey;
    ibv_send_wr wr{};
    wr.wr_id = wrId;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(as<ibv_qp>(qp), &wr, &bad)) return fromErrno("ibv_post_send", rc);
    return {};
  }

  Result<std::vector<VerbsCompletion>> pollCq(VerbsHandle cq, int max) override {
    std::vector<ibv_wc> wc(static_cast<std::size_t>(max));
    int n = ibv_poll_cq(as<ibv_cq>(cq), max, wc.data());
    if (n < 0) return fail(Errc::fabric, "ibv_poll_cq failed");
    std::vector<VerbsCompletion> out;
    for (int i = 0; i < n; ++i)
      out.push_back(VerbsCompletion{wc[i].wr_id, wc[i].status == IBV_WC_SUCCESS, ibv_wc_status_str(wc[i].status)});
    return out;
  }
};

}  // namespace

std::unique_ptr<VerbsApi> makeIbverbsApi() { return std::make_unique<IbverbsApi>(); }

}  // namespace tlaunch

#pragma once
// The few libibverbs calls the probe and the self-test need, as a table of functions so that a
// small fake can stand in for the hardware in unit tests. makeIbverbsApi() is the real one.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "binding/fabric/roce_gid.h"
#include "tlaunch/fabric.h"
#include "tlaunch/result.h"

namespace tlaunch {

using VerbsHandle = std::uint64_t;  // opaque; 0 = none

struct VerbsPortAttr {
  int state = 0;       // IBV_PORT_* (4 = ACTIVE)
  int phys_state = 0;  // 5 = LinkUp
  LinkLayer link_layer = LinkLayer::unknown;
  std::uint32_t lid = 0;
  int active_mtu = 0;  // bytes: 256 .. 4096
  int gid_tbl_len = 0;
};

struct VerbsMr {
  VerbsHandle mr = 0;
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
};

struct VerbsQp {
  VerbsHandle qp = 0;
  std::uint32_t qpn = 0;
};

// Ready-to-receive: where the QP sends to. RoCE needs the global route (GID).
struct VerbsRtr {
  int port = 1;
  int path_mtu = 1024;  // bytes
  std::uint32_t dest_qpn = 0;
  std::uint32_t dlid = 0;
  bool global = false;
  GidBytes dgid{};
  int sgid_index = 0;
};

struct VerbsCompletion {
  std::uint64_t wr_id = 0;
  bool success = false;
  std::string status;  // ibv_wc_status_str
};

class VerbsApi {
 public:
  virtual ~VerbsApi() = default;
  // Errc::fabric with the reason when libibverbs finds no device list at all.
  virtual Result<std::vector<std::string>> deviceNames() = 0;
  virtual Result<VerbsHandle> openDevice(const std::string& name) = 0;
  virtual void closeDevice(VerbsHandle context) = 0;
  virtual Result<int> portCount(VerbsHandle context) = 0;
  virtual Result<VerbsPortAttr> queryPort(VerbsHandle context, int port) = 0;
  virtual Result<GidBytes> queryGid(VerbsHandle context, int port, int index) = 0;
  virtual Result<VerbsHandle> allocPd(VerbsHandle context) = 0;
  virtual void deallocPd(VerbsHandle pd) = 0;
  // Access: local write + remote write.
  virtual Result<VerbsMr> regMr(VerbsHandle pd, void* address, std::size_t length) = 0;
  virtual void deregMr(VerbsHandle mr) = 0;
  virtual Result<VerbsHandle> createCq(VerbsHandle context, int depth) = 0;
  virtual void destroyCq(VerbsHandle cq) = 0;
  virtual Result<VerbsQp> createRcQp(VerbsHandle pd, VerbsHandle cq, int maxSendWr) = 0;
  virtual void destroyQp(VerbsHandle qp) = 0;
  // pkey_index: the P_Key table entry the QP sends with (InfiniBand; 0 on RoCE).
  virtual Result<void> qpToInit(VerbsHandle qp, int port, int pkey_index) = 0;
  virtual Result<void> qpToRtr(VerbsHandle qp, const VerbsRtr& rtr) = 0;
  virtual Result<void> qpToRts(VerbsHandle qp) = 0;
  // A signaled RDMA write of [local, local+length) into remote/rkey.
  virtual Result<void> postRdmaWrite(VerbsHandle qp, std::uint64_t wrId, const void* local, std::size_t length,
                                     std::uint32_t lkey, std::uint64_t remote, std::uint32_t rkey) = 0;
  virtual Result<std::vector<VerbsCompletion>> pollCq(VerbsHandle cq, int max) = 0;
};

std::unique_ptr<VerbsApi> makeIbverbsApi();

}  // namespace tlaunch

#pragma once
// What libibverbs sees (ibv_get_device_list / ibv_open_device / ibv_query_port) and how it
// compares with sysfs: a device sysfs lists but verbs cannot open is the classic container
// trap (no provider library, /dev/infiniband not mapped) that sends NCCL to TCP sockets.
#include <map>
#include <string>
#include <vector>

#include "binding/preflight/preflight_item.h"
#include "binding/rdma/verbs_api.h"
#include "tlaunch/fabric.h"

namespace tlaunch {

struct VerbsPortInfo {
  int number = 0;
  VerbsPortAttr attr;
  std::string error;  // ibv_query_port failure
};

struct VerbsDeviceInfo {
  std::string name;
  bool opened = false;
  std::string error;  // ibv_open_device / ibv_query_device failure
  std::vector<VerbsPortInfo> ports;
};

struct VerbsProbe {
  std::vector<VerbsDeviceInfo> devices;
  std::string no_device_reason;  // set when libibverbs lists nothing, e.g. "no RDMA device"
};

// Never fails: what could not be done is recorded in the result.
VerbsProbe probeVerbs(VerbsApi& api);

// "mlx5_0:1" -> active MTU in bytes, for the ports the probe could query.
std::map<std::string, int> portMtus(const VerbsProbe& probe);

// Items "verbs_devices" and "verbs_port": verbs against sysfs. On a capture root verbs sees
// this machine, not the capture: reported as skipped.
std::vector<PreflightItem> verbsProbeItems(const VerbsProbe& probe, const NodeFabric& fabric, const std::string& node,
                                           bool sysfsRootIsCapture, bool expectRdma);

}  // namespace tlaunch

#include "binding/rdma/verbs_probe.h"
#include "tlaunch/strings.h"

#include <cstdio>

namespace tlaunch {
namespace {

const char* stateName(int state) {
  static const char* names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  return state >= 0 && state <= 5 ? names[state] : "UNKNOWN";
}

const char* layerName(LinkLayer l) {
  return l == LinkLayer::infiniband ? "InfiniBand" : l == LinkLayer::ethernet ? "Ethernet" : "unknown";
}

}  // namespace

VerbsProbe probeVerbs(VerbsApi& api) {
  VerbsProbe probe;
  auto names = api.deviceNames();
  if (!names) {
    probe.no_device_reason = "no RDMA device (" + names.error().message + ")";
    return probe;
  }
  if (names->empty()) {
    probe.no_device_reason = "no RDMA device";
    return probe;
  }
  for (const auto& name : *names) {
    VerbsDeviceInfo info;
    info.name = name;
    auto context = api.openDevice(name);
    if (!context) {
      info.error = context.error().message;
      probe.devices.push_back(std::move(info));
      continue;
    }
    info.opened = true;
    auto ports = api.portCount(*context);
    if (!ports) info.error = ports.error().message;
    for (int p = 1; ports && p <= *ports; ++p) {
      VerbsPortInfo port;
      port.number = p;
      if (auto attr = api.queryPort(*context, p))
        port.attr = *attr;
      else
        port.error = attr.error().message;
      info.ports.push_back(std::move(port));
    }
    api.closeDevice(*context);
    probe.devices.push_back(std::move(info));
  }
  return probe;
}

std::map<std::string, int> portMtus(const VerbsProbe& probe) {
  std::map<std::string, int> out;
  for (const auto& d : probe.devices)
    for (const auto& p : d.ports)
      if (p.error.empty() && p.attr.active_mtu > 0) out[portName(d.name, p.number)] = p.attr.active_mtu;
  return out;
}

std::vector<PreflightItem> verbsProbeItems(const VerbsProbe& probe, const NodeFabric& fabric, const std::string& node,
                                           bool sysfsRootIsCapture, bool expectRdma) {
  using S = PreflightStatus;
  std::vector<PreflightItem> out;
  auto add = [&](std::string check, std::string device, S status, std::string found, std::string expected = {},
                 std::string fix = {}) {
    if (status == S::pass || status == S::skip) fix.clear();
    out.push_back(PreflightItem{std::move(check), node, std::move(device), status, std::move(found),
                                std::move(expected), std::move(fix)});
  };
  std::string seen;
  for (const auto& d : probe.devices) seen += (seen.empty() ? "" : ", ") + d.name;
  if (seen.empty()) seen = probe.no_device_reason.empty() ? "no RDMA device" : probe.no_device_reason;

  if (sysfsRootIsCapture) {
    add("verbs_devices", "", S::skip, "sysfs root " + fabric.sysfs_root + " is a capture; libibverbs on this host sees: " + seen);
    return out;
  }
  if (probe.devices.empty()) {
    if (!fabric.devices.empty()) {
      std::string listed;
      for (const auto& d : fabric.devices) listed += (listed.empty() ? "" : ", ") + d.name;
      add("verbs_devices", "", S::fail, seen, "libibverbs sees " + listed + " (listed in sysfs)",
          "install the provider (ibverbs-providers, /etc/libibverbs.d) and map /dev/infiniband into the container");
    } else {
      add("verbs_devices", "", expectRdma ? S::fail : S::skip, seen, "at least one RDMA device",
          "load the HCA driver (modprobe mlx5_ib ib_uverbs), or pass --net tcp to run over plain Ethernet");
    }
    return out;
  }
  add("verbs_devices", "", S::pass, seen);

  for (const auto& d : fabric.devices) {
    const VerbsDeviceInfo* v = nullptr;
    for (const auto& x : probe.devices)
      if (x.name == d.name) v = &x;
    if (!v) {
      add("verbs_devices", d.name, S::fail, "listed in sysfs, unknown to libibverbs", "libibverbs lists " + d.name,
          "install the provider library for this HCA (ibverbs-providers)");
      continue;
    }
    if (!v->opened) {
      add("verbs_devices", d.name, S::fail, v->error, "ibv_open_device succeeds",
          "check /dev/infiniband permissions, or map it into the container (--device=/dev/infiniband)");
      continue;
    }
    for (const auto& p : d.ports) {
      const std::string name = portName(d.name, p.number);
      const VerbsPortInfo* vp = nullptr;
      for (const auto& x : v->ports)
        if (x.number == p.number) vp = &x;
      if (!vp || !vp->error.empty()) {
        add("verbs_port", name, S::fail, vp ? vp->error : "port unknown to libibverbs", "ibv_query_port succeeds",
            "reload the HCA driver; the device and its sysfs entries disagree");
        continue;
      }
      const VerbsPortAttr& a = vp->attr;
      std::string found = std::string(stateName(a.state)) + ", " + layerName(a.link_layer) + ", LID " + hex32(a.lid) +
                          ", MTU " + std::to_string(a.active_mtu);
      std::string expected = p.state_name + ", " + layerName(p.link_layer) + (p.has_lid ? ", LID " + hex32(p.lid) : "");
      bool same = a.state == p.state && a.link_layer == p.link_layer &&
                  (!p.has_lid || p.link_layer != LinkLayer::infiniband || a.lid == p.lid);
      add("verbs_port", name, same ? S::pass : S::warn, found, expected + " (sysfs)",
          "sysfs and libibverbs disagree: the port changed state while probed, or sysfs is not this host's");
    }
  }
  for (const auto& v : probe.devices) {
    bool inSysfs = false;
    for (const auto& d : fabric.devices) inSysfs = inSysfs || d.name == v.name;
    if (!inSysfs)
      add("verbs_devices", v.name, S::warn, "known to libibverbs, absent from sysfs", "listed in sysfs",
          "sysfs under " + fabric.sysfs_root + " may not be this host's");
  }
  return out;
}

}  // namespace tlaunch

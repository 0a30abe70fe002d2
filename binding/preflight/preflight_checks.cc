#include "binding/preflight/preflight_checks.h"

#include <algorithm>
#include <cstdio>

#include "binding/fabric/nccl_if_list.h"
#include "binding/fabric/roce_gid.h"
#include "tlaunch/strings.h"

namespace tlaunch {
namespace {

using S = PreflightStatus;

class Items {
 public:
  Items(std::vector<PreflightItem>& out, std::string node) : out_(out), node_(std::move(node)) {}
  void add(std::string check, std::string device, S status, std::string found, std::string expected = {},
           std::string fix = {}) {
    out_.push_back(PreflightItem{std::move(check), node_, std::move(device), status, std::move(found),
                                 std::move(expected), status == S::pass || status == S::skip ? "" : std::move(fix)});
  }

 private:
  std::vector<PreflightItem>& out_;
  std::string node_;
};

bool isDataLinkLayer(const RdmaPort& p) {
  return p.link_layer == LinkLayer::infiniband || p.link_layer == LinkLayer::ethernet;
}

std::string stateText(const RdmaPort& p) {
  std::string s = p.state_name.empty() ? std::to_string(p.state) : p.state_name;
  return s + " (" + (p.phys_state_name.empty() ? std::to_string(p.phys_state) : p.phys_state_name) + ")";
}

std::string mib(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

std::string gbps(double rate) {
  char text[32];
  std::snprintf(text, sizeof text, "%g Gb/s", rate);
  return text;
}

// "" when the interface can carry the job's TCP traffic.
std::string netdevProblem(const NetInterface* iface, const std::string& name) {
  if (!iface || !iface->live) return name + " is absent on the live system";
  if (!iface->up) return name + " is down";
  if (!iface->running) return name + " is up but not running (no carrier)";
  if (iface->ipv4.empty()) return name + " has no IPv4 address";
  return "";
}

// The netdev of the port that can carry the job's TCP traffic, as the network choice scans
// them: on IB every IPoIB interface of the port (the parent ib0 and its pkey children such as
// ib0.8001, p.netdev first), on RoCE p.netdev. nullptr when none can.
const NetInterface* usableNetdev(const NodeFabric& fabric, const std::string& device, const RdmaPort& p) {
  if (const NetInterface* iface = fabric.findInterface(p.netdev); iface && netdevProblem(iface, p.netdev).empty())
    return iface;
  if (p.link_layer != LinkLayer::infiniband) return nullptr;
  for (const auto& iface : fabric.interfaces)
    if (iface.type == kArphrdInfiniband && iface.rdma_device == device && iface.rdma_port == p.number &&
        netdevProblem(&iface, iface.name).empty())
      return &iface;
  return nullptr;
}

std::string addressText(const NetInterface& iface) {
  std::string out = iface.name;
  for (const auto& a : iface.ipv4) out += " " + a.address + "/" + std::to_string(a.prefix);
  return out;
}

std::string portFix(const RdmaPort& p, const std::string& name) {
  if (p.link_layer == LinkLayer::ethernet)
    return "bring the link of " + (p.netdev.empty() ? std::string("its netdev") : p.netdev) +
           " up (ip link set IF up) and check the cable and switch port";
  if (p.phys_state == kPhysStateLinkUp)
    return "the link is up but no subnet manager has configured " + name + ": check opensm or the switch SM (sminfo)";
  return "no link on " + name + ": check the cable and the switch port (ibstat " + name.substr(0, name.find(':')) +
         ")";
}

void checkDevices(Items& items, const NodeFabric& fabric, const PreflightOptions& o) {
  if (fabric.devices.empty()) {
    if (o.expect_rdma)
      items.add("rdma_devices", "", S::fail, "no RDMA device", "at least one InfiniBand/RoCE HCA",
                "load the HCA driver (modprobe mlx5_ib / ib_uverbs), or pass --net tcp to run over plain Ethernet");
    else
      items.add("rdma_devices", "", S::skip, "no RDMA device");
    return;
  }
  std::string names;
  for (const auto& d : fabric.devices) names += (names.empty() ? "" : ", ") + d.name;
  items.add("rdma_devices", "", S::pass, names);
}

// Why an ACTIVE Ethernet port cannot carry RoCE (it has no RoCE v2 IPv4 GID).
std::string roceProblem(const NodeFabric& fabric, const RdmaPort& p) {
  if (p.netdev.empty()) return "no netdev";
  const NetInterface* iface = fabric.findInterface(p.netdev);
  if (iface && iface->live && iface->ipv4.empty()) return p.netdev + " has no IPv4 address";
  return "no RoCE v2 IPv4 GID";
}

void checkPorts(Items& items, const NodeFabric& fabric, const PreflightOptions& o) {
  bool anyActive = false, anyUsableNetdev = false, anyIb = false;
  std::vector<std::string> usable;  // data ports the network choice could take (isRdmaDataPort + address)
  for (const auto& d : fabric.devices)
    for (const auto& p : d.ports)
      if (isDataLinkLayer(p) && p.state == kPortStateActive) {
        anyActive = anyActive || isRdmaDataPort(p);  // an Ethernet port without a RoCE v2 GID carries nothing
        const bool addressed = usableNetdev(fabric, d.name, p) != nullptr;
        if (p.link_layer == LinkLayer::infiniband) {
          anyIb = true;
          anyUsableNetdev = anyUsableNetdev || addressed;
        }
        if (addressed && isRdmaDataPort(p)) usable.push_back(portName(d.name, p.number));
      }
  // An ACTIVE Ethernet port without a RoCE v2 IPv4 GID is no data port (network_choice.cc leaves
  // it out): ignored while another port carries the job, or when the job does not want RDMA.
  auto ignored = [&](const RdmaPort& p) {
    return p.link_layer == LinkLayer::ethernet && p.state == kPortStateActive && !isRdmaDataPort(p) &&
           (!usable.empty() || !o.expect_rdma);
  };
  double fastest = 0;
  for (const auto& d : fabric.devices)
    for (const auto& p : d.ports)
      if (isDataLinkLayer(p) && p.state == kPortStateActive && !ignored(p)) fastest = std::max(fastest, p.rate_gbps);

  for (const auto& d : fabric.devices) {
    for (const auto& p : d.ports) {
      const std::string name = portName(d.name, p.number);
      if (!isDataLinkLayer(p)) {
        items.add("port_state", name, S::skip, "link layer unknown");
        continue;
      }
      if (p.state != kPortStateActive) {
        S status = anyActive || !o.expect_rdma ? S::warn : S::fail;
        items.add("port_state", name, status, stateText(p), "ACTIVE (LinkUp)",
                  portFix(p, name) + (anyActive ? "; NCCL skips this port silently" : ""));
        continue;
      }
      if (p.phys_state != kPhysStateLinkUp)
        items.add("port_state", name, S::warn, stateText(p), "ACTIVE (LinkUp)", portFix(p, name));
      else
        items.add("port_state", name, S::pass, stateText(p), "ACTIVE (LinkUp)");
      if (ignored(p)) {
        items.add("roce_gid", name, S::skip,
                  "not usable for RoCE: " + roceProblem(fabric, p) + "; ignored" +
                      (usable.empty() ? " (the job does not use RDMA)" : ", the job uses " + joinStrings(usable, ",")),
                  "a RoCE v2 GID with an IPv4 address");
        continue;
      }

      if (p.link_layer == LinkLayer::infiniband) {
        bool assigned = p.has_lid && p.lid != 0 && p.lid != 0xffff;
        items.add("lid", name, assigned ? S::pass : S::fail, p.has_lid ? hex32(p.lid) : "unknown",
                  "a LID assigned by the subnet manager",
                  "no subnet manager has configured " + name + ": check opensm or the switch SM (sminfo)");
      }

      const double want = o.expect_rate_gbps > 0 ? o.expect_rate_gbps : fastest;
      const std::string wantText =
          o.expect_rate_gbps > 0 ? gbps(want) + " (--expect-rate)" : gbps(want) + " (the node's fastest port)";
      items.add("rate", name, p.rate_gbps == want ? S::pass : S::warn, p.rate.empty() ? "unknown" : p.rate, wantText,
                "a slow or degraded link: check the cable, transceiver and switch port speed");

      if (p.link_layer == LinkLayer::ethernet) {
        bool hasV2 = std::any_of(p.gids.begin(), p.gids.end(), isRoceV2Ipv4);
        if (hasV2) {
          int index = ncclRoceGidIndex(p);
          const GidEntry* g = gidAt(p, index);
          items.add("roce_gid", name, S::pass,
                    "index " + std::to_string(index) + " (RoCE v2, " + (g ? g->ipv4 : std::string()) + ")",
                    "a RoCE v2 GID with an IPv4 address");
        } else {
          int v1 = 0, linkLocal = 0;
          for (const auto& g : p.gids) {
            if (g.type == GidType::ib_roce_v1 && g.ipv4_mapped) ++v1;
            if (!g.ipv4_mapped) ++linkLocal;
          }
          items.add("roce_gid", name, S::fail,
                    "no RoCE v2 IPv4 GID (" + std::to_string(v1) + " IPv4 RoCE v1, " + std::to_string(linkLocal) +
                        " IPv6/link-local)",
                    "a RoCE v2 GID with an IPv4 address",
                    "give " + (p.netdev.empty() ? std::string("the port's netdev") : p.netdev) +
                        " an IPv4 address and enable RoCE v2; NCCL would otherwise use a link-local or v1 GID");
        }
      }

      const std::string device = p.netdev.empty() ? name : p.netdev;
      if (p.netdev.empty()) {
        bool ib = p.link_layer == LinkLayer::infiniband;
        items.add("netdev", name, ib && anyUsableNetdev ? S::warn : S::fail,
                  ib ? "no IPoIB interface" : "no netdev", ib ? "an IPoIB interface with an IPv4 address" : "a netdev",
                  ib ? "load ib_ipoib and configure IPoIB on " + name + " if it should carry the job's TCP traffic"
                     : "check the RoCE driver: the port has no Ethernet netdev");
        continue;
      }
      if (const NetInterface* usable = usableNetdev(fabric, d.name, p)) {
        items.add("netdev", usable->name, S::pass, addressText(*usable) + " up", "up, running, with an IPv4 address");
      } else {
        std::string problem = netdevProblem(fabric.findInterface(p.netdev), p.netdev);
        bool critical = p.link_layer == LinkLayer::ethernet || (anyIb && !anyUsableNetdev && o.expect_rdma);
        items.add("netdev", device, critical ? S::fail : S::warn, problem, "up, running, with an IPv4 address",
                  "ip link set " + p.netdev + " up and give it an address on the fabric subnet");
      }
    }
  }
}

void checkUverbs(Items& items, const NodeFabric& fabric, const PreflightOptions& o) {
  if (fabric.devices.empty()) return;
  if (o.sysfs_root_is_capture) {
    items.add("uverbs", "", S::skip, "sysfs root " + fabric.sysfs_root + " is a capture; /dev/infiniband not checked");
    return;
  }
  for (const auto& d : fabric.devices) {
    const UverbsNode* node = nullptr;
    for (const auto& u : o.host.uverbs)
      if (u.device == d.name) node = &u;
    if (!node) {
      items.add("uverbs", d.name, S::skip, "not checked");
    } else if (node->path.empty()) {
      items.add("uverbs", d.name, S::fail, "no uverbs device for " + d.name, "/dev/infiniband/uverbsN",
                "load ib_uverbs (modprobe ib_uverbs)");
    } else if (!node->accessible) {
      items.add("uverbs", d.name, S::fail, node->path + ": " + node->error, node->path + " readable and writable",
                "in a container pass --device=/dev/infiniband; otherwise check its permissions (rdma group)");
    } else {
      items.add("uverbs", d.name, S::pass, node->path);
    }
  }
}

void checkMemlock(Items& items, const NodeFabric& fabric, const PreflightOptions& o) {
  if (fabric.devices.empty()) return;
  const MemlockLimit& m = o.host.memlock;
  const std::string expected = "unlimited (at least " + mib(kMinMemlockBytes) + ")";
  if (!m.known) {
    items.add("memlock", "", S::warn, "unknown", expected, "check `ulimit -l` on the node");
  } else if (m.soft_unlimited) {
    items.add("memlock", "", S::pass, "unlimited", expected);
  } else if (m.soft_bytes >= kMinMemlockBytes) {
    items.add("memlock", "", S::pass, mib(m.soft_bytes), expected);
  } else {
    bool raisable = m.hard_unlimited || m.hard_bytes >= kMinMemlockBytes;
    items.add("memlock", "", S::fail, mib(m.soft_bytes) + (raisable ? "" : " (hard " + mib(m.hard_bytes) + ")"),
              expected,
              raisable ? "run `ulimit -l unlimited` before tlaunch (the hard limit allows it)"
                       : "set `* soft memlock unlimited` and `* hard memlock unlimited` in /etc/security/limits.conf; "
                         "under Slurm also PropagateResourceLimitsExcept=MEMLOCK and LimitMEMLOCK=infinity for slurmd");
  }
}

void checkGpus(Items& items, const NodeFabric& fabric, const PreflightOptions& o) {
  const std::string found = std::to_string(o.gpus_found) + " GPU" + (o.gpus_found == 1 ? "" : "s");
  if (o.gpus_required <= 0) {
    items.add("gpus", "", S::skip, found);
  } else if (!o.topology_error.empty()) {  // no GPU was looked for: not the driver's fault
    items.add("topology", "", S::fail, o.topology_error, "the node's GPUs",
              "check --topology-xml / HWLOC_XMLFILE on that node, or that hwloc works there (lstopo)");
    items.add("gpus", "", S::skip, "unknown (no topology)");
  } else {
    items.add("gpus", "", o.gpus_found >= o.gpus_required ? S::pass : S::fail, found,
              std::to_string(o.gpus_required) + " (-g " + std::to_string(o.gpus_required) + ")",
              o.gpus_found <= 0 ? std::string("run CPU ranks with -p N, or check the driver (nvidia-smi)")
                                : "ask for at most " + std::to_string(o.gpus_found) +
                                      " GPUs per node with -g, or check the driver (nvidia-smi)");
  }
  if (o.gpus_found <= 0 || fabric.devices.empty()) {
    items.add("gpudirect", "", S::skip, o.gpus_found <= 0 ? "no GPU" : "no RDMA device");
    return;
  }
  if (!o.host.gpudirect_modules.empty()) {
    std::string found2;
    for (const auto& m : o.host.gpudirect_modules) found2 += (found2.empty() ? "" : ", ") + m;
    items.add("gpudirect", "", S::pass, found2, "nvidia_peermem or nv_peer_mem loaded");
  } else {
    items.add("gpudirect", "", S::warn, "neither nvidia_peermem nor nv_peer_mem is loaded",
              "nvidia_peermem or nv_peer_mem loaded",
              "modprobe nvidia_peermem (NCCL >= 2.23 detects it); without it GPU data is staged through host memory "
              "unless dma-buf works");
  }
}

// The NVIDIA driver as NVML sees it: present only where the live machine has NVIDIA GPUs. A
// driver that does not answer fails a job that wants GPUs (-g): CUDA would fail in every rank.
void checkGpuDriver(Items& items, const PreflightOptions& o) {
  const GpuDriverFacts& d = o.gpu_driver;
  if (!d.consulted) return;
  const S unusable = o.gpus_required > 0 ? S::fail : S::warn;
  const std::string expected = "the NVIDIA driver answering for the GPUs (nvidia-smi)";
  if (d.nvml.state == NvmlReport::State::not_loaded) {
    items.add("gpu_driver", "", unusable, std::to_string(d.nvidia_gpus) + " NVIDIA GPU(s) on PCI, but " + d.problem(),
              expected, "install or load the NVIDIA driver on this node: nvidia-smi must list its GPUs");
    return;
  }
  if (!d.answering()) {
    items.add("gpu_driver", "", unusable, d.problem(), expected,
              "run nvidia-smi on this node: after a driver upgrade the node needs a reboot (or the nvidia modules "
              "reloaded); else check dmesg for NVRM/Xid messages");
    return;
  }
  const int answering = d.nvidia_gpus - static_cast<int>(d.unlisted.size());
  std::string found = std::to_string(answering) + " GPU(s) answer " + d.driverText();
  if (!d.unlisted.empty())
    found += "; " + std::to_string(d.unlisted.size()) + " more on PCI that NVML does not list, left out: " +
             joinStrings(d.unlisted);
  if (d.nvml.device_errors.empty()) {
    items.add("gpu_driver", "", S::pass, found, expected);
    return;
  }
  items.add("gpu_driver", "", S::warn, found + "; " + joinStrings(d.nvml.device_errors, "; "), expected,
            "the GPUs NVML cannot query are left out: check nvidia-smi and dmesg (Xid) on this node, reset the GPU "
            "(nvidia-smi -r) or drain the node");
}

void checkNcclEnv(Items& items, const NodeFabric& fabric, const PreflightOptions& o) {
  for (const auto& w : ncclTrapWarnings(o.environment, o.nccl_conf, o.launcher_sets_nccl_env && o.expect_rdma))
    items.add("nccl_env", "", S::warn, w.variable + "=" + w.value + " (" + w.source + ")",
              w.variable == "NCCL_NET" ? "NCCL_NET unset or IB" : "NCCL_IB_DISABLE unset or 0", w.message);

  auto ifname = ncclEffectiveSetting("NCCL_SOCKET_IFNAME", o.environment, o.nccl_conf);
  if (!ifname) return;
  // From NCCL's own config file (not what the ranks are given: -x, the environment, .deepspeed_env).
  bool fromFile = !o.environment.contains("NCCL_SOCKET_IFNAME");
  const std::string found = "NCCL_SOCKET_IFNAME=" + ifname->value + " (" + ifname->source + ")";
  if (fromFile && o.launcher_sets_nccl_env) {
    items.add("nccl_socket_ifname", "", S::skip, found + "; tlaunch sets NCCL_SOCKET_IFNAME, which overrides it");
    return;
  }
  if (ifname->value.size() <= 1) {
    items.add("nccl_socket_ifname", "", S::skip, found + "; NCCL ignores a value this short");
    return;
  }
  NcclIfList list = parseNcclIfList(ifname->value);
  std::string selected;
  for (const auto& i : fabric.interfaces)
    if (i.live && i.running && ncclIfListSelects(list, i.name)) selected += (selected.empty() ? "" : ",") + i.name;
  if (selected.empty())
    items.add("nccl_socket_ifname", "", S::fail, found + " matches no running interface",
              "a running interface on " + o.node,
              "unset NCCL_SOCKET_IFNAME (tlaunch sets it to the fabric interface) or name an interface of this node");
  else
    items.add("nccl_socket_ifname", "", S::pass, found + " selects " + selected);
}

}  // namespace

const char* preflightStatusName(PreflightStatus status) {
  switch (status) {
    case S::pass: return "pass";
    case S::warn: return "warn";
    case S::fail: return "fail";
    case S::skip: return "skip";
  }
  return "fail";
}

bool preflightPassed(const std::vector<PreflightItem>& items) {
  return std::none_of(items.begin(), items.end(), [](const PreflightItem& i) { return i.status == S::fail; });
}

std::vector<PreflightItem> localPreflightChecks(const NodeFabric& fabric, const PreflightOptions& options) {
  std::vector<PreflightItem> out;
  Items items(out, options.node);
  checkDevices(items, fabric, options);
  checkPorts(items, fabric, options);
  checkUverbs(items, fabric, options);
  checkMemlock(items, fabric, options);
  checkGpus(items, fabric, options);
  checkGpuDriver(items, options);
  checkNcclEnv(items, fabric, options);
  if (options.level == PreflightLevel::full && options.sysfs_root_is_capture && !fabric.devices.empty())
    items.add("verbs_selftest", "", S::skip,
              "sysfs root " + fabric.sysfs_root + " is a capture; the verbs self-test needs the live HCA");
  return out;
}

}  // namespace tlaunch

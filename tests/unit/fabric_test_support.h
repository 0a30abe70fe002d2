#pragma once
// Test helpers for the fabric area: temporary directories, the real sysfs captures extracted
// at test time, and small sysfs trees written by the test (never committed).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "binding/fabric/fabric_discovery.h"
#include "temp_dir.h"
#include "tlaunch/fabric.h"

namespace tlaunch::testing {

namespace fs = std::filesystem;

inline std::string fixturesDir() { return TLAUNCH_FIXTURES_DIR; }

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline const char* kMlx4Tarball = "sysfs/hwloc-linux_32em64t-2n8c+1mic_mlx4_0-ib0.sysfs.tar.bz2";
inline const char* kQibTarball = "sysfs/hwloc-linux_40intel64-2g2n4c_qib0-ib0.sysfs.tar.bz2";

// Extracts a capture into `into` and returns its root (the directory holding sys/), or nullopt
// when the fixture is missing (the caller fails the test, naming it).
inline std::optional<fs::path> extractCapture(const char* tarball, const fs::path& into) {
  fs::path file = fs::path(fixturesDir()) / tarball;
  if (!fs::exists(file)) return std::nullopt;
  std::string cmd = "tar -xjf '" + file.string() + "' -C '" + into.string() + "'";
  if (std::system(cmd.c_str()) != 0) return std::nullopt;
  for (const auto& entry : fs::directory_iterator(into))
    if (fs::is_directory(entry.path() / "sys")) return entry.path();
  return std::nullopt;
}

inline void writeFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

inline std::string readFile(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The kernel's "%pI6" form of ::ffff:a.b.c.d.
inline std::string ipv4Gid(int a, int b, int c, int d) {
  char text[64];
  std::snprintf(text, sizeof text, "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a, b, c, d);
  return text;
}

// A small /sys written by the test: HCAs with ports and GIDs, netdevs with device links.
class SysfsTree {
 public:
  explicit SysfsTree(fs::path root) : root_(std::move(root)) {}
  const fs::path& root() const { return root_; }

  fs::path pciDir(const std::string& bdf) const { return root_ / "sys/devices/pci0000:00" / bdf; }

  fs::path addDevice(const std::string& name, const std::string& bdf) {
    fs::path dir = root_ / "sys/class/infiniband" / name;
    fs::create_directories(dir);
    fs::create_directories(pciDir(bdf));
    writeFile(pciDir(bdf) / "numa_node", "0\n");
    fs::create_directory_symlink(pciDir(bdf), dir / "device");
    writeFile(dir / "node_type", "1: CA\n");
    writeFile(dir / "fw_ver", "20.31.1014\n");
    return dir;
  }

  fs::path addPort(const std::string& device, int port, const std::string& linkLayer,
                   const std::string& state = "4: ACTIVE", const std::string& phys = "5: LinkUp",
                   const std::string& rate = "200 Gb/sec (4X HDR)", const std::string& lid = "0x12") {
    fs::path dir = portDir(device, port);
    writeFile(dir / "state", state + "\n");
    writeFile(dir / "phys_state", phys + "\n");
    writeFile(dir / "link_layer", linkLayer + "\n");
    writeFile(dir / "rate", rate + "\n");
    writeFile(dir / "lid", lid + "\n");
    writeFile(dir / "gids/0", "0000:0000:0000:0000:0000:0000:0000:0000\n");
    return dir;
  }

  // type "" = no types/<i> file; "unreadable" = a file whose read fails, as the kernel's EINVAL.
  void addGid(const std::string& device, int port, int index, const std::string& gid,
              const std::string& type = "", const std::string& ndev = "") {
    fs::path dir = portDir(device, port);
    writeFile(dir / "gids" / std::to_string(index), gid + "\n");
    if (type == "unreadable") {
      fs::create_directories(dir / "gid_attrs/types" / std::to_string(index));  // read() fails: EISDIR
    } else if (!type.empty()) {
      writeFile(dir / "gid_attrs/types" / std::to_string(index), type + "\n");
    }
    if (!ndev.empty()) writeFile(dir / "gid_attrs/ndevs" / std::to_string(index), ndev + "\n");
  }

  fs::path addNetdev(const std::string& name, int type, const std::string& bdf, int devPort,
                     const std::string& address, int mtu = 2044) {
    fs::path dir = root_ / "sys/class/net" / name;
    writeFile(dir / "type", std::to_string(type) + "\n");
    writeFile(dir / "mtu", std::to_string(mtu) + "\n");
    writeFile(dir / "address", address + "\n");
    if (devPort >= 0) writeFile(dir / "dev_port", std::to_string(devPort) + "\n");
    if (!bdf.empty()) {
      fs::create_directories(pciDir(bdf));
      fs::create_directory_symlink(pciDir(bdf), dir / "device");
    }
    if (type == kArphrdInfiniband) writeFile(dir / "mode", "datagram\n");
    return dir;
  }

  fs::path portDir(const std::string& device, int port) const {
    return root_ / "sys/class/infiniband" / device / "ports" / std::to_string(port);
  }

 private:
  fs::path root_;
};

// IPoIB hardware address: 4 bytes of flags/QPN, then the port's GID 0 ("fe80:...:bfa1").
inline std::string ipoibAddress(const std::string& gid) {
  std::string hex;
  for (char c : gid)
    if (c != ':') hex += c;
  std::string out = "80:00:00:48";
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) out += ":" + hex.substr(i, 2);
  return out;
}

inline LiveInterface liveIf(const std::string& name, const std::string& address = "", int prefix = 16,
                            bool up = true, bool running = true, int type = kArphrdEther) {
  LiveInterface l;
  l.name = name;
  l.type = type;
  l.up = up;
  l.running = running;
  l.loopback = name == "lo";
  l.mtu = 1500;
  if (!address.empty()) l.ipv4.push_back(Ipv4Address{address, prefix});
  return l;
}

}  // namespace tlaunch::testing

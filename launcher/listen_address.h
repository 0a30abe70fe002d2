#pragma once
// The frontend address that remote daemons connect back to.
#include <string>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

// The local IPv4 address the kernel would use to reach `host` (a UDP connect sends nothing).
Result<std::string> sourceAddressToward(const std::string& host);

// This host's own addresses on the fabric (netdevs of ACTIVE IB/RoCE ports, up, with IPv4), as
// discovery under `sysfs_root` sees them. When the frontend sits on the fabric, daemons connect
// to it there, so that not even the control plane uses the management network.
std::vector<std::string> ownFabricAddresses(const std::string& sysfs_root);

// Every up, non-loopback IPv4 address of this host, comma-separated ("" if none).
std::string localAddressList();

}  // namespace tlaunch

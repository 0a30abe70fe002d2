#pragma once
// The frontend address that remote daemons connect back to.
#include <string>

#include "tlaunch/result.h"

namespace tlaunch {

// The local IPv4 address the kernel would use to reach `host` (a UDP connect sends nothing).
Result<std::string> sourceAddressToward(const std::string& host);

// Every up, non-loopback IPv4 address of this host, comma-separated ("" if none).
std::string localAddressList();

}  // namespace tlaunch

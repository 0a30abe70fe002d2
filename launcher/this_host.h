#pragma once
// Is a node name this very host? Lets the frontend start its own node's daemon by fork
// instead of ssh, as mpirun does. Looks only at local facts (hostname, interface
// addresses) and the resolver; it never probes or connects to the named host.
#include <string>
#include <vector>

namespace tlaunch {

struct HostIdentity {
  std::string hostname;                // gethostname(), as set
  std::vector<std::string> addresses;  // numeric addresses of local interfaces (getifaddrs)
};

// This machine's identity (edge: gethostname + getifaddrs).
HostIdentity currentHostIdentity();

// Pure: `name` is this host if it is "localhost", equals the hostname or its short form
// (case-insensitive; "node1" matches hostname "node1.cluster" and the other way round),
// or if any of `resolved_addresses` (name's addresses, numeric) is a loopback address or
// one of the local interface addresses.
bool matchesHost(const std::string& name, const HostIdentity& self, const std::vector<std::string>& resolved_addresses);

// Edge: matchesHost with the current identity and the name resolved by getaddrinfo
// (literals are not looked up; a name that does not resolve is not this host).
bool isThisHost(const std::string& name);

}  // namespace tlaunch

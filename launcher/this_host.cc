#include "launcher/this_host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

std::string lower(const std::string& s) { return asciiLower(s); }

std::string shortName(const std::string& name) { return name.substr(0, name.find('.')); }

std::string numericAddress(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  } else if (sa->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

bool isLoopback(const std::string& address) {
  in_addr v4{};
  if (::inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, address.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

bool isNumericAddress(const std::string& name) {
  in_addr v4{};
  in6_addr v6{};
  return ::inet_pton(AF_INET, name.c_str(), &v4) == 1 || ::inet_pton(AF_INET6, name.c_str(), &v6) == 1;
}

// Canonical text of a numeric address, so "::0001" and "::1" compare equal.
std::string canonical(const std::string& address) {
  in_addr v4{};
  in6_addr v6{};
  char buf[INET6_ADDRSTRLEN] = {};
  if (::inet_pton(AF_INET, address.c_str(), &v4) == 1) return ::inet_ntop(AF_INET, &v4, buf, sizeof buf);
  if (::inet_pton(AF_INET6, address.c_str(), &v6) == 1) return ::inet_ntop(AF_INET6, &v6, buf, sizeof buf);
  return address;
}

}  // namespace

HostIdentity currentHostIdentity() {
  HostIdentity self;
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) == 0) self.hostname = buf;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* ifa = list; ifa; ifa = ifa->ifa_next) {
      if (!ifa->ifa_addr) continue;
      std::string a = numericAddress(ifa->ifa_addr);
      if (!a.empty()) self.addresses.push_back(std::move(a));
    }
    ::freeifaddrs(list);
  }
  return self;
}

bool matchesHost(const std::string& name, const HostIdentity& self, const std::vector<std::string>& resolved_addresses) {
  const std::string n = lower(name);
  if (n.empty()) return false;
  if (n == "localhost" || n == "localhost.localdomain") return true;
  if (!self.hostname.empty() && !isNumericAddress(n)) {
    const std::string h = lower(self.hostname);
    if (n == h || shortName(n) == h || n == shortName(h)) return true;
  }
  for (const auto& a : resolved_addresses) {
    if (isLoopback(a)) return true;
    const std::string ca = canonical(a);
    for (const auto& local : self.addresses) {
      if (canonical(local) == ca) return true;
    }
  }
  return false;
}

bool isThisHost(const std::string& name) {
  const HostIdentity self = currentHostIdentity();
  std::vector<std::string> resolved;
  if (isNumericAddress(name)) {
    resolved.push_back(name);
  } else if (!matchesHost(name, self, {})) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* result = nullptr;
    if (::getaddrinfo(name.c_str(), nullptr, &hints, &result) == 0) {
      for (addrinfo* ai = result; ai; ai = ai->ai_next) resolved.push_back(numericAddress(ai->ai_addr));
      ::freeaddrinfo(result);
    }
  }
  return matchesHost(name, self, resolved);
}

}  // namespace tlaunch

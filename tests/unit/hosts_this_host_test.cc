// Is a node name this host? Pure matching, and the real machine.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <climits>

#include "launcher/this_host.h"

using namespace tlaunch;

TEST_CASE("hosts: matchesHost: names, short names, addresses", "[hosts][this_host]") {
  const HostIdentity self{"node1.cluster.example", {"127.0.0.1", "10.1.0.5", "fe80::1"}};
  CHECK(matchesHost("localhost", self, {}));
  CHECK(matchesHost("node1.cluster.example", self, {}));
  CHECK(matchesHost("NODE1", self, {}));
  CHECK_FALSE(matchesHost("node1.other.example", self, {}));
  CHECK_FALSE(matchesHost("node2", self, {}));
  CHECK(matchesHost("ib-node1", self, {"10.1.0.5"}));
  CHECK(matchesHost("alias", self, {"127.0.1.1"}));  // Debian's own-hostname line in /etc/hosts
  CHECK(matchesHost("v6", self, {"fe80:0:0::1"}));
  CHECK_FALSE(matchesHost("node2", self, {"10.1.0.6"}));
  CHECK_FALSE(matchesHost("", self, {}));

  const HostIdentity short_self{"node1", {}};
  CHECK(matchesHost("node1.cluster.example", short_self, {}));
}

TEST_CASE("hosts: isThisHost on this machine", "[hosts][this_host]") {
  char name[HOST_NAME_MAX + 1] = {};
  REQUIRE(::gethostname(name, sizeof name - 1) == 0);
  CHECK(isThisHost(name));
  CHECK(isThisHost("localhost"));
  CHECK(isThisHost("127.0.0.1"));
  CHECK(isThisHost("::1"));
  CHECK_FALSE(isThisHost("192.0.2.1"));            // TEST-NET-1 literal: no lookup
  CHECK_FALSE(isThisHost("nonexistent.invalid"));  // resolver says no
}

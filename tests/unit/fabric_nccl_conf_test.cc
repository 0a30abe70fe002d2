// NCCL's conf files and the settings that silently push NCCL onto TCP sockets.
#include <catch2/catch.hpp>

#include "binding/fabric/nccl_conf.h"
#include "fabric_test_support.h"

using namespace tlaunch;
using namespace tlaunch::testing;


TEST_CASE("conf lines are read as NCCL reads them") {
  auto entries = parseNcclConf("# NCCL_IB_DISABLE=1\nNCCL_DEBUG=INFO\nno equals sign\n  NCCL_NET = Socket\nNCCL_IB_HCA==mlx5_0:1", "/etc/nccl.conf");
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].name == "NCCL_DEBUG");
  CHECK(entries[0].value == "INFO");
  CHECK(entries[0].where() == "/etc/nccl.conf:2");
  CHECK(entries[1].name == "  NCCL_NET ");  // NCCL does not trim: this sets no NCCL_NET
  CHECK(entries[2].name == "NCCL_IB_HCA");
  CHECK(entries[2].value == "=mlx5_0:1");  // only the first '=' separates
  CHECK(entries[2].line == 5);
}

TEST_CASE("files are read in NCCL's order: NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf") {
  TempDir tmp;
  writeFile(tmp.path() / "home/.nccl.conf", "NCCL_NET=Socket\n");
  writeFile(tmp.path() / "etc/nccl.conf", "NCCL_IB_DISABLE=1\nNCCL_NET=IB\n");
  writeFile(tmp.path() / "custom.conf", "NCCL_IB_DISABLE=0\n");
  const std::string home = (tmp.path() / "home").string();
  const std::string root = tmp.path().string();

  auto conf = readNcclConfFiles("", home, root);
  REQUIRE(conf.size() == 3);
  CHECK(conf[0].where() == home + "/.nccl.conf:1");
  CHECK(conf[1].where() == root + "/etc/nccl.conf:1");
  auto net = ncclEffectiveSetting("NCCL_NET", {}, conf);
  REQUIRE(net);
  CHECK(net->value == "Socket");  // the home file is read first and NCCL never overwrites
  CHECK(net->source == home + "/.nccl.conf:1");
  auto fromEnv = ncclEffectiveSetting("NCCL_NET", {{"NCCL_NET", {"IB", "environment"}}}, conf);
  CHECK(fromEnv->source == "environment");

  auto custom = readNcclConfFiles((tmp.path() / "custom.conf").string(), home, root);
  CHECK(ncclEffectiveSetting("NCCL_IB_DISABLE", {}, custom)->value == "0");
  CHECK(ncclEffectiveSetting("NCCL_NET", {}, custom)->value == "IB");  // ~/.nccl.conf skipped

  CHECK(readNcclConfFiles("", (tmp.path() / "nohome").string(), (tmp.path() / "noroot").string()).empty());
}

TEST_CASE("NCCL_IB_DISABLE=1 and NCCL_NET=Socket are reported with where they came from") {
  std::vector<NcclConfEntry> conf = parseNcclConf("NCCL_DEBUG=WARN\nNCCL_IB_DISABLE=1\n", "/etc/nccl.conf");

  SECTION("from /etc/nccl.conf, overridden by tlaunch's NCCL_IB_DISABLE=0") {
    auto w = ncclTrapWarnings({}, conf, true);
    REQUIRE(w.size() == 1);
    CHECK(w[0].variable == "NCCL_IB_DISABLE");
    CHECK(w[0].source == "/etc/nccl.conf:2");
    CHECK(w[0].message ==
          "NCCL_IB_DISABLE=1 in /etc/nccl.conf:2 disables InfiniBand/RoCE: NCCL falls back to slow TCP sockets; "
          "overridden for this job (tlaunch sets it), but other launches still get it: remove the line");
  }
  SECTION("from /etc/nccl.conf when nothing overrides it") {
    auto w = ncclTrapWarnings({}, conf, false);
    REQUIRE(w.size() == 1);
    CHECK(contains(w[0].message, "it applies to this job: remove the line"));
  }
  SECTION("inherited from the environment and given with -x") {
    UserEnv env{{"NCCL_NET", {"Socket", "environment"}}, {"NCCL_IB_DISABLE", {"1", "-x"}}};
    auto w = ncclTrapWarnings(env, {}, true);
    REQUIRE(w.size() == 2);
    CHECK(w[0].message == "NCCL_IB_DISABLE=1 (given with -x) disables InfiniBand/RoCE: NCCL falls back to slow "
                          "TCP sockets; unset it unless that is intended");
    CHECK(w[1].variable == "NCCL_NET");
    CHECK(w[1].source == "environment");
    CHECK(contains(w[1].message, "NCCL_NET=Socket (inherited from the environment) forces NCCL onto TCP sockets"));
  }
  SECTION("a conf entry shadowed by an earlier file") {
    auto both = parseNcclConf("NCCL_IB_DISABLE=0\n", "/root/.nccl.conf");
    both.insert(both.end(), conf.begin(), conf.end());
    auto w = ncclTrapWarnings({}, both, false);
    REQUIRE(w.size() == 1);
    CHECK(contains(w[0].message, "overridden for this job (/root/.nccl.conf:1 sets it first)"));
  }
  SECTION("harmless values raise nothing") {
    UserEnv env{{"NCCL_IB_DISABLE", {"0", "environment"}}, {"NCCL_NET", {"IB", "-x"}}};
    CHECK(ncclTrapWarnings(env, parseNcclConf("NCCL_NET=IBext_v8\n", "/etc/nccl.conf"), true).empty());
  }
}

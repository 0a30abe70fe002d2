// The binding manifest: table, JSON shape and fingerprint.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "binding/topology/binding_manifest.h"

using namespace tlaunch;

namespace {

std::vector<ManifestRow> twoNodes(const std::string& a, const std::string& b) {
  RankBinding gpu0{0, "0000:4e:00.0", "GPU-1111", "mlx5_0:1", "PIX", 3, {42, 43, 154, 155}, {3}};
  RankBinding gpu1{1, "0000:5f:00.0", std::nullopt, "mlx5_2:1", "SYS", 1, {14, 15, 126, 127}, {1}};
  RankBinding cpu_only{0, std::nullopt, std::nullopt, std::nullopt, "", -1, {}, {}};
  return {{0, a, gpu0}, {1, a, gpu1}, {2, b, cpu_only}};
}

}  // namespace

TEST_CASE("manifest JSON has exactly the documented keys, null for what is absent", "[topology][manifest]") {
  auto j = manifestToJson(twoNodes("n1", "n2"));
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 3);
  for (const auto& row : j) {
    std::set<std::string> keys;
    for (const auto& [k, v] : row.items()) keys.insert(k);
    CHECK(keys == std::set<std::string>{"rank", "node", "local_rank", "gpu_busid", "gpu_uuid", "hca", "path", "numa",
                                        "cpuset", "mem_nodes"});
  }
  CHECK(j[0]["cpuset"] == "42-43,154-155");
  CHECK(j[0]["gpu_uuid"] == "GPU-1111");
  CHECK(j[0]["mem_nodes"] == nlohmann::json::array({3}));
  CHECK(j[1]["gpu_uuid"].is_null());
  CHECK(j[2]["node"] == "n2");
  for (const char* k : {"gpu_busid", "gpu_uuid", "hca", "path", "numa"}) CHECK(j[2][k].is_null());
  CHECK(j[2]["cpuset"] == "");
}

TEST_CASE("manifest table aligns columns and shows - for what is absent", "[topology][manifest]") {
  const std::string expected =
      "rank  node  local_rank  gpu                      hca       path  numa  cpuset\n"
      "0     n1    0           0000:4e:00.0 (GPU-1111)  mlx5_0:1  PIX   3     42-43,154-155\n"
      "1     n1    1           0000:5f:00.0             mlx5_2:1  SYS   1     14-15,126-127\n"
      "2     n2    0           -                        -         -     -     -\n";
  CHECK(renderManifestTable(twoNodes("n1", "n2")) == expected);
}

TEST_CASE("the fingerprint ignores host names, UUIDs and row order, and sees every binding change",
          "[topology][manifest]") {
  auto base = twoNodes("n1", "n2");
  const std::string fp = manifestFingerprint(base);
  CHECK(std::regex_match(fp, std::regex("^[0-9a-f]{16}$")));
  CHECK(manifestFingerprint(base) == fp);
  CHECK(manifestFingerprint(twoNodes("gpu-a17", "gpu-b03")) == fp);
  auto other_uuid = base;
  other_uuid[0].binding.gpu_uuid = "GPU-2222";
  CHECK(manifestFingerprint(other_uuid) == fp);
  auto reversed = std::vector<ManifestRow>(base.rbegin(), base.rend());
  CHECK(manifestFingerprint(reversed) == fp);

  auto changed = base;
  changed[1].binding.cpus = {14, 126};
  CHECK(manifestFingerprint(changed) != fp);
  changed = base;
  changed[0].binding.hca = "mlx5_1:1";
  CHECK(manifestFingerprint(changed) != fp);
  changed = base;
  changed[2].rank = 3;
  CHECK(manifestFingerprint(changed) != fp);
  changed = base;
  changed[0].binding.gpu_busid = "0000:4f:00.0";
  CHECK(manifestFingerprint(changed) != fp);
}

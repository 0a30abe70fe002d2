// The binding manifest: table, JSON shape and fingerprint.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <cstdio>
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
  CHECK(j[2]["cpuset"].get<std::string>().empty());
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
  // The same manifest has the same fingerprint across tlaunch versions: users compare it between
  // runs (the banner, --summary-json), so its canonical text must not drift.
  CHECK(fp == "cbe0e20b8ebc4180");
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

TEST_CASE("the fingerprint is the digest of the rows' canonical JSON, odd characters included", "[topology][manifest]") {
  auto rows = twoNodes("n1", "n2");
  rows[0].binding.path = "P\"I\\X\n\x01\t";  // what no real path is, escaped as JSON escapes it
  rows[1].binding.hca = "mlx5_\u00e9:1";
  rows[1].binding.mem_nodes = {0, 1};
  nlohmann::json canonical = nlohmann::json::array();
  for (const auto& r : rows) {
    const RankBinding& b = r.binding;
    auto opt = [](const std::optional<std::string>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    canonical.push_back({{"rank", r.rank},
                         {"local_rank", b.local_rank},
                         {"gpu_busid", opt(b.gpu_busid)},
                         {"hca", opt(b.hca)},
                         {"path", b.path.empty() ? nlohmann::json(nullptr) : nlohmann::json(b.path)},
                         {"numa", b.numa >= 0 ? nlohmann::json(b.numa) : nlohmann::json(nullptr)},
                         {"cpuset", manifestToJson({r})[0]["cpuset"]},
                         {"mem_nodes", b.mem_nodes}});
  }
  const std::string text = canonical.dump();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  char hex[17] = {};
  for (size_t i = 0; i < 8; ++i) std::snprintf(hex + (2 * i), 3, "%02x", digest[i]);
  CHECK(manifestFingerprint(rows) == hex);
}

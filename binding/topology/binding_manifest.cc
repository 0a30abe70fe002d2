#include "binding/topology/binding_manifest.h"

#include <openssl/evp.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "binding/topology/cpu_list.h"
#include "tlaunch/strings.h"

namespace tlaunch {
namespace {

using nlohmann::json;

json rowToJson(const ManifestRow& row, bool with_identities) {
  const RankBinding& b = row.binding;
  auto opt = [](const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); };
  json j = {{"rank", row.rank},
            {"local_rank", b.local_rank},
            {"gpu_busid", opt(b.gpu_busid)},
            {"hca", opt(b.hca)},
            {"path", b.path.empty() ? json(nullptr) : json(b.path)},
            {"numa", b.numa >= 0 ? json(b.numa) : json(nullptr)},
            {"cpuset", formatCpuList(b.cpus)},
            {"mem_nodes", b.mem_nodes}};
  if (with_identities) {
    j["node"] = row.node;
    j["gpu_uuid"] = opt(b.gpu_uuid);
  }
  return j;
}

}  // namespace

std::string alignColumns(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.resize(c + 1, 0);
      width[c] = std::max(width[c], r[c].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line = indent;
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line.append(width[c] - r[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

std::string renderManifestTable(const std::vector<ManifestRow>& rows) {
  std::vector<std::vector<std::string>> cells{{"rank", "node", "local_rank", "gpu", "hca", "path", "numa", "cpuset"}};
  auto dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  for (const auto& row : rows) {
    const RankBinding& b = row.binding;
    std::string gpu = b.gpu_busid ? *b.gpu_busid + (b.gpu_uuid ? " (" + *b.gpu_uuid + ")" : "") : "-";
    cells.push_back({std::to_string(row.rank), row.node, std::to_string(b.local_rank), gpu, b.hca.value_or("-"),
                     dash(b.path), b.numa >= 0 ? std::to_string(b.numa) : "-", dash(formatCpuList(b.cpus))});
  }
  return alignColumns(cells);
}

json manifestToJson(const std::vector<ManifestRow>& rows) {
  json out = json::array();
  for (const auto& row : rows) out.push_back(rowToJson(row, true));
  return out;
}

std::string manifestFingerprint(const std::vector<ManifestRow>& rows) {
  std::vector<const ManifestRow*> sorted;
  for (const auto& r : rows) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  json canonical = json::array();
  for (const auto* r : sorted) canonical.push_back(rowToJson(*r, false));
  const std::string text = canonical.dump();  // keys sorted: byte-identical for equal manifests
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  return hexBytes(std::string_view(reinterpret_cast<const char*>(digest), std::min(len, 8u)));
}

}  // namespace tlaunch

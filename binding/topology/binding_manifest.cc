#include "binding/topology/binding_manifest.h"

#include <openssl/evp.h>

#include <algorithm>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>

#include "binding/topology/cpu_list.h"
#include "tlaunch/strings.h"

namespace tlaunch {
namespace {

using nlohmann::json;

json rowToJson(const ManifestRow& row) {
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
  j["node"] = row.node;
  j["gpu_uuid"] = opt(b.gpu_uuid);
  return j;
}

// JSON's string form of `s`: nlohmann's own escaping, so the text is what dump() wrote before.
void appendJsonString(const std::string& s, std::string& out) { out += json(s).dump(); }

void appendOptionalString(const std::optional<std::string>& v, std::string& out) {
  if (v) appendJsonString(*v, out);
  else out += "null";
}

// A row's canonical JSON text: rowToJson's keys less "node" and "gpu_uuid" (host names and
// UUIDs differ between identical machines), in nlohmann's sorted key order, no spaces.
void appendCanonicalRow(const ManifestRow& row, std::string& out) {
  const RankBinding& b = row.binding;
  out += "{\"cpuset\":";
  appendJsonString(formatCpuList(b.cpus), out);
  out += ",\"gpu_busid\":";
  appendOptionalString(b.gpu_busid, out);
  out += ",\"hca\":";
  appendOptionalString(b.hca, out);
  out += ",\"local_rank\":";
  out += std::to_string(b.local_rank);
  out += ",\"mem_nodes\":[";
  for (size_t i = 0; i < b.mem_nodes.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(b.mem_nodes[i]);
  }
  out += "],\"numa\":";
  out += b.numa >= 0 ? std::to_string(b.numa) : "null";
  out += ",\"path\":";
  if (b.path.empty()) out += "null";
  else appendJsonString(b.path, out);
  out += ",\"rank\":";
  out += std::to_string(row.rank);
  out += '}';
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
                     dash(b.path),
                     // a rank over several NUMA nodes (fewer CPU ranks than NUMA nodes): their list
                     b.numa >= 0 ? std::to_string(b.numa) : dash(formatCpuList(b.mem_nodes)), dash(formatCpuList(b.cpus))});
  }
  return alignColumns(cells);
}

json manifestToJson(const std::vector<ManifestRow>& rows) {
  json out = json::array();
  for (const auto& row : rows) out.push_back(rowToJson(row));
  return out;
}

std::string manifestFingerprint(const std::vector<ManifestRow>& rows) {
  std::vector<const ManifestRow*> sorted;
  sorted.reserve(rows.size());
  for (const auto& r : rows) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  // The canonical rows are written straight into the digest in pieces, not built as a JSON tree
  // of 32,000 rows first (a tenth of the frontend's time at 4,000 nodes).
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  // Only running out of memory makes these fail; a fingerprint of part of the rows would be a lie.
  auto check = [](int ok) {
    if (ok != 1) throw std::bad_alloc();
  };
  if (!md) throw std::bad_alloc();
  check(EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr));
  std::string text;
  constexpr size_t kChunk = size_t{64} * 1024;
  text.reserve(kChunk);
  text += '[';
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i > 0) text += ',';
    appendCanonicalRow(*sorted[i], text);
    if (text.size() >= kChunk - 1024) {
      check(EVP_DigestUpdate(md.get(), text.data(), text.size()));
      text.clear();
    }
  }
  text += ']';
  check(EVP_DigestUpdate(md.get(), text.data(), text.size()));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  check(EVP_DigestFinal_ex(md.get(), digest, &len));
  return hexBytes(std::string_view(reinterpret_cast<const char*>(digest), std::min(len, 8u)));
}

}  // namespace tlaunch

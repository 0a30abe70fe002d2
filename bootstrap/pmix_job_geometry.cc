#include "bootstrap/pmix_job_geometry.h"
#include "tlaunch/strings.h"

#include <limits>
#include <set>
#include <string_view>

namespace tlaunch {
namespace {

constexpr size_t kMaxNspaceLen = 255;  // PMIX_MAX_NSLEN

Result<void> checkNodeName(const std::string& name, size_t index) {
  if (name.empty()) return fail(Errc::internal, "PMIx job layout: node " + std::to_string(index) + " has no name");
  for (char c : name) {
    // ',' and ';' separate entries of the PMIx node/proc map; whitespace breaks hostnames.
    if (c == ',' || c == ';' || c == ' ' || c == '\t' || c == '\n')
      return fail(Errc::internal, "PMIx job layout: node name '" + name + "' contains a separator character");
  }
  return {};
}

Result<void> checkDir(const std::string& dir, const char* what) {
  if (dir.empty() || dir.front() != '/' || dir.find_first_not_of('/') == std::string::npos)
    return fail(Errc::internal, std::string("PMIx job layout: ") + what + " '" + dir +
                                    "' must be an absolute path below the root directory");
  return {};
}

}  // namespace

bool PmixJobGeometry::isLocal(int rank) const {
  for (int r : local_ranks)
    if (r == rank) return true;
  return false;
}

Result<PmixJobGeometry> planPmixJob(const PmixJobLayout& layout) {
  if (layout.nspace.empty() || layout.nspace.size() > kMaxNspaceLen)
    return fail(Errc::internal, "PMIx job layout: namespace '" + layout.nspace + "' must have 1 to 255 characters");
  if (layout.node_names.empty()) return fail(Errc::internal, "PMIx job layout: no nodes");
  if (layout.ranks_by_node.size() != layout.node_names.size())
    return fail(Errc::internal, "PMIx job layout: " + std::to_string(layout.node_names.size()) + " node names but " +
                                    std::to_string(layout.ranks_by_node.size()) + " rank lists");
  // A spawned namespace is registered on every node of the job, also where none of its ranks run.
  const bool spawned = !layout.parent_nspace.empty();
  if (!layout.node_ids.empty() && layout.node_ids.size() != layout.node_names.size())
    return fail(Errc::internal, "PMIx job layout: " + std::to_string(layout.node_ids.size()) + " node ids for " +
                                    std::to_string(layout.node_names.size()) + " nodes");
  if ((layout.this_node < 0 && !(spawned && layout.this_node == -1)) ||
      layout.this_node >= static_cast<int>(layout.node_names.size()))
    return fail(Errc::internal, "PMIx job layout: this_node " + std::to_string(layout.this_node) + " is not a node index");
  if (auto ok = checkDir(layout.job_tmpdir, "job_tmpdir"); !ok) return tl::unexpected(ok.error());
  if (!layout.shm_dir.empty())
    if (auto ok = checkDir(layout.shm_dir, "shm_dir"); !ok) return tl::unexpected(ok.error());
  // Open MPI 4.1.4's btl_tcp_if_include matches every interface for a /32 prefix (seen: 127.0.0.1/32
  // selected lo, eth0 and a veth), and ranks then stripe over networks that may not connect.
  for (size_t start = 0; start < layout.tcp_if_include.size();) {
    size_t end = layout.tcp_if_include.find(',', start);
    if (end == std::string::npos) end = layout.tcp_if_include.size();
    if (std::string_view(layout.tcp_if_include).substr(start, end - start).ends_with("/32"))
      return fail(Errc::internal,
                  "PMIx job layout: tcp_if_include '" + layout.tcp_if_include +
                      "' has a /32 prefix, which Open MPI 4.1 treats as matching every interface",
                  "give the interface name (e.g. ib0) or the subnet (e.g. 10.1.0.0/16)");
    start = end + 1;
  }

  std::set<std::string> names;
  size_t total = 0;
  for (size_t n = 0; n < layout.node_names.size(); ++n) {
    const std::string& name = layout.node_names[n];
    if (auto ok = checkNodeName(name, n); !ok) return tl::unexpected(ok.error());
    if (!names.insert(name).second) return fail(Errc::internal, "PMIx job layout: node name '" + name + "' appears twice");
    if (layout.ranks_by_node[n].empty())
      return fail(Errc::internal, "PMIx job layout: node " + name + " hosts no rank; leave it out of the job");
    if (layout.ranks_by_node[n].size() > std::numeric_limits<uint16_t>::max())
      return fail(Errc::internal, "PMIx job layout: node " + name + " hosts more than 65535 ranks");
    total += layout.ranks_by_node[n].size();
  }
  if (total > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return fail(Errc::internal, "PMIx job layout: too many ranks");

  PmixJobGeometry g;
  g.job_size = static_cast<uint32_t>(total);
  g.node_of_rank.assign(total, std::numeric_limits<uint32_t>::max());
  g.local_rank_of_rank.assign(total, 0);
  for (size_t n = 0; n < layout.ranks_by_node.size(); ++n) {
    const auto& ranks = layout.ranks_by_node[n];
    for (size_t i = 0; i < ranks.size(); ++i) {
      int r = ranks[i];
      if (r < 0 || static_cast<size_t>(r) >= total)
        return fail(Errc::internal, "PMIx job layout: rank " + std::to_string(r) + " on node " + layout.node_names[n] +
                                        " is outside 0.." + std::to_string(total - 1));
      if (g.node_of_rank[r] != std::numeric_limits<uint32_t>::max())
        return fail(Errc::internal, "PMIx job layout: rank " + std::to_string(r) + " is placed on both " +
                                        layout.node_names[g.node_of_rank[r]] + " and " + layout.node_names[n]);
      g.node_of_rank[r] = static_cast<uint32_t>(n);
      g.local_rank_of_rank[r] = static_cast<uint16_t>(i);
    }
    if (n) {
      g.node_list += ',';
      g.ppn_list += ';';
    }
    g.node_list += layout.node_names[n];
    g.ppn_list += joinStrings(ranks, ",");
  }
  if (!layout.appnum_of_rank.empty() && layout.appnum_of_rank.size() != total)
    return fail(Errc::internal, "PMIx job layout: " + std::to_string(layout.appnum_of_rank.size()) +
                                    " app numbers for " + std::to_string(total) + " ranks");
  if (layout.this_node >= 0) g.local_ranks = layout.ranks_by_node[static_cast<size_t>(layout.this_node)];
  g.local_peers = joinStrings(g.local_ranks, ",");
  return g;
}

}  // namespace tlaunch

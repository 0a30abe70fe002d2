#include "binding/preflight/preflight_report.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <map>

#include <nlohmann/json.hpp>

namespace tlaunch {
namespace {

using nlohmann::json;

PreflightStatus statusFrom(const std::string& s) {
  for (auto st : {PreflightStatus::pass, PreflightStatus::warn, PreflightStatus::fail, PreflightStatus::skip})
    if (s == preflightStatusName(st)) return st;
  throw json::other_error::create(599, "preflight status \"" + s + "\" is not known", nullptr);
}

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

std::string renderPreflightTable(const std::vector<PreflightItem>& items) {
  using Row = std::array<std::string, 5>;
  const Row header{"CHECK", "DEVICE", "STATUS", "FOUND", "EXPECTED"};
  std::vector<std::string> nodes;
  for (const auto& i : items)
    if (std::find(nodes.begin(), nodes.end(), i.node) == nodes.end()) nodes.push_back(i.node);
  std::string out;
  for (const auto& node : nodes) {
    std::vector<PreflightItem> rows;
    std::copy_if(items.begin(), items.end(), std::back_inserter(rows),
                 [&](const PreflightItem& i) { return i.node == node; });
    // A finding of several lines (the nodes a network check names, one per line) keeps its first
    // line in the table and the rest below it, so that the columns stay aligned.
    std::vector<Row> cells{header};
    std::string details;
    for (const auto& r : rows) {
      const auto nl = r.found.find('\n');
      cells.push_back(Row{r.check, r.device, preflightStatusName(r.status),
                          nl == std::string::npos ? r.found : r.found.substr(0, nl) + " (below)", r.expected});
      if (nl == std::string::npos) continue;
      details += "  " + r.check + (r.device.empty() ? "" : " " + r.device) + ":\n";
      for (size_t at = nl + 1; at < r.found.size();) {
        const auto end = std::min(r.found.find('\n', at), r.found.size());
        details += "    " + r.found.substr(at, end - at) + "\n";
        at = end + 1;
      }
    }
    std::array<std::size_t, 5> width{};
    for (const auto& c : cells)
      for (std::size_t k = 0; k < c.size(); ++k) width[k] = std::max(width[k], c[k].size());
    out += (node.empty() ? std::string("all nodes") : node) + " (" + preflightSummary(rows) + ")\n";
    for (const auto& c : cells) {
      std::string line;
      for (std::size_t k = 0; k < c.size(); ++k) line += "  " + (k + 1 < c.size() ? pad(c[k], width[k]) : c[k]);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    out += details;
    for (const auto& r : rows)
      if (!r.fix.empty() && (r.status == PreflightStatus::warn || r.status == PreflightStatus::fail))
        out += "  fix " + r.check + (r.device.empty() ? "" : " " + r.device) + ": " + r.fix + "\n";
  }
  return out;
}

std::string preflightSummary(const std::vector<PreflightItem>& items) {
  std::map<PreflightStatus, int> n;
  for (const auto& i : items) ++n[i.status];
  return std::to_string(n[PreflightStatus::pass]) + " pass, " + std::to_string(n[PreflightStatus::warn]) + " warn, " +
         std::to_string(n[PreflightStatus::fail]) + " fail, " + std::to_string(n[PreflightStatus::skip]) + " skip";
}

json preflightToJson(const std::vector<PreflightItem>& items) {
  json out = json::array();
  for (const auto& i : items)
    out.push_back({{"check", i.check}, {"node", i.node}, {"device", i.device},
                   {"status", preflightStatusName(i.status)}, {"found", i.found}, {"expected", i.expected},
                   {"fix", i.fix}});
  return out;
}

Result<std::vector<PreflightItem>> preflightFromJson(const json& j) {
  try {
    if (!j.is_array()) return fail(Errc::protocol, "malformed preflight report: expected an array");
    std::vector<PreflightItem> out;
    for (const auto& i : j)
      out.push_back(PreflightItem{i.at("check").get<std::string>(), i.at("node").get<std::string>(),
                                  i.at("device").get<std::string>(), statusFrom(i.at("status").get<std::string>()),
                                  i.at("found").get<std::string>(), i.at("expected").get<std::string>(),
                                  i.at("fix").get<std::string>()});
    return out;
  } catch (const json::exception& e) {
    return fail(Errc::protocol, std::string("malformed preflight report: ") + e.what(),
                "tlaunch and tlaunchd versions may differ; install the same version on every node");
  }
}

}  // namespace tlaunch

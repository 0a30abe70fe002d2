#include "launcher/job_inspector.h"

#include <algorithm>
#include <cstdio>

#include "launcher/stack_merge.h"

namespace tlaunch {

using Clock = std::chrono::steady_clock;

JobInspector::JobInspector(asio::io_context& io, std::string job_id, Hooks hooks, int hang_timeout_s)
    : io_(io), job_id_(std::move(job_id)), hooks_(std::move(hooks)), hang_timeout_(hang_timeout_s), socket_(io) {}

JobInspector::~JobInspector() { close(); }

void JobInspector::openControlSocket() {
  auto r = socket_.open(job_id_, [this](const std::string& request, ControlSocket::Reply reply) {
    if (request == "stacks" || request == "status") return ask(request, std::move(reply));
    reply("tlaunch: unknown request '" + request + "'\n");
  });
  if (!r) hooks_.print("warning: no control socket (tlaunch stacks/status will not find this job): " + r.error().message);
}

void JobInspector::close() {
  closed_ = true;
  socket_.close();
  // Whoever waits gets what has come so far.
  while (!requests_.empty()) complete(requests_.begin()->first);
}

void JobInspector::stacks(ControlSocket::Reply reply) { ask("stacks", std::move(reply)); }
void JobInspector::status(ControlSocket::Reply reply) { ask("status", std::move(reply)); }

void JobInspector::ask(const std::string& kind, ControlSocket::Reply reply) {
  if (closed_) return reply("tlaunch: job " + job_id_ + " is ending\n");
  const uint64_t id = next_id_++;
  Request& r = requests_[id];
  r.kind = kind;
  r.reply = std::move(reply);
  r.deadline = Clock::now() + (kind == "stacks" ? kStacksDeadline : kStatusDeadline);
  const auto nodes = hooks_.nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].connected) r.waiting.insert(static_cast<int>(i));
  r.asked = r.waiting;
  hooks_.broadcast({{"t", kind}, {"id", id}});
  if (r.waiting.empty()) complete(id);
}

void JobInspector::onReport(int node, Json&& msg) {
  auto it = requests_.find(static_cast<uint64_t>(getInt(msg, "id")));
  if (it == requests_.end() || !it->second.waiting.count(node)) return;
  it->second.waiting.erase(node);
  it->second.reports[node] = std::move(msg);
  if (it->second.waiting.empty()) complete(it->first);
}

void JobInspector::tick(bool ranks_running, bool output_held_back) {
  const auto now = Clock::now();
  // Every 50 ms: the nodes' view (a copy of every name) only while a request waits for them.
  const auto nodes = requests_.empty() ? std::vector<NodeView>{} : hooks_.nodes();
  std::vector<uint64_t> due;
  for (auto& [id, r] : requests_) {
    // A daemon that went away will not answer.
    std::erase_if(r.waiting, [&](int n) { return n >= static_cast<int>(nodes.size()) || !nodes[n].connected; });
    if (r.waiting.empty() || now >= r.deadline) due.push_back(id);
  }
  for (auto id : due) complete(id);
  if (hang_timeout_.count() <= 0 || hang_reported_ || closed_) return;
  if (!ranks_running) return;
  if (!running_seen_) {
    running_seen_ = true;
    last_output_ = now;
  }
  // Output waiting for a slow reader is not the ranks' silence.
  if (output_held_back) last_output_ = now;
  if (now - last_output_ < hang_timeout_) return;
  hang_reported_ = true;
  hooks_.print("no rank printed anything for " + std::to_string(hang_timeout_.count()) +
               " s (--hang-timeout): collecting stacks; the job goes on");
  stacks([print = hooks_.print](std::string text) {
    while (!text.empty() && text.back() == '\n') text.pop_back();
    print(text);
  });
}

void JobInspector::complete(uint64_t id) {
  auto node = requests_.extract(id);
  if (node.empty()) return;
  Request& r = node.mapped();
  r.reply(r.kind == "stacks" ? stacksText(r) : statusText(r));
}

std::string JobInspector::stacksText(const Request& r) const {
  const auto nodes = hooks_.nodes();
  std::vector<RankStacks> ranks;
  std::string missing, unconnected;
  for (size_t n = 0; n < nodes.size(); ++n) {
    auto it = r.reports.find(static_cast<int>(n));
    if (it == r.reports.end()) {
      std::string& list = r.asked.count(static_cast<int>(n)) ? missing : unconnected;
      list += (list.empty() ? "" : ", ") + nodes[n].name;
      continue;
    }
    const Json& list = it->second.contains("ranks") ? it->second["ranks"] : Json::array();
    for (const auto& e : list) {
      RankStacks s;
      s.rank = static_cast<int>(getInt(e, "r"));
      s.node = nodes[n].name;
      s.gdb_output = getString(e, "gdb");
      s.error = getString(e, "error");
      s.note = getString(e, "note");
      ranks.push_back(std::move(s));
    }
  }
  std::sort(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  std::string text = "job " + job_id_ + ": " + formatStackReport(ranks, hooks_.spawned_label);
  if (!missing.empty()) text += "no stacks from node(s) " + missing + " (their daemons did not answer)\n";
  if (!unconnected.empty())
    text += "no stacks from node(s) " + unconnected + " (their daemons were not connected: still starting, or lost)\n";
  return text;
}

std::string JobInspector::statusText(const Request& r) const {
  const auto nodes = hooks_.nodes();
  std::string text = "job " + job_id_ + "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-20s %-10s %s\n", "NODE", "DAEMON", "HEARTBEAT");
  text += line;
  for (const auto& n : nodes) {
    if (!n.heard)
      std::snprintf(line, sizeof line, "%-20s %-10s -\n", n.name.c_str(), "starting");
    else
      std::snprintf(line, sizeof line, "%-20s %-10s %.1f s ago\n", n.name.c_str(), n.connected ? "connected" : "gone",
                    n.heartbeat_age_s);
    text += line;
  }
  struct Row {
    int rank;
    std::string node;
    Json e;
  };
  std::vector<Row> rows;
  for (const auto& [n, rep] : r.reports)
    if (rep.contains("ranks"))
      for (const auto& e : rep["ranks"]) rows.push_back({static_cast<int>(getInt(e, "r")), nodes[n].name, e});
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.rank < b.rank; });
  std::snprintf(line, sizeof line, "%-10s %-20s %-8s %-10s %6s %10s %s\n", "RANK", "NODE", "PID", "STATE", "CPU%",
                "RSS(MiB)", "LAST OUTPUT");
  text += line;
  for (const auto& row : rows) {
    const double cpu = row.e.contains("cpu") && row.e["cpu"].is_number() ? row.e["cpu"].get<double>() : 0;
    const double quiet = row.e.contains("quiet_s") && row.e["quiet_s"].is_number() ? row.e["quiet_s"].get<double>() : 0;
    // An older daemon does not say whether the rank printed: its quiet time then counts from either.
    const bool printed = !row.e.contains("printed") || getBool(row.e, "printed");
    char last[64];
    std::snprintf(last, sizeof last, printed ? "%.0f s ago" : "none (started %.0f s ago)", quiet);
    std::string who = hooks_.spawned_label ? hooks_.spawned_label(row.rank) : std::string();
    if (who.empty()) who = std::to_string(row.rank);
    std::snprintf(line, sizeof line, "%-10s %-20s %-8lld %-10s %6.1f %10.1f %s\n", who.c_str(), row.node.c_str(),
                  getInt(row.e, "pid"), getString(row.e, "state").c_str(), cpu,
                  static_cast<double>(getInt(row.e, "rss")) / (1 << 20), last);
    text += line;
  }
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!r.reports.count(static_cast<int>(n)))
      text += "node " + nodes[n].name +
              (r.asked.count(static_cast<int>(n)) ? ": its daemon did not answer\n"
                                                  : ": its daemon was not connected (still starting, or lost)\n");
  return text;
}

}  // namespace tlaunch

#include "launcher/start_failure_report.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

constexpr size_t kNamesShown = 20;

bool partOfName(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.'; }

// `text` with every whole-word `name` replaced by `with`: two nodes' messages that differ only
// in the node's name are the same cause.
std::string replaceName(const std::string& text, const std::string& name, const std::string& with) {
  if (name.empty()) return text;
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    const bool starts = at == 0 || !partOfName(text[at - 1]);
    const size_t end = at + name.size();
    // A trailing '.' ends a sentence, not the name.
    const bool ends = end == text.size() || !partOfName(text[end]) ||
                      (text[end] == '.' && (end + 1 == text.size() || !partOfName(text[end + 1])));
    if (!starts || !ends || at < from) continue;
    out += text.substr(from, at - from) + with;
    from = end;
  }
  return out + text.substr(from);
}

std::string indented(const std::string& text, const std::string& by) {
  std::string out = by;
  for (char c : text) {
    out += c;
    if (c == '\n') out += by;
  }
  return out;
}

std::string nodesWord(size_t n) { return n == 1 ? "node" : "nodes"; }

}  // namespace

void StartFailureReport::add(int node_index, const std::string& node, const std::string& message, bool node_side,
                             Clock::time_point now) {
  if (has(node_index)) return;
  if (failures_.empty()) first_at_ = now;
  failures_.push_back({node_index, node, message, node_side});
}

bool StartFailureReport::has(int node_index) const {
  return std::any_of(failures_.begin(), failures_.end(), [&](const Failure& f) { return f.node_index == node_index; });
}

bool StartFailureReport::due(Clock::time_point now, size_t unresolved) const {
  return !failures_.empty() && (unresolved == 0 || now - first_at_ >= window_);
}

std::string StartFailureReport::describe(size_t total_nodes, const std::vector<std::string>& still_starting,
                                        const std::vector<std::string>& not_started) const {
  if (failures_.empty()) return {};
  std::string text;
  if (failures_.size() == 1) {
    text = "could not start tlaunchd on node " + failures_[0].node + ": " + failures_[0].message;
  } else {
    // A cause is a message's first line with the node's name taken out: what follows (ssh's
    // own words) differs from node to node (addresses, a .bashrc's echo) for the same cause.
    std::vector<std::string> causes;
    std::map<std::string, std::vector<const Failure*>> by_cause;
    for (const auto& f : failures_) {
      const std::string cause = replaceName(f.message.substr(0, f.message.find('\n')), f.node, std::string(1, '\x01'));
      auto& group = by_cause[cause];
      if (group.empty()) causes.push_back(cause);
      group.push_back(&f);
    }
    text = "could not start tlaunchd on " + std::to_string(failures_.size()) + " of " + std::to_string(total_nodes) +
           " nodes:";
    std::vector<std::string> unshown;
    size_t unshown_causes = 0;
    // Past kCausesShown causes, the last line sums up the rest.
    const size_t shown = causes.size() > kCausesShown ? kCausesShown - 1 : causes.size();
    for (size_t i = 0; i < causes.size(); ++i) {
      const auto& group = by_cause[causes[i]];
      if (i >= shown) {
        ++unshown_causes;
        for (const Failure* f : group) unshown.push_back(f->node);
        continue;
      }
      std::string message = group.front()->message;
      // A starter's message that does not begin with the node's name gets it in front.
      if (!message.starts_with(group.front()->node + ":")) message = group.front()->node + ": " + message;
      text += "\n" + indented(message, "  ");
      if (group.size() > 1) {
        std::vector<std::string> others;
        for (size_t i = 1; i < group.size(); ++i) others.push_back(group[i]->node);
        text += "\n    the same on " + std::to_string(others.size()) + " more " + nodesWord(others.size()) + ": " +
                joinSome(others, kNamesShown);
      }
    }
    if (unshown_causes > 0)
      text += "\n  " + std::to_string(unshown_causes) + " other causes on " + std::to_string(unshown.size()) + " " +
              nodesWord(unshown.size()) + ": " + joinSome(unshown, kNamesShown);
  }
  if (!not_started.empty())
    text += "\n  " + std::to_string(not_started.size()) + " more " + nodesWord(not_started.size()) +
            " were to be started by a node that failed: " + joinSome(not_started, kNamesShown);
  if (!still_starting.empty())
    text += "\n  " + std::to_string(still_starting.size()) + " more " + nodesWord(still_starting.size()) +
            " had not connected yet: " + joinSome(still_starting, kNamesShown);
  return text;
}

std::vector<std::string> StartFailureReport::nodes() const {
  std::vector<std::string> out;
  for (const auto& f : failures_) out.push_back(f.node);
  return out;
}

std::vector<std::pair<std::string, std::string>> StartFailureReport::messages() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : failures_) out.emplace_back(f.node, f.message);
  return out;
}

std::vector<std::string> StartFailureReport::nodeSide() const {
  std::vector<std::string> out;
  for (const auto& f : failures_)
    if (f.node_side) out.push_back(f.node);
  return out;
}

}  // namespace tlaunch

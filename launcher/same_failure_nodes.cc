#include "launcher/same_failure_nodes.h"

#include <algorithm>
#include <cctype>

#include "launcher/hostlist.h"

namespace tlaunch {

namespace {

constexpr std::string_view kNode = "{node}";

// `text` with every whole-word occurrence of `name` replaced by "{node}".
std::string withoutNode(std::string text, const std::string& name) {
  if (name.empty()) return text;
  const auto word = [&](size_t at) { return at >= text.size() || !std::isalnum(static_cast<unsigned char>(text[at])); };
  for (size_t at = 0; (at = text.find(name, at)) != std::string::npos;) {
    if ((at == 0 || word(at - 1)) && word(at + name.size())) {
      text.replace(at, name.size(), kNode);
      at += kNode.size();
    } else {
      at += name.size();
    }
  }
  return text;
}

void replaceAll(std::string& text, std::string_view from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
}

}  // namespace

std::vector<MergedFailure> mergeSameFailures(const std::vector<NodeFailureText>& failures) {
  struct Group {
    std::string key;
    std::vector<std::size_t> members;
  };
  std::vector<Group> groups;
  for (std::size_t i = 0; i < failures.size(); ++i) {
    std::string key = withoutNode(failures[i].message, failures[i].node);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& e) { return e.key == key; });
    if (g == groups.end()) groups.push_back({std::move(key), {i}});
    else g->members.push_back(i);
  }
  std::vector<MergedFailure> out;
  for (const auto& g : groups) {
    std::vector<std::string> names;
    for (std::size_t i : g.members) names.push_back(failures[i].node);
    std::string message = g.key;
    if (names.size() > 1) replaceAll(message, "node {node}", "nodes " + compressHostlist(names));
    replaceAll(message, kNode, names.size() == 1 ? names.front() : compressHostlist(names));
    out.push_back({std::move(message), g.members.front()});
  }
  return out;
}

}  // namespace tlaunch

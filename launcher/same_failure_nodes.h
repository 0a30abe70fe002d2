#pragma once
// Failures that differ only in the node they name, said once for all those nodes: "program 'x'
// not found on node n1" from three nodes is "program 'x' not found on nodes n[1-3]". Pure.
#include <string>
#include <vector>

namespace tlaunch {

struct NodeFailureText {
  std::string node;     // the node's name as the message spells it
  std::string message;  // naming that node
};

struct MergedFailure {
  std::string message;       // with every node of the group ("nodes n[1-3]")
  std::size_t first = 0;     // index into the input of the group's first failure (its code, hint)
};

// One entry per distinct message once node names are set aside, in the order first seen; the
// nodes of a group are listed in the order given (give them in node order).
std::vector<MergedFailure> mergeSameFailures(const std::vector<NodeFailureText>& failures);

}  // namespace tlaunch

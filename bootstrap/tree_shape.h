#pragma once
// The shape of the control tree (DESIGN §6): the frontend at the root, daemons below it with
// fan-out k, numbered in breadth-first order so that node i's parent and children follow from
// arithmetic alone. Pure.
//
// --tree-radix k: every daemon first proves itself to the frontend, then (when the job has more
// nodes than k) attaches to its parent here and the frontend talks only to its k children;
// messages for a deeper node travel down the parents, a node's reports travel up them
// (launcher/job_session_tree.cc, daemon/tree_children.h).
#include <vector>

namespace tlaunch {

// The tags a routed message carries: who it is from (upwards) and for (downwards); "@all" is
// for every node below.
inline constexpr const char* kSourceTag = "@src";
inline constexpr const char* kDestinationTag = "@dst";
inline constexpr const char* kEveryNodeTag = "@all";

struct TreeShape {
  int nodes = 0;    // daemons
  int fanout = 32;  // children per tree vertex (the frontend included)

  // -1: the frontend.
  int parentOf(int node) const;
  std::vector<int> childrenOf(int node) const;  // node -1: the frontend's children
  std::vector<int> subtreeOf(int node) const;   // node and everything below it, ascending
  int depth() const;                            // levels of daemons below the frontend
  // Whether `node` is `root` or below it.
  bool isInSubtree(int node, int root) const;
  // The child of `from` (-1: the frontend) whose subtree holds `node`; -2 when none does.
  int childToward(int from, int node) const;
};

}  // namespace tlaunch

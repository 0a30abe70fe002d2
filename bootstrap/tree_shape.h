#pragma once
// The shape of the control tree (DESIGN §6): the frontend at the root, daemons below it with
// fan-out k, numbered in breadth-first order so that node i's parent and children follow from
// arithmetic alone. Pure.
//
// Today every daemon connects to the frontend directly (k >= number of nodes: a star), which
// is what the session implements. The plan hands each daemon its parent from here, so that
// routing through a parent daemon — broadcasts down, gathers (fence blobs, exits) combined per
// subtree on the way up — can be switched on without changing who talks to whom.
#include <vector>

namespace tlaunch {

struct TreeShape {
  int nodes = 0;    // daemons
  int fanout = 32;  // children per tree vertex (the frontend included)

  // -1: the frontend.
  int parentOf(int node) const;
  std::vector<int> childrenOf(int node) const;  // node -1: the frontend's children
  std::vector<int> subtreeOf(int node) const;   // node and everything below it, ascending
  int depth() const;                            // levels of daemons below the frontend
};

}  // namespace tlaunch

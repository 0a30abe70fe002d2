#include "bootstrap/tree_shape.h"

#include <algorithm>

namespace tlaunch {

// Positions: 0 is the frontend, node i sits at position i + 1; position p's children are
// p*k+1 .. p*k+k.
int TreeShape::parentOf(int node) const {
  const int p = node + 1;
  if (p <= 0 || node >= nodes) return -1;
  return (p - 1) / fanout - 1;
}

std::vector<int> TreeShape::childrenOf(int node) const {
  std::vector<int> out;
  const long long p = node + 1;
  for (long long c = p * fanout + 1; c <= p * fanout + fanout && c <= nodes; ++c) out.push_back(static_cast<int>(c - 1));
  return out;
}

std::vector<int> TreeShape::subtreeOf(int node) const {
  std::vector<int> out, frontier{node};
  while (!frontier.empty()) {
    std::vector<int> next;
    for (int n : frontier) {
      if (n >= 0) out.push_back(n);
      for (int c : childrenOf(n)) next.push_back(c);
    }
    frontier.swap(next);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool TreeShape::isInSubtree(int node, int root) const {
  if (node < 0 || node >= nodes || root >= nodes) return false;
  for (int n = node; n >= root; n = parentOf(n))  // parents have smaller numbers
    if (n == root) return true;
  return root == -1;
}

int TreeShape::childToward(int from, int node) const {
  if (node < 0 || node >= nodes || node == from) return -2;
  for (int n = node; n >= 0; n = parentOf(n))
    if (parentOf(n) == from) return n;
  return -2;
}

int TreeShape::depth() const {
  int d = 0;
  long long covered = 0, level = 1;
  while (covered < nodes) {
    level *= fanout;
    covered += level;
    ++d;
  }
  return d;
}

}  // namespace tlaunch

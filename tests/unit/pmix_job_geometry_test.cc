#include <catch2/catch.hpp>

#include "bootstrap/pmix_job_geometry.h"

using tlaunch::PmixJobLayout;
using tlaunch::planPmixJob;

namespace {

PmixJobLayout twoNodes() {
  PmixJobLayout l;
  l.nspace = "tlaunch.42";
  l.node_names = {"gpu01", "gpu02"};
  l.ranks_by_node = {{0, 1}, {2, 3}};
  l.this_node = 1;
  l.job_tmpdir = "/tmp/tlaunch/job42";
  return l;
}

}  // namespace

TEST_CASE("pmix geometry: block layout gives maps, local ranks and peers of this node") {
  auto g = planPmixJob(twoNodes());
  REQUIRE(g);
  CHECK(g->job_size == 4);
  CHECK(g->node_list == "gpu01,gpu02");
  CHECK(g->ppn_list == "0,1;2,3");
  CHECK(g->local_peers == "2,3");
  CHECK(g->local_ranks == std::vector<int>{2, 3});
  CHECK(g->node_of_rank == std::vector<uint32_t>{0, 0, 1, 1});
  CHECK(g->local_rank_of_rank == std::vector<uint16_t>{0, 1, 0, 1});
  CHECK(g->isLocal(3));
  CHECK_FALSE(g->isLocal(0));
}

TEST_CASE("pmix geometry: local rank is the position in the node's list, not the rank order") {
  auto l = twoNodes();
  l.ranks_by_node = {{3, 0}, {1, 2}};  // e.g. cyclic, or a plan that reorders
  l.this_node = 0;
  auto g = planPmixJob(l);
  REQUIRE(g);
  CHECK(g->ppn_list == "3,0;1,2");
  CHECK(g->local_peers == "3,0");
  CHECK(g->local_rank_of_rank == std::vector<uint16_t>{1, 0, 1, 0});
  CHECK(g->node_of_rank == std::vector<uint32_t>{0, 1, 1, 0});
}

TEST_CASE("pmix geometry: rejects layouts that would confuse PMIx, naming the culprit") {
  auto expectError = [](PmixJobLayout l, const std::string& fragment) {
    auto g = planPmixJob(l);
    REQUIRE_FALSE(g);
    INFO(g.error().message);
    CHECK(g.error().message.find(fragment) != std::string::npos);
  };
  auto l = twoNodes();
  l.ranks_by_node = {{0, 1}, {1, 3}};
  expectError(l, "rank 1 is placed on both gpu01 and gpu02");
  l = twoNodes();
  l.ranks_by_node = {{0, 1}, {2, 4}};
  expectError(l, "rank 4 on node gpu02 is outside 0..3");
  l = twoNodes();
  l.ranks_by_node = {{0, 1, 2, 3}, {}};
  expectError(l, "node gpu02 hosts no rank");
  l = twoNodes();
  l.node_names = {"gpu01", "gpu01"};
  expectError(l, "'gpu01' appears twice");
  l = twoNodes();
  l.node_names = {"gpu01", "gpu,02"};
  expectError(l, "'gpu,02' contains a separator");
  l = twoNodes();
  l.this_node = 2;
  expectError(l, "this_node 2");
  l = twoNodes();
  l.ranks_by_node.pop_back();
  expectError(l, "2 node names but 1 rank lists");
  l = twoNodes();
  l.job_tmpdir = "relative/dir";
  expectError(l, "job_tmpdir 'relative/dir'");
  l = twoNodes();
  l.job_tmpdir = "/";
  expectError(l, "job_tmpdir '/'");
  l = twoNodes();
  l.nspace.clear();
  expectError(l, "namespace");
  l = twoNodes();
  l.tcp_if_include = "ib0,10.1.2.3/32";
  expectError(l, "/32 prefix");
}

TEST_CASE("pmix geometry: interface names and real subnets are fine for btl_tcp_if_include") {
  auto l = twoNodes();
  for (const char* spec : {"", "ib0", "10.1.0.0/16", "eth0,10.1.0.0/24", "192.168.1.0/30"}) {
    l.tcp_if_include = spec;
    INFO(spec);
    CHECK(planPmixJob(l));
  }
}

TEST_CASE("pmix geometry: a spawned namespace is known on nodes that host none of its ranks") {
  PmixJobLayout l;
  l.nspace = "tlaunch.42.spawn1";
  l.parent_nspace = "tlaunch.42";
  l.node_names = {"gpu02"};
  l.node_ids = {1};
  l.ranks_by_node = {{0, 1}};
  l.this_node = -1;
  l.job_tmpdir = "/tmp/tlaunch/job42/spawn1";
  auto g = planPmixJob(l);
  REQUIRE(g);
  CHECK(g->job_size == 2);
  CHECK(g->local_ranks.empty());
  CHECK(g->local_peers.empty());
  l.parent_nspace.clear();  // the job itself must be on its node
  CHECK_FALSE(planPmixJob(l));
  l.parent_nspace = "tlaunch.42";
  l.node_ids = {1, 2};  // one id per node
  CHECK_FALSE(planPmixJob(l));
  l.node_ids = {1};
  l.appnum_of_rank = {0};  // one app number per rank
  CHECK_FALSE(planPmixJob(l));
}

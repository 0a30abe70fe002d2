// torchrun's error files (daemon/rank_error_file.h) and the words of a rank that only lost its
// peer (launcher/peer_loss_text.h): which rank's exception tlaunch names as the job's cause.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "daemon/rank_error_file.h"
#include "launcher/peer_loss_text.h"
#include "temp_dir.h"

using namespace tlaunch;

TEST_CASE("a rank's error file: torch's @record JSON gives the exception's first line and when it was written") {
  testing::TempDir dir("tlaunch-errfile");
  const std::string path = (dir.path() / "rank.0.json").string();
  CHECK_FALSE(readRankErrorFile(path));  // none written: a rank without @record
  std::ofstream(path) << R"({"message": {"message": "ValueError: NaN loss\nmore", "extraInfo": {"timestamp": "1"}}})";
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  auto e = readRankErrorFile(path);
  REQUIRE(e);
  CHECK((*e)["message"] == "ValueError: NaN loss");
  CHECK((*e)["at_us"].get<int64_t>() / 1'000'000 == st.st_mtim.tv_sec);
  // Whatever a rank may leave there: not JSON, another shape, a huge message.
  for (const std::string junk : {"not json", "[]", R"({"message": 3})", R"({"message": {"message": ""}})"}) {
    std::ofstream(path) << junk;
    CHECK_FALSE(readRankErrorFile(path));
  }
  std::ofstream(path) << R"({"message": ")" << std::string(5000, 'x') << R"("})";
  auto long_one = readRankErrorFile(path);
  REQUIRE(long_one);
  CHECK((*long_one)["message"].get<std::string>().size() == 300);
  ::mkfifo((dir.path() / "fifo.json").c_str(), 0600);  // never blocks the daemon
  CHECK_FALSE(readRankErrorFile((dir.path() / "fifo.json").string()));
}

TEST_CASE("a peer's loss is told apart from an exception of the rank's own") {
  CHECK(looksLikePeerLoss("RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:3489"));
  CHECK(looksLikePeerLoss("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:1234: "
                          "Connection reset by peer"));
  CHECK(looksLikePeerLoss("torch.distributed.DistNetworkError: Connection reset by peer"));
  CHECK(looksLikePeerLoss("RuntimeError: NCCL communicator was aborted on rank 3."));
  CHECK_FALSE(looksLikePeerLoss("ValueError: NaN loss at step 3"));
  CHECK_FALSE(looksLikePeerLoss("torch.cuda.OutOfMemoryError: CUDA out of memory."));
  CHECK_FALSE(looksLikePeerLoss(""));
}

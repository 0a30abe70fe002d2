// tlaunch status: what tlaunchd reads from /proc.
#include <catch2/catch.hpp>

#include "daemon/rank_status.h"

TEST_CASE("tlaunch status reads state, CPU ticks, start and RSS from /proc/PID/stat") {
  // A command name with spaces and parentheses: the fields follow the last ')'.
  const char* line =
      "4242 (python3 (a) b) S 4200 4242 4200 0 -1 4194560 1234 0 0 0 150 25 0 0 20 0 3 0 987654 123456789 2048 "
      "18446744073709551615 1 1 0 0 0 0 0 16781312 2 0 0 0 17 3 0 0 0 0 0";
  tlaunch::ProcStat st;
  REQUIRE(tlaunch::parseProcStat(line, st));
  CHECK(st.state == 'S');
  CHECK(st.cpu_ticks == 175);
  CHECK(st.start_ticks == 987654);
  CHECK(st.rss_pages == 2048);
  CHECK_FALSE(tlaunch::parseProcStat("4242 (truncated) S 1 2", st));
  CHECK_FALSE(tlaunch::parseProcStat("garbage", st));
}

// --hang-timeout's durations: the same as --time-limit's.
#include <catch2/catch.hpp>

#include "cli_test_support.h"

using tlaunch::test::parse;

namespace {
int hangTimeout(const std::string& value) {
  auto p = parse({"--hang-timeout", value, "-p", "1", "--", "true"});
  return p.exit_now ? -*p.exit_now : p.spec.hang_timeout_s;
}
}  // namespace

TEST_CASE("hang timeout: takes the durations of --time-limit, with units") {
  CHECK(hangTimeout("90s") == 90);
  CHECK(hangTimeout("10m") == 600);
  CHECK(hangTimeout("1h30m") == 5400);
  CHECK(hangTimeout("2d") == 2 * 86'400);
  CHECK(hangTimeout("1:30:00") == 5400);
  // Refused (exit 64), not guessed: "1h30" was 1 h and 30 s; a bare number has no unit; 0 would
  // have turned the option off without a word.
  for (const char* bad : {"1h30", "300", "0", "", "5x", "m", "-5", "99999999999h"}) {
    INFO(bad);
    CHECK(hangTimeout(bad) == -64);
  }
}

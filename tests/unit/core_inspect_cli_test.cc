// --hang-timeout's durations.
#include <catch2/catch.hpp>

#include "launcher/inspect_cli.h"

using tlaunch::parseDurationSeconds;

TEST_CASE("durations: plain seconds and s/m/h units") {
  CHECK(parseDurationSeconds("300") == 300);
  CHECK(parseDurationSeconds("90s") == 90);
  CHECK(parseDurationSeconds("10m") == 600);
  CHECK(parseDurationSeconds("1h30m") == 5400);
  CHECK(parseDurationSeconds("0") == 0);
  CHECK_FALSE(parseDurationSeconds(""));
  CHECK_FALSE(parseDurationSeconds("5x"));
  CHECK_FALSE(parseDurationSeconds("m"));
  CHECK_FALSE(parseDurationSeconds("-5"));
  CHECK_FALSE(parseDurationSeconds("99999999999h"));
}

// The diagnostics catalogue (include/tlaunch/diagnostics.h): its grammar, the compiled-in text,
// and how a topic becomes the Error a user reads.
#include <catch2/catch.hpp>

#include "bootstrap/error_text.h"
#include "tlaunch/diagnostics.h"

using namespace tlaunch;

TEST_CASE("catalogue: topics, multi-line messages, hints and comments") {
  auto c = parseCatalogue(
      "# comment\n"
      "\n"
      "[one]\n"
      "first line {a}\n"
      "second line\n"
      "-> do {b}\n"
      "\n"
      "[two]\n"
      "only a message\n");
  REQUIRE(c);
  REQUIRE(c->size() == 2);
  CHECK(c->at("one").message == "first line {a}\nsecond line");
  CHECK(c->at("one").hint == "do {b}");
  CHECK(c->at("two").message == "only a message");
  CHECK(c->at("two").hint.empty());
}

TEST_CASE("catalogue: a duplicate topic, an empty topic or text before any topic is refused by line") {
  auto dup = parseCatalogue("[a]\nx\n[a]\ny\n");
  REQUIRE_FALSE(dup);
  CHECK(dup.error().message.find("line 3: topic [a] appears twice") != std::string::npos);
  auto empty = parseCatalogue("[a]\n-> only a hint\n");
  REQUIRE_FALSE(empty);
  CHECK(empty.error().message.find("[a] has no message") != std::string::npos);
  auto stray = parseCatalogue("text\n[a]\nx\n");
  REQUIRE_FALSE(stray);
  CHECK(stray.error().message.find("line 1: text before any [topic]") != std::string::npos);
}

TEST_CASE("catalogue: the compiled-in catalogue parses and every topic has a message") {
  const auto& c = diagnosticsCatalogue();
  CHECK(c.size() >= 20);
  for (const auto& [topic, text] : c) {
    INFO(topic);
    CHECK_FALSE(text.message.empty());
  }
}

TEST_CASE("diagnostic: placeholders filled, code kept, hint separate, as the user reads it") {
  const Error e = diagnosticError(Errc::program_missing, "program-not-in-path",
                                  {{"program", "train.py"}, {"node", "node7"}, {"path", "/usr/bin:/bin"}});
  CHECK(e.code == Errc::program_missing);
  CHECK(e.message == "program 'train.py' not found on node node7 (PATH=/usr/bin:/bin)");
  CHECK(e.hint == "install it there, give its full path, or pass PATH with -x PATH");
  CHECK(describeError(e) ==
        "program 'train.py' not found on node node7 (PATH=/usr/bin:/bin)\n"
        "  -> install it there, give its full path, or pass PATH with -x PATH");
  // A value is inserted as it is: braces in it are not placeholders.
  const Error braces = diagnosticError(Errc::usage, "node-listed-twice", {{"node", "{node}"}, {"origin", "--hosts"}});
  CHECK(braces.message == "{node} is listed twice in --hosts");
  // As a Result.
  Result<int> r = diagnostic(Errc::usage, "hosts-and-hostfile");
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "--hosts and --hostfile were both given");
}

TEST_CASE("diagnostic: an unknown topic says so instead of an empty message") {
  const Error e = diagnosticError(Errc::usage, "no-such-topic");
  CHECK(e.code == Errc::internal);
  CHECK(e.message == "internal error: no diagnostic [no-such-topic] in the catalogue");
}

// Output flow: the daemon's credit window (OutputChannel) and what the frontend prints for each
// kind of output record (OutputFormatter), pipes and terminals.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "bootstrap/frame_codec.h"
#include "bootstrap/message.h"
#include "daemon/output_channel.h"
#include "launcher/output_format.h"
#include "launcher/output_sink.h"
#include "launcher/stdin_credit.h"

using namespace tlaunch;

namespace {
struct Wire {
  std::vector<std::string> sent;  // payloads, in order
  std::vector<bool> pressure;
};

OutputChannel channel(Wire& w, size_t window, size_t high, size_t low) {
  return OutputChannel(
      {window, high, low}, [&w](const OutputChannel::Frame& f) { w.sent.push_back(f->substr(kFrameHeaderBytes)); },
      [&w](bool pause) { w.pressure.push_back(pause); });
}

std::string text(const std::vector<OutputFormatter::Write>& ws, int stream = 0) {
  std::string s;
  for (const auto& w : ws)
    if (stream == 0 || w.stream == stream) s += w.text;
  return s;
}
}  // namespace

TEST_CASE("output channel: output waits for credit, control-ordered messages wait behind it") {
  Wire w;
  const size_t line = outputCreditCost(5);  // each record's cost: its bytes and its share
  auto ch = channel(w, 2 * line, 100 * line, 20);
  ch.output(0, 1, OutputKind::lines, "aaaa\n");
  ch.output(0, 1, OutputKind::lines, "bbbb\n");  // the window is full
  ch.output(0, 1, OutputKind::lines, "cccc\n");  // waits
  ch.ordered({{"t", "exit"}, {"r", 0}});         // waits behind cccc
  REQUIRE(w.sent.size() == 2);
  CHECK(ch.inFlight() == 2 * line);
  CHECK(ch.waitingBytes() == line);
  ch.credit(line);
  REQUIRE(w.sent.size() == 4);
  CHECK(decodeOutputRecord(w.sent[2])->bytes == "cccc\n");
  CHECK(getString(*decodeMessage(w.sent[3]), "t") == "exit");
  CHECK(ch.empty());
}

TEST_CASE("output channel: a record larger than the window goes alone, pipes pause above high water") {
  Wire w;
  const size_t line = outputCreditCost(4);
  auto ch = channel(w, line, 3 * line, line / 2);
  const std::string big(9, 'x');
  ch.output(1, 2, OutputKind::continued, big);  // nothing in flight: goes
  REQUIRE(w.sent.size() == 1);
  for (int i = 0; i < 4; ++i) ch.output(1, 2, OutputKind::lines, "abc\n");  // 4 lines wait
  CHECK(w.sent.size() == 1);
  REQUIRE(w.pressure == std::vector<bool>{true});
  ch.credit(outputCreditCost(big.size()));  // room for one record
  CHECK(w.sent.size() == 2);
  ch.credit(line);
  ch.credit(line);  // one line left waiting: still above low water
  CHECK(w.pressure == std::vector<bool>{true});
  ch.credit(line);
  CHECK(ch.waitingBytes() == 0);
  CHECK(w.pressure == std::vector<bool>{true, false});
  ch.credit(1000);  // more credit than in flight is harmless
  CHECK(ch.inFlight() == 0);
}

TEST_CASE("output channel: tiny records cost their share, so a storm of them is bounded like bytes") {
  Wire w;
  auto ch = channel(w, 4u << 20, 8u << 20, 1u << 20);
  size_t paused_after = 0;
  for (size_t i = 0; i < 1'000'000 && w.pressure.empty(); ++i, ++paused_after)
    ch.output(0, 1, OutputKind::update, "\r");  // a frontend that grants nothing back
  REQUIRE(w.pressure == std::vector<bool>{true});
  // 8 MiB of high water at 65 bytes a record (plus the 4 MiB window sent): ~194,000, not millions.
  CHECK(paused_after < 200'000);
}

TEST_CASE("formatter: lines are tagged one by one, CRLF printed as LF, a cut line piece by piece") {
  OutputFormatter f({});
  std::vector<OutputFormatter::Write> out;
  const auto now = OutputFormatter::Clock::now();
  f.record("[n1:0] ", 0, 1, OutputKind::lines, "a\r\nb\nlast", now, out);
  f.record("[n1:0] ", 0, 2, OutputKind::continued, "xxxx", now, out);
  f.record("[n1:0] ", 0, 2, OutputKind::lines, "yy\n", now, out);
  CHECK(text(out, 1) == "[n1:0] a\n[n1:0] b\n[n1:0] last\n");
  CHECK(text(out, 2) == "[n1:0] xxxx\n[n1:0] yy\n");
}

TEST_CASE("formatter, pipe: at most one update per rank per second, the latest wins, the end line prints") {
  OutputFormatter f({});
  std::vector<OutputFormatter::Write> out;
  auto t = OutputFormatter::Clock::now();
  f.record("[a:1] ", 1, 2, OutputKind::update, "\r", t, out);  // tqdm's leading CR: nothing
  CHECK(out.empty());
  for (int pct = 0; pct <= 40; pct += 10) {
    f.record("[a:1] ", 1, 2, OutputKind::update, " " + std::to_string(pct) + "%\r", t, out);
    t += std::chrono::milliseconds(100);
  }
  CHECK(text(out) == "[a:1]  0%\n");  // the first one at once, the rest held
  REQUIRE(f.nextDue());
  f.due(t, out);
  CHECK(text(out) == "[a:1]  0%\n");  // not yet a second
  f.due(t + std::chrono::seconds(1), out);
  CHECK(text(out) == "[a:1]  0%\n[a:1]  40%\n");  // the latest of the held ones
  f.record("[a:1] ", 1, 2, OutputKind::update, " 50%\r", t + std::chrono::milliseconds(1100), out);
  f.record("[a:1] ", 1, 2, OutputKind::lines, "100%\n", t + std::chrono::milliseconds(1200), out);
  f.finish(out);
  CHECK(text(out) == "[a:1]  0%\n[a:1]  40%\n[a:1] 100%\n");  // 50% superseded by the end of the line
  // Another rank has its own second.
  OutputFormatter g({});
  std::vector<OutputFormatter::Write> o2;
  g.record("[a:0] ", 0, 1, OutputKind::update, "x\r", t, o2);
  g.record("[a:1] ", 1, 1, OutputKind::update, "y\r", t, o2);
  CHECK(text(o2) == "[a:0] x\n[a:1] y\n");
  // A bar that never ends its line: its last state is printed at the end.
  g.record("[a:1] ", 1, 1, OutputKind::update, "z\r", t, o2);
  g.finish(o2);
  CHECK(text(o2) == "[a:0] x\n[a:1] y\n[a:1] z\n");
}

TEST_CASE("formatter, terminal: updates in place, other lines clear and redraw it") {
  OutputFormatter f({true, true, 20});
  std::vector<OutputFormatter::Write> out;
  const auto now = OutputFormatter::Clock::now();
  f.record("[a:1] ", 1, 2, OutputKind::update, " 10%\r", now, out);
  f.record("[a:1] ", 1, 2, OutputKind::update, " 20%\r", now, out);
  CHECK(text(out) == "\r\x1b[K[a:1]  10%\r\x1b[K[a:1]  20%");
  out.clear();
  f.record("[a:0] ", 0, 1, OutputKind::lines, "hello\n", now, out);
  CHECK(text(out) == "\r\x1b[K[a:0] hello\n[a:1]  20%");
  out.clear();
  f.record("[a:1] ", 1, 2, OutputKind::update, std::string(40, '#') + "\r", now, out);
  CHECK(text(out) == "\r\x1b[K[a:1] " + std::string(13, '#'));  // cut to the width less one
  out.clear();
  f.record("[a:1] ", 1, 2, OutputKind::lines, "done\n", now, out);  // its own line replaces the bar
  CHECK(text(out) == "\r\x1b[K[a:1] done\n");
  out.clear();
  f.finish(out);
  CHECK(out.empty());
}

TEST_CASE("formatter: an update record of several states shows the last one that is not empty") {
  const auto now = OutputFormatter::Clock::now();
  OutputFormatter tty({true, true, 40});
  std::vector<OutputFormatter::Write> out;
  tty.record("[a:1] ", 1, 2, OutputKind::update, "\r 10%\r 20%\r\r", now, out);
  CHECK(text(out) == "\r\x1b[K[a:1]  20%");
  out.clear();
  tty.record("[a:1] ", 1, 2, OutputKind::update, std::string(500, '\r'), now, out);  // nothing new
  CHECK(out.empty());
  OutputFormatter pipe({});
  pipe.record("[a:1] ", 1, 2, OutputKind::update, "10%\r20%\r", now, out);
  CHECK(text(out) == "[a:1] 20%\n");
}

TEST_CASE("formatter: a line that ends a bar with no text of its own keeps the bar's last state") {
  // "L3 x\r\r\n": a terminal leaves "L3 x" on the screen; it arrives as an update and an empty
  // line, which printed an empty tagged line and lost the text, in a pipe and on a terminal.
  const auto now = OutputFormatter::Clock::now();
  for (bool tty : {false, true}) {
    INFO("terminal: " << tty);
    OutputFormatter f({tty, tty, 80});
    std::vector<OutputFormatter::Write> out;
    f.record("[a:0] ", 0, 1, OutputKind::update, "L3 x\r", now, out);
    f.record("[a:0] ", 0, 1, OutputKind::lines, "\r\nnext\n", now, out);
    // Into a pipe the state was printed as a line at once; the empty line adds nothing.
    CHECK(text(out) == (tty ? "\r\x1b[K[a:0] L3 x\r\x1b[K[a:0] L3 x\n[a:0] next\n" : "[a:0] L3 x\n[a:0] next\n"));
    out.clear();
    f.record("[a:0] ", 0, 1, OutputKind::lines, "\n", now, out);  // the bar ended: an empty line is empty
    CHECK(text(out) == "[a:0] \n");
  }
  // Into a pipe, a state held back (the second within the second) is the ending line's text.
  OutputFormatter held({});
  std::vector<OutputFormatter::Write> printed;
  held.record("[a:0] ", 0, 1, OutputKind::update, "1/3\r", now, printed);
  held.record("[a:0] ", 0, 1, OutputKind::update, "2/3\r", now, printed);
  held.record("[a:0] ", 0, 1, OutputKind::lines, "\r\n", now, printed);
  CHECK(text(printed) == "[a:0] 1/3\n[a:0] 2/3\n");
  // A bar's end with text of its own is that text, as before.
  OutputFormatter pipe({});
  std::vector<OutputFormatter::Write> out;
  pipe.record("[a:0] ", 0, 1, OutputKind::update, " 50%\r", now, out);
  out.clear();
  pipe.record("[a:0] ", 0, 1, OutputKind::lines, "100%\n", now, out);
  CHECK(text(out) == "[a:0] 100%\n");
}

// tqdm(leave=False) erases its bar when done: "\r", spaces, "\r". Into a pipe that was a tagged
// line of blanks, and the bar's held-back last state (100%) was never printed.
TEST_CASE("formatter: a bar that erases itself prints no blank line, and its last state is not lost") {
  const auto t = OutputFormatter::Clock::now();
  const std::string erase = "\r" + std::string(16, ' ') + "\r";
  OutputFormatter pipe({});
  std::vector<OutputFormatter::Write> out;
  pipe.record("[a:0] ", 0, 2, OutputKind::update, "\r  0%\r", t, out);
  pipe.record("[a:0] ", 0, 2, OutputKind::update, " 60%\r", t + std::chrono::milliseconds(100), out);
  pipe.record("[a:0] ", 0, 2, OutputKind::update, "100%" + erase, t + std::chrono::milliseconds(200), out);
  pipe.record("[a:0] ", 0, 2, OutputKind::lines, "next phase\n", t + std::chrono::seconds(2), out);
  pipe.finish(out);
  CHECK(text(out) == "[a:0]   0%\n[a:0] 100%\n[a:0] next phase\n");
  // Erased after its last state was printed: nothing more.
  out.clear();
  pipe.record("[a:0] ", 0, 2, OutputKind::update, "50%\r", t + std::chrono::seconds(5), out);
  pipe.record("[a:0] ", 0, 2, OutputKind::update, erase, t + std::chrono::seconds(7), out);
  pipe.finish(out);
  CHECK(text(out) == "[a:0] 50%\n");
  // On a terminal the line is cleared, as the bar meant, and another rank's bar stays.
  OutputFormatter tty({true, true, 80});
  out.clear();
  tty.record("[a:0] ", 0, 2, OutputKind::update, " 60%\r", t, out);
  tty.record("[a:0] ", 0, 2, OutputKind::update, erase, t, out);
  tty.record("[a:0] ", 0, 2, OutputKind::lines, "next\n", t, out);
  tty.finish(out);
  CHECK(text(out) == "\r\x1b[K[a:0]  60%\r\x1b[K[a:0] next\n");
}

// pdb under --stdin 0 on a terminal: each "(Pdb) " prompt is drawn in place, the user's typing
// is echoed after it by the terminal, and Enter ends that line on the screen; but the rank's
// stream has no newline, so its line grew "(Pdb) (Pdb) (Pdb) 3" and was drawn so.
TEST_CASE("formatter, terminal: a prompt the echo of typed input ended is not drawn again") {
  const auto t = OutputFormatter::Clock::now();
  OutputFormatter tty({true, true, 80});
  std::vector<OutputFormatter::Write> out;
  tty.record("[a:0] ", 0, 1, OutputKind::unfinished, "(Pdb) ", t, out);
  tty.inputEchoed(0);  // "x = 1" typed: no output of its own
  tty.record("[a:0] ", 0, 1, OutputKind::unfinished, "(Pdb) (Pdb) ", t, out);
  tty.inputEchoed(0);  // "p x+y"
  tty.record("[a:0] ", 0, 1, OutputKind::lines, "(Pdb) (Pdb) 3\n", t, out);
  tty.record("[a:0] ", 0, 1, OutputKind::unfinished, "(Pdb) ", t, out);
  CHECK(text(out) == "\r\x1b[K[a:0] (Pdb) \r\x1b[K[a:0] (Pdb) [a:0] 3\n\r\x1b[K[a:0] (Pdb) ");
  // The echo of input for another rank, or with no prompt on the screen, changes nothing.
  OutputFormatter other({true, true, 80});
  out.clear();
  other.record("[a:1] ", 1, 1, OutputKind::unfinished, "cmd> ", t, out);
  other.inputEchoed(0);
  other.record("[a:1] ", 1, 1, OutputKind::lines, "cmd> done\n", t, out);
  CHECK(text(out) == "\r\x1b[K[a:1] cmd> \r\x1b[K[a:1] cmd> done\n");
  // The rank's line went another way (it is not the prompt's continuation): shown whole.
  OutputFormatter diverged({true, true, 80});
  out.clear();
  diverged.record("[a:0] ", 0, 1, OutputKind::unfinished, "Proceed? ", t, out);
  diverged.inputEchoed(0);
  diverged.record("[a:0] ", 0, 1, OutputKind::lines, "other\n", t, out);
  CHECK(text(out) == "\r\x1b[K[a:0] Proceed? [a:0] other\n");
}

// A line the rank left unfinished for a moment (a prompt waiting for input, "(Pdb) "): shown on
// a terminal at once, in place; into a pipe only if still unfinished a second later; never
// twice when its line ends in time.
TEST_CASE("formatter: an unfinished line is drawn on a terminal and printed into a pipe only when it lasts") {
  const auto t = OutputFormatter::Clock::now();
  OutputFormatter tty({true, true, 80});
  std::vector<OutputFormatter::Write> out;
  tty.record("[a:0] ", 0, 1, OutputKind::unfinished, "(Pdb) ", t, out);
  CHECK(text(out) == "\r\x1b[K[a:0] (Pdb) ");
  out.clear();
  tty.record("[a:0] ", 0, 1, OutputKind::lines, "(Pdb) p x\n", t, out);  // the line, once done, replaces it
  CHECK(text(out) == "\r\x1b[K[a:0] (Pdb) p x\n");

  OutputFormatter pipe({});
  out.clear();
  pipe.record("[a:0] ", 0, 1, OutputKind::unfinished, "loading...", t, out);
  pipe.due(t + std::chrono::milliseconds(500), out);
  pipe.record("[a:0] ", 0, 1, OutputKind::lines, "loading... done\n", t + std::chrono::milliseconds(600), out);
  pipe.finish(out);
  CHECK(text(out) == "[a:0] loading... done\n");  // done within the second: printed once
  out.clear();
  pipe.record("[a:0] ", 0, 1, OutputKind::unfinished, "Proceed? [y/n] ", t, out);
  CHECK(out.empty());
  REQUIRE(pipe.nextDue());
  pipe.due(t + std::chrono::seconds(1), out);
  CHECK(text(out) == "[a:0] Proceed? [y/n] \n");  // still waiting a second later: shown
  pipe.record("[a:0] ", 0, 1, OutputKind::lines, "Proceed? [y/n] yes\n", t + std::chrono::seconds(5), out);
  CHECK(text(out) == "[a:0] Proceed? [y/n] \n[a:0] Proceed? [y/n] yes\n");
}

// A rank that ends on a line it never finished (print(f"\r{i}/{n}", end=""), a prompt): into a
// pipe that state is a line already once it has lasted; the same bytes at the rank's end are not
// printed again (every log had the last line twice). A different end is.
TEST_CASE("formatter, pipe: an unfinished last line shown already is not printed again at the end") {
  const auto t = OutputFormatter::Clock::now();
  OutputFormatter pipe({});
  std::vector<OutputFormatter::Write> out;
  pipe.record("[a:0] ", 0, 1, OutputKind::update, "Loading... \r", t, out);
  pipe.record("[a:0] ", 0, 1, OutputKind::unfinished, "step 5/5", t + std::chrono::seconds(2), out);
  pipe.due(t + std::chrono::seconds(4), out);
  pipe.record("[a:0] ", 0, 1, OutputKind::lines, "step 5/5", t + std::chrono::seconds(5), out);  // its end
  pipe.finish(out);
  CHECK(text(out) == "[a:0] Loading... \n[a:0] step 5/5\n");
  out.clear();
  pipe.record("[a:0] ", 0, 1, OutputKind::unfinished, "step 6/9", t + std::chrono::seconds(6), out);
  pipe.due(t + std::chrono::seconds(8), out);
  pipe.record("[a:0] ", 0, 1, OutputKind::lines, "step 6/9 failed", t + std::chrono::seconds(9), out);
  pipe.finish(out);
  CHECK(text(out) == "[a:0] step 6/9\n[a:0] step 6/9 failed\n");
}

// A bar slower than a second (tqdm over batches of seconds, print(p, end="\r") per epoch):
// each state is first an unfinished line, printed a second later, then an update when the next
// "\r" comes. Printed again then, every state of the bar was in the log twice.
TEST_CASE("formatter, pipe: a slow bar's state shown while unfinished is not printed again as an update") {
  OutputFormatter f({});
  std::vector<OutputFormatter::Write> out;
  const auto t = OutputFormatter::Clock::now();
  using std::chrono::milliseconds;
  for (int step = 0; step < 3; ++step) {
    const auto at = t + milliseconds(5000 * step);
    const std::string state = std::to_string(step * 10) + "%";
    f.record("[a:0] ", 0, 1, OutputKind::unfinished, state, at + milliseconds(200), out);
    f.due(at + milliseconds(1300), out);
    f.record("[a:0] ", 0, 1, OutputKind::update, state + "\r", at + milliseconds(5000), out);
    f.due(at + milliseconds(5000), out);
  }
  f.record("[a:0] ", 0, 1, OutputKind::lines, "done\n", t + milliseconds(16000), out);
  f.finish(out);
  CHECK(text(out) == "[a:0] 0%\n[a:0] 10%\n[a:0] 20%\n[a:0] done\n");
}

// The formatter outlives an attempt (--max-restarts): the bar a failed rank left must not be
// the first line of the next attempt's rank (an empty line there was taken for the bar's end).
TEST_CASE("formatter: a bar left by one attempt ends with it") {
  OutputFormatter f({});
  std::vector<OutputFormatter::Write> out;
  const auto t = OutputFormatter::Clock::now();
  f.record("[a:0] ", 0, 1, OutputKind::update, "45%\r", t, out);
  f.finish(out);
  CHECK(text(out) == "[a:0] 45%\n");
  out.clear();
  f.record("[a:0] ", 0, 1, OutputKind::lines, "\nattempt 2\n", t + std::chrono::seconds(2), out);
  CHECK(text(out) == "[a:0] \n[a:0] attempt 2\n");
}

TEST_CASE("cutToColumns never splits a UTF-8 character") {
  CHECK(cutToColumns("ab\xe2\x96\x88\xe2\x96\x88", 3) == "ab\xe2\x96\x88");
  CHECK(cutToColumns("abc", 10) == "abc");
}

// A bar of CJK text (or emoji) on a terminal: each such character takes two columns, so a cut by
// characters would wrap the line into rows that are never redrawn.
TEST_CASE("cutToColumns counts wide characters as two columns and combining marks as none") {
  const std::string cjk = "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e";  // three wide characters, 6 columns
  CHECK(cutToColumns("[0] " + cjk, 10) == "[0] " + cjk);
  CHECK(cutToColumns("[0] " + cjk, 9) == "[0] \xe6\x97\xa5\xe6\x9c\xac");  // the third would need columns 9-10
  const std::string acute_e = "e\xcc\x81";  // e + combining acute accent: one column
  CHECK(cutToColumns(acute_e + acute_e + "x", 2) == acute_e + acute_e);
  size_t length = 0;
  CHECK(columnsOf("\xf0\x9f\x98\x80", 0, &length) == 2);  // an emoji
  CHECK(length == 4);
  CHECK(columnsOf("\xe6\x97", 0, &length) == 1);  // cut short: not UTF-8, one column as shown
  CHECK(length == 1);
}

TEST_CASE("cutToColumns: a tab reaches the next multiple of 8 columns") {
  CHECK(cutToColumns("ab\tcd", 9) == "ab\tc");   // columns 0-1, the tab to 8, c at 8
  CHECK(cutToColumns("ab\tcd", 8) == "ab\t");
  CHECK(cutToColumns("ab\tcd", 7) == "ab");
  CHECK(cutToColumns("A\tB\tC", 80) == "A\tB\tC");
}

TEST_CASE("cutToColumns: escape sequences take no column, and a cut coloured bar resets the colour") {
  const std::string green = "\x1b[32m", reset = "\x1b[0m";
  CHECK(cutToColumns(green + "####" + reset, 4) == green + "####" + reset);  // fits: unchanged
  CHECK(cutToColumns(green + "########" + reset, 4) == green + "####" + reset);
  CHECK(cutToColumns("\x1b]0;title\a" + std::string("abcdef"), 3) == "\x1b]0;title\aabc\x1b[0m");
  CHECK(cutToColumns("ab\x1b[", 5) == "ab\x1b[");  // an unterminated sequence is kept whole
  // A broken one (a byte that is no parameter) ends there: what follows still takes its columns.
  const std::string cjk = "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e";  // three wide characters
  CHECK(cutToColumns("\x1b[" + cjk, 4) == "\x1b[\xe6\x97\xa5\xe6\x9c\xac\x1b[0m");
}

// A rank's last progress state, held back for a pipe, comes before the notes that follow the end
// of its attempt (the failure summary), not after them when tlaunch exits.
TEST_CASE("output sink: the held progress state is printed before the failure summary") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  {
    OutputSink sink(TagMode::rank, "", fds[1], fds[1]);  // 2>&1 into a pipe
    sink.setRankNode(0, "n0");
    for (int step = 0; step < 10; ++step) sink.write(0, 0, 2, OutputKind::update, "step " + std::to_string(step) + "\r");
    sink.endProgressLines();
    sink.note("job tl-x failed: rank 0 on node n0 exited with status 1");
    sink.flush();
  }
  ::close(fds[1]);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  CHECK(got == "[0] step 0\n[0] step 9\ntlaunch: job tl-x failed: rank 0 on node n0 exited with status 1\n");
}

// --output-dir: a write error (a full disk, ulimit -f) is said once per file and that file is
// left alone for the rest of the attempt. The next attempt (--max-restarts) has new files: the
// old error must not keep them empty without a word once the disk has room again.
TEST_CASE("output sink: an output file that failed in one attempt is written again in the next") {
  char dir_template[] = "/tmp/tlaunch-sink-test-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = std::string(dir_template) + "/out";
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  auto* const saved_handler = ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead, as tlaunch has it
  {
    OutputSink sink(TagMode::rank, dir, fds[1], fds[1]);
    sink.setRankNode(0, "n0");
    REQUIRE(sink.openFiles(1));
    rlimit small = saved;
    small.rlim_cur = 4096;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    sink.write(0, 0, 1, OutputKind::lines, std::string(8191, 'x') + "\n");
    sink.flush();
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &saved) == 0);
    REQUIRE(sink.openFiles(1));  // the second attempt: appended to
    sink.write(0, 0, 1, OutputKind::lines, "attempt 2\n");
    sink.flush();
  }
  ::signal(SIGXFSZ, saved_handler);
  ::close(fds[1]);
  std::string printed;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) printed.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  std::ifstream f(dir + "/rank.0.out");
  const std::string file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(printed.find("warning: cannot write " + dir + "/rank.0.out") != std::string::npos);
  CHECK(file.size() == 4096 + 10);
  CHECK(file.ends_with("attempt 2\n"));
  std::filesystem::remove_all(dir_template);
}

// --stdin's reader thread can sit in read() after its job ended (a producer that writes late,
// or an attempt of --max-restarts that ended): what it reads then must not reach the session.
TEST_CASE("stdin credit: takes wait for grants and after close nothing is taken or handed on") {
  StdinCredit credit(100);
  CHECK(credit.take(64) == 64);
  CHECK(credit.take(64) == 36);
  credit.grant(10);
  CHECK(credit.take(64) == 10);
  int handed = 0;
  CHECK(credit.whileOpen([&] { ++handed; }));
  credit.close();
  CHECK_FALSE(credit.whileOpen([&] { ++handed; }));
  CHECK(handed == 1);
  CHECK(credit.take(64) == 0);  // does not wait: closed
}

// A daemon gone wrong that grants more than its rank took must not unbound stdin's window.
TEST_CASE("stdin credit: grants never raise it past its window") {
  StdinCredit credit(100);
  CHECK(credit.take(30) == 30);
  credit.grant(1'000'000);
  CHECK(credit.take(1'000'000) == 100);
}

// The frontend's writer gives each daemon its written bytes back in batches of 64 KiB, and a
// smaller rest at least every 50 ms: while other nodes keep the writer busy (a slow terminal,
// output that never stops), a quiet node's rest must still come back, or its next long record,
// which needs it, waits for every other node to go quiet.
TEST_CASE("output sink: a quiet source's small rest comes back while another keeps the writer busy") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::atomic<bool> stop{false};
  std::thread reader([&] {  // a slow reader (~6 MB/s) until told to stop, then a fast one until eof
    std::vector<char> buf(65536);
    while (::read(fds[0], buf.data(), buf.size()) > 0)
      if (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  std::mutex mu;
  std::map<int, size_t> back;
  bool quiet_back = false;
  {
    OutputSink sink(TagMode::none, "", fds[1], fds[1]);
    sink.setRankNode(0, "busy");
    sink.setRankNode(1, "quiet");
    sink.setDrained([&](int source, size_t bytes) {
      std::lock_guard lk(mu);
      back[source] += bytes;
      if (source == 1 && back[1] >= 10000) quiet_back = true;
    });
    const std::string busy_line(4095, 'b');
    const auto quiet_is_back = [&] {
      std::lock_guard lk(mu);
      return quiet_back;
    };
    // Keeps the writer's queue near 2 MiB for how_long, or until `until` holds.
    const auto flood = [&](std::chrono::milliseconds how_long, const std::function<bool()>& until) {
      const auto end = std::chrono::steady_clock::now() + how_long;
      while (std::chrono::steady_clock::now() < end && !until()) {
        if (sink.backlog() < (2u << 20)) sink.write(0, 0, 1, OutputKind::lines, busy_line + "\n");
        else std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    };
    flood(std::chrono::milliseconds(300), [] { return false; });
    sink.write(1, 1, 1, OutputKind::lines, std::string(9999, 'q') + "\n");
    // Without the periodic report the rest comes back only once the flood ends (never, here);
    // with it, within a few hundred ms. The bound is for a loaded machine, not a timing check.
    flood(std::chrono::seconds(30), quiet_is_back);
    REQUIRE(quiet_is_back());
    stop = true;  // the sink's destructor writes out what is queued
  }
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
}

#pragma once
// What the frontend prints for the ranks' output records: pure text in, text out (the writer
// thread of output_sink does the I/O), so every rule here is testable without a terminal.
// - Whole lines are tagged one by one ("\r\n" printed as "\n"); a line cut by the daemon's cap
//   prints as one tagged line per piece.
// - Progress updates (a segment ended by a lone "\r"): on a terminal, the latest update of any
//   rank is shown in place (tag + text, cut to the terminal's width); before any other line is
//   printed there, the in-place line is cleared ("\r\e[K") and drawn again after it. Into a pipe
//   or file an update becomes a tagged line, at most one per rank and stream per second (the
//   latest wins); the line that finally ends the bar prints as any line.
// - An unfinished line the rank stopped writing for a moment (a prompt, a bar between states,
//   OutputKind::unfinished): on a terminal drawn in place as an update; into a pipe or file
//   printed only if it is still unfinished a second later.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bootstrap/output_record.h"

namespace tlaunch {

struct OutputTerminals {
  bool stdout_is_tty = false;
  bool stderr_is_tty = false;
  int width = 80;  // columns of the terminal
};

class OutputFormatter {
 public:
  using Clock = std::chrono::steady_clock;
  struct Write {
    int stream = 1;  // 1 = stdout, 2 = stderr
    std::string text;
  };
  static constexpr std::chrono::milliseconds kUpdateInterval{1000};

  explicit OutputFormatter(OutputTerminals terminals) : terminals_(terminals) {}
  // The terminal was resized: the next in-place lines are cut to the new width.
  void setWidth(int columns) { terminals_.width = columns; }
  bool anyTty() const { return terminals_.stdout_is_tty || terminals_.stderr_is_tty; }
  void record(const std::string& tag, int rank, int stream, OutputKind kind, std::string_view bytes,
              Clock::time_point now, std::vector<Write>& out);
  // tlaunch's own words: stderr, every line prefixed "tlaunch: ".
  void note(std::string_view text, std::vector<Write>& out);
  // Held-back updates (pipe or file) whose second has come.
  void due(Clock::time_point now, std::vector<Write>& out);
  std::optional<Clock::time_point> nextDue() const;
  // At the end: held-back updates printed, the in-place line ended with a newline.
  void finish(std::vector<Write>& out);
  // Input the user typed at tlaunch's terminal went to `rank` with its Enter: the terminal's echo
  // ended the prompt drawn in place ("(Pdb) x = 1"). That prompt stays on the screen as a line of
  // its own, and the rank's next output on that line shows without it: pdb's next "(Pdb) " was
  // drawn as "(Pdb) (Pdb) ", the rank's stream holding every prompt since its last newline.
  void inputEchoed(int rank);

 private:
  struct Live {
    int stream = 1;
    int rank = 0;
    std::string text;
  };
  struct Held {
    std::string text;  // tagged, with "\n"
    std::string state;  // the bar's latest state, untagged, until a line ends it ("" = none)
    bool pending = false;
    Clock::time_point next_allowed{};
    // Into a pipe, the last text printed since its last line: a bar's state first shown as an
    // unfinished line, then ended by the next "\r", is not printed twice.
    std::string printed;
    // On a terminal: the start of the rank's current line that the echo of typed input already
    // ended on the screen (inputEchoed); taken off what comes next on that line.
    std::string echoed;
  };
  bool isTty(int stream) const { return stream == 1 ? terminals_.stdout_is_tty : terminals_.stderr_is_tty; }
  void print(int stream, std::string text, std::vector<Write>& out);
  void update(const std::string& tag, int rank, int stream, std::string_view bytes, Clock::time_point now,
              std::vector<Write>& out);
  void unfinished(const std::string& tag, int rank, int stream, std::string_view bytes, Clock::time_point now,
                  std::vector<Write>& out);
  void erased(const std::string& tag, int rank, int stream, std::string_view last_state, Clock::time_point now,
              std::vector<Write>& out);
  // `bytes` without the part of the line the terminal's echo already ended; false: nothing left.
  bool withoutEchoed(int rank, int stream, OutputKind kind, std::string_view& bytes);

  OutputTerminals terminals_;
  std::optional<Live> live_;
  std::map<std::pair<int, int>, Held> held_;  // (rank, stream) -> its latest update, for pipes
};

// `text` cut to at most `columns` terminal columns: never inside a UTF-8 character, a wide (CJK)
// character counts 2 and a combining mark 0, escape sequences none.
std::string cutToColumns(std::string_view text, int columns);
// The columns of the character that starts at text[at]; *length: its bytes (1 if not UTF-8).
int columnsOf(std::string_view text, size_t at, size_t* length);

}  // namespace tlaunch

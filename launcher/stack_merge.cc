#include "launcher/stack_merge.h"

#include <algorithm>
#include <map>
#include <set>

#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "Thread 3 (Thread 0x7f.. (LWP 12) "python3"):" -> 3; -1 if the line is no thread header.
int threadNumber(std::string_view line) {
  if (!startsWith(line, "Thread ")) return -1;
  line.remove_prefix(7);
  int n = 0;
  size_t i = 0;
  for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) n = n * 10 + (line[i] - '0');
  return i > 0 && i < line.size() && line[i] == ' ' ? n : -1;
}

std::string baseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// "#2  0x00007f.. in foo (a=1) at x.c:3" -> "foo"; "#5  0x.. in ?? () from /lib/libx.so" ->
// "?? [libx.so]". Addresses, arguments and lines differ between ranks stuck at the same place.
std::string frameName(std::string_view line) {
  size_t sp = line.find_first_of(" \t");
  if (sp == std::string_view::npos) return {};
  std::string_view rest = trimBlanks(line.substr(sp));
  if (startsWith(rest, "0x")) {
    size_t in = rest.find(" in ");
    if (in == std::string_view::npos) return "??";
    rest = rest.substr(in + 4);
  }
  if (startsWith(rest, "<")) return std::string(rest.substr(0, rest.find('>') + 1));  // <signal handler called>
  size_t paren = rest.find(" (");
  std::string name(rest.substr(0, paren));
  if (name == "??") {
    size_t from = rest.rfind(" from ");
    if (from != std::string_view::npos) name += " [" + baseName(trimBlanks(rest.substr(from + 6))) + "]";
  }
  return name;
}

// `py-bt`: '  File "/x/train.py", line 12, in stuck_here' -> "py:stuck_here (train.py)".
std::string pythonFrameName(std::string_view line) {
  size_t q1 = line.find('"'), q2 = line.find('"', q1 + 1), in = line.rfind(", in ");
  if (q1 == std::string_view::npos || q2 == std::string_view::npos || in == std::string_view::npos) return {};
  return "py:" + std::string(trimBlanks(line.substr(in + 5))) + " (" + baseName(line.substr(q1 + 1, q2 - q1 - 1)) + ")";
}

// Process and thread start-up frames say nothing about where a rank is.
bool isStartupFrame(const std::string& f) {
  return f == "_start" || f == "start_thread" || f == "clone" || f == "clone3" || startsWith(f, "__libc_start_main") ||
         f == "__libc_start_call_main" || f == "__clone" || f == "__clone3";
}

// A rank waiting in a collective polls: the frames below the library's entry point change from
// one moment to the next, so the stack ends at the entry point (MPI_Barrier, ncclAllReduce...).
bool isCommEntryPoint(const std::string& f) {
  return startsWith(f, "MPI_") || startsWith(f, "PMPI_") || startsWith(f, "nccl") || startsWith(f, "pnccl");
}

// gdb's frames (innermost first) -> the thread's stack, outermost first.
Stack normalise(const std::vector<std::string>& native_innermost_first, const std::vector<std::string>& py_innermost_first) {
  Stack s;
  // Outermost first: from the end. (clang 14 cannot compile libstdc++ 12's views::reverse.)
  for (size_t i = native_innermost_first.size(); i-- > 0;) {
    const std::string& frame = native_innermost_first[i];
    if (isStartupFrame(frame) || (!s.empty() && s.back() == frame)) continue;
    s.push_back(frame);
    if (isCommEntryPoint(frame)) break;
  }
  s.insert(s.end(), py_innermost_first.rbegin(), py_innermost_first.rend());
  return s;
}

}  // namespace

std::vector<Stack> parseGdbStacks(std::string_view text) {
  // `thread apply all bt` and `thread apply all py-bt` each name the thread before its frames.
  std::map<int, std::pair<std::vector<std::string>, std::vector<std::string>>> threads;
  int current = -1;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view line = trimBlanks(raw);
    if (int n = threadNumber(line); n >= 0) {
      current = n;
      threads[current];
    } else if (current >= 0 && line.size() > 1 && line[0] == '#' && line[1] >= '0' && line[1] <= '9') {
      threads[current].first.push_back(frameName(line));
    } else if (current >= 0 && startsWith(line, "File \"")) {
      if (auto f = pythonFrameName(line); !f.empty()) threads[current].second.push_back(f);
    }
  }
  std::vector<Stack> out;
  for (const auto& [n, frames] : threads)  // by thread number: the main thread (1) first
    if (!frames.first.empty() || !frames.second.empty()) out.push_back(normalise(frames.first, frames.second));
  return out;
}

std::vector<StackClass> mergeStacks(const std::vector<RankStacks>& ranks) {
  struct Entry {
    StackClass cls;
    size_t first_seen = 0;
  };
  std::map<std::vector<Stack>, Entry> by_stacks;
  std::map<std::string, Entry> by_error;
  size_t seen = 0;
  for (const auto& r : ranks) {
    std::vector<Stack> threads = r.error.empty() ? parseGdbStacks(r.gdb_output) : std::vector<Stack>{};
    if (r.error.empty() && threads.empty()) {
      auto& e = by_error["gdb showed no frames"];
      if (e.cls.ranks.empty()) e.first_seen = seen++, e.cls.error = "gdb showed no frames";
      e.cls.ranks.push_back(r.rank);
      continue;
    }
    if (!r.error.empty()) {
      auto& e = by_error[r.error];
      if (e.cls.ranks.empty()) e.first_seen = seen++, e.cls.error = r.error;
      e.cls.ranks.push_back(r.rank);
      continue;
    }
    // The main thread apart; the others by distinct stack, with their counts in this rank.
    std::map<Stack, int> others;
    for (size_t i = 1; i < threads.size(); ++i) ++others[threads[i]];
    std::vector<Stack> key{threads.front()};
    for (const auto& [stack, n] : others) key.push_back(stack);
    auto& e = by_stacks[key];
    if (e.cls.ranks.empty()) {
      e.first_seen = seen++;
      e.cls.threads.push_back({threads.front(), 1, 1});
      for (const auto& [stack, n] : others) e.cls.threads.push_back({stack, n, n});
    } else {
      for (size_t i = 1; i < e.cls.threads.size(); ++i) {
        auto& g = e.cls.threads[i];
        const int n = others[g.stack];
        g.min_threads = std::min(g.min_threads, n);
        g.max_threads = std::max(g.max_threads, n);
      }
    }
    e.cls.ranks.push_back(r.rank);
  }
  std::vector<Entry> all;
  for (auto& [k, e] : by_stacks) all.push_back(std::move(e));
  for (auto& [k, e] : by_error) all.push_back(std::move(e));
  // Largest class first; the small ones (the odd rank out) are what the reader looks for next.
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) {
    if (a.cls.error.empty() != b.cls.error.empty()) return a.cls.error.empty();
    if (a.cls.ranks.size() != b.cls.ranks.size()) return a.cls.ranks.size() > b.cls.ranks.size();
    return a.first_seen < b.first_seen;
  });
  std::vector<StackClass> out;
  for (auto& e : all) {
    std::sort(e.cls.ranks.begin(), e.cls.ranks.end());
    out.push_back(std::move(e.cls));
  }
  return out;
}

namespace {

// "ranks 0-3", "rank 2, spawn1:0-1": the job's ranks as ranges, spawned processes by their names.
std::string rankLabel(const std::vector<int>& ranks, const std::function<std::string(int)>& spawned_label) {
  std::vector<int> own;
  std::string spawned;
  for (int r : ranks) {
    const std::string name = spawned_label ? spawned_label(r) : std::string();
    if (name.empty()) own.push_back(r);
    else spawned += (spawned.empty() ? "" : ", ") + name;
  }
  std::string out;
  if (!own.empty()) out = (own.size() == 1 ? "rank " : "ranks ") + formatRankRanges(own);
  if (!spawned.empty()) out += (out.empty() ? "" : ", ") + spawned;
  return out;
}

// Deep stacks (an interpreter's) keep their outermost frames and the innermost ones.
std::string formatStack(const Stack& s) {
  std::vector<std::string> native, py;
  for (const auto& f : s) (startsWith(f, "py:") ? py : native).push_back(startsWith(f, "py:") ? f.substr(3) : f);
  auto join = [](const std::vector<std::string>& frames) {
    constexpr size_t kHead = 2, kTail = 8;
    std::string out;
    for (size_t i = 0; i < frames.size(); ++i) {
      if (frames.size() > kHead + kTail + 1 && i == kHead) {
        out += " > …";
        i = frames.size() - kTail - 1;
        continue;
      }
      out += (out.empty() ? "" : " > ") + frames[i];
    }
    return out;
  };
  std::string out = join(native);
  if (!py.empty()) out += "\n      python: " + join(py);
  return out;
}

}  // namespace

std::string formatStackReport(const std::vector<RankStacks>& ranks, const std::function<std::string(int)>& spawned_label) {
  auto classes = mergeStacks(ranks);
  size_t with_stacks = 0;
  for (const auto& c : classes) with_stacks += c.error.empty() ? 1 : 0;
  std::string out = "stacks of " + std::to_string(ranks.size()) + " rank(s): " + std::to_string(with_stacks) +
                    (with_stacks == 1 ? " class" : " classes") + "\n";
  for (const auto& c : classes) {
    if (!c.error.empty()) {
      out += rankLabel(c.ranks, spawned_label) + ": no stacks: " + c.error + "\n";
      continue;
    }
    out += rankLabel(c.ranks, spawned_label) + ":\n";
    for (const auto& g : c.threads) {
      std::string count = g.max_threads <= 1 ? "" : std::to_string(g.min_threads);
      if (g.max_threads > g.min_threads) count += "-" + std::to_string(g.max_threads);
      out += "    " + (count.empty() ? "" : count + " threads: ") + formatStack(g.stack) + "\n";
    }
  }
  std::map<std::string, std::vector<int>> notes;
  for (const auto& r : ranks)
    if (!r.note.empty()) notes[r.note].push_back(r.rank);
  for (const auto& [note, rs] : notes) out += "note (" + rankLabel(rs, spawned_label) + "): " + note + "\n";
  return out;
}

}  // namespace tlaunch

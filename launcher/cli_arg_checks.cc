#include "launcher/cli_arg_checks.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "bootstrap/path_check.h"
#include "launcher/foreign_flags.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

bool takesOtherProgramsOptions(const CLI::Option& o) { return o.check_name("--ssh-option") || o.check_name("--slurm-args"); }

// `--ssh-option -p 2222`: the value is "-p" alone, and 2222 became the program, with every
// option after it (a --dry-run too) its arguments. A flag of ssh or srun that takes a value,
// given as the whole value: the message, or nullopt. srun's long options are those users pass
// to get or shape an allocation.
std::optional<std::string> otherProgramsFlagWithoutValue(const CLI::Option& o, std::string_view value) {
  const bool ssh = o.check_name("--ssh-option");
  const std::string_view flag = trimBlanks(value);
  bool needs_value = false;
  if (flag.size() == 2 && flag[0] == '-') {
    // ssh(1)'s and srun(1)'s letters that take an argument.
    needs_value = std::string_view(ssh ? "BbcDEeFIiJLlmOoPpQRSWw" : "AbCcDdeGiJLMmNnopqSTtWwx").find(flag[1]) !=
                  std::string_view::npos;
  } else if (!ssh && flag.starts_with("--") && flag.find_first_of("= \t") == std::string_view::npos) {
    static constexpr std::string_view kSrunValued[] = {
        "--account", "--partition", "--time", "--constraint", "--qos", "--reservation", "--nodelist",
        "--exclude", "--gres", "--gpus", "--gpus-per-node", "--mem", "--mem-per-cpu", "--mem-per-gpu",
        "--cpus-per-task", "--cpus-per-gpu", "--job-name", "--chdir", "--export", "--mpi", "--nodes",
        "--ntasks", "--ntasks-per-node", "--time-min", "--distribution", "--cpu-bind", "--container-image",
        "--container-mounts", "--clusters", "--licenses", "--begin", "--deadline", "--comment", "--wckey"};
    needs_value = std::find(std::begin(kSrunValued), std::end(kSrunValued), flag) != std::end(kSrunValued);
  }
  if (!needs_value) return std::nullopt;
  const std::string name = ssh ? "--ssh-option" : "--slurm-args";
  const std::string f(flag);
  return name + " " + f + ": " + (ssh ? "ssh's " : "srun's ") + f +
         " takes a value, which must come in the same word, e.g. " + name + "='" + f + " " +
         (ssh ? (f == "-p" ? "2222" : "VALUE") : (f == "-p" || f == "--partition" ? "debug" : "VALUE")) +
         "' (the word after it would have been taken for the program)";
}

// The option `token` names in `app` or an app above it (a subcommand sees its parent's).
const CLI::Option* optionNamed(const CLI::App& app, std::string_view token) {
  if (token.size() < 2 || token[0] != '-' || token == "--") return nullptr;
  const std::string name(token.substr(0, token.find('=')));
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent())
    for (const CLI::Option* o : a->get_options())
      if (o->check_name(name)) return o;
  return nullptr;
}

}  // namespace

namespace {

// A word that names a program here: a path to an executable, or one found in PATH.
bool isProgram(std::string_view word) {
  const std::string w(word);
  if (w.find('/') != std::string::npos) return ::access(w.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  return programOnPath(w, path ? path : "/usr/bin:/bin").has_value();
}

}  // namespace

TlaunchWords withMpirunSwitches(const CLI::App& app, int argc, const char* const* argv) {
  TlaunchWords result{std::vector<std::string>(argv, argv + argc)};
  std::vector<std::string>& out = result.words;
  const CLI::App* current = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string_view token = argv[i];
    if (token == "--") {  // the program and its own arguments follow
      result.separator = i;
      break;
    }
    const CLI::Option* o = optionNamed(*current, token);
    if (o == nullptr) {
      if (token.empty() || token[0] == '-') continue;
      const auto sub = current->get_subcommands([&](const CLI::App* s) { return s->check_name(std::string(token)); });
      if (sub.empty()) break;  // the program
      current = sub.front();
      continue;
    }
    if (token == "--tag-output") {
      const std::string_view next = i + 1 < argc ? std::string_view(argv[i + 1]) : std::string_view();
      // Bare only where the next word cannot be a value: nothing, an option, or a program (a
      // mistyped value, `--tag-output all`, stays a value and is refused as one).
      if (next.empty() || next[0] == '-' || isProgram(next)) {
        out[static_cast<size_t>(i)] = "--tag-output=full";  // mpirun's [job,rank] tag: the node's and the rank's
        continue;
      }
    }
    const bool attached = token.find('=') != std::string_view::npos || (token[1] != '-' && token.size() > 2);
    i += attached ? 0 : o->get_items_expected_min();
  }
  return result;
}

std::optional<std::string> valueThatIsAnOption(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* current = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string_view token = argv[i];
    if (token == "--") return std::nullopt;  // the program and its own arguments follow
    const CLI::Option* o = optionNamed(*current, token);
    if (o == nullptr) {
      if (auto foreign = foreignLauncherFlag(token)) return foreign;  // before CLI11 reads -np as -n p
      if (token.empty() || token[0] == '-') continue;                  // not ours: CLI11 says so
      const auto sub = current->get_subcommands([&](const CLI::App* s) { return s->check_name(std::string(token)); });
      if (sub.empty()) return std::nullopt;  // the program: what follows is its own
      current = sub.front();
      continue;
    }
    const bool attached = token.find('=') != std::string_view::npos || (token[1] != '-' && token.size() > 2);
    if (takesOtherProgramsOptions(*o)) {
      const auto eq = token.find('=');
      const std::string_view value = eq != std::string_view::npos ? token.substr(eq + 1)
                                     : attached                   ? token.substr(2)
                                     : i + 1 < argc               ? std::string_view(argv[i + 1])
                                                                  : std::string_view();
      if (auto why = otherProgramsFlagWithoutValue(*o, value)) return why;
    }
    // `--summary-json=$OUT` with OUT unset: CLI11 would take the next word (the program) as the value.
    if (const auto eq = token.find('='); eq != std::string_view::npos && o->get_items_expected_min() > 0 &&
                                         trimBlanks(token.substr(eq + 1)).empty())
      return o->get_name() + " was given an empty value (an unset shell variable?): give it one, or leave " +
             o->get_name() + " out";
    const int wants = attached ? 0 : o->get_items_expected_min();
    if (wants > 0 && i + wants >= argc) {
      const std::string given(token);
      return given + " needs " + (wants > 1 ? std::to_string(wants) + " values" : "a value") + ": give " +
             (wants > 1 ? "them" : "it") + " right after " + given;
    }
    for (int k = 1; k <= wants && i + k < argc && !takesOtherProgramsOptions(*o); ++k) {
      const std::string_view next = argv[i + k];
      if (next != "--" && optionNamed(*current, next) == nullptr) continue;
      const std::string given(token);
      return given + " needs " + (wants > 1 ? std::to_string(wants) + " values" : "a value") +
             ", but the argument after it is " + (next == "--" ? std::string("\"--\"") : "the option " + std::string(next)) +
             ": give " + (wants > 1 ? "them" : "it") + " right after " + given;
    }
    i += wants;
  }
  return std::nullopt;
}

std::optional<std::string> optionAsProgram(const CLI::App& app, std::string_view program) {
  const CLI::Option* o = optionNamed(app, program);
  if (o == nullptr) return std::nullopt;
  return "'" + visibleText(program) + "' comes after --, so it would be run as the program: tlaunch's options (" +
         o->get_name() + ") go before the -- (tlaunch " + visibleText(program) + " ... -- PROGRAM ARGS)";
}

std::optional<std::string> programWordMistake(std::string_view program) {
  // `-x A=1 B=2`, or a shell's `B=2 python train.py`: the assignment would be run as a program.
  const auto eq = program.find('=');
  const std::string_view name = program.substr(0, eq);
  const bool identifier = !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
                          std::all_of(name.begin(), name.end(), [](char c) {
                            return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
                          });
  if (eq != std::string_view::npos && identifier)
    return "'" + visibleText(program) + "' would be run as the program: give variables with -x, one variable each (-x " +
           visibleText(program) + "); a program whose name holds '=' goes as a path (./" + visibleText(program) + ")";
  // An option pasted from a document that turned "--" into a dash character.
  for (std::string_view dash : {"\u2014", "\u2013", "\u2212", "\u2010", "\u2011"})
    if (program.starts_with(dash)) {
      const std::string_view rest = program.substr(dash.size());
      return "'" + visibleText(program) + "' starts with a typographic dash, not '-' (pasted from a document?): " +
             "type the option again as " + (rest.size() == 1 ? "-" : "--") + visibleText(rest);
    }
  return std::nullopt;
}

std::optional<std::string> optionGivenEmpty(const CLI::App& app) {
  for (const CLI::App* a = &app;;) {
    for (const CLI::Option* o : a->get_options()) {
      if (o->count() == 0 || o->get_items_expected_min() == 0) continue;
      for (const std::string& v : o->results())
        if (trimBlanks(v).empty())
          return o->get_name() + " was given an empty value (an unset shell variable?): give it one, or leave " +
                 o->get_name() + " out";
    }
    const auto parsed = a->get_subcommands();
    if (parsed.empty()) return std::nullopt;
    a = parsed.front();
  }
}

namespace {
// "--nodes" for -N,--nodes: the name the user can look up in --help.
std::string shownName(const CLI::Option& o) {
  if (!o.get_lnames().empty()) return "--" + o.get_lnames().front();
  if (!o.get_snames().empty()) return "-" + o.get_snames().front();
  return o.get_name();
}
}  // namespace

std::optional<std::string> optionMisplacedAroundSubcommand(
    const CLI::App& app, const std::vector<std::pair<const CLI::App*, const char*>>& whole_host,
    const CLI::App& preflight) {
  for (const auto& [sub, what] : whole_host) {
    if (!sub->parsed()) continue;
    for (const char* flag : {"--hosts", "--hostfile", "--nodes", "--nnodes", "--include", "--exclude", "--launcher"})
      if (const CLI::Option* o = app.get_option_no_throw(flag); o && o->count() > 0)
        return shownName(*o) + " chooses nodes, but '" + sub->get_name() + "' takes none: " + what;
  }
  if (!preflight.parsed()) return std::nullopt;
  for (const CLI::Option* o : app.get_options()) {
    if (o->count() == 0) continue;
    const CLI::Option* again = preflight.get_option_no_throw(shownName(*o));
    if (again && again->count() > 0) return shownName(*o) + " was given before and after 'preflight': give it once";
  }
  return std::nullopt;
}

namespace {
// Edits between two names of a dozen letters: insert, delete, replace, or swap two neighbours
// ("stauts" is one swap from "status"): the optimal string alignment distance.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> subcommandLookalike(const std::string& program, const std::string& path) {
  if (program.size() < 3 || program.find('/') != std::string::npos) return std::nullopt;
  std::optional<std::string> closest;
  size_t best = 3;  // at most two edits
  for (const char* name : {"topo", "preflight", "stacks", "status", "stop-daemons", "nccl-report"}) {
    const size_t distance = editDistance(program, name);
    if (distance == 0) return std::nullopt;
    if (distance < best) {
      best = distance;
      closest = name;
    }
  }
  if (closest && programOnPath(program, path)) return std::nullopt;
  return closest;
}

}  // namespace tlaunch

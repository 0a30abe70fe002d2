#pragma once
// Mistakes on the command line that CLI11 takes for values, found before they change the job.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace tlaunch {

// CLI11 gives an option that needs a value the next argument, whatever it is. A value left out
// before another option or "--" made that option's name the value: `--summary-json --dry-run`
// ran the job for real and wrote a file named "--dry-run". The message, or nullopt.
// Values of --ssh-option and --slurm-args are other programs' options and may look like ours;
// one that is a lone ssh or srun flag needing a value (`--ssh-option -p 2222`) is refused.
// Also another launcher's flag before the program (`-np 4`, `--rdzv-endpoint`): what to give
// instead (launcher/foreign_flags.h).
std::optional<std::string> valueThatIsAnOption(const CLI::App& app, int argc, const char* const* argv);
// argv with mpirun's bare switch `--tag-output` (no value: tlaunch's takes one) written as
// `--tag-output=full`, among tlaunch's own options only (never in the program's arguments).
// `separator`: the index of the "--" that ends tlaunch's own words (the program follows it), -1
// when there is none: what follows it is never a subcommand (`tlaunch -- status` runs a
// program named status).
struct TlaunchWords {
  std::vector<std::string> words;
  int separator = -1;
};
TlaunchWords withMpirunSwitches(const CLI::App& app, int argc, const char* const* argv);

// The program after "--" is one of tlaunch's options (`tlaunch -- -N 2 train.py`): the message.
std::optional<std::string> optionAsProgram(const CLI::App& app, std::string_view program);

// The program's word that is a mistake: a variable assignment (`-x A=1 B=2`, a shell's `B=2 prog`)
// or an option typed with a typographic dash (`—hosts`). The message, or nullopt.
std::optional<std::string> programWordMistake(std::string_view program);

// After parsing: an option given an empty value (`--hosts "$HOSTS"` with HOSTS unset ran the
// job on this host instead of the nodes meant). The message, or nullopt.
std::optional<std::string> optionGivenEmpty(const CLI::App& app);

// Options before a subcommand (an alias such as `tlaunch --net tcp` stays usable with every one),
// except: a node choice before a subcommand that takes none (`tlaunch --hosts n1 stop-daemons`
// would end every warm daemon of the user's, not n1's) — `whole_host` pairs each such
// subcommand with what it does instead — and an option given on both sides of `preflight`
// (the last value would win without a word). The message, or nullopt.
std::optional<std::string> optionMisplacedAroundSubcommand(
    const CLI::App& app, const std::vector<std::pair<const CLI::App*, const char*>>& whole_host,
    const CLI::App& preflight);

// `tlaunch stauts`: a program that is no file on `path` (this host's PATH) and is one or two
// letters from a subcommand's name. That subcommand, or nullopt. The program may still exist on
// the nodes: the caller only says so, and runs the job.
std::optional<std::string> subcommandLookalike(const std::string& program, const std::string& path);

}  // namespace tlaunch

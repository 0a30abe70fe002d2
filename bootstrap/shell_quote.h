#pragma once
// POSIX shell quoting for command lines that a remote shell will parse (ssh joins its
// arguments into one string), and the inverse split for flags that take several
// arguments in one string (--slurm-args="-p gpu -t 10", --ssh-option="-p 2222").
#include <string>
#include <string_view>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

// One word, single-quoted: 'it'\''s'. Every byte survives a POSIX shell (sh, dash, bash,
// zsh) unchanged, newlines included. Not for csh/fish login shells.
std::string shellQuote(std::string_view word);

// Each word quoted, joined by single spaces.
std::string shellJoin(const std::vector<std::string>& words);

// Splits like a POSIX shell without expansions: whitespace separates words; '...' is
// literal; "..." honours \" \\ \$ \` and \<newline>; a backslash outside quotes escapes the
// next character. `$`, globs and the like stay literal. Unterminated quotes are an error
// naming `what` (e.g. "--slurm-args").
Result<std::vector<std::string>> splitShellWords(std::string_view text, std::string_view what);

}  // namespace tlaunch

#pragma once
// Slurm hostlist expressions: "gpu[01-04,07],cpu[1-3]", "rack[1-2]-node[01-02]".
// Pure: no I/O, no logging.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

// As many nodes as a job may have (-N, kMaxNodes): a longer list is a mistake, refused before
// anything is expanded or planned.
inline constexpr size_t kMaxHostlistNames = 100'000;

// Expands an expression into names, in order. Commas and whitespace outside brackets
// separate names; inside brackets, commas separate ranges `N` or `N-M`. Zero padding is
// kept ("[08-10]" → 08 09 10). With several bracket groups the leftmost varies slowest.
// Errors (unbalanced brackets, empty or reversed ranges, non-digits, more than `max_names`
// names) quote the expression. The count is checked before anything is expanded.
Result<std::vector<std::string>> expandHostlist(std::string_view expression,
                                                size_t max_names = kMaxHostlistNames);

// The inverse: one expression for the names, in their order, merging neighbours that
// differ only in their last number ("node01,node02,node03,node07" → "node[01-03,07]").
// expandHostlist(compressHostlist(names)) == names.
std::string compressHostlist(const std::vector<std::string>& names);

// Splits `text` at `separator`s that are not inside [...] ("a[1,2]:0,b" at ',' →
// "a[1,2]:0", "b"). Pieces are not trimmed.
std::vector<std::string_view> splitOutsideBrackets(std::string_view text, char separator);

}  // namespace tlaunch

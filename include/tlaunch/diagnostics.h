#pragma once
// Messages for users come from one catalogue (bootstrap/diagnostics/catalogue.txt), as Open MPI
// and PRRTE keep theirs in help files: the wording lives in one place, is reviewed as text, and a
// test checks every call against it (tests/unit/diagnostics_catalogue_check.py). Code names a
// topic and fills its {placeholders}:
//
//   return diagnostic(Errc::usage, "hostfile-no-hosts", {{"file", path}});
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "tlaunch/result.h"

namespace tlaunch {

struct DiagnosticArg {
  std::string_view name;
  std::string value;
};

// The topic's message and hint with each {name} replaced by its value, as an Error of `code`
// (ready for fail()/describeError). A topic the catalogue lacks is a programming error: the
// message then says so, naming the topic, rather than hiding the failure.
Error diagnosticError(Errc code, std::string_view topic, std::initializer_list<DiagnosticArg> args = {});

// The same as a failed Result, for `return diagnostic(...)`.
inline tl::unexpected<Error> diagnostic(Errc code, std::string_view topic, std::initializer_list<DiagnosticArg> args = {}) {
  return tl::unexpected<Error>(diagnosticError(code, topic, args));
}

// One topic of the catalogue: its message and its hint (may be empty), placeholders unfilled.
struct DiagnosticText {
  std::string message;
  std::string hint;
};
// The catalogue's grammar: "[topic]" opens a topic, its lines are the message, a line starting
// with "-> " starts the hint; '#' lines and blank lines between topics are comments. An error
// names the line of a duplicate topic, a topic without a message, or text before any topic.
Result<std::map<std::string, DiagnosticText, std::less<>>> parseCatalogue(std::string_view text);
// The compiled-in catalogue, parsed once.
const std::map<std::string, DiagnosticText, std::less<>>& diagnosticsCatalogue();

}  // namespace tlaunch

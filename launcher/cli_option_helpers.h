#pragma once
// Small pieces shared by the files that declare tlaunch's options (cli_options.cc,
// export_flags_cli.cc): a checked value turned into CLI11's error, and a bounded count.
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include "bootstrap/error_text.h"
#include "launcher/cli_values.h"
#include "tlaunch/result.h"

namespace tlaunch {

// A checked value, or a CLI11 parse error carrying our message (exit 64 like every usage error).
template <class T>
T orThrow(Result<T> r) {
  if (!r) throw CLI::ValidationError(describeError(r.error()));
  return std::move(*r);
}

// An option whose value `parse(shown, text, min, max)` checks into `target`; `shown` names it in
// messages, and the bounds are part of its meaning (said in --help).
template <class Parse>
CLI::Option* addBounded(CLI::App& app, const std::string& names, const std::string& shown, int& target, int min,
                        int max, const std::string& help, Parse parse, const std::string& type, const std::string& unit) {
  return app
      .add_option_function<std::string>(
          names, [&target, shown, min, max, parse](const std::string& v) { target = orThrow(parse(shown, v, min, max)); },
          help + " [" + std::to_string(min) + "-" + std::to_string(max) + unit + "]")
      ->type_name(type);
}

// An integer option.
inline CLI::Option* addCount(CLI::App& app, const std::string& names, const std::string& shown, int& target, int min,
                             int max, const std::string& help) {
  return addBounded(app, names, shown, target, min, max, help, parseBoundedInt, "N", "");
}

// A timeout in seconds: a bare number, or a duration with units (parseSeconds).
inline CLI::Option* addSeconds(CLI::App& app, const std::string& names, const std::string& shown, int& target, int min,
                               int max, const std::string& help) {
  return addBounded(app, names, shown, target, min, max, help, parseSeconds, "SECONDS", " s; 30s, 2m also work");
}

}  // namespace tlaunch

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

// An integer option whose bounds are part of its meaning; `shown` names it in messages.
inline CLI::Option* addCount(CLI::App& app, const std::string& names, const std::string& shown, int& target, int min,
                             int max, const std::string& help) {
  return app
      .add_option_function<std::string>(
          names, [&target, shown, min, max](const std::string& v) { target = orThrow(parseBoundedInt(shown, v, min, max)); },
          help + " [" + std::to_string(min) + "-" + std::to_string(max) + "]")
      ->type_name("N");
}

// A timeout in seconds: a bare number, or a duration with units (parseSeconds).
inline CLI::Option* addSeconds(CLI::App& app, const std::string& names, const std::string& shown, int& target, int min,
                               int max, const std::string& help) {
  return app
      .add_option_function<std::string>(
          names, [&target, shown, min, max](const std::string& v) { target = orThrow(parseSeconds(shown, v, min, max)); },
          help + " [" + std::to_string(min) + "-" + std::to_string(max) + " s; 30s, 2m also work]")
      ->type_name("SECONDS");
}

}  // namespace tlaunch

// libFuzzer harness: hostfiles (Open MPI / DeepSpeed / MPICH forms), --hosts and
// --include/--exclude. The input is the hostfile, then optionally a NUL and an include or
// exclude expression.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "launcher/hostlist.h"
#include "launcher/node_source.h"

namespace {

constexpr size_t kMaxFuzzNames = 20000;

// True when the input's host expressions could expand to more than kMaxFuzzNames names. A
// million names (the real limit) is correct but takes half a minute under the sanitizers: time
// better spent on other inputs. Counted by the hostlist code itself, on the runs between
// hostlist separators: every name the parsers expand comes from a part of one such run, so
// never from a bigger product.
bool tooManyNames(std::string_view input) {
  std::string flat(input);
  for (char& c : flat) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\0') c = ',';
  }
  size_t total = 0;
  for (std::string_view run : tlaunch::splitOutsideBrackets(flat, ',')) {
    if (run.empty()) continue;
    auto names = tlaunch::expandHostlist(run, kMaxFuzzNames);
    if (names) total += names->size();
    if (total > kMaxFuzzNames) return true;
    if (!names && names.error().message.find("expands to more") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (tooManyNames(input)) return 0;
  const size_t nul = input.find('\0');
  const std::string_view content = input.substr(0, nul);
  const std::string_view filter = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);

  (void)tlaunch::parseHostsOption(content);
  auto hosts = tlaunch::parseHostfile(content, "fuzz.hosts");
  if (!hosts) return 0;
  if (hosts->empty()) std::abort();
  for (const auto& h : *hosts) {
    if (h.name.empty() || (h.slots < 1 && h.slots != -1)) std::abort();
  }
  const bool include = !filter.empty() && (filter[0] & 1);
  auto chosen = tlaunch::applyIncludeExclude(*hosts, include ? filter : "", include ? "" : filter);
  if (!chosen) return 0;
  if (chosen->empty() || chosen->size() > hosts->size()) std::abort();
  (void)tlaunch::selectNodes(*chosen, static_cast<int>(size % 3), static_cast<int>(size % 5));
  return 0;
}

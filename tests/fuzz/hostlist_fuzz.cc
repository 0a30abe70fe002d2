// libFuzzer harness: Slurm hostlist expressions ("node[1-4,07]") and SLURM_TASKS_PER_NODE.
// Checks the documented inverse: expandHostlist(compressHostlist(names)) == names.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "launcher/hostlist.h"
#include "launcher/node_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  std::string joined;
  for (auto piece : tlaunch::splitOutsideBrackets(text, ',')) {
    if (!joined.empty() || piece.data() != text.data()) joined += ',';
    joined += piece;
  }
  if (joined != text) std::abort();

  (void)tlaunch::parseSlurmTasksPerNode(text);

  // Expansions are capped far below the real limit: a million names is correct but takes
  // seconds under the sanitizers, time better spent on other inputs. The cap is checked
  // before anything is expanded, by the same code as the real limit.
  auto names = tlaunch::expandHostlist(text, 10000);
  if (!names) return 0;
  if (names->empty()) std::abort();
  // Round trip only for names a hostlist can hold: the compressor takes them as they are.
  for (const auto& n : *names) {
    if (n.find_first_of("[], \t\n") != std::string::npos) return 0;
  }
  const std::string compressed = tlaunch::compressHostlist(*names);
  auto back = tlaunch::expandHostlist(compressed);
  if (!back || *back != *names) std::abort();
  return 0;
}

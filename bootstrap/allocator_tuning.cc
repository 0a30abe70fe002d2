#include "bootstrap/allocator_tuning.h"

#include <malloc.h>

namespace tlaunch {

void tuneAllocatorForMessages() {
  // Fixing the mmap threshold also ends glibc's own adjustment of it; a failure (another
  // allocator, e.g. under ASan) leaves the defaults, which are correct, only slower.
  (void)::mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapBufferMax));
  (void)::mallopt(M_TRIM_THRESHOLD, static_cast<int>(kKeptFreeHeap));
}

}  // namespace tlaunch

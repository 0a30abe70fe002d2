#pragma once
// glibc malloc settings for tlaunch and tlaunchd, whose messages can be large and come again and
// again (a fence's result: every rank's data, 256 KB at 64 ranks x 4 KiB, every fence). By
// default glibc maps each buffer over its mmap threshold anew and returns freed memory at the
// top of the heap to the kernel, so every fence paid page faults for fresh zeroed pages in the
// daemon (perf: a quarter of its time, in our I/O thread and in libpmix's alike). Kept instead
// up to the sizes below; ranks are not affected (they get the user's environment and their own
// allocator).
#include <cstddef>

namespace tlaunch {

// Buffers up to this size come from the heap and are reused once freed.
inline constexpr std::size_t kHeapBufferMax = std::size_t{32} << 20;
// Free memory at the top of a heap that is kept rather than given back.
inline constexpr std::size_t kKeptFreeHeap = std::size_t{64} << 20;
// glibc refuses a larger mmap threshold on 64-bit (HEAP_MAX_SIZE / 2), and the call's result is
// not checked.
static_assert(kHeapBufferMax <= (std::size_t{32} << 20));

// Call once at the start of main, before any thread.
void tuneAllocatorForMessages();

}  // namespace tlaunch

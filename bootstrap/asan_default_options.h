#pragma once
// Included once by each program's main (tlaunch, tlaunchd): in the sanitizer build, ASan's
// defaults for processes whose environment we do not control (daemons started over ssh or srun).
// alloc_dealloc_mismatch is off: in the sanitized build, Asio's recycling handler allocator frees with free()
// what another translation unit's inlined copy allocated with operator new (both are malloc in
// glibc, so harmless; to be found and fixed at the root).
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() { return "detect_leaks=0:alloc_dealloc_mismatch=0"; }
#endif

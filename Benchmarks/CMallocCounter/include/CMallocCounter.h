#ifndef SERIALGPS_CMALLOCCOUNTER_H
#define SERIALGPS_CMALLOCCOUNTER_H

// A malloc-counting shim for the benchmark only.
//
// Linking this module into an executable replaces malloc, calloc, realloc, free,
// posix_memalign, aligned_alloc, memalign, valloc and pvalloc for the whole process (the
// executable's definitions win over libc's in the dynamic linker's lookup). Each call is
// counted with a relaxed atomic increment and forwarded to glibc's allocator through its
// `__libc_*` entry points, so no dlsym bootstrap problem arises.

#include <stdint.h>

/// Allocation counters since process start.
typedef struct {
  /// malloc, calloc, posix_memalign, aligned_alloc, memalign, valloc, pvalloc calls, and
  /// realloc calls that grow or move a block (`realloc(NULL, n)` included).
  uint64_t allocations;
  /// free calls with a non-NULL pointer (and realloc(p, 0)).
  uint64_t frees;
  /// Bytes requested by the counted allocations.
  uint64_t bytes;
} malloc_counter_snapshot_t;

/// The counters now.
malloc_counter_snapshot_t malloc_counter_snapshot(void);

/// Whether the shim is active: 1 once any allocation went through it.
int malloc_counter_is_active(void);

#endif

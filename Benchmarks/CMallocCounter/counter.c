// Counting wrappers around glibc's allocator. See CMallocCounter.h.
#include "CMallocCounter.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

// glibc's own entry points, exported for exactly this kind of interposition.
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void __libc_free(void *pointer);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

static uint64_t allocation_count;
static uint64_t free_count;
static uint64_t byte_count;

static inline void count_allocation(size_t size) {
  __atomic_fetch_add(&allocation_count, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&byte_count, (uint64_t)size, __ATOMIC_RELAXED);
}

static inline void count_free(void) {
  __atomic_fetch_add(&free_count, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t size) {
  count_allocation(size);
  return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
  count_allocation(count * size);
  return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
  if (pointer == NULL) {
    count_allocation(size);
  } else if (size == 0) {
    count_free();
  } else {
    // A resize is an allocator call the hot path should never make: count it.
    count_allocation(size);
  }
  return __libc_realloc(pointer, size);
}

void free(void *pointer) {
  if (pointer != NULL) count_free();
  __libc_free(pointer);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
  // The same argument checks as glibc: a power of two multiple of sizeof(void *).
  if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0 || alignment == 0) {
    return EINVAL;
  }
  count_allocation(size);
  void *pointer = __libc_memalign(alignment, size);
  if (pointer == NULL) return ENOMEM;
  *result = pointer;
  return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
  count_allocation(size);
  return __libc_memalign(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
  count_allocation(size);
  return __libc_memalign(alignment, size);
}

void *valloc(size_t size) {
  count_allocation(size);
  return __libc_valloc(size);
}

void *pvalloc(size_t size) {
  count_allocation(size);
  return __libc_pvalloc(size);
}

malloc_counter_snapshot_t malloc_counter_snapshot(void) {
  malloc_counter_snapshot_t snapshot;
  snapshot.allocations = __atomic_load_n(&allocation_count, __ATOMIC_RELAXED);
  snapshot.frees = __atomic_load_n(&free_count, __ATOMIC_RELAXED);
  snapshot.bytes = __atomic_load_n(&byte_count, __ATOMIC_RELAXED);
  return snapshot;
}

int malloc_counter_is_active(void) {
  return __atomic_load_n(&allocation_count, __ATOMIC_RELAXED) > 0;
}

/* nnmem/allocator.h - a general-purpose allocator for host code: per-thread
 * caches of small blocks in front of a shared tiered pool.
 *
 *   nnmem_allocator_config_t cfg; nnmem_allocator_config_init(&cfg);
 *   nnmem_allocator_t *a; nnmem_allocator_create(&cfg, &a);
 *   void *p = nnmem_alloc(a, 3 << 20);          NULL on failure
 *   nnmem_free(a, p);
 *   nnmem_allocator_destroy(a);
 *
 * Small requests (<= 8 KiB, alignment <= 16) are served from the calling
 * thread's cache without a lock; a block freed by another thread returns
 * to its owner through a lock-free multi-producer queue. A thread's cache
 * is flushed when the thread exits. Larger requests go to the shared pool
 * under a short mutex whose contention is counted.
 *
 * Thread-safety: every function may be called from any thread, except
 * nnmem_allocator_destroy, which must not run concurrently with any other
 * use of the same allocator. */
#ifndef NNMEM_ALLOCATOR_H
#define NNMEM_ALLOCATOR_H

#include "nnmem/backend.h"
#include "nnmem/pool.h"
#include "nnmem/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nnmem_allocator_config {
  uint32_t size;            /* sizeof(nnmem_allocator_config_t) */
  nnmem_backend_t *backend; /* NULL = a host backend owned by the allocator;
                               must be NNMEM_BACKEND_BACKED */
  int no_thread_cache;      /* 1: every call goes to the shared pool */
  uint64_t small_max;       /* tiered thresholds (see nnmem_pool_config_t) */
  uint64_t large_min;
} nnmem_allocator_config_t;

void nnmem_allocator_config_init(nnmem_allocator_config_t *cfg);

typedef struct nnmem_allocator nnmem_allocator_t;

/* `cfg` may be NULL. NNMEM_ERR_INVALID for an unbacked backend. */
nnmem_status_t nnmem_allocator_create(const nnmem_allocator_config_t *cfg,
                                      nnmem_allocator_t **out);
/* Frees everything, live blocks included. NULL is a no-op. */
void nnmem_allocator_destroy(nnmem_allocator_t *a);

/* NULL for size 0 or on failure; 16-byte aligned. */
void *nnmem_alloc(nnmem_allocator_t *a, size_t size);
/* NULL when `align` is not a power of two or on failure. */
void *nnmem_alloc_aligned(nnmem_allocator_t *a, size_t size, size_t align);
/* NULL is a no-op; a pointer the allocator does not own is ignored and
 * counted (misuse_count). */
void nnmem_free(nnmem_allocator_t *a, void *ptr);
/* The same with a status: NNMEM_ERR_INVALID for a foreign pointer. */
nnmem_status_t nnmem_allocator_free(nnmem_allocator_t *a, void *ptr);

/* Returns the calling thread's cached free pages to the shared pool. */
void nnmem_allocator_thread_flush(nnmem_allocator_t *a);

/* Aggregated statistics (thread caches + shared pool). requested_bytes
 * counts small blocks by their class size; allocated/reserved_bytes count
 * the thread caches' 64 KiB pages as shared-pool blocks; cache_misses are
 * trips to the shared pool for a new page; misuse_count counts rejected
 * frees. Takes the allocator's mutex briefly. */
nnmem_status_t nnmem_allocator_stats(nnmem_allocator_t *a, nnmem_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_ALLOCATOR_H */

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
 * Limits: the 64 KiB pages of the thread caches stay with the allocator
 * (reused, not given back to the backend) until nnmem_allocator_destroy; a
 * cache of an exited thread is parked with its partly used pages until a
 * new thread adopts it. Complexity: O(1) per call on the cached path, the
 * shared pool's on the others.
 *
 * Thread-safety: every function may be called from any thread, except
 * nnmem_allocator_destroy, which must not run concurrently with any other
 * use of the same allocator. A block may be freed by any thread, not only
 * the one that allocated it. */
#ifndef NNMEM_ALLOCATOR_H
#define NNMEM_ALLOCATOR_H

#include "nnmem/backend.h"
#include "nnmem/leaks.h"
#include "nnmem/pool.h"
#include "nnmem/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nnmem_allocator_config {
  uint32_t size;            /* sizeof(nnmem_allocator_config_t); 0 =
                               current; a smaller (older) size is read only
                               that far, later fields keep defaults */
  nnmem_backend_t *backend; /* NULL = a host backend owned by the allocator;
                               must be NNMEM_BACKEND_BACKED */
  int no_thread_cache;      /* 1: every call goes to the shared pool */
  uint64_t small_max;       /* tiered thresholds (see nnmem_pool_config_t) */
  uint64_t large_min;
  /* leak records (nnmem/leaks.h), copied at create; NULL: from the
   * environment (NNMEM_LEAKS, off when unset or malformed) */
  const nnmem_leaks_config_t *leaks;
  /* empty slabs each size class of the shared pool keeps for reuse (see
   * nnmem_pool_config_t.keep_empty; 0: none): no map / unmap per block
   * when a few mid-size blocks come and go (the malloc front keeps 32) */
  uint32_t keep_empty;
  /* sampled latency (appended): time 1 call in N on every path, the
   * thread-cache path included (cycle counter calibrated to ns); 0 = 64,
   * 1 = every call, UINT32_MAX = about never (a thread cache's allocation
   * then never: no countdown on its fast path). Also the shared pools'. */
  uint32_t latency_sample;
  /* batched frees (appended; 0 = off, the default): a thread-cache block
   * freed by the thread is queued in its cache and up to `free_batch`
   * queued blocks (at most 64) are returned together, their page headers
   * and block bits prefetched first, so the cache misses of random-order
   * frees overlap. The checks run at the flush: nnmem_allocator_free then
   * returns NNMEM_OK for a queued pointer, and a double or bad free found
   * later is counted and passed to `on_misuse(misuse_ctx, ptr)` (called
   * in the freeing thread, no lock held) when set. A thread's queue is
   * flushed when it fills, by nnmem_allocator_thread_flush and when the
   * thread exits. The malloc front uses it. */
  uint32_t free_batch;
  void (*on_misuse)(void *ctx, const void *ptr);
  void *misuse_ctx;
  /* (appended) 1: a thread cache's span that empties and goes back to
   * its span pool stays resident while at most 64 MiB of such spans of
   * blocks over 8 KiB do, or 128 MiB of the one-unit spans of smaller
   * blocks (reused without page faults); beyond, its pages go back to the
   * system with madvise(MADV_DONTNEED) (refaulted on reuse). Also (decay): on its misses a thread cache sweeps, at most
   * every 1 ms, its spans of blocks from 8 KiB; the free blocks of a span
   * unchanged since the previous sweep give their whole pages back the
   * same way (MADV_DONTNEED; refaulted when handed out again). Only for a
   * backend of private anonymous memory (host, mmap); 0, the default:
   * every span stays resident until destroy. */
  int decommit_spans;
  /* (appended) quarantine: 0, the default, off (no cost on the fast
   * paths). Else the bytes of freed blocks held back before they can be
   * handed out again: every free (nnmem_free, nnmem_allocator_free, from
   * any thread; not free_batch's queue, which is off then) puts the block
   * at the tail of one FIFO, and the oldest leave, really freed, while the
   * blocks held exceed the budget (a block larger than the budget passes
   * straight through). A held block carries a quarantine tag, so a second
   * free of it is refused (misuse_count) as a second free of a free block
   * is; a stale free made after the block left the quarantine and was
   * handed out again is still not caught (the window grows with the
   * budget). Small and large blocks alike (aligned ones included);
   * tagged caches (domains) are not quarantined. Stats: quarantine_bytes
   * and quarantine_blocks. A free then takes a mutex. */
  uint64_t quarantine_bytes;
  /* (appended) with a quarantine, 1: a held thread-cache block (<= 128
   * KiB, alignment <= 16) freed by its owner thread is filled with a
   * pattern (all but its first 16 bytes) and checked when it leaves; a block written meanwhile (a use
   * after free) is counted (quarantine_writes) and passed to
   * on_quarantine_write(misuse_ctx, ptr) when set (freeing thread, no lock
   * held); it is freed all the same */
  int quarantine_fill;
  void (*on_quarantine_write)(void *ctx, const void *ptr);
} nnmem_allocator_config_t;

NNMEM_API void nnmem_allocator_config_init(nnmem_allocator_config_t *cfg);

typedef struct nnmem_allocator nnmem_allocator_t;

/* `cfg` may be NULL. NNMEM_ERR_INVALID for an unbacked backend. */
NNMEM_API nnmem_status_t nnmem_allocator_create(
    const nnmem_allocator_config_t *cfg, nnmem_allocator_t **out);
/* Frees everything, live blocks included. NULL is a no-op. */
NNMEM_API void nnmem_allocator_destroy(nnmem_allocator_t *a);

/* NULL for size 0 or on failure; 16-byte aligned. */
NNMEM_API void *nnmem_alloc(nnmem_allocator_t *a, size_t size);
/* NULL when `align` is not a power of two (0 means 16) or over 2^56, or on
 * failure. */
NNMEM_API void *nnmem_alloc_aligned(nnmem_allocator_t *a, size_t size,
                                    size_t align);
/* NULL is a no-op; a pointer the allocator does not own is ignored and
 * counted (misuse_count). Detected in every build: a foreign pointer, an
 * interior or misaligned pointer, a block-aligned pointer past a small
 * page's last block or (freed on the thread owning the page) into its
 * never-used part, a second free of any block while it is free (small
 * blocks: a bit per block, set while handed out, and one set while it
 * waits on its owner's remote stack; with a quarantine, also while it is
 * held there). Not detected: a stale second free after the block was
 * handed out again (it cannot be told from a free of the new owner): a
 * quarantine (config quarantine_bytes) delays that reuse. */
NNMEM_API void nnmem_free(nnmem_allocator_t *a, void *ptr);
/* The same with a status: NNMEM_ERR_INVALID for a detected misuse (nothing
 * changes). A thread with no cache (one past its cache's exit, or one for
 * which none can be made) hands small blocks to their owner's remote
 * stack, as any non-owner does. */
NNMEM_API nnmem_status_t nnmem_allocator_free(nnmem_allocator_t *a, void *ptr);

/* Returns the calling thread's empty pages to the shared page pool (after
 * taking in the blocks other threads freed to it); other threads' caches
 * are untouched. */
NNMEM_API void nnmem_allocator_thread_flush(nnmem_allocator_t *a);

/* Aggregated statistics (thread caches + shared pool). requested_bytes
 * counts small blocks by their class size; allocated/reserved_bytes count
 * the thread caches' 64 KiB pages as shared-pool blocks; cache_misses are
 * trips to the shared pool for a new page; misuse_count counts rejected
 * frees; the latency histogram merges the thread caches' sampled calls
 * (1 in latency_sample, cycle counter) with the shared pools'. Takes the
 * allocator's mutex briefly. While other threads run it
 * is a snapshot of counters read one cache after the other, not of one
 * instant: the live count and bytes may be off by the operations in
 * flight (never below 0). */
NNMEM_API nnmem_status_t nnmem_allocator_stats(nnmem_allocator_t *a,
                                               nnmem_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_ALLOCATOR_H */

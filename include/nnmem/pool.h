/* nnmem/pool.h - pools: sub-allocate regions of one backend.
 *
 * kind        algorithm                                   alloc / free
 * tiered      router: < small_max slab classes,           as the tier
 *             < large_min TLSF (or buddy), else backend
 * tlsf        two-level segregated fit, immediate         O(1) / O(1)
 *             coalescing, good fit (Masmano et al. 2004)
 * best-fit    smallest fitting free block, ordered tree   O(log n)
 * first-fit   lowest-address fitting block, ordered tree  O(log n)
 * buddy       power-of-two orders, buddy coalescing       O(log range)
 * slab        size classes, a stack of free slot indices  O(1)
 *             per slab; larger sizes get their own region
 * fixed       one block size, LIFO free list, grows by    O(1)
 *             chunks when free blocks drop below a mark
 *             (optionally refilled in the background)
 * shape       dynamic shapes: one block preallocated at   O(log n)
 *             creation (the largest shape's bytes), split
 *             on demand, best-fit free blocks in a treap,
 *             coalesced; never grows, never returned
 *
 * All metadata lives outside the managed memory, so a pool works on
 * unbacked (simulated device) address ranges. Every free is validated
 * against the pool's table of live blocks: a double free, a pointer the
 * pool did not hand out, or a misaligned pointer returns NNMEM_ERR_INVALID
 * and changes nothing. With NNMEM_DEBUG, backed memory is filled with 0xAA
 * when handed out and 0x55 when freed.
 *
 * Thread-safety: a pool is not synchronized unless cfg.thread_safe is set;
 * then every call takes the pool's mutex (try-lock first; failures are
 * counted as contention in the stats). */
#ifndef NNMEM_POOL_H
#define NNMEM_POOL_H

#include "nnmem/backend.h"
#include "nnmem/problem.h"
#include "nnmem/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nnmem_pool_kind {
  NNMEM_POOL_TIERED = 0, /* the default */
  NNMEM_POOL_TLSF,
  NNMEM_POOL_BEST_FIT,
  NNMEM_POOL_FIRST_FIT,
  NNMEM_POOL_BUDDY,
  NNMEM_POOL_SLAB,
  NNMEM_POOL_FIXED,
  NNMEM_POOL_SHAPE, /* dynamic-shape pool: one preallocated block */
  NNMEM_POOL_KIND_COUNT_
} nnmem_pool_kind_t;

/* "tiered", "tlsf", "best-fit", "first-fit", "buddy", "slab", "fixed",
 * "shape". */
NNMEM_API const char *nnmem_pool_kind_name(nnmem_pool_kind_t k);
/* NNMEM_ERR_NOT_FOUND for unknown names. */
NNMEM_API nnmem_status_t nnmem_pool_kind_parse(const char *name,
                                               nnmem_pool_kind_t *out);

/* Pool options. Zero means default for every field. */
typedef struct nnmem_pool_config {
  uint32_t size;            /* sizeof(nnmem_pool_config_t); 0 = current */
  const char *name;         /* stats label (copied); NULL = "<kind><n>" */
  uint64_t alignment;       /* minimum block alignment (pow2); 0 = max(16,
                               backend alignment) */
  uint64_t capacity;        /* max reserved bytes; 0 = unlimited */
  uint64_t chunk_size;      /* bytes per backend request; 0 = kind default
                               (tlsf/fit 4 MiB, buddy 64 MiB, fixed 64 blocks,
                           tiered: small_max for its middle tier; shape:
                           the preallocated block, default capacity) */
  uint64_t block_size;      /* fixed: the block size (required) */
  uint64_t low_watermark;   /* fixed: grow when fewer free blocks remain */
  uint64_t split_threshold; /* tlsf/fit: split when the remainder is at
                               least this; 0 = 128 */
  uint64_t small_max;       /* tiered: sizes below go to slab; 0 = 1 MiB */
  uint64_t large_min;       /* tiered: sizes from here go to the backend
                               directly; 0 = 16 MiB */
  nnmem_pool_kind_t middle; /* tiered: TLSF (0 means TLSF) or BUDDY */
  int retain_empty;         /* 1: keep empty chunks instead of releasing them */
  int thread_safe;          /* 1: internal mutex around every call */
  uint32_t latency_sample;  /* time 1 op in N; 0 = 64; 1 = every op */
  /* fixed: asynchronous replenishment (off by default). When the free
   * blocks fall below the watermark after an allocation, the pool asks
   * for a refill and returns at once; the refill takes chunks from the
   * backend outside the pool lock and splices them in under it, until
   * twice the watermark is free. The allocation path waits on the backend
   * only when it finds no free block at all (counted in empty_hits).
   * Implies thread_safe; the backend must be thread-safe (the built-in
   * ones are). */
  int replenish;              /* 1: refill in the background */
  uint32_t replenish_percent; /* watermark: % of all blocks; 0 = 10; a
                                 nonzero low_watermark (blocks) wins */
  /* Executor hook: NULL = a thread owned by the pool; else the pool calls
   * submit(user, task, arg) (with its lock held: submit must not call the
   * pool) and the executor runs task(arg) once, on any thread, soon.
   * nnmem_pool_destroy waits for a submitted task to finish. */
  void (*replenish_submit)(void *user, void (*task)(void *arg), void *arg);
  void *replenish_user;
  /* slab classes (slab pools and the tiered pool's small tier): empty
   * slabs each class keeps for reuse before giving one back to the backend;
   * 0 = none (every empty slab goes back at once); ignored with
   * retain_empty */
  uint32_t keep_empty;
} nnmem_pool_config_t;

/* Fills `cfg` with defaults (the same as a zeroed struct). */
NNMEM_API void nnmem_pool_config_init(nnmem_pool_config_t *cfg);

typedef struct nnmem_pool nnmem_pool_t;

/* Creates a pool of `kind` on `backend` (not owned; must outlive the pool).
 * `cfg` may be NULL (fixed needs cfg->block_size; shape needs chunk_size or
 * capacity). NNMEM_ERR_INVALID for a bad config, NNMEM_ERR_NOMEM. Reserves
 * nothing until the first allocation, except shape, which takes its whole
 * block now (NNMEM_ERR_NOMEM when the backend refuses it). */
NNMEM_API nnmem_status_t nnmem_pool_create(nnmem_pool_kind_t kind,
                                           const nnmem_pool_config_t *cfg,
                                           nnmem_backend_t *backend,
                                           nnmem_pool_t **out);

/* The same; `diag` (nullable) names the bad config field. */
NNMEM_API nnmem_status_t nnmem_pool_create_diag(nnmem_pool_kind_t kind,
                                                const nnmem_pool_config_t *cfg,
                                                nnmem_backend_t *backend,
                                                nnmem_pool_t **out,
                                                nnmem_diag_t *diag);

/* Releases every region to the backend and frees the pool. NULL: no-op. */
NNMEM_API void nnmem_pool_destroy(nnmem_pool_t *pool);

/* Allocates `size` bytes aligned to `align` (0 = pool alignment; else a
 * power of two). NNMEM_ERR_INVALID for size 0, a size over 2^56,
 * a bad alignment; NNMEM_ERR_NOMEM when the backend refuses or the
 * capacity is reached. *out is NULL on failure. */
NNMEM_API nnmem_status_t nnmem_pool_alloc(nnmem_pool_t *pool, uint64_t size,
                                          uint64_t align, void **out);

/* Frees a block. NNMEM_ERR_INVALID (and nothing changes) for NULL, a double
 * free, a foreign or interior pointer, a misaligned pointer. */
NNMEM_API nnmem_status_t nnmem_pool_free(nnmem_pool_t *pool, void *ptr);

/* Bytes a live block may use: its request rounded up to the pool granule
 * (the block itself may be larger). NNMEM_ERR_INVALID for other pointers. */
NNMEM_API nnmem_status_t nnmem_pool_usable_size(nnmem_pool_t *pool,
                                                const void *ptr,
                                                uint64_t *size_out);

/* Walks every invariant of the pool's structures (block lists, bitmaps,
 * counters, accounting). NNMEM_ERR_STATE and diag on the first violation.
 * O(blocks). */
NNMEM_API nnmem_status_t nnmem_pool_check(nnmem_pool_t *pool,
                                          nnmem_diag_t *diag);

/* Snapshot of the pool's statistics (fragmentation computed now). */
NNMEM_API nnmem_status_t nnmem_pool_stats(nnmem_pool_t *pool,
                                          nnmem_stats_t *out);

/* One event of a problem replayed as a trace. */
typedef struct nnmem_trace_event {
  uint64_t time;
  uint32_t is_alloc; /* 1: allocate buffer `index`; 0: free it */
  uint32_t index;
} nnmem_trace_event_t;

/* The events of `problem` replayed as an allocation trace, in the order
 * every replay here uses: buffer i is allocated at its first step and
 * freed at its last; time order, frees before allocations at equal times,
 * then by buffer index. Buffers of size 0 and sub-buffers (they live inside
 * their parent) have none. *out (release with free()) gets *n_out events.
 * NNMEM_ERR_OVERFLOW past 2^32 - 1 buffers. O(n) per byte in which the
 * steps differ (radix sort). */
NNMEM_API nnmem_status_t nnmem_trace_events(const nnmem_problem_t *problem,
                                            nnmem_trace_event_t **out,
                                            size_t *n_out);

/* Replays a problem as a trace through a fresh pool of `kind` on an
 * unbacked simulated device (alignment `device_align`, 0 = 256): buffer i
 * is allocated at step first and freed at step last; events run in time
 * order, frees before allocations at equal times, then by buffer index
 * (nnmem_trace_events). Buffers of size 0 and sub-buffers are skipped. A shape
 * pool without chunk_size or capacity gets a block of 1.25 x the trace's max
 * live bytes + 64 KiB, or, when fragmentation defeats that, of the trace's
 * total bytes (sizes rounded to the alignment), which always holds it. The
 * trace runs twice: once timed, once with a stats snapshot after every
 * allocation (for the fragmentation at the moment the reservation peaked).
 * NNMEM_ERR_NOMEM when the pool fails (diag names the buffer). */
typedef struct nnmem_replay_result {
  uint64_t operations;          /* allocations + frees */
  uint64_t peak_live_bytes;     /* max over time of the live requested bytes */
  uint64_t peak_reserved_bytes; /* the pool's reserved_bytes_peak */
  double reserved_over_live;    /* peak_reserved / peak_live */
  double fragmentation;         /* (free - largest) / free at the peak:
                                   1 - largest free block / free bytes */
  double ns_per_op;             /* timed pass: wall time / operations */
  uint64_t backend_allocs;
} nnmem_replay_result_t;

NNMEM_API nnmem_status_t nnmem_pool_replay(const nnmem_problem_t *problem,
                                           nnmem_pool_kind_t kind,
                                           const nnmem_pool_config_t *cfg,
                                           uint64_t device_align,
                                           nnmem_replay_result_t *out,
                                           nnmem_diag_t *diag);

/* nnmem_pool_replay that also returns, in *stats_out (may be NULL), the
 * stats snapshot of the measuring pass's pool after the last event: its
 * counters, peaks (reserved_bytes_peak == out->peak_reserved_bytes) and
 * latency histogram, e.g. for nnmem_stats_format_prometheus. */
NNMEM_API nnmem_status_t nnmem_pool_replay_stats(
    const nnmem_problem_t *problem, nnmem_pool_kind_t kind,
    const nnmem_pool_config_t *cfg, uint64_t device_align,
    nnmem_replay_result_t *out, nnmem_stats_t *stats_out, nnmem_diag_t *diag);

/* nnmem_pool_replay_stats over a given backend (its alignment replaces
 * device_align) instead of an unbacked simulated device, e.g. GPU memory
 * (nnmem_backend_cuda_create); NULL: the simulated device. Each pass makes
 * a fresh pool on it and destroys it, so everything is returned. */
NNMEM_API nnmem_status_t nnmem_pool_replay_backend(
    const nnmem_problem_t *problem, nnmem_pool_kind_t kind,
    const nnmem_pool_config_t *cfg, nnmem_backend_t *backend,
    uint64_t device_align, nnmem_replay_result_t *out, nnmem_stats_t *stats_out,
    nnmem_diag_t *diag);

NNMEM_API nnmem_pool_kind_t nnmem_pool_get_kind(const nnmem_pool_t *pool);
NNMEM_API const char *nnmem_pool_name(const nnmem_pool_t *pool);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_POOL_H */

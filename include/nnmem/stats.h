/* nnmem/stats.h - statistics of pools and allocators, and their JSON and
 * Prometheus text renderings.
 *
 * A stats record is a snapshot (plain struct, size/version first). Bytes:
 *   requested  what callers asked for;
 *   allocated  what the pool handed out (block sizes, >= requested);
 *   reserved   what the pool holds from its backend (>= allocated).
 * fragmentation = (free - largest free block) / free over the free bytes
 * inside reserved regions (0 when nothing is free). Lock contention =
 * lock_contended / lock_acquisitions (failed try-locks / acquisitions).
 * The latency histogram is sampled: bucket i counts operations that took
 * [2^i, 2^(i+1)) ns (bucket 0 also those under 1 ns, the last bucket also
 * every longer one); latency_sum_ns adds up the same samples.
 *
 * Thread-safety: the format functions only read their arguments. */
#ifndef NNMEM_STATS_H
#define NNMEM_STATS_H

#include "nnmem/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NNMEM_STATS_VERSION 4
#define NNMEM_STATS_LAT_BUCKETS 32
#define NNMEM_STATS_NAME_MAX 48

typedef struct nnmem_stats {
  uint32_t size;                   /* sizeof(nnmem_stats_t) */
  uint32_t version;                /* NNMEM_STATS_VERSION */
  char name[NNMEM_STATS_NAME_MAX]; /* pool label, e.g. "tlsf0" */
  uint64_t requested_bytes, requested_bytes_peak;
  uint64_t allocated_bytes, allocated_bytes_peak;
  uint64_t reserved_bytes, reserved_bytes_peak;
  uint64_t alloc_count;  /* successful allocations */
  uint64_t free_count;   /* successful frees */
  uint64_t failed_count; /* allocations that returned an error */
  uint64_t misuse_count; /* rejected frees (double, foreign, misaligned) */
  uint64_t live_count;   /* blocks currently allocated */
  uint64_t backend_allocs, backend_frees;
  uint64_t free_bytes;   /* free bytes inside reserved regions */
  uint64_t largest_free; /* largest free block */
  double fragmentation;  /* (free_bytes - largest_free) / free_bytes */
  uint64_t cache_hits, cache_misses; /* thread caches (allocator only) */
  uint64_t lock_acquisitions, lock_contended;
  uint64_t latency_samples;
  uint64_t latency_hist[NNMEM_STATS_LAT_BUCKETS];
  uint64_t latency_sum_ns; /* sum of the sampled latencies (version 2) */
  /* version 3 */
  uint64_t refills;             /* fixed: chunks taken by the background
                                   replenishment */
  uint64_t refill_failures;     /* fixed: background chunk requests refused */
  uint64_t empty_hits;          /* fixed: allocations that found no free block
                                   and waited on the backend themselves */
  uint64_t remote_frees;        /* numa: frees by a thread of another node */
  uint64_t remote_allocs;       /* numa: allocations served by this node for a
                                   thread of another (its node was full) */
  uint64_t bad_node_requests;   /* numa: requests naming a node that does
                                   not exist (refused) */
  uint64_t compactions;         /* heap: compactions (all causes) */
  uint64_t compactions_latency; /* heap: of those, by the latency signal */
  /* version 4 */
  uint64_t quarantine_bytes;  /* allocator: freed blocks' bytes held in its
                                 quarantine (quarantine_bytes config) */
  uint64_t quarantine_blocks; /* allocator: blocks held there */
  uint64_t quarantine_writes; /* allocator: held blocks found written when
                                 they left (quarantine_fill) */
} nnmem_stats_t;

/* Zeroes `st` and sets size/version. */
NNMEM_API void nnmem_stats_init(nnmem_stats_t *st);

/* Approximate latency percentile (0..100) in ns from the histogram (upper
 * edge of the bucket); 0 when there are no samples. */
NNMEM_API uint64_t nnmem_stats_latency_percentile(const nnmem_stats_t *st,
                                                  double pct);

/* Thread-cache hits / (hits + misses), NaN when there were no lookups;
 * lock_contended / lock_acquisitions (0 when none); latency_sum_ns /
 * latency_samples (NaN when none). */
NNMEM_API double nnmem_stats_hit_rate(const nnmem_stats_t *st);
NNMEM_API double nnmem_stats_lock_contention(const nnmem_stats_t *st);
NNMEM_API double nnmem_stats_latency_mean_ns(const nnmem_stats_t *st);

/* Render `n` records into buf[cap]. On success *len_out (nullable) is the
 * string length (NUL-terminated). NNMEM_ERR_OVERFLOW when cap is too small;
 * *len_out then holds the length needed (call again with len + 1). JSON: an
 * array of objects, one per record, keys named like the fields plus
 * cache_hit_rate (null without lookups), lock_contention, latency_mean_ns,
 * latency_p50_ns and latency_p99_ns.
 * Pretty-printed (2-space indentation), every integer exact.
 * Prometheus: text exposition format 0.0.4 with one # HELP / # TYPE pair
 * per family and a pool="name" label per record, e.g.
 * nnmem_pool_reserved_bytes{pool="tlsf0"} 1048576; the latency histogram
 * nnmem_pool_op_latency_ns has cumulative _bucket{le=...} samples ending
 * in le="+Inf", then _sum and _count; nnmem_pool_cache_hit_ratio (NaN
 * for records without cache lookups) and nnmem_pool_lock_contention_ratio. */
NNMEM_API nnmem_status_t nnmem_stats_format_json(const nnmem_stats_t *st,
                                                 size_t n, char *buf,
                                                 size_t cap, size_t *len_out);
NNMEM_API nnmem_status_t nnmem_stats_format_prometheus(const nnmem_stats_t *st,
                                                       size_t n, char *buf,
                                                       size_t cap,
                                                       size_t *len_out);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_STATS_H */

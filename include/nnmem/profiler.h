/* nnmem/profiler.h - the run-time memory profiler: watch an allocator, a
 * pool or an arena while a workload runs, then write memory_profile.json
 * with the keys of the planner's profile (nnmem/profile.h), so a planned
 * and a measured profile compare (nnmem_profile_diff, `nnmem diff`).
 *
 *   nnmem_profiler_t *pr;
 *   nnmem_profiler_start(alloc, &pr);          allocator, pool or arena
 *   nnmem_profiler_tag(pr, NNMEM_TAG_WEIGHT);  this thread's next blocks
 *   ... load weights ...
 *   nnmem_profiler_tag(pr, NNMEM_TAG_ACTIVATION);
 *   for each op: ...; nnmem_profiler_step(pr);
 *   nnmem_profiler_stop(pr);
 *   nnmem_profiler_export(pr, "memory_profile.json", &diag);
 *   nnmem_profiler_destroy(pr);
 *
 * What is measured (bytes as requested by the caller):
 *   peak_memory        max over time of the live bytes of blocks allocated
 *                      while the profiler watched (blocks allocated before
 *                      start are not seen, nor their frees)
 *   weight_memory, activation_memory, workspace_memory
 *                      the live bytes of each tag at the instant of that
 *                      peak (the first instant it was reached); they add
 *                      up to peak_memory
 *   arena_height       max over time of the live non-weight bytes
 *   naive_arena        sum of the sizes of every non-weight block (no reuse)
 *   naive_memory       weight bytes allocated + naive_arena
 *   reuse_ratio        1 - arena_height / naive_arena (0 when no blocks)
 *   lower_bound = peak_memory, arena_lower_bound = arena_height: max-live
 *                      is the run's own lower bound
 *   peak_step          the step in which peak_memory was reached
 *   timeline           per step: the highest live bytes within the step and
 *                      the tags' live bytes at that instant
 *   pools              the watched object's stats at stop (nnmem/stats.h):
 *                      reserved/allocated peaks, fragmentation, hit rate,
 *                      lock contention, latency; an arena reports its region
 * The planner counts workspace as its max over steps; here it is the
 * workspace live at the peak. Untagged blocks are activations.
 * An arena serves planned buffers without calls the profiler could see:
 * the caller reports their use with nnmem_profiler_record_alloc / _free.
 *
 * Cost while watching: every allocation and free takes the profiler's
 * mutex and updates a hash map (the numbers are exact, not sampled); when
 * no profiler watches, the allocator's hot path pays one load and branch.
 *
 * Thread-safety: every call may come from any thread; tags are per thread.
 * One profiler per allocator or pool at a time (NNMEM_ERR_STATE otherwise);
 * an arena may have several (nothing is hooked into it).
 * nnmem_profiler_destroy must not run while the watched object is in use
 * by other threads unless the profiler was stopped first. */
#ifndef NNMEM_PROFILER_H
#define NNMEM_PROFILER_H

#include "nnmem/allocator.h"
#include "nnmem/arena.h"
#include "nnmem/pool.h"
#include "nnmem/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nnmem_tag {
  NNMEM_TAG_ACTIVATION = 0, /* default: activations, inputs, outputs */
  NNMEM_TAG_WEIGHT = 1,
  NNMEM_TAG_WORKSPACE = 2,
  NNMEM_TAG_COUNT_
} nnmem_tag_t;

/* "activation", "weight", "workspace"; "unknown" otherwise. */
NNMEM_API const char *nnmem_tag_name(nnmem_tag_t tag);

typedef struct nnmem_profiler nnmem_profiler_t;

/* Start watching; *out is a new running profiler. NNMEM_ERR_STATE when
 * another profiler already watches the object, NNMEM_ERR_NOMEM. */
NNMEM_API nnmem_status_t nnmem_profiler_start_allocator(nnmem_allocator_t *a,
                                                        nnmem_profiler_t **out);
NNMEM_API nnmem_status_t nnmem_profiler_start_pool(nnmem_pool_t *pool,
                                                   nnmem_profiler_t **out);
NNMEM_API nnmem_status_t nnmem_profiler_start_arena(nnmem_arena_t *arena,
                                                    nnmem_profiler_t **out);

#if !defined(__cplusplus) && __STDC_VERSION__ >= 201112L
/* nnmem_profiler_start(allocator | pool | arena, &pr) */
#define nnmem_profiler_start(obj, out)                      \
  _Generic((obj), nnmem_allocator_t *                       \
           : nnmem_profiler_start_allocator, nnmem_pool_t * \
           : nnmem_profiler_start_pool, nnmem_arena_t *     \
           : nnmem_profiler_start_arena)((obj), (out))
#endif

/* Stops watching (the figures stay; the object's stats are read now).
 * NNMEM_ERR_STATE when already stopped. */
NNMEM_API nnmem_status_t nnmem_profiler_stop(nnmem_profiler_t *pr);
/* Stops if running and frees. NULL is a no-op. */
NNMEM_API void nnmem_profiler_destroy(nnmem_profiler_t *pr);

/* The calling thread's tag for its next allocations through the watched
 * object; returns the previous one. NNMEM_TAG_ACTIVATION until set. An
 * out-of-range tag is ignored (the tag stays). */
NNMEM_API nnmem_tag_t nnmem_profiler_tag(nnmem_profiler_t *pr, nnmem_tag_t tag);
/* Ends the current step (steps start at 0). */
NNMEM_API void nnmem_profiler_step(nnmem_profiler_t *pr);

/* Blocks the profiler cannot see (an arena's planned buffers, memory of
 * another allocator): `ptr` (a nonzero key) of `size` bytes with `tag` is
 * live from now / no longer live. NNMEM_ERR_INVALID for a NULL ptr, size 0,
 * a bad tag, a ptr already live (record_alloc) or not live (record_free);
 * NNMEM_ERR_STATE when stopped. */
NNMEM_API nnmem_status_t nnmem_profiler_record_alloc(nnmem_profiler_t *pr,
                                                     const void *ptr,
                                                     uint64_t size,
                                                     nnmem_tag_t tag);
NNMEM_API nnmem_status_t nnmem_profiler_record_free(nnmem_profiler_t *pr,
                                                    const void *ptr);

typedef struct nnmem_profiler_step_figures {
  uint64_t step;
  uint64_t peak_bytes;               /* highest live bytes in the step */
  uint64_t by_tag[NNMEM_TAG_COUNT_]; /* at that instant */
} nnmem_profiler_step_figures_t;

typedef struct nnmem_profiler_result {
  uint32_t size; /* sizeof(nnmem_profiler_result_t) */
  uint64_t peak_memory;
  uint64_t weight_memory, activation_memory, workspace_memory;
  uint64_t arena_height, naive_arena, naive_memory;
  double reuse_ratio;
  uint64_t peak_step;
  uint64_t steps;       /* steps ended + 1 */
  uint64_t allocations; /* blocks seen allocated while watching */
  uint64_t frees;       /* of those, freed while watching */
  uint64_t live_bytes;  /* still live at stop (or now) */
  uint64_t tag_peak[NNMEM_TAG_COUNT_]; /* each tag's own max live bytes */
  uint64_t untracked; /* blocks not recorded (the profiler's map could not
                         grow): the figures are then low */
  /* the watched object (nnmem/stats.h; an arena: name "arena", reserved =
   * its region); read at stop, or now while running */
  nnmem_stats_t stats;
} nnmem_profiler_result_t;

/* The figures so far (a snapshot while running). */
NNMEM_API nnmem_status_t nnmem_profiler_result(nnmem_profiler_t *pr,
                                               nnmem_profiler_result_t *out);
/* The timeline: *n_out steps into steps[cap] (*n_out = the count even when
 * cap is smaller; then NNMEM_ERR_OVERFLOW). */
NNMEM_API nnmem_status_t nnmem_profiler_timeline(
    nnmem_profiler_t *pr, nnmem_profiler_step_figures_t *steps, size_t cap,
    size_t *n_out);

/* memory_profile.json of the figures: a text (free() it) / a file written
 * atomically (temporary + rename: the old file stays on any failure). Keys:
 * those of nnmem_profile_format_json that a run has (peak_memory,
 * weight_memory, activation_memory, workspace_memory, lower_bound,
 * naive_memory, arena_height, arena_lower_bound, naive_arena, reuse_ratio,
 * buffers (= allocations), peak_step) plus "source": "measured", "steps",
 * "timeline" (objects: step, peak_bytes, weight_memory, activation_memory,
 * workspace_memory) and "pools" (one nnmem_stats_format_json object). */
NNMEM_API nnmem_status_t nnmem_profiler_format_json(nnmem_profiler_t *pr,
                                                    char **out);
NNMEM_API nnmem_status_t nnmem_profiler_export(nnmem_profiler_t *pr,
                                               const char *path,
                                               nnmem_diag_t *diag);

/* ---- comparing two profiles (nnmem diff) ----
 * Reads two memory_profile.json texts (planned by `nnmem plan --profile`,
 * measured by nnmem_profiler_export, or any two of either) and compares
 * them key by key: peak_memory, weight_memory, activation_memory,
 * workspace_memory (required in both), then lower_bound, naive_memory,
 * arena_height, arena_lower_bound, naive_arena, reuse_ratio when both have
 * them, then the timelines where both have one: each entry's peak_bytes
 * holds from its step until the next entry's (a planned timeline lists the
 * steps where the live bytes change, a measured one every step), compared
 * over the steps both cover. Integers are read exactly (to 2^64 - 1).
 * Output: a text table, or JSON (`json` != 0):
 *   {"a": name_a, "b": name_b, "keys": [{"key", "a", "b", "delta",
 *    "ratio"}...], "only_in_a": [...], "only_in_b": [...],
 *    "steps_compared": n (steps both cover, 0 when none),
 *    "timeline": null | {"first_step", "last_step", "first_difference"
 *    (null when equal), "max_deviation", "max_deviation_step",
 *    "max_deviation_of_a_peak", "mean_deviation"},
 *    "steps": [{"step", "a", "b", "delta"}...] (where either changes)}
 * ratio = b / a (null when a = 0). *peak_excess_out (nullable) =
 * (b.peak - a.peak) / a.peak (0 when a.peak = 0).
 * Errors (NNMEM_ERR_PARSE, diag naming the file and the key): not JSON,
 * not an object, a required key missing, a known key of the wrong type or
 * out of range, a key twice, a malformed timeline entry. */
NNMEM_API nnmem_status_t nnmem_profile_diff(const char *text_a, size_t len_a,
                                            const char *name_a,
                                            const char *text_b, size_t len_b,
                                            const char *name_b, int json,
                                            char **out, double *peak_excess_out,
                                            nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_PROFILER_H */

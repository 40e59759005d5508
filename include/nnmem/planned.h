/* nnmem/planned.h - record a run's allocations, plan them, serve the next
 * run from the plan.
 *
 *   run 1 (recording):
 *     nnmem_planned_t *r;
 *     nnmem_planned_record(a, NULL, &r);
 *     for each step: p = nnmem_planned_alloc(r, n); ...;
 *                    nnmem_planned_free(r, p); nnmem_step(r);
 *     nnmem_planned_write_csv(r, "recorded.csv", &diag);   MiniMalloc CSV
 *     nnmem_planned_destroy(r);
 *   offline:
 *     nnmem plan recorded.csv --out next.plan.json
 *   run 2 (served):
 *     nnmem_planned_load(a, "next.plan.json", NULL, &r, &diag);
 *     the same calls as run 1: the k-th request of step s gets the planned
 *     offset of the k-th buffer recorded in step s, in O(1).
 *
 * Steps: the caller marks them with nnmem_step(); with auto_steps every
 * allocation is a step of its own (the allocation order is the clock).
 * A buffer allocated in step s and freed in step t has the lifetime
 * [s, t + 1); one never freed lives to the last step + 1.
 *
 * Divergence: a request whose size differs from the planned one, or past
 * the planned count of its step, is served by the allocator `a` (its pools)
 * and counted; the run never fails because of it. A planned block still
 * live after its planned last step (the run freed later than recorded) would
 * let a later planned block overlap it: from that step on every request goes
 * to `a` (`disabled`), and the blocks already served stay valid.
 *
 * Thread-safety: one object is used by one thread at a time (a model run);
 * the allocator `a` may be shared. */
#ifndef NNMEM_PLANNED_H
#define NNMEM_PLANNED_H

#include "nnmem/allocator.h"
#include "nnmem/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nnmem_planned_config {
  uint32_t size;  /* sizeof(nnmem_planned_config_t); 0 = current */
  int auto_steps; /* 1: every allocation is a step (no nnmem_step calls) */
  void *base;     /* serving: memory of at least the plan's height, 64-byte
                     aligned, owned by the caller; NULL: one block of
                     `a`, freed by destroy */
} nnmem_planned_config_t;

typedef struct nnmem_planned_stats {
  uint32_t size;           /* sizeof(nnmem_planned_stats_t) */
  uint64_t steps;          /* step markers seen (or allocations, auto_steps) */
  uint64_t allocs;         /* requests */
  uint64_t served;         /* from the plan */
  uint64_t fallback;       /* by the allocator (divergence or disabled) */
  uint64_t size_diverged;  /* size differed from the plan's */
  uint64_t order_diverged; /* more requests in a step than planned */
  uint64_t overstayed;     /* planned blocks live past their planned end */
  uint64_t misuse;         /* frees of planned addresses not live */
  int disabled;            /* 1: serving stopped (overstay) */
  uint64_t height;         /* serving: the plan's height (bytes reserved) */
} nnmem_planned_stats_t;

typedef struct nnmem_planned nnmem_planned_t;

NNMEM_API void nnmem_planned_config_init(nnmem_planned_config_t *cfg);

/* A recording run on allocator `a` (cfg may be NULL). */
NNMEM_API nnmem_status_t nnmem_planned_record(nnmem_allocator_t *a,
                                              const nnmem_planned_config_t *cfg,
                                              nnmem_planned_t **out);

/* A served run: `problem` and `offsets` as nnmem_plan_read_json gives them
 * (buffers in recording order: first steps never decrease). The plan is
 * checked by the independent verifier first. NNMEM_ERR_PARSE with diag
 * naming the buffer for a trace that is not in recording order, a step
 * far past the buffer count (over 16 * count + 1024), a zero size, gaps
 * or sub-buffers; NNMEM_ERR_CONFLICT for overlapping offsets. */
NNMEM_API nnmem_status_t nnmem_planned_serve(nnmem_allocator_t *a,
                                             const nnmem_problem_t *problem,
                                             const uint64_t *offsets,
                                             const nnmem_planned_config_t *cfg,
                                             nnmem_planned_t **out,
                                             nnmem_diag_t *diag);
/* The same from a plan JSON file (nnmem plan ... --out FILE). */
NNMEM_API nnmem_status_t nnmem_planned_load(nnmem_allocator_t *a,
                                            const char *plan_json_path,
                                            const nnmem_planned_config_t *cfg,
                                            nnmem_planned_t **out,
                                            nnmem_diag_t *diag);

/* Recording: blocks still live go back to `a`; serving: the plan's memory
 * goes back to `a` (when it came from there), blocks served by fallback stay
 * with `a` (freed with it). */
NNMEM_API void nnmem_planned_destroy(nnmem_planned_t *r);

/* 64-byte aligned when served from the plan and the plan's offsets are;
 * 16-byte aligned otherwise. NULL for size 0 or on failure. */
NNMEM_API void *nnmem_planned_alloc(nnmem_planned_t *r, size_t size);
NNMEM_API void nnmem_planned_free(nnmem_planned_t *r, void *ptr);
/* Ends the current step. */
NNMEM_API void nnmem_step(nnmem_planned_t *r);

/* Serving: the size planned for the live block served at `ptr` (the
 * requested size: the block holds exactly that many bytes), in *out.
 * NNMEM_ERR_INVALID when ptr is no live block served from the plan (a
 * block served by the pools: ask the allocator), NNMEM_ERR_STATE when
 * recording. O(1) expected. */
NNMEM_API nnmem_status_t nnmem_planned_usable_size(const nnmem_planned_t *r,
                                                   const void *ptr,
                                                   size_t *out);

/* Recording: the trace so far (live blocks end at the current step + 1),
 * buffer ids "0", "1", ... in allocation order. NNMEM_ERR_STATE when
 * serving or nothing was allocated. */
NNMEM_API nnmem_status_t nnmem_planned_problem(const nnmem_planned_t *r,
                                               nnmem_problem_t **out);
NNMEM_API nnmem_status_t nnmem_planned_write_csv(const nnmem_planned_t *r,
                                                 const char *path,
                                                 nnmem_diag_t *diag);

NNMEM_API nnmem_status_t nnmem_planned_stats(const nnmem_planned_t *r,
                                             nnmem_planned_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_PLANNED_H */

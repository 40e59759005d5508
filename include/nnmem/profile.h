/* nnmem/profile.h - the memory profile of a planned graph.
 *
 * Definitions (all integer bytes):
 *   arena_height      height of the plan of the liveness problem
 *                     (activations, inputs, outputs and workspace share it)
 *   workspace_memory  max over steps of the workspace bytes live at that step
 *   activation_memory arena_height - workspace_memory
 *   weight_memory     the read-only weight region
 *   peak_memory       weight_memory + activation_memory + workspace_memory
 *   arena_lower_bound max over steps of the live arena bytes
 *   lower_bound       weight_memory + arena_lower_bound
 *   naive_arena       every activation tensor and workspace its own bytes
 *   naive_memory      weight_memory + naive_arena
 *   reuse_ratio       1 - arena_height / naive_arena (0 when naive_arena = 0)
 *
 * Overflow: peak_memory (and so lower_bound) is a real requirement; when
 * weights + arena exceed 2^64 - 1 bytes nnmem_profile_compute fails with
 * NNMEM_ERR_OVERFLOW. naive_arena and naive_memory are only informative:
 * they saturate at 2^64 - 1 with NNMEM_PROFILE_NAIVE_SATURATED set in
 * `flags`; the true figure is larger and reuse_ratio is then a lower bound.
 *
 * Thread-safety: pure functions of their arguments. */
#ifndef NNMEM_PROFILE_H
#define NNMEM_PROFILE_H

#include "nnmem/graph.h"
#include "nnmem/liveness.h"
#include "nnmem/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nnmem_profile {
  uint32_t size; /* sizeof(nnmem_profile_t) */
  uint64_t peak_memory;
  uint64_t weight_memory;
  uint64_t activation_memory;
  uint64_t workspace_memory;
  uint64_t lower_bound;
  uint64_t naive_memory;
  uint64_t arena_height;
  uint64_t arena_lower_bound;
  uint64_t naive_arena;
  double reuse_ratio;
  nnmem_strategy_t strategy;
  size_t buffers;
  size_t tensors;
  uint64_t peak_step; /* a step where the live arena bytes are largest */
  double plan_seconds;
  uint32_t flags; /* NNMEM_PROFILE_* */
  /* appended: how arena_lower_bound is proven (the plan's bound when it is
   * higher than max-live) and whether the arena height equals it */
  nnmem_bound_kind_t bound_kind;
  int optimal;
} nnmem_profile_t;

/* naive_arena / naive_memory stopped at 2^64 - 1 (the true sum is larger) */
#define NNMEM_PROFILE_NAIVE_SATURATED 1u

/* Computes the profile of `plan` (a plan of nnmem_liveness_problem(l)).
 * `alignment` is the planner's alignment (sizes are rounded to it). */
NNMEM_API nnmem_status_t nnmem_profile_compute(const nnmem_graph_t *g,
                                               const nnmem_liveness_t *l,
                                               const nnmem_plan_t *plan,
                                               uint64_t alignment,
                                               nnmem_profile_t *out);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_PROFILE_H */

/* search.h - exact / anytime placement search (internal to plan/). See
 * search.c for the algorithm. */
#ifndef NNMEM_PLAN_SEARCH_H
#define NNMEM_PLAN_SEARCH_H

#include "nnmem/plan.h"

/* The one test of "buffers a and b are live at a common step" the search
 * uses (half-open [first, last)). A richer problem model (gaps) replaces
 * this function only. */
static inline int nnmem__search_conflict(const nnmem_buffer_t *a,
                                         const nnmem_buffer_t *b) {
  return a->first < b->last && b->first < a->last;
}

/* Budget, clock, stop flag and progress of one search (all decision
 * searches of one plan share it). */
typedef struct nnmem__search_ctl {
  double t0;            /* nnmem__now() when planning started */
  double deadline;      /* nnmem__now() past which to stop; 0 = none */
  volatile int *stop;   /* nonzero: stop as soon as seen (nullable) */
  uint64_t node_budget; /* nodes left to spend (decremented) */
  uint64_t nodes;       /* out: nodes spent */
  int stopped;          /* out: 1 stop flag, 2 deadline, 3 node budget */
  void (*progress)(void *ctx, const nnmem_search_progress_t *p);
  void *progress_ctx;
  uint64_t best, bound, target; /* for progress reports */
} nnmem__search_ctl_t;

typedef enum nnmem__verdict {
  NNMEM__FOUND = 0,  /* offsets written: every buffer of the set fits */
  NNMEM__INFEASIBLE, /* proven: no placement of the set fits */
  NNMEM__UNKNOWN     /* budget, deadline or stop flag ended the search */
} nnmem__verdict_t;

/* Decision search: can the buffers `set[0..n)` of `p` (indices, each with
 * nonzero size) be placed with heights <= `capacity`, offsets multiples of
 * max(buffer align, `align`), padded sizes? On NNMEM__FOUND writes
 * offsets[set[k]] (offsets is indexed by problem index; other entries may
 * be written on other verdicts too). `warm` (nullable, problem-indexed) is a
 * valid plan: a time partition it already fits under `capacity` keeps its
 * offsets without search. Only conflicts
 * among the set are considered. Deterministic for a given node budget.
 * Returns NNMEM_ERR_NOMEM on allocation failure, else NNMEM_OK and the
 * verdict in *verdict. */
nnmem_status_t nnmem__search_decide(const nnmem_problem_t *p,
                                    const uint32_t *set, size_t n,
                                    uint64_t align, uint64_t capacity,
                                    nnmem__search_ctl_t *ctl,
                                    const uint64_t *warm, uint64_t *offsets,
                                    nnmem__verdict_t *verdict);

/* What the search proved about a plan. */
typedef struct nnmem__search_out {
  nnmem_plan_status_t status;
  uint64_t bound;                /* proven lower bound on the height */
  nnmem_bound_kind_t bound_kind; /* how it was proven */
} nnmem__search_out_t;

/* The alignment-aware max-live bound: max over steps of the live padded
 * bytes, rounded up to the smallest alignment every nonzero buffer has
 * (every height is a multiple of it). *step and *bytes name a step with
 * the most live bytes (unrounded). NNMEM_ERR_OVERFLOW past 2^64 - 1. */
nnmem_status_t nnmem__search_bound(const nnmem_problem_t *p, uint64_t align,
                                   uint64_t *bound, uint64_t *step,
                                   uint64_t *bytes);

/* Improves the plan `offsets` (valid, height *height, in and out) of `p`:
 * with `capacity` (0 = none) above *height nothing to do; below, a
 * decision search at the capacity; with `optimal` a descent from *height
 * toward the bound, each step a decision search. The plan only ever gets
 * lower. Fills *out. */
nnmem_status_t nnmem__search_improve(const nnmem_problem_t *p, uint64_t align,
                                     uint64_t capacity, int optimal,
                                     nnmem__search_ctl_t *ctl,
                                     uint64_t *offsets, uint64_t *height,
                                     nnmem__search_out_t *out);

#endif

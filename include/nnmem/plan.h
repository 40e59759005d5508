/* nnmem/plan.h - static memory planning: strategies and the verifier.
 *
 * A plan assigns each buffer of a problem a byte offset in one arena. Its
 * height is max(offset + size). Strategies are deterministic: the same
 * problem and config always give the same plan. Problems of 200,000
 * buffers or more are placed in parts of time on several threads (as many
 * as the machine has online CPUs, or the environment variable
 * NNMEM_PLAN_THREADS says); the plan does not depend on how many.
 *
 * Thread-safety: planning reads the problem and writes only the new plan;
 * several plans of one problem may be computed concurrently. */
#ifndef NNMEM_PLAN_H
#define NNMEM_PLAN_H

#include "nnmem/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nnmem_strategy {
  NNMEM_STRATEGY_AUTO = 0,       /* run the heuristics, keep the lowest;
                                    from 500,000 buffers on, one ordering
                                    (greedy-class by powers of 2) */
  NNMEM_STRATEGY_NAIVE,          /* no reuse: buffers stacked end to end */
  NNMEM_STRATEGY_GREEDY_SIZE,    /* largest first, best-fit gap (TFLite) */
  NNMEM_STRATEGY_GREEDY_BREADTH, /* steps by live bytes (TFLite GPU) */
  NNMEM_STRATEGY_HEAP_BEST_FIT,  /* XLA decreasing-size best-fit heap,
                                    size order and lifetime order */
  NNMEM_STRATEGY_GREEDY_CLASS,   /* size classes (powers of 4 and of 2)
                                    largest first, by time inside a class,
                                    best-fit gap */
  NNMEM_STRATEGY_COUNT_
} nnmem_strategy_t;

/* "auto", "naive", "greedy-size", "greedy-breadth", "heap-best-fit",
 * "greedy-class". */
NNMEM_API const char *nnmem_strategy_name(nnmem_strategy_t s);

/* Parses a strategy name; NNMEM_ERR_NOT_FOUND for unknown names. */
NNMEM_API nnmem_status_t nnmem_strategy_parse(const char *name,
                                              nnmem_strategy_t *out);

/* What is known about a plan's height (nnmem_plan_status). */
typedef enum nnmem_plan_status {
  NNMEM_PLAN_FEASIBLE = 0, /* a valid plan; optimality not proven */
  NNMEM_PLAN_OPTIMAL,      /* height equals a proven lower bound */
  NNMEM_PLAN_INFEASIBLE,   /* proven: no plan fits the capacity */
  NNMEM_PLAN_UNKNOWN       /* no plan within the capacity found before the
                              budget (nodes, time, stop flag) ran out */
} nnmem_plan_status_t;

/* How the lower bound of a plan was proven. */
typedef enum nnmem_bound_kind {
  NNMEM_BOUND_MAX_LIVE = 0, /* max over steps of the live padded bytes,
                               rounded up to the alignment every height
                               has */
  NNMEM_BOUND_SEARCH        /* a decision search proved the next lower
                               height infeasible */
} nnmem_bound_kind_t;

/* "feasible", "optimal", "infeasible", "unknown". */
NNMEM_API const char *nnmem_plan_status_name(nnmem_plan_status_t s);
/* "max-live", "search". */
NNMEM_API const char *nnmem_bound_kind_name(nnmem_bound_kind_t k);

/* Reported to the progress callback of a search (about every 4096 nodes
 * and at each new plan or bound). */
typedef struct nnmem_search_progress {
  uint32_t size;    /* sizeof(nnmem_search_progress_t) */
  double elapsed_s; /* since planning started */
  uint64_t best;    /* height of the best valid plan so far */
  uint64_t bound;   /* best proven lower bound so far */
  uint64_t target;  /* the height the current decision search tries */
  uint64_t nodes;   /* search nodes spent so far */
} nnmem_search_progress_t;

/* Default node budget of the search (nnmem_planner_config_t.node_budget). */
#define NNMEM_SEARCH_DEFAULT_NODES 2000000u
/* Problems with more buffers than this skip the search unless `optimal` or
 * a node budget is given. */
#define NNMEM_SEARCH_DEFAULT_MAX_BUFFERS 20000u

/* Planner options. Zero means default for every field. */
typedef struct nnmem_planner_config {
  uint32_t size;             /* sizeof(nnmem_planner_config_t); 0 = current */
  nnmem_strategy_t strategy; /* default NNMEM_STRATEGY_AUTO */
  uint64_t alignment;        /* minimum alignment of every offset; 0 = 1 */
  int no_reuse;              /* nonzero forces the naive strategy */
  uint64_t capacity;         /* 0 = unlimited; else height must be <= it */
  double time_limit_s;       /* 0 = unlimited; else the search stops once
                                it is spent and returns the best plan so
                                far. The fastest strategy (auto: greedy-
                                size, run first) always completes; the
                                clock is checked inside placement too */
  /* Search (search.c), after the heuristics, for `auto` and the greedy
   * strategies: it runs when the best heuristic plan exceeds `capacity`,
   * or with `optimal`. It only ever lowers the plan. */
  int optimal;          /* nonzero: search for the minimum height */
  uint64_t node_budget; /* 0 = NNMEM_SEARCH_DEFAULT_NODES; the same budget
                           gives the same plan (absent a time limit) */
  void (*progress)(void *ctx, const nnmem_search_progress_t *p);
  void *progress_ctx; /* passed to `progress` (nullable callback) */
  volatile int *stop; /* nullable; set nonzero (e.g. from a signal
                         handler) to stop the search: the best plan so
                         far is returned */
  nnmem_plan_status_t *status_out; /* nullable; receives the status also
                                      when no plan is returned (capacity:
                                      infeasible or unknown) */
} nnmem_planner_config_t;

/* Fills `cfg` with defaults (the same as a zeroed struct). */
NNMEM_API void nnmem_planner_config_init(nnmem_planner_config_t *cfg);

typedef struct nnmem_plan nnmem_plan_t;

/* Plans `problem`. On success *out owns a new plan (free it with
 * nnmem_plan_destroy). NNMEM_ERR_CAPACITY when no strategy tried fits
 * cfg->capacity (*out is then NULL and diag names the best height found).
 * `cfg` may be NULL for defaults. */
NNMEM_API nnmem_status_t nnmem_plan_create(const nnmem_problem_t *problem,
                                           const nnmem_planner_config_t *cfg,
                                           nnmem_plan_t **out,
                                           nnmem_diag_t *diag);

/* Wraps offsets computed elsewhere (one per buffer) into a plan, for
 * verification and export. Does not verify. */
NNMEM_API nnmem_status_t nnmem_plan_from_offsets(const nnmem_problem_t *problem,
                                                 const uint64_t *offsets,
                                                 nnmem_plan_t **out);

NNMEM_API void nnmem_plan_destroy(nnmem_plan_t *plan);

NNMEM_API size_t nnmem_plan_count(const nnmem_plan_t *plan);
/* Offsets, one per buffer in problem order. */
NNMEM_API const uint64_t *nnmem_plan_offsets(const nnmem_plan_t *plan);
/* max(offset + size) over buffers; 0 for an empty plan. */
NNMEM_API uint64_t nnmem_plan_height(const nnmem_plan_t *plan);
/* The strategy that produced the plan (for auto: the one that won). */
NNMEM_API nnmem_strategy_t nnmem_plan_strategy(const nnmem_plan_t *plan);
/* Seconds spent planning (0 for nnmem_plan_from_offsets). */
NNMEM_API double nnmem_plan_seconds(const nnmem_plan_t *plan);
/* 1 when the time limit cut the search (strategies or orderings skipped
 * or stopped): the plan is the best found by then. */
NNMEM_API int nnmem_plan_time_limited(const nnmem_plan_t *plan);
/* Strategies that ran to their end (auto: of 4; one that overflowed 64
 * bits or was cut before it found a plan is not counted). */
NNMEM_API unsigned nnmem_plan_strategies_run(const nnmem_plan_t *plan);
/* What is known about the height: optimal when it equals the proven
 * bound; else feasible (a plan returned is never infeasible/unknown). */
NNMEM_API nnmem_plan_status_t nnmem_plan_status(const nnmem_plan_t *plan);
/* The best proven lower bound on the height of any plan (alignment-aware
 * max-live, raised by searches that proved lower heights infeasible). */
NNMEM_API uint64_t nnmem_plan_bound(const nnmem_plan_t *plan);
NNMEM_API nnmem_bound_kind_t nnmem_plan_bound_kind(const nnmem_plan_t *plan);
/* Search nodes spent (0 when no search ran). */
NNMEM_API uint64_t nnmem_plan_search_nodes(const nnmem_plan_t *plan);

/* The largest alignment any offset relies on: max of the planner's
 * alignment and every buffer's own (1 for NULL). A region that holds the
 * plan must start at a multiple of it (nnmem_arena_create does this). */
NNMEM_API uint64_t nnmem_plan_alignment(const nnmem_plan_t *plan);

/* What the verifier found. */
typedef struct nnmem_verify_report {
  int valid;         /* 1 when no violation of any kind */
  uint64_t height;   /* max(offset + size) */
  int has_conflict;  /* two live-overlapping buffers share bytes */
  size_t conflict_a; /* indices of the first conflicting pair found */
  size_t conflict_b;
  int misaligned; /* some offset is not a multiple of its alignment */
  size_t misaligned_index;
  int over_capacity; /* height > capacity (when capacity != 0) */
  int overflow;      /* some offset + size overflows 64 bits */
  size_t overflow_index;
  int bad_child; /* a sub-buffer is not at its parent's offset plus its
                    relative offset, ends past its parent, or is active
                    while its parent is not */
  size_t bad_child_index;
} nnmem_verify_report_t;

/* Independent verifier (shares no code with the strategies). Checks that
 * buffers whose active times (lifetime minus gaps) intersect do not overlap
 * in address unless one is a sub-buffer of the other at exactly its
 * declared relative offset, that every sub-buffer lies inside its parent
 * and is active only while the parent is, that each root's offset is a
 * multiple of max(buffer align, `alignment`) (a sub-buffer's of its own
 * align), and that the
 * height is <= `capacity` (0 = unlimited). O(n log n): a sweep over
 * lifetime events with an ordered set of live address ranges.
 * Returns NNMEM_OK when valid, NNMEM_ERR_CONFLICT / NNMEM_ERR_CAPACITY
 * otherwise; `report` (nullable) and `diag` (nullable) say what and where. */
NNMEM_API nnmem_status_t nnmem_plan_verify(
    const nnmem_problem_t *problem, const uint64_t *offsets, uint64_t alignment,
    uint64_t capacity, nnmem_verify_report_t *report, nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_PLAN_H */

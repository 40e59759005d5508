/* place.h - the placement engine and orderings shared by the heuristic
 * strategies (internal to plan/). */
#ifndef NNMEM_PLAN_PLACE_H
#define NNMEM_PLAN_PLACE_H

#include "nnmem/problem.h"

typedef enum nnmem__fit {
  NNMEM__FIT_BEST = 0, /* smallest gap that fits (TFLite, XLA) */
  NNMEM__FIT_FIRST     /* lowest gap that fits */
} nnmem__fit_t;

/* What a placement run reports besides the plan. */
typedef struct nnmem__place_ctl {
  double deadline;     /* nnmem__now() past which to stop; 0 = none */
  int finish_first;    /* plan.c: the first ordering must complete */
  int must_finish;     /* engine: past the deadline, do not stop but put
                          each remaining buffer on top of those live with
                          it (no gap search) */
  int cut;             /* out: the deadline cut some work */
  size_t overflow_buf; /* out: on NNMEM_ERR_OVERFLOW, the buffer whose
                          aligned end would pass 2^64 - 1 */
} nnmem__place_ctl_t;

/* Places every buffer of `p` in the sequence `order` (a permutation of the
 * buffer indices): each goes into a gap among the already placed buffers
 * whose lifetimes intersect its own, chosen by `fit`, or on top of them.
 * Offsets are multiples of max(buffer align, `align`). Writes `offsets`
 * (one per buffer) and the height. Gives up with NNMEM_ERR_CAPACITY as
 * soon as the height would exceed `limit` (UINT64_MAX: no limit), with
 * NNMEM_ERR_OVERFLOW (ctl->overflow_buf set) when a buffer's end would
 * pass 2^64 - 1, with NNMEM_ERR_TIMEOUT once nnmem__now() passes
 * ctl->deadline (checked every NNMEM__PLACE_CLOCK_EVERY buffers) unless
 * ctl->must_finish (then the rest is placed fast, see above). */
#define NNMEM__PLACE_CLOCK_EVERY 256
nnmem_status_t nnmem__place_in_order(const nnmem_problem_t *p,
                                     const uint32_t *order, uint64_t align,
                                     nnmem__fit_t fit, uint64_t limit,
                                     nnmem__place_ctl_t *ctl, uint64_t *offsets,
                                     uint64_t *height);

/* Placement of large problems in time parts placed in parallel (see
 * split.c): the contract of nnmem__place_in_order, with the buffers
 * placed in the sequence nnmem__split_schedule writes (the ordering with,
 * in each run of it, the buffers crossing a part boundary first); the
 * same plan for any number of threads. Below NNMEM__SPLIT_MIN buffers,
 * with a deadline, or when the problem does not split well, it is
 * nnmem__place_in_order over `order` itself. */
#define NNMEM__SPLIT_MIN 200000

/* From this many buffers on, `auto` runs one ordering (plan.c). */
#define NNMEM__AUTO_HUGE 500000
nnmem_status_t nnmem__place_split(const nnmem_problem_t *p,
                                  const uint32_t *order, uint64_t align,
                                  nnmem__fit_t fit, uint64_t limit,
                                  nnmem__place_ctl_t *ctl, uint64_t *offsets,
                                  uint64_t *height);

/* Writes into `sched` (n entries) the sequence in which
 * nnmem__place_split places the buffers under `order` without a deadline
 * (`order` itself when it does not split). */
nnmem_status_t nnmem__split_schedule(const nnmem_problem_t *p,
                                     const uint32_t *order, uint32_t *sched);

/* Chooses an offset for `size` bytes aligned to `al` among `gaps` (sorted
 * by address, free below `top`) by `fit`, else the aligned top. Returns 1
 * when that passes 2^64 - 1. */
#include "plan/occupancy.h"
int nnmem__choose_gap(const nnmem__range_t *gaps, size_t k, uint64_t top,
                      uint64_t size, uint64_t al, nnmem__fit_t fit,
                      uint64_t *off);

/* Orderings (see order.c). */
typedef enum nnmem__order {
  NNMEM__ORDER_SIZE_FIRST = 0, /* greedy-size */
  NNMEM__ORDER_SIZE_LIFE,      /* heap-best-fit, spatial */
  NNMEM__ORDER_LIFE_SIZE,      /* heap-best-fit, temporal */
  NNMEM__ORDER_CLASS4_FIRST,   /* greedy-class */
  NNMEM__ORDER_CLASS4_LIFE,
  NNMEM__ORDER_CLASS2_FIRST,
  NNMEM__ORDER_BREADTH /* greedy-breadth */
} nnmem__order_t;

/* Writes the permutation of buffer indices `how` gives into `order`. */
nnmem_status_t nnmem__order(const nnmem_problem_t *p, uint64_t align,
                            nnmem__order_t how, uint32_t *order);

/* Size of buffer b rounded up to max(b->align, align) (saturating: for
 * orderings only, since 2^64 - 1 is also a real size). */
uint64_t nnmem__padded_size(const nnmem_buffer_t *b, uint64_t align);

/* The same, exact: returns 1 when the rounded size passes 2^64 - 1. */
int nnmem__padded_size_checked(const nnmem_buffer_t *b, uint64_t align,
                               uint64_t *out);

#endif

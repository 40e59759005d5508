/* link_timeline.h - the cost model's timeline of one inference with its
 * transfers (link_timeline.c), shared by the fitter (timeline.c, step 7)
 * and the GPU executor's estimate (exec_cuda.c). Not installed. */
#ifndef NNMEM_FIT_LINK_TIMELINE_H
#define NNMEM_FIT_LINK_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "nnmem/status.h"

/* One transfer: issued at the start of step `start`, needed before step
 * `done` runs, `seconds` long on the link of its direction (in: 1). */
typedef struct nnmem__xfer {
  uint64_t start, done;
  double seconds;
  int in;
} nnmem__xfer_t;

/* Ops run one after another, op s taking op_s[s]. Each direction has one
 * link that moves one transfer at a time without preemption; when free it
 * begins the issued transfer due first (smallest `done`) among those
 * issued by then (earliest deadline first). Op s begins when op s-1 has
 * ended and every transfer with done == s has ended. *total_s = the end of
 * the last op; *compute_s = the sum of op_s; `order` (nullable, n
 * entries) gets the transfers in the order they begin (a FIFO queue per
 * direction fed in that order replays the model). NNMEM_ERR_NOMEM.
 * O(steps * n + n^2). Thread-safe (no state). */
nnmem_status_t nnmem__link_timeline(const double *op_s, uint64_t steps,
                                    const nnmem__xfer_t *x, size_t n,
                                    double *total_s, double *compute_s,
                                    size_t *order);

/* The same timeline, also giving (each nullable) every transfer's end
 * time (`xfer_end`, n entries; its begin is the end less its seconds)
 * and every op's begin time (`step_begin`, steps entries). */
nnmem_status_t nnmem__link_timeline_times(const double *op_s, uint64_t steps,
                                          const nnmem__xfer_t *x, size_t n,
                                          double *total_s, double *compute_s,
                                          size_t *order, double *xfer_end,
                                          double *step_begin);

#endif /* NNMEM_FIT_LINK_TIMELINE_H */

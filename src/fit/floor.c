/* floor.c - lower bounds on the exposed time of a fit (nnmem_fit_floor):
 * what no schedule of the fit's op order and op times can beat, so that a
 * row of bench/fit above its figure can be told apart from one that is out
 * of reach.
 *
 * Model: the ops run one after another with the fit's op times c_s; every
 * copy in crosses one link of bandwidth B (the main tier's); weights live
 * in the main tier (of capacity `limit`) when an op reads them, as the
 * fitter places them. T(s) is the time op s begins; exposed >= T(s) -
 * (c_0 + ... + c_{s-1}) for every s, and T(s) >= c_0 + ... + c_{s-1}.
 *
 * 1. Link: the bytes copied in (stream bytes + half the offload bytes: an
 *    offload moves the same bytes out and back in) take bytes / B on the
 *    link, which starts at 0 and ends with the last op at the latest:
 *    exposed >= bytes in / B - compute.
 * 2. Memory: let W(k, j) be the bytes of the distinct weight buffers the
 *    ops k..j read (a sliced weight: its slices). When op k begins the
 *    main tier holds at most `limit` bytes, so at least W(k, j) - limit of
 *    them are not on the device then and cross the link after T(k) and
 *    before op j begins (each before its first read in k..j):
 *      T(j) >= T(k) + (W(k, j) - limit) / B
 *    and with T(k) >= c_0 + ... + c_{k-1}:
 *      exposed >= (W(k, j) - limit) / B - (c_k + ... + c_{j-1}).
 *    The bound is the maximum over k <= j. It holds whatever the copies'
 *    order, leads, slicing, residency or fragmentation; it counts no
 *    activation (they may sit on chip) and gives the limit to weights
 *    alone, so it is loose where activations fill the tier.
 * Invariants: both bounds are >= 0; a fit's exposed time (timeline.c) is
 * never below either (test_fit checks it on every fit it makes).
 * Complexity: O(S + A) for the link bound; O(S * A) for the memory bound
 * over S steps and A accesses (each k sweeps j with a stamp per buffer),
 * cut short once c_k + ... + c_{j-1} exceeds what every weight could
 * still cost. Thread-safety: reads the fit only. */
#include <stdlib.h>
#include <string.h>

#include "fit/fit_internal.h"

/* Step 2 for the weight buffers of the main tier `m`. */
static nnmem_status_t memory_floor(const nnmem_fit_t *f, uint32_t m,
                                   nnmem_fit_floor_t *out) {
  const nnmem_problem_t *p = f->problems[m];
  size_t nb = p ? nnmem_problem_count(p) : 0;
  if (!nb || !f->acc_start || !f->op_s) return NNMEM_OK;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  double link = f->dev.tiers[m].link_bandwidth;
  uint64_t *stamp = malloc(nb * sizeof *stamp);
  if (!stamp) return NNMEM_ERR_NOMEM;
  memset(stamp, 0xff, nb * sizeof *stamp); /* UINT64_MAX: not seen */
  double all = 0; /* every weight byte: W(k, j) never exceeds it */
  for (size_t i = 0; i < nb; i++)
    if (f->kinds[m][i] == FIT_KIND_WEIGHT) all += (double)b[i].size;
  double cap = (all - (double)f->limit) / link;
  for (uint64_t k = 0; k < f->steps && cap > out->memory_s; k++) {
    double w = 0, between = 0; /* W(k, j); c_k + ... + c_{j-1} */
    for (uint64_t j = k; j < f->steps; j++) {
      if (cap - between <= out->memory_s) break; /* cannot beat it */
      for (size_t a = f->acc_start[j]; a < f->acc_start[j + 1]; a++) {
        const fit_access_t *x = &f->acc[a];
        if (x->tier != m || x->write ||
            f->kinds[m][x->buffer] != FIT_KIND_WEIGHT || stamp[x->buffer] == k)
          continue;
        stamp[x->buffer] = k;
        w += (double)b[x->buffer].size;
      }
      double v = (w - (double)f->limit) / link - between;
      if (v > out->memory_s) {
        out->memory_s = v;
        out->from_step = k;
        out->to_step = j;
      }
      between += f->op_s[j];
    }
  }
  free(stamp);
  return NNMEM_OK;
}

nnmem_status_t nnmem_fit_floor(const nnmem_fit_t *f, nnmem_fit_floor_t *out) {
  if (!f || !out) return NNMEM_ERR_INVALID;
  memset(out, 0, sizeof *out);
  uint32_t m = nnmem_device_main_tier(&f->dev);
  const nnmem_fit_costs_t *c = &f->costs;
  double in_bytes = (double)c->stream_bytes + (double)c->offload_bytes / 2;
  double in_s = in_bytes / f->dev.tiers[m].link_bandwidth;
  out->link_s = in_s > c->compute_s ? in_s - c->compute_s : 0;
  return memory_floor(f, m, out);
}

/* timeline.c - the fitter's step 7 (fit.c): the time of one inference
 * with its transfers, and the exposed time (what the ops wait for copies).
 *
 * 1. Ops run one after another, op s taking op_s[s] (cost.c, with the
 *    on-chip tiers' bandwidth once they are placed).
 * 2. A copy is issued at the start of its `start` step. Each direction
 *    (in, out) has one link that moves one copy at a time at the main
 *    tier's link bandwidth, without preemption; when it is free it begins
 *    the issued copy due first (smallest `done`), among those issued by
 *    then: earliest deadline first, as a runtime that keeps its own queue
 *    of copies and hands the DMA engine one at a time does.
 * 3. Op s begins when op s-1 has ended and every copy due before it
 *    (done == s) has ended; exposed = end - sum of op times.
 * Invariant: every copy begins at or after its issue time and no two
 * copies of one link overlap in time.
 * 4. (nnmem__fit_link_idle, for the on-chip choice of fit.c) the same
 *    timeline's times: the steps during which the incoming link idles
 *    while a copy in still ends later.
 * Complexity: O(S * C + C^2) for S steps and C copies (each begin scans
 * the pending ones). The simulation itself is link_timeline.c, shared with
 * the GPU executor's estimate. Thread-safety: one fitter. */
#include <stdlib.h>
#include <string.h>

#include "fit/fitter.h"
#include "fit/link_timeline.h"

/* The fit's copies as the link timeline's transfers: each copy's issue and
 * due steps, its seconds on the main tier's link and its direction. NULL
 * when out of memory; the caller frees. */
static nnmem__xfer_t *fit_xfers(const fitter_t *x) {
  const nnmem_fit_t *f = x->f;
  double link = f->dev.tiers[x->main].link_bandwidth;
  size_t nc = f->n_copies;
  nnmem__xfer_t *xf = calloc(nc ? nc : 1, sizeof *xf);
  for (size_t i = 0; i < nc && xf; i++) {
    const nnmem_fit_copy_t *cp = &f->copies[i];
    xf[i] = (nnmem__xfer_t){cp->start, cp->done, (double)cp->bytes / link,
                            cp->dir == NNMEM_COPY_IN};
  }
  return xf;
}

/* Step 7: the timeline. Copies are issued at the start of their step;
 * each direction's link serves the issued copies one at a time, earliest
 * deadline first (a copy never waits behind one due later unless that one
 * began first); an op begins when the copies due before it are done.
 * NNMEM_ERR_NOMEM leaves the costs zero. */
nnmem_status_t nnmem__fit_compute_costs(fitter_t *x) {
  nnmem_fit_t *f = x->f;
  nnmem_fit_costs_t *c = &f->costs;
  memset(c, 0, sizeof *c);
  nnmem__xfer_t *xf = fit_xfers(x);
  if (!xf) return NNMEM_ERR_NOMEM;
  double link = f->dev.tiers[x->main].link_bandwidth;
  for (size_t i = 0; i < f->n_copies; i++) {
    const nnmem_fit_copy_t *cp = &f->copies[i];
    c->transfer_s += (double)cp->bytes / link;
    c->transfer_bytes += cp->bytes;
    if (cp->dir == NNMEM_COPY_IN &&
        f->kinds[cp->dev_tier][cp->dev_buffer] == FIT_KIND_WEIGHT)
      c->stream_bytes += cp->bytes;
    else
      c->offload_bytes += cp->bytes;
  }
  double T = 0, compute = 0;
  nnmem__link_timeline(x->op_s, x->S, xf, f->n_copies, &T, &compute, NULL);
  free(xf);
  c->compute_s = compute;
  c->total_s = T;
  c->exposed_s = T - c->compute_s > 0 ? T - c->compute_s : 0;
  return NNMEM_OK;
}

/* Marks idle[s] = 1 when, in the timeline above, the incoming link idles
 * for a while during op s although a copy in still ends after op s: copies that
 * could have moved then were held back (by memory: choose_onchip, fit.c).
 * NNMEM_ERR_NOMEM. O(S * C). */
nnmem_status_t nnmem__fit_link_idle(fitter_t *x, uint8_t *idle) {
  size_t nc = x->f->n_copies;
  nnmem__xfer_t *xf = fit_xfers(x);
  double *end = calloc(nc ? nc : 1, sizeof *end);
  double *begin = calloc(x->S + 1, sizeof *begin);
  nnmem_status_t st = xf && end && begin ? NNMEM_OK : NNMEM_ERR_NOMEM;
  double T = 0, compute = 0;
  if (st == NNMEM_OK)
    st = nnmem__link_timeline_times(x->op_s, x->S, xf, nc, &T, &compute, NULL,
                                    end, begin);
  for (uint64_t s = 0; s < x->S && st == NNMEM_OK; s++) {
    double b = begin[s], e = b + x->op_s[s], busy = 0;
    int later = 0;
    for (size_t i = 0; i < nc; i++) {
      if (!xf[i].in) continue;
      double lo = end[i] - xf[i].seconds, hi = end[i];
      later |= hi > e;
      lo = lo > b ? lo : b;
      hi = hi < e ? hi : e;
      if (hi > lo) busy += hi - lo;
    }
    idle[s] = later && busy < 0.99 * (e - b);
  }
  free(xf), free(end), free(begin);
  return st;
}

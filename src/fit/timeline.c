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
 * Complexity: O(S * C + C^2) for S steps and C copies (each begin scans
 * the pending ones). Thread-safety: one fitter. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit/fitter.h"

/* The link of one direction: the copies issued and not begun (pend), the
 * time it is free. */
typedef struct link_sim {
  size_t *pend, n;
  double free_at;
} link_sim_t;

/* Begins the pending copy that is due first among those issued by the
 * time the link could begin one (non-preemptive earliest deadline first);
 * 0 when none is pending or it could not begin before `until`. */
static int link_step(const nnmem_fit_t *f, link_sim_t *l, const double *rel,
                     double *end, double link, double until) {
  if (!l->n) return 0;
  double first = rel[l->pend[0]];
  for (size_t q = 1; q < l->n; q++)
    if (rel[l->pend[q]] < first) first = rel[l->pend[q]];
  double t0 = l->free_at > first ? l->free_at : first;
  if (t0 >= until) return 0;
  size_t best = l->n;
  for (size_t q = 0; q < l->n; q++) {
    size_t i = l->pend[q];
    if (rel[i] <= t0 &&
        (best == l->n || f->copies[i].done < f->copies[l->pend[best]].done))
      best = q;
  }
  size_t i = l->pend[best];
  end[i] = t0 + (double)f->copies[i].bytes / link;
  l->free_at = end[i];
  l->pend[best] = l->pend[--l->n];
  return 1;
}

/* Step 7: the timeline. Copies are issued at the start of their step;
 * each direction's link serves the issued copies one at a time, earliest
 * deadline first (a copy never waits behind one due later unless that one
 * began first); an op begins when the copies due before it are done. */
void nnmem__fit_compute_costs(fitter_t *x) {
  nnmem_fit_t *f = x->f;
  nnmem_fit_costs_t *c = &f->costs;
  memset(c, 0, sizeof *c);
  double link = f->dev.tiers[x->main].link_bandwidth, T = 0;
  size_t nc = f->n_copies;
  double *end = calloc(nc ? nc : 1, sizeof *end);
  double *rel = calloc(nc ? nc : 1, sizeof *rel);
  link_sim_t L[2] = {{calloc(nc ? nc : 1, sizeof(size_t)), 0, 0},
                     {calloc(nc ? nc : 1, sizeof(size_t)), 0, 0}};
  int ok = end && rel && L[0].pend && L[1].pend;
  for (uint64_t s = 0; s < x->S && ok; s++) {
    for (int d = 0; d < 2; d++) /* what begins before this step */
      while (link_step(f, &L[d], rel, end, link, T)) {
      }
    for (size_t i = 0; i < nc; i++) {
      const nnmem_fit_copy_t *cp = &f->copies[i];
      if (cp->start != s) continue;
      rel[i] = T;
      end[i] = -1; /* not begun */
      L[cp->dir == NNMEM_COPY_IN ? 0 : 1].pend[L[cp->dir == NNMEM_COPY_IN ? 0 : 1].n++] = i;
      c->transfer_s += (double)cp->bytes / link;
      c->transfer_bytes += cp->bytes;
      if (cp->dir == NNMEM_COPY_IN &&
          f->kinds[cp->dev_tier][cp->dev_buffer] == FIT_KIND_WEIGHT)
        c->stream_bytes += cp->bytes;
      else
        c->offload_bytes += cp->bytes;
    }
    for (size_t i = 0; i < nc; i++) { /* the copies due now: all begin */
      if (f->copies[i].done != s || f->copies[i].start > s) continue;
      int d = f->copies[i].dir == NNMEM_COPY_IN ? 0 : 1;
      while (end[i] < 0 && link_step(f, &L[d], rel, end, link, INFINITY)) {
      }
      if (end[i] > T) T = end[i];
    }
    T += x->op_s[s];
    c->compute_s += x->op_s[s];
  }
  free(end);
  free(rel);
  free(L[0].pend);
  free(L[1].pend);
  c->total_s = T;
  c->exposed_s = T - c->compute_s > 0 ? T - c->compute_s : 0;
}

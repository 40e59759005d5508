/* link_timeline.c - the transfer timeline of the cost model (see
 * link_timeline.h): per step, first what the links begin before the step
 * (transfers issued earlier, as long as the link is free before the step's
 * start), then the transfers issued at the step join their link's queue,
 * then every transfer due at the step begins in turn and the op waits for
 * the last of them.
 * Invariant: a transfer begins at or after its issue time and no two
 * transfers of one link overlap in time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit/link_timeline.h"

typedef struct link_sim {
  size_t *pend, n; /* issued, not begun */
  double free_at;
  size_t *order, *n_order; /* begin order (shared by both links), or NULL */
} link_sim_t;

/* Begins the pending transfer due first among those issued by the time
 * the link could begin one; 0 when none is pending or it could not begin
 * before `until`. */
static int link_begin(link_sim_t *l, const nnmem__xfer_t *x, const double *rel,
                      double *end, double until) {
  if (!l->n) return 0;
  double first = rel[l->pend[0]];
  for (size_t q = 1; q < l->n; q++)
    if (rel[l->pend[q]] < first) first = rel[l->pend[q]];
  double t0 = l->free_at > first ? l->free_at : first;
  if (t0 >= until) return 0;
  size_t best = l->n;
  for (size_t q = 0; q < l->n; q++) {
    size_t i = l->pend[q];
    if (rel[i] <= t0 && (best == l->n || x[i].done < x[l->pend[best]].done))
      best = q;
  }
  size_t i = l->pend[best];
  end[i] = t0 + x[i].seconds;
  l->free_at = end[i];
  l->pend[best] = l->pend[--l->n];
  if (l->order) l->order[(*l->n_order)++] = i;
  return 1;
}

nnmem_status_t nnmem__link_timeline(const double *op_s, uint64_t steps,
                                    const nnmem__xfer_t *x, size_t n,
                                    double *total_s, double *compute_s,
                                    size_t *order) {
  return nnmem__link_timeline_times(op_s, steps, x, n, total_s, compute_s,
                                    order, NULL, NULL);
}

nnmem_status_t nnmem__link_timeline_times(const double *op_s, uint64_t steps,
                                          const nnmem__xfer_t *x, size_t n,
                                          double *total_s, double *compute_s,
                                          size_t *order, double *xfer_end,
                                          double *step_begin) {
  size_t cap = n ? n : 1, n_order = 0;
  double *end = calloc(cap, sizeof *end), *rel = calloc(cap, sizeof *rel);
  link_sim_t L[2] = {{calloc(cap, sizeof(size_t)), 0, 0, order, &n_order},
                     {calloc(cap, sizeof(size_t)), 0, 0, order, &n_order}};
  nnmem_status_t st =
      end && rel && L[0].pend && L[1].pend ? NNMEM_OK : NNMEM_ERR_NOMEM;
  double T = 0, compute = 0;
  for (uint64_t s = 0; s < steps && st == NNMEM_OK; s++) {
    for (int d = 0; d < 2; d++) /* what begins before this step */
      while (link_begin(&L[d], x, rel, end, T)) {
      }
    for (size_t i = 0; i < n; i++) {
      if (x[i].start != s) continue;
      link_sim_t *l = &L[x[i].in ? 0 : 1];
      rel[i] = T;
      end[i] = -1; /* not begun */
      l->pend[l->n++] = i;
    }
    for (size_t i = 0; i < n; i++) { /* the transfers due now: all begin */
      if (x[i].done != s || x[i].start > s) continue;
      while (end[i] < 0 &&
             link_begin(&L[x[i].in ? 0 : 1], x, rel, end, INFINITY)) {
      }
      if (end[i] > T) T = end[i];
    }
    if (step_begin) step_begin[s] = T;
    T += op_s[s];
    compute += op_s[s];
  }
  for (int d = 0; d < 2 && st == NNMEM_OK && (order || xfer_end); d++)
    while (link_begin(&L[d], x, rel, end, INFINITY)) { /* the rest */
    }
  if (st == NNMEM_OK && xfer_end) memcpy(xfer_end, end, n * sizeof *end);
  free(end), free(rel), free(L[0].pend), free(L[1].pend);
  *total_s = T;
  *compute_s = compute;
  return st;
}

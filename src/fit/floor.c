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
 *    ops k..j read (a sliced weight: its slices). While op k runs the
 *    main tier holds op k's weights, the activation and workspace roots
 *    op k reads and writes (all but what the on-chip tiers can hold:
 *    A(k) = max(0, their bytes - the on-chip capacities)), and the
 *    copies issued so far, all within `limit`; a copy issued later
 *    begins after op k ends. So of the weights ops k+1..j read at most
 *    limit - A(k) - (op k's weights not read again) are on the device
 *    when op k ends, and at least W(k, j) + A(k) - limit cross the link
 *    after op k ends (at c_0 + ... + c_k or later) and before op j
 *    begins:
 *      T(j) >= c_0 + ... + c_k + (W(k, j) + A(k) - limit) / B
 *    and so, for k < j:
 *      exposed >= (W(k, j) + A(k) - limit) / B - (c_{k+1} + ... + c_{j-1}).
 *    (The bound before counted from when op k began: no A(k), and minus
 *    c_k as well; it is never larger.) The bound is the maximum over
 *    k < j. It holds whatever the copies' order, leads, slicing,
 *    residency, offloads or fragmentation: it counts only op k's own
 *    operands among the activations (the others may be offloaded) and
 *    gives the rest of the limit to weights.
 * Invariants: both bounds are >= 0; a fit's exposed time (timeline.c) is
 * never below either (test_fit checks it on every fit it makes).
 * Complexity: O(S + A) for the link bound; O(S * A) for the memory bound
 * over S steps and A accesses (each k sweeps j with a stamp per buffer;
 * A(k) follows each accessed buffer to its root), cut short once
 * c_{k+1} + ... + c_{j-1} exceeds what every weight could still cost. Thread-safety: reads the fit only. */
#include <stdlib.h>
#include <string.h>

#include "fit/fit_internal.h"

/* The bytes of the activation and workspace roots step s accesses on
 * every tier (each root once: stamp[t][root] = s), less the on-chip
 * capacity `onchip`: what the main tier must hold of them while op s
 * runs. */
static double step_activations(const nnmem_fit_t *f, uint64_t s,
                               uint64_t **stamp, double onchip) {
  double bytes = 0;
  for (size_t a = f->acc_start[s]; a < f->acc_start[s + 1]; a++) {
    const fit_access_t *x = &f->acc[a];
    size_t r = x->buffer, up;
    if (f->kinds[x->tier][r] == FIT_KIND_WEIGHT) continue;
    while (nnmem_problem_parent(f->problems[x->tier], r, &up, NULL) ==
           NNMEM_OK)
      r = up;
    if (stamp[x->tier][r] == s) continue;
    stamp[x->tier][r] = s;
    bytes += (double)nnmem_problem_buffers(f->problems[x->tier])[r].size;
  }
  return bytes > onchip ? bytes - onchip : 0;
}

/* Step 2 for the weight buffers of the main tier `m`. */
static nnmem_status_t memory_floor(const nnmem_fit_t *f, uint32_t m,
                                   nnmem_fit_floor_t *out) {
  const nnmem_problem_t *p = f->problems[m];
  size_t nb = p ? nnmem_problem_count(p) : 0;
  if (!nb || !f->acc_start || !f->op_s) return NNMEM_OK;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  double link = f->dev.tiers[m].link_bandwidth, onchip = 0;
  uint64_t *stamp = malloc(nb * sizeof *stamp);
  uint64_t *astamp[NNMEM_DEVICE_MAX_TIERS] = {NULL};
  nnmem_status_t st = stamp ? NNMEM_OK : NNMEM_ERR_NOMEM;
  for (uint32_t t = 0; t <= m && st == NNMEM_OK; t++) {
    size_t n = f->problems[t] ? nnmem_problem_count(f->problems[t]) : 0;
    astamp[t] = malloc((n ? n : 1) * sizeof **astamp);
    if (!astamp[t]) st = NNMEM_ERR_NOMEM;
    else memset(astamp[t], 0xff, (n ? n : 1) * sizeof **astamp);
    if (t < m) onchip += (double)f->dev.tiers[t].capacity;
  }
  if (st != NNMEM_OK) goto out;
  memset(stamp, 0xff, nb * sizeof *stamp); /* UINT64_MAX: not seen */
  double all = 0; /* every weight byte: W(k, j) never exceeds it */
  for (size_t i = 0; i < nb; i++)
    if (f->kinds[m][i] == FIT_KIND_WEIGHT) all += (double)b[i].size;
  for (uint64_t k = 0; k < f->steps; k++) {
    double w = 0, between = 0; /* W(k, j); c_{k+1} + ... + c_{j-1} */
    double act = step_activations(f, k, astamp, onchip);
    double cap = (all + act - (double)f->limit) / link; /* W(k, j) <= all */
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
      /* j == k: op k's own weights arrive before it begins */
      double v = j == k ? (w - (double)f->limit) / link
                        : (w + act - (double)f->limit) / link - between;
      if (v > out->memory_s) {
        out->memory_s = v;
        out->from_step = k;
        out->to_step = j;
      }
      if (j > k) between += f->op_s[j];
    }
  }
out:
  free(stamp);
  for (uint32_t t = 0; t < NNMEM_DEVICE_MAX_TIERS; t++)
    free(astamp[t]);
  return st;
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

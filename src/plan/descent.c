/* descent.c - proven lower bounds and the descent from the best heuristic
 * plan toward them, each step a decision search (search.c).
 *
 * Bound (nnmem__search_bound): every height is a multiple of g = the least
 * max(buffer align, planner alignment) over nonzero roots (each top
 * buffer ends at offset + padded size, both multiples of its alignment), so
 *   L = roundup(max over steps of the active padded root bytes, g)
 * (nnmem_problem_peak: gaps hold nothing, sub-buffers lie in their parents)
 * holds for every plan ("max-live"). A decision search that proves height
 * C infeasible raises it to roundup(C + 1, g) ("search").
 *
 * Improve (nnmem__search_improve):
 *   1. capacity C below the best height H: on sets of over
 *      NNMEM__ANCHOR_MIN_DECIDE buffers the peak window first (anchor.c);
 *      then one decision search at C, with the whole budget; found -> the
 *      plan; proven infeasible -> status infeasible, bound
 *      roundup(C + 1, g); else unknown;
 *   2a. optimal: the peak window searched exactly at L and the rest placed
 *      around it (anchor.c; a window proven infeasible raises the bound);
 *   2. optimal: targets L first (often met exactly on real traces), then
 *      bisection between the search's low end and H - g; each step gets
 *      half of the nodes and of the time left; found -> H drops to the
 *      found height; proven infeasible -> bound and low end rise; budget
 *      out -> only the low end rises (no proof);
 *   3. status optimal when H == bound, else feasible.
 * Invariant: the plan in `offsets` is valid (the warm start is, and each
 * accepted decision result is) and its height only decreases.
 * Thread-safety: reentrant. */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plan/anchor.h"
#include "plan/place.h"
#include "plan/problem_internal.h"
#include "plan/search.h"

nnmem_status_t nnmem__search_bound(const nnmem_problem_t *p, uint64_t align,
                                   uint64_t *bound, uint64_t *step,
                                   uint64_t *bytes) {
  /* roots only (a sub-buffer lies inside its parent), one event pair per
   * active interval (a gap holds nothing) */
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t n = nnmem_problem_count(p);
  uint64_t g = 0, best = 0, at = 0;
  for (size_t i = 0; i < n; i++) { /* g over the nonzero roots */
    uint64_t sz;
    if (nnmem__padded_size_checked(&b[i], align, &sz))
      return NNMEM_ERR_OVERFLOW;
    if (sz == 0 || nnmem_problem_parent(p, i, NULL, NULL) == NNMEM_OK) continue;
    uint64_t al = nnmem__max_u64(b[i].align, align);
    g = g == 0 || al < g ? al : g;
  }
  /* active root bytes per step (gaps hold nothing, sub-buffers lie inside
   * their parents) */
  nnmem_status_t st = nnmem_problem_peak(p, align, &best, &at);
  if (st != NNMEM_OK) return st;
  *step = at, *bytes = best;
  if (nnmem__align_up(best, g ? g : 1, bound)) return NNMEM_ERR_OVERFLOW;
  return NNMEM_OK;
}

/* Height of the plan `off` over the nonzero buffers. */
static uint64_t height_of(const nnmem_problem_t *p, uint64_t align,
                          const uint64_t *off) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  uint64_t h = 0;
  for (size_t i = 0; i < nnmem_problem_count(p); i++) {
    uint64_t sz = nnmem__padded_size(&b[i], align);
    if (sz && off[i] + sz > h) h = off[i] + sz;
  }
  return h;
}

static void report(nnmem__search_ctl_t *c) {
  if (!c->progress) return;
  nnmem_search_progress_t pr = {
      sizeof pr, nnmem__now() - c->t0, c->best, c->bound, c->target, c->nodes};
  c->progress(c->progress_ctx, &pr);
}

/* One decision step at `cap` with a share (1/div) of what is left of the
 * nodes and the time; the rest is given back afterwards. */
static nnmem_status_t step(const nnmem_problem_t *p, const uint32_t *set,
                           size_t n, uint64_t align, uint64_t cap, int div,
                           nnmem__search_ctl_t *c, const uint64_t *warm,
                           uint64_t *tmp, nnmem__verdict_t *v) {
  uint64_t left = c->node_budget, share = div > 1 ? left / div : left;
  double deadline = c->deadline, now = nnmem__now();
  if (share == 0) share = left;
  c->node_budget = share;
  if (deadline > 0 && div > 1) c->deadline = now + (deadline - now) / div;
  c->target = cap;
  report(c);
  nnmem_status_t st =
      nnmem__search_decide(p, set, n, align, cap, c, warm, tmp, v);
  c->node_budget = left - (share - c->node_budget);
  c->deadline = deadline;
  /* a step's own share ran out: the whole search goes on */
  if ((c->stopped == 3 && c->node_budget > 0) ||
      (c->stopped == 2 && (deadline <= 0 || nnmem__now() <= deadline)))
    c->stopped = 0;
  return st;
}

static uint64_t round_up(uint64_t x, uint64_t g) {
  uint64_t r;
  return nnmem__align_up(x, g, &r) ? UINT64_MAX : r;
}

nnmem_status_t nnmem__search_improve(const nnmem_problem_t *p, uint64_t align,
                                     uint64_t capacity, int optimal,
                                     nnmem__search_ctl_t *ctl,
                                     uint64_t *offsets, uint64_t *height,
                                     nnmem__search_out_t *out) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t n = nnmem_problem_count(p), m = 0;
  uint64_t lb = 0, at = 0, bytes = 0, g = 0;
  nnmem_status_t st = nnmem__search_bound(p, align, &lb, &at, &bytes);
  out->status = NNMEM_PLAN_FEASIBLE;
  out->bound = lb, out->bound_kind = NNMEM_BOUND_MAX_LIVE;
  if (st != NNMEM_OK) return st == NNMEM_ERR_OVERFLOW ? NNMEM_OK : st;
  uint32_t *set = malloc((n ? n : 1) * sizeof *set);
  uint64_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
  if (!set || !tmp) {
    free(set), free(tmp);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    tmp[i] = 0; /* zero-size buffers sit at 0 */
    if (nnmem__padded_size(&b[i], align) == 0) continue;
    set[m++] = (uint32_t)i;
    uint64_t al = nnmem__max_u64(b[i].align, align);
    g = g == 0 || al < g ? al : g;
  }
  g = g ? g : 1;
  ctl->best = *height, ctl->bound = lb;
  nnmem__verdict_t v = NNMEM__FOUND;
  if (capacity && *height > capacity) { /* step 1 */
    int window_no = 0;
    if (capacity < lb)
      v = NNMEM__INFEASIBLE;
    else if (m > NNMEM__ANCHOR_MIN_DECIDE) /* step 1a: the peak window */
      st = nnmem__anchor(p, align, capacity, ctl, offsets, height, &window_no);
    if (st == NNMEM_OK && capacity >= lb && window_no)
      v = NNMEM__INFEASIBLE;
    else if (st == NNMEM_OK && capacity >= lb && *height <= capacity)
      memcpy(tmp, offsets, n * sizeof *tmp); /* found: v stays FOUND */
    else if (st == NNMEM_OK && capacity >= lb)
      st = step(p, set, m, align, capacity, 1, ctl, offsets, tmp, &v);
    if (st == NNMEM_OK && v == NNMEM__FOUND) {
      memcpy(offsets, tmp, n * sizeof *tmp);
      *height = height_of(p, align, offsets);
    } else if (st == NNMEM_OK && v == NNMEM__INFEASIBLE) {
      out->status = NNMEM_PLAN_INFEASIBLE;
      if (capacity >= lb) {
        out->bound = round_up(capacity + 1, g);
        out->bound_kind = NNMEM_BOUND_SEARCH;
      }
    } else if (st == NNMEM_OK)
      out->status = NNMEM_PLAN_UNKNOWN;
  }
  uint64_t low = out->bound; /* searched up to here (proven or not) */
  int first = 1, window_infeasible = 0;
  if (st == NNMEM_OK && optimal && out->status == NNMEM_PLAN_FEASIBLE &&
      low < *height) { /* step 2a: the peak window first (anchor.c) */
    st = nnmem__anchor(p, align, low, ctl, offsets, height, &window_infeasible);
    if (st == NNMEM_OK && window_infeasible) {
      low = out->bound = round_up(low + 1, g);
      out->bound_kind = NNMEM_BOUND_SEARCH;
    }
  }
  while (st == NNMEM_OK && optimal && out->status == NNMEM_PLAN_FEASIBLE &&
         low < *height && !ctl->stopped && ctl->node_budget > 0) {
    /* step 2: the bound first, then the middle (a multiple of g) */
    uint64_t c = first ? low : low + ((*height - low) / 2) / g * g;
    if (c >= *height) c = *height - 1;
    first = 0;
    ctl->best = *height, ctl->bound = out->bound;
    st = step(p, set, m, align, c, 2, ctl, offsets, tmp, &v);
    if (st != NNMEM_OK) break;
    if (v == NNMEM__FOUND) {
      uint64_t h = height_of(p, align, tmp);
      if (h < *height) {
        memcpy(offsets, tmp, n * sizeof *tmp);
        *height = h;
      }
    } else if (v == NNMEM__INFEASIBLE) {
      low = out->bound = round_up(c + 1, g);
      out->bound_kind = NNMEM_BOUND_SEARCH;
    } else if (!ctl->stopped) {
      low = round_up(c + 1, g); /* not proven: only where to look next */
    }
  }
  if (out->status == NNMEM_PLAN_FEASIBLE && *height <= out->bound) {
    out->status = NNMEM_PLAN_OPTIMAL;
    out->bound = *height;
  }
  ctl->best = *height, ctl->bound = out->bound;
  report(ctl);
  free(set);
  free(tmp);
  return st;
}

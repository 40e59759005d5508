/* anchor.c - the peak window placed exactly, the rest around it.
 *
 * Why: on long training traces the size-ordered heuristics pack every step
 * well except the one whose live bytes make the bound, where a single
 * misfit hole costs the whole difference (pangu_2.6B: one 40 MiB hole at
 * step 4933, 0.76% of the height; every ordering tried, and local moves,
 * kept it). An exact search over all 18,692 buffers is too slow, but the
 * few hundred buffers live around that step are searched in milliseconds,
 * and the other steps have slack enough for the greedy.
 *
 * Algorithm, target height C (the bound first, from descent.c):
 *   1. cut time where no buffer crosses into partitions (their plans are
 *      independent) and find in each its peak, the earliest step with its
 *      most live bytes; the partition with the highest peak gets a window;
 *   2. for w = 1, 2, 4, ... up to MAX_HALF_WIDTH, while the best plan is
 *      above C: in each partition with a window, the buffers meeting
 *      [peak - w, peak + w], each cut to it (lifetime intersected with
 *      the window), form one problem;
 *   3. decision search (search.c) on that problem at C with a share of
 *      the nodes and of the time: found -> those offsets, kept for the
 *      whole buffers; proven infeasible -> so is every plan of the full
 *      problem (the windows are a relaxation: fewer conflicts), stop;
 *      unknown -> stop (wider windows are harder);
 *   4. the other buffers, in greedy-size order (size desc, first step
 *      asc), go by best fit into the gaps the placed ones leave during
 *      their lifetimes (the occupancy map, occupancy.c, as in place.c);
 *      the plan is kept when lower than the best;
 *   5. partitions where that plan still passes C get a window of their
 *      own (a trace of several training iterations has one peak each) and
 *      the same width runs again; else the next width.
 * Validity of step 3's offsets in the full problem: two buffers of one
 * window whose lifetimes meet also meet inside the window (three intervals
 * that meet pairwise share a point, Helly in one dimension), so the search
 * kept them apart; buffers of different partitions never meet; step 4
 * avoids everything placed. The caller verifies independently (verify.c).
 * One window per partition: a second peak inside the same partition is
 * not given one (two windows would need the buffers between them too).
 *
 * Measured (bench/plan --search, `nnmem plan T --optimal`): pangu_2.6B
 * reaches the bound at w = 4 (from 1.00758 x), bert_base at w = 32 (from
 * a 2,052 B gap); two pangu_2.6B iterations one after the other (37,384
 * buffers, two partitions) at w = 4 with the second window added in
 * step 5; see README "Search".
 *
 * Complexity: O(n log n) for the partitions; per window the search on the
 * window's buffers (node budget) plus one placement of the other buffers,
 * O(n log T) sets of the occupancy map. Memory O(n). Thread-safety:
 * reentrant. */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plan/anchor.h"
#include "plan/occupancy.h"
#include "plan/place.h"

#define MAX_HALF_WIDTH 256 /* widest window: [P - 256, P + 256] */
#define MAX_WINDOW 4096    /* buffers in a window (the full search's size) */

typedef struct anchor {
  const nnmem_problem_t *p;
  const nnmem_buffer_t *b;
  size_t n;
  uint64_t align;
  uint32_t *order; /* greedy-size order of p */
  uint32_t *map;   /* window index -> buffer index */
  uint32_t *set;   /* 0..m-1 */
  uint8_t *in;     /* buffer is in the window */
  uint64_t *woff;  /* window offsets */
  uint64_t *tmp;   /* plan being built */
  nnmem__range_t *gaps;
  size_t cap;
  uint32_t *part;  /* buffer -> time partition (no buffer crosses a cut) */
  uint64_t *ppeak; /* partition -> a step with its most live bytes */
  uint64_t *plive; /* partition -> those bytes */
  uint8_t *on;     /* partition has a window (around its ppeak) */
  size_t nparts;
} anchor_t;

/* The window of buffer i's partition, [c - w, c + w + 1) around its peak
 * c, when it has one; 0 if none or if it passes 2^64 - 1. */
static int window_of(const anchor_t *a, size_t i, uint64_t w, uint64_t *lo,
                     uint64_t *hi) {
  uint32_t q = a->part[i];
  uint64_t c = a->ppeak[q];
  if (!a->on[q] || c + w + 1 <= c) return 0;
  *lo = c > w ? c - w : 0, *hi = c + w + 1;
  return 1;
}

/* Builds the problem of the buffers meeting the window of their partition,
 * each cut to it. Buffers of different partitions never meet, so the
 * argument for one window holds in each (see the header). */
static nnmem_status_t window(anchor_t *a, uint64_t w, nnmem_problem_t **out,
                             size_t *m) {
  nnmem_problem_t *wp = NULL;
  nnmem_status_t st = nnmem_problem_create(&wp);
  *m = 0;
  for (size_t i = 0; i < a->n && st == NNMEM_OK; i++) {
    const nnmem_buffer_t *x = &a->b[i];
    uint64_t lo, hi;
    a->in[i] = 0;
    if (nnmem__padded_size(x, a->align) == 0 || !window_of(a, i, w, &lo, &hi) ||
        x->first >= hi || x->last <= lo)
      continue;
    if (*m == MAX_WINDOW) {
      st = NNMEM_ERR_CAPACITY; /* too wide: not searched */
      break;
    }
    st = nnmem_problem_add(wp, NULL, x->size, x->align,
                           x->first > lo ? x->first : lo,
                           x->last < hi ? x->last : hi, NULL);
    a->in[i] = 1;
    a->map[*m] = (uint32_t)i, a->set[*m] = (uint32_t)*m;
    ++*m;
  }
  if (st != NNMEM_OK) {
    nnmem_problem_destroy(wp);
    return st;
  }
  *out = wp;
  return NNMEM_OK;
}

typedef struct tev {
  uint64_t t;
  uint32_t i;
  int start;
} tev_t;

static int tev_cmp(const void *x, const void *y) {
  const tev_t *a = x, *b = y;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  if (a->start != b->start) return a->start - b->start; /* ends first */
  return a->i < b->i ? -1 : a->i > b->i;
}

/* Time partitions (a new one starts where no nonzero buffer crosses) and
 * the step with the most live bytes in each (the earliest on ties). */
static nnmem_status_t partitions(anchor_t *a) {
  size_t n = a->n, k = 0;
  tev_t *e = malloc((n ? 2 * n : 1) * sizeof *e);
  uint64_t *best = a->plive;
  if (!e) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    a->part[i] = 0;
    if (nnmem__padded_size(&a->b[i], a->align) == 0) continue;
    e[k++] = (tev_t){a->b[i].first, (uint32_t)i, 1};
    e[k++] = (tev_t){a->b[i].last, (uint32_t)i, 0};
  }
  qsort(e, k, sizeof *e, tev_cmp);
  uint64_t live = 0;
  size_t open = 0, pid = 0;
  for (size_t j = 0; j < k; j++) {
    uint32_t i = e[j].i;
    uint64_t s = nnmem__padded_size(&a->b[i], a->align);
    if (e[j].start) {
      if (open == 0 && j > 0) pid++;
      open++, live += s; /* no overflow: the bound was computed */
      a->part[i] = (uint32_t)pid;
    } else {
      open--, live -= s;
    }
    int last_at_t = j + 1 == k || e[j + 1].t != e[j].t;
    if (e[j].start && last_at_t && live > best[pid])
      best[pid] = live, a->ppeak[pid] = e[j].t;
  }
  a->nparts = k ? pid + 1 : 0;
  free(e);
  return NNMEM_OK;
}

/* Gives a window to the partitions where the plan in tmp passes
 * `target`; returns how many got one. */
static size_t add_windows(anchor_t *a, uint64_t target) {
  size_t added = 0;
  for (size_t i = 0; i < a->n; i++) {
    uint64_t s = nnmem__padded_size(&a->b[i], a->align);
    if (s == 0 || a->tmp[i] + s <= target || a->on[a->part[i]]) continue;
    a->on[a->part[i]] = 1;
    added++;
  }
  return added;
}

/* Step 4: the window's offsets kept, the rest by best fit; *h the height.
 * NNMEM_ERR_OVERFLOW when an end would pass 2^64 - 1. */
static nnmem_status_t place_rest(anchor_t *a, size_t m, uint64_t *h) {
  nnmem__occ_t *o = NULL;
  nnmem_status_t st = nnmem__occ_create(a->p, &o);
  *h = 0;
  for (size_t i = 0; i < a->n; i++)
    a->tmp[i] = 0;
  for (size_t k = 0; k < m && st == NNMEM_OK; k++) {
    uint32_t i = a->map[k];
    uint64_t s = nnmem__padded_size(&a->b[i], a->align);
    a->tmp[i] = a->woff[k];
    st = nnmem__occ_add(o, i, a->tmp[i], a->tmp[i] + s);
    if (a->tmp[i] + s > *h) *h = a->tmp[i] + s;
  }
  for (size_t k = 0; k < a->n && st == NNMEM_OK; k++) {
    uint32_t i = a->order[k];
    uint64_t s = nnmem__padded_size(&a->b[i], a->align), top = 0, e;
    size_t ng = 0;
    if (a->in[i] || s == 0) continue;
    uint64_t al = nnmem__max_u64(a->b[i].align, a->align);
    st = nnmem__occ_gaps(o, i, s, &a->gaps, &ng, &a->cap, &top);
    if (st != NNMEM_OK) break;
    if (nnmem__choose_gap(a->gaps, ng, top, s, al, NNMEM__FIT_BEST,
                          &a->tmp[i]) ||
        nnmem__add_overflow(a->tmp[i], s, &e)) {
      st = NNMEM_ERR_OVERFLOW;
      break;
    }
    st = nnmem__occ_add(o, i, a->tmp[i], e);
    if (e > *h) *h = e;
  }
  nnmem__occ_destroy(o);
  return st;
}

/* Step 3: the decision search on window `w` with 1/8 of the nodes and 1/4
 * of the time left (a window that does not finish ends the widening); the
 * rest is given back. */
static nnmem_status_t decide(anchor_t *a, const nnmem_problem_t *w, size_t m,
                             uint64_t target, nnmem__search_ctl_t *ctl,
                             nnmem__verdict_t *v) {
  uint64_t left = ctl->node_budget, share = left / 8 ? left / 8 : left;
  double deadline = ctl->deadline, now = nnmem__now();
  ctl->node_budget = share;
  ctl->target = target; /* for progress reports */
  if (deadline > 0) ctl->deadline = now + (deadline - now) / 4;
  nnmem_status_t st = nnmem__search_decide(w, a->set, m, a->align, target, ctl,
                                           NULL, a->woff, v);
  ctl->node_budget = left - (share - ctl->node_budget);
  ctl->deadline = deadline;
  if ((ctl->stopped == 3 && ctl->node_budget > 0) ||
      (ctl->stopped == 2 && (deadline <= 0 || nnmem__now() <= deadline)))
    ctl->stopped = 0; /* only the window's share ran out */
  return st;
}

static void anchor_free(anchor_t *a) {
  free(a->order), free(a->map), free(a->set), free(a->in), free(a->woff);
  free(a->tmp), free(a->gaps), free(a->part), free(a->ppeak);
  free(a->plive), free(a->on);
}

static nnmem_status_t anchor_init(anchor_t *a, const nnmem_problem_t *p,
                                  uint64_t align) {
  size_t n = nnmem_problem_count(p), m = n ? n : 1;
  memset(a, 0, sizeof *a);
  a->p = p, a->b = nnmem_problem_buffers(p), a->n = n, a->align = align;
  a->order = malloc(m * sizeof *a->order);
  a->map = malloc(m * sizeof *a->map);
  a->set = malloc(m * sizeof *a->set);
  a->in = calloc(m, sizeof *a->in);
  a->woff = malloc(m * sizeof *a->woff);
  a->tmp = malloc(m * sizeof *a->tmp);
  a->part = malloc(m * sizeof *a->part);
  a->ppeak = calloc(m, sizeof *a->ppeak);
  a->plive = calloc(m, sizeof *a->plive);
  a->on = calloc(m, sizeof *a->on);
  if (!a->order || !a->map || !a->set || !a->in || !a->woff || !a->tmp ||
      !a->part || !a->ppeak || !a->plive || !a->on)
    return NNMEM_ERR_NOMEM;
  nnmem_status_t st = partitions(a);
  if (st != NNMEM_OK) return st;
  return nnmem__order(p, align, NNMEM__ORDER_SIZE_FIRST, a->order);
}

/* Whether the search clock, budget or stop flag says stop. */
static int spent(const nnmem__search_ctl_t *ctl) {
  return ctl->stopped || ctl->node_budget == 0 ||
         (ctl->deadline > 0 && nnmem__now() > ctl->deadline) ||
         (ctl->stop && *ctl->stop);
}

nnmem_status_t nnmem__anchor(const nnmem_problem_t *p, uint64_t align,
                             uint64_t target, nnmem__search_ctl_t *ctl,
                             uint64_t *off, uint64_t *height, int *infeasible) {
  size_t n = nnmem_problem_count(p);
  uint64_t bytes = 0, peak = 0; /* the live bytes fit in 64 bits */
  *infeasible = 0;
  if (*height <= target || n > NNMEM__ANCHOR_MAX_BUFFERS ||
      nnmem_problem_gapped_count(p) || nnmem_problem_child_count(p) ||
      nnmem_problem_peak(p, align, &bytes, &peak) != NNMEM_OK)
    return NNMEM_OK;
  anchor_t a;
  nnmem_status_t st = anchor_init(&a, p, align);
  /* half of what is left for the descent */
  uint64_t keep = ctl->node_budget - ctl->node_budget / 2;
  ctl->node_budget -= keep;
  if (st == NNMEM_OK && a.nparts) { /* step 1: the highest partition */
    size_t top = 0;
    for (size_t q = 1; q < a.nparts; q++)
      if (a.plive[q] > a.plive[top]) top = q;
    a.on[top] = 1;
  }
  uint64_t w = 1;
  while (w <= MAX_HALF_WIDTH && st == NNMEM_OK) {
    if (*height <= target || spent(ctl)) break;
    nnmem_problem_t *wp = NULL;
    size_t m = 0;
    uint64_t h = 0;
    st = window(&a, w, &wp, &m);
    if (st == NNMEM_ERR_CAPACITY || st == NNMEM_ERR_OVERFLOW) {
      st = NNMEM_OK; /* wider than the search takes, or past 2^64 - 1 */
      break;
    }
    nnmem__verdict_t v = NNMEM__UNKNOWN;
    if (st == NNMEM_OK) st = decide(&a, wp, m, target, ctl, &v);
    nnmem_problem_destroy(wp);
    if (st != NNMEM_OK) break;
    if (v == NNMEM__INFEASIBLE) *infeasible = 1;
    if (v != NNMEM__FOUND) break;
    st = place_rest(&a, m, &h);
    if (st == NNMEM_ERR_OVERFLOW) { /* this window's plan only */
      st = NNMEM_OK;
      w *= 2;
      continue;
    }
    if (st != NNMEM_OK) break;
    if (h < *height) {
      memcpy(off, a.tmp, n * sizeof *off);
      *height = h;
    }
    /* step 5: partitions still above the target get a window of their own,
     * at the same width; else the next width */
    if (h > target && add_windows(&a, target) > 0) continue;
    w *= 2;
  }
  ctl->node_budget += keep;
  anchor_free(&a);
  return st;
}

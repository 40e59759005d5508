/* roots.c - the reduced "root problem" behind planning a problem that has
 * gaps or sub-buffers, so the strategies (place.c, occupancy.c, order.c)
 * keep seeing plain buffers with one lifetime each.
 *
 *   1. every root (buffer without a parent) becomes one buffer of the root
 *      problem with its id, size, alignment and the hull of its active
 *      time [first active step, last active step): a gap inside the hull
 *      is kept free of others only conservatively (correct, not exploited),
 *      a gap at either end shortens the lifetime;
 *   2. the strategies plan the root problem;
 *   3. the gap pass, when there are gaps (below): up to
 *      NNMEM__ROOTS_LOWER_MAX roots, the strategies' plan lowered into
 *      the gaps of others (never up) and a quadratic gap-aware best fit;
 *      at any size, the occupancy-based gap fit (gapfit.c); the lowest
 *      of these and the strategies' plan is kept;
 *   4. each child's offset is its parent's plus the relative offset,
 *      resolved down every chain once (a path stack, no recursion).
 * Correctness: a child lies inside its parent in address and in time
 * (nnmem_problem_check), so two roots that do not overlap keep all their
 * descendants apart; children of one parent are kept apart by the problem
 * itself (the verifier checks it).
 * Complexity: O(n + gaps) time and memory. Thread-safety: reentrant. */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plan/problem_internal.h"
#include "plan/gapfit.h"
#include "plan/roots.h"

int nnmem__roots_needed(const nnmem_problem_t *p) {
  return nnmem_problem_gapped_count(p) || nnmem_problem_child_count(p);
}

nnmem_status_t nnmem__roots_build(const nnmem_problem_t *p,
                                  nnmem_problem_t **roots_out,
                                  uint32_t **map_out) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  nnmem_problem_t *r = NULL;
  uint32_t *map = malloc((n ? n : 1) * sizeof *map);
  nnmem_status_t st = map ? nnmem_problem_create(&r) : NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n && st == NNMEM_OK; i++) {
    map[i] = UINT32_MAX;
    if (nnmem_problem_parent(p, i, NULL, NULL) == NNMEM_OK) continue;
    size_t k = 0, idx = 0;
    nnmem_interval_t a, hull = {0, 0};
    if (nnmem__problem_active_next(p, i, &k, &a)) hull = a;
    while (nnmem__problem_active_next(p, i, &k, &a))
      hull.last = a.last;
    if (hull.last <= hull.first)
      hull = (nnmem_interval_t){b[i].first, b[i].last};
    st = nnmem_problem_add(r, nnmem_problem_id(p, i), b[i].size, b[i].align,
                           hull.first, hull.last, &idx);
    map[i] = (uint32_t)idx;
  }
  if (st) {
    free(map);
    nnmem_problem_destroy(r);
    return st;
  }
  *roots_out = r;
  *map_out = map;
  return NNMEM_OK;
}

nnmem_status_t nnmem__roots_expand(const nnmem_problem_t *p,
                                   const uint32_t *map,
                                   const uint64_t *root_off, uint64_t *off) {
  size_t n = nnmem_problem_count(p);
  unsigned char *done = calloc(n ? n : 1, 1);
  size_t *path = malloc((n ? n : 1) * sizeof *path);
  if (!done || !path) {
    free(done);
    free(path);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++)
    if (map[i] != UINT32_MAX) {
      off[i] = root_off[map[i]];
      done[i] = 1;
    }
  nnmem_status_t st = NNMEM_OK;
  for (size_t i = 0; i < n && st == NNMEM_OK; i++) {
    size_t len = 0, j = i, q;
    while (!done[j] && len < n) { /* climb to a resolved ancestor */
      path[len++] = j;
      if (nnmem_problem_parent(p, j, &q, NULL) != NNMEM_OK) break;
      j = q;
    }
    while (len > 0 && st == NNMEM_OK) { /* fill back down */
      size_t c = path[--len];
      uint64_t rel = 0;
      (void)nnmem_problem_parent(p, c, &q, &rel);
      if (!done[q] || nnmem__add_overflow(off[q], rel, &off[c]))
        st = NNMEM_ERR_OVERFLOW; /* a loop (refused by the check) or 2^64 */
      done[c] = 1;
    }
  }
  free(done);
  free(path);
  return st;
}

/* ---- gap lowering --------------------------------------------------------
 * The strategies see each root on the hull of its active time; this pass
 * lets roots drop into the gaps of others. Roots are taken by increasing
 * offset (ties by index) and each is moved to the lowest aligned offset
 * where it meets no already taken root whose active time intersects its
 * own (first fit over their ranges sorted by address).
 * Never higher: when root j is taken, every taken root i had an old
 * offset <= j's and a new one <= its old one; if i's new range met j's old
 * range while their active times intersect, i's old range (same size,
 * higher) would have met it too, an invalid input plan. So j's old offset
 * is still free and j never moves up.
 * Cost: O(r^2) pair tests for r roots (each O(1) on disjoint hulls, else
 * a merge of the two interval lists), so it runs only up to
 * NNMEM__ROOTS_LOWER_MAX roots. */

typedef struct root_item {
  uint64_t off, end;    /* [off, end) padded */
  uint64_t first, last; /* hull of the active time */
  size_t buf;           /* buffer index in the problem */
  size_t root;          /* root index in the root problem */
} root_item_t;

static int item_cmp(const void *a, const void *b) {
  const root_item_t *x = a, *y = b;
  if (x->off != y->off) return x->off < y->off ? -1 : 1;
  return x->root < y->root ? -1 : x->root > y->root;
}

static int size_desc_cmp(const void *a, const void *b) {
  const root_item_t *x = a, *y = b;
  uint64_t sx = x->end - x->off, sy = y->end - y->off;
  if (sx != sy) return sx > sy ? -1 : 1;
  return x->root < y->root ? -1 : x->root > y->root;
}

/* Places it[0..m) in array order, each at the lowest offset (first fit,
 * `best` = 0) or in the smallest hole (best fit) among the already placed
 * items whose active time meets its own; with `cap_old` an item never
 * moves above its current offset (the lowering pass). The placed items are
 * kept sorted by offset in `ord` (insertion), so their ranges are read in
 * address order without sorting. Returns the height, UINT64_MAX past
 * 2^64. */
static uint64_t place_pass(const nnmem_problem_t *p, const nnmem_buffer_t *rb,
                           uint64_t align, root_item_t *it, size_t m,
                           uint32_t *ord, int best, int cap_old) {
  uint64_t top = 0;
  size_t np = 0;
  for (size_t j = 0; j < m; j++) {
    root_item_t *x = &it[j];
    uint64_t size = x->end - x->off;
    uint64_t al = nnmem__max_u64(rb[x->root].align, align), at = 0;
    uint64_t pick = size ? UINT64_MAX : x->off, pick_hole = UINT64_MAX;
    for (size_t s = 0; s <= np && size; s++) {
      const root_item_t *o = s < np ? &it[ord[s]] : NULL;
      if (o &&
          (o->end == o->off || o->first >= x->last || x->first >= o->last ||
           !nnmem__problem_active_meet(p, o->buf, x->buf)))
        continue; /* empty, or never active with x */
      uint64_t lo = o ? o->off : UINT64_MAX;
      if (lo >= at && lo - at >= size) { /* a hole [at, lo) that fits */
        if (!best || !o) {
          if (pick == UINT64_MAX) pick = at; /* first fit, or the top */
          break;
        }
        if (lo - at < pick_hole) {
          pick_hole = lo - at;
          pick = at;
        }
      }
      if (o && o->end > at && nnmem__align_up(o->end, al, &at))
        return UINT64_MAX;
    }
    if (pick == UINT64_MAX) return UINT64_MAX;
    if (!cap_old || pick < x->off) { /* lowering: never above */
      x->off = pick;
      x->end = pick + size;
    }
    if (x->end < x->off) return UINT64_MAX;
    if (x->end > top) top = x->end;
    size_t lo = 0, hi = np; /* insert j after the offsets <= its own */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (it[ord[mid]].off <= x->off)
        lo = mid + 1;
      else
        hi = mid;
    }
    memmove(ord + lo + 1, ord + lo, (np - lo) * sizeof *ord);
    ord[lo] = (uint32_t)j;
    np++;
  }
  return top;
}

/* Steps 1-2 of the gap pass (the quadratic ones), for up to
 * NNMEM__ROOTS_LOWER_MAX roots; *height is lowered when they do better. */
static nnmem_status_t quadratic_passes(const nnmem_problem_t *p,
                                       const nnmem_problem_t *roots,
                                       const uint32_t *map, uint64_t align,
                                       uint64_t *root_off, uint64_t *height) {
  size_t n = nnmem_problem_count(p), r = nnmem_problem_count(roots), m = 0;
  const nnmem_buffer_t *rb = nnmem_problem_buffers(roots);
  root_item_t *it = malloc((r ? r : 1) * sizeof *it);
  root_item_t *it2 = malloc((r ? r : 1) * sizeof *it2);
  uint32_t *sp = malloc((r ? r : 1) * sizeof *sp);
  if (!it || !it2 || !sp) {
    free(it);
    free(it2);
    free(sp);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    if (map[i] == UINT32_MAX) continue;
    uint64_t size = 0;
    const nnmem_buffer_t *b = &rb[map[i]];
    (void)nnmem__align_up(b->size, nnmem__max_u64(b->align, align), &size);
    it[m++] = (root_item_t){root_off[map[i]],
                            root_off[map[i]] + size,
                            b->first,
                            b->last,
                            i,
                            map[i]};
  }
  memcpy(it2, it, m * sizeof *it);
  /* 1. lowering the strategies' plan: never higher than it */
  qsort(it, m, sizeof *it, item_cmp);
  uint64_t h1 = place_pass(p, rb, align, it, m, sp, 0, 1);
  /* 2. a gap-aware best fit from scratch, largest first */
  qsort(it2, m, sizeof *it2, size_desc_cmp);
  uint64_t h2 = place_pass(p, rb, align, it2, m, sp, 1, 0);
  const root_item_t *win = h2 < h1 ? it2 : it;
  uint64_t h = h2 < h1 ? h2 : h1;
  if (h <= *height) {
    for (size_t j = 0; j < m; j++)
      root_off[win[j].root] = win[j].off;
    *height = h;
  }
  free(it);
  free(it2);
  free(sp);
  return NNMEM_OK;
}

nnmem_status_t nnmem__roots_lower(const nnmem_problem_t *p,
                                  const nnmem_problem_t *roots,
                                  const uint32_t *map, uint64_t align,
                                  uint64_t *root_off, uint64_t *height) {
  size_t r = nnmem_problem_count(roots);
  if (!nnmem_problem_gapped_count(p)) return NNMEM_OK;
  nnmem_status_t st = NNMEM_OK;
  if (r <= NNMEM__ROOTS_LOWER_MAX)
    st = quadratic_passes(p, roots, map, align, root_off, height);
  /* 3. the gap-aware best fit over the occupancy map (gapfit.c), any size */
  uint64_t *off = malloc((r ? r : 1) * sizeof *off), h = 0;
  if (!off) return NNMEM_ERR_NOMEM;
  nnmem_status_t g = st ? st : nnmem__gapfit(p, roots, map, align, off, &h);
  if (g == NNMEM_OK && h < *height) {
    memcpy(root_off, off, r * sizeof *off);
    *height = h;
  }
  free(off);
  return st ? st : (g == NNMEM_ERR_NOMEM ? g : NNMEM_OK);
}

/* gapfit.c - a gap-aware best fit for problems with gaps, at the scale of
 * the placement engine, built on the occupancy map's interface alone
 * (occupancy.h; occupancy.c and place.c are untouched).
 *
 * Each root of the root problem (roots.c) is cut into its *pieces*, one
 * per active interval, and the pieces form a plain problem over which the
 * occupancy map is built. A root must take the same bytes in all its
 * pieces, so:
 *   1. roots are taken largest first (padded size; ties: earlier hull
 *      start, lower index);
 *   2. for each piece the map answers the free gaps of at least `size`
 *      bytes among placed pieces live with it, plus [top, 2^64) above
 *      them; the root's candidates are the intersection over its pieces
 *      (two sorted range lists merged, pieces shorter than `size`
 *      dropped);
 *   3. best fit: the smallest finite candidate whose aligned start leaves
 *      room (ties: the lowest); none: the aligned start of the unbounded
 *      one;
 *   4. every piece records [offset, offset + size) in the map.
 * Validity: two roots whose active times meet have pieces whose lifetimes
 * intersect; the later one avoided the earlier one's range in that piece.
 * Exactness of step 2 follows the map's (occupancy.c), including its cut:
 * a query over too many ranges answers only the top (valid, higher).
 * Complexity: the map's O(log T) sets per piece query and add; the
 * intersection is linear in the gaps returned. Thread-safety: reentrant. */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plan/gapfit.h"
#include "plan/occupancy.h"
#include "plan/problem_internal.h"

typedef struct gf_root {
  uint64_t size, first;
  uint32_t root;   /* index in the root problem */
  uint32_t piece;  /* its first piece */
  uint32_t pieces; /* how many */
} gf_root_t;

static int gf_cmp(const void *a, const void *b) {
  const gf_root_t *x = a, *y = b;
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return x->root < y->root ? -1 : x->root > y->root;
}

/* cand := cand intersected with (gaps[0..k) + [top, max)), keeping the
 * ranges at least `size` long. Both lists sorted and disjoint. */
static size_t intersect(nnmem__range_t *cand, size_t nc,
                        const nnmem__range_t *gaps, size_t k, uint64_t top,
                        uint64_t size, nnmem__range_t *out) {
  size_t i = 0, j = 0, m = 0;
  while (i < nc && j <= k) {
    nnmem__range_t g = j < k ? gaps[j] : (nnmem__range_t){top, UINT64_MAX};
    uint64_t lo = cand[i].lo > g.lo ? cand[i].lo : g.lo;
    uint64_t hi = cand[i].hi < g.hi ? cand[i].hi : g.hi;
    if (hi > lo && hi - lo >= size) out[m++] = (nnmem__range_t){lo, hi};
    if (cand[i].hi < g.hi)
      i++;
    else
      j++;
  }
  return m;
}

/* Step 3: 1 on overflow. */
static int choose(const nnmem__range_t *c, size_t m, uint64_t size, uint64_t al,
                  uint64_t *off) {
  uint64_t best = UINT64_MAX, pick = UINT64_MAX, s;
  for (size_t i = 0; i < m; i++) {
    if (nnmem__align_up(c[i].lo, al, &s) || s > c[i].hi || c[i].hi - s < size)
      continue;
    if (c[i].hi == UINT64_MAX) { /* the unbounded one: last resort */
      if (pick == UINT64_MAX) pick = s;
      break;
    }
    if (c[i].hi - c[i].lo < best) {
      best = c[i].hi - c[i].lo;
      pick = s;
    }
  }
  *off = pick;
  return pick == UINT64_MAX;
}

/* Builds the pieces problem and the root list. */
static nnmem_status_t make_pieces(const nnmem_problem_t *p,
                                  const nnmem_problem_t *roots,
                                  const uint32_t *map, uint64_t align,
                                  nnmem_problem_t **pieces, gf_root_t *rt) {
  const nnmem_buffer_t *rb = nnmem_problem_buffers(roots);
  nnmem_status_t st = nnmem_problem_create(pieces);
  for (size_t i = 0; i < nnmem_problem_count(p) && st == NNMEM_OK; i++) {
    if (map[i] == UINT32_MAX) continue;
    const nnmem_buffer_t *b = &rb[map[i]];
    gf_root_t *r = &rt[map[i]];
    if (nnmem__align_up(b->size, nnmem__max_u64(b->align, align), &r->size))
      return NNMEM_ERR_OVERFLOW;
    r->first = b->first;
    r->root = map[i];
    r->piece = (uint32_t)nnmem_problem_count(*pieces);
    r->pieces = 0;
    size_t k = 0;
    nnmem_interval_t a;
    while (st == NNMEM_OK && nnmem__problem_active_next(p, i, &k, &a)) {
      st = nnmem_problem_add(*pieces, NULL, b->size, 1, a.first, a.last, NULL);
      r->pieces++;
    }
  }
  return st;
}

/* Steps 2-4 for one root; *end gets its end. */
static nnmem_status_t place_root(nnmem__occ_t *occ, const gf_root_t *r,
                                 uint64_t al, nnmem__range_t **gaps,
                                 size_t *gcap, nnmem__range_t **cand,
                                 nnmem__range_t **tmp, size_t *ccap,
                                 uint64_t *off) {
  size_t nc = 1;
  (*cand)[0] = (nnmem__range_t){0, UINT64_MAX};
  for (uint32_t q = 0; q < r->pieces && nc; q++) {
    size_t k = 0;
    uint64_t top = 0;
    nnmem_status_t st =
        nnmem__occ_gaps(occ, r->piece + q, r->size, gaps, &k, gcap, &top);
    if (st) return st;
    if (nc + k + 1 > *ccap) { /* the intersection has at most nc + k + 1 */
      size_t need = nc + k + 1;
      nnmem__range_t *a = realloc(*cand, need * sizeof *a);
      if (a) *cand = a;
      nnmem__range_t *b = realloc(*tmp, need * sizeof *b);
      if (b) *tmp = b;
      if (!a || !b) return NNMEM_ERR_NOMEM;
      *ccap = need;
    }
    nc = intersect(*cand, nc, *gaps, k, top, r->size, *tmp);
    nnmem__range_t *sw = *cand;
    *cand = *tmp;
    *tmp = sw;
  }
  return choose(*cand, nc, r->size, al, off) ? NNMEM_ERR_OVERFLOW : NNMEM_OK;
}

nnmem_status_t nnmem__gapfit(const nnmem_problem_t *p,
                             const nnmem_problem_t *roots, const uint32_t *map,
                             uint64_t align, uint64_t *off, uint64_t *height) {
  size_t r = nnmem_problem_count(roots);
  const nnmem_buffer_t *rb = nnmem_problem_buffers(roots);
  gf_root_t *rt = calloc(r ? r : 1, sizeof *rt);
  size_t gcap = 0, ccap = 16;
  nnmem__range_t *gaps = NULL, *cand = malloc(ccap * sizeof *cand),
                 *tmp = malloc(ccap * sizeof *tmp);
  nnmem_problem_t *pieces = NULL;
  nnmem__occ_t *occ = NULL;
  nnmem_status_t st = rt && cand && tmp ? NNMEM_OK : NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) st = make_pieces(p, roots, map, align, &pieces, rt);
  if (st == NNMEM_OK) st = nnmem__occ_create(pieces, &occ);
  if (st == NNMEM_OK) qsort(rt, r, sizeof *rt, gf_cmp);
  uint64_t top = 0;
  for (size_t j = 0; j < r && st == NNMEM_OK; j++) {
    const gf_root_t *x = &rt[j];
    uint64_t o = 0, end;
    if (x->size == 0) {
      off[x->root] = 0;
      continue;
    }
    uint64_t al = nnmem__max_u64(rb[x->root].align, align);
    st = place_root(occ, x, al, &gaps, &gcap, &cand, &tmp, &ccap, &o);
    if (st == NNMEM_OK && nnmem__add_overflow(o, x->size, &end))
      st = NNMEM_ERR_OVERFLOW;
    for (uint32_t q = 0; q < x->pieces && st == NNMEM_OK; q++)
      st = nnmem__occ_add(occ, x->piece + q, o, end);
    off[x->root] = o;
    if (st == NNMEM_OK && end > top) top = end;
  }
  if (st == NNMEM_OK) *height = top;
  nnmem__occ_destroy(occ);
  nnmem_problem_destroy(pieces);
  free(rt);
  free(gaps);
  free(cand);
  free(tmp);
  return st;
}

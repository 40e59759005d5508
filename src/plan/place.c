/* place.c - the placement engine behind greedy-size, greedy-breadth and
 * heap-best-fit: buffers are taken in a given order and each is put into the
 * best gap left by the already placed buffers that are live at the same
 * time (TFLite's ArenaPlanner / XLA's GlobalDecreasingSizeBestFitHeap idea).
 *
 * For each buffer x in order:
 *   1. ask the interval tree (itree.c) for the placed buffers whose
 *      lifetimes intersect x's: O(log n + k);
 *   2. sort those k by offset and sweep them, merging overlaps, to list the
 *      free gaps [end of one, start of the next) below their top;
 *   3. best fit: the smallest gap whose aligned start leaves room for x
 *      (ties: the lowest); first fit: the lowest such gap; none fits: put x
 *      at the aligned top of the k buffers;
 *   4. mark x placed in the tree.
 * Total O(n log n + sum k log k); k is the number of live-overlapping
 * placed buffers, not all placed buffers, so no quadratic scan arises on
 * traces with bounded concurrency.
 *
 * Time x address picture of step 2 for x live on [a, b):
 *
 *   address ^      +----+                    gaps: [0,2) [5,7) top 9
 *         9 |      | p3 |  +---+
 *         7 |  +---+----+  |p2 |
 *         5 |  |  p1    |  +---+
 *         2 |  +--------+
 *           +--a------------------b--> step
 *
 * Invariant after each step: no two placed buffers with intersecting
 * lifetimes overlap in address (checked independently by verify.c).
 * Thread-safety: reentrant; all state is local to one call. */
#include <stdlib.h>

#include "common/util.h"
#include "plan/itree.h"
#include "plan/place.h"

uint64_t nnmem__padded_size(const nnmem_buffer_t *b, uint64_t align) {
  uint64_t r;
  if (nnmem__align_up(b->size, nnmem__max_u64(b->align, align), &r))
    return UINT64_MAX;
  return r;
}

typedef struct span {
  uint64_t off, end;
} span_t;

static int span_cmp(const void *a, const void *b) {
  const span_t *x = a, *y = b;
  if (x->off != y->off) return x->off < y->off ? -1 : 1;
  return (x->end > y->end) - (x->end < y->end);
}

/* Chooses an offset for `size` bytes aligned to `al` among the gaps left
 * by `spans` (sorted by offset). Returns 1 on overflow. */
static int choose_gap(const span_t *spans, size_t k, uint64_t size,
                      uint64_t al, nnmem__fit_t fit, uint64_t *off) {
  uint64_t cur = 0, best_gap = UINT64_MAX, best_off = 0;
  int found = 0;
  for (size_t i = 0; i < k; i++) {
    if (spans[i].off > cur) {
      uint64_t s;
      if (!nnmem__align_up(cur, al, &s) && s <= spans[i].off &&
          spans[i].off - s >= size) {
        uint64_t gap = spans[i].off - cur;
        if (fit == NNMEM__FIT_FIRST) {
          *off = s;
          return 0;
        }
        if (gap < best_gap) {
          best_gap = gap;
          best_off = s;
          found = 1;
        }
      }
    }
    if (spans[i].end > cur) cur = spans[i].end;
  }
  if (found) {
    *off = best_off;
    return 0;
  }
  return nnmem__align_up(cur, al, off);
}

nnmem_status_t nnmem__place_in_order(const nnmem_problem_t *p,
                                     const uint32_t *order, uint64_t align,
                                     nnmem__fit_t fit, uint64_t *offsets,
                                     uint64_t *height) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  nnmem__itree_t *tree = NULL;
  nnmem_status_t st = nnmem__itree_create(p, &tree);
  if (st) return st;
  uint32_t *hits = NULL;
  span_t *spans = NULL;
  size_t hits_cap = 0, spans_cap = 0;
  uint64_t top = 0;
  for (size_t j = 0; j < n && st == NNMEM_OK; j++) {
    uint32_t x = order[j];
    uint64_t size = nnmem__padded_size(&b[x], align);
    uint64_t al = nnmem__max_u64(b[x].align, align);
    offsets[x] = 0;
    if (b[x].size == 0) continue; /* occupies nothing */
    size_t k = 0;
    st = nnmem__itree_query(tree, b[x].first, b[x].last, &hits, &k,
                            &hits_cap);
    if (st == NNMEM_OK)
      st = nnmem__grow((void **)&spans, &spans_cap, k ? k : 1, sizeof *spans);
    if (st) break;
    for (size_t i = 0; i < k; i++) {
      spans[i].off = offsets[hits[i]];
      spans[i].end = offsets[hits[i]] + nnmem__padded_size(&b[hits[i]], align);
    }
    qsort(spans, k, sizeof *spans, span_cmp);
    uint64_t end;
    if (choose_gap(spans, k, size, al, fit, &offsets[x]) ||
        nnmem__add_overflow(offsets[x], size, &end)) {
      st = NNMEM_ERR_OVERFLOW;
      break;
    }
    if (end > top) top = end;
    nnmem__itree_activate(tree, x);
  }
  free(hits);
  free(spans);
  nnmem__itree_destroy(tree);
  if (st == NNMEM_OK) *height = top;
  return st;
}

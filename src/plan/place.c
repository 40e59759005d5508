/* place.c - the placement engine behind greedy-size, greedy-breadth and
 * heap-best-fit: buffers are taken in a given order and each is put into the
 * best gap left by the already placed buffers that are live at the same
 * time (TFLite's ArenaPlanner / XLA's GlobalDecreasingSizeBestFitHeap idea).
 *
 * For each buffer x in order:
 *   1. ask the occupancy map (occupancy.c) for the free gaps of at least
 *      x's size, sorted by offset, left by the placed buffers whose
 *      lifetimes intersect x's, and their top: O(log T) merged sets cut
 *      down to the gaps, so the cost follows the number of separate
 *      ranges, not the number of overlapping buffers, and nothing is
 *      sorted;
 *   2. best fit: the smallest gap whose aligned start leaves room for x
 *      (ties: the lowest); first fit: the lowest such gap; none fits: put x
 *      at the aligned top;
 *   3. record x's range in the occupancy map.
 * Past the deadline of a run that must finish (ctl->must_finish), the map
 * switches to its skyline mode (occupancy.c) and each remaining x goes on
 * top of the placed buffers live with it, no gap search: O(log T) a
 * buffer, so the run ends soon after the deadline with a valid plan.
 *
 * Time x address picture of step 1 for x live on [a, b):
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
#include <string.h>

#include "common/util.h"
#include "plan/occupancy.h"
#include "plan/place.h"

int nnmem__padded_size_checked(const nnmem_buffer_t *b, uint64_t align,
                               uint64_t *out) {
  return nnmem__align_up(b->size, nnmem__max_u64(b->align, align), out);
}

uint64_t nnmem__padded_size(const nnmem_buffer_t *b, uint64_t align) {
  uint64_t r;
  if (nnmem__align_up(b->size, nnmem__max_u64(b->align, align), &r))
    return UINT64_MAX;
  return r;
}

typedef nnmem__range_t span_t; /* [offset, end) taken by placed buffers */

/* Chooses an offset for `size` bytes aligned to `al` among `gaps`
 * (sorted by address, free below `top`). Returns 1 on overflow. */
int nnmem__choose_gap(const nnmem__range_t *gaps, size_t k, uint64_t top,
                      uint64_t size, uint64_t al, nnmem__fit_t fit,
                      uint64_t *off) {
  uint64_t best_gap = UINT64_MAX, best_off = 0;
  int found = 0;
  for (size_t i = 0; i < k; i++) {
    uint64_t s;
    if (!nnmem__align_up(gaps[i].lo, al, &s) && s <= gaps[i].hi &&
        gaps[i].hi - s >= size) {
      uint64_t gap = gaps[i].hi - gaps[i].lo;
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
  if (found) {
    *off = best_off;
    return 0;
  }
  return nnmem__align_up(top, al, off);
}

/* Switches the map to skyline mode holding the ends of the first `j`
 * buffers of `order` (already placed). */
static nnmem_status_t start_rush(nnmem__occ_t *occ, const nnmem_problem_t *p,
                                 const uint32_t *order, size_t j,
                                 uint64_t align, const uint64_t *offsets) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  nnmem_status_t st = nnmem__occ_sky_start(occ);
  for (size_t q = 0; q < j && st == NNMEM_OK; q++) {
    uint32_t y = order[q];
    uint64_t size = 0;
    if (b[y].size == 0) continue;
    (void)nnmem__padded_size_checked(&b[y], align, &size); /* placed: fits */
    nnmem__occ_sky_add(occ, y, offsets[y] + size);
  }
  return st;
}

/* Scratch array of the gap search, grown as needed. */
typedef struct scratch {
  nnmem__range_t *gaps;
  size_t cap;
} scratch_t;

/* Steps 1-2 for buffer x: its offset among the gaps (NNMEM_ERR_OVERFLOW
 * when aligning it passes 2^64 - 1). */
static nnmem_status_t find_offset(nnmem__occ_t *occ, scratch_t *sc, size_t x,
                                  uint64_t size, uint64_t al, nnmem__fit_t fit,
                                  uint64_t *off) {
  size_t k = 0;
  uint64_t top = 0;
  nnmem_status_t st =
      nnmem__occ_gaps(occ, x, size, &sc->gaps, &k, &sc->cap, &top);
  if (st) return st;
  return nnmem__choose_gap(sc->gaps, k, top, size, al, fit, off)
             ? NNMEM_ERR_OVERFLOW
             : NNMEM_OK;
}

/* Reads the clock every NNMEM__PLACE_CLOCK_EVERY buffers: 1 once the
 * deadline has passed. */
static int past_deadline(const nnmem__place_ctl_t *ctl, size_t j) {
  return ctl->deadline > 0 && j > 0 && j % NNMEM__PLACE_CLOCK_EVERY == 0 &&
         nnmem__now() > ctl->deadline;
}

nnmem_status_t nnmem__place_in_order(const nnmem_problem_t *p,
                                     const uint32_t *order, uint64_t align,
                                     nnmem__fit_t fit, uint64_t limit,
                                     nnmem__place_ctl_t *ctl, uint64_t *offsets,
                                     uint64_t *height) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  nnmem__occ_t *occ = NULL;
  nnmem_status_t st = nnmem__occ_create(p, &occ);
  if (st) return st;
  scratch_t sc = {0};
  uint64_t top = 0;
  int rush = 0; /* past the deadline: on top, no gap search */
  for (size_t j = 0; j < n && st == NNMEM_OK; j++) {
    uint32_t x = order[j];
    uint64_t size = 0, end = 0, al = nnmem__max_u64(b[x].align, align);
    offsets[x] = 0;
    if (!rush && past_deadline(ctl, j)) {
      ctl->cut = 1;
      if (!ctl->must_finish) {
        st = NNMEM_ERR_TIMEOUT;
        break;
      }
      rush = 1;
      if ((st = start_rush(occ, p, order, j, align, offsets))) break;
    }
    if (b[x].size == 0) continue; /* occupies nothing */
    if (nnmem__padded_size_checked(&b[x], align, &size))
      st = NNMEM_ERR_OVERFLOW;
    else if (rush)
      st = nnmem__align_up(nnmem__occ_sky_top(occ, x), al, &offsets[x])
               ? NNMEM_ERR_OVERFLOW
               : NNMEM_OK;
    else
      st = find_offset(occ, &sc, x, size, al, fit, &offsets[x]);
    if (st == NNMEM_OK && nnmem__add_overflow(offsets[x], size, &end))
      st = NNMEM_ERR_OVERFLOW;
    if (st == NNMEM_ERR_OVERFLOW) ctl->overflow_buf = x;
    if (st) break;
    if (end > top) top = end;
    if (top > limit) {
      st = NNMEM_ERR_CAPACITY; /* cannot beat the plan we already have */
      break;
    }
    if (rush)
      nnmem__occ_sky_add(occ, x, end);
    else
      st = nnmem__occ_add(occ, x, offsets[x], end);
  }
  free(sc.gaps);
  nnmem__occ_destroy(occ);
  if (st == NNMEM_OK) *height = top;
  return st;
}

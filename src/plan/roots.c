/* roots.c - the reduced "root problem" behind planning a problem that has
 * gaps or sub-buffers, so the strategies (place.c, occupancy.c, order.c)
 * keep seeing plain buffers with one lifetime each.
 *
 *   1. every root (buffer without a parent) becomes one buffer of the root
 *      problem with its size, its alignment and the hull of its active
 *      time [first active step, last active step): a gap inside the hull
 *      is kept free of others only conservatively (correct, not exploited),
 *      a gap at either end shortens the lifetime;
 *   2. the strategies plan the root problem;
 *   3. each child's offset is its parent's plus the relative offset,
 *      resolved down every chain once (a path stack, no recursion).
 * Correctness: a child lies inside its parent in address and in time
 * (nnmem_problem_check), so two roots that do not overlap keep all their
 * descendants apart; children of one parent are kept apart by the problem
 * itself (the verifier checks it).
 * Complexity: O(n + gaps) time and memory. Thread-safety: reentrant. */
#include <stdlib.h>

#include "common/util.h"
#include "plan/problem_internal.h"
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
    st = nnmem_problem_add(r, NULL, b[i].size, b[i].align, hull.first,
                           hull.last, &idx);
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

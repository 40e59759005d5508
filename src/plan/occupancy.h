/* occupancy.h - which addresses are taken during a span of time, for the
 * placement engine (internal to plan/). See occupancy.c. */
#ifndef NNMEM_PLAN_OCCUPANCY_H
#define NNMEM_PLAN_OCCUPANCY_H

#include "nnmem/problem.h"

typedef struct nnmem__occ nnmem__occ_t;

/* A query that would return more ranges than this returns [0, top). */
#define NNMEM__OCC_MAX_RANGES 4096

/* An address range [lo, hi). */
typedef struct nnmem__range {
  uint64_t lo, hi;
} nnmem__range_t;

/* Builds an empty occupancy map over the lifetimes of `p`'s buffers. */
nnmem_status_t nnmem__occ_create(const nnmem_problem_t *p, nnmem__occ_t **out);
void nnmem__occ_destroy(nnmem__occ_t *o);

/* Records that buffer `i` takes [lo, hi) during its lifetime. */
nnmem_status_t nnmem__occ_add(nnmem__occ_t *o, size_t i, uint64_t lo,
                              uint64_t hi);

/* Collects address ranges covering the union U of the ranges of the added
 * buffers whose lifetimes intersect buffer `i`'s, coarsened for `size`
 * bytes: the union of the result is U with some gaps of U shorter than
 * `size` filled in, so it has exactly the same gaps of `size` bytes or more
 * and the same top; when that would take more than NNMEM__OCC_MAX_RANGES
 * ranges, the one range [0, top) instead (the cut: see occupancy.c). The
 * ranges may overlap and come unsorted. *out is
 * grown as needed (capacity *cap); returns the count in *n. Not const: it
 * tightens the sets' gap bounds as it reads them. */
nnmem_status_t nnmem__occ_query(nnmem__occ_t *o, size_t i, uint64_t size,
                                nnmem__range_t **out, size_t *n, size_t *cap);

/* Skyline mode (see occupancy.c): after sky_start, sky_add records that
 * buffer `i` ends at `end` and sky_top answers the largest end recorded
 * for a buffer whose lifetime meets `i`'s (0 if none). O(log T) each;
 * independent of the range sets. */
nnmem_status_t nnmem__occ_sky_start(nnmem__occ_t *o);
void nnmem__occ_sky_add(nnmem__occ_t *o, size_t i, uint64_t end);
uint64_t nnmem__occ_sky_top(const nnmem__occ_t *o, size_t i);

#endif

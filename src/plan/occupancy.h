/* occupancy.h - which addresses are taken during a span of time, for the
 * placement engine (internal to plan/). See occupancy.c. */
#ifndef NNMEM_PLAN_OCCUPANCY_H
#define NNMEM_PLAN_OCCUPANCY_H

#include "nnmem/problem.h"

typedef struct nnmem__occ nnmem__occ_t;

/* A query whose sets hold more ranges than this (solid sets counted as one)
 * answers no gap, only the top: the cut (occupancy.c). */
#define NNMEM__OCC_MAX_RANGES 4096

/* An address range [lo, hi). */
typedef struct nnmem__range {
  uint64_t lo, hi;
} nnmem__range_t;

/* Builds an empty occupancy map over the lifetimes of `p`'s buffers. */
nnmem_status_t nnmem__occ_create(const nnmem_problem_t *p, nnmem__occ_t **out);
/* The same over the buffers idx[0..n) of `p` only (idx NULL: 0..n-1);
 * only those may be added or queried. */
nnmem_status_t nnmem__occ_create_subset(const nnmem_problem_t *p,
                                        const uint32_t *idx, size_t n,
                                        nnmem__occ_t **out);
void nnmem__occ_destroy(nnmem__occ_t *o);

/* Records that buffer `i` takes [lo, hi) during its lifetime. */
nnmem_status_t nnmem__occ_add(nnmem__occ_t *o, size_t i, uint64_t lo,
                              uint64_t hi);

/* Writes to *out the gaps of at least `size` bytes, sorted by address,
 * of the union U of the ranges of the added buffers whose lifetimes
 * intersect buffer `i`'s: the maximal free ranges below the top of U
 * (the top goes to *top). When the sets to read hold more than
 * NNMEM__OCC_MAX_RANGES ranges after coarsening (the cut: see
 * occupancy.c) or `size` is UINT64_MAX, no gaps, only the top. *out is
 * grown as needed (capacity *cap); returns the count in *n. Not const: it
 * uses scratch kept in the map. */
nnmem_status_t nnmem__occ_gaps(nnmem__occ_t *o, size_t i, uint64_t size,
                               nnmem__range_t **out, size_t *n, size_t *cap,
                               uint64_t *top);

/* Skyline mode (see occupancy.c): after sky_start, sky_add records that
 * buffer `i` ends at `end` and sky_top answers the largest end recorded
 * for a buffer whose lifetime meets `i`'s (0 if none). O(log T) each;
 * independent of the range sets. */
nnmem_status_t nnmem__occ_sky_start(nnmem__occ_t *o);
void nnmem__occ_sky_add(nnmem__occ_t *o, size_t i, uint64_t end);
uint64_t nnmem__occ_sky_top(const nnmem__occ_t *o, size_t i);

#endif

/* occupancy.h - which addresses are taken during a span of time, for the
 * placement engine (internal to plan/). See occupancy.c. */
#ifndef NNMEM_PLAN_OCCUPANCY_H
#define NNMEM_PLAN_OCCUPANCY_H

#include "nnmem/problem.h"

typedef struct nnmem__occ nnmem__occ_t;

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

/* Collects address ranges whose union is exactly the union of the ranges
 * of the added buffers whose lifetimes intersect buffer `i`'s. The ranges
 * may overlap and come unsorted. *out is grown as needed (capacity *cap);
 * returns the count in *n. */
nnmem_status_t nnmem__occ_query(const nnmem__occ_t *o, size_t i,
                                nnmem__range_t **out, size_t *n, size_t *cap);

#endif

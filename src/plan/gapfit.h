/* gapfit.h - gap-aware best fit over the occupancy map (internal to plan/;
 * see gapfit.c). */
#ifndef NNMEM_PLAN_GAPFIT_H
#define NNMEM_PLAN_GAPFIT_H

#include "nnmem/problem.h"

/* Places the roots of `roots` (built from `p` by nnmem__roots_build, `map`
 * its buffer -> root map) so that two roots share bytes only when their
 * active times in `p` do not meet; offsets multiples of max(root align,
 * `align`). Writes off[root] and *height. NNMEM_ERR_OVERFLOW past 2^64,
 * NNMEM_ERR_NOMEM. */
nnmem_status_t nnmem__gapfit(const nnmem_problem_t *p,
                             const nnmem_problem_t *roots, const uint32_t *map,
                             uint64_t align, uint64_t *off, uint64_t *height);

#endif

/* roots.h - the root problem of a problem with gaps or sub-buffers
 * (internal to plan/; see roots.c). */
#ifndef NNMEM_PLAN_ROOTS_H
#define NNMEM_PLAN_ROOTS_H

#include "nnmem/problem.h"

/* 1 when `p` has gaps or sub-buffers (planning goes through the roots). */
int nnmem__roots_needed(const nnmem_problem_t *p);

/* Builds the root problem (*roots_out, caller destroys) and the map from
 * buffer index to root index (*map_out, caller frees; UINT32_MAX for a
 * child). `p` must pass nnmem_problem_check. */
nnmem_status_t nnmem__roots_build(const nnmem_problem_t *p,
                                  nnmem_problem_t **roots_out,
                                  uint32_t **map_out);

/* Offsets of every buffer of `p` from the root problem's offsets. */
nnmem_status_t nnmem__roots_expand(const nnmem_problem_t *p,
                                   const uint32_t *map,
                                   const uint64_t *root_off, uint64_t *off);

#endif

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

/* Largest root count nnmem__roots_lower works on (it is quadratic). */
#define NNMEM__ROOTS_LOWER_MAX 4096

/* Gap lowering (see roots.c): moves roots of the root problem down into the
 * gaps of others, never up; `root_off` is a valid plan of `roots` with
 * planner alignment `align`, and stays a valid plan of `p` (through the
 * map). *height gets the new height. No-op without gaps or past
 * NNMEM__ROOTS_LOWER_MAX roots. */
nnmem_status_t nnmem__roots_lower(const nnmem_problem_t *p,
                                  const nnmem_problem_t *roots,
                                  const uint32_t *map, uint64_t align,
                                  uint64_t *root_off, uint64_t *height);

#endif

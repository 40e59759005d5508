/* itree.h - static interval tree over the lifetimes of a problem's buffers
 * (internal to plan/). See itree.c. */
#ifndef NNMEM_PLAN_ITREE_H
#define NNMEM_PLAN_ITREE_H

#include "nnmem/problem.h"

typedef struct nnmem__itree nnmem__itree_t;

/* What a query reports per buffer: its index and the two values given
 * when it was activated (the placer stores its address range there). */
typedef struct nnmem__itree_hit {
  uint64_t lo, hi;
  uint64_t idx;
} nnmem__itree_hit_t;

/* Builds the tree over every buffer of `p`; all start inactive. */
nnmem_status_t nnmem__itree_create(const nnmem_problem_t *p,
                                   nnmem__itree_t **out);
void nnmem__itree_destroy(nnmem__itree_t *t);

/* Marks buffer `i` active with payload (lo, hi) / inactive. O(log n). */
void nnmem__itree_activate(nnmem__itree_t *t, size_t i, uint64_t lo,
                           uint64_t hi);
void nnmem__itree_deactivate(nnmem__itree_t *t, size_t i);

/* Writes to `out` (room for every buffer of the problem) the active
 * buffers whose lifetime intersects [a, b); returns how many.
 * O(log n + k) for k results in the typical case. */
size_t nnmem__itree_query(const nnmem__itree_t *t, uint64_t a, uint64_t b,
                          nnmem__itree_hit_t *out);

#endif

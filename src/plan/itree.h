/* itree.h - static interval tree over the lifetimes of a problem's buffers
 * (internal to plan/). See itree.c. */
#ifndef NNMEM_PLAN_ITREE_H
#define NNMEM_PLAN_ITREE_H

#include "nnmem/problem.h"

typedef struct nnmem__itree nnmem__itree_t;

/* Builds the tree over every buffer of `p`; all start inactive. */
nnmem_status_t nnmem__itree_create(const nnmem_problem_t *p,
                                   nnmem__itree_t **out);
void nnmem__itree_destroy(nnmem__itree_t *t);

/* Marks buffer `i` active / inactive. O(log n). */
void nnmem__itree_activate(nnmem__itree_t *t, size_t i);
void nnmem__itree_deactivate(nnmem__itree_t *t, size_t i);
void nnmem__itree_activate_all(nnmem__itree_t *t);

/* Appends to *out (grown with nnmem__grow, *n entries, *cap capacity) the
 * indices of the active buffers whose lifetime intersects [a, b).
 * O(log n + k) for k results in the typical case. */
nnmem_status_t nnmem__itree_query(const nnmem__itree_t *t, uint64_t a,
                                  uint64_t b, uint32_t **out, size_t *n,
                                  size_t *cap);

#endif

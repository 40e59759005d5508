/* problem_internal.h - helpers over a problem's gaps and sub-buffers shared
 * inside the library (readers, planner front door). Not installed. */
#ifndef NNMEM_PLAN_PROBLEM_INTERNAL_H
#define NNMEM_PLAN_PROBLEM_INTERNAL_H

#include "nnmem/problem.h"

/* Iterates buffer i's active intervals (lifetime minus gaps) in time order:
 * start with *k = 0; returns 0 when there are no more. */
int nnmem__problem_active_next(const nnmem_problem_t *p, size_t i, size_t *k,
                               nnmem_interval_t *out);

/* Do the active times of buffers a and b meet? A merge of their two
 * sorted interval lists (after a test of the lifetimes). */
int nnmem__problem_active_meet(const nnmem_problem_t *p, size_t a, size_t b);

/* Checks buffer i's gaps (inside the lifetime, disjoint, some active time
 * left). On failure *why says what and *gap names the gap (sorted index). */
nnmem_status_t nnmem__problem_check_gaps(const nnmem_problem_t *p, size_t i,
                                         const char **why, size_t *gap);

/* The gap and sub-buffer rules of nnmem_problem_check; on failure
 * *bad_index (nullable) is the buffer the message names. */
nnmem_status_t nnmem__problem_check_extras(const nnmem_problem_t *p,
                                           nnmem_diag_t *diag,
                                           size_t *bad_index);

/* Makes room for n buffers in all (arrays and id index), so that adding
 * them neither moves nor rehashes anything. */
nnmem_status_t nnmem__problem_reserve(nnmem_problem_t *p, size_t n);

/* How many buffers were added with an id already taken (see
 * nnmem_problem_check). */
size_t nnmem__problem_dup_ids(const nnmem_problem_t *p);

#endif

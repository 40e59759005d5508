/* anchor.h - the peak window placed exactly, the rest around it (internal
 * to plan/; see anchor.c). */
#ifndef NNMEM_PLAN_ANCHOR_H
#define NNMEM_PLAN_ANCHOR_H

#include "plan/search.h"

/* Above this many buffers the anchoring is not tried (each window costs
 * a placement of every buffer). */
#define NNMEM__ANCHOR_MAX_BUFFERS 200000

/* For a capacity (decision) the anchoring runs first on sets of more
 * buffers than this only: the decision search's full mode (search.c) places
 * smaller ones itself (the MiniMalloc set, zero-slack problems), and the
 * windows would only take nodes from it. */
#define NNMEM__ANCHOR_MIN_DECIDE 4096

/* Tries to lower the valid plan `off` of `p` (height *height, in and out)
 * to at most `target`: for windows of growing width around the step with
 * the most live bytes, a decision search (search.c) places the buffers
 * live in the window (lifetimes cut to it) under `target`, those offsets
 * are kept for the whole buffers, and the other buffers are placed around
 * them by best fit in size order. Keeps each plan lower than the best so
 * far; stops at `target`, after the widest window, or when `ctl`'s
 * budget, clock or stop flag ends it (it spends at most half of the nodes
 * left). *infeasible is set when a window proves that no plan of `p` fits
 * under `target` (a window is a relaxation of `p`). Problems with gaps or
 * sub-buffers are left alone. Deterministic for a given budget.
 * NNMEM_ERR_NOMEM on allocation failure. */
nnmem_status_t nnmem__anchor(const nnmem_problem_t *p, uint64_t align,
                             uint64_t target, nnmem__search_ctl_t *ctl,
                             uint64_t *off, uint64_t *height, int *infeasible);

#endif

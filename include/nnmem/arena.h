/* nnmem/arena.h - binds static plans to real memory.
 *
 * An arena reserves one region of a backend, as large as the tallest plan
 * bound to it, and gives each planned buffer its address (base + offset).
 * Plans of several models that never run at the same time share one arena:
 * the region is max(height) instead of sum(height); nnmem_arena_info
 * reports the saving.
 *
 * Thread-safety: creation/destruction are not synchronized; address
 * queries only read and may run concurrently. */
#ifndef NNMEM_ARENA_H
#define NNMEM_ARENA_H

#include "nnmem/backend.h"
#include "nnmem/plan.h"
#include "nnmem/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nnmem_arena nnmem_arena_t;

/* One plan: the region is plan height bytes, its base aligned to
 * max(nnmem_plan_alignment(plan), buffer aligns, backend alignment), so
 * every address keeps the alignment the planner gave its offset. The plan
 * and problem are not kept. */
NNMEM_API nnmem_status_t nnmem_arena_create(const nnmem_problem_t *problem,
                                            const nnmem_plan_t *plan,
                                            nnmem_backend_t *backend,
                                            nnmem_arena_t **out,
                                            nnmem_diag_t *diag);

/* `n` plans (models that never run at the same time) sharing one region.
 * NNMEM_ERR_INVALID when a plan does not match its problem. */
NNMEM_API nnmem_status_t nnmem_arena_create_shared(
    const nnmem_problem_t *const *problems, const nnmem_plan_t *const *plans,
    size_t n, nnmem_backend_t *backend, nnmem_arena_t **out,
    nnmem_diag_t *diag);

NNMEM_API void nnmem_arena_destroy(nnmem_arena_t *arena);

/* Address of buffer `buffer` of model `model` (0 for nnmem_arena_create).
 * NNMEM_ERR_NOT_FOUND when out of range. */
NNMEM_API nnmem_status_t nnmem_arena_address(const nnmem_arena_t *arena,
                                             size_t model, size_t buffer,
                                             void **out);

typedef struct nnmem_arena_info {
  void *base;           /* region start (may be unbacked on a sim device) */
  uint64_t size;        /* region bytes = max height */
  uint64_t sum_heights; /* what separate arenas would reserve */
  uint64_t saving;      /* sum_heights - size */
  size_t models;
} nnmem_arena_info_t;

NNMEM_API void nnmem_arena_info(const nnmem_arena_t *arena,
                                nnmem_arena_info_t *out);

/* ---- several models, some of them concurrent ----
 *
 * Models that never run at the same time take turns in the same bytes
 * (base 0 each); models that run at the same time (the same nonzero
 * group id) are stacked one above the other, so their bytes add up:
 *
 *   address                        group 1 (concurrent)
 *     ^   +-------+                +-------+
 *     |   |       |                |  c    |  base = h(b) rounded up
 *     |   |  a    |  +------+      +-------+
 *     |   |       |  |  d   |      |  b    |  base 0
 *     +---+-------+--+------+------+-------+----> models
 *   size = max(h(a), h(d), h(b) + h(c))   sum = h(a) + h(b) + h(c) + h(d)
 *
 * Weights are not in this region: each model keeps its own weights
 * resident (distinct parameters cannot share bytes). */
typedef struct nnmem_arena_layout_config {
  uint32_t size;          /* sizeof; 0 = current */
  const uint32_t *groups; /* groups[m]: 0 = model m runs alone; models with
                             the same nonzero id run at the same time.
                             NULL = every model alone */
  uint64_t alignment;     /* stacked bases are rounded up to this (a power
                             of two; 0 = 1) */
} nnmem_arena_layout_config_t;

NNMEM_API void nnmem_arena_layout_config_init(nnmem_arena_layout_config_t *c);

typedef struct nnmem_arena_layout {
  uint64_t size;        /* arena bytes: the highest base + height */
  uint64_t sum_heights; /* what separate arenas would reserve */
  uint64_t saving;      /* sum_heights - size */
  size_t slots;         /* models alone + concurrent groups */
} nnmem_arena_layout_t;

/* Places `n` models of the given plan heights: bases[m] (caller array of
 * n) is where model m's offsets start inside the arena. NNMEM_ERR_INVALID
 * for n == 0 or a bad alignment, NNMEM_ERR_OVERFLOW when a group's bytes
 * do not fit 64 bits. O(n^2) worst case (groups looked up linearly). */
NNMEM_API nnmem_status_t nnmem_arena_layout(
    const uint64_t *heights, size_t n, const nnmem_arena_layout_config_t *cfg,
    uint64_t *bases, nnmem_arena_layout_t *out, nnmem_diag_t *diag);

/* The layout's checker, sharing no code with nnmem_arena_layout: every
 * model lies inside [0, size), bases are aligned, and any two models of the
 * same nonzero group have disjoint [base, base + height). NNMEM_ERR_STATE
 * and diag naming both models on the first violation. O(n^2). */
NNMEM_API nnmem_status_t nnmem_arena_layout_check(
    const uint64_t *heights, size_t n, const nnmem_arena_layout_config_t *cfg,
    const uint64_t *bases, uint64_t size, nnmem_diag_t *diag);

/* nnmem_arena_create_shared with concurrent groups (cfg as for
 * nnmem_arena_layout; NULL = all alone, which is
 * nnmem_arena_create_shared): the region is the layout's size and
 * nnmem_arena_address adds each model's base. */
NNMEM_API nnmem_status_t nnmem_arena_create_grouped(
    const nnmem_problem_t *const *problems, const nnmem_plan_t *const *plans,
    size_t n, const nnmem_arena_layout_config_t *cfg, nnmem_backend_t *backend,
    nnmem_arena_t **out, nnmem_diag_t *diag);

/* Base of model `model` inside the arena (0 unless it was stacked). */
NNMEM_API nnmem_status_t nnmem_arena_model_base(const nnmem_arena_t *arena,
                                                size_t model,
                                                uint64_t *base_out);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_ARENA_H */

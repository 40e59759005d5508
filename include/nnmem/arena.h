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

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_ARENA_H */

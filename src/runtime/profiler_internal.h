/* profiler_internal.h - the hooks between the run-time profiler
 * (profiler.c) and the objects it watches (allocator.c, pool.c). Not
 * installed.
 *
 * A watched object keeps an atomic pointer to its profiler (NULL: none)
 * and calls on_alloc after a successful allocation and on_free before it
 * frees (so the address cannot be handed to another thread, and recorded
 * by it, before the profiler forgot it). */
#ifndef NNMEM_PROFILER_INTERNAL_H
#define NNMEM_PROFILER_INTERNAL_H

#include "nnmem/profiler.h"

void nnmem__profiler_on_alloc(nnmem_profiler_t *pr, const void *p,
                              uint64_t size);
void nnmem__profiler_on_free(nnmem_profiler_t *pr, const void *p);

/* pr != NULL: attach (NNMEM_ERR_STATE when another is attached); NULL:
 * detach. */
nnmem_status_t nnmem__allocator_attach_profiler(nnmem_allocator_t *a,
                                                nnmem_profiler_t *pr);
nnmem_status_t nnmem__pool_attach_profiler(nnmem_pool_t *pool,
                                           nnmem_profiler_t *pr);

#endif /* NNMEM_PROFILER_INTERNAL_H */

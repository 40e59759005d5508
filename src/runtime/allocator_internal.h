/* allocator_internal.h - what the malloc front (tools/malloc/front.c) needs
 * from the thread-caching allocator beyond its public API: the usable size
 * of a block and the fork hooks. Not installed. */
#ifndef NNMEM_ALLOCATOR_INTERNAL_H
#define NNMEM_ALLOCATOR_INTERNAL_H

#include "nnmem/allocator.h"

/* The bytes usable at `ptr` (a small block's class size, a pool block's
 * rounded size); NNMEM_ERR_INVALID when `ptr` is no live block of `a`
 * (only pool blocks are checked for liveness: a freed small block still
 * reports its class size). Thread-safety: any thread. */
nnmem_status_t nnmem__allocator_usable_size(nnmem_allocator_t *a,
                                            const void *ptr, size_t *out);

/* Fork hooks (pthread_atfork): prepare takes every lock of the allocator
 * (its own, then the page pool's, then the block pool's); parent releases
 * them; child re-initialises them (the child has one thread). The caches of
 * the parent's other threads stay, unparked, in the child: their pages are
 * never reused there, nothing else changes. */
void nnmem__allocator_fork_prepare(nnmem_allocator_t *a);
void nnmem__allocator_fork_parent(nnmem_allocator_t *a);
void nnmem__allocator_fork_child(nnmem_allocator_t *a);

#endif /* NNMEM_ALLOCATOR_INTERNAL_H */

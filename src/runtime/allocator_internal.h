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

/* nnmem_free for the malloc front: a pointer refused at once (misuse,
 * not queued) also goes to the config's on_misuse, as a queued one does
 * at its flush, so that the front's free is one call. Any thread. */
void nnmem__allocator_free_report(nnmem_allocator_t *a, void *ptr);

/* The malloc front's free (a != NULL; `ptr` first, where the caller's
 * argument already is, so that the fallback's tail call moves nothing):
 * `ptr` queued (free_batch; a
 * block of a span of this allocator, the thread's cache current, no
 * profiler, no leak records: checked at the queue's flush, a bad one
 * reported through on_misuse), else fallback(ptr), as a tail call (any
 * other pointer, NULL included), so that the caller's common case is
 * one call. Any thread. */
void nnmem__allocator_free_or(void *ptr, nnmem_allocator_t *a,
                              void (*fallback)(void *));

/* The malloc front's malloc (a != NULL; `size` first, as free_or's
 * pointer): nnmem_alloc(a, size), and when that
 * gives NULL (size 0, out of memory, ...) what fallback(size) returns, as a
 * tail call, so that the caller's common case saves no register. */
void *nnmem__allocator_alloc_or(size_t size, nnmem_allocator_t *a,
                                void *(*fallback)(size_t));

/* Fork hooks (pthread_atfork): prepare takes every lock of the allocator
 * (its own, then the span pools', then the block pool's, then the leak
 * records' when on); parent releases them; child re-initialises them (the
 * child has one thread). The caches of the parent's other threads stay,
 * unparked, in the child: their pages are never reused there, nothing else
 * changes. */
void nnmem__allocator_fork_prepare(nnmem_allocator_t *a);
void nnmem__allocator_fork_parent(nnmem_allocator_t *a);
void nnmem__allocator_fork_child(nnmem_allocator_t *a);

/* The leak records' checker (tests): the records' own invariants
 * (nnmem__leaks_check) and every small page's marks against its records
 * (leak_mark, leak_recs: nnmem__leaks_mark_t). Call while no other thread
 * allocates or frees on `a`. NNMEM_ERR_STATE with diag naming the page or
 * block (also when records are off). */
nnmem_status_t nnmem__allocator_leaks_check(nnmem_allocator_t *a,
                                            nnmem_diag_t *diag);

/* The calling thread's cache of `a` (tests, the fuzz harness): each
 * class's avail stack is a doubly linked list (the first span's back link
 * NULL, each other's the span before it) of live spans of this cache and
 * class marked as on it, without a cycle, and the class's count of empty
 * spans is the number of them with no block out. NNMEM_OK when the thread
 * has no cache of `a`; NNMEM_ERR_STATE with diag naming the class and span.
 * Owner only: the thread's own frees may be queued (not flushed here). */
nnmem_status_t nnmem__allocator_cache_check(nnmem_allocator_t *a,
                                            nnmem_diag_t *diag);

/* Tagged caches: a thread cache that belongs to no thread but to a tag
 * (tenant domains, domain.c). Its pages hold only its blocks, so the owner
 * of a small block is one load from the block's page header
 * (page->owner->tag): no table of blocks on the allocation path.
 *
 *   registry --> page header { owner = tagged cache { tag = domain } }
 *
 * Thread-safety: the calls on one tagged cache are serialized by the
 * caller (any thread, one at a time); a block of it freed with nnmem_free
 * by a thread goes to its remote stack as for any cache. Allocations of a
 * tagged cache bypass the leak records, the profiler and latency sampling.
 * Release every tagged cache before destroying the allocator. */
/* Test hooks of the handshake between a remote free and a span's
 * give-back (allocator.c, page_t dying): enter as a thread that is not
 * the owner of the span of small block `ptr` does between its checks and
 * its writes (1: entered, the span cannot go back until the leave; 0: not
 * a live span's block), and leave. */
int nnmem__allocator_remote_enter(nnmem_allocator_t *a, const void *ptr);
void nnmem__allocator_remote_leave(nnmem_allocator_t *a, const void *ptr);

typedef struct tcache nnmem__tcache_t;

/* A new tagged cache (tag != NULL). NNMEM_ERR_INVALID without thread
 * caches (config no_thread_cache); NNMEM_ERR_NOMEM. */
nnmem_status_t nnmem__tcache_create(nnmem_allocator_t *a, const void *tag,
                                    nnmem__tcache_t **out);
/* Flushes the cache and hands it back untagged (a thread may adopt it);
 * its remaining blocks stay valid. */
void nnmem__tcache_release(nnmem__tcache_t *tc);
/* A small block (size <= NNMEM__SMALL_MAX, alignment 16) from tc and its
 * usable size; NULL when out of memory. */
#define NNMEM__SMALL_MAX 8192u
void *nnmem__tcache_alloc(nnmem__tcache_t *tc, size_t size, uint32_t *usable);
/* The tag of the tagged cache whose page holds a block starting at `ptr`,
 * and the block's usable size; NULL when there is none (no small page of
 * `a`, a thread cache's page, interior pointer, page tail). It reads only
 * what never changes once a page is published: any thread may ask. */
const void *nnmem__allocator_block_tag(nnmem_allocator_t *a, const void *ptr,
                                       uint32_t *usable);
/* 1 when the block at `ptr` (found by nnmem__allocator_block_tag) is live:
 * handed out, not freed, not waiting on a remote stack. Reads the page's
 * owner-side state: only the tagged cache's user may ask. */
int nnmem__tcache_block_live(nnmem_allocator_t *a, const void *ptr);
/* Frees a live block of tc (both calls above said so). */
void nnmem__tcache_free(nnmem__tcache_t *tc, void *ptr);
/* Calls fn for every live block of tc (collected first, so fn may free
 * it). O(registered pages + blocks). NNMEM_ERR_NOMEM: fn was not called. */
nnmem_status_t nnmem__tcache_each(nnmem__tcache_t *tc,
                                  void (*fn)(void *user, void *blk,
                                             uint32_t usable),
                                  void *user);

#endif /* NNMEM_ALLOCATOR_INTERNAL_H */

/* pool_internal.h - the contract between the generic pool layer (pool.c:
 * argument checks, live-block table, stats, lock, debug fills) and the pool
 * algorithms (tlsf/fit in rlist.c, buddy.c, slab.c, fixed.c, direct.c,
 * tiered.c). Not installed.
 *
 * An algorithm ("impl") never sees a bad free: pool.c validates every
 * pointer against its table of live blocks first and hands back the tag the
 * impl returned at allocation time. */
#ifndef NNMEM_POOL_INTERNAL_H
#define NNMEM_POOL_INTERNAL_H

#include <string.h>

#include "common/util.h"
#include "nnmem/pool.h"

/* Where an impl gets regions: the backend plus the pool's accounting. */
typedef struct nnmem__src {
  nnmem_backend_t *backend;
  uint64_t capacity; /* max reserved; UINT64_MAX = unlimited */
  uint64_t reserved, reserved_peak;
  uint64_t backend_allocs, backend_frees;
} nnmem__src_t;

/* Takes a region of `len` bytes aligned to `align` from the backend,
 * respecting the capacity. NNMEM_ERR_NOMEM when refused. */
nnmem_status_t nnmem__src_take(nnmem__src_t *s, uint64_t len, uint64_t align,
                               uint64_t *addr_out);
void nnmem__src_give(nnmem__src_t *s, uint64_t addr, uint64_t len);

/* Resolved configuration handed to impls (no zeros left). */
typedef struct nnmem__pool_params {
  uint64_t granule; /* minimum alignment and size unit (pow2 >= 16) */
  uint64_t chunk;   /* bytes per backend request */
  uint64_t block;   /* fixed: block size */
  uint64_t low_watermark;
  uint64_t split; /* tlsf/fit split threshold */
  uint64_t small_max, large_min;
  nnmem_pool_kind_t middle;
  int retain_empty;
  uint32_t keep_empty; /* slab: empty slabs a class keeps */
  int one_region;      /* rlist: never take a second chunk (the shape pool) */
  /* fixed: background replenishment (replenish != 0) */
  int replenish;
  uint32_t replenish_percent;
  void (*submit)(void *user, void (*task)(void *arg), void *arg);
  void *submit_user;
  /* The pool's lock, for an impl's background work (replenishment): the
   * pool is thread_safe whenever these are used. */
  void (*lock)(void *owner);
  void (*unlock)(void *owner);
  void *owner;
} nnmem__pool_params_t;

typedef struct nnmem__impl_ops {
  /* Allocates; *addr, *block (bytes handed out) and the tag (p, aux) are
   * given back to free. Sizes are already rounded to the granule, align is
   * a power of two >= granule. */
  nnmem_status_t (*alloc)(void *self, uint64_t size, uint64_t align,
                          uint64_t *addr, uint64_t *block, void **tag,
                          uint64_t *aux);
  /* Frees a live block; returns its block size. */
  uint64_t (*free)(void *self, uint64_t addr, void *tag, uint64_t aux);
  /* 1 when addr lies inside a region the impl holds. */
  int (*owns)(void *self, uint64_t addr);
  nnmem_status_t (*check)(void *self, nnmem_diag_t *diag);
  void (*free_info)(void *self, uint64_t *free_bytes, uint64_t *largest);
  void (*destroy)(void *self); /* releases every region */
  /* Optional: adds the impl's own counters (refills, ...) to `out`. */
  void (*counters)(void *self, nnmem_stats_t *out);
} nnmem__impl_ops_t;

typedef struct nnmem__impl {
  const nnmem__impl_ops_t *ops;
  void *self;
} nnmem__impl_t;

/* Constructors. `policy` for rlist: TLSF, BEST_FIT or FIRST_FIT. */
nnmem_status_t nnmem__rlist_create(nnmem_pool_kind_t policy,
                                   const nnmem__pool_params_t *p,
                                   nnmem__src_t *src, nnmem__impl_t *out);
nnmem_status_t nnmem__buddy_create(const nnmem__pool_params_t *p,
                                   nnmem__src_t *src, nnmem__impl_t *out);
nnmem_status_t nnmem__slab_create(const nnmem__pool_params_t *p,
                                  nnmem__src_t *src, nnmem__impl_t *out);
nnmem_status_t nnmem__fixed_create(const nnmem__pool_params_t *p,
                                   nnmem__src_t *src, nnmem__impl_t *out);
nnmem_status_t nnmem__direct_create(const nnmem__pool_params_t *p,
                                    nnmem__src_t *src, nnmem__impl_t *out);
nnmem_status_t nnmem__shape_create(const nnmem__pool_params_t *p,
                                   nnmem__src_t *src, nnmem__impl_t *out);
/* rlist.c for shape.c: takes one chunk of p->chunk bytes now (free); the
 * number of chunks held and their total length. */
nnmem_status_t nnmem__rlist_prefill(void *self);
void nnmem__rlist_regions(void *self, size_t *count, uint64_t *bytes);
nnmem_status_t nnmem__tiered_create(const nnmem__pool_params_t *p,
                                    nnmem__src_t *src, nnmem__impl_t *out);

/* pool.c: 1 when `ptr` is a live block of `pool` (its table, under its
 * lock), else 0. For the NUMA pools, which route a free to its node. */
int nnmem__pool_holds(nnmem_pool_t *pool, const void *ptr);

static inline uint64_t nnmem__next_pow2(uint64_t x) {
  if (x <= 1) return 1;
  return 1ULL << (64 - __builtin_clzll(x - 1));
}
static inline unsigned nnmem__log2(uint64_t x) {
  return 63u - (unsigned)__builtin_clzll(x);
}

/* Copies a caller's versioned config (its first field: uint32_t size) into
 * `dst`, already initialized to defaults: only the caller's `size` bytes
 * (0 = the current size), so a config of an older, smaller layout is not
 * read past its end and the fields it lacks keep their defaults. */
static inline void nnmem__config_copy(void *dst, size_t dst_size,
                                      const void *src) {
  uint32_t n;
  memcpy(&n, src, sizeof n);
  if (n == 0 || n > dst_size) n = (uint32_t)dst_size;
  memcpy(dst, src, n);
  memcpy(dst, &(uint32_t){(uint32_t)dst_size}, sizeof n);
}

/* Owned blocks (tenant domains, domain.c): a block allocated with an
 * owner tag (1-127) carries it in the pool's own record of live blocks,
 * so a free checks the owner in the lookup that validates the pointer:
 * no second table. Only one user tags a pool's blocks at a time:
 * nnmem__pool_claim_owners(pool, user) is 1 when `user` holds the claim
 * now (NULL releases it: call it with NULL only as the holder).
 * Thread-safety: under the pool's lock like every pool call. */
int nnmem__pool_claim_owners(nnmem_pool_t *pool, const void *user);
nnmem_status_t nnmem__pool_alloc_owned(nnmem_pool_t *pool, uint64_t size,
                                       uint64_t align, uint32_t owner,
                                       void **out);
/* The owner (0: an untagged block) and requested size of a live block;
 * NNMEM_ERR_INVALID when ptr is none. */
nnmem_status_t nnmem__pool_owner(nnmem_pool_t *pool, const void *ptr,
                                 uint32_t *owner, uint64_t *requested);
/* Frees ptr when it is a live block tagged `owner`: NNMEM_OK with its
 * requested size in *requested. Otherwise nothing changes and nothing is
 * counted: NNMEM_ERR_DENIED when it has another owner (or none),
 * NNMEM_ERR_INVALID when it is no live block (NULL included); the caller
 * asks nnmem__pool_owner who owns it. */
nnmem_status_t nnmem__pool_free_owned(nnmem_pool_t *pool, void *ptr,
                                      uint32_t owner, uint64_t *requested);
/* Calls fn for every tagged live block (collected under the lock, called
 * outside it, so fn may free). NNMEM_ERR_NOMEM: fn was not called. */
nnmem_status_t nnmem__pool_each_owned(nnmem_pool_t *pool,
                                      void (*fn)(void *user, void *blk,
                                                 uint32_t owner,
                                                 uint64_t requested),
                                      void *user);

/* Fork hooks of a pool's mutex (thread-safe pools; a no-op otherwise):
 * 0 = lock (before fork), 1 = unlock (parent), 2 = re-initialise (child). */
void nnmem__pool_fork(nnmem_pool_t *pool, int phase);

#endif /* NNMEM_POOL_INTERNAL_H */

/* domain_internal.h - the tenant-domain structures shared by domain.c (the
 * registry: quotas, ownership, grants, counters), domain_protect.c (the
 * protected regions: mmap, pkeys, mprotect) and domain_replay.c. Arrows:
 * domain.c -> domain_protect.c; domain_replay.c uses only the public API.
 * Not installed. */
#ifndef NNMEM_DOMAIN_INTERNAL_H
#define NNMEM_DOMAIN_INTERNAL_H

#include "nnmem/domain.h"
#include "runtime/addrmap.h"
#include "runtime/allocator_internal.h"
#include "runtime/domain_table.h"

/* A protected region: `len` bytes at `base` (mmap), the backend table that
 * hands it to the domain's own pool as its one chunk, and its pkey (-1
 * under mprotect). */
typedef struct nnmem__region {
  nnmem_backend_t table; /* ctx = this region */
  void *base;
  uint64_t len;
  int taken;
  int pkey;
} nnmem__region_t;

/* Allocated on a cache line (aligned_alloc): the owner's alloc and free
 * over a tagged pool touch two lines, the first (set, tagged, tag) and
 * st's line from quota to checks (domain.c asserts they share one). */
struct nnmem_domain {
  nnmem_domain_set_t *set;
  /* set->pool when the set tags its blocks (set->owned), else NULL: the
   * owner's alloc and free reach the pool in one load from here */
  nnmem_pool_t *tagged;
  /* allocator sets: the domain's tagged cache (allocator_internal.h); its
   * small blocks carry the owner in their page and are not in `blocks` */
  nnmem__tcache_t *cache;
  uint32_t tag;                         /* st.id + 1: the pool's owner tag */
  _Alignas(64) nnmem_domain_stats_t st; /* counters, name, id, colour,
                                           quota */
  nnmem__region_t region;               /* protect sets only */
  nnmem_pool_t *pool;                   /* protect sets only: over `region` */
};

/* The grants of a block (in set->grants under its address, p = this;
 * the block's table entry has NNMEM__DT_GRANTS set). */
typedef struct nnmem__grants {
  uint64_t read, free; /* bit i: domain i holds the right */
} nnmem__grants_t;

struct nnmem_domain_set {
  nnmem_pool_t *pool;
  int owned; /* pool sets: blocks carry id + 1 in the pool's own record
                (pool_internal.h), not in `blocks` */
  nnmem_allocator_t *allocator;
  nnmem_domain_protect_t protect; /* resolved: NONE, PKEY or MPROTECT */
  uint32_t n;
  nnmem_domain_t *dom[NNMEM_DOMAIN_MAX];
  nnmem__dt_t blocks;      /* every live block (domain_table.h) */
  nnmem__addrmap_t grants; /* address -> nnmem__grants_t (p) */
  nnmem_domain_t *entered; /* NULL: trusted (every region open) */
  uint64_t bad_input, enters;
};

/* domain_protect.c. Resolves AUTO (pkey_alloc probe); UNSUPPORTED for PKEY
 * where absent. */
nnmem_status_t nnmem__protect_resolve(nnmem_domain_protect_t want,
                                      nnmem_domain_protect_t *out,
                                      nnmem_diag_t *diag);
/* Reserves the domain's region (quota rounded up to pages), tags it with a
 * fresh pkey (PKEY), closes it when another domain is entered, and makes
 * the domain's TLSF pool over it. */
nnmem_status_t nnmem__protect_domain_init(nnmem_domain_set_t *set,
                                          nnmem_domain_t *d,
                                          nnmem_diag_t *diag);
/* Destroys the pool, unmaps the region, frees the key. */
void nnmem__protect_domain_fini(nnmem_domain_t *d);
/* Switches access from set->entered to `d` (NULL: all open). */
nnmem_status_t nnmem__protect_switch(nnmem_domain_set_t *set,
                                     nnmem_domain_t *d);

#endif /* NNMEM_DOMAIN_INTERNAL_H */

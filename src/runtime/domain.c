/* domain.c - tenant domains (include/nnmem/domain.h): quotas, colour tags,
 * ownership checks and grants over one shared block table.
 *
 *   set ── dom[0..n)  (id = index, colour, quota, counters, cache)
 *    │
 *    ├── blocks: domain_table.h  address ──> { size, owner, has-grants }
 *    └── grants: addrmap         address ──> {read, free} bit masks over
 *                                            domain ids (only blocks with
 *                                            grants)
 *
 * Over a pool, the owner (id + 1) rides in the pool's own record of the
 * block (the one every pool free looks up to validate the pointer), so a
 * free checks owner and pointer in one lookup; only one set per pool can
 * (the first: nnmem__pool_claim_owners), a second one uses the table.
 * The owner's alloc and free there are the fast path: one test for size,
 * alignment and quota, the pool and the tag read from the domain's first
 * cache line, the counters updated on one other line (the domain is
 * allocated on a line); every other case runs in alloc_other/free_other.
 * Over an allocator, each domain also has a tagged cache of its own
 * (allocator_internal.h): a small block (<= 8 KiB, alignment <= 16) comes
 * from pages that hold only that domain's blocks, so its owner is read
 * from the page header (page -> cache -> tag = domain) and the block is
 * not in the table: alloc and free do a registry load and a compare
 * instead of a table insert and removal. Such a block is charged its
 * usable size (the size class), the bytes the allocator holds for it;
 * larger blocks and pool sets use the table and charge the request.
 *
 * Steps of alloc(d, size): 1. misuse checks (size 0, alignment) -> bad
 * input; 2. d.live + size > d.quota -> refused (quota); 3. the underlying
 * pool / allocator (protect sets: d's own pool) -> refused (pool) when it
 * fails; 4. record {size, owner (whose colour the block carries)} under
 * the address in the block table (src/runtime/domain_table.h; a failed
 * insert gives the block back); 5. counters and peak.
 * Steps of free(d, p): 1. look p up -> not a live block: refused (invalid);
 * 2. owner != d and no FREE grant for d -> refused (denied); 3. free to
 * where the block came from; 4. drop the record and its grants; 5. the
 * bytes leave the owner's account, the free counts on d (and as a granted
 * free when d is not the owner).
 * Invariants (nnmem_domain_set_check): for every domain, live_bytes and
 * live_blocks equal the sums over the blocks it owns; live_bytes <= quota;
 * every owner id < n; grant masks name existing domains only.
 * Tagged-cache blocks: the page's owner tag is a domain of this set, the
 * block is live in the allocator (handed out, not freed), and its usable
 * size is in its owner's live_bytes.
 * Complexity: O(1) expected per call (one hash probe sequence or one
 * registry load); check and destroy O(blocks + registered pages).
 * Thread-safety: none (see the header). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "runtime/domain_internal.h"
#include "runtime/pool_internal.h"

/* The counters of the owner's alloc and free share one cache line (the
 * struct and st start on one: domain_internal.h). */
_Static_assert(offsetof(nnmem_domain_stats_t, quota) % 64 == 0 &&
                   offsetof(nnmem_domain_stats_t, checks) + 8 -
                           offsetof(nnmem_domain_stats_t, quota) <=
                       64,
               "nnmem_domain_stats_t: quota..checks leave one cache line");

static inline uint32_t owner_of(const nnmem__dt_entry_t *e) {
  return nnmem__dt_owner(e->meta);
}

nnmem_status_t nnmem__dt_grow(nnmem__dt_t *t) {
  nnmem__dt_t n = {calloc(t->cap * 2, sizeof *t->slots), t->cap * 2, t->count,
                   t->shift - 1};
  if (!n.slots) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < t->cap; i++)
    if (t->slots[i].key) nnmem__dt_place(&n, t->slots[i].key, t->slots[i].meta);
  free(t->slots);
  *t = n;
  return NNMEM_OK;
}

/* The grant masks of the block of entry `e` (NULL: none). */
static nnmem__grants_t *grants_of(const nnmem_domain_set_t *set,
                                  const nnmem__dt_entry_t *e) {
  if (!(e->meta & NNMEM__DT_GRANTS)) return NULL;
  nnmem__addrmap_entry_t *g = nnmem__addrmap_get(&set->grants, e->key);
  return g ? g->p : NULL;
}

const char *nnmem_domain_protect_name(nnmem_domain_protect_t p) {
  static const char *const names[] = {"none", "auto", "pkey", "mprotect"};
  return (unsigned)p < 4 ? names[p] : "?";
}

void nnmem_domain_set_config_init(nnmem_domain_set_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

void nnmem_domain_config_init(nnmem_domain_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

nnmem_status_t nnmem_domain_set_create(const nnmem_domain_set_config_t *cfg,
                                       nnmem_domain_set_t **out,
                                       nnmem_diag_t *diag) {
  if (!out) return nnmem__diag(diag, NNMEM_ERR_INVALID, "domain set: NULL out");
  *out = NULL;
  nnmem_domain_set_config_t c;
  nnmem_domain_set_config_init(&c);
  if (cfg) nnmem__config_copy(&c, sizeof c, cfg);
  if ((unsigned)c.protect > NNMEM_PROTECT_MPROTECT)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "domain set: unknown protect mode %d", (int)c.protect);
  if (c.protect == NNMEM_PROTECT_NONE && !c.pool == !c.allocator)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "domain set: give exactly one of pool and allocator "
                       "(or a protect mode)");
  if (c.protect != NNMEM_PROTECT_NONE && (c.pool || c.allocator))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "domain set: with protect %s each domain has its own "
                       "region and pool; pool and allocator must be NULL",
                       nnmem_domain_protect_name(c.protect));
  nnmem_domain_protect_t prot = NNMEM_PROTECT_NONE;
  if (c.protect != NNMEM_PROTECT_NONE) {
    nnmem_status_t s = nnmem__protect_resolve(c.protect, &prot, diag);
    if (s != NNMEM_OK) return s;
  }
  nnmem_domain_set_t *set = calloc(1, sizeof *set);
  if (!set) return nnmem__diag(diag, NNMEM_ERR_NOMEM, "domain set: no memory");
  set->pool = c.pool;
  if (c.pool && prot == NNMEM_PROTECT_NONE)
    set->owned = nnmem__pool_claim_owners(c.pool, set);
  set->allocator = c.allocator;
  set->protect = prot;
  nnmem__addrmap_init(&set->grants);
  if (nnmem__dt_init(&set->blocks) != NNMEM_OK) {
    free(set);
    return nnmem__diag(diag, NNMEM_ERR_NOMEM, "domain set: no memory");
  }
  *out = set;
  return NNMEM_OK;
}

/* Gives a block back to where it came from. */
static nnmem_status_t under_free(nnmem_domain_set_t *set, uint32_t owner,
                                 void *p) {
  if (set->protect != NNMEM_PROTECT_NONE)
    return nnmem_pool_free(set->dom[owner]->pool, p);
  if (set->pool) return nnmem_pool_free(set->pool, p);
  return nnmem_allocator_free(set->allocator, p);
}

static nnmem_status_t under_alloc(nnmem_domain_set_t *set, nnmem_domain_t *d,
                                  uint64_t size, uint64_t align, void **out) {
  if (set->protect != NNMEM_PROTECT_NONE)
    return nnmem_pool_alloc(d->pool, size, align, out);
  if (set->pool) return nnmem_pool_alloc(set->pool, size, align, out);
  if (size > SIZE_MAX) return NNMEM_ERR_NOMEM;
  *out = align
             ? nnmem_alloc_aligned(set->allocator, (size_t)size, (size_t)align)
             : nnmem_alloc(set->allocator, (size_t)size);
  return *out ? NNMEM_OK : NNMEM_ERR_NOMEM;
}

/* Set destroy: a tagged-cache block and its grants go. */
static void cache_block_free(void *user, void *blk, uint32_t usable) {
  nnmem_domain_t *d = user;
  nnmem__addrmap_entry_t g;
  (void)usable;
  if (d->set->grants.count &&
      nnmem__addrmap_remove(&d->set->grants, (uint64_t)(uintptr_t)blk, &g))
    free(g.p);
  nnmem__tcache_free(d->cache, blk);
}

/* Set destroy: a pool block of a domain and its grants go. */
static void owned_block_free(void *user, void *blk, uint32_t owner,
                             uint64_t requested) {
  nnmem_domain_set_t *set = user;
  nnmem__addrmap_entry_t g;
  if (set->grants.count &&
      nnmem__addrmap_remove(&set->grants, (uint64_t)(uintptr_t)blk, &g))
    free(g.p);
  (void)nnmem__pool_free_owned(set->pool, blk, owner, &requested);
}

void nnmem_domain_set_destroy(nnmem_domain_set_t *set) {
  if (!set) return;
  if (set->protect != NNMEM_PROTECT_NONE && set->entered)
    (void)nnmem__protect_switch(set, NULL);
  if (set->owned) {
    (void)nnmem__pool_each_owned(set->pool, owned_block_free, set);
    (void)nnmem__pool_claim_owners(set->pool, NULL);
  }
  for (uint32_t i = 0; i < set->n; i++) {
    nnmem_domain_t *d = set->dom[i];
    if (!d->cache) continue;
    /* out of memory for the walk: the blocks stay with the allocator */
    (void)nnmem__tcache_each(d->cache, cache_block_free, d);
    nnmem__tcache_release(d->cache);
  }
  for (size_t i = 0; i < set->blocks.cap; i++) {
    nnmem__dt_entry_t *e = &set->blocks.slots[i];
    if (!e->key) continue;
    (void)under_free(set, owner_of(e), (void *)(uintptr_t)e->key);
    free(grants_of(set, e));
  }
  nnmem__dt_free(&set->blocks);
  nnmem__addrmap_free(&set->grants);
  for (uint32_t i = 0; i < set->n; i++) {
    if (set->protect != NNMEM_PROTECT_NONE)
      nnmem__protect_domain_fini(set->dom[i]);
    free(set->dom[i]);
  }
  free(set);
}

nnmem_domain_protect_t nnmem_domain_set_protect(const nnmem_domain_set_t *s) {
  return s ? s->protect : NNMEM_PROTECT_NONE;
}

nnmem_status_t nnmem_domain_create(nnmem_domain_set_t *set,
                                   const nnmem_domain_config_t *cfg,
                                   nnmem_domain_t **out, nnmem_diag_t *diag) {
  if (!set || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "domain: NULL set or out");
  *out = NULL;
  nnmem_domain_config_t c;
  nnmem_domain_config_init(&c);
  if (cfg) nnmem__config_copy(&c, sizeof c, cfg);
  char name[NNMEM_STATS_NAME_MAX];
  if (c.name)
    snprintf(name, sizeof name, "%s", c.name);
  else
    snprintf(name, sizeof name, "tenant%u", set->n);
  if (c.quota == 0) {
    set->bad_input++;
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "domain '%s': quota 0 (a domain needs a quota of at "
                       "least 1 byte)",
                       name);
  }
  if (set->n >= NNMEM_DOMAIN_MAX) {
    set->bad_input++;
    return nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
                       "domain '%s': a set holds at most %d domains", name,
                       NNMEM_DOMAIN_MAX);
  }
  nnmem_domain_t *d = aligned_alloc(_Alignof(nnmem_domain_t), sizeof *d);
  if (!d) return nnmem__diag(diag, NNMEM_ERR_NOMEM, "domain: no memory");
  memset(d, 0, sizeof *d);
  d->set = set;
  d->tagged = set->owned ? set->pool : NULL;
  d->tag = set->n + 1;
  d->region.pkey = -1;
  d->st.size = sizeof d->st;
  memcpy(d->st.name, name, sizeof name);
  d->st.id = set->n;
  d->st.colour = c.colour ? c.colour : set->n + 1;
  d->st.quota = c.quota;
  if (set->protect != NNMEM_PROTECT_NONE) {
    nnmem_status_t s = nnmem__protect_domain_init(set, d, diag);
    if (s != NNMEM_OK) {
      free(d);
      return s;
    }
  }
  if (set->allocator) { /* INVALID: no thread caches, the table serves */
    nnmem_status_t s = nnmem__tcache_create(set->allocator, d, &d->cache);
    if (s == NNMEM_ERR_NOMEM) {
      free(d);
      return nnmem__diag(diag, s, "domain '%s': no memory for its cache",
                         name);
    }
  }
  set->dom[set->n++] = d;
  *out = d;
  return NNMEM_OK;
}

nnmem_status_t nnmem_domain_get(const nnmem_domain_set_t *set, uint32_t id,
                                nnmem_domain_t **out) {
  if (!set || !out) return NNMEM_ERR_INVALID;
  *out = id < set->n ? set->dom[id] : NULL;
  return *out ? NNMEM_OK : NNMEM_ERR_NOT_FOUND;
}

uint32_t nnmem_domain_id(const nnmem_domain_t *d) {
  return d ? d->st.id : UINT32_MAX;
}
uint32_t nnmem_domain_colour(const nnmem_domain_t *d) {
  return d ? d->st.colour : 0;
}
const char *nnmem_domain_name(const nnmem_domain_t *d) {
  return d ? d->st.name : "";
}

/* The refusals of alloc, out of its way (cold). */
static __attribute__((cold, noinline)) nnmem_status_t
refuse_bad_alloc(nnmem_domain_t *d, uint64_t size, uint64_t align,
                 nnmem_diag_t *diag) {
  d->st.refused_bad_input++;
  return nnmem__diag(diag, NNMEM_ERR_INVALID,
                     "domain '%s': bad allocation (size %llu, align %llu)",
                     d->st.name, (unsigned long long)size,
                     (unsigned long long)align);
}

static __attribute__((cold, noinline)) nnmem_status_t
refuse_pool(nnmem_domain_t *d, uint64_t size, nnmem_status_t s,
            nnmem_diag_t *diag) {
  d->st.refused_pool++;
  return nnmem__diag(diag, s, "domain '%s': the pool refused %llu bytes: %s",
                     d->st.name, (unsigned long long)size,
                     nnmem_status_str(s));
}

static __attribute__((cold, noinline)) nnmem_status_t
refuse_quota(nnmem_domain_t *d, uint64_t size, nnmem_diag_t *diag) {
  nnmem_domain_stats_t *st = &d->st;
  st->refused_quota++;
  return nnmem__diag(diag, NNMEM_ERR_NOMEM,
                     "domain '%s': %llu bytes would pass its quota (%llu of "
                     "%llu bytes live)",
                     st->name, (unsigned long long)size,
                     (unsigned long long)st->live_bytes,
                     (unsigned long long)st->quota);
}

/* Step 5 of alloc: `size` bytes join d's account. */
static inline void charge(nnmem_domain_stats_t *st, uint64_t size) {
  st->live_bytes += size;
  st->live_blocks++;
  st->allocs++;
  if (st->live_bytes > st->peak_bytes) st->peak_bytes = st->live_bytes;
}

/* A small block from the domain's tagged cache, charged its usable size:
 * no table record (the page knows the owner). */
static nnmem_status_t cache_alloc(nnmem_domain_t *d, size_t size, void **out,
                                  nnmem_diag_t *diag) {
  nnmem_domain_stats_t *st = &d->st;
  uint32_t usable = 0;
  void *p = nnmem__tcache_alloc(d->cache, size, &usable);
  *out = p;
  if (__builtin_expect(!p, 0)) {
    st->refused_pool++;
    return nnmem__diag(diag, NNMEM_ERR_NOMEM,
                       "domain '%s': the allocator refused %llu bytes",
                       st->name, (unsigned long long)size);
  }
  if (__builtin_expect(usable > st->quota - st->live_bytes, 0)) {
    nnmem__tcache_free(d->cache, p);
    *out = NULL;
    return refuse_quota(d, usable, diag);
  }
  charge(st, usable);
  return NNMEM_OK;
}

/* The misuse and quota refusals of alloc (cold): bad input first. */
static __attribute__((cold, noinline)) nnmem_status_t refuse_alloc(
    nnmem_domain_t *d, uint64_t size, uint64_t align, void **out,
    nnmem_diag_t *diag) {
  *out = NULL;
  if (size == 0 || size > NNMEM__DT_SIZE_MAX || (align & (align - 1)))
    return refuse_bad_alloc(d, size, align, diag);
  return refuse_quota(d, size, diag);
}

/* Alloc through the block table (an allocator's large or aligned blocks,
 * a pool the set does not tag, protect sets); arguments and quota
 * checked. Out of the fast paths' way (its own frame). */
static __attribute__((noinline)) nnmem_status_t alloc_other(
    nnmem_domain_t *d, uint64_t size, uint64_t align, void **out,
    nnmem_diag_t *diag) {
  nnmem_domain_set_t *set = d->set;
  void *p = NULL;
  *out = NULL;
  nnmem_status_t s = under_alloc(set, d, size, align, &p);
  if (s == NNMEM_OK) { /* a new block: absent from the table */
    s = nnmem__dt_insert(&set->blocks, (uint64_t)(uintptr_t)p,
                         size | (uint64_t)d->st.id << 48);
    if (s != NNMEM_OK) (void)under_free(set, d->st.id, p);
  }
  if (__builtin_expect(s != NNMEM_OK, 0))
    return refuse_pool(d, size, s, diag);
  charge(&d->st, size);
  *out = p;
  return NNMEM_OK;
}

nnmem_status_t nnmem_domain_alloc(nnmem_domain_t *d, uint64_t size,
                                  uint64_t align, void **out,
                                  nnmem_diag_t *diag) {
  if (!d || !out) return NNMEM_ERR_INVALID;
  nnmem_domain_stats_t *st = &d->st;
  /* steps 1-2 in one test: size - 1 wraps for 0 */
  if (__builtin_expect(size - 1 >= NNMEM__DT_SIZE_MAX ||
                           (align & (align - 1)) ||
                           size > st->quota - st->live_bytes,
                       0))
    return refuse_alloc(d, size, align, out, diag);
  if (d->tagged) {
    /* steps 3-4 in one pool call: the owner goes into the pool's record
     * of the block (*out is NULL when it fails) */
    nnmem_status_t s =
        nnmem__pool_alloc_owned(d->tagged, size, align, d->tag, out);
    if (__builtin_expect(s != NNMEM_OK, 0))
      return refuse_pool(d, size, s, diag);
    charge(st, size);
    return NNMEM_OK;
  }
  if (d->cache && size <= NNMEM__SMALL_MAX && align <= 16)
    return cache_alloc(d, (size_t)size, out, diag);
  return alloc_other(d, size, align, out, diag);
}

/* A live block of the set as the checks see it. */
typedef struct blk {
  uint64_t key, size;     /* address; bytes charged to the owner */
  uint32_t owner;         /* domain id */
  nnmem__dt_entry_t *e;   /* its table record; NULL: a tagged-cache block */
} blk_t;

/* 1 when p is a live block of one of this set's tagged caches. */
static int cache_block(const nnmem_domain_set_t *set, const void *p,
                       blk_t *b) {
  uint32_t usable;
  const nnmem_domain_t *o =
      set->allocator && p
          ? nnmem__allocator_block_tag(set->allocator, p, &usable)
          : NULL; /* a live domain's: release untags */
  /* another set's page (used by another thread) is not looked into */
  if (!o || o->set != set || !nnmem__tcache_block_live(set->allocator, p))
    return 0;
  *b = (blk_t){(uint64_t)(uintptr_t)p, usable, o->st.id, NULL};
  return 1;
}

static int find_block(const nnmem_domain_set_t *set, const void *p,
                      blk_t *b) {
  if (cache_block(set, p, b)) return 1;
  uint32_t o;
  uint64_t req;
  if (set->owned) {
    if (nnmem__pool_owner(set->pool, p, &o, &req) != NNMEM_OK || o == 0 ||
        o > set->n)
      return 0;
    *b = (blk_t){(uint64_t)(uintptr_t)p, req, o - 1, NULL};
    return 1;
  }
  nnmem__dt_entry_t *e =
      p ? nnmem__dt_get(&set->blocks, (uint64_t)(uintptr_t)p) : NULL;
  if (!e) return 0;
  *b = (blk_t){e->key, nnmem__dt_size(e->meta), owner_of(e), e};
  return 1;
}

/* The grant masks of block b (NULL: none). */
static nnmem__grants_t *grants_at(const nnmem_domain_set_t *set,
                                  const blk_t *b) {
  if (b->e) return grants_of(set, b->e);
  if (!set->grants.count) return NULL;
  nnmem__addrmap_entry_t *g = nnmem__addrmap_get(&set->grants, b->key);
  return g ? g->p : NULL;
}

/* Steps 1-2 of free and the whole of access/grant: 1 with the block of `p`
 * when `d` may use it with `rights` (0: only the owner may), else 0 with
 * the refusal counted and described. */
static int lookup(nnmem_domain_t *d, const void *p, uint32_t rights,
                  const char *what, blk_t *b, nnmem_status_t *s,
                  nnmem_diag_t *diag) {
  nnmem_domain_set_t *set = d->set;
  if (!find_block(set, p, b)) {
    d->st.refused_invalid++;
    *s = nnmem__diag(diag, NNMEM_ERR_INVALID,
                     "domain '%s': %s of %p refused: not a live block of "
                     "the set (forged, stale or interior pointer)",
                     d->st.name, what, p);
    return 0;
  }
  d->st.checks++;
  if (b->owner == d->st.id) return 1;
  const nnmem__grants_t *g = grants_at(set, b);
  uint64_t bit = 1ULL << d->st.id;
  int ok = rights && g && (!(rights & NNMEM_GRANT_READ) || (g->read & bit)) &&
           (!(rights & NNMEM_GRANT_FREE) || (g->free & bit));
  if (ok) return 1;
  d->st.refused_denied++;
  *s = nnmem__diag(diag, NNMEM_ERR_DENIED,
                   "domain '%s': %s of block %p (%llu bytes) of domain "
                   "'%s' refused: %s",
                   d->st.name, what, p, (unsigned long long)b->size,
                   set->dom[b->owner]->st.name,
                   rights ? "no grant for it" : "only the owner may");
  return 0;
}

/* Step 5 of free by the owner: `size` bytes leave d's account. */
static inline void discharge(nnmem_domain_stats_t *st, uint64_t size) {
  st->checks++;
  st->live_bytes -= size;
  st->live_blocks--;
  st->frees++;
}

/* A grant record of a block being freed goes with it. */
static __attribute__((noinline)) void drop_grants(nnmem_domain_set_t *set,
                                                  uint64_t key) {
  nnmem__addrmap_entry_t g;
  if (nnmem__addrmap_remove(&set->grants, key, &g)) free(g.p);
}

static nnmem_status_t free_other(nnmem_domain_t *d, void *ptr,
                                 nnmem_diag_t *diag);

nnmem_status_t nnmem_domain_free(nnmem_domain_t *d, void *ptr,
                                 nnmem_diag_t *diag) {
  if (!d) return NNMEM_ERR_INVALID;
  if (d->tagged) {
    /* the owner frees a tagged pool block: steps 1-3 in one pool call
     * (its lookup validates the pointer and compares the owner) */
    uint64_t req;
    if (nnmem__pool_free_owned(d->tagged, ptr, d->tag, &req) != NNMEM_OK)
      return free_other(d, ptr, diag);
    if (__builtin_expect(d->set->grants.count != 0, 0))
      drop_grants(d->set, (uint64_t)(uintptr_t)ptr);
    discharge(&d->st, req);
    return NNMEM_OK;
  }
  /* the owner frees a block of its cache, no grants anywhere: a registry
   * load and a compare of the page's tag */
  nnmem_domain_set_t *set = d->set;
  uint32_t usable;
  if (d->cache && !set->grants.count &&
      nnmem__allocator_block_tag(set->allocator, ptr, &usable) == d &&
      nnmem__tcache_block_live(set->allocator, ptr)) {
    nnmem__tcache_free(d->cache, ptr);
    discharge(&d->st, usable);
    return NNMEM_OK;
  }
  return free_other(d, ptr, diag);
}

/* Free by a domain that is not the owner, of a table block, or of no
 * live block: the paths the owner of a tagged block (pool record or cache
 * page) does not take (their own frame). */
static __attribute__((noinline)) nnmem_status_t free_other(nnmem_domain_t *d,
                                                           void *ptr,
                                                           nnmem_diag_t *diag) {
  nnmem_domain_set_t *set = d->set;
  nnmem_status_t s = NNMEM_OK;
  blk_t b;
  if (!lookup(d, ptr, NNMEM_GRANT_FREE, "free", &b, &s, diag)) return s;
  nnmem_domain_t *o = set->dom[b.owner];
  if (set->owned) {
    uint64_t req;
    s = nnmem__pool_free_owned(set->pool, ptr, b.owner + 1, &req);
    if (s != NNMEM_OK)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "domain '%s': the pool refused live block %p: %s",
                         d->st.name, ptr, nnmem_status_str(s));
  } else if (b.e) {
    s = under_free(set, b.owner, ptr);
    if (s != NNMEM_OK) /* the table and the pool disagree: a library bug */
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "domain '%s': the pool refused live block %p: %s",
                         d->st.name, ptr, nnmem_status_str(s));
  } else {
    nnmem__tcache_free(o->cache, ptr);
  }
  if (b.e ? (b.e->meta & NNMEM__DT_GRANTS) != 0 : set->grants.count != 0) {
    nnmem__addrmap_entry_t g;
    if (nnmem__addrmap_remove(&set->grants, b.key, &g)) free(g.p);
  }
  if (b.e) nnmem__dt_remove(&set->blocks, b.e);
  o->st.live_bytes -= b.size;
  o->st.live_blocks--;
  d->st.frees++;
  if (b.owner != d->st.id) d->st.frees_granted++;
  return NNMEM_OK;
}

static int bad_rights(uint32_t rights) {
  return rights == 0 || (rights & ~(NNMEM_GRANT_READ | NNMEM_GRANT_FREE));
}

nnmem_status_t nnmem_domain_access(nnmem_domain_t *d, const void *ptr,
                                   uint32_t rights, nnmem_diag_t *diag) {
  if (!d) return NNMEM_ERR_INVALID;
  if (bad_rights(rights)) {
    d->st.refused_bad_input++;
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "domain '%s': access with rights 0x%x (expected READ "
                       "and/or FREE)",
                       d->st.name, rights);
  }
  nnmem_status_t s = NNMEM_OK;
  blk_t b;
  return lookup(d, ptr, rights, "access", &b, &s, diag) ? NNMEM_OK : s;
}

/* grant (on = 1) or revoke (on = 0). */
static nnmem_status_t set_grant(nnmem_domain_t *d, void *ptr, uint32_t grantee,
                                uint32_t rights, int on, nnmem_diag_t *diag) {
  if (!d) return NNMEM_ERR_INVALID;
  const char *what = on ? "grant" : "revoke";
  if (bad_rights(rights)) {
    d->st.refused_bad_input++;
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "domain '%s': %s with rights 0x%x (expected READ "
                       "and/or FREE)",
                       d->st.name, what, rights);
  }
  nnmem_domain_set_t *set = d->set;
  if (grantee >= set->n) {
    d->st.refused_bad_input++;
    return nnmem__diag(diag, NNMEM_ERR_NOT_FOUND,
                       "domain '%s': %s to domain %u, which does not exist "
                       "(%u domains)",
                       d->st.name, what, grantee, set->n);
  }
  nnmem_status_t s = NNMEM_OK;
  blk_t b;
  if (!lookup(d, ptr, 0, what, &b, &s, diag)) return s;
  nnmem__grants_t *g = grants_at(set, &b);
  if (!g && on) {
    g = calloc(1, sizeof *g);
    nnmem__addrmap_entry_t ge = {b.key, 0, 0, g};
    if (!g || nnmem__addrmap_put(&set->grants, &ge) != NNMEM_OK) {
      free(g);
      return nnmem__diag(diag, NNMEM_ERR_NOMEM, "domain '%s': %s: no memory",
                         d->st.name, what);
    }
    if (b.e) b.e->meta |= NNMEM__DT_GRANTS;
  }
  uint64_t bit = 1ULL << grantee;
  if (g && on) {
    if (rights & NNMEM_GRANT_READ) g->read |= bit;
    if (rights & NNMEM_GRANT_FREE) g->free |= bit;
  } else if (g) {
    if (rights & NNMEM_GRANT_READ) g->read &= ~bit;
    if (rights & NNMEM_GRANT_FREE) g->free &= ~bit;
    if (!g->read && !g->free) {
      nnmem__addrmap_remove(&set->grants, b.key, NULL);
      free(g);
      if (b.e) b.e->meta &= ~NNMEM__DT_GRANTS;
    }
  }
  if (on)
    d->st.grants++;
  else
    d->st.revokes++;
  return NNMEM_OK;
}

nnmem_status_t nnmem_domain_grant(nnmem_domain_t *d, void *ptr,
                                  uint32_t grantee, uint32_t rights,
                                  nnmem_diag_t *diag) {
  return set_grant(d, ptr, grantee, rights, 1, diag);
}

nnmem_status_t nnmem_domain_revoke(nnmem_domain_t *d, void *ptr,
                                   uint32_t grantee, uint32_t rights,
                                   nnmem_diag_t *diag) {
  return set_grant(d, ptr, grantee, rights, 0, diag);
}

nnmem_status_t nnmem_domain_block_info(const nnmem_domain_set_t *set,
                                       const void *ptr, uint32_t *owner_out,
                                       uint32_t *colour_out,
                                       uint64_t *size_out) {
  if (!set || !ptr) return NNMEM_ERR_INVALID;
  blk_t b;
  if (!find_block(set, ptr, &b)) return NNMEM_ERR_INVALID;
  if (owner_out) *owner_out = b.owner;
  if (colour_out) /* the owner's colour: a domain's never changes */
    *colour_out = b.owner < set->n ? set->dom[b.owner]->st.colour : 0;
  if (size_out) *size_out = b.size;
  return NNMEM_OK;
}

nnmem_status_t nnmem_domain_enter(nnmem_domain_set_t *set, nnmem_domain_t *d) {
  if (!set || (d && d->set != set)) return NNMEM_ERR_INVALID;
  if (set->protect == NNMEM_PROTECT_NONE) return NNMEM_ERR_STATE;
  if (d == set->entered) return NNMEM_OK;
  nnmem_status_t s = nnmem__protect_switch(set, d);
  if (s == NNMEM_OK) {
    set->entered = d;
    set->enters++;
  }
  return s;
}

nnmem_status_t nnmem_domain_stats(const nnmem_domain_t *d,
                                  nnmem_domain_stats_t *out) {
  if (!d || !out) return NNMEM_ERR_INVALID;
  *out = d->st;
  return NNMEM_OK;
}

nnmem_status_t nnmem_domain_set_counters(const nnmem_domain_set_t *set,
                                         nnmem_domain_set_counters_t *out) {
  if (!set || !out) return NNMEM_ERR_INVALID;
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  out->domains = set->n;
  out->protect = set->protect;
  for (uint32_t i = 0; i < set->n; i++)
    out->live_blocks += set->dom[i]->st.live_blocks;
  out->bad_input = set->bad_input;
  out->enters = set->enters;
  return NNMEM_OK;
}

/* The check's walk over the tagged caches. */
typedef struct cache_sum {
  const nnmem_domain_set_t *set;
  uint32_t owner;
  uint64_t *bytes, *blocks;
  size_t with_grants, mislabelled;
} cache_sum_t;

static void cache_sum_block(void *user, void *blk, uint32_t usable) {
  cache_sum_t *c = user;
  blk_t b;
  /* what the free path will see: this set's block, this owner, this size */
  c->bytes[c->owner] += usable;
  c->blocks[c->owner]++;
  if (!cache_block(c->set, blk, &b) || b.owner != c->owner ||
      b.size != usable)
    c->mislabelled++;
  else
    c->with_grants += grants_at(c->set, &b) != NULL;
}

static void owned_sum_block(void *user, void *blk, uint32_t owner,
                            uint64_t requested) {
  cache_sum_t *c = user;
  blk_t b;
  if (owner == 0 || owner > c->set->n) {
    c->mislabelled++;
    return;
  }
  c->bytes[owner - 1] += requested;
  c->blocks[owner - 1]++;
  if (!find_block(c->set, blk, &b) || b.owner != owner - 1)
    c->mislabelled++;
  else
    c->with_grants += grants_at(c->set, &b) != NULL;
}

nnmem_status_t nnmem_domain_set_check(const nnmem_domain_set_t *set,
                                      nnmem_diag_t *diag) {
  if (!set) return NNMEM_ERR_INVALID;
  uint64_t bytes[NNMEM_DOMAIN_MAX] = {0}, blocks[NNMEM_DOMAIN_MAX] = {0};
  cache_sum_t cs = {set, 0, bytes, blocks, 0, 0};
  if (set->owned &&
      nnmem__pool_each_owned(set->pool, owned_sum_block, &cs) != NNMEM_OK)
    return nnmem__diag(diag, NNMEM_ERR_NOMEM, "domain set check: no memory");
  for (uint32_t i = 0; i < set->n; i++) {
    if (!set->dom[i]->cache) continue;
    cs.owner = i;
    if (nnmem__tcache_each(set->dom[i]->cache, cache_sum_block, &cs) !=
        NNMEM_OK)
      return nnmem__diag(diag, NNMEM_ERR_NOMEM, "domain set check: no memory");
  }
  if (cs.mislabelled)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "domain set: %zu blocks of a domain's cache or "
                       "pool records are not seen as its own",
                       cs.mislabelled);
  uint64_t known = set->n == 64 ? ~0ULL : (1ULL << set->n) - 1;
  size_t count = 0, with_grants = 0;
  for (size_t i = 0; i < set->blocks.cap; i++) {
    const nnmem__dt_entry_t *e = &set->blocks.slots[i];
    if (!e->key) continue;
    count++;
    uint32_t o = owner_of(e);
    if (o >= set->n)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "domain set: block 0x%llx has owner %u of %u",
                         (unsigned long long)e->key, o, set->n);
    if (nnmem__dt_get(&set->blocks, e->key) != e)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "domain set: block 0x%llx is off its probe path",
                         (unsigned long long)e->key);
    const nnmem__grants_t *g = grants_of(set, e);
    if ((e->meta & NNMEM__DT_GRANTS) && !g)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "domain set: block 0x%llx is marked with grants "
                         "but has none",
                         (unsigned long long)e->key);
    with_grants += g != NULL;
    if (g && ((g->read | g->free) & ~known))
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "domain set: block 0x%llx grants rights to a "
                         "domain that does not exist",
                         (unsigned long long)e->key);
    bytes[o] += nnmem__dt_size(e->meta);
    blocks[o]++;
  }
  with_grants += cs.with_grants;
  if (count != set->blocks.count || count * 4 > set->blocks.cap ||
      with_grants != set->grants.count)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "domain set: %zu blocks found, %zu counted, %zu "
                       "slots; %zu with grants, %zu grant records",
                       count, set->blocks.count, set->blocks.cap, with_grants,
                       set->grants.count);
  for (uint32_t i = 0; i < set->n; i++) {
    const nnmem_domain_stats_t *st = &set->dom[i]->st;
    if (st->live_bytes != bytes[i] || st->live_blocks != blocks[i] ||
        st->live_bytes > st->quota || st->peak_bytes < st->live_bytes)
      return nnmem__diag(
          diag, NNMEM_ERR_STATE,
          "domain '%s': counted %llu bytes in %llu blocks, "
          "the table holds %llu in %llu (quota %llu, peak "
          "%llu)",
          st->name, (unsigned long long)st->live_bytes,
          (unsigned long long)st->live_blocks, (unsigned long long)bytes[i],
          (unsigned long long)blocks[i], (unsigned long long)st->quota,
          (unsigned long long)st->peak_bytes);
  }
  return NNMEM_OK;
}

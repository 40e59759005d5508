/* pool.c - the generic pool layer shared by every pool kind: argument
 * checks, the table of live blocks (misuse detection), statistics, the
 * optional mutex, sampled latency (1 op in latency_sample timed with the
 * cycle counter of cycles.h, calibrated to ns) and debug fills.
 *
 * Steps of nnmem_pool_alloc:
 *   1. reject size 0, size > 2^56, alignment not a power of two;
 *   2. lock (try-lock first; a failure counts as contention);
 *   3. round size up to the granule, align up to the granule; reserve a
 *      slot in the live table (so nothing can fail after the impl did);
 *   4. call the impl; record addr -> (requested, tag) in the live table;
 *   5. update counters and peaks; debug builds fill backed memory 0xAA.
 * nnmem_pool_free: 1. misaligned pointer -> NNMEM_ERR_INVALID; 2. look the
 * address up in the live table; absent -> double free (the impl owns the
 * address) or foreign pointer, NNMEM_ERR_INVALID, nothing changes; 3. debug
 * fill 0x55; 4. impl free with the stored tag; 5. counters.
 * Invariants (checked by nnmem_pool_check): live table count = live_count;
 * sum of requested sizes in the table = requested_bytes; the impl's own
 * invariants hold; reserved <= capacity.
 * Complexity: O(1) expected plus the impl. Thread-safety: none unless
 * cfg.thread_safe, then one mutex per pool. */
#define _GNU_SOURCE /* PTHREAD_MUTEX_ADAPTIVE_NP */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/addrmap.h"
#include "runtime/cycles.h"
#include "runtime/profiler_internal.h"
#include "runtime/pool_internal.h"

#define MAX_SIZE (1ULL << 56)
/* A live record's `a`: the requested size (<= 2^56) in bits 0-56, the
 * owner tag of nnmem__pool_alloc_owned in bits 57-63 (0 = none). */
#define OWNER_SHIFT 57
#define REQ_MASK ((1ULL << OWNER_SHIFT) - 1)

struct nnmem_pool {
  nnmem_pool_kind_t kind;
  char name[NNMEM_STATS_NAME_MAX];
  nnmem__src_t src;
  nnmem__impl_t impl;
  nnmem__addrmap_t live; /* addr -> a: requested | owner, b: aux, p: tag */
  const void *owners;    /* who tags blocks with owners (one user) */
  uint64_t granule;
  int thread_safe, backed;
  pthread_mutex_t lock;
  uint32_t sample_every, sample_tick;
  nnmem_stats_t st; /* counters (fragmentation filled on demand) */
  /* the run-time profiler watching this pool (profiler.c), NULL when none:
   * one load per call */
  _Atomic(nnmem_profiler_t *) prof;
};

static void mutex_init(pthread_mutex_t *m);

static const char *const kind_names[NNMEM_POOL_KIND_COUNT_] = {
    "tiered", "tlsf", "best-fit", "first-fit",
    "buddy",  "slab", "fixed",    "shape"};

const char *nnmem_pool_kind_name(nnmem_pool_kind_t k) {
  return (unsigned)k < NNMEM_POOL_KIND_COUNT_ ? kind_names[k] : "unknown";
}

nnmem_status_t nnmem_pool_kind_parse(const char *name, nnmem_pool_kind_t *out) {
  for (int i = 0; name && i < NNMEM_POOL_KIND_COUNT_; i++)
    if (strcmp(name, kind_names[i]) == 0) {
      *out = (nnmem_pool_kind_t)i;
      return NNMEM_OK;
    }
  return NNMEM_ERR_NOT_FOUND;
}

void nnmem_pool_config_init(nnmem_pool_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

nnmem_status_t nnmem__src_take(nnmem__src_t *s, uint64_t len, uint64_t align,
                               uint64_t *addr_out) {
  if (len > s->capacity - s->reserved) return NNMEM_ERR_NOMEM;
  void *p = NULL;
  nnmem_status_t st = nnmem_backend_alloc(s->backend, len, align, &p);
  if (st != NNMEM_OK) return NNMEM_ERR_NOMEM;
  s->reserved += len;
  s->backend_allocs++;
  if (s->reserved > s->reserved_peak) s->reserved_peak = s->reserved;
  *addr_out = (uint64_t)(uintptr_t)p;
  return NNMEM_OK;
}

void nnmem__src_give(nnmem__src_t *s, uint64_t addr, uint64_t len) {
  (void)nnmem_backend_free(s->backend, (void *)(uintptr_t)addr, len);
  s->reserved -= len;
  s->backend_frees++;
}

static nnmem_status_t resolve(nnmem_pool_kind_t kind,
                              const nnmem_pool_config_t *c,
                              const nnmem_backend_t *b, nnmem__pool_params_t *p,
                              nnmem_diag_t *diag) {
  memset(p, 0, sizeof *p);
  uint64_t g = nnmem__max_u64(16, c->alignment ? c->alignment : b->alignment);
  if (!nnmem__is_pow2(g) || g > (1u << 20))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "pool config: alignment %llu is not a power of two "
                       "<= 1 MiB",
                       (unsigned long long)c->alignment);
  p->granule = g;
  p->split = c->split_threshold ? c->split_threshold : 128;
  p->small_max = c->small_max ? c->small_max : (1u << 20);
  p->large_min = c->large_min ? c->large_min : (16u << 20);
  p->middle = c->middle == NNMEM_POOL_TIERED ? NNMEM_POOL_TLSF : c->middle;
  p->retain_empty = c->retain_empty != 0;
  p->keep_empty = c->keep_empty;
  p->low_watermark = c->low_watermark;
  p->replenish = c->replenish != 0;
  p->replenish_percent = c->replenish_percent ? c->replenish_percent : 10;
  p->submit = c->replenish_submit;
  p->submit_user = c->replenish_user;
  if (p->replenish && kind != NNMEM_POOL_FIXED)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "pool config: replenish is for the fixed pool only");
  if (p->replenish && p->replenish_percent > 100)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "pool config: replenish_percent %u is over 100",
                       (unsigned)p->replenish_percent);
  if (p->middle != NNMEM_POOL_TLSF && p->middle != NNMEM_POOL_BUDDY &&
      p->middle != NNMEM_POOL_BEST_FIT && p->middle != NNMEM_POOL_FIRST_FIT)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "pool config: middle tier must be tlsf, buddy, "
                       "best-fit or first-fit");
  if (p->small_max > p->large_min)
    return nnmem__diag(
        diag, NNMEM_ERR_INVALID, "pool config: small_max %llu > large_min %llu",
        (unsigned long long)p->small_max, (unsigned long long)p->large_min);
  if (kind == NNMEM_POOL_FIXED) {
    if (c->block_size == 0 || c->block_size > MAX_SIZE)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "pool config: fixed pool needs block_size in "
                         "[1, 2^56]");
    (void)nnmem__align_up(c->block_size, g, &p->block);
  }
  uint64_t def = kind == NNMEM_POOL_BUDDY    ? (64u << 20)
                 : kind == NNMEM_POOL_FIXED  ? p->block * 64
                 : kind == NNMEM_POOL_TIERED ? p->small_max
                                             : (4u << 20);
  if (kind == NNMEM_POOL_SHAPE) { /* the block: chunk_size, else capacity */
    def = c->capacity & ~(g - 1); /* rounded down: stays under capacity */
    if (!c->chunk_size && !def)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "pool config: a shape pool needs chunk_size (its "
                         "preallocated block) or capacity");
    p->retain_empty = 1;
    p->one_region = 1;
  }
  p->chunk = c->chunk_size ? c->chunk_size : def;
  if (p->chunk > MAX_SIZE || nnmem__align_up(p->chunk, g, &p->chunk))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "pool config: chunk_size "
                       "too large");
  if (kind == NNMEM_POOL_BUDDY) p->chunk = nnmem__next_pow2(p->chunk);
  if (kind == NNMEM_POOL_SHAPE && c->capacity && p->chunk > c->capacity)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "pool config: the shape pool's block (%llu bytes) "
                       "exceeds its capacity %llu",
                       (unsigned long long)p->chunk,
                       (unsigned long long)c->capacity);
  return NNMEM_OK;
}

static void lock(nnmem_pool_t *pool) {
  if (!pool->thread_safe) return;
  if (pthread_mutex_trylock(&pool->lock) != 0) {
    pthread_mutex_lock(&pool->lock);
    pool->st.lock_contended++;
  }
  pool->st.lock_acquisitions++;
}

static void unlock(nnmem_pool_t *pool) {
  if (pool->thread_safe) pthread_mutex_unlock(&pool->lock);
}

static void lock_cb(void *owner) {
  lock(owner);
}
static void unlock_cb(void *owner) {
  unlock(owner);
}

static nnmem_status_t make_impl(nnmem_pool_kind_t kind,
                                const nnmem__pool_params_t *p,
                                nnmem__src_t *src, nnmem__impl_t *out) {
  switch (kind) {
    case NNMEM_POOL_TIERED:
      return nnmem__tiered_create(p, src, out);
    case NNMEM_POOL_TLSF:
    case NNMEM_POOL_BEST_FIT:
    case NNMEM_POOL_FIRST_FIT:
      return nnmem__rlist_create(kind, p, src, out);
    case NNMEM_POOL_BUDDY:
      return nnmem__buddy_create(p, src, out);
    case NNMEM_POOL_SLAB:
      return nnmem__slab_create(p, src, out);
    case NNMEM_POOL_FIXED:
      return nnmem__fixed_create(p, src, out);
    case NNMEM_POOL_SHAPE:
      return nnmem__shape_create(p, src, out);
    default:
      return NNMEM_ERR_INVALID;
  }
}

nnmem_status_t nnmem_pool_create(nnmem_pool_kind_t kind,
                                 const nnmem_pool_config_t *cfg,
                                 nnmem_backend_t *backend, nnmem_pool_t **out) {
  return nnmem_pool_create_diag(kind, cfg, backend, out, NULL);
}

nnmem_status_t nnmem_pool_create_diag(nnmem_pool_kind_t kind,
                                      const nnmem_pool_config_t *cfg,
                                      nnmem_backend_t *backend,
                                      nnmem_pool_t **out, nnmem_diag_t *diag) {
  static unsigned counter[NNMEM_POOL_KIND_COUNT_];
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  if ((unsigned)kind >= NNMEM_POOL_KIND_COUNT_ || !backend || !backend->alloc ||
      !backend->free)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "pool: unknown kind or incomplete backend table");
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  if (cfg) nnmem__config_copy(&c, sizeof c, cfg);
  nnmem__pool_params_t p;
  nnmem_status_t st = resolve(kind, &c, backend, &p, diag);
  if (st != NNMEM_OK) return st;
  nnmem_pool_t *pool = calloc(1, sizeof *pool);
  if (!pool) return NNMEM_ERR_NOMEM;
  pool->kind = kind;
  pool->granule = p.granule;
  pool->src.backend = backend;
  pool->src.capacity = c.capacity ? c.capacity : UINT64_MAX;
  pool->thread_safe = c.thread_safe != 0 || p.replenish;
  pool->backed = (backend->flags & NNMEM_BACKEND_BACKED) != 0;
  pool->sample_every = c.latency_sample ? c.latency_sample : 64;
  if (pool->sample_every != UINT32_MAX) /* UINT32_MAX: about never timed */
    (void)nnmem__ns_per_cycle(); /* calibrate now (once per process, 2 ms),
                                    not in the first timed call's lock */
  nnmem__addrmap_init(&pool->live);
  nnmem_stats_init(&pool->st);
  if (c.name)
    snprintf(pool->name, sizeof pool->name, "%s", c.name);
  else /* a label only: a racy counter gives at worst a repeated name */
    snprintf(pool->name, sizeof pool->name, "%s%u", kind_names[kind],
             __atomic_fetch_add(&counter[kind], 1, __ATOMIC_RELAXED));
  mutex_init(&pool->lock);
  p.lock = lock_cb;
  p.unlock = unlock_cb;
  p.owner = pool;
  st = make_impl(kind, &p, &pool->src, &pool->impl);
  if (st != NNMEM_OK) {
    pthread_mutex_destroy(&pool->lock);
    free(pool);
    if (kind == NNMEM_POOL_SHAPE && st == NNMEM_ERR_NOMEM)
      return nnmem__diag(diag, st,
                         "the backend refused the shape pool's block of "
                         "%llu bytes",
                         (unsigned long long)p.chunk);
    return nnmem__diag(diag, st, "cannot create the structures of a %s pool",
                       kind_names[kind]);
  }
  *out = pool;
  return NNMEM_OK;
}

void nnmem_pool_destroy(nnmem_pool_t *pool) {
  if (!pool) return;
  pool->impl.ops->destroy(pool->impl.self);
  nnmem__addrmap_free(&pool->live);
  pthread_mutex_destroy(&pool->lock);
  free(pool);
}

/* An adaptive mutex where glibc has one: a waiter spins a little before it
 * sleeps, which keeps two threads that alternate on a pool out of the
 * futex wake / wait round trip. */
static void mutex_init(pthread_mutex_t *m) {
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
  pthread_mutexattr_t at;
  if (pthread_mutexattr_init(&at) == 0) {
    (void)pthread_mutexattr_settype(&at, PTHREAD_MUTEX_ADAPTIVE_NP);
    int rc = pthread_mutex_init(m, &at);
    pthread_mutexattr_destroy(&at);
    if (rc == 0) return;
  }
#endif
  pthread_mutex_init(m, NULL);
}

static void record_latency(nnmem_pool_t *pool, uint64_t t0) {
  uint64_t d = nnmem__cycles_to_ns(nnmem__cycles() - t0);
  unsigned b = d ? nnmem__log2(d) : 0;
  if (b >= NNMEM_STATS_LAT_BUCKETS) b = NNMEM_STATS_LAT_BUCKETS - 1;
  pool->st.latency_hist[b]++;
  pool->st.latency_samples++;
  pool->st.latency_sum_ns += d;
}

static int sample(nnmem_pool_t *pool) {
  if (++pool->sample_tick < pool->sample_every) return 0;
  pool->sample_tick = 0;
  return 1;
}

static void note_alloc(nnmem_pool_t *pool, uint64_t size, uint64_t block) {
  nnmem_stats_t *s = &pool->st;
  s->alloc_count++;
  s->live_count++;
  s->requested_bytes += size;
  s->allocated_bytes += block;
  if (s->requested_bytes > s->requested_bytes_peak)
    s->requested_bytes_peak = s->requested_bytes;
  if (s->allocated_bytes > s->allocated_bytes_peak)
    s->allocated_bytes_peak = s->allocated_bytes;
}

static nnmem_status_t alloc_locked(nnmem_pool_t *pool, uint64_t size,
                                   uint64_t align, uint64_t owner,
                                   void **out) {
  uint64_t rsize, addr = 0, block = 0, aux = 0;
  void *tag = NULL;
  if (align < pool->granule) align = pool->granule;
  if (nnmem__align_up(size, pool->granule, &rsize) ||
      nnmem__addrmap_reserve(&pool->live, 1) != NNMEM_OK)
    return NNMEM_ERR_NOMEM;
  nnmem_status_t st = pool->impl.ops->alloc(pool->impl.self, rsize, align,
                                            &addr, &block, &tag, &aux);
  if (st != NNMEM_OK) return st;
  nnmem__addrmap_entry_t e = {addr, size | owner << OWNER_SHIFT, aux, tag};
  (void)nnmem__addrmap_put(&pool->live, &e); /* reserved: cannot fail */
  note_alloc(pool, size, block);
  if (nnmem__debug && pool->backed)
    memset((void *)(uintptr_t)addr, 0xAA, (size_t)block);
  *out = (void *)(uintptr_t)addr;
  return NNMEM_OK;
}

/* nnmem_pool_alloc and nnmem__pool_alloc_owned (arguments checked). */
static inline nnmem_status_t pool_alloc(nnmem_pool_t *pool, uint64_t size,
                                        uint64_t align, uint64_t owner,
                                        void **out) {
  lock(pool);
  int timed = sample(pool);
  uint64_t t0 = timed ? nnmem__cycles() : 0;
  nnmem_status_t st = alloc_locked(pool, size, align, owner, out);
  if (st != NNMEM_OK) pool->st.failed_count++;
  if (timed) record_latency(pool, t0);
  unlock(pool);
  nnmem_profiler_t *pr =
      atomic_load_explicit(&pool->prof, memory_order_acquire);
  if (pr && st == NNMEM_OK) nnmem__profiler_on_alloc(pr, *out, size);
  return st;
}

nnmem_status_t nnmem_pool_alloc(nnmem_pool_t *pool, uint64_t size,
                                uint64_t align, void **out) {
  if (out) *out = NULL;
  if (!pool || !out || size == 0 || size > MAX_SIZE || (align & (align - 1)) ||
      align > MAX_SIZE)
    return NNMEM_ERR_INVALID;
  return pool_alloc(pool, size, align, 0, out);
}

/* The debug fill, the impl's free and the counters of a live record
 * already taken out of the table. */
static void free_record_locked(nnmem_pool_t *pool, void *ptr,
                               const nnmem__addrmap_entry_t *e) {
  uint64_t req = e->a & REQ_MASK;
  if (nnmem__debug && pool->backed) /* at least the requested bytes */
    memset(ptr, 0x55, (size_t)req);
  uint64_t block = pool->impl.ops->free(pool->impl.self, e->key, e->p, e->b);
  pool->st.free_count++;
  pool->st.live_count--;
  pool->st.requested_bytes -= req;
  pool->st.allocated_bytes -= block;
}

nnmem_status_t nnmem_pool_free(nnmem_pool_t *pool, void *ptr) {
  if (!pool || !ptr) return NNMEM_ERR_INVALID;
  uint64_t addr = (uint64_t)(uintptr_t)ptr;
  /* before the free: once freed, another thread may get the address */
  nnmem_profiler_t *pr =
      atomic_load_explicit(&pool->prof, memory_order_acquire);
  if (pr) nnmem__profiler_on_free(pr, ptr);
  lock(pool);
  int timed = sample(pool);
  uint64_t t0 = timed ? nnmem__cycles() : 0;
  nnmem__addrmap_entry_t e;
  if ((addr & (pool->granule - 1)) ||
      !nnmem__addrmap_remove(&pool->live, addr, &e)) {
    pool->st.misuse_count++;
    unlock(pool);
    return NNMEM_ERR_INVALID;
  }
  free_record_locked(pool, ptr, &e);
  if (timed) record_latency(pool, t0);
  unlock(pool);
  return NNMEM_OK;
}

/* ---- owned blocks (pool_internal.h) ------------------------------------ */

int nnmem__pool_claim_owners(nnmem_pool_t *pool, const void *user) {
  lock(pool);
  int ok = pool->owners == NULL || pool->owners == user || user == NULL;
  if (ok) pool->owners = user;
  unlock(pool);
  return ok;
}

nnmem_status_t nnmem__pool_alloc_owned(nnmem_pool_t *pool, uint64_t size,
                                       uint64_t align, uint32_t owner,
                                       void **out) {
  *out = NULL;
  if (__builtin_expect(size - 1 >= MAX_SIZE || (align & (align - 1)) ||
                           align > MAX_SIZE || owner - 1 >= 127,
                       0))
    return NNMEM_ERR_INVALID;
  return pool_alloc(pool, size, align, owner, out);
}

nnmem_status_t nnmem__pool_owner(nnmem_pool_t *pool, const void *ptr,
                                 uint32_t *owner, uint64_t *requested) {
  lock(pool);
  nnmem__addrmap_entry_t *e =
      ptr ? nnmem__addrmap_get(&pool->live, (uint64_t)(uintptr_t)ptr) : NULL;
  if (e) {
    *owner = (uint32_t)(e->a >> OWNER_SHIFT);
    *requested = e->a & REQ_MASK;
  }
  unlock(pool);
  return e ? NNMEM_OK : NNMEM_ERR_INVALID;
}

/* The profiler hears of an owned free while the block is live (outside
 * the pool lock), only when it is the owner's. */
static __attribute__((cold, noinline)) void profile_owned_free(
    nnmem_pool_t *pool, nnmem_profiler_t *pr, void *ptr, uint32_t owner) {
  uint32_t o;
  uint64_t r;
  if (nnmem__pool_owner(pool, ptr, &o, &r) == NNMEM_OK && o == owner &&
      owner != 0)
    nnmem__profiler_on_free(pr, ptr);
}

nnmem_status_t nnmem__pool_free_owned(nnmem_pool_t *pool, void *ptr,
                                      uint32_t owner, uint64_t *requested) {
  nnmem_profiler_t *pr =
      atomic_load_explicit(&pool->prof, memory_order_acquire);
  if (__builtin_expect(pr != NULL, 0)) profile_owned_free(pool, pr, ptr, owner);
  lock(pool);
  int timed = sample(pool);
  uint64_t t0 = timed ? nnmem__cycles() : 0;
  /* one lookup: the record validates the pointer and names the owner */
  nnmem__addrmap_entry_t *e =
      nnmem__addrmap_get(&pool->live, (uint64_t)(uintptr_t)ptr);
  nnmem_status_t st = !e ? NNMEM_ERR_INVALID : NNMEM_ERR_DENIED;
  if (e && e->a >> OWNER_SHIFT == owner && owner != 0) {
    nnmem__addrmap_entry_t rec = *e;
    nnmem__addrmap_remove_entry(&pool->live, e);
    free_record_locked(pool, ptr, &rec);
    *requested = rec.a & REQ_MASK;
    st = NNMEM_OK;
  }
  if (timed) record_latency(pool, t0);
  unlock(pool);
  return st;
}

nnmem_status_t nnmem__pool_each_owned(nnmem_pool_t *pool,
                                      void (*fn)(void *user, void *blk,
                                                 uint32_t owner,
                                                 uint64_t requested),
                                      void *user) {
  size_t n = 0, cap = 0;
  nnmem__addrmap_entry_t *rec = NULL;
  nnmem_status_t st = NNMEM_OK;
  lock(pool);
  for (size_t i = 0; i < pool->live.cap && st == NNMEM_OK; i++) {
    const nnmem__addrmap_entry_t *e = &pool->live.slots[i];
    if (!e->key || !(e->a >> OWNER_SHIFT)) continue;
    st = nnmem__grow((void **)&rec, &cap, n + 1, sizeof *rec);
    if (st == NNMEM_OK) rec[n++] = *e;
  }
  unlock(pool);
  /* outside the lock: fn may free the block */
  for (size_t k = 0; k < n && st == NNMEM_OK; k++)
    fn(user, (void *)(uintptr_t)rec[k].key, (uint32_t)(rec[k].a >> OWNER_SHIFT),
       rec[k].a & REQ_MASK);
  free(rec);
  return st;
}

void nnmem__pool_fork(nnmem_pool_t *pool, int phase) {
  if (!pool || !pool->thread_safe) return;
  if (phase == 0)
    pthread_mutex_lock(&pool->lock);
  else if (phase == 1)
    pthread_mutex_unlock(&pool->lock);
  else /* the child: the prepare's thread is the one left */
    pthread_mutex_unlock(&pool->lock);
}

nnmem_status_t nnmem__pool_attach_profiler(nnmem_pool_t *pool,
                                           nnmem_profiler_t *pr) {
  if (!pr) {
    atomic_store_explicit(&pool->prof, NULL, memory_order_release);
    return NNMEM_OK;
  }
  nnmem_profiler_t *none = NULL;
  return atomic_compare_exchange_strong(&pool->prof, &none, pr)
             ? NNMEM_OK
             : NNMEM_ERR_STATE;
}

nnmem_status_t nnmem_pool_usable_size(nnmem_pool_t *pool, const void *ptr,
                                      uint64_t *size_out) {
  if (!pool || !ptr || !size_out) return NNMEM_ERR_INVALID;
  lock(pool);
  nnmem__addrmap_entry_t *e =
      nnmem__addrmap_get(&pool->live, (uint64_t)(uintptr_t)ptr);
  nnmem_status_t st = NNMEM_ERR_INVALID;
  if (e) {
    (void)nnmem__align_up(e->a & REQ_MASK, pool->granule, size_out);
    st = NNMEM_OK;
  }
  unlock(pool);
  return st;
}

int nnmem__pool_holds(nnmem_pool_t *pool, const void *ptr) {
  lock(pool);
  int held = nnmem__addrmap_get(&pool->live, (uint64_t)(uintptr_t)ptr) != NULL;
  unlock(pool);
  return held;
}

static nnmem_status_t check_locked(nnmem_pool_t *pool, nnmem_diag_t *diag) {
  uint64_t req = 0, n = 0;
  for (size_t i = 0; i < pool->live.cap; i++) {
    const nnmem__addrmap_entry_t *e = &pool->live.slots[i];
    if (!e->key) continue;
    n++;
    req += e->a & REQ_MASK;
    if (e->key & (pool->granule - 1))
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "pool %s: live block 0x%llx is misaligned", pool->name,
                         (unsigned long long)e->key);
  }
  if (n != pool->st.live_count || req != pool->st.requested_bytes)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "pool %s: live table has %llu blocks / %llu bytes, "
                       "counters say %llu / %llu",
                       pool->name, (unsigned long long)n,
                       (unsigned long long)req,
                       (unsigned long long)pool->st.live_count,
                       (unsigned long long)pool->st.requested_bytes);
  if (pool->src.reserved > pool->src.capacity ||
      pool->st.allocated_bytes > pool->src.reserved)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "pool %s: allocated %llu > reserved %llu (or over "
                       "capacity)",
                       pool->name, (unsigned long long)pool->st.allocated_bytes,
                       (unsigned long long)pool->src.reserved);
  return pool->impl.ops->check(pool->impl.self, diag);
}

nnmem_status_t nnmem_pool_check(nnmem_pool_t *pool, nnmem_diag_t *diag) {
  if (!pool) return NNMEM_ERR_INVALID;
  lock(pool);
  nnmem_status_t st = check_locked(pool, diag);
  unlock(pool);
  return st;
}

nnmem_status_t nnmem_pool_stats(nnmem_pool_t *pool, nnmem_stats_t *out) {
  if (!pool || !out) return NNMEM_ERR_INVALID;
  lock(pool);
  *out = pool->st;
  snprintf(out->name, sizeof out->name, "%s", pool->name);
  out->reserved_bytes = pool->src.reserved;
  out->reserved_bytes_peak = pool->src.reserved_peak;
  out->backend_allocs = pool->src.backend_allocs;
  out->backend_frees = pool->src.backend_frees;
  pool->impl.ops->free_info(pool->impl.self, &out->free_bytes,
                            &out->largest_free);
  out->fragmentation = out->free_bytes
                           ? (double)(out->free_bytes - out->largest_free) /
                                 (double)out->free_bytes
                           : 0.0;
  if (pool->impl.ops->counters) pool->impl.ops->counters(pool->impl.self, out);
  unlock(pool);
  return NNMEM_OK;
}

nnmem_pool_kind_t nnmem_pool_get_kind(const nnmem_pool_t *pool) {
  return pool ? pool->kind : NNMEM_POOL_KIND_COUNT_;
}

const char *nnmem_pool_name(const nnmem_pool_t *pool) {
  return pool ? pool->name : "";
}

/* sim.c - a simulated device: capacity, device alignment, fault injection,
 * request counting, optionally unbacked addresses.
 *
 * Steps of alloc:
 *   1. count the request; when it is the armed N-th one (or later with
 *      fail_after), fail with NNMEM_ERR_NOMEM (fault injection, in the
 *      manner of SQLite's test_malloc.c);
 *   2. round the size up to the device alignment; refuse when live bytes
 *      would pass the capacity;
 *   3. backed: posix_memalign real host memory; unbacked: hand out the next
 *      address of a bump pointer that starts at 2^44 (or address_base) and
 *      is never reused (aligned to max(device alignment, requested alignment));
 *   4. record the region (address -> rounded size) in a hash map.
 * free looks the region up (unknown address or wrong size: NNMEM_ERR_INVALID)
 * and forgets it. mem_info reports capacity - live and capacity.
 * Invariants: live_bytes = sum of recorded region sizes <= capacity;
 * live_regions = map count.
 * Complexity: O(1) expected. Thread-safety: one mutex around every call. */
#define _DEFAULT_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/backend.h"
#include "runtime/addrmap.h"
#include "runtime/pool_internal.h"

#define SIM_BASE (1ULL << 44)

typedef struct sim_backend {
  nnmem_backend_t table;
  pthread_mutex_t lock;
  uint64_t capacity, align;
  int backed;
  uint64_t next_addr;
  uint64_t fail_at, fail_after, since_arm; /* fault injection */
  nnmem_sim_counters_t c;
  nnmem__addrmap_t live;
} sim_backend_t;

static void sim_destroy(void *ctx);

static int should_fail(sim_backend_t *s) {
  if (!s->fail_at) return 0;
  s->since_arm++;
  if (s->since_arm == s->fail_at) return 1;
  return s->fail_after && s->since_arm > s->fail_at;
}

static nnmem_status_t sim_take(sim_backend_t *s, uint64_t size, uint64_t align,
                               void **out) {
  uint64_t len, a = nnmem__max_u64(align, s->align), addr;
  if (nnmem__align_up(size, s->align, &len)) return NNMEM_ERR_NOMEM;
  if (len > s->capacity - s->c.live_bytes) return NNMEM_ERR_NOMEM;
  if (nnmem__addrmap_reserve(&s->live, 1) != NNMEM_OK) return NNMEM_ERR_NOMEM;
  void *host = NULL;
  if (s->backed) {
    if (len > (uint64_t)SIZE_MAX / 2 ||
        posix_memalign(&host, (size_t)(a < 16 ? 16 : a), (size_t)len) != 0)
      return NNMEM_ERR_NOMEM;
    addr = (uint64_t)(uintptr_t)host;
  } else {
    if (nnmem__align_up(s->next_addr, a, &addr) ||
        nnmem__add_overflow(addr, len, &s->next_addr))
      return NNMEM_ERR_NOMEM;
  }
  nnmem__addrmap_entry_t e = {addr, len, 0, host};
  (void)nnmem__addrmap_put(&s->live, &e); /* reserved above: cannot fail */
  s->c.live_regions++;
  s->c.live_bytes += len;
  if (s->c.live_bytes > s->c.peak_bytes) s->c.peak_bytes = s->c.live_bytes;
  *out = (void *)(uintptr_t)addr;
  return NNMEM_OK;
}

static nnmem_status_t sim_alloc(void *ctx, uint64_t size, uint64_t align,
                                void **out) {
  sim_backend_t *s = ctx;
  pthread_mutex_lock(&s->lock);
  s->c.requests++;
  nnmem_status_t st =
      should_fail(s) ? NNMEM_ERR_NOMEM : sim_take(s, size, align, out);
  if (st != NNMEM_OK) s->c.failed++;
  pthread_mutex_unlock(&s->lock);
  return st;
}

static nnmem_status_t sim_free(void *ctx, void *ptr, uint64_t size) {
  sim_backend_t *s = ctx;
  nnmem_status_t st = NNMEM_OK;
  pthread_mutex_lock(&s->lock);
  nnmem__addrmap_entry_t *e = nnmem__addrmap_get(&s->live, (uintptr_t)ptr);
  uint64_t len;
  if (!e || nnmem__align_up(size, s->align, &len) || e->a != len) {
    st = NNMEM_ERR_INVALID;
  } else {
    free(e->p);
    s->c.live_bytes -= len;
    s->c.live_regions--;
    s->c.frees++;
    nnmem__addrmap_remove(&s->live, (uintptr_t)ptr, NULL);
  }
  pthread_mutex_unlock(&s->lock);
  return st;
}

static nnmem_status_t sim_mem_info(void *ctx, uint64_t *free_bytes,
                                   uint64_t *total_bytes) {
  sim_backend_t *s = ctx;
  pthread_mutex_lock(&s->lock);
  *total_bytes = s->capacity;
  *free_bytes = s->capacity - s->c.live_bytes;
  pthread_mutex_unlock(&s->lock);
  return NNMEM_OK;
}

static void sim_destroy(void *ctx) {
  sim_backend_t *s = ctx;
  for (size_t i = 0; i < s->live.cap; i++)
    if (s->live.slots[i].key) free(s->live.slots[i].p);
  nnmem__addrmap_free(&s->live);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

nnmem_status_t nnmem_backend_sim_create(const nnmem_sim_config_t *cfg,
                                        nnmem_backend_t **out) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  nnmem_sim_config_t d = {0};
  if (cfg) nnmem__config_copy(&d, sizeof d, cfg);
  if (d.alignment == 0) d.alignment = 256;
  if (!nnmem__is_pow2(d.alignment) || d.alignment > (1u << 20))
    return NNMEM_ERR_INVALID;
  if (d.capacity == 0) d.capacity = 1ULL << 46;
  sim_backend_t *s = calloc(1, sizeof *s);
  if (!s) return NNMEM_ERR_NOMEM;
  pthread_mutex_init(&s->lock, NULL);
  nnmem__addrmap_init(&s->live);
  s->capacity = d.capacity;
  s->align = d.alignment;
  s->backed = d.backed != 0;
  s->next_addr = d.address_base ? d.address_base : SIM_BASE;
  s->fail_at = d.fail_at;
  s->fail_after = d.fail_after != 0;
  nnmem_backend_t *t = &s->table;
  t->size = sizeof *t;
  t->version = NNMEM_BACKEND_VERSION;
  t->name = "sim";
  t->ctx = s;
  t->flags = s->backed ? NNMEM_BACKEND_BACKED : 0;
  t->alignment = d.alignment;
  t->alloc = sim_alloc;
  t->free = sim_free;
  t->mem_info = sim_mem_info;
  t->destroy = sim_destroy;
  *out = t;
  return NNMEM_OK;
}

static sim_backend_t *as_sim(const nnmem_backend_t *b) {
  return (b && b->destroy == sim_destroy) ? (sim_backend_t *)b->ctx : NULL;
}

nnmem_status_t nnmem_backend_sim_counters(const nnmem_backend_t *b,
                                          nnmem_sim_counters_t *out) {
  sim_backend_t *s = as_sim(b);
  if (!s || !out) return NNMEM_ERR_INVALID;
  pthread_mutex_lock(&s->lock);
  *out = s->c;
  pthread_mutex_unlock(&s->lock);
  return NNMEM_OK;
}

nnmem_status_t nnmem_backend_sim_fail_at(nnmem_backend_t *b, uint64_t n,
                                         int fail_after) {
  sim_backend_t *s = as_sim(b);
  if (!s) return NNMEM_ERR_INVALID;
  pthread_mutex_lock(&s->lock);
  s->fail_at = n;
  s->fail_after = fail_after != 0;
  s->since_arm = 0;
  pthread_mutex_unlock(&s->lock);
  return NNMEM_OK;
}

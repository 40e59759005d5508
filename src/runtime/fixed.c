/* fixed.c - fixed-size block pool: one block size, a LIFO stack of free
 * block addresses, growth by chunks, optionally replenished in the
 * background.
 *
 * Steps of alloc: 1. size > block size -> NNMEM_ERR_INVALID; 2. when the
 * stack is empty take a chunk (chunk_size bytes, default 64 blocks) and push
 * its blocks (counted in empty_hits: the caller waited on the backend);
 * 3. pop (the most recently freed block: warm in cache); 4. without
 * replenishment: when fewer than low_watermark blocks remain free, take
 * another chunk now (a failure there is ignored: the allocation already
 * succeeded); with it: when fewer than the watermark remain free and no
 * refill is pending, mark one pending and wake the refiller (the pool's
 * thread, or a task given to the caller's executor), then return.
 * free: push. Chunks are kept until the pool is destroyed.
 *
 * The refill (another thread; it holds no lock of its own while it takes
 * the pool lock, so the order is always pool lock -> wake mutex):
 *   1. under the pool lock: stop when 2 x watermark blocks are free (and at
 *      least one chunk came) or the capacity is reached (then stay quiet
 *      until the allocation path finds the pool empty); else count the
 *      chunk as reserved now (so the capacity holds);
 *   2. unlocked: ask the backend for the chunk (the slow part);
 *   3. under the pool lock: grow the stack and chunk table, push the blocks
 *      (or, refused, undo the reservation, count a failure and stay quiet
 *      until the allocation path next finds the pool empty); go to 1.
 *
 *   hot path:  pop ... n < mark? --wake--> refiller: backend alloc (unlocked)
 *                                                    splice under pool lock
 *
 * Invariants: free + live = chunks * blocks per chunk; every free address
 * is distinct, inside a chunk and on a block boundary; the stack's
 * capacity covers every block of every chunk; at most one refill runs.
 * Complexity: O(1) alloc/free (amortized over chunk growth).
 * Thread-safety: under the pool lock (a replenishing pool is always
 * thread_safe); the refiller as described above. */
#include <pthread.h>
#include <stdlib.h>

#include "runtime/addrmap.h"
#include "runtime/pool_internal.h"

typedef struct fixed {
  nnmem__pool_params_t p;
  nnmem__src_t *src;
  uint64_t per_chunk, chunk_len;
  uint64_t *stack;
  size_t n, cap;
  nnmem__addrmap_t chunks; /* base -> 1 */
  uint64_t live;
  /* counters (under the pool lock) */
  uint64_t empty_hits, refills, refill_failures;
  /* replenishment; pending/quiet under the pool lock */
  int pending;        /* a refill was asked for and has not finished */
  int quiet;          /* the last refill was refused: no new one until empty */
  pthread_mutex_t mu; /* wakeups: kicked, stop, inflight */
  pthread_cond_t cv;
  int kicked, stop, inflight, has_thread;
  pthread_t thread;
} fixed_t;

static nnmem_status_t grow(fixed_t *f) {
  uint64_t base;
  if (nnmem__grow((void **)&f->stack, &f->cap,
                  (f->chunks.count + 1) * f->per_chunk,
                  sizeof *f->stack) != NNMEM_OK ||
      nnmem__addrmap_reserve(&f->chunks, 1) != NNMEM_OK)
    return NNMEM_ERR_NOMEM;
  nnmem_status_t st =
      nnmem__src_take(f->src, f->chunk_len, f->p.granule, &base);
  if (st != NNMEM_OK) return st;
  nnmem__addrmap_entry_t e = {base, 1, 0, NULL};
  (void)nnmem__addrmap_put(&f->chunks, &e);
  for (uint64_t i = f->per_chunk; i-- > 0;)
    f->stack[f->n++] = base + i * f->p.block;
  return NNMEM_OK;
}

/* The watermark in blocks: low_watermark, else a percentage of all. */
static uint64_t mark(const fixed_t *f) {
  if (f->p.low_watermark) return f->p.low_watermark;
  uint64_t m = f->chunks.count * f->per_chunk * f->p.replenish_percent / 100;
  return m ? m : 1;
}

/* Step 1 of the refill (pool lock held): 1 when a chunk is to be taken,
 * counted as reserved already. */
static int refill_wanted_locked(fixed_t *f, int taken) {
  nnmem__src_t *s = f->src;
  if (taken && f->n >= 2 * mark(f)) return 0;
  if (f->chunk_len > s->capacity - s->reserved) {
    f->quiet = 1; /* at capacity: no new request until empty */
    return 0;
  }
  s->reserved += f->chunk_len;
  if (s->reserved > s->reserved_peak) s->reserved_peak = s->reserved;
  return 1;
}

/* Step 3 (pool lock held): splices the chunk at `base` in; 0 when the
 * tables cannot grow (the caller gives the chunk back). */
static int splice_locked(fixed_t *f, uint64_t base) {
  if (nnmem__grow((void **)&f->stack, &f->cap,
                  (f->chunks.count + 1) * f->per_chunk,
                  sizeof *f->stack) != NNMEM_OK ||
      nnmem__addrmap_reserve(&f->chunks, 1) != NNMEM_OK)
    return 0;
  nnmem__addrmap_entry_t e = {base, 1, 0, NULL};
  (void)nnmem__addrmap_put(&f->chunks, &e);
  for (uint64_t i = f->per_chunk; i-- > 0;)
    f->stack[f->n++] = base + i * f->p.block;
  f->src->backend_allocs++;
  f->refills++;
  return 1;
}

/* The refill: steps 1-3 until enough blocks are free. */
static void refill(fixed_t *f) {
  for (int taken = 0;; taken++) {
    f->p.lock(f->p.owner);
    if (!refill_wanted_locked(f, taken)) {
      f->pending = 0;
      f->p.unlock(f->p.owner);
      return;
    }
    f->p.unlock(f->p.owner);
    void *p = NULL;
    nnmem_status_t st =
        nnmem_backend_alloc(f->src->backend, f->chunk_len, f->p.granule, &p);
    f->p.lock(f->p.owner);
    int ok = st == NNMEM_OK && splice_locked(f, (uint64_t)(uintptr_t)p);
    if (!ok) {
      f->src->reserved -= f->chunk_len;
      f->refill_failures++;
      f->quiet = 1;
      f->pending = 0;
    }
    f->p.unlock(f->p.owner);
    if (!ok) {
      if (st == NNMEM_OK)
        (void)nnmem_backend_free(f->src->backend, p, f->chunk_len);
      return;
    }
  }
}

static void *refiller_main(void *arg) {
  fixed_t *f = arg;
  pthread_mutex_lock(&f->mu);
  for (;;) {
    while (!f->kicked && !f->stop)
      pthread_cond_wait(&f->cv, &f->mu);
    if (f->stop) break;
    f->kicked = 0;
    pthread_mutex_unlock(&f->mu);
    refill(f);
    pthread_mutex_lock(&f->mu);
  }
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

/* An executor task: one refill, then tell destroy it is done. */
static void refill_task(void *arg) {
  fixed_t *f = arg;
  refill(f);
  pthread_mutex_lock(&f->mu);
  f->inflight--;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
}

/* Asks for a refill (pool lock held). */
static void kick(fixed_t *f) {
  f->pending = 1;
  pthread_mutex_lock(&f->mu);
  if (f->p.submit) {
    f->inflight++;
    pthread_mutex_unlock(&f->mu);
    f->p.submit(f->p.submit_user, refill_task, f);
    return;
  }
  f->kicked = 1;
  pthread_cond_signal(&f->cv);
  pthread_mutex_unlock(&f->mu);
}

static nnmem_status_t fx_alloc(void *self, uint64_t size, uint64_t align,
                               uint64_t *addr, uint64_t *block, void **tag,
                               uint64_t *aux) {
  fixed_t *f = self;
  if (size > f->p.block || (f->p.block & (align - 1)) || align > f->p.granule)
    return NNMEM_ERR_INVALID;
  if (f->n == 0) {
    f->empty_hits++;
    f->quiet = 0;
    nnmem_status_t st = grow(f);
    if (st != NNMEM_OK) return st;
  }
  *addr = f->stack[--f->n];
  if (f->p.replenish) {
    if (f->n < mark(f) && !f->pending && !f->quiet) kick(f);
  } else if (f->n < f->p.low_watermark) {
    (void)grow(f);
  }
  f->live++;
  *block = f->p.block;
  *tag = NULL;
  *aux = 0;
  return NNMEM_OK;
}

static uint64_t fx_free(void *self, uint64_t addr, void *tag, uint64_t aux) {
  fixed_t *f = self;
  (void)tag;
  (void)aux;
  f->stack[f->n++] = addr; /* capacity covers every block of every chunk */
  f->live--;
  return f->p.block;
}

static uint64_t chunk_of(const fixed_t *f, uint64_t addr) {
  for (size_t i = 0; i < f->chunks.cap; i++) {
    uint64_t b = f->chunks.slots[i].key;
    if (b && addr >= b && addr - b < f->chunk_len) return b;
  }
  return 0;
}

static int fx_owns(void *self, uint64_t addr) {
  return chunk_of(self, addr) != 0;
}

static nnmem_status_t fx_check(void *self, nnmem_diag_t *diag) {
  fixed_t *f = self;
  if (f->n + f->live != f->chunks.count * f->per_chunk)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "fixed: %zu free + %llu live != %zu chunks x %llu", f->n,
                       (unsigned long long)f->live, f->chunks.count,
                       (unsigned long long)f->per_chunk);
  nnmem__addrmap_t seen;
  nnmem__addrmap_init(&seen);
  nnmem_status_t st = nnmem__addrmap_reserve(&seen, f->n);
  for (size_t i = 0; st == NNMEM_OK && i < f->n; i++) {
    uint64_t a = f->stack[i], base = chunk_of(f, a);
    nnmem__addrmap_entry_t e = {a, 0, 0, NULL};
    if (!base || (a - base) % f->p.block || nnmem__addrmap_get(&seen, a))
      st = nnmem__diag(diag, NNMEM_ERR_STATE,
                       "fixed: free block 0x%llx repeated or outside chunks",
                       (unsigned long long)a);
    else
      (void)nnmem__addrmap_put(&seen, &e);
  }
  nnmem__addrmap_free(&seen);
  return st;
}

static void fx_free_info(void *self, uint64_t *free_bytes, uint64_t *largest) {
  fixed_t *f = self;
  *free_bytes = f->n * f->p.block;
  *largest = f->n ? f->p.block : 0;
}

static void fx_destroy(void *self) {
  fixed_t *f = self;
  if (f->p.replenish) {
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_broadcast(&f->cv);
    while (f->inflight)
      pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
    if (f->has_thread) pthread_join(f->thread, NULL);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
  }
  for (size_t i = 0; i < f->chunks.cap; i++)
    if (f->chunks.slots[i].key)
      nnmem__src_give(f->src, f->chunks.slots[i].key, f->chunk_len);
  nnmem__addrmap_free(&f->chunks);
  free(f->stack);
  free(f);
}

static void fx_counters(void *self, nnmem_stats_t *out) {
  fixed_t *f = self;
  out->empty_hits += f->empty_hits;
  out->refills += f->refills;
  out->refill_failures += f->refill_failures;
}

static const nnmem__impl_ops_t fixed_ops = {
    fx_alloc,     fx_free,    fx_owns,    fx_check,
    fx_free_info, fx_destroy, fx_counters};

nnmem_status_t nnmem__fixed_create(const nnmem__pool_params_t *p,
                                   nnmem__src_t *src, nnmem__impl_t *out) {
  fixed_t *f = calloc(1, sizeof *f);
  if (!f) return NNMEM_ERR_NOMEM;
  f->p = *p;
  f->src = src;
  f->per_chunk = p->chunk / p->block ? p->chunk / p->block : 1;
  f->chunk_len = f->per_chunk * p->block;
  if (p->replenish) {
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    if (!p->submit) {
      if (pthread_create(&f->thread, NULL, refiller_main, f) != 0) {
        pthread_cond_destroy(&f->cv);
        pthread_mutex_destroy(&f->mu);
        free(f);
        return NNMEM_ERR_NOMEM;
      }
      f->has_thread = 1;
    }
  }
  out->ops = &fixed_ops;
  out->self = f;
  return NNMEM_OK;
}

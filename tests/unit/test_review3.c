/* test_review3.c - adversarial checks of the free queue's double-free
 * fix (the queue's filter, the at-call free of other threads' blocks, the
 * flush's refusal of given-back spans): re-entrant on_misuse callbacks
 * during a flush, a randomized model over several printed seeds with bad
 * frees of every kind (second frees, interior and header pointers,
 * pointers with high bits), several threads, thread exits and adoption of
 * their parked caches. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnmem/allocator.h"
#include "runtime/allocator_internal.h"
#include "testutil.h"
#include "tu_actor.h"

/* ---- re-entrant on_misuse ------------------------------------------------
 *
 * The allocator documents on_misuse as called "in the freeing thread, no
 * lock held", so a callback may call the allocator (a logger that
 * allocates, a test harness that frees). At 9c55da4 flush_pending reset
 * the queue and cleared the queue's filter before it ran the entries, and
 * called on_misuse between entries (the three tests below failed there);
 * it now calls on_misuse once the batch is done. */

typedef struct reent {
  nnmem_allocator_t *a;
  int calls;
  int arm_alloc; /* the next call allocates one block of alloc_size */
  size_t alloc_size;
  char *got;    /* that block */
  int arm_free; /* the next call frees free_n blocks */
  void *to_free[8];
  int free_n;
} reent_t;

static void reent_cb(void *ctx, const void *ptr) {
  (void)ptr;
  reent_t *r = ctx;
  r->calls++;
  if (r->arm_alloc) {
    r->arm_alloc = 0;
    r->got = nnmem_alloc(r->a, r->alloc_size);
  }
  if (r->arm_free) {
    r->arm_free = 0;
    for (int i = 0; i < r->free_n; i++)
      nnmem_free(r->a, r->to_free[i]);
  }
}

static nnmem_allocator_t *reent_alloc(reent_t *r, uint32_t batch) {
  r->a = tu_allocator_misuse(batch, reent_cb, r);
  return r->a;
}

/* A batch [interior pointer of y, second free of x] with x free at the
 * head of its span's free list. The flush clears the filter, refuses the
 * interior pointer and calls on_misuse, which allocates: x is handed out
 * (the filter no longer says it is queued), then the next entry, x's
 * second free, finds x handed out and frees it: the callback's block is
 * on the free list and the next allocation returns it again. FAILS on
 * 9c55da4 (x handed out twice). */
static void test_reentrant_alloc_during_flush(void **state) {
  (void)state;
  reent_t r = {0};
  nnmem_allocator_t *a = reent_alloc(&r, 8);
  r.alloc_size = 64;
  char *x = nnmem_alloc(a, 64), *y = nnmem_alloc(a, 64);
  assert_non_null(x);
  assert_non_null(y);
  nnmem_free(a, x);
  nnmem_allocator_thread_flush(a); /* x free, the head of the list */
  nnmem_free(a, y + 16);           /* queued: refused at the flush */
  nnmem_free(a, x);                /* a second free: queued */
  r.arm_alloc = 1;
  nnmem_allocator_thread_flush(a);
  assert_non_null(r.got);
  memset(r.got, 'C', 64); /* the callback's block, its data */
  /* two bad frees, each refused once */
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(a, &st));
  fprintf(stderr, "  callback got %p (x %p), misuse %llu, live %llu\n",
          (void *)r.got, (void *)x, (unsigned long long)st.misuse_count,
          (unsigned long long)st.live_count);
  for (int i = 0; i < 100; i++) { /* never the callback's block again */
    char *q = nnmem_alloc(a, 64);
    assert_non_null(q);
    assert_ptr_not_equal(q, r.got);
    assert_ptr_not_equal(q, y);
  }
  for (int i = 0; i < 64; i++)
    assert_int_equal(r.got[i], 'C');
  assert_int_equal(st.misuse_count, 2);
  assert_int_equal(r.calls, 2);
  nnmem_allocator_destroy(a);
}

/* A batch [interior pointer, g1, g2, g3] (good frees after the bad one);
 * on_misuse, called for entry 0, frees three live blocks c1..c3: they are
 * queued at pend[0..2] of the queue the flush is still running, over its
 * entries 1 and 2 (g1, g2), which are never freed (lost: a leak of two
 * blocks), while c2 and c3 are freed by the running flush and stay queued,
 * refused at the next flush as second frees the program never made.
 * FAILS on 9c55da4 (misuse 3 instead of 1, live count 2 too high). */
static void test_reentrant_free_during_flush(void **state) {
  (void)state;
  reent_t r = {0};
  nnmem_allocator_t *a = reent_alloc(&r, 8);
  char *keep = nnmem_alloc(a, 64), *g[3], *c[3];
  assert_non_null(keep);
  for (int i = 0; i < 3; i++) {
    assert_non_null(g[i] = nnmem_alloc(a, 64));
    assert_non_null(c[i] = nnmem_alloc(a, 64));
    r.to_free[i] = c[i];
  }
  r.free_n = 3;
  nnmem_free(a, keep + 16); /* entry 0: refused */
  for (int i = 0; i < 3; i++)
    nnmem_free(a, g[i]);
  r.arm_free = 1;
  nnmem_allocator_thread_flush(a);
  nnmem_allocator_thread_flush(a); /* what the callback queued */
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(a, &st));
  fprintf(stderr, "  misuse %llu (1 bad free), live %llu (1 live), calls %d\n",
          (unsigned long long)st.misuse_count,
          (unsigned long long)st.live_count, r.calls);
  assert_int_equal(st.misuse_count, 1);
  assert_int_equal(r.calls, 1);
  assert_int_equal(st.live_count, 1);
  nnmem_free(a, keep);
  nnmem_allocator_destroy(a);
}

/* A thread exits with a queued batch [interior pointer, second free of
 * x], x free at the head of its list; the key destructor's flush calls
 * on_misuse, which allocates (the thread's cache is still current then):
 * as in test_reentrant_alloc_during_flush the callback gets x and the
 * second free frees it. The main thread then adopts the parked cache and
 * allocates: x again. FAILS on 9c55da4. */
typedef struct exit_arg {
  nnmem_allocator_t *a;
  reent_t *r;
  char *x, *y;
} exit_arg_t;

static void *exit_with_queue(void *v) {
  exit_arg_t *e = v;
  e->x = nnmem_alloc(e->a, 64);
  e->y = nnmem_alloc(e->a, 64);
  nnmem_free(e->a, e->x);
  nnmem_allocator_thread_flush(e->a);
  nnmem_free(e->a, e->y + 16);
  nnmem_free(e->a, e->x);
  e->r->arm_alloc = 1;
  return NULL; /* the key destructor flushes */
}

static void test_reentrant_alloc_at_thread_exit(void **state) {
  (void)state;
  reent_t r = {0};
  nnmem_allocator_t *a = reent_alloc(&r, 8);
  r.alloc_size = 64;
  exit_arg_t e = {a, &r, NULL, NULL};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, exit_with_queue, &e), 0);
  pthread_join(t, NULL);
  /* the callback may have got the block from the exiting thread's cache
   * or (if the cache was no longer current) elsewhere: either way it is
   * live now and no allocation may return it */
  char *got = r.got;
  if (got) memset(got, 'C', 64);
  for (int i = 0; i < 100; i++) { /* adopts the parked cache */
    char *q = nnmem_alloc(a, 64);
    assert_non_null(q);
    assert_ptr_not_equal(q, e.y);
    if (got) assert_ptr_not_equal(q, got);
  }
  if (got)
    for (int i = 0; i < 64; i++)
      assert_int_equal(got[i], 'C');
  assert_int_equal(r.calls, 2); /* both bad frees refused */
  nnmem_allocator_destroy(a);
}

/* ---- a span given back and retaken --------------------------------------
 *
 * A second free of a free block x of span S is queued; another thread
 * frees S's last live block (remote); a miss in another class drains it
 * and S, empty, goes back to its pool (its class keeps two empty spans
 * already); then blocks of S's class (and of a 1-unit class) are taken
 * until the pool gives S again, to this cache: x is carved anew and
 * handed out only after the filter's flush refuses the queued free (or
 * the flush refuses it as a given-back span's). Passes on 9c55da4 (the
 * path the flush's fown test and the filter cover together); fails on
 * its parent f30ece7 (the queued free frees x's new owner's block). */
static void *free_in_thread(void *p) {
  nnmem_allocator_t **ap = p;
  nnmem_free(ap[0], ap[1]);
  return NULL;
}

static _Atomic int retake_calls;
static void retake_cb(void *ctx, const void *ptr) {
  (void)ctx;
  (void)ptr;
  atomic_fetch_add(&retake_calls, 1);
}

static void test_queued_second_free_span_retaken(void **state) {
  (void)state;
  enum { N = 64, M = 400 };
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
  cfg.free_batch = 2; /* (no thread_flush: it gives back every empty span) */
  cfg.on_misuse = retake_cb;
  nnmem_allocator_t *a = NULL;
  assert_ok(nnmem_allocator_create(&cfg, &a));
  atomic_store(&retake_calls, 0);
  char *b[N], *pad = nnmem_alloc(a, 32);
  assert_non_null(pad);
  for (int i = 0; i < N; i++)
    assert_non_null(b[i] = nnmem_alloc(a, 4096));
  uintptr_t s = (uintptr_t)b[0] & ~(uintptr_t)0xFFFF;
  char *x = b[0], *v = NULL;
  for (int i = 0; i < N; i++)
    if (((uintptr_t)b[i] & ~(uintptr_t)0xFFFF) != s) nnmem_free(a, b[i]);
  for (int i = 0; i < N; i++)
    if (((uintptr_t)b[i] & ~(uintptr_t)0xFFFF) == s) {
      if (v) nnmem_free(a, v);
      v = b[i];
    }
  assert_ptr_not_equal(v, x);
  nnmem_free(a, pad); /* N frees in all: the queue (2) is empty now */
  nnmem_free(a, x);   /* a second free: queued */
  nnmem_allocator_t *arg[2] = {a, (nnmem_allocator_t *)(void *)v};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, free_in_thread, arg), 0);
  pthread_join(t, NULL);
  void *big = nnmem_alloc(a, 100000); /* a miss: the drain gives S back */
  assert_non_null(big);
  size_t us = 0; /* S given back: its unit is no span's now */
  assert_int_not_equal(nnmem__allocator_usable_size(a, x, &us), NNMEM_OK);
  char *c[M];
  size_t cn[M];
  int retaken = 0;
  for (int i = 0; i < M; i++) {
    cn[i] = i % 2 ? 4096 : 1024;
    assert_non_null(c[i] = nnmem_alloc(a, cn[i]));
    if (((uintptr_t)c[i] & ~(uintptr_t)0xFFFF) == s) retaken = 1;
    memset(c[i], (unsigned char)i, cn[i]);
  }
  nnmem_allocator_thread_flush(a);
  for (int i = 0; i < M; i++) {
    for (size_t k = 0; k < cn[i]; k++)
      if ((unsigned char)c[i][k] != (unsigned char)i)
        fail_msg("block %d (%p) byte %zu changed", i, (void *)c[i], k);
    for (int j = 0; j < i; j++)
      if (c[j] < c[i] + cn[i] && c[i] < c[j] + cn[j])
        fail_msg("blocks %d and %d overlap", j, i);
  }
  fprintf(stderr, "  span retaken by this cache: %s\n", retaken ? "yes" : "no");
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(a, &st));
  assert_int_equal(st.misuse_count, 1);
  assert_int_equal(atomic_load(&retake_calls), 1);
  assert_int_equal(st.live_count, M + 1);
  nnmem_free(a, big);
  nnmem_allocator_destroy(a);
}

/* ---- a model over several seeds --------------------------------------------
 *
 * Three actor threads (each its own cache and queue), one of them exiting
 * and replaced now and then (its parked cache adopted by the next thread
 * that needs one), run random steps: allocations (16 B to 20 KiB: queued
 * classes and the purged ones from 8 KiB; some aligned), good frees (by
 * any thread: remote ones too), bad frees (a second free of a free block,
 * an interior pointer, a pointer into a span's header, a live block's
 * address with bit 52 set), flushes. Checks: no allocation returns a
 * block overlapping a live one, live blocks keep their contents, every
 * bad free is refused exactly once (misuse_count), live_count is the
 * model's. on_misuse only counts. Passes on 9c55da4; fails on f30ece7
 * (seed 0x5eed0000, step 117: a live block's contents changed). */

typedef struct mb {
  char *p;
  size_t n;
  unsigned char fill;
  int live;
} mb_t;

static _Atomic uint64_t model_cb_calls;
static void model_cb(void *ctx, const void *ptr) {
  (void)ctx;
  (void)ptr;
  atomic_fetch_add(&model_cb_calls, 1);
}

static void model_run(uint64_t seed, uint32_t batch, int decommit) {
  enum { STEPS = 12000, MAXB = 2048, NACT = 3 };
  fprintf(stderr, "  model: seed 0x%llx batch %u decommit %d\n",
          (unsigned long long)seed, batch, decommit);
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
  cfg.free_batch = batch;
  cfg.decommit_spans = decommit;
  cfg.on_misuse = model_cb;
  nnmem_allocator_t *a = NULL;
  assert_ok(nnmem_allocator_create(&cfg, &a));
  tu_actor_t *w = calloc(NACT, sizeof *w);
  mb_t *m = calloc(MAXB, sizeof *m);
  assert_non_null(w);
  assert_non_null(m);
  for (int i = 0; i < NACT; i++)
    tu_actor_start(&w[i], a);
  int nb = 0, nlive = 0, exits = 0;
  uint64_t bad = 0;
  for (int step = 0; step < STEPS; step++) {
    uint64_t r = tu_rand(&seed);
    tu_actor_t *x = &w[r % NACT];
    unsigned c = (unsigned)((r >> 4) % 100);
    if (c < 40 || nlive == 0) {
      unsigned k = (unsigned)((r >> 12) % 16);
      size_t n = k < 10   ? 16 + (size_t)((r >> 20) % 240)
                 : k < 13 ? 256 + (size_t)((r >> 20) % 4000)
                          : 7000 + (size_t)((r >> 20) % 14000);
      x->n = n;
      x->align = (size_t)16 << ((r >> 40) % 3); /* 16, 32, 64 */
      tu_act(x, (r >> 44) % 8 == 0 ? TU_OP_ALIGNED : TU_OP_ALLOC);
      char *p = x->p;
      assert_non_null(p);
      int slot = -1;
      for (int i = 0; i < nb; i++) {
        if (m[i].p == p) slot = i;
        if (m[i].live && p < m[i].p + m[i].n && m[i].p < p + n)
          fail_msg(
              "seed step %d: %p (%zu B) handed out while %p (%zu B) "
              "lives",
              step, (void *)p, n, (void *)m[i].p, m[i].n);
      }
      if (slot < 0) {
        if (nb == MAXB) { /* forget a free one */
          for (int i = 0; i < nb && slot < 0; i++)
            if (!m[i].live) slot = i;
          if (slot < 0) fail_msg("model full");
        } else {
          slot = nb++;
        }
      }
      m[slot] = (mb_t){p, n, (unsigned char)(step | 1), 1};
      memset(p, m[slot].fill, n);
      nlive++;
    } else if (c < 72) { /* a good free: contents intact */
      int k = (int)((r >> 12) % (uint64_t)nb);
      while (!m[k].live)
        k = (k + 1) % nb;
      for (size_t i = 0; i < m[k].n; i++)
        if ((unsigned char)m[k].p[i] != m[k].fill)
          fail_msg("step %d: block %p byte %zu changed", step, (void *)m[k].p,
                   i);
      x->p = m[k].p;
      tu_act(x, TU_OP_FREE);
      m[k].live = 0;
      nlive--;
    } else if (c < 95) { /* a bad free */
      int k = (int)((r >> 12) % (uint64_t)nb);
      unsigned kind = (unsigned)((r >> 30) % 4);
      if (kind == 0) { /* a second free of a free block */
        if (nb == nlive) continue;
        while (m[k].live)
          k = (k + 1) % nb;
        x->p = m[k].p;
      } else {
        if (nlive == 0) continue;
        while (!m[k].live)
          k = (k + 1) % nb;
        uintptr_t p = (uintptr_t)m[k].p;
        /* blocks are 16-aligned: p + 8 is no block's start */
        if (kind == 1)
          x->p = (void *)(p + 8); /* interior */
        else if (kind == 2)       /* the unit's start + 8: a span's padding or
                                     header, or a pool block's interior */
          x->p = (void *)((p & ~(uintptr_t)0xFFFF) + 8);
        else
          x->p = (void *)(p | ((uintptr_t)1 << 52)); /* high bits */
      }
      tu_act(x, TU_OP_FREE);
      bad++;
    } else if (c < 99) {
      tu_act(x, TU_OP_FLUSH);
    } else { /* the actor exits (its cache parked) and a new one starts */
      tu_actor_stop(x);
      tu_actor_start(x, a);
      exits++;
    }
  }
  for (int i = 0; i < NACT; i++)
    tu_act(&w[i], TU_OP_FLUSH);
  for (int i = 0; i < NACT; i++)
    tu_act(&w[i], TU_OP_FLUSH); /* drains */
  for (int i = 0; i < NACT; i++)
    tu_actor_stop(&w[i]);
  /* every parked cache adopted by a thread of its own and drained (a
   * remote free refused by the owner's drain counts there) */
  tu_actor_t *d = calloc((size_t)exits + NACT, sizeof *d);
  assert_non_null(d);
  for (int i = 0; i < exits + NACT; i++) {
    tu_actor_start(&d[i], a);
    tu_act(&d[i], TU_OP_FLUSH);
  }
  for (int i = 0; i < exits + NACT; i++)
    tu_actor_stop(&d[i]);
  free(d);
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(a, &st));
  fprintf(stderr, "    %llu bad frees, misuse %llu, live %d (model) %llu\n",
          (unsigned long long)bad, (unsigned long long)st.misuse_count, nlive,
          (unsigned long long)st.live_count);
  assert_int_equal(st.misuse_count, bad);
  assert_int_equal(st.live_count, (uint64_t)nlive);
  nnmem_allocator_destroy(a);
  free(w);
  free(m);
}

static void test_model_seeds(void **state) {
  (void)state;
  const char *env = getenv("NNMEM_REVIEW3_SEEDS");
  int n = env ? atoi(env) : 6;
  for (int i = 0; i < n; i++) {
    uint64_t seed = 0x5eed0000ull + (uint64_t)i * 0x9e37ull;
    model_run(seed, i % 3 == 2 ? 64 : i % 3 == 1 ? 2 : 8, i % 2);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reentrant_alloc_during_flush),
      cmocka_unit_test(test_reentrant_free_during_flush),
      cmocka_unit_test(test_reentrant_alloc_at_thread_exit),
      cmocka_unit_test(test_queued_second_free_span_retaken),
      cmocka_unit_test(test_model_seeds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

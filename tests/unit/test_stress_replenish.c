/* test_stress_replenish.c - four threads allocate and free blocks of one
 * fixed pool while it refills itself in the background (the pool's own
 * thread; then a caller's executor thread through the submit hook). Every
 * block carries a pattern derived from its address and thread, checked
 * before it is freed, so two live blocks handed out twice would be caught.
 * Afterwards: the pool's checker, allocation counts against the threads'
 * own tallies, and every chunk accounted for (backend requests = refills +
 * allocations that found the pool empty). Fixed seeds, printed. Label
 * `stress` (run under ThreadSanitizer by `make test`). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

enum { THREADS = 4, LIVE = 1500, OPS = 60000, BLOCK = 128 };

typedef struct worker {
  nnmem_pool_t *pool;
  uint64_t seed, allocs, frees, bad;
  void *blk[LIVE];
} worker_t;

static void stamp(void *p, uint64_t tag) {
  uint64_t v = (uintptr_t)p * 0x9E3779B97F4A7C15ULL ^ tag;
  memcpy(p, &v, sizeof v);
  memcpy((char *)p + BLOCK - sizeof v, &v, sizeof v);
}

static int intact(const void *p, uint64_t tag) {
  uint64_t v = (uintptr_t)p * 0x9E3779B97F4A7C15ULL ^ tag, a, b;
  memcpy(&a, p, sizeof a);
  memcpy(&b, (const char *)p + BLOCK - sizeof b, sizeof b);
  return a == v && b == v;
}

static void *work(void *arg) {
  worker_t *w = arg;
  uint64_t rng = w->seed;
  int n = 0;
  for (int op = 0; op < OPS; op++) {
    /* bursts: grow towards LIVE, then shrink, so the pool keeps growing */
    int grow = (op / 3000) % 2 == 0;
    uint64_t r = tu_rand(&rng) % 100;
    if (n < LIVE && (n == 0 || r < (grow ? 80u : 30u))) {
      void *p = NULL;
      if (nnmem_pool_alloc(w->pool, BLOCK, 0, &p) != NNMEM_OK) {
        w->bad++;
        continue;
      }
      stamp(p, w->seed);
      w->blk[n++] = p;
      w->allocs++;
    } else {
      size_t k = (size_t)(tu_rand(&rng) % (uint64_t)n);
      void *p = w->blk[k];
      w->blk[k] = w->blk[--n];
      if (!intact(p, w->seed)) w->bad++;
      if (nnmem_pool_free(w->pool, p) != NNMEM_OK) w->bad++;
      w->frees++;
    }
  }
  while (n > 0) {
    void *p = w->blk[--n];
    if (!intact(p, w->seed) || nnmem_pool_free(w->pool, p) != NNMEM_OK)
      w->bad++;
    w->frees++;
  }
  return NULL;
}

/* A one-slot executor: a thread that runs submitted tasks in order. */
typedef struct executor {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  void (*task[8])(void *);
  void *arg[8];
  int head, count, stop;
  atomic_int ran;
  pthread_t thread;
} executor_t;

static void submit(void *user, void (*task)(void *), void *arg) {
  executor_t *e = user;
  pthread_mutex_lock(&e->mu);
  assert_true(e->count < 8);
  int i = (e->head + e->count++) % 8;
  e->task[i] = task;
  e->arg[i] = arg;
  pthread_cond_signal(&e->cv);
  pthread_mutex_unlock(&e->mu);
}

static void *executor_main(void *arg) {
  executor_t *e = arg;
  pthread_mutex_lock(&e->mu);
  for (;;) {
    while (!e->count && !e->stop)
      pthread_cond_wait(&e->cv, &e->mu);
    if (!e->count) break;
    void (*t)(void *) = e->task[e->head];
    void *a = e->arg[e->head];
    e->head = (e->head + 1) % 8;
    e->count--;
    pthread_mutex_unlock(&e->mu);
    t(a);
    atomic_fetch_add(&e->ran, 1);
    pthread_mutex_lock(&e->mu);
  }
  pthread_mutex_unlock(&e->mu);
  return NULL;
}

static void run(int use_executor) {
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_host_create(&b));
  executor_t ex = {.mu = PTHREAD_MUTEX_INITIALIZER,
                   .cv = PTHREAD_COND_INITIALIZER};
  if (use_executor)
    assert_int_equal(pthread_create(&ex.thread, NULL, executor_main, &ex), 0);
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  c.block_size = BLOCK;
  c.chunk_size = BLOCK * 64;
  c.replenish = 1;
  if (use_executor) {
    c.replenish_submit = submit;
    c.replenish_user = &ex;
  }
  nnmem_pool_t *pool = NULL;
  assert_ok(nnmem_pool_create(NNMEM_POOL_FIXED, &c, b, &pool));
  static worker_t w[THREADS];
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].pool = pool;
    w[i].seed = 0x5eed0000u + (uint64_t)i * 7919 + (uint64_t)use_executor;
    printf("replenish stress (%s): thread %d seed %llu\n",
           use_executor ? "executor" : "own thread", i,
           (unsigned long long)w[i].seed);
    assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  uint64_t allocs = 0, frees = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(w[i].bad, 0);
    allocs += w[i].allocs;
    frees += w[i].frees;
  }
  nnmem_diag_t d = {{0}};
  if (nnmem_pool_check(pool, &d) != NNMEM_OK) fail_msg("%s", d.message);
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(pool, &s));
  assert_int_equal(s.alloc_count, allocs);
  assert_int_equal(s.free_count, frees);
  assert_int_equal(s.live_count, 0);
  printf("  %llu allocations, %llu chunks: %llu refills, %llu empty hits\n",
         (unsigned long long)allocs, (unsigned long long)s.backend_allocs,
         (unsigned long long)s.refills, (unsigned long long)s.empty_hits);
  /* enough chunks for the most blocks ever live at once (kept till the
   * end: a fixed pool never returns a chunk) */
  uint64_t peak_blocks = s.allocated_bytes_peak / BLOCK;
  assert_true(peak_blocks > 64);
  assert_true(s.backend_allocs >= (peak_blocks + 63) / 64);
  /* reserved counts a chunk from the moment a refill asks for it */
  assert_true(s.reserved_bytes >= s.backend_allocs * 64 * BLOCK &&
              s.reserved_bytes <= (s.backend_allocs + 1) * 64 * BLOCK);
  /* each chunk came from one of the two paths (a refill still in flight
   * has not counted its chunk anywhere yet) */
  assert_int_equal(s.backend_allocs, s.refills + s.empty_hits);
  assert_int_equal(s.refill_failures, 0);
  nnmem_pool_destroy(pool); /* waits for a refill in flight */
  if (use_executor) {
    pthread_mutex_lock(&ex.mu);
    ex.stop = 1;
    pthread_cond_signal(&ex.cv);
    pthread_mutex_unlock(&ex.mu);
    pthread_join(ex.thread, NULL);
    assert_true(atomic_load(&ex.ran) > 0);
  }
  nnmem_backend_destroy(b);
}

/* The pool's own thread, one refill in isolation: 1 KiB blocks, chunks of
 * 64, watermark 10% = 6 blocks: the 59th allocation leaves 5 free and
 * wakes the thread, which takes one chunk (69 free >= 2 x 12); waited for
 * by polling the stats (bounded, 2 s). */
static void test_one_refill(void **state) {
  (void)state;
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_sim_create(NULL, &b));
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  c.block_size = 1024;
  c.chunk_size = 64 * 1024;
  c.replenish = 1;
  nnmem_pool_t *p = NULL;
  assert_ok(nnmem_pool_create(NNMEM_POOL_FIXED, &c, b, &p));
  void *v[59];
  for (int i = 0; i < 59; i++)
    assert_ok(nnmem_pool_alloc(p, 1024, 0, &v[i]));
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(p, &s));
  for (int i = 0; i < 20000 && s.refills == 0; i++) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
    assert_ok(nnmem_pool_stats(p, &s));
  }
  assert_int_equal(s.refills, 1);
  assert_int_equal(s.empty_hits, 1);
  assert_int_equal(s.free_bytes, 69 * 1024);
  nnmem_sim_counters_t sc;
  assert_ok(nnmem_backend_sim_counters(b, &sc));
  assert_int_equal(sc.requests, 2);
  nnmem_diag_t d = {{0}};
  if (nnmem_pool_check(p, &d) != NNMEM_OK) fail_msg("%s", d.message);
  nnmem_pool_destroy(p); /* joins the thread with blocks still live */
  nnmem_backend_destroy(b);
}

static void test_own_thread(void **state) {
  (void)state;
  run(0);
}

static void test_executor(void **state) {
  (void)state;
  run(1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_refill),
      cmocka_unit_test(test_own_thread),
      cmocka_unit_test(test_executor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

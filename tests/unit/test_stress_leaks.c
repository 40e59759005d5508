/* test_stress_leaks.c - leak records under threads (label stress: runs under
 * ThreadSanitizer in `make test-tsan`): sampled records enabled while four
 * threads allocate on one allocator (each goes on for STEPS steps after it
 * sees them on), each block freed by another thread
 * (the remote path), small and large sizes; then the records' checker
 * (the table, the filter and every page's marks against the records) and,
 * once every block is freed, no record left. Depth 0: no backtrace (the
 * unwinder's thread-exit crash under TSan is why test_leaks is not in the
 * TSan run; the unwinder is not what this test is about). Sizes come from
 * a fixed xorshift seed per thread (88 + thread). Then full records taken
 * and freed across four threads while a fifth copies them: the report
 * counts exactly the live blocks (test_full_records_cross_thread). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/allocator_internal.h"
#include "testutil.h"

enum { THREADS = 4, STEPS = 50000, SLOTS = 256 };

typedef struct shared {
  nnmem_allocator_t *a;
  _Atomic(void *) slot[THREADS][SLOTS];
  _Atomic int failed;  /* an allocation returned NULL (checked after join) */
  _Atomic int enabled; /* set once nnmem_allocator_leaks_enable returned */
  pthread_barrier_t start;
} shared_t;

typedef struct worker {
  shared_t *sh;
  int t;
} worker_t;

static void *work(void *arg) {
  worker_t *w = arg;
  shared_t *sh = w->sh;
  uint64_t s = 88 + (uint64_t)w->t;
  pthread_barrier_wait(&sh->start);
  /* STEPS steps after the records are seen on (however the threads and
   * the enabling thread are scheduled), any number before */
  for (int i = 0, after = 0; after < STEPS; i++) {
    after += atomic_load(&sh->enabled);
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    /* one in 64 past the thread caches' largest class (the pool) */
    size_t size = 16 + s % (i % 64 == 0 ? 200000u : 4000u);
    void *p = nnmem_alloc(sh->a, size);
    if (!p) atomic_store(&sh->failed, 1);
    /* into the next thread's slot: whatever was there is freed here */
    void *old = atomic_exchange(&sh->slot[(w->t + 1) % THREADS][s % SLOTS], p);
    if (old) nnmem_free(sh->a, old);
  }
  return NULL;
}

static void check(nnmem_allocator_t *a) {
  nnmem_diag_t d = {{0}};
  if (nnmem__allocator_leaks_check(a, &d) != NNMEM_OK)
    fail_msg("leak records check: %s", d.message);
}

static void test_enable_while_allocating(void **state) {
  (void)state;
  printf(
      "leaks stress: %d threads x %d steps after enabling, xorshift seeds "
      "88..%d\n",
      THREADS, STEPS, 88 + THREADS - 1);
  shared_t *sh = calloc(1, sizeof *sh);
  assert_non_null(sh);
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
  nnmem_leaks_config_t off;
  nnmem_leaks_config_init(&off);
  off.mode = NNMEM_LEAKS_OFF;
  cfg.leaks = &off;
  assert_ok(nnmem_allocator_create(&cfg, &sh->a));
  assert_int_equal(pthread_barrier_init(&sh->start, NULL, THREADS + 1), 0);
  pthread_t th[THREADS];
  worker_t w[THREADS];
  for (int t = 0; t < THREADS; t++) {
    w[t] = (worker_t){sh, t};
    assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
  }
  pthread_barrier_wait(&sh->start);
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  lc.mode = NNMEM_LEAKS_SAMPLED;
  lc.sample_bytes = 4096; /* many samples: most pages get marks */
  lc.depth = 0;
  assert_ok(nnmem_allocator_leaks_enable(sh->a, &lc));
  atomic_store(&sh->enabled, 1);
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  assert_int_equal(atomic_load(&sh->failed), 0);
  check(sh->a);
  nnmem_leaks_summary_t s;
  assert_ok(nnmem_allocator_leaks_summary(sh->a, &s));
  printf("live records after the run: %llu\n", (unsigned long long)s.records);
  assert_true(s.records > 0); /* the threads' caches were re-armed */
  for (int t = 0; t < THREADS; t++)
    for (int q = 0; q < SLOTS; q++) {
      void *p = atomic_load(&sh->slot[t][q]);
      if (p) nnmem_free(sh->a, p);
    }
  nnmem_allocator_thread_flush(sh->a);
  check(sh->a);
  assert_ok(nnmem_allocator_leaks_summary(sh->a, &s));
  assert_int_equal(s.records, 0);
  pthread_barrier_destroy(&sh->start);
  nnmem_allocator_destroy(sh->a);
  free(sh);
}

/* Full records (every block, depth 0) taken by four threads at once, each
 * block freed by another thread (the records' lock from every side), while
 * a fifth thread keeps copying the records (summaries and text reports:
 * the lock held for a whole copy). Afterwards the report must count
 * exactly the blocks still live, by number and by bytes (each block
 * carries its size in its first word), and the checker must pass. */
enum { FULL_STEPS = 100000, FULL_SLOTS = 256 };

typedef struct full_shared {
  nnmem_allocator_t *a;
  _Atomic(uint64_t *) slot[THREADS][FULL_SLOTS];
  _Atomic int failed;
  _Atomic int running; /* workers not yet done */
  pthread_barrier_t start;
} full_shared_t;

typedef struct full_worker {
  full_shared_t *sh;
  int t;
} full_worker_t;

static void *full_work(void *arg) {
  full_worker_t *w = arg;
  full_shared_t *sh = w->sh;
  uint64_t s = 1000 + (uint64_t)w->t;
  pthread_barrier_wait(&sh->start);
  for (int i = 0; i < FULL_STEPS; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    size_t size = 16 + s % (i % 64 == 0 ? 100000u : 2000u);
    uint64_t *p = nnmem_alloc(sh->a, size);
    if (!p) {
      atomic_store(&sh->failed, 1);
      continue;
    }
    p[0] = size;
    uint64_t *old = atomic_exchange(
        &sh->slot[(w->t + 1) % THREADS][(s >> 20) % FULL_SLOTS], p);
    if (old) nnmem_free(sh->a, old);
  }
  atomic_fetch_sub(&sh->running, 1);
  return NULL;
}

static void *full_reader(void *arg) {
  full_shared_t *sh = arg;
  pthread_barrier_wait(&sh->start);
  for (unsigned n = 0; atomic_load(&sh->running) > 0; n++) {
    nnmem_leaks_summary_t s;
    if (nnmem_allocator_leaks_summary(sh->a, &s) != NNMEM_OK)
      atomic_store(&sh->failed, 1);
    if (n % 16 == 0) {
      char *doc = NULL;
      size_t len = 0;
      if (nnmem_allocator_leaks_report(sh->a, NNMEM_LEAKS_TEXT, &doc, &len) !=
          NNMEM_OK)
        atomic_store(&sh->failed, 1);
      free(doc);
    }
  }
  return NULL;
}

static void test_full_records_cross_thread(void **state) {
  (void)state;
  printf(
      "leaks full: %d threads x %d steps, cross-thread frees, a reader "
      "copying the records, xorshift seeds 1000..%d\n",
      THREADS, FULL_STEPS, 1000 + THREADS - 1);
  full_shared_t *sh = calloc(1, sizeof *sh);
  assert_non_null(sh);
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  lc.mode = NNMEM_LEAKS_FULL;
  lc.depth = 0;
  cfg.leaks = &lc;
  assert_ok(nnmem_allocator_create(&cfg, &sh->a));
  atomic_store(&sh->running, THREADS);
  assert_int_equal(pthread_barrier_init(&sh->start, NULL, THREADS + 1), 0);
  pthread_t th[THREADS], rd;
  full_worker_t w[THREADS];
  for (int t = 0; t < THREADS; t++) {
    w[t] = (full_worker_t){sh, t};
    assert_int_equal(pthread_create(&th[t], NULL, full_work, &w[t]), 0);
  }
  assert_int_equal(pthread_create(&rd, NULL, full_reader, sh), 0);
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  pthread_join(rd, NULL);
  assert_int_equal(atomic_load(&sh->failed), 0);
  check(sh->a);
  uint64_t live = 0, bytes = 0;
  for (int t = 0; t < THREADS; t++)
    for (int q = 0; q < FULL_SLOTS; q++) {
      uint64_t *p = atomic_load(&sh->slot[t][q]);
      if (p) live++, bytes += p[0];
    }
  nnmem_leaks_summary_t s;
  assert_ok(nnmem_allocator_leaks_summary(sh->a, &s));
  printf("live blocks %llu (%llu bytes); records %llu (%llu bytes)\n",
         (unsigned long long)live, (unsigned long long)bytes,
         (unsigned long long)s.records, (unsigned long long)s.bytes);
  assert_int_equal(s.records, live);
  assert_int_equal(s.bytes, bytes);
  assert_int_equal(s.est_blocks, live); /* full: every block, p = 1 */
  for (int t = 0; t < THREADS; t++)
    for (int q = 0; q < FULL_SLOTS; q++) {
      void *p = atomic_load(&sh->slot[t][q]);
      if (p) nnmem_free(sh->a, p);
    }
  check(sh->a);
  assert_ok(nnmem_allocator_leaks_summary(sh->a, &s));
  assert_int_equal(s.records, 0);
  pthread_barrier_destroy(&sh->start);
  nnmem_allocator_destroy(sh->a);
  free(sh);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_records_cross_thread),
      cmocka_unit_test(test_enable_while_allocating),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

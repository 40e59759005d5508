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
 * counts exactly the live blocks (test_full_records_cross_thread). Last,
 * threads that wait for the records' lock while another holds it for a
 * long time must sleep, not spin (test_waiters_sleep), and the lock under
 * contention keeps exact counts (test_lock_contention). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/allocator_internal.h"
#include "runtime/leaks_internal.h"
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

/* The records' lock held for HOLD_MS by one thread (the checker's
 * callback, which runs under the lock, sleeps) while WAITERS threads each
 * store WAIT_RECS records (full mode, depth 0). The holder sleeps only
 * once every waiter has said it is about to take the lock, so each waits
 * ~HOLD_MS. A waiter that sleeps in the kernel uses well under a
 * millisecond of CPU time in that wait; the earlier spinlock's waiters
 * (64 spins, then sched_yield in a loop) used their whole share of a CPU:
 * with both waiters on the 2-CPU VM ~HOLD_MS each, and still > 60 ms each
 * at 10% of a CPU. Then the records count exactly what was stored. */
enum { WAITERS = 2, HOLD_MS = 600, WAIT_RECS = 1000, MAX_WAIT_CPU_MS = 25 };

typedef struct hold {
  nnmem__leaks_t *lk;
  _Atomic int calling; /* waiters about to take the lock */
  _Atomic int holding; /* the holder is in its callback, under the lock */
  double cpu_ms[WAITERS], wall_ms[WAITERS];
} hold_t;

typedef struct hold_arg {
  hold_t *h;
  int t;
} hold_arg_t;

static double clock_ms(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static int hold_each(void *ctx, uintptr_t ptr, int marked) {
  hold_t *h = ctx;
  (void)ptr, (void)marked;
  if (atomic_exchange(&h->holding, 1)) return 0; /* the first record only */
  while (atomic_load(&h->calling) < WAITERS)
    sleep_ms(1);
  sleep_ms(HOLD_MS);
  return 0;
}

static void *hold_thread(void *arg) {
  hold_t *h = arg;
  nnmem_diag_t d = {{0}};
  return nnmem__leaks_check(h->lk, hold_each, h, &d) == NNMEM_OK ? NULL : h;
}

static void *wait_thread(void *arg) {
  hold_arg_t *a = arg;
  hold_t *h = a->h;
  while (!atomic_load(&h->holding))
    sleep_ms(1);
  double c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID), t0 = clock_ms(CLOCK_MONOTONIC);
  atomic_fetch_add(&h->calling, 1);
  for (int i = 0; i < WAIT_RECS; i++) {
    uintptr_t p = 0x10000000u + (uintptr_t)a->t * 0x1000000u + (uintptr_t)i * 64;
    nnmem__leaks_record(h->lk, (void *)p, 64 + (size_t)a->t, __FILE__, __LINE__,
                        NULL, NULL, 0);
  }
  h->cpu_ms[a->t] = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
  h->wall_ms[a->t] = clock_ms(CLOCK_MONOTONIC) - t0;
  return NULL;
}

static void test_waiters_sleep(void **state) {
  (void)state;
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  lc.mode = NNMEM_LEAKS_FULL;
  lc.depth = 0;
  hold_t *h = calloc(1, sizeof *h);
  assert_non_null(h);
  assert_ok(nnmem__leaks_create(&lc, &h->lk));
  assert_int_equal(
      nnmem__leaks_record(h->lk, (void *)(uintptr_t)0x1000, 8, "x", 1, NULL,
                          NULL, 0),
      1);
  pthread_t holder, th[WAITERS];
  hold_arg_t a[WAITERS];
  assert_int_equal(pthread_create(&holder, NULL, hold_thread, h), 0);
  for (int t = 0; t < WAITERS; t++) {
    a[t] = (hold_arg_t){h, t};
    assert_int_equal(pthread_create(&th[t], NULL, wait_thread, &a[t]), 0);
  }
  void *ret = h;
  assert_int_equal(pthread_join(holder, &ret), 0);
  assert_null(ret); /* the checker passed */
  for (int t = 0; t < WAITERS; t++)
    assert_int_equal(pthread_join(th[t], NULL), 0);
  for (int t = 0; t < WAITERS; t++) {
    printf("waiter %d: %.1f ms waiting and recording, %.2f ms of CPU\n", t,
           h->wall_ms[t], h->cpu_ms[t]);
    assert_true(h->wall_ms[t] >= HOLD_MS / 2); /* it did wait */
    assert_true(h->cpu_ms[t] < MAX_WAIT_CPU_MS);
  }
  nnmem_leaks_summary_t s = {0};
  nnmem__leaks_summary(h->lk, &s);
  assert_int_equal(s.records, 1 + WAITERS * WAIT_RECS);
  uint64_t bytes = 8;
  for (int t = 0; t < WAITERS; t++)
    bytes += WAIT_RECS * (64 + (uint64_t)t);
  assert_int_equal(s.bytes, bytes);
  nnmem_diag_t d = {{0}};
  assert_ok(nnmem__leaks_check(h->lk, NULL, NULL, &d));
  nnmem__leaks_destroy(h->lk);
  free(h);
}

/* The lock under contention, without the allocator: LOCK_THREADS threads
 * each store LOCK_RECS records (full, depth 0) at addresses of their own
 * and remove every other one, while one thread copies the records again
 * and again (summaries: the lock held for a whole copy, so recorders do
 * sleep). A give that missed a sleeper would leave it asleep (the run
 * would hang until the waits time out: 1 ms each without membarrier,
 * never with it); a lost update would show in the counts, which must be
 * exact: LOCK_RECS / 2 records per thread, their bytes. */
enum { LOCK_THREADS = 4, LOCK_RECS = 20000 };

typedef struct lock_run {
  nnmem__leaks_t *lk;
  _Atomic int running;
  int t;
} lock_run_t;

static void *lock_worker(void *arg) {
  lock_run_t *r = arg;
  uintptr_t base = 0x40000000u + (uintptr_t)r->t * 0x10000000u;
  for (int i = 0; i < LOCK_RECS; i++) {
    nnmem__leaks_record(r->lk, (void *)(base + (uintptr_t)i * 32),
                        (size_t)(1 + r->t), NULL, 0, NULL, NULL, 0);
    if (i % 2)
      nnmem__leaks_on_free(r->lk, (void *)(base + (uintptr_t)(i - 1) * 32),
                           NULL);
  }
  return NULL;
}

static void *lock_reader(void *arg) {
  lock_run_t *r = arg;
  while (atomic_load(&r->running)) {
    nnmem_leaks_summary_t s = {0};
    nnmem__leaks_summary(r->lk, &s);
  }
  return NULL;
}

static void test_lock_contention(void **state) {
  (void)state;
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  lc.mode = NNMEM_LEAKS_FULL;
  lc.depth = 0;
  nnmem__leaks_t *lk = NULL;
  assert_ok(nnmem__leaks_create(&lc, &lk));
  lock_run_t run[LOCK_THREADS + 1];
  pthread_t th[LOCK_THREADS + 1];
  for (int t = 0; t <= LOCK_THREADS; t++) {
    run[t].lk = lk;
    run[t].t = t;
    atomic_init(&run[t].running, 1);
  }
  assert_int_equal(pthread_create(&th[LOCK_THREADS], NULL, lock_reader,
                                  &run[LOCK_THREADS]),
                   0);
  for (int t = 0; t < LOCK_THREADS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, lock_worker, &run[t]), 0);
  for (int t = 0; t < LOCK_THREADS; t++)
    assert_int_equal(pthread_join(th[t], NULL), 0);
  atomic_store(&run[LOCK_THREADS].running, 0);
  assert_int_equal(pthread_join(th[LOCK_THREADS], NULL), 0);
  nnmem_leaks_summary_t s = {0};
  nnmem__leaks_summary(lk, &s);
  uint64_t bytes = 0;
  for (int t = 0; t < LOCK_THREADS; t++)
    bytes += (uint64_t)(LOCK_RECS / 2) * (uint64_t)(1 + t);
  printf("lock contention: %llu records, %llu bytes (expected %d, %llu)\n",
         (unsigned long long)s.records, (unsigned long long)s.bytes,
         LOCK_THREADS * LOCK_RECS / 2, (unsigned long long)bytes);
  assert_int_equal(s.records, LOCK_THREADS * LOCK_RECS / 2);
  assert_int_equal(s.bytes, bytes);
  nnmem_diag_t d = {{0}};
  assert_ok(nnmem__leaks_check(lk, NULL, NULL, &d));
  nnmem__leaks_destroy(lk);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_records_cross_thread),
      cmocka_unit_test(test_enable_while_allocating),
      cmocka_unit_test(test_waiters_sleep),
      cmocka_unit_test(test_lock_contention),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

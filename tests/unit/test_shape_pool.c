/* test_shape_pool.c - the dynamic-shape pool (NNMEM_POOL_SHAPE): one block
 * taken at creation and never a second one (backend counters), best fit
 * (the smallest fitting hole, checked by hand), coalescing back to one free
 * block, NOMEM past the block without a backend request, fault injection
 * on the block request (and on every later request: there is none),
 * config errors, and several threads sharing a thread-safe pool with
 * address-derived fill patterns checked before each free (fixed seeds,
 * printed). The generic kind tests (random, misuse, replay, mmap) run it
 * too (test_pool.c). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

static nnmem_backend_t *sim(int backed, uint64_t fail_at) {
  nnmem_sim_config_t c = {0};
  c.backed = backed;
  c.alignment = 256;
  c.fail_at = fail_at;
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_sim_create(&c, &b));
  return b;
}

static nnmem_pool_t *shape_pool(nnmem_backend_t *b, uint64_t block, int ts) {
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  c.chunk_size = block;
  c.alignment = 256;
  c.thread_safe = ts;
  nnmem_pool_t *p = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = nnmem_pool_create_diag(NNMEM_POOL_SHAPE, &c, b, &p, &d);
  if (st != NNMEM_OK) fail_msg("create: %s", d.message);
  return p;
}

static void check(nnmem_pool_t *p) {
  nnmem_diag_t d = {{0}};
  if (nnmem_pool_check(p, &d) != NNMEM_OK) fail_msg("%s", d.message);
}

static uint64_t backend_allocs(nnmem_backend_t *b) {
  nnmem_sim_counters_t c;
  assert_ok(nnmem_backend_sim_counters(b, &c));
  return c.requests - c.failed;
}

/* Block of 4608 B (granule 256): a 1024 | x 512 | c 1024 | y 512 | d 512 |
 * tail 1024. Free a and c (two 1024 holes) and d (merges with the tail:
 * 1536 at 3072): a 1200 B request (1280 with the granule) fits only the
 * 1536 hole; a 900 B one takes the lowest of the 1024 holes (a's). */
static void test_best_fit_layout(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(0, 0);
  nnmem_pool_t *p = shape_pool(b, 4608, 0);
  assert_int_equal(backend_allocs(b), 1); /* taken at creation */
  void *a, *x, *c, *y, *d, *e, *f;
  assert_ok(nnmem_pool_alloc(p, 1024, 0, &a));
  assert_ok(nnmem_pool_alloc(p, 512, 0, &x));
  assert_ok(nnmem_pool_alloc(p, 1024, 0, &c));
  assert_ok(nnmem_pool_alloc(p, 512, 0, &y));
  assert_ok(nnmem_pool_alloc(p, 512, 0, &d));
  char *base = a;
  assert_ptr_equal(x, base + 1024);
  assert_ptr_equal(c, base + 1536);
  assert_ptr_equal(y, base + 2560);
  assert_ptr_equal(d, base + 3072);
  assert_ok(nnmem_pool_free(p, a));
  assert_ok(nnmem_pool_free(p, c));
  assert_ok(nnmem_pool_free(p, d));
  check(p);
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(p, &s));
  assert_int_equal(s.largest_free, 1536);
  assert_ok(nnmem_pool_alloc(p, 1200, 0, &e)); /* only 1536 fits */
  assert_ptr_equal(e, base + 3072);
  assert_ok(nnmem_pool_alloc(p, 900, 0, &f)); /* 1024 holes: lowest first */
  assert_ptr_equal(f, base);
  assert_ok(nnmem_pool_stats(p, &s));
  assert_int_equal(s.reserved_bytes, 4608);
  assert_int_equal(s.free_bytes, 4608 - 512 - 512 - 1280 - 1024);
  assert_int_equal(s.largest_free, 1024); /* c's hole; 256 left at the end */
  /* past the largest hole or the block: NOMEM, no second backend request */
  void *g = NULL;
  assert_int_equal(nnmem_pool_alloc(p, 2048, 0, &g), NNMEM_ERR_NOMEM);
  assert_int_equal(nnmem_pool_alloc(p, 8192, 0, &g), NNMEM_ERR_NOMEM);
  assert_null(g);
  assert_int_equal(backend_allocs(b), 1);
  assert_ok(nnmem_pool_free(p, e));
  assert_ok(nnmem_pool_free(p, f));
  assert_ok(nnmem_pool_free(p, x));
  assert_ok(nnmem_pool_free(p, y));
  check(p);
  assert_ok(nnmem_pool_stats(p, &s)); /* all coalesced into one block */
  assert_int_equal(s.free_bytes, 4608);
  assert_int_equal(s.largest_free, 4608);
  assert_ok(nnmem_pool_alloc(p, 4608, 0, &g)); /* the whole block */
  assert_ptr_equal(g, base);
  assert_ok(nnmem_pool_free(p, g));
  assert_int_equal(backend_allocs(b), 1);
  nnmem_pool_destroy(p);
  nnmem_sim_counters_t sc;
  assert_ok(nnmem_backend_sim_counters(b, &sc));
  assert_int_equal(sc.live_bytes, 0);
  nnmem_backend_destroy(b);
}

static void test_config_and_faults(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(0, 1); /* the first request fails */
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  nnmem_pool_t *p = NULL;
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_pool_create_diag(NNMEM_POOL_SHAPE, &c, b, &p, &d),
                   NNMEM_ERR_INVALID); /* no block size */
  assert_non_null(strstr(d.message, "chunk_size"));
  c.chunk_size = 1 << 20;
  c.capacity = 4096;
  assert_int_equal(nnmem_pool_create_diag(NNMEM_POOL_SHAPE, &c, b, &p, &d),
                   NNMEM_ERR_INVALID); /* block over capacity */
  assert_non_null(strstr(d.message, "exceeds its capacity"));
  c.capacity = 0;
  assert_int_equal(nnmem_pool_create_diag(NNMEM_POOL_SHAPE, &c, b, &p, &d),
                   NNMEM_ERR_NOMEM); /* the block request fails */
  assert_null(p);
  assert_non_null(strstr(d.message, "refused the shape pool's block"));
  nnmem_sim_counters_t sc;
  assert_ok(nnmem_backend_sim_counters(b, &sc));
  assert_int_equal(sc.live_bytes, 0);
  assert_int_equal(sc.failed, 1);
  /* capacity alone sizes the block (rounded down to the granule) */
  c.chunk_size = 0;
  c.capacity = 10000;
  c.alignment = 256;
  assert_ok(nnmem_pool_create_diag(NNMEM_POOL_SHAPE, &c, b, &p, &d));
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(p, &s));
  assert_int_equal(s.reserved_bytes, 9984);
  /* faults armed after creation never fire: the pool asks nothing more */
  assert_ok(nnmem_backend_sim_fail_at(b, 1, 1));
  void *x[40] = {0};
  uint64_t rng = 7, ok = 0, nomem = 0;
  for (int i = 0; i < 400; i++) {
    int k = (int)(tu_rand(&rng) % 40);
    if (x[k]) {
      assert_ok(nnmem_pool_free(p, x[k]));
      x[k] = NULL;
    } else {
      nnmem_status_t st =
          nnmem_pool_alloc(p, 1 + tu_rand(&rng) % 2000, 0, &x[k]);
      if (st == NNMEM_OK)
        ok++;
      else if (st == NNMEM_ERR_NOMEM)
        nomem++;
      else
        fail_msg("seed 7 step %d: %s", i, nnmem_status_name(st));
    }
    check(p);
  }
  assert_true(ok > 0 && nomem > 0); /* the block filled up at times */
  assert_ok(nnmem_backend_sim_counters(b, &sc));
  assert_int_equal(sc.failed, 1); /* only the one at creation */
  nnmem_pool_destroy(p);
  assert_ok(nnmem_backend_sim_counters(b, &sc));
  assert_int_equal(sc.live_bytes, 0);
  nnmem_backend_destroy(b);
}

enum { THREADS = 4, SLOTS = 32, STEPS = 4000 };
static nnmem_pool_t *g_pool;
static atomic_int g_bad, g_nomem;

static void fill(void *p, size_t n) {
  uint64_t v = (uintptr_t)p * 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < n; i++)
    ((unsigned char *)p)[i] = (unsigned char)(v >> ((i & 7) * 8));
}

static int intact(const void *p, size_t n) {
  uint64_t v = (uintptr_t)p * 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)p)[i] != (unsigned char)(v >> ((i & 7) * 8)))
      return 0;
  return 1;
}

static void *worker(void *arg) {
  uint64_t rng = 1000 + (uint64_t)(uintptr_t)arg; /* seed 1000 + thread */
  void *ptr[SLOTS] = {0};
  size_t size[SLOTS] = {0};
  for (int step = 0; step < STEPS; step++) {
    int i = (int)(tu_rand(&rng) % SLOTS);
    if (ptr[i]) {
      if (!intact(ptr[i], size[i])) atomic_fetch_add(&g_bad, 1);
      if (nnmem_pool_free(g_pool, ptr[i]) != NNMEM_OK)
        atomic_fetch_add(&g_bad, 1);
      ptr[i] = NULL;
      continue;
    }
    size[i] = 1 + tu_rand(&rng) % 20000;
    nnmem_status_t st = nnmem_pool_alloc(g_pool, size[i], 0, &ptr[i]);
    if (st == NNMEM_ERR_NOMEM) {
      atomic_fetch_add(&g_nomem, 1);
      continue;
    }
    if (st != NNMEM_OK) atomic_fetch_add(&g_bad, 1);
    if (st == NNMEM_OK) fill(ptr[i], size[i]);
  }
  for (int i = 0; i < SLOTS; i++)
    if (ptr[i]) {
      if (!intact(ptr[i], size[i])) atomic_fetch_add(&g_bad, 1);
      (void)nnmem_pool_free(g_pool, ptr[i]);
    }
  return NULL;
}

/* 4 threads x 32 slots x up to 20 KB = 2.5 MB at most; the block is 1 MiB,
 * so the threads also race on a full block (NOMEM, counted). */
static void test_threads(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(1, 0);
  g_pool = shape_pool(b, 1 << 20, 1);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i),
                     0);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  if (atomic_load(&g_bad))
    fail_msg("seeds 1000..1003: %d overwritten or refused blocks",
             atomic_load(&g_bad));
  check(g_pool);
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(g_pool, &s));
  assert_int_equal(s.live_count, 0);
  assert_int_equal(s.free_bytes, 1 << 20);
  assert_int_equal(s.backend_allocs, 1);
  assert_int_equal(s.failed_count, (uint64_t)atomic_load(&g_nomem));
  assert_true(s.lock_acquisitions >= s.alloc_count + s.free_count);
  nnmem_pool_destroy(g_pool);
  nnmem_backend_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_best_fit_layout),
      cmocka_unit_test(test_config_and_faults),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

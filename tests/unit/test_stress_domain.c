/* test_stress_domain.c - two domain sets over one allocator, each driven by
 * its own thread, beside two threads that use the allocator's thread
 * caches directly. The owner of a small domain block is read from its page
 * (the page's tagged cache), so a set looks at pages that other threads
 * are writing: the test checks that this stays correct and race-free
 * (label `stress`: ThreadSanitizer in `make test`).
 *
 * Every thread first allocates KEEP small blocks it keeps live to the end
 * and publishes them; then, for OPS steps, a set thread allocates and frees
 * in its two domains (sizes up to 12 KiB: small blocks from the pages,
 * larger ones in the block table), tries to free its other domain's
 * blocks without a grant (must be NNMEM_ERR_DENIED) and to free blocks
 * published by the other threads (must be NNMEM_ERR_INVALID: another
 * set's or a thread cache's block is never this set's); a plain thread
 * allocates and frees through nnmem_alloc / nnmem_free. Afterwards every
 * refusal was the expected one, both sets pass their checker, and once
 * everything is freed the allocator holds no live block. Fixed seeds,
 * printed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

enum { THREADS = 4, KEEP = 64, OPS = 60000, SLOTS = 128 };

static nnmem_allocator_t *g_al;
static _Atomic(void *) g_pub[THREADS][KEEP]; /* long-lived, published */
static atomic_int g_ready;

typedef struct worker {
  int id;
  uint64_t seed;
  uint64_t probes, invalid, cross, denied, bad;
  nnmem_domain_set_t *set;
  void *keep[KEEP];
} worker_t;

static void publish(worker_t *w) {
  for (int k = 0; k < KEEP; k++)
    atomic_store_explicit(&g_pub[w->id][k], w->keep[k], memory_order_release);
  atomic_fetch_add(&g_ready, 1);
  while (atomic_load(&g_ready) < THREADS) {
  }
}

static void *run_set(void *arg) {
  worker_t *w = arg;
  uint64_t rng = w->seed;
  nnmem_domain_set_config_t c;
  nnmem_domain_set_config_init(&c);
  c.allocator = g_al;
  nnmem_domain_t *dom[2] = {NULL, NULL};
  nnmem_domain_config_t dc;
  nnmem_domain_config_init(&dc);
  dc.quota = 64u << 20;
  if (nnmem_domain_set_create(&c, &w->set, NULL) != NNMEM_OK ||
      nnmem_domain_create(w->set, &dc, &dom[0], NULL) != NNMEM_OK ||
      nnmem_domain_create(w->set, &dc, &dom[1], NULL) != NNMEM_OK) {
    w->bad++;
    atomic_fetch_add(&g_ready, 1);
    return NULL;
  }
  for (int k = 0; k < KEEP; k++)
    if (nnmem_domain_alloc(dom[k & 1], 16 + (uint64_t)k * 64, 0, &w->keep[k],
                           NULL) != NNMEM_OK)
      w->bad++;
  publish(w);
  void *slot[SLOTS] = {0};
  int owner[SLOTS] = {0};
  for (int op = 0; op < OPS; op++) {
    int k = (int)(tu_rand(&rng) % SLOTS), t = (int)(tu_rand(&rng) % 2);
    uint64_t r = tu_rand(&rng) % 100;
    if (r < 10) { /* a block of another thread: never this set's */
      int other = (int)(tu_rand(&rng) % THREADS);
      if (other == w->id) continue;
      void *p = atomic_load_explicit(
          &g_pub[other][tu_rand(&rng) % KEEP], memory_order_acquire);
      w->probes++;
      w->invalid += nnmem_domain_free(dom[t], p, NULL) == NNMEM_ERR_INVALID;
      continue;
    }
    if (!slot[k]) {
      uint64_t size = 1 + tu_rand(&rng) % (12 << 10);
      if (nnmem_domain_alloc(dom[t], size, 0, &slot[k], NULL) != NNMEM_OK)
        w->bad++;
      owner[k] = t;
      memset(slot[k], (int)k, 8);
      continue;
    }
    if (r < 30 && t != owner[k]) { /* the other domain, no grant */
      w->cross++;
      w->denied +=
          nnmem_domain_free(dom[t], slot[k], NULL) == NNMEM_ERR_DENIED;
      continue;
    }
    if (nnmem_domain_free(dom[owner[k]], slot[k], NULL) != NNMEM_OK) w->bad++;
    slot[k] = NULL;
  }
  for (int k = 0; k < SLOTS; k++)
    if (slot[k] && nnmem_domain_free(dom[owner[k]], slot[k], NULL) != NNMEM_OK)
      w->bad++;
  return NULL;
}

static void *run_plain(void *arg) {
  worker_t *w = arg;
  uint64_t rng = w->seed;
  for (int k = 0; k < KEEP; k++)
    if (!(w->keep[k] = nnmem_alloc(g_al, 16 + (size_t)k * 64))) w->bad++;
  publish(w);
  void *slot[SLOTS] = {0};
  for (int op = 0; op < OPS; op++) {
    int k = (int)(tu_rand(&rng) % SLOTS);
    if (slot[k]) {
      nnmem_free(g_al, slot[k]);
      slot[k] = NULL;
    } else if (!(slot[k] = nnmem_alloc(g_al, 1 + tu_rand(&rng) % 8192))) {
      w->bad++;
    }
  }
  for (int k = 0; k < SLOTS; k++)
    nnmem_free(g_al, slot[k]);
  return NULL;
}

static void test_two_sets(void **state) {
  (void)state;
  assert_ok(nnmem_allocator_create(NULL, &g_al));
  worker_t w[THREADS];
  pthread_t th[THREADS];
  memset(w, 0, sizeof w);
  for (int i = 0; i < THREADS; i++) {
    w[i].id = i;
    w[i].seed = 20261201 + (uint64_t)i;
    printf("thread %d (%s): seed %llu\n", i, i < 2 ? "domain set" : "plain",
           (unsigned long long)w[i].seed);
    assert_int_equal(
        pthread_create(&th[i], NULL, i < 2 ? run_set : run_plain, &w[i]), 0);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    printf("set %d: %llu foreign frees refused of %llu, %llu cross-domain "
           "frees denied of %llu\n",
           i, (unsigned long long)w[i].invalid,
           (unsigned long long)w[i].probes, (unsigned long long)w[i].denied,
           (unsigned long long)w[i].cross);
    assert_int_equal(w[i].bad, 0);
    assert_true(w[i].probes > 1000 && w[i].cross > 1000); /* driven */
    assert_int_equal(w[i].invalid, w[i].probes);
    assert_int_equal(w[i].denied, w[i].cross);
    nnmem_diag_t d = {{0}};
    if (nnmem_domain_set_check(w[i].set, &d) != NNMEM_OK)
      fail_msg("set %d: %s", i, d.message);
    nnmem_domain_set_counters_t sc;
    assert_ok(nnmem_domain_set_counters(w[i].set, &sc));
    assert_int_equal(sc.live_blocks, KEEP); /* the kept blocks */
    nnmem_domain_set_destroy(w[i].set);     /* frees them */
  }
  for (int i = 2; i < THREADS; i++) {
    assert_int_equal(w[i].bad, 0);
    for (int k = 0; k < KEEP; k++)
      nnmem_free(g_al, w[i].keep[k]);
  }
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(g_al, &st));
  assert_int_equal(st.live_count, 0);
  nnmem_allocator_destroy(g_al);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_two_sets)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

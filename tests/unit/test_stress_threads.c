/* test_stress_threads.c - several threads allocate random sizes with random
 * lifetimes from one allocator and hand a share of their blocks to other
 * threads to free (cross-thread frees). Every block is filled with a
 * pattern derived from its address and checked before it is freed, so any
 * overlap between live blocks is caught (with decommit_spans: a purge of
 * a live block's pages would show). Bounded: about 1.5 s of work.
 * A second test runs overlapping generations of short-lived threads whose
 * blocks outlive them (frees racing with thread exit and cache adoption)
 * while a monitor thread reads the statistics.
 * A third test races threads on the block state machine: pairs of
 * acquire/release on blocks held by the main thread (holder counts exact
 * afterwards), then every thread releasing every block once (exactly one
 * last releaser per block) and recycling it (exactly one succeeds).
 * A fourth frees the same blocks from several threads at once (racing
 * double frees): exactly one free of each succeeds, the rest are refused;
 * a fifth has the blocks' owner race them too (each block freed once).
 * Label `stress`; `make test` also runs it under ThreadSanitizer. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

enum { THREADS = 4, SLOTS = 256, MAILBOX = 64 };

typedef struct mailbox { /* blocks handed to a thread for freeing */
  pthread_mutex_t lock;
  void *blk[MAILBOX];
  size_t size[MAILBOX];
  int n;
} mailbox_t;

static nnmem_allocator_t *g_alloc;
static mailbox_t g_box[THREADS];
static atomic_int g_bad;
static double g_seconds = 1.5;

static void fill(void *p, size_t n) {
  uint64_t v = (uintptr_t)p * 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < n; i++)
    ((unsigned char *)p)[i] = (unsigned char)(v >> ((i & 7) * 8));
}

static void check_and_free(void *p, size_t n) {
  uint64_t v = (uintptr_t)p * 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < n; i++)
    if (((unsigned char *)p)[i] != (unsigned char)(v >> ((i & 7) * 8))) {
      atomic_fetch_add(&g_bad, 1);
      break;
    }
  nnmem_free(g_alloc, p);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t rand_size(uint64_t *rng) {
  uint64_t r = tu_rand(rng);
  if (r % 64 == 0) /* spans of several units, and the shared pool */
    return 1 + (r >> 8) % (256 << 10);
  return 1 + (r >> 8) % 2048;
}

static void drain_box(int self) {
  mailbox_t *m = &g_box[self];
  pthread_mutex_lock(&m->lock);
  for (int i = 0; i < m->n; i++)
    check_and_free(m->blk[i], m->size[i]);
  m->n = 0;
  pthread_mutex_unlock(&m->lock);
}

static int post(int to, void *p, size_t n) {
  mailbox_t *m = &g_box[to];
  int ok = 0;
  pthread_mutex_lock(&m->lock);
  if (m->n < MAILBOX) {
    m->blk[m->n] = p;
    m->size[m->n++] = n;
    ok = 1;
  }
  pthread_mutex_unlock(&m->lock);
  return ok;
}

static void *worker(void *arg) {
  int self = (int)(intptr_t)arg;
  uint64_t rng = 0x1234567ULL * (uint64_t)(self + 1);
  void *blk[SLOTS] = {0};
  size_t size[SLOTS] = {0};
  double end = now() + g_seconds;
  for (unsigned long step = 0;; step++) {
    if ((step & 1023) == 0) {
      drain_box(self);
      if (now() > end) break;
    }
    int i = (int)(tu_rand(&rng) % SLOTS);
    if (!blk[i]) {
      size[i] = rand_size(&rng);
      blk[i] = nnmem_alloc(g_alloc, size[i]);
      if (!blk[i]) {
        atomic_fetch_add(&g_bad, 1);
        continue;
      }
      fill(blk[i], size[i]);
    } else if (tu_rand(&rng) % 4 == 0 &&
               post((self + 1 + (int)(tu_rand(&rng) % (THREADS - 1))) % THREADS,
                    blk[i], size[i])) {
      blk[i] = NULL; /* another thread frees it */
    } else {
      check_and_free(blk[i], size[i]);
      blk[i] = NULL;
    }
  }
  for (int i = 0; i < SLOTS; i++)
    if (blk[i]) check_and_free(blk[i], size[i]);
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  /* the malloc front's decommit_spans: emptied spans given back and idle
   * free blocks purged while other threads free into the spans */
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
  cfg.decommit_spans = 1;
  assert_ok(nnmem_allocator_create(&cfg, &g_alloc));
  for (int t = 0; t < THREADS; t++)
    pthread_mutex_init(&g_box[t].lock, NULL);
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t),
                     0);
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  for (int t = 0; t < THREADS; t++)
    drain_box(t);
  if (atomic_load(&g_bad)) fail_msg("%d corrupted blocks", atomic_load(&g_bad));
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(g_alloc, &st));
  assert_int_equal(st.live_count, 0);
  assert_true(st.cache_hits > 0);
  assert_true(st.lock_acquisitions > 0);
  for (int t = 0; t < THREADS; t++)
    pthread_mutex_destroy(&g_box[t].lock);
  nnmem_allocator_destroy(g_alloc);
}

/* Short-lived threads in overlapping generations: each frees blocks that
 * earlier threads (often exited: their caches parked or adopted by a new
 * thread) left in a shared box, allocates blocks it leaves there, and
 * exits. A monitor reads the statistics meanwhile: counters of different
 * caches are read at different instants, yet live_count must never wrap
 * below zero. */
enum { GENS = 12, GEN_THREADS = 3, ORPHANS = 512, GEN_STEPS = 4000 };
static struct {
  pthread_mutex_t lock;
  void *blk[ORPHANS];
  size_t size[ORPHANS];
} g_orph = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}};
static atomic_int g_done;

static void *short_lived(void *arg) {
  uint64_t rng = 0xABCDEF01ULL + (uint64_t)(intptr_t)arg * 7919;
  for (int s = 0; s < GEN_STEPS; s++) {
    int k = (int)(tu_rand(&rng) % ORPHANS);
    pthread_mutex_lock(&g_orph.lock);
    void *p = g_orph.blk[k];
    size_t n = g_orph.size[k];
    g_orph.blk[k] = NULL;
    pthread_mutex_unlock(&g_orph.lock);
    if (p) check_and_free(p, n); /* often a block of an exited thread */
    n = 1 + tu_rand(&rng) % 4096;
    if (!(p = nnmem_alloc(g_alloc, n))) {
      atomic_fetch_add(&g_bad, 1);
      continue;
    }
    fill(p, n);
    pthread_mutex_lock(&g_orph.lock);
    int put = !g_orph.blk[k];
    if (put) {
      g_orph.blk[k] = p;
      g_orph.size[k] = n;
    }
    pthread_mutex_unlock(&g_orph.lock);
    if (!put) check_and_free(p, n);
  }
  return NULL; /* leaves its blocks in the box */
}

static atomic_int g_wrapped;

/* A snapshot may over- or under-count the blocks in flight (caches are read
 * one after the other), but never by 2^40: that is a counter wrapped below
 * zero. */
static void *monitor(void *arg) {
  (void)arg;
  while (!atomic_load(&g_done)) {
    nnmem_stats_t st;
    if (nnmem_allocator_stats(g_alloc, &st) != NNMEM_OK ||
        st.live_count > (uint64_t)1 << 40 ||
        st.requested_bytes > (uint64_t)1 << 40)
      atomic_fetch_add(&g_wrapped, 1);
  }
  return NULL;
}

static void test_thread_generations(void **state) {
  (void)state;
  atomic_store(&g_bad, 0);
  atomic_store(&g_done, 0);
  assert_ok(nnmem_allocator_create(NULL, &g_alloc));
  pthread_t mon, th[2][GEN_THREADS];
  assert_int_equal(pthread_create(&mon, NULL, monitor, NULL), 0);
  for (int g = 0; g <= GENS; g++) { /* generation g starts, g - 1 ends */
    if (g < GENS)
      for (int t = 0; t < GEN_THREADS; t++)
        assert_int_equal(pthread_create(&th[g % 2][t], NULL, short_lived,
                                        (void *)(intptr_t)(g * 16 + t)),
                         0);
    if (g > 0)
      for (int t = 0; t < GEN_THREADS; t++)
        pthread_join(th[(g - 1) % 2][t], NULL);
  }
  atomic_store(&g_done, 1);
  pthread_join(mon, NULL);
  for (int k = 0; k < ORPHANS; k++)
    if (g_orph.blk[k]) check_and_free(g_orph.blk[k], g_orph.size[k]);
  if (atomic_load(&g_bad)) fail_msg("%d corrupted blocks", atomic_load(&g_bad));
  if (atomic_load(&g_wrapped))
    fail_msg("%d statistics snapshots wrapped below zero",
             atomic_load(&g_wrapped));
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(g_alloc, &st));
  assert_int_equal(st.live_count, 0);
  assert_int_equal(st.requested_bytes, 0);
  assert_int_equal(st.misuse_count, 0);
  nnmem_allocator_destroy(g_alloc);
}

enum { BLOCKS = 64, PAIRS = 20000 };
static nnmem_block_table_t *g_blocks;
static atomic_int g_lasts, g_recycled, g_refused;

static void *block_pairs(void *arg) {
  uint64_t rng = 1000 + (uint64_t)(uintptr_t)arg;
  for (int k = 0; k < PAIRS; k++) {
    size_t i = (size_t)(tu_rand(&rng) % BLOCKS);
    int last = 1;
    if (nnmem_block_acquire(g_blocks, i) != NNMEM_OK ||
        nnmem_block_release(g_blocks, i, &last) != NNMEM_OK || last)
      atomic_fetch_add(&g_bad, 1);
  }
  return NULL;
}

static void *block_release_all(void *arg) {
  (void)arg;
  for (size_t i = 0; i < BLOCKS; i++) {
    int last = 0;
    if (nnmem_block_release(g_blocks, i, &last) != NNMEM_OK)
      atomic_fetch_add(&g_bad, 1);
    atomic_fetch_add(&g_lasts, last);
  }
  for (size_t i = 0; i < BLOCKS; i++) {
    nnmem_status_t s = nnmem_block_recycle(g_blocks, i);
    if (s == NNMEM_OK)
      atomic_fetch_add(&g_recycled, 1);
    else if (s == NNMEM_ERR_STATE)
      atomic_fetch_add(&g_refused, 1);
  }
  return NULL;
}

static void test_block_states(void **state) {
  (void)state;
  pthread_t th[THREADS];
  atomic_store(&g_bad, 0);
  assert_ok(nnmem_block_table_create(BLOCKS, &g_blocks));
  for (size_t i = 0; i < BLOCKS; i++)
    assert_ok(nnmem_block_acquire(g_blocks, i));
  for (uintptr_t t = 0; t < THREADS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, block_pairs, (void *)t), 0);
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  assert_int_equal(atomic_load(&g_bad), 0);
  for (size_t i = 0; i < BLOCKS; i++) {
    uint32_t h;
    assert_ok(nnmem_block_get(g_blocks, i, NULL, &h, NULL));
    assert_int_equal(h, 1); /* the main thread's hold, nothing lost */
  }
  nnmem_block_counters_t c;
  assert_ok(nnmem_block_table_counters(g_blocks, &c));
  assert_int_equal(c.transitions, BLOCKS + 2ULL * PAIRS * THREADS);
  /* THREADS holders each; every thread releases every block once */
  for (size_t i = 0; i < BLOCKS; i++)
    for (int k = 1; k < THREADS; k++)
      assert_ok(nnmem_block_acquire(g_blocks, i));
  for (uintptr_t t = 0; t < THREADS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, block_release_all, (void *)t),
                     0);
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  assert_int_equal(atomic_load(&g_bad), 0);
  assert_int_equal(atomic_load(&g_lasts), BLOCKS);
  assert_int_equal(atomic_load(&g_recycled), BLOCKS);
  assert_int_equal(atomic_load(&g_refused), BLOCKS * (THREADS - 1));
  assert_ok(nnmem_block_table_counters(g_blocks, &c));
  assert_int_equal(c.illegal, BLOCKS * (THREADS - 1));
  assert_ok(nnmem_block_table_check(g_blocks, NULL));
  nnmem_block_table_destroy(g_blocks);
}

/* Double frees racing: THREADS threads (none of them the blocks' owner)
 * free the same RACE blocks at once, in shifted orders. Each block's rem
 * bit is taken with an atomic or: exactly one free of each block succeeds,
 * every other is refused (counted as misuse); the owner's drain then puts
 * each block back once, so the next 2 x RACE allocations of the class are
 * all distinct (a block pushed twice would come back twice). */
enum { RACE = 2000 };
static void *g_race[RACE];
static atomic_int g_race_ok, g_race_go;

static void *race_free(void *arg) {
  int shift = (int)(uintptr_t)arg * (RACE / THREADS);
  while (!atomic_load(&g_race_go)) {
  }
  for (int k = 0; k < RACE; k++)
    if (nnmem_allocator_free(g_alloc, g_race[(k + shift) % RACE]) == NNMEM_OK)
      atomic_fetch_add(&g_race_ok, 1);
  return NULL;
}

static int race_cmp(const void *x, const void *y) {
  uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;
  return (a > b) - (a < b);
}

/* After a race: the next 2 x RACE allocations are distinct (a block on a
 * free list twice would come back twice), and freeing them adds no misuse
 * to the RACE x (THREADS - 1) refused frees. */
static void check_freed_once(void) {
  static void *again[2 * RACE];
  for (int i = 0; i < 2 * RACE; i++)
    assert_non_null(again[i] = nnmem_alloc(g_alloc, 48));
  qsort(again, 2 * RACE, sizeof again[0], race_cmp);
  for (int i = 1; i < 2 * RACE; i++)
    assert_true(again[i] != again[i - 1]);
  for (int i = 0; i < 2 * RACE; i++)
    nnmem_free(g_alloc, again[i]);
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(g_alloc, &st));
  assert_int_equal(st.misuse_count, (uint64_t)RACE * (THREADS - 1));
  assert_int_equal(st.live_count, 0);
}

/* A new allocator with RACE live blocks of the main thread, the race's
 * counters at zero. */
static void race_setup(void) {
  assert_ok(nnmem_allocator_create(NULL, &g_alloc));
  for (int i = 0; i < RACE; i++)
    assert_non_null(g_race[i] = nnmem_alloc(g_alloc, 48));
  atomic_store(&g_race_ok, 0);
  atomic_store(&g_race_go, 0);
}

static void test_racing_double_free(void **state) {
  (void)state;
  race_setup();
  pthread_t th[THREADS];
  for (uintptr_t t = 0; t < THREADS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, race_free, (void *)t), 0);
  atomic_store(&g_race_go, 1);
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  assert_int_equal(atomic_load(&g_race_ok), RACE);
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(g_alloc, &st));
  assert_int_equal(st.misuse_count, (uint64_t)RACE * (THREADS - 1));
  nnmem_allocator_thread_flush(g_alloc); /* drains the remote stack */
  check_freed_once();
  nnmem_allocator_destroy(g_alloc);
}

/* An owner's frees racing other threads' frees of the same blocks: the
 * main thread (the owner) and THREADS - 1 others free the same RACE
 * blocks at once. Whichever way each race goes (a free refused at once,
 * or the owner's tag overwriting a remote free's, refused at the owner's
 * drain), each block is freed once: every free but one per block is
 * counted as misuse, no block is live, and the next 2 x RACE allocations
 * are distinct (a block on the free list twice would come back twice). */
static void test_racing_owner_free(void **state) {
  (void)state;
  race_setup();
  pthread_t th[THREADS];
  for (uintptr_t t = 1; t < THREADS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, race_free, (void *)t), 0);
  atomic_store(&g_race_go, 1);
  (void)race_free((void *)0); /* the owner's frees */
  for (int t = 1; t < THREADS; t++)
    pthread_join(th[t], NULL);
  nnmem_allocator_thread_flush(g_alloc); /* the drain refuses stale ones */
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(g_alloc, &st));
  assert_int_equal(st.misuse_count, (uint64_t)RACE * (THREADS - 1));
  assert_true(atomic_load(&g_race_ok) >= RACE);
  assert_int_equal(st.live_count, 0);
  check_freed_once();
  nnmem_allocator_destroy(g_alloc);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads),
                                     cmocka_unit_test(test_thread_generations),
                                     cmocka_unit_test(test_block_states),
                                     cmocka_unit_test(test_racing_double_free),
                                     cmocka_unit_test(test_racing_owner_free)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

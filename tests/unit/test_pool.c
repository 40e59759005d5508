/* test_pool.c - every pool kind: hand-computed layouts and statistics,
 * randomized sequences with the invariant walker after every operation and
 * an address-derived fill pattern checked before each free (fixed seeds,
 * printed on failure), misuse detection, a fault-injection sweep over the
 * backend requests, stats renderings and trace replay. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "testutil.h"

static const nnmem_pool_kind_t kinds[] = {
    NNMEM_POOL_TIERED,    NNMEM_POOL_TLSF,  NNMEM_POOL_BEST_FIT,
    NNMEM_POOL_FIRST_FIT, NNMEM_POOL_BUDDY, NNMEM_POOL_SLAB,
    NNMEM_POOL_FIXED,     NNMEM_POOL_SHAPE};
#define N_KINDS (sizeof kinds / sizeof *kinds)

static nnmem_backend_t *sim(int backed, uint64_t align) {
  nnmem_sim_config_t c = {0};
  c.backed = backed;
  c.alignment = align;
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_sim_create(&c, &b));
  return b;
}

static void check(nnmem_pool_t *p, uint64_t seed, int step) {
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = nnmem_pool_check(p, &d);
  if (st != NNMEM_OK)
    fail_msg("pool %s seed %llu step %d: %s", nnmem_pool_name(p),
             (unsigned long long)seed, step, d.message);
}

static nnmem_pool_t *make_pool(nnmem_pool_kind_t k, nnmem_backend_t *b,
                               uint64_t chunk) {
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  c.chunk_size = chunk;
  if (k == NNMEM_POOL_FIXED) c.block_size = 3000;
  if (k == NNMEM_POOL_SHAPE) c.chunk_size = 32 << 20; /* the one block */
  if (k == NNMEM_POOL_TIERED) {
    c.small_max = 4096; /* small thresholds so every tier is exercised */
    c.large_min = 64 << 10;
  }
  if (k == NNMEM_POOL_SLAB) c.small_max = 16 << 10;
  nnmem_pool_t *p = NULL;
  nnmem_diag_t d;
  assert_ok(nnmem_pool_create_diag(k, &c, b, &p, &d));
  return p;
}

static void test_kind_names(void **state) {
  (void)state;
  for (size_t i = 0; i < N_KINDS; i++) {
    nnmem_pool_kind_t k;
    assert_ok(nnmem_pool_kind_parse(nnmem_pool_kind_name(kinds[i]), &k));
    assert_int_equal(k, kinds[i]);
  }
  nnmem_pool_kind_t k;
  assert_int_equal(nnmem_pool_kind_parse("nope", &k), NNMEM_ERR_NOT_FOUND);
}

/* TLSF, granule 256, chunk 4096: exact addresses and byte counts. */
static void test_tlsf_layout(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(0, 256);
  nnmem_pool_t *p = make_pool(NNMEM_POOL_TLSF, b, 4096);
  void *a, *c, *e;
  assert_ok(nnmem_pool_alloc(p, 1000, 0, &a)); /* 1024 at base */
  assert_ok(nnmem_pool_alloc(p, 1000, 0, &c)); /* 1024 at base + 1024 */
  assert_int_equal((uintptr_t)c - (uintptr_t)a, 1024);
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(p, &s));
  assert_int_equal(s.requested_bytes, 2000);
  assert_int_equal(s.allocated_bytes, 2048);
  assert_int_equal(s.reserved_bytes, 4096);
  assert_int_equal(s.free_bytes, 2048);
  assert_int_equal(s.largest_free, 2048);
  assert_ok(nnmem_pool_free(p, a));
  assert_ok(nnmem_pool_stats(p, &s));
  assert_int_equal(s.free_bytes, 3072); /* [0,1024) and [2048,4096) */
  assert_int_equal(s.largest_free, 2048);
  assert_true(s.fragmentation > 0.333 && s.fragmentation < 0.334);
  /* aligned allocation splits the leading gap off */
  assert_ok(nnmem_pool_alloc(p, 256, 2048, &e));
  assert_int_equal((uintptr_t)e % 2048, 0);
  check(p, 0, 0);
  assert_ok(nnmem_pool_free(p, c));
  assert_ok(nnmem_pool_free(p, e));
  assert_ok(nnmem_pool_stats(p, &s)); /* coalesced and released */
  assert_int_equal(s.reserved_bytes, 0);
  assert_int_equal(s.reserved_bytes_peak, 4096);
  assert_int_equal(s.backend_frees, 1);
  nnmem_pool_destroy(p);
  nnmem_backend_destroy(b);
}

/* small_max 4 KiB, large_min 64 KiB: 100 B -> a 64 KiB slab of the 256 B
 * class; 5000 B -> the TLSF tier (chunk = small_max, so 5120 exactly);
 * 100000 B -> its own region of 100096 B (device alignment 256). */
static void test_tiered_routing(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(0, 256);
  nnmem_pool_t *p = make_pool(NNMEM_POOL_TIERED, b, 0);
  void *s1, *m1, *l1;
  nnmem_stats_t st;
  assert_ok(nnmem_pool_alloc(p, 100, 0, &s1));
  assert_ok(nnmem_pool_stats(p, &st));
  assert_int_equal(st.reserved_bytes, 65536);
  assert_int_equal(st.allocated_bytes, 256);
  assert_ok(nnmem_pool_alloc(p, 5000, 0, &m1));
  assert_ok(nnmem_pool_stats(p, &st));
  assert_int_equal(st.reserved_bytes, 65536 + 5120);
  assert_ok(nnmem_pool_alloc(p, 100000, 0, &l1));
  assert_ok(nnmem_pool_stats(p, &st));
  assert_int_equal(st.reserved_bytes, 65536 + 5120 + 100096);
  assert_int_equal(st.allocated_bytes, 256 + 5120 + 100096);
  assert_int_equal(st.backend_allocs, 3);
  check(p, 0, 0);
  assert_ok(nnmem_pool_free(p, l1));
  assert_ok(nnmem_pool_free(p, m1));
  assert_ok(nnmem_pool_free(p, s1));
  assert_ok(nnmem_pool_stats(p, &st));
  assert_int_equal(st.reserved_bytes, 0);
  assert_int_equal(st.reserved_bytes_peak, 65536 + 5120 + 100096);
  nnmem_pool_destroy(p);
  nnmem_backend_destroy(b);
}

/* Chunk 8192, granule 256: a 2048 | b 256 | c 1024 | d 256 | free tail;
 * after freeing a and c, a 1024 B request goes to c's hole (offset 2304)
 * under best fit and TLSF (exact list) and to a's hole (offset 0) under
 * first fit. */
static void test_fit_policies(void **state) {
  (void)state;
  const nnmem_pool_kind_t k[3] = {NNMEM_POOL_BEST_FIT, NNMEM_POOL_TLSF,
                                  NNMEM_POOL_FIRST_FIT};
  const uintptr_t want[3] = {2304, 2304, 0};
  for (int i = 0; i < 3; i++) {
    nnmem_backend_t *b = sim(0, 256);
    nnmem_pool_t *p = make_pool(k[i], b, 8192);
    void *a, *bb, *c, *d, *x;
    assert_ok(nnmem_pool_alloc(p, 2048, 0, &a));
    assert_ok(nnmem_pool_alloc(p, 256, 0, &bb));
    assert_ok(nnmem_pool_alloc(p, 1024, 0, &c));
    assert_ok(nnmem_pool_alloc(p, 256, 0, &d));
    assert_int_equal((uintptr_t)d - (uintptr_t)a, 3328);
    assert_ok(nnmem_pool_free(p, a));
    assert_ok(nnmem_pool_free(p, c));
    assert_ok(nnmem_pool_alloc(p, 1000, 0, &x));
    if ((uintptr_t)x - (uintptr_t)a != want[i])
      fail_msg("%s placed at offset %lu, want %lu", nnmem_pool_kind_name(k[i]),
               (unsigned long)((uintptr_t)x - (uintptr_t)a),
               (unsigned long)want[i]);
    check(p, 0, i);
    nnmem_stats_t st;
    assert_ok(nnmem_pool_stats(p, &st));
    assert_int_equal(st.free_bytes, 8192 - 256 - 256 - 1024);
    assert_int_equal(st.largest_free, 4608); /* the tail [3584, 8192) */
    nnmem_pool_destroy(p);
    nnmem_backend_destroy(b);
  }
}

static void test_split_threshold(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(0, 256);
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  c.chunk_size = 4096;
  c.split_threshold = 512;
  nnmem_pool_t *p = NULL;
  assert_ok(nnmem_pool_create(NNMEM_POOL_TLSF, &c, b, &p));
  void *a;
  uint64_t u;
  assert_ok(nnmem_pool_alloc(p, 3800, 0, &a)); /* rest 256 < 512: no split */
  assert_ok(nnmem_pool_usable_size(p, a, &u));
  assert_int_equal(u, 3840); /* 3800 rounded to the 256 B granule */
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(p, &s));
  assert_int_equal(s.allocated_bytes, 4096);
  assert_ok(nnmem_pool_free(p, a));
  nnmem_pool_destroy(p);
  nnmem_backend_destroy(b);
}

static void test_buddy_layout(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(0, 256);
  nnmem_pool_t *p = make_pool(NNMEM_POOL_BUDDY, b, 4096);
  void *x, *y, *z;
  assert_ok(nnmem_pool_alloc(p, 300, 0, &x));  /* order 1: 512 */
  assert_ok(nnmem_pool_alloc(p, 1000, 0, &y)); /* order 2: 1024 */
  assert_int_equal((uintptr_t)y - (uintptr_t)x, 1024);
  assert_ok(nnmem_pool_alloc(p, 5000, 0, &z)); /* above the chunk: direct */
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(p, &s));
  assert_int_equal(s.allocated_bytes, 512 + 1024 + 5120);
  assert_int_equal(s.reserved_bytes, 4096 + 5120);
  assert_int_equal(s.free_bytes, 512 + 2048);
  assert_int_equal(s.largest_free, 2048);
  check(p, 0, 0);
  assert_ok(nnmem_pool_free(p, x));
  assert_ok(nnmem_pool_free(p, y));
  assert_ok(nnmem_pool_free(p, z));
  assert_ok(nnmem_pool_stats(p, &s));
  assert_int_equal(s.reserved_bytes, 0);
  nnmem_pool_destroy(p);
  nnmem_backend_destroy(b);
}

static void test_fixed_watermark(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(0, 64);
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  c.block_size = 64;
  c.chunk_size = 4 * 64;
  c.low_watermark = 2;
  nnmem_pool_t *p = NULL;
  assert_ok(nnmem_pool_create(NNMEM_POOL_FIXED, &c, b, &p));
  void *a[3], *big;
  for (int i = 0; i < 3; i++)
    assert_ok(nnmem_pool_alloc(p, 64, 0, &a[i]));
  /* LIFO from the first chunk, then a second chunk at the low mark */
  assert_int_equal((uintptr_t)a[1] - (uintptr_t)a[0], 64);
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(p, &s));
  assert_int_equal(s.backend_allocs, 2);
  assert_int_equal(s.reserved_bytes, 512);
  assert_int_equal(nnmem_pool_alloc(p, 65, 0, &big), NNMEM_ERR_INVALID);
  assert_ok(nnmem_pool_free(p, a[1]));
  void *again;
  assert_ok(nnmem_pool_alloc(p, 10, 0, &again));
  assert_ptr_equal(again, a[1]); /* LIFO */
  check(p, 0, 0);
  nnmem_pool_destroy(p);
  c.block_size = 0;
  nnmem_diag_t d;
  assert_int_equal(nnmem_pool_create_diag(NNMEM_POOL_FIXED, &c, b, &p, &d),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "block_size"));
  nnmem_backend_destroy(b);
}

static void fill(void *p, uint64_t n) {
  uint64_t v = (uintptr_t)p * 0x9E3779B97F4A7C15ULL;
  unsigned char *c = p;
  for (uint64_t i = 0; i < n; i++)
    c[i] = (unsigned char)(v >> ((i & 7) * 8));
}

static void verify_fill(void *p, uint64_t n, uint64_t seed) {
  uint64_t v = (uintptr_t)p * 0x9E3779B97F4A7C15ULL;
  unsigned char *c = p;
  for (uint64_t i = 0; i < n; i++)
    if (c[i] != (unsigned char)(v >> ((i & 7) * 8)))
      fail_msg("seed %llu: block %p byte %llu overwritten (overlap)",
               (unsigned long long)seed, p, (unsigned long long)i);
}

enum { SLOTS = 64 };

static uint64_t rand_size(nnmem_pool_kind_t k, uint64_t *rng) {
  if (k == NNMEM_POOL_FIXED) return 1 + tu_rand(rng) % 3000;
  uint64_t r = tu_rand(rng);
  switch (r % 4) {
    case 0:
      return 1 + r % 64;
    case 1:
      return 1 + (r >> 8) % 4096;
    case 2:
      return 1 + (r >> 8) % 70000;
    default:
      return 1 + (r >> 8) % 300000;
  }
}

static void random_run(nnmem_pool_kind_t k, uint64_t seed, int steps) {
  nnmem_backend_t *b = sim(1, 128);
  nnmem_pool_t *p = make_pool(k, b, 128 << 10);
  void *ptr[SLOTS] = {0};
  uint64_t size[SLOTS] = {0};
  uint64_t rng = seed;
  for (int step = 0; step < steps; step++) {
    int i = (int)(tu_rand(&rng) % SLOTS);
    if (ptr[i]) {
      verify_fill(ptr[i], size[i], seed);
      assert_ok(nnmem_pool_free(p, ptr[i]));
      ptr[i] = NULL;
    } else {
      size[i] = rand_size(k, &rng);
      uint64_t align = (k == NNMEM_POOL_FIXED || tu_rand(&rng) % 4)
                           ? 0
                           : 1ULL << (tu_rand(&rng) % 13);
      nnmem_status_t st = nnmem_pool_alloc(p, size[i], align, &ptr[i]);
      if (st != NNMEM_OK)
        fail_msg("%s seed %llu step %d: alloc %llu align %llu -> %s",
                 nnmem_pool_kind_name(k), (unsigned long long)seed, step,
                 (unsigned long long)size[i], (unsigned long long)align,
                 nnmem_status_name(st));
      if (align) assert_int_equal((uintptr_t)ptr[i] % align, 0);
      fill(ptr[i], size[i]);
    }
    check(p, seed, step);
  }
  for (int i = 0; i < SLOTS; i++)
    if (ptr[i]) {
      verify_fill(ptr[i], size[i], seed);
      assert_ok(nnmem_pool_free(p, ptr[i]));
    }
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(p, &s));
  assert_int_equal(s.live_count, 0);
  assert_int_equal(s.requested_bytes, 0);
  assert_int_equal(s.allocated_bytes, 0);
  if (k == NNMEM_POOL_SHAPE) /* the block stays, entirely free */
    assert_int_equal(s.free_bytes, s.reserved_bytes);
  else if (k != NNMEM_POOL_FIXED)
    assert_int_equal(s.reserved_bytes, 0);
  nnmem_pool_destroy(p);
  nnmem_sim_counters_t c;
  assert_ok(nnmem_backend_sim_counters(b, &c));
  assert_int_equal(c.live_bytes, 0);
  nnmem_backend_destroy(b);
}

static void test_random_all_kinds(void **state) {
  (void)state;
  for (size_t i = 0; i < N_KINDS; i++)
    for (uint64_t seed = 1; seed <= 3; seed++)
      random_run(kinds[i], seed * 7919 + i, 1500);
}

static void test_misuse(void **state) {
  (void)state;
  for (size_t i = 0; i < N_KINDS; i++) {
    nnmem_backend_t *b = sim(1, 256);
    nnmem_pool_t *p = make_pool(kinds[i], b, 64 << 10);
    void *a = NULL, *x = NULL;
    static char foreign[512] __attribute__((aligned(256)));
    assert_ok(nnmem_pool_alloc(p, 100, 0, &a));
    assert_int_equal(nnmem_pool_alloc(p, 0, 0, &x), NNMEM_ERR_INVALID);
    assert_null(x);
    assert_int_equal(nnmem_pool_alloc(p, 1ULL << 60, 0, &x), NNMEM_ERR_INVALID);
    assert_int_equal(nnmem_pool_alloc(p, 10, 48, &x), NNMEM_ERR_INVALID);
    assert_int_equal(nnmem_pool_free(p, NULL), NNMEM_ERR_INVALID);
    assert_int_equal(nnmem_pool_free(p, foreign), NNMEM_ERR_INVALID);
    assert_int_equal(nnmem_pool_free(p, (char *)a + 8), NNMEM_ERR_INVALID);
    assert_int_equal(nnmem_pool_free(p, (char *)a + 256), NNMEM_ERR_INVALID);
    check(p, 0, 0);
    assert_ok(nnmem_pool_free(p, a));
    assert_int_equal(nnmem_pool_free(p, a), NNMEM_ERR_INVALID); /* double */
    check(p, 0, 1);
    nnmem_stats_t s;
    assert_ok(nnmem_pool_stats(p, &s));
    assert_int_equal(s.misuse_count, 4); /* NULL is not counted */
    assert_int_equal(s.live_count, 0);
    nnmem_pool_destroy(p);
    nnmem_backend_destroy(b);
  }
}

/* Fails backend request n for n = 1, 2, ...: every pool stays consistent,
 * every failure is a status, nothing leaks. */
static void fault_run(nnmem_pool_kind_t k, uint64_t n, int *saw_no_fault) {
  nnmem_backend_t *b = sim(1, 64);
  nnmem_pool_t *p = make_pool(k, b, 16 << 10);
  assert_ok(nnmem_backend_sim_fail_at(b, n, 0));
  void *ptr[24] = {0};
  uint64_t rng = 42, failures = 0;
  for (int step = 0; step < 200; step++) {
    int i = (int)(tu_rand(&rng) % 24);
    if (ptr[i]) {
      assert_ok(nnmem_pool_free(p, ptr[i]));
      ptr[i] = NULL;
    } else {
      nnmem_status_t st = nnmem_pool_alloc(p, rand_size(k, &rng), 0, &ptr[i]);
      if (st != NNMEM_OK) {
        assert_int_equal(st, NNMEM_ERR_NOMEM);
        assert_null(ptr[i]);
        failures++;
      }
    }
    check(p, n, step);
  }
  nnmem_sim_counters_t c;
  assert_ok(nnmem_backend_sim_counters(b, &c));
  if (c.failed == 0) *saw_no_fault = 1;
  assert_int_equal(failures, c.failed ? failures : 0);
  nnmem_pool_destroy(p); /* releases the live blocks' regions too */
  assert_ok(nnmem_backend_sim_counters(b, &c));
  assert_int_equal(c.live_bytes, 0);
  nnmem_backend_destroy(b);
}

static void test_fault_sweep(void **state) {
  (void)state;
  for (size_t i = 0; i < N_KINDS; i++) {
    int done = 0;
    for (uint64_t n = 1; n < 400 && !done; n++)
      fault_run(kinds[i], n, &done);
    if (!done)
      fail_msg("%s: sweep never passed the last request",
               nnmem_pool_kind_name(kinds[i]));
  }
}

static void test_capacity_and_thread_safe(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(0, 256);
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  c.capacity = 8192;
  c.chunk_size = 4096;
  c.thread_safe = 1;
  c.name = "cap0";
  c.latency_sample = 1;
  nnmem_pool_t *p = NULL;
  assert_ok(nnmem_pool_create(NNMEM_POOL_TLSF, &c, b, &p));
  void *a, *x, *y;
  assert_ok(nnmem_pool_alloc(p, 4096, 0, &a));
  assert_ok(nnmem_pool_alloc(p, 4096, 0, &x));
  assert_int_equal(nnmem_pool_alloc(p, 256, 0, &y), NNMEM_ERR_NOMEM);
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(p, &s));
  assert_string_equal(s.name, "cap0");
  assert_int_equal(s.failed_count, 1);
  assert_int_equal(s.lock_acquisitions, 4); /* 3 allocs + this snapshot */
  assert_int_equal(s.lock_contended, 0);
  assert_int_equal(s.latency_samples, 3);
  assert_true(nnmem_stats_latency_percentile(&s, 50) > 0);
  assert_ok(nnmem_pool_free(p, a));
  assert_ok(nnmem_pool_free(p, x));
  nnmem_pool_destroy(p);
  nnmem_backend_destroy(b);
}

/* Every line of a Prometheus text is a comment (# HELP / # TYPE, each
 * family once) or a sample of a family announced before it; the histogram
 * has its _sum and a _count equal to its +Inf bucket. (The CLI test
 * replay_prometheus.sh parses the text with prometheus_client too.) */
static void prometheus_lines_ok(const char *text) {
  char fam[64][96];
  int n_fam = 0;
  const char *line = text;
  int saw_sum = 0, saw_count = 0;
  unsigned long long inf = ~0ULL;
  while (*line) {
    const char *end = strchr(line, '\n');
    assert_non_null(end);
    char l[512];
    size_t len = (size_t)(end - line);
    assert_true(len < sizeof l);
    memcpy(l, line, len);
    l[len] = '\0';
    if (strncmp(l, "# TYPE ", 7) == 0) {
      char name[96];
      assert_int_equal(sscanf(l + 7, "%95s", name), 1);
      for (int i = 0; i < n_fam; i++)
        if (strcmp(fam[i], name) == 0) fail_msg("TYPE twice: %s", l);
      assert_true(n_fam < 64);
      strcpy(fam[n_fam++], name);
    } else if (l[0] != '#') {
      assert_true(n_fam > 0);
      const char *f = fam[n_fam - 1]; /* samples follow their family */
      if (strncmp(l, f, strlen(f)) != 0) fail_msg("stray sample: '%s'", l);
      const char *suffix = l + strlen(f);
      unsigned long long v = 0;
      const char *sp = strrchr(l, ' ');
      assert_non_null(sp);
      if (strcmp(f, "nnmem_pool_op_latency_ns") == 0) {
        assert_int_equal(sscanf(sp + 1, "%llu", &v), 1);
        if (strstr(suffix, "le=\"+Inf\"")) inf = v;
        if (strncmp(suffix, "_sum{", 5) == 0) saw_sum++;
        if (strncmp(suffix, "_count{", 7) == 0) {
          saw_count++;
          assert_true(v == inf);
        }
      } else {
        assert_true(suffix[0] == '{');
      }
    }
    line = end + 1;
  }
  assert_true(saw_sum > 0 && saw_sum == saw_count);
}

static void test_stats_format(void **state) {
  (void)state;
  nnmem_stats_t s[2];
  nnmem_stats_init(&s[0]);
  nnmem_stats_init(&s[1]);
  strcpy(s[0].name, "tlsf0");
  strcpy(s[1].name, "we\"ird");
  s[0].reserved_bytes = 1048576;
  s[0].alloc_count = 7;
  s[0].fragmentation = 0.25;
  s[0].latency_hist[4] = 2;
  s[0].latency_hist[NNMEM_STATS_LAT_BUCKETS - 1] = 1; /* >= 2^31 ns */
  s[0].latency_samples = 3;
  s[0].latency_sum_ns = 16 + 17 + 5000000000ULL;
  char buf[16384];
  size_t len = 0;
  assert_ok(nnmem_stats_format_prometheus(s, 2, buf, sizeof buf, &len));
  assert_int_equal(strlen(buf), len);
  assert_non_null(strstr(buf, "# TYPE nnmem_pool_reserved_bytes gauge\n"));
  assert_non_null(
      strstr(buf, "nnmem_pool_reserved_bytes{pool=\"tlsf0\"} 1048576\n"));
  assert_non_null(
      strstr(buf, "nnmem_pool_allocations_total{pool=\"tlsf0\"} 7\n"));
  assert_non_null(strstr(buf, "{pool=\"we\\\"ird\"}"));
  assert_non_null(
      strstr(buf, "nnmem_pool_fragmentation_ratio{pool=\"tlsf0\"} 0.25\n"));
  assert_non_null(strstr(
      buf, "nnmem_pool_op_latency_ns_bucket{pool=\"tlsf0\",le=\"32\"} 2\n"));
  /* the open-ended last bucket has no finite le; +Inf and _count hold it */
  assert_non_null(strstr(buf,
                         "nnmem_pool_op_latency_ns_bucket{pool=\"tlsf0\","
                         "le=\"2147483648\"} 2\n"));
  assert_null(strstr(buf, "le=\"4294967296\""));
  assert_non_null(strstr(
      buf, "nnmem_pool_op_latency_ns_bucket{pool=\"tlsf0\",le=\"+Inf\"} 3\n"));
  assert_non_null(
      strstr(buf, "nnmem_pool_op_latency_ns_sum{pool=\"tlsf0\"} 5000000033\n"));
  assert_non_null(
      strstr(buf, "nnmem_pool_op_latency_ns_count{pool=\"tlsf0\"} 3\n"));
  prometheus_lines_ok(buf);
  assert_ok(nnmem_stats_format_json(s, 2, buf, sizeof buf, &len));
  cJSON *j = cJSON_Parse(buf);
  assert_non_null(j);
  assert_int_equal(cJSON_GetArraySize(j), 2);
  cJSON *o = cJSON_GetArrayItem(j, 0);
  assert_string_equal(cJSON_GetObjectItem(o, "pool")->valuestring, "tlsf0");
  assert_true(cJSON_GetObjectItem(o, "reserved_bytes")->valuedouble == 1048576);
  assert_string_equal(
      cJSON_GetObjectItem(cJSON_GetArrayItem(j, 1), "pool")->valuestring,
      "we\"ird");
  cJSON_Delete(j);
  /* control characters in a name: escaped, never raw, in JSON */
  strcpy(s[1].name, "tab\there\x01");
  assert_ok(nnmem_stats_format_json(s, 2, buf, sizeof buf, &len));
  assert_non_null(strstr(buf, "\"tab\\there\\u0001\""));
  for (size_t i = 0; i + 1 < len; i++) /* only the pretty style's newlines */
    assert_true((unsigned char)buf[i] >= 0x20 || buf[i] == '\n');
  j = cJSON_Parse(buf);
  assert_non_null(j);
  assert_string_equal(
      cJSON_GetObjectItem(cJSON_GetArrayItem(j, 1), "pool")->valuestring,
      "tab\there\x01");
  cJSON_Delete(j);
  strcpy(s[1].name, "we\"ird");
  assert_ok(nnmem_stats_format_json(s, 2, buf, sizeof buf, &len));
  /* too small: the length needed comes back */
  char small[10];
  size_t need = 0;
  assert_int_equal(nnmem_stats_format_json(s, 2, small, sizeof small, &need),
                   NNMEM_ERR_OVERFLOW);
  assert_int_equal(need, len);
}

/* Buffers [first,last) size: live bytes peak at step 1 = 300 + 500. */
static void test_replay_small(void **state) {
  (void)state;
  nnmem_problem_t *pr = NULL;
  assert_ok(nnmem_problem_create(&pr));
  assert_ok(nnmem_problem_add(pr, "a", 300, 1, 0, 2, NULL));
  assert_ok(nnmem_problem_add(pr, "b", 500, 1, 1, 3, NULL));
  assert_ok(nnmem_problem_add(pr, "c", 700, 1, 2, 4, NULL)); /* a freed first */
  assert_ok(nnmem_problem_add(pr, "z", 0, 1, 0, 4, NULL));   /* skipped */
  for (size_t i = 0; i < N_KINDS; i++) {
    if (kinds[i] == NNMEM_POOL_FIXED) continue;
    nnmem_replay_result_t r;
    assert_ok(nnmem_pool_replay(pr, kinds[i], NULL, 256, &r, NULL));
    assert_int_equal(r.operations, 6);
    assert_int_equal(r.peak_live_bytes, 1200);
    assert_true(r.peak_reserved_bytes >= 1200);
    /* the stats of the measuring pass agree with the result */
    nnmem_replay_result_t r2;
    nnmem_stats_t st;
    assert_ok(nnmem_pool_replay_stats(pr, kinds[i], NULL, 256, &r2, &st, NULL));
    assert_int_equal(st.reserved_bytes_peak, r2.peak_reserved_bytes);
    assert_int_equal(st.alloc_count + st.free_count, r2.operations);
    assert_int_equal(st.backend_allocs, r2.backend_allocs);
    assert_int_equal(st.live_count, 0);
    /* the sum lies within the bucket edges of the samples it adds up */
    uint64_t hist = 0, lo = 0, hi = 0;
    for (int b = 0; b < NNMEM_STATS_LAT_BUCKETS; b++) {
      hist += st.latency_hist[b];
      lo += st.latency_hist[b] * (b ? 1ULL << b : 0);
      hi += st.latency_hist[b] * (2ULL << b);
    }
    assert_int_equal(hist, st.latency_samples);
    assert_true(lo <= st.latency_sum_ns && st.latency_sum_ns <= hi);
  }
  nnmem_problem_destroy(pr);
}

/* NNMEM_DEBUG builds fill fresh backed memory with 0xAA; any build works on
 * the mmap backend (huge pages when the kernel has them). */
static void test_debug_fill_and_mmap(void **state) {
  (void)state;
  nnmem_mmap_config_t mc = {sizeof mc, 1};
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_mmap_create(&mc, &b));
  for (size_t i = 0; i < N_KINDS; i++) {
    nnmem_pool_t *p = make_pool(kinds[i], b, 1 << 20);
    void *x = NULL;
    assert_ok(nnmem_pool_alloc(p, 2000, 0, &x));
    if (nnmem__debug)
      for (int k = 0; k < 2000; k++)
        assert_int_equal(((unsigned char *)x)[k], 0xAA);
    memset(x, 1, 2000);
    check(p, 0, 0);
    assert_ok(nnmem_pool_free(p, x));
    nnmem_pool_destroy(p);
  }
  nnmem_backend_destroy(b);
}

/* The replay order of a problem: frees before allocations at equal steps,
 * then by index; size-0 buffers and sub-buffers have no events; against
 * the order worked out by hand. */
static void test_trace_events(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "a", 64, 1, 2, 5, NULL)); /* 0 */
  assert_ok(nnmem_problem_add(p, "b", 32, 1, 0, 2, NULL)); /* 1 */
  assert_ok(nnmem_problem_add(p, "z", 0, 1, 1, 3, NULL));  /* 2: empty */
  assert_ok(nnmem_problem_add(p, "c", 16, 1, 2, 4, NULL)); /* 3 */
  assert_ok(nnmem_problem_add(p, "k", 8, 1, 2, 4, NULL));  /* 4: in a */
  assert_ok(nnmem_problem_set_parent(p, 4, 0, 0));
  nnmem_trace_event_t *ev = NULL;
  size_t n = 0;
  assert_ok(nnmem_trace_events(p, &ev, &n));
  const nnmem_trace_event_t want[] = {{0, 1, 1}, {2, 0, 1}, {2, 1, 0},
                                      {2, 1, 3}, {4, 0, 3}, {5, 0, 0}};
  assert_int_equal(n, 6);
  for (size_t k = 0; k < n; k++) {
    assert_int_equal(ev[k].time, want[k].time);
    assert_int_equal(ev[k].is_alloc, want[k].is_alloc);
    assert_int_equal(ev[k].index, want[k].index);
  }
  free(ev);
  assert_int_equal(nnmem_trace_events(NULL, &ev, &n), NNMEM_ERR_INVALID);
  nnmem_problem_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kind_names),
      cmocka_unit_test(test_tlsf_layout),
      cmocka_unit_test(test_tiered_routing),
      cmocka_unit_test(test_fit_policies),
      cmocka_unit_test(test_split_threshold),
      cmocka_unit_test(test_buddy_layout),
      cmocka_unit_test(test_fixed_watermark),
      cmocka_unit_test(test_random_all_kinds),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_fault_sweep),
      cmocka_unit_test(test_capacity_and_thread_safe),
      cmocka_unit_test(test_stats_format),
      cmocka_unit_test(test_replay_small),
      cmocka_unit_test(test_trace_events),
      cmocka_unit_test(test_debug_fill_and_mmap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_arena.c - binding plans to memory: addresses = base + offset,
 * buffers writable without overlap while live, several models sharing one
 * region (saving = sum of heights - max height), invalid plans refused
 * (a plan whose height does not hold its problem's buffers included),
 * backend failure reported without leaks, the planner's alignment kept in
 * every address (also over a backend that ignores the requested
 * alignment). Every plan is verified. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* a [0,2) 100 B, b [1,3) 200 B, c [2,4) 100 B: a and c can share. */
static nnmem_problem_t *small_problem(uint64_t scale) {
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "a", 100 * scale, 1, 0, 2, NULL));
  assert_ok(nnmem_problem_add(p, "b", 200 * scale, 1, 1, 3, NULL));
  assert_ok(nnmem_problem_add(p, "c", 100 * scale, 1, 2, 4, NULL));
  return p;
}

static void test_single(void **state) {
  (void)state;
  nnmem_problem_t *p = small_problem(1);
  nnmem_plan_t *pl = tu_plan_verified(p, NULL);
  assert_int_equal(nnmem_plan_height(pl), 300);
  nnmem_backend_t *host = NULL;
  assert_ok(nnmem_backend_host_create(&host));
  nnmem_arena_t *ar = NULL;
  assert_ok(nnmem_arena_create(p, pl, host, &ar, NULL));
  nnmem_arena_info_t info;
  nnmem_arena_info(ar, &info);
  assert_int_equal(info.size, 300);
  assert_int_equal(info.saving, 0);
  const uint64_t *off = nnmem_plan_offsets(pl);
  for (size_t i = 0; i < 3; i++) {
    void *addr;
    assert_ok(nnmem_arena_address(ar, 0, i, &addr));
    assert_ptr_equal(addr, (char *)info.base + off[i]);
    memset(addr, (int)i, nnmem_problem_buffers(p)[i].size);
  }
  void *x;
  assert_int_equal(nnmem_arena_address(ar, 0, 3, &x), NNMEM_ERR_NOT_FOUND);
  assert_int_equal(nnmem_arena_address(ar, 1, 0, &x), NNMEM_ERR_NOT_FOUND);
  nnmem_arena_destroy(ar);
  nnmem_backend_destroy(host);
  nnmem_plan_destroy(pl);
  nnmem_problem_destroy(p);
}

static void test_shared(void **state) {
  (void)state;
  nnmem_problem_t *p1 = small_problem(1), *p2 = small_problem(3);
  nnmem_plan_t *a = tu_plan_verified(p1, NULL), *b = tu_plan_verified(p2, NULL);
  nnmem_backend_t *dev = NULL;
  nnmem_sim_config_t sc = {0};
  sc.alignment = 512;
  assert_ok(nnmem_backend_sim_create(&sc, &dev));
  const nnmem_problem_t *pr[2] = {p1, p2};
  const nnmem_plan_t *pl[2] = {a, b};
  nnmem_arena_t *ar = NULL;
  assert_ok(nnmem_arena_create_shared(pr, pl, 2, dev, &ar, NULL));
  nnmem_arena_info_t info;
  nnmem_arena_info(ar, &info);
  assert_int_equal(info.models, 2);
  assert_int_equal(info.size, 900);
  assert_int_equal(info.sum_heights, 1200);
  assert_int_equal(info.saving, 300);
  assert_int_equal((uintptr_t)info.base % 512, 0);
  nnmem_sim_counters_t c;
  assert_ok(nnmem_backend_sim_counters(dev, &c));
  assert_int_equal(c.live_bytes, 1024); /* 900 rounded to the device */
  nnmem_arena_destroy(ar);
  assert_ok(nnmem_backend_sim_counters(dev, &c));
  assert_int_equal(c.live_bytes, 0);
  /* the device refuses: a status, nothing leaks */
  assert_ok(nnmem_backend_sim_fail_at(dev, 1, 0));
  nnmem_diag_t d;
  assert_int_equal(nnmem_arena_create_shared(pr, pl, 2, dev, &ar, &d),
                   NNMEM_ERR_NOMEM);
  assert_null(ar);
  nnmem_backend_destroy(dev);
  nnmem_plan_destroy(a);
  nnmem_plan_destroy(b);
  nnmem_problem_destroy(p1);
  nnmem_problem_destroy(p2);
}

static void test_invalid(void **state) {
  (void)state;
  nnmem_problem_t *p = small_problem(1);
  uint64_t bad[3] = {0, 50, 300}; /* a and b overlap while both live */
  nnmem_plan_t *pl = NULL;
  assert_ok(nnmem_plan_from_offsets(p, bad, &pl));
  nnmem_backend_t *host = NULL;
  assert_ok(nnmem_backend_host_create(&host));
  nnmem_arena_t *ar = NULL;
  nnmem_diag_t d;
  assert_int_equal(nnmem_arena_create(p, pl, host, &ar, &d),
                   NNMEM_ERR_CONFLICT);
  assert_null(ar);
  nnmem_problem_t *other = small_problem(1);
  assert_ok(nnmem_problem_add(other, "d", 8, 1, 0, 1, NULL));
  assert_int_equal(nnmem_arena_create(other, pl, host, &ar, &d),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "model 0"));
  assert_int_equal(nnmem_arena_create_shared(NULL, NULL, 0, host, &ar, &d),
                   NNMEM_ERR_INVALID);
  /* a valid plan of `p` (height 1200) paired with a problem whose buffer b
   * is 5,000 bytes: still no overlap, but b would end at byte 6,000 of a
   * 1,200-byte region */
  uint64_t far[3] = {0, 1000, 0};
  nnmem_plan_t *fp = NULL;
  assert_ok(nnmem_plan_from_offsets(p, far, &fp));
  assert_ok(nnmem_plan_verify(p, far, 0, 0, NULL, NULL));
  assert_int_equal(nnmem_plan_height(fp), 1200);
  nnmem_problem_t *big = NULL;
  assert_ok(nnmem_problem_create(&big));
  assert_ok(nnmem_problem_add(big, "a", 100, 1, 0, 2, NULL));
  assert_ok(nnmem_problem_add(big, "b", 5000, 1, 1, 3, NULL));
  assert_ok(nnmem_problem_add(big, "c", 100, 1, 2, 4, NULL));
  assert_int_equal(nnmem_arena_create(big, fp, host, &ar, &d),
                   NNMEM_ERR_INVALID);
  assert_null(ar);
  assert_non_null(strstr(d.message, "6000"));
  nnmem_problem_destroy(big);
  nnmem_plan_destroy(fp);
  nnmem_backend_destroy(host);
  nnmem_plan_destroy(pl);
  nnmem_problem_destroy(p);
  nnmem_problem_destroy(other);
}

/* Four buffers (one with its own 64 KiB alignment) planned at 4096 and
 * bound on `be`: every address is a multiple of 4096, the 64 KiB one of
 * 65536. Once every address was 256 mod 4096: the arena asked the backend
 * only for the buffers' own alignments, not the planner's. */
static void check_plan_alignment_kept(nnmem_backend_t *be) {
  nnmem_problem_t *p = small_problem(1);
  size_t big = 0;
  assert_ok(nnmem_problem_add(p, "d", 300, 65536, 1, 4, &big));
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.alignment = 4096;
  nnmem_plan_t *pl = tu_plan_verified(p, &cfg);
  assert_int_equal(nnmem_plan_alignment(pl), 65536);
  nnmem_arena_t *ar = NULL;
  assert_ok(nnmem_arena_create(p, pl, be, &ar, NULL));
  for (size_t i = 0; i < nnmem_problem_count(p); i++) {
    void *addr;
    assert_ok(nnmem_arena_address(ar, 0, i, &addr));
    assert_int_equal((uintptr_t)addr % 4096, 0);
    memset(addr, 0x5A, nnmem_problem_buffers(p)[i].size);
  }
  void *addr;
  assert_ok(nnmem_arena_address(ar, 0, big, &addr));
  assert_int_equal((uintptr_t)addr % 65536, 0);
  nnmem_arena_destroy(ar);
  nnmem_plan_destroy(pl);
  nnmem_problem_destroy(p);
}

/* A backend that hands out host memory 64 bytes past an aligned block,
 * whatever alignment it is asked for. */
static nnmem_status_t skew_alloc(void *ctx, uint64_t size, uint64_t align,
                                 void **out) {
  (void)ctx;
  (void)align;
  void *p = NULL;
  if (posix_memalign(&p, 4096, (size_t)size + 64) != 0) return NNMEM_ERR_NOMEM;
  *out = (char *)p + 64;
  return NNMEM_OK;
}

static nnmem_status_t skew_free(void *ctx, void *ptr, uint64_t size) {
  (void)ctx;
  (void)size;
  free((char *)ptr - 64);
  return NNMEM_OK;
}

static void test_plan_alignment(void **state) {
  (void)state;
  nnmem_backend_t *host = NULL;
  assert_ok(nnmem_backend_host_create(&host));
  check_plan_alignment_kept(host);
  nnmem_backend_destroy(host);
  nnmem_backend_t skew = {sizeof skew,
                          NNMEM_BACKEND_VERSION,
                          "skew",
                          NULL,
                          NNMEM_BACKEND_BACKED,
                          16,
                          skew_alloc,
                          skew_free,
                          NULL,
                          NULL,
                          NULL,
                          NULL};
  check_plan_alignment_kept(&skew);
}

/* Layout by hand: heights a 300, b 100, c 250, d 70, e 40; b and d run
 * together (group 1), c and e together (group 2), a alone. Alignment 64:
 * b 0, d 128 (100 up to 128), c 0, e 256; size = max(300, 198, 296) = 300;
 * sum 760. The checker accepts it and rejects overlapping, misaligned and
 * out-of-range bases (naming the models). */
static void test_layout(void **state) {
  (void)state;
  const uint64_t h[5] = {300, 100, 250, 70, 40};
  const uint32_t g[5] = {0, 1, 2, 1, 2};
  nnmem_arena_layout_config_t c;
  nnmem_arena_layout_config_init(&c);
  c.groups = g;
  c.alignment = 64;
  uint64_t base[5];
  nnmem_arena_layout_t lay;
  assert_ok(nnmem_arena_layout(h, 5, &c, base, &lay, NULL));
  assert_int_equal(base[0], 0);
  assert_int_equal(base[1], 0);
  assert_int_equal(base[2], 0);
  assert_int_equal(base[3], 128);
  assert_int_equal(base[4], 256);
  assert_int_equal(lay.size, 300);
  assert_int_equal(lay.sum_heights, 760);
  assert_int_equal(lay.saving, 460);
  assert_int_equal(lay.slots, 3);
  assert_ok(nnmem_arena_layout_check(h, 5, &c, base, lay.size, NULL));
  nnmem_diag_t d = {{0}};
  uint64_t bad[5] = {0, 0, 0, 64, 256}; /* d over b */
  assert_int_equal(nnmem_arena_layout_check(h, 5, &c, bad, 300, &d),
                   NNMEM_ERR_STATE);
  assert_non_null(strstr(d.message, "models 1 and 3 overlap"));
  bad[3] = 130; /* misaligned */
  assert_int_equal(nnmem_arena_layout_check(h, 5, &c, bad, 300, &d),
                   NNMEM_ERR_STATE);
  bad[3] = 256; /* 256 + 70 > 300 */
  assert_int_equal(nnmem_arena_layout_check(h, 5, &c, bad, 300, &d),
                   NNMEM_ERR_STATE);
  assert_non_null(strstr(d.message, "model 3"));
  /* every model alone: the size is the max height */
  assert_ok(nnmem_arena_layout(h, 5, NULL, base, &lay, NULL));
  assert_int_equal(lay.size, 300);
  assert_int_equal(lay.slots, 5);
  for (int i = 0; i < 5; i++)
    assert_int_equal(base[i], 0);
  /* bad input */
  assert_int_equal(nnmem_arena_layout(h, 0, NULL, base, &lay, NULL),
                   NNMEM_ERR_INVALID);
  c.alignment = 48;
  assert_int_equal(nnmem_arena_layout(h, 5, &c, base, &lay, NULL),
                   NNMEM_ERR_INVALID);
  const uint64_t huge[2] = {UINT64_MAX - 10, 100};
  const uint32_t both[2] = {1, 1};
  c.alignment = 0;
  c.groups = both;
  assert_int_equal(nnmem_arena_layout(huge, 2, &c, base, &lay, NULL),
                   NNMEM_ERR_OVERFLOW);
}

/* Random groups (seed printed): the layout passes its checker; the size
 * equals a brute-force value (max over groups of the group's sum when
 * alignment is 1, and max height for models alone). */
static void test_layout_random(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 200; seed++) {
    uint64_t rng = seed, h[12], base[12], want = 0, group_sum[4] = {0};
    uint32_t g[12];
    size_t n = 1 + tu_rand(&rng) % 12;
    for (size_t i = 0; i < n; i++) {
      h[i] = tu_rand(&rng) % 5000;
      g[i] = (uint32_t)(tu_rand(&rng) % 4);
      if (g[i])
        group_sum[g[i]] += h[i];
      else if (h[i] > want)
        want = h[i];
    }
    for (int k = 1; k < 4; k++)
      if (group_sum[k] > want) want = group_sum[k];
    nnmem_arena_layout_config_t c;
    nnmem_arena_layout_config_init(&c);
    c.groups = g;
    nnmem_arena_layout_t lay;
    nnmem_diag_t d = {{0}};
    assert_ok(nnmem_arena_layout(h, n, &c, base, &lay, NULL));
    if (lay.size != want)
      fail_msg("seed %llu: size %llu, brute force %llu",
               (unsigned long long)seed, (unsigned long long)lay.size,
               (unsigned long long)want);
    if (nnmem_arena_layout_check(h, n, &c, base, lay.size, &d) != NNMEM_OK)
      fail_msg("seed %llu: %s", (unsigned long long)seed, d.message);
  }
}

/* Two copies of the small problem run together, a third one alone: the
 * grouped arena is 600 B (plus alignment), the second model's addresses
 * start at base 300 (rounded up to the backend's alignment),
 * and writing every buffer of both concurrent models at the same step
 * corrupts nothing. */
static void test_grouped(void **state) {
  (void)state;
  nnmem_problem_t *p = small_problem(1);
  nnmem_plan_t *pl = tu_plan_verified(p, NULL);
  const nnmem_problem_t *probs[3] = {p, p, p};
  const nnmem_plan_t *plans[3] = {pl, pl, pl};
  const uint32_t g[3] = {7, 7, 0};
  nnmem_arena_layout_config_t c;
  nnmem_arena_layout_config_init(&c);
  c.groups = g;
  nnmem_backend_t *host = NULL;
  assert_ok(nnmem_backend_host_create(&host));
  nnmem_arena_t *ar = NULL;
  assert_ok(nnmem_arena_create_grouped(probs, plans, 3, &c, host, &ar, NULL));
  nnmem_arena_info_t info;
  nnmem_arena_info(ar, &info);
  uint64_t b0 = 1, b1 = 0, b2 = 1;
  assert_ok(nnmem_arena_model_base(ar, 0, &b0));
  assert_ok(nnmem_arena_model_base(ar, 1, &b1));
  assert_ok(nnmem_arena_model_base(ar, 2, &b2));
  assert_int_equal(b0, 0);
  assert_int_equal(b2, 0);
  /* 300 rounded up to the backend's alignment (host: 16 or 64) */
  assert_true(b1 >= 300 && b1 < 364);
  assert_int_equal(info.size, b1 + 300);
  assert_int_equal(info.sum_heights, 900);
  assert_int_equal(info.saving, 900 - info.size);
  assert_int_equal(nnmem_arena_model_base(ar, 3, &b1), NNMEM_ERR_NOT_FOUND);
  /* step 1: a and b of both concurrent models are live together */
  const nnmem_buffer_t *bf = nnmem_problem_buffers(p);
  for (size_t m = 0; m < 2; m++)
    for (size_t i = 0; i < 2; i++) {
      void *addr;
      assert_ok(nnmem_arena_address(ar, m, i, &addr));
      memset(addr, (int)(1 + m * 2 + i), bf[i].size);
    }
  for (size_t m = 0; m < 2; m++)
    for (size_t i = 0; i < 2; i++) {
      unsigned char *addr;
      assert_ok(nnmem_arena_address(ar, m, i, (void **)&addr));
      for (uint64_t k = 0; k < bf[i].size; k++)
        assert_int_equal(addr[k], 1 + m * 2 + i);
    }
  nnmem_arena_destroy(ar);
  nnmem_backend_destroy(host);
  nnmem_plan_destroy(pl);
  nnmem_problem_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_single),  cmocka_unit_test(test_shared),
      cmocka_unit_test(test_invalid), cmocka_unit_test(test_plan_alignment),
      cmocka_unit_test(test_layout),  cmocka_unit_test(test_layout_random),
      cmocka_unit_test(test_grouped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

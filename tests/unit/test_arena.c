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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_single),
      cmocka_unit_test(test_shared),
      cmocka_unit_test(test_invalid),
      cmocka_unit_test(test_plan_alignment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

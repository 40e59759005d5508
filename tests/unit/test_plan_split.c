/* test_plan_split.c - large problems placed in time parts (src/plan/split.c):
 * the parallel placement gives, offset for offset, the plan of one run over
 * its schedule (nnmem__split_schedule), whatever the number of threads
 * (NNMEM_PLAN_THREADS); valid plans; the fallback for problems that do not
 * split; the capacity limit. Problems are random with fixed, printed seeds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/place.h"
#include "testutil.h"

/* Above the split threshold (200,000 buffers), so two parts. */
#define N_SPLIT 230000u

static uint64_t xorshift(uint64_t *s) {
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

/* n buffers over n / 4 steps, lifetimes 1..256 steps, sizes 64 * 1..1024,
 * every 97th one aligned to 4096, every 89th one empty; `long_share` in
 * 1000ths live over the whole schedule. */
static nnmem_problem_t *random_problem(uint64_t seed, size_t n,
                                       unsigned long_share) {
  nnmem_problem_t *p = NULL;
  uint64_t rng = seed, steps = n / 4;
  print_message("seed %llu, %zu buffers\n", (unsigned long long)seed, n);
  assert_ok(nnmem_problem_create(&p));
  for (size_t i = 0; i < n; i++) {
    uint64_t first = xorshift(&rng) % steps;
    uint64_t last = first + 1 + xorshift(&rng) % 256;
    uint64_t size = 64 * (1 + xorshift(&rng) % 1024);
    if (xorshift(&rng) % 1000 < long_share) first = 0, last = steps + 256;
    if (i % 89 == 0) size = 0;
    assert_ok(nnmem_problem_add(p, NULL, size, i % 97 == 0 ? 4096 : 1, first,
                                last, NULL));
  }
  return p;
}

static nnmem_plan_t *plan_with_threads(const nnmem_problem_t *p,
                                       const char *threads,
                                       nnmem_strategy_t s) {
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.strategy = s;
  cfg.alignment = 64;
  assert_int_equal(setenv("NNMEM_PLAN_THREADS", threads, 1), 0);
  nnmem_plan_t *pl = tu_plan_verified(p, &cfg);
  unsetenv("NNMEM_PLAN_THREADS");
  return pl;
}

/* The plan is valid, no worse than a loose multiple of the lower bound,
 * and identical for 1, 2 and 3 threads. */
static void test_split_threads_agree(void **state) {
  (void)state;
  nnmem_problem_t *p = random_problem(20261130, N_SPLIT, 0);
  nnmem_plan_t *one = plan_with_threads(p, "1", NNMEM_STRATEGY_GREEDY_SIZE);
  uint64_t lb = 0;
  assert_ok(nnmem_problem_lower_bound(p, 64, &lb));
  print_message("height %llu, bound %llu\n",
                (unsigned long long)nnmem_plan_height(one),
                (unsigned long long)lb);
  assert_true(nnmem_plan_height(one) >= lb);
  assert_true(nnmem_plan_height(one) <= lb + lb / 4); /* measured: ~1.12 */
  const char *counts[] = {"2", "3"};
  for (size_t k = 0; k < 2; k++) {
    nnmem_plan_t *other =
        plan_with_threads(p, counts[k], NNMEM_STRATEGY_GREEDY_SIZE);
    assert_int_equal(nnmem_plan_height(other), nnmem_plan_height(one));
    assert_memory_equal(nnmem_plan_offsets(other), nnmem_plan_offsets(one),
                        N_SPLIT * sizeof(uint64_t));
    nnmem_plan_destroy(other);
  }
  nnmem_plan_destroy(one);
  nnmem_problem_destroy(p);
}

/* For two orderings (size classes sorted by time inside: a few long runs;
 * greedy-size: many short ones), the split placement on 1 and 3 threads
 * (more than the machine may have) equals nnmem__place_in_order over the split
 * schedule, which is a permutation that really moves buffers (the problem
 * split), and the plan passes the verifier. */
static void test_split_equals_schedule(void **state) {
  (void)state;
  nnmem_problem_t *p = random_problem(20261201, N_SPLIT, 0);
  const nnmem__order_t hows[] = {NNMEM__ORDER_CLASS2_FIRST,
                                 NNMEM__ORDER_SIZE_FIRST};
  uint32_t *order = malloc(N_SPLIT * sizeof *order);
  uint32_t *sched = malloc(N_SPLIT * sizeof *sched);
  uint64_t *want = malloc(N_SPLIT * sizeof *want);
  uint64_t *got = malloc(N_SPLIT * sizeof *got);
  unsigned char *seen = calloc(N_SPLIT, 1);
  assert_non_null(order && sched && want && got && seen);
  for (size_t h = 0; h < 2; h++) {
    assert_ok(nnmem__order(p, 64, hows[h], order));
    assert_ok(nnmem__split_schedule(p, order, sched));
    size_t moved = 0;
    memset(seen, 0, N_SPLIT);
    for (size_t i = 0; i < N_SPLIT; i++) {
      assert_true(sched[i] < N_SPLIT && !seen[sched[i]]);
      seen[sched[i]] = 1;
      moved += sched[i] != order[i];
    }
    print_message("ordering %zu: %zu of %u buffers moved by the schedule\n", h,
                  moved, N_SPLIT);
    assert_true(moved > 0);
    nnmem__place_ctl_t ctl = {0};
    uint64_t hw = 0, hg = 0;
    assert_ok(nnmem__place_in_order(p, sched, 64, NNMEM__FIT_BEST, UINT64_MAX,
                                    &ctl, want, &hw));
    assert_ok(nnmem_plan_verify(p, want, 64, 0, NULL, NULL));
    const char *counts[] = {"1", "3"};
    for (size_t k = 0; k < 2; k++) {
      assert_int_equal(setenv("NNMEM_PLAN_THREADS", counts[k], 1), 0);
      memset(got, 0xff, N_SPLIT * sizeof *got);
      assert_ok(nnmem__place_split(p, order, 64, NNMEM__FIT_BEST, UINT64_MAX,
                                   &ctl, got, &hg));
      unsetenv("NNMEM_PLAN_THREADS");
      assert_int_equal(hg, hw);
      assert_memory_equal(got, want, N_SPLIT * sizeof *got);
    }
  }
  free(order);
  free(sched);
  free(want);
  free(got);
  free(seen);
  nnmem_problem_destroy(p);
}

/* Greedy-breadth takes the split path too. */
static void test_split_other_orders(void **state) {
  (void)state;
  nnmem_problem_t *p = random_problem(7, N_SPLIT, 0);
  nnmem_strategy_t s[] = {NNMEM_STRATEGY_GREEDY_BREADTH};
  for (size_t k = 0; k < 1; k++) {
    nnmem_plan_t *a = plan_with_threads(p, "1", s[k]);
    nnmem_plan_t *b = plan_with_threads(p, "2", s[k]);
    assert_memory_equal(nnmem_plan_offsets(a), nnmem_plan_offsets(b),
                        N_SPLIT * sizeof(uint64_t));
    nnmem_plan_destroy(a);
    nnmem_plan_destroy(b);
  }
  nnmem_problem_destroy(p);
}

/* A problem with many long-lived buffers does not split well: it is
 * placed in one run (valid all the same). */
static void test_no_split_fallback(void **state) {
  (void)state;
  nnmem_problem_t *p = random_problem(99, N_SPLIT, 200);
  nnmem_plan_t *pl = plan_with_threads(p, "2", NNMEM_STRATEGY_GREEDY_SIZE);
  assert_true(nnmem_plan_height(pl) > 0);
  nnmem_plan_destroy(pl);
  nnmem_problem_destroy(p);
}

/* A capacity just below the plan's height is refused, at the height it is
 * accepted. */
static void test_split_capacity(void **state) {
  (void)state;
  nnmem_problem_t *p = random_problem(3, N_SPLIT, 0);
  nnmem_plan_t *pl = plan_with_threads(p, "2", NNMEM_STRATEGY_GREEDY_SIZE);
  uint64_t h = nnmem_plan_height(pl);
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.strategy = NNMEM_STRATEGY_GREEDY_SIZE;
  cfg.alignment = 64;
  cfg.capacity = h - 1;
  nnmem_plan_t *none = NULL;
  nnmem_diag_t diag = {0};
  assert_int_equal(nnmem_plan_create(p, &cfg, &none, &diag),
                   NNMEM_ERR_CAPACITY);
  assert_null(none);
  cfg.capacity = h;
  nnmem_plan_t *fits = tu_plan_verified(p, &cfg);
  assert_int_equal(nnmem_plan_height(fits), h);
  nnmem_plan_destroy(fits);
  nnmem_plan_destroy(pl);
  nnmem_problem_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_threads_agree),
      cmocka_unit_test(test_split_equals_schedule),
      cmocka_unit_test(test_split_other_orders),
      cmocka_unit_test(test_no_split_fallback),
      cmocka_unit_test(test_split_capacity),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_plan.c - the problem API, lower bound, every strategy and the
 * verifier on hand-computed cases and on randomized problems (fixed seeds,
 * printed on failure). Every plan goes through the independent verifier. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const nnmem_strategy_t all_strategies[] = {
    NNMEM_STRATEGY_AUTO,          NNMEM_STRATEGY_NAIVE,
    NNMEM_STRATEGY_GREEDY_SIZE,   NNMEM_STRATEGY_GREEDY_BREADTH,
    NNMEM_STRATEGY_HEAP_BEST_FIT, NNMEM_STRATEGY_GREEDY_CLASS};
#define N_STRATEGIES (sizeof all_strategies / sizeof *all_strategies)

static nnmem_problem_t *make(const uint64_t (*rows)[3], size_t n) {
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  for (size_t i = 0; i < n; i++) {
    char id[16];
    snprintf(id, sizeof id, "b%zu", i);
    assert_ok(
        nnmem_problem_add(p, id, rows[i][2], 0, rows[i][0], rows[i][1], NULL));
  }
  return p;
}

static uint64_t height_of(const nnmem_problem_t *p, nnmem_strategy_t s,
                          uint64_t align) {
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.strategy = s;
  cfg.alignment = align;
  nnmem_plan_t *pl = tu_plan_verified(p, &cfg);
  uint64_t h = nnmem_plan_height(pl);
  nnmem_plan_destroy(pl);
  return h;
}

static void test_status_names(void **state) {
  (void)state;
  assert_string_equal(nnmem_status_str(NNMEM_OK), "ok");
  assert_string_equal(nnmem_status_name(NNMEM_ERR_PARSE), "NNMEM_ERR_PARSE");
  assert_string_equal(nnmem_status_str((nnmem_status_t)-999), "unknown status");
}

static void test_strategy_names(void **state) {
  (void)state;
  for (int s = 0; s < NNMEM_STRATEGY_COUNT_; s++) {
    nnmem_strategy_t back;
    assert_ok(nnmem_strategy_parse(nnmem_strategy_name(s), &back));
    assert_int_equal(back, s);
  }
  nnmem_strategy_t x;
  assert_int_equal(nnmem_strategy_parse("best", &x), NNMEM_ERR_NOT_FOUND);
}

static void test_problem_add_rejects(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  assert_int_equal(nnmem_problem_add(p, "a", 4, 0, 3, 3, NULL),
                   NNMEM_ERR_INVALID); /* empty lifetime */
  assert_int_equal(nnmem_problem_add(p, "a", 4, 0, 5, 3, NULL),
                   NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_problem_add(p, "a", 4, 3, 0, 3, NULL),
                   NNMEM_ERR_INVALID); /* align not a power of two */
  assert_int_equal(nnmem_problem_add(p, "a", UINT64_MAX, 64, 0, 3, NULL),
                   NNMEM_ERR_OVERFLOW);
  assert_int_equal(nnmem_problem_count(p), 0);
  size_t idx = 99;
  assert_ok(nnmem_problem_add(p, "a", 4, 0, 0, 3, &idx));
  assert_int_equal(idx, 0);
  assert_ok(nnmem_problem_add(p, NULL, 4, 0, 0, 3, &idx));
  assert_null(nnmem_problem_id(p, 1));
  assert_ok(nnmem_problem_check(p, NULL));
  assert_ok(nnmem_problem_add(p, "a", 4, 0, 0, 3, NULL));
  nnmem_diag_t d;
  assert_int_equal(nnmem_problem_check(p, &d), NNMEM_ERR_DUPLICATE);
  assert_non_null(strstr(d.message, "'a'"));
  /* planning a problem with duplicate ids is refused */
  nnmem_plan_t *pl = NULL;
  assert_int_equal(nnmem_plan_create(p, NULL, &pl, &d), NNMEM_ERR_DUPLICATE);
  assert_null(pl);
  assert_ok(nnmem_problem_find(p, "a", &idx));
  assert_int_equal(idx, 0);
  assert_int_equal(nnmem_problem_find(p, "zz", &idx), NNMEM_ERR_NOT_FOUND);
  nnmem_problem_destroy(p);
}

/* The MiniMalloc README example: capacity 12, lower bound 12. */
static void test_minimalloc_example(void **state) {
  (void)state;
  static const uint64_t rows[][3] = {
      {0, 3, 4}, {3, 9, 4}, {0, 9, 4}, {9, 21, 4}, {0, 21, 4}};
  nnmem_problem_t *p = make(rows, 5);
  uint64_t lb, total;
  assert_ok(nnmem_problem_lower_bound(p, 1, &lb));
  assert_ok(nnmem_problem_total_bytes(p, 1, &total));
  assert_int_equal(lb, 12);
  assert_int_equal(total, 20);
  assert_int_equal(height_of(p, NNMEM_STRATEGY_NAIVE, 1), 20);
  for (size_t s = 0; s < N_STRATEGIES; s++)
    if (all_strategies[s] != NNMEM_STRATEGY_NAIVE)
      assert_int_equal(height_of(p, all_strategies[s], 1), 12);
  nnmem_problem_destroy(p);
}

/* The height of given offsets: the largest end; an end past 2^64 - 1 and
 * missing arguments are refused. */
static void test_problem_height(void **state) {
  (void)state;
  static const uint64_t rows[][3] = {{0, 3, 4}, {3, 9, 10}, {0, 9, 4}};
  nnmem_problem_t *p = make(rows, 3);
  uint64_t off[3] = {0, 2, 4}, h = 0;
  assert_ok(nnmem_problem_height(p, off, &h));
  assert_int_equal(h, 12);
  off[2] = 100;
  assert_ok(nnmem_problem_height(p, off, &h));
  assert_int_equal(h, 104);
  off[1] = UINT64_MAX - 10;
  assert_ok(nnmem_problem_height(p, off, &h));
  assert_true(h == UINT64_MAX);
  off[1] = UINT64_MAX - 9;
  h = 7;
  assert_int_equal(nnmem_problem_height(p, off, &h), NNMEM_ERR_OVERFLOW);
  assert_int_equal(h, 7);
  assert_int_equal(nnmem_problem_height(p, NULL, &h), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_problem_height(p, off, NULL), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_problem_height(NULL, off, &h), NNMEM_ERR_INVALID);
  nnmem_problem_destroy(p);
  nnmem_problem_t *e = NULL;
  assert_ok(nnmem_problem_create(&e));
  assert_ok(nnmem_problem_height(e, NULL, &h));
  assert_int_equal(h, 0);
  nnmem_problem_destroy(e);
}

/* Half-open lifetimes: [0,3) and [3,9) may share bytes. */
static void test_half_open(void **state) {
  (void)state;
  static const uint64_t rows[][3] = {{0, 3, 100}, {3, 9, 100}};
  nnmem_problem_t *p = make(rows, 2);
  assert_int_equal(height_of(p, NNMEM_STRATEGY_GREEDY_SIZE, 1), 100);
  uint64_t same[2] = {0, 0};
  assert_ok(nnmem_plan_verify(p, same, 1, 0, NULL, NULL));
  nnmem_problem_destroy(p);
}

/* Best fit picks the smallest hole that fits: F (15 bytes, live [5,8))
 * sees the holes [100,150) (50 bytes, left by B) and [190,220) (30 bytes,
 * left by D) and takes the 30-byte one. */
static void test_best_fit_hole(void **state) {
  (void)state;
  static const uint64_t rows[][3] = {
      {0, 10, 100}, /* A @0 */
      {0, 4, 50},   /* B @100, dead from step 4 */
      {0, 10, 40},  /* C @150 */
      {0, 4, 30},   /* D @190, dead from step 4 */
      {0, 10, 20},  /* E @220 */
      {5, 8, 15},   /* F: best fit @190 */
  };
  nnmem_problem_t *p = make(rows, 6);
  static const uint64_t want[] = {0, 100, 150, 190, 220, 190};
  nnmem_strategy_t ss[] = {NNMEM_STRATEGY_GREEDY_SIZE,
                           NNMEM_STRATEGY_HEAP_BEST_FIT};
  for (int s = 0; s < 2; s++) {
    nnmem_planner_config_t cfg;
    nnmem_planner_config_init(&cfg);
    cfg.strategy = ss[s];
    nnmem_plan_t *pl = tu_plan_verified(p, &cfg);
    if (ss[s] == NNMEM_STRATEGY_GREEDY_SIZE)
      for (int i = 0; i < 6; i++)
        assert_int_equal(nnmem_plan_offsets(pl)[i], want[i]);
    assert_int_equal(nnmem_plan_height(pl), 240);
    nnmem_plan_destroy(pl);
  }
  nnmem_problem_destroy(p);
}

/* A chain of equal tensors needs exactly two slots. */
static void test_chain_two_slots(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  for (uint64_t i = 0; i < 50; i++)
    assert_ok(nnmem_problem_add(p, NULL, 1000, 0, i, i + 2, NULL));
  for (size_t s = 0; s < N_STRATEGIES; s++) {
    uint64_t h = height_of(p, all_strategies[s], 1);
    if (all_strategies[s] == NNMEM_STRATEGY_NAIVE)
      assert_int_equal(h, 50000);
    else
      assert_int_equal(h, 2000);
  }
  nnmem_problem_destroy(p);
}

static void test_alignment(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "a", 10, 0, 0, 2, NULL));
  assert_ok(nnmem_problem_add(p, "b", 10, 0, 0, 2, NULL));
  assert_ok(nnmem_problem_add(p, "c", 1, 512, 0, 2, NULL));
  uint64_t lb;
  assert_ok(nnmem_problem_lower_bound(p, 256, &lb));
  assert_int_equal(lb, 256 + 256 + 512);
  for (size_t s = 0; s < N_STRATEGIES; s++) {
    nnmem_planner_config_t cfg;
    nnmem_planner_config_init(&cfg);
    cfg.strategy = all_strategies[s];
    cfg.alignment = 256;
    nnmem_plan_t *pl = tu_plan_verified(p, &cfg);
    const uint64_t *off = nnmem_plan_offsets(pl);
    for (int i = 0; i < 3; i++)
      assert_int_equal(off[i] % 256, 0);
    assert_int_equal(off[2] % 512, 0);
    assert_int_equal(nnmem_plan_height(pl), 1024);
    nnmem_plan_destroy(pl);
  }
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.alignment = 24;
  nnmem_plan_t *pl = NULL;
  nnmem_diag_t d;
  assert_int_equal(nnmem_plan_create(p, &cfg, &pl, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "24"));
  nnmem_problem_destroy(p);
}

static void test_capacity(void **state) {
  (void)state;
  static const uint64_t rows[][3] = {{0, 2, 8}, {1, 3, 8}, {2, 4, 8}};
  nnmem_problem_t *p = make(rows, 3);
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.capacity = 16;
  nnmem_plan_t *pl = tu_plan_verified(p, &cfg);
  assert_int_equal(nnmem_plan_height(pl), 16);
  nnmem_plan_destroy(pl);
  cfg.capacity = 15;
  nnmem_diag_t d;
  pl = NULL;
  assert_int_equal(nnmem_plan_create(p, &cfg, &pl, &d), NNMEM_ERR_CAPACITY);
  assert_null(pl);
  assert_non_null(strstr(d.message, "16"));
  assert_non_null(strstr(d.message, "15"));
  nnmem_problem_destroy(p);
}

static void test_no_reuse(void **state) {
  (void)state;
  static const uint64_t rows[][3] = {{0, 1, 8}, {1, 2, 8}, {2, 3, 8}};
  nnmem_problem_t *p = make(rows, 3);
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.no_reuse = 1;
  nnmem_plan_t *pl = tu_plan_verified(p, &cfg);
  assert_int_equal(nnmem_plan_height(pl), 24);
  assert_int_equal(nnmem_plan_strategy(pl), NNMEM_STRATEGY_NAIVE);
  nnmem_plan_destroy(pl);
  nnmem_problem_destroy(p);
}

/* A plan may be exactly 2^64 - 1 bytes high (the planner once used that
 * height to mean "no plan yet" and returned offsets all 0). */
static void test_height_max(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "big", UINT64_MAX - 1, 0, 0, 1, NULL));
  assert_ok(nnmem_problem_add(p, "small", 1, 0, 0, 1, NULL));
  for (size_t s = 0; s < N_STRATEGIES; s++)
    assert_true(height_of(p, all_strategies[s], 1) == UINT64_MAX);
  nnmem_problem_destroy(p);
}

/* One buffer of exactly 2^64 - 1 bytes fits at offset 0 (height 2^64 - 1
 * is representable); every strategy once refused it as an overflow. */
static void test_size_max(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "all", UINT64_MAX, 1, 0, 1, NULL));
  for (size_t s = 0; s < N_STRATEGIES; s++)
    assert_true(height_of(p, all_strategies[s], 1) == UINT64_MAX);
  uint64_t lb = 0, zero = 0;
  assert_ok(nnmem_problem_lower_bound(p, 1, &lb));
  assert_true(lb == UINT64_MAX);
  nnmem_plan_t *pl = NULL;
  assert_ok(nnmem_plan_from_offsets(p, &zero, &pl));
  assert_true(nnmem_plan_height(pl) == UINT64_MAX);
  nnmem_plan_destroy(pl);
  nnmem_problem_destroy(p);
}

/* 2^63 - 1 bytes living longer than a buffer aligned to 2^63: placed
 * first (lifetime orders), the long one pushes the aligned one to 2^63 and
 * its end to 2^64; placed second it fits above it, height 2^64 - 1. The
 * orderings that overflow are skipped, not fatal (auto once gave up). Two
 * 2^63 buffers live together overflow in every strategy: then
 * NNMEM_ERR_OVERFLOW names a buffer. */
static void test_overflow_skipped(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "long", (1ull << 63) - 1, 1, 0, 3, NULL));
  assert_ok(nnmem_problem_add(p, "aligned", 1, 1ull << 63, 0, 2, NULL));
  static const nnmem_strategy_t ok[] = {
      NNMEM_STRATEGY_AUTO, NNMEM_STRATEGY_GREEDY_SIZE,
      NNMEM_STRATEGY_GREEDY_BREADTH, NNMEM_STRATEGY_HEAP_BEST_FIT,
      NNMEM_STRATEGY_GREEDY_CLASS};
  for (size_t s = 0; s < sizeof ok / sizeof *ok; s++)
    assert_true(height_of(p, ok[s], 1) == UINT64_MAX);
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  /* greedy-class's first ordering (class, then lifetime) overflows: with a
   * spent time limit the next one still runs, else no plan at all */
  cfg.strategy = NNMEM_STRATEGY_GREEDY_CLASS;
  cfg.time_limit_s = 1e-12;
  nnmem_plan_t *pl = tu_plan_verified(p, &cfg);
  assert_true(nnmem_plan_height(pl) == UINT64_MAX);
  nnmem_plan_destroy(pl);
  cfg.time_limit_s = 0;
  cfg.strategy = NNMEM_STRATEGY_NAIVE; /* stacks them in problem order */
  nnmem_diag_t d;
  assert_int_equal(nnmem_plan_create(p, &cfg, &pl, &d), NNMEM_ERR_OVERFLOW);
  assert_null(pl);
  assert_non_null(strstr(d.message, "'aligned'"));
  nnmem_problem_destroy(p);
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "x", 1ull << 63, 1, 0, 2, NULL));
  assert_ok(nnmem_problem_add(p, "y", 1ull << 63, 1, 1, 3, NULL));
  for (size_t s = 0; s < N_STRATEGIES; s++) {
    cfg.strategy = all_strategies[s];
    assert_int_equal(nnmem_plan_create(p, &cfg, &pl, &d), NNMEM_ERR_OVERFLOW);
    assert_null(pl);
    if (!strstr(d.message, "buffer 0 'x'") &&
        !strstr(d.message, "buffer 1 'y'"))
      fail_msg("%s: %s", nnmem_strategy_name(all_strategies[s]), d.message);
  }
  nnmem_problem_destroy(p);
}

static void test_empty_and_zero_size(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  for (size_t s = 0; s < N_STRATEGIES; s++)
    assert_int_equal(height_of(p, all_strategies[s], 1), 0);
  assert_ok(nnmem_problem_add(p, "z", 0, 0, 0, 5, NULL));
  assert_ok(nnmem_problem_add(p, "y", 7, 0, 0, 5, NULL));
  for (size_t s = 0; s < N_STRATEGIES; s++)
    assert_int_equal(height_of(p, all_strategies[s], 1), 7);
  nnmem_problem_destroy(p);
}

/* ---- verifier ------------------------------------------------------------ */

static void test_verify_detects(void **state) {
  (void)state;
  static const uint64_t rows[][3] = {{0, 3, 4}, {3, 9, 4}, {0, 9, 4}};
  nnmem_problem_t *p = make(rows, 3);
  nnmem_verify_report_t rep;
  nnmem_diag_t d;
  uint64_t ok[] = {0, 0, 4};
  assert_ok(nnmem_plan_verify(p, ok, 1, 0, &rep, &d));
  assert_true(rep.valid);
  assert_int_equal(rep.height, 8);
  /* b2 overlaps b0 in address but not in time: still valid */
  uint64_t bad[] = {0, 0, 2};
  assert_int_equal(nnmem_plan_verify(p, bad, 1, 0, &rep, &d),
                   NNMEM_ERR_CONFLICT);
  assert_false(rep.valid);
  assert_true(rep.has_conflict);
  assert_int_equal(rep.conflict_a, 0);
  assert_int_equal(rep.conflict_b, 2);
  assert_non_null(strstr(d.message, "'b0'"));
  assert_non_null(strstr(d.message, "'b2'"));
  /* same offset, both live: conflict */
  uint64_t same[] = {0, 8, 0};
  assert_int_equal(nnmem_plan_verify(p, same, 1, 0, &rep, NULL),
                   NNMEM_ERR_CONFLICT);
  /* capacity */
  assert_int_equal(nnmem_plan_verify(p, ok, 1, 7, &rep, &d),
                   NNMEM_ERR_CAPACITY);
  assert_true(rep.over_capacity);
  assert_false(rep.has_conflict);
  /* alignment */
  uint64_t mis[] = {0, 0, 6};
  assert_int_equal(nnmem_plan_verify(p, mis, 4, 0, &rep, &d),
                   NNMEM_ERR_CONFLICT);
  assert_true(rep.misaligned);
  assert_int_equal(rep.misaligned_index, 2);
  /* overflow */
  uint64_t ovf[] = {0, 0, UINT64_MAX - 1};
  assert_int_equal(nnmem_plan_verify(p, ovf, 1, 0, &rep, &d),
                   NNMEM_ERR_CONFLICT);
  assert_true(rep.overflow);
  nnmem_problem_destroy(p);
}

/* Brute-force oracle: O(n^2) pairwise check, used only in tests. */
static int brute_valid(const nnmem_problem_t *p, const uint64_t *off) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t n = nnmem_problem_count(p);
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) {
      int t = b[i].first < b[j].last && b[j].first < b[i].last;
      /* a buffer occupies its size rounded up to its alignment */
      uint64_t si = (b[i].size + b[i].align - 1) / b[i].align * b[i].align;
      uint64_t sj = (b[j].size + b[j].align - 1) / b[j].align * b[j].align;
      int a = off[i] < off[j] + sj && off[j] < off[i] + si;
      if (t && a && b[i].size && b[j].size) return 0;
    }
  return 1;
}

static nnmem_problem_t *random_problem(uint64_t *rng, size_t n,
                                       uint64_t horizon, uint64_t maxsize) {
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  for (size_t i = 0; i < n; i++) {
    uint64_t a = tu_rand(rng) % horizon;
    uint64_t len = 1 + tu_rand(rng) % (horizon / 4 + 1);
    uint64_t size = tu_rand(rng) % maxsize; /* zero sizes included */
    uint64_t align = (uint64_t)1 << (tu_rand(rng) % 4);
    assert_ok(nnmem_problem_add(p, NULL, size, align, a, a + len, NULL));
  }
  return p;
}

/* The verifier agrees with the brute-force oracle on random offsets. */
static void test_verify_vs_oracle(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 300; seed++) {
    uint64_t rng = seed * 0x9E3779B97F4A7C15ULL;
    size_t n = 1 + tu_rand(&rng) % 12;
    nnmem_problem_t *p = random_problem(&rng, n, 10, 8);
    uint64_t off[12];
    const nnmem_buffer_t *b = nnmem_problem_buffers(p);
    for (size_t i = 0; i < n; i++)
      off[i] = (tu_rand(&rng) % 6) * b[i].align;
    nnmem_verify_report_t rep;
    nnmem_status_t st = nnmem_plan_verify(p, off, 1, 0, &rep, NULL);
    if ((st == NNMEM_OK) != brute_valid(p, off))
      fail_msg("seed %llu: verifier says %s, oracle disagrees",
               (unsigned long long)seed, nnmem_status_name(st));
    nnmem_problem_destroy(p);
  }
}

/* nnmem_problem_peak against a step-by-step count on random problems with
 * gaps and sub-buffers (children are not counted, gaps hold nothing, sizes
 * rounded to the alignment): the same bytes, and the step is the first
 * one where they are live; the lower bound equals the bytes. */
static void test_peak_vs_steps(void **state) {
  (void)state;
  print_message("seeds 1..200\n");
  for (uint64_t seed = 1; seed <= 200; seed++) {
    uint64_t rng = seed * 0x9E3779B97F4A7C15ULL;
    uint64_t align = (uint64_t)1 << (tu_rand(&rng) % 4);
    size_t n = 1 + tu_rand(&rng) % 12;
    nnmem_problem_t *p = random_problem(&rng, n, 10, 8);
    const nnmem_buffer_t *b = nnmem_problem_buffers(p);
    for (size_t i = 0; i < n; i++)
      if (b[i].last - b[i].first >= 3 && tu_rand(&rng) % 3 == 0)
        assert_ok(nnmem_problem_add_gap(p, i, b[i].first + 1, b[i].first + 2));
    if (n >= 2 && tu_rand(&rng) % 2) /* buffer 1 inside buffer 0 */
      assert_ok(nnmem_problem_set_parent(p, 1, 0, 0));
    uint64_t want = 0, want_step = 0;
    for (uint64_t t = 0; t < 64; t++) {
      uint64_t live = 0;
      for (size_t i = 0; i < n; i++) {
        const nnmem_interval_t *g;
        size_t ng = nnmem_problem_gaps(p, i, &g);
        int in = b[i].first <= t && t < b[i].last;
        for (size_t k = 0; k < ng; k++)
          in = in && !(g[k].first <= t && t < g[k].last);
        if (!in || nnmem_problem_parent(p, i, NULL, NULL) == NNMEM_OK) continue;
        uint64_t a = b[i].align > align ? b[i].align : align;
        live += (b[i].size + a - 1) / a * a;
      }
      if (live > want) want = live, want_step = t;
    }
    uint64_t got = 0, step = 0, lb = 0;
    assert_ok(nnmem_problem_peak(p, align, &got, &step));
    assert_ok(nnmem_problem_lower_bound(p, align, &lb));
    if (got != want || step != want_step || lb != want)
      fail_msg(
          "seed %llu: peak %llu at %llu, lower bound %llu; counted %llu "
          "at %llu",
          (unsigned long long)seed, (unsigned long long)got,
          (unsigned long long)step, (unsigned long long)lb,
          (unsigned long long)want, (unsigned long long)want_step);
    nnmem_problem_destroy(p);
  }
  assert_int_equal(nnmem_problem_peak(NULL, 1, NULL, NULL), NNMEM_ERR_INVALID);
}

/* Every strategy on random problems: valid (verifier and oracle), height
 * between the lower bound and the naive total, deterministic. */
static void test_random_problems(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 60; seed++) {
    uint64_t rng = seed;
    size_t n = 1 + tu_rand(&rng) % 200;
    nnmem_problem_t *p = random_problem(&rng, n, 100, 5000);
    uint64_t lb, total;
    assert_ok(nnmem_problem_lower_bound(p, 16, &lb));
    assert_ok(nnmem_problem_total_bytes(p, 16, &total));
    for (size_t s = 0; s < N_STRATEGIES; s++) {
      nnmem_planner_config_t cfg;
      nnmem_planner_config_init(&cfg);
      cfg.strategy = all_strategies[s];
      cfg.alignment = 16;
      nnmem_plan_t *a = tu_plan_verified(p, &cfg);
      nnmem_plan_t *b = tu_plan_verified(p, &cfg);
      uint64_t h = nnmem_plan_height(a), h2 = 0;
      assert_ok(nnmem_problem_height(p, nnmem_plan_offsets(a), &h2));
      assert_int_equal((h2 + 15) & ~(uint64_t)15, h); /* sizes rounded */
      if (h < lb || h > total || !brute_valid(p, nnmem_plan_offsets(a)) ||
          memcmp(nnmem_plan_offsets(a), nnmem_plan_offsets(b),
                 n * sizeof(uint64_t)) != 0)
        fail_msg("seed %llu strategy %s: height %llu lb %llu total %llu",
                 (unsigned long long)seed,
                 nnmem_strategy_name(all_strategies[s]), (unsigned long long)h,
                 (unsigned long long)lb, (unsigned long long)total);
      nnmem_plan_destroy(a);
      nnmem_plan_destroy(b);
    }
    nnmem_problem_destroy(p);
  }
}

/* auto is never worse than any heuristic it runs. */
static void test_auto_is_best(void **state) {
  (void)state;
  for (uint64_t seed = 100; seed < 130; seed++) {
    uint64_t rng = seed;
    nnmem_problem_t *p = random_problem(&rng, 150, 60, 10000);
    uint64_t a = height_of(p, NNMEM_STRATEGY_AUTO, 1);
    for (size_t s = 2; s < N_STRATEGIES; s++)
      if (a > height_of(p, all_strategies[s], 1))
        fail_msg("seed %llu: auto %llu worse than %s", (unsigned long long)seed,
                 (unsigned long long)a, nnmem_strategy_name(all_strategies[s]));
    nnmem_problem_destroy(p);
  }
}

/* A spent time limit stops auto after its first strategy, greedy-size, the
 * fastest (still a valid plan, and the plan says the limit cut it);
 * without a limit auto may pick another. */
static void test_time_limit(void **state) {
  (void)state;
  uint64_t rng = 4242;
  nnmem_problem_t *p = random_problem(&rng, 300, 80, 10000);
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.time_limit_s = 1e-12;
  nnmem_plan_t *pl = tu_plan_verified(p, &cfg);
  assert_int_equal(nnmem_plan_strategy(pl), NNMEM_STRATEGY_GREEDY_SIZE);
  assert_int_equal(nnmem_plan_time_limited(pl), 1);
  assert_int_equal(nnmem_plan_strategies_run(pl), 1);
  uint64_t limited = nnmem_plan_height(pl);
  nnmem_plan_destroy(pl);
  assert_true(height_of(p, NNMEM_STRATEGY_AUTO, 1) <= limited);
  cfg.time_limit_s = 0;
  pl = tu_plan_verified(p, &cfg);
  assert_int_equal(nnmem_plan_time_limited(pl), 0);
  assert_true(nnmem_plan_strategies_run(pl) >= 1);
  nnmem_plan_destroy(pl);
  /* one strategy of three orderings: the first runs whole, the rest are
   * cut (between orderings and inside the engine) */
  cfg.strategy = NNMEM_STRATEGY_GREEDY_CLASS;
  cfg.time_limit_s = 1e-12;
  pl = tu_plan_verified(p, &cfg);
  assert_int_equal(nnmem_plan_time_limited(pl), 1);
  nnmem_plan_destroy(pl);
  nnmem_problem_destroy(p);
}

/* The comb of issue 7: n long-lived 1-byte buffers alternating with n
 * short-lived ones at step 0, then n 2-byte buffers at step 1. Placed in
 * time order the 1-byte buffers interleave, every later query meets ~2n
 * ranges from two complementary sets (planning was quadratic); the
 * 2-byte ones fit none of the 1-byte holes. */
static nnmem_problem_t *comb(size_t n) {
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  for (size_t i = 0; i < n; i++) {
    assert_ok(nnmem_problem_add(p, NULL, 1, 1, 0, 3, NULL));
    assert_ok(nnmem_problem_add(p, NULL, 1, 1, 0, 1, NULL));
  }
  for (size_t i = 0; i < n; i++)
    assert_ok(nnmem_problem_add(p, NULL, 2, 1, 1, 2, NULL));
  return p;
}

/* Every strategy plans the comb validly, with n big enough for the query
 * cut (NNMEM__OCC_MAX_RANGES = 4096 ranges) to be taken; auto reaches the
 * lower bound 3n (n long + 2n at step 1). A spent time limit still gives a
 * complete valid plan from greedy-size (past the deadline in its fast
 * mode: each buffer on top of those live with it), at most the naive 4n. */
static void test_comb(void **state) {
  (void)state;
  const size_t n = 3000;
  nnmem_problem_t *p = comb(n);
  uint64_t lb = 0;
  assert_ok(nnmem_problem_lower_bound(p, 1, &lb));
  assert_int_equal(lb, 3 * n);
  for (size_t s = 0; s < N_STRATEGIES; s++) {
    uint64_t h = height_of(p, all_strategies[s], 1);
    assert_true(h >= lb && h <= 4 * n);
  }
  assert_int_equal(height_of(p, NNMEM_STRATEGY_AUTO, 1), lb);
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.time_limit_s = 1e-12;
  nnmem_plan_t *pl = tu_plan_verified(p, &cfg);
  assert_int_equal(nnmem_plan_strategy(pl), NNMEM_STRATEGY_GREEDY_SIZE);
  assert_int_equal(nnmem_plan_time_limited(pl), 1);
  assert_true(nnmem_plan_height(pl) >= lb && nnmem_plan_height(pl) <= 4 * n);
  nnmem_plan_destroy(pl);
  nnmem_problem_destroy(p);
}

static void test_from_offsets(void **state) {
  (void)state;
  static const uint64_t rows[][3] = {{0, 3, 4}, {3, 9, 4}};
  nnmem_problem_t *p = make(rows, 2);
  uint64_t off[] = {0, 16};
  nnmem_plan_t *pl = NULL;
  assert_ok(nnmem_plan_from_offsets(p, off, &pl));
  assert_int_equal(nnmem_plan_height(pl), 20);
  assert_int_equal(nnmem_plan_count(pl), 2);
  nnmem_plan_destroy(pl);
  uint64_t ovf[] = {0, UINT64_MAX};
  assert_int_equal(nnmem_plan_from_offsets(p, ovf, &pl), NNMEM_ERR_OVERFLOW);
  nnmem_problem_destroy(p);
}

static void test_misuse(void **state) {
  (void)state;
  nnmem_plan_t *pl = NULL;
  assert_int_equal(nnmem_plan_create(NULL, NULL, &pl, NULL), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_problem_create(NULL), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_problem_add(NULL, "a", 1, 1, 0, 1, NULL),
                   NNMEM_ERR_INVALID);
  nnmem_problem_destroy(NULL);
  nnmem_plan_destroy(NULL);
  assert_int_equal(nnmem_plan_height(NULL), 0);
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.strategy = (nnmem_strategy_t)77;
  assert_int_equal(nnmem_plan_create(p, &cfg, &pl, NULL), NNMEM_ERR_INVALID);
  nnmem_problem_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_names),
      cmocka_unit_test(test_strategy_names),
      cmocka_unit_test(test_problem_add_rejects),
      cmocka_unit_test(test_minimalloc_example),
      cmocka_unit_test(test_problem_height),
      cmocka_unit_test(test_half_open),
      cmocka_unit_test(test_best_fit_hole),
      cmocka_unit_test(test_chain_two_slots),
      cmocka_unit_test(test_alignment),
      cmocka_unit_test(test_capacity),
      cmocka_unit_test(test_no_reuse),
      cmocka_unit_test(test_empty_and_zero_size),
      cmocka_unit_test(test_height_max),
      cmocka_unit_test(test_size_max),
      cmocka_unit_test(test_overflow_skipped),
      cmocka_unit_test(test_verify_detects),
      cmocka_unit_test(test_verify_vs_oracle),
      cmocka_unit_test(test_peak_vs_steps),
      cmocka_unit_test(test_random_problems),
      cmocka_unit_test(test_auto_is_best),
      cmocka_unit_test(test_time_limit),
      cmocka_unit_test(test_comb),
      cmocka_unit_test(test_from_offsets),
      cmocka_unit_test(test_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

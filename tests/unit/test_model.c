/* test_model.c - the richer problem model: gaps (active intervals) and
 * sub-buffers. Random problems (fixed seeds, printed) are planned by every
 * strategy and verified; the verifier is compared with a brute-force oracle
 * that works step by step and pair by pair (shares nothing with it); planted
 * violations are caught; the checker refuses bad gaps and relations naming
 * the buffer; CSV and plan JSON round trips keep both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define MAXB 24
#define MAXT 12

/* A generated problem in the oracle's own terms: active[i][t]. */
typedef struct gen {
  size_t n;
  uint64_t size[MAXB], align[MAXB], rel[MAXB];
  int parent[MAXB]; /* -1: root */
  unsigned char active[MAXB][MAXT];
} gen_t;

static uint64_t rnd(uint64_t *s, uint64_t n) {
  return n ? tu_rand(s) % n : 0;
}

/* Random active steps inside `allowed` (all steps when NULL); nonempty. */
static void random_active(uint64_t *s, const unsigned char *allowed,
                          unsigned char *act) {
  int any = 0;
  uint64_t f = rnd(s, MAXT), l = f + 1 + rnd(s, MAXT - f);
  for (int t = 0; t < MAXT; t++) {
    int ok = allowed ? allowed[t] : 1;
    act[t] = ok && (uint64_t)t >= f && (uint64_t)t < l && rnd(s, 4) != 0;
    any |= act[t];
  }
  if (any) return;
  for (int t = 0; t < MAXT; t++) /* the first allowed step at least */
    if (!allowed || allowed[t]) {
      act[t] = 1;
      return;
    }
}

/* Turns g into a problem: lifetime = hull of the active steps, gaps = the
 * inactive runs inside it. */
static nnmem_problem_t *to_problem(const gen_t *g) {
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  for (size_t i = 0; i < g->n; i++) {
    int f = -1, l = -1;
    for (int t = 0; t < MAXT; t++)
      if (g->active[i][t]) {
        if (f < 0) f = t;
        l = t + 1;
      }
    char id[16];
    snprintf(id, sizeof id, "b%zu", i);
    assert_ok(nnmem_problem_add(p, id, g->size[i], g->align[i], (uint64_t)f,
                                (uint64_t)l, NULL));
    for (int t = f; t < l;) {
      if (g->active[i][t]) {
        t++;
        continue;
      }
      int e = t;
      while (e < l && !g->active[i][e])
        e++;
      assert_ok(nnmem_problem_add_gap(p, i, (uint64_t)t, (uint64_t)e));
      t = e;
    }
  }
  for (size_t i = 0; i < g->n; i++)
    if (g->parent[i] >= 0)
      assert_ok(
          nnmem_problem_set_parent(p, i, (size_t)g->parent[i], g->rel[i]));
  return p;
}

/* A random valid problem: roots with gaps, children packed side by side
 * inside their parents (so siblings never share bytes), active only while
 * the parent is; some grandchildren. */
static void generate(uint64_t *s, gen_t *g, size_t n) {
  memset(g, 0, sizeof *g);
  uint64_t cursor[MAXB] = {0};
  g->n = n;
  for (size_t i = 0; i < n; i++) {
    int q = i > 0 && rnd(s, 3) == 0 ? (int)rnd(s, i) : -1;
    if (q >= 0 && cursor[q] >= g->size[q]) q = -1; /* parent is full */
    g->parent[i] = q;
    if (q < 0) {
      g->size[i] = 1 + rnd(s, 64);
      g->align[i] = (uint64_t)1 << rnd(s, 3);
      random_active(s, NULL, g->active[i]);
    } else {
      uint64_t room = g->size[q] - cursor[q];
      g->size[i] = 1 + rnd(s, room);
      g->align[i] = 1;
      g->rel[i] = cursor[q];
      cursor[q] += g->size[i];
      random_active(s, g->active[q], g->active[i]);
    }
  }
}

static int is_ancestor(const gen_t *g, size_t a, size_t x) {
  for (int q = g->parent[x]; q >= 0; q = g->parent[q])
    if ((size_t)q == a) return 1;
  return 0;
}

/* 1 when two children of one parent share bytes while both are active
 * (then no plan exists and the checker must refuse the problem). */
static int siblings_clash(const gen_t *g) {
  for (size_t i = 0; i < g->n; i++)
    for (size_t j = i + 1; j < g->n; j++) {
      if (g->parent[i] < 0 || g->parent[i] != g->parent[j]) continue;
      if (g->rel[i] >= g->rel[j] + g->size[j] ||
          g->rel[j] >= g->rel[i] + g->size[i])
        continue;
      for (int t = 0; t < MAXT; t++)
        if (g->active[i][t] && g->active[j][t]) return 1;
    }
  return 0;
}

/* The oracle: 1 when `off` is a valid plan of g under `alignment`. */
static int oracle_valid(const gen_t *g, const uint64_t *off,
                        uint64_t alignment) {
  for (size_t i = 0; i < g->n; i++) {
    uint64_t al = g->parent[i] < 0
                      ? (g->align[i] > alignment ? g->align[i] : alignment)
                      : g->align[i];
    if (off[i] % al) return 0;
    if (g->parent[i] >= 0) {
      size_t q = (size_t)g->parent[i];
      if (off[i] != off[q] + g->rel[i]) return 0;
      if (off[i] + g->size[i] > off[q] + g->size[q]) return 0;
      for (int t = 0; t < MAXT; t++)
        if (g->active[i][t] && !g->active[q][t]) return 0;
    }
  }
  for (size_t i = 0; i < g->n; i++)
    for (size_t j = i + 1; j < g->n; j++) {
      if (is_ancestor(g, i, j) || is_ancestor(g, j, i)) continue;
      int both = 0;
      for (int t = 0; t < MAXT; t++)
        both |= g->active[i][t] && g->active[j][t];
      uint64_t ei = off[i] + g->size[i], ej = off[j] + g->size[j];
      /* sizes padded like the verifier: roots to max(align, alignment) */
      if (g->parent[i] < 0) {
        uint64_t al = g->align[i] > alignment ? g->align[i] : alignment;
        ei = off[i] + (g->size[i] + al - 1) / al * al;
      }
      if (g->parent[j] < 0) {
        uint64_t al = g->align[j] > alignment ? g->align[j] : alignment;
        ej = off[j] + (g->size[j] + al - 1) / al * al;
      }
      if (both && off[i] < ej && off[j] < ei) return 0;
    }
  return 1;
}

/* Every strategy plans random problems with gaps and sub-buffers; each plan
 * passes the verifier and the oracle; heights are at least the bound. */
static void test_random_plans_every_strategy(void **state) {
  (void)state;
  print_message("seeds 1..300\n");
  for (uint64_t seed = 1; seed <= 300; seed++) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL;
    gen_t g;
    generate(&s, &g, 2 + (size_t)rnd(&s, MAXB - 1));
    nnmem_problem_t *p = to_problem(&g);
    nnmem_diag_t d = {{0}};
    if (nnmem_problem_check(p, &d) != NNMEM_OK)
      fail_msg("seed %llu: generated problem refused: %s",
               (unsigned long long)seed, d.message);
    uint64_t lb = 0;
    assert_ok(nnmem_problem_lower_bound(p, 1, &lb));
    for (int st = 0; st < NNMEM_STRATEGY_COUNT_; st++) {
      nnmem_planner_config_t cfg;
      nnmem_planner_config_init(&cfg);
      cfg.strategy = (nnmem_strategy_t)st;
      cfg.alignment = seed % 3 == 0 ? 8 : 1;
      nnmem_plan_t *pl = tu_plan_verified(p, &cfg);
      if (!oracle_valid(&g, nnmem_plan_offsets(pl), cfg.alignment))
        fail_msg("seed %llu strategy %s: the oracle refuses the plan",
                 (unsigned long long)seed, nnmem_strategy_name(cfg.strategy));
      if (cfg.alignment == 1 && nnmem_plan_height(pl) < lb)
        fail_msg("seed %llu: height %llu below the bound %llu",
                 (unsigned long long)seed,
                 (unsigned long long)nnmem_plan_height(pl),
                 (unsigned long long)lb);
      nnmem_plan_destroy(pl);
    }
    nnmem_problem_destroy(p);
  }
}

/* The verifier agrees with the oracle on perturbed plans and on problems
 * whose siblings may overlap (random relative offsets). */
static void test_verifier_matches_oracle(void **state) {
  (void)state;
  size_t invalid = 0, valid = 0, refused = 0;
  print_message("seeds 1..3000\n");
  for (uint64_t seed = 1; seed <= 3000; seed++) {
    uint64_t s = seed * 0xD1B54A32D192ED03ULL;
    gen_t g;
    generate(&s, &g, 2 + (size_t)rnd(&s, 10));
    if (seed % 2)
      for (size_t i = 0; i < g.n; i++) /* siblings may now overlap */
        if (g.parent[i] >= 0) {
          uint64_t room = g.size[g.parent[i]] - g.size[i];
          g.rel[i] = rnd(&s, room + 1);
        }
    nnmem_problem_t *p = to_problem(&g);
    nnmem_plan_t *pl = NULL;
    nnmem_diag_t d = {{0}};
    int clash = siblings_clash(&g);
    if (clash != (nnmem_problem_check(p, &d) != NNMEM_OK))
      fail_msg("seed %llu: checker says '%s', oracle says siblings %s",
               (unsigned long long)seed, d.message, clash ? "clash" : "fit");
    if (clash) { /* no plan can exist: the verifier refuses any */
      uint64_t zero[MAXB] = {0};
      assert_int_equal(nnmem_plan_verify(p, zero, 1, 0, NULL, &d),
                       NNMEM_ERR_INVALID);
      refused++;
      nnmem_problem_destroy(p);
      continue;
    }
    assert_ok(nnmem_plan_create(p, NULL, &pl, &d));
    uint64_t off[MAXB];
    memcpy(off, nnmem_plan_offsets(pl), g.n * sizeof *off);
    nnmem_plan_destroy(pl);
    int k = (int)rnd(&s, 3);
    for (int e = 0; e < k; e++) /* perturb: move a buffer somewhere */
      off[rnd(&s, g.n)] = rnd(&s, 80);
    uint64_t alignment = seed % 5 == 0 ? 4 : 1;
    int want = oracle_valid(&g, off, alignment);
    nnmem_verify_report_t rep;
    nnmem_status_t st = nnmem_plan_verify(p, off, alignment, 0, &rep, &d);
    if ((st == NNMEM_OK) != want || rep.valid != want)
      fail_msg("seed %llu: verifier says %s (%s), oracle says %s",
               (unsigned long long)seed, st == NNMEM_OK ? "valid" : "invalid",
               d.message, want ? "valid" : "invalid");
    want ? valid++ : invalid++;
    nnmem_problem_destroy(p);
  }
  print_message(
      "verifier vs oracle: %zu valid, %zu invalid plans agreed; "
      "%zu problems with clashing siblings refused\n",
      valid, invalid, refused);
  assert_true(valid > 300 && invalid > 300 && refused > 30);
}

/* Hand-made cases: a gap lets two buffers share bytes; active overlap,
 * child outside its parent, child off its offset, parent dead. */
static void test_planted_violations(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_verify_report_t rep;
  assert_ok(nnmem_problem_create(&p));
  size_t a, b, c;
  assert_ok(nnmem_problem_add(p, "a", 100, 1, 0, 10, &a));
  assert_ok(nnmem_problem_add_gap(p, a, 3, 6));
  assert_ok(nnmem_problem_add(p, "b", 100, 1, 3, 6, &b));
  uint64_t off[3] = {0, 0, 0};
  /* b lives only in a's gap: same bytes, valid */
  assert_ok(nnmem_plan_verify(p, off, 1, 0, &rep, &d));
  assert_int_equal(rep.height, 100);
  uint64_t lb = 0;
  assert_ok(nnmem_problem_lower_bound(p, 1, &lb));
  assert_int_equal(lb, 100);
  /* b one step longer: overlaps a's active step 6 */
  nnmem_problem_destroy(p);
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "a", 100, 1, 0, 10, &a));
  assert_ok(nnmem_problem_add_gap(p, a, 3, 6));
  assert_ok(nnmem_problem_add(p, "b", 100, 1, 3, 7, &b));
  assert_int_equal(nnmem_plan_verify(p, off, 1, 0, &rep, &d),
                   NNMEM_ERR_CONFLICT);
  assert_true(rep.has_conflict);
  assert_non_null(strstr(d.message, "step 6"));
  /* a child c of a at 50: valid at offset 50, invalid elsewhere */
  assert_ok(nnmem_problem_add(p, "c", 50, 1, 0, 2, &c));
  assert_ok(nnmem_problem_set_parent(p, c, a, 50));
  uint64_t off2[3] = {0, 100, 50};
  assert_ok(nnmem_plan_verify(p, off2, 1, 0, &rep, &d));
  assert_int_equal(rep.height, 200); /* the child adds nothing */
  assert_ok(nnmem_problem_lower_bound(p, 1, &lb));
  assert_int_equal(lb, 200); /* a and b at step 6; c counted in a */
  off2[2] = 40;
  assert_int_equal(nnmem_plan_verify(p, off2, 1, 0, &rep, &d),
                   NNMEM_ERR_CONFLICT);
  assert_true(rep.bad_child);
  assert_int_equal(rep.bad_child_index, c);
  assert_non_null(strstr(d.message, "'c'"));
  /* a child active while its parent is in a gap: the checker refuses */
  nnmem_problem_destroy(p);
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "a", 100, 1, 0, 10, &a));
  assert_ok(nnmem_problem_add_gap(p, a, 3, 6));
  assert_ok(nnmem_problem_add(p, "c", 50, 1, 2, 4, &c));
  assert_ok(nnmem_problem_set_parent(p, c, a, 0));
  uint64_t off3[2] = {0, 0};
  assert_int_equal(nnmem_plan_verify(p, off3, 1, 0, &rep, &d),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "'c'"));
  assert_non_null(strstr(d.message, "parent"));
  nnmem_problem_destroy(p);
}

/* The checker's messages name the buffer for each rule. */
static void expect_refused(nnmem_problem_t *p, const char *needle) {
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_problem_check(p, &d), NNMEM_ERR_INVALID);
  if (!strstr(d.message, needle))
    fail_msg("message '%s' lacks '%s'", d.message, needle);
  nnmem_plan_t *pl = NULL;
  assert_int_equal(nnmem_plan_create(p, NULL, &pl, &d), NNMEM_ERR_INVALID);
  assert_null(pl);
  nnmem_problem_destroy(p);
}

static nnmem_problem_t *two(uint64_t psize, uint64_t pfirst, uint64_t plast) {
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "par", psize, 8, pfirst, plast, NULL));
  assert_ok(nnmem_problem_add(p, "kid", 16, 4, 2, 4, NULL));
  return p;
}

static void test_checker_rules(void **state) {
  (void)state;
  nnmem_problem_t *p = two(64, 0, 10);
  assert_ok(nnmem_problem_add_gap(p, 0, 8, 12));
  expect_refused(p, "outside the lifetime");
  p = two(64, 0, 10);
  assert_ok(nnmem_problem_add_gap(p, 0, 1, 4));
  assert_ok(nnmem_problem_add_gap(p, 0, 3, 6));
  expect_refused(p, "overlaps");
  p = two(64, 0, 10);
  assert_ok(nnmem_problem_add_gap(p, 1, 2, 4));
  expect_refused(p, "no active step");
  p = two(64, 0, 10);
  assert_ok(nnmem_problem_set_parent(p, 1, 0, 56));
  expect_refused(p, "does not fit inside its parent 0 'par'");
  p = two(64, 0, 10);
  assert_ok(nnmem_problem_set_parent(p, 1, 0, 6));
  expect_refused(p, "alignment");
  p = two(64, 3, 10);
  assert_ok(nnmem_problem_set_parent(p, 1, 0, 0));
  expect_refused(p, "parent dies first");
  p = two(64, 0, 10);
  assert_ok(nnmem_problem_set_parent(p, 1, 0, 0));
  assert_ok(nnmem_problem_set_parent(p, 0, 1, 0));
  expect_refused(p, "loops");
  /* misuse: bad indices and empty gaps */
  p = two(64, 0, 10);
  assert_int_equal(nnmem_problem_add_gap(p, 5, 1, 2), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_problem_add_gap(p, 0, 2, 2), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_problem_set_parent(p, 0, 0, 0), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_problem_parent(p, 0, NULL, NULL), NNMEM_ERR_NOT_FOUND);
  assert_ok(nnmem_problem_check(p, NULL));
  nnmem_problem_destroy(p);
}

/* CSV and plan JSON keep gaps and the relation; read back, the problem
 * has the same buffers, gaps and parents. */
static void assert_same(const nnmem_problem_t *a, const nnmem_problem_t *b) {
  assert_int_equal(nnmem_problem_count(a), nnmem_problem_count(b));
  for (size_t i = 0; i < nnmem_problem_count(a); i++) {
    const nnmem_buffer_t *x = nnmem_problem_buffers(a) + i,
                         *y = nnmem_problem_buffers(b) + i;
    assert_int_equal(x->size, y->size);
    assert_int_equal(x->first, y->first);
    assert_int_equal(x->last, y->last);
    const nnmem_interval_t *gx, *gy;
    size_t nx = nnmem_problem_gaps(a, i, &gx),
           ny = nnmem_problem_gaps(b, i, &gy);
    assert_int_equal(nx, ny);
    for (size_t k = 0; k < nx; k++) {
      assert_int_equal(gx[k].first, gy[k].first);
      assert_int_equal(gx[k].last, gy[k].last);
    }
    size_t qa = 0, qb = 0;
    uint64_t ra = 0, rb = 0;
    nnmem_status_t sa = nnmem_problem_parent(a, i, &qa, &ra);
    assert_int_equal(sa, nnmem_problem_parent(b, i, &qb, &rb));
    assert_int_equal(qa, qb);
    assert_int_equal(ra, rb);
  }
}

static void test_round_trips(void **state) {
  (void)state;
  print_message("seeds 1..50\n");
  for (uint64_t seed = 1; seed <= 50; seed++) {
    uint64_t s = seed * 0xA24BAED4963EE407ULL;
    gen_t g;
    generate(&s, &g, 2 + (size_t)rnd(&s, MAXB - 1));
    nnmem_problem_t *p = to_problem(&g);
    nnmem_plan_t *pl = tu_plan_verified(p, NULL);
    char *text = NULL;
    size_t len = 0;
    nnmem_diag_t d = {{0}};
    /* CSV */
    assert_ok(
        nnmem_problem_format_csv(p, nnmem_plan_offsets(pl), &text, &len, &d));
    nnmem_csv_t *csv = NULL;
    if (nnmem_csv_parse(text, len, "rt.csv", &csv, &d) != NNMEM_OK)
      fail_msg("seed %llu: %s\n%s", (unsigned long long)seed, d.message, text);
    assert_same(p, nnmem_csv_problem(csv));
    assert_memory_equal(nnmem_csv_offsets(csv), nnmem_plan_offsets(pl),
                        g.n * sizeof(uint64_t));
    nnmem_csv_destroy(csv);
    free(text);
    /* plan JSON */
    assert_ok(nnmem_problem_format_plan_json(p, pl, 1, &text, &len, &d));
    nnmem_problem_t *back = NULL;
    uint64_t *offs = NULL;
    if (nnmem_plan_read_json(text, len, "rt.json", &back, &offs, &d))
      fail_msg("seed %llu: %s", (unsigned long long)seed, d.message);
    assert_same(p, back);
    assert_ok(nnmem_plan_verify(back, offs, 1, 0, NULL, &d));
    free(offs);
    free(text);
    nnmem_problem_destroy(back);
    nnmem_plan_destroy(pl);
    nnmem_problem_destroy(p);
  }
}

/* Bad gaps and relations in CSV and plan JSON: errors name line/buffer. */
static void expect_csv_error(const char *text, const char *needle) {
  nnmem_csv_t *csv = NULL;
  nnmem_diag_t d = {{0}};
  assert_int_not_equal(nnmem_csv_parse(text, strlen(text), "f.csv", &csv, &d),
                       NNMEM_OK);
  assert_null(csv);
  if (!strstr(d.message, needle))
    fail_msg("message '%s' lacks '%s'", d.message, needle);
}

static void test_csv_errors(void **state) {
  (void)state;
  expect_csv_error("id,lower,upper,size,gaps\na,0,10,4,2-4 3-5\n",
                   "f.csv:2: buffer 'a': gap 3-5 overlaps");
  expect_csv_error("id,lower,upper,size,gaps\na,0,10,4,\nb,0,10,4,9-11\n",
                   "f.csv:3: buffer 'b': gap 9-11 lies outside");
  expect_csv_error("id,lower,upper,size,gaps\na,0,10,4,2-x\n",
                   "f.csv:2: buffer 'a': gap '2-x' is not of the form");
  expect_csv_error("id,lower,upper,size,gaps\na,0,10,4,2-4@0:2\n", "window");
  expect_csv_error("id,lower,upper,size,gaps\na,0,10,4,4-4\n", "empty");
  expect_csv_error(
      "id,lower,upper,size,parent,parent_offset\n"
      "a,0,10,4,,\nb,0,10,8,a,0\n",
      "f.csv:3: buffer 1 'b': sub-buffer");
  expect_csv_error(
      "id,lower,upper,size,parent,parent_offset\n"
      "a,2,10,8,,\nb,0,10,4,a,0\n",
      "f.csv:3: buffer 1 'b': active on [0,10)");
  expect_csv_error(
      "id,lower,upper,size,parent,parent_offset\n"
      "a,0,10,8,zz,0\n",
      "f.csv:2: parent 'zz' is not a buffer");
  expect_csv_error("id,lower,upper,size,parent\na,0,10,8,\n", "come together");
  /* legacy inclusive form: gap 2-3 is [2,4) */
  const char *leg = "buffer,start,end,size,gaps\na,0,9,4,2-3\n";
  nnmem_csv_t *csv = NULL;
  assert_ok(nnmem_csv_parse(leg, strlen(leg), "l.csv", &csv, NULL));
  const nnmem_interval_t *gp;
  assert_int_equal(nnmem_problem_gaps(nnmem_csv_problem(csv), 0, &gp), 1);
  assert_int_equal(gp[0].first, 2);
  assert_int_equal(gp[0].last, 4);
  nnmem_csv_destroy(csv);
}

static void test_json_errors(void **state) {
  (void)state;
  static const struct {
    const char *text, *needle;
  } cases[] = {
      {"{\"buffers\":[{\"id\":\"a\",\"offset\":0,\"size\":4,\"first\":0,"
       "\"last\":9,\"gaps\":[[1]]}]}",
       "buffers[0] ('a'): gaps[0]"},
      {"{\"buffers\":[{\"id\":\"a\",\"offset\":0,\"size\":4,\"first\":0,"
       "\"last\":9,\"gaps\":[[5,12]]}]}",
       "buffers[0]: buffer 0 'a': gap [5,12) lies outside"},
      {"{\"buffers\":[{\"id\":\"a\",\"offset\":0,\"size\":4,\"first\":0,"
       "\"last\":9},{\"id\":\"b\",\"offset\":0,\"size\":8,\"first\":0,"
       "\"last\":9,\"parent\":\"a\",\"parent_offset\":0}]}",
       "buffers[1]: buffer 1 'b': sub-buffer"},
      {"{\"buffers\":[{\"id\":\"b\",\"offset\":0,\"size\":8,\"first\":0,"
       "\"last\":9,\"parent\":\"q\",\"parent_offset\":0}]}",
       "parent 'q' is not listed"},
      {"{\"buffers\":[{\"id\":\"b\",\"offset\":0,\"size\":8,\"first\":0,"
       "\"last\":9,\"parent\":\"b\"}]}",
       "come together"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    nnmem_problem_t *p = NULL;
    uint64_t *o = NULL;
    nnmem_diag_t d = {{0}};
    assert_int_equal(nnmem_plan_read_json(cases[i].text, strlen(cases[i].text),
                                          "p.json", &p, &o, &d),
                     NNMEM_ERR_PARSE);
    assert_null(p);
    if (!strstr(d.message, cases[i].needle))
      fail_msg("case %zu: message '%s' lacks '%s'", i, d.message,
               cases[i].needle);
  }
}

/* Gaps let a planner reuse bytes only conservatively (hull); the bound
 * sees the gaps. A buffer whose gaps sit at its ends is planned on its
 * active hull. */
static void test_gap_hull_and_bound(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  size_t a;
  assert_ok(nnmem_problem_add(p, "a", 100, 1, 0, 10, &a));
  assert_ok(nnmem_problem_add_gap(p, a, 0, 4)); /* active [4,10) */
  assert_ok(nnmem_problem_add(p, "b", 100, 1, 0, 4, NULL));
  nnmem_plan_t *pl = tu_plan_verified(p, NULL);
  assert_int_equal(nnmem_plan_height(pl), 100); /* a and b share bytes */
  nnmem_plan_destroy(pl);
  nnmem_problem_destroy(p);
}

/* The gap pass never makes a plan higher than the same problem without
 * its gaps (every buffer active on its whole hull), for every strategy,
 * and it does use gaps: on some seeds it is strictly lower. */
static void test_gaps_never_worse_than_hull(void **state) {
  (void)state;
  size_t lower = 0;
  print_message("seeds 1..200\n");
  for (uint64_t seed = 1; seed <= 200; seed++) {
    uint64_t s = seed * 0x94D049BB133111EBULL;
    gen_t g, hull;
    generate(&s, &g, 2 + (size_t)rnd(&s, MAXB - 1));
    hull = g;
    for (size_t i = 0; i < g.n; i++) { /* fill the gaps inside the hull */
      int f = -1, l = -1;
      for (int t = 0; t < MAXT; t++)
        if (g.active[i][t]) {
          if (f < 0) f = t;
          l = t + 1;
        }
      for (int t = f; t < l; t++)
        hull.active[i][t] = 1;
    }
    nnmem_problem_t *pg = to_problem(&g), *ph = to_problem(&hull);
    assert_int_equal(nnmem_problem_gapped_count(ph), 0);
    for (int st = 1; st < NNMEM_STRATEGY_COUNT_; st++) {
      nnmem_planner_config_t cfg;
      nnmem_planner_config_init(&cfg);
      cfg.strategy = (nnmem_strategy_t)st;
      nnmem_plan_t *a = tu_plan_verified(pg, &cfg),
                   *b = tu_plan_verified(ph, &cfg);
      if (nnmem_plan_height(a) > nnmem_plan_height(b))
        fail_msg("seed %llu %s: with gaps %llu > hull %llu",
                 (unsigned long long)seed, nnmem_strategy_name(cfg.strategy),
                 (unsigned long long)nnmem_plan_height(a),
                 (unsigned long long)nnmem_plan_height(b));
      lower += nnmem_plan_height(a) < nnmem_plan_height(b);
      nnmem_plan_destroy(a);
      nnmem_plan_destroy(b);
    }
    nnmem_problem_destroy(pg);
    nnmem_problem_destroy(ph);
  }
  print_message("strictly lower with gaps in %zu of 1000 plans\n", lower);
  assert_true(lower > 50);
}

/* Past the quadratic passes' limit (4,096 roots) the occupancy-based gap
 * fit still uses gaps: a chain of 6,000 buffers, each idle in the middle
 * of its life, where two neighbours are never active together, plans in
 * far less than the hull, verified. */
static void test_gapfit_large(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL, *h = NULL;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_create(&h));
  uint64_t s = 0x5EED;
  print_message("seed 0x5EED, 6000 buffers\n");
  for (size_t i = 0; i < 6000; i++) {
    uint64_t size = 1 + tu_rand(&s) % 256, f = i * 2, l = f + 8;
    assert_ok(nnmem_problem_add(p, NULL, size, 1, f, l, NULL));
    assert_ok(nnmem_problem_add(h, NULL, size, 1, f, l, NULL));
    assert_ok(nnmem_problem_add_gap(p, i, f + 2, f + 6)); /* active 2+2 */
  }
  nnmem_plan_t *a = tu_plan_verified(p, NULL), *b = tu_plan_verified(h, NULL);
  uint64_t lb = 0;
  assert_ok(nnmem_problem_lower_bound(p, 1, &lb));
  print_message("gaps: height %llu (bound %llu), hull: %llu\n",
                (unsigned long long)nnmem_plan_height(a),
                (unsigned long long)lb,
                (unsigned long long)nnmem_plan_height(b));
  assert_true(nnmem_plan_height(a) >= lb);
  assert_true(nnmem_plan_height(a) * 3 < nnmem_plan_height(b) * 2);
  nnmem_plan_destroy(a);
  nnmem_plan_destroy(b);
  nnmem_problem_destroy(p);
  nnmem_problem_destroy(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_plans_every_strategy),
      cmocka_unit_test(test_verifier_matches_oracle),
      cmocka_unit_test(test_planted_violations),
      cmocka_unit_test(test_checker_rules),
      cmocka_unit_test(test_round_trips),
      cmocka_unit_test(test_csv_errors),
      cmocka_unit_test(test_json_errors),
      cmocka_unit_test(test_gap_hull_and_bound),
      cmocka_unit_test(test_gaps_never_worse_than_hull),
      cmocka_unit_test(test_gapfit_large),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

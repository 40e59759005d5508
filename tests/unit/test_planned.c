/* test_planned.c - record a run, plan it, serve the next run from the plan:
 * the round trip through CSV and plan JSON files (every plan through the
 * verifier), served blocks inside the plan's height and not overlapping
 * (address-derived fill patterns checked at each free: an oracle that does
 * not use the plan), divergence by size, by order and by a late free
 * (fallback, never failure), auto steps, bad input, and randomized runs
 * with a printed fixed seed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnmem/planned_inline.h"
#include "testutil.h"

enum { MAXB = 4096 };

/* A scripted run: at step s, `nalloc` allocations then frees of earlier
 * blocks. ev: (step, kind 0 alloc / 1 free, block, size). */
typedef struct ev {
  uint32_t step, kind, block, size;
} ev_t;

typedef struct run {
  ev_t ev[4 * MAXB];
  size_t n;
  uint32_t nblocks, nsteps;
} run_t;

static uint64_t seed_g;

/* Which calls play_ex makes: the library's (0), nnmem/planned_inline.h's
 * (1), or the two alternating event by event (2). */
static int calls_g;

static void *do_alloc(nnmem_planned_t *pl, size_t n, size_t i) {
  if (calls_g == 1 || (calls_g == 2 && i % 2))
    return nnmem_planned_alloc_inline(pl, n);
  return nnmem_planned_alloc(pl, n);
}
static void do_free(nnmem_planned_t *pl, void *p, size_t i) {
  if (calls_g == 1 || (calls_g == 2 && i % 2))
    nnmem_planned_free_inline(pl, p);
  else
    nnmem_planned_free(pl, p);
}
static void do_step(nnmem_planned_t *pl, size_t i) {
  if (calls_g == 1 || (calls_g == 2 && i % 2))
    nnmem_step_inline(pl);
  else
    nnmem_step(pl);
}

/* Random run: nsteps steps, each allocates 1..4 blocks of random sizes and
 * frees each live block with probability 1/3; some never freed. */
static void make_run(run_t *r, uint64_t seed, uint32_t nsteps) {
  int live[MAXB];
  memset(r, 0, sizeof *r);
  for (uint32_t s = 0; s < nsteps && r->nblocks < MAXB - 8; s++) {
    uint32_t na = 1 + (uint32_t)(tu_rand(&seed) % 4);
    for (uint32_t k = 0; k < na; k++) {
      uint32_t sz = 16 + (uint32_t)(tu_rand(&seed) % 20000);
      r->ev[r->n++] = (ev_t){s, 0, r->nblocks, sz};
      live[r->nblocks++] = 1;
    }
    for (uint32_t b = 0; b < r->nblocks; b++)
      if (live[b] && tu_rand(&seed) % 3 == 0) {
        r->ev[r->n++] = (ev_t){s, 1, b, 0};
        live[b] = 0;
      }
  }
  r->nsteps = nsteps;
}

static void fill(void *p, uint32_t size, uint32_t tag) {
  unsigned char *c = p;
  for (uint32_t i = 0; i + 1 < size; i += 61)
    c[i] = (unsigned char)(tag * 131 + i);
  c[size - 1] = (unsigned char)(tag * 7 + 3);
}
static void check(const void *p, uint32_t size, uint32_t tag) {
  const unsigned char *c = p;
  for (uint32_t i = 0; i + 1 < size; i += 61)
    if (c[i] != (unsigned char)(tag * 131 + i))
      fail_msg("block %u overwritten at byte %u (seed %llu)", tag, i,
               (unsigned long long)seed_g);
  if (c[size - 1] != (unsigned char)(tag * 7 + 3))
    fail_msg("block %u tail overwritten (seed %llu)", tag,
             (unsigned long long)seed_g);
}

/* How a served run may free differently from the recording, all without
 * diverging: a step's frees reversed or shuffled (the recording keeps no
 * order within a step), or one block freed right after its allocation
 * (earlier than recorded). */
enum { FREES_AS_RECORDED, FREES_REVERSED, FREES_SHUFFLED };

/* Plays `r` on `pl`; `bump` (when not UINT32_MAX) adds 16 bytes to that
 * block's request; `late` delays that block's free to the end; `early`
 * frees that block as soon as it is filled; `order` one of FREES_*. */
static void play_ex(nnmem_planned_t *pl, const run_t *r, int auto_steps,
                    uint32_t bump, uint32_t late, uint32_t early, int order,
                    void **ptrs) {
  static uint32_t size[MAXB];
  static ev_t ev[4 * MAXB];
  uint64_t seed = seed_g ^ 0x5eed;
  memcpy(ev, r->ev, r->n * sizeof *ev);
  for (size_t i = 0, j; i < r->n; i = j) { /* a step's frees, reordered */
    for (j = i + 1; j < r->n && ev[j].step == ev[i].step &&
                    ev[j].kind == ev[i].kind;
         j++)
      ;
    if (ev[i].kind != 1 || order == FREES_AS_RECORDED) continue;
    for (size_t k = j - 1; k > i; k--) { /* reversed: swap the ends in;
                                             shuffled: Fisher-Yates */
      size_t o = order == FREES_REVERSED
                     ? i + (j - 1 - k)
                     : i + (size_t)(tu_rand(&seed) % (k - i + 1));
      if (order == FREES_REVERSED && o >= k) break;
      ev_t t = ev[k];
      ev[k] = ev[o];
      ev[o] = t;
    }
  }
  uint32_t step = 0;
  for (size_t i = 0; i < r->n; i++) {
    const ev_t *e = &ev[i];
    while (!auto_steps && step < e->step) {
      do_step(pl, step);
      step++;
    }
    if (e->kind == 0) {
      size[e->block] = e->size + (e->block == bump ? 16 : 0);
      ptrs[e->block] = do_alloc(pl, size[e->block], i);
      assert_non_null(ptrs[e->block]);
      fill(ptrs[e->block], size[e->block], e->block);
      if (e->block == early) {
        do_free(pl, ptrs[e->block], i);
        ptrs[e->block] = NULL;
      }
    } else if (e->block != late && e->block != early) {
      check(ptrs[e->block], size[e->block], e->block);
      do_free(pl, ptrs[e->block], i);
      ptrs[e->block] = NULL;
    }
  }
  for (uint32_t b = 0; b < r->nblocks; b++)
    if (ptrs[b]) check(ptrs[b], size[b], b);
}

static void play(nnmem_planned_t *pl, const run_t *r, int auto_steps,
                 uint32_t bump, uint32_t late, void **ptrs) {
  play_ex(pl, r, auto_steps, bump, late, UINT32_MAX, FREES_AS_RECORDED, ptrs);
}

/* Record `r`, write the CSV, read it back, plan, write the plan JSON. */
static const char *record_and_plan(nnmem_allocator_t *a, const run_t *r,
                                   int auto_steps, uint64_t *height) {
  nnmem_planned_config_t pc;
  nnmem_planned_config_init(&pc);
  pc.auto_steps = auto_steps;
  nnmem_planned_t *rec;
  assert_ok(nnmem_planned_record(a, &pc, &rec));
  void **ptrs = calloc(MAXB, sizeof *ptrs);
  play(rec, r, auto_steps, UINT32_MAX, UINT32_MAX, ptrs);
  static char csv_path[512], json_path[512];
  snprintf(csv_path, sizeof csv_path, "%s", tu_tmp_path("recorded.csv"));
  snprintf(json_path, sizeof json_path, "%s", tu_tmp_path("next.plan.json"));
  nnmem_diag_t d;
  assert_ok(nnmem_planned_write_csv(rec, csv_path, &d));
  nnmem_planned_stats_t st;
  assert_ok(nnmem_planned_stats(rec, &st));
  assert_int_equal(st.allocs, r->nblocks);
  nnmem_planned_destroy(rec); /* frees the blocks never freed */
  free(ptrs);
  nnmem_csv_t *csv;
  assert_ok(nnmem_csv_read_file(csv_path, &csv, &d));
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  assert_int_equal(nnmem_problem_count(p), r->nblocks);
  nnmem_plan_t *plan = tu_plan_verified(p, NULL);
  *height = nnmem_plan_height(plan);
  assert_ok(nnmem_problem_write_plan_json(p, plan, 1, json_path, &d));
  nnmem_plan_destroy(plan);
  nnmem_csv_destroy(csv);
  return json_path;
}

static void round_trip(uint64_t seed, int auto_steps) {
  seed_g = seed;
  printf("seed %llu auto_steps %d calls %s\n", (unsigned long long)seed,
         auto_steps,
         calls_g == 0 ? "library" : calls_g == 1 ? "inline" : "mixed");
  static run_t r;
  make_run(&r, seed, 300);
  nnmem_allocator_t *a;
  assert_ok(nnmem_allocator_create(NULL, &a));
  uint64_t height;
  const char *json = record_and_plan(a, &r, auto_steps, &height);
  nnmem_planned_config_t pc;
  nnmem_planned_config_init(&pc);
  pc.auto_steps = auto_steps;
  void **ptrs = calloc(MAXB, sizeof *ptrs);
  nnmem_diag_t d;
  nnmem_planned_t *pl;
  /* the same run: everything from the plan, inside its height */
  assert_ok(nnmem_planned_load(a, json, &pc, &pl, &d));
  /* the inline functions' contract: fast paths on exactly when serving
   * without auto steps (and, below, off once serving is disabled) */
  assert_int_equal(((nnmem_planned_hot_t *)(void *)pl)->fast,
                   auto_steps ? 0u : NNMEM_PLANNED_HOT_ABI);
  play(pl, &r, auto_steps, UINT32_MAX, UINT32_MAX, ptrs);
  nnmem_planned_stats_t st;
  assert_ok(nnmem_planned_stats(pl, &st));
  assert_int_equal(st.served, r.nblocks);
  assert_int_equal(st.fallback, 0);
  assert_int_equal(st.height, height);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (uint32_t b = 0; b < r.nblocks; b++) /* blocks still live */
    if (ptrs[b]) {
      if ((uintptr_t)ptrs[b] < lo) lo = (uintptr_t)ptrs[b];
      if ((uintptr_t)ptrs[b] > hi) hi = (uintptr_t)ptrs[b];
    }
  assert_true(hi - lo < height);
  nnmem_planned_destroy(pl);

  /* frees reversed or shuffled within their steps, one block freed early:
   * still everything from the plan, nothing misused, blocks intact */
  for (int order = FREES_REVERSED; order <= FREES_SHUFFLED; order++) {
    memset(ptrs, 0, MAXB * sizeof *ptrs);
    assert_ok(nnmem_planned_load(a, json, &pc, &pl, &d));
    play_ex(pl, &r, auto_steps, UINT32_MAX, UINT32_MAX,
            order == FREES_SHUFFLED ? r.nblocks / 3 : UINT32_MAX, order, ptrs);
    assert_ok(nnmem_planned_stats(pl, &st));
    assert_int_equal(st.served, r.nblocks);
    assert_int_equal(st.fallback, 0);
    assert_int_equal(st.misuse, 0);
    assert_int_equal(st.disabled, 0);
    nnmem_planned_destroy(pl);
  }

  /* one request 16 bytes bigger: that one falls back, the rest served */
  memset(ptrs, 0, MAXB * sizeof *ptrs);
  assert_ok(nnmem_planned_load(a, json, &pc, &pl, &d));
  play(pl, &r, auto_steps, r.nblocks / 2, UINT32_MAX, ptrs);
  assert_ok(nnmem_planned_stats(pl, &st));
  assert_int_equal(st.size_diverged, 1);
  assert_int_equal(st.fallback, 1);
  assert_int_equal(st.served, r.nblocks - 1);
  assert_int_equal(st.disabled, 0);
  nnmem_planned_destroy(pl);

  /* a free delayed to the end: serving stops at its planned end, every
   * block stays intact (the fill patterns), nothing fails */
  uint32_t late = UINT32_MAX;
  for (size_t i = 0; i < r.n && late == UINT32_MAX; i++)
    if (r.ev[i].kind == 1 && r.ev[i].step < r.nsteps / 3) late = r.ev[i].block;
  assert_true(late != UINT32_MAX);
  memset(ptrs, 0, MAXB * sizeof *ptrs);
  assert_ok(nnmem_planned_load(a, json, &pc, &pl, &d));
  play(pl, &r, auto_steps, UINT32_MAX, late, ptrs);
  assert_ok(nnmem_planned_stats(pl, &st));
  assert_int_equal(st.disabled, 1);
  assert_int_equal(((nnmem_planned_hot_t *)(void *)pl)->fast, 0);
  assert_true(st.overstayed >= 1);
  assert_true(st.fallback > 0);
  assert_int_equal(st.served + st.fallback, r.nblocks);
  nnmem_planned_destroy(pl);
  free(ptrs);
  nnmem_allocator_destroy(a);
}

static void test_round_trip_steps(void **state) {
  (void)state;
  for (calls_g = 0; calls_g < 3; calls_g++) {
    round_trip(20261201, 0);
    round_trip(7, 0);
  }
  calls_g = 0;
}

static void test_round_trip_auto(void **state) {
  (void)state;
  for (calls_g = 0; calls_g < 3; calls_g++)
    round_trip(99, 1);
  calls_g = 0;
}

/* More requests in a step than planned, and a step the plan lacks. */
static void test_order_divergence(void **state) {
  (void)state;
  nnmem_problem_t *p;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "0", 100, 1, 0, 2, NULL));
  assert_ok(nnmem_problem_add(p, "1", 200, 1, 1, 2, NULL));
  uint64_t off[2] = {0, 128};
  nnmem_allocator_t *a;
  assert_ok(nnmem_allocator_create(NULL, &a));
  nnmem_planned_t *pl;
  nnmem_diag_t d;
  assert_ok(nnmem_planned_serve(a, p, off, NULL, &pl, &d));
  void *x = nnmem_planned_alloc(pl, 100);
  void *extra = nnmem_planned_alloc(pl, 100); /* step 0 plans one */
  nnmem_step(pl);
  void *y = nnmem_planned_alloc(pl, 200);
  assert_ptr_equal((char *)y - (char *)x, 128);
  size_t us = 0;
  assert_ok(nnmem_planned_usable_size(pl, y, &us));
  assert_int_equal(us, 200);
  assert_ok(nnmem_planned_usable_size(pl, x, &us));
  assert_int_equal(us, 100);
  assert_int_equal(nnmem_planned_usable_size(pl, extra, &us),
                   NNMEM_ERR_INVALID); /* from the pools */
  assert_int_equal(nnmem_planned_usable_size(pl, (char *)y + 8, &us),
                   NNMEM_ERR_INVALID); /* interior */
  nnmem_planned_free(pl, x); /* in step 1: the plan's last step 2 */
  nnmem_planned_free(pl, y);
  assert_int_equal(nnmem_planned_usable_size(pl, y, &us), NNMEM_ERR_INVALID);
  nnmem_planned_free(pl, x);             /* twice: counted, ignored */
  nnmem_planned_free(pl, (char *)y + 8); /* interior: counted, ignored */
  nnmem_step(pl);
  nnmem_step(pl);
  void *z = nnmem_planned_alloc(pl, 50); /* step 3: not in the plan */
  nnmem_planned_stats_t st;
  assert_ok(nnmem_planned_stats(pl, &st));
  assert_int_equal(st.served, 2);
  assert_int_equal(st.order_diverged, 2);
  assert_int_equal(st.fallback, 2);
  assert_int_equal(st.misuse, 2);
  assert_int_equal(st.height, 328);
  nnmem_planned_free(pl, extra);
  nnmem_planned_free(pl, z);
  nnmem_planned_destroy(pl);
  nnmem_problem_destroy(p);
  nnmem_allocator_destroy(a);
}

/* A late free after serving stopped, with a later buffer planned at the
 * same offset served by the pools: the late free is the live block's (not
 * misuse); a second free of it is misuse. `z` is never freed, so the late
 * free of `a` is not the next one in the recorded order and takes the
 * offset table. */
static void test_late_free_same_offset(void **state) {
  (void)state;
  nnmem_problem_t *p;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "z", 100, 1, 0, 1, NULL));
  assert_ok(nnmem_problem_add(p, "a", 100, 1, 0, 2, NULL));
  assert_ok(nnmem_problem_add(p, "b", 100, 1, 2, 4, NULL));
  uint64_t off[3] = {256, 0, 0};
  nnmem_allocator_t *a;
  assert_ok(nnmem_allocator_create(NULL, &a));
  nnmem_planned_t *pl;
  nnmem_diag_t d;
  assert_ok(nnmem_planned_serve(a, p, off, NULL, &pl, &d));
  char *z = nnmem_planned_alloc(pl, 100);
  char *x = nnmem_planned_alloc(pl, 100);
  assert_ptr_equal(z - x, 256);
  memset(x, 1, 100);
  nnmem_step(pl); /* z should be free by now: serving stops */
  nnmem_step(pl);
  char *y = nnmem_planned_alloc_inline(pl, 100); /* b, from the pools */
  assert_true(y < x || y >= x + 100);
  memset(y, 2, 100);
  nnmem_planned_stats_t st;
  assert_ok(nnmem_planned_stats(pl, &st));
  assert_int_equal(st.disabled, 1);
  assert_int_equal(st.overstayed, 2); /* z, then a */
  nnmem_planned_free_inline(pl, x); /* late, not misuse */
  assert_ok(nnmem_planned_stats(pl, &st));
  assert_int_equal(st.misuse, 0);
  nnmem_planned_free(pl, x); /* twice */
  nnmem_planned_free(pl, y);
  nnmem_planned_free(pl, z);
  assert_ok(nnmem_planned_stats(pl, &st));
  assert_int_equal(st.misuse, 1);
  assert_int_equal(st.served, 2);
  assert_int_equal(st.fallback, 1);
  assert_int_equal(st.allocs, 3);
  nnmem_planned_destroy(pl);
  nnmem_problem_destroy(p);
  nnmem_allocator_destroy(a);
}

static void expect_bad(nnmem_problem_t *p, const uint64_t *off,
                       nnmem_status_t want, const char *msg) {
  nnmem_allocator_t *a;
  assert_ok(nnmem_allocator_create(NULL, &a));
  nnmem_planned_t *pl = (nnmem_planned_t *)1;
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_planned_serve(a, p, off, NULL, &pl, &d), want);
  assert_null(pl);
  if (!strstr(d.message, msg)) fail_msg("diag '%s' lacks '%s'", d.message, msg);
  nnmem_allocator_destroy(a);
  nnmem_problem_destroy(p);
}

static void test_bad_input(void **state) {
  (void)state;
  nnmem_problem_t *p;
  uint64_t off[3] = {0, 0, 0};
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "a", 10, 1, 3, 5, NULL));
  assert_ok(nnmem_problem_add(p, "b", 10, 1, 1, 5, NULL));
  expect_bad(p, off, NNMEM_ERR_PARSE, "buffer 'b' (number 2) starts at step 1");
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "a", 10, 1, 0, 5, NULL));
  assert_ok(nnmem_problem_add(p, "b", 10, 1, 1, 5, NULL));
  expect_bad(p, off, NNMEM_ERR_CONFLICT, "");
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "z", 0, 1, 0, 5, NULL));
  expect_bad(p, off, NNMEM_ERR_PARSE, "buffer 'z' (number 1) has size 0");
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "far", 10, 1, 5000, 5001, NULL));
  expect_bad(p, off, NNMEM_ERR_PARSE, "starts at step 5000: too far");
  assert_ok(nnmem_problem_create(&p));
  expect_bad(p, off, NNMEM_ERR_PARSE, "no buffers");

  /* a truncated recorded trace: the CSV reader names the line */
  const char *trunc = "id,lower,upper,size\n0,0,2,100\n1,1,";
  nnmem_csv_t *csv = NULL;
  nnmem_diag_t d = {{0}};
  assert_int_not_equal(
      nnmem_csv_parse(trunc, strlen(trunc), "rec.csv", &csv, &d), NNMEM_OK);
  assert_null(csv);
  if (!strstr(d.message, "rec.csv:3")) fail_msg("diag '%s'", d.message);

  nnmem_allocator_t *a;
  assert_ok(nnmem_allocator_create(NULL, &a));
  nnmem_planned_t *pl;
  assert_int_not_equal(
      nnmem_planned_load(a, tu_tmp_path("absent.json"), NULL, &pl, &d),
      NNMEM_OK);
  assert_null(pl);
  assert_ok(nnmem_planned_record(a, NULL, &pl));
  nnmem_problem_t *empty = NULL;
  assert_int_equal(nnmem_planned_problem(pl, &empty), NNMEM_ERR_STATE);
  size_t us = 0;
  assert_int_equal(nnmem_planned_usable_size(pl, &us, &us), NNMEM_ERR_STATE);
  assert_null(nnmem_planned_alloc(pl, 0));
  nnmem_planned_destroy(pl);
  nnmem_allocator_destroy(a);
}

static int setup(void **state) {
  (void)state;
  return tu_tmpdir_create("planned");
}
static int teardown(void **state) {
  (void)state;
  return tu_tmpdir_remove();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_steps),
      cmocka_unit_test(test_round_trip_auto),
      cmocka_unit_test(test_order_divergence),
      cmocka_unit_test(test_late_free_same_offset),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_profiler.c - the run-time profiler (nnmem/profiler.h): a hand-worked
 * run, random runs on the allocator and on a pool against a brute-force
 * recount (fixed seeds, printed), threads with tags, an arena's reported
 * buffers, the export read back with cJSON (the planner's keys present),
 * all-or-nothing export, nnmem_profile_diff (exact integers, errors naming
 * the file and the key), and the stats ratios of the sampled paths. */
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static nnmem_allocator_t *make_alloc(uint32_t sample) {
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc); /* off, whatever the environment says */
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
  cfg.leaks = &lc;
  cfg.latency_sample = sample;
  nnmem_allocator_t *a = NULL;
  assert_ok(nnmem_allocator_create(&cfg, &a));
  return a;
}

/* Hand-worked: weights 1000 + 3000, then step 0: act 500 + ws 256 (peak
 * 4756 here), free ws; step 1: act 700 (live 5200: the peak), free both
 * activations; step 2: nothing. */
static void test_hand_worked(void **state) {
  (void)state;
  nnmem_allocator_t *a = make_alloc(0);
  void *before = nnmem_alloc(a, 777); /* before start: never seen */
  nnmem_profiler_t *pr;
  assert_ok(nnmem_profiler_start(a, &pr));
  assert_int_equal(nnmem_profiler_tag(pr, NNMEM_TAG_WEIGHT),
                   NNMEM_TAG_ACTIVATION);
  void *w1 = nnmem_alloc(a, 1000), *w2 = nnmem_alloc(a, 3000);
  nnmem_profiler_tag(pr, NNMEM_TAG_ACTIVATION);
  void *x = nnmem_alloc(a, 500);
  nnmem_profiler_tag(pr, NNMEM_TAG_WORKSPACE);
  void *ws = nnmem_alloc_aligned(a, 256, 64);
  nnmem_free(a, ws);
  nnmem_free(a, before); /* not ours: ignored */
  nnmem_profiler_step(pr);
  nnmem_profiler_tag(pr, NNMEM_TAG_ACTIVATION);
  void *y = nnmem_alloc(a, 700);
  nnmem_free(a, x);
  nnmem_free(a, y);
  nnmem_profiler_step(pr);
  assert_ok(nnmem_profiler_stop(pr));
  assert_int_equal(nnmem_profiler_stop(pr), NNMEM_ERR_STATE);
  void *after = nnmem_alloc(a, 64); /* after stop: never seen */
  nnmem_profiler_result_t r;
  assert_ok(nnmem_profiler_result(pr, &r));
  assert_int_equal(r.peak_memory, 5200);
  assert_int_equal(r.weight_memory, 4000);
  assert_int_equal(r.activation_memory, 1200);
  assert_int_equal(r.workspace_memory, 0);
  assert_int_equal(r.arena_height, 1200); /* 500 + 700 */
  assert_int_equal(r.naive_arena, 500 + 256 + 700);
  assert_int_equal(r.naive_memory, 4000 + 1456);
  assert_true(fabs(r.reuse_ratio - (1.0 - 1200.0 / 1456.0)) < 1e-12);
  assert_int_equal(r.peak_step, 1);
  assert_int_equal(r.steps, 3);
  assert_int_equal(r.allocations, 5);
  assert_int_equal(r.frees, 3);
  assert_int_equal(r.live_bytes, 4000);
  assert_int_equal(r.tag_peak[NNMEM_TAG_WORKSPACE], 256);
  assert_int_equal(r.tag_peak[NNMEM_TAG_ACTIVATION], 1200);
  nnmem_profiler_step_figures_t tl[4];
  size_t n = 0;
  assert_ok(nnmem_profiler_timeline(pr, tl, 4, &n));
  assert_int_equal(n, 3);
  assert_int_equal(tl[0].peak_bytes, 4756);
  assert_int_equal(tl[0].by_tag[NNMEM_TAG_WORKSPACE], 256);
  assert_int_equal(tl[1].peak_bytes, 5200);
  assert_int_equal(tl[2].peak_bytes, 4000);
  assert_int_equal(nnmem_profiler_timeline(pr, tl, 1, &n), NNMEM_ERR_OVERFLOW);
  assert_int_equal(n, 3);
  /* one profiler per allocator at a time; a new one after destroy */
  nnmem_profiler_t *pr2;
  nnmem_profiler_destroy(pr);
  assert_ok(nnmem_profiler_start(a, &pr2));
  nnmem_profiler_t *pr3 = (nnmem_profiler_t *)1;
  assert_int_equal(nnmem_profiler_start(a, &pr3), NNMEM_ERR_STATE);
  assert_null(pr3);
  nnmem_profiler_destroy(pr2);
  nnmem_free(a, w1);
  nnmem_free(a, w2);
  nnmem_free(a, after);
  nnmem_allocator_destroy(a);
}

/* ---- random runs against a brute-force recount -------------------------- */

typedef struct live {
  void *p;
  uint64_t size;
  int tag;
} live_t;

typedef struct expect {
  uint64_t peak, at_peak[3], peak_step, arena_peak, naive, weight_alloc;
  uint64_t step_peak[512];
  uint64_t steps;
} expect_t;

/* Recount every figure from the list of live blocks (O(n) per event). */
static void recount(const live_t *lv, size_t n, expect_t *e) {
  uint64_t by[3] = {0, 0, 0}, total = 0;
  for (size_t i = 0; i < n; i++) {
    by[lv[i].tag] += lv[i].size;
    total += lv[i].size;
  }
  if (total > e->peak) {
    e->peak = total;
    memcpy(e->at_peak, by, sizeof by);
    e->peak_step = e->steps;
  }
  if (by[0] + by[2] > e->arena_peak) e->arena_peak = by[0] + by[2];
  if (total > e->step_peak[e->steps]) e->step_peak[e->steps] = total;
}

typedef struct target {
  nnmem_allocator_t *a;
  nnmem_pool_t *pool;
} target_t;

static void *t_alloc(const target_t *t, uint64_t size) {
  if (t->a) return nnmem_alloc(t->a, size);
  void *p = NULL;
  assert_ok(nnmem_pool_alloc(t->pool, size, 16, &p));
  return p;
}

static void t_free(const target_t *t, void *p) {
  if (t->a)
    nnmem_free(t->a, p);
  else
    assert_ok(nnmem_pool_free(t->pool, p));
}

static void random_run(const target_t *t, nnmem_profiler_t *pr, uint64_t seed) {
  printf("random run: seed %llu\n", (unsigned long long)seed);
  uint64_t rng = seed;
  live_t lv[300];
  size_t n = 0;
  expect_t *e = calloc(1, sizeof *e);
  uint64_t allocs = 0, frees = 0;
  for (int ev = 0; ev < 4000; ev++) {
    uint64_t r = tu_rand(&rng);
    if (r % 50 == 0 && e->steps < 511) {
      nnmem_profiler_step(pr);
      e->steps++;
      recount(lv, n, e); /* the step opens at the live bytes */
    } else if (n < 300 && (n == 0 || r % 3 != 0)) {
      int tag = (int)((r >> 8) % 3);
      uint64_t size = 1 + (r >> 16) % (r % 7 == 0 ? 60000 : 3000);
      nnmem_profiler_tag(pr, (nnmem_tag_t)tag);
      lv[n].p = t_alloc(t, size);
      assert_non_null(lv[n].p);
      lv[n].size = size;
      lv[n].tag = tag;
      n++;
      allocs++;
      if (tag == NNMEM_TAG_WEIGHT)
        e->weight_alloc += size;
      else
        e->naive += size;
      recount(lv, n, e);
    } else {
      size_t k = (size_t)((r >> 20) % n);
      t_free(t, lv[k].p);
      lv[k] = lv[--n];
      frees++;
    }
  }
  nnmem_profiler_result_t res;
  assert_ok(nnmem_profiler_result(pr, &res));
  assert_int_equal(res.peak_memory, e->peak);
  assert_int_equal(res.weight_memory, e->at_peak[NNMEM_TAG_WEIGHT]);
  assert_int_equal(res.activation_memory, e->at_peak[NNMEM_TAG_ACTIVATION]);
  assert_int_equal(res.workspace_memory, e->at_peak[NNMEM_TAG_WORKSPACE]);
  assert_int_equal(res.peak_step, e->peak_step);
  assert_int_equal(res.arena_height, e->arena_peak);
  assert_int_equal(res.naive_arena, e->naive);
  assert_int_equal(res.naive_memory, e->naive + e->weight_alloc);
  assert_int_equal(res.allocations, allocs);
  assert_int_equal(res.frees, frees);
  assert_int_equal(res.steps, e->steps + 1);
  nnmem_profiler_step_figures_t *tl = calloc(e->steps + 1, sizeof *tl);
  size_t m = 0;
  assert_ok(nnmem_profiler_timeline(pr, tl, e->steps + 1, &m));
  assert_int_equal(m, e->steps + 1);
  for (size_t s = 0; s < m; s++) {
    assert_int_equal(tl[s].step, s);
    assert_int_equal(tl[s].peak_bytes, e->step_peak[s]);
  }
  for (size_t i = 0; i < n; i++)
    t_free(t, lv[i].p);
  free(tl);
  free(e);
}

static void test_random_allocator(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 3; seed++) {
    nnmem_allocator_t *a = make_alloc(0);
    nnmem_profiler_t *pr;
    assert_ok(nnmem_profiler_start_allocator(a, &pr));
    target_t t = {a, NULL};
    random_run(&t, pr, seed * 7919);
    nnmem_profiler_destroy(pr);
    nnmem_allocator_destroy(a);
  }
}

static void test_random_pool(void **state) {
  (void)state;
  nnmem_backend_t *b;
  assert_ok(nnmem_backend_host_create(&b));
  nnmem_pool_t *pool;
  assert_ok(nnmem_pool_create(NNMEM_POOL_TLSF, NULL, b, &pool));
  nnmem_profiler_t *pr;
  assert_ok(nnmem_profiler_start(pool, &pr));
  assert_int_equal(nnmem_profiler_start_pool(pool, &(nnmem_profiler_t *){0}),
                   NNMEM_ERR_STATE);
  target_t t = {NULL, pool};
  random_run(&t, pr, 424242);
  assert_ok(nnmem_profiler_stop(pr));
  nnmem_profiler_result_t r;
  assert_ok(nnmem_profiler_result(pr, &r));
  /* the pool's own peak counts the same requested bytes */
  assert_int_equal(r.stats.requested_bytes_peak, r.peak_memory);
  assert_string_equal(r.stats.name, "tlsf0");
  nnmem_profiler_destroy(pr);
  nnmem_pool_destroy(pool);
  nnmem_backend_destroy(b);
}

/* ---- threads: tags are per thread --------------------------------------- */

#define THREADS 4
#define W_BYTES 5000
static pthread_barrier_t barrier;

typedef struct job {
  nnmem_allocator_t *a;
  nnmem_profiler_t *pr;
} job_t;

static void *worker(void *arg) {
  job_t *j = arg;
  nnmem_profiler_tag(j->pr, NNMEM_TAG_WEIGHT);
  void *w = nnmem_alloc(j->a, W_BYTES);
  nnmem_profiler_tag(j->pr, NNMEM_TAG_WORKSPACE);
  void *ws[100];
  for (int i = 0; i < 100; i++)
    ws[i] = nnmem_alloc(j->a, 64 + (size_t)i);
  for (int i = 0; i < 100; i++)
    nnmem_free(j->a, ws[i]);
  pthread_barrier_wait(&barrier); /* every weight live at once here */
  pthread_barrier_wait(&barrier);
  nnmem_free(j->a, w);
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  nnmem_allocator_t *a = make_alloc(0);
  nnmem_profiler_t *pr;
  assert_ok(nnmem_profiler_start(a, &pr));
  pthread_t th[THREADS];
  job_t j = {a, pr};
  pthread_barrier_init(&barrier, NULL, THREADS + 1);
  for (int i = 0; i < THREADS; i++)
    pthread_create(&th[i], NULL, worker, &j);
  pthread_barrier_wait(&barrier);
  nnmem_profiler_result_t r;
  assert_ok(nnmem_profiler_result(pr, &r));
  assert_int_equal(r.live_bytes, THREADS * W_BYTES);
  pthread_barrier_wait(&barrier);
  for (int i = 0; i < THREADS; i++)
    pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);
  assert_ok(nnmem_profiler_result(pr, &r));
  assert_int_equal(r.allocations, THREADS * 101);
  assert_int_equal(r.frees, THREADS * 101);
  assert_int_equal(r.live_bytes, 0);
  assert_int_equal(r.tag_peak[NNMEM_TAG_WEIGHT], THREADS * W_BYTES);
  assert_int_equal(r.tag_peak[NNMEM_TAG_ACTIVATION], 0); /* all tagged */
  uint64_t ws_one = 100 * 64 + 99 * 100 / 2;
  assert_true(r.tag_peak[NNMEM_TAG_WORKSPACE] >= ws_one);
  assert_true(r.tag_peak[NNMEM_TAG_WORKSPACE] <= THREADS * ws_one);
  assert_int_equal(r.naive_arena, THREADS * ws_one);
  nnmem_profiler_destroy(pr);
  nnmem_allocator_destroy(a);
}

/* ---- an arena: the caller reports its buffers --------------------------- */

static void test_arena(void **state) {
  (void)state;
  nnmem_problem_t *p;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "a", 1000, 16, 0, 2, NULL));
  assert_ok(nnmem_problem_add(p, "b", 2000, 16, 1, 3, NULL));
  assert_ok(nnmem_problem_add(p, "c", 1500, 16, 2, 4, NULL));
  nnmem_plan_t *plan = tu_plan_verified(p, NULL);
  nnmem_backend_t *be;
  assert_ok(nnmem_backend_host_create(&be));
  nnmem_arena_t *ar;
  assert_ok(nnmem_arena_create(p, plan, be, &ar, NULL));
  nnmem_profiler_t *pr;
  assert_ok(nnmem_profiler_start(ar, &pr));
  void *addr[3];
  uint64_t size[3] = {1000, 2000, 1500};
  for (size_t i = 0; i < 3; i++)
    assert_ok(nnmem_arena_address(ar, 0, i, &addr[i]));
  /* steps 0..3 of the problem: a [0,2), b [1,3), c [2,4) */
  assert_ok(
      nnmem_profiler_record_alloc(pr, addr[0], size[0], NNMEM_TAG_ACTIVATION));
  assert_int_equal(
      nnmem_profiler_record_alloc(pr, addr[0], 5, NNMEM_TAG_ACTIVATION),
      NNMEM_ERR_INVALID); /* already live */
  nnmem_profiler_step(pr);
  assert_ok(
      nnmem_profiler_record_alloc(pr, addr[1], size[1], NNMEM_TAG_ACTIVATION));
  nnmem_profiler_step(pr);
  assert_ok(nnmem_profiler_record_free(pr, addr[0]));
  assert_int_equal(nnmem_profiler_record_free(pr, addr[0]), NNMEM_ERR_INVALID);
  assert_ok(
      nnmem_profiler_record_alloc(pr, addr[2], size[2], NNMEM_TAG_ACTIVATION));
  nnmem_profiler_step(pr);
  assert_ok(nnmem_profiler_record_free(pr, addr[1]));
  assert_ok(nnmem_profiler_record_free(pr, addr[2]));
  assert_ok(nnmem_profiler_stop(pr));
  assert_int_equal(
      nnmem_profiler_record_alloc(pr, addr[0], 1, NNMEM_TAG_WEIGHT),
      NNMEM_ERR_STATE);
  nnmem_profiler_result_t r;
  assert_ok(nnmem_profiler_result(pr, &r));
  /* max-live by hand: step 1 {a, b} = 3000, step 2 {b, c} = 3500 */
  assert_int_equal(r.peak_memory, 3500);
  assert_int_equal(r.peak_step, 2);
  nnmem_arena_info_t info;
  nnmem_arena_info(ar, &info);
  assert_int_equal(r.stats.reserved_bytes, info.size);
  assert_true(info.size >= r.peak_memory); /* a plan is never below max-live */
  nnmem_profiler_destroy(pr);
  nnmem_arena_destroy(ar);
  nnmem_backend_destroy(be);
  nnmem_plan_destroy(plan);
  nnmem_problem_destroy(p);
}

/* ---- export and diff ---------------------------------------------------- */

static int setup(void **state) {
  (void)state;
  return tu_tmpdir_create("profiler");
}
static int teardown(void **state) {
  (void)state;
  return tu_tmpdir_remove();
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char *buf = malloc(1 << 20);
  *len = fread(buf, 1, (1 << 20) - 1, f);
  buf[*len] = '\0';
  fclose(f);
  return buf;
}

static nnmem_profiler_t *small_profile(nnmem_allocator_t *a) {
  nnmem_profiler_t *pr;
  assert_ok(nnmem_profiler_start(a, &pr));
  nnmem_profiler_tag(pr, NNMEM_TAG_WEIGHT);
  void *w = nnmem_alloc(a, 4096);
  nnmem_profiler_tag(pr, NNMEM_TAG_ACTIVATION);
  void *x = nnmem_alloc(a, 100000);
  nnmem_profiler_step(pr);
  nnmem_free(a, x);
  nnmem_free(a, w);
  assert_ok(nnmem_profiler_stop(pr));
  return pr;
}

static void test_export_keys(void **state) {
  (void)state;
  nnmem_allocator_t *a = make_alloc(0);
  nnmem_profiler_t *pr = small_profile(a);
  const char *path = tu_tmp_path("measured.json");
  nnmem_diag_t d = {0};
  assert_ok(nnmem_profiler_export(pr, path, &d));
  size_t len;
  char *text = slurp(path, &len);
  cJSON *j = cJSON_Parse(text);
  assert_non_null(j);
  /* the planner's document: every key a run can have is in ours */
  nnmem_profile_t prof;
  memset(&prof, 0, sizeof prof);
  prof.size = sizeof prof;
  char *planned;
  assert_ok(nnmem_profile_format_json(&prof, NULL, &planned));
  cJSON *pj = cJSON_Parse(planned);
  static const char *const plan_only[] = {"bound_kind",      "optimal",
                                          "naive_saturated", "strategy",
                                          "tensors",         "plan_seconds"};
  int shared = 0;
  for (cJSON *k = pj->child; k; k = k->next) {
    int skip = 0;
    for (size_t i = 0; i < sizeof plan_only / sizeof *plan_only; i++)
      skip |= strcmp(k->string, plan_only[i]) == 0;
    if (skip) continue;
    if (!cJSON_GetObjectItemCaseSensitive(j, k->string))
      fail_msg("measured profile lacks the planner's key '%s'", k->string);
    shared++;
  }
  assert_true(shared >= 10);
  assert_int_equal(cJSON_GetObjectItem(j, "peak_memory")->valuedouble, 104096);
  assert_int_equal(cJSON_GetObjectItem(j, "weight_memory")->valuedouble, 4096);
  cJSON *tl = cJSON_GetObjectItem(j, "timeline");
  assert_int_equal(cJSON_GetArraySize(tl), 2);
  cJSON *pool0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "pools"), 0);
  assert_string_equal(cJSON_GetObjectItem(pool0, "pool")->valuestring,
                      "allocator");
  cJSON_Delete(pj);
  free(planned);
  /* diff against itself: every delta 0 */
  char *out = NULL;
  double excess = -1;
  assert_ok(nnmem_profile_diff(text, len, "m1", text, len, "m2", 1, &out,
                               &excess, &d));
  assert_true(excess == 0.0);
  cJSON *dj = cJSON_Parse(out);
  assert_non_null(dj);
  cJSON *keys = cJSON_GetObjectItem(dj, "keys");
  assert_int_equal(cJSON_GetArraySize(keys), 10);
  for (cJSON *k = keys->child; k; k = k->next)
    assert_true(cJSON_GetObjectItem(k, "delta")->valuedouble == 0);
  assert_int_equal(cJSON_GetObjectItem(dj, "steps_compared")->valuedouble, 2);
  cJSON_Delete(dj);
  free(out);
  cJSON_Delete(j);
  free(text);
  /* all or nothing: a folder that does not exist leaves nothing behind */
  int before = tu_tmpdir_count();
  assert_int_not_equal(
      nnmem_profiler_export(pr, tu_tmp_path("no/such/dir/p.json"), &d),
      NNMEM_OK);
  assert_int_equal(tu_tmpdir_count(), before);
  nnmem_profiler_destroy(pr);
  nnmem_allocator_destroy(a);
}

static const char planned_doc[] =
    "{\"peak_memory\": 18446744073709551615, \"weight_memory\": 1,\n"
    " \"activation_memory\": 9007199254740993, \"workspace_memory\": 0,\n"
    " \"reuse_ratio\": 0.5, \"strategy\": \"greedy-size\"}\n";
static const char measured_doc[] =
    "{\"peak_memory\": 18446744073709551614, \"weight_memory\": 1,\n"
    " \"activation_memory\": 9007199254740992, \"workspace_memory\": 0,\n"
    " \"reuse_ratio\": 0.25, \"naive_arena\": 5,\n"
    " \"timeline\": [{\"step\": 0, \"peak_bytes\": 7}]}\n";

static void test_diff_exact(void **state) {
  (void)state;
  char *out = NULL;
  double excess;
  nnmem_diag_t d = {0};
  assert_ok(nnmem_profile_diff(planned_doc, strlen(planned_doc), "p.json",
                               measured_doc, strlen(measured_doc), "m.json", 0,
                               &out, &excess, &d));
  /* 2^53 + 1 against 2^53: a double reader would see no difference */
  assert_non_null(strstr(out, "9007199254740993     9007199254740992"));
  assert_non_null(strstr(out, "18446744073709551615 18446744073709551614"));
  assert_non_null(strstr(out, "only in B: naive_arena, timeline"));
  assert_true(excess < 0);
  free(out);
  assert_ok(nnmem_profile_diff(planned_doc, strlen(planned_doc), "p.json",
                               measured_doc, strlen(measured_doc), "m.json", 1,
                               &out, NULL, &d));
  assert_non_null(strstr(out, "\"delta\": -1"));
  free(out);
}

static void expect_error(const char *doc, const char *want) {
  char *out = (char *)1;
  nnmem_diag_t d = {0};
  nnmem_status_t st =
      nnmem_profile_diff(planned_doc, strlen(planned_doc), "p.json", doc,
                         strlen(doc), "bad.json", 0, &out, NULL, &d);
  assert_int_equal(st, NNMEM_ERR_PARSE);
  assert_null(out);
  if (!strstr(d.message, want))
    fail_msg("message '%s' lacks '%s'", d.message, want);
}

static void test_diff_errors(void **state) {
  (void)state;
  expect_error("[1, 2]", "bad.json: not a memory profile");
  expect_error("{\"peak_memory\": 1", "bad.json: not valid JSON");
  expect_error(
      "{\"peak_memory\": 1, \"weight_memory\": 1, "
      "\"activation_memory\": 1}",
      "bad.json: key 'workspace_memory': missing");
  expect_error(
      "{\"peak_memory\": -1, \"weight_memory\": 1, "
      "\"activation_memory\": 1, \"workspace_memory\": 1}",
      "bad.json: key 'peak_memory': must be an integer");
  expect_error(
      "{\"peak_memory\": 18446744073709551616, \"weight_memory\": 1, "
      "\"activation_memory\": 1, \"workspace_memory\": 1}",
      "key 'peak_memory'");
  expect_error(
      "{\"peak_memory\": 1, \"peak_memory\": 2, \"weight_memory\": 1, "
      "\"activation_memory\": 1, \"workspace_memory\": 1}",
      "key 'peak_memory': given twice");
  expect_error(
      "{\"peak_memory\": 1, \"weight_memory\": 1, "
      "\"activation_memory\": 1, \"workspace_memory\": 1, "
      "\"timeline\": [{\"step\": 1, \"peak_bytes\": 1}, "
      "{\"step\": 1, \"peak_bytes\": 2}]}",
      "key 'timeline[1]': steps must increase");
  expect_error(
      "{\"peak_memory\": 1, \"weight_memory\": 1, "
      "\"activation_memory\": 1, \"workspace_memory\": 1, "
      "\"reuse_ratio\": \"x\"}",
      "key 'reuse_ratio': must be a number");
}

/* ---- the stats of the sampled paths ------------------------------------- */

static void test_cached_path_latency_and_hit_rate(void **state) {
  (void)state;
  nnmem_allocator_t *a = make_alloc(1); /* every call timed */
  void *p[1000];
  for (int i = 0; i < 1000; i++)
    p[i] = nnmem_alloc(a, 16);
  for (int i = 0; i < 1000; i++)
    nnmem_free(a, p[i]);
  nnmem_stats_t s;
  assert_ok(nnmem_allocator_stats(a, &s));
  /* 1000 allocs + 1000 frees on the cached path, plus the shared pools'
   * own timed calls (the one page taken) */
  assert_true(s.latency_samples >= 2000);
  uint64_t in_hist = 0;
  for (int b = 0; b < NNMEM_STATS_LAT_BUCKETS; b++)
    in_hist += s.latency_hist[b];
  assert_int_equal(in_hist, s.latency_samples);
  /* one page of (65536 - 128) / 16 = 4088 blocks: one miss, 999 hits */
  assert_int_equal(s.cache_misses, 1);
  assert_int_equal(s.cache_hits, 999);
  assert_true(nnmem_stats_hit_rate(&s) == 999.0 / 1000.0);
  nnmem_allocator_destroy(a);
  /* sampled 1 in 64: 2000 cached calls give 31 samples (the countdown
   * starts at 64: calls 64, 128, ..., 1984) */
  a = make_alloc(0);
  for (int i = 0; i < 1000; i++)
    p[i] = nnmem_alloc(a, 16);
  for (int i = 0; i < 1000; i++)
    nnmem_free(a, p[i]);
  nnmem_stats_t s2;
  assert_ok(nnmem_allocator_stats(a, &s2));
  /* plus at most the shared pools' first call of each (their countdown
   * also starts at 64: one page taken, nothing large) */
  assert_true(s2.latency_samples >= 31);
  assert_true(s2.latency_samples <= 31 + 2);
  nnmem_allocator_destroy(a);
  nnmem_stats_t none;
  nnmem_stats_init(&none);
  assert_true(isnan(nnmem_stats_hit_rate(&none)));
  assert_true(nnmem_stats_lock_contention(&none) == 0.0);
  none.lock_acquisitions = 8;
  none.lock_contended = 2;
  assert_true(nnmem_stats_lock_contention(&none) == 0.25);
}

/* Lock contention driven into the contended state: two threads hammer the
 * shared pool (256 KiB blocks: past the thread caches) until a try-lock
 * failed (at most 50 rounds); the ratio is then recomputed by hand. */
static void *hammer(void *arg) {
  nnmem_allocator_t *a = arg;
  for (int i = 0; i < 20000; i++)
    nnmem_free(a, nnmem_alloc(a, 256u << 10));
  return NULL;
}

static void test_contention(void **state) {
  (void)state;
  nnmem_allocator_t *a = make_alloc(0);
  nnmem_stats_t s;
  int round = 0;
  do {
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
      pthread_create(&th[t], NULL, hammer, a);
    for (int t = 0; t < 2; t++)
      pthread_join(th[t], NULL);
    assert_ok(nnmem_allocator_stats(a, &s));
  } while (s.lock_contended == 0 && ++round < 50);
  printf("contention: %llu of %llu acquisitions after %d round(s)\n",
         (unsigned long long)s.lock_contended,
         (unsigned long long)s.lock_acquisitions, round + 1);
  assert_true(s.lock_contended > 0);
  assert_true(s.lock_acquisitions >= 2 * 2 * 20000ULL); /* alloc + free */
  assert_true(nnmem_stats_lock_contention(&s) ==
              (double)s.lock_contended / (double)s.lock_acquisitions);
  nnmem_allocator_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_worked),
      cmocka_unit_test(test_random_allocator),
      cmocka_unit_test(test_random_pool),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_arena),
      cmocka_unit_test(test_export_keys),
      cmocka_unit_test(test_diff_exact),
      cmocka_unit_test(test_diff_errors),
      cmocka_unit_test(test_cached_path_latency_and_hit_rate),
      cmocka_unit_test(test_contention),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

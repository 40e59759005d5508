/* test_replenish.c - asynchronous replenishment of the fixed pool, driven
 * deterministically: the executor hook queues the refill task and the test
 * decides when it runs, so every count below is computed by hand from the
 * watermark rule (10% of all blocks, refill to twice that) and checked
 * against the simulated device's own request counter. Also: a full
 * device (refusal counted, the pool goes quiet until it is empty),
 * the capacity, bad configs with diag. The pool's own thread is tested in
 * test_stress_replenish.c (label stress). */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

enum { BLOCK = 256, PER_CHUNK = 64 };

typedef struct exec {
  void (*task)(void *);
  void *arg;
  int submitted;
} exec_t;

static void submit(void *user, void (*task)(void *), void *arg) {
  exec_t *e = user;
  assert_null(e->task); /* at most one refill in flight */
  e->task = task;
  e->arg = arg;
  e->submitted++;
}

static void run_task(exec_t *e) {
  assert_non_null(e->task);
  void (*t)(void *) = e->task;
  e->task = NULL;
  t(e->arg);
}

static nnmem_pool_t *make(nnmem_backend_t *b, exec_t *e, uint64_t capacity) {
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  c.block_size = BLOCK;
  c.chunk_size = BLOCK * PER_CHUNK;
  c.capacity = capacity;
  c.replenish = 1;
  c.replenish_submit = e ? submit : NULL;
  c.replenish_user = e;
  nnmem_pool_t *p = NULL;
  nnmem_diag_t d = {{0}};
  if (nnmem_pool_create_diag(NNMEM_POOL_FIXED, &c, b, &p, &d) != NNMEM_OK)
    fail_msg("create: %s", d.message);
  return p;
}

static void check(nnmem_pool_t *p) {
  nnmem_diag_t d = {{0}};
  if (nnmem_pool_check(p, &d) != NNMEM_OK) fail_msg("%s", d.message);
}

static uint64_t requests(nnmem_backend_t *b) {
  nnmem_sim_counters_t c;
  assert_ok(nnmem_backend_sim_counters(b, &c));
  return c.requests;
}

static nnmem_stats_t stats(nnmem_pool_t *p) {
  nnmem_stats_t s;
  assert_ok(nnmem_pool_stats(p, &s));
  return s;
}

/* Allocates n blocks into v[*k...]. */
static void take(nnmem_pool_t *p, void **v, int *k, int n) {
  for (int i = 0; i < n; i++) {
    assert_ok(nnmem_pool_alloc(p, BLOCK, 0, &v[*k]));
    (*k)++;
  }
}

static void test_watermark(void **state) {
  (void)state;
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_sim_create(NULL, &b));
  exec_t e = {0};
  nnmem_pool_t *p = make(b, &e, 0);
  void *v[400];
  int k = 0;
  /* 1st allocation: empty, a chunk taken synchronously (64 free, 63 left).
   * 1 chunk: mark = 64 x 10% = 6; free blocks fall to 5 at the 59th. */
  take(p, v, &k, 58);
  assert_int_equal(e.submitted, 0);
  assert_int_equal(stats(p).empty_hits, 1);
  take(p, v, &k, 1);
  assert_int_equal(e.submitted, 1);
  take(p, v, &k, 3); /* pending: no second request */
  assert_int_equal(e.submitted, 1);
  assert_int_equal(requests(b), 1);
  run_task(&e); /* one chunk: 2 + 64 = 66 free >= 2 x 12 (mark of 128) */
  check(p);
  nnmem_stats_t s = stats(p);
  assert_int_equal(s.refills, 1);
  assert_int_equal(s.backend_allocs, 2);
  assert_int_equal(requests(b), 2);
  assert_int_equal(s.free_bytes, 66 * BLOCK);
  /* 66 free, mark 12: the request comes when 11 are left, 55 later */
  take(p, v, &k, 54);
  assert_int_equal(e.submitted, 1);
  take(p, v, &k, 1);
  assert_int_equal(e.submitted, 2);
  /* let the pool run dry before the executor gets to it: the 12th
   * allocation from here finds it empty and waits on the backend */
  take(p, v, &k, 11);
  assert_int_equal(stats(p).empty_hits, 1);
  take(p, v, &k, 1);
  s = stats(p);
  assert_int_equal(s.empty_hits, 2);
  assert_int_equal(requests(b), 3);
  /* 63 free: the late task takes one chunk (4 chunks: mark 25, 127 >= 50) */
  run_task(&e);
  s = stats(p);
  assert_int_equal(s.refills, 2);
  assert_int_equal(s.free_bytes, 127 * BLOCK);
  assert_int_equal(requests(b), 4);
  assert_int_equal(s.backend_allocs, s.refills + s.empty_hits);
  check(p);
  for (int i = 0; i < k; i++)
    assert_ok(nnmem_pool_free(p, v[i]));
  check(p);
  nnmem_pool_destroy(p);
  nnmem_backend_destroy(b);
}

/* The refill asks for many chunks when far below: mark = 10% of 1 chunk =
 * 6, yet low_watermark 100 (blocks) wins: refill to 200 free. */
static void test_low_watermark_blocks(void **state) {
  (void)state;
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_sim_create(NULL, &b));
  exec_t e = {0};
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  c.block_size = BLOCK;
  c.chunk_size = BLOCK * PER_CHUNK;
  c.replenish = 1;
  c.low_watermark = 100;
  c.replenish_submit = submit;
  c.replenish_user = &e;
  nnmem_pool_t *p = NULL;
  assert_ok(nnmem_pool_create(NNMEM_POOL_FIXED, &c, b, &p));
  void *v[4];
  int k = 0;
  take(p, v, &k, 1); /* 63 free < 100 */
  assert_int_equal(e.submitted, 1);
  run_task(&e); /* 63 + 64 x 3 = 255 >= 200 (63 + 128 = 191 is not) */
  nnmem_stats_t s = stats(p);
  assert_int_equal(s.refills, 3);
  assert_int_equal(s.free_bytes, 255 * BLOCK);
  check(p);
  assert_ok(nnmem_pool_free(p, v[0]));
  nnmem_pool_destroy(p);
  nnmem_backend_destroy(b);
}

/* A refused refill is counted and the pool stays quiet (no request per
 * allocation against a full device) until it finds itself empty; the
 * capacity stops the refill without a backend request. */
static void test_refused_and_capacity(void **state) {
  (void)state;
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_sim_create(NULL, &b));
  exec_t e = {0};
  nnmem_pool_t *p = make(b, &e, 2 * BLOCK * PER_CHUNK);
  void *v[200];
  int k = 0;
  take(p, v, &k, 59); /* request 1 (sync), then the refill is asked for */
  assert_int_equal(e.submitted, 1);
  assert_ok(nnmem_backend_sim_fail_at(b, 1, 0));
  run_task(&e);
  nnmem_stats_t s = stats(p);
  assert_int_equal(s.refill_failures, 1);
  assert_int_equal(s.refills, 0);
  assert_int_equal(s.reserved_bytes, BLOCK * PER_CHUNK); /* undone */
  take(p, v, &k, 5); /* quiet: 4 .. 0 free, no new request */
  assert_int_equal(e.submitted, 1);
  take(p, v, &k, 1); /* empty: sync grow (request 3), quiet lifted */
  s = stats(p);
  assert_int_equal(s.empty_hits, 2);
  assert_int_equal(requests(b), 3);
  take(p, v, &k, 63 - 11); /* 11 free < 12: asked again */
  assert_int_equal(e.submitted, 2);
  uint64_t before = requests(b);
  run_task(&e); /* at capacity: nothing taken, nothing asked */
  assert_int_equal(requests(b), before);
  take(p, v, &k, 11); /* quiet again: no request per allocation */
  assert_int_equal(e.submitted, 2);
  void *x = NULL;
  assert_int_equal(nnmem_pool_alloc(p, BLOCK, 0, &x), NNMEM_ERR_NOMEM);
  s = stats(p);
  assert_int_equal(s.failed_count, 1);
  assert_int_equal(s.reserved_bytes, 2 * BLOCK * PER_CHUNK);
  check(p);
  for (int i = 0; i < k; i++)
    assert_ok(nnmem_pool_free(p, v[i]));
  nnmem_pool_destroy(p);
  nnmem_backend_destroy(b);
}

static void test_bad_config(void **state) {
  (void)state;
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_sim_create(NULL, &b));
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  c.replenish = 1;
  nnmem_pool_t *p = NULL;
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_pool_create_diag(NNMEM_POOL_TLSF, &c, b, &p, &d),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "fixed pool only"));
  c.block_size = 64;
  c.replenish_percent = 101;
  assert_int_equal(nnmem_pool_create_diag(NNMEM_POOL_FIXED, &c, b, &p, &d),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "101"));
  assert_null(p);
  nnmem_backend_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_watermark),
      cmocka_unit_test(test_low_watermark_blocks),
      cmocka_unit_test(test_refused_and_capacity),
      cmocka_unit_test(test_bad_config),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

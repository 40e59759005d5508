/* test_quarantine.c - the allocator's quarantine (quarantine_bytes): a
 * freed block comes back only once the FIFO let it go; a second free
 * while it is held is refused and counted, from any thread; the held
 * bytes follow an independent model of the FIFO (random sizes, small,
 * large and aligned, fixed seed) and never exceed the budget; the fill
 * finds a write after free; leak records, fork, threads (remote frees,
 * racing double frees, thread exit), the stats renderings, and tagged
 * caches left out. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "runtime/allocator_internal.h"
#include "testutil.h"

static nnmem_allocator_t *make(uint64_t budget, int fill,
                               void (*on_write)(void *, const void *),
                               void *ctx) {
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
  cfg.quarantine_bytes = budget;
  cfg.quarantine_fill = fill;
  cfg.on_quarantine_write = on_write;
  cfg.misuse_ctx = ctx;
  nnmem_allocator_t *a = NULL;
  assert_ok(nnmem_allocator_create(&cfg, &a));
  return a;
}

static nnmem_stats_t stats(nnmem_allocator_t *a) {
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(a, &st));
  return st;
}

/* Frees a block larger than the budget: it pushes every held block
 * out, then leaves itself (the FIFO is empty after). */
static void push_all_out(nnmem_allocator_t *a, uint64_t budget) {
  void *big = nnmem_alloc(a, budget + 1);
  assert_non_null(big);
  assert_ok(nnmem_allocator_free(a, big));
  nnmem_stats_t st = stats(a);
  assert_int_equal(st.quarantine_blocks, 0);
  assert_int_equal(st.quarantine_bytes, 0);
}

/* 100-byte blocks (class 112), a budget of 10 of them: a freed block stays
 * out of use while 9 more are freed after it, leaves with the 10th, and
 * is then the next block of its class (its span's free list is LIFO). */
static void test_reuse_after_release(void **state) {
  (void)state;
  enum { K = 10, N = 64 };
  nnmem_allocator_t *a = make(K * 112, 0, NULL, NULL);
  char *b[N], *p;
  assert_non_null(p = nnmem_alloc(a, 100));
  for (int i = 0; i < N; i++)
    assert_non_null(b[i] = nnmem_alloc(a, 100));
  assert_ok(nnmem_allocator_free(a, p));
  for (int i = 0; i < K - 1; i++)
    assert_ok(nnmem_allocator_free(a, b[i]));
  nnmem_stats_t st = stats(a);
  assert_int_equal(st.quarantine_blocks, K);
  assert_int_equal(st.quarantine_bytes, K * 112);
  assert_int_equal(st.live_count, N + 1); /* held blocks count until they go */
  /* p and the 9 others are held: 2N allocations of their class, none of
   * them one of the held blocks */
  char *c[2 * N];
  for (int i = 0; i < 2 * N; i++) {
    assert_non_null(c[i] = nnmem_alloc(a, 100));
    assert_ptr_not_equal(c[i], p);
    for (int j = 0; j < K - 1; j++)
      assert_ptr_not_equal(c[i], b[j]);
  }
  for (int i = 0; i < 2 * N; i++) /* ... held in turn, each pushing one out */
    assert_ok(nnmem_allocator_free(a, c[i]));
  st = stats(a);
  assert_int_equal(st.quarantine_blocks, K);
  assert_int_equal(st.misuse_count, 0);
  /* the last 10 freed are c[2N-10 .. 2N-1]; p went long ago and came back
   * to its span: a fresh allocation may get it now */
  push_all_out(a, K * 112);
  st = stats(a);
  assert_int_equal(st.live_count, N - (K - 1));
  nnmem_allocator_destroy(a);
}

/* The exact moment: the block leaves with the free that takes the held
 * bytes over the budget, and is then the next block handed out. */
static void test_leaves_in_order(void **state) {
  (void)state;
  enum { K = 4 };
  nnmem_allocator_t *a = make(K * 48, 0, NULL, NULL);
  char *b[K + 1];
  for (int i = 0; i <= K; i++)
    assert_non_null(b[i] = nnmem_alloc(a, 48));
  for (int i = 0; i < K; i++)
    assert_ok(nnmem_allocator_free(a, b[i]));
  char *x = nnmem_alloc(a, 48); /* all four held */
  for (int i = 0; i < K; i++)
    assert_ptr_not_equal(x, b[i]);
  assert_ok(nnmem_allocator_free(a, b[K])); /* b[0] leaves */
  char *y = nnmem_alloc(a, 48);
  assert_ptr_equal(y, b[0]);
  assert_ok(nnmem_allocator_free(a, x)); /* b[1] leaves */
  assert_ptr_equal(nnmem_alloc(a, 48), b[1]);
  nnmem_allocator_destroy(a);
}

/* A second free while the block is held: refused (NNMEM_ERR_INVALID) and
 * counted, nothing changes; the same for large and aligned blocks, and
 * after the block left (it is free: its tag). */
static void test_double_free_in_window(void **state) {
  (void)state;
  nnmem_allocator_t *a = make(1 << 20, 0, NULL, NULL);
  void *s = nnmem_alloc(a, 64);
  void *l = nnmem_alloc(a, 300 << 10);           /* shared pool */
  void *al = nnmem_alloc_aligned(a, 1000, 256);  /* shared pool, aligned */
  void *h = nnmem_alloc(a, 2 << 20);             /* over the budget */
  assert_non_null(s);
  assert_non_null(l);
  assert_non_null(al);
  assert_non_null(h);
  assert_ok(nnmem_allocator_free(a, s));
  assert_ok(nnmem_allocator_free(a, l));
  assert_ok(nnmem_allocator_free(a, al));
  nnmem_stats_t st = stats(a);
  assert_int_equal(st.quarantine_blocks, 3);
  uint64_t held = st.quarantine_bytes;
  assert_true(held >= 64 + (300 << 10) + 1000);
  assert_int_equal(nnmem_allocator_free(a, s), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_allocator_free(a, l), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_allocator_free(a, al), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_allocator_free(a, (char *)s + 16),
                   NNMEM_ERR_INVALID); /* interior, as without */
  st = stats(a);
  assert_int_equal(st.misuse_count, 4);
  assert_int_equal(st.quarantine_blocks, 3);
  assert_int_equal(st.quarantine_bytes, held);
  /* a block over the budget passes through, pushing the others out */
  assert_ok(nnmem_allocator_free(a, h));
  st = stats(a);
  assert_int_equal(st.quarantine_blocks, 0);
  assert_int_equal(st.live_count, 0);
  /* now free (the small one tagged, the large ones gone from the pool) */
  assert_int_equal(nnmem_allocator_free(a, s), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_allocator_free(a, l), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_allocator_free(a, h), NNMEM_ERR_INVALID);
  st = stats(a);
  assert_int_equal(st.misuse_count, 7);
  nnmem_allocator_destroy(a);
}

/* Random sizes (small, large, aligned), frees in random order, against a
 * model FIFO of {block, usable size} (the budget rule written again):
 * after every free, the allocator's held bytes and blocks equal the
 * model's, and stay within the budget; no allocation returns a block the
 * model holds. */
typedef struct model {
  void *p[4096];
  uint64_t n[4096];
  size_t head, count;
  uint64_t bytes;
} model_t;

static int model_holds(const model_t *m, const void *p) {
  for (size_t i = 0; i < m->count; i++)
    if (m->p[(m->head + i) % 4096] == p) return 1;
  return 0;
}

static void model_free(model_t *m, void *p, uint64_t n, uint64_t budget) {
  m->p[(m->head + m->count) % 4096] = p;
  m->n[(m->head + m->count) % 4096] = n;
  m->count++;
  m->bytes += n;
  while (m->count && m->bytes > budget) {
    m->bytes -= m->n[m->head];
    m->head = (m->head + 1) % 4096;
    m->count--;
  }
}

static void test_budget_model(void **state) {
  (void)state;
  const uint64_t seed = 0x9a3c51d7ull, budget = 3u << 20;
  printf("test_budget_model: seed 0x%llx\n", (unsigned long long)seed);
  uint64_t rs = seed;
  nnmem_allocator_t *a = make(budget, 0, NULL, NULL);
  static model_t m;
  memset(&m, 0, sizeof m);
  enum { LIVE = 256, STEPS = 20000 };
  void *live[LIVE] = {0};
  for (int step = 0; step < STEPS; step++) {
    int i = (int)(tu_rand(&rs) % LIVE);
    if (live[i]) {
      size_t n = 0;
      assert_ok(nnmem__allocator_usable_size(a, live[i], &n));
      assert_ok(nnmem_allocator_free(a, live[i]));
      model_free(&m, live[i], n, budget);
      live[i] = NULL;
      nnmem_stats_t st = stats(a);
      if (st.quarantine_bytes != m.bytes || st.quarantine_blocks != m.count)
        fail_msg("seed 0x%llx step %d: held %llu B / %llu blocks, model "
                 "%llu / %zu",
                 (unsigned long long)seed, step,
                 (unsigned long long)st.quarantine_bytes,
                 (unsigned long long)st.quarantine_blocks,
                 (unsigned long long)m.bytes, m.count);
      assert_true(st.quarantine_bytes <= budget);
      continue;
    }
    uint64_t r = tu_rand(&rs), kind = r % 16;
    size_t size = kind < 12   ? 1 + (size_t)(r >> 8) % 2048
                  : kind < 15 ? 8192 + (size_t)(r >> 8) % (400 << 10)
                              : 1 + (size_t)(r >> 8) % 5000;
    void *p = kind == 15 ? nnmem_alloc_aligned(a, size, 64) : nnmem_alloc(a, size);
    assert_non_null(p);
    if (model_holds(&m, p))
      fail_msg("seed 0x%llx step %d: %p handed out while held",
               (unsigned long long)seed, step, p);
    memset(p, (int)step, size);
    live[i] = p;
  }
  nnmem_stats_t st = stats(a);
  assert_int_equal(st.misuse_count, 0);
  for (int i = 0; i < LIVE; i++)
    if (live[i]) assert_ok(nnmem_allocator_free(a, live[i]));
  push_all_out(a, budget);
  nnmem_allocator_thread_flush(a);
  st = stats(a);
  assert_int_equal(st.live_count, 0);
  nnmem_allocator_destroy(a);
}

/* quarantine_fill: a held block written after its free is reported once
 * when it leaves (and freed all the same); untouched held blocks are
 * not. The first 16 bytes (link and tag words) are not filled. */
static void test_fill_finds_writes(void **state) {
  (void)state;
  tu_ptr_log_t w = {{0}, 0};
  nnmem_allocator_t *a = make(4 * 256, 1, tu_log_ptr, &w);
  unsigned char *b[8];
  for (int i = 0; i < 8; i++)
    assert_non_null(b[i] = nnmem_alloc(a, 256));
  for (int i = 0; i < 4; i++)
    assert_ok(nnmem_allocator_free(a, b[i]));
  assert_int_equal(b[1][100], 0xdb); /* filled */
  b[1][100] = 1;                     /* a write after free */
  b[2][255] = 0;
  for (int i = 4; i < 8; i++) /* b[0..3] leave */
    assert_ok(nnmem_allocator_free(a, b[i]));
  assert_int_equal(w.n, 2);
  assert_ptr_equal(w.p[0], b[1]);
  assert_ptr_equal(w.p[1], b[2]);
  nnmem_stats_t st = stats(a);
  assert_int_equal(st.quarantine_writes, 2);
  assert_int_equal(st.misuse_count, 0);
  push_all_out(a, 4 * 256);
  assert_int_equal(w.n, 2);
  assert_int_equal(stats(a).live_count, 0);
  nnmem_allocator_destroy(a);
}

/* Leak records see the program's free at the call: a held block has no
 * record; the records' page marks stay consistent. */
static void test_leak_records(void **state) {
  (void)state;
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  lc.mode = NNMEM_LEAKS_FULL;
  lc.depth = 0;
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
  cfg.leaks = &lc;
  cfg.quarantine_bytes = 1 << 20;
  cfg.free_batch = 64; /* off while the quarantine is on */
  nnmem_allocator_t *a = NULL;
  assert_ok(nnmem_allocator_create(&cfg, &a));
  void *b[20];
  for (int i = 0; i < 20; i++)
    assert_non_null(b[i] = nnmem_alloc(a, i < 15 ? 100 : 200 << 10));
  for (int i = 0; i < 20; i += 2)
    assert_ok(nnmem_allocator_free(a, b[i]));
  assert_int_equal(nnmem_allocator_free(a, b[0]), NNMEM_ERR_INVALID);
  nnmem_leaks_summary_t sum;
  assert_ok(nnmem_allocator_leaks_summary(a, &sum));
  assert_int_equal(sum.records, 10);
  nnmem_diag_t d;
  if (nnmem__allocator_leaks_check(a, &d) != NNMEM_OK) fail_msg("%s", d.message);
  for (int i = 1; i < 20; i += 2)
    assert_ok(nnmem_allocator_free(a, b[i]));
  push_all_out(a, 1 << 20);
  assert_ok(nnmem_allocator_leaks_summary(a, &sum));
  assert_int_equal(sum.records, 0);
  if (nnmem__allocator_leaks_check(a, &d) != NNMEM_OK) fail_msg("%s", d.message);
  nnmem_allocator_destroy(a);
}

/* Threads: each of 4 threads allocates, frees half of its blocks itself
 * and hands the other half to the next thread (remote frees; thread
 * exits meanwhile: the FIFO is the allocator's, blocks of exited threads
 * leave to their parked caches); then 2 threads free the same 1,000
 * blocks at once (racing double frees): exactly one free of each
 * succeeds. At the end every block came back once: live 0, misuse exact. */
enum { T = 4, PER = 2000, RACE = 1000 };

typedef struct worker {
  nnmem_allocator_t *a;
  int id;
  void **mine, **theirs; /* theirs: filled by the previous thread */
  _Atomic int *ready;
} worker_t;

static void *work(void *arg) {
  worker_t *w = arg;
  for (int i = 0; i < PER; i++) {
    size_t n = 16 + (size_t)((w->id * 7919 + i * 104729) % 3000);
    if (i % 97 == 0) n = 150 << 10;
    w->mine[i] = nnmem_alloc(w->a, n);
    if (!w->mine[i]) return (void *)1;
    memset(w->mine[i], w->id, 16);
  }
  atomic_fetch_add(w->ready, 1);
  while (atomic_load(w->ready) < T) {
  }
  for (int i = 0; i < PER; i += 2) /* our own half */
    if (nnmem_allocator_free(w->a, w->mine[i]) != NNMEM_OK) return (void *)1;
  for (int i = 1; i < PER; i += 2) /* the previous thread's other half */
    if (nnmem_allocator_free(w->a, w->theirs[i]) != NNMEM_OK) return (void *)1;
  return NULL;
}

typedef struct racer {
  nnmem_allocator_t *a;
  void **blk;
  _Atomic int *go;
  int ok;
} racer_t;

static void *race(void *arg) {
  racer_t *r = arg;
  while (!atomic_load(r->go)) {
  }
  for (int i = 0; i < RACE; i++)
    r->ok += nnmem_allocator_free(r->a, r->blk[i]) == NNMEM_OK;
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  const uint64_t budget = 256 << 10;
  nnmem_allocator_t *a = make(budget, 1, NULL, NULL);
  static void *blk[T][PER];
  _Atomic int ready = 0;
  worker_t w[T];
  pthread_t th[T];
  for (int t = 0; t < T; t++) {
    w[t] = (worker_t){a, t, blk[t], blk[(t + T - 1) % T], &ready};
    assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
  }
  for (int t = 0; t < T; t++) {
    void *rv;
    pthread_join(th[t], &rv);
    assert_null(rv);
  }
  nnmem_stats_t st = stats(a);
  assert_true(st.quarantine_bytes <= budget);
  assert_int_equal(st.misuse_count, 0);
  /* racing double frees, from two threads at once */
  static void *rb[RACE];
  for (int i = 0; i < RACE; i++)
    assert_non_null(rb[i] = nnmem_alloc(a, 32 + (size_t)(i % 5) * 100));
  _Atomic int go = 0;
  racer_t r[2] = {{a, rb, &go, 0}, {a, rb, &go, 0}};
  pthread_t rt[2];
  for (int k = 0; k < 2; k++)
    assert_int_equal(pthread_create(&rt[k], NULL, race, &r[k]), 0);
  atomic_store(&go, 1);
  for (int k = 0; k < 2; k++)
    pthread_join(rt[k], NULL);
  assert_int_equal(r[0].ok + r[1].ok, RACE);
  push_all_out(a, budget);
  nnmem_allocator_thread_flush(a);
  st = stats(a);
  assert_int_equal(st.misuse_count, RACE);
  assert_int_equal(st.live_count, 0);
  assert_int_equal(st.quarantine_writes, 0);
  /* every block came back once: 4,000 allocations are distinct */
  static void *c[4000];
  for (int i = 0; i < 4000; i++)
    assert_non_null(c[i] = nnmem_alloc(a, 32 + (size_t)(i % 5) * 100));
  for (int i = 0; i < 4000; i++) {
    for (int j = i + 1; j < 4000; j++)
      if (c[i] == c[j]) fail_msg("block %p handed out twice", c[i]);
  }
  for (int i = 0; i < 4000; i++)
    nnmem_free(a, c[i]);
  nnmem_allocator_destroy(a);
}

/* Fork while another thread frees into the quarantine: the hooks take its
 * mutex too (a child forked while it is held would hang at its first
 * free); each child frees, allocates and exits, an alarm ends a hung one. */
typedef struct churn {
  nnmem_allocator_t *a;
  _Atomic int stop;
} churn_t;

static void *churn(void *arg) {
  churn_t *c = arg;
  while (!atomic_load(&c->stop)) {
    void *p = nnmem_alloc(c->a, 200);
    void *q = nnmem_alloc(c->a, 200 << 10);
    nnmem_free(c->a, p);
    nnmem_free(c->a, q);
  }
  return NULL;
}

static void test_fork(void **state) {
  (void)state;
  nnmem_allocator_t *a = make(64 << 10, 0, NULL, NULL);
  churn_t c = {a, 0};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, churn, &c), 0);
  for (int k = 0; k < 20; k++) {
    nnmem__allocator_fork_prepare(a);
    pid_t pid = fork();
    if (pid == 0) {
      nnmem__allocator_fork_child(a);
      alarm(10);
      for (int i = 0; i < 100; i++) {
        void *p = nnmem_alloc(a, 200);
        if (!p || nnmem_allocator_free(a, p) != NNMEM_OK) _exit(1);
        if (nnmem_allocator_free(a, p) == NNMEM_OK) _exit(2); /* held */
      }
      _exit(0);
    }
    nnmem__allocator_fork_parent(a);
    assert_true(pid > 0);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
  }
  atomic_store(&c.stop, 1);
  pthread_join(t, NULL);
  nnmem_allocator_destroy(a);
}

/* The held bytes and blocks in the stats' JSON (parsed back) and
 * Prometheus text; 0 without a quarantine. */
static void test_stats_rendered(void **state) {
  (void)state;
  nnmem_allocator_t *a = make(1 << 20, 0, NULL, NULL);
  void *p = nnmem_alloc(a, 1000), *q = nnmem_alloc(a, 200 << 10);
  nnmem_free(a, p);
  nnmem_free(a, q);
  nnmem_stats_t st = stats(a);
  assert_int_equal(st.version, 4);
  assert_int_equal(st.quarantine_blocks, 2);
  char buf[16384];
  assert_ok(nnmem_stats_format_json(&st, 1, buf, sizeof buf, NULL));
  cJSON *doc = cJSON_Parse(buf);
  assert_non_null(doc);
  cJSON *o = cJSON_GetArrayItem(doc, 0);
  assert_int_equal(
      cJSON_GetNumberValue(cJSON_GetObjectItem(o, "quarantine_blocks")), 2);
  assert_true(
      cJSON_GetNumberValue(cJSON_GetObjectItem(o, "quarantine_bytes")) ==
      (double)st.quarantine_bytes);
  cJSON_Delete(doc);
  assert_ok(nnmem_stats_format_prometheus(&st, 1, buf, sizeof buf, NULL));
  assert_non_null(
      strstr(buf, "nnmem_pool_quarantine_blocks{pool=\"allocator\"} 2\n"));
  nnmem_allocator_destroy(a);
  a = make(0, 0, NULL, NULL); /* off */
  p = nnmem_alloc(a, 1000);
  nnmem_free(a, p);
  assert_int_equal(nnmem_allocator_free(a, p), NNMEM_ERR_INVALID);
  assert_ptr_equal(nnmem_alloc(a, 1000), p); /* reused at once */
  st = stats(a);
  assert_int_equal(st.quarantine_blocks, 0);
  assert_int_equal(st.quarantine_bytes, 0);
  nnmem_allocator_destroy(a);
}

/* A tagged cache's block (tenant domains, which tell live blocks by their
 * tags alone) freed with nnmem_free is not held: it goes to its cache's
 * remote stack at once, as without a quarantine. */
static void test_tagged_cache_not_held(void **state) {
  (void)state;
  nnmem_allocator_t *a = make(1 << 20, 0, NULL, NULL);
  nnmem__tcache_t *tc = NULL;
  static int tag;
  assert_ok(nnmem__tcache_create(a, &tag, &tc));
  uint32_t usable = 0;
  void *p = nnmem__tcache_alloc(tc, 100, &usable);
  assert_non_null(p);
  assert_true(nnmem__tcache_block_live(a, p));
  assert_ok(nnmem_allocator_free(a, p));
  assert_false(nnmem__tcache_block_live(a, p));
  assert_int_equal(stats(a).quarantine_blocks, 0);
  assert_int_equal(nnmem_allocator_free(a, p), NNMEM_ERR_INVALID);
  nnmem__tcache_release(tc);
  nnmem_allocator_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reuse_after_release),
      cmocka_unit_test(test_leaves_in_order),
      cmocka_unit_test(test_double_free_in_window),
      cmocka_unit_test(test_budget_model),
      cmocka_unit_test(test_fill_finds_writes),
      cmocka_unit_test(test_leak_records),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_fork),
      cmocka_unit_test(test_stats_rendered),
      cmocka_unit_test(test_tagged_cache_not_held),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

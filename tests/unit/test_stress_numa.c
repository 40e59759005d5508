/* test_stress_numa.c - four threads on a simulated 4-node topology (each
 * thread's cpu injected through a thread-local variable: thread i runs on
 * cpu 2i + 1, node i) allocate from one NUMA pool, stamp each block with a
 * pattern of its address, and hand a share of their blocks to the next
 * thread, which checks and frees them. The test counts on its own side
 * which frees crossed nodes; afterwards every node's remote_frees equals
 * that count, every allocation stayed on its thread's node, nothing is
 * live and every node's pool passes its checker. Nodes 1-3 do not exist
 * on a one-node machine: their memory is host memory (the fallback path).
 * Fixed seeds, printed. Label `stress` (TSan in `make test`). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

enum { NODES = 4, CPUS = 8, THREADS = 4, OPS = 40000, SLOTS = 256, BOX = 64 };

static const uint32_t cpu_node[CPUS] = {0, 0, 1, 1, 2, 2, 3, 3};
static _Thread_local int t_cpu;

static int my_cpu(void *user) {
  (void)user;
  return t_cpu;
}

typedef struct box {
  pthread_mutex_t mu;
  void *blk[BOX];
  size_t size[BOX];
  int n;
} box_t;

typedef struct worker {
  int id;
  uint64_t seed, bad, wrong_node, handed, allocs;
} worker_t;

static nnmem_numa_pool_t *g_np;
static box_t g_box[THREADS];
static atomic_int g_done;

static void stamp(unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(((uintptr_t)p >> 4) + i);
}

static int intact(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(((uintptr_t)p >> 4) + i)) return 0;
  return 1;
}

static void release(worker_t *w, void *p, size_t n) {
  if (!intact(p, n) || nnmem_numa_free(g_np, p) != NNMEM_OK) w->bad++;
}

/* Frees what other threads handed to w. */
static void drain(worker_t *w) {
  box_t *b = &g_box[w->id];
  pthread_mutex_lock(&b->mu);
  for (int i = 0; i < b->n; i++)
    release(w, b->blk[i], b->size[i]);
  b->n = 0;
  pthread_mutex_unlock(&b->mu);
}

static void *work(void *arg) {
  worker_t *w = arg;
  t_cpu = 2 * w->id + 1;
  uint64_t rng = w->seed;
  void *blk[SLOTS] = {0};
  size_t size[SLOTS] = {0};
  for (int op = 0; op < OPS; op++) {
    int k = (int)(tu_rand(&rng) % SLOTS);
    if (blk[k]) {
      box_t *b = &g_box[(w->id + 1) % THREADS];
      int handed = 0;
      if (tu_rand(&rng) % 4 == 0) { /* a quarter go to the next thread */
        pthread_mutex_lock(&b->mu);
        if (b->n < BOX) {
          b->blk[b->n] = blk[k];
          b->size[b->n++] = size[k];
          handed = 1;
        }
        pthread_mutex_unlock(&b->mu);
      }
      if (handed)
        w->handed++;
      else
        release(w, blk[k], size[k]);
      blk[k] = NULL;
    } else {
      size[k] = 16 + (size_t)(tu_rand(&rng) % 4096);
      if (nnmem_numa_alloc(g_np, size[k], 0, &blk[k]) != NNMEM_OK) {
        w->bad++;
        continue;
      }
      uint32_t node = 99;
      if (nnmem_numa_node_of(g_np, blk[k], &node) != NNMEM_OK ||
          node != (uint32_t)w->id)
        w->wrong_node++;
      stamp(blk[k], size[k]);
      w->allocs++;
    }
    if (op % 64 == 0) drain(w);
  }
  for (int k = 0; k < SLOTS; k++)
    if (blk[k]) release(w, blk[k], size[k]);
  atomic_fetch_add(&g_done, 1);
  while (atomic_load(&g_done) < THREADS)
    drain(w);
  drain(w);
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  nnmem_numa_topology_t t = {sizeof t, NODES, CPUS, cpu_node, my_cpu, NULL};
  nnmem_numa_config_t c;
  nnmem_numa_config_init(&c);
  c.topology = &t;
  c.kind = NNMEM_POOL_TLSF;
  nnmem_diag_t d = {{0}};
  if (nnmem_numa_pool_create(&c, &g_np, &d) != NNMEM_OK)
    fail_msg("create: %s", d.message);
  worker_t w[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) {
    pthread_mutex_init(&g_box[i].mu, NULL);
    g_box[i].n = 0;
    w[i] = (worker_t){.id = i, .seed = 0xa11ce + (uint64_t)i * 104729};
    printf("numa stress: thread %d on node %d, seed %llu\n", i, i,
           (unsigned long long)w[i].seed);
  }
  for (int i = 0; i < THREADS; i++)
    assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
  for (int i = 0; i < THREADS; i++)
    pthread_join(th[i], NULL);
  nnmem_stats_t s[NODES + 1];
  assert_ok(nnmem_numa_stats(g_np, s, NODES + 1, NULL));
  for (int i = 0; i < THREADS; i++) {
    assert_int_equal(w[i].bad, 0);
    assert_int_equal(w[i].wrong_node, 0);
    /* blocks thread i handed on were allocated on node i and freed by a
     * thread of node i + 1: exactly node i's remote frees */
    assert_int_equal(s[1 + i].remote_frees, w[i].handed);
    assert_int_equal(s[1 + i].alloc_count, w[i].allocs);
    assert_int_equal(s[1 + i].live_count, 0);
    assert_int_equal(s[1 + i].remote_allocs, 0);
    printf("  node %d: %llu allocations, %llu remote frees\n", i,
           (unsigned long long)w[i].allocs, (unsigned long long)w[i].handed);
  }
  assert_int_equal(s[0].misuse_count, 0);
  nnmem_numa_pool_destroy(g_np);
  for (int i = 0; i < THREADS; i++)
    pthread_mutex_destroy(&g_box[i].mu);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

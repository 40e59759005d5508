/* test_numa.c - NUMA pools on a simulated topology (4 nodes, 8 cpus, the
 * caller's cpu injected) with one simulated device per node, so the routing
 * is checked against each device's own request counters: allocations land
 * on the caller's node, frees from another node count as remote, a full
 * node falls back (or not, strict), bad node ids and bad topologies are
 * refused with a diag, stats per node and in total read back through the
 * JSON writer and a JSON parser. On this machine's real topology: node 0's
 * memory is bound with MPOL_BIND, read back with get_mempolicy (a system
 * call made here, not through nnmem). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testutil.h"

enum { NODES = 4, CPUS = 8 };
static const uint32_t cpu_node[CPUS] = {0, 0, 1, 1, 2, 2, 3, 3};
static int g_cpu;

static int fake_cpu(void *user) {
  (void)user;
  return g_cpu;
}

typedef struct fixture {
  nnmem_backend_t *dev[NODES];
  nnmem_numa_pool_t *np;
} fixture_t;

/* Fixed pools of 1 KiB blocks, 64 per chunk, capacity one chunk a node. */
static void setup(fixture_t *f, int strict) {
  /* backed: distinct host addresses per device (unbacked simulated
   * devices all count from 2^44, and a free is routed by address) */
  nnmem_sim_config_t sc = {0};
  sc.backed = 1;
  for (int k = 0; k < NODES; k++)
    assert_ok(nnmem_backend_sim_create(&sc, &f->dev[k]));
  nnmem_numa_topology_t t = {sizeof t, NODES, CPUS, cpu_node, fake_cpu, NULL};
  nnmem_pool_config_t pc;
  nnmem_pool_config_init(&pc);
  pc.block_size = 1024;
  pc.chunk_size = 64 * 1024;
  pc.capacity = 64 * 1024;
  nnmem_numa_config_t c;
  nnmem_numa_config_init(&c);
  c.kind = NNMEM_POOL_FIXED;
  c.pool = &pc;
  c.topology = &t;
  c.backends = f->dev;
  c.strict = strict;
  nnmem_diag_t d = {{0}};
  if (nnmem_numa_pool_create(&c, &f->np, &d) != NNMEM_OK)
    fail_msg("create: %s", d.message);
}

static void teardown(fixture_t *f) {
  nnmem_numa_pool_destroy(f->np);
  for (int k = 0; k < NODES; k++)
    nnmem_backend_destroy(f->dev[k]);
}

static uint64_t dev_requests(fixture_t *f, int k) {
  nnmem_sim_counters_t c;
  assert_ok(nnmem_backend_sim_counters(f->dev[k], &c));
  return c.requests;
}

static void stats(fixture_t *f, nnmem_stats_t *s) {
  size_t n = 0;
  assert_ok(nnmem_numa_stats(f->np, s, NODES + 1, &n));
  assert_int_equal(n, NODES + 1);
}

static void test_routing(void **state) {
  (void)state;
  fixture_t f;
  setup(&f, 0);
  assert_int_equal(nnmem_numa_nodes(f.np), NODES);
  void *p[CPUS];
  for (int c = 0; c < CPUS; c++) {
    g_cpu = c;
    assert_int_equal(nnmem_numa_current_node(f.np), cpu_node[c]);
    assert_ok(nnmem_numa_alloc(f.np, 1000, 0, &p[c]));
    uint32_t k = 99;
    assert_ok(nnmem_numa_node_of(f.np, p[c], &k));
    assert_int_equal(k, cpu_node[c]);
  }
  for (int k = 0; k < NODES; k++) /* one chunk per node, from its device */
    assert_int_equal(dev_requests(&f, k), 1);
  nnmem_stats_t s[NODES + 1];
  stats(&f, s);
  assert_string_equal(s[0].name, "numa");
  assert_int_equal(s[0].alloc_count, CPUS);
  for (int k = 0; k < NODES; k++) {
    char want[32];
    snprintf(want, sizeof want, "numa.node%d", k);
    assert_string_equal(s[1 + k].name, want);
    assert_int_equal(s[1 + k].alloc_count, 2);
    assert_int_equal(s[1 + k].live_count, 2);
  }
  /* frees: cpu 0 (node 0) frees node 3's two blocks and its own */
  g_cpu = 0;
  assert_ok(nnmem_numa_free(f.np, p[6]));
  assert_ok(nnmem_numa_free(f.np, p[7]));
  assert_ok(nnmem_numa_free(f.np, p[1]));
  g_cpu = 5; /* node 2 frees its own */
  assert_ok(nnmem_numa_free(f.np, p[4]));
  stats(&f, s);
  assert_int_equal(s[4].remote_frees, 2);
  assert_int_equal(s[4].live_count, 0);
  assert_int_equal(s[1].remote_frees, 0);
  assert_int_equal(s[3].remote_frees, 0);
  assert_int_equal(s[0].remote_frees, 2);
  assert_int_equal(s[0].live_count, 4);
  /* misuse: a double free and a foreign pointer, nothing changes */
  int local;
  assert_int_equal(nnmem_numa_free(f.np, p[6]), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_numa_free(f.np, &local), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_numa_node_of(f.np, &local, &(uint32_t){0}),
                   NNMEM_ERR_INVALID);
  stats(&f, s);
  assert_int_equal(s[0].misuse_count, 2);
  assert_int_equal(s[0].live_count, 4);
  for (int c = 0; c < CPUS; c++)
    if (c != 1 && c != 4 && c != 6 && c != 7)
      assert_ok(nnmem_numa_free(f.np, p[c]));
  teardown(&f);
}

/* Node 1 (cpus 2, 3) holds 64 blocks; the 65th from cpu 2 goes to node 2
 * (the next one) unless strict. */
static void test_fallback(void **state) {
  (void)state;
  for (int strict = 0; strict < 2; strict++) {
    fixture_t f;
    setup(&f, strict);
    void *p[65];
    g_cpu = 2;
    for (int i = 0; i < 64; i++)
      assert_ok(nnmem_numa_alloc(f.np, 1024, 0, &p[i]));
    nnmem_status_t s = nnmem_numa_alloc(f.np, 1024, 0, &p[64]);
    nnmem_stats_t st[NODES + 1];
    stats(&f, st);
    if (strict) {
      assert_int_equal(s, NNMEM_ERR_NOMEM);
      assert_null(p[64]);
      assert_int_equal(st[0].remote_allocs, 0);
    } else {
      assert_ok(s);
      uint32_t k = 0;
      assert_ok(nnmem_numa_node_of(f.np, p[64], &k));
      assert_int_equal(k, 2);
      assert_int_equal(st[3].remote_allocs, 1);
      assert_int_equal(st[2].remote_allocs, 0);
      assert_int_equal(dev_requests(&f, 2), 1);
      assert_ok(nnmem_numa_free(f.np, p[64])); /* node 1's cpu: remote */
      stats(&f, st);
      assert_int_equal(st[3].remote_frees, 1);
    }
    assert_int_equal(st[2].failed_count, 1); /* node 1 refused once */
    for (int i = 0; i < 64; i++)
      assert_ok(nnmem_numa_free(f.np, p[i]));
    teardown(&f);
  }
}

static void test_bad_node(void **state) {
  (void)state;
  fixture_t f;
  setup(&f, 0);
  void *p = (void *)1;
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_numa_alloc_onnode(f.np, NODES, 64, 0, &p, &d),
                   NNMEM_ERR_INVALID);
  assert_null(p);
  assert_non_null(strstr(d.message, "node 4 does not exist"));
  assert_int_equal(nnmem_numa_alloc_onnode(f.np, UINT32_MAX, 64, 0, &p, NULL),
                   NNMEM_ERR_INVALID);
  g_cpu = 0;
  assert_ok(nnmem_numa_alloc_onnode(f.np, 3, 64, 0, &p, &d));
  uint32_t k = 0;
  assert_ok(nnmem_numa_node_of(f.np, p, &k));
  assert_int_equal(k, 3);
  assert_int_equal(dev_requests(&f, 0), 0);
  g_cpu = 999; /* a cpu outside the map counts as node 0 */
  assert_int_equal(nnmem_numa_current_node(f.np), 0);
  g_cpu = -1;
  assert_int_equal(nnmem_numa_current_node(f.np), 0);
  nnmem_stats_t s[NODES + 1];
  size_t n = 0;
  assert_int_equal(nnmem_numa_stats(f.np, s, 2, &n), NNMEM_ERR_OVERFLOW);
  assert_int_equal(n, NODES + 1);
  stats(&f, s);
  assert_int_equal(s[0].bad_node_requests, 2);
  assert_int_equal(s[0].alloc_count, 1);
  assert_ok(nnmem_numa_free(f.np, p));
  teardown(&f);
}

static void test_bad_topology(void **state) {
  (void)state;
  uint32_t map[2] = {0, 5};
  nnmem_numa_topology_t t = {sizeof t, 4, 2, map, NULL, NULL};
  nnmem_numa_config_t c;
  nnmem_numa_config_init(&c);
  c.topology = &t;
  nnmem_numa_pool_t *np = (void *)1;
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_numa_pool_create(&c, &np, &d), NNMEM_ERR_INVALID);
  assert_null(np);
  assert_non_null(strstr(d.message, "cpu 1 is on node 5"));
  t.nodes = 0;
  assert_int_equal(nnmem_numa_pool_create(&c, &np, &d), NNMEM_ERR_INVALID);
  t.nodes = NNMEM_NUMA_MAX_NODES + 1;
  assert_int_equal(nnmem_numa_pool_create(&c, &np, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "65 nodes"));
  t.nodes = 8;
  t.cpus = 0;
  assert_int_equal(nnmem_numa_pool_create(&c, &np, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "no cpus"));
  /* a backend list with a hole */
  t.cpus = 2;
  nnmem_backend_t *none[8] = {0};
  c.backends = none;
  assert_int_equal(nnmem_numa_pool_create(&c, &np, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "node 0"));
  /* a bad pool config of the nodes: fixed without block_size */
  c.backends = NULL;
  c.kind = NNMEM_POOL_FIXED;
  assert_int_equal(nnmem_numa_pool_create(&c, &np, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "block_size"));
}

/* Per-node stats through the JSON writer, read back with cJSON; the
 * Prometheus text names the node label. */
static void test_stats_render(void **state) {
  (void)state;
  fixture_t f;
  setup(&f, 0);
  void *p;
  g_cpu = 7;
  assert_ok(nnmem_numa_alloc(f.np, 10, 0, &p));
  g_cpu = 0;
  assert_ok(nnmem_numa_free(f.np, p));
  nnmem_stats_t s[NODES + 1];
  stats(&f, s);
  char buf[1 << 16];
  assert_ok(nnmem_stats_format_json(s, NODES + 1, buf, sizeof buf, NULL));
  cJSON *j = cJSON_Parse(buf);
  assert_non_null(j);
  assert_int_equal(cJSON_GetArraySize(j), NODES + 1);
  cJSON *n3 = cJSON_GetArrayItem(j, 4);
  assert_string_equal(cJSON_GetObjectItem(n3, "pool")->valuestring,
                      "numa.node3");
  assert_int_equal(cJSON_GetObjectItem(n3, "remote_frees_total")->valueint, 1);
  assert_int_equal(cJSON_GetObjectItem(n3, "allocations_total")->valueint, 1);
  cJSON *tot = cJSON_GetArrayItem(j, 0);
  assert_int_equal(cJSON_GetObjectItem(tot, "remote_frees_total")->valueint, 1);
  assert_int_equal(
      cJSON_GetObjectItem(tot, "backend_allocations_total")->valueint, 1);
  cJSON_Delete(j);
  assert_ok(nnmem_stats_format_prometheus(s, NODES + 1, buf, sizeof buf, NULL));
  assert_non_null(
      strstr(buf, "nnmem_pool_remote_frees_total{pool=\"numa.node3\"} 1\n"));
  assert_non_null(
      strstr(buf, "nnmem_pool_remote_frees_total{pool=\"numa.node2\"} 0\n"));
  teardown(&f);
}

/* This machine. With libnuma and NUMA support: node memory is bound to its
 * node (MPOL_BIND, the node's bit set), and once touched, its pages are on
 * that node. Without: one node of host memory. */
static void test_this_machine(void **state) {
  (void)state;
  nnmem_numa_pool_t *np = NULL;
  nnmem_diag_t d = {{0}};
  assert_ok(nnmem_numa_pool_create(NULL, &np, &d));
  uint32_t nodes = nnmem_numa_nodes(np);
  assert_true(nodes >= 1);
  uint32_t home = nnmem_numa_current_node(np);
  assert_true(home < nodes);
  char *p = NULL;
  assert_ok(nnmem_numa_alloc(np, 256 << 10, 0, (void **)&p));
  memset(p, 0x5a, 256 << 10);
  uint32_t k = 99;
  assert_ok(nnmem_numa_node_of(np, p, &k));
  assert_int_equal(k, home);
  printf("this machine: %u node(s), libnuma %s, node %u bound: %d\n",
         (unsigned)nodes, nnmem_numa_available() ? "yes" : "no", (unsigned)home,
         nnmem_numa_node_bound(np, home));
  if (nnmem_numa_available()) {
    assert_int_equal(nnmem_numa_node_bound(np, home), 1);
    int mode = -1;
    unsigned long mask[16] = {0};
    /* get_mempolicy(&mode, mask, maxnode, addr, MPOL_F_ADDR = 2) */
    assert_int_equal(
        syscall(SYS_get_mempolicy, &mode, mask, 8 * sizeof mask, p, 2UL), 0);
    assert_int_equal(mode, 2); /* MPOL_BIND */
    assert_int_equal(mask[home / 64], 1UL << (home % 64));
    int where = -1; /* MPOL_F_NODE | MPOL_F_ADDR: the node of the page */
    assert_int_equal(
        syscall(SYS_get_mempolicy, &where, NULL, 0UL, p + 4096, 3UL), 0);
    assert_int_equal(where, (int)home);
    nnmem_backend_t *b = NULL;
    assert_int_equal(nnmem_backend_numa_create((int)nodes, &b, &d),
                     NNMEM_ERR_INVALID);
    assert_non_null(strstr(d.message, "does not exist"));
  } else {
    assert_int_equal(nodes, 1);
    assert_int_equal(nnmem_numa_node_bound(np, 0), 0);
    nnmem_backend_t *b = NULL;
    assert_int_equal(nnmem_backend_numa_create(0, &b, &d),
                     NNMEM_ERR_UNSUPPORTED);
  }
  assert_ok(nnmem_numa_free(np, p));
  nnmem_stats_t s[NNMEM_NUMA_MAX_NODES + 1];
  assert_ok(nnmem_numa_stats(np, s, nodes + 1, NULL));
  assert_int_equal(s[0].alloc_count, 1);
  assert_int_equal(s[0].free_count, 1);
  assert_int_equal(s[0].remote_frees, 0);
  nnmem_numa_pool_destroy(np);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_routing),      cmocka_unit_test(test_fallback),
      cmocka_unit_test(test_bad_node),     cmocka_unit_test(test_bad_topology),
      cmocka_unit_test(test_stats_render), cmocka_unit_test(test_this_machine),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

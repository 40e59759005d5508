/* fuzz_numa.c - libFuzzer harness for the NUMA pools: the input's first
 * bytes are a topology (nodes 0..9, cpus 0..16 and their node bytes, any
 * value: a bad topology must be refused with a diag, never crash), the
 * rest a program of operations (opcode byte + operands): allocate as cpu c
 * (any c, also outside the map), allocate on a raw node id, free a block
 * from cpu c, free a forged pointer, or a double free.
 *
 * Checked after every operation, against a model: an allocation lands on
 * the node the model derives from the map (cpu outside it: node 0) and the
 * memory holds a pattern until freed; alloc_onnode is refused with
 * NNMEM_ERR_INVALID exactly when node >= nodes; frees of live blocks
 * succeed, other pointers are refused; at the end the stats agree with the
 * model: allocations, live blocks, remote frees per node, bad node
 * requests, misuse. Node memory: node 0 bound when libnuma is there, the
 * others host memory (nodes this machine lacks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

#define SLOTS 32
#define MAX_CPUS 16

typedef struct blk {
  uint8_t *p;
  uint32_t node, size;
} blk_t;

static int g_cpu;
static int fuzz_cpu(void *user) {
  (void)user;
  return g_cpu;
}

typedef struct model {
  uint32_t nodes, cpus, map[MAX_CPUS];
  blk_t b[SLOTS];
  uint64_t allocs, remote[10], bad_node, misuse, live;
} model_t;

static uint32_t node_of_cpu(const model_t *m, int cpu) {
  return cpu >= 0 && (uint32_t)cpu < m->cpus ? m->map[cpu] : 0;
}

static void check_pattern(const blk_t *b) {
  for (uint32_t i = 0; i < b->size && i < 16; i++)
    if (b->p[i] != (uint8_t)(b->size + i)) fuzz_fail("block lost bytes", NULL);
}

static void got_block(nnmem_numa_pool_t *np, model_t *m, blk_t *b,
                      uint32_t want_node, uint32_t size) {
  uint32_t k = 99;
  if (nnmem_numa_node_of(np, b->p, &k) != NNMEM_OK || k != want_node)
    fuzz_fail("block not on the expected node", NULL);
  b->node = k;
  b->size = size;
  for (uint32_t i = 0; i < size && i < 16; i++)
    b->p[i] = (uint8_t)(size + i);
  m->allocs++;
  m->live++;
}

static void op(nnmem_numa_pool_t *np, model_t *m, const uint8_t **p,
               const uint8_t *end) {
  uint8_t code = fuzz_take(p, end) % 5, k = fuzz_take(p, end) % SLOTS;
  blk_t *b = &m->b[k];
  g_cpu = (int)(int8_t)fuzz_take(p, end);
  uint32_t size = 1 + fuzz_take(p, end) * 8u;
  nnmem_diag_t d = {{0}};
  switch (code) {
    case 0: /* allocate as cpu g_cpu */
      if (b->p) return;
      if (nnmem_numa_alloc(np, size, 0, (void **)&b->p) != NNMEM_OK)
        fuzz_fail("alloc failed", NULL);
      got_block(np, m, b, node_of_cpu(m, g_cpu), size);
      return;
    case 1: { /* allocate on a raw node id */
      if (b->p) return;
      uint32_t node = fuzz_take(p, end) % 16;
      nnmem_status_t s =
          nnmem_numa_alloc_onnode(np, node, size, 0, (void **)&b->p, &d);
      if (node >= m->nodes) {
        if (s != NNMEM_ERR_INVALID || b->p || !d.message[0])
          fuzz_fail("bad node accepted or silent", NULL);
        m->bad_node++;
        return;
      }
      if (s != NNMEM_OK) fuzz_fail("alloc_onnode failed", &d);
      got_block(np, m, b, node, size);
      return;
    }
    case 2: /* free from cpu g_cpu */
      if (!b->p) return;
      check_pattern(b);
      if (nnmem_numa_free(np, b->p) != NNMEM_OK) fuzz_fail("free", NULL);
      if (b->node != node_of_cpu(m, g_cpu)) m->remote[b->node]++;
      b->p = NULL;
      m->live--;
      return;
    case 3: { /* a forged pointer (a stack address) */
      int local;
      if (nnmem_numa_free(np, &local) != NNMEM_ERR_INVALID)
        fuzz_fail("forged free accepted", NULL);
      m->misuse++;
      return;
    }
    default: { /* a double free of a block freed just now */
      if (!b->p) return;
      uint8_t *q = b->p;
      if (nnmem_numa_free(np, q) != NNMEM_OK) fuzz_fail("free", NULL);
      if (b->node != node_of_cpu(m, g_cpu)) m->remote[b->node]++;
      b->p = NULL;
      m->live--;
      if (nnmem_numa_free(np, q) != NNMEM_ERR_INVALID)
        fuzz_fail("double free accepted", NULL);
      m->misuse++;
      return;
    }
  }
}

static void check_stats(nnmem_numa_pool_t *np, const model_t *m) {
  nnmem_stats_t s[11];
  if (nnmem_numa_stats(np, s, m->nodes + 1, NULL) != NNMEM_OK)
    fuzz_fail("stats", NULL);
  uint64_t remote = 0;
  for (uint32_t k = 0; k < m->nodes; k++) {
    if (s[1 + k].remote_frees != m->remote[k])
      fuzz_fail("remote frees of a node disagree with the model", NULL);
    remote += m->remote[k];
  }
  if (s[0].alloc_count != m->allocs || s[0].live_count != m->live ||
      s[0].remote_frees != remote || s[0].bad_node_requests != m->bad_node ||
      s[0].misuse_count != m->misuse)
    fuzz_fail("total stats disagree with the model", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *p = data, *end = data + size;
  model_t *m = calloc(1, sizeof *m);
  if (!m) return 0;
  m->nodes = fuzz_take(&p, end) % 10; /* 0 and 9 nodes: 0 is refused */
  m->cpus = fuzz_take(&p, end) % (MAX_CPUS + 1);
  int bad = m->nodes == 0 || m->cpus == 0;
  for (uint32_t c = 0; c < m->cpus; c++) {
    m->map[c] = fuzz_take(&p, end) % 12; /* sometimes past the last node */
    bad |= m->map[c] >= m->nodes;
  }
  nnmem_numa_topology_t t = {sizeof t, m->nodes, m->cpus,
                             m->map,   fuzz_cpu, NULL};
  nnmem_numa_config_t c;
  nnmem_numa_config_init(&c);
  c.topology = &t;
  c.kind = NNMEM_POOL_TLSF;
  nnmem_numa_pool_t *np = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t s = nnmem_numa_pool_create(&c, &np, &d);
  if (bad) {
    if (s != NNMEM_ERR_INVALID || np || !d.message[0])
      fuzz_fail("bad topology accepted or silent", &d);
    free(m);
    return 0;
  }
  if (s != NNMEM_OK) fuzz_fail("create", &d);
  while (p < end)
    op(np, m, &p, end);
  check_stats(np, m);
  for (int k = 0; k < SLOTS; k++)
    if (m->b[k].p) {
      check_pattern(&m->b[k]);
      if (nnmem_numa_free(np, m->b[k].p) != NNMEM_OK) fuzz_fail("free", NULL);
    }
  nnmem_numa_pool_destroy(np);
  free(m);
  return 0;
}

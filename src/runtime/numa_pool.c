/* numa_pool.c - NUMA-aware pools (see include/nnmem/numa.h): one pool per
 * memory node, each on memory of its node, allocations from the calling
 * thread's node, statistics per node.
 *
 *   thread on cpu c --cpu_node[c]--> node k --> pool[k] (own lock)
 *                                                  |
 *                                  backend[k]: mmap + mbind(BIND, {k})
 *
 * Steps of alloc: 1. the caller's cpu (sched_getcpu or the topology's
 * function) -> its node k (cpu out of range: node 0); 2. pool[k]; 3. when
 * it cannot serve and the pool is not strict, pool[k+1], pool[k+2], ...
 * (mod nodes), the serving node counting a remote_alloc. alloc_onnode
 * checks the node id first (refused, counted and described when it does
 * not exist) and never falls back.
 * Steps of free: 1. ask the caller's node's pool whether it holds the block
 * (its live table), then the others in order; 2. free it there; a holder
 * other than the caller's node counts a remote_free; 3. no holder:
 * NNMEM_ERR_INVALID, counted as misuse of the whole.
 * Invariants: every live block is in exactly one node's pool (the pools'
 * address ranges come from distinct backend regions); the total's
 * counters are the sums of the nodes'.
 * Complexity: alloc as the node pool (plus nodes - 1 tries on fallback);
 * free O(nodes) table look-ups. Thread-safety: the topology and the pool
 * array are read-only after create; each node pool is thread_safe; the
 * NUMA counters are relaxed atomics. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/numa_internal.h"
#include "common/util.h"
#include "nnmem/numa.h"
#include "runtime/pool_internal.h"

struct nnmem_numa_pool {
  char name[NNMEM_STATS_NAME_MAX];
  uint32_t nodes, cpus;
  uint32_t *cpu_node;
  int (*current_cpu)(void *user);
  void *user;
  int strict;
  nnmem_pool_t *pool[NNMEM_NUMA_MAX_NODES];
  nnmem_backend_t *owned[NNMEM_NUMA_MAX_NODES]; /* backends we made */
  int bound[NNMEM_NUMA_MAX_NODES];
  uint64_t remote_frees[NNMEM_NUMA_MAX_NODES];  /* atomic */
  uint64_t remote_allocs[NNMEM_NUMA_MAX_NODES]; /* atomic */
  uint64_t bad_node, misuse;                    /* atomic */
};

#define BUMP(x) __atomic_fetch_add(&(x), 1, __ATOMIC_RELAXED)
#define READ(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

void nnmem_numa_config_init(nnmem_numa_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

/* Copies the topology (given or detected) into np. */
static nnmem_status_t set_topology(nnmem_numa_pool_t *np,
                                   const nnmem_numa_topology_t *given,
                                   nnmem_diag_t *diag) {
  if (!given) return nnmem__numa_detect(&np->nodes, &np->cpus, &np->cpu_node);
  nnmem_numa_topology_t t = {0};
  t.size = sizeof t;
  nnmem__config_copy(&t, sizeof t, given);
  if (t.nodes == 0 || t.nodes > NNMEM_NUMA_MAX_NODES)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "numa topology: %u nodes (1..%d)", (unsigned)t.nodes,
                       NNMEM_NUMA_MAX_NODES);
  if (t.cpus == 0 || !t.cpu_node)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "numa topology: no cpus (cpus %u, cpu_node %s)",
                       (unsigned)t.cpus, t.cpu_node ? "set" : "NULL");
  for (uint32_t c = 0; c < t.cpus; c++)
    if (t.cpu_node[c] >= t.nodes)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "numa topology: cpu %u is on node %u, which does "
                         "not exist (%u nodes)",
                         (unsigned)c, (unsigned)t.cpu_node[c],
                         (unsigned)t.nodes);
  np->cpu_node = malloc(t.cpus * sizeof *np->cpu_node);
  if (!np->cpu_node) return NNMEM_ERR_NOMEM;
  memcpy(np->cpu_node, t.cpu_node, t.cpus * sizeof *np->cpu_node);
  np->nodes = t.nodes;
  np->cpus = t.cpus;
  np->current_cpu = t.current_cpu;
  np->user = t.user;
  return NNMEM_OK;
}

/* Node k's backend: the caller's, a node backend, or host memory. */
static nnmem_status_t node_backend(nnmem_numa_pool_t *np,
                                   const nnmem_numa_config_t *c, uint32_t k,
                                   nnmem_backend_t **out) {
  if (c->backends) {
    *out = c->backends[k];
    return *out ? NNMEM_OK : NNMEM_ERR_INVALID;
  }
  if (nnmem_backend_numa_create((int)k, &np->owned[k], NULL) == NNMEM_OK) {
    np->bound[k] = 1;
  } else {
    nnmem_status_t s = nnmem_backend_host_create(&np->owned[k]);
    if (s != NNMEM_OK) return s;
  }
  *out = np->owned[k];
  return NNMEM_OK;
}

nnmem_status_t nnmem_numa_pool_create(const nnmem_numa_config_t *cfg,
                                      nnmem_numa_pool_t **out,
                                      nnmem_diag_t *diag) {
  if (!out) return nnmem__diag(diag, NNMEM_ERR_INVALID, "numa: out is NULL");
  *out = NULL;
  nnmem_numa_config_t c;
  nnmem_numa_config_init(&c);
  if (cfg) nnmem__config_copy(&c, sizeof c, cfg);
  nnmem_numa_pool_t *np = calloc(1, sizeof *np);
  if (!np) return NNMEM_ERR_NOMEM;
  snprintf(np->name, sizeof np->name, "%s", c.name ? c.name : "numa");
  np->strict = c.strict != 0;
  nnmem_status_t s = set_topology(np, c.topology, diag);
  nnmem_pool_config_t pc;
  nnmem_pool_config_init(&pc);
  if (c.pool) nnmem__config_copy(&pc, sizeof pc, c.pool);
  pc.thread_safe = 1;
  for (uint32_t k = 0; s == NNMEM_OK && k < np->nodes; k++) {
    nnmem_backend_t *b = NULL;
    char name[NNMEM_STATS_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s.node%u", np->name, (unsigned)k);
    pc.name = name;
    s = node_backend(np, &c, k, &b);
    if (s != NNMEM_OK)
      s = nnmem__diag(diag, s, "numa: no backend for node %u", (unsigned)k);
    else
      s = nnmem_pool_create_diag(c.kind, &pc, b, &np->pool[k], diag);
  }
  if (s != NNMEM_OK) {
    nnmem_numa_pool_destroy(np);
    return s;
  }
  *out = np;
  return NNMEM_OK;
}

void nnmem_numa_pool_destroy(nnmem_numa_pool_t *np) {
  if (!np) return;
  for (uint32_t k = 0; k < NNMEM_NUMA_MAX_NODES; k++) {
    nnmem_pool_destroy(np->pool[k]);
    nnmem_backend_destroy(np->owned[k]);
  }
  free(np->cpu_node);
  free(np);
}

uint32_t nnmem_numa_current_node(const nnmem_numa_pool_t *np) {
  if (!np) return 0;
  int cpu = np->current_cpu ? np->current_cpu(np->user) : sched_getcpu();
  return cpu >= 0 && (uint32_t)cpu < np->cpus ? np->cpu_node[cpu] : 0;
}

uint32_t nnmem_numa_nodes(const nnmem_numa_pool_t *np) {
  return np ? np->nodes : 0;
}

int nnmem_numa_node_bound(const nnmem_numa_pool_t *np, uint32_t node) {
  return np && node < np->nodes ? np->bound[node] : 0;
}

nnmem_status_t nnmem_numa_alloc(nnmem_numa_pool_t *np, uint64_t size,
                                uint64_t align, void **out) {
  if (out) *out = NULL;
  if (!np || !out) return NNMEM_ERR_INVALID;
  uint32_t home = nnmem_numa_current_node(np);
  nnmem_status_t s = nnmem_pool_alloc(np->pool[home], size, align, out);
  if (s != NNMEM_ERR_NOMEM || np->strict) return s;
  for (uint32_t i = 1; i < np->nodes; i++) {
    uint32_t k = (home + i) % np->nodes;
    if (nnmem_pool_alloc(np->pool[k], size, align, out) == NNMEM_OK) {
      BUMP(np->remote_allocs[k]);
      return NNMEM_OK;
    }
  }
  return s;
}

nnmem_status_t nnmem_numa_alloc_onnode(nnmem_numa_pool_t *np, uint32_t node,
                                       uint64_t size, uint64_t align,
                                       void **out, nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if (!np || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "numa: NULL argument");
  if (node >= np->nodes) {
    BUMP(np->bad_node);
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "numa pool %s: node %u does not exist (nodes 0..%u)",
                       np->name, (unsigned)node, (unsigned)np->nodes - 1);
  }
  return nnmem_pool_alloc(np->pool[node], size, align, out);
}

/* The node whose pool holds ptr, trying `first` first; nodes if none. */
static uint32_t holder(nnmem_numa_pool_t *np, const void *ptr, uint32_t first) {
  for (uint32_t i = 0; i < np->nodes; i++) {
    uint32_t k = (first + i) % np->nodes;
    if (nnmem__pool_holds(np->pool[k], ptr)) return k;
  }
  return np->nodes;
}

nnmem_status_t nnmem_numa_free(nnmem_numa_pool_t *np, void *ptr) {
  if (!np || !ptr) return NNMEM_ERR_INVALID;
  uint32_t home = nnmem_numa_current_node(np), k = holder(np, ptr, home);
  /* a racing double free may empty the holder in between: its pool
   * refuses and counts it */
  nnmem_status_t s =
      k < np->nodes ? nnmem_pool_free(np->pool[k], ptr) : NNMEM_ERR_INVALID;
  if (k == np->nodes)
    BUMP(np->misuse);
  else if (s == NNMEM_OK && k != home)
    BUMP(np->remote_frees[k]);
  return s;
}

nnmem_status_t nnmem_numa_node_of(nnmem_numa_pool_t *np, const void *ptr,
                                  uint32_t *node_out) {
  if (!np || !ptr || !node_out) return NNMEM_ERR_INVALID;
  uint32_t k = holder(np, ptr, 0);
  if (k == np->nodes) return NNMEM_ERR_INVALID;
  *node_out = k;
  return NNMEM_OK;
}

/* Adds node record `n` into the total `t`. */
static void add_into(nnmem_stats_t *t, const nnmem_stats_t *n) {
  /* every uint64_t counter between requested_bytes and latency_sum_ns and
   * after it sums; free/largest/fragmentation are fixed up after */
  t->requested_bytes += n->requested_bytes;
  t->requested_bytes_peak += n->requested_bytes_peak;
  t->allocated_bytes += n->allocated_bytes;
  t->allocated_bytes_peak += n->allocated_bytes_peak;
  t->reserved_bytes += n->reserved_bytes;
  t->reserved_bytes_peak += n->reserved_bytes_peak;
  t->alloc_count += n->alloc_count;
  t->free_count += n->free_count;
  t->failed_count += n->failed_count;
  t->misuse_count += n->misuse_count;
  t->live_count += n->live_count;
  t->backend_allocs += n->backend_allocs;
  t->backend_frees += n->backend_frees;
  t->free_bytes += n->free_bytes;
  if (n->largest_free > t->largest_free) t->largest_free = n->largest_free;
  t->cache_hits += n->cache_hits;
  t->cache_misses += n->cache_misses;
  t->lock_acquisitions += n->lock_acquisitions;
  t->lock_contended += n->lock_contended;
  t->latency_samples += n->latency_samples;
  for (int b = 0; b < NNMEM_STATS_LAT_BUCKETS; b++)
    t->latency_hist[b] += n->latency_hist[b];
  t->latency_sum_ns += n->latency_sum_ns;
  t->refills += n->refills;
  t->refill_failures += n->refill_failures;
  t->empty_hits += n->empty_hits;
  t->remote_frees += n->remote_frees;
  t->remote_allocs += n->remote_allocs;
}

nnmem_status_t nnmem_numa_stats(nnmem_numa_pool_t *np, nnmem_stats_t *out,
                                size_t cap, size_t *n_out) {
  if (!np || (!out && cap)) return NNMEM_ERR_INVALID;
  size_t need = (size_t)np->nodes + 1;
  if (n_out) *n_out = need;
  nnmem_stats_t total, node;
  nnmem_stats_init(&total);
  snprintf(total.name, sizeof total.name, "%s", np->name);
  for (uint32_t k = 0; k < np->nodes; k++) {
    nnmem_status_t s = nnmem_pool_stats(np->pool[k], &node);
    if (s != NNMEM_OK) return s;
    node.remote_frees = READ(np->remote_frees[k]);
    node.remote_allocs = READ(np->remote_allocs[k]);
    add_into(&total, &node);
    if (k + 1 < cap) out[k + 1] = node;
  }
  total.bad_node_requests = READ(np->bad_node);
  total.misuse_count += READ(np->misuse);
  total.fragmentation = total.free_bytes
                            ? (double)(total.free_bytes - total.largest_free) /
                                  (double)total.free_bytes
                            : 0.0;
  if (cap) out[0] = total;
  return cap < need ? NNMEM_ERR_OVERFLOW : NNMEM_OK;
}

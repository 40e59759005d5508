/* replay_numa.c - `nnmem replay --numa-nodes N`: the trace through a NUMA
 * pool on a simulated topology of N nodes (one cpu each), each node on its
 * own unbacked simulated device (disjoint address ranges).
 *
 * Who runs each event (a fixed rule, so the output is reproducible):
 * buffer i is allocated by a thread of node i mod N and freed by the same
 * node, except every fourth buffer of each node ((i / N) mod 4 == 3),
 * freed by a thread of node (i + 1) mod N: a cross-node free (with N = 1
 * there are none).
 * Events in the order of nnmem_trace_events (frees first at equal times).
 * Result: the NUMA pool's stats, the total then one record per node.
 * Complexity: O(events) plus the pools. Thread-safety: single-threaded
 * (the injected cpu is a file-static variable). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "replay_numa.h"

static int g_cpu;

static int replay_cpu(void *user) {
  (void)user;
  return g_cpu;
}

static void destroy_devices(nnmem_backend_t **dev, uint32_t nodes) {
  for (uint32_t k = 0; k < nodes; k++)
    nnmem_backend_destroy(dev[k]);
}

nnmem_status_t cli_replay_numa(const nnmem_problem_t *p, nnmem_pool_kind_t kind,
                               uint32_t nodes, uint64_t align,
                               nnmem_stats_t *out, nnmem_diag_t *d) {
  nnmem_backend_t *dev[NNMEM_NUMA_MAX_NODES] = {0};
  uint32_t cpu_node[NNMEM_NUMA_MAX_NODES];
  nnmem_status_t s = NNMEM_OK;
  for (uint32_t k = 0; k < nodes && s == NNMEM_OK; k++) {
    nnmem_sim_config_t sc = {0};
    sc.size = sizeof sc;
    sc.alignment = align;
    sc.address_base = (uint64_t)(k + 1) << 44; /* 16 TiB apart */
    cpu_node[k] = k;
    s = nnmem_backend_sim_create(&sc, &dev[k]);
  }
  nnmem_numa_topology_t t = {sizeof t, nodes,      nodes,
                             cpu_node, replay_cpu, NULL};
  nnmem_numa_config_t c;
  nnmem_numa_config_init(&c);
  c.name = "numa";
  c.kind = kind;
  c.topology = &t;
  c.backends = dev;
  nnmem_numa_pool_t *np = NULL;
  if (s == NNMEM_OK) s = nnmem_numa_pool_create(&c, &np, d);
  nnmem_trace_event_t *ev = NULL;
  size_t n = 0;
  if (s == NNMEM_OK) s = nnmem_trace_events(p, &ev, &n);
  void **addr =
      s == NNMEM_OK ? calloc(nnmem_problem_count(p) + 1, sizeof *addr) : NULL;
  if (s == NNMEM_OK && !addr) s = NNMEM_ERR_NOMEM;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  for (size_t i = 0; s == NNMEM_OK && i < n; i++) {
    uint32_t x = ev[i].index;
    int cross = !ev[i].is_alloc && (x / nodes) % 4 == 3;
    g_cpu = (int)((x + (cross ? 1u : 0u)) % nodes);
    if (ev[i].is_alloc) {
      s = nnmem_numa_alloc(np, b[x].size, b[x].align, &addr[x]);
      if (s != NNMEM_OK)
        nnmem__diag(d, s, "numa replay: buffer %s (%llu bytes) did not fit",
                    nnmem_problem_id(p, x), (unsigned long long)b[x].size);
    } else {
      s = nnmem_numa_free(np, addr[x]);
    }
  }
  if (s == NNMEM_OK) s = nnmem_numa_stats(np, out, nodes + 1, NULL);
  free(addr);
  free(ev);
  nnmem_numa_pool_destroy(np);
  destroy_devices(dev, nodes);
  return s;
}

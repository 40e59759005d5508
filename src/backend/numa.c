/* numa.c - the NUMA layer: whether the machine has NUMA support, its
 * topology (nodes, cpu -> node), and a backend of memory bound to one node.
 * Every libnuma call of nnmem is in this file; built without libnuma
 * (NNMEM_HAVE_NUMA unset) it reports one node and no node backend.
 *
 * Steps of the node backend's alloc:
 *   1. round the size up to the page size;
 *   2. mmap anonymous memory (alignments above a page: map size + align and
 *      unmap the unaligned head and the tail);
 *   3. mbind(MPOL_BIND, {node}) the range before any page is touched, so
 *      every page faulted in later comes from that node; a refused mbind
 *      unmaps and fails (NNMEM_ERR_NOMEM): memory that is not on the node
 *      is never handed out as if it were.
 * free unmaps the rounded size. mem_info is numa_node_size64 of the node.
 * Topology (nnmem__numa_detect): numa_available() < 0 -> one node, every
 * cpu on it; else nodes = numa_max_node() + 1, cpus =
 * numa_num_configured_cpus(), cpu_node[c] = numa_node_of_cpu(c) (an
 * offline cpu, -1, maps to node 0).
 * Invariants: a region is aligned to max(page, align), its length is the
 * rounded size and its policy is MPOL_BIND to the node.
 * Complexity: two or three system calls per region. Thread-safety: the
 * backend has no mutable state; libnuma's queries are thread-safe. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/backend_internal.h"
#include "backend/numa_internal.h"
#include "common/util.h"
#include "nnmem/numa.h"
#include "runtime/pool_internal.h"

#ifdef NNMEM_HAVE_NUMA
#include <numa.h>
#include <numaif.h>
#endif

int nnmem_numa_available(void) {
#ifdef NNMEM_HAVE_NUMA
  return numa_available() >= 0;
#else
  return 0;
#endif
}

nnmem_status_t nnmem__numa_detect(uint32_t *nodes, uint32_t *cpus,
                                  uint32_t **cpu_node) {
  long n_cpu = sysconf(_SC_NPROCESSORS_CONF);
  uint32_t nc = n_cpu > 0 ? (uint32_t)n_cpu : 1, nn = 1;
#ifdef NNMEM_HAVE_NUMA
  if (numa_available() >= 0) {
    int max = numa_max_node(), conf = numa_num_configured_cpus();
    nn = max >= 0 ? (uint32_t)max + 1 : 1;
    if (nn > NNMEM_NUMA_MAX_NODES) nn = NNMEM_NUMA_MAX_NODES;
    if (conf > 0) nc = (uint32_t)conf;
  }
#endif
  uint32_t *map = calloc(nc, sizeof *map);
  if (!map) return NNMEM_ERR_NOMEM;
#ifdef NNMEM_HAVE_NUMA
  for (uint32_t c = 0; nn > 1 && c < nc; c++) {
    int k = numa_node_of_cpu((int)c);
    map[c] = k >= 0 && (uint32_t)k < nn ? (uint32_t)k : 0;
  }
#endif
  *nodes = nn;
  *cpus = nc;
  *cpu_node = map;
  return NNMEM_OK;
}

#ifdef NNMEM_HAVE_NUMA

typedef struct numa_backend {
  nnmem_backend_t table;
  uint64_t page;
  int node;
} numa_backend_t;

static uint64_t region_len(const numa_backend_t *m, uint64_t size) {
  return (size + m->page - 1) & ~(m->page - 1);
}

static nnmem_status_t nb_alloc(void *ctx, uint64_t size, uint64_t align,
                               void **out) {
  numa_backend_t *m = ctx;
  if (size > (uint64_t)SIZE_MAX / 4 || align > (uint64_t)SIZE_MAX / 4)
    return NNMEM_ERR_NOMEM;
  uint64_t len = region_len(m, size);
  void *p = nnmem__map_aligned(len, align < m->page ? m->page : align, m->page);
  if (!p) return NNMEM_ERR_NOMEM;
  unsigned long mask[NNMEM_NUMA_MAX_NODES / (8 * sizeof(unsigned long)) + 1];
  memset(mask, 0, sizeof mask);
  mask[m->node / (8 * sizeof(unsigned long))] =
      1UL << (m->node % (8 * sizeof(unsigned long)));
  if (mbind(p, (unsigned long)len, MPOL_BIND, mask, 8 * sizeof mask, 0) != 0) {
    munmap(p, (size_t)len);
    return NNMEM_ERR_NOMEM;
  }
  *out = p;
  return NNMEM_OK;
}

static nnmem_status_t nb_free(void *ctx, void *ptr, uint64_t size) {
  numa_backend_t *m = ctx;
  if (munmap(ptr, (size_t)region_len(m, size)) != 0) return NNMEM_ERR_INVALID;
  return NNMEM_OK;
}

static nnmem_status_t nb_mem_info(void *ctx, uint64_t *free_bytes,
                                  uint64_t *total_bytes) {
  numa_backend_t *m = ctx;
  long long fr = 0, total = numa_node_size64(m->node, &fr);
  if (total < 0) return NNMEM_ERR_UNSUPPORTED;
  *free_bytes = (uint64_t)fr;
  *total_bytes = (uint64_t)total;
  return NNMEM_OK;
}

nnmem_status_t nnmem_backend_numa_create(int node, nnmem_backend_t **out,
                                         nnmem_diag_t *diag) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  if (numa_available() < 0)
    return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                       "numa backend: the kernel reports no NUMA support");
  if (node < 0 || node > numa_max_node() || node >= NNMEM_NUMA_MAX_NODES ||
      !numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)node))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "numa backend: node %d does not exist here (nodes "
                       "0..%d)",
                       node, numa_max_node());
  numa_backend_t *m = calloc(1, sizeof *m);
  if (!m) return NNMEM_ERR_NOMEM;
  long page = sysconf(_SC_PAGESIZE);
  m->page = page > 0 ? (uint64_t)page : 4096;
  m->node = node;
  nnmem_backend_t *t = &m->table;
  t->size = sizeof *t;
  t->version = NNMEM_BACKEND_VERSION;
  t->name = "numa";
  t->ctx = m;
  t->flags = NNMEM_BACKEND_BACKED;
  t->alignment = m->page;
  t->alloc = nb_alloc;
  t->free = nb_free;
  t->mem_info = nb_mem_info;
  t->destroy = nnmem__backend_free_ctx;
  *out = t;
  return NNMEM_OK;
}

#else /* !NNMEM_HAVE_NUMA */

nnmem_status_t nnmem_backend_numa_create(int node, nnmem_backend_t **out,
                                         nnmem_diag_t *diag) {
  (void)node;
  if (out) *out = NULL;
  return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                     "numa backend: nnmem was built without libnuma "
                     "(install libnuma-dev and rebuild)");
}

#endif

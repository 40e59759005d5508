/* nnmem/numa.h - NUMA-aware pools: one pool per memory node, allocation
 * from the calling thread's node, statistics per node.
 *
 *   nnmem_numa_pool_t *np;
 *   nnmem_numa_pool_create(NULL, &np, &diag);     this machine's nodes
 *   void *p; nnmem_numa_alloc(np, 4096, 0, &p);   from the caller's node
 *   nnmem_numa_free(np, p);                       from any thread
 *
 * The topology (nodes, cpu -> node) comes from libnuma when nnmem was built
 * with it (NNMEM_NUMA, libnuma-dev) and the kernel supports NUMA; otherwise
 * the machine is one node. A topology can also be given (tests and tools
 * simulate several nodes on a one-node machine): N nodes, a cpu -> node
 * map and the function that says on which cpu the caller runs.
 *
 * Memory of node k comes from cfg.backends[k] when given, else from a node
 * backend (nnmem_backend_numa_create: mmap + mbind(MPOL_BIND) to node k)
 * when libnuma is there and node k exists on the machine, else from host
 * memory (nnmem_numa_node_bound says which).
 *
 * Thread-safety: every function except create/destroy may be called from
 * any thread; each node's pool has its own lock. */
#ifndef NNMEM_NUMA_H
#define NNMEM_NUMA_H

#include "nnmem/backend.h"
#include "nnmem/pool.h"
#include "nnmem/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NNMEM_NUMA_MAX_NODES 64

/* 1 when nnmem was built with libnuma and the kernel reports NUMA support
 * (numa_available() >= 0), else 0. */
NNMEM_API int nnmem_numa_available(void);

/* Node-bound host memory: regions are mmap'ed and bound to `node` with
 * mbind(MPOL_BIND), so their pages come from that node only (the kernel
 * refuses or the process is killed under memory pressure rather than
 * spilling to another node). Alignment = page; larger ones by over-mapping.
 * NNMEM_ERR_UNSUPPORTED (diag says why) without libnuma or NUMA support;
 * NNMEM_ERR_INVALID for a node that does not exist on this machine. */
NNMEM_API nnmem_status_t nnmem_backend_numa_create(int node,
                                                   nnmem_backend_t **out,
                                                   nnmem_diag_t *diag);

/* A NUMA topology. */
typedef struct nnmem_numa_topology {
  uint32_t size;            /* sizeof(nnmem_numa_topology_t); 0 = current */
  uint32_t nodes;           /* 1 .. NNMEM_NUMA_MAX_NODES */
  uint32_t cpus;            /* entries of cpu_node (>= 1) */
  const uint32_t *cpu_node; /* cpu -> node (< nodes); copied at create */
  /* The caller's cpu; NULL = sched_getcpu(). A cpu outside [0, cpus)
   * counts as node 0. */
  int (*current_cpu)(void *user);
  void *user;
} nnmem_numa_topology_t;

/* Options; zero means default. */
typedef struct nnmem_numa_config {
  uint32_t size;          /* sizeof(nnmem_numa_config_t); 0 = current */
  const char *name;       /* stats label; node k is "<name>.node<k>"; NULL =
                             "numa" */
  nnmem_pool_kind_t kind; /* each node's pool; 0 = tiered */
  const nnmem_pool_config_t *pool;       /* each node's pool config (name
                                            ignored, thread_safe forced); NULL
                                            = defaults */
  const nnmem_numa_topology_t *topology; /* NULL = this machine's */
  /* `nodes` backends (not owned; each outlives the pool), NULL = node
   * memory as described above. Their addresses must not overlap, since a
   * free is routed by address (unbacked simulated devices all count from
   * 2^44: give them backed = 1 or distinct address_base). */
  nnmem_backend_t *const *backends;
  int strict; /* 1: an allocation the caller's node cannot serve fails;
                 0: it falls back to the other nodes in order (counted in
                 remote_allocs) */
} nnmem_numa_config_t;

NNMEM_API void nnmem_numa_config_init(nnmem_numa_config_t *cfg);

typedef struct nnmem_numa_pool nnmem_numa_pool_t;

/* `cfg` may be NULL. NNMEM_ERR_INVALID and diag for a bad topology (0 or
 * too many nodes, no cpus, a cpu mapped to a node that does not exist) or
 * pool config; NNMEM_ERR_NOMEM. */
NNMEM_API nnmem_status_t nnmem_numa_pool_create(const nnmem_numa_config_t *cfg,
                                                nnmem_numa_pool_t **out,
                                                nnmem_diag_t *diag);
/* Destroys every node's pool and the backends it made. NULL: no-op. */
NNMEM_API void nnmem_numa_pool_destroy(nnmem_numa_pool_t *np);

/* Allocates from the calling thread's node (falling back to the others
 * unless strict). Statuses as nnmem_pool_alloc. */
NNMEM_API nnmem_status_t nnmem_numa_alloc(nnmem_numa_pool_t *np, uint64_t size,
                                          uint64_t align, void **out);
/* Allocates on `node` only. NNMEM_ERR_INVALID and diag (nullable) for a
 * node that does not exist (counted in bad_node_requests). */
NNMEM_API nnmem_status_t nnmem_numa_alloc_onnode(nnmem_numa_pool_t *np,
                                                 uint32_t node, uint64_t size,
                                                 uint64_t align, void **out,
                                                 nnmem_diag_t *diag);
/* Frees a block of any node from any thread (a free by a thread of another
 * node counts in that node's remote_frees). NNMEM_ERR_INVALID for a
 * pointer no node's pool holds (counted in the total's misuse_count). */
NNMEM_API nnmem_status_t nnmem_numa_free(nnmem_numa_pool_t *np, void *ptr);

/* The node whose pool holds the live block `ptr`. NNMEM_ERR_INVALID for a
 * pointer no node's pool holds. */
NNMEM_API nnmem_status_t nnmem_numa_node_of(nnmem_numa_pool_t *np,
                                            const void *ptr,
                                            uint32_t *node_out);
/* The node of the calling thread in this pool's topology. */
NNMEM_API uint32_t nnmem_numa_current_node(const nnmem_numa_pool_t *np);
NNMEM_API uint32_t nnmem_numa_nodes(const nnmem_numa_pool_t *np);
/* 1 when node k's memory is bound to that node (a node backend), 0 when
 * it is a caller's backend or unbound host memory. */
NNMEM_API int nnmem_numa_node_bound(const nnmem_numa_pool_t *np, uint32_t node);

/* Statistics: out[0] is the total over the nodes (named "<name>": sums of
 * the counters and bytes, peaks summed (an upper bound of the peak of the
 * sum), the largest free block of any node, bad_node_requests and the
 * frees no node held in misuse_count), out[1 + k] node k's pool
 * ("<name>.node<k>") with its remote_frees and remote_allocs. `cap`
 * records at most; *n_out (nullable) = nodes + 1, the count needed.
 * NNMEM_ERR_OVERFLOW when cap < nodes + 1 (the first cap are filled). */
NNMEM_API nnmem_status_t nnmem_numa_stats(nnmem_numa_pool_t *np,
                                          nnmem_stats_t *out, size_t cap,
                                          size_t *n_out);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_NUMA_H */

/* replay_numa.h - the --numa-nodes run of `nnmem replay` (replay_numa.c). */
#ifndef NNMEM_CLI_REPLAY_NUMA_H
#define NNMEM_CLI_REPLAY_NUMA_H

#include "nnmem/nnmem.h"

/* Replays `p` through a NUMA pool of `kind` over `nodes` (1..64) simulated
 * nodes (device alignment `align`); out[0..nodes] gets the total and the
 * per-node stats. NNMEM_ERR_NOMEM with diag naming the buffer that did not
 * fit. */
nnmem_status_t cli_replay_numa(const nnmem_problem_t *p, nnmem_pool_kind_t kind,
                               uint32_t nodes, uint64_t align,
                               nnmem_stats_t *out, nnmem_diag_t *d);

#endif

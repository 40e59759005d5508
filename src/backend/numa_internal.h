/* numa_internal.h - the machine's NUMA topology for the NUMA pools
 * (src/runtime/numa_pool.c), defined in src/backend/numa.c, the one file
 * that calls libnuma. Not installed. */
#ifndef NNMEM_NUMA_INTERNAL_H
#define NNMEM_NUMA_INTERNAL_H

#include <stdint.h>

#include "nnmem/status.h"

/* This machine: *nodes (>= 1), *cpus (>= 1) and *cpu_node, a malloc'ed
 * array cpu -> node (the caller frees it). One node without libnuma or
 * NUMA support. NNMEM_ERR_NOMEM. Thread-safe. */
nnmem_status_t nnmem__numa_detect(uint32_t *nodes, uint32_t *cpus,
                                  uint32_t **cpu_node);

#endif

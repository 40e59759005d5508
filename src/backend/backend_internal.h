/* backend_internal.h - helpers shared by the host-memory backends (host.c,
 * mmap.c, numa.c), defined in backend.c. Thread-safety: both are thread-safe. */
#ifndef NNMEM_BACKEND_INTERNAL_H
#define NNMEM_BACKEND_INTERNAL_H

#include "nnmem/backend.h"

/* mem_info for host memory: total = physical memory, free = available
 * physical pages (sysconf); NNMEM_ERR_UNSUPPORTED when sysconf cannot tell.
 * `ctx` is ignored. */
nnmem_status_t nnmem__backend_host_mem_info(void *ctx, uint64_t *free_bytes,
                                            uint64_t *total_bytes);
/* An anonymous private read/write mapping of len bytes (a multiple of the
 * page) whose address is a multiple of align (a power of two): a plain map
 * when align <= page, else len + align mapped and the unaligned head and
 * the tail unmapped. NULL when the kernel refuses. */
void *nnmem__map_aligned(uint64_t len, uint64_t align, uint64_t page);
/* destroy for a backend whose whole state is one malloc'ed block: free(ctx). */
void nnmem__backend_free_ctx(void *ctx);

#endif /* NNMEM_BACKEND_INTERNAL_H */

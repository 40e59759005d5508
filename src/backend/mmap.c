/* mmap.c - anonymous-mapping backend with optional huge pages.
 *
 * Steps of alloc:
 *   1. round the size up to the page size (2 MiB when huge pages are on);
 *   2. huge pages and alignment <= 2 MiB: try mmap(MAP_HUGETLB) (2 MiB
 *      aligned); when the kernel has no huge page pool it fails (once: the
 *      flag skips it afterwards) and we map normal pages aligned to 2 MiB
 *      and advise MADV_HUGEPAGE (transparent huge pages need aligned
 *      regions); the advice failing is not an error;
 *   3. alignments above the page size (or 2 MiB with huge pages): map
 *      size + align, then unmap the unaligned head and the tail (munmap of
 *      parts is allowed);
 *   4. free unmaps the rounded size (recomputed from the size given).
 * Invariants: a region is aligned to max(page, align) and its length is the
 * rounded size, so free can unmap exactly what was mapped.
 * Complexity: one or two system calls. Thread-safety: thread-safe (the
 * hugetlb-works flag is a relaxed atomic hint). */
#define _DEFAULT_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/backend_internal.h"
#include "nnmem/backend.h"
#include "runtime/pool_internal.h"

#define HUGE_PAGE (2u << 20)

typedef struct mmap_backend {
  nnmem_backend_t table;
  uint64_t page;
  int huge;
  atomic_int hugetlb_failed; /* 1 once MAP_HUGETLB was refused */
} mmap_backend_t;

static uint64_t region_len(const mmap_backend_t *m, uint64_t size) {
  uint64_t g = m->huge ? HUGE_PAGE : m->page;
  return (size + g - 1) & ~(g - 1);
}

static nnmem_status_t mmap_alloc(void *ctx, uint64_t size, uint64_t align,
                                 void **out) {
  mmap_backend_t *m = ctx;
  if (size > (uint64_t)SIZE_MAX / 4 || align > (uint64_t)SIZE_MAX / 4)
    return NNMEM_ERR_NOMEM;
  uint64_t len = region_len(m, size);
  void *p = NULL;
#ifdef MAP_HUGETLB /* hugetlb regions are 2 MiB aligned */
  if (m->huge && align <= HUGE_PAGE &&
      !atomic_load_explicit(&m->hugetlb_failed, memory_order_relaxed)) {
    p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (p == MAP_FAILED) {
      p = NULL;
      atomic_store_explicit(&m->hugetlb_failed, 1, memory_order_relaxed);
    }
  }
#endif
  if (!p) { /* transparent huge pages need 2 MiB-aligned regions too */
    uint64_t g = m->huge ? HUGE_PAGE : m->page;
    if (align < g) align = g;
    p = nnmem__map_aligned(len, align, m->page);
#ifdef MADV_HUGEPAGE
    if (p && m->huge) (void)madvise(p, (size_t)len, MADV_HUGEPAGE);
#endif
  }
  if (!p) return NNMEM_ERR_NOMEM;
  *out = p;
  return NNMEM_OK;
}

static nnmem_status_t mmap_free(void *ctx, void *ptr, uint64_t size) {
  mmap_backend_t *m = ctx;
  if (munmap(ptr, (size_t)region_len(m, size)) != 0) return NNMEM_ERR_INVALID;
  return NNMEM_OK;
}

nnmem_status_t nnmem_backend_mmap_create(const nnmem_mmap_config_t *cfg,
                                         nnmem_backend_t **out) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  mmap_backend_t *m = calloc(1, sizeof *m);
  if (!m) return NNMEM_ERR_NOMEM;
  long page = sysconf(_SC_PAGESIZE);
  m->page = page > 0 ? (uint64_t)page : 4096;
  nnmem_mmap_config_t c = {0};
  if (cfg) nnmem__config_copy(&c, sizeof c, cfg);
  m->huge = c.huge_pages != 0;
  nnmem_backend_t *t = &m->table;
  t->size = sizeof *t;
  t->version = NNMEM_BACKEND_VERSION;
  t->name = "mmap";
  t->ctx = m;
  t->flags = NNMEM_BACKEND_BACKED;
  t->alignment = m->page;
  t->alloc = mmap_alloc;
  t->free = mmap_free;
  t->mem_info = nnmem__backend_host_mem_info;
  t->destroy = nnmem__backend_free_ctx;
  *out = t;
  return NNMEM_OK;
}

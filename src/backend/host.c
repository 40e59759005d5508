/* host.c - the host heap backend: regions from posix_memalign.
 *
 * Steps: 1. alloc rounds the alignment up to max(16, sizeof(void *)) and
 * calls posix_memalign; 2. free calls free; 3. mem_info reports the
 * machine's physical memory (sysconf) as total and available pages as free.
 * Invariants: every region is aligned to max(16, requested align).
 * Complexity: that of the C library. Thread-safety: thread-safe. */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "nnmem/backend.h"

typedef struct host_backend {
  nnmem_backend_t table; /* first: ctx points at the whole struct */
} host_backend_t;

static nnmem_status_t host_alloc(void *ctx, uint64_t size, uint64_t align,
                                 void **out) {
  (void)ctx;
  if (align < 16) align = 16;
  if (size > (uint64_t)SIZE_MAX / 2) return NNMEM_ERR_NOMEM;
  void *p = NULL;
  if (posix_memalign(&p, (size_t)align, (size_t)size) != 0)
    return NNMEM_ERR_NOMEM;
  *out = p;
  return NNMEM_OK;
}

static nnmem_status_t host_free(void *ctx, void *ptr, uint64_t size) {
  (void)ctx;
  (void)size;
  free(ptr);
  return NNMEM_OK;
}

nnmem_status_t nnmem_backend_host_create(nnmem_backend_t **out) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  host_backend_t *h = calloc(1, sizeof *h);
  if (!h) return NNMEM_ERR_NOMEM;
  nnmem_backend_t *t = &h->table;
  t->size = sizeof *t;
  t->version = NNMEM_BACKEND_VERSION;
  t->name = "host";
  t->ctx = h;
  t->flags = NNMEM_BACKEND_BACKED;
  t->alignment = 16;
  t->alloc = host_alloc;
  t->free = host_free;
  t->mem_info = nnmem__backend_host_mem_info;
  t->destroy = nnmem__backend_free_ctx;
  *out = t;
  return NNMEM_OK;
}

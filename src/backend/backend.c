/* backend.c - checked wrappers over a backend's table of functions and the
 * generic destroy.
 *
 * Steps of each wrapper: 1. validate the table (non-NULL, size/version,
 * required functions) and the arguments (size > 0, power-of-two align);
 * 2. call the table; 3. for optional functions that are absent, fall back to
 * memcpy/memset on backed host memory or return NNMEM_ERR_UNSUPPORTED.
 * Also the mem_info and destroy shared by host.c and mmap.c.
 * Complexity: O(1) plus the backend's cost. Thread-safety: as the backend. */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/backend_internal.h"
#include "nnmem/backend.h"

static int table_ok(const nnmem_backend_t *b) {
  return b && b->size >= sizeof(nnmem_backend_t) && b->version >= 1 &&
         b->alloc && b->free;
}

nnmem_status_t nnmem_backend_alloc(nnmem_backend_t *b, uint64_t size,
                                   uint64_t align, void **out) {
  if (out) *out = NULL;
  if (!table_ok(b) || !out || size == 0) return NNMEM_ERR_INVALID;
  if (align & (align - 1)) return NNMEM_ERR_INVALID;
  return b->alloc(b->ctx, size, align, out);
}

nnmem_status_t nnmem_backend_free(nnmem_backend_t *b, void *ptr,
                                  uint64_t size) {
  if (!table_ok(b) || !ptr) return NNMEM_ERR_INVALID;
  return b->free(b->ctx, ptr, size);
}

nnmem_status_t nnmem_backend_mem_info(nnmem_backend_t *b, uint64_t *free_bytes,
                                      uint64_t *total_bytes) {
  if (!table_ok(b) || !free_bytes || !total_bytes) return NNMEM_ERR_INVALID;
  if (!b->mem_info) return NNMEM_ERR_UNSUPPORTED;
  return b->mem_info(b->ctx, free_bytes, total_bytes);
}

nnmem_status_t nnmem_backend_copy(nnmem_backend_t *b, void *dst,
                                  const void *src, uint64_t n,
                                  nnmem_copy_kind_t kind) {
  if (!table_ok(b) || (n && (!dst || !src))) return NNMEM_ERR_INVALID;
  if (b->copy) return b->copy(b->ctx, dst, src, n, kind);
  if (!(b->flags & NNMEM_BACKEND_BACKED)) return NNMEM_ERR_UNSUPPORTED;
  if (n) memmove(dst, src, (size_t)n);
  return NNMEM_OK;
}

nnmem_status_t nnmem_backend_memset(nnmem_backend_t *b, void *dst, int value,
                                    uint64_t n) {
  if (!table_ok(b) || (n && !dst)) return NNMEM_ERR_INVALID;
  if (b->memset) return b->memset(b->ctx, dst, value, n);
  if (!(b->flags & NNMEM_BACKEND_BACKED)) return NNMEM_ERR_UNSUPPORTED;
  if (n) memset(dst, value, (size_t)n);
  return NNMEM_OK;
}

void nnmem_backend_destroy(nnmem_backend_t *b) {
  if (b && b->destroy) b->destroy(b->ctx);
}

nnmem_status_t nnmem__backend_host_mem_info(void *ctx, uint64_t *free_bytes,
                                            uint64_t *total_bytes) {
  (void)ctx;
  long page = sysconf(_SC_PAGESIZE);
  long total = sysconf(_SC_PHYS_PAGES);
  long avail = sysconf(_SC_AVPHYS_PAGES);
  if (page <= 0 || total <= 0) return NNMEM_ERR_UNSUPPORTED;
  *total_bytes = (uint64_t)total * (uint64_t)page;
  *free_bytes = avail > 0 ? (uint64_t)avail * (uint64_t)page : 0;
  return NNMEM_OK;
}

void nnmem__backend_free_ctx(void *ctx) {
  free(ctx);
}

void *nnmem__map_aligned(uint64_t len, uint64_t align, uint64_t page) {
  uint64_t span = align > page ? len + align : len;
  char *raw = mmap(NULL, (size_t)span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return NULL;
  if (span == len) return raw;
  uintptr_t a =
      ((uintptr_t)raw + (uintptr_t)align - 1) & ~(uintptr_t)(align - 1);
  uint64_t head = a - (uintptr_t)raw, tail = span - head - len;
  if (head) munmap(raw, (size_t)head);
  if (tail) munmap((char *)a + len, (size_t)tail);
  return (void *)a;
}

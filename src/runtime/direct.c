/* direct.c - the "direct" tier: every block is its own backend region
 * (used by the tiered router for large sizes and by slab for sizes above
 * its largest class).
 *
 * Steps: alloc takes a region of the rounded size at the requested
 * alignment and records it; free gives it back.
 * Invariants: used_bytes = sum of recorded region sizes.
 * Complexity: O(1) expected plus the backend. Thread-safety: none. */
#include <stdlib.h>

#include "runtime/addrmap.h"
#include "runtime/pool_internal.h"

typedef struct direct {
  nnmem__src_t *src;
  nnmem__addrmap_t regions; /* addr -> a: len */
  uint64_t used_bytes;
} direct_t;

static nnmem_status_t d_alloc(void *self, uint64_t size, uint64_t align,
                              uint64_t *addr, uint64_t *block, void **tag,
                              uint64_t *aux) {
  direct_t *d = self;
  if (nnmem__addrmap_reserve(&d->regions, 1) != NNMEM_OK)
    return NNMEM_ERR_NOMEM;
  nnmem_status_t st = nnmem__src_take(d->src, size, align, addr);
  if (st != NNMEM_OK) return st;
  nnmem__addrmap_entry_t e = {*addr, size, 0, NULL};
  (void)nnmem__addrmap_put(&d->regions, &e);
  d->used_bytes += size;
  *block = size;
  *tag = NULL;
  *aux = 0;
  return NNMEM_OK;
}

static uint64_t d_free(void *self, uint64_t addr, void *tag, uint64_t aux) {
  direct_t *d = self;
  nnmem__addrmap_entry_t e;
  (void)tag;
  (void)aux;
  if (!nnmem__addrmap_remove(&d->regions, addr, &e)) return 0;
  nnmem__src_give(d->src, addr, e.a);
  d->used_bytes -= e.a;
  return e.a;
}

static int d_owns(void *self, uint64_t addr) {
  direct_t *d = self;
  return nnmem__addrmap_get(&d->regions, addr) != NULL;
}

static nnmem_status_t d_check(void *self, nnmem_diag_t *diag) {
  direct_t *d = self;
  uint64_t sum = 0;
  for (size_t i = 0; i < d->regions.cap; i++)
    if (d->regions.slots[i].key) sum += d->regions.slots[i].a;
  if (sum != d->used_bytes)
    return nnmem__diag(
        diag, NNMEM_ERR_STATE, "direct: regions sum to %llu, counter %llu",
        (unsigned long long)sum, (unsigned long long)d->used_bytes);
  return NNMEM_OK;
}

static void d_free_info(void *self, uint64_t *free_bytes, uint64_t *largest) {
  (void)self;
  *free_bytes = 0;
  *largest = 0;
}

static void d_destroy(void *self) {
  direct_t *d = self;
  for (size_t i = 0; i < d->regions.cap; i++)
    if (d->regions.slots[i].key)
      nnmem__src_give(d->src, d->regions.slots[i].key, d->regions.slots[i].a);
  nnmem__addrmap_free(&d->regions);
  free(d);
}

static const nnmem__impl_ops_t direct_ops = {
    d_alloc, d_free, d_owns, d_check, d_free_info, d_destroy, NULL};

nnmem_status_t nnmem__direct_create(const nnmem__pool_params_t *p,
                                    nnmem__src_t *src, nnmem__impl_t *out) {
  (void)p;
  direct_t *d = calloc(1, sizeof *d);
  if (!d) return NNMEM_ERR_NOMEM;
  d->src = src;
  nnmem__addrmap_init(&d->regions);
  out->ops = &direct_ops;
  out->self = d;
  return NNMEM_OK;
}

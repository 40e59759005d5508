/* shape.c - the dynamic-shape pool: serves the tensors of shapes no
 * static plan was made for (a shape outside every bucket) from one block
 * taken at creation, as large as the largest shape needs, so a stream of
 * changing shapes never goes back to the device allocator.
 *
 *   the block (one backend region, taken once, kept until destroy)
 *   +------+----------+---------+-------------------------------+
 *   | used | free     | used    | free                          |
 *   +------+----------+---------+-------------------------------+
 *            \________ free blocks indexed by (size, address) in a
 *                      treap (fit_tree.c): balanced in expectation
 *
 * Steps:
 *   1. create: take the whole block (p->chunk bytes) from the backend now;
 *      it is one free block;
 *   2. alloc: the smallest free block that fits (best fit, lowest address
 *      among equals), split off the aligned start and the tail (rlist.c);
 *      no fitting block -> NNMEM_ERR_NOMEM (never a second region);
 *   3. free: coalesce with free neighbours; the block stays even when
 *      every byte is free (the next shape reuses it).
 * The splitting and coalescing are the best-fit pool's (rlist.c); this
 * file adds the one-region policy and its invariants.
 * Invariants (nnmem_pool_check): exactly one region, of exactly the block's
 * length, held from creation to destroy; plus the rlist invariants (blocks
 * tile the region, no two free neighbours, the tree holds exactly the free
 * blocks, treap order and heap order, subtree maxima).
 * Complexity: O(log n) expected alloc and free (n = free blocks).
 * Thread-safety: none here (the pool's lock, cfg.thread_safe). */
#include <stdlib.h>

#include "runtime/pool_internal.h"

typedef struct shape {
  nnmem__impl_t inner; /* a best-fit rlist restricted to one region */
  uint64_t block;
} shape_t;

static nnmem_status_t sh_alloc(void *self, uint64_t size, uint64_t align,
                               uint64_t *addr, uint64_t *block, void **tag,
                               uint64_t *aux) {
  shape_t *s = self;
  if (size > s->block) return NNMEM_ERR_NOMEM;
  return s->inner.ops->alloc(s->inner.self, size, align, addr, block, tag, aux);
}

static uint64_t sh_free(void *self, uint64_t addr, void *tag, uint64_t aux) {
  shape_t *s = self;
  return s->inner.ops->free(s->inner.self, addr, tag, aux);
}

static int sh_owns(void *self, uint64_t addr) {
  shape_t *s = self;
  return s->inner.ops->owns(s->inner.self, addr);
}

static nnmem_status_t sh_check(void *self, nnmem_diag_t *diag) {
  shape_t *s = self;
  size_t n = 0;
  uint64_t bytes = 0;
  nnmem__rlist_regions(s->inner.self, &n, &bytes);
  if (n != 1 || bytes != s->block)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "shape pool: %zu regions of %llu bytes, expected one "
                       "block of %llu",
                       n, (unsigned long long)bytes,
                       (unsigned long long)s->block);
  return s->inner.ops->check(s->inner.self, diag);
}

static void sh_free_info(void *self, uint64_t *free_bytes, uint64_t *largest) {
  shape_t *s = self;
  s->inner.ops->free_info(s->inner.self, free_bytes, largest);
}

static void sh_destroy(void *self) {
  shape_t *s = self;
  s->inner.ops->destroy(s->inner.self);
  free(s);
}

static const nnmem__impl_ops_t shape_ops = {
    sh_alloc, sh_free, sh_owns, sh_check, sh_free_info, sh_destroy, NULL};

nnmem_status_t nnmem__shape_create(const nnmem__pool_params_t *p,
                                   nnmem__src_t *src, nnmem__impl_t *out) {
  shape_t *s = calloc(1, sizeof *s);
  if (!s) return NNMEM_ERR_NOMEM;
  nnmem__pool_params_t q = *p;
  q.retain_empty = 1;
  q.one_region = 1;
  s->block = q.chunk;
  nnmem_status_t st =
      nnmem__rlist_create(NNMEM_POOL_BEST_FIT, &q, src, &s->inner);
  if (st != NNMEM_OK) {
    free(s);
    return st;
  }
  st = nnmem__rlist_prefill(s->inner.self);
  if (st != NNMEM_OK) {
    s->inner.ops->destroy(s->inner.self);
    free(s);
    return st;
  }
  out->ops = &shape_ops;
  out->self = s;
  return NNMEM_OK;
}

/* tiered.c - the tiered router: one pool per size range.
 *
 *   size < small_max (1 MiB)          -> slab classes
 *   small_max <= size < large_min     -> TLSF (or buddy / best / first fit)
 *   size >= large_min (16 MiB)        -> a backend region of its own
 *
 * Steps: alloc routes by the rounded size and stores the tier in the top
 * byte of the tag's aux word; free routes by that tier. The middle tier
 * takes chunks of max(chunk, request), chunk defaulting to small_max: a
 * region per block unless a held chunk has room, which keeps the
 * reservation within 1.00-1.05x of the live bytes on the traces of
 * ../shared/data/dsa/traces (larger chunks reached 1.14x).
 * Invariants: each tier's own; all tiers account into the same source.
 * Complexity: that of the tier. Thread-safety: none (pool lock). */
#include <stdlib.h>

#include "runtime/pool_internal.h"

enum { TIER_SMALL, TIER_MIDDLE, TIER_LARGE, TIERS };

typedef struct tiered {
  nnmem__pool_params_t p;
  nnmem__impl_t tier[TIERS];
} tiered_t;

#define TIER_SHIFT 56

static nnmem_status_t t_alloc(void *self, uint64_t size, uint64_t align,
                              uint64_t *addr, uint64_t *block, void **tag,
                              uint64_t *aux) {
  tiered_t *t = self;
  uint64_t k = size < t->p.small_max   ? TIER_SMALL
               : size < t->p.large_min ? TIER_MIDDLE
                                       : TIER_LARGE;
  if (k == TIER_SMALL && align > t->p.small_max / 4) k = TIER_MIDDLE;
  nnmem__impl_t *i = &t->tier[k];
  nnmem_status_t st =
      i->ops->alloc(i->self, size, align, addr, block, tag, aux);
  *aux |= k << TIER_SHIFT;
  return st;
}

static uint64_t t_free(void *self, uint64_t addr, void *tag, uint64_t aux) {
  tiered_t *t = self;
  nnmem__impl_t *i = &t->tier[aux >> TIER_SHIFT];
  return i->ops->free(i->self, addr, tag, aux & ((1ULL << TIER_SHIFT) - 1));
}

static int t_owns(void *self, uint64_t addr) {
  tiered_t *t = self;
  for (int k = 0; k < TIERS; k++)
    if (t->tier[k].ops->owns(t->tier[k].self, addr)) return 1;
  return 0;
}

static nnmem_status_t t_check(void *self, nnmem_diag_t *diag) {
  tiered_t *t = self;
  for (int k = 0; k < TIERS; k++) {
    nnmem_status_t st = t->tier[k].ops->check(t->tier[k].self, diag);
    if (st != NNMEM_OK) return st;
  }
  return NNMEM_OK;
}

static void t_free_info(void *self, uint64_t *free_bytes, uint64_t *largest) {
  tiered_t *t = self;
  *free_bytes = *largest = 0;
  for (int k = 0; k < TIERS; k++) {
    uint64_t f, l;
    t->tier[k].ops->free_info(t->tier[k].self, &f, &l);
    *free_bytes += f;
    if (l > *largest) *largest = l;
  }
}

static void t_destroy(void *self) {
  tiered_t *t = self;
  for (int k = 0; k < TIERS; k++)
    if (t->tier[k].ops) t->tier[k].ops->destroy(t->tier[k].self);
  free(t);
}

static const nnmem__impl_ops_t tiered_ops = {
    t_alloc, t_free, t_owns, t_check, t_free_info, t_destroy, NULL};

nnmem_status_t nnmem__tiered_create(const nnmem__pool_params_t *p,
                                    nnmem__src_t *src, nnmem__impl_t *out) {
  tiered_t *t = calloc(1, sizeof *t);
  if (!t) return NNMEM_ERR_NOMEM;
  t->p = *p;
  nnmem__pool_params_t mid = *p;
  mid.chunk = p->chunk;
  if (p->middle == NNMEM_POOL_BUDDY) mid.chunk = nnmem__next_pow2(mid.chunk);
  nnmem_status_t st = nnmem__slab_create(p, src, &t->tier[TIER_SMALL]);
  if (st == NNMEM_OK)
    st = p->middle == NNMEM_POOL_BUDDY
             ? nnmem__buddy_create(&mid, src, &t->tier[TIER_MIDDLE])
             : nnmem__rlist_create(p->middle, &mid, src, &t->tier[TIER_MIDDLE]);
  if (st == NNMEM_OK) st = nnmem__direct_create(p, src, &t->tier[TIER_LARGE]);
  if (st != NNMEM_OK) {
    t_destroy(t);
    return st;
  }
  out->ops = &tiered_ops;
  out->self = t;
  return NNMEM_OK;
}

/* fixed.c - fixed-size block pool: one block size, a LIFO stack of free
 * block addresses, growth by chunks.
 *
 * Steps of alloc: 1. size > block size -> NNMEM_ERR_INVALID; 2. when the
 * stack is empty take a chunk (chunk_size bytes, default 64 blocks) and push
 * its blocks; 3. pop (the most recently freed block: warm in cache);
 * 4. when fewer than low_watermark blocks remain free, take another chunk
 * now (a failure there is ignored: the allocation already succeeded).
 * free: push. Chunks are kept until the pool is destroyed.
 * Invariants: free + live = chunks * blocks per chunk; every free address
 * is distinct, inside a chunk and on a block boundary.
 * Complexity: O(1) alloc/free (amortized over chunk growth).
 * Thread-safety: none (pool lock). */
#include <stdlib.h>

#include "runtime/addrmap.h"
#include "runtime/pool_internal.h"

typedef struct fixed {
  nnmem__pool_params_t p;
  nnmem__src_t *src;
  uint64_t per_chunk, chunk_len;
  uint64_t *stack;
  size_t n, cap;
  nnmem__addrmap_t chunks; /* base -> 1 */
  uint64_t live;
} fixed_t;

static nnmem_status_t grow(fixed_t *f) {
  uint64_t base;
  if (nnmem__grow((void **)&f->stack, &f->cap,
                  (f->chunks.count + 1) * f->per_chunk,
                  sizeof *f->stack) != NNMEM_OK ||
      nnmem__addrmap_reserve(&f->chunks, 1) != NNMEM_OK)
    return NNMEM_ERR_NOMEM;
  nnmem_status_t st =
      nnmem__src_take(f->src, f->chunk_len, f->p.granule, &base);
  if (st != NNMEM_OK) return st;
  nnmem__addrmap_entry_t e = {base, 1, 0, NULL};
  (void)nnmem__addrmap_put(&f->chunks, &e);
  for (uint64_t i = f->per_chunk; i-- > 0;)
    f->stack[f->n++] = base + i * f->p.block;
  return NNMEM_OK;
}

static nnmem_status_t fx_alloc(void *self, uint64_t size, uint64_t align,
                               uint64_t *addr, uint64_t *block, void **tag,
                               uint64_t *aux) {
  fixed_t *f = self;
  if (size > f->p.block || (f->p.block & (align - 1)) || align > f->p.granule)
    return NNMEM_ERR_INVALID;
  if (f->n == 0) {
    nnmem_status_t st = grow(f);
    if (st != NNMEM_OK) return st;
  }
  *addr = f->stack[--f->n];
  if (f->n < f->p.low_watermark) (void)grow(f);
  f->live++;
  *block = f->p.block;
  *tag = NULL;
  *aux = 0;
  return NNMEM_OK;
}

static uint64_t fx_free(void *self, uint64_t addr, void *tag, uint64_t aux) {
  fixed_t *f = self;
  (void)tag;
  (void)aux;
  f->stack[f->n++] = addr; /* capacity covers every block of every chunk */
  f->live--;
  return f->p.block;
}

static uint64_t chunk_of(const fixed_t *f, uint64_t addr) {
  for (size_t i = 0; i < f->chunks.cap; i++) {
    uint64_t b = f->chunks.slots[i].key;
    if (b && addr >= b && addr - b < f->chunk_len) return b;
  }
  return 0;
}

static int fx_owns(void *self, uint64_t addr) {
  return chunk_of(self, addr) != 0;
}

static nnmem_status_t fx_check(void *self, nnmem_diag_t *diag) {
  fixed_t *f = self;
  if (f->n + f->live != f->chunks.count * f->per_chunk)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "fixed: %zu free + %llu live != %zu chunks x %llu", f->n,
                       (unsigned long long)f->live, f->chunks.count,
                       (unsigned long long)f->per_chunk);
  nnmem__addrmap_t seen;
  nnmem__addrmap_init(&seen);
  nnmem_status_t st = nnmem__addrmap_reserve(&seen, f->n);
  for (size_t i = 0; st == NNMEM_OK && i < f->n; i++) {
    uint64_t a = f->stack[i], base = chunk_of(f, a);
    nnmem__addrmap_entry_t e = {a, 0, 0, NULL};
    if (!base || (a - base) % f->p.block || nnmem__addrmap_get(&seen, a))
      st = nnmem__diag(diag, NNMEM_ERR_STATE,
                       "fixed: free block 0x%llx repeated or outside chunks",
                       (unsigned long long)a);
    else
      (void)nnmem__addrmap_put(&seen, &e);
  }
  nnmem__addrmap_free(&seen);
  return st;
}

static void fx_free_info(void *self, uint64_t *free_bytes, uint64_t *largest) {
  fixed_t *f = self;
  *free_bytes = f->n * f->p.block;
  *largest = f->n ? f->p.block : 0;
}

static void fx_destroy(void *self) {
  fixed_t *f = self;
  for (size_t i = 0; i < f->chunks.cap; i++)
    if (f->chunks.slots[i].key)
      nnmem__src_give(f->src, f->chunks.slots[i].key, f->chunk_len);
  nnmem__addrmap_free(&f->chunks);
  free(f->stack);
  free(f);
}

static const nnmem__impl_ops_t fixed_ops = {fx_alloc, fx_free,      fx_owns,
                                            fx_check, fx_free_info, fx_destroy};

nnmem_status_t nnmem__fixed_create(const nnmem__pool_params_t *p,
                                   nnmem__src_t *src, nnmem__impl_t *out) {
  fixed_t *f = calloc(1, sizeof *f);
  if (!f) return NNMEM_ERR_NOMEM;
  f->p = *p;
  f->src = src;
  f->per_chunk = p->chunk / p->block ? p->chunk / p->block : 1;
  f->chunk_len = f->per_chunk * p->block;
  out->ops = &fixed_ops;
  out->self = f;
  return NNMEM_OK;
}

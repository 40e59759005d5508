/* buddy.c - binary buddy pool (Knowlton 1965; Knuth TAOCP vol. 1, 2.5).
 *
 * Blocks are min_block << k bytes (order k, min_block = granule) inside
 * chunks of 2^m bytes aligned to their own length; the buddy of the block
 * at chunk offset o of order k is at o XOR (min_block << k).
 *
 *   order 3 |               chunk               |
 *   order 2 |       A        |        B         |   A and B are buddies
 *   order 1 |   A0   |  A1   |
 *
 * Free blocks of each order sit in an array (O(1) push, O(1) removal by
 * swapping with the last element) and in a hash map addr -> (order, index)
 * that finds a buddy in O(1).
 * Steps of alloc(size, align): 1. order k = log2(next_pow2(max(size,
 * align)) / min_block); sizes above the chunk get their own backend region;
 * 2. find the smallest order j >= k with a free block, else take a new
 * chunk (one block of the top order); 3. split down to k, pushing the upper
 * halves. free: while the buddy is free at the same order, remove it and
 * merge; a whole free chunk goes back to the backend (unless retain_empty).
 * Invariants: every free block is aligned to its size inside its chunk;
 * no free block has its buddy free at the same order; free bytes + used
 * bytes = chunks * chunk size.
 * Complexity: O(log(chunk / min_block)) alloc and free.
 * Thread-safety: none (pool lock). */
#include <stdlib.h>
#include <string.h>

#include "runtime/addrmap.h"
#include "runtime/pool_internal.h"

#define MAX_ORDERS 48

typedef struct order_list {
  uint64_t *addrs;
  size_t n, cap;
} order_list_t;

typedef struct buddy {
  nnmem__pool_params_t p;
  nnmem__src_t *src;
  nnmem__impl_t direct;
  unsigned top; /* order of a whole chunk */
  order_list_t lists[MAX_ORDERS];
  nnmem__addrmap_t freemap; /* addr -> a: order, b: index in list */
  nnmem__addrmap_t chunks;  /* chunk base -> 1 */
  uint64_t used_bytes, free_bytes;
} buddy_t;

static uint64_t bsize(const buddy_t *b, unsigned k) {
  return b->p.granule << k;
}

static nnmem_status_t push_free(buddy_t *b, unsigned k, uint64_t addr) {
  order_list_t *l = &b->lists[k];
  if (nnmem__grow((void **)&l->addrs, &l->cap, l->n + 1, sizeof *l->addrs) !=
      NNMEM_OK)
    return NNMEM_ERR_NOMEM;
  nnmem__addrmap_entry_t e = {addr, k, l->n, NULL};
  if (nnmem__addrmap_put(&b->freemap, &e) != NNMEM_OK) return NNMEM_ERR_NOMEM;
  l->addrs[l->n++] = addr;
  b->free_bytes += bsize(b, k);
  return NNMEM_OK;
}

static void remove_free(buddy_t *b, uint64_t addr) {
  nnmem__addrmap_entry_t e;
  nnmem__addrmap_remove(&b->freemap, addr, &e);
  order_list_t *l = &b->lists[e.a];
  uint64_t last = l->addrs[--l->n];
  if (e.b < l->n) {
    l->addrs[e.b] = last;
    nnmem__addrmap_get(&b->freemap, last)->b = e.b;
  }
  b->free_bytes -= bsize(b, (unsigned)e.a);
}

/* Room for `n` pushes that cannot fail afterwards. */
static int reserve(buddy_t *b, unsigned n) {
  if (nnmem__addrmap_reserve(&b->freemap, n) != NNMEM_OK) return 0;
  for (unsigned k = 0; k <= b->top; k++) {
    order_list_t *l = &b->lists[k];
    if (nnmem__grow((void **)&l->addrs, &l->cap, l->n + 2, sizeof *l->addrs) !=
        NNMEM_OK)
      return 0;
  }
  return 1;
}

static nnmem_status_t new_chunk(buddy_t *b) {
  uint64_t base;
  if (nnmem__addrmap_reserve(&b->chunks, 1) != NNMEM_OK) return NNMEM_ERR_NOMEM;
  nnmem_status_t st = nnmem__src_take(b->src, b->p.chunk, b->p.chunk, &base);
  if (st != NNMEM_OK) return st;
  nnmem__addrmap_entry_t e = {base, 1, 0, NULL};
  (void)nnmem__addrmap_put(&b->chunks, &e);
  (void)push_free(b, b->top, base); /* reserved by the caller */
  return NNMEM_OK;
}

static nnmem_status_t bd_alloc(void *self, uint64_t size, uint64_t align,
                               uint64_t *addr, uint64_t *block, void **tag,
                               uint64_t *aux) {
  buddy_t *b = self;
  uint64_t need = nnmem__next_pow2(nnmem__max_u64(size, align));
  if (need > b->p.chunk) {
    nnmem_status_t st = b->direct.ops->alloc(b->direct.self, size, align, addr,
                                             block, tag, aux);
    *aux = 1u << 8;
    return st;
  }
  unsigned k = nnmem__log2(need / b->p.granule), j = k;
  if (!reserve(b, b->top + 2)) return NNMEM_ERR_NOMEM;
  while (j <= b->top && b->lists[j].n == 0)
    j++;
  if (j > b->top) {
    nnmem_status_t st = new_chunk(b);
    if (st != NNMEM_OK) return st;
    j = b->top;
  }
  uint64_t a = b->lists[j].addrs[b->lists[j].n - 1];
  remove_free(b, a);
  while (j > k) { /* split: keep the lower half, free the upper */
    j--;
    (void)push_free(b, j, a + bsize(b, j));
  }
  b->used_bytes += bsize(b, k);
  *addr = a;
  *block = bsize(b, k);
  *tag = NULL;
  *aux = k;
  return NNMEM_OK;
}

static uint64_t bd_free(void *self, uint64_t addr, void *tag, uint64_t aux) {
  buddy_t *b = self;
  if (aux >> 8) return b->direct.ops->free(b->direct.self, addr, tag, 0);
  unsigned k = (unsigned)aux;
  uint64_t freed = bsize(b, k), base = addr & ~(b->p.chunk - 1);
  b->used_bytes -= freed;
  while (k < b->top) {
    uint64_t buddy = base + ((addr - base) ^ bsize(b, k));
    nnmem__addrmap_entry_t *e = nnmem__addrmap_get(&b->freemap, buddy);
    if (!e || e->a != k) break;
    remove_free(b, buddy);
    if (buddy < addr) addr = buddy;
    k++;
  }
  if (k == b->top && !b->p.retain_empty) {
    nnmem__addrmap_remove(&b->chunks, base, NULL);
    nnmem__src_give(b->src, base, b->p.chunk);
    return freed;
  }
  /* one push after removals: the list and map have room (they shrank or
   * were reserved at allocation) */
  (void)push_free(b, k, addr);
  return freed;
}

static int bd_owns(void *self, uint64_t addr) {
  buddy_t *b = self;
  return nnmem__addrmap_get(&b->chunks, addr & ~(b->p.chunk - 1)) != NULL ||
         b->direct.ops->owns(b->direct.self, addr);
}

static nnmem_status_t bd_check(void *self, nnmem_diag_t *diag) {
  buddy_t *b = self;
  uint64_t freeb = 0, n = 0;
  for (unsigned k = 0; k <= b->top; k++)
    for (size_t i = 0; i < b->lists[k].n; i++) {
      uint64_t a = b->lists[k].addrs[i], base = a & ~(b->p.chunk - 1);
      nnmem__addrmap_entry_t *e = nnmem__addrmap_get(&b->freemap, a);
      uint64_t buddy = base + ((a - base) ^ bsize(b, k));
      nnmem__addrmap_entry_t *be =
          k < b->top ? nnmem__addrmap_get(&b->freemap, buddy) : NULL;
      if (!e || e->a != k || e->b != i || ((a - base) & (bsize(b, k) - 1)) ||
          !nnmem__addrmap_get(&b->chunks, base) || (be && be->a == k))
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "buddy: free block 0x%llx order %u inconsistent "
                           "(map, alignment, chunk or uncoalesced buddy)",
                           (unsigned long long)a, k);
      freeb += bsize(b, k);
      n++;
    }
  if (n != b->freemap.count || freeb != b->free_bytes ||
      freeb + b->used_bytes != (uint64_t)b->chunks.count * b->p.chunk)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "buddy: free %llu + used %llu != %zu chunks",
                       (unsigned long long)freeb,
                       (unsigned long long)b->used_bytes, b->chunks.count);
  return b->direct.ops->check(b->direct.self, diag);
}

static void bd_free_info(void *self, uint64_t *free_bytes, uint64_t *largest) {
  buddy_t *b = self;
  *free_bytes = b->free_bytes;
  *largest = 0;
  for (unsigned k = b->top + 1; k-- > 0;)
    if (b->lists[k].n) {
      *largest = bsize(b, k);
      break;
    }
}

static void bd_destroy(void *self) {
  buddy_t *b = self;
  for (size_t i = 0; i < b->chunks.cap; i++)
    if (b->chunks.slots[i].key)
      nnmem__src_give(b->src, b->chunks.slots[i].key, b->p.chunk);
  for (unsigned k = 0; k < MAX_ORDERS; k++)
    free(b->lists[k].addrs);
  nnmem__addrmap_free(&b->freemap);
  nnmem__addrmap_free(&b->chunks);
  b->direct.ops->destroy(b->direct.self);
  free(b);
}

static const nnmem__impl_ops_t buddy_ops = {
    bd_alloc, bd_free, bd_owns, bd_check, bd_free_info, bd_destroy, NULL};

nnmem_status_t nnmem__buddy_create(const nnmem__pool_params_t *p,
                                   nnmem__src_t *src, nnmem__impl_t *out) {
  buddy_t *b = calloc(1, sizeof *b);
  if (!b) return NNMEM_ERR_NOMEM;
  b->p = *p;
  b->p.chunk = nnmem__next_pow2(nnmem__max_u64(p->chunk, p->granule));
  b->src = src;
  b->top = nnmem__log2(b->p.chunk / p->granule);
  if (b->top >= MAX_ORDERS || nnmem__direct_create(p, src, &b->direct)) {
    free(b);
    return NNMEM_ERR_INVALID;
  }
  out->ops = &buddy_ops;
  out->self = b;
  return NNMEM_OK;
}

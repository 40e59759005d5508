/* rlist.c - the TLSF, best-fit and first-fit pools: out-of-band block
 * records over chunks taken from the backend, with immediate coalescing;
 * the policy only decides the free-block index (tlsf.c or fit_tree.c).
 *
 *   chunk (one backend region)
 *   +--------+-------------+------+----------------+
 *   | used   | free        | used | free           |   records:
 *   +--------+-------------+------+----------------+   prev_phys/next_phys
 *   ^ first block: carries chunk_len, on the chunk list
 *
 * Steps of alloc(size, align):
 *   1. search size + (align - granule) when align > granule (room for the
 *      aligned start); find a free block in the index, else take a new chunk
 *      of max(chunk, search) bytes and search again;
 *   2. split off the leading gap up to the aligned start as a free block;
 *   3. split off the tail when it is >= the split threshold (default 128 B)
 *      and reinsert it; the rest is handed out.
 * Steps of free: mark free; merge with a free next block, then with a free
 * previous block (immediate coalescing); a block that spans its whole chunk
 * goes back to the backend (unless retain_empty), else into the index.
 * Invariants: blocks of a chunk tile it exactly (addr + size = next addr,
 * sizes sum to chunk_len); no two neighbours are both free; a block is in
 * the index iff it is free; free_bytes / used_bytes equal the sums.
 * Complexity: TLSF O(1) alloc/free; trees O(log n). Records come from a
 * recycled free list. Thread-safety: none (pool lock). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pool_internal.h"
#include "runtime/rlist.h"

#define REC_BATCH 256

typedef struct rec_batch {
  struct rec_batch *next;
  nnmem__rblock_t recs[REC_BATCH];
} rec_batch_t;

typedef struct rlist {
  nnmem_pool_kind_t policy;
  nnmem__pool_params_t p;
  nnmem__src_t *src;
  nnmem__tlsf_index_t tlsf;
  nnmem__fit_tree_t tree;
  nnmem__rblock_t *spare; /* recycled records (linked by fnext) */
  size_t n_spare;
  rec_batch_t *batches;
  nnmem__rblock_t *chunks; /* chunk list of first blocks */
  uint64_t free_bytes, used_bytes, free_blocks;
} rlist_t;

static int reserve_records(rlist_t *r, size_t n) {
  while (r->n_spare < n) {
    rec_batch_t *b = malloc(sizeof *b);
    if (!b) return 0;
    b->next = r->batches;
    r->batches = b;
    for (size_t i = 0; i < REC_BATCH; i++) {
      b->recs[i].fnext = r->spare;
      r->spare = &b->recs[i];
    }
    r->n_spare += REC_BATCH;
  }
  return 1;
}

static nnmem__rblock_t *new_record(rlist_t *r) { /* after reserve_records */
  nnmem__rblock_t *b = r->spare;
  r->spare = b->fnext;
  r->n_spare--;
  memset(b, 0, sizeof *b);
  return b;
}

static void drop_record(rlist_t *r, nnmem__rblock_t *b) {
  b->fnext = r->spare;
  r->spare = b;
  r->n_spare++;
}

static void index_insert(rlist_t *r, nnmem__rblock_t *b) {
  b->is_free = 1;
  r->free_bytes += b->size;
  r->free_blocks++;
  if (r->policy == NNMEM_POOL_TLSF)
    nnmem__tlsf_insert(&r->tlsf, b);
  else
    nnmem__fit_insert(&r->tree, b);
}

static void index_remove(rlist_t *r, nnmem__rblock_t *b) {
  r->free_bytes -= b->size;
  r->free_blocks--;
  if (r->policy == NNMEM_POOL_TLSF)
    nnmem__tlsf_remove(&r->tlsf, b);
  else
    nnmem__fit_remove(&r->tree, b);
  b->is_free = 0;
}

static nnmem__rblock_t *index_find(rlist_t *r, uint64_t size) {
  return r->policy == NNMEM_POOL_TLSF ? nnmem__tlsf_find(&r->tlsf, size)
                                      : nnmem__fit_find(&r->tree, size);
}

/* Splits b at offset `at`: b keeps [addr, addr+at), the new record gets
 * the rest and is returned (not in the index). */
static nnmem__rblock_t *split_at(rlist_t *r, nnmem__rblock_t *b, uint64_t at) {
  nnmem__rblock_t *n = new_record(r);
  n->addr = b->addr + at;
  n->size = b->size - at;
  b->size = at;
  n->prev_phys = b;
  n->next_phys = b->next_phys;
  if (n->next_phys) n->next_phys->prev_phys = n;
  b->next_phys = n;
  return n;
}

/* Takes a chunk of max(chunk, search) bytes; *out is its (free, indexed)
 * block: TLSF's good-fit rounding may not find an exact-size block, so the
 * caller uses it directly. */
static nnmem_status_t grow(rlist_t *r, uint64_t search, nnmem__rblock_t **out) {
  uint64_t len = nnmem__max_u64(r->p.chunk, search), addr;
  nnmem_status_t st = nnmem__src_take(r->src, len, r->p.granule, &addr);
  if (st != NNMEM_OK) return st;
  nnmem__rblock_t *b = new_record(r);
  b->addr = addr;
  b->size = len;
  b->chunk_len = len;
  b->cnext = r->chunks;
  if (r->chunks) r->chunks->cprev = b;
  r->chunks = b;
  index_insert(r, b);
  *out = b;
  return NNMEM_OK;
}

static nnmem_status_t rl_alloc(void *self, uint64_t size, uint64_t align,
                               uint64_t *addr, uint64_t *block, void **tag,
                               uint64_t *aux) {
  rlist_t *r = self;
  uint64_t g = r->p.granule, search = size;
  if (align > g && nnmem__add_overflow(size, align - g, &search))
    return NNMEM_ERR_NOMEM;
  if (!reserve_records(r, 3)) return NNMEM_ERR_NOMEM;
  nnmem__rblock_t *b = index_find(r, search);
  if (!b && r->p.one_region && r->chunks) return NNMEM_ERR_NOMEM;
  if (!b) {
    nnmem_status_t st = grow(r, search, &b);
    if (st != NNMEM_OK) return st;
  }
  index_remove(r, b);
  uint64_t gap = ((b->addr + align - 1) & ~(align - 1)) - b->addr;
  if (gap) {
    nnmem__rblock_t *n = split_at(r, b, gap);
    index_insert(r, b);
    b = n;
  }
  uint64_t rest = b->size - size;
  if (rest >= r->p.split && rest >= g) index_insert(r, split_at(r, b, size));
  r->used_bytes += b->size;
  *addr = b->addr;
  *block = b->size;
  *tag = b;
  *aux = 0;
  return NNMEM_OK;
}

static void release_chunk(rlist_t *r, nnmem__rblock_t *b) {
  if (b->cprev)
    b->cprev->cnext = b->cnext;
  else
    r->chunks = b->cnext;
  if (b->cnext) b->cnext->cprev = b->cprev;
  nnmem__src_give(r->src, b->addr, b->chunk_len);
  drop_record(r, b);
}

static uint64_t rl_free(void *self, uint64_t addr, void *tag, uint64_t aux) {
  rlist_t *r = self;
  nnmem__rblock_t *b = tag, *n = b->next_phys, *p = b->prev_phys;
  uint64_t size = b->size;
  (void)addr;
  (void)aux;
  r->used_bytes -= size;
  if (n && n->is_free) { /* absorb the next block */
    index_remove(r, n);
    b->size += n->size;
    b->next_phys = n->next_phys;
    if (b->next_phys) b->next_phys->prev_phys = b;
    drop_record(r, n);
  }
  if (p && p->is_free) { /* be absorbed by the previous block */
    index_remove(r, p);
    p->size += b->size;
    p->next_phys = b->next_phys;
    if (p->next_phys) p->next_phys->prev_phys = p;
    drop_record(r, b);
    b = p;
  }
  if (!b->prev_phys && !b->next_phys && !r->p.retain_empty)
    release_chunk(r, b);
  else
    index_insert(r, b);
  return size;
}

static int rl_owns(void *self, uint64_t addr) {
  rlist_t *r = self;
  for (nnmem__rblock_t *c = r->chunks; c; c = c->cnext)
    if (addr >= c->addr && addr - c->addr < c->chunk_len) return 1;
  return 0;
}

static nnmem_status_t rl_check(void *self, nnmem_diag_t *diag) {
  rlist_t *r = self;
  uint64_t nfree = 0, freeb = 0, used = 0, idx_n = 0;
  char msg[200];
  for (nnmem__rblock_t *c = r->chunks; c; c = c->cnext) {
    uint64_t sum = 0;
    if (c->prev_phys || (c->cnext && c->cnext->cprev != c))
      return nnmem__diag(diag, NNMEM_ERR_STATE, "rlist: chunk list broken");
    for (nnmem__rblock_t *b = c; b; b = b->next_phys) {
      nnmem__rblock_t *n = b->next_phys;
      if (b->size == 0 ||
          (n && (n->prev_phys != b || n->addr != b->addr + b->size)))
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "rlist: blocks at 0x%llx do not tile the chunk",
                           (unsigned long long)b->addr);
      if (n && b->is_free && n->is_free)
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "rlist: neighbours 0x%llx and 0x%llx both free",
                           (unsigned long long)b->addr,
                           (unsigned long long)n->addr);
      sum += b->size;
      if (b->is_free) {
        nfree++;
        freeb += b->size;
      } else {
        used += b->size;
      }
    }
    if (sum != c->chunk_len)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "rlist: chunk 0x%llx blocks sum to %llu, not %llu",
                         (unsigned long long)c->addr, (unsigned long long)sum,
                         (unsigned long long)c->chunk_len);
  }
  int bad = r->policy == NNMEM_POOL_TLSF
                ? nnmem__tlsf_check(&r->tlsf, &idx_n, msg, sizeof msg)
                : nnmem__fit_check(&r->tree, &idx_n, msg, sizeof msg);
  if (bad) return nnmem__diag(diag, NNMEM_ERR_STATE, "%s", msg);
  if (idx_n != nfree || nfree != r->free_blocks || freeb != r->free_bytes ||
      used != r->used_bytes)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "rlist: %llu free blocks in chunks, %llu indexed, "
                       "counters disagree",
                       (unsigned long long)nfree, (unsigned long long)idx_n);
  return NNMEM_OK;
}

static void rl_free_info(void *self, uint64_t *free_bytes, uint64_t *largest) {
  rlist_t *r = self;
  *free_bytes = r->free_bytes;
  *largest = r->policy == NNMEM_POOL_TLSF ? nnmem__tlsf_largest(&r->tlsf)
                                          : nnmem__fit_largest(&r->tree);
}

static void rl_destroy(void *self) {
  rlist_t *r = self;
  while (r->chunks) {
    nnmem__rblock_t *c = r->chunks;
    r->chunks = c->cnext;
    nnmem__src_give(r->src, c->addr, c->chunk_len);
  }
  while (r->batches) {
    rec_batch_t *b = r->batches;
    r->batches = b->next;
    free(b);
  }
  free(r);
}

nnmem_status_t nnmem__rlist_prefill(void *self) {
  rlist_t *r = self;
  nnmem__rblock_t *b;
  if (!reserve_records(r, 1)) return NNMEM_ERR_NOMEM;
  return grow(r, r->p.chunk, &b);
}

void nnmem__rlist_regions(void *self, size_t *count, uint64_t *bytes) {
  rlist_t *r = self;
  *count = 0;
  *bytes = 0;
  for (nnmem__rblock_t *c = r->chunks; c; c = c->cnext) {
    (*count)++;
    *bytes += c->chunk_len;
  }
}

static const nnmem__impl_ops_t rlist_ops = {
    rl_alloc, rl_free, rl_owns, rl_check, rl_free_info, rl_destroy, NULL};

nnmem_status_t nnmem__rlist_create(nnmem_pool_kind_t policy,
                                   const nnmem__pool_params_t *p,
                                   nnmem__src_t *src, nnmem__impl_t *out) {
  rlist_t *r = calloc(1, sizeof *r);
  if (!r) return NNMEM_ERR_NOMEM;
  r->policy = policy;
  r->p = *p;
  r->src = src;
  r->tlsf.granule_log2 = nnmem__log2(p->granule);
  r->tree.by_size = policy == NNMEM_POOL_BEST_FIT;
  r->tree.rng = 0x2545F4914F6CDD1DULL;
  out->ops = &rlist_ops;
  out->self = r;
  return NNMEM_OK;
}

/* domain_table.h - the block table of a domain set: live block address ->
 * (requested size, owner id, has-grants bit), built for the allocation path.
 *
 *   entry (16 bytes):  key = block address (0 = empty)
 *                      meta = size (bits 0-47) | owner (48-53) | grants (54)
 *
 * Algorithm: open addressing with linear probing; the home slot is
 * Fibonacci hashing of the address without its 4 always-zero low bits
 * ((key >> 4) * 2^64/phi >> (64 - log2 cap)); the table doubles when it
 * would pass 1/4 full, so a lookup almost always ends at its first or second
 * slot (few mispredicted branches; 16-byte entries keep 1,024 live blocks in
 * 32 KiB); removal by backward shift (Knuth 6.4 algorithm R), no
 * tombstones. The colour is the owner's (a domain's colour never changes),
 * so owner id = colour tag of the block.
 * Invariants: cap is a power of two >= 64; count <= cap / 4; every key sits
 * on the probe path from its home slot with no empty slot in between.
 * Complexity: O(1) expected; growth O(n) amortized.
 * Thread-safety: none (the set's). Internal; not installed. */
#ifndef NNMEM_DOMAIN_TABLE_H
#define NNMEM_DOMAIN_TABLE_H

#include <stdint.h>
#include <stdlib.h>

#include "nnmem/status.h"

#define NNMEM__DT_SIZE_MAX ((1ULL << 48) - 1)
#define NNMEM__DT_GRANTS (1ULL << 54)

typedef struct nnmem__dt_entry {
  uint64_t key, meta;
} nnmem__dt_entry_t;

typedef struct nnmem__dt {
  nnmem__dt_entry_t *slots;
  size_t cap, count;
  unsigned shift; /* 64 - log2(cap) */
} nnmem__dt_t;

static inline uint64_t nnmem__dt_size(uint64_t meta) {
  return meta & NNMEM__DT_SIZE_MAX;
}
static inline uint32_t nnmem__dt_owner(uint64_t meta) {
  return (uint32_t)(meta >> 48) & 63u;
}

static inline size_t nnmem__dt_home(const nnmem__dt_t *t, uint64_t key) {
  return (size_t)(((key >> 4) * 0x9E3779B97F4A7C15ULL) >> t->shift);
}

/* Allocates the first 64 slots. NNMEM_ERR_NOMEM. */
static inline nnmem_status_t nnmem__dt_init(nnmem__dt_t *t) {
  t->cap = 64, t->count = 0, t->shift = 58;
  t->slots = calloc(t->cap, sizeof *t->slots);
  return t->slots ? NNMEM_OK : NNMEM_ERR_NOMEM;
}

static inline void nnmem__dt_free(nnmem__dt_t *t) {
  free(t->slots);
  t->slots = NULL;
  t->cap = t->count = 0;
}

static inline nnmem__dt_entry_t *nnmem__dt_get(const nnmem__dt_t *t,
                                               uint64_t key) {
  size_t mask = t->cap - 1, i = nnmem__dt_home(t, key);
  for (;;) {
    nnmem__dt_entry_t *e = &t->slots[i];
    if (e->key == key) return key ? e : NULL;
    if (e->key == 0) return NULL;
    i = (i + 1) & mask;
  }
}

static inline void nnmem__dt_place(nnmem__dt_t *t, uint64_t key,
                                   uint64_t meta) {
  size_t mask = t->cap - 1, i = nnmem__dt_home(t, key);
  while (t->slots[i].key)
    i = (i + 1) & mask;
  t->slots[i].key = key;
  t->slots[i].meta = meta;
}

/* Doubles the table (out of line: rare). */
nnmem_status_t nnmem__dt_grow(nnmem__dt_t *t);

/* Inserts a key known to be absent (nonzero). NNMEM_ERR_NOMEM when growing
 * fails (nothing changes). */
static inline nnmem_status_t nnmem__dt_insert(nnmem__dt_t *t, uint64_t key,
                                              uint64_t meta) {
  if ((t->count + 1) * 4 > t->cap) {
    nnmem_status_t s = nnmem__dt_grow(t);
    if (s != NNMEM_OK) return s;
  }
  nnmem__dt_place(t, key, meta);
  t->count++;
  return NNMEM_OK;
}

/* Removes the entry `e` got from nnmem__dt_get. */
static inline void nnmem__dt_remove(nnmem__dt_t *t, nnmem__dt_entry_t *e) {
  size_t mask = t->cap - 1, i = (size_t)(e - t->slots), j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (t->slots[j].key == 0) break;
    size_t h = nnmem__dt_home(t, t->slots[j].key);
    /* entry j may move to the hole i when its home is not in (i, j] */
    int between = (i <= j) ? (h > i && h <= j) : (h > i || h <= j);
    if (!between) {
      t->slots[i] = t->slots[j];
      i = j;
    }
  }
  t->slots[i].key = 0;
  t->count--;
}

#endif /* NNMEM_DOMAIN_TABLE_H */

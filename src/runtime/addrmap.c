/* addrmap.c - open-addressing hash map keyed by nonzero 64-bit addresses.
 *
 * Algorithm:
 *   1. slot = mix(key) & (cap - 1); linear probing until the key or an
 *      empty slot (key 0) is found;
 *   2. the table doubles when count would exceed 3/4 of cap;
 *   3. removal uses backward-shift deletion (Knuth 6.4 algorithm R), so no
 *      tombstones are needed and probe chains stay short.
 * Invariants: cap is 0 or a power of two; count < cap; every key sits on
 * the probe path from its home slot with no empty slot in between.
 * Complexity: O(1) expected per operation; growth O(n) amortized.
 * Thread-safety: none; callers lock. */
#include "runtime/addrmap.h"

#include <stdlib.h>
#include <string.h>

static size_t home(uint64_t key, size_t cap) {
  key ^= key >> 29;
  key *= 0xbf58476d1ce4e5b9ULL;
  key ^= key >> 32;
  return (size_t)key & (cap - 1);
}

void nnmem__addrmap_init(nnmem__addrmap_t *m) {
  memset(m, 0, sizeof *m);
}

void nnmem__addrmap_free(nnmem__addrmap_t *m) {
  free(m->slots);
  memset(m, 0, sizeof *m);
}

static void place(nnmem__addrmap_entry_t *slots, size_t cap,
                  const nnmem__addrmap_entry_t *e) {
  size_t i = home(e->key, cap);
  while (slots[i].key != 0)
    i = (i + 1) & (cap - 1);
  slots[i] = *e;
}

static nnmem_status_t rehash(nnmem__addrmap_t *m, size_t cap) {
  nnmem__addrmap_entry_t *s = calloc(cap, sizeof *s);
  if (!s) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key) place(s, cap, &m->slots[i]);
  free(m->slots);
  m->slots = s;
  m->cap = cap;
  return NNMEM_OK;
}

nnmem_status_t nnmem__addrmap_reserve(nnmem__addrmap_t *m, size_t extra) {
  size_t need = m->count + extra;
  if (need < m->count) return NNMEM_ERR_OVERFLOW;
  size_t cap = m->cap ? m->cap : 16;
  while (need * 4 > cap * 3) {
    if (cap > (SIZE_MAX / 2) / sizeof(nnmem__addrmap_entry_t))
      return NNMEM_ERR_OVERFLOW;
    cap *= 2;
  }
  if (cap == m->cap) return NNMEM_OK;
  return rehash(m, cap);
}

nnmem_status_t nnmem__addrmap_put(nnmem__addrmap_t *m,
                                  const nnmem__addrmap_entry_t *e) {
  nnmem__addrmap_entry_t *old = nnmem__addrmap_get(m, e->key);
  if (old) {
    *old = *e;
    return NNMEM_OK;
  }
  nnmem_status_t st = nnmem__addrmap_reserve(m, 1);
  if (st != NNMEM_OK) return st;
  place(m->slots, m->cap, e);
  m->count++;
  return NNMEM_OK;
}

nnmem__addrmap_entry_t *nnmem__addrmap_get(const nnmem__addrmap_t *m,
                                           uint64_t key) {
  if (m->cap == 0 || key == 0) return NULL;
  size_t i = home(key, m->cap);
  while (m->slots[i].key != 0) {
    if (m->slots[i].key == key) return &m->slots[i];
    i = (i + 1) & (m->cap - 1);
  }
  return NULL;
}

void nnmem__addrmap_remove_entry(nnmem__addrmap_t *m,
                                 nnmem__addrmap_entry_t *e) {
  size_t mask = m->cap - 1, i = (size_t)(e - m->slots), j = i;
  for (;;) { /* backward shift: pull later entries into the hole */
    j = (j + 1) & mask;
    if (m->slots[j].key == 0) break;
    size_t h = home(m->slots[j].key, m->cap);
    /* entry j may move to i when its home is not in (i, j] cyclically */
    int between = (i <= j) ? (h > i && h <= j) : (h > i || h <= j);
    if (!between) {
      m->slots[i] = m->slots[j];
      i = j;
    }
  }
  m->slots[i].key = 0;
  m->count--;
}

int nnmem__addrmap_remove(nnmem__addrmap_t *m, uint64_t key,
                          nnmem__addrmap_entry_t *out) {
  nnmem__addrmap_entry_t *e = nnmem__addrmap_get(m, key);
  if (!e) return 0;
  if (out) *out = *e;
  nnmem__addrmap_remove_entry(m, e);
  return 1;
}

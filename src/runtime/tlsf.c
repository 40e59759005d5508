/* tlsf.c - the free-block index of the TLSF pool: Two-Level Segregated
 * Fit (M. Masmano, I. Ripoll, A. Crespo, J. Real, "TLSF: a new dynamic
 * memory allocator for real-time systems", ECRTS 2004), written from the
 * paper's description.
 *
 * Sizes are counted in granules u = size / granule. Mapping:
 *   fl = floor(log2 u); sl = (u >> (fl - 4)) - 16 when fl >= 4, else
 *   sl = u - 2^fl (tiny lists hold one exact size each).
 * The first-level bitmap has bit fl set when any second-level list of fl is
 * non-empty; sl_bitmap[fl] has bit sl set when list (fl, sl) is non-empty.
 *
 *   fl_bitmap  ...0 1 0 1 1 0        heads[fl][sl] -> blk <-> blk <-> ...
 *                    |
 *   sl_bitmap[fl] 0000 0100 0001 0000 (16 lists per power of two)
 *
 * Steps of find(size): 1. round u up to the next list boundary (so every
 * block of the list found is large enough: "good fit"); 2. map to (fl, sl);
 * 3. search sl_bitmap[fl] for a set bit >= sl, else fl_bitmap for a set bit
 * > fl and take its lowest sl; 4. return the list head. All O(1) with
 * count-trailing-zeros.
 * Invariants: bit (fl, sl) set <=> heads[fl][sl] != NULL; every block in
 * list (fl, sl) maps to (fl, sl) and is free.
 * Complexity: O(1) insert, remove, find. Thread-safety: none (pool lock). */
#include <stdio.h>

#include "runtime/pool_internal.h"
#include "runtime/rlist.h"

#define SL_LOG2 4
#define SL_COUNT (1u << SL_LOG2)

static void mapping(uint64_t u, unsigned *fl, unsigned *sl) {
  unsigned f = nnmem__log2(u);
  *fl = f;
  *sl = f < SL_LOG2 ? (unsigned)(u - (1ULL << f))
                    : (unsigned)((u >> (f - SL_LOG2)) - SL_COUNT);
}

void nnmem__tlsf_insert(nnmem__tlsf_index_t *t, nnmem__rblock_t *b) {
  unsigned fl, sl;
  mapping(b->size >> t->granule_log2, &fl, &sl);
  b->fprev = NULL;
  b->fnext = t->heads[fl][sl];
  if (b->fnext) b->fnext->fprev = b;
  t->heads[fl][sl] = b;
  t->fl_bitmap |= 1ULL << fl;
  t->sl_bitmap[fl] |= 1u << sl;
}

void nnmem__tlsf_remove(nnmem__tlsf_index_t *t, nnmem__rblock_t *b) {
  unsigned fl, sl;
  mapping(b->size >> t->granule_log2, &fl, &sl);
  if (b->fprev)
    b->fprev->fnext = b->fnext;
  else
    t->heads[fl][sl] = b->fnext;
  if (b->fnext) b->fnext->fprev = b->fprev;
  b->fprev = b->fnext = NULL;
  if (!t->heads[fl][sl]) {
    t->sl_bitmap[fl] &= ~(1u << sl);
    if (!t->sl_bitmap[fl]) t->fl_bitmap &= ~(1ULL << fl);
  }
}

nnmem__rblock_t *nnmem__tlsf_find(const nnmem__tlsf_index_t *t, uint64_t size) {
  uint64_t u = size >> t->granule_log2;
  unsigned f = nnmem__log2(u);
  if (f >= SL_LOG2) u += (1ULL << (f - SL_LOG2)) - 1; /* next boundary */
  unsigned fl, sl;
  mapping(u, &fl, &sl);
  uint32_t sm = t->sl_bitmap[fl] & (~0u << sl);
  if (!sm) {
    if (fl >= 63) return NULL;
    uint64_t fm = t->fl_bitmap & (~0ULL << (fl + 1));
    if (!fm) return NULL;
    fl = (unsigned)__builtin_ctzll(fm);
    sm = t->sl_bitmap[fl];
  }
  return t->heads[fl][__builtin_ctz(sm)];
}

uint64_t nnmem__tlsf_largest(const nnmem__tlsf_index_t *t) {
  if (!t->fl_bitmap) return 0;
  unsigned fl = nnmem__log2(t->fl_bitmap);
  unsigned sl = nnmem__log2(t->sl_bitmap[fl]);
  uint64_t best = 0;
  for (const nnmem__rblock_t *b = t->heads[fl][sl]; b; b = b->fnext)
    if (b->size > best) best = b->size;
  return best;
}

int nnmem__tlsf_check(const nnmem__tlsf_index_t *t, uint64_t *n, char *msg,
                      size_t cap) {
  *n = 0;
  for (unsigned fl = 0; fl < 64; fl++) {
    int fl_set = (t->fl_bitmap >> fl) & 1;
    if (fl_set != (t->sl_bitmap[fl] != 0)) {
      snprintf(msg, cap, "tlsf: first-level bit %u disagrees", fl);
      return 1;
    }
    for (unsigned sl = 0; sl < SL_COUNT; sl++) {
      const nnmem__rblock_t *h = t->heads[fl][sl];
      if (((t->sl_bitmap[fl] >> sl) & 1) != (h != NULL)) {
        snprintf(msg, cap, "tlsf: bitmap bit (%u,%u) disagrees", fl, sl);
        return 1;
      }
      for (const nnmem__rblock_t *b = h; b; b = b->fnext) {
        unsigned f2, s2;
        mapping(b->size >> t->granule_log2, &f2, &s2);
        if (f2 != fl || s2 != sl || !b->is_free ||
            (b->fnext && b->fnext->fprev != b)) {
          snprintf(msg, cap, "tlsf: block 0x%llx in wrong list (%u,%u)",
                   (unsigned long long)b->addr, fl, sl);
          return 1;
        }
        (*n)++;
      }
    }
  }
  return 0;
}

/* radix.h - the stable LSD radix sort the planner uses to order records by
 * a 64-bit key (internal to plan/: occupancy.c sorts lifetime endpoints,
 * order.c the strategies' ordering keys).
 *
 * Algorithm: one counting pass fills a histogram for each of the key's
 * eight bytes; then, from the lowest byte up, each byte that is not the
 * same in every record scatters the records into the other buffer by its
 * prefix sums. Stable: records with equal keys keep their order, so a sort
 * by a less significant field followed by a sort by a more significant one
 * orders by both. O(m) per byte that differs, O(m) extra memory (`tmp`).
 *
 * A static inline function so each caller's record size is a constant and
 * the copies compile to plain moves. Thread-safe (no shared state). */
#ifndef NNMEM_PLAN_RADIX_H
#define NNMEM_PLAN_RADIX_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The key of record `rec`: the uint64_t at byte `key_off`, complemented
 * when `descending`. */
static inline uint64_t nnmem__radix_key(const unsigned char *rec,
                                        size_t key_off, int descending) {
  uint64_t k;
  memcpy(&k, rec + key_off, sizeof k);
  return descending ? ~k : k;
}

/* Sorts the m records of `size` bytes at `a` stably by their key (see
 * nnmem__radix_key); `tmp` has room for m records. Returns the buffer that
 * holds the sorted records (a or tmp), or NULL when the histogram cannot be
 * allocated (the records are then unchanged in `a`). */
static inline void *nnmem__radix_sort(void *a, void *tmp, size_t m, size_t size,
                                      size_t key_off, int descending) {
  size_t(*cnt)[256] = calloc(8, sizeof *cnt);
  if (!cnt) return NULL;
  unsigned char *src = a, *dst = tmp;
  for (size_t i = 0; i < m; i++) {
    uint64_t k = nnmem__radix_key(src + i * size, key_off, descending);
    for (unsigned d = 0; d < 8; d++)
      cnt[d][(k >> (8 * d)) & 255]++;
  }
  for (unsigned d = 0; d < 8; d++) {
    int same = 0;
    for (unsigned v = 0; v < 256 && !same; v++)
      same = cnt[d][v] == m;
    if (same) continue; /* this byte orders nothing */
    size_t pos = 0;
    for (unsigned v = 0; v < 256; v++) {
      size_t c = cnt[d][v];
      cnt[d][v] = pos;
      pos += c;
    }
    for (size_t i = 0; i < m; i++) {
      uint64_t k = nnmem__radix_key(src + i * size, key_off, descending);
      memcpy(dst + cnt[d][(k >> (8 * d)) & 255]++ * size, src + i * size, size);
    }
    unsigned char *sw = src;
    src = dst, dst = sw;
  }
  free(cnt);
  return src;
}

#endif /* NNMEM_PLAN_RADIX_H */

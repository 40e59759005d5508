/* exec_digest.h - the digest of a fitted plan's executed content, fed in
 * the same fixed order by the writer (export/fit_json.c) and the reader
 * (fit/exec_read.c): FNV-1a 64 over little helpers' 64-bit words. Not
 * installed. */
#ifndef NNMEM_EXEC_DIGEST_H
#define NNMEM_EXEC_DIGEST_H

#include <stdint.h>

#include "fit/fit_internal.h"

static inline void nnmem__exec_digest_pair(uint64_t *h, uint64_t a,
                                           uint64_t b) {
  uint64_t w[2] = {a, b};
  *h = nnmem__fnv1a(*h, w, sizeof w);
}

static inline void nnmem__exec_digest_buffer(uint64_t *h, uint64_t off,
                                             uint64_t size, uint64_t first,
                                             uint64_t last) {
  nnmem__exec_digest_pair(h, off, size);
  nnmem__exec_digest_pair(h, first, last);
}

static inline void nnmem__exec_digest_copy(uint64_t *h, uint64_t dir,
                                           uint64_t tier, uint64_t buf,
                                           uint64_t host, uint64_t bytes,
                                           uint64_t start, uint64_t done) {
  nnmem__exec_digest_pair(h, dir, tier);
  nnmem__exec_digest_pair(h, buf, host);
  nnmem__exec_digest_pair(h, bytes, start);
  nnmem__exec_digest_pair(h, done, 0);
}

#endif

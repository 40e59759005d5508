/* exec_stamp.h - the executor's content model, shared by the host executor
 * (exec.c) and the GPU executor (exec_cuda.c): which 64-bit pattern each
 * byte range of a root buffer must hold. Not installed.
 *
 * A root keeps the list of its writes still visible, newest last: (byte
 * range relative to the root, pattern). Byte j of a root written with
 * pattern P holds byte (j & 7) of P (little-endian). A new write drops the
 * stamps it covers entirely. Patterns come from (tier, buffer, step)
 * through the splitmix64 finalizer, so two writes never share one by
 * accident. */
#ifndef NNMEM_EXEC_STAMP_H
#define NNMEM_EXEC_STAMP_H

#include <stdint.h>

#include "common/util.h"
#include "nnmem/plan.h"

typedef struct exec_stamp {
  uint64_t a, b; /* [a, b) relative to the root */
  uint64_t pat;
} exec_stamp_t;

typedef struct exec_stamps {
  exec_stamp_t *s;
  size_t n, cap;
} exec_stamps_t;

static inline uint64_t nnmem__exec_mix(uint64_t x) { /* splitmix64 */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static inline uint64_t nnmem__exec_pattern(uint32_t tier, size_t buf,
                                           uint64_t step) {
  return nnmem__exec_mix(((uint64_t)tier << 56) ^ ((uint64_t)buf << 24) ^ step);
}

/* The root of buffer i and i's offset inside it. */
static inline size_t nnmem__exec_root(const nnmem_problem_t *p, size_t i,
                                      uint64_t *rel) {
  size_t q;
  uint64_t r, acc = 0;
  while (nnmem_problem_parent(p, i, &q, &r) == NNMEM_OK) {
    acc += r;
    i = q;
  }
  *rel = acc;
  return i;
}

static inline nnmem_status_t nnmem__exec_push_stamp(exec_stamps_t *s,
                                                    uint64_t a, uint64_t b,
                                                    uint64_t pat) {
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++) /* drop stamps the new one covers */
    if (!(s->s[i].a >= a && s->s[i].b <= b)) s->s[k++] = s->s[i];
  s->n = k;
  if (nnmem__grow((void **)&s->s, &s->cap, s->n + 1, sizeof *s->s))
    return NNMEM_ERR_NOMEM;
  s->s[s->n++] = (exec_stamp_t){a, b, pat};
  return NNMEM_OK;
}

#endif

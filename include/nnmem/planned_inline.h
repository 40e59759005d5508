/* nnmem/planned_inline.h - the plan-backed allocator's fast paths as
 * inline functions, for runs where a call per allocation, free and step
 * marker is too much (nnmem/planned.h is the API; these are the same
 * calls, inlined where the request is served from the plan).
 *
 *   #include "nnmem/planned_inline.h"
 *   p = nnmem_planned_alloc_inline(r, n);   same as nnmem_planned_alloc
 *   nnmem_planned_free_inline(r, p);        same as nnmem_planned_free
 *   nnmem_step_inline(r);                   same as nnmem_step
 *
 * Each does the common case of its call in line (a request served from
 * the plan; a free in the recorded order; a step boundary with nothing
 * skipped and nothing overstaying) and calls the library for everything
 * else, so the results, statistics and divergence handling are the
 * library's. Calls of both kinds may be mixed on one object.
 *
 * The object's first fields are nnmem_planned_hot_t below. Their layout is
 * versioned: the library stores NNMEM_PLANNED_HOT_ABI in `fast` when the
 * fast paths apply, and the inline functions take them only when `fast`
 * equals the value they were compiled with; against a library of another
 * layout they always call the library (correct, not faster).
 *
 * Thread-safety: as nnmem/planned.h (one thread per object). */
#ifndef NNMEM_PLANNED_INLINE_H
#define NNMEM_PLANNED_INLINE_H

#include <stdint.h>

#include "nnmem/planned.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define NNMEM_PLANNED_LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define NNMEM_PLANNED_LIKELY(x) (x)
#endif

/* Layout version of nnmem_planned_hot_t ("PLH1"). */
#define NNMEM_PLANNED_HOT_ABI 0x31484c50u

/* The planned request of one buffer (buffers in request order). */
typedef struct nnmem_planned_req {
  uint64_t size, off;
} nnmem_planned_req_t;

/* One buffer's end, in the expected free order (planned end, then
 * buffer); done: 0 while it may be served or is live, 1 freed, 2 never to
 * be freed from the plan (served by the pools, or never requested). */
typedef struct nnmem_planned_end {
  uint64_t off, last;
  uint32_t index, done;
} nnmem_planned_end_t;

/* Step s: its first request, and how many ends[] entries end by s. */
typedef struct nnmem_planned_step {
  uint32_t start, ended;
} nnmem_planned_step_t;

/* The first fields of every nnmem_planned_t (read only through the inline
 * functions below; written by them as the library would). */
typedef struct nnmem_planned_hot {
  uint32_t fast; /* NNMEM_PLANNED_HOT_ABI: serving, no auto steps, not
                    disabled; 0 otherwise */
  uint32_t pad_;
  nnmem_planned_req_t *req;   /* by buffer */
  uint64_t cur, end;          /* next request; end of this step's */
  char *base;                 /* the plan's memory */
  nnmem_planned_end_t *ends;  /* nends entries */
  uint64_t fc, nends;         /* first entry not done */
  uint64_t step, nsteps;      /* current step; steps in the plan */
  nnmem_planned_step_t *steps; /* [0, nsteps] */
} nnmem_planned_hot_t;

static inline void *nnmem_planned_alloc_inline(nnmem_planned_t *r,
                                               size_t size) {
  nnmem_planned_hot_t *h = (nnmem_planned_hot_t *)(void *)r;
  uint64_t i;
  if (NNMEM_PLANNED_LIKELY(r && h->fast == NNMEM_PLANNED_HOT_ABI &&
                           (i = h->cur) < h->end && h->req[i].size == size)) {
    h->cur = i + 1;
    return h->base + h->req[i].off;
  }
  return nnmem_planned_alloc(r, size);
}

static inline void nnmem_planned_free_inline(nnmem_planned_t *r, void *ptr) {
  nnmem_planned_hot_t *h = (nnmem_planned_hot_t *)(void *)r;
  nnmem_planned_end_t *e;
  uint64_t j;
  if (NNMEM_PLANNED_LIKELY(
          r && h->fast == NNMEM_PLANNED_HOT_ABI && (j = h->fc) < h->nends &&
          (uintptr_t)ptr - (uintptr_t)h->base == (e = &h->ends[j])->off &&
          e->index < h->cur)) {
    e->done = 1; /* requested, not done: the block at that offset */
    for (j++; j < h->nends && h->ends[j].done; j++)
      ;
    h->fc = j;
    return;
  }
  nnmem_planned_free(r, ptr);
}

static inline void nnmem_step_inline(nnmem_planned_t *r) {
  nnmem_planned_hot_t *h = (nnmem_planned_hot_t *)(void *)r;
  uint64_t s;
  if (NNMEM_PLANNED_LIKELY(r && h->fast == NNMEM_PLANNED_HOT_ABI &&
                           h->cur == h->end && (s = h->step + 1) < h->nsteps &&
                           h->fc >= h->steps[s].ended)) {
    h->step = s;
    h->cur = h->steps[s].start;
    h->end = h->steps[s + 1].start;
    return;
  }
  nnmem_step(r);
}

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_PLANNED_INLINE_H */

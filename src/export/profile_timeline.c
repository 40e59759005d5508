/* profile_timeline.c - the planned timeline of memory_profile.json: the
 * live bytes of a problem step by step, in the shape of the run-time
 * profiler's "timeline" (profiler_json.c) so that `nnmem diff` can put a
 * planned and a measured run side by side.
 *
 *   "timeline": [{"step": 0, "peak_bytes": W + 64, "weight_memory": W,
 *                 "activation_memory": 64}, {"step": 3, ...}, ...]
 *
 * An entry holds from its step until the next entry's step (the entries
 * are the steps where the live bytes change, plus step 0 and the last
 * step T - 1, T = the largest `last`, so the covered range is explicit);
 * a dense timeline (one entry per step, as the profiler writes) is the
 * same function written out.
 *
 * Algorithm: 1. events of the roots (sub-buffers lie inside their parents,
 * as in nnmem_problem_peak): +size at first, -size at last, and for each
 * gap -size at its first, +size at its last; sizes rounded up to
 * max(buffer align, `align`); 2. sort by step (qsort); 3. sweep: after all
 * events of one step, write an entry when the live bytes differ from the
 * previous entry's (or at step 0 and T - 1).
 * Invariants: every entry's activation_memory = the live root bytes at its
 * step (what nnmem_problem_peak maximises: the largest entry equals it);
 * steps strictly increase. Complexity: O(n log n) time, O(n) memory.
 * Thread-safety: each call is independent. */
#include <stdlib.h>

#include "export/export_json.h"
#include "nnmem/problem.h"

typedef struct tl_event {
  uint64_t step;
  uint64_t bytes;
  int add; /* 1: becomes live, 0: stops */
} tl_event_t;

static int by_step(const void *x, const void *y) {
  const tl_event_t *a = x, *b = y;
  return (a->step > b->step) - (a->step < b->step);
}

static uint64_t rounded(const nnmem_buffer_t *b, uint64_t align) {
  uint64_t al = b->align > align ? b->align : align;
  if (al <= 1) return b->size;
  uint64_t r = b->size + (al - 1);
  return r < b->size ? UINT64_MAX : r & ~(al - 1);
}

/* Step 1: the events; *n_out of them. NULL on no memory. */
static tl_event_t *collect_events(const nnmem_problem_t *p, uint64_t align,
                                  size_t *n_out, uint64_t *end_out) {
  size_t n = nnmem_problem_count(p), cap = 2 * n + 1, k = 0;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  for (size_t i = 0; i < n; i++)
    cap += 2 * nnmem_problem_gaps(p, i, NULL);
  tl_event_t *ev = malloc(cap * sizeof *ev);
  if (!ev) return NULL;
  uint64_t end = 0;
  for (size_t i = 0; i < n; i++) {
    if (b[i].last > end) end = b[i].last;
    if (nnmem_problem_parent(p, i, NULL, NULL) == NNMEM_OK) continue;
    uint64_t sz = rounded(&b[i], align);
    if (sz == 0) continue;
    ev[k++] = (tl_event_t){b[i].first, sz, 1};
    ev[k++] = (tl_event_t){b[i].last, sz, 0};
    const nnmem_interval_t *g = NULL;
    size_t ng = nnmem_problem_gaps(p, i, &g);
    for (size_t j = 0; j < ng; j++) {
      ev[k++] = (tl_event_t){g[j].first, sz, 0};
      ev[k++] = (tl_event_t){g[j].last, sz, 1};
    }
  }
  *n_out = k;
  *end_out = end;
  return ev;
}

static void put_entry(nnmem__jw_t *w, uint64_t step, uint64_t weights,
                      uint64_t live) {
  nnmem__jw_object(w);
  nnmem__jw_kv_u64(w, "step", step);
  nnmem__jw_kv_u64(w, "peak_bytes", weights + live);
  nnmem__jw_kv_u64(w, "weight_memory", weights);
  nnmem__jw_kv_u64(w, "activation_memory", live);
  nnmem__jw_end(w);
}

nnmem_status_t nnmem__profile_json_timeline(nnmem__jw_t *w,
                                            const nnmem_problem_t *p,
                                            uint64_t align, uint64_t weights) {
  if (!w || !p) return NNMEM_ERR_INVALID;
  size_t n = 0;
  uint64_t end = 0;
  tl_event_t *ev = collect_events(p, align, &n, &end);
  if (!ev) return NNMEM_ERR_NOMEM;
  qsort(ev, n, sizeof *ev, by_step);
  /* Step 3. The sums wrap modulo 2^64 (unsigned): the live bytes after a
   * step come out exact whenever they fit, which nnmem_problem_peak checks
   * before a profile is made. */
  tl_event_t *e = malloc((n + 2) * sizeof *e);
  if (!e) {
    free(ev);
    return NNMEM_ERR_NOMEM;
  }
  size_t ne = 0;
  uint64_t live = 0;
  for (size_t i = 0; i < n && ev[i].step < end;) {
    uint64_t s = ev[i].step, add = 0, sub = 0;
    for (; i < n && ev[i].step == s; i++) {
      if (ev[i].add)
        add += ev[i].bytes;
      else
        sub += ev[i].bytes;
    }
    live = live + add - sub;
    if (ne == 0 && s > 0) e[ne++] = (tl_event_t){0, 0, 1};
    if (ne == 0 || e[ne - 1].bytes != live) e[ne++] = (tl_event_t){s, live, 1};
  }
  if (ne == 0) e[ne++] = (tl_event_t){0, 0, 1};
  if (end > 1 && e[ne - 1].step < end - 1)
    e[ne++] = (tl_event_t){end - 1, live, 1};
  nnmem__jw_key(w, "timeline");
  nnmem__jw_array(w);
  for (size_t j = 0; j < ne; j++)
    put_entry(w, e[j].step, weights, e[j].bytes);
  free(e);
  nnmem__jw_end(w);
  free(ev);
  return NNMEM_OK;
}

/* profile.c - the memory profile of a planned graph (definitions in
 * include/nnmem/profile.h).
 *
 * Algorithm:
 *   1. arena_height, strategy and seconds come from the plan; weight_memory
 *      from the liveness result; arena_lower_bound from
 *      nnmem_problem_lower_bound with the planner's alignment.
 *   2. One event sweep over the problem's roots (sub-buffers lie inside
 *      their parents; liveness makes no gaps) (+size at first, -size at last,
 *      ends before starts at equal steps, sizes rounded up to
 *      max(buffer align, alignment)) gives peak_step (the first step with
 *      the most live arena bytes); a second sweep restricted to workspace
 *      buffers gives workspace_memory.
 *   3. naive_arena = sum over non-weight tensors of their bytes rounded up to
 *      max(tensor align, alignment) + every op's workspace bytes rounded up
 *      to alignment: each tensor its own bytes, no aliasing, no reuse.
 *   4. activation = height - workspace, peak = weight + activation +
 *      workspace (NNMEM_ERR_OVERFLOW past 2^64 - 1: a model that does not
 *      fit a 64-bit address space), lower_bound = weight + arena LB,
 *      naive_memory = weight + naive_arena, reuse = 1 - height / naive.
 * Per figure on overflow: the sweeps cannot overflow for a plan of this
 *   problem (the bytes live at a step are disjoint ranges below the height,
 *   which is a uint64_t); peak and lower bound are errors; the naive sums
 *   are informative and saturate at 2^64 - 1 with
 *   NNMEM_PROFILE_NAIVE_SATURATED set (reuse_ratio is then a lower bound).
 *
 * Invariants: arena_lower_bound <= arena_height; peak_memory >= lower_bound.
 * Complexity: O(B log B + V + E) for B buffers.
 * Thread-safety: pure function of its arguments. */
#include <string.h>

#include "common/util.h"
#include "nnmem/profile.h"

typedef struct event {
  uint64_t step;
  int start; /* 0 = end, 1 = start: ends sort first at equal steps */
  uint64_t bytes;
} event_t;

static int event_cmp(const void *a, const void *b) {
  const event_t *x = a, *y = b;
  if (x->step != y->step) return x->step < y->step ? -1 : 1;
  return x->start - y->start;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return nnmem__add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t rounded(uint64_t size, uint64_t a1, uint64_t a2) {
  uint64_t r;
  return nnmem__align_up(size, nnmem__max_u64(a1, a2), &r) ? UINT64_MAX : r;
}

/* Max live bytes over steps among buffers selected by `only_kind` (-1 = all,
 * otherwise the buffer kind), and the first step reaching it. */
static nnmem_status_t sweep(const nnmem_liveness_t *l, uint64_t alignment,
                            int only_kind, uint64_t *max_out,
                            uint64_t *step_out) {
  const nnmem_problem_t *p = nnmem_liveness_problem(l);
  const nnmem_buffer_t *bufs = nnmem_problem_buffers(p);
  size_t n = nnmem_problem_count(p), k = 0;
  *max_out = 0;
  *step_out = 0;
  if (!n) return NNMEM_OK;
  event_t *ev = malloc(2 * n * sizeof *ev);
  if (!ev) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    if (only_kind >= 0 && (int)nnmem_liveness_buffer_kind(l, i) != only_kind)
      continue;
    if (nnmem_problem_parent(p, i, NULL, NULL) == NNMEM_OK)
      continue; /* a sub-buffer's bytes are its parent's */
    uint64_t sz = rounded(bufs[i].size, bufs[i].align, alignment);
    ev[k++] = (event_t){bufs[i].first, 1, sz};
    ev[k++] = (event_t){bufs[i].last, 0, sz};
  }
  qsort(ev, k, sizeof *ev, event_cmp);
  uint64_t live = 0;
  for (size_t i = 0; i < k; i++) {
    live = ev[i].start ? sat_add(live, ev[i].bytes) : live - ev[i].bytes;
    if (ev[i].start && live > *max_out) {
      *max_out = live;
      *step_out = ev[i].step;
    }
  }
  free(ev);
  return NNMEM_OK;
}

/* Saturating sum of the naive layout; *saturated is set when it stopped. */
static uint64_t naive_arena(const nnmem_graph_t *g, uint64_t alignment,
                            int *saturated) {
  uint64_t total = 0;
  size_t nt = nnmem_graph_tensor_count(g), no = nnmem_graph_op_count(g);
  for (uint32_t t = 0; t < nt; t++) {
    nnmem_tensor_info_t ti;
    nnmem_graph_tensor(g, t, &ti);
    if (ti.kind == NNMEM_TENSOR_WEIGHT || ti.kind == NNMEM_TENSOR_CONSTANT)
      continue;
    uint64_t sz = rounded(ti.bytes, ti.align, alignment);
    if (sz == UINT64_MAX || nnmem__add_overflow(total, sz, &total))
      *saturated = 1;
  }
  for (uint32_t o = 0; o < no; o++) {
    nnmem_op_info_t oi;
    nnmem_graph_op(g, o, &oi);
    uint64_t sz = rounded(oi.workspace_bytes, 1, alignment);
    if (oi.workspace_bytes &&
        (sz == UINT64_MAX || nnmem__add_overflow(total, sz, &total)))
      *saturated = 1;
  }
  return *saturated ? UINT64_MAX : total;
}

nnmem_status_t nnmem_profile_compute(const nnmem_graph_t *g,
                                     const nnmem_liveness_t *l,
                                     const nnmem_plan_t *plan,
                                     uint64_t alignment, nnmem_profile_t *out) {
  if (!g || !l || !plan || !out) return NNMEM_ERR_INVALID;
  const nnmem_problem_t *p = nnmem_liveness_problem(l);
  if (nnmem_plan_count(plan) != nnmem_problem_count(p))
    return NNMEM_ERR_INVALID; /* not a plan of this liveness problem */
  if (!alignment) alignment = 1;
  if (!nnmem__is_pow2(alignment)) return NNMEM_ERR_INVALID;
  nnmem_profile_t r;
  memset(&r, 0, sizeof r);
  r.size = sizeof r;
  nnmem_status_t st =
      nnmem_problem_lower_bound(p, alignment, &r.arena_lower_bound);
  uint64_t unused;
  if (st == NNMEM_OK) st = sweep(l, alignment, -1, &unused, &r.peak_step);
  if (st == NNMEM_OK)
    st = sweep(l, alignment, NNMEM_BUFFER_WORKSPACE, &r.workspace_memory,
               &unused);
  if (st != NNMEM_OK) return st;
  r.arena_height = nnmem_plan_height(plan);
  if (nnmem_plan_bound(plan) > r.arena_lower_bound &&
      nnmem_plan_bound(plan) <= r.arena_height) { /* proven by the planner */
    r.arena_lower_bound = nnmem_plan_bound(plan);
    r.bound_kind = nnmem_plan_bound_kind(plan);
  }
  r.optimal = r.arena_height <= r.arena_lower_bound;
  r.weight_memory = nnmem_liveness_weight_bytes(l);
  r.activation_memory = r.arena_height > r.workspace_memory
                            ? r.arena_height - r.workspace_memory
                            : 0;
  if (nnmem__add_overflow(r.weight_memory,
                          r.activation_memory + r.workspace_memory,
                          &r.peak_memory))
    return NNMEM_ERR_OVERFLOW; /* activation + workspace <= 2^64 - 1 */
  r.lower_bound = r.weight_memory + r.arena_lower_bound; /* <= peak */
  int saturated = 0;
  r.naive_arena = naive_arena(g, alignment, &saturated);
  if (saturated ||
      nnmem__add_overflow(r.weight_memory, r.naive_arena, &r.naive_memory)) {
    r.naive_memory = UINT64_MAX;
    r.flags |= NNMEM_PROFILE_NAIVE_SATURATED;
  }
  r.reuse_ratio = r.naive_arena
                      ? 1.0 - (double)r.arena_height / (double)r.naive_arena
                      : 0.0;
  r.strategy = nnmem_plan_strategy(plan);
  r.buffers = nnmem_problem_count(p);
  r.tensors = nnmem_graph_tensor_count(g);
  r.plan_seconds = nnmem_plan_seconds(plan);
  *out = r;
  return NNMEM_OK;
}

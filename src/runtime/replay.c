/* replay.c - replays a problem (MiniMalloc trace) through a pool on an
 * unbacked simulated device and measures the reservation it needs.
 *
 * Steps: 1. build 2 events per buffer of nonzero size (alloc at first, free
 * at last) and sort them by (time, frees first, buffer index); 2. timed
 * pass: run the events through a fresh pool, wall time / operations;
 * 3. measuring pass: a second fresh pool, tracking live requested bytes and
 * taking a stats snapshot after each allocation that raised the reserved
 * peak (fragmentation at that moment); 4. fill the result (and, when asked,
 * the measuring pool's stats snapshot after the last event).
 * Complexity: O(n log n) sort plus the pool's cost per event.
 * Thread-safety: uses only its own objects. */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/pool.h"
#include "plan/radix.h"
#include "runtime/pool_internal.h"

typedef nnmem_trace_event_t event_t;

nnmem_status_t nnmem_trace_events(const nnmem_problem_t *p,
                                  nnmem_trace_event_t **out, size_t *n_out) {
  if (!p || !out || !n_out) return NNMEM_ERR_INVALID;
  *out = NULL, *n_out = 0;
  size_t n = nnmem_problem_count(p), k = 0;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  if (n > UINT32_MAX) return NNMEM_ERR_OVERFLOW;
  event_t *ev = malloc((2 * n + 1) * sizeof *ev);
  event_t *tmp = malloc((2 * n + 1) * sizeof *tmp);
  if (!ev || !tmp) {
    free(ev);
    free(tmp);
    return NNMEM_ERR_NOMEM;
  }
  /* frees, then allocations, each in index order; a stable sort by time
   * then orders by (time, is_alloc, index) */
  for (uint32_t is_alloc = 0; is_alloc < 2; is_alloc++)
    for (size_t i = 0; i < n; i++) {
      if (b[i].size == 0 || nnmem_problem_parent(p, i, NULL, NULL) == NNMEM_OK)
        continue;
      ev[k++] =
          (event_t){is_alloc ? b[i].first : b[i].last, is_alloc, (uint32_t)i};
    }
  event_t *sorted = nnmem__radix_sort(ev, tmp, k, sizeof *ev, 0, 0);
  if (!sorted) {
    free(ev);
    free(tmp);
    return NNMEM_ERR_NOMEM;
  }
  free(sorted == ev ? tmp : ev);
  *out = sorted, *n_out = k;
  return NNMEM_OK;
}

typedef struct pass {
  const nnmem_problem_t *problem;
  const event_t *ev;
  size_t n;
  void **addr;
  int measure;
  uint64_t live, peak_live, peak_reserved;
  double frag;
} pass_t;

static nnmem_status_t run_pass(pass_t *ps, nnmem_pool_t *pool,
                               nnmem_diag_t *diag) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(ps->problem);
  nnmem_stats_t st;
  for (size_t i = 0; i < ps->n; i++) {
    uint32_t j = ps->ev[i].index;
    if (!ps->ev[i].is_alloc) {
      (void)nnmem_pool_free(pool, ps->addr[j]);
      ps->addr[j] = NULL;
      ps->live -= b[j].size;
      continue;
    }
    nnmem_status_t s =
        nnmem_pool_alloc(pool, b[j].size, b[j].align, &ps->addr[j]);
    if (s != NNMEM_OK)
      return nnmem__diag(diag, s,
                         "the %s pool failed on buffer %u "
                         "(%llu bytes): %s",
                         nnmem_pool_kind_name(nnmem_pool_get_kind(pool)), j,
                         (unsigned long long)b[j].size, nnmem_status_str(s));
    ps->live += b[j].size;
    if (ps->live > ps->peak_live) ps->peak_live = ps->live;
    if (ps->measure && nnmem_pool_stats(pool, &st) == NNMEM_OK &&
        st.reserved_bytes > ps->peak_reserved) {
      ps->peak_reserved = st.reserved_bytes;
      ps->frag = st.fragmentation;
    }
  }
  return NNMEM_OK;
}

/* One pass over `backend`, or a fresh unbacked sim device when NULL. */
static nnmem_status_t one_pass(pass_t *ps, nnmem_pool_kind_t kind,
                               const nnmem_pool_config_t *cfg,
                               uint64_t device_align, nnmem_backend_t *backend,
                               nnmem_stats_t *st, nnmem_diag_t *diag) {
  nnmem_sim_config_t sc = {0};
  sc.alignment = device_align ? device_align : 256;
  nnmem_backend_t *dev = NULL;
  nnmem_pool_t *pool = NULL;
  nnmem_status_t s = backend ? NNMEM_OK : nnmem_backend_sim_create(&sc, &dev);
  if (s == NNMEM_OK)
    s = nnmem_pool_create_diag(kind, cfg, backend ? backend : dev, &pool, diag);
  if (s == NNMEM_OK) {
    memset(ps->addr, 0, nnmem_problem_count(ps->problem) * sizeof(void *));
    s = run_pass(ps, pool, diag);
    (void)nnmem_pool_stats(pool, st);
  }
  nnmem_pool_destroy(pool);
  nnmem_backend_destroy(dev);
  return s;
}

nnmem_status_t nnmem_pool_replay(const nnmem_problem_t *problem,
                                 nnmem_pool_kind_t kind,
                                 const nnmem_pool_config_t *cfg,
                                 uint64_t device_align,
                                 nnmem_replay_result_t *out,
                                 nnmem_diag_t *diag) {
  return nnmem_pool_replay_stats(problem, kind, cfg, device_align, out, NULL,
                                 diag);
}

nnmem_status_t nnmem_pool_replay_stats(
    const nnmem_problem_t *problem, nnmem_pool_kind_t kind,
    const nnmem_pool_config_t *cfg, uint64_t device_align,
    nnmem_replay_result_t *out, nnmem_stats_t *stats_out, nnmem_diag_t *diag) {
  return nnmem_pool_replay_backend(problem, kind, cfg, NULL, device_align, out,
                                   stats_out, diag);
}

nnmem_status_t nnmem_pool_replay_backend(
    const nnmem_problem_t *problem, nnmem_pool_kind_t kind,
    const nnmem_pool_config_t *cfg, nnmem_backend_t *backend,
    uint64_t device_align, nnmem_replay_result_t *out, nnmem_stats_t *stats_out,
    nnmem_diag_t *diag) {
  if (!problem || !out) return NNMEM_ERR_INVALID;
  if (backend) device_align = backend->alignment;
  memset(out, 0, sizeof *out);
  pass_t ps = {0};
  event_t *ev = NULL;
  nnmem_status_t s = nnmem_trace_events(problem, &ev, &ps.n);
  if (s != NNMEM_OK)
    return nnmem__diag(diag, s, "out of memory replaying the trace");
  ps.problem = problem;
  ps.ev = ev;
  nnmem_pool_config_t shape_cfg;
  uint64_t shape_total = 0; /* nonzero: the fallback block (see below) */
  if (kind == NNMEM_POOL_SHAPE &&
      (!cfg || (!cfg->chunk_size && !cfg->capacity))) {
    /* the block: 1.25 x the trace's max live bytes; when fragmentation
     * defeats that, the whole trace at once (always fits) */
    uint64_t lb = 0, a = device_align ? device_align : 256;
    nnmem_pool_config_init(&shape_cfg);
    if (cfg) nnmem__config_copy(&shape_cfg, sizeof shape_cfg, cfg);
    s = nnmem_problem_total_bytes(problem, a, &shape_total);
    if (s == NNMEM_OK) s = nnmem_problem_lower_bound(problem, a, &lb);
    if (s != NNMEM_OK) {
      free(ev);
      return nnmem__diag(diag, s, "replay: the trace's total bytes overflow");
    }
    shape_total = shape_total ? shape_total : 1;
    uint64_t want = lb + lb / 4 + (64u << 10);
    shape_cfg.chunk_size = want < shape_total ? want : shape_total;
    cfg = &shape_cfg;
  }
  ps.addr = calloc(nnmem_problem_count(problem) + 1, sizeof(void *));
  nnmem_stats_t st;
  double t0 = nnmem__now();
  s = ps.addr ? one_pass(&ps, kind, cfg, device_align, backend, &st, diag)
              : NNMEM_ERR_NOMEM;
  if (s == NNMEM_ERR_NOMEM && shape_total &&
      shape_cfg.chunk_size < shape_total) {
    ps.live = ps.peak_live = 0;
    shape_cfg.chunk_size = shape_total;
    t0 = nnmem__now();
    s = one_pass(&ps, kind, cfg, device_align, backend, &st, diag);
  }
  double dt = nnmem__now() - t0;
  if (s == NNMEM_OK) {
    ps.measure = 1;
    ps.live = ps.peak_live = 0;
    s = one_pass(&ps, kind, cfg, device_align, backend, &st, diag);
  }
  if (s == NNMEM_OK) {
    out->operations = ps.n;
    out->peak_live_bytes = ps.peak_live;
    out->peak_reserved_bytes = st.reserved_bytes_peak;
    out->reserved_over_live =
        ps.peak_live ? (double)st.reserved_bytes_peak / (double)ps.peak_live
                     : 0.0;
    out->fragmentation = ps.frag;
    out->ns_per_op = ps.n ? dt * 1e9 / (double)ps.n : 0.0;
    out->backend_allocs = st.backend_allocs;
    if (stats_out) *stats_out = st;
  }
  free(ps.addr);
  free(ev);
  return s;
}

/* domain_replay.c - a trace shared by tenant domains (nnmem_domain_replay):
 * quotas, isolation probes and granted frees on a pool over an unbacked
 * simulated device.
 *
 * Steps: 1. the events of nnmem_trace_events (frees first at equal times);
 * 2. a fresh sim device, one pool of the kind asked, a domain set over it
 * and `tenants` domains of `quota` bytes; buffer i belongs to tenant
 * t = i % tenants (round robin by buffer index: deterministic, and every
 * tenant sees the whole time range of the trace);
 * 3. allocation: nnmem_domain_alloc on t; a refusal (quota or pool) skips
 * the buffer and its free; the block's number among t's blocks is kept;
 * 4. free (tenants >= 2): the next tenant n = (t + 1) % tenants tries to
 * free the block without a grant (a probe: it must be NNMEM_ERR_DENIED,
 * else the replay stops with NNMEM_ERR_STATE); then every fourth block of t
 * is granted to n (FREE) and freed by n, the others by t;
 * 5. nnmem_domain_set_check; the per-tenant records and the pool's stats.
 * Complexity: O(n log n) plus the pool's cost per event.
 * Thread-safety: uses only its own objects. */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/domain.h"

typedef struct run {
  nnmem_domain_t *dom[NNMEM_DOMAIN_MAX];
  uint32_t tenants;
  void **addr;
  uint8_t *by_next;    /* 1: freed by the next tenant under a grant */
  uint64_t *per_count; /* blocks allocated per tenant so far */
  uint64_t live, peak;
} run_t;

static nnmem_status_t on_alloc(run_t *r, const nnmem_buffer_t *b, uint32_t i,
                               nnmem_domain_replay_result_t *out,
                               nnmem_diag_t *diag) {
  uint32_t t = i % r->tenants;
  nnmem_status_t s =
      nnmem_domain_alloc(r->dom[t], b[i].size, b[i].align, &r->addr[i], NULL);
  if (s == NNMEM_ERR_NOMEM) {
    out->skipped++;
    return NNMEM_OK;
  }
  if (s != NNMEM_OK)
    return nnmem__diag(diag, s, "tenant replay: buffer %u: %s", i,
                       nnmem_status_str(s));
  r->by_next[i] = r->tenants > 1 && r->per_count[t]++ % 4 == 3;
  r->live += b[i].size;
  if (r->live > r->peak) r->peak = r->live;
  return NNMEM_OK;
}

static nnmem_status_t on_free(run_t *r, const nnmem_buffer_t *b, uint32_t i,
                              nnmem_domain_replay_result_t *out,
                              nnmem_diag_t *diag) {
  void *p = r->addr[i];
  if (!p) return NNMEM_OK;
  uint32_t t = i % r->tenants, n = (t + 1) % r->tenants;
  nnmem_status_t s;
  if (r->tenants > 1) {
    out->probes++;
    s = nnmem_domain_free(r->dom[n], p, NULL);
    if (s != NNMEM_ERR_DENIED)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "tenant replay: isolation broken: tenant %u's free "
                         "of buffer %u of tenant %u returned %s",
                         n, i, t, nnmem_status_name(s));
    out->probes_refused++;
  }
  nnmem_domain_t *by = r->dom[t];
  if (r->by_next[i]) {
    s = nnmem_domain_grant(r->dom[t], p, n, NNMEM_GRANT_FREE, diag);
    if (s != NNMEM_OK) return s;
    by = r->dom[n];
    out->granted_frees++;
  }
  s = nnmem_domain_free(by, p, diag);
  if (s != NNMEM_OK) return s;
  r->addr[i] = NULL;
  r->live -= b[i].size;
  return NNMEM_OK;
}

static nnmem_status_t run_events(run_t *r, const nnmem_problem_t *problem,
                                 const nnmem_trace_event_t *ev, size_t n_ev,
                                 nnmem_domain_replay_result_t *out,
                                 nnmem_diag_t *diag) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(problem);
  nnmem_status_t s = NNMEM_OK;
  for (size_t k = 0; k < n_ev && s == NNMEM_OK; k++) {
    out->operations++;
    s = ev[k].is_alloc ? on_alloc(r, b, ev[k].index, out, diag)
                       : on_free(r, b, ev[k].index, out, diag);
  }
  return s;
}

nnmem_status_t nnmem_domain_replay(const nnmem_problem_t *problem,
                                   nnmem_pool_kind_t kind, uint32_t tenants,
                                   uint64_t quota,
                                   nnmem_domain_replay_result_t *out,
                                   nnmem_stats_t *pool_stats_out,
                                   nnmem_diag_t *diag) {
  if (!problem || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "tenant replay: NULL argument");
  memset(out, 0, sizeof *out);
  if (tenants == 0 || tenants > NNMEM_DOMAIN_MAX)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "tenant replay: %u tenants (expected 1 to %d)", tenants,
                       NNMEM_DOMAIN_MAX);
  size_t nb = nnmem_problem_count(problem), n_ev = 0;
  nnmem_trace_event_t *ev = NULL;
  nnmem_status_t s = nnmem_trace_events(problem, &ev, &n_ev);
  if (s != NNMEM_OK)
    return nnmem__diag(diag, s, "tenant replay: cannot build the events");
  run_t r = {.tenants = tenants};
  r.addr = calloc(nb + 1, sizeof *r.addr);
  r.by_next = calloc(nb + 1, 1);
  r.per_count = calloc(tenants, sizeof *r.per_count);
  out->tenant = calloc(tenants, sizeof *out->tenant);
  nnmem_backend_t *dev = NULL;
  nnmem_pool_t *pool = NULL;
  nnmem_domain_set_t *set = NULL;
  if (!r.addr || !r.by_next || !r.per_count || !out->tenant)
    s = nnmem__diag(diag, NNMEM_ERR_NOMEM, "tenant replay: no memory");
  if (s == NNMEM_OK) s = nnmem_backend_sim_create(NULL, &dev);
  if (s == NNMEM_OK) s = nnmem_pool_create_diag(kind, NULL, dev, &pool, diag);
  nnmem_domain_set_config_t sc;
  nnmem_domain_set_config_init(&sc);
  sc.pool = pool;
  if (s == NNMEM_OK) s = nnmem_domain_set_create(&sc, &set, diag);
  nnmem_domain_config_t dc;
  nnmem_domain_config_init(&dc);
  dc.quota = quota;
  for (uint32_t t = 0; t < tenants && s == NNMEM_OK; t++)
    s = nnmem_domain_create(set, &dc, &r.dom[t], diag);
  if (s == NNMEM_OK) s = run_events(&r, problem, ev, n_ev, out, diag);
  if (s == NNMEM_OK) s = nnmem_domain_set_check(set, diag);
  if (s == NNMEM_OK) {
    out->tenants = tenants;
    out->peak_live_bytes = r.peak;
    for (uint32_t t = 0; t < tenants; t++)
      (void)nnmem_domain_stats(r.dom[t], &out->tenant[t]);
    nnmem_stats_t st;
    if (nnmem_pool_stats(pool, &st) == NNMEM_OK) {
      out->peak_reserved_bytes = st.reserved_bytes_peak;
      if (pool_stats_out) *pool_stats_out = st;
    }
  } else {
    free(out->tenant);
    out->tenant = NULL;
  }
  nnmem_domain_set_destroy(set);
  nnmem_pool_destroy(pool);
  nnmem_backend_destroy(dev);
  free(r.addr);
  free(r.by_next);
  free(r.per_count);
  free(ev);
  return s;
}

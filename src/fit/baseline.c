/* baseline.c - what a runtime without a plan moves under a memory limit
 * (nnmem_fit_baseline): on-demand swapping with LRU eviction, and the same
 * with Belady's MIN eviction as a reference bound (bench/fit compares the
 * fitter against both).
 *
 * Replay of the fitter's access trace (nnmem__fit_trace: the same values,
 * aligned sizes and op order), two inferences back to back; the second is
 * counted (weights left resident by the first stay, as in a steady state):
 *   per step s, for each value v the op accesses that is not resident:
 *     1. an activation seen for the first time in this inference is
 *        produced here: no copy; a weight, or an activation evicted
 *        earlier, is copied in (bytes / link bandwidth);
 *     2. while the resident bytes + size(v) exceed the limit, evict a
 *        resident value the op does not access: LRU - the least recently
 *        used; Belady - the one used again farthest in the future (never
 *        again first). An evicted activation with a later use is written
 *        back first (copy out);
 *   after the step, activations not used again in this inference are
 *   freed (no copy). Byte-granular: no fragmentation, no alignment waste
 *   beyond the aligned sizes - generous to the baselines.
 * No prefetch: every copy is exposed (exposed = transfer time).
 * Belady's MIN is optimal for unit sizes (Belady 1966); with sizes it is a
 * reference, not a proof.
 * Complexity: O(steps * accesses + evictions * values).
 * Thread-safety: independent calls. */
#include <string.h>

#include "common/util.h"
#include "fit/fitter.h"

/* ---- the trace for baselines (baseline.c) -------------------------------- */

static nnmem_status_t export_trace(fitter_t *x, fit_trace_t *t) {
  size_t n = 0, k = 0;
  for (size_t i = 0; i < x->n_v; i++)
    n += x->v[i].n_acc;
  t->steps = x->S;
  t->n_values = x->n_v;
  t->size = calloc(x->n_v + 1, sizeof *t->size);
  t->is_weight = calloc(x->n_v + 1, 1);
  t->acc_start = calloc(x->S + 2, sizeof *t->acc_start);
  t->acc_val = calloc(n + 1, sizeof *t->acc_val);
  t->op_s = calloc(x->S + 1, sizeof *t->op_s);
  step_root_t *sr = malloc((n + 1) * sizeof *sr);
  if (!t->size || !t->is_weight || !t->acc_start || !t->acc_val || !t->op_s ||
      !sr) {
    free(sr);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < x->n_v; i++) {
    t->size[i] = x->v[i].asize;
    t->is_weight[i] = x->v[i].kind == FIT_KIND_WEIGHT;
    for (size_t a = 0; a < x->v[i].n_acc; a++)
      if (x->v[i].acc[a] < x->S)
        sr[k++] =
            (step_root_t){x->v[i].acc[a], nnmem__fit_root_of(x, (int64_t)i)};
  }
  qsort(sr, k, sizeof *sr, nnmem__fit_cmp_step_root);
  size_t m = 0;
  for (uint64_t s = 0, j = 0; s < x->S; s++) {
    t->acc_start[s] = m;
    for (; j < k && sr[j].step == s; j++)
      if (m == t->acc_start[s] || t->acc_val[m - 1] != (uint32_t)sr[j].root)
        t->acc_val[m++] = (uint32_t)sr[j].root;
  }
  t->acc_start[x->S] = m;
  memcpy(t->op_s, x->op_s, x->S * sizeof *t->op_s);
  free(sr);
  return NNMEM_OK;
}

void nnmem__fit_trace_free(fit_trace_t *t) {
  if (!t) return;
  free(t->size);
  free(t->is_weight);
  free(t->acc_start);
  free(t->acc_val);
  free(t->op_s);
  memset(t, 0, sizeof *t);
}

nnmem_status_t nnmem__fit_trace(const nnmem_graph_t *g, const nnmem_device_t *d,
                                const nnmem_fit_config_t *cfg, uint64_t limit,
                                fit_trace_t *out, nnmem_diag_t *diag) {
  memset(out, 0, sizeof *out);
  nnmem_fit_config_t defaults;
  nnmem_fit_config_init(&defaults);
  nnmem_fit_t *f = calloc(1, sizeof *f);
  if (!f) return NNMEM_ERR_NOMEM;
  f->dev = *d;
  fitter_t x;
  memset(&x, 0, sizeof x);
  x.g = g;
  x.cfg = cfg ? cfg : &defaults;
  x.f = f;
  x.diag = diag;
  x.main = nnmem_device_main_tier(d);
  x.slice_bytes = nnmem__fit_slice_bytes(x.cfg, limit); /* as the fitter */
  int64_t *wval = NULL;
  nnmem_status_t st = nnmem__fit_setup(&x, x.cfg);
  if (st == NNMEM_OK) st = nnmem__fit_values(&x, &wval);
  if (st == NNMEM_OK) st = export_trace(&x, out);
  free(wval);
  nnmem__fitter_free(&x);
  nnmem_fit_destroy(f);
  if (st != NNMEM_OK) nnmem__fit_trace_free(out);
  return st;
}

typedef struct sim {
  const fit_trace_t *t;
  nnmem_baseline_t policy;
  uint64_t limit, used;
  uint8_t *resident, *seen, *needed;
  uint64_t *last_use;
  size_t **uses; /* per value: its steps in one inference */
  size_t *n_uses;
  uint64_t bytes; /* counted in the second inference */
  int counting;
} sim_t;

/* Next use of v after step s of this inference; UINT64_MAX when none (a
 * weight's next use is in the next inference: S + its first use). */
static uint64_t next_use(const sim_t *m, size_t v, uint64_t s) {
  for (size_t k = 0; k < m->n_uses[v]; k++)
    if (m->uses[v][k] > s) return m->uses[v][k];
  if (m->t->is_weight[v] && m->n_uses[v]) return m->t->steps + m->uses[v][0];
  return UINT64_MAX;
}

static int evict_one(sim_t *m, uint64_t s, uint64_t now) {
  int64_t best = -1;
  uint64_t key = 0;
  for (size_t v = 0; v < m->t->n_values; v++) {
    if (!m->resident[v] || m->needed[v]) continue;
    uint64_t k = m->policy == NNMEM_BASELINE_LRU ? UINT64_MAX - m->last_use[v]
                                                 : next_use(m, v, s);
    if (best < 0 || k > key) best = (int64_t)v, key = k;
  }
  (void)now;
  if (best < 0) return 0;
  size_t v = (size_t)best;
  if (!m->t->is_weight[v] && next_use(m, v, s) != UINT64_MAX && m->counting)
    m->bytes += m->t->size[v]; /* written back */
  m->resident[v] = 0;
  m->used -= m->t->size[v];
  return 1;
}

static int run_step(sim_t *m, uint64_t s, uint64_t now) {
  const fit_trace_t *t = m->t;
  size_t a = t->acc_start[s], b = t->acc_start[s + 1];
  for (size_t k = a; k < b; k++)
    m->needed[t->acc_val[k]] = 1;
  int ok = 1;
  for (size_t k = a; k < b && ok; k++) {
    size_t v = t->acc_val[k];
    if (!m->resident[v]) {
      while (m->used + t->size[v] > m->limit && (ok = evict_one(m, s, now))) {
      }
      if (!ok) break;
      if ((t->is_weight[v] || m->seen[v]) && m->counting)
        m->bytes += t->size[v];
      m->resident[v] = 1;
      m->used += t->size[v];
    }
    m->seen[v] = 1;
    m->last_use[v] = now;
  }
  for (size_t k = a; k < b; k++) {
    size_t v = t->acc_val[k];
    m->needed[v] = 0;
    if (!t->is_weight[v] && m->resident[v] && next_use(m, v, s) == UINT64_MAX)
      m->resident[v] = 0, m->used -= t->size[v]; /* dead */
  }
  return ok;
}

static nnmem_status_t build_uses(sim_t *m) {
  const fit_trace_t *t = m->t;
  m->uses = calloc(t->n_values + 1, sizeof *m->uses);
  m->n_uses = calloc(t->n_values + 1, sizeof *m->n_uses);
  if (!m->uses || !m->n_uses) return NNMEM_ERR_NOMEM;
  for (uint64_t s = 0; s < t->steps; s++)
    for (size_t k = t->acc_start[s]; k < t->acc_start[s + 1]; k++)
      m->n_uses[t->acc_val[k]]++;
  for (size_t v = 0; v < t->n_values; v++) {
    m->uses[v] = malloc((m->n_uses[v] + 1) * sizeof **m->uses);
    if (!m->uses[v]) return NNMEM_ERR_NOMEM;
    m->n_uses[v] = 0;
  }
  for (uint64_t s = 0; s < t->steps; s++)
    for (size_t k = t->acc_start[s]; k < t->acc_start[s + 1]; k++) {
      size_t v = t->acc_val[k];
      m->uses[v][m->n_uses[v]++] = s;
    }
  return NNMEM_OK;
}

static void sim_free(sim_t *m) {
  for (size_t v = 0; m->uses && v < m->t->n_values; v++)
    free(m->uses[v]);
  free(m->uses);
  free(m->n_uses);
  free(m->resident);
  free(m->seen);
  free(m->needed);
  free(m->last_use);
}

nnmem_status_t nnmem_fit_baseline(const nnmem_graph_t *g,
                                  const nnmem_device_t *d, uint64_t limit,
                                  const nnmem_fit_config_t *cfg,
                                  nnmem_baseline_t policy,
                                  nnmem_baseline_result_t *out,
                                  nnmem_diag_t *diag) {
  if (!g || !d || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_fit_baseline: NULL argument");
  memset(out, 0, sizeof *out);
  nnmem_status_t st = nnmem_device_check(d, diag);
  if (st != NNMEM_OK) return st;
  fit_trace_t t;
  limit = limit ? limit : d->tiers[nnmem_device_main_tier(d)].capacity;
  st = nnmem__fit_trace(g, d, cfg, limit, &t, diag);
  if (st != NNMEM_OK) return st;
  sim_t m;
  memset(&m, 0, sizeof m);
  m.t = &t;
  m.policy = policy;
  m.limit = limit;
  m.resident = calloc(t.n_values + 1, 1);
  m.seen = calloc(t.n_values + 1, 1);
  m.needed = calloc(t.n_values + 1, 1);
  m.last_use = calloc(t.n_values + 1, sizeof *m.last_use);
  st = m.resident && m.seen && m.needed && m.last_use ? build_uses(&m)
                                                      : NNMEM_ERR_NOMEM;
  int ok = 1;
  for (int pass = 0; pass < 2 && ok && st == NNMEM_OK; pass++) {
    memset(m.seen, 0, t.n_values);
    m.counting = pass == 1;
    for (uint64_t s = 0; s < t.steps && ok; s++)
      ok = run_step(&m, s, pass * t.steps + s);
  }
  if (st == NNMEM_OK) {
    double link = d->tiers[nnmem_device_main_tier(d)].link_bandwidth;
    out->feasible = ok;
    out->transfer_bytes = m.bytes;
    out->transfer_s = (double)m.bytes / link;
    out->exposed_s = out->transfer_s;
    for (uint64_t s = 0; s < t.steps; s++)
      out->compute_s += t.op_s[s];
  }
  sim_free(&m);
  nnmem__fit_trace_free(&t);
  return st;
}

/* order_search.c - memory-aware operator order (nnmem_graph_order_memory):
 * a topological order with the lowest peak of live bytes.
 *
 * Cost model: order_model.c (liveness.c's buffers, step by step). Search:
 *   1. Hierarchical decomposition (after HMCOS, Wang et al., DAC 2022): a
 *      *cut op* is one every other op reaches or is reached from; every
 *      topological order puts its ancestors before it and its descendants
 *      after it, so the ops between two consecutive cut ops (the *parts*)
 *      are contiguous in every order and are ordered one part after the
 *      other, each from the exact state the previous one left. Found with
 *      ancestor bitsets (graphs up to 16,384 ops; larger graphs are one
 *      part).
 *   2. Per part, an upper bound: the best of a beam search (order_beam.c),
 *      the greedy order (beam 1) and the part's file order.
 *   3. Per part, the exact search (after SERENITY, Ahn et al., MLSys 2020:
 *      dynamic programming over the set of scheduled ops, here best-first):
 *      a state is the set S of the part's scheduled ops plus the in-place
 *      decisions of the buffers still live (T); the bytes live after it are
 *      a function of the state, so states are memoized in a hash table
 *      (Zobrist hash of S and T) keeping the lowest peak that reaches them.
 *      States pop in order of f = max(peak, bytes live after, max over the
 *      unscheduled ops of the bytes they need in any order); the peak is a
 *      bottleneck cost (max along the path), so the first complete state
 *      popped has the minimum peak. States with f >= the beam's peak are
 *      pruned; an empty queue proves the bound's order optimal. With
 *      ip_neutral in-place ops, an op raising neither the peak nor the
 *      live bytes is the only successor expanded (nnmem__order_free_op).
 *      Parts over 256 ops (AUTO) or 4,096 (EXACT) skip it; one budget of
 *      max_states serves all parts, and a part that exhausts it keeps
 *      step 2's order (unproven).
 *   4. The whole order is re-evaluated with liveness + lower bound; when it
 *      is worse than the file order (only possible where the model is not
 *      exact: in-place growth, or a sub-buffer relation that depends on the
 *      order, see order_model.c) the file order is kept.
 *   5. With config concat_ops_out, concat-into-output becomes a choice per
 *      Concat / Split / Slice op (choose_concat): steps 1-4 rerun with
 *      every such op kept out, then with each op the model nests toggled,
 *      keeping a choice that lowers the peak (or proves it); the number of
 *      searches is bounded by CHOICE_MAX_TRIES, CHOICE_WORK / ops and 4 x
 *      max_states in all.
 * Invariants: the result is a topological order; report->peak equals
 * nnmem_graph_order_peak of it (with the config's concat-into-output
 * setting and the ops written to concat_ops_out kept out); report->exact
 * only when every part was solved exactly, no in-place join can grow a
 * buffer (model exact), no order-dependent in-place join crosses a part
 * boundary, every sub-buffer relation of the problem is one the model
 * makes in every order (no sub_dyn) and the model's peak equals the
 * liveness peak of the order. With concat_ops_out, report->peak is never
 * above the search without it.
 * Complexity: decomposition O(V^2 / 64 + E V / 64); beam O(B V^2) per part
 * of V ops; exact search O(states * V * W) time, O(states * W) memory with
 * W = V / 64 words per state set.
 * Thread-safety: reads the graph only. */
#include <string.h>

#include "analysis/liveness_internal.h"
#include "analysis/order_search.h"
#include "common/util.h"
#include "nnmem/liveness.h"
#include "nnmem/order.h"
#include "nnmem/problem.h"

#define CUT_MAX_OPS 16384u
#define EXACT_MAX_OPS 4096u     /* method EXACT */
#define AUTO_EXACT_MAX_OPS 256u /* method AUTO */
#define DEFAULT_STATES 600000u

void nnmem_order_config_init(nnmem_order_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int nnmem__order_ready(const search_t *s, const uint64_t *S, uint32_t i) {
  if (nnmem__om_bit(S, i)) return 0;
  const uint64_t *pm = s->predmask + (size_t)i * s->W;
  for (uint32_t w = 0; w < s->W; w++)
    if (pm[w] & ~S[w]) return 0;
  return 1;
}

uint64_t nnmem__order_hash_t(const search_t *s, const uint64_t *T) {
  uint64_t h = 0;
  for (uint32_t w = 0; w < s->W; w++)
    for (uint64_t x = T[w]; x; x &= x - 1)
      h ^= s->zob[s->k + w * 64 + (uint32_t)__builtin_ctzll(x)];
  return h;
}

void nnmem__order_step(search_t *s, const uint64_t *S, const uint64_t *T,
                       uint64_t before, uint32_t i, nnmem__om_step_t *out,
                       uint64_t *t_out) {
  int empty = 1;
  for (uint32_t w = 0; w < s->W && empty; w++)
    empty = S[w] == 0;
  s->v.first = s->first_part && empty;
  nnmem__om_step(&s->v, S, T, before, s->ops[i], out, t_out);
  if (t_out && s->m->ip_neutral) memset(t_out, 0, s->W * sizeof *t_out);
}

uint32_t nnmem__order_free_op(search_t *s, const uint64_t *S, const uint64_t *T,
                              uint64_t before, uint64_t peak,
                              const uint32_t *cnt) {
  if (!s->m->ip_neutral) return UINT32_MAX;
  for (uint32_t i = 0; i < s->k; i++) {
    if (cnt ? cnt[i] || nnmem__om_bit(S, i) : !nnmem__order_ready(s, S, i))
      continue;
    nnmem__om_step_t r;
    nnmem__order_step(s, S, T, before, i, &r, NULL);
    if (r.live <= peak && r.after <= before) return i;
  }
  return UINT32_MAX;
}

/* ---- step 1: parts between cut ops --------------------------------------*/

static nnmem_status_t find_parts(search_t *s, size_t *n_parts) {
  const nnmem__om_t *m = s->m;
  size_t n = m->n_ops, W = (n + 63) / 64;
  uint32_t *pos = malloc((n + 1) * sizeof *pos);
  if (!pos) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n; i++)
    pos[m->file_order[i]] = (uint32_t)i;
  uint8_t *cut = calloc(n + 1, 1);
  uint64_t *anc = NULL;
  uint32_t *dcnt = NULL;
  if (n <= CUT_MAX_OPS) {
    anc = calloc(n * W + 1, sizeof *anc); /* anc[pos] over positions */
    dcnt = calloc(n + 1, sizeof *dcnt);
  }
  if (!cut || (n <= CUT_MAX_OPS && (!anc || !dcnt))) {
    free(pos), free(cut), free(anc), free(dcnt);
    return NNMEM_ERR_NOMEM;
  }
  if (anc) {
    for (size_t i = 0; i < n; i++) {
      const nnmem__om_op_t *op = &m->ops[m->file_order[i]];
      uint64_t *a = anc + i * W;
      for (uint32_t j = 0; j < op->pred_n; j++) {
        uint32_t p = pos[m->idx[op->pred_off + j]];
        const uint64_t *pa = anc + (size_t)p * W;
        for (size_t w = 0; w < W; w++)
          a[w] |= pa[w];
        nnmem__om_set(a, p);
      }
      size_t cnt = 0;
      for (size_t w = 0; w < W; w++) {
        cnt += (size_t)__builtin_popcountll(a[w]);
        for (uint64_t x = a[w]; x; x &= x - 1)
          dcnt[w * 64 + (size_t)__builtin_ctzll(x)]++;
      }
      cut[i] = cnt == i; /* every earlier op is an ancestor */
    }
    for (size_t i = 0; i < n; i++)
      cut[i] = cut[i] && dcnt[i] == n - 1 - i;
  }
  size_t p = 0, l = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t o = m->file_order[i];
    s->part[o] = (uint32_t)p;
    s->local[o] = (uint32_t)l++;
    if (cut[i] && i + 1 < n) p++, l = 0;
  }
  *n_parts = n ? p + 1 : 0;
  free(pos), free(cut), free(anc), free(dcnt);
  return NNMEM_OK;
}

/* Sets up part `pi` whose ops start at file position `*at`. */
static nnmem_status_t part_open(search_t *s, uint32_t pi, size_t *at) {
  const nnmem__om_t *m = s->m;
  size_t b = *at, e = b;
  while (e < m->n_ops && s->part[m->file_order[e]] == pi)
    e++;
  *at = e;
  s->k = (uint32_t)(e - b);
  s->W = (s->k + 63) / 64;
  s->ops = (uint32_t *)m->file_order + b;
  s->v.cur = pi;
  free(s->predmask);
  free(s->zob);
  s->predmask = calloc((size_t)s->k * s->W + 1, sizeof *s->predmask);
  s->zob = malloc(((size_t)2 * s->k + 1) * sizeof *s->zob);
  if (!s->predmask || !s->zob) return NNMEM_ERR_NOMEM;
  for (uint32_t i = 0; i < s->k; i++) {
    const nnmem__om_op_t *op = &m->ops[s->ops[i]];
    for (uint32_t j = 0; j < op->pred_n; j++) {
      uint32_t p = m->idx[op->pred_off + j];
      if (s->part[p] == pi)
        nnmem__om_set(s->predmask + (size_t)i * s->W, s->local[p]);
    }
  }
  for (uint32_t i = 0; i < 2 * s->k; i++)
    s->zob[i] = mix64(((uint64_t)pi << 32) ^ i);
  return NNMEM_OK;
}

/* Replays a part's local order: its peak, the bytes after it, and its
 * in-place decisions into tfix. */
static nnmem_status_t part_replay(search_t *s, const uint32_t *lorder,
                                  int commit, uint64_t *peak, uint64_t *after) {
  uint64_t *bits = calloc((size_t)2 * s->W + 1, sizeof *bits);
  uint64_t *tn = calloc((size_t)s->W + 1, sizeof *tn);
  if (!bits || !tn) {
    free(bits), free(tn);
    return NNMEM_ERR_NOMEM;
  }
  uint64_t *S = bits, *T = bits + s->W, m = s->m_start;
  *peak = 0;
  for (uint32_t d = 0; d < s->k; d++) {
    nnmem__om_step_t r;
    memcpy(tn, T, s->W * sizeof *T);
    nnmem__order_step(s, S, T, m, lorder[d], &r, tn);
    memcpy(T, tn, s->W * sizeof *T);
    nnmem__om_set(S, lorder[d]);
    *peak = nnmem__max_u64(*peak, r.live);
    m = r.after;
  }
  for (uint32_t i = 0; i < s->k && commit; i++) /* live chains' decisions */
    s->tfix[s->ops[i]] = (uint8_t)nnmem__om_bit(T, i);
  *after = m;
  free(bits), free(tn);
  return NNMEM_OK;
}

/* An in-place join in this part that depends on the part's order, whose
 * buffer outlives the part, and whose outcome (joined or not) can leave the
 * buffer with different sizes: the next parts may start from one of several
 * states, so the sequence of per-part optima is not proven optimal. */
static int crosses(const search_t *s, int last) {
  const nnmem__om_t *m = s->m;
  for (uint32_t i = 0; i < s->k && !last; i++) {
    const nnmem__om_op_t *op = &m->ops[s->ops[i]];
    if (op->ip_in == NNMEM__OM_NONE) continue;
    const nnmem__om_unit_t *w = &m->units[op->ip_out];
    const nnmem__om_unit_t *c = &m->units[op->ip_in];
    if (c->cmax_raw <= w->raw && nnmem__max_u64(c->cmax_align, m->align) <=
                                     nnmem__max_u64(w->align, m->align))
      continue; /* either way the buffer has w's size */
    int outlives = w->has_out;
    for (uint32_t r = 0; r < w->rd_n && !outlives; r++)
      outlives = s->part[m->idx[w->rd_off + r]] > s->v.cur;
    const nnmem__om_unit_t *u = &m->units[op->ip_in];
    int other = 0;
    for (uint32_t r = 0; r < u->rd_n && !other; r++) {
      uint32_t q = m->idx[u->rd_off + r];
      other = q != s->ops[i] && s->part[q] == s->v.cur;
    }
    if (outlives && other) return 1;
  }
  return 0;
}

static uint32_t beam_width(const search_t *s);

/* Step 2: the best of the beam, the greedy order (beam 1) and the file
 * order: beams of different widths are not monotone. */
static nnmem_status_t upper_bound(search_t *s, uint32_t *lorder, uint64_t *ub) {
  uint32_t *alt = malloc(((size_t)s->k + 1) * sizeof *alt);
  if (!alt) return NNMEM_ERR_NOMEM;
  uint32_t b = beam_width(s);
  uint64_t p, after;
  nnmem_status_t st = nnmem__order_beam(s, b, lorder, ub);
  if (st == NNMEM_OK && b > 1 && !s->cfg.beam_width) {
    st = nnmem__order_beam(s, 1, alt, &p);
    if (st == NNMEM_OK && p < *ub)
      *ub = p, memcpy(lorder, alt, s->k * sizeof *alt);
  }
  for (uint32_t i = 0; i < s->k; i++)
    alt[i] = i;
  if (st == NNMEM_OK) st = part_replay(s, alt, 0, &p, &after);
  if (st == NNMEM_OK && p < *ub)
    *ub = p, memcpy(lorder, alt, s->k * sizeof *alt);
  free(alt);
  return st;
}

static uint32_t beam_width(const search_t *s) {
  if (s->cfg.beam_width) return s->cfg.beam_width;
  uint64_t k = s->k ? s->k : 1, b = 40000000ull / (k * k);
  return (uint32_t)(b < 1 ? 1 : b > 32 ? 32 : b);
}

/* Orders part by part into order_out; *model_peak, *all_exact. */
static nnmem_status_t search_all(search_t *s, size_t n_parts,
                                 uint32_t *order_out, uint64_t *model_peak,
                                 nnmem_order_report_t *rep) {
  const nnmem__om_t *m = s->m;
  size_t at = 0;
  uint64_t mcur = m->m0;
  uint32_t *lorder = malloc((m->n_ops + 1) * sizeof *lorder);
  if (!lorder) return NNMEM_ERR_NOMEM;
  nnmem_status_t st = NNMEM_OK;
  int exact = 1;
  *model_peak = 0;
  s->states_left = s->cfg.max_states; /* one budget for every part */
  for (uint32_t pi = 0; pi < n_parts && st == NNMEM_OK; pi++) {
    size_t b = at;
    st = part_open(s, pi, &at);
    if (st != NNMEM_OK) break;
    s->m_start = mcur;
    s->first_part = pi == 0;
    uint64_t ub = 0, peak, after;
    int part_exact = s->k <= 1;
    if (s->k > rep->largest_part) rep->largest_part = s->k;
    st = upper_bound(s, lorder, &ub);
    if (st == NNMEM_OK && s->k > 1 && s->states_left &&
        s->cfg.method != NNMEM_ORDER_HEURISTIC &&
        s->k <= (s->cfg.method == NNMEM_ORDER_EXACT ? EXACT_MAX_OPS
                                                    : AUTO_EXACT_MAX_OPS))
      st = nnmem__order_exact(s, ub, lorder, &part_exact);
    if (st == NNMEM_OK) st = part_replay(s, lorder, 1, &peak, &after);
    if (st != NNMEM_OK) break;
    for (uint32_t i = 0; i < s->k; i++)
      order_out[b + i] = s->ops[lorder[i]];
    rep->parts_exact += (size_t)part_exact;
    exact &= part_exact && !crosses(s, pi + 1 == n_parts);
    *model_peak = nnmem__max_u64(*model_peak, peak);
    mcur = after;
  }
  free(lorder);
  rep->parts = n_parts;
  rep->exact = exact && !m->may_grow;
  return st;
}

/* The peak live bytes of `order` (NULL = the file order) as the planner
 * will see them: liveness with the search's config (no_reuse, sub-buffers
 * unless no_concat_into_output, alignment) and its lower bound. With
 * `has_sub`, says whether the problem has sub-buffers (which the search's
 * model does not know: no proof then). */
static nnmem_status_t order_peak(const nnmem_graph_t *g, const uint32_t *order,
                                 const nnmem_order_config_t *cfg,
                                 const uint8_t *skip, uint64_t *peak_out,
                                 int *has_sub, nnmem_diag_t *diag) {
  nnmem_liveness_config_t lc;
  nnmem_liveness_config_init(&lc);
  lc.order = order;
  lc.no_concat_ops = skip;
  lc.no_reuse = cfg->no_reuse;
  lc.no_concat_into_output = cfg->no_concat_into_output;
  lc.alignment = cfg->alignment;
  nnmem_liveness_t *l = NULL;
  nnmem_status_t st = nnmem_liveness_analyze(g, &lc, &l, diag);
  if (st == NNMEM_OK) {
    st = nnmem_problem_lower_bound(nnmem_liveness_problem(l),
                                   cfg->alignment ? cfg->alignment : 1,
                                   peak_out);
    if (st != NNMEM_OK)
      nnmem__diag(diag, st, "order peak: %s", nnmem_status_str(st));
    if (has_sub) *has_sub = nnmem_liveness_sub_buffers(l) != 0;
  }
  nnmem_liveness_destroy(l);
  return st;
}

nnmem_status_t nnmem_graph_order_peak(const nnmem_graph_t *g,
                                      const uint32_t *order, uint64_t alignment,
                                      int no_reuse, uint64_t *peak_out,
                                      nnmem_diag_t *diag) {
  if (!g || !peak_out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "order peak: NULL argument");
  nnmem_liveness_config_t lc;
  nnmem_liveness_config_init(&lc);
  lc.order = order;
  lc.no_reuse = no_reuse;
  nnmem_liveness_t *l = NULL;
  nnmem_status_t st = nnmem_liveness_analyze(g, &lc, &l, diag);
  if (st == NNMEM_OK) {
    st = nnmem_problem_lower_bound(nnmem_liveness_problem(l),
                                   alignment ? alignment : 1, peak_out);
    if (st != NNMEM_OK)
      nnmem__diag(diag, st, "order peak: %s", nnmem_status_str(st));
  }
  nnmem_liveness_destroy(l);
  return st;
}

static nnmem_status_t order_config(const nnmem_order_config_t *cfg,
                                   nnmem_order_config_t *out,
                                   nnmem_diag_t *diag) {
  nnmem_order_config_init(out);
  if (cfg) {
    size_t n = cfg->size && cfg->size < sizeof *out ? cfg->size : sizeof *out;
    memcpy(out, cfg, n);
    out->size = sizeof *out;
  }
  if (!out->alignment) out->alignment = 1;
  if (!nnmem__is_pow2(out->alignment) ||
      (unsigned)out->method >= NNMEM_ORDER_METHOD_COUNT_)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "ordering: bad config (alignment %llu, method %d)",
                       (unsigned long long)out->alignment, (int)out->method);
  if (!out->max_states) out->max_states = DEFAULT_STATES;
  return NNMEM_OK;
}

static nnmem_status_t order_run(search_t *s, const nnmem_graph_t *g,
                                uint32_t *order_out, nnmem_order_report_t *r,
                                nnmem_diag_t *diag) {
  const nnmem__om_t *m = s->m;
  size_t n = m->n_ops, n_parts = 0;
  s->part = malloc((n + 1) * sizeof *s->part);
  s->local = malloc((n + 1) * sizeof *s->local);
  s->tfix = calloc(n + 1, 1);
  if (!s->part || !s->local || !s->tfix) return NNMEM_ERR_NOMEM;
  s->v.m = m;
  s->v.part = s->part;
  s->v.local = s->local;
  s->v.tfix = s->tfix;
  nnmem_status_t st = find_parts(s, &n_parts);
  uint64_t model_peak = 0;
  if (st == NNMEM_OK) st = search_all(s, n_parts, order_out, &model_peak, r);
  r->states = s->states;
  if (st != NNMEM_OK) return st;
  int has_sub = 0;
  st = order_peak(g, order_out, &s->cfg, s->skip, &r->peak, &has_sub, diag);
  if (st != NNMEM_OK) return st;
  if (r->peak != model_peak || (has_sub && m->sub_dyn)) r->exact = 0;
  if (r->peak > r->file_peak) { /* model inexact: keep the file order */
    memcpy(order_out, m->file_order, n * sizeof *order_out);
    r->peak = r->file_peak;
    r->exact = 0;
  }
  return NNMEM_OK;
}

/* One search, with the ops `skip` marks kept out of concat-into-output:
 * the order into order_out, the report into *r, and with `nests` the ops
 * whose sub-buffers the model made (or found order-dependent). */
static nnmem_status_t search_once(const nnmem_graph_t *g,
                                  const nnmem_order_config_t *cfg,
                                  const uint8_t *skip, uint32_t *order_out,
                                  nnmem_order_report_t *r, uint8_t *nests,
                                  nnmem_diag_t *diag) {
  memset(r, 0, sizeof *r);
  r->size = sizeof *r;
  search_t s;
  memset(&s, 0, sizeof s);
  s.cfg = *cfg;
  s.skip = skip;
  nnmem_status_t st =
      order_peak(g, NULL, &s.cfg, skip, &r->file_peak, NULL, diag);
  nnmem__om_t m;
  if (st == NNMEM_OK)
    st = nnmem__om_build(g, s.cfg.alignment, s.cfg.no_reuse,
                         !s.cfg.no_concat_into_output, skip, &m, diag);
  if (st != NNMEM_OK) return st;
  s.m = &m;
  st = order_run(&s, g, order_out, r, diag);
  if (st == NNMEM_OK && nests) memcpy(nests, m.nests, m.n_ops);
  free(s.part), free(s.local), free(s.tfix), free(s.predmask), free(s.zob);
  nnmem__om_free(&m);
  return st;
}

#define CHOICE_MAX_TRIES 64u /* searches for the concat choice */
#define CHOICE_WORK 12000u   /* ... and at most this / ops of them */

static size_t count(const uint8_t *f, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += f[i] != 0;
  return k;
}

/* Search t (with kt ops kept out) beats r (kr): a lower peak; as low and
 * proven where r is not; as low, as proven, and fewer ops kept out. */
static int better(const nnmem_order_report_t *t, size_t kt,
                  const nnmem_order_report_t *r, size_t kr) {
  if (t->peak != r->peak) return t->peak < r->peak;
  if (t->exact != r->exact) return t->exact;
  return kt < kr;
}

/* Concat-into-output is a choice per Concat / Split op: nesting can raise
 * the peak (the output lives from its first input on). Tries every such op
 * kept out (as no_concat_into_output), then from the better of the two
 * each op the model nests (`nests`) toggled once (at most
 * min(CHOICE_MAX_TRIES, CHOICE_WORK / ops) searches, within 4 x max_states
 * in all, so large graphs stay within a few whole searches); keeps a choice
 * that is `better`, so the result is never above the search with every op
 * in. `r` and order_out hold the all-in result on entry. */
static nnmem_status_t choose_concat(const nnmem_graph_t *g,
                                    const nnmem_order_config_t *cfg,
                                    const uint8_t *nests, uint32_t *order_out,
                                    nnmem_order_report_t *r,
                                    nnmem_diag_t *diag) {
  size_t n = nnmem_graph_op_count(g), k = 0;
  for (size_t i = 0; i < n; i++)
    k += nests[i] != 0;
  if (!k) return NNMEM_OK;
  uint8_t *skip = calloc(n + 1, 1), *best = calloc(n + 1, 1);
  uint8_t *all = calloc(n + 1, 1); /* every Concat / Split / Slice */
  uint32_t *trial = malloc((n + 1) * sizeof *trial);
  if (!skip || !best || !all || !trial) {
    free(skip), free(best), free(all), free(trial);
    return NNMEM_ERR_NOMEM;
  }
  for (uint32_t o = 0; o < n; o++) {
    nnmem_op_info_t oi;
    nnmem_graph_op(g, o, &oi);
    all[o] = nnmem__subbuf_op(g, o, &oi) != 0;
  }
  uint64_t file_peak = r->file_peak, states = r->states;
  size_t max_tries = CHOICE_WORK / (n ? n : 1);
  if (max_tries > CHOICE_MAX_TRIES) max_tries = CHOICE_MAX_TRIES;
  if (max_tries < 1) max_tries = 1; /* every op kept out, at least */
  nnmem_status_t st = NNMEM_OK;
  size_t tries = 0;
  /* c == n first: every op kept out; then each op the model nests toggled
   * from the best choice so far */
  for (size_t c = n, pass = 0; pass <= n && st == NNMEM_OK; pass++) {
    if (pass) c = pass - 1;
    if (c < n && !nests[c]) continue;
    if (tries++ >= max_tries || states > 4 * cfg->max_states) break;
    memcpy(skip, best, n);
    if (c == n)
      memcpy(skip, all, n);
    else
      skip[c] = (uint8_t)!skip[c];
    nnmem_order_report_t t;
    st = search_once(g, cfg, skip, trial, &t, NULL, diag);
    states += t.states;
    if (st != NNMEM_OK || !better(&t, count(skip, n), r, count(best, n)))
      continue;
    *r = t;
    memcpy(best, skip, n);
    memcpy(order_out, trial, n * sizeof *trial);
  }
  r->file_peak = file_peak; /* the file order with every op in */
  r->states = states;
  r->concat_ops_off = 0;
  for (size_t i = 0; i < n; i++) {
    cfg->concat_ops_out[i] = best[i];
    r->concat_ops_off += best[i] != 0;
  }
  free(skip), free(best), free(all), free(trial);
  return st;
}

nnmem_status_t nnmem_graph_order_memory(const nnmem_graph_t *g,
                                        const nnmem_order_config_t *cfg,
                                        uint32_t *order_out,
                                        nnmem_order_report_t *report,
                                        nnmem_diag_t *diag) {
  if (diag) diag->message[0] = 0;
  if (!g || !order_out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "ordering: NULL argument");
  nnmem_order_report_t r;
  nnmem_order_config_t c;
  nnmem_status_t st = order_config(cfg, &c, diag);
  if (st == NNMEM_OK) st = nnmem_graph_check(g, diag);
  if (st != NNMEM_OK) return st;
  size_t n = nnmem_graph_op_count(g);
  uint8_t *nests = calloc(n + 1, 1);
  if (!nests)
    return nnmem__diag(diag, NNMEM_ERR_NOMEM, "ordering: out of memory");
  if (c.concat_ops_out) memset(c.concat_ops_out, 0, n);
  st = search_once(g, &c, NULL, order_out, &r, nests, diag);
  if (st == NNMEM_OK && c.concat_ops_out && !c.no_concat_into_output &&
      !c.no_reuse)
    st = choose_concat(g, &c, nests, order_out, &r, diag);
  free(nests);
  if (st != NNMEM_OK && diag && !diag->message[0])
    nnmem__diag(diag, st, "ordering: %s", nnmem_status_str(st));
  if (st == NNMEM_OK && report) {
    size_t sz =
        report->size && report->size < sizeof r ? report->size : sizeof r;
    memcpy(report, &r, sz);
    report->size = (uint32_t)sz;
  }
  return st;
}

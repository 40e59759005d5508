/* fit.c - fitting a graph under a device memory limit (nnmem/fit.h): the
 * smallest footprint, the tier problems, on-chip placement, costs and the
 * driver; step 2 (the values, weight slices) is fit_values.c, step 5
 * (choosing moves) fit_moves.c, the state they share fitter.h.
 *
 * Algorithm (the cheapest remedy first, as issue 9 orders them):
 *   1. Order: an explicit order, the memory-aware order (order.h) or file
 *      order; liveness analysis with the main tier's alignment.
 *   2. Values: every liveness buffer (activations, workspace, with their
 *      gaps and sub-buffer relations), every weight read by some op (live
 *      [0, S); one of at least two slices' worth whose bytes are whole rows
 *      of dim 0 as k slices of whole rows, each a value: weight_slices),
 *      and with conv_algorithm im2col one column buffer per Conv
 *      (live [s, s+1)). For each value the sorted steps that access it (a
 *      liveness buffer also at first and last - 1: inputs are written
 *      before step 0, outputs read after the last step). An op reads all
 *      slices of its weights; each slice past the first adds the device's
 *      op overhead to its time (a launch per slice). A Conv, Gemm, MatMul
 *      or ConvTranspose whose weight is sliced runs as one step per slice
 *      instead (operator splitting, fit_split.c): every lifetime maps
 *      from op steps to steps, and the plan's steps are the parts.
 *   3. Smallest footprint: max over steps of the aligned bytes of the roots
 *      the step accesses. Below it nothing fits (exit 2 names the op).
 *   4. Placement on on-chip tiers: small, often-accessed activation and
 *      workspace roots (no gaps, no sub-buffers) by accesses per byte-step,
 *      while the tier's plan fits its capacity (each tier planned and
 *      verified separately). Once they are placed their ops run faster
 *      (cost.c at the tier's bandwidth) and the main tier holds less, so
 *      the prefetch leads of step 6 are chosen again (onchip_leads).
 *   5. Greedy relief of the live-bytes profile of the main tier while its
 *      peak exceeds the target (the limit, lowered 3 % per failed placement
 *      round): at the peak step s*, among the moves that free bytes at s*,
 *      take the one with the least transfer time per byte freed (weights
 *      cost one copy per use run, activations two), larger first on ties:
 *        stream  weight w with uses u1 < u2 ...: on the device only on
 *                [u - k, u + 1) per use (overlapping windows merge), k the
 *                fewest steps whose compute time hides the copy, at most
 *                max_ahead; one copy in per window;
 *        offload activation root with consecutive accesses a < c: copy out
 *                issued at a + 1, done by a + 1 + d; copy in issued at
 *                c - k, done by c; device gap [a + 1 + d, c - k) (must be
 *                non-empty); host copy live [a + 1, c).
 *   6. Plan the main tier with capacity = limit (plan.h); on
 *      NNMEM_ERR_CAPACITY lower the target and continue step 5; host tier
 *      planned without a capacity. Every tier's plan passes
 *      nnmem_plan_verify (shares no code with the planner). Then the
 *      prefetch leads grow where memory allows (fit_leads.c). The copies
 *      are listed by issue step, earliest deadline first within a step.
 *   7. Costs: op times from the cost model (cost.c); the timeline
 *      (timeline.c): one link per direction serving issued copies earliest
 *      deadline first; an op waits for the copies due before it; exposed =
 *      end - compute.
 *   8. Steps 1-7 run with stream windows chosen at most 1, 4 and 12 steps
 *      ahead (short windows move the fewest bytes, long ones leave room
 *      for prefetch); a fit replaces the best so far when it is no worse
 *      in bytes and exposed time, or cuts the exposed time by over 5 %
 *      within 5 % of the fewest bytes seen (nnmem_fit).
 * Invariants: a value's device buffer is active at every step that
 * accesses it; the slices of a weight follow each other in x->v, the first
 * holding their count, and their sizes add up to the weight's bytes; a copy in writes a device buffer active from its start step;
 * a copy out reads one active until its done step; host copies are live
 * from the copy out's start to the copy in's done (checked independently by
 * the executor, exec.c).
 * Complexity: O(C * (C + S)) for C candidate moves and S steps, plus the
 * planner. Thread-safety: reads the graph; the fit is immutable. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "fit/fitter.h"
#include "nnmem/order.h"

uint64_t nnmem__fnv1a(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

void nnmem_fit_config_init(nnmem_fit_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

uint64_t nnmem_graph_digest(const nnmem_graph_t *g) {
  uint64_t h = NNMEM__FNV_SEED;
  if (!g) return h;
  size_t nt = nnmem_graph_tensor_count(g), no = nnmem_graph_op_count(g);
  for (uint32_t t = 0; t < nt; t++) {
    nnmem_tensor_info_t ti;
    if (nnmem_graph_tensor(g, t, &ti) != NNMEM_OK) continue;
    h = nnmem__fnv1a(h, ti.name, strlen(ti.name) + 1);
    h = nnmem__fnv1a(h, &ti.kind, sizeof ti.kind);
    h = nnmem__fnv1a(h, &ti.bytes, sizeof ti.bytes);
  }
  for (uint32_t o = 0; o < no; o++) {
    nnmem_op_info_t oi;
    if (nnmem_graph_op(g, o, &oi) != NNMEM_OK) continue;
    h = nnmem__fnv1a(h, oi.name, strlen(oi.name) + 1);
    h = nnmem__fnv1a(h, oi.type, strlen(oi.type) + 1);
    h = nnmem__fnv1a(h, oi.inputs, oi.n_inputs * sizeof *oi.inputs);
    h = nnmem__fnv1a(h, oi.outputs, oi.n_outputs * sizeof *oi.outputs);
    h = nnmem__fnv1a(h, &oi.workspace_bytes, sizeof oi.workspace_bytes);
  }
  return h;
}

int64_t nnmem__fit_root_of(const fitter_t *x, int64_t i) {
  while (x->v[i].parent >= 0)
    i = x->v[i].parent;
  return i;
}

/* ---- step 3: the smallest footprint -------------------------------------- */

int nnmem__fit_cmp_step_root(const void *a, const void *b) {
  const step_root_t *x = a, *y = b;
  if (x->step != y->step) return x->step < y->step ? -1 : 1;
  return x->root < y->root ? -1 : x->root > y->root;
}

/* Max over steps of the aligned bytes of the roots accessed there: (step,
 * root) pairs sorted and deduplicated, summed per step. O(A log A). */
static nnmem_status_t min_footprint(fitter_t *x) {
  size_t n = 0, k = 0;
  for (size_t i = 0; i < x->n_v; i++)
    n += x->v[i].n_acc;
  step_root_t *sr = malloc((n ? n : 1) * sizeof *sr);
  if (!sr) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < x->n_v; i++)
    for (size_t a = 0; a < x->v[i].n_acc; a++)
      sr[k++] =
          (step_root_t){x->v[i].acc[a], nnmem__fit_root_of(x, (int64_t)i)};
  qsort(sr, n, sizeof *sr, nnmem__fit_cmp_step_root);
  x->f->min_footprint = 0;
  x->f->min_op = 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && sr[i].step != sr[i - 1].step) sum = 0;
    if (i > 0 && sr[i].step == sr[i - 1].step && sr[i].root == sr[i - 1].root)
      continue;
    sum += x->v[sr[i].root].asize;
    if (sum > x->f->min_footprint && sr[i].step < x->S) {
      x->f->min_footprint = sum;
      x->f->min_op =
          nnmem_liveness_order(x->live)[x->f->step[sr[i].step].op_step];
    }
  }
  free(sr);
  return NNMEM_OK;
}

/* ---- steps 6: tier problems ---------------------------------------------- */

static nnmem_status_t add_gap_list(fv_t *v, uint64_t from, uint64_t to) {
  size_t cap = v->n_gaps;
  if (nnmem__grow((void **)&v->gaps, &cap, v->n_gaps + 1, sizeof *v->gaps))
    return NNMEM_ERR_NOMEM;
  v->gaps[v->n_gaps].first = from;
  v->gaps[v->n_gaps].last = to;
  v->n_gaps++;
  return NNMEM_OK;
}

static nnmem_status_t add_copy(nnmem_fit_t *f, nnmem_fit_copy_t c) {
  size_t cap = f->n_copies;
  if (nnmem__grow((void **)&f->copies, &cap, f->n_copies + 1, sizeof c))
    return NNMEM_ERR_NOMEM;
  f->copies[f->n_copies++] = c;
  return NNMEM_OK;
}

static nnmem_status_t add_move(nnmem_fit_t *f, nnmem_fit_move_t m,
                               const char *name) {
  size_t cap = f->n_moves, cap2 = f->n_moves;
  if (nnmem__grow((void **)&f->moves, &cap, f->n_moves + 1, sizeof m) ||
      nnmem__grow((void **)&f->move_names, &cap2, f->n_moves + 1,
                  sizeof(char *)))
    return NNMEM_ERR_NOMEM;
  f->move_names[f->n_moves] = nnmem__strdup(name ? name : "?");
  if (!f->move_names[f->n_moves]) return NNMEM_ERR_NOMEM;
  m.name = f->move_names[f->n_moves];
  f->moves[f->n_moves++] = m;
  return NNMEM_OK;
}

static nnmem_status_t tier_add(nnmem_fit_t *f, uint32_t t, const char *id,
                               uint64_t size, uint64_t align, uint64_t first,
                               uint64_t last, int kind, size_t *idx) {
  nnmem_status_t st =
      nnmem_problem_add(f->problems[t], id, size, align, first, last, idx);
  if (st != NNMEM_OK) return st;
  size_t n = nnmem_problem_count(f->problems[t]), cap = n - 1;
  if (nnmem__grow((void **)&f->kinds[t], &cap, n, 1)) return NNMEM_ERR_NOMEM;
  f->kinds[t][*idx] = (uint8_t)kind;
  return NNMEM_OK;
}

/* Streamed weight v: device windows, copies in, host home. */
static nnmem_status_t place_streamed(fitter_t *x, fv_t *v, uint32_t ahead,
                                     uint64_t at, nnmem_interval_t *w) {
  nnmem_fit_t *f = x->f;
  uint32_t host = f->dev.n_tiers - 1;
  size_t n = nnmem__fit_stream_windows(x, v, ahead, w), hb;
  v->first = w[0].first;
  v->last = w[n - 1].last;
  for (size_t i = 1; i < n; i++) {
    nnmem_status_t st = add_gap_list(v, w[i - 1].last, w[i].first);
    if (st != NNMEM_OK) return st;
  }
  nnmem_status_t st = tier_add(f, host, v->id, v->size, v->align, 0, x->S,
                               FIT_KIND_WEIGHT, &hb);
  if (st != NNMEM_OK) return st;
  v->hbuf = hb;
  for (size_t i = 0; i < n; i++) {
    uint64_t use = w[i].first; /* the first use in the window */
    for (size_t k = 0; k < v->n_acc; k++)
      if (v->acc[k] >= w[i].first) {
        use = v->acc[k];
        break;
      }
    nnmem_fit_copy_t c = {NNMEM_COPY_IN, x->main,    0,  hb,
                          v->size,       w[i].first, use};
    c.dev_buffer = (size_t)(v - x->v); /* value index; mapped later */
    if ((st = add_copy(f, c)) != NNMEM_OK) return st;
  }
  nnmem_fit_move_t m = {NNMEM_MOVE_STREAM, NULL, v->size, n, at, 0};
  return add_move(f, m, v->id);
}

/* Offloaded stretch c of value v: gap, copies out and in, host copy. */
static nnmem_status_t place_offload(fitter_t *x, const cand_t *c, fv_t *v,
                                    uint64_t peak_step) {
  nnmem_fit_t *f = x->f;
  uint32_t host = f->dev.n_tiers - 1;
  size_t hb;
  char id[300];
  snprintf(id, sizeof id, "%s@%llu", v->id, (unsigned long long)(c->a + 1));
  nnmem_status_t st = add_gap_list(v, c->a + 1 + c->d, c->c - c->k);
  if (st == NNMEM_OK)
    st = tier_add(f, host, id, v->size, v->align, c->a + 1, c->c,
                  FIT_KIND_ACTIVATION, &hb);
  if (st != NNMEM_OK) return st;
  size_t vi = (size_t)(v - x->v);
  nnmem_fit_copy_t out = {NNMEM_COPY_OUT, x->main,        vi, hb, v->size,
                          c->a + 1,       c->a + 1 + c->d};
  nnmem_fit_copy_t in = {NNMEM_COPY_IN, x->main,     vi,  hb,
                         v->size,       c->c - c->k, c->c};
  if ((st = add_copy(f, out)) != NNMEM_OK || (st = add_copy(f, in)) != NNMEM_OK)
    return st;
  nnmem_fit_move_t m = {NNMEM_MOVE_OFFLOAD,
                        NULL,
                        v->size,
                        2,
                        peak_step,
                        c->c - c->k - (c->a + 1 + c->d)};
  return add_move(f, m, v->id);
}

static int cmp_interval(const void *a, const void *b) {
  const nnmem_interval_t *x = a, *y = b;
  return x->first < y->first ? -1 : x->first > y->first;
}

/* Adds every device value of tier t to its problem (values in index order,
 * so parents come first: liveness buffers precede the rest). */
static nnmem_status_t build_tier(fitter_t *x, uint32_t t) {
  nnmem_fit_t *f = x->f;
  for (size_t i = 0; i < x->n_v; i++) {
    fv_t *v = &x->v[i];
    if (v->is_part) v->tier = x->v[v->parent].tier; /* parents come first */
    if (v->tier != t || v->n_acc == 0) continue;
    nnmem_status_t st = tier_add(f, t, v->id, v->size, v->align, v->first,
                                 v->last, v->kind, &v->tbuf);
    if (st != NNMEM_OK) return st;
  }
  const nnmem_problem_t *lp = nnmem_liveness_problem(x->live);
  for (size_t i = 0; i < x->n_v; i++) {
    fv_t *v = &x->v[i];
    if (v->tier != t || v->n_acc == 0) continue;
    /* the liveness problem's own gaps, then ours */
    const nnmem_interval_t *lg;
    size_t nl =
        i < nnmem_problem_count(lp) ? nnmem_problem_gaps(lp, i, &lg) : 0;
    for (size_t k = 0; k < nl; k++) { /* in op steps: to steps */
      nnmem_status_t st =
          add_gap_list(v, nnmem__fit_step_of(x, lg[k].first),
                       nnmem__fit_step_of(x, lg[k].last));
      if (st != NNMEM_OK) return st;
    }
    if (v->n_gaps > 1) qsort(v->gaps, v->n_gaps, sizeof *v->gaps, cmp_interval);
    for (size_t k = 0; k < v->n_gaps; k++) {
      nnmem_status_t st = nnmem_problem_add_gap(
          f->problems[t], v->tbuf, v->gaps[k].first, v->gaps[k].last);
      if (st != NNMEM_OK) return st;
    }
    if (v->parent >= 0) {
      nnmem_status_t st = nnmem_problem_set_parent(
          f->problems[t], v->tbuf, x->v[v->parent].tbuf, v->rel);
      if (st != NNMEM_OK) return st;
    }
  }
  return NNMEM_OK;
}

static nnmem_status_t plan_tier(fitter_t *x, uint32_t t, uint64_t cap) {
  nnmem_fit_t *f = x->f;
  nnmem_planner_config_t pc;
  nnmem_planner_config_init(&pc);
  pc.alignment = f->dev.tiers[t].alignment;
  pc.capacity = cap;
  /* a quick search: the fitter retries; trials of alap_leads quicker */
  pc.node_budget = x->trial ? 4000 : 20000;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = nnmem_problem_check(f->problems[t], &d);
  if (st != NNMEM_OK)
    return nnmem__diag(x->diag, NNMEM_ERR_STATE,
                       "internal: tier '%s' problem: %s", f->dev.tiers[t].name,
                       d.message);
  st = nnmem_plan_create(f->problems[t], &pc, &f->plans[t], &d);
  if (st != NNMEM_OK) return st;
  st = nnmem_plan_verify(f->problems[t], nnmem_plan_offsets(f->plans[t]),
                         pc.alignment, cap, NULL, &d);
  if (st != NNMEM_OK)
    return nnmem__diag(x->diag, NNMEM_ERR_STATE,
                       "internal: the plan of tier '%s' failed the verifier: "
                       "%s",
                       f->dev.tiers[t].name, d.message);
  return NNMEM_OK;
}

/* ---- the executor's accesses --------------------------------------------- */

static nnmem_status_t push_acc(fit_access_t **arr, size_t *n, size_t *cap,
                               const fv_t *v, uint32_t write) {
  if (nnmem__grow((void **)arr, cap, *n + 1, sizeof **arr))
    return NNMEM_ERR_NOMEM;
  (*arr)[(*n)++] = (fit_access_t){v->tier, write, v->tbuf};
  return NNMEM_OK;
}

/* Per step: reads (inputs; of a split op's weight the part's slice; an
 * ACCUM part past the first also its output), writes (outputs but views;
 * a PARTS part its output rows; workspace); before step 0: inputs and
 * weights written; after the last: outputs read. */
static nnmem_status_t build_accesses(fitter_t *x, const int64_t *wval) {
  nnmem_fit_t *f = x->f;
  size_t n = 0, cap = 0, ci = 0, cf = 0;
  const uint32_t *order = nnmem_liveness_order(x->live);
  f->acc_start = calloc(x->S + 1, sizeof *f->acc_start);
  if (!f->acc_start) return NNMEM_ERR_NOMEM;
  nnmem_status_t st = NNMEM_OK;
  for (uint64_t s = 0; s < x->S && st == NNMEM_OK; s++) {
    nnmem_op_info_t oi;
    const fit_step_t *sp = &f->step[s];
    int64_t sw = x->split_w[sp->op_step];
    f->acc_start[s] = n;
    if (nnmem_graph_op(x->g, order[sp->op_step], &oi) != NNMEM_OK)
      return NNMEM_ERR_INVALID;
    for (uint32_t i = 0; i < oi.n_inputs && st == NNMEM_OK; i++) {
      int64_t vi = nnmem__fit_value_of(x, wval, oi.inputs[i]);
      uint32_t k = vi >= 0 && x->v[vi].n_slices > 1 ? x->v[vi].n_slices : 1;
      if (vi >= 0 && (int64_t)oi.inputs[i] == sw) /* its slice */
        st = push_acc(&f->acc, &n, &cap, &x->v[vi + sp->part], 0);
      else
        for (uint32_t q = 0; vi >= 0 && q < k && st == NNMEM_OK; q++)
          st = push_acc(&f->acc, &n, &cap, &x->v[vi + q], 0);
    }
    for (uint32_t i = 0; i < oi.n_outputs && st == NNMEM_OK; i++) {
      int64_t vi = nnmem__fit_value_of(x, wval, oi.outputs[i]);
      if (vi < 0 || x->v[vi].kind == FIT_KIND_WEIGHT) continue;
      if (i == 0 && (oi.flags & NNMEM_OP_VIEW)) continue; /* no bytes */
      if (sp->mode == FIT_SPLIT_PARTS) /* its rows */
        vi = x->part_v[sp->op_step] + sp->part;
      else if (sp->mode == FIT_SPLIT_ACCUM && sp->part) /* adds into it */
        st = push_acc(&f->acc, &n, &cap, &x->v[vi], 0);
      if (st == NNMEM_OK) st = push_acc(&f->acc, &n, &cap, &x->v[vi], 1);
    }
    for (size_t i = 0; i < x->n_v && st == NNMEM_OK; i++)
      if (x->v[i].kind == FIT_KIND_WORKSPACE && x->v[i].first <= s &&
          s < x->v[i].last && x->v[i].n_acc)
        st = push_acc(&f->acc, &n, &cap, &x->v[i], 1);
  }
  f->acc_start[x->S] = n;
  size_t nt = nnmem_graph_tensor_count(x->g);
  for (uint32_t t = 0; t < nt && st == NNMEM_OK; t++) {
    nnmem_tensor_info_t ti;
    if (nnmem_graph_tensor(x->g, t, &ti) != NNMEM_OK) return NNMEM_ERR_INVALID;
    int64_t vi = nnmem__fit_value_of(x, wval, t);
    if (vi < 0 || x->v[vi].n_acc == 0) continue;
    fv_t *v = &x->v[vi];
    if (ti.kind == NNMEM_TENSOR_INPUT) {
      st = push_acc(&f->init, &f->n_init, &ci, v, 1);
    } else if (ti.kind == NNMEM_TENSOR_WEIGHT ||
               ti.kind == NNMEM_TENSOR_CONSTANT) {
      uint32_t k = v->n_slices > 1 ? v->n_slices : 1;
      for (uint32_t q = 0; q < k && st == NNMEM_OK; q++) {
        fv_t home = v[q];
        if (v[q].streamed)
          home.tier = f->dev.n_tiers - 1, home.tbuf = v[q].hbuf;
        st = push_acc(&f->init, &f->n_init, &ci, &home, 1);
      }
    } else if (ti.kind == NNMEM_TENSOR_OUTPUT) {
      st = push_acc(&f->final, &f->n_final, &cf, v, 0);
    }
  }
  return st;
}

/* ---- step 4: on-chip tiers (after the main tier fits) ---------------- */

typedef struct hot {
  size_t v;
  int relief; /* choose_onchip's class 1: before every other value */
  double score;
} hot_t;

static int cmp_hot(const void *a, const void *b) {
  const hot_t *x = a, *y = b;
  if (x->relief != y->relief) return x->relief ? -1 : 1;
  return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

/* Chooses the values of on-chip tier t: activation and workspace roots
 * (no gaps, no sub-buffers, not moved) and, while the tier's live bytes
 * stay within its capacity at every step, marks them v->tier = t, in two
 * classes:
 *   1. relief: larger than a quarter of the tier, at most all of it, live
 *      at a step where the main tier holds over FIT_TIGHT of the limit
 *      (x->prof) and at a step where the incoming link idles with copies
 *      still to come (`idle`, nnmem__fit_link_idle): memory, not the
 *      link, holds those copies back; largest first.
 *   2. the others of at most a quarter of the tier, by accesses per
 *      byte-step (the ops they speed up).
 * Class 1 first: resnet50 at 25 % on edge-npu held its 3.2 MB layer1
 * skip tensors in lpddr beside each 7.2 MB im2col buffer (27.5 of 28.6
 * MB) while the link idled 3.7 ms in layer1. Where the link never idles
 * (bert-base at 25 %) values on chip only make ops faster than a busy
 * link: total time no lower, exposed time higher. Returns how many. */
#define FIT_TIGHT 0.90
static int relieves(const fitter_t *x, const fv_t *v, const uint8_t *idle) {
  int tight = 0, waits = 0;
  double over = FIT_TIGHT * (double)x->f->limit;
  for (uint64_t s = v->first; s < v->last && !(tight && waits); s++) {
    tight |= (double)x->prof[s] > over;
    waits |= idle[s];
  }
  return tight && waits;
}

static size_t choose_onchip(fitter_t *x, uint32_t t, uint64_t *live, hot_t *h,
                            const uint8_t *idle) {
  uint64_t cap = x->f->dev.tiers[t].capacity;
  size_t n = 0, taken = 0;
  for (size_t i = 0; i < x->n_v; i++) {
    const fv_t *v = &x->v[i];
    if (v->tier != x->main || v->kind == FIT_KIND_WEIGHT || v->parent >= 0 ||
        v->has_children || v->has_gaps || v->n_gaps || !v->n_acc || !v->size ||
        v->asize > cap)
      continue;
    int relief = v->asize > cap / 4 && relieves(x, v, idle);
    if (v->asize > cap / 4 && !relief) continue;
    h[n].v = i;
    h[n].relief = relief;
    h[n].score = relief ? (double)v->asize
                        : (double)v->n_acc /
                              ((double)v->asize * (double)(v->last - v->first));
    n++;
  }
  qsort(h, n, sizeof *h, cmp_hot);
  memset(live, 0, x->S * sizeof *live);
  for (size_t k = 0; k < n; k++) {
    fv_t *v = &x->v[h[k].v];
    int fits = 1;
    for (uint64_t s = v->first; s < v->last && fits; s++)
      fits = live[s] + v->asize <= cap;
    if (!fits) continue;
    for (uint64_t s = v->first; s < v->last; s++)
      live[s] += v->asize;
    v->tier = t;
    taken++;
  }
  return taken;
}


/* Fills the on-chip tiers and re-plans every tier; when a tier's plan does
 * not fit (the placement heuristics are not monotone) the on-chip values
 * go back to the main tier and the tiers are planned as before. */
static nnmem_status_t place_onchip(fitter_t *x, uint32_t ahead) {
  if (x->cfg->no_sram || x->main == 0) return NNMEM_OK;
  uint64_t *live = calloc(x->S + 1, sizeof *live);
  hot_t *h = malloc((x->n_v + 1) * sizeof *h);
  size_t wcap = 0;
  for (size_t i = 0; i < x->n_v; i++)
    if (x->v[i].n_acc > wcap) wcap = x->v[i].n_acc;
  nnmem_interval_t *scratch = malloc((wcap + 1) * sizeof *scratch);
  uint8_t *idle = calloc(x->S + 1, 1);
  nnmem_status_t st =
      live && h && scratch && idle ? NNMEM_OK : NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) st = nnmem__fit_link_idle(x, idle);
  size_t taken = 0;
  for (uint32_t t = 0; t < x->main && st == NNMEM_OK; t++)
    taken += choose_onchip(x, t, live, h, idle);
  if (st == NNMEM_OK && taken) {
    st = nnmem__fit_build_round(x, ahead, scratch);
    if (st == NNMEM_ERR_CAPACITY) {
      for (size_t i = 0; i < x->n_v; i++)
        x->v[i].tier = x->main;
      st = nnmem__fit_build_round(x, ahead, scratch);
    }
  }
  free(live);
  free(h);
  free(scratch);
  free(idle);
  return st;
}

/* Op times with the on-chip tiers: the bytes of the values an op accesses
 * on tier t move at t's bandwidth, the rest of its bytes (cost.c) at the
 * main tier's. Workspace is not among an op's bytes in cost.c, so an
 * on-chip workspace moves none of them: it was subtracted from the main
 * tier's bytes before, and a layer4.0.conv2 part of resnet50 reading a
 * 1 MB weight slice from lpddr (41 us at 25 GB/s) was costed 17 us. */
static nnmem_status_t onchip_times(fitter_t *x) {
  const nnmem_device_t *d = &x->f->dev;
  for (uint64_t s = 0; s < x->S; s++) {
    const fit_access_t *a = x->f->acc + x->f->acc_start[s];
    size_t n = x->f->acc_start[s + 1] - x->f->acc_start[s];
    double fast = 0, tm = 0;
    for (size_t i = 0; i < n; i++)
      if (a[i].tier < x->main &&
          x->f->kinds[a[i].tier][a[i].buffer] != FIT_KIND_WORKSPACE) {
        const nnmem_buffer_t *b =
            nnmem_problem_buffers(x->f->problems[a[i].tier]) + a[i].buffer;
        fast += (double)b->size;
        tm += (double)b->size / d->tiers[a[i].tier].bandwidth;
      }
    if (fast == 0) continue;
    double slow = x->op_bytes[s] > fast ? x->op_bytes[s] - fast : 0;
    tm += slow / d->tiers[x->main].bandwidth;
    double tc = x->op_flops[s] / d->compute_rate;
    x->op_s[s] = (tc > tm ? tc : tm) + d->op_overhead_s + x->op_extra[s];
    nnmem_status_t st = nnmem__fit_op_time_check(x, s); /* a slow tier */
    if (st != NNMEM_OK) return st;
  }
  return NNMEM_OK;
}

/* ---- step 7: costs --------------------------------------------------------
 */


/* ---- the driver -----------------------------------------------------------
 */

static void reset_round(fitter_t *x) {
  nnmem_fit_t *f = x->f;
  for (uint32_t t = 0; t < f->dev.n_tiers; t++) {
    nnmem_plan_destroy(f->plans[t]);
    nnmem_problem_destroy(f->problems[t]);
    free(f->kinds[t]);
    f->plans[t] = NULL;
    f->problems[t] = NULL;
    f->kinds[t] = NULL;
  }
  for (size_t i = 0; i < f->n_moves; i++)
    free(f->move_names[i]);
  f->n_moves = f->n_copies = 0;
  for (size_t i = 0; i < x->n_v; i++) {
    x->v[i].n_gaps = 0;
    x->v[i].first = x->v[i].orig_first;
    x->v[i].last = x->v[i].orig_last;
  }
}

static int cmp_copy(const void *a, const void *b) {
  const nnmem_fit_copy_t *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->done != y->done) return x->done < y->done ? -1 : 1;
  if (x->dir != y->dir) return x->dir < y->dir ? -1 : 1;
  if (x->dev_buffer != y->dev_buffer)
    return x->dev_buffer < y->dev_buffer ? -1 : 1;
  return x->host_buffer < y->host_buffer ? -1 : x->host_buffer > y->host_buffer;
}

/* Builds every tier's problem from the moves applied so far and plans it;
 * NNMEM_ERR_CAPACITY when the main tier does not fit the limit. */
nnmem_status_t nnmem__fit_build_round(fitter_t *x, uint32_t ahead,
                                  nnmem_interval_t *scratch) {
  nnmem_fit_t *f = x->f;
  reset_round(x);
  nnmem_status_t st = NNMEM_OK;
  for (uint32_t t = 0; t < f->dev.n_tiers && st == NNMEM_OK; t++)
    st = nnmem_problem_create(&f->problems[t]);
  for (size_t i = 0; i < x->n_c && st == NNMEM_OK; i++) {
    cand_t *c = &x->cands[i];
    if (!c->applied) continue;
    if (c->kind == NNMEM_MOVE_STREAM)
      st = place_streamed(x, &x->v[c->v], c->ahead, c->at, scratch);
    else
      st = place_offload(x, c, &x->v[c->v], c->at);
  }
  for (uint32_t t = 0; t + 1 < f->dev.n_tiers && st == NNMEM_OK; t++)
    st = build_tier(x, t);
  if (st != NNMEM_OK) return st;
  for (size_t i = 0; i < f->n_copies; i++)
    f->copies[i].dev_buffer = x->v[f->copies[i].dev_buffer].tbuf;
  /* the links serve copies in issue order; copies issued at one step go
   * earliest deadline first, so a later-needed copy never delays one
   * needed sooner that was issued with it */
  if (f->n_copies > 1)
    qsort(f->copies, f->n_copies, sizeof *f->copies, cmp_copy);
  st = plan_tier(x, x->main, f->limit);
  for (uint32_t t = 0; t < f->dev.n_tiers && st == NNMEM_OK; t++)
    if (t != x->main)
      st = plan_tier(x, t,
                     t + 1 < f->dev.n_tiers ? f->dev.tiers[t].capacity : 0);
  return st;
}

static nnmem_status_t no_fit(fitter_t *x, const char *why) {
  nnmem_op_info_t oi;
  const char *op =
      nnmem_graph_op(x->g, x->f->min_op, &oi) == NNMEM_OK ? oi.name : "?";
  return nnmem__diag(
      x->diag, NNMEM_ERR_CAPACITY,
      "%s %llu B on tier '%s': the smallest device footprint for this model "
      "is %llu bytes (op %s needs its inputs, outputs and workspace at once)",
      why, (unsigned long long)x->f->limit, x->f->dev.tiers[x->main].name,
      (unsigned long long)x->f->min_footprint, op);
}

/* Steps 5-6: relieve the profile, plan, lower the target on failure. */
static nnmem_status_t fit_rounds(fitter_t *x, uint32_t ahead) {
  size_t wcap = 0;
  for (size_t i = 0; i < x->n_v; i++)
    if (x->v[i].n_acc > wcap) wcap = x->v[i].n_acc;
  nnmem_interval_t *scratch = malloc((wcap + 1) * sizeof *scratch);
  if (!scratch) return NNMEM_ERR_NOMEM;
  nnmem__fit_build_profile(x);
  nnmem_status_t st = NNMEM_ERR_CAPACITY;
  double target = (double)x->f->limit;
  for (int round = 0; round < 40 && st == NNMEM_ERR_CAPACITY; round++) {
    int r;
    while ((r = nnmem__fit_relieve_peak(x, (uint64_t)target, ahead, scratch)) ==
           1) {
    }
    if (r == 0) nnmem__fit_prune_moves(x, (uint64_t)target, ahead, scratch);
    uint64_t peak = 0;
    for (uint64_t s = 0; s < x->S; s++)
      if (x->prof[s] > peak) peak = x->prof[s];
    if (peak > x->f->limit && nnmem__fit_halve_leads(x, ahead, scratch))
      continue;
    if (peak > x->f->limit) break; /* nothing more can move */
    st = nnmem__fit_build_round(x, ahead, scratch);
    if (st == NNMEM_ERR_CAPACITY && r < 0 &&
        nnmem__fit_halve_leads(x, ahead,
                               scratch)) { /* fragmentation: tighter windows */
      r = 0;
      continue;
    }
    if (r < 0 && st == NNMEM_ERR_CAPACITY) break;
    target *= 0.97;
  }
  free(scratch);
  if (st == NNMEM_ERR_CAPACITY)
    return no_fit(x, "no placement found under the limit of");
  return st;
}

nnmem_status_t nnmem__fit_setup(fitter_t *x, const nnmem_fit_config_t *cfg) {
  nnmem_fit_t *f = x->f;
  nnmem_liveness_config_t lc;
  nnmem_liveness_config_init(&lc);
  lc.alignment = f->dev.tiers[x->main].alignment;
  size_t nops = nnmem_graph_op_count(x->g);
  f->order = malloc((nops ? nops : 1) * sizeof *f->order);
  if (!f->order) return NNMEM_ERR_NOMEM;
  nnmem_status_t st = NNMEM_OK;
  if (cfg->order)
    memcpy(f->order, cfg->order, nops * sizeof *f->order);
  else if (cfg->order_memory)
    st = nnmem_graph_order_memory(x->g, NULL, f->order, NULL, x->diag);
  else
    st = nnmem_graph_schedule(x->g, f->order, x->diag);
  if (st != NNMEM_OK) return st;
  lc.order = f->order;
  st = nnmem_liveness_analyze(x->g, &lc, &x->live, x->diag);
  if (st != NNMEM_OK) return st;
  x->S = f->steps = nnmem_liveness_steps(x->live);
  x->op_s = calloc(x->S + 1, sizeof *x->op_s);
  x->win_s = x->op_s;
  x->op_flops = calloc(x->S + 1, sizeof *x->op_flops);
  x->op_bytes = calloc(x->S + 1, sizeof *x->op_bytes);
  x->op_extra = calloc(x->S + 1, sizeof *x->op_extra);
  x->prof = calloc(x->S + 1, sizeof *x->prof);
  x->prof_before = calloc(x->S + 1, sizeof *x->prof_before);
  if (!x->op_s || !x->prof || !x->prof_before || !x->op_flops ||
      !x->op_bytes || !x->op_extra)
    return NNMEM_ERR_NOMEM;
  return NNMEM_OK;
}

void nnmem__fitter_free(fitter_t *x) {
  for (size_t i = 0; i < x->n_v; i++) {
    free(x->v[i].acc);
    free(x->v[i].gaps);
    free(x->v[i].own_id);
  }
  free(x->v);
  if (x->win_s != x->op_s) free(x->win_s);
  free(x->op_s);
  free(x->op_flops);
  free(x->op_bytes);
  free(x->op_extra);
  free(x->prof);
  free(x->prof_before);
  free(x->cands);
  free(x->base);
  free(x->split_w);
  free(x->part_v);
  nnmem_liveness_destroy(x->live);
}

static void free_accesses(nnmem_fit_t *f) {
  free(f->acc), free(f->acc_start), free(f->init), free(f->final);
  f->acc = f->init = f->final = NULL;
  f->acc_start = NULL;
  f->n_init = f->n_final = 0;
}

/* Once values sit on on-chip tiers the ops that access them run faster
 * (onchip_times) and the main tier holds fewer bytes: the prefetch leads
 * were chosen for slower ops and a fuller tier, so they are chosen again
 * (fit_leads.c) with the new op times and profile; the windows of the
 * moves keep the op times they were chosen with (win_s). The new leads
 * are kept when the exposed time does not grow, else the ones before.
 * The accesses are rebuilt for the tier buffers of the final round. */
static nnmem_status_t onchip_leads(fitter_t *x, uint32_t ahead,
                                   const int64_t *wval) {
  int onchip = 0;
  for (size_t i = 0; i < x->n_v && !onchip; i++)
    onchip = x->v[i].tier < x->main && x->v[i].n_acc;
  if (!onchip) return NNMEM_OK;
  x->win_s = malloc((x->S + 1) * sizeof *x->win_s);
  uint64_t *lead = malloc((2 * x->n_v + 1) * sizeof *lead);
  size_t wcap = 0;
  for (size_t i = 0; i < x->n_v; i++)
    if (x->v[i].n_acc > wcap) wcap = x->v[i].n_acc;
  nnmem_interval_t *w = malloc((wcap + 1) * sizeof *w);
  if (!x->win_s || !lead || !w) {
    free(lead), free(w);
    return NNMEM_ERR_NOMEM;
  }
  memcpy(x->win_s, x->op_s, (x->S + 1) * sizeof *x->win_s);
  nnmem_status_t st = onchip_times(x);
  if (st != NNMEM_OK) {
    free(lead), free(w);
    return st;
  }
  st = nnmem__fit_compute_costs(x);
  if (st != NNMEM_OK) {
    free(lead), free(w);
    return st;
  }
  double before = x->f->costs.exposed_s;
  for (size_t i = 0; i < x->n_v; i++)
    lead[2 * i] = x->v[i].min_lead, lead[2 * i + 1] = x->v[i].pace_lead;
  x->skip_alone = 1;
  st = nnmem__fit_alap_leads(x, ahead);
  x->skip_alone = 0;
  if (st == NNMEM_OK) st = nnmem__fit_compute_costs(x);
  if (st == NNMEM_OK && x->f->costs.exposed_s > before) {
    for (size_t i = 0; i < x->n_v; i++)
      x->v[i].min_lead = lead[2 * i], x->v[i].pace_lead = lead[2 * i + 1];
    nnmem__fit_rebuild_profile(x, ahead, w);
    st = nnmem__fit_build_round(x, ahead, w);
  }
  free(lead);
  free(w);
  free_accesses(x->f);
  return st == NNMEM_OK ? build_accesses(x, wval) : st;
}

static nnmem_status_t fit_main(fitter_t *x, uint32_t ahead) {
  nnmem_fit_t *f = x->f;
  int64_t *wval = NULL;
  nnmem_status_t st = nnmem__fit_setup(x, x->cfg);
  if (st == NNMEM_OK) st = nnmem__fit_values(x, &wval);
  if (st == NNMEM_OK) st = min_footprint(x);
  if (st == NNMEM_OK) {
    nnmem__fit_build_profile(x);
    for (uint64_t s = 0; s < x->S; s++)
      if (x->prof[s] > f->unconstrained_peak)
        f->unconstrained_peak = x->prof[s];
  }
  if (st == NNMEM_OK && f->limit < f->min_footprint)
    st = no_fit(x, "does not fit: limit");
  if (st == NNMEM_OK) st = nnmem__fit_make_cands(x, ahead);
  if (st == NNMEM_OK) st = fit_rounds(x, ahead);
  if (st == NNMEM_OK) st = nnmem__fit_alap_leads(x, ahead);
  if (st == NNMEM_OK) st = place_onchip(x, ahead);
  if (st == NNMEM_OK) st = build_accesses(x, wval);
  if (st == NNMEM_OK) st = onchip_leads(x, ahead, wval);
  if (st == NNMEM_OK) st = nnmem__fit_compute_costs(x);
  if (st == NNMEM_OK) { /* the op times travel with the fit (plan JSON) */
    if (x->win_s == x->op_s) x->win_s = NULL;
    f->op_s = x->op_s;
    x->op_s = NULL;
  }
  free(wval);
  return st;
}

/* One fit whose moves are chosen with stream windows of at most `ahead`
 * steps (alap_leads lengthens them afterwards where memory allows). */
static nnmem_status_t fit_once(const nnmem_graph_t *g, const nnmem_device_t *d,
                               uint64_t limit, const nnmem_fit_config_t *cfg,
                               uint32_t ahead, nnmem_fit_t **out,
                               nnmem_diag_t *diag) {
  nnmem_fit_t *f = calloc(1, sizeof *f);
  if (!f) return nnmem__diag(diag, NNMEM_ERR_NOMEM, "fit: out of memory");
  f->dev = *d;
  fitter_t x;
  memset(&x, 0, sizeof x);
  x.g = g;
  x.cfg = cfg;
  x.f = f;
  x.diag = diag;
  x.main = nnmem_device_main_tier(d);
  f->limit = !limit                     ? d->tiers[x.main].capacity
             : limit > NNMEM_FIT_LIMIT_MAX ? NNMEM_FIT_LIMIT_MAX
                                           : limit;
  x.slice_bytes = nnmem__fit_slice_bytes(cfg, f->limit);
  f->graph_digest = nnmem_graph_digest(g);
  f->model_name = nnmem__strdup(nnmem_graph_name(g) ? nnmem_graph_name(g) : "");
  nnmem_status_t st = f->model_name ? fit_main(&x, ahead) : NNMEM_ERR_NOMEM;
  nnmem__fitter_free(&x);
  if (st != NNMEM_OK) {
    if (st == NNMEM_ERR_NOMEM && diag && !diag->message[0])
      nnmem__diag(diag, st, "fit: out of memory");
    nnmem_fit_destroy(f);
    return st;
  }
  *out = f;
  return NNMEM_OK;
}

/* The moves chosen with windows of one step move about the fewest bytes
 * (a window held for a prefetch must be paid for by moving other bytes);
 * longer windows leave room for longer prefetches but may move more.
 * Each window bound below is fitted, and a fit replaces the best so far
 * when it is no worse in both bytes and exposed time (better in one), or
 * when it moves at most 5 % more bytes than the fewest seen and either
 * cuts the exposed time by over 5 % or saves more exposed time than its
 * extra bytes take on the main tier's link (light_resnet50 at 25 % on
 * edge-npu: windows of 12 steps exposed 12.994 ms against 13.383 ms for
 * 96 more bytes, 24 ns of link, and were dropped for them).
 * cfg->max_ahead fits once with that bound. */
static const uint32_t fit_aheads[] = {1, 4, 12};
#define FIT_SLACK 0.05

static int fit_better(const nnmem_fit_t *b, const nnmem_fit_t *a,
                      uint64_t fewest) {
  double eb = b->costs.exposed_s, ea = a->costs.exposed_s;
  uint64_t bb = b->costs.transfer_bytes, ba = a->costs.transfer_bytes;
  if (bb <= ba && eb <= ea && (bb < ba || eb < ea)) return 1;
  if ((double)bb > (1 + FIT_SLACK) * (double)fewest || eb >= ea) return 0;
  if (eb < (1 - FIT_SLACK) * ea) return 1;
  double link = b->dev.tiers[nnmem_device_main_tier(&b->dev)].link_bandwidth;
  return ea - eb > (double)(bb - ba) / link; /* bb > ba here */
}

/* The fits over the window bounds; with `any`, the first that fits (the
 * smallest-limit search asks only whether some fit exists). */
static nnmem_status_t fit_best(const nnmem_graph_t *g, const nnmem_device_t *d,
                               uint64_t limit, const nnmem_fit_config_t *cfg,
                               int any, nnmem_fit_t **out,
                               nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if (!g || !d || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "nnmem_fit: NULL argument");
  nnmem_diag_t dd = {{0}};
  nnmem_status_t st = nnmem_device_check(d, &dd);
  if (st != NNMEM_OK)
    return nnmem__diag(diag, st, "device '%s': %s", d->name, dd.message);
  nnmem_fit_config_t defaults;
  nnmem_fit_config_init(&defaults);
  if (!cfg) cfg = &defaults;
  double t0 = nnmem__now();
  nnmem_fit_t *best = NULL;
  nnmem_status_t first = NNMEM_OK;
  nnmem_diag_t first_diag = {{0}};
  uint64_t fewest = UINT64_MAX;
  size_t n = cfg->max_ahead ? 1 : sizeof fit_aheads / sizeof *fit_aheads;
  for (size_t i = 0; i < n; i++) {
    nnmem_fit_t *f = NULL;
    nnmem_diag_t di = {{0}};
    st = fit_once(g, d, limit, cfg, cfg->max_ahead ? cfg->max_ahead
                                                   : fit_aheads[i],
                  &f, &di);
    if (i == 0) first = st, first_diag = di;
    if (st != NNMEM_OK && st != NNMEM_ERR_CAPACITY) { /* a real error */
      nnmem_fit_destroy(best);
      if (diag) *diag = di;
      return st;
    }
    if (st != NNMEM_OK) continue;
    if (any) {
      best = f;
      break;
    }
    if (!best || fit_better(f, best, fewest)) {
      nnmem_fit_destroy(best);
      best = f;
    } else {
      nnmem_fit_destroy(f);
      f = NULL;
    }
    if (best->costs.transfer_bytes < fewest) fewest = best->costs.transfer_bytes;
    if (f && f->costs.transfer_bytes < fewest) fewest = f->costs.transfer_bytes;
    if (!best->n_moves || best->costs.exposed_s <= 0) break; /* nothing to gain */
  }
  if (!best && nnmem__fit_splits_on(cfg)) {
    /* split ops plan more, shorter lifetimes; where that fails to place
     * (fragmentation at the tightest limits) the whole ops may not */
    nnmem_fit_config_t whole;
    nnmem__fit_config_copy(&whole, cfg);
    whole.no_split = 1;
    if (fit_best(g, d, limit, &whole, any, &best, NULL) == NNMEM_OK) {
      best->seconds = nnmem__now() - t0;
      *out = best;
      return NNMEM_OK;
    }
  }
  if (!best) {
    if (diag) *diag = first_diag; /* the first attempt's reason */
    return first != NNMEM_OK ? first : st;
  }
  best->seconds = nnmem__now() - t0;
  *out = best;
  return NNMEM_OK;
}

nnmem_status_t nnmem_fit(const nnmem_graph_t *g, const nnmem_device_t *d,
                         uint64_t limit, const nnmem_fit_config_t *cfg,
                         nnmem_fit_t **out, nnmem_diag_t *diag) {
  return fit_best(g, d, limit, cfg, 0, out, diag);
}

void nnmem_fit_destroy(nnmem_fit_t *f) {
  if (!f) return;
  for (uint32_t t = 0; t < NNMEM_DEVICE_MAX_TIERS; t++) {
    nnmem_plan_destroy(f->plans[t]);
    nnmem_problem_destroy(f->problems[t]);
    free(f->kinds[t]);
  }
  for (size_t i = 0; i < f->n_moves; i++)
    free(f->move_names[i]);
  free(f->move_names);
  free(f->moves);
  free(f->copies);
  free(f->acc);
  free(f->acc_start);
  free(f->init);
  free(f->final);
  free(f->order);
  free(f->step);
  free(f->op_s);
  free(f->model_name);
  free(f);
}

uint64_t nnmem_fit_min_footprint(const nnmem_fit_t *f, uint32_t *op_out) {
  if (!f) return 0;
  if (op_out) *op_out = f->min_op;
  return f->min_footprint;
}
const nnmem_device_t *nnmem_fit_device(const nnmem_fit_t *f) {
  return f ? &f->dev : NULL;
}
uint64_t nnmem_fit_limit(const nnmem_fit_t *f) {
  return f ? f->limit : 0;
}
uint64_t nnmem_fit_steps(const nnmem_fit_t *f) {
  return f ? f->steps : 0;
}
const uint32_t *nnmem_fit_order(const nnmem_fit_t *f) {
  return f ? f->order : NULL;
}

uint64_t nnmem_fit_unconstrained_peak(const nnmem_fit_t *f) {
  return f ? f->unconstrained_peak : 0;
}
const nnmem_problem_t *nnmem_fit_tier_problem(const nnmem_fit_t *f,
                                              uint32_t t) {
  return f && t < f->dev.n_tiers ? f->problems[t] : NULL;
}
const nnmem_plan_t *nnmem_fit_tier_plan(const nnmem_fit_t *f, uint32_t t) {
  return f && t < f->dev.n_tiers ? f->plans[t] : NULL;
}
size_t nnmem_fit_copies(const nnmem_fit_t *f, const nnmem_fit_copy_t **out) {
  if (out) *out = f ? f->copies : NULL;
  return f ? f->n_copies : 0;
}
size_t nnmem_fit_moves(const nnmem_fit_t *f, const nnmem_fit_move_t **out) {
  if (out) *out = f ? f->moves : NULL;
  return f ? f->n_moves : 0;
}
void nnmem_fit_costs(const nnmem_fit_t *f, nnmem_fit_costs_t *out) {
  if (f && out) *out = f->costs;
}
double nnmem_fit_seconds(const nnmem_fit_t *f) {
  return f ? f->seconds : 0;
}

nnmem_status_t nnmem_fit_smallest_limit(const nnmem_graph_t *g,
                                        const nnmem_device_t *d,
                                        const nnmem_fit_config_t *cfg,
                                        uint64_t *limit_out,
                                        nnmem_diag_t *diag) {
  if (!g || !d || !limit_out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_fit_smallest_limit: NULL argument");
  nnmem_fit_t *f = NULL;
  nnmem_status_t st = fit_best(g, d, UINT64_MAX / 4, cfg, 1, &f, diag);
  if (st != NNMEM_OK) return st;
  uint64_t lo = f->min_footprint, hi = f->unconstrained_peak;
  nnmem_fit_destroy(f);
  f = NULL;
  /* the default slice size shrinks with the limit (down to
   * NNMEM_FIT_SLICE_BYTES) and a split op's footprint with it: the
   * footprint with the smallest slices is what no limit goes below */
  nnmem_fit_config_t small;
  nnmem_fit_config_init(&small);
  if (cfg) nnmem__fit_config_copy(&small, cfg);
  if (nnmem__fit_slice_bytes(&small, UINT64_MAX / 4) != 0 &&
      small.slice_bytes == 0) {
    small.slice_bytes = NNMEM_FIT_SLICE_BYTES;
    st = fit_best(g, d, UINT64_MAX / 4, &small, 1, &f, diag);
    if (st != NNMEM_OK) return st;
    if (f->min_footprint < lo) lo = f->min_footprint;
    nnmem_fit_destroy(f);
  }
  if (hi < lo) hi = lo;
  /* invariant: hi fits; below lo nothing does */
  while (hi - lo > 4096 && hi - lo > hi / 100) {
    uint64_t mid = lo + (hi - lo) / 2;
    st = fit_best(g, d, mid, cfg, 1, &f, NULL);
    nnmem_fit_destroy(f);
    f = NULL;
    if (st == NNMEM_OK)
      hi = mid;
    else if (st == NNMEM_ERR_CAPACITY)
      lo = mid + 1;
    else
      return nnmem__diag(diag, st, "fit: %s", nnmem_status_str(st));
  }
  if (lo < hi && fit_best(g, d, lo, cfg, 1, &f, NULL) == NNMEM_OK) hi = lo;
  nnmem_fit_destroy(f);
  *limit_out = hi;
  return NNMEM_OK;
}

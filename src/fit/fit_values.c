/* fit_values.c - the fitter's step 2 (fit.c): the values it moves and
 * places, and the steps that access each.
 *
 * 1. Every liveness buffer (activations, workspace) with its gaps and
 *    sub-buffer relations.
 * 2. Every weight read by some op, live [0, S). A weight of at least two
 *    slices (x->slice_bytes: nnmem__fit_slice_bytes) whose bytes are whole
 *    rows of dim 0 becomes k values, the slices: rows [i * R / k, (i + 1)
 *    * R / k), named "NAME[r0:r1]", one after another in x->v, the first
 *    holding k (fv_t.n_slices). Views of a weight share its values.
 * 3. With conv_algorithm im2col, one column buffer per Conv, live [s, s+1).
 * 4. The accesses: for each value the sorted steps that read or write it
 *    (a liveness buffer also at first and last - 1: inputs are written
 *    before step 0, outputs read after the last step). Steps are the
 *    parts of split ops (fit_split.c, called first: lifetimes in op steps
 *    map to steps): part i of a split op reads slice i of its split
 *    weight and every other operand; its output rows are their own
 *    values (nnmem__fit_part_values). An op that is not split reads every
 *    slice of its weights, each slice past the first adding the device's
 *    op overhead to the op's time (a kernel launch per slice).
 * Invariants: a value's accesses are sorted and unique; the slices of a
 * weight add up to its bytes and cover its rows in order.
 * Complexity: O(T^2) in the worst case for T tensors (views of weights look
 * their weight up by offset), O(A log A) for A accesses otherwise.
 * Thread-safety: one fitter. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "fit/fitter.h"

/* ---- step 2: values and accesses ---------------------------------------- */

uint64_t nnmem__fit_slice_bytes(const nnmem_fit_config_t *cfg,
                                uint64_t limit) {
  uint64_t sb = cfg->size == 0 || cfg->size >= offsetof(nnmem_fit_config_t,
                                                        slice_bytes) +
                                                   sizeof cfg->slice_bytes
                    ? cfg->slice_bytes
                    : 0; /* a caller built before the field: default */
  if (sb == UINT64_MAX) return 0;
  if (sb) return sb;
  /* default: a slice is a small share of the limit (what a copy holds
   * before its bytes arrive), never below NNMEM_FIT_SLICE_BYTES */
  uint64_t share = limit / NNMEM_FIT_SLICE_SHARE;
  return share > NNMEM_FIT_SLICE_BYTES ? share : NNMEM_FIT_SLICE_BYTES;
}

static nnmem_status_t add_value(fitter_t *x, const char *id, uint64_t size,
                                uint64_t align, uint64_t first, uint64_t last,
                                int kind, size_t *idx) {
  if (nnmem__grow((void **)&x->v, &x->cap_v, x->n_v + 1, sizeof *x->v))
    return NNMEM_ERR_NOMEM;
  fv_t *v = &x->v[x->n_v];
  memset(v, 0, sizeof *v);
  v->id = id;
  v->size = size;
  v->align = align ? align : 1;
  uint64_t a = nnmem__max_u64(v->align, x->f->dev.tiers[x->main].alignment);
  if (nnmem__align_up(size, a, &v->asize)) return NNMEM_ERR_OVERFLOW;
  v->first = first;
  v->last = last;
  v->kind = kind;
  v->parent = -1;
  v->tier = x->main;
  *idx = x->n_v++;
  return NNMEM_OK;
}

static nnmem_status_t add_access(fv_t *v, uint64_t s) {
  if (v->n_acc && v->acc[v->n_acc - 1] == s) return NNMEM_OK;
  if (nnmem__grow((void **)&v->acc, &v->cap_acc, v->n_acc + 1, sizeof *v->acc))
    return NNMEM_ERR_NOMEM;
  /* steps arrive in order except the last-1 marks; keep sorted, unique */
  size_t i = v->n_acc;
  while (i > 0 && v->acc[i - 1] > s)
    i--;
  if (i > 0 && v->acc[i - 1] == s) return NNMEM_OK;
  memmove(v->acc + i + 1, v->acc + i, (v->n_acc - i) * sizeof *v->acc);
  v->acc[i] = s;
  v->n_acc++;
  return NNMEM_OK;
}

/* Value of tensor t: its liveness buffer, or the weight value (by weight
 * offset; views of weights share it); -1 when none. */
int64_t nnmem__fit_value_of(const fitter_t *x, const int64_t *wval,
                             uint32_t t) {
  nnmem_tensor_live_t tl;
  if (nnmem_liveness_tensor(x->live, t, &tl) != NNMEM_OK) return -1;
  if (tl.buffer != NNMEM_NO_BUFFER) return tl.buffer;
  return wval[t];
}

static nnmem_status_t liveness_values(fitter_t *x) {
  const nnmem_problem_t *p = nnmem_liveness_problem(x->live);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t n = nnmem_problem_count(p);
  for (size_t i = 0; i < n; i++) {
    size_t idx;
    int kind = nnmem_liveness_buffer_kind(x->live, i) == NNMEM_BUFFER_WORKSPACE
                   ? FIT_KIND_WORKSPACE
                   : FIT_KIND_ACTIVATION;
    nnmem_status_t st = add_value(
        x, nnmem_problem_id(p, i), b[i].size, b[i].align,
        nnmem__fit_step_of(x, b[i].first), nnmem__fit_step_of(x, b[i].last),
        kind, &idx);
    if (st != NNMEM_OK) return st;
    if (nnmem_problem_gaps(p, i, NULL)) x->v[idx].has_gaps = 1;
  }
  for (size_t i = 0; i < n; i++) {
    size_t q;
    uint64_t rel;
    if (nnmem_problem_parent(p, i, &q, &rel) == NNMEM_OK) {
      x->v[i].parent = (int64_t)q;
      x->v[i].rel = rel;
      x->v[q].has_children = 1;
    }
    nnmem_status_t st = add_access(&x->v[i], x->v[i].first);
    if (st == NNMEM_OK) st = add_access(&x->v[i], x->v[i].last - 1);
    if (st != NNMEM_OK) return st;
  }
  return NNMEM_OK;
}

/* The values of weight ti: one, or its slices along dim 0 (rows [r_i,
 * r_{i+1}) of k slices, r_i = i * rows / k), each a value of its own named
 * "name[r_i:r_{i+1}]", in a row of x->v; *first gets the first. An op
 * reads a sliced weight as its slices (a kernel per slice: Conv output
 * channels, Gemm/MatMul rows), each launch costing the device's op
 * overhead (op_accesses). */
static nnmem_status_t weight_slices(fitter_t *x, const nnmem_tensor_info_t *ti,
                                    size_t *first) {
  uint64_t k = nnmem__fit_slice_count(x, ti);
  uint64_t rows = ti->rank ? (uint64_t)ti->shape[0] : 1;
  for (uint64_t i = 0; i < k; i++) {
    uint64_t r0 = i * rows / k, r1 = (i + 1) * rows / k;
    uint64_t bytes = k == 1 ? ti->bytes : (r1 - r0) * (ti->bytes / rows);
    size_t idx;
    nnmem_status_t st = add_value(x, ti->name, bytes, ti->align, 0, x->S,
                                  FIT_KIND_WEIGHT, &idx);
    if (st != NNMEM_OK) return st;
    if (i == 0) *first = idx, x->v[idx].n_slices = (uint32_t)k;
    if (k == 1) continue;
    size_t len = strlen(ti->name) + 48;
    char *id = malloc(len);
    if (!id) return NNMEM_ERR_NOMEM;
    snprintf(id, len, "%s[%llu:%llu]", ti->name, (unsigned long long)r0,
             (unsigned long long)r1);
    x->v[idx].id = x->v[idx].own_id = id;
  }
  return NNMEM_OK;
}

/* Weight values, keyed by weight offset (views share); wval[t] per tensor
 * (the first slice of a sliced weight). */
static nnmem_status_t weight_values(fitter_t *x, int64_t *wval) {
  size_t nt = nnmem_graph_tensor_count(x->g);
  for (uint32_t t = 0; t < nt; t++) {
    nnmem_tensor_info_t ti;
    nnmem_tensor_live_t tl;
    wval[t] = -1;
    if (nnmem_graph_tensor(x->g, t, &ti) != NNMEM_OK ||
        nnmem_liveness_tensor(x->live, t, &tl) != NNMEM_OK)
      return NNMEM_ERR_INVALID;
    if ((ti.kind != NNMEM_TENSOR_WEIGHT && ti.kind != NNMEM_TENSOR_CONSTANT) ||
        ti.n_consumers == 0 || ti.bytes == 0)
      continue;
    size_t idx = 0;
    nnmem_status_t st = weight_slices(x, &ti, &idx);
    if (st != NNMEM_OK) return st;
    wval[t] = (int64_t)idx;
  }
  /* views of weights: the weight with the same offset */
  for (uint32_t t = 0; t < nt; t++) {
    nnmem_tensor_live_t tl, tw;
    if (wval[t] >= 0 || nnmem_liveness_tensor(x->live, t, &tl) != NNMEM_OK ||
        tl.buffer != NNMEM_NO_BUFFER)
      continue;
    for (uint32_t u = 0; u < nt; u++)
      if (wval[u] >= 0 && nnmem_liveness_tensor(x->live, u, &tw) == NNMEM_OK &&
          tw.weight_offset == tl.weight_offset) {
        wval[t] = wval[u];
        break;
      }
  }
  return NNMEM_OK;
}

/* The cost of part q of k of op step o (k = 1: the whole op): flops / k,
 * bytes: every operand but the split weight and the output whole (input
 * 0: 1/k of it when the parts split the inner dim), slice q of the
 * weight, the part's output rows (ACCUM: the whole output, read and
 * written past part 0); the roofline plus the device's op overhead
 * (fit_split.c, step 3). */
static void part_cost(fitter_t *x, uint64_t o, uint64_t q,
                      const nnmem_op_cost_t *oc, uint64_t w_bytes,
                      uint64_t y_bytes, uint64_t a_bytes, uint64_t slice,
                      uint64_t *ws) {
  uint64_t s = x->base[o] + q, k = x->base[o + 1] - x->base[o];
  const nnmem_device_t *d = &x->f->dev;
  double bytes = (double)oc->bytes, flops = oc->flops;
  if (k > 1) {
    const fit_step_t *st = &x->f->step[s];
    double y = (double)y_bytes;
    bytes -= (double)w_bytes + y;
    bytes += (double)slice;
    if (st->inner) /* its block of input 0 (K columns / input channels) */
      bytes -= (double)a_bytes * (1.0 - 1.0 / (double)k);
    if (st->mode == FIT_SPLIT_PARTS)
      bytes += x->v[x->part_v[o] + (int64_t)q].size;
    else
      bytes += q ? 2 * y : y;
    flops /= (double)k;
  }
  double tc = flops / d->compute_rate;
  double tm = bytes / d->tiers[x->main].bandwidth;
  x->op_s[s] = (tc > tm ? tc : tm) + d->op_overhead_s;
  x->op_flops[s] = flops;
  x->op_bytes[s] = bytes;
  ws[s] = oc->workspace;
}

/* Bytes of tensor t in *out; nonzero when t is not a tensor. */
static int tensor_bytes(const fitter_t *x, uint32_t t, uint64_t *out) {
  nnmem_tensor_info_t ti;
  if (nnmem_graph_tensor(x->g, t, &ti) != NNMEM_OK) return 1;
  *out = ti.bytes;
  return 0;
}

/* NNMEM_ERR_INVALID naming step s's op when its time is over
 * NNMEM_FIT_OP_SECONDS_MAX (or NaN): a fitted plan cannot hold it. The
 * slowest tier it may read is named: the main tier or an on-chip one. */
nnmem_status_t nnmem__fit_op_time_check(fitter_t *x, uint64_t s) {
  if (x->op_s[s] <= NNMEM_FIT_OP_SECONDS_MAX) return NNMEM_OK;
  const nnmem_device_t *d = &x->f->dev;
  uint32_t slow = x->main;
  for (uint32_t t = 0; t < x->main; t++)
    if (d->tiers[t].bandwidth < d->tiers[slow].bandwidth) slow = t;
  nnmem_op_info_t oi;
  const uint32_t *order = nnmem_liveness_order(x->live);
  if (nnmem_graph_op(x->g, order[x->f->step[s].op_step], &oi) != NNMEM_OK)
    return NNMEM_ERR_INVALID;
  return nnmem__diag(
      x->diag, NNMEM_ERR_INVALID,
      "op '%s' (%s): the cost model gives %.3g s on device '%s' (%.3g FLOP "
      "at compute_rate %.3g FLOP/s, %.3g B, %s bandwidth %.3g B/s), over "
      "%.0e s: the device's rates are not a device's",
      oi.name, oi.type, x->op_s[s], d->name, x->op_flops[s], d->compute_rate,
      x->op_bytes[s], d->tiers[slow].name, d->tiers[slow].bandwidth,
      NNMEM_FIT_OP_SECONDS_MAX);
}

/* Accesses of every op (each part of a split op: every operand but the
 * split weight, of which its slice), the op times, im2col sizes per step
 * (ws). */
static nnmem_status_t op_accesses(fitter_t *x, const int64_t *wval,
                                  uint64_t *ws) {
  const uint32_t *order = nnmem_liveness_order(x->live);
  for (uint64_t o = 0; o < x->n_ops; o++) {
    nnmem_op_info_t oi;
    nnmem_op_cost_t oc;
    if (nnmem_graph_op(x->g, order[o], &oi) != NNMEM_OK ||
        nnmem_op_cost(x->g, order[o], &x->f->dev, &oc) != NNMEM_OK)
      return NNMEM_ERR_INVALID;
    uint64_t s0 = x->base[o], k = x->base[o + 1] - s0, w_bytes = 0,
             y_bytes = 0, a_bytes = 0;
    int64_t sw = x->split_w[o];
    if (k > 1 && (tensor_bytes(x, (uint32_t)sw, &w_bytes) ||
                  tensor_bytes(x, oi.inputs[0], &a_bytes) ||
                  tensor_bytes(x, oi.outputs[0], &y_bytes)))
      return NNMEM_ERR_INVALID;
    for (uint64_t q = 0; q < k; q++) {
      uint64_t s = s0 + q, slice = 0;
      for (uint32_t i = 0; i < oi.n_inputs + oi.n_outputs; i++) {
        uint32_t t =
            i < oi.n_inputs ? oi.inputs[i] : oi.outputs[i - oi.n_inputs];
        int64_t vi = nnmem__fit_value_of(x, wval, t);
        if (vi < 0) continue;
        uint32_t n = x->v[vi].n_slices > 1 ? x->v[vi].n_slices : 1;
        if (i < oi.n_inputs && (int64_t)t == sw) { /* its slice only */
          slice = x->v[vi + (int64_t)q].size;
          nnmem_status_t st = add_access(&x->v[vi + (int64_t)q], s);
          if (st != NNMEM_OK) return st;
          continue;
        }
        if (n > 1 && i < oi.n_inputs) /* a launch per slice */
          x->op_extra[s] += (double)(n - 1) * x->f->dev.op_overhead_s;
        for (uint32_t j = 0; j < n; j++) {
          nnmem_status_t st = add_access(&x->v[vi + j], s);
          if (st != NNMEM_OK) return st;
        }
      }
      part_cost(x, o, q, &oc, w_bytes, y_bytes, a_bytes, slice, ws);
      x->op_s[s] += x->op_extra[s];
      nnmem_status_t st = nnmem__fit_op_time_check(x, s);
      if (st != NNMEM_OK) return st;
    }
  }
  /* liveness workspace buffers are accessed at their one step (first) */
  return NNMEM_OK;
}

/* One column buffer per Conv, live through all its parts. */
static nnmem_status_t im2col_values(fitter_t *x, const uint64_t *ws_bytes) {
  const uint32_t *order = nnmem_liveness_order(x->live);
  for (uint64_t o = 0; o < x->n_ops; o++) {
    uint64_t s = x->base[o], e = x->base[o + 1];
    if (!ws_bytes[s]) continue;
    nnmem_op_info_t oi;
    if (nnmem_graph_op(x->g, order[o], &oi) != NNMEM_OK)
      return NNMEM_ERR_INVALID;
    size_t len = strlen(oi.name) + 8, idx;
    char *id = malloc(len);
    if (!id) return NNMEM_ERR_NOMEM;
    snprintf(id, len, "%s:im2col", oi.name);
    nnmem_status_t st =
        add_value(x, id, ws_bytes[s], 1, s, e, FIT_KIND_WORKSPACE, &idx);
    if (st != NNMEM_OK) {
      free(id);
      return st;
    }
    x->v[idx].own_id = id;
    for (uint64_t q = s; q < e; q++)
      if ((st = add_access(&x->v[idx], q)) != NNMEM_OK) return st;
  }
  return NNMEM_OK;
}


nnmem_status_t nnmem__fit_values(fitter_t *x, int64_t **wval_out) {
  size_t nt = nnmem_graph_tensor_count(x->g);
  int64_t *wval = malloc((nt ? nt : 1) * sizeof *wval);
  uint64_t *ws = calloc(x->S + 1, sizeof *ws);
  nnmem_status_t st = wval && ws ? NNMEM_OK : NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) st = nnmem__fit_split_ops(x);
  if (st == NNMEM_OK && x->S > x->n_ops) { /* a column per step */
    free(ws);
    ws = calloc(x->S + 1, sizeof *ws);
    if (!ws) st = NNMEM_ERR_NOMEM;
  }
  if (st == NNMEM_OK) st = liveness_values(x);
  if (st == NNMEM_OK) st = weight_values(x, wval);
  if (st == NNMEM_OK) st = nnmem__fit_part_values(x);
  if (st == NNMEM_OK) st = op_accesses(x, wval, ws);
  if (st == NNMEM_OK && x->f->dev.conv == NNMEM_CONV_IM2COL)
    st = im2col_values(x, ws);
  free(ws);
  for (size_t i = 0; i < x->n_v; i++) {
    x->v[i].orig_first = x->v[i].first;
    x->v[i].orig_last = x->v[i].last;
  }
  *wval_out = wval;
  return st;
}


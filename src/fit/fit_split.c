/* fit_split.c - operator splitting, the fitter's step 2a (fit.c): an op
 * whose weight is held in slices (fit_values.c) runs as one step per
 * slice, each reading its slice, so a slice need only arrive before its
 * own part runs and may leave after it.
 *
 * 1. Which ops: a Conv, ConvTranspose, Gemm or MatMul with one output
 *    whose input 1 is a weight held in k >= 2 slices (rows of dim 0,
 *    nnmem__fit_slice_count) and whose output is a liveness buffer; not
 *    with cfg->no_split, nor when slices are off.
 * 2. How its parts share the output (fit_step_t.mode):
 *    - FIT_SPLIT_PARTS: dim 0 of the weight is the output's channel /
 *      feature dim and the output rows before it number one (a Conv
 *      [Cout, Cin/g, kh, kw] with batch 1; a Gemm whose weight is [N, K],
 *      K != N, with one output row): part i computes output channels
 *      [r_i, r_{i+1}), a contiguous byte range of the output, and writes
 *      only that range (a sub-buffer of the output's buffer, live at its
 *      part's step: nnmem__fit_part_values).
 *    - FIT_SPLIT_ACCUM otherwise: dim 0 is the inner dim (MatMul B [K, N],
 *      ConvTranspose [Cin, ...], a Gemm weight [K, N]), the layout cannot
 *      tell (a square Gemm weight: the graph does not carry transB), or the
 *      output slice is strided (batch > 1): the parts add partial sums
 *      into the whole output; part 0 writes it, every later part reads and
 *      rewrites it. Either way the whole output lives from the first part.
 * 3. Steps: op step o becomes the steps base[o] .. base[o + 1] - 1; every
 *    lifetime [a, b) in op steps becomes [base[a], base[b]) (liveness
 *    buffers, their gaps), so a value read by op o stays until its last
 *    part. Each part reads every input of the op but the split weight
 *    (of which it reads slice i), costs flops / k and its own bytes (the
 *    other inputs whole - input 0 only its block of 1/k when dim 0 is
 *    provably the inner dim: MatMul, ConvTranspose, a Gemm [K, N] with
 *    K != N - its slice, its output range; with ACCUM the whole output,
 *    twice past part 0) under the roofline, plus the device's op
 *    overhead (a launch per part).
 * Invariants: base[] is increasing with base[0] = 0 and base[n_ops] = S;
 * f->step[s] names op step o for every s in [base[o], base[o + 1]), parts
 * 0 .. k - 1 in order; a part sub-buffer lies inside its output buffer.
 * Also here: nnmem_fit_ops / nnmem_fit_step (what a step runs) and the
 * config helpers the driver's whole-op fallback uses (fit.c).
 * Complexity: O(ops + tensors). Thread-safety: one fitter. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "fit/fitter.h"

uint64_t nnmem__fit_slice_count(const fitter_t *x,
                                const nnmem_tensor_info_t *ti) {
  if (!x->slice_bytes || ti->rank == 0 || ti->shape[0] < 2) return 1;
  uint64_t rows = (uint64_t)ti->shape[0];
  if (ti->bytes % rows || ti->bytes < 2 * x->slice_bytes) return 1;
  uint64_t k = ti->bytes / x->slice_bytes;
  return k < rows ? k : rows;
}

static int is(const char *a, const char *b) { return strcmp(a, b) == 0; }

/* Parts of op `op` (1: whole) and their mode; *w gets the split weight. */
static uint32_t op_parts(const fitter_t *x, uint32_t op, int64_t *w,
                         uint8_t *mode, uint8_t *inner) {
  nnmem_op_info_t oi;
  nnmem_tensor_info_t wt, yt;
  nnmem_tensor_live_t yl;
  *w = -1;
  *mode = FIT_SPLIT_WHOLE;
  *inner = 0;
  if (nnmem_graph_op(x->g, op, &oi) != NNMEM_OK || oi.n_inputs < 2 ||
      oi.n_outputs != 1 || (oi.flags & NNMEM_OP_VIEW))
    return 1;
  int conv = is(oi.type, "Conv"), gemm = is(oi.type, "Gemm");
  if (!conv && !gemm && !is(oi.type, "MatMul") &&
      !is(oi.type, "ConvTranspose"))
    return 1;
  if (nnmem_graph_tensor(x->g, oi.inputs[1], &wt) != NNMEM_OK ||
      (wt.kind != NNMEM_TENSOR_WEIGHT && wt.kind != NNMEM_TENSOR_CONSTANT) ||
      nnmem_graph_tensor(x->g, oi.outputs[0], &yt) != NNMEM_OK ||
      nnmem_liveness_tensor(x->live, oi.outputs[0], &yl) != NNMEM_OK ||
      yl.buffer == NNMEM_NO_BUFFER || oi.inputs[0] == oi.inputs[1])
    return 1;
  uint64_t k = nnmem__fit_slice_count(x, &wt);
  if (k < 2 || k > UINT32_MAX) return 1;
  uint64_t rows = (uint64_t)wt.shape[0];
  int channel_dim0 =
      (conv && yt.rank >= 2 && yt.shape[1] == wt.shape[0]) ||
      (gemm && wt.rank == 2 && yt.rank == 2 && yt.shape[1] == wt.shape[0] &&
       wt.shape[1] != wt.shape[0]);
  int contiguous = yt.rank >= 2 && yt.shape[0] == 1 && yt.bytes % rows == 0;
  *mode = channel_dim0 && contiguous ? FIT_SPLIT_PARTS : FIT_SPLIT_ACCUM;
  /* dim 0 is provably the inner dim: a part reads its block of input 0 */
  *inner = is(oi.type, "MatMul") || is(oi.type, "ConvTranspose") ||
           (gemm && wt.rank == 2 && yt.rank == 2 &&
            yt.shape[1] == wt.shape[1] && wt.shape[0] != wt.shape[1]);
  *w = oi.inputs[1];
  return (uint32_t)k;
}

static nnmem_status_t resize(double **a, uint64_t n) {
  free(*a);
  *a = calloc(n + 1, sizeof **a);
  return *a ? NNMEM_OK : NNMEM_ERR_NOMEM;
}

nnmem_status_t nnmem__fit_split_ops(fitter_t *x) {
  nnmem_fit_t *f = x->f;
  const uint32_t *order = nnmem_liveness_order(x->live);
  uint64_t n = x->n_ops = f->ops = x->S;
  x->base = malloc((n + 1) * sizeof *x->base);
  x->split_w = malloc((n + 1) * sizeof *x->split_w);
  x->part_v = malloc((n + 1) * sizeof *x->part_v);
  uint32_t *k = malloc((n + 1) * sizeof *k);
  uint8_t *mode = malloc(n + 1), *inner = malloc(n + 1);
  nnmem_status_t st = x->base && x->split_w && x->part_v && k && mode &&
                              inner
                          ? NNMEM_OK
                          : NNMEM_ERR_NOMEM;
  nnmem_fit_config_t c; /* the caller's struct may predate no_split */
  nnmem__fit_config_copy(&c, x->cfg);
  int on = !c.no_split && x->slice_bytes;
  uint64_t S = 0;
  for (uint64_t o = 0; o < n && st == NNMEM_OK; o++) {
    x->base[o] = S;
    x->part_v[o] = -1;
    k[o] = on ? op_parts(x, order[o], &x->split_w[o], &mode[o], &inner[o])
              : 1;
    if (k[o] == 1) x->split_w[o] = -1, mode[o] = FIT_SPLIT_WHOLE, inner[o] = 0;
    S += k[o];
  }
  if (st == NNMEM_OK) x->base[n] = S;
  free(f->step);
  f->step = st == NNMEM_OK ? calloc(S + 1, sizeof *f->step) : NULL;
  if (!f->step) st = NNMEM_ERR_NOMEM;
  for (uint64_t o = 0; o < n && st == NNMEM_OK; o++)
    for (uint32_t q = 0; q < k[o]; q++)
      f->step[x->base[o] + q] =
          (fit_step_t){(uint32_t)o, q, k[o], mode[o], inner[o]};
  free(k);
  free(mode);
  free(inner);
  if (st != NNMEM_OK || S == n) return st;
  /* more steps: the per-step arrays grow */
  x->S = f->steps = S;
  if ((st = resize(&x->op_s, S)) || (st = resize(&x->op_flops, S)) ||
      (st = resize(&x->op_bytes, S)) || (st = resize(&x->op_extra, S)))
    return st;
  x->win_s = x->op_s;
  free(x->prof), free(x->prof_before);
  x->prof = calloc(S + 1, sizeof *x->prof);
  x->prof_before = calloc(S + 1, sizeof *x->prof_before);
  return x->prof && x->prof_before ? NNMEM_OK : NNMEM_ERR_NOMEM;
}

/* One value per part of a FIT_SPLIT_PARTS op: bytes [i * Y / R .. ) of
 * the output's buffer for rows [r_i, r_{i+1}) (the slices' rows), a
 * sub-buffer live at its part's step only. */
nnmem_status_t nnmem__fit_part_values(fitter_t *x) {
  const uint32_t *order = nnmem_liveness_order(x->live);
  for (uint64_t o = 0; o < x->n_ops; o++) {
    uint64_t s0 = x->base[o], k = x->base[o + 1] - s0;
    if (k < 2 || x->f->step[s0].mode != FIT_SPLIT_PARTS) continue;
    nnmem_op_info_t oi;
    nnmem_tensor_info_t wt, yt;
    nnmem_tensor_live_t yl;
    if (nnmem_graph_op(x->g, order[o], &oi) != NNMEM_OK ||
        nnmem_graph_tensor(x->g, (uint32_t)x->split_w[o], &wt) != NNMEM_OK ||
        nnmem_graph_tensor(x->g, oi.outputs[0], &yt) != NNMEM_OK ||
        nnmem_liveness_tensor(x->live, oi.outputs[0], &yl) != NNMEM_OK)
      return NNMEM_ERR_INVALID;
    uint64_t rows = (uint64_t)wt.shape[0], row_b = yt.bytes / rows;
    for (uint64_t q = 0; q < k; q++) {
      uint64_t r0 = q * rows / k, r1 = (q + 1) * rows / k;
      if (nnmem__grow((void **)&x->v, &x->cap_v, x->n_v + 1, sizeof *x->v))
        return NNMEM_ERR_NOMEM;
      fv_t *v = &x->v[x->n_v], *y = &x->v[yl.buffer];
      memset(v, 0, sizeof *v);
      size_t len = strlen(y->id) + 48;
      v->own_id = malloc(len);
      if (!v->own_id) return NNMEM_ERR_NOMEM;
      snprintf(v->own_id, len, "%s#%llu", y->id, (unsigned long long)q);
      v->id = v->own_id;
      v->size = (r1 - r0) * row_b;
      v->align = 1;
      v->asize = v->size;
      v->first = s0 + q;
      v->last = s0 + q + 1;
      v->kind = FIT_KIND_ACTIVATION;
      v->parent = (int64_t)yl.buffer;
      v->rel = r0 * row_b;
      v->tier = x->main;
      if (nnmem__grow((void **)&v->acc, &v->cap_acc, 1, sizeof *v->acc))
        return NNMEM_ERR_NOMEM;
      v->acc[v->n_acc++] = s0 + q;
      v->is_part = 1;
      if (q == 0) x->part_v[o] = (int64_t)x->n_v;
      x->n_v++;
    }
  }
  return NNMEM_OK;
}

void nnmem__fit_config_copy(nnmem_fit_config_t *dst,
                            const nnmem_fit_config_t *cfg) {
  nnmem_fit_config_init(dst);
  memcpy(dst, cfg, cfg->size && cfg->size < sizeof *dst ? cfg->size
                                                        : sizeof *dst);
  dst->size = sizeof *dst;
}

int nnmem__fit_splits_on(const nnmem_fit_config_t *cfg) {
  nnmem_fit_config_t c;
  nnmem__fit_config_copy(&c, cfg);
  return !c.no_split && nnmem__fit_slice_bytes(&c, 1) != 0;
}

uint64_t nnmem_fit_ops(const nnmem_fit_t *f) {
  return f ? f->ops : 0;
}

nnmem_status_t nnmem_fit_step(const nnmem_fit_t *f, uint64_t s,
                              nnmem_fit_step_t *out) {
  if (!f || !out || s >= f->steps || !f->step) return NNMEM_ERR_INVALID;
  const fit_step_t *p = &f->step[s];
  out->op = f->order[p->op_step];
  out->part = p->part;
  out->parts = p->parts;
  out->accumulate = p->mode == FIT_SPLIT_ACCUM;
  return NNMEM_OK;
}

/* concat.c - concat-into-output, split and slice views: buffers that
 * become sub-buffers (nnmem_problem_set_parent) of another at a fixed
 * offset.
 *
 * A Concat whose inputs are contiguous slices of its output (in the row-
 * major layout every dim before the concat axis is 1, e.g. NCHW with N = 1
 * and axis 1) needs no copy if each producer writes straight into its
 * slice; a Split of such a layout needs no copy if each output is read
 * from its slice of the input.
 *
 *   Concat(X0, X1, X2) -> T      bytes of T:  [ X0 | X1 | X2 ]
 *                                             0    r1   r2
 *   X_k's buffer becomes a child of T's buffer at r_k = sum of earlier
 *   input bytes; T's buffer is live from the first input's first step.
 *
 * Algorithm (ops in step order, so a nested Concat sees its inner one's
 * lifetime already stretched):
 *   1. the axis: the first dim where an input's shape differs from the
 *      output's; every later dim equal, the sizes along it summing to the
 *      output's, every earlier dim 1 (contiguous), bytes summing to the
 *      output's bytes; otherwise the op is skipped;
 *   2. each input X (buffer BX) is moved into T's buffer BT at offset r
 *      when it is safe, else it is skipped (copied as before):
 *        - X is an activation (not a graph input or output, weight,
 *          constant, workspace), BX holds no graph input/output;
 *        - BX is not already a child (an input used by two Concats, or
 *          twice by one), is not BT or one of BT's ancestors, and
 *          BT is a root;
 *        - BX is exactly X's size, and nothing writes into BX after X is
 *          produced (no in-place op reuses it later: that write would land
 *          in T's slice while T is alive); an in-place chain that *ends* in
 *          X is fine, and so is X being a view (Reshape, Flatten) of an
 *          earlier tensor of BX;
 *        - r is a multiple of max(BX's align, the configured alignment);
 *          BT's align is raised to BX's when lower;
 *        - BX dies no later than BT (else BT would have to live longer);
 *      then BT.first = min(BT.first, BX.first);
 *   3. Split: each output O (buffer BO) becomes a child of the input's
 *      buffer BI at its offset when: O is an activation, BO is exactly O's
 *      size, a root, written only by the Split, without graph I/O, and BI
 *      is a root written by nothing at or after the Split, and no child
 *      of BI is still active at the Split (a second Split of one tensor
 *      would overlap the first one's live views: copied instead); then
 *      BI.last = max(BI.last, BO.last) (the view keeps its input alive);
 *   4. Slice: an op carrying slice parameters (nnmem_graph_set_op_slice:
 *      output = input restricted to [start, start + n) along one axis,
 *      set by the ONNX importer when starts/ends/axes/steps are constants,
 *      or by the JSON graph's "slice") whose restriction is contiguous
 *      (every input dim before the axis 1, dims exact, not upper bounds) is
 *      step 3 with one part at start * (input bytes / input dim[axis]):
 *      the same function, so the same safety rules (view_parts).
 *
 *   Slice(X, axis 1, start 2) -> O[1,3,...]    bytes of X: [ .. | O | . ]
 *                                                          0   2r  5r
 *   with r = X bytes / X dim 1.
 * Invariants after the pass (checked by nnmem_problem_check when the
 * problem is built): every child fits its parent, is active only while the
 * parent is, and its offset is a multiple of its align.
 * Complexity: O(ops * rank + inputs * chain depth). Thread-safety: runs on
 * one builder. */
#include <string.h>

#include "analysis/liveness_internal.h"
#include "common/util.h"

/* Step 1: the dim along which `parts` tile `whole`, or -1. Only contiguous
 * tilings (every earlier dim of `whole` 1) are accepted. */
int nnmem__tiling_axis(const nnmem_graph_t *g, const nnmem_tensor_info_t *w,
                       const uint32_t *parts, uint32_t n) {
  if (n < 2 || w->rank == 0 || (w->flags & NNMEM_TENSOR_UPPER_BOUND)) return -1;
  int axis = -1;
  uint64_t bytes = 0;
  for (uint32_t k = 0; k < n; k++) {
    nnmem_tensor_info_t pi;
    nnmem_graph_tensor(g, parts[k], &pi);
    if (pi.rank != w->rank || pi.dtype != w->dtype ||
        (pi.flags & NNMEM_TENSOR_UPPER_BOUND) ||
        nnmem__add_overflow(bytes, pi.bytes, &bytes))
      return -1;
    for (uint32_t d = 0; d < w->rank; d++)
      if (pi.shape[d] != w->shape[d] && (axis < 0 || (int)d < axis))
        axis = (int)d;
  }
  if (axis < 0 || bytes != w->bytes) return -1;
  int64_t sum = 0;
  for (uint32_t k = 0; k < n; k++) {
    nnmem_tensor_info_t pi;
    nnmem_graph_tensor(g, parts[k], &pi);
    for (uint32_t d = 0; d < w->rank; d++)
      if ((int)d != axis && pi.shape[d] != w->shape[d]) return -1;
    if (pi.shape[axis] < 0) return -1;
    sum += pi.shape[axis];
  }
  if (sum != w->shape[axis]) return -1;
  for (int d = 0; d < axis; d++)
    if (w->shape[d] != 1) return -1;
  return axis;
}

static int is_ancestor(const builder_t *b, uint32_t anc, uint32_t x) {
  for (uint32_t i = x; b->bufs[i].parent; i = b->bufs[i].parent - 1)
    if (b->bufs[i].parent - 1 == anc) return 1;
  return 0;
}

/* Can tensor t's buffer become a child of buffer `pb` at `rel`? */
static int can_nest(const builder_t *b, uint32_t t, uint32_t pb, uint64_t rel) {
  nnmem_tensor_info_t ti;
  nnmem_graph_tensor(b->g, t, &ti);
  if (ti.kind != NNMEM_TENSOR_ACTIVATION || b->in_weights[t]) return 0;
  uint32_t cb = b->l->tensors[t].buffer;
  if (cb == NNMEM_NO_BUFFER || cb == pb) return 0;
  const lbuf_t *c = &b->bufs[cb], *p = &b->bufs[pb];
  if (c->has_io || c->kind != NNMEM_BUFFER_ACTIVATION || c->parent ||
      c->size != ti.bytes || p->parent || is_ancestor(b, cb, pb))
    return 0;
  uint64_t al = nnmem__max_u64(c->align, b->cfg.alignment);
  return rel % al == 0;
}

static void nest(builder_t *b, uint32_t cb, uint32_t pb, uint64_t rel) {
  lbuf_t *c = &b->bufs[cb], *p = &b->bufs[pb];
  c->parent = pb + 1;
  c->rel = rel;
  if (c->align > p->align) p->align = c->align;
  b->l->sub_buffers++;
  b->l->sub_bytes += c->size;
}

/* Step 2. */
static void concat_op(builder_t *b, const nnmem_op_info_t *oi) {
  nnmem_tensor_info_t to;
  if (oi->n_outputs != 1) return;
  nnmem_graph_tensor(b->g, oi->outputs[0], &to);
  if (nnmem__tiling_axis(b->g, &to, oi->inputs, oi->n_inputs) < 0) return;
  uint32_t pb = b->l->tensors[oi->outputs[0]].buffer;
  if (pb == NNMEM_NO_BUFFER || b->bufs[pb].parent) return;
  uint64_t rel = 0;
  for (uint32_t k = 0; k < oi->n_inputs; k++) {
    uint32_t x = oi->inputs[k];
    nnmem_tensor_info_t xi;
    nnmem_graph_tensor(b->g, x, &xi);
    uint64_t at = rel;
    rel += xi.bytes;
    if (!can_nest(b, x, pb, at)) continue;
    uint32_t cb = b->l->tensors[x].buffer;
    lbuf_t *c = &b->bufs[cb], *p = &b->bufs[pb];
    if (c->last_write > b->l->tensors[x].first || c->last > p->last) continue;
    if (c->first < p->first) p->first = c->first;
    nest(b, cb, pb, at);
  }
}

/* Step 3: tensors outs[0..n) become views of input `in`'s buffer at
 * `base`, `base` + outs[0]'s bytes, ... (the Split rule; a Slice is one
 * part at its start). */
static void view_parts(builder_t *b, uint32_t in, const uint32_t *outs,
                       uint32_t n, uint64_t base, uint64_t s) {
  uint32_t pb = b->l->tensors[in].buffer;
  if (b->in_weights[in] || pb == NNMEM_NO_BUFFER || b->bufs[pb].parent ||
      b->bufs[pb].kind != NNMEM_BUFFER_ACTIVATION)
    return;
  nnmem_tensor_info_t fi; /* a graph input's buffer is written before step 0 */
  nnmem_graph_tensor(b->g, b->bufs[pb].tensor, &fi);
  if (fi.kind != NNMEM_TENSOR_INPUT && b->bufs[pb].last_write >= s) return;
  for (size_t i = 0; i < b->n_bufs; i++) /* an earlier view still in use */
    if (b->bufs[i].parent == pb + 1 && b->bufs[i].last > s) return;
  uint64_t rel = base;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t o = outs[k];
    nnmem_tensor_info_t xo;
    nnmem_graph_tensor(b->g, o, &xo);
    uint64_t at = rel;
    rel += xo.bytes;
    if (!can_nest(b, o, pb, at)) continue;
    uint32_t cb = b->l->tensors[o].buffer;
    lbuf_t *c = &b->bufs[cb], *p = &b->bufs[pb];
    if (c->last_write != s || c->tensor != o) continue;
    if (c->last > p->last) p->last = c->last;
    nest(b, cb, pb, at);
  }
}

static void split_op(builder_t *b, const nnmem_op_info_t *oi, uint64_t s) {
  nnmem_tensor_info_t ti;
  if (oi->n_inputs < 1) return;
  nnmem_graph_tensor(b->g, oi->inputs[0], &ti);
  if (nnmem__tiling_axis(b->g, &ti, oi->outputs, oi->n_outputs) < 0) return;
  view_parts(b, oi->inputs[0], oi->outputs, oi->n_outputs, 0, s);
}

int nnmem__slice_offset(const nnmem_graph_t *g, uint32_t op, uint64_t *at) {
  uint32_t axis;
  int64_t start;
  nnmem_op_info_t oi;
  nnmem_tensor_info_t ti, to;
  if (!nnmem_graph_op_slice(g, op, &axis, &start) ||
      nnmem_graph_op(g, op, &oi) != NNMEM_OK || oi.n_inputs < 1 ||
      oi.n_outputs != 1)
    return 0;
  nnmem_graph_tensor(g, oi.inputs[0], &ti);
  nnmem_graph_tensor(g, oi.outputs[0], &to);
  if (((ti.flags | to.flags) & NNMEM_TENSOR_UPPER_BOUND) ||
      ti.rank != to.rank || axis >= ti.rank || ti.shape[axis] <= 0 ||
      ti.bytes % (uint64_t)ti.shape[axis])
    return 0;
  for (uint32_t d = 0; d < axis; d++)
    if (ti.shape[d] != 1) return 0; /* not contiguous */
  uint64_t row = ti.bytes / (uint64_t)ti.shape[axis];
  if (to.bytes != row * (uint64_t)to.shape[axis]) return 0;
  *at = row * (uint64_t)start; /* <= ti.bytes: start + out dim <= in dim */
  return 1;
}

/* Step 4. */
static void slice_op(builder_t *b, uint32_t op, const nnmem_op_info_t *oi,
                     uint64_t s) {
  uint64_t at;
  if (nnmem__slice_offset(b->g, op, &at))
    view_parts(b, oi->inputs[0], oi->outputs, 1, at, s);
}

int nnmem__subbuf_op(const nnmem_graph_t *g, uint32_t op,
                     const nnmem_op_info_t *oi) {
  if (strcmp(oi->type, "Concat") == 0) return NNMEM__SUBBUF_CONCAT;
  if (strcmp(oi->type, "Split") == 0) return NNMEM__SUBBUF_SPLIT;
  if (nnmem_graph_op_slice(g, op, NULL, NULL)) return NNMEM__SUBBUF_SLICE;
  return 0;
}

nnmem_status_t nnmem__liveness_concat(builder_t *b) {
  for (uint64_t s = 0; s < b->l->steps; s++) {
    nnmem_op_info_t oi;
    nnmem_graph_op(b->g, b->l->order[s], &oi);
    if (oi.flags & (NNMEM_OP_VIEW | NNMEM_OP_INPLACE)) continue;
    if (b->cfg.no_concat_ops && b->cfg.no_concat_ops[b->l->order[s]])
      continue; /* kept out by the caller */
    switch (nnmem__subbuf_op(b->g, b->l->order[s], &oi)) {
      case NNMEM__SUBBUF_CONCAT:
        concat_op(b, &oi);
        break;
      case NNMEM__SUBBUF_SPLIT:
        split_op(b, &oi, s);
        break;
      case NNMEM__SUBBUF_SLICE:
        slice_op(b, b->l->order[s], &oi, s);
        break;
      default:
        break;
    }
  }
  return NNMEM_OK;
}

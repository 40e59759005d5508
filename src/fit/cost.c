/* cost.c - the cost model: per-op compute time under a roofline, and the
 * workspace a device's kernel choice adds (nnmem/fit.h).
 *
 * 1. FLOPs from the shapes shape inference already computed (E = output
 *    elements, first output):
 *      Conv, ConvTranspose   2 * E * (weight elements / output channels)
 *                            (= 2 * E * C/g * kH * kW)
 *      MatMul, Gemm          2 * E * K, K = the inner dimension (the last
 *                            dim of input 0; Gemm: input elems / out rows)
 *      pooling, reductions   input elements
 *      Softmax, LayerNormalization, BatchNormalization, InstanceNorm
 *                            5 * E
 *      everything else       E (elementwise; copies and shape ops)
 * 2. bytes = the bytes of every input (weights included) and output;
 * 3. seconds = max(flops / compute_rate, bytes / main tier bandwidth)
 *    + op_overhead (Williams, Waterman, Patterson, "Roofline", CACM 2009);
 * 4. workspace: with conv_algorithm im2col, a Conv whose kernel is larger
 *    than 1x1 needs a column buffer of N * (C/g * kH * kW) * (outH * outW)
 *    elements (the weight's per-output-channel elements times the output's
 *    spatial elements per image, output dtype).
 * A transfer of n bytes over a link of bandwidth B takes n / B seconds.
 * Complexity O(inputs + outputs) per op. Thread-safety: reads only. */
#include <string.h>

#include "common/util.h"
#include "nnmem/fit.h"

static double elems(const nnmem_tensor_info_t *t) {
  double e = 1;
  for (uint32_t i = 0; i < t->rank; i++)
    e *= (double)t->shape[i];
  if (t->rank == 0 && t->dtype == NNMEM_DTYPE_UNDEFINED) {
    size_t es = 4;
    e = (double)t->bytes / (double)es;
  }
  return e;
}

static int is(const char *type, const char *name) {
  return strcmp(type, name) == 0;
}

/* FLOPs of one op (step 1). */
static double op_flops(const nnmem_graph_t *g, const nnmem_op_info_t *oi,
                       const nnmem_tensor_info_t *out0) {
  double e = out0 ? elems(out0) : 0;
  nnmem_tensor_info_t a, w;
  int have_a =
      oi->n_inputs > 0 && nnmem_graph_tensor(g, oi->inputs[0], &a) == NNMEM_OK;
  int have_w =
      oi->n_inputs > 1 && nnmem_graph_tensor(g, oi->inputs[1], &w) == NNMEM_OK;
  const char *t = oi->type;
  if ((is(t, "Conv") || is(t, "ConvTranspose")) && have_w && w.rank >= 2 &&
      w.shape[0] > 0) {
    double per_out = elems(&w) / (double)w.shape[is(t, "Conv") ? 0 : 1];
    return 2.0 * e * per_out;
  }
  if (is(t, "MatMul") && have_a && a.rank >= 1)
    return 2.0 * e * (double)a.shape[a.rank - 1];
  if (is(t, "Gemm") && have_a && out0 && out0->rank >= 1 && out0->shape[0] > 0)
    return 2.0 * e * (elems(&a) / (double)out0->shape[0]);
  if (strstr(t, "Pool") || strstr(t, "Reduce")) return have_a ? elems(&a) : e;
  if (is(t, "Softmax") || strstr(t, "Normalization") ||
      is(t, "InstanceNormalization"))
    return 5.0 * e;
  return e;
}

/* Step 4: the im2col column buffer of a Conv (0 when not needed). */
static uint64_t im2col_bytes(const nnmem_graph_t *g, const nnmem_op_info_t *oi,
                             const nnmem_tensor_info_t *out0) {
  nnmem_tensor_info_t w;
  if (!is(oi->type, "Conv") || oi->n_inputs < 2 || !out0 || out0->rank != 4 ||
      nnmem_graph_tensor(g, oi->inputs[1], &w) != NNMEM_OK || w.rank != 4)
    return 0;
  if (w.shape[2] * w.shape[3] <= 1) return 0; /* 1x1: the input is the matrix */
  double per_out = (double)(w.shape[1] * w.shape[2] * w.shape[3]);
  double cols =
      (double)out0->shape[0] * (double)out0->shape[2] * (double)out0->shape[3];
  size_t es = nnmem_dtype_size(out0->dtype);
  double b = per_out * cols * (double)(es ? es : 4);
  return b > 0 && b < 1.8e19 ? (uint64_t)b : 0;
}

nnmem_status_t nnmem_op_cost(const nnmem_graph_t *g, uint32_t op,
                             const nnmem_device_t *d, nnmem_op_cost_t *out) {
  if (!g || !d || !out) return NNMEM_ERR_INVALID;
  memset(out, 0, sizeof *out);
  nnmem_op_info_t oi;
  nnmem_status_t st = nnmem_graph_op(g, op, &oi);
  if (st != NNMEM_OK) return st;
  nnmem_tensor_info_t ti, out0;
  int have_out = oi.n_outputs > 0 &&
                 nnmem_graph_tensor(g, oi.outputs[0], &out0) == NNMEM_OK;
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < oi.n_inputs; i++)
    if (nnmem_graph_tensor(g, oi.inputs[i], &ti) == NNMEM_OK) bytes += ti.bytes;
  for (uint32_t i = 0; i < oi.n_outputs; i++)
    if (nnmem_graph_tensor(g, oi.outputs[i], &ti) == NNMEM_OK)
      bytes += ti.bytes;
  out->bytes = bytes;
  out->flops = op_flops(g, &oi, have_out ? &out0 : NULL);
  uint32_t m = nnmem_device_main_tier(d);
  double tc = d->compute_rate > 0 ? out->flops / d->compute_rate : 0;
  double tm =
      d->tiers[m].bandwidth > 0 ? (double)bytes / d->tiers[m].bandwidth : 0;
  out->seconds = (tc > tm ? tc : tm) + d->op_overhead_s;
  if (d->conv == NNMEM_CONV_IM2COL)
    out->workspace = im2col_bytes(g, &oi, have_out ? &out0 : NULL);
  return NNMEM_OK;
}

/* onnx_ops_legacy.c - shape / dtype inference of the experimental operators
 * of the early opsets (ONNX Changelog.md, version 1 of each; removed from
 * the standard in opset 10, still written by the converters of that era and
 * run by onnxruntime) and of Upsample's opset 1 / 7 / 9 forms:
 * ImageScaler, Crop, Affine, Scale, ScaledTanh, ParametricSoftplus, GRUUnit,
 * ConstantFill, GivenTensorFill, DynamicSlice, MeanVarianceNormalization
 * (opset 1 attributes and opset 9 `axes`) and Upsample.
 *
 * Rules (ONNX operator documentation of those versions):
 *   1. Affine, Scale, ScaledTanh, ParametricSoftplus: element-wise on a
 *      floating tensor (float attributes alpha / beta / scale);
 *   2. ImageScaler: [N, C, H, W] unchanged, `bias` holds C values;
 *   3. Crop: border = [left, top, right, bottom] (>= 0); without `scale`
 *      [N, C, H - top - bottom, W - left - right], with scale = [h, w]
 *      [N, C, h, w] and the crop must fit (top + h <= H, left + w <= W);
 *   4. GRUUnit: hidden_prev's type and shape; gates' last dim is 3 x the
 *      hidden size;
 *   5. ConstantFill / GivenTensorFill: without an input the `shape`
 *      attribute; with one, the input's shape, or its values when
 *      input_as_shape = 1, followed by `extra_shape`; ConstantFill's type is
 *      `dtype` (float, int32, int64 or bool), GivenTensorFill's float (or its
 *      input's floating type) and its `values` fill the shape exactly;
 *   6. DynamicSlice: Slice of opset 10 (starts, ends, axes as inputs);
 *   7. Upsample: opset 1 scales H and W by height_scale / width_scale (mode
 *      nearest or bilinear), opset 7 by the `scales` attribute, opset 9+
 *      by the `scales` input (mode nearest or linear); each dim is
 *      floor(dim x scale), attribute scales are >= 1.
 * A violated rule fails with NNMEM_ERR_INVALID naming the node; an unknown
 * input shape leaves the output unresolved.
 * Complexity O(rank) per node (fills: O(elements) up to 4,096 folded
 * values). Thread-safety: pure. */
#include <math.h>
#include <string.h>

#include "import/onnx/onnx_internal.h"

static nnmem_status_t bad(ox_ctx_t *c, const ox_node_t *n, const char *what) {
  return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID, "%s", what);
}

/* A required float attribute (missing: an error naming it). */
static nnmem_status_t need_float(ox_ctx_t *c, const ox_node_t *n,
                                 const char *name, double *out) {
  if (!nnmem__onnx_attr(n, name))
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "attribute '%s' is required", name);
  return nnmem__onnx_attr_float(c, n, name, 0, out);
}

/* Output 0 takes input 0's type and shape; the input must be floating. */
static nnmem_status_t float_like_input(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  if (!x) return NNMEM_OK;
  if (x->elem && !nnmem__onnx_is_float(x->elem))
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "input type %s is not a floating type",
                                  nnmem__onnx_type_name(x->elem));
  nnmem__onnx_copy_type(OX_OUT(n, 0), x);
  return NNMEM_OK;
}

/* Affine (alpha, beta), Scale (scale), ScaledTanh (alpha, beta),
 * ParametricSoftplus (alpha, beta): only the attribute types are checked. */
static nnmem_status_t infer_pointwise(ox_ctx_t *c, ox_node_t *n) {
  static const char *const names[] = {"alpha", "beta", "scale"};
  for (size_t i = 0; i < 3; i++) {
    double v;
    nnmem_status_t st = nnmem__onnx_attr_float(c, n, names[i], 0, &v);
    if (st != NNMEM_OK) return st;
  }
  return float_like_input(c, n);
}

static nnmem_status_t infer_image_scaler(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  const float *bias;
  size_t nb;
  double scale;
  nnmem_status_t st = nnmem__onnx_attr_float(c, n, "scale", 1, &scale);
  if (st == NNMEM_OK) st = nnmem__onnx_attr_floats(c, n, "bias", &bias, &nb);
  if (st != NNMEM_OK || !x) return st;
  if (x->rank >= 0 && x->rank != 4)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "input has rank %d, want 4 (N, C, H, W)",
                                  (int)x->rank);
  if (bias && x->rank == 4 && x->dims[1] >= 0 && (int64_t)nb != x->dims[1])
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "bias has %zu values for %lld channels", nb,
                                  (long long)x->dims[1]);
  return float_like_input(c, n);
}

/* Crop: border [left, top, right, bottom], optional scale [h, w]. */
static nnmem_status_t infer_crop(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  const int64_t *b, *sc;
  size_t nb, ns;
  nnmem_status_t st = nnmem__onnx_attr_ints(c, n, "border", &b, &nb);
  if (st == NNMEM_OK) st = nnmem__onnx_attr_ints(c, n, "scale", &sc, &ns);
  if (st != NNMEM_OK) return st;
  if (!b || nb != 4 || b[0] < 0 || b[1] < 0 || b[2] < 0 || b[3] < 0)
    return bad(c, n,
               "attribute 'border' must hold 4 values >= 0 (left, top, "
               "right, bottom)");
  if (sc && (ns != 2 || sc[0] < 0 || sc[1] < 0))
    return bad(c, n, "attribute 'scale' must hold 2 values >= 0 (h, w)");
  if (!x) return NNMEM_OK;
  if (x->rank >= 0 && x->rank != 4)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "input has rank %d, want 4 (N, C, H, W)",
                                  (int)x->rank);
  ox_val_t *y = OX_OUT(n, 0);
  nnmem__onnx_set(y, x->elem, x->rank == 4 ? 4 : -1, NULL);
  if (x->rank != 4) return NNMEM_OK;
  int64_t d[4] = {x->dims[0], x->dims[1], -1, -1}, h = x->dims[2],
          w = x->dims[3];
  for (int k = 0; k < 2; k++) { /* k = 0: height (top), 1: width (left) */
    int64_t in = k ? w : h, lo = b[k ? 0 : 1], hi = b[k ? 2 : 3];
    int64_t want = sc ? sc[k] : -1;
    if (in < 0) {
      d[2 + k] = want;
      continue;
    }
    int fits = sc ? lo <= in && want <= in - lo : lo <= in && hi <= in - lo;
    if (!fits)
      return nnmem__onnx_node_error(
          c, n, NNMEM_ERR_INVALID, "the crop does not fit the input %s of %lld",
          k ? "width" : "height", (long long)in);
    d[2 + k] = sc ? want : in - lo - hi;
  }
  nnmem__onnx_set(y, x->elem, 4, d);
  return NNMEM_OK;
}

static nnmem_status_t infer_gru_unit(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *h = OX_IN(n, 0), *g = OX_IN(n, 1);
  int64_t drop;
  nnmem_status_t st = nnmem__onnx_attr_int(c, n, "drop_states", 0, &drop);
  if (st != NNMEM_OK || !h) return st;
  if (g && h->rank >= 1 && g->rank >= 1) {
    int64_t hd = h->dims[h->rank - 1], gd = g->dims[g->rank - 1];
    if (hd >= 0 && gd >= 0 && nnmem__onnx_dmul(hd, 3) != gd)
      return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                    "gates have %lld values per row, want 3 x "
                                    "%lld (hidden size)",
                                    (long long)gd, (long long)hd);
  }
  return float_like_input(c, n);
}

/* ---- fills ---------------------------------------------------------------*/

/* Value i of a shape input; -1 when negative or not an integer in range. */
static int64_t shape_value(const ox_val_t *x, size_t i) {
  if (x->iv) return x->iv[i];
  double f = x->fv ? x->fv[i] : -1;
  return f >= 0 && f < 9e18 && f == floor(f) ? (int64_t)f : -1;
}

/* Output shape of ConstantFill / GivenTensorFill into y (step 5). */
static nnmem_status_t fill_shape(ox_ctx_t *c, ox_node_t *n, int32_t elem,
                                 ox_val_t *y) {
  ox_val_t *x = OX_IN(n, 0);
  const int64_t *sh, *ex;
  size_t nsh, nex;
  int64_t as_shape;
  nnmem_status_t st = nnmem__onnx_attr_ints(c, n, "shape", &sh, &nsh);
  if (st == NNMEM_OK)
    st = nnmem__onnx_attr_ints(c, n, "extra_shape", &ex, &nex);
  if (st == NNMEM_OK)
    st = nnmem__onnx_attr_int(c, n, "input_as_shape", 0, &as_shape);
  if (st != NNMEM_OK) return st;
  if (x && sh)
    return bad(c, n, "takes the 'shape' attribute or an input, not both");
  if (!x && (ex || as_shape))
    return bad(c, n, "'extra_shape' and 'input_as_shape' need an input");
  int64_t dims[OX_MAX_RANK];
  size_t r = 0, nbase = !x         ? nsh
                        : as_shape ? (x->has_vals ? x->nvals : 0)
                                   : (size_t)(x->rank < 0 ? 0 : x->rank);
  int known = !x || (as_shape ? x->has_vals : x->rank >= 0);
  if (nbase + nex > OX_MAX_RANK)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "output rank %zu exceeds %d", nbase + nex,
                                  OX_MAX_RANK);
  for (size_t i = 0; known && i < nbase; i++)
    dims[r++] = !x ? sh[i] : as_shape ? shape_value(x, i) : x->dims[i];
  for (size_t i = 0; known && i < nex; i++)
    dims[r++] = ex[i];
  for (size_t i = 0; i < r; i++)
    if (dims[i] < 0 && (i >= nbase || !x || as_shape))
      return bad(c, n, "the output shape has a negative dim");
  if (!known && as_shape && x->rank == 1 && x->dims[0] >= 0 &&
      x->dims[0] <= OX_MAX_RANK - (int64_t)nex)
    nnmem__onnx_set(y, elem, (int32_t)(x->dims[0] + (int64_t)nex), NULL);
  else if (known)
    nnmem__onnx_set(y, elem, (int32_t)r, dims);
  else
    nnmem__onnx_set(y, elem, -1, NULL);
  return NNMEM_OK;
}

static nnmem_status_t infer_constant_fill(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *y = OX_OUT(n, 0);
  int64_t dt;
  double value;
  nnmem_status_t st = nnmem__onnx_attr_int(c, n, "dtype", OX_FLOAT, &dt);
  if (st == NNMEM_OK) st = nnmem__onnx_attr_float(c, n, "value", 0, &value);
  if (st != NNMEM_OK) return st;
  if (dt != OX_FLOAT && dt != OX_INT32 && dt != OX_INT64 && dt != OX_BOOL)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "dtype %lld is not float (1), int32 (6), "
                                  "int64 (7) or bool (9)",
                                  (long long)dt);
  if (!y) return NNMEM_OK;
  st = fill_shape(c, n, (int32_t)dt, y);
  int64_t total = nnmem__onnx_numel(y);
  if (st != NNMEM_OK || dt == OX_FLOAT || total < 0 || total > 4096) return st;
  int64_t *v = malloc(((size_t)total + 1) * sizeof *v);
  if (!v) return NNMEM_ERR_NOMEM;
  int64_t k = dt == OX_BOOL        ? value != 0
              : fabs(value) < 9e18 ? (int64_t)value
                                   : 0; /* out of range: any value */
  for (int64_t i = 0; i < total; i++)
    v[i] = k;
  st = nnmem__onnx_set_ints(y, v, (size_t)total); /* keeps the shape */
  free(v);
  return st;
}

static nnmem_status_t infer_given_tensor_fill(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  const float *vals;
  size_t nv;
  nnmem_status_t st = nnmem__onnx_attr_floats(c, n, "values", &vals, &nv);
  if (st != NNMEM_OK || !y) return st;
  int32_t elem = x && nnmem__onnx_is_float(x->elem) ? x->elem : OX_FLOAT;
  st = fill_shape(c, n, elem, y);
  if (st != NNMEM_OK) return st;
  int64_t total = nnmem__onnx_numel(y);
  if (!x && vals && total >= 0 && (uint64_t)total != (uint64_t)nv)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "'values' has %zu entries for a shape of "
                                  "%lld elements",
                                  nv, (long long)total);
  return NNMEM_OK;
}

/* ---- DynamicSlice, MeanVarianceNormalization, Upsample
 * ---------------------*/

static nnmem_status_t infer_dynamic_slice(ox_ctx_t *c, ox_node_t *n) {
  ox_node_t as_slice = *n;
  if (as_slice.opset < 10) as_slice.opset = 10; /* inputs, not attributes */
  nnmem_status_t st = nnmem__onnx_infer_slice(c, &as_slice);
  n->has_slice = as_slice.has_slice;
  n->slice_axis = as_slice.slice_axis;
  n->slice_start = as_slice.slice_start;
  return st;
}

static nnmem_status_t infer_mvn(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  nnmem_status_t st = NNMEM_OK;
  if (n->opset < 9) {
    int64_t across, var;
    st = nnmem__onnx_attr_int(c, n, "across_channels", 0, &across);
    if (st == NNMEM_OK)
      st = nnmem__onnx_attr_int(c, n, "normalize_variance", 1, &var);
    if (st == NNMEM_OK && ((across & ~1) || (var & ~1)))
      return bad(c, n, "across_channels and normalize_variance must be 0 or 1");
  } else {
    const int64_t *ax;
    size_t nax;
    int32_t a;
    st = nnmem__onnx_attr_ints(c, n, "axes", &ax, &nax);
    for (size_t i = 0; st == NNMEM_OK && ax && x && x->rank >= 0 && i < nax;
         i++)
      if (!nnmem__onnx_axis(ax[i], x->rank, &a))
        return bad(c, n, "axes out of range");
  }
  if (st != NNMEM_OK) return st;
  return float_like_input(c, n);
}

/* Upsample scales of opset 1 (height / width) and 7 (attribute) into sc;
 * 1 when known. */
static int upsample_attr_scales(ox_ctx_t *c, ox_node_t *n, int32_t rank,
                                double *sc, nnmem_status_t *st) {
  const float *f = NULL;
  size_t nf = 0;
  double hw[2] = {0, 0};
  if (n->opset < 7) {
    if ((*st = need_float(c, n, "height_scale", &hw[0])) != NNMEM_OK ||
        (*st = need_float(c, n, "width_scale", &hw[1])) != NNMEM_OK)
      return 0;
    if (rank >= 0 && rank != 4) {
      *st = bad(c, n, "opset 1 Upsample takes a 4-D input (N, C, H, W)");
      return 0;
    }
  } else {
    if ((*st = nnmem__onnx_attr_floats(c, n, "scales", &f, &nf)) != NNMEM_OK)
      return 0;
    if (!f) {
      *st = bad(c, n, "attribute 'scales' (one value per dim) is required");
      return 0;
    }
    if (rank >= 0 && nf != (size_t)rank) {
      *st = nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                   "attribute 'scales' has %zu values for a "
                                   "rank-%d input",
                                   nf, (int)rank);
      return 0;
    }
  }
  size_t ns = f ? nf : 4; /* opset 1: [1, 1, height, width] */
  for (size_t i = 0; i < ns; i++) {
    double v = f ? f[i] : i < 2 ? 1 : hw[i - 2];
    if (!(v >= 1 && v < 1e18)) {
      *st = bad(c, n, "scales must be >= 1 (and finite)");
      return 0;
    }
    if (i < OX_MAX_RANK) sc[i] = v;
  }
  return rank >= 0;
}

/* Opset 9+: the `scales` input; 1 when its values are known. */
static int upsample_input_scales(ox_ctx_t *c, ox_node_t *n, int32_t rank,
                                 double *sc, nnmem_status_t *st) {
  ox_val_t *s = OX_IN(n, 1);
  if (!s) {
    *st = bad(c, n, "input 1 (scales) is required from opset 9");
    return 0;
  }
  if (!s->has_vals || rank < 0) return 0;
  if (s->nvals != (size_t)rank) {
    *st = nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                 "scales has %zu values for a rank-%d input",
                                 s->nvals, (int)rank);
    return 0;
  }
  for (int32_t i = 0; i < rank; i++) {
    sc[i] = nnmem__onnx_float_at(s, (size_t)i);
    if (!(sc[i] > 0 && sc[i] < 1e18)) {
      *st = bad(c, n, "scales must be > 0 (and finite)");
      return 0;
    }
  }
  return 1;
}

static nnmem_status_t infer_upsample(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  char mode[32];
  nnmem_status_t st =
      nnmem__onnx_attr_string(c, n, "mode", "nearest", mode, sizeof mode);
  if (st != NNMEM_OK) return st;
  const char *linear = n->opset < 7 ? "bilinear" : "linear";
  if (strcmp(mode, "nearest") != 0 && strcmp(mode, linear) != 0)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "mode '%s' is not 'nearest' or '%s'", mode,
                                  linear);
  int32_t rank = x ? x->rank : -1;
  double sc[OX_MAX_RANK];
  int known = n->opset < 9 ? upsample_attr_scales(c, n, rank, sc, &st)
                           : upsample_input_scales(c, n, rank, sc, &st);
  if (st != NNMEM_OK || !x) return st;
  nnmem__onnx_set(y, x->elem, rank, NULL);
  if (!known) return NNMEM_OK;
  int64_t dims[OX_MAX_RANK];
  for (int32_t i = 0; i < rank; i++) {
    double v = floor((double)x->dims[i] * sc[i]);
    dims[i] = x->dims[i] < 0 || !(v < 9e18) ? -1 : (int64_t)v;
  }
  nnmem__onnx_set(y, x->elem, rank, dims);
  return NNMEM_OK;
}

const ox_op_t nnmem__onnx_ops_legacy[] = {
    {"Affine", infer_pointwise, OX_INPLACE},
    {"Scale", infer_pointwise, OX_INPLACE},
    {"ScaledTanh", infer_pointwise, OX_INPLACE},
    {"ParametricSoftplus", infer_pointwise, OX_INPLACE},
    {"ImageScaler", infer_image_scaler, OX_INPLACE},
    {"Crop", infer_crop, 0},
    {"GRUUnit", infer_gru_unit, 0},
    {"ConstantFill", infer_constant_fill, 0},
    {"GivenTensorFill", infer_given_tensor_fill, 0},
    {"DynamicSlice", infer_dynamic_slice, 0},
    {"MeanVarianceNormalization", infer_mvn, 0},
    {"Upsample", infer_upsample, 0},
    {NULL, NULL, 0}};

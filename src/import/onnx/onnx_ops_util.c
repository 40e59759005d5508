/* onnx_ops_util.c - helpers shared by the operator families: axis
 * normalization, numpy broadcasting, attribute-or-input axes, and the
 * element-wise / gather folding of small constant tensors.
 *
 * Folding (nnmem__onnx_fold_elementwise): for each output element, the
 * input element is found through broadcast strides (stride 0 on broadcast
 * dims); integer outputs are computed in int64 (wrapping), floating ones in
 * double, comparisons give 0/1. Only outputs of at most OX_MAX_VALUES
 * elements are folded. Complexity O(out elements * rank).
 * Thread-safety: pure functions. */
#include <math.h>
#include <string.h>

#include "import/onnx/onnx_internal.h"

int nnmem__onnx_axis(int64_t axis, int32_t rank, int32_t *out) {
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return 0;
  *out = (int32_t)axis;
  return 1;
}

void nnmem__onnx_set(ox_val_t *v, int32_t elem, int32_t rank,
                     const int64_t *dims) {
  if (!v) return;
  if (elem) v->elem = elem;
  if (rank >= 0) nnmem__onnx_set_shape(v, rank, dims);
}

int nnmem__onnx_broadcast(ox_val_t *const *in, size_t n, int32_t *rank,
                          int64_t *dims) {
  int32_t r = 0;
  for (size_t i = 0; i < n; i++) {
    if (!in[i]) continue;
    if (in[i]->rank < 0) return 0;
    if (in[i]->rank > r) r = in[i]->rank;
  }
  for (int32_t d = 0; d < r; d++)
    dims[d] = 1;
  for (size_t i = 0; i < n; i++) {
    if (!in[i]) continue;
    int32_t off = r - in[i]->rank;
    for (int32_t d = 0; d < in[i]->rank; d++) {
      int64_t x = in[i]->dims[d], *o = &dims[off + d];
      if (x == 1) continue;
      if (x < 0) {
        if (*o == 1) *o = -1;
        continue;
      }
      if (*o == 1 || *o == -1 || x > *o) *o = x;
    }
  }
  *rank = r;
  return 1;
}

int nnmem__onnx_ints_of(const ox_node_t *n, size_t k, const int64_t **vals,
                        size_t *count) {
  const ox_val_t *v = OX_IN(n, k);
  if (!v || !v->has_vals || !v->iv) return 0;
  *vals = v->iv;
  *count = v->nvals;
  return 1;
}

int nnmem__onnx_axes(ox_ctx_t *c, const ox_node_t *n, const char *name,
                     size_t k, int64_t *axes, size_t *count,
                     nnmem_status_t *st) {
  const int64_t *a = NULL;
  size_t na = 0;
  *count = 0;
  *st = nnmem__onnx_attr_ints(c, n, name, &a, &na);
  if (*st != NNMEM_OK) return 0;
  if (!a && OX_IN(n, k)) {
    if (!nnmem__onnx_ints_of(n, k, &a, &na)) return -1;
  } else if (!a) {
    return 0;
  }
  if (na > OX_MAX_RANK) na = OX_MAX_RANK;
  for (size_t i = 0; i < na; i++)
    axes[i] = a[i];
  *count = na;
  return 1;
}

/* ---- folding
 * ---------------------------------------------------------------*/

/* One element of an integer fold. Longer than 50 lines: one case per OX_F_*
 * code, which reads better as one flat switch than as a table. */
static int64_t ieval(int op, const int64_t *x, size_t n) {
  int64_t a = x[0], b = n > 1 ? x[1] : 0;
  switch (op) {
    case OX_F_ADD:
      return (int64_t)((uint64_t)a + (uint64_t)b);
    case OX_F_SUB:
      return (int64_t)((uint64_t)a - (uint64_t)b);
    case OX_F_MUL:
      return (int64_t)((uint64_t)a * (uint64_t)b);
    case OX_F_DIV: {
      if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
      return a / b;
    }
    case OX_F_MOD: {
      if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
      int64_t r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case OX_F_FMOD:
      return (b == 0 || (a == INT64_MIN && b == -1)) ? 0 : a % b;
    case OX_F_POW: {
      int64_t r = 1;
      for (int64_t i = 0; i < b && i < 64; i++)
        r = (int64_t)((uint64_t)r * (uint64_t)a);
      return r;
    }
    case OX_F_MIN:
    case OX_F_MAX:
    case OX_F_SUM:
    case OX_F_MEAN: {
      int64_t r = a;
      for (size_t i = 1; i < n; i++) {
        if (op == OX_F_MIN && x[i] < r) r = x[i];
        if (op == OX_F_MAX && x[i] > r) r = x[i];
        if (op == OX_F_SUM || op == OX_F_MEAN)
          r = (int64_t)((uint64_t)r + (uint64_t)x[i]);
      }
      return op == OX_F_MEAN ? r / (int64_t)n : r;
    }
    case OX_F_EQ:
      return a == b;
    case OX_F_LT:
      return a < b;
    case OX_F_GT:
      return a > b;
    case OX_F_LE:
      return a <= b;
    case OX_F_GE:
      return a >= b;
    case OX_F_AND:
      return a && b;
    case OX_F_OR:
      return a || b;
    case OX_F_XOR:
      return !a != !b;
    case OX_F_WHERE:
      return a ? b : x[2];
    case OX_F_NEG:
      return (int64_t)(0 - (uint64_t)a);
    case OX_F_ABS:
      return a < 0 ? (int64_t)(0 - (uint64_t)a) : a;
    case OX_F_NOT:
      return !a;
    case OX_F_RELU:
      return a < 0 ? 0 : a;
    case OX_F_SIGN:
      return (a > 0) - (a < 0);
    default:
      return a;
  }
}

/* One element of a floating fold (same shape as ieval). */
static double feval(int op, const double *x, size_t n) {
  double a = x[0], b = n > 1 ? x[1] : 0;
  switch (op) {
    case OX_F_ADD:
      return a + b;
    case OX_F_SUB:
      return a - b;
    case OX_F_MUL:
      return a * b;
    case OX_F_DIV:
      return a / b;
    case OX_F_FMOD:
      return fmod(a, b);
    case OX_F_MOD: {
      double r = fmod(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case OX_F_POW:
      return pow(a, b);
    case OX_F_MIN:
    case OX_F_MAX:
    case OX_F_SUM:
    case OX_F_MEAN: {
      double r = a;
      for (size_t i = 1; i < n; i++) {
        if (op == OX_F_MIN && x[i] < r) r = x[i];
        if (op == OX_F_MAX && x[i] > r) r = x[i];
        if (op == OX_F_SUM || op == OX_F_MEAN) r += x[i];
      }
      return op == OX_F_MEAN ? r / (double)n : r;
    }
    case OX_F_EQ:
      return a == b;
    case OX_F_LT:
      return a < b;
    case OX_F_GT:
      return a > b;
    case OX_F_LE:
      return a <= b;
    case OX_F_GE:
      return a >= b;
    case OX_F_AND:
      return a != 0 && b != 0;
    case OX_F_OR:
      return a != 0 || b != 0;
    case OX_F_XOR:
      return (a != 0) != (b != 0);
    case OX_F_WHERE:
      return a != 0 ? b : x[2];
    case OX_F_NEG:
      return -a;
    case OX_F_ABS:
      return fabs(a);
    case OX_F_NOT:
      return a == 0;
    case OX_F_FLOOR:
      return floor(a);
    case OX_F_CEIL:
      return ceil(a);
    case OX_F_ROUND:
      return nearbyint(a);
    case OX_F_SQRT:
      return sqrt(a);
    case OX_F_RELU:
      return a < 0 ? 0 : a;
    case OX_F_SIGN:
      return (a > 0) - (a < 0);
    case OX_F_RECIP:
      return 1.0 / a;
    case OX_F_EXP:
      return exp(a);
    case OX_F_LOG:
      return log(a);
    default:
      return a;
  }
}

/* Index of output element `lin` in input v (broadcast strides). */
static size_t bcast_index(const ox_val_t *out, const ox_val_t *v, size_t lin) {
  size_t idx = 0, stride = 1;
  int32_t off = out->rank - v->rank;
  for (int32_t d = out->rank - 1; d >= 0; d--) {
    size_t od = (size_t)out->dims[d], coord = lin % od;
    lin /= od;
    int32_t vd = d - off;
    if (vd < 0) continue;
    if (v->dims[vd] != 1) idx += coord * stride;
    stride *= (size_t)v->dims[vd];
  }
  return idx;
}

static int is_compare(int op) {
  return op >= OX_F_EQ && op <= OX_F_XOR;
}

nnmem_status_t nnmem__onnx_fold_elementwise(int op, ox_val_t *const *in,
                                            size_t n_in, ox_val_t *out) {
  int64_t total = nnmem__onnx_numel(out);
  if (!out || total < 0 || total > OX_MAX_VALUES || n_in > 8 || n_in == 0)
    return NNMEM_OK;
  int use_int = 1;
  for (size_t k = 0; k < n_in; k++) {
    if (!in[k] || !in[k]->has_vals) return NNMEM_OK;
    if (nnmem__onnx_numel(in[k]) != (int64_t)in[k]->nvals) return NNMEM_OK;
    if (!in[k]->iv && !(op == OX_F_WHERE && k == 0)) use_int = 0;
  }
  int out_int = !nnmem__onnx_is_float(out->elem);
  if (is_compare(op))
    use_int = use_int && 1;
  else
    use_int = use_int && out_int;
  size_t n = (size_t)total;
  int64_t *iv = malloc((n ? n : 1) * sizeof *iv);
  double *fv = malloc((n ? n : 1) * sizeof *fv);
  if (!iv || !fv) {
    free(iv);
    free(fv);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    int64_t xi[8] = {0};
    double xd[8] = {0};
    for (size_t k = 0; k < n_in; k++) {
      size_t j = bcast_index(out, in[k], i);
      xi[k] = nnmem__onnx_int_at(in[k], j);
      xd[k] = nnmem__onnx_float_at(in[k], j);
    }
    if (use_int) {
      iv[i] = ieval(op, xi, n_in);
      fv[i] = (double)iv[i];
    } else {
      fv[i] = feval(op, xd, n_in);
      iv[i] = fv[i] != fv[i]     ? 0
              : fv[i] >= 9.2e18  ? INT64_MAX
              : fv[i] <= -9.2e18 ? INT64_MIN
                                 : (int64_t)fv[i];
    }
  }
  nnmem_status_t st = out_int ? nnmem__onnx_set_ints(out, iv, n)
                              : nnmem__onnx_set_floats(out, fv, n);
  free(iv);
  free(fv);
  return st;
}

nnmem_status_t nnmem__onnx_fold_gather(const ox_val_t *src,
                                       const int64_t *src_index, size_t n,
                                       ox_val_t *out) {
  if (!src->has_vals || n > OX_MAX_VALUES) return NNMEM_OK;
  if (src->iv) {
    int64_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return NNMEM_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
      v[i] = nnmem__onnx_int_at(src, (size_t)src_index[i]);
    nnmem_status_t st = nnmem__onnx_set_ints(out, v, n);
    free(v);
    return st;
  }
  double *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n; i++)
    v[i] = nnmem__onnx_float_at(src, (size_t)src_index[i]);
  nnmem_status_t st = nnmem__onnx_set_floats(out, v, n);
  free(v);
  return st;
}

/* onnx_ops_shape.c - shape / dtype inference of the shape-manipulation
 * family: Shape, Size, Reshape, Flatten, Transpose, Squeeze, Unsqueeze,
 * Concat, Split, Slice, Gather*, Pad, Expand, Tile, Constant,
 * ConstantOfShape, Range, NonZero, OneHot, Compress, Unique, EyeLike and
 * the random generators.
 *
 * These ops carry the integer shape computations of exported transformers
 * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape), so each one also
 * computes its output values when its inputs have them (values are kept
 * for tensors up to OX_MAX_VALUES elements). Opset differences handled:
 * Squeeze / Unsqueeze / Split / Slice / Pad / Reshape / Tile take attributes in
 * old opsets and inputs in new ones. Data-dependent outputs: NonZero -> [rank,
 * numel(X)], Compress -> the condition length (bounded by the axis), Unique ->
 * numel(X); each marked in the report. Complexity O(rank) per node plus the
 * folded elements. Thread-safety: pure. */
#include <math.h>
#include <string.h>

#include "import/onnx/onnx_internal.h"

#define A_INT(name, def, var) \
  if ((st = nnmem__onnx_attr_int(c, n, name, def, &var)) != NNMEM_OK) return st

static nnmem_status_t bad(ox_ctx_t *c, ox_node_t *n, const char *what) {
  return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID, "%s", what);
}

/* Output like `shape` with the values of x unchanged (views, reshapes). */
static nnmem_status_t carry_vals(const ox_val_t *x, ox_val_t *y) {
  if (!x || !y || !x->has_vals || nnmem__onnx_numel(y) != (int64_t)x->nvals)
    return NNMEM_OK;
  return x->iv ? nnmem__onnx_set_ints(y, x->iv, x->nvals)
               : nnmem__onnx_set_floats(y, x->fv, x->nvals);
}

static nnmem_status_t infer_shape(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  nnmem_status_t st;
  int64_t start, end;
  A_INT("start", 0, start);
  A_INT("end", INT64_MAX, end);
  if (!y) return NNMEM_OK;
  y->elem = OX_INT64;
  if (!x || x->rank < 0) return NNMEM_OK;
  int64_t r = x->rank;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  int64_t len = end > start ? end - start : 0;
  nnmem__onnx_set(y, OX_INT64, 1, &len);
  for (int64_t i = start; i < end; i++)
    if (x->dims[i] < 0) return NNMEM_OK;
  return nnmem__onnx_set_ints(y, x->dims + start, (size_t)len);
}

static nnmem_status_t infer_size(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  if (!y) return NNMEM_OK;
  nnmem__onnx_set(y, OX_INT64, 0, NULL);
  int64_t k = nnmem__onnx_numel(x);
  return k >= 0 ? nnmem__onnx_set_ints(y, &k, 1) : NNMEM_OK;
}

static nnmem_status_t infer_reshape(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  nnmem_status_t st;
  int64_t allowzero;
  A_INT("allowzero", 0, allowzero);
  const int64_t *sv = NULL;
  size_t ns = 0;
  if (n->opset < 5 || !OX_IN(n, 1)) {
    if ((st = nnmem__onnx_attr_ints(c, n, "shape", &sv, &ns)) != NNMEM_OK)
      return st;
  } else if (!nnmem__onnx_ints_of(n, 1, &sv, &ns)) {
    sv = NULL;
  }
  if (!x || !y) return NNMEM_OK;
  y->elem = x->elem;
  if (!sv) {
    if (OX_IN(n, 1) && OX_IN(n, 1)->rank == 1 && OX_IN(n, 1)->dims[0] >= 0)
      nnmem__onnx_set(y, x->elem, (int32_t)OX_IN(n, 1)->dims[0], NULL);
    return NNMEM_OK;
  }
  if (ns > OX_MAX_RANK) return bad(c, n, "target shape has too many dims");
  int64_t dims[OX_MAX_RANK];
  int32_t neg = -1;
  for (size_t i = 0; i < ns; i++) {
    dims[i] = sv[i];
    if (sv[i] == 0 && !allowzero)
      dims[i] = (int32_t)i < x->rank ? x->dims[i] : -1;
    if (sv[i] == -1) {
      if (neg >= 0) return bad(c, n, "target shape has two -1 dims");
      neg = (int32_t)i;
    } else if (sv[i] < -1) {
      return bad(c, n, "target shape has a dim < -1");
    }
  }
  if (neg >= 0) {
    int64_t total = nnmem__onnx_numel(x), rest = 1;
    for (size_t i = 0; i < ns; i++)
      if ((int32_t)i != neg) rest = nnmem__onnx_dmul(rest, dims[i]);
    dims[neg] = total < 0 || rest <= 0 ? (rest == 0 ? 0 : -1) : total / rest;
    if (total >= 0 && rest > 0 && total % rest)
      return bad(c, n, "input size is not divisible by the target shape");
  }
  nnmem__onnx_set(y, x->elem, (int32_t)ns, dims);
  int64_t nx = nnmem__onnx_numel(x), ny = nnmem__onnx_numel(y);
  if (nx >= 0 && ny >= 0 && nx != ny)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "reshapes %lld elements into %lld",
                                  (long long)nx, (long long)ny);
  return carry_vals(x, y);
}

static nnmem_status_t infer_flatten(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  nnmem_status_t st;
  int64_t axis;
  A_INT("axis", 1, axis);
  if (!x || !y || x->rank < 0) return NNMEM_OK;
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis > x->rank) return bad(c, n, "axis out of range");
  int64_t d[2] = {1, 1};
  for (int32_t i = 0; i < x->rank; i++) {
    int64_t *p = &d[i >= axis];
    *p = nnmem__onnx_dmul(*p, x->dims[i]);
  }
  nnmem__onnx_set(y, x->elem, 2, d);
  return carry_vals(x, y);
}

/* Folds y from x's values when y element (i_0, ..., i_r) is x element
 * (beg[d] + i_d step[d]) along x axis src[d] for each d (transpose: src a
 * permutation, beg 0, step 1; slice: src identity). NULL src / beg / step:
 * identity, 0, 1. x's values imply x's size <= OX_MAX_VALUES, so the
 * strides do not overflow. */
static nnmem_status_t fold_strided(const ox_val_t *x, ox_val_t *y,
                                   const int64_t *src, const int64_t *beg,
                                   const int64_t *step) {
  int64_t total = nnmem__onnx_numel(y);
  if (!x->has_vals || total < 0 || total > OX_MAX_VALUES) return NNMEM_OK;
  int64_t xs[OX_MAX_RANK], s = 1, *idx;
  for (int32_t d = x->rank - 1; d >= 0; d--) { /* row-major strides of x */
    xs[d] = s;
    s *= x->dims[d];
  }
  idx = malloc(((size_t)total + 1) * sizeof *idx);
  if (!idx) return NNMEM_ERR_NOMEM;
  for (int64_t i = 0; i < total; i++) {
    int64_t lin = i, at = 0;
    for (int32_t d = y->rank - 1; d >= 0; d--) {
      int64_t k =
          (beg ? beg[d] : 0) + (lin % y->dims[d]) * (step ? step[d] : 1);
      at += k * xs[src ? src[d] : d];
      lin /= y->dims[d];
    }
    idx[i] = at;
  }
  nnmem_status_t st = nnmem__onnx_fold_gather(x, idx, (size_t)total, y);
  free(idx);
  return st;
}

static nnmem_status_t infer_transpose(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  const int64_t *perm;
  size_t np;
  nnmem_status_t st = nnmem__onnx_attr_ints(c, n, "perm", &perm, &np);
  if (st != NNMEM_OK || !x || !y || x->rank < 0) return st;
  int64_t p[OX_MAX_RANK], dims[OX_MAX_RANK];
  uint8_t seen[OX_MAX_RANK] = {0};
  if (perm && np != (size_t)x->rank)
    return bad(c, n, "perm length differs from the input rank");
  for (int32_t i = 0; i < x->rank; i++) {
    p[i] = perm ? perm[i] : x->rank - 1 - i;
    if (p[i] < 0) p[i] += x->rank;
    if (p[i] < 0 || p[i] >= x->rank || seen[p[i]])
      return bad(c, n, "perm is not a permutation");
    seen[p[i]] = 1;
    dims[i] = x->dims[p[i]];
  }
  nnmem__onnx_set(y, x->elem, x->rank, dims);
  return fold_strided(x, y, p, NULL, NULL);
}

static nnmem_status_t infer_squeeze(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  int64_t axes[OX_MAX_RANK];
  size_t na;
  nnmem_status_t st;
  int r = nnmem__onnx_axes(c, n, "axes", 1, axes, &na, &st);
  if (st != NNMEM_OK || !x || !y) return st;
  y->elem = x->elem;
  if (r < 0 || x->rank < 0) return NNMEM_OK;
  uint8_t drop[OX_MAX_RANK] = {0};
  for (size_t i = 0; i < na; i++) {
    int32_t a;
    if (!nnmem__onnx_axis(axes[i], x->rank, &a))
      return bad(c, n, "axis out of range");
    drop[a] = 1;
  }
  int64_t dims[OX_MAX_RANK];
  int32_t k = 0;
  for (int32_t d = 0; d < x->rank; d++) {
    if (na == 0 && x->dims[d] < 0) return NNMEM_OK; /* unknown: may be 1 */
    if (na ? drop[d] : x->dims[d] == 1) continue;
    dims[k++] = x->dims[d];
  }
  nnmem__onnx_set(y, x->elem, k, dims);
  return carry_vals(x, y);
}

static nnmem_status_t infer_unsqueeze(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  int64_t axes[OX_MAX_RANK];
  size_t na;
  nnmem_status_t st;
  int r = nnmem__onnx_axes(c, n, "axes", 1, axes, &na, &st);
  if (st != NNMEM_OK || !x || !y) return st;
  y->elem = x->elem;
  if (r <= 0 || x->rank < 0) return NNMEM_OK;
  int32_t out_rank = x->rank + (int32_t)na;
  if (out_rank > OX_MAX_RANK) return bad(c, n, "output rank is too large");
  uint8_t ins[OX_MAX_RANK] = {0};
  for (size_t i = 0; i < na; i++) {
    int32_t a;
    if (!nnmem__onnx_axis(axes[i], out_rank, &a) || ins[a])
      return bad(c, n, "axes out of range or repeated");
    ins[a] = 1;
  }
  int64_t dims[OX_MAX_RANK];
  for (int32_t d = 0, k = 0; d < out_rank; d++)
    dims[d] = ins[d] ? 1 : x->dims[k++];
  nnmem__onnx_set(y, x->elem, out_rank, dims);
  return carry_vals(x, y);
}

/* 1-D (or scalar) value concatenation. */
static nnmem_status_t concat_vals(ox_node_t *n, ox_val_t *y) {
  size_t total = 0;
  int isint = 1;
  for (size_t k = 0; k < n->n_in; k++) {
    ox_val_t *v = n->in[k];
    if (!v || !v->has_vals || v->rank > 1) return NNMEM_OK;
    total += v->nvals;
    if (!v->iv) isint = 0;
  }
  if (!isint || total > OX_MAX_VALUES) return NNMEM_OK;
  int64_t *buf = malloc((total + 1) * sizeof *buf);
  if (!buf) return NNMEM_ERR_NOMEM;
  size_t at = 0;
  for (size_t k = 0; k < n->n_in; k++)
    for (size_t i = 0; i < n->in[k]->nvals; i++)
      buf[at++] = n->in[k]->iv[i];
  nnmem_status_t st = nnmem__onnx_set_ints(y, buf, total);
  free(buf);
  return st;
}

static nnmem_status_t infer_concat(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *y = OX_OUT(n, 0), *x0 = OX_IN(n, 0);
  nnmem_status_t st;
  int64_t axis;
  A_INT("axis", 0, axis);
  if (!y || !x0) return NNMEM_OK;
  y->elem = x0->elem;
  int32_t r = x0->rank, a;
  if (r < 0) return NNMEM_OK;
  if (!nnmem__onnx_axis(axis, r, &a)) return bad(c, n, "axis out of range");
  int64_t dims[OX_MAX_RANK];
  memcpy(dims, x0->dims, sizeof dims);
  dims[a] = 0;
  for (size_t k = 0; k < n->n_in; k++) {
    ox_val_t *v = n->in[k];
    if (!v || v->rank < 0) return NNMEM_OK;
    if (v->rank == 0 && r == 1) { /* lenient: old exporters concat scalars */
      dims[0] = nnmem__onnx_dadd(dims[0], 1);
      continue;
    }
    if (v->rank != r)
      return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                    "input %zu ('%s') has rank %d, input 0 "
                                    "('%s') rank %d",
                                    k, v->name, (int)v->rank, x0->name, (int)r);
    for (int32_t d = 0; d < r; d++) {
      if (d == a)
        dims[a] = nnmem__onnx_dadd(dims[a], v->dims[a]);
      else if (dims[d] < 0)
        dims[d] = v->dims[d];
    }
  }
  nnmem__onnx_set(y, x0->elem, r, dims);
  return r == 1 ? concat_vals(n, y) : NNMEM_OK;
}

/* Split sizes must be >= 0 and add up to the axis length (when known). */
static nnmem_status_t check_split(ox_ctx_t *c, ox_node_t *n, const int64_t *sp,
                                  size_t nsp, int64_t total) {
  int64_t sum = 0;
  for (size_t k = 0; k < nsp; k++) {
    if (sp[k] < 0) return bad(c, n, "split has a negative size");
    sum = nnmem__onnx_dadd(sum, sp[k]);
    if (sum < 0) return bad(c, n, "split sizes overflow");
  }
  if (total >= 0 && sum != total)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "split sizes add up to %lld, the axis has "
                                  "%lld",
                                  (long long)sum, (long long)total);
  return NNMEM_OK;
}

static nnmem_status_t infer_split(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  nnmem_status_t st;
  int64_t axis;
  A_INT("axis", 0, axis);
  const int64_t *sp = NULL;
  size_t nsp = 0;
  if ((st = nnmem__onnx_attr_ints(c, n, "split", &sp, &nsp)) != NNMEM_OK)
    return st;
  if (!sp && OX_IN(n, 1) && !nnmem__onnx_ints_of(n, 1, &sp, &nsp))
    return NNMEM_OK;
  if (!x || x->rank < 0) return NNMEM_OK;
  int32_t a;
  if (!nnmem__onnx_axis(axis, x->rank, &a))
    return bad(c, n, "axis out of range");
  if (sp && nsp != n->n_out) return bad(c, n, "split has the wrong length");
  int64_t total = x->dims[a], base = 0, no = (int64_t)n->n_out;
  if (sp && (st = check_split(c, n, sp, nsp, total)) != NNMEM_OK) return st;
  for (size_t k = 0; k < n->n_out; k++) {
    int64_t dims[OX_MAX_RANK], len;
    memcpy(dims, x->dims, sizeof dims);
    if (sp)
      len = sp[k];
    else if (total < 0)
      len = -1;
    else /* equal parts, the last one smaller (opset 18 num_outputs) */
      len = total / no + (total % no != 0),
      len = (int64_t)k == no - 1 ? total - len * (no - 1) : len;
    if (len < 0 && !sp && total >= 0)
      return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                    "cannot split %lld into %lld parts",
                                    (long long)total, (long long)no);
    dims[a] = len;
    nnmem__onnx_set(OX_OUT(n, k), x->elem, x->rank, dims);
    if (x->rank == 1 && x->has_vals && len >= 0 && OX_OUT(n, k) &&
        (size_t)(base + len) <= x->nvals) {
      st = x->iv ? nnmem__onnx_set_ints(OX_OUT(n, k), x->iv + base, (size_t)len)
                 : nnmem__onnx_set_floats(OX_OUT(n, k), x->fv + base,
                                          (size_t)len);
      if (st != NNMEM_OK) return st;
    }
    base += len < 0 ? 0 : len;
  }
  return NNMEM_OK;
}

/* Reads Slice parameters (attributes before opset 10, inputs after). */
static int slice_params(ox_ctx_t *c, ox_node_t *n, const int64_t **s,
                        const int64_t **e, const int64_t **ax,
                        const int64_t **steps, size_t *ns, size_t *nax,
                        size_t *nst, nnmem_status_t *st) {
  size_t ne;
  *ax = *steps = NULL;
  *nax = *nst = 0;
  if (n->opset < 10) {
    if ((*st = nnmem__onnx_attr_ints(c, n, "starts", s, ns)) != NNMEM_OK ||
        (*st = nnmem__onnx_attr_ints(c, n, "ends", e, &ne)) != NNMEM_OK ||
        (*st = nnmem__onnx_attr_ints(c, n, "axes", ax, nax)) != NNMEM_OK)
      return 0;
  } else {
    if (!nnmem__onnx_ints_of(n, 1, s, ns) || !nnmem__onnx_ints_of(n, 2, e, &ne))
      return 0;
    if (OX_IN(n, 3) && !nnmem__onnx_ints_of(n, 3, ax, nax)) return 0;
    if (OX_IN(n, 4) && !nnmem__onnx_ints_of(n, 4, steps, nst)) return 0;
  }
  if (!*s || !*e || ne != *ns || (*ax && *nax != *ns) ||
      (*steps && *nst != *ns)) {
    *st = nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                 "starts / ends / axes / steps lengths differ");
    return 0;
  }
  return 1;
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* Records on n the one axis along which y = x[beg : beg + y dim] with step
 * 1, every other axis taken whole (axis 0 start 0 when none is cut); leaves
 * has_slice 0 for anything else (unknown dims, reversed or strided). */
static void note_slice(ox_node_t *n, const ox_val_t *x, const int64_t *dims,
                       const int64_t *beg, const int64_t *step) {
  int32_t cut = -1;
  for (int32_t d = 0; d < x->rank; d++) {
    if (x->dims[d] < 0) return;
    if (beg[d] == 0 && dims[d] == x->dims[d]) continue; /* whole */
    if (cut >= 0 || (step[d] != 1 && dims[d] > 1)) return;
    cut = d;
  }
  if (x->rank < 1) return;
  n->has_slice = 1;
  n->slice_axis = cut < 0 ? 0 : cut;
  n->slice_start = cut < 0 ? 0 : beg[cut];
}

nnmem_status_t nnmem__onnx_infer_slice(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  const int64_t *s, *e, *ax, *stp;
  size_t ns, nax, nst;
  nnmem_status_t st = NNMEM_OK;
  n->has_slice = 0;
  if (!x || !y) return NNMEM_OK;
  y->elem = x->elem;
  if (!slice_params(c, n, &s, &e, &ax, &stp, &ns, &nax, &nst, &st)) {
    if (st == NNMEM_OK && x->rank >= 0) y->rank = x->rank;
    if (st == NNMEM_OK && x->rank >= 0)
      for (int32_t d = 0; d < x->rank; d++)
        y->dims[d] = -1;
    return st;
  }
  if (x->rank < 0) return NNMEM_OK;
  int64_t dims[OX_MAX_RANK], beg[OX_MAX_RANK], step[OX_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  for (int32_t d = 0; d < x->rank; d++) {
    beg[d] = 0;
    step[d] = 1;
  }
  for (size_t i = 0; i < ns; i++) {
    int32_t a;
    if (!nnmem__onnx_axis(ax ? ax[i] : (int64_t)i, x->rank, &a))
      return bad(c, n, "axis out of range");
    int64_t dim = x->dims[a], k = stp ? stp[i] : 1, b = s[i], en = e[i];
    if (k == 0 || k == INT64_MIN) return bad(c, n, "step is 0 or too small");
    if (dim < 0) {
      dims[a] = -1;
      continue;
    }
    if (b < 0) b += dim;
    if (en < 0 && en > INT64_MIN + dim) en += dim;
    if (k > 0) {
      b = clampi(b, 0, dim);
      en = clampi(en, 0, dim);
      dims[a] = en > b ? (en - b - 1) / k + 1 : 0;
    } else {
      b = clampi(b, 0, dim - 1);
      en = clampi(en, -1, dim - 1);
      dims[a] = b > en ? (b - en - 1) / (-k) + 1 : 0;
    }
    beg[a] = b;
    step[a] = k;
  }
  nnmem__onnx_set(y, x->elem, x->rank, dims);
  note_slice(n, x, dims, beg, step);
  return fold_strided(x, y, NULL, beg, step);
}

static nnmem_status_t infer_gather(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *idx = OX_IN(n, 1), *y = OX_OUT(n, 0);
  nnmem_status_t st;
  int64_t axis;
  A_INT("axis", 0, axis);
  if (!x || !idx || !y) return NNMEM_OK;
  y->elem = x->elem;
  if (x->rank < 0 || idx->rank < 0) return NNMEM_OK;
  int32_t a;
  if (!nnmem__onnx_axis(axis, x->rank, &a))
    return bad(c, n, "axis out of range");
  int32_t r = x->rank - 1 + idx->rank;
  if (r > OX_MAX_RANK) return bad(c, n, "output rank is too large");
  int64_t dims[OX_MAX_RANK];
  int32_t k = 0;
  for (int32_t d = 0; d < a; d++)
    dims[k++] = x->dims[d];
  for (int32_t d = 0; d < idx->rank; d++)
    dims[k++] = idx->dims[d];
  for (int32_t d = a + 1; d < x->rank; d++)
    dims[k++] = x->dims[d];
  nnmem__onnx_set(y, x->elem, r, dims);
  /* fold: 1-D data (shape vectors) or scalar gathers */
  if (x->rank == 1 && x->has_vals && idx->has_vals && idx->iv &&
      x->dims[0] >= 0) {
    int64_t *map = malloc((idx->nvals + 1) * sizeof *map);
    if (!map) return NNMEM_ERR_NOMEM;
    for (size_t i = 0; i < idx->nvals; i++) {
      int64_t j = idx->iv[i] < 0 ? idx->iv[i] + x->dims[0] : idx->iv[i];
      map[i] = clampi(j, 0, x->dims[0] ? x->dims[0] - 1 : 0);
    }
    st = nnmem__onnx_fold_gather(x, map, idx->nvals, y);
    free(map);
    return st;
  }
  return NNMEM_OK;
}

static nnmem_status_t infer_gather_elements(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *idx = OX_IN(n, 1);
  if (!x || !idx) return NNMEM_OK;
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, idx->rank, idx->dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_gather_nd(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *idx = OX_IN(n, 1);
  nnmem_status_t st;
  int64_t b;
  A_INT("batch_dims", 0, b);
  if (!x || !idx || x->rank < 0 || idx->rank < 1) return NNMEM_OK;
  int64_t last = idx->dims[idx->rank - 1];
  if (b < 0 || b >= idx->rank || b > x->rank)
    return bad(c, n, "batch_dims out of range");
  if (last < 0) return NNMEM_OK;
  if (last > x->rank - b)
    return bad(c, n, "indices' last dim is larger than the data rank");
  int64_t dims[OX_MAX_RANK];
  int32_t r = 0;
  for (int32_t d = 0; d < idx->rank - 1; d++)
    dims[r++] = idx->dims[d];
  for (int64_t d = b + last; d < x->rank && r < OX_MAX_RANK; d++)
    dims[r++] = x->dims[d];
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, r, dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_pad(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  const int64_t *p = NULL, *ax = NULL;
  size_t np = 0, nax = 0;
  nnmem_status_t st = nnmem__onnx_attr_ints(c, n, "pads", &p, &np);
  if (st != NNMEM_OK) return st;
  if (!p) st = nnmem__onnx_attr_ints(c, n, "paddings", &p, &np);
  if (st != NNMEM_OK || !x || !y) return st;
  y->elem = x->elem;
  if (!p && !nnmem__onnx_ints_of(n, 1, &p, &np)) return NNMEM_OK;
  if (OX_IN(n, 3) && !nnmem__onnx_ints_of(n, 3, &ax, &nax)) return NNMEM_OK;
  if (x->rank < 0) return NNMEM_OK;
  size_t na = ax ? nax : (size_t)x->rank;
  if (np != 2 * na) return bad(c, n, "pads has the wrong length");
  int64_t dims[OX_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  for (size_t i = 0; i < na; i++) {
    int32_t a;
    if (!nnmem__onnx_axis(ax ? ax[i] : (int64_t)i, x->rank, &a))
      return bad(c, n, "axis out of range");
    if (dims[a] < 0) continue; /* unknown stays unknown */
    int64_t grow;
    if (__builtin_add_overflow(p[i], p[i + na], &grow) ||
        __builtin_add_overflow(dims[a], grow, &dims[a]))
      return bad(c, n, "pads overflow");
    if (dims[a] < 0) return bad(c, n, "pads make a dim negative");
  }
  nnmem__onnx_set(y, x->elem, x->rank, dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_expand(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0), *sh = OX_IN(n, 1);
  if (!x || !y) return NNMEM_OK;
  y->elem = x->elem;
  if (!sh || !sh->has_vals || sh->nvals > OX_MAX_RANK) return NNMEM_OK;
  ox_val_t t;
  memset(&t, 0, sizeof t);
  t.rank = (int32_t)sh->nvals;
  for (size_t i = 0; i < sh->nvals; i++)
    t.dims[i] = nnmem__onnx_int_at(sh, i);
  ox_val_t *both[2] = {x, &t};
  int32_t r;
  int64_t dims[OX_MAX_RANK];
  if (!nnmem__onnx_broadcast(both, 2, &r, dims)) return NNMEM_OK;
  nnmem__onnx_set(y, x->elem, r, dims);
  ox_val_t *one[1] = {x};
  return nnmem__onnx_fold_elementwise(OX_F_IDENT, one, 1, y);
}

static nnmem_status_t infer_tile(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  const int64_t *r;
  size_t nr;
  if (!x || !y) return NNMEM_OK;
  y->elem = x->elem;
  if (!nnmem__onnx_ints_of(n, 1, &r, &nr) || x->rank < 0) return NNMEM_OK;
  if (nr != (size_t)x->rank) return bad(c, n, "repeats has the wrong length");
  int64_t dims[OX_MAX_RANK];
  for (int32_t d = 0; d < x->rank; d++)
    dims[d] = nnmem__onnx_dmul(x->dims[d], r[d]);
  nnmem__onnx_set(y, x->elem, x->rank, dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_constant(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *y = OX_OUT(n, 0);
  const Onnx__TensorProto *t;
  nnmem_status_t st = nnmem__onnx_attr_tensor(c, n, "value", &t);
  if (st != NNMEM_OK || !y) return st;
  if (t) return nnmem__onnx_load_tensor(c, t, y, n->name);
  const Onnx__AttributeProto *a;
  if ((a = nnmem__onnx_attr(n, "value_int"))) {
    nnmem__onnx_set(y, OX_INT64, 0, NULL);
    return nnmem__onnx_set_ints(y, &a->i, 1);
  }
  if ((a = nnmem__onnx_attr(n, "value_ints"))) {
    int64_t len = (int64_t)a->n_ints;
    nnmem__onnx_set(y, OX_INT64, 1, &len);
    return nnmem__onnx_set_ints(y, a->ints, a->n_ints);
  }
  if ((a = nnmem__onnx_attr(n, "value_float"))) {
    double f = a->f;
    nnmem__onnx_set(y, OX_FLOAT, 0, NULL);
    return nnmem__onnx_set_floats(y, &f, 1);
  }
  if ((a = nnmem__onnx_attr(n, "value_floats"))) {
    int64_t len = (int64_t)a->n_floats;
    nnmem__onnx_set(y, OX_FLOAT, 1, &len);
    double *f = malloc((a->n_floats + 1) * sizeof *f);
    if (!f) return NNMEM_ERR_NOMEM;
    for (size_t i = 0; i < a->n_floats; i++)
      f[i] = a->floats[i];
    st = nnmem__onnx_set_floats(y, f, a->n_floats);
    free(f);
    return st;
  }
  if ((a = nnmem__onnx_attr(n, "value_string"))) {
    nnmem__onnx_set(y, OX_STRING, 0, NULL);
    return NNMEM_OK;
  }
  if ((a = nnmem__onnx_attr(n, "value_strings"))) {
    int64_t len = (int64_t)a->n_strings;
    nnmem__onnx_set(y, OX_STRING, 1, &len);
    return NNMEM_OK;
  }
  if ((a = nnmem__onnx_attr(n, "sparse_value")) && a->sparse_tensor) {
    const Onnx__SparseTensorProto *sp = a->sparse_tensor;
    if (sp->n_dims <= OX_MAX_RANK && sp->values)
      nnmem__onnx_set(y, sp->values->data_type, (int32_t)sp->n_dims, sp->dims);
    return NNMEM_OK;
  }
  return nnmem__onnx_node_error(c, n, NNMEM_ERR_PARSE, "has no value");
}

static nnmem_status_t infer_constant_of_shape(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *y = OX_OUT(n, 0), *sh = OX_IN(n, 0);
  const Onnx__TensorProto *t;
  nnmem_status_t st = nnmem__onnx_attr_tensor(c, n, "value", &t);
  if (st != NNMEM_OK || !y) return st;
  ox_val_t fill;
  memset(&fill, 0, sizeof fill);
  fill.elem = OX_FLOAT;
  if (t && (st = nnmem__onnx_load_tensor(c, t, &fill, n->name)) != NNMEM_OK) {
    nnmem__onnx_val_free(&fill);
    return st;
  }
  y->elem = fill.elem;
  if (sh && sh->has_vals && sh->nvals <= OX_MAX_RANK) {
    int64_t dims[OX_MAX_RANK];
    for (size_t i = 0; i < sh->nvals; i++) {
      dims[i] = nnmem__onnx_int_at(sh, i);
      if (dims[i] < 0) {
        nnmem__onnx_val_free(&fill);
        return bad(c, n, "shape has a negative dim");
      }
    }
    nnmem__onnx_set(y, fill.elem, (int32_t)sh->nvals, dims);
    int64_t total = nnmem__onnx_numel(y);
    if (total >= 0 && total <= 4096 && nnmem__onnx_is_int(fill.elem)) {
      int64_t *v = malloc(((size_t)total + 1) * sizeof *v);
      st = v ? NNMEM_OK : NNMEM_ERR_NOMEM;
      for (int64_t i = 0; v && i < total; i++)
        v[i] = nnmem__onnx_int_at(&fill, 0);
      if (v) st = nnmem__onnx_set_ints(y, v, (size_t)total);
      free(v);
    }
  } else if (sh && sh->rank == 1 && sh->dims[0] >= 0) {
    nnmem__onnx_set(y, fill.elem, (int32_t)sh->dims[0], NULL);
  }
  nnmem__onnx_val_free(&fill);
  return st;
}

static nnmem_status_t infer_range(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *s = OX_IN(n, 0), *l = OX_IN(n, 1), *d = OX_IN(n, 2);
  ox_val_t *y = OX_OUT(n, 0);
  if (!s || !y) return NNMEM_OK;
  y->elem = s->elem;
  y->rank = 1;
  y->dims[0] = -1;
  if (!l || !d || !s->has_vals || !l->has_vals || !d->has_vals) return NNMEM_OK;
  double a = nnmem__onnx_float_at(s, 0), b = nnmem__onnx_float_at(l, 0);
  double k = nnmem__onnx_float_at(d, 0);
  if (k == 0) return bad(c, n, "delta is 0");
  double cnt = ceil((b - a) / k);
  if (cnt > 1e15) return bad(c, n, "the range is too long");
  int64_t len = cnt > 0 ? (int64_t)cnt : 0;
  y->dims[0] = len;
  if (!s->iv || len > OX_MAX_VALUES) return NNMEM_OK;
  int64_t *v = malloc(((size_t)len + 1) * sizeof *v);
  if (!v) return NNMEM_ERR_NOMEM;
  uint64_t a0 = (uint64_t)s->iv[0], k0 = (uint64_t)nnmem__onnx_int_at(d, 0);
  for (int64_t i = 0; i < len; i++)
    v[i] = (int64_t)(a0 + (uint64_t)i * k0);
  nnmem_status_t st = nnmem__onnx_set_ints(y, v, (size_t)len);
  free(v);
  return st;
}

static nnmem_status_t infer_nonzero(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  if (!x || !y || x->rank < 0) return NNMEM_OK;
  int64_t total = nnmem__onnx_numel(x), dims[2] = {x->rank, total};
  if (x->has_vals && (int64_t)x->nvals == total) {
    int64_t nz = 0;
    for (size_t i = 0; i < x->nvals; i++)
      nz += nnmem__onnx_float_at(x, i) != 0;
    dims[1] = nz;
    nnmem__onnx_set(y, OX_INT64, 2, dims);
    return NNMEM_OK;
  }
  nnmem__onnx_set(y, OX_INT64, 2, dims);
  nnmem__onnx_mark_data_dep(c, n, y);
  return NNMEM_OK;
}

static nnmem_status_t infer_onehot(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *idx = OX_IN(n, 0), *depth = OX_IN(n, 1), *vals = OX_IN(n, 2);
  nnmem_status_t st;
  int64_t axis;
  A_INT("axis", -1, axis);
  if (!idx || !vals || idx->rank < 0 || idx->rank >= OX_MAX_RANK)
    return NNMEM_OK;
  int32_t r = idx->rank + 1, a;
  if (!nnmem__onnx_axis(axis, r, &a)) return bad(c, n, "axis out of range");
  int64_t dv = depth && depth->has_vals ? nnmem__onnx_int_at(depth, 0) : -1;
  int64_t dims[OX_MAX_RANK];
  for (int32_t d = 0, k = 0; d < r; d++)
    dims[d] = d == a ? dv : idx->dims[k++];
  nnmem__onnx_set(OX_OUT(n, 0), vals->elem, r, dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_compress(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *cond = OX_IN(n, 1), *y = OX_OUT(n, 0);
  const Onnx__AttributeProto *aa = nnmem__onnx_attr(n, "axis");
  nnmem_status_t st;
  int64_t axis;
  A_INT("axis", 0, axis);
  if (!x || !cond || !y || x->rank < 0 || cond->rank != 1) return NNMEM_OK;
  int64_t len = cond->dims[0], dims[OX_MAX_RANK];
  int32_t r = 1;
  if (cond->has_vals) {
    len = 0;
    for (size_t i = 0; i < cond->nvals; i++)
      len += nnmem__onnx_int_at(cond, i) != 0;
  }
  if (aa) {
    int32_t a;
    if (!nnmem__onnx_axis(axis, x->rank, &a))
      return bad(c, n, "axis out of range");
    memcpy(dims, x->dims, sizeof dims);
    dims[a] = len < dims[a] || dims[a] < 0 ? len : dims[a];
    r = x->rank;
  } else {
    int64_t t = nnmem__onnx_numel(x);
    dims[0] = t >= 0 && t < len ? t : len;
  }
  nnmem__onnx_set(y, x->elem, r, dims);
  if (!cond->has_vals) nnmem__onnx_mark_data_dep(c, n, y);
  return NNMEM_OK;
}

static nnmem_status_t infer_unique(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  const Onnx__AttributeProto *aa = nnmem__onnx_attr(n, "axis");
  nnmem_status_t st;
  int64_t axis;
  A_INT("axis", 0, axis);
  if (!x || x->rank < 0) return NNMEM_OK;
  int64_t total = nnmem__onnx_numel(x), k = total;
  int64_t dims[OX_MAX_RANK];
  int32_t a = 0;
  if (aa) {
    if (!nnmem__onnx_axis(axis, x->rank, &a))
      return bad(c, n, "axis out of range");
    memcpy(dims, x->dims, sizeof dims);
    k = x->dims[a];
    nnmem__onnx_set(OX_OUT(n, 0), x->elem, x->rank, dims);
  } else {
    nnmem__onnx_set(OX_OUT(n, 0), x->elem, 1, &k);
  }
  nnmem__onnx_set(OX_OUT(n, 1), OX_INT64, 1, &k);
  nnmem__onnx_set(OX_OUT(n, 2), OX_INT64, 1, aa ? &x->dims[a] : &total);
  nnmem__onnx_set(OX_OUT(n, 3), OX_INT64, 1, &k);
  nnmem__onnx_mark_data_dep(c, n, OX_OUT(n, 0));
  return NNMEM_OK;
}

/* EyeLike, RandomNormalLike, RandomUniformLike, Bernoulli: input shape,
 * `dtype` attribute or the input's type. */
static nnmem_status_t infer_like(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  nnmem_status_t st;
  int64_t dt;
  A_INT("dtype", 0, dt);
  if (!x) return NNMEM_OK;
  nnmem__onnx_set(OX_OUT(n, 0), dt > 0 ? (int32_t)dt : x->elem, x->rank,
                  x->dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_random(ox_ctx_t *c, ox_node_t *n) {
  const int64_t *sh;
  size_t ns;
  nnmem_status_t st;
  int64_t dt;
  A_INT("dtype", OX_FLOAT, dt);
  if ((st = nnmem__onnx_attr_ints(c, n, "shape", &sh, &ns)) != NNMEM_OK)
    return st;
  if (sh && ns <= OX_MAX_RANK)
    nnmem__onnx_set(OX_OUT(n, 0), (int32_t)dt, (int32_t)ns, sh);
  return NNMEM_OK;
}

static nnmem_status_t infer_multinomial(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  nnmem_status_t st;
  int64_t dt, ss;
  A_INT("dtype", OX_INT32, dt);
  A_INT("sample_size", 1, ss);
  if (!x || x->rank != 2) return NNMEM_OK;
  int64_t d[2] = {x->dims[0], ss};
  nnmem__onnx_set(OX_OUT(n, 0), (int32_t)dt, 2, d);
  return NNMEM_OK;
}

const ox_op_t nnmem__onnx_ops_shape[] = {
    {"Shape", infer_shape, 0},
    {"Size", infer_size, 0},
    {"Reshape", infer_reshape, OX_VIEW},
    {"Flatten", infer_flatten, OX_VIEW},
    {"Squeeze", infer_squeeze, OX_VIEW},
    {"Unsqueeze", infer_unsqueeze, OX_VIEW},
    {"Transpose", infer_transpose, 0},
    {"Concat", infer_concat, 0},
    {"Split", infer_split, 0},
    {"Slice", nnmem__onnx_infer_slice, 0},
    {"Gather", infer_gather, 0},
    {"GatherElements", infer_gather_elements, 0},
    {"GatherND", infer_gather_nd, 0},
    {"Pad", infer_pad, 0},
    {"Expand", infer_expand, 0},
    {"Tile", infer_tile, 0},
    {"Constant", infer_constant, 0},
    {"ConstantOfShape", infer_constant_of_shape, 0},
    {"Range", infer_range, 0},
    {"NonZero", infer_nonzero, 0},
    {"OneHot", infer_onehot, 0},
    {"Compress", infer_compress, 0},
    {"Unique", infer_unique, 0},
    {"EyeLike", infer_like, 0},
    {"RandomNormalLike", infer_like, OX_NOFOLD},
    {"RandomUniformLike", infer_like, OX_NOFOLD},
    {"Bernoulli", infer_like, OX_NOFOLD},
    {"RandomNormal", infer_random, OX_NOFOLD},
    {"RandomUniform", infer_random, OX_NOFOLD},
    {"Multinomial", infer_multinomial, OX_NOFOLD},
    {NULL, NULL, 0}};

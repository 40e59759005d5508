/* onnx_ops_nn.c - shape / dtype inference of the neural-network operator
 * family: convolutions and pooling, Gemm / MatMul / Einsum, reductions and
 * ArgMax / TopK, resizing, depth/space rearrangement, recurrent layers and
 * detection ops (NonMaxSuppression, RoiAlign).
 *
 * Spatial output size (ONNX Conv / pooling specification), per axis i with
 * input x, kernel k, dilation d, stride s, pads pb + pe, e = (k - 1) d + 1:
 *   NOTSET: floor((x + pb + pe - e) / s) + 1 (ceil with ceil_mode = 1,
 *           less a last window that would start in the right padding)
 *   SAME_UPPER / SAME_LOWER: ceil(x / s)
 *   VALID: floor((x - e) / s) + 1
 * ConvTranspose: s (x - 1) + output_padding + e - pb - pe, or output_shape,
 * or x s with SAME padding.
 * MatMul follows numpy: 1-D operands are promoted and the promoted dim is
 * removed again; the batch dims broadcast.
 * Data-dependent outputs: TopK with an unknown k takes the whole axis;
 * NonMaxSuppression takes batch x classes x min(max_output_boxes_per_class,
 * boxes) rows (boxes when that input is unknown); both are reported.
 * Complexity O(rank) per node. Thread-safety: pure. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "import/onnx/onnx_internal.h"

#define A_INT(name, def, var) \
  if ((st = nnmem__onnx_attr_int(c, n, name, def, &var)) != NNMEM_OK) return st
#define A_INTS(name, p, cnt) \
  if ((st = nnmem__onnx_attr_ints(c, n, name, &p, &cnt)) != NNMEM_OK) return st

typedef struct window {
  const int64_t *k, *s, *d, *p;
  size_t nk, ns, nd, np;
  char pad[32];
  int64_t ceil_mode;
} window_t;

static nnmem_status_t read_window(ox_ctx_t *c, ox_node_t *n, window_t *w) {
  nnmem_status_t st;
  memset(w, 0, sizeof *w);
  A_INTS("kernel_shape", w->k, w->nk);
  A_INTS("strides", w->s, w->ns);
  A_INTS("dilations", w->d, w->nd);
  A_INTS("pads", w->p, w->np);
  A_INT("ceil_mode", 0, w->ceil_mode);
  return nnmem__onnx_attr_string(c, n, "auto_pad", "NOTSET", w->pad,
                                 sizeof w->pad);
}

static int64_t at(const int64_t *a, size_t n, size_t i, int64_t def) {
  return i < n ? a[i] : def;
}

#define WIN_UNKNOWN (-1) /* input or kernel size unknown */
#define WIN_RANGE (-2)   /* strides / dilations / pads out of range */
#define WIN_EMPTY (-3)   /* the kernel is larger than the padded input */

/* Spatial output size of axis i (input x, kernel k), or a WIN_* code. */
static int64_t window_out(const window_t *w, size_t i, size_t nsp, int64_t x,
                          int64_t k) {
  int64_t s = at(w->s, w->ns, i, 1), d = at(w->d, w->nd, i, 1);
  const int64_t lim = (int64_t)1 << 30;
  if (s <= 0 || d <= 0 || s > lim || d > lim) return WIN_RANGE;
  if (x < 0 || k < 0 || x > lim || k > lim) return WIN_UNKNOWN;
  int64_t e = (k - 1) * d + 1;
  if (strncmp(w->pad, "SAME", 4) == 0) return (x + s - 1) / s;
  int64_t pb = 0, pe = 0;
  if (strcmp(w->pad, "VALID") != 0) {
    pb = at(w->p, w->np, i, 0);
    pe = at(w->p, w->np, i + nsp, 0);
  }
  if (pb < 0 || pe < 0 || pb > lim || pe > lim) return WIN_RANGE;
  int64_t span = x + pb + pe - e;
  if (span < 0) return WIN_EMPTY;
  if (!w->ceil_mode) return span / s + 1;
  /* ceil mode: the last window must start inside the input or the
   * leading padding, as in PyTorch, whose exports set ceil_mode */
  int64_t out = (span + s - 1) / s + 1;
  if ((out - 1) * s >= x + pb) out--;
  return out;
}

static nnmem_status_t bad_shape(ox_ctx_t *c, ox_node_t *n, const char *what) {
  return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID, "%s", what);
}

/* Conv-like: out channels from W dims[0] (or given), spatial from window. */
static nnmem_status_t conv_common(ox_ctx_t *c, ox_node_t *n, int32_t elem,
                                  int64_t channels, const int64_t *wk) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  window_t w;
  nnmem_status_t st = read_window(c, n, &w);
  if (st != NNMEM_OK || !x || !y) return st;
  if (x->rank < 0) {
    y->elem = elem;
    return NNMEM_OK;
  }
  if (x->rank < 2) return bad_shape(c, n, "input must have rank >= 2");
  size_t nsp = (size_t)x->rank - 2;
  int64_t dims[OX_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = channels;
  for (size_t i = 0; i < nsp; i++) {
    int64_t k = w.nk ? at(w.k, w.nk, i, -1) : wk ? wk[i] : -1;
    dims[2 + i] = window_out(&w, i, nsp, x->dims[2 + i], k);
    /* a kernel larger than the padded input (often a symbolic dim bound
     * to a default) leaves the size unknown rather than failing */
    if (dims[2 + i] == WIN_EMPTY) dims[2 + i] = -1;
    if (dims[2 + i] == WIN_RANGE)
      return bad_shape(c, n,
                       "strides, dilations or pads out of range (pads in "
                       "[0, 2^30], strides and dilations in [1, 2^30])");
  }
  nnmem__onnx_set(y, elem, x->rank, dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_conv(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *wt = OX_IN(n, 1);
  const char *t = n->type;
  int32_t elem = x ? x->elem : 0;
  if (strcmp(t, "ConvInteger") == 0) elem = OX_INT32;
  if (strcmp(t, "QLinearConv") == 0) {
    wt = OX_IN(n, 3);
    ox_val_t *yzp = OX_IN(n, 7);
    elem = yzp ? yzp->elem : x ? x->elem : 0;
  }
  int64_t ch = wt && wt->rank >= 1 ? wt->dims[0] : -1;
  const int64_t *wk =
      wt && x && wt->rank >= 2 && wt->rank == x->rank ? &wt->dims[2] : NULL;
  return conv_common(c, n, elem, ch, wk);
}

static nnmem_status_t infer_pool(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  if (!x) return NNMEM_OK;
  nnmem_status_t st =
      conv_common(c, n, x->elem, x->rank >= 2 ? x->dims[1] : -1, NULL);
  if (st == NNMEM_OK && OX_OUT(n, 1) && OX_OUT(n, 0))
    nnmem__onnx_set(OX_OUT(n, 1), OX_INT64, OX_OUT(n, 0)->rank,
                    OX_OUT(n, 0)->dims);
  return st;
}

static nnmem_status_t infer_global_pool(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  if (!x || x->rank < 0) return NNMEM_OK;
  int64_t dims[OX_MAX_RANK];
  for (int32_t d = 0; d < x->rank; d++)
    dims[d] = d < 2 ? x->dims[d] : 1;
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, x->rank, dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_conv_transpose(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *wt = OX_IN(n, 1), *y = OX_OUT(n, 0);
  nnmem_status_t st;
  int64_t group;
  const int64_t *os, *op;
  size_t nos, nop;
  window_t w;
  A_INT("group", 1, group);
  A_INTS("output_shape", os, nos);
  A_INTS("output_padding", op, nop);
  if ((st = read_window(c, n, &w)) != NNMEM_OK) return st;
  if (!x || !y || x->rank < 2 || !wt || wt->rank < 2) return NNMEM_OK;
  size_t nsp = (size_t)x->rank - 2;
  int64_t dims[OX_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = nnmem__onnx_dmul(wt->dims[1], group);
  for (size_t i = 0; i < nsp; i++) {
    int64_t xi = x->dims[2 + i], s = at(w.s, w.ns, i, 1);
    int64_t k = w.nk                  ? at(w.k, w.nk, i, -1)
                : wt->rank == x->rank ? wt->dims[2 + i]
                                      : -1;
    int64_t d = at(w.d, w.nd, i, 1), big = (int64_t)1 << 30;
    if (xi > big || s < 1 || s > big || d < 1 || d > big || k > big || k < -1)
      return bad_shape(c, n,
                       "strides, dilations or sizes out of range (in "
                       "[1, 2^30])");
    int64_t e = (k - 1) * d + 1;
    if (nos)
      dims[2 + i] = at(os, nos, nos > nsp ? i + 2 : i, -1);
    else if (xi < 0 || k < 0)
      dims[2 + i] = -1;
    else if (strncmp(w.pad, "SAME", 4) == 0)
      dims[2 + i] = xi * s;
    else {
      __int128 v = (__int128)s * (xi - 1) + at(op, nop, i, 0) + e -
                   at(w.p, w.np, i, 0) - at(w.p, w.np, i + nsp, 0);
      dims[2 + i] = v < 0 || v > INT64_MAX ? -1 : (int64_t)v;
    }
  }
  nnmem__onnx_set(y, x->elem, x->rank, dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_gemm(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *a = OX_IN(n, 0), *b = OX_IN(n, 1);
  nnmem_status_t st;
  int64_t ta, tb;
  A_INT("transA", 0, ta);
  A_INT("transB", 0, tb);
  if (!a || !b || a->rank != 2 || b->rank != 2) return NNMEM_OK;
  int64_t dims[2] = {a->dims[ta ? 1 : 0], b->dims[tb ? 0 : 1]};
  nnmem__onnx_set(OX_OUT(n, 0), a->elem, 2, dims);
  return NNMEM_OK;
}

static nnmem_status_t matmul_shape(ox_node_t *n, ox_val_t *a, ox_val_t *b,
                                   int32_t elem) {
  ox_val_t *y = OX_OUT(n, 0);
  if (!a || !b || !y) return NNMEM_OK;
  if (a->rank < 1 || b->rank < 1) {
    y->elem = elem;
    return NNMEM_OK;
  }
  ox_val_t pa = *a, pb = *b;
  if (a->rank == 1) {
    pa.rank = 2;
    pa.dims[0] = 1;
    pa.dims[1] = a->dims[0];
  }
  if (b->rank == 1) {
    pb.rank = 2;
    pb.dims[0] = b->dims[0];
    pb.dims[1] = 1;
  }
  ox_val_t ba = pa, bb = pb; /* batch parts */
  ba.rank -= 2;
  bb.rank -= 2;
  ox_val_t *bs[2] = {&ba, &bb};
  int32_t r;
  int64_t dims[OX_MAX_RANK + 2];
  nnmem__onnx_broadcast(bs, 2, &r, dims);
  if (a->rank > 1) dims[r++] = pa.dims[pa.rank - 2];
  if (b->rank > 1) dims[r++] = pb.dims[pb.rank - 1];
  if (r > OX_MAX_RANK) return NNMEM_OK;
  nnmem__onnx_set(y, elem, r, dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_matmul(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *a = OX_IN(n, 0), *b = OX_IN(n, 1);
  const char *t = n->type;
  if (strcmp(t, "MatMulInteger") == 0) return matmul_shape(n, a, b, OX_INT32);
  if (strcmp(t, "QLinearMatMul") == 0) {
    ox_val_t *yzp = OX_IN(n, 7);
    return matmul_shape(n, a, OX_IN(n, 3), yzp ? yzp->elem : OX_UINT8);
  }
  return matmul_shape(n, a, b, a ? a->elem : 0);
}

/* ---- Einsum
 * ----------------------------------------------------------------*/

typedef struct einsum {
  int64_t letter[128]; /* dim of each label, -2 = unseen */
  int64_t ell[OX_MAX_RANK];
  int32_t ell_rank;
} einsum_t;

/* Binds the labels of one operand term to input v's dims. */
static int einsum_term(einsum_t *e, const char *t, size_t len,
                       const ox_val_t *v) {
  int32_t labels = 0, has_ell = 0;
  for (size_t i = 0; i < len; i++) {
    if (t[i] == '.') { /* one "..." per term */
      if (has_ell || i + 2 >= len || t[i + 1] != '.' || t[i + 2] != '.')
        return 0;
      has_ell = 1;
      i += 2;
    } else if (t[i] != ' ') {
      labels++;
    }
  }
  int32_t ell_rank = v->rank - labels;
  if (ell_rank < 0 || (!has_ell && ell_rank)) return 0;
  int32_t d = 0;
  for (size_t i = 0; i < len; i++) {
    if (t[i] == ' ') continue;
    if (t[i] == '.') {
      int32_t off = e->ell_rank > ell_rank ? e->ell_rank - ell_rank : 0;
      if (ell_rank > e->ell_rank) {
        for (int32_t k = 0; k < ell_rank; k++)
          e->ell[k] = 1;
        e->ell_rank = ell_rank;
        off = 0;
      }
      for (int32_t k = 0; k < ell_rank; k++, d++)
        if (v->dims[d] != 1) e->ell[off + k] = v->dims[d];
      i += 2;
      continue;
    }
    e->letter[(unsigned char)t[i] & 127] = v->dims[d++];
  }
  return 1;
}

static nnmem_status_t infer_einsum(ox_ctx_t *c, ox_node_t *n) {
  char eq[256];
  nnmem_status_t st =
      nnmem__onnx_attr_string(c, n, "equation", "", eq, sizeof eq);
  if (st != NNMEM_OK) return st;
  einsum_t e;
  for (int i = 0; i < 128; i++)
    e.letter[i] = -2;
  e.ell_rank = 0;
  char *arrow = strstr(eq, "->");
  const char *p = eq;
  size_t k = 0, count[128] = {0};
  for (;;) {
    const char *end = p;
    while (*end && *end != ',' && (!arrow || end < arrow))
      end++;
    ox_val_t *v = OX_IN(n, k);
    k++;
    if (!v || v->rank < 0) return NNMEM_OK;
    if (!einsum_term(&e, p, (size_t)(end - p), v))
      return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                    "equation '%s' does not match input %zu",
                                    eq, k - 1);
    for (const char *q = p; q < end; q++)
      if (*q != '.' && *q != ' ') count[(unsigned char)*q & 127]++;
    if (*end != ',') break;
    p = end + 1;
  }
  int64_t dims[OX_MAX_RANK];
  int32_t r = 0;
  if (arrow) {
    for (const char *q = arrow + 2; *q && r < OX_MAX_RANK; q++) {
      if (*q == ' ') continue;
      if (*q == '.') {
        for (int32_t j = 0; j < e.ell_rank && r < OX_MAX_RANK; j++)
          dims[r++] = e.ell[j];
        q += 2;
        continue;
      }
      int64_t x = e.letter[(unsigned char)*q & 127];
      dims[r++] = x == -2 ? -1 : x;
    }
  } else { /* implicit: ellipsis, then labels seen once, alphabetically */
    for (int32_t j = 0; j < e.ell_rank; j++)
      dims[r++] = e.ell[j];
    for (int ch = 0; ch < 128 && r < OX_MAX_RANK; ch++)
      if (count[ch] == 1) dims[r++] = e.letter[ch];
  }
  ox_val_t *a = OX_IN(n, 0);
  nnmem__onnx_set(OX_OUT(n, 0), a ? a->elem : 0, r, dims);
  return NNMEM_OK;
}

/* ---- reductions
 * --------------------------------------------------------------*/

static nnmem_status_t reduce_shape(ox_ctx_t *c, ox_node_t *n, int32_t elem,
                                   const int64_t *axes, size_t na, int all) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  nnmem_status_t st;
  int64_t keep;
  A_INT("keepdims", 1, keep);
  if (!x || !y) return NNMEM_OK;
  y->elem = elem;
  if (x->rank < 0) return NNMEM_OK;
  uint8_t red[OX_MAX_RANK] = {0};
  for (size_t i = 0; i < na; i++) {
    int32_t a;
    if (!nnmem__onnx_axis(axes[i], x->rank, &a))
      return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                    "axis %lld is out of range for rank %d",
                                    (long long)axes[i], (int)x->rank);
    red[a] = 1;
  }
  int64_t dims[OX_MAX_RANK];
  int32_t r = 0;
  for (int32_t d = 0; d < x->rank; d++) {
    if (!(all || red[d]))
      dims[r++] = x->dims[d];
    else if (keep)
      dims[r++] = 1;
  }
  nnmem__onnx_set(y, elem, r, dims);
  /* fold 1-D integer reductions over everything (shape products) */
  if (x->rank == 1 && r <= 1 && x->iv && x->has_vals) {
    const char *t = n->type;
    int64_t acc = strcmp(t, "ReduceProd") == 0 ? 1 : 0;
    for (size_t i = 0; i < x->nvals; i++) {
      int64_t v = x->iv[i];
      if (strcmp(t, "ReduceProd") == 0)
        acc = (int64_t)((uint64_t)acc * (uint64_t)v);
      else if (strcmp(t, "ReduceSum") == 0)
        acc = (int64_t)((uint64_t)acc + (uint64_t)v);
      else if (strcmp(t, "ReduceMax") == 0)
        acc = i == 0 || v > acc ? v : acc;
      else if (strcmp(t, "ReduceMin") == 0)
        acc = i == 0 || v < acc ? v : acc;
      else
        return NNMEM_OK;
    }
    return nnmem__onnx_set_ints(y, &acc, 1);
  }
  return NNMEM_OK;
}

static nnmem_status_t infer_reduce(ox_ctx_t *c, ox_node_t *n) {
  int64_t axes[OX_MAX_RANK];
  size_t na;
  nnmem_status_t st;
  int64_t noop;
  A_INT("noop_with_empty_axes", 0, noop);
  int r = nnmem__onnx_axes(c, n, "axes", 1, axes, &na, &st);
  if (st != NNMEM_OK) return st;
  ox_val_t *x = OX_IN(n, 0);
  if (r < 0 || !x) {
    if (x && OX_OUT(n, 0)) OX_OUT(n, 0)->elem = x->elem;
    return NNMEM_OK;
  }
  if (na == 0 && noop) {
    nnmem__onnx_copy_type(OX_OUT(n, 0), x);
    return NNMEM_OK;
  }
  return reduce_shape(c, n, x->elem, axes, na, na == 0);
}

static nnmem_status_t infer_argmax(ox_ctx_t *c, ox_node_t *n) {
  nnmem_status_t st;
  int64_t axis;
  A_INT("axis", 0, axis);
  return reduce_shape(c, n, OX_INT64, &axis, 1, 0);
}

static nnmem_status_t infer_topk(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  nnmem_status_t st;
  int64_t axis, k = -1;
  A_INT("axis", -1, axis);
  A_INT("k", -1, k);
  if (!x || x->rank < 0) return NNMEM_OK;
  int32_t a;
  if (!nnmem__onnx_axis(axis, x->rank, &a))
    return bad_shape(c, n, "axis out of range");
  const int64_t *kv;
  size_t nk;
  if (OX_IN(n, 1)) k = nnmem__onnx_ints_of(n, 1, &kv, &nk) && nk ? kv[0] : -1;
  int dep = k < 0;
  if (!dep && x->dims[a] >= 0 && k > x->dims[a])
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "k = %lld is larger than axis %d (%lld)",
                                  (long long)k, (int)a, (long long)x->dims[a]);
  int64_t dims[OX_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[a] = dep ? x->dims[a] : k;
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, x->rank, dims);
  nnmem__onnx_set(OX_OUT(n, 1), OX_INT64, x->rank, dims);
  if (dep) {
    nnmem__onnx_mark_data_dep(c, n, OX_OUT(n, 0));
    nnmem__onnx_mark_data_dep(c, n, OX_OUT(n, 1));
  }
  return NNMEM_OK;
}

static nnmem_status_t infer_nms(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *boxes = OX_IN(n, 0), *scores = OX_IN(n, 1);
  if (!boxes || !scores || boxes->rank != 3 || scores->rank != 3)
    return NNMEM_OK;
  const int64_t *mv;
  size_t nm;
  int64_t per = boxes->dims[1];
  if (!OX_IN(n, 2))
    per = 0;
  else if (nnmem__onnx_ints_of(n, 2, &mv, &nm) && nm && mv[0] < per)
    per = mv[0] < 0 ? 0 : mv[0];
  int64_t dims[2] = {
      nnmem__onnx_dmul(nnmem__onnx_dmul(scores->dims[0], scores->dims[1]), per),
      3};
  nnmem__onnx_set(OX_OUT(n, 0), OX_INT64, 2, dims);
  nnmem__onnx_mark_data_dep(c, n, OX_OUT(n, 0));
  return NNMEM_OK;
}

/* ---- resize
 * ------------------------------------------------------------------*/

/* floor(x * scale) as a dim; -1 when unknown or out of range. */
static int64_t scaled(int64_t x, double scale) {
  double v = floor((double)x * scale);
  return x < 0 || !(v >= 0 && v < 9e18) ? -1 : (int64_t)v;
}

/* Resize (scales or sizes, opset 18 `axes` and keep_aspect_ratio_policy:
 * one scale min / max over the axes of sizes / input, each dim
 * round(scale x)); tf_crop_and_resize scales the roi extent (roi end -
 * start) of each axis. Upsample lives in onnx_ops_legacy.c. */
static nnmem_status_t infer_resize(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  ox_val_t *sz = OX_IN(n, 3);
  ox_val_t *sc = OX_IN(n, n->opset < 11 ? 1 : 2);
  const float *fa = NULL;
  const int64_t *ax = NULL;
  size_t nfa = 0, nax = 0;
  nnmem_status_t st = nnmem__onnx_attr_floats(c, n, "scales", &fa, &nfa);
  if (st == NNMEM_OK) st = nnmem__onnx_attr_ints(c, n, "axes", &ax, &nax);
  if (st != NNMEM_OK || !x || !y) return st;
  y->elem = x->elem;
  if (x->rank < 0) return NNMEM_OK;
  size_t na = ax ? nax : (size_t)x->rank;
  if (na > OX_MAX_RANK) return bad_shape(c, n, "too many axes");
  int64_t dims[OX_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  char policy[16], mode[32];
  st = nnmem__onnx_attr_string(c, n, "keep_aspect_ratio_policy", "stretch",
                               policy, sizeof policy);
  if (st == NNMEM_OK)
    st = nnmem__onnx_attr_string(c, n, "coordinate_transformation_mode", "",
                                 mode, sizeof mode);
  if (st != NNMEM_OK) return st;
  int use_sizes = sz && sz->has_vals && sz->nvals == na;
  double keep = -1; /* not_larger / not_smaller: one scale for all axes */
  ox_val_t *roi = n->opset >= 11 ? OX_IN(n, 1) : NULL;
  int crop = strcmp(mode, "tf_crop_and_resize") == 0 && roi && roi->has_vals &&
             roi->nvals == 2 * na;
  int32_t axes[OX_MAX_RANK];
  for (size_t i = 0; i < na; i++) {
    if (!nnmem__onnx_axis(ax ? ax[i] : (int64_t)i, x->rank, &axes[i]))
      return bad_shape(c, n, "axes out of range");
    if (!use_sizes || strcmp(policy, "stretch") == 0) continue;
    if (x->dims[axes[i]] <= 0) return NNMEM_OK;
    double r = nnmem__onnx_float_at(sz, i) / (double)x->dims[axes[i]];
    int larger = strcmp(policy, "not_smaller") == 0;
    if (keep < 0 || (larger ? r > keep : r < keep)) keep = r;
  }
  for (size_t i = 0; i < na; i++) {
    int32_t d = axes[i];
    if (use_sizes && keep >= 0)
      dims[d] = scaled(x->dims[d], keep) == -1
                    ? -1
                    : (int64_t)floor((double)x->dims[d] * keep + 0.5);
    else if (use_sizes)
      dims[d] = nnmem__onnx_int_at(sz, i);
    else if (sc && sc->has_vals && sc->nvals == na)
      dims[d] =
          scaled(x->dims[d], nnmem__onnx_float_at(sc, i) *
                                 (crop ? nnmem__onnx_float_at(roi, i + na) -
                                             nnmem__onnx_float_at(roi, i)
                                       : 1.0));
    else if (fa && nfa == na)
      dims[d] = scaled(x->dims[d], fa[i]);
    else
      return NNMEM_OK; /* sizes known only at run time */
  }
  nnmem__onnx_set(y, x->elem, x->rank, dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_depth_space(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  nnmem_status_t st;
  int64_t b;
  A_INT("blocksize", 0, b);
  if (b <= 0 || b > (1 << 20))
    return bad_shape(c, n, "blocksize must be in [1, 2^20]");
  if (!x || x->rank != 4) return NNMEM_OK;
  int64_t d[4] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
  int to_space = strcmp(n->type, "DepthToSpace") == 0;
  for (int i = 1; i < 4; i++) {
    if (d[i] < 0) continue;
    int shrink = (i == 1) == to_space;
    int64_t f = i == 1 ? b * b : b;
    if (shrink && d[i] % f)
      return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                    "dim %d (%lld) is not a multiple of %lld",
                                    i, (long long)d[i], (long long)f);
    d[i] = shrink ? d[i] / f : nnmem__onnx_dmul(d[i], f);
  }
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, 4, d);
  return NNMEM_OK;
}

/* ---- recurrent
 * -------------------------------------------------------------*/

static nnmem_status_t infer_rnn(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  nnmem_status_t st;
  int64_t hidden, layout;
  char dir[32];
  A_INT("hidden_size", -1, hidden);
  A_INT("layout", 0, layout);
  st = nnmem__onnx_attr_string(c, n, "direction", "forward", dir, sizeof dir);
  if (st != NNMEM_OK) return st;
  if (hidden < 0 && OX_IN(n, 2) && OX_IN(n, 2)->rank == 3)
    hidden = OX_IN(n, 2)->dims[2];
  if (!x || x->rank != 3) return NNMEM_OK;
  int64_t nd = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
  int64_t seq = x->dims[layout ? 1 : 0], batch = x->dims[layout ? 0 : 1];
  int64_t y[4] = {seq, nd, batch, hidden}, h[3] = {nd, batch, hidden};
  if (layout) {
    int64_t y1[4] = {batch, seq, nd, hidden}, h1[3] = {batch, nd, hidden};
    memcpy(y, y1, sizeof y);
    memcpy(h, h1, sizeof h);
  }
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, 4, y);
  nnmem__onnx_set(OX_OUT(n, 1), x->elem, 3, h);
  nnmem__onnx_set(OX_OUT(n, 2), x->elem, 3, h);
  return NNMEM_OK;
}

/* ---- detection
 * -------------------------------------------------------------*/

static nnmem_status_t infer_roi(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *rois = OX_IN(n, 1);
  nnmem_status_t st;
  int64_t oh, ow;
  const int64_t *ps;
  size_t nps;
  A_INT("output_height", 1, oh);
  A_INT("output_width", 1, ow);
  A_INTS("pooled_shape", ps, nps);
  if (nps == 2) {
    oh = ps[0];
    ow = ps[1];
  }
  if (!x || !rois || x->rank != 4 || rois->rank != 2) return NNMEM_OK;
  int64_t d[4] = {rois->dims[0], x->dims[1], oh, ow};
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, 4, d);
  return NNMEM_OK;
}

static nnmem_status_t infer_grid_sample(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *g = OX_IN(n, 1);
  if (!x || !g || x->rank < 3 || g->rank != x->rank) return NNMEM_OK;
  int64_t d[OX_MAX_RANK];
  d[0] = x->dims[0];
  d[1] = x->dims[1];
  for (int32_t i = 2; i < x->rank; i++)
    d[i] = g->dims[i - 1];
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, x->rank, d);
  return NNMEM_OK;
}

static nnmem_status_t infer_max_unpool(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *os = OX_IN(n, 2);
  window_t w;
  nnmem_status_t st = read_window(c, n, &w);
  if (st != NNMEM_OK || !x || x->rank < 3) return st;
  int64_t d[OX_MAX_RANK];
  if (os && os->has_vals && os->nvals == (size_t)x->rank) {
    for (int32_t i = 0; i < x->rank; i++)
      d[i] = nnmem__onnx_int_at(os, (size_t)i);
  } else if (os) { /* output_shape known only at run time */
    nnmem__onnx_set(OX_OUT(n, 0), x->elem, x->rank, NULL);
    return NNMEM_OK;
  } else {
    size_t nsp = (size_t)x->rank - 2;
    d[0] = x->dims[0];
    d[1] = x->dims[1];
    for (size_t i = 0; i < nsp; i++) {
      __int128 v = (__int128)(x->dims[2 + i] - 1) * at(w.s, w.ns, i, 1) +
                   at(w.k, w.nk, i, 1) - at(w.p, w.np, i, 0) -
                   at(w.p, w.np, i + nsp, 0);
      if (x->dims[2 + i] >= 0 && (v < 0 || v > INT64_MAX))
        return bad_shape(c, n, "output size out of range");
      d[2 + i] = x->dims[2 + i] < 0 ? -1 : (int64_t)v;
    }
  }
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, x->rank, d);
  return NNMEM_OK;
}

const ox_op_t nnmem__onnx_ops_nn[] = {
    {"Conv", infer_conv, 0},
    {"ConvInteger", infer_conv, 0},
    {"DeformConv", infer_conv, 0},
    {"QLinearConv", infer_conv, 0},
    {"ConvTranspose", infer_conv_transpose, 0},
    {"MaxPool", infer_pool, 0},
    {"AveragePool", infer_pool, 0},
    {"LpPool", infer_pool, 0},
    {"GlobalAveragePool", infer_global_pool, 0},
    {"GlobalMaxPool", infer_global_pool, 0},
    {"GlobalLpPool", infer_global_pool, 0},
    {"MaxUnpool", infer_max_unpool, 0},
    {"Gemm", infer_gemm, 0},
    {"MatMul", infer_matmul, 0},
    {"MatMulInteger", infer_matmul, 0},
    {"QLinearMatMul", infer_matmul, 0},
    {"Einsum", infer_einsum, 0},
    {"ReduceSum", infer_reduce, 0},
    {"ReduceMean", infer_reduce, 0},
    {"ReduceMax", infer_reduce, 0},
    {"ReduceMin", infer_reduce, 0},
    {"ReduceProd", infer_reduce, 0},
    {"ReduceL1", infer_reduce, 0},
    {"ReduceL2", infer_reduce, 0},
    {"ReduceLogSum", infer_reduce, 0},
    {"ReduceLogSumExp", infer_reduce, 0},
    {"ReduceSumSquare", infer_reduce, 0},
    {"ArgMax", infer_argmax, 0},
    {"ArgMin", infer_argmax, 0},
    {"TopK", infer_topk, 0},
    {"NonMaxSuppression", infer_nms, 0},
    {"Resize", infer_resize, 0},
    {"DepthToSpace", infer_depth_space, 0},
    {"SpaceToDepth", infer_depth_space, 0},
    {"LSTM", infer_rnn, 0},
    {"GRU", infer_rnn, 0},
    {"RNN", infer_rnn, 0},
    {"MaxRoiPool", infer_roi, 0},
    {"RoiAlign", infer_roi, 0},
    {"GridSample", infer_grid_sample, 0},
    {NULL, NULL, 0}};

/* onnx_ops_misc.c - shape / dtype inference of the less common operators:
 * losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), Det, signal
 * processing (DFT, STFT, window generators, MelWeightMatrix),
 * StringNormalizer, TfIdfVectorizer, CenterCropPad, AffineGrid and Col2Im.
 *
 * Rules (ONNX operator specification):
 *   1. losses: reduction "none" -> the target / label shape, else a scalar;
 *      SoftmaxCrossEntropyLoss's log_prob output has the scores' shape;
 *   2. Det: the input without its last two dims;
 *   3. DFT (opset 17): the signal axis becomes dft_length (or its own size),
 *      n / 2 + 1 with onesided, and the last dim is 2 (complex);
 *   4. STFT: [batch, frames, bins, 2] with frames = (length - frame) /
 *      step + 1 and bins = frame / 2 + 1 when onesided;
 *   5. windows: [size] with `output_datatype`; MelWeightMatrix:
 *      [dft_length / 2 + 1, num_mel_bins];
 *   6. StringNormalizer keeps the shape (an upper bound when stopwords may
 *      remove strings); TfIdfVectorizer: [C] -> [K], [N, C] -> [N, K] float
 *      with K = max(ngram_indexes) + 1 (mode TF / IDF / TFIDF,
 *      1 <= min_gram_length <= max_gram_length, indexes >= 0, one pool);
 *   7. CenterCropPad, AffineGrid and Col2Im take their output dims from
 *      their (folded) shape inputs.
 * Complexity O(rank) per node. Thread-safety: pure. */
#include <string.h>

#include "import/onnx/onnx_internal.h"

static int64_t scalar_of(const ox_node_t *n, size_t k) {
  const ox_val_t *v = OX_IN(n, k);
  return v && v->has_vals && v->nvals >= 1 ? nnmem__onnx_int_at(v, 0) : -1;
}

static nnmem_status_t infer_loss(ox_ctx_t *c, ox_node_t *n) {
  char red[32];
  nnmem_status_t st =
      nnmem__onnx_attr_string(c, n, "reduction", "mean", red, sizeof red);
  ox_val_t *x = OX_IN(n, 0), *t = OX_IN(n, 1);
  if (st != NNMEM_OK || !x || !t) return st;
  if (strcmp(red, "none") == 0)
    nnmem__onnx_set(OX_OUT(n, 0), x->elem, t->rank, t->dims);
  else
    nnmem__onnx_set(OX_OUT(n, 0), x->elem, 0, NULL);
  nnmem__onnx_copy_type(OX_OUT(n, 1), x);
  return NNMEM_OK;
}

static nnmem_status_t infer_det(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  if (!x || x->rank < 2) return NNMEM_OK;
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, x->rank - 2, x->dims);
  return NNMEM_OK;
}

/* DFT: the axis is an attribute (opset 17, default 1) or input 2 (opset
 * 20, default -2); negative axes count from the back of the whole input
 * (range [-r, -2] U [0, r - 2]: the last dim holds real / imaginary). */
static nnmem_status_t infer_dft(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  int64_t axis, onesided;
  nnmem_status_t st = nnmem__onnx_attr_int(c, n, "axis", 1, &axis);
  if (st == NNMEM_OK) st = nnmem__onnx_attr_int(c, n, "onesided", 0, &onesided);
  if (st != NNMEM_OK || !x || x->rank < 2) return st;
  if (n->opset >= 20) {
    axis = OX_IN(n, 2) ? scalar_of(n, 2) : -2;
    if (OX_IN(n, 2) && !(OX_IN(n, 2)->has_vals)) {
      nnmem__onnx_set(OX_OUT(n, 0), x->elem, x->rank, NULL);
      return NNMEM_OK; /* axis known only at run time */
    }
  }
  int32_t a;
  if (!nnmem__onnx_axis(axis, x->rank, &a) || a > x->rank - 2)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "axis %lld is out of range for rank %d",
                                  (long long)axis, (int)x->rank);
  int64_t dims[OX_MAX_RANK], len = OX_IN(n, 1) ? scalar_of(n, 1) : x->dims[a];
  memcpy(dims, x->dims, sizeof dims);
  dims[a] = len < 0 ? -1 : onesided ? len / 2 + 1 : len;
  dims[x->rank - 1] = 2;
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, x->rank, dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_stft(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *w = OX_IN(n, 2);
  int64_t onesided;
  nnmem_status_t st = nnmem__onnx_attr_int(c, n, "onesided", 1, &onesided);
  if (st != NNMEM_OK || !x || x->rank != 3) return st;
  int64_t step = scalar_of(n, 1), frame = OX_IN(n, 3) ? scalar_of(n, 3) : -1;
  if (frame < 0 && w && w->rank == 1) frame = w->dims[0];
  int64_t d[4] = {x->dims[0], -1, -1, 2};
  if (step > 0 && frame > 0 && x->dims[1] >= frame)
    d[1] = (x->dims[1] - frame) / step + 1;
  if (frame > 0) d[2] = onesided ? frame / 2 + 1 : frame;
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, 4, d);
  return NNMEM_OK;
}

static nnmem_status_t infer_window(ox_ctx_t *c, ox_node_t *n) {
  int64_t dt, size = scalar_of(n, 0);
  nnmem_status_t st = nnmem__onnx_attr_int(c, n, "output_datatype", 1, &dt);
  if (st != NNMEM_OK) return st;
  nnmem__onnx_set(OX_OUT(n, 0), (int32_t)dt, 1, &size);
  return NNMEM_OK;
}

static nnmem_status_t infer_mel(ox_ctx_t *c, ox_node_t *n) {
  int64_t dt, bins = scalar_of(n, 0), len = scalar_of(n, 1);
  nnmem_status_t st = nnmem__onnx_attr_int(c, n, "output_datatype", 1, &dt);
  if (st != NNMEM_OK) return st;
  int64_t d[2] = {len < 0 ? -1 : len / 2 + 1, bins};
  nnmem__onnx_set(OX_OUT(n, 0), (int32_t)dt, 2, d);
  return NNMEM_OK;
}

static nnmem_status_t infer_strnorm(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  if (!x) return NNMEM_OK;
  nnmem__onnx_copy_type(OX_OUT(n, 0), x);
  if (nnmem__onnx_attr(n, "stopwords"))
    nnmem__onnx_mark_data_dep(c, n, OX_OUT(n, 0));
  return NNMEM_OK;
}

static nnmem_status_t tfidf_attrs(ox_ctx_t *c, ox_node_t *n, int64_t *k) {
  char mode[16];
  int64_t lo, hi, skip;
  const int64_t *idx, *pool;
  size_t nidx, npool;
  nnmem_status_t st =
      nnmem__onnx_attr_string(c, n, "mode", "", mode, sizeof mode);
  if (st == NNMEM_OK)
    st = nnmem__onnx_attr_int(c, n, "min_gram_length", 0, &lo);
  if (st == NNMEM_OK)
    st = nnmem__onnx_attr_int(c, n, "max_gram_length", 0, &hi);
  if (st == NNMEM_OK)
    st = nnmem__onnx_attr_int(c, n, "max_skip_count", 0, &skip);
  if (st == NNMEM_OK)
    st = nnmem__onnx_attr_ints(c, n, "ngram_indexes", &idx, &nidx);
  if (st == NNMEM_OK)
    st = nnmem__onnx_attr_ints(c, n, "pool_int64s", &pool, &npool);
  if (st != NNMEM_OK) return st;
  if (strcmp(mode, "TF") != 0 && strcmp(mode, "IDF") != 0 &&
      strcmp(mode, "TFIDF") != 0)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "mode '%s' is not TF, IDF or TFIDF", mode);
  if (lo < 1 || hi < lo || skip < 0)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "needs 1 <= min_gram_length <= "
                                  "max_gram_length and max_skip_count >= 0");
  if (!pool == !nnmem__onnx_attr(n, "pool_strings"))
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "needs exactly one of pool_int64s and "
                                  "pool_strings");
  *k = 0;
  for (size_t i = 0; i < nidx; i++) {
    if (idx[i] < 0 || idx[i] == INT64_MAX)
      return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                    "ngram_indexes holds %lld",
                                    (long long)idx[i]);
    if (idx[i] + 1 > *k) *k = idx[i] + 1;
  }
  if (!nidx)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                  "ngram_indexes is empty");
  return NNMEM_OK;
}

static nnmem_status_t infer_tfidf(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  int64_t k = 0, d[2];
  nnmem_status_t st = tfidf_attrs(c, n, &k);
  if (st != NNMEM_OK || !x) return st;
  if (x->rank != 1 && x->rank != 2) {
    if (x->rank >= 0)
      return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID,
                                    "input has rank %d, want 1 or 2",
                                    (int)x->rank);
    nnmem__onnx_set(OX_OUT(n, 0), OX_FLOAT, -1, NULL);
    return NNMEM_OK;
  }
  d[0] = x->rank == 2 ? x->dims[0] : k;
  d[1] = k;
  nnmem__onnx_set(OX_OUT(n, 0), OX_FLOAT, x->rank, d);
  return NNMEM_OK;
}

/* CenterCropPad: the `axes` dims (all by default) take the shape input. */
static nnmem_status_t infer_center_crop_pad(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *sh = OX_IN(n, 1);
  const int64_t *ax;
  size_t nax;
  nnmem_status_t st = nnmem__onnx_attr_ints(c, n, "axes", &ax, &nax);
  if (st != NNMEM_OK || !x || x->rank < 0) return st;
  size_t na = ax ? nax : (size_t)x->rank;
  int64_t dims[OX_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  if (!sh || !sh->has_vals || sh->nvals != na) {
    nnmem__onnx_set(OX_OUT(n, 0), x->elem, x->rank, NULL);
    return NNMEM_OK;
  }
  for (size_t i = 0; i < na; i++) {
    int32_t a;
    if (!nnmem__onnx_axis(ax ? ax[i] : (int64_t)i, x->rank, &a))
      return nnmem__onnx_node_error(c, n, NNMEM_ERR_INVALID, "bad axes");
    dims[a] = nnmem__onnx_int_at(sh, i);
  }
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, x->rank, dims);
  return NNMEM_OK;
}

/* AffineGrid: size [N, C, H, W] -> [N, H, W, 2] (3-D: [N, D, H, W, 3]). */
static nnmem_status_t infer_affine_grid(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *theta = OX_IN(n, 0), *size = OX_IN(n, 1);
  if (!theta || !size || !size->has_vals || size->nvals < 4 || size->nvals > 5)
    return NNMEM_OK;
  int64_t dims[OX_MAX_RANK];
  int32_t r = (int32_t)size->nvals;
  dims[0] = nnmem__onnx_int_at(size, 0);
  for (int32_t i = 2; i < r; i++)
    dims[i - 1] = nnmem__onnx_int_at(size, (size_t)i);
  dims[r - 1] = r - 2;
  nnmem__onnx_set(OX_OUT(n, 0), theta->elem, r, dims);
  return NNMEM_OK;
}

/* Col2Im: [N, C x prod(block), L] -> [N, C, image_shape...]. */
static nnmem_status_t infer_col2im(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *img = OX_IN(n, 1), *blk = OX_IN(n, 2);
  if (!x || x->rank != 3 || !img || !img->has_vals || !blk || !blk->has_vals ||
      img->nvals != blk->nvals || img->nvals + 2 > OX_MAX_RANK)
    return NNMEM_OK;
  int64_t dims[OX_MAX_RANK], prod = 1;
  for (size_t i = 0; i < blk->nvals; i++)
    prod = nnmem__onnx_dmul(prod, nnmem__onnx_int_at(blk, i));
  dims[0] = x->dims[0];
  dims[1] = prod > 0 && x->dims[1] >= 0 ? x->dims[1] / prod : -1;
  for (size_t i = 0; i < img->nvals; i++)
    dims[2 + i] = nnmem__onnx_int_at(img, i);
  nnmem__onnx_set(OX_OUT(n, 0), x->elem, (int32_t)img->nvals + 2, dims);
  return NNMEM_OK;
}

const ox_op_t nnmem__onnx_ops_misc[] = {
    {"CenterCropPad", infer_center_crop_pad, 0},
    {"AffineGrid", infer_affine_grid, 0},
    {"Col2Im", infer_col2im, 0},
    {"NegativeLogLikelihoodLoss", infer_loss, 0},
    {"SoftmaxCrossEntropyLoss", infer_loss, 0},
    {"Det", infer_det, 0},
    {"DFT", infer_dft, 0},
    {"STFT", infer_stft, 0},
    {"HannWindow", infer_window, 0},
    {"HammingWindow", infer_window, 0},
    {"BlackmanWindow", infer_window, 0},
    {"MelWeightMatrix", infer_mel, 0},
    {"StringNormalizer", infer_strnorm, 0},
    {"TfIdfVectorizer", infer_tfidf, 0},
    {NULL, NULL, 0}};

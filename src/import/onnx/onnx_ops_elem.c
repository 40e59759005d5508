/* onnx_ops_elem.c - shape / dtype inference of the element-wise operator
 * family: unary math and activations, broadcasting binary and variadic
 * ops, comparisons and logic, Where, Cast, Clip, normalizations (same shape
 * as their input), Softmax-like ops, quantization and Identity / Dropout.
 *
 * Rules (ONNX operator specification):
 *   1. unary ops: output = input type and shape (IsNaN / IsInf / Not: bool);
 *   2. binary / variadic ops: numpy broadcasting of all inputs; element type
 *      of input 0, bool for comparisons and logic; Where broadcasts its three
 *      inputs with the type of X;
 *   3. Cast: input shape with type `to`; CastLike: type of input 1;
 *   4. normalizations keep the input shape; their optional statistics
 *      outputs have the documented reduced shapes;
 *   5. small integer tensors fold (nnmem__onnx_fold_elementwise).
 * Complexity O(rank) per node plus folding. Thread-safety: pure. */
#include <string.h>

#include "import/onnx/onnx_internal.h"

typedef struct fold_map {
  const char *type;
  int code;
} fold_map_t;

static const fold_map_t fold_codes[] = {
    {"Add", OX_F_ADD},          {"Sub", OX_F_SUB},
    {"Mul", OX_F_MUL},          {"Div", OX_F_DIV},
    {"Pow", OX_F_POW},          {"Min", OX_F_MIN},
    {"Max", OX_F_MAX},          {"Sum", OX_F_SUM},
    {"Mean", OX_F_MEAN},        {"Equal", OX_F_EQ},
    {"Less", OX_F_LT},          {"Greater", OX_F_GT},
    {"LessOrEqual", OX_F_LE},   {"GreaterOrEqual", OX_F_GE},
    {"And", OX_F_AND},          {"Or", OX_F_OR},
    {"Xor", OX_F_XOR},          {"Where", OX_F_WHERE},
    {"Neg", OX_F_NEG},          {"Abs", OX_F_ABS},
    {"Not", OX_F_NOT},          {"Identity", OX_F_IDENT},
    {"Floor", OX_F_FLOOR},      {"Ceil", OX_F_CEIL},
    {"Round", OX_F_ROUND},      {"Sqrt", OX_F_SQRT},
    {"Relu", OX_F_RELU},        {"Sign", OX_F_SIGN},
    {"Reciprocal", OX_F_RECIP}, {"Exp", OX_F_EXP},
    {"Log", OX_F_LOG},          {"Cast", OX_F_IDENT},
    {"Mod", OX_F_MOD},          {"CastLike", OX_F_IDENT},
    {"Dropout", OX_F_IDENT},    {NULL, 0}};

static int fold_code(const char *type) {
  for (const fold_map_t *m = fold_codes; m->type; m++)
    if (strcmp(m->type, type) == 0) return m->code;
  return 0;
}

static nnmem_status_t try_fold(ox_node_t *n, size_t n_in) {
  int code = fold_code(n->type);
  ox_val_t *out = OX_OUT(n, 0);
  if (!code || !out) return NNMEM_OK;
  return nnmem__onnx_fold_elementwise(code, n->in, n_in, out);
}

/* Output 0 like input 0 (and fold when possible). */
static nnmem_status_t infer_unary(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  if (x) nnmem__onnx_copy_type(OX_OUT(n, 0), x);
  return x ? try_fold(n, 1) : NNMEM_OK;
}

static nnmem_status_t infer_unary_bool(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  if (!x || !OX_OUT(n, 0)) return NNMEM_OK;
  nnmem__onnx_set(OX_OUT(n, 0), OX_BOOL, x->rank, x->dims);
  return try_fold(n, 1);
}

/* All outputs like input 0 (Identity, Dropout's mask is bool). */
static nnmem_status_t infer_dropout(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  if (!x) return NNMEM_OK;
  nnmem__onnx_copy_type(OX_OUT(n, 0), x);
  nnmem__onnx_set(OX_OUT(n, 1), OX_BOOL, x->rank, x->dims);
  return try_fold(n, 1);
}

static nnmem_status_t infer_broadcast(ox_ctx_t *c, ox_node_t *n, int32_t elem,
                                      size_t first) {
  int32_t rank;
  int64_t dims[OX_MAX_RANK];
  ox_val_t *out = OX_OUT(n, 0);
  if (!out || n->n_in <= first) return NNMEM_OK;
  if (nnmem__onnx_broadcast(n->in, n->n_in, &rank, dims))
    nnmem__onnx_set(out, elem, rank, dims);
  else
    out->elem = elem;
  (void)first;
  return try_fold(n, n->n_in);
}

static nnmem_status_t infer_binary(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *a = OX_IN(n, 0);
  return infer_broadcast(c, n, a ? a->elem : 0, 0);
}

static nnmem_status_t infer_compare(ox_ctx_t *c, ox_node_t *n) {
  return infer_broadcast(c, n, OX_BOOL, 0);
}

static nnmem_status_t infer_where(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 1);
  return infer_broadcast(c, n, x ? x->elem : 0, 0);
}

static nnmem_status_t infer_cast(ox_ctx_t *c, ox_node_t *n) {
  int64_t to = 0;
  nnmem_status_t st = nnmem__onnx_attr_int(c, n, "to", 0, &to);
  if (st != NNMEM_OK) return st;
  if (to <= 0 || to >= OX_TYPE_COUNT)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_PARSE,
                                  "attribute 'to' is %lld, not a data type",
                                  (long long)to);
  ox_val_t *x = OX_IN(n, 0), *y = OX_OUT(n, 0);
  if (!x) return NNMEM_OK;
  nnmem__onnx_set(y, (int32_t)to, x->rank, x->dims);
  st = try_fold(n, 1);
  if (st != NNMEM_OK || to != OX_BOOL || !y || !y->has_vals || !y->iv ||
      y->nvals != x->nvals)
    return st;
  for (size_t i = 0; i < y->nvals; i++) /* bool: nonzero -> 1 (0.5 too) */
    y->iv[i] = nnmem__onnx_float_at(x, i) != 0;
  return NNMEM_OK;
}

static nnmem_status_t infer_castlike(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *t = OX_IN(n, 1);
  if (!x || !t) return NNMEM_OK;
  nnmem__onnx_set(OX_OUT(n, 0), t->elem, x->rank, x->dims);
  return try_fold(n, 1);
}

/* BatchNormalization: Y like X; training outputs mean/var have shape [C]. */
static nnmem_status_t infer_batchnorm(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *scale = OX_IN(n, 1);
  if (!x) return NNMEM_OK;
  nnmem__onnx_copy_type(OX_OUT(n, 0), x);
  for (size_t k = 1; k < n->n_out; k++) {
    ox_val_t *o = OX_OUT(n, k);
    if (!o) continue;
    if (scale)
      nnmem__onnx_copy_type(o, scale);
    else if (x->rank >= 2)
      nnmem__onnx_set(o, x->elem, 1, &x->dims[1]);
  }
  return NNMEM_OK;
}

/* LayerNormalization: Mean / InvStdDev keep dims before `axis`, 1 after. */
static nnmem_status_t infer_layernorm(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  int64_t axis = -1, stash = 1;
  nnmem_status_t st = nnmem__onnx_attr_int(c, n, "axis", -1, &axis);
  if (st == NNMEM_OK) st = nnmem__onnx_attr_int(c, n, "stash_type", 1, &stash);
  if (st != NNMEM_OK || !x) return st;
  nnmem__onnx_copy_type(OX_OUT(n, 0), x);
  int32_t a;
  if (x->rank < 0 || !nnmem__onnx_axis(axis, x->rank, &a)) return NNMEM_OK;
  int64_t dims[OX_MAX_RANK];
  for (int32_t d = 0; d < x->rank; d++)
    dims[d] = d < a ? x->dims[d] : 1;
  for (size_t k = 1; k < 3; k++)
    nnmem__onnx_set(OX_OUT(n, k), (int32_t)stash, x->rank, dims);
  return NNMEM_OK;
}

/* QuantizeLinear: type of the zero point (uint8 without one). */
static nnmem_status_t infer_quantize(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *zp = OX_IN(n, 2);
  int64_t to = 0;
  nnmem_status_t st = nnmem__onnx_attr_int(c, n, "output_dtype", 0, &to);
  if (st != NNMEM_OK || !x) return st;
  int32_t elem = zp ? zp->elem : to > 0 ? (int32_t)to : OX_UINT8;
  nnmem__onnx_set(OX_OUT(n, 0), elem, x->rank, x->dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_dequantize(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0), *scale = OX_IN(n, 1);
  if (!x) return NNMEM_OK;
  nnmem__onnx_set(OX_OUT(n, 0), scale ? scale->elem : OX_FLOAT, x->rank,
                  x->dims);
  return NNMEM_OK;
}

static nnmem_status_t infer_dynquant(ox_ctx_t *c, ox_node_t *n) {
  ox_val_t *x = OX_IN(n, 0);
  if (!x) return NNMEM_OK;
  nnmem__onnx_set(OX_OUT(n, 0), OX_UINT8, x->rank, x->dims);
  nnmem__onnx_set(OX_OUT(n, 1), OX_FLOAT, 0, NULL);
  nnmem__onnx_set(OX_OUT(n, 2), OX_UINT8, 0, NULL);
  return NNMEM_OK;
}

/* Bitwise / logical shifts etc.: like binary. Mod: binary with fmod flag. */

const ox_op_t nnmem__onnx_ops_elem[] = {
    /* unary, in-place capable */
    {"Abs", infer_unary, OX_INPLACE},
    {"Acos", infer_unary, OX_INPLACE},
    {"Acosh", infer_unary, OX_INPLACE},
    {"Asin", infer_unary, OX_INPLACE},
    {"Asinh", infer_unary, OX_INPLACE},
    {"Atan", infer_unary, OX_INPLACE},
    {"Atanh", infer_unary, OX_INPLACE},
    {"BitwiseNot", infer_unary, OX_INPLACE},
    {"Ceil", infer_unary, OX_INPLACE},
    {"Celu", infer_unary, OX_INPLACE},
    {"Clip", infer_unary, OX_INPLACE},
    {"Cos", infer_unary, OX_INPLACE},
    {"Cosh", infer_unary, OX_INPLACE},
    {"Elu", infer_unary, OX_INPLACE},
    {"Erf", infer_unary, OX_INPLACE},
    {"Exp", infer_unary, OX_INPLACE},
    {"Floor", infer_unary, OX_INPLACE},
    {"Gelu", infer_unary, OX_INPLACE},
    {"HardSigmoid", infer_unary, OX_INPLACE},
    {"HardSwish", infer_unary, OX_INPLACE},
    {"LeakyRelu", infer_unary, OX_INPLACE},
    {"Log", infer_unary, OX_INPLACE},
    {"Mish", infer_unary, OX_INPLACE},
    {"Neg", infer_unary, OX_INPLACE},
    {"Reciprocal", infer_unary, OX_INPLACE},
    {"Relu", infer_unary, OX_INPLACE},
    {"Round", infer_unary, OX_INPLACE},
    {"Selu", infer_unary, OX_INPLACE},
    {"Shrink", infer_unary, OX_INPLACE},
    {"Sigmoid", infer_unary, OX_INPLACE},
    {"Sign", infer_unary, OX_INPLACE},
    {"Sin", infer_unary, OX_INPLACE},
    {"Sinh", infer_unary, OX_INPLACE},
    {"Softplus", infer_unary, OX_INPLACE},
    {"Softsign", infer_unary, OX_INPLACE},
    {"Sqrt", infer_unary, OX_INPLACE},
    {"Tan", infer_unary, OX_INPLACE},
    {"Tanh", infer_unary, OX_INPLACE},
    {"ThresholdedRelu", infer_unary, OX_INPLACE},
    /* same shape, not in place */
    {"Softmax", infer_unary, 0},
    {"LogSoftmax", infer_unary, 0},
    {"Hardmax", infer_unary, 0},
    {"InstanceNormalization", infer_unary, 0},
    {"LpNormalization", infer_unary, 0},
    {"GroupNormalization", infer_unary, 0},
    {"LRN", infer_unary, 0},
    {"CumSum", infer_unary, 0},
    {"ReverseSequence", infer_unary, 0},
    {"Trilu", infer_unary, 0},
    {"Scatter", infer_unary, 0},
    {"ScatterElements", infer_unary, 0},
    {"ScatterND", infer_unary, 0},
    {"PRelu", infer_binary, OX_INPLACE},
    {"BatchNormalization", infer_batchnorm, OX_INPLACE}, /* per element */
    {"LayerNormalization", infer_layernorm, 0},
    {"IsNaN", infer_unary_bool, 0},
    {"IsInf", infer_unary_bool, 0},
    {"Not", infer_unary_bool, OX_INPLACE},
    {"Identity", infer_unary, OX_VIEW},
    {"Dropout", infer_dropout, OX_VIEW},
    {"Cast", infer_cast, 0},
    {"CastLike", infer_castlike, 0},
    /* broadcasting */
    {"Add", infer_binary, OX_INPLACE},
    {"Sub", infer_binary, OX_INPLACE},
    {"Mul", infer_binary, OX_INPLACE},
    {"Div", infer_binary, OX_INPLACE},
    {"Pow", infer_binary, OX_INPLACE},
    {"Mod", infer_binary, OX_INPLACE},
    {"BitShift", infer_binary, OX_INPLACE},
    {"BitwiseAnd", infer_binary, OX_INPLACE},
    {"BitwiseOr", infer_binary, OX_INPLACE},
    {"BitwiseXor", infer_binary, OX_INPLACE},
    {"Max", infer_binary, OX_INPLACE},
    {"Min", infer_binary, OX_INPLACE},
    {"Sum", infer_binary, OX_INPLACE},
    {"Mean", infer_binary, OX_INPLACE},
    {"Equal", infer_compare, 0},
    {"Less", infer_compare, 0},
    {"Greater", infer_compare, 0},
    {"LessOrEqual", infer_compare, 0},
    {"GreaterOrEqual", infer_compare, 0},
    {"And", infer_compare, OX_INPLACE},
    {"Or", infer_compare, OX_INPLACE},
    {"Xor", infer_compare, OX_INPLACE},
    {"Where", infer_where, 0},
    /* quantization */
    {"QuantizeLinear", infer_quantize, 0},
    {"DequantizeLinear", infer_dequantize, 0},
    {"DynamicQuantizeLinear", infer_dynquant, 0},
    {NULL, NULL, 0}};

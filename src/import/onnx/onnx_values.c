/* onnx_values.c - the value helpers of the ONNX importer: element sizes of
 * every ONNX data type, shape bookkeeping, kept values of small tensors,
 * loading TensorProtos (initializers, Constant attributes) and typed
 * attribute accessors that reject attributes of the wrong type.
 *
 * Steps of nnmem__onnx_load_tensor:
 *   1. dims must be >= 0 and at most OX_MAX_RANK of them; the element count
 *      and byte size must not overflow 64 bits;
 *   2. external data (data_location = EXTERNAL) is sized from the dims and
 *      never read;
 *   3. tensors of at most OX_MAX_VALUES elements keep their values (from
 *      raw_data little-endian, or the typed repeated fields) as int64 or
 *      double, so later shape computations can fold.
 * Invariants: v->has_vals implies v->nvals == numel(v) and exactly one of
 * iv / fv is set. Complexity: O(elements kept). Thread-safety: pure. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "import/onnx/onnx_internal.h"

static const uint8_t elem_bits[OX_TYPE_COUNT] = {
    0,  32, 8,  8,   16, 16, 32, 64, 0, 8, 16, 64,
    32, 64, 64, 128, 16, 8,  8,  8,  8, 4, 4};
static const char *const elem_names[OX_TYPE_COUNT] = {
    "undefined",      "float32",    "uint8",
    "int8",           "uint16",     "int16",
    "int32",          "int64",      "string",
    "bool",           "float16",    "float64",
    "uint32",         "uint64",     "complex64",
    "complex128",     "bfloat16",   "float8e4m3fn",
    "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
    "uint4",          "int4"};

size_t nnmem__onnx_elem_bits(int32_t elem) {
  return elem > 0 && elem < OX_TYPE_COUNT ? elem_bits[elem] : 0;
}

const char *nnmem__onnx_type_name(int32_t elem) {
  return elem >= 0 && elem < OX_TYPE_COUNT ? elem_names[elem] : "unknown";
}

int nnmem__onnx_is_float(int32_t elem) {
  return elem == OX_FLOAT || elem == OX_FLOAT16 || elem == OX_DOUBLE ||
         elem == OX_BFLOAT16 || (elem >= OX_FLOAT8E4M3FN && elem <= 20);
}

int nnmem__onnx_is_int(int32_t elem) {
  return (elem >= OX_UINT8 && elem <= OX_INT64) || elem == OX_BOOL ||
         elem == OX_UINT32 || elem == OX_UINT64 || elem == OX_UINT4 ||
         elem == OX_INT4;
}

int nnmem__onnx_known(const ox_val_t *v) {
  if (!v || v->rank < 0) return 0;
  for (int32_t i = 0; i < v->rank; i++)
    if (v->dims[i] < 0) return 0;
  return 1;
}

int64_t nnmem__onnx_numel(const ox_val_t *v) {
  if (!nnmem__onnx_known(v)) return -1;
  uint64_t n = 1;
  for (int32_t i = 0; i < v->rank; i++)
    if (nnmem__mul_overflow(n, (uint64_t)v->dims[i], &n) || n > INT64_MAX)
      return -1;
  return (int64_t)n;
}

void nnmem__onnx_set_shape(ox_val_t *v, int32_t rank, const int64_t *dims) {
  if (rank < 0 || rank > OX_MAX_RANK) {
    v->rank = -1;
    return;
  }
  v->rank = rank;
  for (int32_t i = 0; i < rank; i++)
    v->dims[i] = dims ? dims[i] : -1;
}

void nnmem__onnx_copy_type(ox_val_t *dst, const ox_val_t *src) {
  if (!src || !dst) return;
  dst->elem = src->elem;
  nnmem__onnx_set_shape(dst, src->rank, src->dims);
}

static void drop_vals(ox_val_t *v) {
  free(v->iv);
  free(v->fv);
  v->iv = NULL;
  v->fv = NULL;
  v->nvals = 0;
  v->has_vals = 0;
}

void nnmem__onnx_val_free(ox_val_t *v) {
  drop_vals(v);
}

nnmem_status_t nnmem__onnx_set_ints(ox_val_t *v, const int64_t *vals,
                                    size_t n) {
  drop_vals(v);
  if (n > OX_MAX_VALUES) return NNMEM_OK;
  v->iv = malloc((n ? n : 1) * sizeof *v->iv);
  if (!v->iv) return NNMEM_ERR_NOMEM;
  if (n) memcpy(v->iv, vals, n * sizeof *vals);
  v->nvals = n;
  v->has_vals = 1;
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_set_floats(ox_val_t *v, const double *vals,
                                      size_t n) {
  drop_vals(v);
  if (n > OX_MAX_VALUES) return NNMEM_OK;
  v->fv = malloc((n ? n : 1) * sizeof *v->fv);
  if (!v->fv) return NNMEM_ERR_NOMEM;
  if (n) memcpy(v->fv, vals, n * sizeof *vals);
  v->nvals = n;
  v->has_vals = 1;
  return NNMEM_OK;
}

int64_t nnmem__onnx_int_at(const ox_val_t *v, size_t i) {
  if (!v->has_vals || i >= v->nvals) return 0;
  if (v->iv) return v->iv[i];
  double d = v->fv[i];
  if (d != d) return 0;
  if (d >= 9.2e18) return INT64_MAX;
  if (d <= -9.2e18) return INT64_MIN;
  return (int64_t)d;
}

double nnmem__onnx_float_at(const ox_val_t *v, size_t i) {
  if (!v->has_vals || i >= v->nvals) return 0;
  return v->iv ? (double)v->iv[i] : v->fv[i];
}

/* ---- TensorProto -------------------------------------------------------*/

static uint64_t le_bytes(const uint8_t *p, size_t n) {
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++)
    x |= (uint64_t)p[i] << (8 * i);
  return x;
}

static double half_to_double(uint16_t h, int bf16) {
  if (bf16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double r;
  if (e == 0)
    r = ldexp(m, -24);
  else if (e == 31)
    r = m ? NAN : INFINITY;
  else
    r = ldexp(1024 + m, e - 25);
  return s ? -r : r;
}

/* One element of raw little-endian data as int64 (ints) or double. */
static void raw_elem(int32_t elem, const uint8_t *p, int64_t *iv, double *fv) {
  size_t b = nnmem__onnx_elem_bits(elem) / 8;
  uint64_t x = le_bytes(p, b);
  switch (elem) {
    case OX_FLOAT: {
      uint32_t u = (uint32_t)x;
      float f;
      memcpy(&f, &u, sizeof f);
      *fv = f;
      return;
    }
    case OX_DOUBLE:
      memcpy(fv, &x, sizeof *fv);
      return;
    case OX_FLOAT16:
    case OX_BFLOAT16:
      *fv = half_to_double((uint16_t)x, elem == OX_BFLOAT16);
      return;
    case OX_INT8:
      *iv = (int8_t)x;
      return;
    case OX_INT16:
      *iv = (int16_t)x;
      return;
    case OX_INT32:
      *iv = (int32_t)x;
      return;
    default:
      *iv = (int64_t)x;
  }
}

/* Values from the typed repeated fields. */
static int typed_elem(const Onnx__TensorProto *t, int32_t elem, size_t i,
                      int64_t *iv, double *fv) {
  switch (elem) {
    case OX_FLOAT:
    case OX_COMPLEX64:
      if (i >= t->n_float_data) return 0;
      *fv = t->float_data[i];
      return 1;
    case OX_DOUBLE:
      if (i >= t->n_double_data) return 0;
      *fv = t->double_data[i];
      return 1;
    case OX_INT64:
      if (i >= t->n_int64_data) return 0;
      *iv = t->int64_data[i];
      return 1;
    case OX_UINT32:
    case OX_UINT64:
      if (i >= t->n_uint64_data) return 0;
      *iv = (int64_t)t->uint64_data[i];
      return 1;
    case OX_FLOAT16:
    case OX_BFLOAT16:
      if (i >= t->n_int32_data) return 0;
      *fv = half_to_double((uint16_t)t->int32_data[i], elem == OX_BFLOAT16);
      return 1;
    default:
      if (i >= t->n_int32_data) return 0;
      *iv = t->int32_data[i];
      return 1;
  }
}

static nnmem_status_t load_values(ox_val_t *v, const Onnx__TensorProto *t,
                                  size_t n) {
  int fl = nnmem__onnx_is_float(v->elem);
  size_t bytes = nnmem__onnx_elem_bits(v->elem) / 8;
  int raw = t->has_raw_data;
  if (bytes == 0 || (!fl && !nnmem__onnx_is_int(v->elem))) return NNMEM_OK;
  if (raw && t->raw_data.len < n * bytes) return NNMEM_OK; /* short data */
  int64_t *iv = fl ? NULL : malloc((n ? n : 1) * sizeof *iv);
  double *fv = fl ? malloc((n ? n : 1) * sizeof *fv) : NULL;
  if (!iv && !fv) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    int64_t a = 0;
    double d = 0;
    if (raw)
      raw_elem(v->elem, t->raw_data.data + i * bytes, &a, &d);
    else if (!typed_elem(t, v->elem, i, &a, &d)) {
      free(iv);
      free(fv);
      return NNMEM_OK; /* missing data: keep no values */
    }
    if (iv) iv[i] = a;
    if (fv) fv[i] = d;
  }
  v->iv = iv;
  v->fv = fv;
  v->nvals = n;
  v->has_vals = 1;
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_load_tensor(ox_ctx_t *c, const Onnx__TensorProto *t,
                                       ox_val_t *v, const char *where) {
  const char *nm = t->name ? t->name : "";
  if (t->n_dims > OX_MAX_RANK)
    return nnmem__diag(c->diag, NNMEM_ERR_UNSUPPORTED,
                       "%s: %s: tensor '%s' has rank %zu (at most %d)", c->file,
                       where, nm, t->n_dims, OX_MAX_RANK);
  uint64_t n = 1;
  for (size_t i = 0; i < t->n_dims; i++) {
    if (t->dims[i] < 0)
      return nnmem__diag(c->diag, NNMEM_ERR_INVALID,
                         "%s: %s: tensor '%s' has negative dim %lld", c->file,
                         where, nm, (long long)t->dims[i]);
    if (nnmem__mul_overflow(n, (uint64_t)t->dims[i], &n) || n > INT64_MAX / 16)
      return nnmem__diag(c->diag, NNMEM_ERR_OVERFLOW,
                         "%s: %s: tensor '%s': element count overflows",
                         c->file, where, nm);
  }
  v->elem = t->has_data_type ? t->data_type : OX_UNDEFINED;
  if (v->elem <= 0 || v->elem >= OX_TYPE_COUNT)
    return nnmem__diag(c->diag, NNMEM_ERR_UNSUPPORTED,
                       "%s: %s: tensor '%s' has unknown data type %d", c->file,
                       where, nm, (int)v->elem);
  v->rank = (int32_t)t->n_dims;
  for (size_t i = 0; i < t->n_dims; i++)
    v->dims[i] = t->dims[i];
  v->is_const = 1;
  int external =
      t->has_data_location &&
      t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  if (external || n > OX_MAX_VALUES) return NNMEM_OK;
  return load_values(v, t, (size_t)n);
}

/* ---- attributes -----------------------------------------------------------*/

const Onnx__AttributeProto *nnmem__onnx_attr(const ox_node_t *n,
                                             const char *name) {
  const Onnx__NodeProto *np = n->np;
  for (size_t i = 0; i < np->n_attribute; i++) {
    const Onnx__AttributeProto *a = np->attribute[i];
    if (a->name && strcmp(a->name, name) == 0) return a;
  }
  return NULL;
}

nnmem_status_t nnmem__onnx_node_error(ox_ctx_t *c, const ox_node_t *n,
                                      nnmem_status_t st, const char *fmt, ...) {
  char msg[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return nnmem__diag(c->diag, st, "%s: node '%s' (%s): %s", c->file, n->name,
                     n->type, msg);
}

/* 1 when `a` is of type `want` (or untyped, as in old files, and carries the
 * field that type uses). */
static int attr_is(const Onnx__AttributeProto *a, int want, int has_field) {
  if (a->has_type &&
      a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
    return (int)a->type == want;
  return has_field;
}

static nnmem_status_t wrong_type(ox_ctx_t *c, const ox_node_t *n,
                                 const char *name, const char *want) {
  return nnmem__onnx_node_error(c, n, NNMEM_ERR_PARSE,
                                "attribute '%s' must be %s", name, want);
}

nnmem_status_t nnmem__onnx_attr_int(ox_ctx_t *c, const ox_node_t *n,
                                    const char *name, int64_t def,
                                    int64_t *out) {
  const Onnx__AttributeProto *a = nnmem__onnx_attr(n, name);
  *out = def;
  if (!a) return NNMEM_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i))
    return wrong_type(c, n, name, "an int");
  *out = a->i;
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_attr_float(ox_ctx_t *c, const ox_node_t *n,
                                      const char *name, double def,
                                      double *out) {
  const Onnx__AttributeProto *a = nnmem__onnx_attr(n, name);
  *out = def;
  if (!a) return NNMEM_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, a->has_f))
    return wrong_type(c, n, name, "a float");
  *out = a->f;
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_attr_ints(ox_ctx_t *c, const ox_node_t *n,
                                     const char *name, const int64_t **vals,
                                     size_t *count) {
  const Onnx__AttributeProto *a = nnmem__onnx_attr(n, name);
  *vals = NULL;
  *count = 0;
  if (!a) return NNMEM_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, 1))
    return wrong_type(c, n, name, "a list of ints");
  *vals = a->ints;
  *count = a->n_ints;
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_attr_floats(ox_ctx_t *c, const ox_node_t *n,
                                       const char *name, const float **vals,
                                       size_t *count) {
  const Onnx__AttributeProto *a = nnmem__onnx_attr(n, name);
  *vals = NULL;
  *count = 0;
  if (!a) return NNMEM_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS, 1))
    return wrong_type(c, n, name, "a list of floats");
  *vals = a->floats;
  *count = a->n_floats;
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_attr_string(ox_ctx_t *c, const ox_node_t *n,
                                       const char *name, const char *def,
                                       char *buf, size_t cap) {
  const Onnx__AttributeProto *a = nnmem__onnx_attr(n, name);
  if (!a) {
    snprintf(buf, cap, "%s", def);
    return NNMEM_OK;
  }
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, a->has_s))
    return wrong_type(c, n, name, "a string");
  size_t len = a->s.len < cap - 1 ? a->s.len : cap - 1;
  if (len) memcpy(buf, a->s.data, len);
  buf[len] = 0;
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_attr_tensor(ox_ctx_t *c, const ox_node_t *n,
                                       const char *name,
                                       const Onnx__TensorProto **out) {
  const Onnx__AttributeProto *a = nnmem__onnx_attr(n, name);
  *out = NULL;
  if (!a) return NNMEM_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR,
               a->t != NULL) ||
      !a->t)
    return wrong_type(c, n, name, "a tensor");
  *out = a->t;
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_attr_graph(ox_ctx_t *c, const ox_node_t *n,
                                      const char *name,
                                      const Onnx__GraphProto **out) {
  const Onnx__AttributeProto *a = nnmem__onnx_attr(n, name);
  *out = NULL;
  if (!a) return NNMEM_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH, a->g != NULL) ||
      !a->g)
    return wrong_type(c, n, name, "a graph");
  *out = a->g;
  return NNMEM_OK;
}

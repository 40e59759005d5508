/* onnx_internal.h - internal types of the ONNX importer (never installed):
 * the value table every inference function reads and writes, the node view
 * passed to them, attribute accessors and the operator registry.
 *
 * A value (ox_val_t) is one named ONNX tensor of one scope (the main graph
 * or a subgraph body). Its shape is known when rank >= 0 and every dim is
 * >= 0; -1 marks an unknown rank / dim. Small integer tensors (and small
 * float tensors such as Resize scales) keep their values (iv / fv) so that
 * shape computations fold to constants. */
#ifndef NNMEM_ONNX_INTERNAL_H
#define NNMEM_ONNX_INTERNAL_H

#include <stdint.h>

#include "nnmem/onnx.h"
#include "common/util.h"
#include "import/onnx/onnx_hooks.h"
#include "onnx.pb-c.h"

#define OX_MAX_RANK NNMEM_MAX_RANK
#define OX_MAX_VALUES 65536   /* tensors with more elements keep no values */
#define OX_MAX_DEPTH 16       /* nesting of If / Loop / Scan bodies */
#define OX_MAX_WIRE_DEPTH 200 /* nesting of protobuf messages */

/* ONNX TensorProto.DataType values. */
enum {
  OX_UNDEFINED = 0,
  OX_FLOAT = 1,
  OX_UINT8 = 2,
  OX_INT8 = 3,
  OX_UINT16 = 4,
  OX_INT16 = 5,
  OX_INT32 = 6,
  OX_INT64 = 7,
  OX_STRING = 8,
  OX_BOOL = 9,
  OX_FLOAT16 = 10,
  OX_DOUBLE = 11,
  OX_UINT32 = 12,
  OX_UINT64 = 13,
  OX_COMPLEX64 = 14,
  OX_COMPLEX128 = 15,
  OX_BFLOAT16 = 16,
  OX_FLOAT8E4M3FN = 17,
  OX_FLOAT8E4M3FNUZ = 18,
  OX_FLOAT8E5M2 = 19,
  OX_FLOAT8E5M2FNUZ = 20,
  OX_UINT4 = 21,
  OX_INT4 = 22,
  OX_TYPE_COUNT = 23
};

typedef struct ox_val {
  const char *name;
  int32_t elem;              /* ONNX data type; 0 = unknown */
  int32_t rank;              /* -1 = unknown */
  int64_t dims[OX_MAX_RANK]; /* -1 = unknown dim */
  uint8_t is_const;          /* initializer or computed only from constants */
  uint8_t is_init;           /* an initializer */
  uint8_t is_input;          /* a graph input (not an initializer) */
  uint8_t is_output;         /* a graph output */
  uint8_t data_dep;          /* sized by an upper bound (a data-dependent
                                output, or computed from one) */
  uint8_t vals_dep;          /* values computed from an upper bound (e.g.
                                Shape of a data-dependent tensor) */
  uint8_t non_tensor;        /* sequence / map / optional: not sized */
  uint8_t unresolved;        /* main graph: sized 0, counted (convert) */
  uint8_t has_vals;
  uint8_t is_outer; /* lives in an enclosing scope (captured) */
  int64_t *iv;      /* values of integer / bool tensors (has_vals) */
  double *fv;       /* values of floating tensors (has_vals) */
  size_t nvals;
  int32_t producer;                 /* node index in its scope, or -1 */
  const Onnx__ValueInfoProto *decl; /* declared type, or NULL */
  uint32_t gid;                     /* tensor id in the nnmem graph */
  uint64_t body_bytes;              /* subgraph workspace (control ops) */
} ox_val_t;

struct ox_ctx;
struct ox_scope;

/* One node as the inference functions see it. Missing optional inputs
 * (empty names) are NULL. */
typedef struct ox_node {
  const Onnx__NodeProto *np;
  const char *name; /* display name (never NULL) */
  const char *type;
  ox_val_t **in; /* n_in explicit inputs, then n_implicit captured names */
  size_t n_in;
  size_t n_implicit; /* names a body reads from enclosing scopes */
  ox_val_t **out;
  size_t n_out;
  int64_t opset;
  uint64_t workspace; /* set by control-flow ops */
  struct ox_scope *scope;
  /* Slice with known constant parameters that keeps input 0 but along one
   * axis, where it takes [slice_start, slice_start + out dim) with step 1
   * (set by nnmem__onnx_infer_slice, given to nnmem_graph_set_op_slice). */
  int has_slice;
  int32_t slice_axis;
  int64_t slice_start;
} ox_node_t;

typedef nnmem_status_t (*ox_infer_fn)(struct ox_ctx *c, ox_node_t *n);

/* Registry flags. */
#define OX_VIEW 0x1u    /* output 0 is a view of input 0 */
#define OX_INPLACE 0x2u /* output 0 may overwrite input 0 (same size) */
#define OX_CONTROL 0x4u /* has subgraph bodies */
#define OX_NOFOLD 0x8u  /* never treated as constant (random ops) */

typedef struct ox_op {
  const char *type;
  ox_infer_fn infer;
  uint32_t flags;
} ox_op_t;

/* Per-family tables, each terminated by a NULL type. */
extern const ox_op_t nnmem__onnx_ops_elem[];
extern const ox_op_t nnmem__onnx_ops_nn[];
extern const ox_op_t nnmem__onnx_ops_shape[];
extern const ox_op_t nnmem__onnx_ops_control[];
extern const ox_op_t nnmem__onnx_ops_misc[];
extern const ox_op_t nnmem__onnx_ops_legacy[];

/* Slice (onnx_ops_shape.c), also behind DynamicSlice (onnx_ops_legacy.c). */
nnmem_status_t nnmem__onnx_infer_slice(struct ox_ctx *c, ox_node_t *n);

/* Finds the operator `type` of the default domain; NULL when unsupported. */
const ox_op_t *nnmem__onnx_find_op(const char *type);

/* A scope: the values of one graph (main graph or a body). */
typedef struct ox_scope {
  struct ox_scope *parent;
  const Onnx__GraphProto *gp;
  ox_val_t *vals;
  size_t n_vals, cap_vals;
  uint32_t *hash; /* open addressing: index + 1, 0 = empty */
  size_t hash_cap;
  ox_node_t *nodes; /* nodes[i] is gp->node[i] */
  size_t n_nodes;
  uint32_t *order;     /* execution (topological) order of node indices */
  const ox_op_t **ops; /* per node: registry entry or NULL (unsupported) */
  uint8_t *folded;     /* per node: computes only constants */
  int depth;
} ox_scope_t;

#define OX_MAX_SEEN_DIMS 64

typedef struct ox_ctx {
  const char *file; /* display name */
  const Onnx__ModelProto *model;
  nnmem_onnx_config_t cfg;
  nnmem_onnx_report_t *rep;
  nnmem_diag_t *diag;
  int64_t opset;
  int64_t ir_version;
  int no_decl_fallback;     /* conformance: never use declared shapes of
                               supported operators' outputs */
  const void *const *in_pb; /* conformance: serialized TensorProto values of
                               cfg.input_shapes[i] (NULL entries allowed) */
  const size_t *in_pb_len;
  int64_t top_node;          /* main-graph node being inferred (its bodies
                                too), or -1 */
  int64_t first_unsupported; /* main-graph node holding the first
                                unsupported one, or -1 */
  /* symbolic dims met while binding (onnx_dims.c): names (pointing into
   * the model), which bindings matched one (bit i: cfg.dims[i], the first
   * 64), and whether any batch- / sequence-like name was met */
  const char *seen_dims[OX_MAX_SEEN_DIMS];
  size_t n_seen_dims;
  uint64_t dims_used;
} ox_ctx_t;

/* ---- onnx_wire.c: 1 when protobuf messages nest deeper than
 * OX_MAX_WIRE_DEPTH (checked before unpacking) ---- */
int nnmem__onnx_wire_too_deep(const void *data, size_t len);

/* ---- onnx_values.c: value helpers ---- */
size_t nnmem__onnx_elem_bits(int32_t elem); /* 0 for unknown / string */
int nnmem__onnx_is_float(int32_t elem);
int nnmem__onnx_is_int(int32_t elem); /* integer or bool */
const char *nnmem__onnx_type_name(int32_t elem);
int nnmem__onnx_known(const ox_val_t *v); /* shape fully known */
/* Element count of a known shape; -1 when unknown or overflowing. */
int64_t nnmem__onnx_numel(const ox_val_t *v);
void nnmem__onnx_set_shape(ox_val_t *v, int32_t rank, const int64_t *dims);
void nnmem__onnx_copy_type(ox_val_t *dst, const ox_val_t *src);
/* Stores integer values (shape [n] unless the caller sets another). */
nnmem_status_t nnmem__onnx_set_ints(ox_val_t *v, const int64_t *vals, size_t n);
nnmem_status_t nnmem__onnx_set_floats(ox_val_t *v, const double *vals,
                                      size_t n);
int64_t nnmem__onnx_int_at(const ox_val_t *v, size_t i);
double nnmem__onnx_float_at(const ox_val_t *v, size_t i);
void nnmem__onnx_val_free(ox_val_t *v);
/* Loads type, shape and (small) values of a TensorProto into v. */
nnmem_status_t nnmem__onnx_load_tensor(ox_ctx_t *c, const Onnx__TensorProto *t,
                                       ox_val_t *v, const char *where);

/* ---- onnx_attr.c: attributes ---- */
const Onnx__AttributeProto *nnmem__onnx_attr(const ox_node_t *n,
                                             const char *name);
/* Each returns OK (value set, or default when absent) or PARSE when the
 * attribute has the wrong type (the message names node and attribute). */
nnmem_status_t nnmem__onnx_attr_int(ox_ctx_t *c, const ox_node_t *n,
                                    const char *name, int64_t def,
                                    int64_t *out);
nnmem_status_t nnmem__onnx_attr_float(ox_ctx_t *c, const ox_node_t *n,
                                      const char *name, double def,
                                      double *out);
/* *vals = NULL, *count = 0 when absent. */
nnmem_status_t nnmem__onnx_attr_ints(ox_ctx_t *c, const ox_node_t *n,
                                     const char *name, const int64_t **vals,
                                     size_t *count);
nnmem_status_t nnmem__onnx_attr_floats(ox_ctx_t *c, const ox_node_t *n,
                                       const char *name, const float **vals,
                                       size_t *count);
/* *out = def when absent; the string is NUL-terminated into buf. */
nnmem_status_t nnmem__onnx_attr_string(ox_ctx_t *c, const ox_node_t *n,
                                       const char *name, const char *def,
                                       char *buf, size_t cap);
nnmem_status_t nnmem__onnx_attr_tensor(ox_ctx_t *c, const ox_node_t *n,
                                       const char *name,
                                       const Onnx__TensorProto **out);
nnmem_status_t nnmem__onnx_attr_graph(ox_ctx_t *c, const ox_node_t *n,
                                      const char *name,
                                      const Onnx__GraphProto **out);
/* A formatted PARSE / INVALID error naming the node. */
nnmem_status_t nnmem__onnx_node_error(ox_ctx_t *c, const ox_node_t *n,
                                      nnmem_status_t st, const char *fmt, ...)
    NNMEM__PRINTF(4, 5);

/* ---- onnx_scope.c: scopes, parsing and inference driver ---- */
nnmem_status_t nnmem__onnx_scope_build(ox_ctx_t *c, ox_scope_t *parent,
                                       const Onnx__GraphProto *gp, int depth,
                                       ox_scope_t **out);
void nnmem__onnx_scope_free(ox_scope_t *s);
/* onnx_infer.c: node views, topological order, inference of a scope. */
nnmem_status_t nnmem__onnx_topo_order(ox_ctx_t *c, ox_scope_t *s);
nnmem_status_t nnmem__onnx_scope_infer(ox_ctx_t *c, ox_scope_t *s);
/* Applies the declared type (value_info / output) to unknown parts of v. */
nnmem_status_t nnmem__onnx_apply_decl(ox_ctx_t *c, ox_val_t *v);
/* 1 when v's declared type contradicts the inferred one (symbolic or
 * unknown dims are not compared); the reason goes to why. */
int nnmem__onnx_decl_mismatch(ox_ctx_t *c, const ox_val_t *v, char *why,
                              size_t cap);
ox_val_t *nnmem__onnx_scope_find(ox_scope_t *s, const char *name);
/* Marks data-dependent outputs (adds to the report). */
void nnmem__onnx_mark_data_dep(ox_ctx_t *c, const ox_node_t *n, ox_val_t *v);
/* Counts the unresolved main-graph values computed from the outputs of
 * c->first_unsupported into the report (after conversion). */
void nnmem__onnx_count_downstream(ox_ctx_t *c, const ox_scope_t *s);
/* Binds a symbolic dim name to a value (cfg, or the documented default). */
int64_t nnmem__onnx_bind_dim(ox_ctx_t *c, const char *param);

/* ---- onnx_dims.c: checking the dim bindings against the model ---- */
/* Records symbolic dim `param` as met and binding `d` (NULL: none) as
 * used. */
void nnmem__onnx_note_dim(ox_ctx_t *c, const char *param,
                          const nnmem_onnx_dim_t *d);
/* After the import: a binding that matched no symbolic dim is
 * NNMEM_ERR_INVALID, listing the model's dims and the closest name. */
nnmem_status_t nnmem__onnx_check_bindings(ox_ctx_t *c);

/* ---- onnx_convert.c: a scope -> nnmem graph ---- */
nnmem_status_t nnmem__onnx_scope_to_graph(ox_ctx_t *c, ox_scope_t *s,
                                          const char *name,
                                          nnmem_graph_t **out);
/* The planned height of a body scope's arena (its workspace). */
nnmem_status_t nnmem__onnx_body_bytes(ox_ctx_t *c, ox_scope_t *s,
                                      uint64_t *out);

/* ---- onnx_ops_util.c: helpers of the inference functions ---- */
/* Input / output k of a node, NULL when absent (functions, so arguments
 * are evaluated once). */
static inline ox_val_t *OX_IN(const ox_node_t *n, size_t k) {
  return k < n->n_in ? n->in[k] : NULL;
}
static inline ox_val_t *OX_OUT(const ox_node_t *n, size_t k) {
  return k < n->n_out ? n->out[k] : NULL;
}
/* Dim arithmetic: -1 (unknown) when an operand is negative or the result
 * overflows. */
static inline int64_t nnmem__onnx_dmul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return -1;
  return r;
}
static inline int64_t nnmem__onnx_dadd(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r)) return -1;
  return r;
}
/* Normalizes a possibly negative axis; 0 when out of range. */
int nnmem__onnx_axis(int64_t axis, int32_t rank, int32_t *out);
/* Sets type and shape of an output (NULL output: no-op). */
void nnmem__onnx_set(ox_val_t *v, int32_t elem, int32_t rank,
                     const int64_t *dims);
/* Numpy broadcasting of n inputs; 0 when a rank is unknown. Unknown dims
 * stay -1 unless another input fixes them (> 1). */
int nnmem__onnx_broadcast(ox_val_t *const *in, size_t n, int32_t *rank,
                          int64_t *dims);
/* The int values of input k: 1 with *vals / *count set, 0 when unknown. */
int nnmem__onnx_ints_of(const ox_node_t *n, size_t k, const int64_t **vals,
                        size_t *count);
/* Axes from the attribute `name` (older opsets) or input k (newer). Returns
 * 1 when given (count may be 0), 0 when absent, -1 when an input holds them
 * but its values are unknown; errors (bad attribute type) via *st. */
int nnmem__onnx_axes(ox_ctx_t *c, const ox_node_t *n, const char *name,
                     size_t k, int64_t *axes, size_t *count,
                     nnmem_status_t *st);
/* Element-wise fold of up to 3 inputs with broadcasting into out (which
 * must have its type and known shape). `op` is an OX_F_* code. */
nnmem_status_t nnmem__onnx_fold_elementwise(int op, ox_val_t *const *in,
                                            size_t n_in, ox_val_t *out);
/* Stores values into out when every element is computed: index map of a
 * gather-like op. src_index[i] is the index into src of output element i. */
nnmem_status_t nnmem__onnx_fold_gather(const ox_val_t *src,
                                       const int64_t *src_index, size_t n,
                                       ox_val_t *out);

enum {
  OX_F_ADD = 1,
  OX_F_SUB,
  OX_F_MUL,
  OX_F_DIV,
  OX_F_MOD,
  OX_F_POW,
  OX_F_MIN,
  OX_F_MAX,
  OX_F_EQ,
  OX_F_LT,
  OX_F_GT,
  OX_F_LE,
  OX_F_GE,
  OX_F_AND,
  OX_F_OR,
  OX_F_XOR,
  OX_F_WHERE,
  OX_F_NEG,
  OX_F_ABS,
  OX_F_NOT,
  OX_F_IDENT,
  OX_F_FLOOR,
  OX_F_CEIL,
  OX_F_ROUND,
  OX_F_SQRT,
  OX_F_RELU,
  OX_F_SIGN,
  OX_F_RECIP,
  OX_F_EXP,
  OX_F_LOG,
  OX_F_SUM,
  OX_F_MEAN,
  OX_F_FMOD
};

#endif /* NNMEM_ONNX_INTERNAL_H */

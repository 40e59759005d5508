/* nnmem/onnx.h - ONNX model import: reads an ONNX protobuf, infers every
 * tensor's shape and dtype, folds constant integer computations and builds an
 * nnmem graph (docs/onnx-operators.md lists the supported operators).
 *
 * Kinds: initializers, graph inputs that are initializers, and values
 * computed only from constants (e.g. ConstantOfShape outputs) become
 * WEIGHT / CONSTANT tensors (the nodes computing them are not ops); graph
 * inputs are INPUT, graph outputs OUTPUT, everything else ACTIVATION.
 * Reshape, Flatten, Squeeze, Unsqueeze, Identity and Dropout are views;
 * unary elementwise ops, BatchNormalization and same-shape binary ops are
 * in-place candidates.
 * If / Loop / Scan: the body is inferred and planned; its planned height is
 * the op's workspace and values captured from the outer scope are op inputs.
 *
 * Symbolic dims: bound by cfg->dims (NAME=VALUE); a binding named "batch"
 * ("sequence") also binds every batch-like (sequence-like) dim that has no
 * binding of its own, so `--dim batch=8` works whatever the exporter named
 * the dim; unbound ones default to
 * cfg->default_batch (1) when batch-like (the name contains "batch", or is
 * "N", or starts with "unk__"), to cfg->default_sequence (128) when
 * sequence-like (contains "seq", "len", "time", "token" or "step"), and to 1
 * otherwise; each default used is listed in the report.
 * Data-dependent outputs (NonZero, NonMaxSuppression, TopK with a runtime k,
 * Unique, Compress...) take an upper bound (documented per op in
 * docs/onnx-operators.md), are counted in the report and carry
 * NNMEM_TENSOR_UPPER_BOUND (nnmem_graph_tensor_size_is_upper_bound).
 * String tensors are NNMEM_DTYPE_STRING: 16 bytes per element (a handle);
 * the characters are not planned.
 *
 * Thread-safety: each call is independent. */
#ifndef NNMEM_ONNX_H
#define NNMEM_ONNX_H

#include "nnmem/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nnmem_onnx_layout {
  NNMEM_ONNX_LAYOUT_NCHW = 0, /* as in the file */
  NNMEM_ONNX_LAYOUT_NHWC,     /* rank-4/5 activations permuted (same bytes) */
  NNMEM_ONNX_LAYOUT_NC1HWC0   /* rank-4 activations as [N, C1, H, W, C0],
                                 C0 = 16 (16-bit types), 32 (8-bit), 8
                                 (32-bit), 4 (64-bit); C padded up */
} nnmem_onnx_layout_t;

/* One symbolic dim binding (NAME=VALUE). */
typedef struct nnmem_onnx_dim {
  const char *name;
  int64_t value; /* >= 1 */
} nnmem_onnx_dim_t;

/* A concrete shape for one graph input (overrides the declared one). */
typedef struct nnmem_onnx_input_shape {
  const char *name;
  uint32_t rank;
  const int64_t *dims; /* >= 0 */
  int32_t elem_type;   /* ONNX TensorProto.DataType; 0 = keep declared */
} nnmem_onnx_input_shape_t;

typedef struct nnmem_onnx_config {
  uint32_t size; /* sizeof; 0 = current */
  const nnmem_onnx_dim_t *dims;
  size_t n_dims;
  const nnmem_onnx_input_shape_t *input_shapes;
  size_t n_input_shapes;
  int64_t default_batch;    /* 0 = 1 */
  int64_t default_sequence; /* 0 = 128 */
  nnmem_dtype_t dtype;      /* UNDEFINED = keep; else floating tensors are
                               planned as if converted to this type */
  nnmem_onnx_layout_t layout;
  uint64_t alignment; /* per-tensor alignment; 0 = none */
  int strict;         /* nonzero: any unresolved tensor fails the import */
  uint64_t max_input_bytes; /* nnmem_onnx_import_file: the largest file
                               read; 0 = NNMEM_INPUT_MAX_DEFAULT */
} nnmem_onnx_config_t;

NNMEM_API void nnmem_onnx_config_init(nnmem_onnx_config_t *cfg);

#define NNMEM_ONNX_REPORT_LIST 16
#define NNMEM_ONNX_NAME_MAX 96

typedef struct nnmem_onnx_named {
  char name[NNMEM_ONNX_NAME_MAX]; /* node / dim / tensor name (truncated) */
  char what[NNMEM_ONNX_NAME_MAX]; /* op type / "batch" / reason */
  int64_t value;                  /* the default value used (defaults) */
} nnmem_onnx_named_t;

/* The first node (in execution order; a node inside an If / Loop / Scan
 * body counts at its enclosing main-graph node) whose operator the importer
 * does not support. */
typedef struct nnmem_onnx_first_unsupported {
  char node[NNMEM_ONNX_NAME_MAX];    /* node name (truncated) */
  char op_type[NNMEM_ONNX_NAME_MAX]; /* "Foo" */
  char domain[NNMEM_ONNX_NAME_MAX];  /* "ai.onnx" for the default domain */
  int64_t opset;                     /* the model's opset of that domain */
  size_t downstream_unresolved;      /* unresolved main-graph tensors computed
                                        from its outputs (its own included) */
} nnmem_onnx_first_unsupported_t;

/* What the import did. Lists hold the first NNMEM_ONNX_REPORT_LIST entries;
 * the counts are complete. */
typedef struct nnmem_onnx_report {
  uint32_t size; /* sizeof; 0 = current */
  int64_t ir_version;
  int64_t opset; /* of the default ("" / "ai.onnx") domain */
  char producer[NNMEM_ONNX_NAME_MAX];
  size_t nodes;              /* nodes of the main graph */
  size_t subgraph_nodes;     /* nodes inside If / Loop / Scan bodies */
  size_t ops;                /* ops in the nnmem graph */
  size_t tensors;            /* tensors in the nnmem graph */
  size_t folded_nodes;       /* nodes computing constants (not ops) */
  size_t unresolved_tensors; /* tensors whose size could not be inferred */
  size_t n_unsupported;      /* nodes of an unsupported op type */
  nnmem_onnx_named_t unsupported[NNMEM_ONNX_REPORT_LIST]; /* node, type */
  size_t n_defaults; /* symbolic dims given a default value */
  nnmem_onnx_named_t defaults[NNMEM_ONNX_REPORT_LIST]; /* dim, class */
  size_t n_data_dependent; /* tensors sized by an upper bound */
  nnmem_onnx_named_t data_dependent[NNMEM_ONNX_REPORT_LIST]; /* tensor, op */
  size_t n_unresolved_listed;
  nnmem_onnx_named_t unresolved[NNMEM_ONNX_REPORT_LIST]; /* tensor, node */
  nnmem_onnx_first_unsupported_t first_unsupported;      /* n_unsupported > 0 */
} nnmem_onnx_report_t;

/* Imports an ONNX model from memory. `display_name` (nullable) is used in
 * messages. `cfg` and `report` may be NULL. On success *out is a new graph
 * (caller destroys). Errors: NNMEM_ERR_PARSE (not a protobuf / not ONNX /
 * malformed graph, the message names the node), NNMEM_ERR_UNSUPPORTED
 * (unknown opset domain used by a node, strict mode with unresolved
 * tensors), NNMEM_ERR_CYCLE, NNMEM_ERR_DUPLICATE, NNMEM_ERR_INVALID (bad
 * dims), NNMEM_ERR_OVERFLOW, NNMEM_ERR_NOMEM. Nothing is allocated on error.
 */
NNMEM_API nnmem_status_t nnmem_onnx_import(const void *data, size_t len,
                                           const char *display_name,
                                           const nnmem_onnx_config_t *cfg,
                                           nnmem_graph_t **out,
                                           nnmem_onnx_report_t *report,
                                           nnmem_diag_t *diag);

/* Same, reading the file at `path`. */
NNMEM_API nnmem_status_t nnmem_onnx_import_file(const char *path,
                                                const nnmem_onnx_config_t *cfg,
                                                nnmem_graph_t **out,
                                                nnmem_onnx_report_t *report,
                                                nnmem_diag_t *diag);

/* Parses a layout name: "NCHW", "NHWC", "NC1HWC0" (case-insensitive). */
NNMEM_API nnmem_status_t nnmem_onnx_layout_parse(const char *name,
                                                 nnmem_onnx_layout_t *out);

/* ---- shape buckets of one symbolic dim (`--dim NAME=LO..HI`) ----
 *
 * A range LO..HI becomes the buckets LO, every power of two strictly
 * between LO and HI, and HI: 1..32 -> 1 2 4 8 16 32; 3..20 -> 3 4 8 16 20.
 * A plan made for bucket b serves every value in (previous bucket, b],
 * because tensor sizes grow with the dim: powers of two keep each bucket's
 * plan under 2x of what the exact value needs (for sizes linear in the
 * dim) with only log2(HI / LO) + 2 plans. A list V1,V2,... gives exactly
 * those buckets (sorted ascending). */
#define NNMEM_ONNX_BUCKETS_MAX 64
#define NNMEM_ONNX_DIM_MAX ((int64_t)1 << 40) /* largest value of a dim */

typedef struct nnmem_onnx_dim_buckets {
  char name[NNMEM_ONNX_NAME_MAX]; /* the dim (or "batch" / "sequence") */
  int is_range;                   /* 1: LO..HI; 0: a list (or one value) */
  int64_t lo, hi;                 /* the range, or the list's min and max */
  size_t n;                       /* buckets, 1..NNMEM_ONNX_BUCKETS_MAX */
  int64_t values[NNMEM_ONNX_BUCKETS_MAX]; /* strictly ascending, >= 1 */
} nnmem_onnx_dim_buckets_t;

/* Parses "NAME=LO..HI", "NAME=V1,V2,..." or "NAME=V". NNMEM_ERR_PARSE with
 * diag for: no '=' or an empty name, a value that is not a decimal
 * integer, a zero or a value over NNMEM_ONNX_DIM_MAX, LO > HI, a list
 * value given twice, more than NNMEM_ONNX_BUCKETS_MAX values. Whether the
 * model has the dim is checked by the import (an unknown NAME fails
 * there). O(length + n log n). */
NNMEM_API nnmem_status_t nnmem_onnx_dim_buckets_parse(
    const char *spec, nnmem_onnx_dim_buckets_t *out, nnmem_diag_t *diag);

/* Checker: 1 <= n <= max, values strictly ascending in [lo, hi], >= 1,
 * a range starts at lo and ends at hi. NNMEM_ERR_STATE with diag. */
NNMEM_API nnmem_status_t nnmem_onnx_dim_buckets_check(
    const nnmem_onnx_dim_buckets_t *b, nnmem_diag_t *diag);

/* The bucket serving `value`: the index of the smallest bucket >= value;
 * NNMEM_ERR_NOT_FOUND when value is above the largest (a shape for the
 * dynamic-shape pool). */
NNMEM_API nnmem_status_t nnmem_onnx_dim_bucket_of(
    const nnmem_onnx_dim_buckets_t *b, int64_t value, size_t *index_out);

/* Number of supported operator types, and the i-th name ("Conv", ...). */
NNMEM_API size_t nnmem_onnx_supported_count(void);
NNMEM_API const char *nnmem_onnx_supported_name(size_t i);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_ONNX_H */

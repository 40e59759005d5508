/* nnmem/graph.h - the graph IR: tensors and operators.
 *
 * A graph holds named tensors (with dtype and shape, or a raw byte size) and
 * operators that read and write them. Tensors are identified by the index
 * returned from nnmem_graph_add_tensor; operators by the index from
 * nnmem_graph_add_op (insertion order is the default schedule when it is a
 * valid topological order).
 *
 * Thread-safety: none; a graph is built and then read by one thread at a
 * time (concurrent reads of a finished graph are safe). */
#ifndef NNMEM_GRAPH_H
#define NNMEM_GRAPH_H

#include "nnmem/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nnmem_dtype {
  NNMEM_DTYPE_UNDEFINED = 0,
  NNMEM_DTYPE_FLOAT32,
  NNMEM_DTYPE_FLOAT16,
  NNMEM_DTYPE_BFLOAT16,
  NNMEM_DTYPE_FLOAT64,
  NNMEM_DTYPE_INT8,
  NNMEM_DTYPE_UINT8,
  NNMEM_DTYPE_INT16,
  NNMEM_DTYPE_UINT16,
  NNMEM_DTYPE_INT32,
  NNMEM_DTYPE_UINT32,
  NNMEM_DTYPE_INT64,
  NNMEM_DTYPE_UINT64,
  NNMEM_DTYPE_BOOL,
  NNMEM_DTYPE_STRING, /* 16 bytes per element: a handle (pointer +
                         length); the characters are not planned */
  NNMEM_DTYPE_COUNT_
} nnmem_dtype_t;

/* Size of one element in bytes (0 for UNDEFINED; 16 for STRING, the
 * per-element handle: string contents have no size known before the run
 * and live outside the planned memory). */
NNMEM_API size_t nnmem_dtype_size(nnmem_dtype_t t);
/* "float32", "float16", "bfloat16", "float64", "int8", ..., "string" */
NNMEM_API const char *nnmem_dtype_name(nnmem_dtype_t t);
/* Parses a dtype name; also accepts "f32", "fp16", "half", "float", ... */
NNMEM_API nnmem_status_t nnmem_dtype_parse(const char *name,
                                           nnmem_dtype_t *out);

typedef enum nnmem_tensor_kind {
  NNMEM_TENSOR_ACTIVATION = 0, /* produced and consumed inside the graph */
  NNMEM_TENSOR_INPUT,          /* graph input: live from step 0 */
  NNMEM_TENSOR_OUTPUT,         /* graph output: live to the end */
  NNMEM_TENSOR_WEIGHT,         /* read-only, separate region, never reused */
  NNMEM_TENSOR_CONSTANT,       /* like WEIGHT */
  NNMEM_TENSOR_WORKSPACE,      /* scratch of one op: live only during it */
  NNMEM_TENSOR_KIND_COUNT_
} nnmem_tensor_kind_t;

/* "activation", "input", "output", "weight", "constant", "workspace". */
NNMEM_API const char *nnmem_tensor_kind_name(nnmem_tensor_kind_t k);
NNMEM_API nnmem_status_t nnmem_tensor_kind_parse(const char *name,
                                                 nnmem_tensor_kind_t *out);

#define NNMEM_MAX_RANK 8

/* Tensor flags. */
#define NNMEM_TENSOR_UPPER_BOUND                              \
  0x1u /* the shape (so the size) is an upper bound: the real \
          size depends on the data (NonZero, Unique, ...) */

/* Describes a tensor to add. When `bytes` is nonzero it is the size;
 * otherwise size = nnmem_dtype_size(dtype) * product(shape) (rank 0 is a
 * scalar of one element). Every dim must be >= 0. */
typedef struct nnmem_tensor_desc {
  const char *name; /* unique, required; copied */
  nnmem_tensor_kind_t kind;
  nnmem_dtype_t dtype;
  uint32_t rank;
  const int64_t *shape; /* rank entries */
  uint64_t bytes;       /* explicit byte size, overrides shape */
  uint64_t align;       /* 0 = no requirement beyond the planner's */
  uint32_t flags;       /* NNMEM_TENSOR_* (0 = an exact size) */
} nnmem_tensor_desc_t;

/* Op flags. */
#define NNMEM_OP_INPLACE                             \
  0x1u /* output 0 may reuse input `inplace_input`'s \
          buffer when that input dies here */
#define NNMEM_OP_VIEW                               \
  0x2u /* output 0 is a view of input `view_input`: \
          same buffer, no new bytes */

typedef struct nnmem_op_desc {
  const char *name; /* unique, required; copied */
  const char *type; /* "Conv", "Relu", ... required; copied */
  const uint32_t *inputs;
  uint32_t n_inputs;
  const uint32_t *outputs;
  uint32_t n_outputs;
  uint64_t workspace_bytes; /* scratch live only while the op runs */
  uint32_t flags;           /* NNMEM_OP_* */
  uint32_t inplace_input;   /* index into inputs[] (with NNMEM_OP_INPLACE) */
  uint32_t view_input;      /* index into inputs[] (with NNMEM_OP_VIEW) */
} nnmem_op_desc_t;

/* Read-back records (pointers stay valid while the graph lives and is not
 * modified). */
typedef struct nnmem_tensor_info {
  const char *name;
  nnmem_tensor_kind_t kind;
  nnmem_dtype_t dtype;
  uint32_t rank;
  const int64_t *shape;
  uint64_t bytes; /* computed size */
  uint64_t align;
  int32_t producer; /* op index, or -1 */
  uint32_t n_consumers;
  uint32_t flags; /* NNMEM_TENSOR_* */
} nnmem_tensor_info_t;

typedef struct nnmem_op_info {
  const char *name;
  const char *type;
  const uint32_t *inputs;
  uint32_t n_inputs;
  const uint32_t *outputs;
  uint32_t n_outputs;
  uint64_t workspace_bytes;
  uint32_t flags;
  uint32_t inplace_input;
  uint32_t view_input;
} nnmem_op_info_t;

typedef struct nnmem_graph nnmem_graph_t;

NNMEM_API nnmem_status_t nnmem_graph_create(const char *name,
                                            nnmem_graph_t **out);
NNMEM_API void nnmem_graph_destroy(nnmem_graph_t *g);
NNMEM_API const char *nnmem_graph_name(const nnmem_graph_t *g);

/* Adds a tensor. NNMEM_ERR_DUPLICATE for a name already used,
 * NNMEM_ERR_INVALID for a negative dim, rank > NNMEM_MAX_RANK, a missing
 * name or an unknown dtype without `bytes`, NNMEM_ERR_OVERFLOW when the
 * byte size overflows 64 bits. `diag` (nullable) names the tensor. */
NNMEM_API nnmem_status_t nnmem_graph_add_tensor(nnmem_graph_t *g,
                                                const nnmem_tensor_desc_t *desc,
                                                uint32_t *id_out,
                                                nnmem_diag_t *diag);

/* Adds an operator. Fails with NNMEM_ERR_INVALID for an unknown tensor id, a
 * tensor that already has a producer, an output that is a weight / constant /
 * input, a flag index out of range, or a view / in-place op without inputs
 * and outputs. `diag` (nullable) names the op. */
NNMEM_API nnmem_status_t nnmem_graph_add_op(nnmem_graph_t *g,
                                            const nnmem_op_desc_t *desc,
                                            uint32_t *id_out,
                                            nnmem_diag_t *diag);

/* Marks op `op` as a slice: output 0 is input 0 restricted along `axis` to
 * [start, start + output dim) with step 1, every other dim equal (liveness
 * may then make the output a view of the input). NNMEM_ERR_INVALID, with
 * diag naming the op, for an unknown op, an op without exactly one output
 * and at least one input, rank / dtype that differ, an axis out of range, a
 * negative start, a range past the input's dim or another dim that differs.
 * Setting it again replaces the earlier values. */
NNMEM_API nnmem_status_t nnmem_graph_set_op_slice(nnmem_graph_t *g, uint32_t op,
                                                  uint32_t axis, int64_t start,
                                                  nnmem_diag_t *diag);
/* 1 and the slice parameters when op `op` carries them (axis / start
 * nullable), 0 otherwise (also for an invalid g / op). */
NNMEM_API int nnmem_graph_op_slice(const nnmem_graph_t *g, uint32_t op,
                                   uint32_t *axis, int64_t *start);

NNMEM_API size_t nnmem_graph_tensor_count(const nnmem_graph_t *g);
NNMEM_API size_t nnmem_graph_op_count(const nnmem_graph_t *g);
NNMEM_API nnmem_status_t nnmem_graph_tensor(const nnmem_graph_t *g, uint32_t id,
                                            nnmem_tensor_info_t *out);
NNMEM_API nnmem_status_t nnmem_graph_op(const nnmem_graph_t *g, uint32_t id,
                                        nnmem_op_info_t *out);
/* 1 when tensor `id`'s size is an upper bound (NNMEM_TENSOR_UPPER_BOUND:
 * a data-dependent shape sized by its largest possible value), 0 when it is
 * exact or `id` / `g` is invalid. */
NNMEM_API int nnmem_graph_tensor_size_is_upper_bound(const nnmem_graph_t *g,
                                                     uint32_t id);

/* NNMEM_ERR_NOT_FOUND when no tensor has that name. O(1) average. */
NNMEM_API nnmem_status_t nnmem_graph_find_tensor(const nnmem_graph_t *g,
                                                 const char *name,
                                                 uint32_t *id_out);

/* Validates the whole graph: every activation / output read by an op has a
 * producer, no cycles, every activation and output is produced. Fills diag
 * with the first problem, naming the op / tensor. */
NNMEM_API nnmem_status_t nnmem_graph_check(const nnmem_graph_t *g,
                                           nnmem_diag_t *diag);

/* Computes a topological operator order into `order` (nnmem_graph_op_count
 * entries). Stable: among ready ops the lowest index runs first, so a graph
 * built in a valid order keeps it. NNMEM_ERR_CYCLE (diag names an op on the
 * cycle) when none exists. */
NNMEM_API nnmem_status_t nnmem_graph_schedule(const nnmem_graph_t *g,
                                              uint32_t *order,
                                              nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_GRAPH_H */

/* nnmem/liveness.h - liveness analysis: graph + operator order -> problem.
 *
 * Step i is the i-th operator of the schedule. A tensor produced at step p
 * and last read at step q lives on [p, q + 1). Graph inputs live from step
 * 0, graph outputs to the end (step = number of ops). Weights and constants
 * are not part of the problem: they go to a separate read-only region laid
 * out end to end. Workspace of op i is a buffer live on [i, i + 1).
 * Views share their input's buffer and extend its lifetime; an in-place op
 * whose input buffer dies at that op writes its output into it when it fits.
 * Concat inputs are written into their slices of the output, Split outputs
 * (and the output of an op with slice parameters, nnmem_graph_op_slice) are
 * views of their slices of the input (sub-buffers) where the layout allows;
 * the output of a Concat is then live from its first input on.
 *
 * Thread-safety: the analysis reads the graph; the result is immutable. */
#ifndef NNMEM_LIVENESS_H
#define NNMEM_LIVENESS_H

#include "nnmem/graph.h"
#include "nnmem/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nnmem_liveness_config {
  uint32_t size;             /* sizeof; 0 = current */
  int no_reuse;              /* nonzero: no views, no in-place (every tensor its
                                own buffer) */
  const uint32_t *order;     /* op order (a permutation, must be topological);
                                NULL = nnmem_graph_schedule */
  uint64_t alignment;        /* alignment of each tensor in the weight region
                                and of every sub-buffer offset below; 0 = 1 */
  int no_concat_into_output; /* nonzero: no sub-buffers. Default (0): each
                            Concat input is written straight into its slice
                            of the output and each Split / Slice output is
                            a view of its slice of the input, where they are
                            contiguous (all dims before the axis are 1) and
                            safe (see concat.c); they become sub-buffers
                            (nnmem_problem_set_parent) */
  const uint8_t *no_concat_ops; /* optional, one entry per op id: nonzero
                            keeps that Concat / Split / Slice op out of
                            concat-into-output (its tensors stay buffers
                            of their own), as nnmem_graph_order_memory may
                            choose (nnmem_order_config_t.concat_ops_out) */
} nnmem_liveness_config_t;

NNMEM_API void nnmem_liveness_config_init(nnmem_liveness_config_t *cfg);

#define NNMEM_NO_BUFFER UINT32_MAX

typedef enum nnmem_buffer_kind {
  NNMEM_BUFFER_ACTIVATION = 0, /* holds activations / inputs / outputs */
  NNMEM_BUFFER_WORKSPACE       /* holds one op's workspace */
} nnmem_buffer_kind_t;

/* Where one tensor lives. */
typedef struct nnmem_tensor_live {
  uint32_t buffer;        /* problem buffer index; NNMEM_NO_BUFFER for
                             weights / constants */
  uint64_t first, last;   /* the tensor's own lifetime [first, last) */
  uint64_t weight_offset; /* offset in the weight region (weights only) */
} nnmem_tensor_live_t;

typedef struct nnmem_liveness nnmem_liveness_t;

/* Runs the analysis. Validates the graph (nnmem_graph_check) and the order.
 * `cfg` may be NULL. */
NNMEM_API nnmem_status_t nnmem_liveness_analyze(
    const nnmem_graph_t *g, const nnmem_liveness_config_t *cfg,
    nnmem_liveness_t **out, nnmem_diag_t *diag);
NNMEM_API void nnmem_liveness_destroy(nnmem_liveness_t *l);

/* The problem: one buffer per activation buffer and per workspace. Buffer
 * ids are the name of the first tensor in the buffer (or "<op>:workspace"). */
NNMEM_API const nnmem_problem_t *nnmem_liveness_problem(
    const nnmem_liveness_t *l);
/* Number of steps (= number of ops). */
NNMEM_API uint64_t nnmem_liveness_steps(const nnmem_liveness_t *l);
/* The op order used (nnmem_liveness_steps entries). */
NNMEM_API const uint32_t *nnmem_liveness_order(const nnmem_liveness_t *l);
NNMEM_API nnmem_status_t nnmem_liveness_tensor(const nnmem_liveness_t *l,
                                               uint32_t tensor,
                                               nnmem_tensor_live_t *out);
NNMEM_API nnmem_buffer_kind_t
nnmem_liveness_buffer_kind(const nnmem_liveness_t *l, size_t buffer);
/* Total bytes of the weight region (weights + constants, each aligned). */
NNMEM_API uint64_t nnmem_liveness_weight_bytes(const nnmem_liveness_t *l);
/* Number of tensors merged into another's buffer by views / in-place. */
NNMEM_API size_t nnmem_liveness_aliased_tensors(const nnmem_liveness_t *l);
/* Number of buffers placed inside a Concat output or a Split / Slice input
 * (sub-buffers), and their bytes: the bytes concat-into-output and split /
 * slice views no longer allocate on their own. */
NNMEM_API size_t nnmem_liveness_sub_buffers(const nnmem_liveness_t *l);
NNMEM_API uint64_t nnmem_liveness_sub_bytes(const nnmem_liveness_t *l);
/* The config's no_concat_ops as analyzed (one entry per op id; owned by
 * `l`), or NULL when none was given. */
NNMEM_API const uint8_t *nnmem_liveness_concat_kept_out(
    const nnmem_liveness_t *l);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_LIVENESS_H */

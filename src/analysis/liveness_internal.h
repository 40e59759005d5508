/* liveness_internal.h - the liveness builder shared by liveness.c and the
 * concat-into-output pass (concat.c). Not installed. */
#ifndef NNMEM_ANALYSIS_LIVENESS_INTERNAL_H
#define NNMEM_ANALYSIS_LIVENESS_INTERNAL_H

#include "nnmem/liveness.h"

struct nnmem_liveness {
  nnmem_problem_t *problem;
  uint64_t steps;
  uint32_t *order;
  nnmem_tensor_live_t *tensors;
  size_t n_tensors;
  nnmem_buffer_kind_t *kinds;
  uint64_t weight_bytes;
  size_t aliased;
  size_t sub_buffers; /* buffers placed inside a Concat output / Split, Slice
                         input */
  uint64_t sub_bytes; /* their bytes */
  uint8_t *kept_out;  /* copy of cfg.no_concat_ops (per op), or NULL */
};

/* A buffer while it is being built (added to the problem at the end). */
typedef struct lbuf {
  uint32_t tensor; /* first tensor, or UINT32_MAX for a workspace */
  uint32_t op;     /* the op of a workspace buffer */
  uint64_t size, align, first, last;
  int has_io;
  nnmem_buffer_kind_t kind;
  uint64_t last_write; /* step of the latest op writing into it (its first
                          tensor's producer, or an in-place join) */
  uint32_t parent;     /* index + 1 of the buffer it lies inside; 0 = none */
  uint64_t rel;        /* its offset there */
} lbuf_t;

typedef struct builder {
  const nnmem_graph_t *g;
  nnmem_liveness_config_t cfg;
  nnmem_liveness_t *l;
  uint32_t *pos; /* step of each op */
  lbuf_t *bufs;
  size_t n_bufs, cap_bufs;
  uint8_t *in_weights; /* tensor lives in the weight region */
} builder_t;

/* The concat-into-output and split-view pass (concat.c): runs after the
 * buffers are built, before the problem is emitted. */
nnmem_status_t nnmem__liveness_concat(builder_t *b);

/* The dim along which tensors `parts` tile `w` contiguously (concat.c's
 * step 1), or -1. Shared with the order model (order_model.c). */
int nnmem__tiling_axis(const nnmem_graph_t *g, const nnmem_tensor_info_t *w,
                       const uint32_t *parts, uint32_t n);

/* Which sub-buffer rule applies to op `op` (info `oi`): a Concat, a Split,
 * an op with slice parameters (nnmem_graph_op_slice), or 0 for none. The one
 * test liveness, the order model and the order search's per-op choice use. */
enum { NNMEM__SUBBUF_CONCAT = 1, NNMEM__SUBBUF_SPLIT, NNMEM__SUBBUF_SLICE };
int nnmem__subbuf_op(const nnmem_graph_t *g, uint32_t op,
                     const nnmem_op_info_t *oi);

/* 1 and the byte offset of op `op`'s output inside its input 0 when the op
 * carries slice parameters whose restriction is contiguous (concat.c's step
 * 4), else 0. Shared with the order model (order_model.c). */
int nnmem__slice_offset(const nnmem_graph_t *g, uint32_t op, uint64_t *at);

#endif

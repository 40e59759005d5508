/* order_model.h - the cost model of operator ordering (internal): the graph
 * reduced to units (a tensor and its views: one buffer whatever the order),
 * their readers, and the step function that says how many bytes are live
 * while an op runs after a given set of ops ran. See order_model.c. */
#ifndef NNMEM_ORDER_MODEL_H
#define NNMEM_ORDER_MODEL_H

#include <stdint.h>

#include "nnmem/graph.h"

#define NNMEM__OM_NONE UINT32_MAX

typedef struct nnmem__om_unit {
  uint64_t raw;            /* max bytes over the members */
  uint64_t align;          /* max align over the members (>= 1) */
  uint64_t rsize;          /* raw rounded up to max(align, model alignment) */
  int32_t prod;            /* op producing the root; -1 for a graph input */
  uint8_t has_in, has_out; /* a member is a graph input / output */
  uint32_t rd_off, rd_n;   /* distinct reader ops: idx[rd_off ...] */
  uint64_t cmax_raw, cmax_align; /* max over every chain this unit can end */
  uint32_t top;          /* sub-buffers: the root unit of its group (itself
                            for a root with members), NONE when in none */
  uint32_t gm_off, gm_n; /* a group root: its member units idx[gm_off ...] */
} nnmem__om_unit_t;

typedef struct nnmem__om_op {
  uint32_t in_off, in_n;     /* distinct input units */
  uint32_t new_off, new_n;   /* units whose root this op produces */
  uint32_t pred_off, pred_n; /* distinct producer ops of its inputs */
  uint32_t succ_off, succ_n; /* distinct ops reading its outputs */
  uint32_t ip_in;            /* unit it may write in place, or NONE */
  uint32_t ip_out;           /* unit of output 0 (with ip_in) */
  uint64_t ip_bytes;         /* bytes of output 0 (with ip_in) */
  uint64_t ws;               /* workspace bytes, rounded */
  uint64_t lb;               /* bytes live at this op in any order */
} nnmem__om_op_t;

typedef struct nnmem__om {
  size_t n_ops, n_units;
  nnmem__om_unit_t *units;
  nnmem__om_op_t *ops;
  uint32_t *idx; /* shared CSR pool */
  uint64_t align;
  uint64_t m0;          /* bytes of graph-input units (live before step 0) */
  uint64_t m0_unread;   /* of those, units nobody reads (die after step 0) */
  int may_grow;         /* an in-place join may grow a buffer retroactively:
                           the model may then differ from liveness */
  int ip_neutral;       /* every in-place op writes a unit of the size (and
                           rounding) of every chain its input can end: joining
                           never changes a buffer's bytes, so the decisions T
                           do not matter after their step */
  uint32_t *file_order; /* nnmem_graph_schedule's order */
  size_t n_members;     /* units inside a group (sub-buffers) */
  uint8_t *nests;       /* per op: a Concat / Split that made a group */
  int sub_dyn;          /* a sub-buffer relation liveness may or may not
                           make depending on the order: the model assumes
                           none there, so it is not exact */
} nnmem__om_t;

/* How a search sees "already scheduled": ops of parts before `cur` are
 * scheduled (with in-place decisions tfix), ops of later parts are not, ops
 * of part `cur` are scheduled when their local bit is set in S. */
typedef struct nnmem__om_view {
  const nnmem__om_t *m;
  const uint32_t *part;  /* part of each op */
  const uint32_t *local; /* index of each op inside its part */
  const uint8_t *tfix;   /* in-place taken, ops of earlier parts */
  uint32_t cur;
  int first; /* no op of any part ran yet (S empty and cur == 0) */
} nnmem__om_view_t;

typedef struct nnmem__om_step {
  uint64_t live;  /* bytes live while the op runs */
  uint64_t after; /* bytes live after it */
} nnmem__om_step_t;

/* `sub`: model concat-into-output and split views (sub-buffers) as
 * liveness.c / concat.c make them (ignored with no_reuse), except at the
 * ops `skip` marks (NULL: none). */
nnmem_status_t nnmem__om_build(const nnmem_graph_t *g, uint64_t align,
                               int no_reuse, int sub, const uint8_t *skip,
                               nnmem__om_t *m, nnmem_diag_t *diag);
void nnmem__om_free(nnmem__om_t *m);

/* Runs op `o` after the ops in S (with in-place decisions T) when `m_before`
 * bytes are live. Writes the bytes into *out. With `t_out` (a copy of T),
 * records the decision of `o` and clears the decisions of buffers that die
 * there. `first`: S is empty and no earlier part exists. */
void nnmem__om_step(const nnmem__om_view_t *v, const uint64_t *S,
                    const uint64_t *T, uint64_t m_before, uint32_t o,
                    nnmem__om_step_t *out, uint64_t *t_out);

static inline int nnmem__om_bit(const uint64_t *b, uint32_t i) {
  return (int)((b[i >> 6] >> (i & 63)) & 1u);
}
static inline void nnmem__om_set(uint64_t *b, uint32_t i) {
  b[i >> 6] |= (uint64_t)1 << (i & 63);
}
static inline void nnmem__om_clear(uint64_t *b, uint32_t i) {
  b[i >> 6] &= ~((uint64_t)1 << (i & 63));
}

#endif /* NNMEM_ORDER_MODEL_H */

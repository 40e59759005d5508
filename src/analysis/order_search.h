/* order_search.h - internal interface between the parts of the operator
 * order search: order_search.c (decomposition, driver), order_beam.c (the
 * heuristic) and order_exact.c (the exact best-first search). */
#ifndef NNMEM_ORDER_SEARCH_H
#define NNMEM_ORDER_SEARCH_H

#include "analysis/order_model.h"
#include "nnmem/order.h"

#define EXACT_MEM_BYTES ((size_t)256 << 20) /* exact search memory cap */

typedef struct nnmem__order_search {
  const nnmem__om_t *m;
  nnmem_order_config_t cfg;
  const uint8_t *skip; /* ops kept out of concat-into-output, or NULL */
  nnmem__om_view_t v;
  uint32_t *part, *local; /* per op */
  uint8_t *tfix;          /* in-place decisions of finished parts */
  uint32_t *ops;          /* ops of the current part, in file order */
  uint32_t k, W;          /* its size, words per set */
  uint64_t *predmask;     /* k * W: local predecessors */
  uint64_t *zob;          /* 2k Zobrist keys (S bits, T bits) */
  uint64_t m_start;       /* bytes live when the part starts */
  int first_part;
  uint64_t states;
  uint64_t states_left; /* exact search budget left, all parts */
} search_t;

/* 1 when local op i of the current part is not in S and its predecessors
 * are. */
int nnmem__order_ready(const search_t *s, const uint64_t *S, uint32_t i);
/* Zobrist hash of the in-place decisions T. */
uint64_t nnmem__order_hash_t(const search_t *s, const uint64_t *T);
/* nnmem__om_step for local op i of the current part. */
void nnmem__order_step(search_t *s, const uint64_t *S, const uint64_t *T,
                       uint64_t before, uint32_t i, nnmem__om_step_t *out,
                       uint64_t *t_out);

/* A ready op (local index) that can run next in some optimal order: with
 * ip_neutral, one that neither raises the peak so far nor the bytes live
 * (moving it before any op of an order that runs it later lowers or keeps
 * every step: its outputs are charged earlier, but its freed inputs are
 * freed earlier by at least as much). UINT32_MAX when none. `cnt`: the
 * beam's unscheduled-predecessor counts, or NULL to test readiness. */
uint32_t nnmem__order_free_op(search_t *s, const uint64_t *S, const uint64_t *T,
                              uint64_t before, uint64_t peak,
                              const uint32_t *cnt);

/* Step 2: beam search of width `beam` over the current part; writes its
 * local order into lorder and its peak into *peak. */
nnmem_status_t nnmem__order_beam(search_t *s, uint32_t beam, uint32_t *lorder,
                                 uint64_t *peak);
/* Step 3: exact search of the current part below `ub`; on success replaces
 * lorder (when it found a lower peak) and sets *exact (1 when proven). */
nnmem_status_t nnmem__order_exact(search_t *s, uint64_t ub, uint32_t *lorder,
                                  int *exact);

#endif /* NNMEM_ORDER_SEARCH_H */

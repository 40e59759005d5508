/* nnmem/order.h - memory-aware operator order.
 *
 * Chooses a topological operator order of a graph that minimizes the peak
 * live bytes: the value nnmem_problem_lower_bound gives for the problem that
 * nnmem_liveness_analyze builds with that order (graph inputs live from step
 * 0, outputs to the end, weights excluded, views and in-place ops sharing
 * buffers, workspace live at its op). Control-flow ops (If / Loop / Scan)
 * are single ops whose bodies are their workspace, so they move as units.
 *
 * Exact (a proven minimum) on graphs whose parts between cut ops (ops every
 * other op reaches or is reached from) fit the search budget; a beam search
 * otherwise. With concat-into-output (the default) the search counts the
 * sub-buffers it makes: a Concat output live from its first input's
 * production, its inputs and Split / Slice views costing nothing of their
 * own. The result is never worse than the file order
 * (nnmem_graph_schedule).
 *
 * Thread-safety: reads the graph only; calls on different outputs may run
 * concurrently. */
#ifndef NNMEM_ORDER_H
#define NNMEM_ORDER_H

#include "nnmem/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nnmem_order_method {
  NNMEM_ORDER_AUTO = 0,  /* exact where the budget allows, else heuristic */
  NNMEM_ORDER_EXACT,     /* like AUTO (exact search on every part) */
  NNMEM_ORDER_HEURISTIC, /* beam search only */
  NNMEM_ORDER_METHOD_COUNT_
} nnmem_order_method_t;

typedef struct nnmem_order_config {
  uint32_t size; /* sizeof; 0 = current */
  nnmem_order_method_t method;
  uint64_t alignment;  /* each buffer's size is rounded up to max(its align,
                          alignment), as in nnmem_problem_lower_bound; 0 = 1 */
  int no_reuse;        /* as nnmem_liveness_config_t.no_reuse */
  uint64_t max_states; /* exact search: states kept, all parts together,
                          before the remaining parts keep the heuristic's
                          order; 0 = 600,000 (about 1.5 s, 60 MiB) */
  uint32_t beam_width; /* heuristic: states kept per step; 0 = by size */
  int no_concat_into_output; /* as nnmem_liveness_config_t: orders (and the
                          file order) are measured without sub-buffers.
                          Default (0): with them. The search's model has no
                          sub-buffers, so an order is proven optimal
                          (report->exact) only when its model is exact for
                          the sub-buffers: those every order makes */
  uint8_t *concat_ops_out;   /* optional, one entry per op id: lets the search
                            keep some Concat / Split / Slice ops out of
                            concat-into-output when the peak is lower so
                            (light_shufflenet). It writes 1 for each such op;
                            build the liveness with these as
                            nnmem_liveness_config_t.no_concat_ops to get
                            report->peak. NULL: every op as liveness does */
} nnmem_order_config_t;

/* What the search found. */
typedef struct nnmem_order_report {
  uint32_t size;         /* sizeof; set by the caller (0 = current) */
  uint64_t file_peak;    /* peak live bytes in nnmem_graph_schedule's order */
  uint64_t peak;         /* peak live bytes in the chosen order */
  int exact;             /* 1: no topological order has a lower peak */
  size_t parts;          /* parts between cut ops */
  size_t parts_exact;    /* parts solved by the exact search */
  size_t largest_part;   /* ops in the largest part */
  uint64_t states;       /* search states created, all parts */
  size_t concat_ops_off; /* ops written to concat_ops_out (kept out) */
} nnmem_order_report_t;

NNMEM_API void nnmem_order_config_init(nnmem_order_config_t *cfg);

/* AUTO runs the exact search on parts of at most 256 ops, EXACT on parts of
 * at most 4,096 ops (both within max_states). */

/* Writes a topological order with the lowest peak found into `order_out`
 * (nnmem_graph_op_count entries; the caller owns it). `cfg` and `report`
 * may be NULL. NNMEM_ERR_CYCLE (diag names an op on the cycle) or the
 * errors of nnmem_graph_check for a graph without a valid order. */
NNMEM_API nnmem_status_t nnmem_graph_order_memory(
    const nnmem_graph_t *g, const nnmem_order_config_t *cfg,
    uint32_t *order_out, nnmem_order_report_t *report, nnmem_diag_t *diag);

/* The peak live bytes of `order` (NULL = nnmem_graph_schedule): builds the
 * liveness problem (no_reuse as given) and returns its lower bound with
 * `alignment`. Errors of nnmem_liveness_analyze. */
NNMEM_API nnmem_status_t nnmem_graph_order_peak(
    const nnmem_graph_t *g, const uint32_t *order, uint64_t alignment,
    int no_reuse, uint64_t *peak_out, nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_ORDER_H */

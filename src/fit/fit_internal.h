/* fit_internal.h - the fit object shared by the fitter (fit.c) and its
 * JSON writer (fit_json.c). Not installed. */
#ifndef NNMEM_FIT_INTERNAL_H
#define NNMEM_FIT_INTERNAL_H

#include "nnmem/fit.h"
#include "nnmem/liveness.h"

/* Buffer kinds written into the plan JSON (per tier buffer). */
enum {
  FIT_KIND_ACTIVATION = 0,
  FIT_KIND_WORKSPACE,
  FIT_KIND_WEIGHT,
  FIT_KIND_COUNT_
};

/* How a split op's parts share its output (fit_split.c). */
enum {
  FIT_SPLIT_WHOLE = 0, /* not split */
  FIT_SPLIT_PARTS,     /* part i writes rows [r_i, r_{i+1}) of the output
                          (output channels / features; contiguous) */
  FIT_SPLIT_ACCUM      /* the parts add into the whole output: part 0
                          writes it, every later part reads and rewrites
                          it (partial sums, or a strided output slice) */
};

/* What step s runs: op step `op_step` (an index of `order`), part `part`
 * of `parts` (1: the whole op). */
typedef struct fit_step {
  uint32_t op_step, part, parts;
  uint8_t mode;  /* FIT_SPLIT_ */
  uint8_t inner; /* ACCUM over the inner (K / input channel) dim: each
                    part reads 1/parts of input 0 (cost model) */
} fit_step_t;

/* One access of a step: tier buffer read or written by the op. */
typedef struct fit_access {
  uint32_t tier;
  uint32_t write; /* 1: written (pattern fill), 0: read (checked) */
  size_t buffer;
} fit_access_t;

struct nnmem_fit {
  nnmem_device_t dev;
  uint64_t limit;
  uint64_t steps;
  uint32_t *order; /* `ops` graph op indices */
  uint64_t ops;
  fit_step_t *step; /* `steps` entries */
  uint64_t unconstrained_peak;
  uint64_t min_footprint;
  uint32_t min_op;
  nnmem_problem_t *problems[NNMEM_DEVICE_MAX_TIERS];
  nnmem_plan_t *plans[NNMEM_DEVICE_MAX_TIERS];
  uint8_t *kinds[NNMEM_DEVICE_MAX_TIERS]; /* FIT_KIND_ per tier buffer */
  /* accesses of step s: acc[acc_start[s] .. acc_start[s + 1]) */
  fit_access_t *acc;
  size_t *acc_start;
  /* before step 0: buffers written (inputs, weights); after the last step:
   * buffers read (graph outputs) */
  fit_access_t *init, *final;
  size_t n_init, n_final;
  nnmem_fit_copy_t *copies;
  size_t n_copies;
  nnmem_fit_move_t *moves;
  size_t n_moves;
  char **move_names; /* owned strings behind moves[i].name */
  nnmem_fit_costs_t costs;
  double *op_s; /* per step: the cost model's op time (seconds) */
  double seconds;
  uint64_t graph_digest;
  char *model_name;
};

/* The access trace a baseline replays (nnmem__fit_trace): values are the
 * roots of the fitter (liveness roots, weights, im2col workspace) with
 * their aligned sizes; step s accesses acc_val[acc_start[s] ..
 * acc_start[s + 1]) (each root once). */
typedef struct fit_trace {
  uint64_t steps;
  size_t n_values;
  uint64_t *size;     /* aligned bytes per value */
  uint8_t *is_weight; /* 1: a weight (its host copy persists) */
  size_t *acc_start;  /* steps + 1 entries */
  uint32_t *acc_val;
  double *op_s; /* compute time per step */
} fit_trace_t;

nnmem_status_t nnmem__fit_trace(const nnmem_graph_t *g, const nnmem_device_t *d,
                                const nnmem_fit_config_t *cfg, uint64_t limit,
                                fit_trace_t *out, nnmem_diag_t *diag);
void nnmem__fit_trace_free(fit_trace_t *t);

/* FNV-1a 64 over bytes, continuing from `h` (start: NNMEM__FNV_SEED). */
#define NNMEM__FNV_SEED 1469598103934665603ull
uint64_t nnmem__fnv1a(uint64_t h, const void *data, size_t len);

#endif

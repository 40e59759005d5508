/* exec_internal.h - a fitted plan as the executor reads it (exec_read.c
 * fills it, exec.c runs it). Not installed. */
#ifndef NNMEM_EXEC_INTERNAL_H
#define NNMEM_EXEC_INTERNAL_H

#include "nnmem/fit.h"

typedef struct exec_ref {
  uint32_t tier;
  size_t buffer;
} exec_ref_t;

typedef struct exec_tier {
  char name[32];
  uint64_t alignment, capacity, height;
  nnmem_problem_t *problem; /* the buffers with gaps and parents */
  uint64_t *offsets;
} exec_tier_t;

typedef struct exec_step {
  char *op;
  exec_ref_t *reads, *writes;
  size_t n_reads, n_writes;
  double seconds; /* the cost model's op time ("seconds"; 0 if absent) */
  uint32_t part, parts; /* a split op's part (parts >= 2), else 0 and 1 */
  int accumulate;       /* split "accumulate" (else "rows") */
} exec_step_t;

typedef struct exec_copy {
  int in; /* 1: host -> device, 0: device -> host */
  uint32_t tier;
  size_t buffer, host_buffer;
  uint64_t bytes, start, done;
} exec_copy_t;

typedef struct exec_tensor {
  char *name;
  uint64_t size;
} exec_tensor_t;

struct nnmem_exec_plan {
  char *name; /* the file, for messages */
  char *model;
  uint64_t model_digest;
  uint64_t limit, steps;
  uint32_t n_tiers, main_tier;
  exec_tier_t tiers[NNMEM_DEVICE_MAX_TIERS];
  exec_step_t *step;
  exec_ref_t *init, *final;
  size_t n_init, n_final;
  exec_copy_t *copies;
  size_t n_copies;
  exec_tensor_t *tensors;
  size_t n_tensors;
  /* the cost model's figures (fit.costs, fit.device), for the GPU
   * executor's report; outside the digest: estimates, not content */
  double est_compute_s, est_exposed_s;
  double link_bandwidth; /* main tier <-> host, bytes/s (0 if absent) */
};

/* The GPU executor (exec_cuda.c): nnmem_exec_run with cfg->cuda set. */
nnmem_status_t nnmem__exec_run_cuda(const nnmem_exec_plan_t *p,
                                    const nnmem_exec_config_t *cfg,
                                    nnmem_exec_report_t *rep,
                                    nnmem_diag_t *diag);

#endif

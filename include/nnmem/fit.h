/* nnmem/fit.h - fitting a model under a device memory limit: device
 * descriptions, the cost model, the fitter (order, tier placement, weight
 * streaming, activation offload) and the executor that replays a fitted
 * plan on backends with real bytes.
 *
 * A *device* is a list of memory tiers, nearest to the compute first, plus a
 * compute rate. The last tier is host memory (capacity 0 = unlimited). The
 * tier just before it is the *main* device memory: the memory limit caps it.
 * Tiers before the main one are small on-chip memories (SRAM).
 *
 *   compute <-> [sram 4 MiB] <-> [ddr 4 GiB  (main)] <-> [host]
 *               bandwidth        bandwidth, link_bw      (last)
 *
 * A *fit* is a plan per tier (each verified by nnmem_plan_verify) plus a
 * transfer schedule: for each step, the copies that start at the step and
 * the copies that must be finished before it runs. Weights that do not
 * stay on the device are *streamed* (copied in a few ops ahead of each use);
 * activations that sit idle for a long stretch are *offloaded* (copied to
 * host memory and back; their device lifetime gets a gap). Docs:
 * docs/fit.md, schema docs/device.schema.json.
 *
 * Thread-safety: a device and a fit are immutable once made; concurrent
 * reads are safe. */
#ifndef NNMEM_FIT_H
#define NNMEM_FIT_H

#include "nnmem/backend.h"
#include "nnmem/graph.h"
#include "nnmem/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NNMEM_DEVICE_MAX_TIERS 4

/* Convolution kernel choice the device uses (for operator workspace). */
typedef enum nnmem_conv_algo {
  NNMEM_CONV_DIRECT = 0, /* no workspace */
  NNMEM_CONV_IM2COL      /* a column buffer of C/g*kH*kW x outH*outW
                            elements per image, live during the op */
} nnmem_conv_algo_t;

/* One memory tier (a record). */
typedef struct nnmem_tier {
  char name[32];         /* "sram", "ddr", "hbm", "host", ... */
  uint64_t capacity;     /* bytes; 0 = unlimited (host only) */
  uint64_t alignment;    /* offsets in this tier are multiples (power of 2) */
  double bandwidth;      /* bytes/s the compute units read/write it */
  double link_bandwidth; /* bytes/s copies to and from the next tier out
                            (0 for the last tier) */
} nnmem_tier_t;

/* A device description (a record; build it with a preset or the JSON
 * reader, or fill it and check it with nnmem_device_check). */
typedef struct nnmem_device {
  char name[64];
  uint32_t n_tiers; /* 2..NNMEM_DEVICE_MAX_TIERS; the last is host */
  nnmem_tier_t tiers[NNMEM_DEVICE_MAX_TIERS];
  double compute_rate;    /* FLOP/s */
  double op_overhead_s;   /* fixed time per op (launch), seconds */
  nnmem_conv_algo_t conv; /* workspace of Conv ops */
} nnmem_device_t;

/* Names of the built-in presets ("edge-npu", "datacenter", "cpu"). */
NNMEM_API const char *const *nnmem_device_preset_names(size_t *count);

/* Fills `out` with a preset. NNMEM_ERR_NOT_FOUND for an unknown name. */
NNMEM_API nnmem_status_t nnmem_device_preset(const char *name,
                                             nnmem_device_t *out);

/* Parses a device JSON document (docs/device.schema.json). `name` is what
 * messages call the input (its path). Errors name the file and the field
 * ("dev.json: tiers[1].capacity: must be > 0"). */
NNMEM_API nnmem_status_t nnmem_device_parse_json(const char *data, size_t len,
                                                 const char *name,
                                                 nnmem_device_t *out,
                                                 nnmem_diag_t *diag);

/* Checks a device: 2..4 tiers, unique non-empty names, every capacity but
 * the last's > 0, capacities below 2^53, alignments powers of two below
 * 2^53 (a fitted plan's JSON numbers are exact only there), bandwidths and
 * the compute rate finite and > 0 (link bandwidth of every tier but the
 * last). */
NNMEM_API nnmem_status_t nnmem_device_check(const nnmem_device_t *d,
                                            nnmem_diag_t *diag);

/* Index of the main device tier (n_tiers - 2). */
NNMEM_API uint32_t nnmem_device_main_tier(const nnmem_device_t *d);

/* ---- cost model ---------------------------------------------------------- */

typedef struct nnmem_op_cost {
  double flops;       /* floating-point operations */
  uint64_t bytes;     /* bytes read and written (inputs + outputs) */
  double seconds;     /* max(flops / rate, bytes / bandwidth) + overhead */
  uint64_t workspace; /* extra workspace the device's kernel needs */
} nnmem_op_cost_t;

/* Cost of op `op` of `g` on `d` with all operands in the main tier.
 * FLOP formulas: Conv/ConvTranspose 2*out*(weight elems / out channels);
 * MatMul/Gemm 2*out*K; pooling, normalization, softmax, elementwise by
 * elements (docs/fit.md lists them). */
NNMEM_API nnmem_status_t nnmem_op_cost(const nnmem_graph_t *g, uint32_t op,
                                       const nnmem_device_t *d,
                                       nnmem_op_cost_t *out);

/* ---- fitting ------------------------------------------------------------- */

typedef struct nnmem_fit_config {
  uint32_t size;         /* sizeof(nnmem_fit_config_t); 0 = current */
  int order_memory;      /* nonzero: memory-aware op order, else file order */
  const uint32_t *order; /* an explicit order (overrides order_memory) */
  uint32_t max_ahead;    /* most steps a prefetch starts ahead; 0 = 8 */
  int no_offload;        /* nonzero: stream weights only */
  int no_stream;         /* nonzero: offload activations only */
  int no_sram;           /* nonzero: leave on-chip tiers empty */
  uint64_t slice_bytes;  /* a weight of at least twice this many bytes is
                            held in slices of at least this many bytes
                            along its first dimension, each streamed (or
                            kept) on its own; 0 = the larger of
                            NNMEM_FIT_SLICE_BYTES and limit /
                            NNMEM_FIT_SLICE_SHARE, UINT64_MAX = never
                            (docs/fit.md, "Weight slices") */
  int no_split;          /* nonzero: an op reads every slice of its weight
                            at once (one step); zero: a Conv, Gemm, MatMul
                            or ConvTranspose whose weight (input 1) is
                            sliced runs as one step per slice, each reading
                            its slice (docs/fit.md, "Operator splitting") */
} nnmem_fit_config_t;

#define NNMEM_FIT_SLICE_BYTES (1u << 20)
#define NNMEM_FIT_SLICE_SHARE 64

NNMEM_API void nnmem_fit_config_init(nnmem_fit_config_t *cfg);

typedef struct nnmem_fit nnmem_fit_t;

/* Why a tensor left the device for part of the run. */
typedef enum nnmem_move_kind {
  NNMEM_MOVE_STREAM = 0, /* weight copied in ahead of each use */
  NNMEM_MOVE_OFFLOAD     /* activation copied out and back in */
} nnmem_move_kind_t;

/* One moved tensor (a record). */
typedef struct nnmem_fit_move {
  nnmem_move_kind_t kind;
  const char *name;    /* tensor (weights) or buffer id (activations) */
  uint64_t bytes;      /* size */
  uint64_t copies;     /* copies per inference */
  uint64_t at_step;    /* the peak step it relieved */
  uint64_t idle_steps; /* activations: steps it spent in host memory */
} nnmem_fit_move_t;

/* One copy of the transfer schedule (a record). */
typedef enum nnmem_copy_dir {
  NNMEM_COPY_IN = 0,
  NNMEM_COPY_OUT
} nnmem_copy_dir_t;
typedef struct nnmem_fit_copy {
  nnmem_copy_dir_t dir; /* IN: host -> device tier; OUT: device -> host */
  uint32_t dev_tier;    /* the device-side tier */
  size_t dev_buffer;    /* buffer index in that tier's problem */
  size_t host_buffer;   /* buffer index in the host tier's problem */
  uint64_t bytes;
  uint64_t start; /* step at whose beginning the copy is issued */
  uint64_t done;  /* step before which it must have finished */
} nnmem_fit_copy_t;

/* Estimated costs (seconds per inference). */
typedef struct nnmem_fit_costs {
  double compute_s;        /* sum of the op times */
  double transfer_s;       /* sum of the copy times */
  double exposed_s;        /* time the ops waited for copies */
  double total_s;          /* compute_s + exposed_s */
  uint64_t transfer_bytes; /* per inference */
  uint64_t stream_bytes;   /* of which weights streamed in */
  uint64_t offload_bytes;  /* of which activations out and back in */
} nnmem_fit_costs_t;

/* The largest limit a fit keeps: 2^53 - 1 bytes, the largest byte count
 * a fitted plan's JSON holds exactly (the plan reader refuses more). */
#define NNMEM_FIT_LIMIT_MAX ((UINT64_C(1) << 53) - 1)

/* The longest op time a fit gives and a fitted plan holds: 1e6 s. A fit
 * whose cost model gives an op more (a device with absurd rates) is
 * refused with NNMEM_ERR_INVALID naming the op; the plan reader refuses
 * such a step. */
#define NNMEM_FIT_OP_SECONDS_MAX 1e6

/* Fits `g` on `d` with the main tier capped at `limit` bytes (0 = the
 * tier's capacity). On success *out owns the fit (nnmem_fit_destroy);
 * every tier's plan passed nnmem_plan_verify. NNMEM_ERR_CAPACITY when the
 * limit is below the smallest device footprint (diag: "the smallest device
 * footprint for this model is N bytes (op X needs its inputs, outputs and
 * workspace at once)") or no placement under it was found;
 * NNMEM_ERR_INVALID for a device nnmem_device_check refuses, or an op
 * time over NNMEM_FIT_OP_SECONDS_MAX. A limit above
 * NNMEM_FIT_LIMIT_MAX is taken as NNMEM_FIT_LIMIT_MAX (no plan is that
 * high; UINT64_MAX reads as no limit). `cfg` may be NULL. */
NNMEM_API nnmem_status_t nnmem_fit(const nnmem_graph_t *g,
                                   const nnmem_device_t *d, uint64_t limit,
                                   const nnmem_fit_config_t *cfg,
                                   nnmem_fit_t **out, nnmem_diag_t *diag);
NNMEM_API void nnmem_fit_destroy(nnmem_fit_t *f);

/* The smallest limit under which nnmem_fit succeeds (within 1 % or 4 KiB,
 * by bisection between the smallest footprint and the unconstrained
 * peak): what "achievable" means in reports. O(log) fits. */
NNMEM_API nnmem_status_t nnmem_fit_smallest_limit(const nnmem_graph_t *g,
                                                  const nnmem_device_t *d,
                                                  const nnmem_fit_config_t *cfg,
                                                  uint64_t *limit_out,
                                                  nnmem_diag_t *diag);

/* The smallest main-tier footprint of any fit of this order: max over ops
 * of the aligned bytes of its inputs, outputs, weights and workspace; the
 * op that needs it in *op_out (nullable). */
NNMEM_API uint64_t nnmem_fit_min_footprint(const nnmem_fit_t *f,
                                           uint32_t *op_out);

NNMEM_API const nnmem_device_t *nnmem_fit_device(const nnmem_fit_t *f);
NNMEM_API uint64_t nnmem_fit_limit(const nnmem_fit_t *f);
NNMEM_API uint64_t nnmem_fit_steps(const nnmem_fit_t *f);
/* The op order (nnmem_fit_ops entries). */
NNMEM_API const uint32_t *nnmem_fit_order(const nnmem_fit_t *f);
/* Ops in the order (nnmem_fit_order's length); nnmem_fit_steps is larger
 * when ops were split. */
NNMEM_API uint64_t nnmem_fit_ops(const nnmem_fit_t *f);

/* What one step of a fit runs (a record): graph op `op`, part `part` of
 * `parts` (1: the whole op). A split op's parts are consecutive steps. */
typedef struct nnmem_fit_step {
  uint32_t op;
  uint32_t part, parts;
  int accumulate; /* parts > 1: 1 when the parts add into the whole
                     output (each part past the first reads and rewrites
                     it), 0 when part i writes its own output rows */
} nnmem_fit_step_t;

/* Step `s` (< nnmem_fit_steps). NNMEM_ERR_INVALID out of range. */
NNMEM_API nnmem_status_t nnmem_fit_step(const nnmem_fit_t *f, uint64_t s,
                                        nnmem_fit_step_t *out);
/* Peak of the main tier when nothing moves (weights + arena). */
NNMEM_API uint64_t nnmem_fit_unconstrained_peak(const nnmem_fit_t *f);
/* Tier `t`'s problem and plan (the plan may be empty: no buffers). */
NNMEM_API const nnmem_problem_t *nnmem_fit_tier_problem(const nnmem_fit_t *f,
                                                        uint32_t t);
NNMEM_API const nnmem_plan_t *nnmem_fit_tier_plan(const nnmem_fit_t *f,
                                                  uint32_t t);
NNMEM_API size_t nnmem_fit_copies(const nnmem_fit_t *f,
                                  const nnmem_fit_copy_t **out);
NNMEM_API size_t nnmem_fit_moves(const nnmem_fit_t *f,
                                 const nnmem_fit_move_t **out);
NNMEM_API void nnmem_fit_costs(const nnmem_fit_t *f, nnmem_fit_costs_t *out);
NNMEM_API double nnmem_fit_seconds(const nnmem_fit_t *f);

/* Lower bounds on the exposed time of any schedule with this fit's op
 * order, op times and limit, weights read from the main tier (docs/fit.md,
 * Baselines). */
typedef struct nnmem_fit_floor {
  double link_s;   /* bytes copied in / link - compute (memory ignored) */
  double memory_s; /* max over steps k < j of (bytes of the weights ops
                      k..j read + A(k) - limit) / link - (op times of
                      k+1..j-1), A(k) the activation and workspace bytes
                      op k accesses less the on-chip capacity: what was
                      not on the device when op k ended (k == j: op k's
                      weights - limit) */
  uint64_t from_step, to_step; /* the k and j of memory_s */
} nnmem_fit_floor_t;

/* Fills *out (both bounds >= 0; the fit's exposed time is never below
 * either). O(steps * accesses). NNMEM_ERR_INVALID for NULL arguments,
 * NNMEM_ERR_NOMEM. Thread-safe on an immutable fit. */
NNMEM_API nnmem_status_t nnmem_fit_floor(const nnmem_fit_t *f,
                                         nnmem_fit_floor_t *out);

/* Baselines (bench/fit): what a runtime without a plan would move. */
typedef enum nnmem_baseline {
  NNMEM_BASELINE_LRU = 0, /* on demand: a value is copied in when an op
                             needs it, the least recently used is evicted
                             (activations still needed are written back);
                             no prefetch, so every copy is exposed */
  NNMEM_BASELINE_BELADY   /* the same with Belady's MIN eviction (farthest
                             next use first): a lower bound on reload
                             bytes for unit-size values, a reference here */
} nnmem_baseline_t;

typedef struct nnmem_baseline_result {
  int feasible;            /* 0: some op's operands alone exceed the limit */
  uint64_t transfer_bytes; /* per inference (the second of two runs) */
  double transfer_s;       /* their time over the main tier's link */
  double exposed_s;        /* LRU: = transfer_s (nothing overlaps) */
  double compute_s;
} nnmem_baseline_result_t;

/* Replays the op order of a fit (`cfg` as for nnmem_fit: the same values,
 * weight slices included; slice_bytes = UINT64_MAX for whole tensors)
 * under `limit` bytes of the main tier with the policy; byte-granular (no
 * fragmentation), so it favours the baseline. */
NNMEM_API nnmem_status_t nnmem_fit_baseline(
    const nnmem_graph_t *g, const nnmem_device_t *d, uint64_t limit,
    const nnmem_fit_config_t *cfg, nnmem_baseline_t policy,
    nnmem_baseline_result_t *out, nnmem_diag_t *diag);

/* Writes the fit as plan JSON (the main tier as the classic "buffers" so
 * `nnmem verify` reads it, plus "fit": tiers, steps, copies, digests;
 * docs/fit.md). New malloc'd text in *out. */
NNMEM_API nnmem_status_t nnmem_fit_format_json(const nnmem_fit_t *f,
                                               const nnmem_graph_t *g,
                                               char **out, size_t *len_out,
                                               nnmem_diag_t *diag);

/* 64-bit digest of a graph's structure (op names, types, operands; tensor
 * names, kinds, sizes): what a plan records to refuse another model. */
NNMEM_API uint64_t nnmem_graph_digest(const nnmem_graph_t *g);

/* ---- executor ------------------------------------------------------------ */

typedef struct nnmem_exec_plan nnmem_exec_plan_t;

/* Reads a fitted plan JSON (nnmem_fit_format_json) for the executor. Checks
 * the digest of the content (a changed byte that parses is still refused),
 * each tier's plan with nnmem_plan_verify, and that every access and copy
 * falls in its buffer's active time. A plan JSON without "fit" (written
 * by plain `nnmem plan --out`) is refused with that reason. */
NNMEM_API nnmem_status_t nnmem_exec_plan_parse(const char *data, size_t len,
                                               const char *name,
                                               nnmem_exec_plan_t **out,
                                               nnmem_diag_t *diag);
NNMEM_API void nnmem_exec_plan_destroy(nnmem_exec_plan_t *p);

/* Steps (ops) of the plan's schedule. */
NNMEM_API uint64_t nnmem_exec_plan_steps(const nnmem_exec_plan_t *p);

/* Bytes a run allocates: the sum of the tiers' plan heights. */
NNMEM_API uint64_t nnmem_exec_plan_bytes(const nnmem_exec_plan_t *p);

/* Compares the plan with a model: digest, then op names and tensor sizes;
 * diag names the first difference. NNMEM_ERR_CONFLICT when they differ. */
NNMEM_API nnmem_status_t nnmem_exec_plan_match(const nnmem_exec_plan_t *p,
                                               const nnmem_graph_t *g,
                                               nnmem_diag_t *diag);

typedef struct nnmem_exec_config {
  uint32_t size;    /* sizeof; 0 = current */
  uint64_t fail_at; /* sim device: fail the N-th alloc (1-based); 0 never */
  uint64_t fail_copy_at; /* fail the N-th copy (1-based); 0 never */
  /* The GPU executor (docs/fit.md "On the GPU"): */
  nnmem_backend_t *cuda; /* from nnmem_backend_cuda_create: run the plan on
                            that GPU (kernels, streams, events); NULL: the
                            simulated device. Not owned. */
  double spin_scale;     /* GPU: each op's kernel runs the cost model's op
                            time x this (clock64 spin); 0 = 1 */
  uint64_t corrupt_step; /* GPU test hook: after the op of step N - 1
                            (1-based N) overwrite the first byte of its
                            first output; 0 never */
  uint32_t check_every;  /* GPU: at most this many steps in flight, and the
                            device's error record read each time this many
                            more have finished, so a CUDA error or a failed
                            check stops the run within about 2 x this many
                            steps; 0 = NNMEM_EXEC_CHECK_EVERY */
} nnmem_exec_config_t;

#define NNMEM_EXEC_CHECK_EVERY 8

typedef struct nnmem_exec_report {
  uint32_t size;          /* sizeof; set by the caller (0 = current) */
  uint64_t steps;         /* steps executed */
  uint64_t writes;        /* buffer writes (pattern fills) */
  uint64_t checks;        /* buffer reads checked */
  uint64_t bytes_checked; /* bytes compared */
  uint64_t copies;        /* transfers performed */
  uint64_t copy_bytes;    /* their bytes */
  uint64_t tier_bytes[NNMEM_DEVICE_MAX_TIERS]; /* region size per tier */
  /* GPU executor only (seconds, from CUDA events; 0 on the sim device): */
  double total_s;       /* first step's waits .. last op done */
  double kernel_s;      /* sum of the op kernels' times */
  double wait_s;        /* sum of the compute stream's waits before ops that
                           wait for a copy: the measured exposed transfer time */
  double gap_s;         /* idle before ops that wait for no copy (launch gaps);
                           total_s = kernel_s + wait_s + gap_s */
  double copy_s;        /* sum of the copies' own times */
  double est_exposed_s; /* the cost model's exposed time: the fitter's
                           timeline (earliest deadline first per link) of
                           the plan with op times x spin_scale */
  double est_exposed_measured_s; /* the same timeline fed with the measured
                                    kernel and copy times */
  double est_compute_s;          /* sum of the op times x spin_scale */
  double cycles_per_s;           /* clock64 rate (calibrated once per run) */
  double link_bytes_per_s;       /* measured pinned host -> device rate (0: no
                                    host tier) */
  uint64_t launches;             /* kernels launched */
  uint64_t waiting_steps;        /* steps whose op waited for a copy */
  double *step_wait_s;           /* caller-owned, step_wait_cap entries or NULL:
                                    per step, the compute stream's wait (s) */
  uint64_t step_wait_cap;
} nnmem_exec_report_t;

/* 1 when this library carries the GPU executor's kernels (built with the
 * CUDA toolkit's nvcc), else 0: then a run with cfg->cuda answers
 * NNMEM_ERR_UNSUPPORTED before anything runs. */
NNMEM_API int nnmem_exec_cuda_kernels(void);

/* Runs the plan: with cfg->cuda on that GPU (src/fit/exec_cuda.c:
 * NNMEM_ERR_NOMEM with the device's free/total when the tiers do not fit,
 * NNMEM_ERR_IO naming the op and the CUDA error when a driver call fails),
 * else: allocates a sim device region per device tier (capacity =
 * the tier's limit) and a host region, writes inputs and weights, walks
 * the steps (copies due, checks every input's pattern, writes every
 * output's pattern from (buffer, step), starts copies), checks outputs at
 * the end, frees everything. NNMEM_ERR_CONFLICT on a pattern mismatch
 * (diag names buffer, step, byte), NNMEM_ERR_NOMEM on a failed allocation,
 * NNMEM_ERR_IO on a failed copy (everything freed in both cases). */
NNMEM_API nnmem_status_t nnmem_exec_run(const nnmem_exec_plan_t *p,
                                        const nnmem_exec_config_t *cfg,
                                        nnmem_exec_report_t *report,
                                        nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_FIT_H */

/* cli.h - shared declarations of the nnmem command-line tool: exit codes,
 * the options of `nnmem plan`, the result of one planning run (what the
 * reports print) and the command entry points. */
#ifndef NNMEM_CLI_H
#define NNMEM_CLI_H

#include <stdio.h>

#include "nnmem/nnmem.h"

/* Exit codes (documented in `nnmem --help`). */
enum {
  CLI_EXIT_OK = 0,
  CLI_EXIT_INVALID = 1, /* bad usage, bad input, or (verify) invalid plan */
  CLI_EXIT_NOFIT = 2,   /* the plan does not fit --capacity */
  CLI_EXIT_INTERNAL = 3 /* a bug: the planner's plan failed verification,
                           out of memory, a library failure */
};

#define CLI_DEFAULT_MODEL "resnet50"
#define CLI_TOP_LIVE 5

/* Options of ONNX inputs (--dim, --dtype, --layout, --strict). */
#define CLI_MAX_DIMS 32
typedef struct cli_onnx_opts {
  nnmem_onnx_dim_t dims[CLI_MAX_DIMS];
  size_t n_dims;
  nnmem_dtype_t dtype;        /* UNDEFINED = as in the model */
  nnmem_onnx_layout_t layout; /* NCHW = as in the model */
  int strict;
  const char *first; /* the first ONNX-only option given, for messages */
} cli_onnx_opts_t;

typedef struct cli_plan_opts {
  const char *input; /* file path; NULL = built-in model */
  const char *model; /* --model; NULL = CLI_DEFAULT_MODEL */
  uint32_t batch;    /* --batch; 0 = not given (1) */
  nnmem_strategy_t strategy;
  uint64_t align;      /* --align; 0 = none */
  uint64_t capacity;   /* --capacity; 0 = unlimited */
  double time_limit_s; /* --time-limit; 0 = unlimited */
  int no_reuse;
  int json;
  int quiet;
  const char *out;     /* --out */
  const char *profile; /* --profile */
  const char *svg;     /* --svg: memory map picture */
  const char *html;    /* --html: interactive memory map */
  const char *trace;   /* --trace-json: Chrome trace of the plan */
  cli_onnx_opts_t onnx;
} cli_plan_opts_t;

/* One buffer live at the peak step (for the report). */
typedef struct cli_live_entry {
  size_t buffer;
  uint64_t size;
} cli_live_entry_t;

/* Everything a report needs about one finished, verified plan. */
typedef struct cli_run {
  const char *title;              /* model name or input path */
  int builtin;                    /* 1 for a built-in model */
  const nnmem_graph_t *graph;     /* NULL for CSV problems */
  const nnmem_liveness_t *live;   /* NULL for CSV problems */
  const nnmem_problem_t *problem; /* what was planned */
  const nnmem_plan_t *plan;
  nnmem_profile_t prof;
  const cli_plan_opts_t *opts;
  cli_live_entry_t top[CLI_TOP_LIVE]; /* largest buffers at prof.peak_step */
  size_t n_top;
  size_t n_live;       /* buffers live at the peak step */
  uint64_t live_bytes; /* their bytes (rounded to alignment) */
  double total_s;      /* wall time of the whole command */
} cli_run_t;

/* Commands: argv[0] is the first argument after the command name. Each
 * returns the process exit code. */
int cli_cmd_plan(int argc, char **argv);
int cli_cmd_verify(int argc, char **argv);
int cli_cmd_inspect(int argc, char **argv);

/* Prints "nnmem: <message>" on stderr; returns the exit code that fits
 * `status` (NOFIT for NNMEM_ERR_CAPACITY, INTERNAL for NNMEM_ERR_NOMEM,
 * INVALID otherwise). */
int cli_fail(nnmem_status_t status, const nnmem_diag_t *diag);

/* ---- report.c ---- */

/* Finds a step with the most live bytes of `p` (sizes rounded to
 * max(align, buffer align)); 0 for an empty problem. O(n log n). */
nnmem_status_t cli_peak_step(const nnmem_problem_t *p, uint64_t align,
                             uint64_t *step_out);

/* Fills run->top / n_top / n_live / live_bytes with the buffers live at
 * `step`. O(n). */
void cli_collect_live(const nnmem_problem_t *p, uint64_t align, uint64_t step,
                      cli_run_t *run);

/* Human-readable report (graphs and problems). */
void cli_report_human(FILE *f, const cli_run_t *run);

/* Machine-readable report: the profile JSON plus run details, as a new
 * malloc'd string (caller frees). NNMEM_ERR_NOMEM / NNMEM_ERR_PARSE (the
 * library's profile JSON did not parse) on failure. */
nnmem_status_t cli_report_json(const cli_run_t *run, char **out);

/* `s` as it can be shown on a terminal: `s` itself, or (when it holds
 * control bytes, e.g. a newline or an escape sequence in a tensor name) a
 * copy in `buf` with each of them replaced by '?', truncated to `cap`. */
const char *cli_printable(const char *s, char *buf, size_t cap);

/* The display name of problem buffer `i` ("#i" when it has no id), through
 * cli_printable. */
const char *cli_buffer_name(const nnmem_problem_t *p, size_t i, char *buf,
                            size_t cap);

/* ---- onnx_opts.c ---- */

/* Applies --dim NAME=VALUE / --dtype / --layout / --strict (`opt` is the
 * option name without dashes). Returns 0 or the usage exit code. */
int cli_onnx_option(const char *cmd, cli_onnx_opts_t *o, const char *opt,
                    const char *value);
/* The library configuration for these options and alignment. */
void cli_onnx_config(const cli_onnx_opts_t *o, uint64_t align,
                     nnmem_onnx_config_t *cfg);
/* Prints the import summary (opset, nodes, folded, unresolved, defaults,
 * unsupported and data-dependent lists). */
void cli_onnx_summary(FILE *f, const nnmem_onnx_report_t *r);
/* Adds "unresolved_tensors" and an "onnx" object to the JSON object text
 * *json (replaced by a new malloc'd string). */
nnmem_status_t cli_onnx_json_add(char **json, const nnmem_onnx_report_t *r);
/* 1 when `path` ends in ".onnx" (case-insensitive). */
int cli_is_onnx(const char *path);

#endif /* NNMEM_CLI_H */

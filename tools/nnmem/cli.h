/* cli.h - shared declarations of the nnmem command-line tool: exit codes,
 * the options of `nnmem plan`, the result of one planning run (what the
 * reports print) and the command entry points. */
#ifndef NNMEM_CLI_H
#define NNMEM_CLI_H

#include <stdio.h>

#include "common/json_write.h"
#include "common/outset.h"
#include "nnmem/nnmem.h"

/* Exit codes (documented in `nnmem --help`). */
enum {
  CLI_EXIT_OK = 0,
  CLI_EXIT_INVALID = 1,     /* bad usage or bad input */
  CLI_EXIT_NOFIT = 2,       /* the plan does not fit --capacity */
  CLI_EXIT_INTERNAL = 3,    /* a bug: the planner's plan failed verification,
                               out of memory, a library failure */
  CLI_EXIT_PLAN_INVALID = 4 /* verify: the plan is invalid (overlap,
                               misaligned or overflowing offset) */
};

#define CLI_DEFAULT_MODEL "resnet50"
#define CLI_TOP_LIVE 5

/* Options of ONNX inputs (--dim, --dtype, --layout, --strict). */
#define CLI_MAX_DIMS 32
#define CLI_MAX_MODELS 64 /* inputs of `nnmem plan --shared-arena` */
typedef struct cli_onnx_opts {
  nnmem_onnx_dim_t dims[CLI_MAX_DIMS];
  size_t n_dims;
  nnmem_dtype_t dtype;        /* UNDEFINED = as in the model */
  nnmem_onnx_layout_t layout; /* NCHW = as in the model */
  int strict;
  const char *first; /* the first ONNX-only option given, for messages */
  /* --dim NAME=LO..HI or NAME=V1,V2,...: shape buckets (one such --dim) */
  int has_buckets;
  nnmem_onnx_dim_buckets_t buckets;
} cli_onnx_opts_t;

typedef struct cli_plan_opts {
  const char *input; /* file path; NULL = built-in model */
  const char *model; /* --model; NULL = CLI_DEFAULT_MODEL */
  uint32_t batch;    /* --batch; 0 = not given (1) */
  nnmem_strategy_t strategy;
  uint64_t align;       /* --align; 0 = none */
  uint64_t capacity;    /* --capacity; 0 = unlimited */
  double time_limit_s;  /* --time-limit; 0 = unlimited */
  int optimal;          /* --optimal: search for the minimum height */
  uint64_t node_budget; /* --node-budget; 0 = the library default */
  int no_reuse;
  int no_concat; /* --no-concat-into-output */
  int json;      /* CLI_JSON_OFF / _PRETTY / _COMPACT */
  int quiet;
  const char *out;     /* --out */
  const char *profile; /* --profile */
  uint64_t max_input;  /* --max-input-size; 0 = NNMEM_INPUT_MAX_DEFAULT */
  const char *svg;     /* --svg: memory map picture */
  const char *html;    /* --html: interactive memory map */
  const char *trace;   /* --trace-json: Chrome trace of the plan */
  cli_onnx_opts_t onnx;
  int order; /* --order: CLI_ORDER_FILE (default) / _MEMORY */
  int order_given;
  /* several models in one arena (cmd_plan_multi.c) */
  const char *more_inputs[CLI_MAX_MODELS - 1]; /* inputs after the first */
  size_t n_more;
  int shared_arena;                       /* --shared-arena */
  const char *concurrent[CLI_MAX_MODELS]; /* --concurrent A,B (each one
                                             a group; the text as given) */
  size_t n_concurrent;
  uint64_t mem_limit; /* --mem-limit / --mem_limit; 0 = none */
  int fit;            /* --mem-limit or --device given: fit (fit_ui.c) */
  const char *device; /* --device NAME|FILE; NULL = edge-npu */
  uint64_t slice_bytes; /* --weight-slices SIZE|off (nnmem_fit_config_t's
                           slice_bytes; 0 = the fitter's default) */
} cli_plan_opts_t;

enum { CLI_ORDER_FILE = 0, CLI_ORDER_MEMORY = 1 };

/* What --order memory found (graphs only). */
typedef struct cli_order_result {
  int done;           /* 1: the memory order was searched */
  uint64_t file_peak; /* peak live arena bytes, file order */
  uint64_t peak;      /* the same with the chosen order */
  int exact;          /* proven minimal */
  size_t parts, parts_exact, largest_part;
  size_t concat_kept_out; /* Concat / Split ops kept out of
                             concat-into-output for a lower peak */
  double seconds;
} cli_order_result_t;

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
  int interrupted;                    /* Ctrl-C stopped the search */
  cli_live_entry_t top[CLI_TOP_LIVE]; /* largest buffers at prof.peak_step */
  size_t n_top;
  size_t n_live;            /* buffers live at the peak step */
  uint64_t live_bytes;      /* their bytes (rounded to alignment) */
  double total_s;           /* wall time of the whole command */
  cli_order_result_t order; /* --order memory */
} cli_run_t;

/* Commands: argv[0] is the first argument after the command name. Each
 * returns the process exit code. */
int cli_cmd_plan(int argc, char **argv);
int cli_cmd_verify(int argc, char **argv);
int cli_cmd_diff(int argc, char **argv); /* cmd_diff.c */
int cli_cmd_inspect(int argc, char **argv);

/* --json[=pretty|compact] of every command: JSON through the one writer
 * (src/common/json_write.c), pretty (2 spaces) unless compact is asked. */
enum { CLI_JSON_OFF = 0, CLI_JSON_PRETTY = 1, CLI_JSON_COMPACT = 2 };

/* Sets *json from the option's inline value (NULL, "pretty", "compact");
 * 0, or the usage exit code after printing the error. */
int cli_json_option(const char *cmd, const char *value, int *json);

/* Starts a writer for `json` (a CLI_JSON_ value) on a fresh text. */
void cli_json_begin(nnmem__jw_t *w, nnmem__text_t *t, int json);

/* Finishes the document and prints it on stdout; frees t. Returns the exit
 * code (CLI_EXIT_INTERNAL after a message when the writer failed). */
int cli_json_print(nnmem__jw_t *w, nnmem__text_t *t);

/* Prints "nnmem: <message>" on stderr; returns the exit code that fits
 * `status` (NOFIT for NNMEM_ERR_CAPACITY, INTERNAL for NNMEM_ERR_NOMEM,
 * INVALID otherwise). */
int cli_fail(nnmem_status_t status, const nnmem_diag_t *diag);

/* ---- cmd_plan.c, for cmd_plan_multi.c: one model planned as `nnmem plan`
 * plans it (load, order, liveness, plan, verify, profile), no output ---- */
typedef struct cli_planned cli_planned_t;
/* Plans `input` (a path, or NULL for the built-in model) with the options
 * `o` (its output files are ignored) and `extra` (one more dim binding, or
 * NULL). Returns the exit code; the error is printed (cli_fail). */
int cli_plan_model(const cli_plan_opts_t *o, const char *input,
                   const nnmem_onnx_dim_t *extra, cli_planned_t **out);
const cli_run_t *cli_planned_run(const cli_planned_t *p);
/* The ONNX import report, or NULL for other inputs. */
const nnmem_onnx_report_t *cli_planned_onnx(const cli_planned_t *p);
void cli_planned_free(cli_planned_t *p);
/* ---- fit_ui.c ---- */

/* `nnmem plan --mem-limit`: fits `g`, writes --out / --profile, prints the
 * report; returns the exit code. */
int cli_fit_plan(const nnmem_graph_t *g, const cli_plan_opts_t *o,
                 const char *title);
/* A preset name or a device JSON file (NULL: edge-npu); 0, or 1 with diag
 * filled. */
int cli_fit_load_device(const char *spec, nnmem_device_t *d,
                        nnmem_diag_t *diag);
int cli_cmd_run(int argc, char **argv);    /* cmd_run.c */
int cli_cmd_record(int argc, char **argv); /* cmd_record.c */
int cli_cmd_serve(int argc, char **argv);  /* cmd_record.c */

/* ---- report.c ---- */

/* cmd_plan_multi.c: --shared-arena (several models) and --dim ranges
 * (shape buckets); returns the exit code. */
int cli_plan_multi(const cli_plan_opts_t *o);

/* ---- report.c ---- */

/* Fills run->top / n_top / n_live / live_bytes with the buffers live at
 * `step`. O(n). */
void cli_collect_live(const nnmem_problem_t *p, uint64_t align, uint64_t step,
                      cli_run_t *run);

/* Human-readable report (graphs and problems). */
void cli_report_human(FILE *f, const cli_run_t *run);

/* Machine-readable report: the members of the profile JSON plus run
 * details, written into the object the caller opened on `w`. */
void cli_report_json(nnmem__jw_t *w, const cli_run_t *run);

/* `s` as it can be shown on a terminal: `s` itself, or (when it holds
 * control bytes, e.g. a newline or an escape sequence in a tensor name) a
 * copy in `buf` with each of them escaped ("\\n", "\\x1b"; nnmem__escape),
 * truncated to `cap`, so names stay distinguishable. */
const char *cli_printable(const char *s, char *buf, size_t cap);

/* The display name of problem buffer `i` ("#i" when it has no id), through
 * cli_printable. */
const char *cli_buffer_name(const nnmem_problem_t *p, size_t i, char *buf,
                            size_t cap);

/* ---- input.c ---- */

/* What an input holds (zero: empty or undecided). */
typedef enum cli_format {
  CLI_FMT_UNKNOWN = 0,
  CLI_FMT_ONNX,
  CLI_FMT_JSON,
  CLI_FMT_CSV,
  CLI_FMT_COMPRESSED, /* gzip, zip, xz, zstd, bzip2 */
  CLI_FMT_BINARY      /* binary, not ONNX */
} cli_format_t;

/* One input file read whole. */
typedef struct cli_input {
  const char *path; /* as given; "-" = standard input */
  const char *name; /* for messages: the path or "standard input" */
  char *data;       /* NUL-terminated */
  size_t len;
  cli_format_t format; /* ONNX, JSON or CSV: what to parse it as */
} cli_input_t;

/* Reads `path` ("-": standard input) with the limit `max_bytes` (0 = the
 * library default, 2 GiB) and decides its format from the extension checked
 * against the content (input.c). Errors name the file; *in is then empty. */
nnmem_status_t cli_input_read(cli_input_t *in, const char *path,
                              uint64_t max_bytes, nnmem_diag_t *diag);
void cli_input_free(cli_input_t *in);
/* The format a file name promises (UNKNOWN for "-" or another extension). */
cli_format_t cli_format_of_name(const char *path);
/* The format the first bytes suggest. */
cli_format_t cli_sniff(const char *data, size_t len);
/* cli_input_read, then nnmem_csv_parse; content that is not CSV is an
 * error saying what it looks like. */
nnmem_status_t cli_read_csv(const char *path, uint64_t max_bytes,
                            nnmem_csv_t **out, nnmem_diag_t *diag);
/* Parses --max-input-size; 0 or the usage exit code. */
int cli_parse_max_input(const char *cmd, const char *v, uint64_t *out);
/* Parses --align (a size, a power of two >= 1) and --capacity (a size > 0)
 * for `cmd`; 0 (*out set) or the usage exit code (message printed). */
int cli_parse_align(const char *cmd, const char *v, uint64_t *out);
int cli_parse_capacity(const char *cmd, const char *v, uint64_t *out);

/* ---- outputs.c ---- */

/* Until cli_outputs_unguard(), SIGINT / SIGTERM / SIGHUP first remove the
 * temporaries staged in `set` (then kill the process as usual). */
void cli_outputs_guard(const nnmem__outset_t *set);

/* search_ui.c: progress of the placement search and Ctrl-C around it. */
typedef struct cli_search_ui {
  int silent, tty, shown;
  double last;
  uint64_t best, bound; /* as last shown */
} cli_search_ui_t;
/* Installs the SIGINT handler; returns the stop flag for the planner. */
volatile int *cli_search_begin(cli_search_ui_t *ui, int silent);
/* nnmem_planner_config_t.progress (ctx: the cli_search_ui_t). */
void cli_search_progress(void *ctx, const nnmem_search_progress_t *p);
/* Restores the handler; returns 1 when Ctrl-C stopped the search. */
int cli_search_end(cli_search_ui_t *ui);
void cli_outputs_unguard(void);

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
/* Writes the members "unresolved_tensors" and "onnx" (an object) into the
 * object the caller opened on `w`. */
void cli_onnx_json_add(nnmem__jw_t *w, const nnmem_onnx_report_t *r);
/* 1 when `path` ends in ".onnx" (case-insensitive). */
int cli_is_onnx(const char *path);

#endif /* NNMEM_CLI_H */

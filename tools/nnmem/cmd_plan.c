/* cmd_plan.c - `nnmem plan`: load a model or problem, plan it, verify the
 * plan, write the requested files and print a report.
 *
 * Steps:
 *   1. parse the options (errors -> exit 1 before any work);
 *   2. load the input: no file -> a built-in model (nnmem_zoo_build);
 *      else (a path, or "-" for standard input) read it whole under the
 *      --max-input-size limit and parse it as ONNX, JSON graph or CSV
 *      problem, as its extension says and its content confirms (input.c);
 *   3. graphs: with --order memory, nnmem_graph_order_memory chooses the
 *      op order (a CSV problem with --order is bad usage); liveness
 *      analysis in that order -> problem (--no-reuse disables views and
 *      in-place there and forces the naive planner);
 *   4. plan with the requested strategy, alignment, capacity and time
 *      limit; NNMEM_ERR_CAPACITY -> exit 2;
 *   5. ALWAYS verify the produced plan with the independent verifier; a
 *      failure is a planner bug -> exit 3;
 *   6. compute the profile (graphs: nnmem_profile_compute; problems: built
 *      here with no weights and no workspace);
 *   7. only now write --out, --profile, --svg, --html and --trace-json as
 *      one output set (common/outset.h): each is formatted in memory,
 *      staged as a temporary, and all are renamed only when every one
 *      succeeded; on any failure every existing file keeps its old bytes;
 *   8. print the human report (or the JSON report with --json).
 * Invariant: after a non-zero exit every output file is as it was before
 * (absent, or its old bytes); every resource is freed on every path
 * (plan_ctx_free).
 * Thread-safety: single-threaded. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args.h"
#include "suggest.h"
#include "cli.h"
#include "common/util.h"
#include "export/export_json.h"
#include "nnmem/map.h"
#include "units.h"

enum input_kind { IN_MODEL, IN_GRAPH, IN_CSV };

enum {
  OPT_HELP,
  OPT_STRATEGY,
  OPT_ALIGN,
  OPT_CAPACITY,
  OPT_TIME_LIMIT,
  OPT_NO_REUSE,
  OPT_NO_CONCAT,
  OPT_MODEL,
  OPT_BATCH,
  OPT_JSON,
  OPT_OUT,
  OPT_PROFILE,
  OPT_QUIET,
  OPT_DIM,
  OPT_DTYPE,
  OPT_LAYOUT,
  OPT_STRICT,
  OPT_MAX_INPUT,
  OPT_SVG,
  OPT_HTML,
  OPT_TRACE_JSON,
  OPT_OPTIMAL,
  OPT_NODE_BUDGET,
  OPT_ORDER,
  OPT_SHARED_ARENA,
  OPT_CONCURRENT,
  OPT_MEM_LIMIT,
  OPT_MEM_LIMIT_MB,
  OPT_DEVICE,
  OPT_WEIGHT_SLICES
};

static const cli_opt_t plan_table[] = {
    {"help", 'h', 0, OPT_HELP},
    {"strategy", 's', 1, OPT_STRATEGY},
    {"align", 'a', 1, OPT_ALIGN},
    {"capacity", 'c', 1, OPT_CAPACITY},
    {"time-limit", 't', 1, OPT_TIME_LIMIT},
    {"no-reuse", 0, 0, OPT_NO_REUSE},
    {"no-concat-into-output", 0, 0, OPT_NO_CONCAT},
    {"model", 'm', 1, OPT_MODEL},
    {"batch", 'b', 1, OPT_BATCH},
    {"json", 0, CLI_OPT_INLINE, OPT_JSON},
    {"out", 'o', 1, OPT_OUT},
    {"profile", 'p', 1, OPT_PROFILE},
    {"quiet", 'q', 0, OPT_QUIET},
    {"dim", 0, 1, OPT_DIM},
    {"dtype", 0, 1, OPT_DTYPE},
    {"layout", 0, 1, OPT_LAYOUT},
    {"strict", 0, 0, OPT_STRICT},
    {"max-input-size", 0, 1, OPT_MAX_INPUT},
    {"svg", 0, 1, OPT_SVG},
    {"html", 0, 1, OPT_HTML},
    {"trace-json", 0, 1, OPT_TRACE_JSON},
    {"optimal", 0, 0, OPT_OPTIMAL},
    {"node-budget", 0, 1, OPT_NODE_BUDGET},
    {"order", 0, 1, OPT_ORDER},
    {"shared-arena", 0, 0, OPT_SHARED_ARENA},
    {"concurrent", 0, 1, OPT_CONCURRENT},
    {"mem-limit", 0, 1, OPT_MEM_LIMIT},
    {"mem_limit", 0, 1, OPT_MEM_LIMIT_MB},
    {"device", 0, 1, OPT_DEVICE},
    {"weight-slices", 0, 1, OPT_WEIGHT_SLICES},
    {NULL, 0, 0, 0}};

typedef struct plan_ctx {
  cli_plan_opts_t opts;
  enum input_kind kind;
  nnmem_graph_t *graph;
  nnmem_csv_t *csv;
  nnmem_liveness_t *live;
  nnmem_plan_t *plan;
  const nnmem_problem_t *problem;
  cli_run_t run;
  char *json; /* the --json report, formatted before files are written */
  nnmem_diag_t diag;
  double t0;
  int is_onnx;
  int interrupted;          /* Ctrl-C stopped the search */
  nnmem_onnx_report_t onnx; /* the import report of an ONNX input */
  uint32_t *order;          /* --order memory: the chosen op order */
  uint8_t *kept_out; /* --order memory: ops kept out of concat-into-output */
  cli_order_result_t order_res;
  int fit_done; /* --mem-limit: cli_fit_plan printed the report */
} plan_ctx_t;

/* "auto, naive, greedy-size, ..." (every strategy the library names). */
static const char *strategy_list(char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = '\0';
  for (int s = 0; s < NNMEM_STRATEGY_COUNT_ && o < cap; s++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%s", s ? ", " : "",
                          nnmem_strategy_name((nnmem_strategy_t)s));
  return buf;
}

/* "resnet50, mobilenetv2, ..." (the built-in models). */
static const char *model_list(char *buf, size_t cap) {
  size_t n = 0, o = 0;
  const char *const *names = nnmem_zoo_names(&n);
  buf[0] = '\0';
  for (size_t i = 0; i < n && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", names[i]);
  return buf;
}

static const char *suggest_strategy(const char *v) {
  const char *names[NNMEM_STRATEGY_COUNT_];
  for (int s = 0; s < NNMEM_STRATEGY_COUNT_; s++)
    names[s] = nnmem_strategy_name((nnmem_strategy_t)s);
  return cli_suggest(v, names, NNMEM_STRATEGY_COUNT_);
}

static const char *suggest_model(const char *v) {
  size_t n = 0;
  const char *const *names = nnmem_zoo_names(&n);
  return cli_suggest(v, names, n);
}

static int known_model(const char *v) {
  size_t n = 0;
  const char *const *names = nnmem_zoo_names(&n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(names[i], v) == 0) return 1;
  return 0;
}

/* Prints `items` comma-separated, wrapped at 79 columns with `indent`. */
static void print_wrapped(const char *const *items, size_t n, int indent) {
  int col = printf("%*s", indent, "");
  for (size_t i = 0; i < n; i++) {
    int len = (int)strlen(items[i]) + 1; /* with its comma */
    if (i > 0 && col + 1 + len > 79)
      col = printf(",\n%*s", indent, "") - 2;
    else if (i > 0)
      col += printf(", ");
    col += printf("%s", items[i]);
  }
  putchar('\n');
}

static void print_plan_help(void) {
  const char *strategies[NNMEM_STRATEGY_COUNT_];
  size_t n_models = 0;
  const char *const *models = nnmem_zoo_names(&n_models);
  for (int s = 0; s < NNMEM_STRATEGY_COUNT_; s++)
    strategies[s] = nnmem_strategy_name((nnmem_strategy_t)s);
  fputs(
      "Usage: nnmem plan [INPUT] [options]\n"
      "       nnmem plan INPUT INPUT... --shared-arena [--concurrent A,B]\n"
      "\n"
      "INPUT is an ONNX model (.onnx), a graph (.json), a MiniMalloc problem\n"
      "(.csv: id,lower,upper,size with half-open lifetimes [lower, upper)), "
      "'-'\n"
      "for standard input (format from the content), or nothing for a "
      "built-in\n"
      "model.\n"
      "\n"
      "Options:\n"
      "  -m, --model NAME       built-in model (default " CLI_DEFAULT_MODEL
      "):\n",
      stdout);
  print_wrapped(models, n_models, 25);
  fputs(
      "  -b, --batch N          batch size of the built-in model (default 1)\n"
      "  -s, --strategy NAME    planning strategy (default auto: runs the\n"
      "                         heuristics, keeps the lowest plan):\n",
      stdout);
  print_wrapped(strategies, NNMEM_STRATEGY_COUNT_, 25);
  fputs(
      "  -a, --align SIZE       align every offset to SIZE (a power of two)\n"
      "  -c, --capacity SIZE    the arena must fit in SIZE bytes (weights "
      "are a\n"
      "                         separate region); exit 2 when it does not\n"
      "  -t, --time-limit SEC   stop the strategies and the search after "
      "SEC\n"
      "                         seconds (> 0) and keep the best plan so far\n"
      "      --optimal          search for the minimum height: says optimal\n"
      "                         (proven) or the gap to the best bound;\n"
      "                         Ctrl-C stops it and keeps the best plan\n"
      "      --node-budget N    search nodes at most (default 2000000; the\n"
      "                         same budget gives the same plan)\n"
      "      --no-reuse         naive baseline: every tensor its own bytes\n"
      "      --no-concat-into-output  graphs: copy Concat inputs into the\n"
      "                         output and Split outputs out of the input\n"
      "                         (default: written / read in place where the\n"
      "                         layout allows, as sub-buffers)\n"
      "      --order file|memory  operator order of a graph: file (default:\n"
      "                         as written) or memory (a topological order\n"
      "                         with the lowest peak of live bytes; it may\n"
      "                         keep a Concat / Split out of concat-into-\n"
      "                         output where that lowers the peak)\n"
      "      --shared-arena     INPUT... (2 to 64 models): one arena for all;\n"
      "                         models take turns (arena = the largest\n"
      "                         height); weights stay per model, resident\n"
      "      --concurrent A,B   with --shared-arena: these models run at the\n"
      "                         same time, their heights add up (repeatable:\n"
      "                         one group each)\n"
      "      --mem-limit SIZE   fit the model under SIZE bytes of device\n"
      "                         memory: weights streamed in ahead of use,\n"
      "                         idle activations offloaded to host memory;\n"
      "                         --out writes the transfer schedule (for\n"
      "                         nnmem run); exit 2 below the smallest\n"
      "                         footprint\n"
      "      --mem_limit MB     the same limit in MB (10^6 bytes)\n"
      "      --device NAME|FILE device description: a preset (edge-npu,\n"
      "                         datacenter, cpu; default edge-npu) or a\n"
      "                         device JSON file (docs/fit.md)\n"
      "      --weight-slices SIZE|off  with --mem-limit: a weight of at\n"
      "                         least 2 x SIZE moves in row slices of about\n"
      "                         SIZE, a kernel each (default: the larger of\n"
      "                         1 MiB and limit / 64); off: whole weights,\n"
      "                         for kernels that cannot take slices\n"
      "  -o, --out FILE         write the plan: .json (plan JSON: buffers\n"
      "                         with offsets; graphs add tensors) or .csv\n"
      "                         (problems: input columns + offset; graphs:\n"
      "                         id,lower,upper,size,alignment[,parent,\n"
      "                         parent_offset],offset)\n"
      "  -p, --profile FILE     write memory_profile JSON\n"
      "      --svg FILE         write the memory map picture (x = step,\n"
      "                         y = address, one rectangle per buffer)\n"
      "      --html FILE        write the interactive memory map (one file,\n"
      "                         no network: wheel zooms, drag pans, hover\n"
      "                         names the buffer)\n"
      "      --trace-json FILE  write the plan as a Chrome trace / Perfetto\n"
      "                         timeline (1 step = 1 us)\n"
      "      --json[=compact]   print a machine-readable JSON report instead\n"
      "                         (pretty; compact: no whitespace)\n"
      "  -q, --quiet            print nothing on success\n"
      "      --max-input-size SIZE  refuse inputs larger than SIZE (default\n"
      "                         2GiB, the largest single-file ONNX model)\n"
      "  -h, --help             show this help\n"
      "\n"
      "ONNX models:\n"
      "      --dim NAME=VALUE   bind a symbolic dim (repeatable); unbound "
      "ones\n"
      "                         default to 1 (batch-like names) or 128\n"
      "                         (sequence-like names), listed in the report;\n"
      "                         --dim batch=N / sequence=N bind every batch- "
      "/\n"
      "                         sequence-like dim; a NAME the model lacks is "
      "an\n"
      "                         error\n"
      "      --dim NAME=LO..HI  shape buckets (one such --dim): LO, the "
      "powers\n"
      "                         of two between, HI (or NAME=V1,V2,...: "
      "these);\n"
      "                         a plan per bucket, one arena for the largest\n"
      "      --dtype TYPE       plan floating tensors as if converted to TYPE\n"
      "      --layout L         NCHW (default), NHWC or NC1HWC0 (channels "
      "padded\n"
      "                         to C0 = 16 for 16-bit, 32 for 8-bit types)\n"
      "      --strict           fail (exit 1) when a tensor cannot be sized\n"
      "\n"
      "SIZE is a byte count with an optional unit: B; K, M, G, T or KiB, "
      "MiB,\n"
      "GiB, TiB (powers of 1024); KB, MB, GB, TB (powers of 1000). Examples: "
      "4096,\n"
      "64K, 1.5MiB, 2GB.\n"
      "\n"
      "Exit codes: 0 ok, 1 bad usage or input, 2 does not fit --capacity\n"
      "(proven infeasible, or no plan found within the time limit/budget),\n"
      "3 internal error (the plan failed the independent verifier).\n",
      stdout);
}

/* Applies one option; returns 0 or the exit code of a usage error. */
static int set_option(void *opts, int id, const char *v) {
  cli_plan_opts_t *o = opts;
  const char *why = NULL;
  uint64_t n = 0;
  switch (id) {
    case OPT_STRATEGY:
      if (nnmem_strategy_parse(v, &o->strategy) != NNMEM_OK) {
        char list[256], hint[96];
        return cli_usage_error(
            "plan", "unknown strategy '%s' (expected %s)%s", v,
            strategy_list(list, sizeof list),
            cli_did_you_mean(suggest_strategy(v), hint, sizeof hint));
      }
      return 0;
    case OPT_ALIGN:
      return cli_parse_align("plan", v, &o->align);
    case OPT_CAPACITY:
      return cli_parse_capacity("plan", v, &o->capacity);
    case OPT_TIME_LIMIT:
      if (cli_parse_seconds(v, &o->time_limit_s, &why) != 0)
        return cli_usage_error("plan", "bad --time-limit '%s': %s", v, why);
      if (o->time_limit_s <= 0)
        return cli_usage_error("plan", "bad --time-limit '%s': must be > 0", v);
      return 0;
    case OPT_OPTIMAL:
      o->optimal = 1;
      return 0;
    case OPT_NODE_BUDGET:
      if (cli_parse_uint(v, UINT64_MAX, &n, &why) != 0 || n == 0)
        return cli_usage_error("plan", "bad --node-budget '%s': %s", v,
                               why ? why : "must be >= 1");
      o->node_budget = n;
      return 0;
    case OPT_BATCH:
      if (cli_parse_uint(v, 1u << 20, &n, &why) != 0 || n == 0)
        return cli_usage_error("plan", "bad --batch '%s': %s", v,
                               why ? why : "must be >= 1");
      o->batch = (uint32_t)n;
      return 0;
    case OPT_MODEL:
      if (!known_model(v)) {
        char list[256], hint[96];
        return cli_usage_error(
            "plan", "unknown built-in model '%s' (known: %s)%s", v,
            model_list(list, sizeof list),
            cli_did_you_mean(suggest_model(v), hint, sizeof hint));
      }
      o->model = v;
      return 0;
    case OPT_NO_REUSE:
      o->no_reuse = 1;
      return 0;
    case OPT_NO_CONCAT:
      o->no_concat = 1;
      return 0;
    case OPT_JSON:
      return cli_json_option("plan", v, &o->json);
    case OPT_QUIET:
      o->quiet = 1;
      return 0;
    case OPT_OUT:
      o->out = v;
      return 0;
    case OPT_PROFILE:
      o->profile = v;
      return 0;
    case OPT_SVG:
      o->svg = v;
      return 0;
    case OPT_HTML:
      o->html = v;
      return 0;
    case OPT_TRACE_JSON:
      o->trace = v;
      return 0;
    case OPT_ORDER:
      if (strcmp(v, "file") && strcmp(v, "memory")) {
        char hint[96];
        const char *const names[] = {"file", "memory"};
        return cli_usage_error(
            "plan", "unknown --order '%s' (expected file or memory)%s", v,
            cli_did_you_mean(cli_suggest(v, names, 2), hint, sizeof hint));
      }
      o->order = strcmp(v, "memory") ? CLI_ORDER_FILE : CLI_ORDER_MEMORY;
      o->order_given = 1;
      return 0;
    case OPT_MEM_LIMIT:
      if (v[0] == '-')
        return cli_usage_error("plan", "bad --mem-limit '%s': must be > 0", v);
      if (cli_parse_size(v, &n, &why) != 0 || n == 0)
        return cli_usage_error("plan", "bad --mem-limit '%s': %s", v,
                               why ? why : "must be > 0");
      o->mem_limit = n;
      o->fit = 1;
      return 0;
    case OPT_MEM_LIMIT_MB: {
      char *end = NULL;
      double mb = strtod(v, &end);
      if (!*v || *end || !(mb > 0) || mb > 1.8e13)
        return cli_usage_error("plan",
                               "bad --mem_limit '%s': a number of MB > 0", v);
      o->mem_limit = (uint64_t)(mb * 1e6);
      o->fit = 1;
      return 0;
    }
    case OPT_DEVICE:
      o->device = v;
      o->fit = 1;
      return 0;
    case OPT_WEIGHT_SLICES:
      if (!strcmp(v, "off")) {
        o->slice_bytes = UINT64_MAX;
        return 0;
      }
      if (v[0] == '-' || cli_parse_size(v, &n, &why) != 0 || n == 0)
        return cli_usage_error("plan",
                               "bad --weight-slices '%s': a size > 0 or off%s%s",
                               v, why ? ": " : "", why ? why : "");
      o->slice_bytes = n;
      return 0;
    case OPT_DIM:
      return cli_onnx_option("plan", &o->onnx, "dim", v);
    case OPT_DTYPE:
      return cli_onnx_option("plan", &o->onnx, "dtype", v);
    case OPT_LAYOUT:
      return cli_onnx_option("plan", &o->onnx, "layout", v);
    case OPT_STRICT:
      return cli_onnx_option("plan", &o->onnx, "strict", v);
    case OPT_MAX_INPUT:
      return cli_parse_max_input("plan", v, &o->max_input);
    case OPT_SHARED_ARENA:
      o->shared_arena = 1;
      return 0;
    case OPT_CONCURRENT:
      if (o->n_concurrent == CLI_MAX_MODELS)
        return cli_usage_error("plan", "too many --concurrent groups");
      o->concurrent[o->n_concurrent++] = v;
      return 0;
  }
  return 0;
}

static int has_ext(const char *path, const char *ext) {
  size_t n = strlen(path), e = strlen(ext);
  return n > e && strcasecmp(path + n - e, ext) == 0;
}

/* --shared-arena, --concurrent, several inputs and shape buckets. */
static int check_multi_options(const cli_plan_opts_t *o) {
  if (o->n_more && !o->shared_arena)
    return cli_usage_error("plan",
                           "unexpected argument '%s': several inputs plan "
                           "into one arena only with --shared-arena",
                           o->more_inputs[0]);
  if (o->n_concurrent && !o->shared_arena)
    return cli_usage_error("plan", "--concurrent needs --shared-arena");
  if (o->shared_arena && !o->n_more)
    return cli_usage_error("plan",
                           "--shared-arena needs at least two models (got %s)",
                           o->input ? o->input : "none");
  if (o->shared_arena && o->onnx.has_buckets)
    return cli_usage_error("plan",
                           "--dim %s=...: shape buckets apply to one model, "
                           "not with --shared-arena",
                           o->onnx.buckets.name);
  if ((o->shared_arena || o->onnx.has_buckets) &&
      (o->svg || o->html || o->trace))
    return cli_usage_error("plan",
                           "--svg, --html and --trace-json draw one plan; "
                           "with several plans (--shared-arena, --dim ranges) "
                           "write --out or --profile");
  if ((o->shared_arena || o->onnx.has_buckets) && o->out &&
      !has_ext(o->out, ".json"))
    return cli_usage_error("plan",
                           "--out '%s': several plans are written as JSON "
                           "(.json)",
                           o->out);
  const char *all[CLI_MAX_MODELS] = {o->input};
  for (size_t i = 0; i < o->n_more; i++)
    all[i + 1] = o->more_inputs[i];
  for (size_t i = 1; i <= o->n_more; i++) /* the first: check_options */
    if (cli_same_file(all[i], o->out) || cli_same_file(all[i], o->profile))
      return cli_usage_error("plan", "'%s' is an input and an output", all[i]);
  return 0;
}

/* Checks combinations of options; returns 0 or a usage exit code. */
static int check_options(const cli_plan_opts_t *o) {
  int multi = check_multi_options(o);
  if (multi) return multi;
  if (o->input && o->model)
    return cli_usage_error("plan",
                           "give either an input file or --model, "
                           "not both");
  if (o->input && o->batch && cli_format_of_name(o->input) != CLI_FMT_CSV &&
      cli_format_of_name(o->input) != CLI_FMT_JSON)
    return cli_usage_error("plan",
                           "--batch applies to built-in models only; for an "
                           "ONNX model use --dim batch=%u (binds every "
                           "batch-like dim)",
                           (unsigned)o->batch);
  if (o->input && o->batch)
    return cli_usage_error("plan", "--batch applies to built-in models only");
  const char *const files[] = {o->out, o->profile, o->svg, o->html, o->trace};
  const char *const flags[] = {"out", "profile", "svg", "html", "trace-json"};
  for (int i = 0; i < 5; i++)
    if (files[i] && !*files[i])
      return cli_usage_error("plan", "--%s '': the file name is empty",
                             flags[i]);
  if (o->out && !has_ext(o->out, ".json") && !has_ext(o->out, ".csv"))
    return cli_usage_error("plan",
                           "--out '%s': the name must end in .json "
                           "or .csv",
                           o->out);
  if (o->onnx.first &&
      !(o->input && (cli_format_of_name(o->input) == CLI_FMT_ONNX ||
                     cli_format_of_name(o->input) == CLI_FMT_UNKNOWN)))
    return cli_usage_error("plan", "--%s applies to ONNX models (.onnx) only",
                           o->onnx.first);
  if (o->no_reuse && o->strategy != NNMEM_STRATEGY_AUTO &&
      o->strategy != NNMEM_STRATEGY_NAIVE)
    return cli_usage_error("plan",
                           "--no-reuse plans with the naive strategy; it "
                           "does not combine with --strategy %s",
                           nnmem_strategy_name(o->strategy));
  if (o->fit && (o->svg || o->html || o->trace))
    return cli_usage_error("plan",
                           "--%s does not combine with --mem-limit/--device "
                           "(the memory map shows one tier)",
                           o->svg    ? "svg"
                           : o->html ? "html"
                                     : "trace-json");
  if (o->fit &&
      (o->capacity || o->no_reuse || o->optimal || o->align || o->node_budget ||
       o->time_limit_s || o->strategy != NNMEM_STRATEGY_AUTO))
    return cli_usage_error(
        "plan",
        "--%s does not combine with --mem-limit/--device (the "
        "device description sets tiers, alignments and the limit)",
        o->capacity       ? "capacity"
        : o->no_reuse     ? "no-reuse"
        : o->optimal      ? "optimal"
        : o->align        ? "align"
        : o->node_budget  ? "node-budget"
        : o->time_limit_s ? "time-limit"
                          : "strategy");
  if (o->slice_bytes && !o->fit)
    return cli_usage_error("plan",
                           "--weight-slices applies with --mem-limit or "
                           "--device (fitting a limit)");
  if (o->fit && o->out && !has_ext(o->out, ".json"))
    return cli_usage_error("plan",
                           "--out '%s': a fitted plan is written as JSON "
                           "(.json)",
                           o->out);
  if (cli_same_file(o->out, o->profile))
    return cli_usage_error("plan", "--out and --profile name the same file");
  /* each map output against the input, --out, --profile and the maps
   * named before it */
  const char *names[] = {o->input, o->out,  o->profile,
                         o->svg,   o->html, o->trace};
  for (int i = 3; i < 6; i++)
    for (int j = 0; j < i; j++)
      if (cli_same_file(names[i], names[j]))
        return cli_usage_error("plan", "'%s' is named twice (input or output)",
                               names[i]);
  if (cli_same_file(o->input, o->out) || cli_same_file(o->input, o->profile))
    return cli_usage_error(
        "plan", "--%s '%s' is the input file",
        cli_same_file(o->input, o->out) ? "out" : "profile",
        cli_same_file(o->input, o->out) ? o->out : o->profile);
  return 0;
}

/* Parses argv; returns -1 to continue, else the exit code. */
static int parse_plan_args(int argc, char **argv, cli_plan_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->strategy = NNMEM_STRATEGY_AUTO;
  cli_parse_t p = {"plan",
                   plan_table,
                   OPT_HELP,
                   print_plan_help,
                   set_option,
                   o,
                   {&o->input, NULL},
                   o->more_inputs,
                   CLI_MAX_MODELS - 1,
                   &o->n_more};
  int e = cli_args_parse(&p, argc, argv);
  if (e >= 0) return e;
  e = check_options(o);
  return e ? e : -1;
}

static nnmem_status_t load_model(plan_ctx_t *c) {
  const char *name = c->opts.model ? c->opts.model : CLI_DEFAULT_MODEL;
  c->kind = IN_MODEL;
  nnmem_status_t st = nnmem_zoo_build(name, c->opts.batch, &c->graph, &c->diag);
  if (st == NNMEM_ERR_NOT_FOUND && !c->diag.message[0]) {
    char list[256];
    nnmem__diag(&c->diag, st, "unknown built-in model '%s' (known: %s)", name,
                model_list(list, sizeof list));
  }
  return st;
}

/* Parses the input read by cli_input_read as its decided format. */
static nnmem_status_t parse_input(plan_ctx_t *c, const cli_input_t *in) {
  if (in->format == CLI_FMT_CSV) {
    c->kind = IN_CSV;
    return nnmem_csv_parse(in->data, in->len, in->name, &c->csv, &c->diag);
  }
  c->kind = IN_GRAPH;
  if (in->format == CLI_FMT_JSON)
    return nnmem_graph_parse_json(in->data, in->len, in->name, &c->graph,
                                  &c->diag);
  nnmem_onnx_config_t cfg;
  cli_onnx_config(&c->opts.onnx, c->opts.align, &cfg);
  c->is_onnx = 1;
  return nnmem_onnx_import(in->data, in->len, in->name, &cfg, &c->graph,
                           &c->onnx, &c->diag);
}

/* Step 2 for a file (or "-"): read with the size limit, decide the format
 * (extension checked against content), parse. */
static nnmem_status_t load_input(plan_ctx_t *c) {
  if (!c->opts.input) return load_model(c);
  cli_input_t in;
  nnmem_status_t st =
      cli_input_read(&in, c->opts.input, c->opts.max_input, &c->diag);
  if (st != NNMEM_OK) return st;
  if (c->opts.onnx.first && in.format != CLI_FMT_ONNX)
    st = nnmem__diag(&c->diag, NNMEM_ERR_INVALID,
                     "--%s applies to ONNX models only, and %s is not one",
                     c->opts.onnx.first, in.name);
  else if (c->opts.order_given && in.format == CLI_FMT_CSV)
    st = nnmem__diag(&c->diag, NNMEM_ERR_INVALID,
                     "--order applies to graphs (ONNX, JSON graph, built-in "
                     "models), and %s is a MiniMalloc problem: its lifetimes "
                     "are fixed",
                     in.name);
  else
    st = parse_input(c, &in);
  cli_input_free(&in);
  return st;
}

/* --order memory: the op order with the lowest peak of live bytes. */
static nnmem_status_t choose_order(plan_ctx_t *c) {
  size_t n = nnmem_graph_op_count(c->graph);
  c->order = malloc((n ? n : 1) * sizeof *c->order);
  c->kept_out = calloc(n ? n : 1, 1);
  if (!c->order || !c->kept_out)
    return nnmem__diag(&c->diag, NNMEM_ERR_NOMEM, "ordering: out of memory");
  nnmem_order_config_t oc;
  nnmem_order_config_init(&oc);
  oc.alignment = c->opts.align;
  oc.no_reuse = c->opts.no_reuse;
  oc.no_concat_into_output = c->opts.no_concat;
  oc.concat_ops_out = c->kept_out; /* nesting chosen per op, as the peak */
  nnmem_order_report_t rep;
  memset(&rep, 0, sizeof rep);
  rep.size = sizeof rep;
  double t0 = nnmem__now();
  nnmem_status_t st =
      nnmem_graph_order_memory(c->graph, &oc, c->order, &rep, &c->diag);
  if (st != NNMEM_OK) return st;
  cli_order_result_t *r = &c->order_res;
  r->done = 1;
  r->file_peak = rep.file_peak;
  r->peak = rep.peak;
  r->exact = rep.exact;
  r->parts = rep.parts;
  r->parts_exact = rep.parts_exact;
  r->largest_part = rep.largest_part;
  r->concat_kept_out = rep.concat_ops_off;
  r->seconds = nnmem__now() - t0;
  return NNMEM_OK;
}

/* Graph -> (order) -> liveness -> problem. */
static nnmem_status_t analyze(plan_ctx_t *c) {
  if (c->kind == IN_CSV) {
    c->problem = nnmem_csv_problem(c->csv);
    return NNMEM_OK;
  }
  if (c->opts.order == CLI_ORDER_MEMORY) {
    nnmem_status_t st = choose_order(c);
    if (st != NNMEM_OK) return st;
  }
  nnmem_liveness_config_t lc;
  nnmem_liveness_config_init(&lc);
  lc.no_reuse = c->opts.no_reuse;
  lc.no_concat_into_output = c->opts.no_concat;
  lc.alignment = c->opts.align;
  lc.order = c->order;
  lc.no_concat_ops = c->kept_out;
  nnmem_status_t st = nnmem_liveness_analyze(c->graph, &lc, &c->live, &c->diag);
  if (st == NNMEM_OK) c->problem = nnmem_liveness_problem(c->live);
  return st;
}

static nnmem_status_t make_plan(plan_ctx_t *c) {
  nnmem_planner_config_t pc;
  nnmem_planner_config_init(&pc);
  pc.strategy = c->opts.strategy;
  pc.alignment = c->opts.align;
  pc.no_reuse = c->opts.no_reuse;
  pc.capacity = c->opts.capacity;
  pc.time_limit_s = c->opts.time_limit_s;
  pc.optimal = c->opts.optimal;
  pc.node_budget = c->opts.node_budget;
  cli_search_ui_t ui;
  pc.stop = cli_search_begin(&ui, c->opts.quiet || c->opts.json);
  pc.progress = cli_search_progress;
  pc.progress_ctx = &ui;
  nnmem_status_t st = nnmem_plan_create(c->problem, &pc, &c->plan, &c->diag);
  c->interrupted = cli_search_end(&ui);
  if (st == NNMEM_ERR_CAPACITY && !c->diag.message[0])
    nnmem__diag(&c->diag, st, "does not fit: capacity %llu B (strategy %s)",
                (unsigned long long)c->opts.capacity,
                nnmem_strategy_name(c->opts.strategy));
  if (st != NNMEM_OK && st != NNMEM_ERR_CAPACITY && c->opts.input) {
    char msg[sizeof c->diag.message]; /* name the input in the message */
    snprintf(msg, sizeof msg, "%s",
             c->diag.message[0] ? c->diag.message : nnmem_status_str(st));
    nnmem__diag(&c->diag, st, "%s: %s", c->opts.input, msg);
  }
  return st;
}

/* Step 5: the produced plan must pass the independent verifier. */
static int verify_own_plan(plan_ctx_t *c) {
  nnmem_diag_t d = {{0}};
  nnmem_status_t st =
      nnmem_plan_verify(c->problem, nnmem_plan_offsets(c->plan), c->opts.align,
                        c->opts.capacity, NULL, &d);
  if (st == NNMEM_OK) return 0;
  fprintf(stderr,
          "nnmem: internal error: the %s plan failed verification: %s\n",
          nnmem_strategy_name(nnmem_plan_strategy(c->plan)),
          d.message[0] ? d.message : nnmem_status_str(st));
  return CLI_EXIT_INTERNAL;
}

/* The profile of a bare problem: everything is "activation" memory. */
static nnmem_status_t problem_profile(plan_ctx_t *c) {
  nnmem_profile_t *p = &c->run.prof;
  uint64_t lb = 0, total = 0, h = nnmem_plan_height(c->plan), step = 0;
  nnmem_status_t st = nnmem_problem_peak(c->problem, c->opts.align, &lb, &step);
  int saturated = 0; /* the naive total is informative: saturate it */
  if (st == NNMEM_OK && nnmem_problem_total_bytes(c->problem, c->opts.align,
                                                  &total) == NNMEM_ERR_OVERFLOW)
    total = UINT64_MAX, saturated = 1;
  if (st != NNMEM_OK)
    return nnmem__diag(&c->diag, st, "%s: %s while summing buffer sizes",
                       c->opts.input, nnmem_status_str(st));
  memset(p, 0, sizeof *p);
  p->size = sizeof *p;
  p->peak_memory = p->activation_memory = p->arena_height = h;
  if (nnmem_plan_bound(c->plan) > lb && nnmem_plan_bound(c->plan) <= h) {
    lb = nnmem_plan_bound(c->plan); /* proven by the planner */
    p->bound_kind = nnmem_plan_bound_kind(c->plan);
  }
  p->lower_bound = p->arena_lower_bound = lb;
  p->optimal = h <= lb;
  p->naive_memory = p->naive_arena = total;
  p->reuse_ratio = total ? 1.0 - (double)h / (double)total : 0.0;
  if (saturated) p->flags |= NNMEM_PROFILE_NAIVE_SATURATED;
  p->strategy = nnmem_plan_strategy(c->plan);
  p->buffers = p->tensors = nnmem_problem_count(c->problem);
  p->plan_seconds = nnmem_plan_seconds(c->plan);
  p->peak_step = step;
  cli_collect_live(c->problem, c->opts.align, p->peak_step, &c->run);
  return NNMEM_OK;
}

/* Weights + arena past 2^64 - 1 bytes: names the largest tensor. */
static nnmem_status_t profile_overflow(plan_ctx_t *c) {
  nnmem_tensor_info_t ti, big = {0};
  for (uint32_t t = 0; t < nnmem_graph_tensor_count(c->graph); t++)
    if (nnmem_graph_tensor(c->graph, t, &ti) == NNMEM_OK &&
        ti.bytes > big.bytes)
      big = ti;
  char name[128];
  return nnmem__diag(
      &c->diag, NNMEM_ERR_OVERFLOW,
      "%s: weights (%llu B) plus the arena (%llu B) exceed 2^64 - 1 bytes; "
      "the largest tensor is '%s' (%llu B)",
      c->opts.input ? c->opts.input : c->run.title,
      (unsigned long long)nnmem_liveness_weight_bytes(c->live),
      (unsigned long long)nnmem_plan_height(c->plan),
      cli_printable(big.name ? big.name : "?", name, sizeof name),
      (unsigned long long)big.bytes);
}

static nnmem_status_t make_profile(plan_ctx_t *c) {
  if (c->kind == IN_CSV) return problem_profile(c);
  nnmem_status_t st = nnmem_profile_compute(c->graph, c->live, c->plan,
                                            c->opts.align, &c->run.prof);
  if (st == NNMEM_ERR_OVERFLOW) return profile_overflow(c);
  if (st != NNMEM_OK)
    return nnmem__diag(&c->diag, st, "computing the memory profile: %s",
                       nnmem_status_str(st));
  cli_collect_live(c->problem, c->opts.align, c->run.prof.peak_step, &c->run);
  return NNMEM_OK;
}

/* The bytes of the --out file, as a new malloc'd string. */
static nnmem_status_t format_plan_file(plan_ctx_t *c, char **text,
                                       size_t *len) {
  const char *out = c->opts.out;
  const uint64_t *offs = nnmem_plan_offsets(c->plan);
  if (c->kind == IN_CSV) {
    if (has_ext(out, ".json"))
      return nnmem_problem_format_plan_json(c->problem, c->plan, c->opts.align,
                                            text, len, &c->diag);
    return nnmem_csv_format_solution(c->csv, offs, text, len, &c->diag);
  }
  if (has_ext(out, ".json"))
    return nnmem_plan_format_json(c->graph, c->live, c->plan, c->opts.align,
                                  text, len, &c->diag);
  return nnmem_problem_format_csv(c->problem, offs, text, len, &c->diag);
}

/* The bytes of the --profile file, as a new malloc'd string. */
static nnmem_status_t format_profile_file(plan_ctx_t *c, char **text) {
  const char *model = c->graph ? nnmem_graph_name(c->graph) : c->run.title;
  nnmem__text_t t;
  nnmem__jw_t w;
  cli_json_begin(&w, &t, CLI_JSON_PRETTY);
  nnmem__jw_object(&w);
  nnmem__profile_json_members(&w, &c->run.prof, model);
  /* the planned live bytes per step, for `nnmem diff` against a run */
  nnmem_status_t st = nnmem__profile_json_timeline(
      &w, c->problem, c->opts.align,
      c->live ? nnmem_liveness_weight_bytes(c->live) : 0);
  if (c->is_onnx) cli_onnx_json_add(&w, &c->onnx); /* the import report */
  nnmem__jw_end(&w);
  nnmem_status_t fst = nnmem__jw_finish(&w);
  if (st == NNMEM_OK) st = fst;
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    return nnmem__diag(&c->diag, st, "formatting the profile: %s",
                       nnmem_status_str(st));
  }
  *text = t.data;
  return NNMEM_OK;
}

/* Stages --svg, --html and --trace-json in `set`: every requested map is
 * formatted in memory first. */
static nnmem_status_t stage_maps(plan_ctx_t *c, nnmem__outset_t *set) {
  typedef nnmem_status_t (*render_fn)(
      const nnmem_problem_t *, const nnmem_plan_t *, const nnmem_graph_t *,
      const nnmem_liveness_t *, const nnmem_map_config_t *, char **);
  const char *paths[3] = {c->opts.svg, c->opts.html, c->opts.trace};
  const render_fn render[3] = {nnmem_map_svg, nnmem_map_html,
                               nnmem_map_trace_json};
  nnmem_map_config_t mc;
  nnmem_map_config_init(&mc);
  mc.title = c->graph ? nnmem_graph_name(c->graph) : c->run.title;
  if (!c->graph && strrchr(mc.title, '/')) /* a file's name, not its path */
    mc.title = strrchr(mc.title, '/') + 1;
  mc.alignment = c->opts.align;
  nnmem_status_t st = NNMEM_OK;
  for (int i = 0; i < 3 && st == NNMEM_OK; i++) {
    if (!paths[i]) continue;
    char *text = NULL;
    st = render[i](c->problem, c->plan, c->graph, c->live, &mc, &text);
    if (st != NNMEM_OK)
      nnmem__diag(&c->diag, st, "%s: formatting the map: %s", paths[i],
                  nnmem_status_str(st));
    else
      st = nnmem__outset_add_bytes(set, paths[i], text, strlen(text), &c->diag);
    free(text);
  }
  return st;
}

/* Stages --out, --profile and the maps in `set` (each formatted in memory
 * first). */
static nnmem_status_t stage_outputs(plan_ctx_t *c, nnmem__outset_t *set) {
  nnmem_status_t st = NNMEM_OK;
  char *text = NULL;
  size_t len = 0;
  if (c->opts.out) {
    st = format_plan_file(c, &text, &len);
    if (st == NNMEM_OK)
      st = nnmem__outset_add_bytes(set, c->opts.out, text, len, &c->diag);
    free(text);
    text = NULL;
  }
  if (st == NNMEM_OK && c->opts.profile) {
    st = format_profile_file(c, &text);
    if (st == NNMEM_OK)
      st = nnmem__outset_add_bytes(set, c->opts.profile, text, strlen(text),
                                   &c->diag);
    free(text);
  }
  if (st == NNMEM_OK) st = stage_maps(c, set);
  return st;
}

/* Step 7: every output file is replaced, or (on any failure) none is: the
 * outputs are staged as temporaries and renamed only when all succeeded. */
static nnmem_status_t write_outputs(plan_ctx_t *c) {
  if (!c->opts.out && !c->opts.profile && !c->opts.svg && !c->opts.html &&
      !c->opts.trace)
    return NNMEM_OK;
  nnmem__outset_t *set = NULL;
  nnmem_status_t st = nnmem__outset_create(&set);
  if (st != NNMEM_OK) return nnmem__diag(&c->diag, st, "out of memory");
  cli_outputs_guard(set);
  st = stage_outputs(c, set);
  if (st == NNMEM_OK) st = nnmem__outset_commit(set, &c->diag);
  nnmem__outset_destroy(set);
  cli_outputs_unguard();
  return st;
}

static void fill_run(plan_ctx_t *c) {
  cli_run_t *r = &c->run;
  r->builtin = c->kind == IN_MODEL;
  r->title = r->builtin ? (c->opts.model ? c->opts.model : CLI_DEFAULT_MODEL)
                        : c->opts.input;
  r->graph = c->graph;
  r->live = c->live;
  r->problem = c->problem;
  r->plan = c->plan;
  r->opts = &c->opts;
  r->interrupted = c->interrupted;
  r->order = c->order_res;
}

static void plan_ctx_free(plan_ctx_t *c) {
  nnmem_plan_destroy(c->plan);
  nnmem_liveness_destroy(c->live);
  nnmem_graph_destroy(c->graph);
  nnmem_csv_destroy(c->csv);
  free(c->json);
  free(c->order);
  free(c->kept_out);
}

/* The --json report as text in c->json (formatted before files are
 * written, printed after). */
static nnmem_status_t format_report_json(plan_ctx_t *c) {
  nnmem__text_t t;
  nnmem__jw_t w;
  cli_json_begin(&w, &t, c->opts.json);
  nnmem__jw_object(&w);
  cli_report_json(&w, &c->run);
  if (c->is_onnx) cli_onnx_json_add(&w, &c->onnx);
  nnmem__jw_end(&w);
  nnmem_status_t st = nnmem__jw_finish(&w);
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    return st;
  }
  c->json = t.data;
  return NNMEM_OK;
}

/* Steps 2-7; returns an exit code. */
static int run_pipeline(plan_ctx_t *c) {
  nnmem_status_t st = load_input(c);
  if (st == NNMEM_OK && c->opts.fit) { /* --mem-limit / --device */
    if (c->kind == IN_CSV) {
      fprintf(stderr,
              "nnmem: --mem-limit and --device fit graphs (ONNX, JSON "
              "graph, built-in models); %s is a MiniMalloc problem\n",
              c->opts.input);
      return CLI_EXIT_INVALID;
    }
    fill_run(c);
    c->fit_done = 1;
    return cli_fit_plan(c->graph, &c->opts, c->run.title);
  }
  if (st == NNMEM_OK) st = analyze(c);
  if (st == NNMEM_OK) st = make_plan(c);
  if (st != NNMEM_OK) return cli_fail(st, &c->diag);
  int e = verify_own_plan(c);
  if (e) return e;
  fill_run(c);
  st = make_profile(c);
  if (st != NNMEM_OK) return cli_fail(st, &c->diag);
  c->run.total_s = nnmem__now() - c->t0;
  if (c->opts.json) st = format_report_json(c);
  if (c->opts.json && st != NNMEM_OK) {
    fprintf(stderr, "nnmem: internal error: JSON report: %s\n",
            nnmem_status_str(st));
    return CLI_EXIT_INTERNAL;
  }
  st = write_outputs(c);
  if (st != NNMEM_OK) return cli_fail(st, &c->diag);
  return CLI_EXIT_OK;
}

int cli_cmd_plan(int argc, char **argv) {
  plan_ctx_t c;
  memset(&c, 0, sizeof c);
  int e = parse_plan_args(argc, argv, &c.opts);
  if (e >= 0) return e;
  if ((c.opts.shared_arena || c.opts.onnx.has_buckets) && c.opts.fit)
    return cli_usage_error(
        "plan",
        "--mem-limit and --device fit one model at one "
        "shape: not with %s",
        c.opts.shared_arena ? "--shared-arena" : "a --dim range or list");
  if (c.opts.shared_arena || c.opts.onnx.has_buckets)
    return cli_plan_multi(&c.opts);
  c.t0 = nnmem__now();
  e = run_pipeline(&c);
  if (c.fit_done)
    ;
  else if (e == CLI_EXIT_OK && c.json)
    fputs(c.json, stdout); /* ends in a newline */
  else if (e == CLI_EXIT_OK && !c.opts.quiet) {
    cli_report_human(stdout, &c.run);
    if (c.is_onnx) cli_onnx_summary(stdout, &c.onnx);
  }
  plan_ctx_free(&c);
  return e;
}

struct cli_planned {
  plan_ctx_t c;
  nnmem_onnx_dim_t dims[CLI_MAX_DIMS + 1];
};

int cli_plan_model(const cli_plan_opts_t *o, const char *input,
                   const nnmem_onnx_dim_t *extra, cli_planned_t **out) {
  cli_planned_t *p = calloc(1, sizeof *p);
  *out = NULL;
  if (!p) {
    fprintf(stderr, "nnmem: out of memory\n");
    return CLI_EXIT_INTERNAL;
  }
  plan_ctx_t *c = &p->c;
  c->opts = *o;
  c->opts.input = input;
  c->opts.out = c->opts.profile = c->opts.svg = NULL;
  c->opts.html = c->opts.trace = NULL;
  c->opts.json = CLI_JSON_OFF;
  if (extra && c->opts.onnx.n_dims == CLI_MAX_DIMS) {
    free(p);
    return cli_usage_error("plan",
                           "too many --dim options (at most %d with "
                           "a range)",
                           CLI_MAX_DIMS - 1);
  }
  if (extra) /* the bucket's binding after the user's own ones */
    c->opts.onnx.dims[c->opts.onnx.n_dims++] = *extra;
  c->t0 = nnmem__now();
  nnmem_status_t st = load_input(c);
  if (st == NNMEM_OK) st = analyze(c);
  if (st == NNMEM_OK) st = make_plan(c);
  int e = st != NNMEM_OK ? cli_fail(st, &c->diag) : verify_own_plan(c);
  if (!e) {
    fill_run(c);
    st = make_profile(c);
    if (st != NNMEM_OK) e = cli_fail(st, &c->diag);
  }
  c->run.total_s = nnmem__now() - c->t0;
  c->run.opts = &c->opts;
  if (e) {
    cli_planned_free(p);
    return e;
  }
  *out = p;
  return CLI_EXIT_OK;
}

const cli_run_t *cli_planned_run(const cli_planned_t *p) {
  return &p->c.run;
}

const nnmem_onnx_report_t *cli_planned_onnx(const cli_planned_t *p) {
  return p->c.is_onnx ? &p->c.onnx : NULL;
}

void cli_planned_free(cli_planned_t *p) {
  if (!p) return;
  plan_ctx_free(&p->c);
  free(p);
}

int cli_fail(nnmem_status_t status, const nnmem_diag_t *diag) {
  const char *msg =
      diag && diag->message[0] ? diag->message : nnmem_status_str(status);
  fprintf(stderr, "nnmem: %s\n", msg);
  if (status == NNMEM_ERR_CAPACITY) return CLI_EXIT_NOFIT;
  if (status == NNMEM_ERR_NOMEM) return CLI_EXIT_INTERNAL;
  return CLI_EXIT_INVALID;
}

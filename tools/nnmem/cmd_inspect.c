/* cmd_inspect.c - `nnmem inspect MODEL`: load an ONNX model (or a JSON
 * graph), run the liveness analysis and list every tensor: name, kind,
 * dtype, shape, bytes and lifetime [first, last) in schedule steps, as a
 * table or as JSON ({"model", "tensors": [{"name", "kind", "dtype",
 * "shape", "bytes", "upper_bound" (only when true: a data-dependent size),
 * "first", "last"}], "ops", "steps", "unresolved_tensors", "onnx"}).
 *
 * Steps: 1. options (errors -> exit 1); 2. import (ONNX options as for
 * `nnmem plan`); 3. liveness (lifetimes); 4. print.
 * Thread-safety: single-threaded. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args.h"
#include "cli.h"
#include "common/util.h"
#include "units.h"

enum {
  I_HELP,
  I_JSON,
  I_DIM,
  I_DTYPE,
  I_LAYOUT,
  I_STRICT,
  I_ALIGN,
  I_MAX_INPUT
};

static const cli_opt_t inspect_table[] = {{"help", 'h', 0, I_HELP},
                                          {"json", 0, CLI_OPT_INLINE, I_JSON},
                                          {"dim", 0, 1, I_DIM},
                                          {"dtype", 0, 1, I_DTYPE},
                                          {"layout", 0, 1, I_LAYOUT},
                                          {"strict", 0, 0, I_STRICT},
                                          {"align", 'a', 1, I_ALIGN},
                                          {"max-input-size", 0, 1, I_MAX_INPUT},
                                          {NULL, 0, 0, 0}};

typedef struct inspect_opts {
  const char *input;
  int json;
  uint64_t align;
  uint64_t max_input; /* --max-input-size; 0 = default */
  cli_onnx_opts_t onnx;
} inspect_opts_t;

static void print_inspect_help(void) {
  fputs(
      "Usage: nnmem inspect MODEL [options]\n"
      "\n"
      "Lists every tensor of MODEL (.onnx, or a .json graph) with its kind,\n"
      "dtype, shape, size and lifetime [first, last) in operator steps.\n"
      "\n"
      "Options:\n"
      "      --json[=compact]   print JSON instead of a table (pretty, or\n"
      "                         compact: no whitespace)\n"
      "      --dim NAME=VALUE   bind a symbolic dim (repeatable)\n"
      "      --dtype TYPE       size floating tensors as TYPE\n"
      "      --layout L         NCHW (default), NHWC or NC1HWC0\n"
      "      --strict           fail (exit 1) when a tensor cannot be sized\n"
      "  -a, --align SIZE       align every tensor to SIZE\n"
      "      --max-input-size SIZE  refuse larger models (default 2GiB)\n"
      "  -h, --help             show this help\n"
      "MODEL '-' is read from standard input (format from the content).\n",
      stdout);
}

static int set_inspect_option(void *opts, int id, const char *v) {
  inspect_opts_t *o = opts;
  switch (id) {
    case I_JSON:
      return cli_json_option("inspect", v, &o->json);
    case I_ALIGN:
      return cli_parse_align("inspect", v, &o->align);
    case I_MAX_INPUT:
      return cli_parse_max_input("inspect", v, &o->max_input);
    case I_DIM:
      if (cli_onnx_option("inspect", &o->onnx, "dim", v)) return 1;
      if (o->onnx.has_buckets) /* a plan per bucket: a `plan` matter */
        return cli_usage_error("inspect",
                               "--dim '%s': ranges and lists are for `nnmem "
                               "plan` (a plan per bucket); inspect takes "
                               "NAME=VALUE",
                               v);
      return 0;
    case I_DTYPE:
      return cli_onnx_option("inspect", &o->onnx, "dtype", v);
    case I_LAYOUT:
      return cli_onnx_option("inspect", &o->onnx, "layout", v);
    default:
      return cli_onnx_option("inspect", &o->onnx, "strict", v);
  }
}

/* Returns -1 to continue, else the exit code. */
static int parse_inspect_args(int argc, char **argv, inspect_opts_t *o) {
  memset(o, 0, sizeof *o);
  cli_parse_t p = {"inspect",
                   inspect_table,
                   I_HELP,
                   print_inspect_help,
                   set_inspect_option,
                   o,
                   {&o->input, NULL},
                   NULL,
                   0,
                   NULL};
  int e = cli_args_parse(&p, argc, argv);
  if (e >= 0) return e;
  if (!o->input) return cli_usage_error("inspect", "missing MODEL");
  size_t n = strlen(o->input);
  if (n > 4 && strcasecmp(o->input + n - 4, ".csv") == 0)
    return cli_usage_error("inspect",
                           "'%s' is a MiniMalloc problem, not a model (it "
                           "has no tensors; try nnmem plan)",
                           o->input);
  if (o->onnx.first && cli_format_of_name(o->input) != CLI_FMT_ONNX &&
      cli_format_of_name(o->input) != CLI_FMT_UNKNOWN)
    return cli_usage_error(
        "inspect", "--%s applies to ONNX models (.onnx) only", o->onnx.first);
  return -1;
}

static void fmt_shape(const nnmem_tensor_info_t *t, char *buf, size_t cap) {
  size_t at = 0;
  at += (size_t)snprintf(buf + at, cap - at, "[");
  for (uint32_t i = 0; i < t->rank && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? "," : "",
                           (long long)t->shape[i]);
  if (at < cap) snprintf(buf + at, cap - at, "]");
}

static void print_table(const nnmem_graph_t *g, const nnmem_liveness_t *l) {
  size_t n = nnmem_graph_tensor_count(g);
  printf("%-40s %-10s %-8s %-24s %14s  %s\n", "tensor", "kind", "dtype",
         "shape", "bytes", "lifetime");
  for (uint32_t i = 0; i < n; i++) {
    nnmem_tensor_info_t t;
    nnmem_tensor_live_t lv;
    char shape[160], life[64], name[1024];
    if (nnmem_graph_tensor(g, i, &t) != NNMEM_OK) continue;
    fmt_shape(&t, shape, sizeof shape);
    if (nnmem_liveness_tensor(l, i, &lv) == NNMEM_OK &&
        lv.buffer != NNMEM_NO_BUFFER)
      snprintf(life, sizeof life, "[%llu,%llu)", (unsigned long long)lv.first,
               (unsigned long long)lv.last);
    else
      snprintf(life, sizeof life, "weights");
    printf("%-40s %-10s %-8s %-24s %14llu  %s\n",
           cli_printable(t.name, name, sizeof name),
           nnmem_tensor_kind_name(t.kind), nnmem_dtype_name(t.dtype), shape,
           (unsigned long long)t.bytes, life);
  }
}

static void tensor_json(nnmem__jw_t *w, const nnmem_graph_t *g,
                        const nnmem_liveness_t *l, uint32_t i) {
  nnmem_tensor_info_t t;
  nnmem_tensor_live_t lv;
  if (nnmem_graph_tensor(g, i, &t) != NNMEM_OK) return;
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "name", t.name);
  nnmem__jw_kv_string(w, "kind", nnmem_tensor_kind_name(t.kind));
  nnmem__jw_kv_string(w, "dtype", nnmem_dtype_name(t.dtype));
  nnmem__jw_key(w, "shape");
  nnmem__jw_array(w);
  for (uint32_t k = 0; k < t.rank; k++)
    nnmem__jw_i64(w, t.shape[k]);
  nnmem__jw_end(w);
  nnmem__jw_kv_u64(w, "bytes", t.bytes);
  if (nnmem_graph_tensor_size_is_upper_bound(g, i))
    nnmem__jw_kv_bool(w, "upper_bound", 1); /* data-dependent: at most */
  if (nnmem_liveness_tensor(l, i, &lv) == NNMEM_OK) {
    nnmem__jw_kv_u64(w, "first", lv.first);
    nnmem__jw_kv_u64(w, "last", lv.last);
  }
  nnmem__jw_end(w);
}

static int print_json(const inspect_opts_t *o, int is_onnx,
                      const nnmem_graph_t *g, const nnmem_liveness_t *l,
                      const nnmem_onnx_report_t *rep) {
  nnmem__text_t t;
  nnmem__jw_t w;
  cli_json_begin(&w, &t, o->json);
  nnmem__jw_object(&w);
  nnmem__jw_kv_string(&w, "model", nnmem_graph_name(g));
  nnmem__jw_kv_u64(&w, "ops", nnmem_graph_op_count(g));
  nnmem__jw_kv_u64(&w, "steps", nnmem_liveness_steps(l));
  nnmem__jw_kv_u64(&w, "weight_bytes", nnmem_liveness_weight_bytes(l));
  nnmem__jw_key(&w, "tensors");
  nnmem__jw_array(&w);
  for (uint32_t i = 0; i < nnmem_graph_tensor_count(g); i++)
    tensor_json(&w, g, l, i);
  nnmem__jw_end(&w);
  if (is_onnx) cli_onnx_json_add(&w, rep);
  nnmem__jw_end(&w);
  return cli_json_print(&w, &t);
}

/* Reads MODEL ("-": stdin) under the size limit and imports it as the
 * ONNX model or JSON graph its extension and content say. */
static nnmem_status_t load_model(const inspect_opts_t *o, nnmem_graph_t **g,
                                 nnmem_onnx_report_t *rep, int *is_onnx,
                                 nnmem_diag_t *diag) {
  cli_input_t in;
  nnmem_status_t st = cli_input_read(&in, o->input, o->max_input, diag);
  if (st != NNMEM_OK) return st;
  *is_onnx = in.format == CLI_FMT_ONNX;
  if (in.format == CLI_FMT_CSV) {
    st = nnmem__diag(diag, NNMEM_ERR_INVALID,
                     "%s is a MiniMalloc problem, not a model (it has no "
                     "tensors; try nnmem plan)",
                     in.name);
  } else if (o->onnx.first && !*is_onnx) {
    st = nnmem__diag(diag, NNMEM_ERR_INVALID,
                     "--%s applies to ONNX models only, and %s is not one",
                     o->onnx.first, in.name);
  } else if (*is_onnx) {
    nnmem_onnx_config_t cfg;
    cli_onnx_config(&o->onnx, o->align, &cfg);
    st = nnmem_onnx_import(in.data, in.len, in.name, &cfg, g, rep, diag);
  } else {
    st = nnmem_graph_parse_json(in.data, in.len, in.name, g, diag);
  }
  cli_input_free(&in);
  return st;
}

int cli_cmd_inspect(int argc, char **argv) {
  inspect_opts_t o;
  int e = parse_inspect_args(argc, argv, &o);
  if (e >= 0) return e;
  nnmem_graph_t *g = NULL;
  nnmem_liveness_t *l = NULL;
  nnmem_onnx_report_t rep;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st;
  memset(&rep, 0, sizeof rep);
  int is_onnx = 0;
  st = load_model(&o, &g, &rep, &is_onnx, &diag);
  if (st == NNMEM_OK) {
    nnmem_liveness_config_t lc;
    nnmem_liveness_config_init(&lc);
    lc.alignment = o.align;
    st = nnmem_liveness_analyze(g, &lc, &l, &diag);
  }
  if (st != NNMEM_OK) {
    e = cli_fail(st, &diag);
  } else if (o.json) {
    e = print_json(&o, is_onnx, g, l, &rep);
  } else {
    print_table(g, l);
    if (is_onnx) {
      printf("\n");
      cli_onnx_summary(stdout, &rep);
    }
    e = CLI_EXIT_OK;
  }
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
  return e;
}

/* cmd_verify.c - `nnmem verify`: an independent check of any plan, whoever
 * produced it, against the problem it claims to solve.
 *
 * Forms:
 *   verify PROBLEM.csv               offsets from the file's `offset` column
 *   verify PROBLEM.csv PLAN.csv      a solution CSV matched by buffer id
 *   verify PROBLEM PLAN.json         a plan JSON (`nnmem plan --out x.json`)
 *                                    matched by buffer id; PROBLEM is a
 *                                    MiniMalloc CSV, a graph (.json) or an
 *                                    ONNX model (.onnx; --dim/--dtype/--layout
 *                                    as given to `nnmem plan`)
 *   verify MODEL PLAN.csv            a graph's CSV plan (id,...,offset)
 *   verify MODEL... DOC.json         a multi-plan document (shared arena or
 *                                    shape buckets; see "multi-plan
 *                                    documents" below)
 *
 * Steps:
 *   1. options; a graph or model PROBLEM needs a PLAN;
 *   2. the problem: the CSV's buffers, or the graph's liveness analysis in
 *      the operator order a JSON plan lists ("order"; file order without)
 *      (buffers named like the plan writer names them: by id, or by index
 *      when a buffer has none), with --align, which for a JSON plan defaults
 *      to its "alignment", and --no-reuse;
 *   3. the offsets: the CSV's own column, or the PLAN's buffers matched by
 *      id: every problem buffer must appear exactly once and the plan may
 *      list no other; a JSON plan's sizes and lifetimes must agree with the
 *      problem (a different --align or --dim shows up here). Each mismatch
 *      names the buffer(s);
 *   4. nnmem_plan_verify with --align and --capacity (the problem's sizes,
 *      alignments and lifetimes are the ones checked);
 *   5. print the verdict (text, or --json) and exit: 0 valid, 4 invalid
 *      plan (a conflicting pair, a misaligned or overflowing offset), 2
 *      height over --capacity, 1 bad usage or bad input, 3 internal.
 * Complexity: O(n log n) (the verifier's sweep; id lookups O(1) average).
 * Thread-safety: single-threaded. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "args.h"
#include "cli.h"
#include "common/util.h"
#include "units.h"

enum {
  VOPT_HELP,
  VOPT_ALIGN,
  VOPT_CAPACITY,
  VOPT_QUIET,
  VOPT_JSON,
  VOPT_DIM,
  VOPT_DTYPE,
  VOPT_LAYOUT,
  VOPT_STRICT,
  VOPT_NO_REUSE,
  VOPT_NO_CONCAT,
  VOPT_MAX_INPUT
};

static const cli_opt_t verify_table[] = {
    {"help", 'h', 0, VOPT_HELP},
    {"align", 'a', 1, VOPT_ALIGN},
    {"capacity", 'c', 1, VOPT_CAPACITY},
    {"quiet", 'q', 0, VOPT_QUIET},
    {"json", 0, CLI_OPT_INLINE, VOPT_JSON},
    {"dim", 0, 1, VOPT_DIM},
    {"dtype", 0, 1, VOPT_DTYPE},
    {"layout", 0, 1, VOPT_LAYOUT},
    {"strict", 0, 0, VOPT_STRICT},
    {"no-reuse", 0, 0, VOPT_NO_REUSE},
    {"no-concat-into-output", 0, 0, VOPT_NO_CONCAT},
    {"max-input-size", 0, 1, VOPT_MAX_INPUT},
    {NULL, 0, 0, 0}};

typedef struct verify_opts {
  const char *problem_path;
  const char *solution_path; /* NULL: offsets come from problem_path */
  uint64_t align;
  int align_given;
  uint64_t capacity;
  int quiet;
  int json; /* CLI_JSON_* */
  int no_reuse;
  int no_concat;
  uint64_t max_input; /* --max-input-size; 0 = default */
  cli_onnx_opts_t onnx;
  /* a multi-plan document: the models before it (problem_path, then
     these), the document is solution_path */
  const char *rest[CLI_MAX_MODELS];
  size_t n_rest;
  const char *models[CLI_MAX_MODELS + 1];
  size_t n_models;
} verify_opts_t;

/* What is checked: the problem, its offsets, and what owns them. */
typedef struct verify_ctx {
  verify_opts_t o;
  cli_input_t in;         /* PROBLEM as read ("-": stdin) */
  cli_input_t plan_in;    /* PLAN as read, when given */
  nnmem_csv_t *csv;       /* a CSV PROBLEM */
  nnmem_graph_t *graph;   /* a graph or model PROBLEM */
  nnmem_liveness_t *live; /* its liveness analysis */
  const nnmem_problem_t *p;
  uint64_t *offs;
  nnmem_diag_t d;
  const nnmem_multi_plan_t *multi; /* checking plan mi of a document */
  size_t mi;
} verify_ctx_t;

static void print_verify_help(void) {
  fputs(
      "Usage: nnmem verify PROBLEM [PLAN] [options]\n"
      "       nnmem verify MODEL... DOC.json [options]\n"
      "\n"
      "Checks a plan with the independent verifier: buffers whose lifetimes\n"
      "[first, last) intersect must not share bytes, every offset must be a\n"
      "multiple of the buffer's alignment (and --align), and the height must\n"
      "not exceed --capacity. A buffer's gaps hold nothing; a sub-buffer\n"
      "(parent column, Concat input) must sit exactly at its parent's offset\n"
      "plus its relative offset, while the parent is live.\n"
      "\n"
      "PROBLEM is a MiniMalloc problem (.csv), a graph (.json) or an ONNX\n"
      "model (.onnx). PLAN is what `nnmem plan --out` wrote: a plan JSON\n"
      "(.json) or CSV (.csv), matched to PROBLEM by buffer id (every buffer\n"
      "exactly once; missing, extra and repeated ones are named). Without\n"
      "PLAN, PROBLEM.csv's own `offset` column is checked. For a graph or\n"
      "model, give the options you gave `nnmem plan` (--dim, --dtype,\n"
      "--layout, --no-reuse; --align defaults to the plan JSON's\n"
      "alignment). Either input may be '-' (standard input; the format\n"
      "comes from the content).\n"
      "\n"
      "DOC.json from `nnmem plan A B --shared-arena --out` is checked with\n"
      "the models A B in the document's order; from `nnmem plan M --dim\n"
      "NAME=LO..HI --out` with the one model M (each bucket with NAME bound\n"
      "to its value). Every plan is verified as above, then the arena: each\n"
      "plan within arena_bytes at an aligned base, --concurrent plans\n"
      "disjoint; --capacity bounds the arena.\n"
      "\n"
      "Options:\n"
      "  -a, --align SIZE      required alignment of every offset\n"
      "  -c, --capacity SIZE   maximum height (K/M/G = 1024^n, KB/MB/GB = "
      "1000^n)\n"
      "      --max-input-size SIZE  refuse larger inputs (default 2GiB)\n"
      "      --json[=compact]  print the verdict as JSON: valid, height,\n"
      "                        lower_bound, ratio, the violation and its\n"
      "                        buffers\n"
      "      --dim NAME=VALUE, --dtype TYPE, --layout L, --strict\n"
      "                        ONNX import options, as for nnmem plan\n"
      "      --no-reuse        the graph's buffers without views or in-place\n"
      "                        sharing, as for nnmem plan --no-reuse\n"
      "      --no-concat-into-output  as for nnmem plan\n"
      "  -q, --quiet           print nothing; only the exit code tells\n"
      "  -h, --help            show this help\n"
      "\n"
      "Exit codes: 0 valid; 1 bad usage or bad input (unreadable files,\n"
      "buffers that do not match); 2 height over --capacity; 3 internal\n"
      "error; 4 invalid plan (overlapping buffers, a misaligned or\n"
      "overflowing offset).\n",
      stdout);
}

static int set_verify_option(void *opts, int id, const char *v) {
  verify_opts_t *o = opts;
  switch (id) {
    case VOPT_ALIGN:
      o->align_given = 1;
      return cli_parse_align("verify", v, &o->align);
    case VOPT_CAPACITY:
      return cli_parse_capacity("verify", v, &o->capacity);
    case VOPT_QUIET:
      o->quiet = 1;
      return 0;
    case VOPT_MAX_INPUT:
      return cli_parse_max_input("verify", v, &o->max_input);
    case VOPT_NO_CONCAT:
      o->no_concat = 1;
      return 0;
    case VOPT_NO_REUSE:
      o->no_reuse = 1;
      return 0;
    case VOPT_JSON:
      return cli_json_option("verify", v, &o->json);
    case VOPT_DIM:
      return cli_onnx_option("verify", &o->onnx, "dim", v);
    case VOPT_DTYPE:
      return cli_onnx_option("verify", &o->onnx, "dtype", v);
    case VOPT_LAYOUT:
      return cli_onnx_option("verify", &o->onnx, "layout", v);
    case VOPT_STRICT:
      return cli_onnx_option("verify", &o->onnx, "strict", v);
  }
  return 0;
}

/* Returns -1 to continue, else the exit code. */
static int parse_verify_args(int argc, char **argv, verify_opts_t *o) {
  memset(o, 0, sizeof *o);
  cli_parse_t p = {"verify",
                   verify_table,
                   VOPT_HELP,
                   print_verify_help,
                   set_verify_option,
                   o,
                   {&o->problem_path, &o->solution_path, NULL},
                   o->rest,
                   CLI_MAX_MODELS - 1,
                   &o->n_rest};
  int e = cli_args_parse(&p, argc, argv);
  if (e >= 0) return e;
  if (!o->problem_path) return cli_usage_error("verify", "missing PROBLEM");
  /* MODEL... DOC.json: the last argument is the plan (document) */
  o->models[o->n_models++] = o->problem_path;
  if (o->n_rest) {
    o->models[o->n_models++] = o->solution_path;
    for (size_t i = 0; i + 1 < o->n_rest; i++)
      o->models[o->n_models++] = o->rest[i];
    o->solution_path = o->rest[o->n_rest - 1];
  }
  if (o->json && o->quiet)
    return cli_usage_error("verify", "--json and --quiet do not combine");
  size_t stdin_uses = o->solution_path && !strcmp(o->solution_path, "-");
  for (size_t i = 0; i < o->n_models; i++)
    stdin_uses += strcmp(o->models[i], "-") == 0;
  if (stdin_uses > 1)
    return cli_usage_error("verify", "only one input can be '-' (stdin)");
  if (o->solution_path && strcmp(o->solution_path, "-") != 0 &&
      cli_format_of_name(o->solution_path) != CLI_FMT_JSON &&
      cli_format_of_name(o->solution_path) != CLI_FMT_CSV)
    return cli_usage_error("verify", "PLAN '%s' must end in .json or .csv",
                           o->solution_path);
  return -1;
}

/* Step 1b: read PROBLEM and PLAN (size limit, "-" = stdin) and check that
 * their formats fit together. Returns -1 to go on, else the exit code. */
static int read_inputs(verify_ctx_t *c) {
  const verify_opts_t *o = &c->o;
  nnmem_status_t st =
      cli_input_read(&c->in, o->problem_path, o->max_input, &c->d);
  if (st == NNMEM_OK && o->solution_path)
    st = cli_input_read(&c->plan_in, o->solution_path, o->max_input, &c->d);
  if (st != NNMEM_OK) return cli_fail(st, &c->d);
  int csv = c->in.format == CLI_FMT_CSV;
  if (!csv && !o->solution_path)
    return cli_usage_error("verify",
                           "'%s' is not a MiniMalloc CSV: give the plan to "
                           "check as a second argument",
                           c->in.name);
  if (o->solution_path && c->plan_in.format != CLI_FMT_JSON &&
      c->plan_in.format != CLI_FMT_CSV)
    return cli_usage_error("verify", "PLAN '%s' must be a .json or .csv plan",
                           c->plan_in.name);
  if (o->no_reuse && csv)
    return cli_usage_error("verify",
                           "--no-reuse applies to graphs and models, not to "
                           "a MiniMalloc CSV");
  if (o->onnx.first && c->in.format != CLI_FMT_ONNX)
    return cli_usage_error("verify", "--%s applies to ONNX models (.onnx) only",
                           o->onnx.first);
  return -1;
}

/* The "alignment" of a plan JSON (1 when absent or unreadable: the reader
 * reports real problems later). A small value, so cJSON's double is exact. */
static uint64_t plan_json_alignment(const cli_input_t *in) {
  uint64_t a = 1;
  cJSON *j = cJSON_ParseWithLength(in->data, in->len);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "alignment");
  if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= 1 << 30 &&
      nnmem__is_pow2((uint64_t)v->valuedouble))
    a = (uint64_t)v->valuedouble;
  cJSON_Delete(j);
  return a;
}

/* Step 2: the problem. */
static nnmem_status_t load_problem(verify_ctx_t *c) {
  const cli_input_t *in = &c->in;
  nnmem_status_t st;
  if (in->format == CLI_FMT_CSV) {
    st = nnmem_csv_parse(in->data, in->len, in->name, &c->csv, &c->d);
    if (st == NNMEM_OK) c->p = nnmem_csv_problem(c->csv);
    return st;
  }
  if (in->format == CLI_FMT_ONNX) {
    nnmem_onnx_config_t cfg;
    nnmem_onnx_report_t rep;
    memset(&rep, 0, sizeof rep);
    cli_onnx_config(&c->o.onnx, c->o.align, &cfg);
    st = nnmem_onnx_import(in->data, in->len, in->name, &cfg, &c->graph, &rep,
                           &c->d);
  } else {
    st = nnmem_graph_parse_json(in->data, in->len, in->name, &c->graph, &c->d);
  }
  if (st != NNMEM_OK) return st;
  uint32_t *order = NULL; /* a JSON plan's "order" (absent: file order) */
  uint8_t *kept = NULL;   /* its "concat_kept_out" (absent: none) */
  if (c->multi) {
    st = nnmem_multi_plan_order(c->multi, c->mi, c->graph, &order, &c->d);
    if (st == NNMEM_OK)
      st = nnmem_multi_plan_concat_kept_out(c->multi, c->mi, c->graph, &kept,
                                            &c->d);
  } else if (c->plan_in.format == CLI_FMT_JSON)
    st = nnmem_plan_read_json_order(c->plan_in.data, c->plan_in.len,
                                    c->plan_in.name, c->graph, &order, &c->d);
  if (st == NNMEM_OK && c->plan_in.format == CLI_FMT_JSON)
    st = nnmem_plan_read_json_concat_kept_out(c->plan_in.data, c->plan_in.len,
                                              c->plan_in.name, c->graph, &kept,
                                              &c->d);
  if (st != NNMEM_OK) {
    free(order);
    return st;
  }
  nnmem_liveness_config_t lc;
  nnmem_liveness_config_init(&lc);
  lc.alignment = c->o.align;
  lc.no_reuse = c->o.no_reuse;
  lc.no_concat_into_output = c->o.no_concat;
  lc.order = order;
  lc.no_concat_ops = kept;
  st = nnmem_liveness_analyze(c->graph, &lc, &c->live, &c->d);
  free(order);
  free(kept);
  if (st == NNMEM_OK) c->p = nnmem_liveness_problem(c->live);
  return st;
}

/* The id under which a plan lists problem buffer i (the plan writers'
 * rule: its id, else its index). */
static const char *problem_key(const nnmem_problem_t *p, size_t i, char *buf,
                               size_t cap) {
  const char *id = nnmem_problem_id(p, i);
  if (id) return id;
  snprintf(buf, cap, "%zu", i);
  return buf;
}

/* Step 3: offs[i] = the plan's offset of problem buffer i. `sizes` (NULL
 * for a CSV solution) asks for sizes and lifetimes to be compared. */
static nnmem_status_t match_plan(verify_ctx_t *c, const nnmem_problem_t *s,
                                 const uint64_t *so, int compare) {
  const nnmem_problem_t *p = c->p;
  const char *pp = c->o.problem_path, *sp = c->o.solution_path;
  size_t np = nnmem_problem_count(p), ns = nnmem_problem_count(s);
  const nnmem_buffer_t *pb = nnmem_problem_buffers(p);
  const nnmem_buffer_t *sb = nnmem_problem_buffers(s);
  char key[32], b1[64];
  for (size_t i = 0; i < np; i++) {
    size_t j = 0;
    const char *id = problem_key(p, i, key, sizeof key);
    if (nnmem_problem_find(s, id, &j) != NNMEM_OK)
      return nnmem__diag(&c->d, NNMEM_ERR_NOT_FOUND,
                         "%s: no buffer '%s' (a buffer of %s; %zu listed, "
                         "%zu expected)",
                         sp, cli_printable(id, b1, sizeof b1), pp, ns, np);
    if (compare && (sb[j].size != pb[i].size || sb[j].first != pb[i].first ||
                    sb[j].last != pb[i].last))
      return nnmem__diag(
          &c->d, NNMEM_ERR_INVALID,
          "%s: buffer '%s' is %llu B on [%llu,%llu) but %s says %llu B on "
          "[%llu,%llu) (planned with other options: --align, --dim, "
          "--no-reuse?)",
          sp, cli_printable(id, b1, sizeof b1), (unsigned long long)sb[j].size,
          (unsigned long long)sb[j].first, (unsigned long long)sb[j].last, pp,
          (unsigned long long)pb[i].size, (unsigned long long)pb[i].first,
          (unsigned long long)pb[i].last);
    c->offs[i] = so[j];
  }
  if (ns != np) { /* all problem buffers found: the plan lists others too */
    for (size_t j = 0; j < ns; j++) {
      size_t i = 0;
      const char *id = nnmem_problem_id(s, j);
      if (id && nnmem_problem_find(p, id, &i) == NNMEM_OK) continue;
      if (!id && j < np && !nnmem_problem_id(p, j)) continue;
      return nnmem__diag(&c->d, NNMEM_ERR_INVALID,
                         "%s: buffer '%s' is not a buffer of %s (%zu listed, "
                         "%zu expected)",
                         sp, id ? cli_printable(id, b1, sizeof b1) : "?", pp,
                         ns, np);
    }
    return nnmem__diag(&c->d, NNMEM_ERR_INVALID,
                       "%s lists %zu buffers but %s has %zu", sp, ns, pp, np);
  }
  return NNMEM_OK;
}

/* Step 3: the offsets to check. */
static nnmem_status_t load_offsets(verify_ctx_t *c) {
  size_t n = nnmem_problem_count(c->p);
  const char *sp = c->o.solution_path;
  if (!sp && !nnmem_csv_offsets(c->csv))
    return nnmem__diag(&c->d, NNMEM_ERR_PARSE,
                       "%s: no 'offset' column (give the plan file as a "
                       "second argument)",
                       c->o.problem_path);
  c->offs = calloc(n ? n : 1, sizeof *c->offs);
  if (!c->offs) return NNMEM_ERR_NOMEM;
  if (!sp) {
    if (n) memcpy(c->offs, nnmem_csv_offsets(c->csv), n * sizeof *c->offs);
    return NNMEM_OK;
  }
  nnmem_status_t st;
  const cli_input_t *pin = &c->plan_in;
  if (c->multi) {
    nnmem_multi_plan_entry_t e;
    st = nnmem_multi_plan_entry(c->multi, c->mi, &e);
    return st == NNMEM_OK ? match_plan(c, e.problem, e.offsets, 1) : st;
  }
  if (pin->format == CLI_FMT_JSON) {
    nnmem_problem_t *s = NULL;
    uint64_t *so = NULL;
    st = nnmem_plan_read_json(pin->data, pin->len, pin->name, &s, &so, &c->d);
    if (st == NNMEM_OK) st = match_plan(c, s, so, 1);
    nnmem_problem_destroy(s);
    free(so);
    return st;
  }
  nnmem_csv_t *scsv = NULL;
  st = nnmem_csv_parse(pin->data, pin->len, pin->name, &scsv, &c->d);
  if (st == NNMEM_OK && !nnmem_csv_offsets(scsv))
    st = nnmem__diag(&c->d, NNMEM_ERR_PARSE, "%s: no 'offset' column",
                     pin->name);
  if (st == NNMEM_OK)
    st = match_plan(c, nnmem_csv_problem(scsv), nnmem_csv_offsets(scsv), 0);
  nnmem_csv_destroy(scsv);
  return st;
}

/* ---- the verdict ----------------------------------------------------------
 */

static void describe(const nnmem_problem_t *p, const uint64_t *offs, size_t i,
                     char *buf, size_t cap) {
  const nnmem_buffer_t *b = &nnmem_problem_buffers(p)[i];
  char nb[32];
  snprintf(buf, cap, "'%s' [%llu,%llu) @ [%llu,%llu)",
           cli_buffer_name(p, i, nb, sizeof nb), (unsigned long long)b->first,
           (unsigned long long)b->last, (unsigned long long)offs[i],
           (unsigned long long)(offs[i] + b->size));
}

/* The exit code of a verdict. */
static int verdict_code(const nnmem_verify_report_t *r) {
  if (r->valid) return CLI_EXIT_OK;
  if (r->has_conflict || r->overflow || r->misaligned || r->bad_child)
    return CLI_EXIT_PLAN_INVALID;
  return r->over_capacity ? CLI_EXIT_NOFIT : CLI_EXIT_PLAN_INVALID;
}

static void print_text(const verify_ctx_t *c, const nnmem_verify_report_t *r,
                       uint64_t lb) {
  char a[640], b[640], nb[32];
  const nnmem_problem_t *p = c->p;
  const uint64_t *offs = c->offs;
  const nnmem_buffer_t *bufs = nnmem_problem_buffers(p);
  if (r->valid) {
    printf("valid: height %llu (lower bound %llu, ratio %s)\n",
           (unsigned long long)r->height, (unsigned long long)lb,
           cli_fmt_ratio(r->height, lb, b, sizeof b));
  } else if (r->has_conflict) {
    describe(p, offs, r->conflict_a, a, sizeof a);
    describe(p, offs, r->conflict_b, b, sizeof b);
    printf("conflict: buffers %s and %s overlap\n", a, b);
  } else if (r->overflow) {
    size_t i = r->overflow_index;
    printf("overflow: buffer '%s' offset %llu + size %llu exceeds 64 bits\n",
           cli_buffer_name(p, i, nb, sizeof nb), (unsigned long long)offs[i],
           (unsigned long long)bufs[i].size);
  } else if (r->misaligned) {
    size_t i = r->misaligned_index;
    printf("misaligned: buffer '%s' offset %llu is not a multiple of %llu\n",
           cli_buffer_name(p, i, nb, sizeof nb), (unsigned long long)offs[i],
           (unsigned long long)nnmem__max_u64(bufs[i].align, c->o.align));
  } else if (r->bad_child) {
    size_t i = r->bad_child_index, q = 0;
    (void)nnmem_problem_parent(p, i, &q, NULL);
    describe(p, offs, i, a, sizeof a);
    describe(p, offs, q, b, sizeof b);
    printf("sub-buffer: %s is not where its parent %s puts it (%s)\n", a, b,
           c->d.message);
  } else if (r->over_capacity) {
    printf("over capacity: height %llu > capacity %llu\n",
           (unsigned long long)r->height, (unsigned long long)c->o.capacity);
  }
}

static void json_buffer(nnmem__jw_t *w, const verify_ctx_t *c, size_t i) {
  const nnmem_buffer_t *b = &nnmem_problem_buffers(c->p)[i];
  char key[32];
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "id", problem_key(c->p, i, key, sizeof key));
  nnmem__jw_kv_u64(w, "offset", c->offs[i]);
  nnmem__jw_kv_u64(w, "size", b->size);
  nnmem__jw_kv_u64(w, "first", b->first);
  nnmem__jw_kv_u64(w, "last", b->last);
  nnmem__jw_kv_u64(w, "align", nnmem__max_u64(b->align, c->o.align));
  nnmem__jw_end(w);
}

/* The first violation a verify report names, for --json; NULL: valid. */
static const char *violation_name(const nnmem_verify_report_t *r) {
  return r->valid           ? NULL
         : r->has_conflict  ? "conflict"
         : r->overflow      ? "overflow"
         : r->misaligned    ? "misaligned"
         : r->bad_child     ? "sub_buffer"
         : r->over_capacity ? "over_capacity"
                            : "invalid";
}

static int print_json(const verify_ctx_t *c, const nnmem_verify_report_t *r,
                      uint64_t lb) {
  nnmem__text_t t;
  nnmem__jw_t w;
  cli_json_begin(&w, &t, c->o.json);
  nnmem__jw_object(&w);
  nnmem__jw_kv_bool(&w, "valid", r->valid);
  nnmem__jw_kv_string(&w, "problem", c->o.problem_path);
  nnmem__jw_kv_string(&w, "plan", c->o.solution_path);
  nnmem__jw_kv_u64(&w, "buffers", nnmem_problem_count(c->p));
  nnmem__jw_kv_u64(&w, "alignment", c->o.align ? c->o.align : 1);
  nnmem__jw_kv_u64(&w, "capacity", c->o.capacity);
  nnmem__jw_kv_u64(&w, "height", r->height);
  nnmem__jw_kv_u64(&w, "lower_bound", lb);
  nnmem__jw_kv_double(&w, "ratio", lb ? (double)r->height / (double)lb : 1.0);
  nnmem__jw_kv_string(&w, "violation", violation_name(r));
  if (r->has_conflict) {
    nnmem__jw_key(&w, "conflict");
    nnmem__jw_array(&w);
    json_buffer(&w, c, r->conflict_a);
    json_buffer(&w, c, r->conflict_b);
    nnmem__jw_end(&w);
  } else if (!r->valid && (r->overflow || r->misaligned)) {
    nnmem__jw_key(&w, "buffer");
    json_buffer(&w, c, r->overflow ? r->overflow_index : r->misaligned_index);
  } else if (!r->valid && r->bad_child) {
    nnmem__jw_key(&w, "buffer");
    json_buffer(&w, c, r->bad_child_index);
  }
  nnmem__jw_end(&w);
  return cli_json_print(&w, &t);
}

/* Steps 4-5. */
static int check(verify_ctx_t *c) {
  nnmem_verify_report_t rep;
  memset(&rep, 0, sizeof rep);
  nnmem_status_t st =
      nnmem_plan_verify(c->p, c->offs, c->o.align, c->o.capacity, &rep, &c->d);
  if (st != NNMEM_OK && st != NNMEM_ERR_CONFLICT && st != NNMEM_ERR_CAPACITY)
    return cli_fail(st, &c->d);
  if (st != NNMEM_OK && rep.valid) /* a failure the report does not name */
    return cli_fail(st, &c->d);
  uint64_t lb = 0;
  st = nnmem_problem_lower_bound(c->p, c->o.align, &lb);
  if (st != NNMEM_OK) return cli_fail(st, NULL);
  int e = verdict_code(&rep);
  if (c->o.json) {
    int je = print_json(c, &rep, lb);
    return je ? je : e;
  }
  if (!c->o.quiet) print_text(c, &rep, lb);
  return e;
}

/* ---- multi-plan documents ------------------------------------------------
 * verify MODEL... DOC.json, DOC written by `nnmem plan --shared-arena --out`
 * (one model per plan, in the document's order) or `nnmem plan --dim
 * NAME=LO..HI --out` (one model; plan i is checked with NAME bound to its
 * "value"):
 *   M1. read DOC (nnmem_multi_plan_read_json: structure and every plan's
 *       buffers); the number of models must fit the mode;
 *   M2. per plan, steps 2-4 above: the model's problem in the plan's order
 *       with the plan's alignment (or --align), the plan's buffers matched by
 *       id, nnmem_plan_verify; a verdict line per plan;
 *   M3. the arena claim with the independent layout checker
 *       (nnmem_arena_layout_check): every plan inside [base, base + height)
 *       within arena_bytes at a base that keeps its alignment, checked plan
 *       by plan, then plans of one --concurrent group pairwise disjoint; the
 *       error names the plan(s); --capacity bounds arena_bytes.
 * Exit: the first plan's non-zero code, else 4 for a broken arena claim,
 * else 2 over --capacity, else 0. */

typedef struct multi_result {
  uint64_t height, lb;
  int code;
  const char *violation;
} multi_result_t;

/* M2 for plan i of m against `model`: 1 exit code in *res, or a load
 * error (returned, printed). */
static int verify_one_plan(const verify_opts_t *o, const nnmem_multi_plan_t *m,
                           size_t i, const char *model, multi_result_t *res) {
  nnmem_multi_plan_entry_t e;
  verify_ctx_t c;
  memset(&c, 0, sizeof c);
  if (nnmem_multi_plan_entry(m, i, &e) != NNMEM_OK) return CLI_EXIT_INTERNAL;
  char where[300];
  snprintf(where, sizeof where, "%s: plans[%zu] ('%.80s')", o->solution_path, i,
           e.label);
  c.o = *o;
  c.o.problem_path = model;
  c.o.solution_path = where;
  c.o.capacity = 0; /* --capacity bounds the arena (M3) */
  if (!o->align_given) c.o.align = e.alignment;
  c.multi = m;
  c.mi = i;
  int code = 0;
  if (nnmem_multi_plan_is_buckets(m)) {
    if (c.o.onnx.n_dims == CLI_MAX_DIMS)
      return cli_usage_error("verify", "too many --dim options");
    c.o.onnx.dims[c.o.onnx.n_dims++] =
        (nnmem_onnx_dim_t){nnmem_multi_plan_dim(m), e.value};
  }
  const char *base_m = strrchr(model, '/'), *base_e = strrchr(e.input, '/');
  base_m = base_m ? base_m + 1 : model;
  base_e = base_e ? base_e + 1 : e.input;
  if (strcmp(base_m, base_e) != 0 && !o->quiet && !o->json)
    fprintf(stderr,
            "nnmem verify: note: %s was planned from '%s', checked "
            "against '%s'\n",
            where, e.input, model);
  nnmem_status_t st = cli_input_read(&c.in, model, o->max_input, &c.d);
  if (st == NNMEM_OK && nnmem_multi_plan_is_buckets(m) &&
      c.in.format != CLI_FMT_ONNX)
    st = nnmem__diag(&c.d, NNMEM_ERR_INVALID,
                     "%s: shape buckets bind '%s': '%s' is not an ONNX model",
                     where, nnmem_multi_plan_dim(m), model);
  if (st == NNMEM_OK) st = load_problem(&c);
  if (st == NNMEM_OK) st = load_offsets(&c);
  nnmem_verify_report_t rep;
  memset(&rep, 0, sizeof rep);
  if (st == NNMEM_OK) {
    st = nnmem_plan_verify(c.p, c.offs, c.o.align, 0, &rep, &c.d);
    if (st == NNMEM_ERR_CONFLICT && !rep.valid) st = NNMEM_OK;
  }
  if (st == NNMEM_OK) st = nnmem_problem_lower_bound(c.p, c.o.align, &res->lb);
  if (st != NNMEM_OK) {
    code = cli_fail(st, &c.d);
  } else {
    res->height = rep.height;
    res->code = verdict_code(&rep);
    res->violation = violation_name(&rep);
    if (!o->quiet && !o->json) {
      printf("%s: ", where);
      print_text(&c, &rep, res->lb);
    }
  }
  cli_input_free(&c.in);
  free(c.offs);
  nnmem_liveness_destroy(c.live);
  nnmem_graph_destroy(c.graph);
  nnmem_csv_destroy(c.csv);
  return code;
}

/* M3: NULL when the arena holds every plan, else what is wrong in msg. */
static const char *check_arena(const nnmem_multi_plan_t *m,
                               const multi_result_t *r, char *msg, size_t cap) {
  size_t n = nnmem_multi_plan_count(m);
  uint64_t size = nnmem_multi_plan_arena_bytes(m);
  nnmem_diag_t d = {{0}};
  for (size_t i = 0; i < n; i++) {
    nnmem_multi_plan_entry_t e;
    nnmem_arena_layout_config_t lc;
    nnmem_multi_plan_entry(m, i, &e);
    nnmem_arena_layout_config_init(&lc);
    lc.alignment = e.alignment;
    if (nnmem_arena_layout_check(&r[i].height, 1, &lc, &e.base, size, &d)) {
      if (e.base % e.alignment)
        snprintf(msg, cap,
                 "plans[%zu] ('%.80s'): base %llu is not a multiple of the "
                 "plan's alignment %llu",
                 i, e.label, (unsigned long long)e.base,
                 (unsigned long long)e.alignment);
      else
        snprintf(msg, cap,
                 "plans[%zu] ('%.80s') at base %llu with height %llu does "
                 "not fit the arena of %llu bytes",
                 i, e.label, (unsigned long long)e.base,
                 (unsigned long long)r[i].height, (unsigned long long)size);
      return msg;
    }
    for (size_t j = 0; j < i; j++) {
      nnmem_multi_plan_entry_t f;
      nnmem_multi_plan_entry(m, j, &f);
      if (!e.group || e.group != f.group) continue;
      uint64_t h[2] = {r[j].height, r[i].height}, b[2] = {f.base, e.base};
      uint32_t g[2] = {1, 1};
      nnmem_arena_layout_config_init(&lc);
      lc.groups = g;
      if (nnmem_arena_layout_check(h, 2, &lc, b, size, &d)) {
        snprintf(msg, cap,
                 "plans[%zu] ('%.80s') [%llu, +%llu) and plans[%zu] "
                 "('%.80s') [%llu, +%llu) run concurrently (group %u) but "
                 "overlap",
                 j, f.label, (unsigned long long)f.base,
                 (unsigned long long)r[j].height, i, e.label,
                 (unsigned long long)e.base, (unsigned long long)r[i].height,
                 e.group);
        return msg;
      }
    }
  }
  return NULL;
}

static int print_multi_json(const verify_opts_t *o, const nnmem_multi_plan_t *m,
                            const multi_result_t *r, const char *arena_bad,
                            int code) {
  nnmem__text_t t;
  nnmem__jw_t w;
  cli_json_begin(&w, &t, o->json);
  nnmem__jw_object(&w);
  nnmem__jw_kv_bool(&w, "valid", code == 0);
  nnmem__jw_kv_string(&w, "plan", o->solution_path);
  nnmem__jw_kv_string(
      &w, "mode",
      nnmem_multi_plan_is_buckets(m) ? "shape-buckets" : "shared-arena");
  nnmem__jw_kv_u64(&w, "arena_bytes", nnmem_multi_plan_arena_bytes(m));
  nnmem__jw_kv_u64(&w, "capacity", o->capacity);
  nnmem__jw_kv_string(&w, "arena_violation", arena_bad);
  nnmem__jw_key(&w, "plans");
  nnmem__jw_array(&w);
  for (size_t i = 0; i < nnmem_multi_plan_count(m); i++) {
    nnmem_multi_plan_entry_t e;
    nnmem_multi_plan_entry(m, i, &e);
    nnmem__jw_object(&w);
    nnmem__jw_kv_string(&w, "label", e.label);
    nnmem__jw_kv_string(&w, "model", o->models[o->n_models == 1 ? 0 : i]);
    nnmem__jw_kv_bool(&w, "valid", r[i].code == 0);
    nnmem__jw_kv_u64(&w, "base", e.base);
    nnmem__jw_kv_u64(&w, "height", r[i].height);
    nnmem__jw_kv_u64(&w, "lower_bound", r[i].lb);
    nnmem__jw_kv_string(&w, "violation", r[i].violation);
    nnmem__jw_end(&w);
  }
  nnmem__jw_end(&w);
  nnmem__jw_end(&w);
  return cli_json_print(&w, &t);
}

static int verify_multi_doc(const verify_opts_t *o,
                            const nnmem_multi_plan_t *m) {
  size_t n = nnmem_multi_plan_count(m);
  int buckets = nnmem_multi_plan_is_buckets(m);
  if (buckets ? o->n_models != 1 : o->n_models != n)
    return cli_usage_error(
        "verify", "%s holds %zu %s: give %s before it (got %zu)",
        o->solution_path, n, buckets ? "shape buckets" : "plans",
        buckets ? "the one model" : "their models in the same order",
        o->n_models);
  if (buckets && o->onnx.has_buckets)
    return cli_usage_error("verify",
                           "--dim with a range: the buckets come "
                           "from the document");
  multi_result_t *r = calloc(n, sizeof *r);
  if (!r) return cli_fail(NNMEM_ERR_NOMEM, NULL);
  int code = 0;
  for (size_t i = 0; i < n; i++) {
    int e = verify_one_plan(o, m, i, o->models[buckets ? 0 : i], &r[i]);
    if (e) {
      free(r);
      return e;
    }
    if (!code) code = r[i].code;
  }
  char msg[600];
  const char *bad = check_arena(m, r, msg, sizeof msg);
  uint64_t arena = nnmem_multi_plan_arena_bytes(m);
  if (!code && bad) code = CLI_EXIT_PLAN_INVALID;
  if (!code && o->capacity && arena > o->capacity) code = CLI_EXIT_NOFIT;
  if (o->json) {
    int je = print_multi_json(o, m, r, bad, code);
    free(r);
    return je ? je : code;
  }
  if (!o->quiet) {
    if (bad)
      printf("arena: invalid: %s\n", bad);
    else if (o->capacity && arena > o->capacity)
      printf("arena: over capacity: %llu > capacity %llu\n",
             (unsigned long long)arena, (unsigned long long)o->capacity);
    else
      printf("arena: %llu bytes hold all %zu plans (%s)%s\n",
             (unsigned long long)arena, n,
             buckets ? "one bucket at a time"
                     : "concurrent groups disjoint, the rest take turns",
             code ? "; but a plan is invalid" : "");
  }
  free(r);
  return code;
}

/* 1 when the JSON text is a multi-plan document (by its format tag). */
static int is_multi_doc(const cli_input_t *in) {
  cJSON *j = cJSON_ParseWithLength(in->data, in->len);
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, "format");
  int r = cJSON_IsString(f) && !strcmp(f->valuestring, "nnmem-shared-arena");
  cJSON_Delete(j);
  return r;
}

/* -1 when PLAN is not a multi-plan document and one model is given (the
 * single-plan forms go on), else the exit code of checking it. */
static int verify_multi_maybe(const verify_opts_t *o) {
  if (o->n_models == 1 &&
      (!strcmp(o->solution_path, "-") ||
       cli_format_of_name(o->solution_path) != CLI_FMT_JSON))
    return -1;
  cli_input_t in;
  nnmem_diag_t d = {{0}};
  memset(&in, 0, sizeof in);
  nnmem_status_t st = cli_input_read(&in, o->solution_path, o->max_input, &d);
  if (st != NNMEM_OK) return o->n_models == 1 ? -1 : cli_fail(st, &d);
  int multi = in.format == CLI_FMT_JSON && is_multi_doc(&in);
  int e = -1;
  if (!multi && o->n_models > 1) {
    e = cli_usage_error("verify",
                        "%zu models: PLAN '%s' must be a multi-plan document "
                        "(nnmem plan --shared-arena --out)",
                        o->n_models, o->solution_path);
  } else if (multi) {
    nnmem_multi_plan_t *m = NULL;
    st = nnmem_multi_plan_read_json(in.data, in.len, in.name, &m, &d);
    e = st == NNMEM_OK ? verify_multi_doc(o, m) : cli_fail(st, &d);
    nnmem_multi_plan_destroy(m);
  }
  cli_input_free(&in);
  return e;
}

int cli_cmd_verify(int argc, char **argv) {
  verify_ctx_t c;
  memset(&c, 0, sizeof c);
  int e = parse_verify_args(argc, argv, &c.o);
  if (e >= 0) return e;
  if (c.o.solution_path) {
    e = verify_multi_maybe(&c.o);
    if (e >= 0) return e;
  }
  e = read_inputs(&c);
  if (e < 0) {
    if (!c.o.align_given && c.o.solution_path &&
        c.plan_in.format == CLI_FMT_JSON)
      c.o.align = plan_json_alignment(&c.plan_in);
    nnmem_status_t st = load_problem(&c);
    if (st == NNMEM_OK) st = load_offsets(&c);
    e = st == NNMEM_OK ? check(&c) : cli_fail(st, &c.d);
  }
  cli_input_free(&c.in);
  cli_input_free(&c.plan_in);
  free(c.offs);
  nnmem_liveness_destroy(c.live);
  nnmem_graph_destroy(c.graph);
  nnmem_csv_destroy(c.csv);
  return e;
}

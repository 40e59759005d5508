/* cmd_run.c - `nnmem run PLAN.json [MODEL]`: execute a fitted plan (written
 * by `nnmem plan ... --mem-limit SIZE --out PLAN.json`) on the simulated
 * device with real bytes and canary patterns (nnmem_exec_run).
 *
 * Steps:
 *   1. parse the options; read PLAN.json whole (size limit as plan's);
 *   2. nnmem_exec_plan_parse: refuses a plan without a schedule, a corrupted
 *      one (content digest), one whose tiers fail the verifier or whose
 *      accesses fall outside active times - nothing executed (exit 1);
 *   3. with a model (MODEL file, or --model NAME [--batch N]): the plan must
 *      match it (ops, tensor sizes, digest); the difference is named (exit 1);
 *   4. nnmem_exec_run (with --fail-alloc N / --fail-copy N fault injection);
 *      with --backend cuda on a GPU (the cuda backend, --device N): a
 *      build without CUDA kernels or without a driver is refused before
 *      anything runs (exit 1); a mismatch or a failed allocation, copy or
 *      CUDA call -> exit 3 with the error;
 *   5. print counts and PASS (or the --json report); on the GPU also the
 *      measured exposed transfer time against the cost model's.
 * Thread-safety: single-threaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "common/util.h"
#include "nnmem/fit.h"
#include "units.h"

enum {
  OPT_HELP,
  OPT_MODEL,
  OPT_BATCH,
  OPT_DIM,
  OPT_FAIL_ALLOC,
  OPT_FAIL_COPY,
  OPT_JSON,
  OPT_QUIET,
  OPT_BACKEND,
  OPT_DEVICE,
  OPT_SPIN_SCALE,
  OPT_CORRUPT_STEP,
  OPT_CHECK_EVERY
};

static const cli_opt_t run_table[] = {{"help", 'h', 0, OPT_HELP},
                                      {"model", 'm', 1, OPT_MODEL},
                                      {"batch", 'b', 1, OPT_BATCH},
                                      {"dim", 0, 1, OPT_DIM},
                                      {"fail-alloc", 0, 1, OPT_FAIL_ALLOC},
                                      {"fail-copy", 0, 1, OPT_FAIL_COPY},
                                      {"json", 0, CLI_OPT_INLINE, OPT_JSON},
                                      {"quiet", 'q', 0, OPT_QUIET},
                                      {"backend", 0, 1, OPT_BACKEND},
                                      {"device", 0, 1, OPT_DEVICE},
                                      {"spin-scale", 0, 1, OPT_SPIN_SCALE},
                                      {"corrupt-step", 0, 1, OPT_CORRUPT_STEP},
                                      {"check-every", 0, 1, OPT_CHECK_EVERY},
                                      {NULL, 0, 0, 0}};

typedef struct run_opts {
  const char *plan, *input, *model;
  uint32_t batch;
  cli_onnx_opts_t onnx;
  nnmem_exec_config_t exec;
  int json, quiet;
  int cuda;    /* --backend cuda */
  int device;  /* --device N */
  int gpu_opt; /* a GPU-only option was given */
} run_opts_t;

static void print_run_help(void) {
  fputs(
      "Usage: nnmem run PLAN.json [MODEL] [options]\n"
      "\n"
      "Executes a fitted plan (nnmem plan ... --mem-limit SIZE --out "
      "PLAN.json)\n"
      "on the simulated device with real bytes: one region per memory tier,\n"
      "every output written with a pattern from (buffer, step), every input\n"
      "checked before use, every transfer performed with the backend's "
      "copy.\n"
      "A plan without a schedule, a corrupted plan, or one that does not "
      "match\n"
      "MODEL is refused before anything runs.\n"
      "\n"
      "Options:\n"
      "  MODEL                  the model the plan must match (.onnx, .json)\n"
      "  -m, --model NAME       ... or a built-in model\n"
      "  -b, --batch N          batch of the built-in model (default 1)\n"
      "      --dim NAME=VALUE   ONNX: bind a symbolic dim as when planning\n"
      "      --fail-alloc N     fault injection: fail the N-th region "
      "allocation\n"
      "      --fail-copy N      fault injection: fail the N-th copy\n"
      "      --backend NAME     sim (default: simulated device) or cuda: run\n"
      "                         on a GPU (kernels check and write every\n"
      "                         buffer, copies on their own streams ordered\n"
      "                         by events) and report the measured exposed\n"
      "                         transfer time against the cost model's\n"
      "      --device N         cuda: the GPU (default 0)\n"
      "      --spin-scale X     cuda: each op runs its estimated time x X\n"
      "                         (default 1)\n"
      "      --corrupt-step N   cuda, test hook: overwrite a byte of step\n"
      "                         N-1's first output (the run must fail)\n"
      "      --check-every N    cuda: at most N steps in flight; the device's\n"
      "                         error record is read each time N more finish\n"
      "                         (default 8; a failure stops the run within\n"
      "                         about 2N steps)\n"
      "      --json[=compact]   print a JSON report\n"
      "  -q, --quiet            print nothing on success\n"
      "  -h, --help             show this help\n"
      "\n"
      "Exit codes: 0 the run passed, 1 bad usage or a refused plan, 3 the "
      "run\n"
      "failed (a pattern mismatch, a failed allocation or copy).\n",
      stdout);
}

static int set_option(void *opts, int id, const char *v) {
  run_opts_t *o = opts;
  const char *why = NULL;
  uint64_t n = 0;
  switch (id) {
    case OPT_MODEL:
      o->model = v;
      return 0;
    case OPT_BATCH:
      if (cli_parse_uint(v, 1u << 20, &n, &why) != 0 || n == 0)
        return cli_usage_error("run", "bad --batch '%s': %s", v,
                               why ? why : "must be >= 1");
      o->batch = (uint32_t)n;
      return 0;
    case OPT_DIM:
      return cli_onnx_option("run", &o->onnx, "dim", v);
    case OPT_FAIL_ALLOC:
    case OPT_FAIL_COPY:
      if (cli_parse_uint(v, UINT64_MAX, &n, &why) != 0 || n == 0)
        return cli_usage_error(
            "run", "bad --%s '%s': %s",
            id == OPT_FAIL_ALLOC ? "fail-alloc" : "fail-copy", v,
            why ? why : "must be >= 1");
      if (id == OPT_FAIL_ALLOC)
        o->exec.fail_at = n;
      else
        o->exec.fail_copy_at = n;
      return 0;
    case OPT_BACKEND:
      if (strcmp(v, "sim") && strcmp(v, "cuda"))
        return cli_usage_error("run",
                               "bad --backend '%s': expected sim or cuda", v);
      o->cuda = strcmp(v, "cuda") == 0;
      return 0;
    case OPT_DEVICE:
      if (cli_parse_uint(v, 1024, &n, &why) != 0)
        return cli_usage_error("run", "bad --device '%s': %s", v, why);
      o->device = (int)n;
      o->gpu_opt = 1;
      return 0;
    case OPT_SPIN_SCALE: {
      char *end = NULL;
      double x = strtod(v, &end);
      if (!end || end == v || *end || !(x > 0) || x > 1e6)
        return cli_usage_error(
            "run", "bad --spin-scale '%s': a number in (0, 1e6]", v);
      o->exec.spin_scale = x;
      o->gpu_opt = 1;
      return 0;
    }
    case OPT_CORRUPT_STEP:
      if (cli_parse_uint(v, UINT64_MAX, &n, &why) != 0 || n == 0)
        return cli_usage_error("run", "bad --corrupt-step '%s': %s", v,
                               why ? why : "must be >= 1");
      o->exec.corrupt_step = n;
      o->gpu_opt = 1;
      return 0;
    case OPT_CHECK_EVERY:
      if (cli_parse_uint(v, 1u << 20, &n, &why) != 0 || n == 0)
        return cli_usage_error("run", "bad --check-every '%s': %s", v,
                               why ? why : "must be >= 1");
      o->exec.check_every = (uint32_t)n;
      o->gpu_opt = 1;
      return 0;
    case OPT_JSON:
      return cli_json_option("run", v, &o->json);
    case OPT_QUIET:
      o->quiet = 1;
      return 0;
  }
  return 0;
}

/* Step 3: the model the plan must match. */
static nnmem_status_t load_model(const run_opts_t *o, nnmem_graph_t **g,
                                 nnmem_diag_t *diag) {
  if (o->model) return nnmem_zoo_build(o->model, o->batch, g, diag);
  cli_input_t in;
  nnmem_status_t st = cli_input_read(&in, o->input, 0, diag);
  if (st != NNMEM_OK) return st;
  if (in.format == CLI_FMT_JSON) {
    st = nnmem_graph_parse_json(in.data, in.len, in.name, g, diag);
  } else if (in.format == CLI_FMT_ONNX) {
    nnmem_onnx_config_t cfg;
    nnmem_onnx_report_t rep;
    cli_onnx_config(&o->onnx, 0, &cfg);
    st = nnmem_onnx_import(in.data, in.len, in.name, &cfg, g, &rep, diag);
  } else {
    st = nnmem__diag(diag, NNMEM_ERR_INVALID,
                     "%s: a model is an ONNX file or a JSON graph", in.name);
  }
  cli_input_free(&in);
  return st;
}

/* The GPU figures: measured exposed transfer time (the compute stream's
 * waits for copies) against the cost model's estimate, plus the steps that
 * waited longest. */
static double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}

static void put_gpu_json(nnmem__jw_t *w, const nnmem_exec_plan_t *p,
                         const nnmem_exec_report_t *r) {
  nnmem__jw_key(w, "gpu");
  nnmem__jw_object(w);
  nnmem__jw_kv_u64(w, "launches", r->launches);
  nnmem__jw_kv_double(w, "cycles_per_s", r->cycles_per_s);
  nnmem__jw_kv_double(w, "link_bytes_per_s", r->link_bytes_per_s);
  nnmem__jw_kv_double(w, "total_s", r->total_s);
  nnmem__jw_kv_double(w, "kernel_s", r->kernel_s);
  nnmem__jw_kv_double(w, "copy_s", r->copy_s);
  nnmem__jw_kv_double(w, "gap_s", r->gap_s);
  nnmem__jw_kv_double(w, "exposed_s", r->wait_s);
  nnmem__jw_kv_u64(w, "waiting_steps", r->waiting_steps);
  nnmem__jw_kv_double(w, "est_compute_s", r->est_compute_s);
  nnmem__jw_kv_double(w, "est_exposed_s", r->est_exposed_s);
  nnmem__jw_kv_double(w, "est_exposed_measured_s", r->est_exposed_measured_s);
  nnmem__jw_kv_double(w, "exposed_ratio", ratio(r->wait_s, r->est_exposed_s));
  nnmem__jw_key(w, "step_wait_s");
  nnmem__jw_array(w);
  for (uint64_t s = 0; r->step_wait_s && s < r->step_wait_cap; s++)
    nnmem__jw_double(w, r->step_wait_s[s]);
  nnmem__jw_end(w);
  nnmem__jw_end(w);
  (void)p;
}

static void print_gpu(FILE *f, const nnmem_exec_plan_t *p,
                      const nnmem_exec_report_t *r) {
  fprintf(f,
          "gpu: %llu kernels, clock %.3g Hz, host->device %.3g B/s\n"
          "  total %.6f s = kernels %.6f s + waits for copies %.6f s (%llu "
          "steps) + launch gaps %.6f s; copies %.6f s\n"
          "  exposed transfer time: measured %.6f s, cost model %.6f s "
          "(ratio %.3f); the model fed the measured kernel and copy times: "
          "%.6f s\n",
          (unsigned long long)r->launches, r->cycles_per_s, r->link_bytes_per_s,
          r->total_s, r->kernel_s, r->wait_s,
          (unsigned long long)r->waiting_steps, r->gap_s, r->copy_s, r->wait_s,
          r->est_exposed_s, ratio(r->wait_s, r->est_exposed_s),
          r->est_exposed_measured_s);
  /* the three longest waits */
  uint64_t top[3] = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
  for (uint64_t s = 0; r->step_wait_s && s < r->step_wait_cap; s++)
    for (int k = 0; k < 3; k++)
      if (top[k] == UINT64_MAX || r->step_wait_s[s] > r->step_wait_s[top[k]]) {
        for (int j = 2; j > k; j--)
          top[j] = top[j - 1];
        top[k] = s;
        break;
      }
  for (int k = 0; k < 3 && top[k] != UINT64_MAX; k++)
    if (r->step_wait_s[top[k]] > 0)
      fprintf(f, "  wait before step %llu: %.6f s\n",
              (unsigned long long)top[k], r->step_wait_s[top[k]]);
  (void)p;
}

static void print_report(const run_opts_t *o, const nnmem_exec_plan_t *p,
                         const nnmem_exec_report_t *r, int ok,
                         const char *err) {
  (void)p;
  if (o->json) {
    nnmem__text_t t;
    nnmem__jw_t w;
    cli_json_begin(&w, &t, o->json);
    nnmem__jw_object(&w);
    nnmem__jw_kv_string(&w, "plan", o->plan);
    nnmem__jw_kv_bool(&w, "passed", ok);
    if (!ok) nnmem__jw_kv_string(&w, "error", err);
    nnmem__jw_kv_u64(&w, "steps", r->steps);
    nnmem__jw_kv_u64(&w, "writes", r->writes);
    nnmem__jw_kv_u64(&w, "checks", r->checks);
    nnmem__jw_kv_u64(&w, "bytes_checked", r->bytes_checked);
    nnmem__jw_kv_u64(&w, "copies", r->copies);
    nnmem__jw_kv_u64(&w, "copy_bytes", r->copy_bytes);
    if (o->cuda) put_gpu_json(&w, p, r);
    nnmem__jw_end(&w);
    cli_json_print(&w, &t);
    return;
  }
  if (o->quiet && ok) return;
  char a[32], b[32];
  FILE *f = ok ? stdout : stderr;
  fprintf(f,
          "nnmem run: %s: %llu steps, %llu writes, %llu checks (%s B "
          "compared), %llu copies (%s B)\n",
          o->plan, (unsigned long long)r->steps, (unsigned long long)r->writes,
          (unsigned long long)r->checks,
          cli_fmt_grouped(r->bytes_checked, a, sizeof a),
          (unsigned long long)r->copies,
          cli_fmt_grouped(r->copy_bytes, b, sizeof b));
  if (o->cuda && ok) print_gpu(f, p, r);
  if (ok) fprintf(f, "PASS\n");
}

/* --backend cuda: the kernels must be in this build, then the driver and
 * the device must be there; either missing refuses the run. */
static nnmem_status_t open_gpu(const run_opts_t *o, nnmem_backend_t **be,
                               nnmem_diag_t *diag) {
  if (!nnmem_exec_cuda_kernels())
    return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                       "--backend cuda: this nnmem was built without CUDA "
                       "kernels (no nvcc at build time: install the CUDA "
                       "toolkit and configure with -DNNMEM_CUDA=ON)");
  nnmem_cuda_config_t cc;
  memset(&cc, 0, sizeof cc);
  cc.size = sizeof cc;
  cc.device = o->device;
  return nnmem_backend_cuda_create(&cc, be, diag);
}

static int run_plan(const run_opts_t *o) {
  nnmem_diag_t diag = {{0}};
  char *data = NULL;
  size_t len = 0;
  nnmem_exec_plan_t *p = NULL;
  nnmem_graph_t *g = NULL;
  nnmem_status_t st = nnmem_file_read(o->plan, &data, &len, &diag);
  if (st == NNMEM_OK) st = nnmem_exec_plan_parse(data, len, o->plan, &p, &diag);
  free(data);
  if (st == NNMEM_OK && (o->model || o->input)) {
    st = load_model(o, &g, &diag);
    if (st == NNMEM_OK) st = nnmem_exec_plan_match(p, g, &diag);
  }
  nnmem_graph_destroy(g);
  if (st != NNMEM_OK) {
    nnmem_exec_plan_destroy(p);
    fprintf(stderr, "nnmem run: refused, nothing executed: %s\n",
            diag.message[0] ? diag.message : nnmem_status_str(st));
    return st == NNMEM_ERR_NOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INVALID;
  }
  nnmem_exec_report_t rep;
  memset(&rep, 0, sizeof rep);
  rep.size = sizeof rep;
  nnmem_exec_config_t cfg = o->exec;
  nnmem_backend_t *be = NULL;
  if (o->cuda && (st = open_gpu(o, &be, &diag)) != NNMEM_OK) {
    nnmem_exec_plan_destroy(p);
    fprintf(stderr, "nnmem run: refused, nothing executed: %s\n",
            diag.message[0] ? diag.message : nnmem_status_str(st));
    return CLI_EXIT_INVALID;
  }
  cfg.cuda = be;
  double *waits = NULL;
  if (be && (waits = calloc(nnmem_exec_plan_steps(p) + 1, sizeof *waits))) {
    rep.step_wait_s = waits;
    rep.step_wait_cap = nnmem_exec_plan_steps(p);
  }
  st = nnmem_exec_run(p, &cfg, &rep, &diag);
  if (st != NNMEM_OK) {
    fprintf(stderr, "nnmem run: FAIL: %s\n",
            diag.message[0] ? diag.message : nnmem_status_str(st));
    print_report(o, p, &rep, 0, diag.message);
  } else {
    print_report(o, p, &rep, 1, NULL);
  }
  free(waits);
  nnmem_backend_destroy(be);
  nnmem_exec_plan_destroy(p);
  return st == NNMEM_OK ? CLI_EXIT_OK : CLI_EXIT_INTERNAL;
}

int cli_cmd_run(int argc, char **argv) {
  run_opts_t o;
  memset(&o, 0, sizeof o);
  o.exec.size = sizeof o.exec;
  cli_parse_t p = {"run",
                   run_table,
                   OPT_HELP,
                   print_run_help,
                   set_option,
                   &o,
                   {&o.plan, &o.input, NULL},
                   NULL,
                   0,
                   NULL};
  int e = cli_args_parse(&p, argc, argv);
  if (e >= 0) return e;
  if (!o.plan) return cli_usage_error("run", "missing PLAN.json");
  if (o.input && o.model)
    return cli_usage_error("run", "give either MODEL or --model, not both");
  if (o.batch && !o.model)
    return cli_usage_error("run", "--batch applies to --model only");
  if (o.gpu_opt && !o.cuda)
    return cli_usage_error("run",
                           "--device, --spin-scale, --corrupt-step and "
                           "--check-every apply "
                           "to --backend cuda only");
  if (o.cuda && (o.exec.fail_at || o.exec.fail_copy_at))
    return cli_usage_error("run",
                           "--fail-alloc / --fail-copy inject faults in the "
                           "simulated device; with --backend cuda the stand-in "
                           "driver's FAKE_CUDA_FAIL_* variables do");
  return run_plan(&o);
}

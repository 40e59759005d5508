/* fit_ui.c - `nnmem plan --mem-limit SIZE [--device NAME|FILE]`: fit a graph
 * under a device memory limit (nnmem_fit), write --out (plan JSON with the
 * transfer schedule) and --profile as one output set, print the report.
 *
 * Steps:
 *   1. the device: a preset name, else a device JSON file (errors name the
 *      file and field; exit 1); default preset edge-npu;
 *   2. nnmem_fit with the limit (0 = the main tier's capacity) and the
 *      --order choice; NNMEM_ERR_CAPACITY -> exit 2 with the smallest
 *      footprint and the op that forces it;
 *   3. outputs staged then committed together (common/outset.h);
 *   4. the text report (or --json): peak per tier, bytes moved per
 *      inference, time with and without transfers and the exposed
 *      overhead, the moved tensors and why.
 * Thread-safety: single-threaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/util.h"
#include "nnmem/fit.h"
#include "suggest.h"
#include "units.h"

int cli_fit_load_device(const char *spec, nnmem_device_t *d,
                        nnmem_diag_t *diag) {
  if (!spec) spec = "edge-npu";
  if (nnmem_device_preset(spec, d) == NNMEM_OK) return 0;
  if (!strchr(spec, '/') && !strchr(spec, '.')) {
    size_t n = 0;
    const char *const *names = nnmem_device_preset_names(&n);
    char hint[96];
    nnmem__diag(
        diag, NNMEM_ERR_INVALID,
        "unknown device '%s' (presets: edge-npu, datacenter, cpu; or "
        "a device JSON file)%s",
        spec, cli_did_you_mean(cli_suggest(spec, names, n), hint, sizeof hint));
    return 1;
  }
  char *data = NULL;
  size_t len = 0;
  nnmem_status_t st =
      nnmem_file_read_limited(spec, 1u << 20, &data, &len, diag);
  if (st == NNMEM_OK) st = nnmem_device_parse_json(data, len, spec, d, diag);
  free(data);
  return st != NNMEM_OK;
}

static void print_tiers(FILE *out, const nnmem_fit_t *f) {
  const nnmem_device_t *d = nnmem_fit_device(f);
  char a[32], b[32];
  fprintf(out, "  %-8s %14s %14s %8s\n", "tier", "capacity", "peak", "buffers");
  for (uint32_t t = 0; t < d->n_tiers; t++) {
    uint64_t cap = t == nnmem_device_main_tier(d) ? nnmem_fit_limit(f)
                                                  : d->tiers[t].capacity;
    fprintf(out, "  %-8s %14s %14s %8zu\n", d->tiers[t].name,
            cap ? cli_fmt_grouped(cap, a, sizeof a) : "-",
            cli_fmt_grouped(nnmem_plan_height(nnmem_fit_tier_plan(f, t)), b,
                            sizeof b),
            nnmem_problem_count(nnmem_fit_tier_problem(f, t)));
  }
}

/* The op step s runs (a part of a split op names its op). */
static const char *op_at(const nnmem_graph_t *g, const nnmem_fit_t *f,
                         uint64_t s) {
  nnmem_op_info_t oi;
  nnmem_fit_step_t st;
  if (nnmem_fit_step(f, s, &st) != NNMEM_OK ||
      nnmem_graph_op(g, st.op, &oi) != NNMEM_OK)
    return "?";
  return oi.name;
}

/* The split ops (docs/fit.md, "Operator splitting"), at most 8 named. */
static void print_splits(FILE *out, const nnmem_graph_t *g,
                         const nnmem_fit_t *f) {
  uint64_t n = 0, shown = 0;
  nnmem_fit_step_t st;
  for (uint64_t s = 0; s < nnmem_fit_steps(f); s++)
    n += nnmem_fit_step(f, s, &st) == NNMEM_OK && st.parts > 1 && !st.part;
  if (!n) return;
  fprintf(out, "  split: %llu ops run in parts, one per weight slice (%llu "
               "steps for %llu ops):",
          (unsigned long long)n, (unsigned long long)nnmem_fit_steps(f),
          (unsigned long long)nnmem_fit_ops(f));
  for (uint64_t s = 0; s < nnmem_fit_steps(f) && shown < 8; s++) {
    char nm[64];
    if (nnmem_fit_step(f, s, &st) != NNMEM_OK || st.parts < 2 || st.part)
      continue;
    fprintf(out, "%s %s x%u (%s)", shown ? "," : "",
            cli_printable(op_at(g, f, s), nm, sizeof nm), st.parts,
            st.accumulate ? "accumulate" : "rows");
    shown++;
  }
  fprintf(out, "%s\n", n > shown ? ", ..." : "");
}

static int cmp_move_bytes(const void *a, const void *b) {
  const nnmem_fit_move_t *x = a, *y = b;
  return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* Orders weight names by NAME of "NAME[r0:r1]" (a slice) or NAME. */
static size_t weight_name_len(const char *s) {
  size_t l = strlen(s);
  const char *b = l && s[l - 1] == ']' ? strrchr(s, '[') : NULL;
  return b ? (size_t)(b - s) : l;
}

static int cmp_weight_name(const void *a, const void *b) {
  const char *x = *(const char *const *)a, *y = *(const char *const *)b;
  size_t lx = weight_name_len(x), ly = weight_name_len(y);
  int c = strncmp(x, y, lx < ly ? lx : ly);
  return c ? c : (lx > ly) - (lx < ly);
}

/* The moves, largest first (at most 8 shown). */
static void print_moves(FILE *out, const nnmem_graph_t *g,
                        const nnmem_fit_t *f) {
  const nnmem_fit_move_t *all;
  size_t n = nnmem_fit_moves(f, &all), ns = 0, no = 0;
  nnmem_fit_move_t *m = malloc((n ? n : 1) * sizeof *m);
  if (!m) return;
  if (n) memcpy(m, all, n * sizeof *m);
  qsort(m, n, sizeof *m, cmp_move_bytes);
  /* a weight held in slices ("NAME[r0:r1]", docs/fit.md) streams as
   * several moves: weights are counted by NAME, slices apart */
  size_t nslices = 0, nweights = 0;
  const char **base = malloc((n ? n : 1) * sizeof *base);
  for (size_t i = 0; i < n; i++) {
    if (m[i].kind != NNMEM_MOVE_STREAM) {
      no++;
      continue;
    }
    const char *nm = m[i].name ? m[i].name : "";
    size_t l = strlen(nm);
    if (l && nm[l - 1] == ']' && strrchr(nm, '[')) nslices++;
    if (base) base[ns] = nm;
    ns++;
  }
  if (base) {
    qsort(base, ns, sizeof *base, cmp_weight_name);
    for (size_t i = 0; i < ns; i++)
      nweights += i == 0 || cmp_weight_name(&base[i - 1], &base[i]) != 0;
    free(base);
  } else {
    nweights = ns;
  }
  if (nslices)
    fprintf(out,
            "  moved: %zu weights streamed (%zu moves: %zu of them slices), "
            "%zu activations offloaded\n",
            nweights, ns, nslices, no);
  else
    fprintf(out, "  moved: %zu weights streamed, %zu activations offloaded\n",
            ns, no);
  size_t shown = n < 8 ? n : 8;
  for (size_t i = 0; i < shown; i++) {
    char a[32], nm[96];
    if (m[i].kind == NNMEM_MOVE_STREAM)
      fprintf(out,
              "    stream  %-28s %12s B, %llu copy in; the peak at step %llu "
              "(op %s) was over the limit\n",
              cli_printable(m[i].name, nm, sizeof nm),
              cli_fmt_grouped(m[i].bytes, a, sizeof a),
              (unsigned long long)m[i].copies, (unsigned long long)m[i].at_step,
              op_at(g, f, m[i].at_step));
    else
      fprintf(out,
              "    offload %-28s %12s B, idle %llu steps in host memory "
              "around step %llu (op %s)\n",
              cli_printable(m[i].name, nm, sizeof nm),
              cli_fmt_grouped(m[i].bytes, a, sizeof a),
              (unsigned long long)m[i].idle_steps,
              (unsigned long long)m[i].at_step, op_at(g, f, m[i].at_step));
  }
  if (n > shown)
    fprintf(out, "    ... %zu more (--out lists all)\n", n - shown);
  free(m);
}

static void report_human(FILE *out, const nnmem_graph_t *g,
                         const nnmem_fit_t *f, const char *title) {
  const nnmem_device_t *d = nnmem_fit_device(f);
  nnmem_fit_costs_t c;
  nnmem_fit_costs(f, &c);
  uint32_t op = 0;
  uint64_t minf = nnmem_fit_min_footprint(f, &op);
  char a[32], b[32], h[32];
  nnmem_op_info_t oi;
  fprintf(out, "fit %s on %s: limit %s B (%s) on tier %s\n", title, d->name,
          cli_fmt_grouped(nnmem_fit_limit(f), a, sizeof a),
          cli_fmt_human(nnmem_fit_limit(f), h, sizeof h),
          d->tiers[nnmem_device_main_tier(d)].name);
  fprintf(out,
          "  unconstrained peak %s B (weights + arena); smallest footprint "
          "%s B (op %s)\n",
          cli_fmt_grouped(nnmem_fit_unconstrained_peak(f), a, sizeof a),
          cli_fmt_grouped(minf, b, sizeof b),
          nnmem_graph_op(g, op, &oi) == NNMEM_OK ? oi.name : "?");
  print_tiers(out, f);
  print_splits(out, g, f);
  print_moves(out, g, f);
  fprintf(out,
          "  transfers per inference: %s B (weights in %s B, "
          "activations out+in %s B)\n",
          cli_fmt_grouped(c.transfer_bytes, a, sizeof a),
          cli_fmt_grouped(c.stream_bytes, b, sizeof b),
          cli_fmt_grouped(c.offload_bytes, h, sizeof h));
  fprintf(out,
          "  time (estimated): %.3f ms without transfers, %.3f ms with "
          "(transfers %.3f ms, exposed %.3f ms = %.1f%%)\n",
          c.compute_s * 1e3, c.total_s * 1e3, c.transfer_s * 1e3,
          c.exposed_s * 1e3,
          c.compute_s > 0 ? 100.0 * c.exposed_s / c.compute_s : 0.0);
  fprintf(out, "  fitted in %.3f s; every tier's plan passed the verifier\n",
          nnmem_fit_seconds(f));
}

/* "splits": [{"op", "parts", "first_step", "split"}] */
static void splits_json(nnmem__jw_t *w, const nnmem_graph_t *g,
                        const nnmem_fit_t *f) {
  nnmem__jw_kv_u64(w, "ops", nnmem_fit_ops(f));
  nnmem__jw_kv_u64(w, "steps", nnmem_fit_steps(f));
  nnmem__jw_key(w, "splits");
  nnmem__jw_array(w);
  nnmem_fit_step_t st;
  for (uint64_t s = 0; s < nnmem_fit_steps(f); s++) {
    if (nnmem_fit_step(f, s, &st) != NNMEM_OK || st.parts < 2 || st.part)
      continue;
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "op", op_at(g, f, s));
    nnmem__jw_kv_u64(w, "parts", st.parts);
    nnmem__jw_kv_u64(w, "first_step", s);
    nnmem__jw_kv_string(w, "split", st.accumulate ? "accumulate" : "rows");
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
}

static void report_json(nnmem__jw_t *w, const nnmem_graph_t *g,
                        const nnmem_fit_t *f, const char *title) {
  const nnmem_device_t *d = nnmem_fit_device(f);
  nnmem_fit_costs_t c;
  nnmem_fit_costs(f, &c);
  nnmem__jw_kv_string(w, "model", title);
  nnmem__jw_kv_string(w, "device", d->name);
  nnmem__jw_kv_u64(w, "limit", nnmem_fit_limit(f));
  nnmem__jw_kv_u64(w, "unconstrained_peak", nnmem_fit_unconstrained_peak(f));
  nnmem__jw_kv_u64(w, "min_footprint", nnmem_fit_min_footprint(f, NULL));
  nnmem__jw_key(w, "tiers");
  nnmem__jw_array(w);
  for (uint32_t t = 0; t < d->n_tiers; t++) {
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "name", d->tiers[t].name);
    nnmem__jw_kv_u64(w, "peak", nnmem_plan_height(nnmem_fit_tier_plan(f, t)));
    nnmem__jw_kv_u64(w, "buffers",
                     nnmem_problem_count(nnmem_fit_tier_problem(f, t)));
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
  splits_json(w, g, f);
  const nnmem_fit_move_t *m;
  size_t n = nnmem_fit_moves(f, &m);
  nnmem__jw_key(w, "moves");
  nnmem__jw_array(w);
  for (size_t i = 0; i < n; i++) {
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "kind",
                        m[i].kind == NNMEM_MOVE_STREAM ? "stream" : "offload");
    nnmem__jw_kv_string(w, "name", m[i].name);
    nnmem__jw_kv_u64(w, "bytes", m[i].bytes);
    nnmem__jw_kv_u64(w, "copies", m[i].copies);
    nnmem__jw_kv_u64(w, "at_step", m[i].at_step);
    nnmem__jw_kv_u64(w, "idle_steps", m[i].idle_steps);
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
  nnmem__jw_kv_u64(w, "transfer_bytes", c.transfer_bytes);
  nnmem__jw_kv_u64(w, "stream_bytes", c.stream_bytes);
  nnmem__jw_kv_u64(w, "offload_bytes", c.offload_bytes);
  nnmem__jw_kv_double(w, "compute_s", c.compute_s);
  nnmem__jw_kv_double(w, "transfer_s", c.transfer_s);
  nnmem__jw_kv_double(w, "exposed_s", c.exposed_s);
  nnmem__jw_kv_double(w, "total_s", c.total_s);
  nnmem__jw_kv_double(w, "fit_seconds", nnmem_fit_seconds(f));
}

static nnmem_status_t stage(const nnmem_graph_t *g, const nnmem_fit_t *f,
                            const cli_plan_opts_t *o, const char *title,
                            nnmem__outset_t *set, nnmem_diag_t *diag) {
  nnmem_status_t st = NNMEM_OK;
  if (o->out) {
    char *text = NULL;
    size_t len = 0;
    st = nnmem_fit_format_json(f, g, &text, &len, diag);
    if (st == NNMEM_OK)
      st = nnmem__outset_add_bytes(set, o->out, text, len, diag);
    free(text);
  }
  if (st == NNMEM_OK && o->profile) {
    nnmem__text_t t;
    nnmem__jw_t w;
    cli_json_begin(&w, &t, CLI_JSON_PRETTY);
    nnmem__jw_object(&w);
    report_json(&w, g, f, title);
    nnmem__jw_end(&w);
    st = nnmem__jw_finish(&w);
    if (st == NNMEM_OK)
      st = nnmem__outset_add_bytes(set, o->profile, t.data, t.len, diag);
    nnmem__text_free(&t);
  }
  return st;
}

static nnmem_status_t write_outputs(const nnmem_graph_t *g,
                                    const nnmem_fit_t *f,
                                    const cli_plan_opts_t *o, const char *title,
                                    nnmem_diag_t *diag) {
  if (!o->out && !o->profile) return NNMEM_OK;
  nnmem__outset_t *set = NULL;
  nnmem_status_t st = nnmem__outset_create(&set);
  if (st != NNMEM_OK) return nnmem__diag(diag, st, "out of memory");
  cli_outputs_guard(set);
  st = stage(g, f, o, title, set, diag);
  if (st == NNMEM_OK) st = nnmem__outset_commit(set, diag);
  nnmem__outset_destroy(set);
  cli_outputs_unguard();
  return st;
}

int cli_fit_plan(const nnmem_graph_t *g, const cli_plan_opts_t *o,
                 const char *title) {
  nnmem_diag_t diag = {{0}};
  nnmem_device_t dev;
  if (cli_fit_load_device(o->device, &dev, &diag)) {
    fprintf(stderr, "nnmem: %s\n", diag.message);
    return CLI_EXIT_INVALID;
  }
  nnmem_fit_config_t cfg;
  nnmem_fit_config_init(&cfg);
  cfg.order_memory = o->order == CLI_ORDER_MEMORY;
  if (o->slice_bytes) cfg.slice_bytes = o->slice_bytes;
  nnmem_fit_t *f = NULL;
  nnmem_status_t st = nnmem_fit(g, &dev, o->mem_limit, &cfg, &f, &diag);
  uint64_t smallest = 0;
  if (st == NNMEM_ERR_CAPACITY &&
      nnmem_fit_smallest_limit(g, &dev, &cfg, &smallest, NULL) == NNMEM_OK) {
    char tail[64];
    size_t used = strlen(diag.message);
    snprintf(tail, sizeof tail, "; the smallest limit nnmem fits is %llu B",
             (unsigned long long)smallest);
    if (used + strlen(tail) < sizeof diag.message)
      memcpy(diag.message + used, tail, strlen(tail) + 1);
  }
  if (st != NNMEM_OK) return cli_fail(st, &diag);
  int e = CLI_EXIT_OK;
  char *json = NULL;
  if (o->json) {
    nnmem__text_t t;
    nnmem__jw_t w;
    cli_json_begin(&w, &t, o->json);
    nnmem__jw_object(&w);
    report_json(&w, g, f, title);
    nnmem__jw_end(&w);
    if (nnmem__jw_finish(&w) == NNMEM_OK)
      json = t.data;
    else
      nnmem__text_free(&t), e = CLI_EXIT_INTERNAL;
  }
  if (e == CLI_EXIT_OK) {
    st = write_outputs(g, f, o, title, &diag);
    if (st != NNMEM_OK) e = cli_fail(st, &diag);
  }
  if (e == CLI_EXIT_OK && json)
    fputs(json, stdout);
  else if (e == CLI_EXIT_OK && !o->quiet)
    report_human(stdout, g, f, title);
  free(json);
  nnmem_fit_destroy(f);
  return e;
}

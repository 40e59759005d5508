/* report.c - the reports of `nnmem plan`: a compact human-readable summary
 * and a machine-readable JSON object (the library's profile JSON plus run
 * details), and the live buffers at the peak both use (the peak step of a
 * bare problem comes from nnmem_problem_peak).
 * Largest live buffers (cli_collect_live): one pass keeping the top
 * CLI_TOP_LIVE by size with insertion into a small sorted array.
 * JSON report: the members of memory_profile.json (the library writes them
 * into our writer: one writer, exact integers), then the run details.
 * Complexity: O(n). Thread-safety: pure functions of their
 * arguments; printing goes to the given FILE. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/util.h"
#include "export/export_json.h"
#include "units.h"

static uint64_t rounded_size(const nnmem_buffer_t *b, uint64_t align) {
  uint64_t r;
  if (nnmem__align_up(b->size, nnmem__max_u64(b->align, align), &r))
    return UINT64_MAX;
  return r;
}

/* Is buffer i a root active at `step` (inside its lifetime, in no gap)?
 * Sub-buffers lie inside their parents and are not counted again. */
static int root_active_at(const nnmem_problem_t *p, size_t i, uint64_t step) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p) + i;
  if (b->first > step || step >= b->last) return 0;
  if (nnmem_problem_parent(p, i, NULL, NULL) == NNMEM_OK) return 0;
  const nnmem_interval_t *g;
  size_t ng = nnmem_problem_gaps(p, i, &g);
  for (size_t k = 0; k < ng; k++)
    if (g[k].first <= step && step < g[k].last) return 0;
  return 1;
}

void cli_collect_live(const nnmem_problem_t *p, uint64_t align, uint64_t step,
                      cli_run_t *run) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  run->n_top = run->n_live = 0;
  run->live_bytes = 0;
  for (size_t i = 0; i < n; i++) {
    if (!root_active_at(p, i, step)) continue;
    uint64_t s = rounded_size(&b[i], align);
    run->n_live++;
    run->live_bytes =
        run->live_bytes > UINT64_MAX - s ? UINT64_MAX : run->live_bytes + s;
    size_t k = run->n_top < CLI_TOP_LIVE ? run->n_top++ : CLI_TOP_LIVE;
    if (k == CLI_TOP_LIVE && b[i].size <= run->top[k - 1].size) continue;
    if (k == CLI_TOP_LIVE) k--;
    while (k > 0 && run->top[k - 1].size < b[i].size) {
      run->top[k] = run->top[k - 1];
      k--;
    }
    run->top[k] = (cli_live_entry_t){i, b[i].size};
  }
}

const char *cli_printable(const char *s, char *buf, size_t cap) {
  const unsigned char *u = (const unsigned char *)s;
  size_t n = 0;
  while (u[n] && u[n] >= 0x20 && u[n] != 0x7f)
    n++;
  if (!u[n] || !cap) return s;
  nnmem__escape(s, buf, cap);
  return buf;
}

const char *cli_buffer_name(const nnmem_problem_t *p, size_t i, char *buf,
                            size_t cap) {
  const char *id = nnmem_problem_id(p, i);
  if (id) return cli_printable(id, buf, cap);
  snprintf(buf, cap, "#%zu", i);
  return buf;
}

/* ---- human report ------------------------------------------------------ */

static const char *plural(uint64_t n) {
  return n == 1 ? "" : "s";
}

static void put_bytes(FILE *f, const char *label, uint64_t v,
                      uint64_t of_total) {
  char b[80];
  fprintf(f, "  %-14s %s", label, cli_fmt_bytes(v, b, sizeof b));
  if (of_total) fprintf(f, "  %.1f%%", 100.0 * (double)v / (double)of_total);
  fputc('\n', f);
}

static void put_strategy(FILE *f, const cli_run_t *r) {
  char g[40];
  nnmem_strategy_t used = nnmem_plan_strategy(r->plan);
  fprintf(f, "  %-14s %s", "strategy", nnmem_strategy_name(used));
  if (r->opts->no_reuse)
    fputs(" (--no-reuse)", f);
  else if (r->opts->strategy != used)
    fprintf(f, " (picked by %s)", nnmem_strategy_name(r->opts->strategy));
  if (r->opts->align > 1)
    fprintf(f, ", alignment %s", cli_fmt_grouped(r->opts->align, g, sizeof g));
  double plan_ms = nnmem_plan_seconds(r->plan) * 1e3;
  fprintf(f, ", %.*f ms planning, %.1f ms total\n", plan_ms < 10 ? 2 : 1,
          plan_ms, r->total_s * 1e3);
  if (nnmem_plan_time_limited(r->plan)) {
    unsigned k = nnmem_plan_strategies_run(r->plan);
    fprintf(f, "  %-14s time limit reached: best of %u strateg%s so far\n", "",
            k, k == 1 ? "y" : "ies");
  }
  if (r->opts->capacity) {
    char c[80];
    fprintf(f, "  %-14s %s (fits)\n", "capacity",
            cli_fmt_bytes(r->opts->capacity, c, sizeof c));
  }
}

static void put_top_live(FILE *f, const cli_run_t *r) {
  char name[32], b[80];
  int width = 24; /* the name column fits the longest name, up to 60 */
  for (size_t i = 0; i < r->n_top; i++) {
    size_t len = strlen(
        cli_buffer_name(r->problem, r->top[i].buffer, name, sizeof name));
    if (len > (size_t)width) width = len > 60 ? 60 : (int)len;
  }
  for (size_t i = 0; i < r->n_top; i++) {
    const char *id =
        cli_buffer_name(r->problem, r->top[i].buffer, name, sizeof name);
    fprintf(f, "      %-*s  %s\n", width, id,
            cli_fmt_bytes(r->top[i].size, b, sizeof b));
  }
  if (r->n_live > r->n_top)
    fprintf(f, "      ... and %zu more\n", r->n_live - r->n_top);
}

static size_t count_weights(const nnmem_graph_t *g) {
  size_t n = nnmem_graph_tensor_count(g), w = 0;
  for (uint32_t i = 0; i < n; i++) {
    nnmem_tensor_info_t t;
    if (nnmem_graph_tensor(g, i, &t) != NNMEM_OK) continue;
    if (t.kind == NNMEM_TENSOR_WEIGHT || t.kind == NNMEM_TENSOR_CONSTANT) w++;
  }
  return w;
}

static void put_graph_header(FILE *f, const cli_run_t *r) {
  char g1[40], g2[40], g3[40], t[256], n[256];
  const char *title = cli_printable(r->title, t, sizeof t);
  if (r->builtin)
    fprintf(f, "nnmem plan: %s (built-in model, batch %u)\n", title,
            r->opts->batch ? r->opts->batch : 1u);
  else
    fprintf(f, "nnmem plan: %s (graph '%s')\n", title,
            cli_printable(nnmem_graph_name(r->graph), n, sizeof n));
  size_t nt = nnmem_graph_tensor_count(r->graph);
  fprintf(f, "  %-14s %s ops, %s tensors (%zu weights), %s buffers", "graph",
          cli_fmt_grouped(nnmem_graph_op_count(r->graph), g1, sizeof g1),
          cli_fmt_grouped(nt, g2, sizeof g2), count_weights(r->graph),
          cli_fmt_grouped(nnmem_problem_count(r->problem), g3, sizeof g3));
  size_t aliased = nnmem_liveness_aliased_tensors(r->live);
  if (aliased) fprintf(f, " (+%zu aliased tensors)", aliased);
  fputc('\n', f);
  size_t subs = nnmem_liveness_sub_buffers(r->live);
  if (subs) {
    char b[80];
    fprintf(
        f,
        "  %-14s %zu buffer%s inside Concat outputs / Split and Slice inputs, "
        "%s not allocated on their own\n",
        "sub-buffers", subs, plural(subs),
        cli_fmt_bytes(nnmem_liveness_sub_bytes(r->live), b, sizeof b));
  }
}

static void put_peak_step_graph(FILE *f, const cli_run_t *r) {
  char b[80];
  uint64_t steps = nnmem_liveness_steps(r->live), s = r->prof.peak_step;
  fprintf(f, "  %-14s %llu of %llu", "peak step", (unsigned long long)s,
          (unsigned long long)steps);
  if (s < steps) {
    nnmem_op_info_t op;
    char n[256], t[256];
    if (nnmem_graph_op(r->graph, nnmem_liveness_order(r->live)[s], &op) ==
        NNMEM_OK)
      fprintf(f, ", op '%s' (%s)", cli_printable(op.name, n, sizeof n),
              cli_printable(op.type, t, sizeof t));
  }
  fprintf(f, ": %zu buffer%s live, %s\n", r->n_live, plural(r->n_live),
          cli_fmt_bytes(r->live_bytes, b, sizeof b));
  put_top_live(f, r);
}

/* The "naive" line; a saturated naive sum (past 2^64 - 1 bytes) is shown
 * as a bound: "naive >= 16.0 EiB (saturated)  reuse >= 13.3%". */
static void put_naive(FILE *f, uint64_t naive, const char *reuse,
                      const nnmem_profile_t *p) {
  char b[80];
  if (p->flags & NNMEM_PROFILE_NAIVE_SATURATED)
    fprintf(f, "  %-14s >= %s (saturated)  %s >= %.1f%%\n", "naive",
            cli_fmt_human(naive, b, sizeof b), reuse, 100.0 * p->reuse_ratio);
  else
    fprintf(f, "  %-14s %s  %s %.1f%%\n", "naive",
            cli_fmt_bytes(naive, b, sizeof b), reuse, 100.0 * p->reuse_ratio);
}
/* The search line: shown when a search ran or --optimal was asked. */
static void put_search(FILE *f, const cli_run_t *r) {
  const nnmem_profile_t *p = &r->prof;
  uint64_t nodes = nnmem_plan_search_nodes(r->plan);
  char g[40], b1[40], b2[40];
  if (!nodes && !r->opts->optimal) return;
  const char *kind = nnmem_bound_kind_name(p->bound_kind);
  if (p->optimal)
    fprintf(f, "  %-14s optimal (proven): height = lower bound (%s)", "search",
            kind);
  else
    fprintf(f,
            "  %-14s not proven optimal: gap %.4f%% (best %s B, bound %s B, "
            "%s)",
            "search",
            100.0 * ((double)p->arena_height - (double)p->arena_lower_bound) /
                (double)(p->arena_lower_bound ? p->arena_lower_bound : 1),
            cli_fmt_grouped(p->arena_height, b1, sizeof b1),
            cli_fmt_grouped(p->arena_lower_bound, b2, sizeof b2), kind);
  fprintf(f, ", %s node%s%s\n", cli_fmt_grouped(nodes, g, sizeof g),
          plural(nodes),
          r->interrupted                     ? ", stopped by Ctrl-C"
          : nnmem_plan_time_limited(r->plan) ? ", budget or time limit reached"
                                             : "");
}

/* The "order" line of --order memory: the peak of live arena bytes (the
 * arena lower bound) in the chosen order against the file order. */
static void put_order(FILE *f, const cli_run_t *r) {
  const cli_order_result_t *o = &r->order;
  if (!o->done) return;
  char b1[80], b2[80];
  double saved = o->file_peak ? 100.0 * (double)(o->file_peak - o->peak) /
                                    (double)o->file_peak
                              : 0.0;
  fprintf(f, "  %-14s memory: live peak %s, file order %s, saving %.1f%%\n",
          "order", cli_fmt_bytes(o->peak, b1, sizeof b1),
          cli_fmt_bytes(o->file_peak, b2, sizeof b2), saved);
  fprintf(f, "  %-14s %s, %zu part%s (%zu exact, largest %zu ops), %.1f ms\n",
          "", o->exact ? "optimal (proven)" : "best found (not proven)",
          o->parts, plural(o->parts), o->parts_exact, o->largest_part,
          o->seconds * 1e3);
  if (o->concat_kept_out)
    fprintf(f,
            "  %-14s concat-into-output kept out at %zu op%s (the search's "
            "choice)\n",
            "", o->concat_kept_out, plural(o->concat_kept_out));
}

static void report_graph(FILE *f, const cli_run_t *r) {
  const nnmem_profile_t *p = &r->prof;
  char b1[80], b2[80], q[24];
  put_graph_header(f, r);
  put_strategy(f, r);
  put_bytes(f, "peak memory", p->peak_memory, 0);
  put_bytes(f, "  weights", p->weight_memory, p->peak_memory);
  put_bytes(f, "  activations", p->activation_memory, p->peak_memory);
  put_bytes(f, "  workspace", p->workspace_memory, p->peak_memory);
  fprintf(f, "  %-14s %s  peak/bound %s\n", "lower bound",
          cli_fmt_bytes(p->lower_bound, b1, sizeof b1),
          cli_fmt_ratio(p->peak_memory, p->lower_bound, q, sizeof q));
  fprintf(f, "  %-14s height %s, bound %s, %s\n", "arena",
          cli_fmt_human(p->arena_height, b1, sizeof b1),
          cli_fmt_human(p->arena_lower_bound, b2, sizeof b2),
          cli_fmt_ratio(p->arena_height, p->arena_lower_bound, q, sizeof q));
  put_search(f, r);
  put_naive(f, p->naive_memory, "arena reuse", p);
  put_order(f, r);
  put_peak_step_graph(f, r);
}

static void report_problem(FILE *f, const cli_run_t *r) {
  const nnmem_profile_t *p = &r->prof;
  const nnmem_buffer_t *b = nnmem_problem_buffers(r->problem);
  size_t n = nnmem_problem_count(r->problem);
  uint64_t steps = 0;
  char g[40], g2[40], b1[80], q[24];
  for (size_t i = 0; i < n; i++)
    steps = nnmem__max_u64(steps, b[i].last);
  char t[256];
  fprintf(f, "nnmem plan: %s (MiniMalloc problem)\n",
          cli_printable(r->title, t, sizeof t));
  fprintf(f, "  %-14s %s buffer%s over %s step%s\n", "problem",
          cli_fmt_grouped(n, g, sizeof g), plural(n),
          cli_fmt_grouped(steps, g2, sizeof g2), plural(steps));
  put_strategy(f, r);
  put_bytes(f, "height", p->arena_height, 0);
  fprintf(f, "  %-14s %s  height/bound %s\n", "lower bound",
          cli_fmt_bytes(p->arena_lower_bound, b1, sizeof b1),
          cli_fmt_ratio(p->arena_height, p->arena_lower_bound, q, sizeof q));
  put_search(f, r);
  put_naive(f, p->naive_arena, "reuse", p);
  fprintf(f, "  %-14s %llu: %zu buffer%s live, %s\n", "peak step",
          (unsigned long long)p->peak_step, r->n_live, plural(r->n_live),
          cli_fmt_bytes(r->live_bytes, b1, sizeof b1));
  put_top_live(f, r);
}

void cli_report_human(FILE *f, const cli_run_t *r) {
  if (r->graph)
    report_graph(f, r);
  else
    report_problem(f, r);
}

/* ---- JSON report ------------------------------------------------------- */

static void add_peak_op(nnmem__jw_t *w, const cli_run_t *r) {
  uint64_t s = r->prof.peak_step;
  nnmem_op_info_t op;
  if (!r->graph || s >= nnmem_liveness_steps(r->live)) return;
  if (nnmem_graph_op(r->graph, nnmem_liveness_order(r->live)[s], &op) !=
      NNMEM_OK)
    return;
  nnmem__jw_key(w, "peak_op");
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "name", op.name);
  nnmem__jw_kv_string(w, "type", op.type);
  nnmem__jw_end(w);
}

/* The largest buffers live at the peak step, ids as in the input (JSON
 * escapes what a terminal could not show). */
static void add_top_live(nnmem__jw_t *w, const cli_run_t *r) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(r->problem);
  nnmem__jw_key(w, "peak_live");
  nnmem__jw_array(w);
  for (size_t i = 0; i < r->n_top; i++) {
    size_t k = r->top[i].buffer;
    char num[32];
    const char *id = nnmem_problem_id(r->problem, k);
    if (!id) {
      snprintf(num, sizeof num, "#%zu", k);
      id = num;
    }
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "id", id);
    nnmem__jw_kv_u64(w, "size", b[k].size);
    nnmem__jw_kv_u64(w, "first", b[k].first);
    nnmem__jw_kv_u64(w, "last", b[k].last);
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
}

/* "order": what --order memory found (absent otherwise). */
static void add_order(nnmem__jw_t *w, const cli_run_t *r) {
  const cli_order_result_t *o = &r->order;
  if (!o->done) return;
  nnmem__jw_key(w, "order");
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "method", "memory");
  nnmem__jw_kv_u64(w, "file_order_peak", o->file_peak);
  nnmem__jw_kv_u64(w, "peak", o->peak);
  nnmem__jw_kv_u64(w, "saving_bytes", o->file_peak - o->peak);
  nnmem__jw_kv_bool(w, "optimal", o->exact);
  nnmem__jw_kv_u64(w, "parts", o->parts);
  nnmem__jw_kv_u64(w, "parts_exact", o->parts_exact);
  nnmem__jw_kv_u64(w, "largest_part", o->largest_part);
  nnmem__jw_kv_u64(w, "concat_kept_out", o->concat_kept_out);
  nnmem__jw_kv_double(w, "ms", o->seconds * 1e3);
  nnmem__jw_end(w);
}

static void add_details(nnmem__jw_t *w, const cli_run_t *r) {
  const nnmem_profile_t *p = &r->prof;
  nnmem__jw_kv_string(w, "input", r->builtin ? "" : r->title);
  nnmem__jw_kv_string(w, "input_kind",
                      r->builtin ? "builtin"
                      : r->graph ? "graph"
                                 : "problem");
  if (r->builtin)
    nnmem__jw_kv_u64(w, "batch", r->opts->batch ? r->opts->batch : 1);
  if (r->graph) {
    nnmem__jw_kv_u64(w, "ops", nnmem_graph_op_count(r->graph));
    nnmem__jw_kv_u64(w, "steps", nnmem_liveness_steps(r->live));
    nnmem__jw_kv_u64(w, "aliased_tensors",
                     nnmem_liveness_aliased_tensors(r->live));
    nnmem__jw_kv_u64(w, "sub_buffers", nnmem_liveness_sub_buffers(r->live));
    nnmem__jw_kv_u64(w, "sub_buffer_bytes", nnmem_liveness_sub_bytes(r->live));
  }
  nnmem__jw_kv_string(w, "strategy_requested",
                      nnmem_strategy_name(r->opts->strategy));
  nnmem__jw_kv_string(w, "strategy_used",
                      nnmem_strategy_name(nnmem_plan_strategy(r->plan)));
  nnmem__jw_kv_bool(w, "time_limited", nnmem_plan_time_limited(r->plan));
  nnmem__jw_kv_string(w, "search_status",
                      nnmem_plan_status_name(nnmem_plan_status(r->plan)));
  nnmem__jw_kv_u64(w, "search_nodes", nnmem_plan_search_nodes(r->plan));
  nnmem__jw_kv_bool(w, "interrupted", r->interrupted);
  nnmem__jw_kv_u64(w, "alignment", r->opts->align ? r->opts->align : 1);
  nnmem__jw_kv_u64(w, "capacity", r->opts->capacity);
  nnmem__jw_kv_bool(w, "no_reuse", r->opts->no_reuse);
  nnmem__jw_kv_double(w, "height_over_lower_bound",
                      p->arena_lower_bound ? (double)p->arena_height /
                                                 (double)p->arena_lower_bound
                                           : 1.0);
  nnmem__jw_kv_u64(w, "peak_live_buffers", r->n_live);
  nnmem__jw_kv_u64(w, "peak_live_bytes", r->live_bytes);
  add_peak_op(w, r);
  add_top_live(w, r);
  add_order(w, r);
  nnmem__jw_kv_double(w, "plan_ms", nnmem_plan_seconds(r->plan) * 1e3);
  nnmem__jw_kv_double(w, "total_ms", r->total_s * 1e3);
  nnmem__jw_kv_bool(w, "verified", 1);
}

void cli_report_json(nnmem__jw_t *w, const cli_run_t *r) {
  const char *model = r->graph ? nnmem_graph_name(r->graph) : r->title;
  nnmem__profile_json_members(w, &r->prof, model);
  add_details(w, r);
}

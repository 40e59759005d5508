/* report.c - the reports of `nnmem plan`: a compact human-readable summary
 * and a machine-readable JSON object (the library's profile JSON plus run
 * details), and the peak-step analysis both use.
 *
 * Peak step (cli_peak_step), for problems without a library profile:
 *   1. make two events per buffer: +size at `first`, -size at `last`
 *      (sizes rounded up to max(align, buffer align));
 *   2. sort by step, ends before starts at the same step (lifetimes are
 *      half-open, so [0,3) and [3,9) are never live together);
 *   3. sweep, keeping the running sum; the step where it is largest wins
 *      (the earliest on ties).
 * Largest live buffers (cli_collect_live): one pass keeping the top
 * CLI_TOP_LIVE by size with insertion into a small sorted array.
 * Complexity: O(n log n) and O(n). Thread-safety: pure functions of their
 * arguments; printing goes to the given FILE. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/util.h"
#include "units.h"

typedef struct live_event {
  uint64_t step;
  int start; /* 0 = end, 1 = start: ends sort first */
  uint64_t bytes;
} live_event_t;

static int cmp_event(const void *a, const void *b) {
  const live_event_t *x = a, *y = b;
  if (x->step != y->step) return x->step < y->step ? -1 : 1;
  return x->start - y->start;
}

static uint64_t rounded_size(const nnmem_buffer_t *b, uint64_t align) {
  uint64_t r;
  if (nnmem__align_up(b->size, nnmem__max_u64(b->align, align), &r))
    return UINT64_MAX;
  return r;
}

nnmem_status_t cli_peak_step(const nnmem_problem_t *p, uint64_t align,
                             uint64_t *step_out) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  *step_out = 0;
  if (n == 0) return NNMEM_OK;
  live_event_t *ev = calloc(2 * n, sizeof *ev);
  if (!ev) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    uint64_t s = rounded_size(&b[i], align);
    ev[2 * i] = (live_event_t){b[i].first, 1, s};
    ev[2 * i + 1] = (live_event_t){b[i].last, 0, s};
  }
  qsort(ev, 2 * n, sizeof *ev, cmp_event);
  uint64_t live = 0, best = 0;
  for (size_t i = 0; i < 2 * n; i++) {
    if (ev[i].start) {
      live = live > UINT64_MAX - ev[i].bytes ? UINT64_MAX : live + ev[i].bytes;
      if (live > best) {
        best = live;
        *step_out = ev[i].step;
      }
    } else {
      live -= ev[i].bytes < live ? ev[i].bytes : live;
    }
  }
  free(ev);
  return NNMEM_OK;
}

void cli_collect_live(const nnmem_problem_t *p, uint64_t align, uint64_t step,
                      cli_run_t *run) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  run->n_top = run->n_live = 0;
  run->live_bytes = 0;
  for (size_t i = 0; i < n; i++) {
    if (b[i].first > step || step >= b[i].last) continue;
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
  size_t i = 0;
  for (; u[i] && i + 1 < cap; i++)
    buf[i] = u[i] < 0x20 || u[i] == 0x7f ? '?' : (char)u[i];
  buf[i] = '\0';
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
  fprintf(f, "  %-14s %s  arena reuse %.1f%%\n", "naive",
          cli_fmt_bytes(p->naive_memory, b1, sizeof b1),
          100.0 * p->reuse_ratio);
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
  fprintf(f, "  %-14s %s  reuse %.1f%%\n", "naive",
          cli_fmt_bytes(p->naive_arena, b1, sizeof b1), 100.0 * p->reuse_ratio);
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

static void add_num(cJSON *o, const char *k, double v) {
  if (!cJSON_HasObjectItem(o, k)) cJSON_AddNumberToObject(o, k, v);
}

static void add_str(cJSON *o, const char *k, const char *v) {
  if (!cJSON_HasObjectItem(o, k)) cJSON_AddStringToObject(o, k, v);
}

static void add_peak_op(cJSON *o, const cli_run_t *r) {
  uint64_t s = r->prof.peak_step;
  nnmem_op_info_t op;
  if (!r->graph || s >= nnmem_liveness_steps(r->live)) return;
  if (nnmem_graph_op(r->graph, nnmem_liveness_order(r->live)[s], &op) !=
      NNMEM_OK)
    return;
  cJSON *j = cJSON_AddObjectToObject(o, "peak_op");
  if (!j) return;
  cJSON_AddStringToObject(j, "name", op.name);
  cJSON_AddStringToObject(j, "type", op.type);
}

static void add_top_live(cJSON *o, const cli_run_t *r) {
  char name[32];
  cJSON *arr = cJSON_AddArrayToObject(o, "peak_live");
  const nnmem_buffer_t *b = nnmem_problem_buffers(r->problem);
  for (size_t i = 0; arr && i < r->n_top; i++) {
    size_t k = r->top[i].buffer;
    cJSON *e = cJSON_CreateObject();
    if (!e) return;
    cJSON_AddStringToObject(e, "id",
                            cli_buffer_name(r->problem, k, name, sizeof name));
    cJSON_AddNumberToObject(e, "size", (double)b[k].size);
    cJSON_AddNumberToObject(e, "first", (double)b[k].first);
    cJSON_AddNumberToObject(e, "last", (double)b[k].last);
    cJSON_AddItemToArray(arr, e);
  }
}

static void add_details(cJSON *o, const cli_run_t *r) {
  const nnmem_profile_t *p = &r->prof;
  add_str(o, "input", r->builtin ? "" : r->title);
  add_str(o, "input_kind",
          r->builtin ? "builtin"
          : r->graph ? "graph"
                     : "problem");
  if (r->builtin) add_num(o, "batch", r->opts->batch ? r->opts->batch : 1);
  if (r->graph) {
    add_num(o, "ops", (double)nnmem_graph_op_count(r->graph));
    add_num(o, "steps", (double)nnmem_liveness_steps(r->live));
    add_num(o, "aliased_tensors",
            (double)nnmem_liveness_aliased_tensors(r->live));
  }
  add_str(o, "strategy_requested", nnmem_strategy_name(r->opts->strategy));
  add_str(o, "strategy_used",
          nnmem_strategy_name(nnmem_plan_strategy(r->plan)));
  add_num(o, "alignment", (double)(r->opts->align ? r->opts->align : 1));
  add_num(o, "capacity", (double)r->opts->capacity);
  cJSON_AddBoolToObject(o, "no_reuse", r->opts->no_reuse);
  add_num(o, "height_over_lower_bound",
          p->arena_lower_bound
              ? (double)p->arena_height / (double)p->arena_lower_bound
              : 1.0);
  add_num(o, "peak_live_buffers", (double)r->n_live);
  add_num(o, "peak_live_bytes", (double)r->live_bytes);
  add_peak_op(o, r);
  add_top_live(o, r);
  add_num(o, "plan_ms", nnmem_plan_seconds(r->plan) * 1e3);
  add_num(o, "total_ms", r->total_s * 1e3);
  cJSON_AddBoolToObject(o, "verified", 1);
}

nnmem_status_t cli_report_json(const cli_run_t *r, char **out) {
  char *prof = NULL;
  *out = NULL;
  const char *model = r->graph ? nnmem_graph_name(r->graph) : r->title;
  nnmem_status_t st = nnmem_profile_format_json(&r->prof, model, &prof);
  if (st != NNMEM_OK) return st;
  cJSON *o = cJSON_Parse(prof);
  free(prof);
  if (!o || !cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return NNMEM_ERR_PARSE;
  }
  add_details(o, r);
  char *text = cJSON_Print(o);
  cJSON_Delete(o);
  if (!text) return NNMEM_ERR_NOMEM;
  /* cJSON allocates with malloc by default, so free() releases it. */
  *out = text;
  return NNMEM_OK;
}

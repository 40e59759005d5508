/* cmd_plan_multi.c - `nnmem plan` with several plans in one arena:
 *
 *   nnmem plan a.onnx b.onnx c.onnx --shared-arena [--concurrent a.onnx,b.onnx]
 *   nnmem plan model.onnx --dim batch=1..32        (shape buckets)
 *
 * Both are "several plans that share one arena": models that take turns
 * (run one after another) reuse the same bytes, so the arena is the
 * largest height; models named together in a --concurrent group run at
 * the same time and are stacked, so their heights add up. Shape buckets
 * are plans of one model that never run at the same time (one shape per
 * inference): the arena is the largest bucket's height.
 *
 * Steps:
 *   1. groups: each --concurrent A,B,... is one group; every name must be
 *      one of the inputs, in at most one group, and a group has >= 2;
 *   2. plan every model (or every bucket: the model with NAME=value bound)
 *      exactly as `nnmem plan` plans one (cmd_plan.c: load, order,
 *      liveness, plan, verify with the independent verifier, profile); the
 *      first failure stops with its exit code and message, nothing written;
 *   3. nnmem_arena_layout places the plans (bases; concurrent ones stacked
 *      at --align), and nnmem_arena_layout_check (the independent checker)
 *      must accept it (else exit 3); an arena over --capacity is exit 2
 *      (each plan alone was already held to it by the planner);
 *   4. format --json, --profile and --out in memory, stage the files as one
 *      output set (common/outset.h): all are renamed or none;
 *   5. print the report (text, or the JSON report).
 * Weights: not in the arena. Several models: each keeps its own weights
 * resident (different parameters cannot share bytes), so the weights add
 * up. Buckets: one model, its weights resident once (the largest of the
 * buckets' weights: constant-folded shapes may differ).
 * Invariant: after a non-zero exit no output file changed.
 * Complexity: the plans' own, plus O(n^2) for the layout and its check.
 * Thread-safety: single-threaded program. */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "common/util.h"
#include "export/export_json.h"
#include "units.h"

#define MAX_ENTRIES                                         \
  (CLI_MAX_MODELS > NNMEM_ONNX_BUCKETS_MAX ? CLI_MAX_MODELS \
                                           : NNMEM_ONNX_BUCKETS_MAX)

typedef struct entry {
  const char *input;
  char label[160]; /* the input path, or "batch=8" */
  int64_t value;   /* buckets: the dim's value; else 0 */
  uint32_t group;  /* 0: runs alone; else its --concurrent group (1-based) */
  cli_planned_t *pl;
} entry_t;

typedef struct multi {
  const cli_plan_opts_t *o;
  int buckets; /* 1: shape buckets of one model */
  size_t n;
  entry_t e[MAX_ENTRIES];
  uint64_t heights[MAX_ENTRIES], bases[MAX_ENTRIES];
  uint32_t groups[MAX_ENTRIES];
  nnmem_arena_layout_t lay;
  uint64_t weights; /* resident weights (see the header) */
  char *json;       /* the --json report */
  nnmem_diag_t diag;
} multi_t;

static int same_input(const char *a, const char *b, size_t blen) {
  char name[4096];
  if (blen >= sizeof name) return 0;
  memcpy(name, b, blen);
  name[blen] = '\0';
  return strcmp(a, name) == 0 || cli_same_file(a, name);
}

/* Step 1: the group of every input from the --concurrent lists. */
static int assign_groups(multi_t *m) {
  const cli_plan_opts_t *o = m->o;
  for (size_t g = 0; g < o->n_concurrent; g++) {
    const char *s = o->concurrent[g];
    size_t members = 0;
    for (;;) {
      size_t len = strcspn(s, ",");
      size_t hit = m->n; /* an input not in a group yet, else any: the
                            same file may be given twice (two models) */
      for (size_t i = 0; i < m->n && hit == m->n; i++)
        if (!m->e[i].group && same_input(m->e[i].input, s, len)) hit = i;
      for (size_t i = 0; i < m->n && hit == m->n; i++)
        if (same_input(m->e[i].input, s, len)) hit = i;
      if (hit == m->n)
        return cli_usage_error("plan",
                               "--concurrent '%s': '%.*s' is not one of the "
                               "inputs",
                               o->concurrent[g], (int)len, s);
      if (m->e[hit].group)
        return cli_usage_error("plan",
                               "--concurrent: '%s' is in two groups (a model "
                               "runs in one group)",
                               m->e[hit].input);
      m->e[hit].group = (uint32_t)g + 1;
      members++;
      if (!s[len]) break;
      s += len + 1;
    }
    if (members < 2)
      return cli_usage_error("plan",
                             "--concurrent '%s': a group names at least two "
                             "models",
                             o->concurrent[g]);
  }
  return 0;
}

static int make_entries(multi_t *m) {
  const cli_plan_opts_t *o = m->o;
  if (m->buckets) {
    const nnmem_onnx_dim_buckets_t *b = &o->onnx.buckets;
    m->n = b->n;
    for (size_t i = 0; i < b->n; i++) {
      m->e[i].input = o->input;
      m->e[i].value = b->values[i];
      snprintf(m->e[i].label, sizeof m->e[i].label, "%s=%lld", b->name,
               (long long)b->values[i]);
    }
    return 0;
  }
  m->n = 1 + o->n_more;
  for (size_t i = 0; i < m->n; i++) {
    m->e[i].input = i ? o->more_inputs[i - 1] : o->input;
    snprintf(m->e[i].label, sizeof m->e[i].label, "%s", m->e[i].input);
  }
  return assign_groups(m);
}

/* Step 2. */
static int plan_entries(multi_t *m) {
  for (size_t i = 0; i < m->n; i++) {
    nnmem_onnx_dim_t bind = {m->o->onnx.buckets.name, m->e[i].value};
    int e = cli_plan_model(m->o, m->e[i].input, m->buckets ? &bind : NULL,
                           &m->e[i].pl);
    if (e) {
      if (m->buckets)
        fprintf(stderr, "nnmem: (while planning the bucket %s)\n",
                m->e[i].label);
      return e;
    }
    const cli_run_t *r = cli_planned_run(m->e[i].pl);
    m->heights[i] = r->prof.arena_height;
    m->groups[i] = m->e[i].group;
    uint64_t w = r->prof.weight_memory;
    if (m->buckets)
      m->weights = nnmem__max_u64(m->weights, w);
    else if (nnmem__add_overflow(m->weights, w, &m->weights))
      m->weights = UINT64_MAX;
  }
  return 0;
}

/* Step 3. */
static int place(multi_t *m) {
  nnmem_arena_layout_config_t c;
  nnmem_arena_layout_config_init(&c);
  c.groups = m->groups;
  c.alignment = m->o->align;
  nnmem_status_t st =
      nnmem_arena_layout(m->heights, m->n, &c, m->bases, &m->lay, &m->diag);
  if (st != NNMEM_OK) return cli_fail(st, &m->diag);
  st = nnmem_arena_layout_check(m->heights, m->n, &c, m->bases, m->lay.size,
                                &m->diag);
  if (st != NNMEM_OK) {
    fprintf(stderr,
            "nnmem: internal error: the arena layout failed its "
            "check: %s\n",
            m->diag.message);
    return CLI_EXIT_INTERNAL;
  }
  if (m->o->capacity && m->lay.size > m->o->capacity) {
    /* every plan fits alone (the planner checked); together they do not */
    char a[64], b[64];
    fprintf(stderr,
            "nnmem: does not fit: the %s needs %s, over --capacity %s\n",
            m->buckets ? "arena of the largest bucket" : "shared arena",
            cli_fmt_bytes(m->lay.size, a, sizeof a),
            cli_fmt_bytes(m->o->capacity, b, sizeof b));
    return CLI_EXIT_NOFIT;
  }
  return 0;
}

static double saving_ratio(const multi_t *m) {
  return m->lay.sum_heights ? (double)m->lay.saving / (double)m->lay.sum_heights
                            : 0.0;
}

/* The members both the --json report and the profile carry. */
static void summary_json(nnmem__jw_t *w, const multi_t *m, int profiles) {
  uint64_t device = 0;
  if (nnmem__add_overflow(m->lay.size, m->weights, &device))
    device = UINT64_MAX;
  nnmem__jw_kv_string(w, "mode", m->buckets ? "shape-buckets" : "shared-arena");
  if (m->buckets) {
    const nnmem_onnx_dim_buckets_t *b = &m->o->onnx.buckets;
    nnmem__jw_kv_string(w, "input", m->o->input);
    nnmem__jw_kv_string(w, "dim", b->name);
    nnmem__jw_kv_i64(w, "lo", b->lo);
    nnmem__jw_kv_i64(w, "hi", b->hi);
    nnmem__jw_kv_string(w, "bucketing", b->is_range ? "powers-of-two" : "list");
  }
  nnmem__jw_kv_u64(w, "arena_bytes", m->lay.size);
  nnmem__jw_kv_u64(w, "separate_arenas_bytes", m->lay.sum_heights);
  nnmem__jw_kv_u64(w, "saving_bytes", m->lay.saving);
  nnmem__jw_kv_double(w, "saving_ratio", saving_ratio(m));
  nnmem__jw_kv_string(w, "weights",
                      m->buckets ? "one-model-resident" : "per-model-resident");
  nnmem__jw_kv_u64(w, "weights_bytes", m->weights);
  nnmem__jw_kv_u64(w, "device_bytes", device);
  nnmem__jw_key(w, m->buckets ? "buckets" : "models");
  nnmem__jw_array(w);
  for (size_t i = 0; i < m->n; i++) {
    const cli_run_t *r = cli_planned_run(m->e[i].pl);
    nnmem__jw_object(w);
    if (m->buckets) {
      nnmem__jw_kv_i64(w, "value", m->e[i].value);
      nnmem__jw_kv_i64(w, "serves_from", i ? m->e[i - 1].value + 1 : 1);
    } else {
      nnmem__jw_kv_string(w, "input", m->e[i].input);
      nnmem__jw_kv_u64(w, "group", m->e[i].group);
    }
    nnmem__jw_kv_u64(w, "base", m->bases[i]);
    nnmem__jw_kv_u64(w, "height", m->heights[i]);
    nnmem__jw_kv_u64(w, "arena_lower_bound", r->prof.arena_lower_bound);
    nnmem__jw_kv_u64(w, "weights_bytes", r->prof.weight_memory);
    nnmem__jw_kv_u64(w, "peak_memory", r->prof.peak_memory);
    nnmem__jw_kv_string(w, "strategy", nnmem_strategy_name(r->prof.strategy));
    if (profiles) {
      nnmem__jw_key(w, "profile");
      nnmem__jw_object(w);
      nnmem__profile_json_members(
          w, &r->prof, r->graph ? nnmem_graph_name(r->graph) : r->title);
      const nnmem_onnx_report_t *ox = cli_planned_onnx(m->e[i].pl);
      if (ox) cli_onnx_json_add(w, ox);
      nnmem__jw_end(w);
    }
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
}

static nnmem_status_t finish(nnmem__jw_t *w, nnmem__text_t *t, char **out) {
  nnmem_status_t st = nnmem__jw_finish(w);
  if (st != NNMEM_OK) {
    nnmem__text_free(t);
    return st;
  }
  *out = t->data;
  return NNMEM_OK;
}

static nnmem_status_t format_doc(const multi_t *m, int json, int profiles,
                                 char **out) {
  nnmem__text_t t;
  nnmem__jw_t w;
  cli_json_begin(&w, &t, json);
  nnmem__jw_object(&w);
  summary_json(&w, m, profiles);
  nnmem__jw_end(&w);
  return finish(&w, &t, out);
}

/* The --out document: the layout and every plan in the plan JSON form of
 * `nnmem plan --out x.json` (bases added to nothing: offsets stay relative
 * to the model's base); buckets also name their dim ("dim"), so `nnmem
 * verify` can bind each plan's "value" (nnmem_multi_plan_read_json). */
static nnmem_status_t format_plans(const multi_t *m, char **out) {
  nnmem__text_t t;
  nnmem__jw_t w;
  nnmem_status_t st = NNMEM_OK;
  cli_json_begin(&w, &t, CLI_JSON_PRETTY);
  nnmem__jw_object(&w);
  nnmem__jw_kv_string(&w, "format", "nnmem-shared-arena");
  nnmem__jw_kv_u64(&w, "version", 1);
  nnmem__jw_kv_string(&w, "mode",
                      m->buckets ? "shape-buckets" : "shared-arena");
  nnmem__jw_kv_u64(&w, "arena_bytes", m->lay.size);
  if (m->buckets) /* the dim each plan's "value" binds (nnmem verify) */
    nnmem__jw_kv_string(&w, "dim", m->o->onnx.buckets.name);
  nnmem__jw_key(&w, "plans");
  nnmem__jw_array(&w);
  for (size_t i = 0; i < m->n && st == NNMEM_OK; i++) {
    const cli_run_t *r = cli_planned_run(m->e[i].pl);
    nnmem__jw_object(&w);
    nnmem__jw_kv_string(&w, "label", m->e[i].label);
    nnmem__jw_kv_string(&w, "input", m->e[i].input);
    if (m->buckets) nnmem__jw_kv_i64(&w, "value", m->e[i].value);
    nnmem__jw_kv_u64(&w, "group", m->e[i].group);
    nnmem__jw_kv_u64(&w, "base", m->bases[i]);
    nnmem__jw_key(&w, "plan");
    st = r->graph
             ? nnmem__plan_json(&w, r->graph, r->live, r->plan, m->o->align)
             : nnmem__problem_plan_json(&w, r->problem, r->plan, m->o->align);
    nnmem__jw_end(&w);
  }
  nnmem__jw_end(&w);
  nnmem__jw_end(&w);
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    return st;
  }
  return finish(&w, &t, out);
}

static nnmem_status_t stage(multi_t *m, nnmem__outset_t *set) {
  nnmem_status_t st = NNMEM_OK;
  char *text = NULL;
  if (m->o->out) {
    st = format_plans(m, &text);
    if (st == NNMEM_OK)
      st =
          nnmem__outset_add_bytes(set, m->o->out, text, strlen(text), &m->diag);
    else
      nnmem__diag(&m->diag, st, "%s: formatting the plans: %s", m->o->out,
                  nnmem_status_str(st));
    free(text);
    text = NULL;
  }
  if (st == NNMEM_OK && m->o->profile) {
    st = format_doc(m, CLI_JSON_PRETTY, 1, &text);
    if (st == NNMEM_OK)
      st = nnmem__outset_add_bytes(set, m->o->profile, text, strlen(text),
                                   &m->diag);
    else
      nnmem__diag(&m->diag, st, "%s: formatting the profile: %s", m->o->profile,
                  nnmem_status_str(st));
    free(text);
  }
  return st;
}

/* Step 4: every file, or none. */
static nnmem_status_t write_outputs(multi_t *m) {
  if (!m->o->out && !m->o->profile) return NNMEM_OK;
  nnmem__outset_t *set = NULL;
  nnmem_status_t st = nnmem__outset_create(&set);
  if (st != NNMEM_OK) return nnmem__diag(&m->diag, st, "out of memory");
  cli_outputs_guard(set);
  st = stage(m, set);
  if (st == NNMEM_OK) st = nnmem__outset_commit(set, &m->diag);
  nnmem__outset_destroy(set);
  cli_outputs_unguard();
  return st;
}

static void print_report(FILE *f, const multi_t *m) {
  char a[64], b[64], c[64];
  if (m->buckets) {
    const nnmem_onnx_dim_buckets_t *bk = &m->o->onnx.buckets;
    fprintf(f, "nnmem plan: %s, %zu shape buckets of '%s' (%s %lld..%lld)\n",
            m->o->input, m->n, bk->name,
            bk->is_range ? "powers of two in" : "list", (long long)bk->lo,
            (long long)bk->hi);
    fprintf(f, "  %-16s %-14s %-14s %-14s %s\n", "bucket", "serves", "height",
            "bound", "weights");
  } else {
    fprintf(f, "nnmem plan: %zu models in one shared arena\n", m->n);
    fprintf(f, "  %-28s %-6s %-12s %-12s %s\n", "model", "group", "height",
            "base", "weights");
  }
  for (size_t i = 0; i < m->n; i++) {
    const cli_run_t *r = cli_planned_run(m->e[i].pl);
    char buf[4 * 160], serves[48], d[64];
    const char *label = m->e[i].label, *slash = strrchr(label, '/');
    if (!m->buckets && slash && slash[1]) label = slash + 1; /* file name */
    const char *name = cli_printable(label, buf, sizeof buf);
    if (m->buckets) {
      snprintf(serves, sizeof serves, "%lld..%lld",
               (long long)(i ? m->e[i - 1].value + 1 : 1),
               (long long)m->e[i].value);
      fprintf(f, "  %-16s %-14s %-14s %-14s %s\n", name, serves,
              cli_fmt_human(m->heights[i], a, sizeof a),
              cli_fmt_human(r->prof.arena_lower_bound, b, sizeof b),
              cli_fmt_human(r->prof.weight_memory, c, sizeof c));
    } else {
      char g[16] = "-";
      if (m->e[i].group) snprintf(g, sizeof g, "%u", m->e[i].group);
      fprintf(f, "  %-28s %-6s %-12s %-12s %s\n", name, g,
              cli_fmt_human(m->heights[i], a, sizeof a),
              cli_fmt_human(m->bases[i], d, sizeof d),
              cli_fmt_human(r->prof.weight_memory, c, sizeof c));
    }
  }
  fprintf(f, "  %-16s %s  (%s)\n", "arena",
          cli_fmt_bytes(m->lay.size, a, sizeof a),
          m->buckets           ? "sized for the largest bucket"
          : m->o->n_concurrent ? "models take turns; concurrent groups add up"
                               : "models take turns: the largest height");
  fprintf(f, "  %-16s %s\n", "separate arenas",
          cli_fmt_bytes(m->lay.sum_heights, a, sizeof a));
  fprintf(f, "  %-16s %s  %.1f%%\n", "saving",
          cli_fmt_bytes(m->lay.saving, a, sizeof a), 100.0 * saving_ratio(m));
  fprintf(f, "  %-16s %s  (%s)\n", "weights",
          cli_fmt_bytes(m->weights, a, sizeof a),
          m->buckets ? "one model: resident once"
                     : "per model, resident, not shared");
  uint64_t device = 0;
  if (nnmem__add_overflow(m->lay.size, m->weights, &device))
    device = UINT64_MAX;
  fprintf(f, "  %-16s %s  (arena + weights)\n", "device memory",
          cli_fmt_bytes(device, a, sizeof a));
}

static void multi_free(multi_t *m) {
  for (size_t i = 0; i < m->n; i++)
    cli_planned_free(m->e[i].pl);
  free(m->json);
  free(m);
}

static int run(multi_t *m) {
  int e = make_entries(m);
  if (!e) e = plan_entries(m);
  if (!e) e = place(m);
  if (e) return e;
  if (m->o->json) {
    nnmem_status_t st = format_doc(m, m->o->json, 0, &m->json);
    if (st != NNMEM_OK) {
      fprintf(stderr, "nnmem: internal error: JSON report: %s\n",
              nnmem_status_str(st));
      return CLI_EXIT_INTERNAL;
    }
  }
  nnmem_status_t st = write_outputs(m);
  if (st != NNMEM_OK) return cli_fail(st, &m->diag);
  if (m->json) {
    fputs(m->json, stdout);
  } else if (!m->o->quiet) {
    print_report(stdout, m);
    /* buckets: the import report of the largest (defaults of other dims) */
    const nnmem_onnx_report_t *ox =
        m->buckets ? cli_planned_onnx(m->e[m->n - 1].pl) : NULL;
    if (ox) cli_onnx_summary(stdout, ox);
  }
  return CLI_EXIT_OK;
}

int cli_plan_multi(const cli_plan_opts_t *o) {
  multi_t *m = calloc(1, sizeof *m);
  if (!m) {
    fprintf(stderr, "nnmem: out of memory\n");
    return CLI_EXIT_INTERNAL;
  }
  m->o = o;
  m->buckets = o->onnx.has_buckets;
  int e = run(m);
  multi_free(m);
  return e;
}

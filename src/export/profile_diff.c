/* profile_diff.c - two memory_profile.json documents compared key by key
 * (nnmem_profile_diff, nnmem/profiler.h; the CLI's `nnmem diff`).
 *
 * Steps: 1. parse each text with numbers kept exact (import/json_exact.h);
 * 2. read the known keys of each (the four required ones, the optional
 * ones, the timeline: steps strictly increasing), every error naming the
 * file and the key; 3. for each key in the fixed order, a row when both
 * have it, else the key goes to only_in_a / only_in_b; 4. the timelines
 * as step functions (an entry holds until the next one; a timeline covers
 * its first to its last entry's step: a planned timeline lists only the
 * steps where the live bytes change, a measured one every step) compared
 * over the steps both cover, in one merge of the two sorted lists: the
 * first step that differs, the largest |B - A| and its step, the mean
 * |B - A| over the steps; 5. render as text or as JSON through the one
 * writer.
 * Complexity: O(text + entries). Thread-safety: each call is independent. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_write.h"
#include "common/text.h"
#include "import/json_exact.h"
#include "nnmem/profiler.h"

enum { N_REQUIRED = 4, N_KEYS = 10 };
static const char *const keys[N_KEYS] = {
    "peak_memory", "weight_memory", "activation_memory", "workspace_memory",
    "lower_bound", "naive_memory",  "arena_height",      "arena_lower_bound",
    "naive_arena", "reuse_ratio"};
#define RATIO_KEY (N_KEYS - 1)

typedef struct step_row {
  uint64_t step, bytes;
} step_row_t;

typedef struct doc {
  const char *name;
  int has[N_KEYS];
  uint64_t v[N_KEYS];
  double ratio;
  step_row_t *steps;
  size_t n_steps;
  int has_timeline;
} doc_t;

static nnmem_status_t bad(nnmem_diag_t *diag, const char *name, const char *key,
                          const char *what) {
  return nnmem__diag(diag, NNMEM_ERR_PARSE, "%s: key '%s': %s", name, key,
                     what);
}

static nnmem_status_t read_timeline(doc_t *d, const cJSON *tl,
                                    nnmem_diag_t *diag) {
  if (!cJSON_IsArray(tl))
    return bad(diag, d->name, "timeline", "must be a list of steps");
  size_t n = (size_t)cJSON_GetArraySize(tl), i = 0;
  d->steps = calloc(n ? n : 1, sizeof *d->steps);
  if (!d->steps) return nnmem__diag(diag, NNMEM_ERR_NOMEM, "out of memory");
  d->has_timeline = 1;
  char where[64];
  for (const cJSON *e = tl->child; e; e = e->next, i++) {
    int twice = 0, twice2 = 0;
    snprintf(where, sizeof where, "timeline[%zu]", i);
    if (!cJSON_IsObject(e)) return bad(diag, d->name, where, "not an object");
    const cJSON *s = nnmem__json_member(e, "step", &twice);
    const cJSON *b = nnmem__json_member(e, "peak_bytes", &twice2);
    if (twice || twice2)
      return bad(diag, d->name, where, "'step' or 'peak_bytes' given twice");
    if (!s || nnmem__json_exact_u64(s, &d->steps[i].step) != 0)
      return bad(diag, d->name, where,
                 "'step' must be an integer in [0, 2^64 - 1]");
    if (!b || nnmem__json_exact_u64(b, &d->steps[i].bytes) != 0)
      return bad(diag, d->name, where,
                 "'peak_bytes' must be an integer in [0, 2^64 - 1]");
    if (i && d->steps[i].step <= d->steps[i - 1].step)
      return bad(diag, d->name, where, "steps must increase");
  }
  d->n_steps = n;
  return NNMEM_OK;
}

static nnmem_status_t read_doc(doc_t *d, const char *text, size_t len,
                               nnmem_diag_t *diag) {
  cJSON *j = NULL;
  nnmem_status_t st = nnmem__json_exact_parse(d->name, text, len, &j, diag);
  if (st != NNMEM_OK) return st;
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "%s: not a memory profile (a JSON object)", d->name);
  }
  for (int k = 0; k < N_KEYS && st == NNMEM_OK; k++) {
    int twice = 0;
    const cJSON *m = nnmem__json_member(j, keys[k], &twice);
    if (twice) {
      st = bad(diag, d->name, keys[k], "given twice");
    } else if (!m) {
      if (k < N_REQUIRED)
        st = bad(diag, d->name, keys[k], "missing (not a memory profile?)");
    } else if (k == RATIO_KEY) {
      if (cJSON_IsNull(m)) continue; /* NaN written as null: absent */
      if (nnmem__json_exact_double(m, &d->ratio) != 0)
        st = bad(diag, d->name, keys[k], "must be a number");
      d->has[k] = st == NNMEM_OK;
    } else if (nnmem__json_exact_u64(m, &d->v[k]) != 0) {
      st = bad(diag, d->name, keys[k], "must be an integer in [0, 2^64 - 1]");
    } else {
      d->has[k] = 1;
    }
  }
  int twice = 0;
  const cJSON *tl = nnmem__json_member(j, "timeline", &twice);
  if (st == NNMEM_OK && twice)
    st = bad(diag, d->name, "timeline", "given twice");
  if (st == NNMEM_OK && tl) st = read_timeline(d, tl, diag);
  cJSON_Delete(j);
  return st;
}

/* b - a as a JSON number (exact while |b - a| < 2^63). */
static void put_delta(nnmem__jw_t *w, uint64_t a, uint64_t b) {
  if (b >= a)
    nnmem__jw_u64(w, b - a);
  else if (a - b <= (uint64_t)INT64_MAX)
    nnmem__jw_i64(w, -(int64_t)(a - b));
  else
    nnmem__jw_double(w, -(double)(a - b));
}

static void text_delta(nnmem__text_t *t, uint64_t a, uint64_t b) {
  char s[32];
  if (b >= a)
    snprintf(s, sizeof s, "+%" PRIu64, b - a);
  else
    snprintf(s, sizeof s, "-%" PRIu64, a - b);
  nnmem__text_printf(t, " %16s", s);
}

static void text_ratio(nnmem__text_t *t, uint64_t a, uint64_t b) {
  if (a)
    nnmem__text_printf(t, " %9.4f\n", (double)b / (double)a);
  else
    nnmem__text_printf(t, " %9s\n", "-");
}

/* Step 4: the timelines as step functions (an entry holds until the next
 * entry's step; a timeline covers its first to its last entry's step)
 * compared over the steps both cover: one row at every step where either
 * changes, each standing for the steps up to the next row. */
typedef struct rows {
  size_t n;
  step_row_t *a, *b;   /* the rows: step and each side's bytes */
  uint64_t lo, hi;     /* the steps compared: [lo, hi] */
  uint64_t steps;      /* hi - lo + 1 (saturated at 2^64 - 1) */
  int differs;         /* some step has a != b */
  uint64_t first_diff; /* the first such step */
  uint64_t max_dev;    /* max |b - a| over the steps, first at max_step */
  uint64_t max_step;
  size_t max_row;
  double mean_dev; /* sum over the steps of |b - a|, / steps */
} rows_t;

static uint64_t absdiff(uint64_t x, uint64_t y) {
  return x > y ? x - y : y - x;
}

static nnmem_status_t compare_timelines(const doc_t *x, const doc_t *y,
                                        rows_t *r) {
  memset(r, 0, sizeof *r);
  if (!x->n_steps || !y->n_steps) return NNMEM_OK;
  uint64_t x0 = x->steps[0].step, y0 = y->steps[0].step;
  uint64_t x1 = x->steps[x->n_steps - 1].step;
  uint64_t y1 = y->steps[y->n_steps - 1].step;
  r->lo = x0 > y0 ? x0 : y0;
  r->hi = x1 < y1 ? x1 : y1;
  if (r->lo > r->hi) return NNMEM_OK; /* no step in common */
  r->steps = r->hi - r->lo == UINT64_MAX ? UINT64_MAX : r->hi - r->lo + 1;
  size_t cap = x->n_steps + y->n_steps + 1;
  r->a = calloc(cap, sizeof *r->a);
  r->b = calloc(cap, sizeof *r->b);
  if (!r->a || !r->b) return NNMEM_ERR_NOMEM;
  /* i, j: the last entry at or before the current step on each side */
  size_t i = 0, j = 0;
  while (i + 1 < x->n_steps && x->steps[i + 1].step <= r->lo)
    i++;
  while (j + 1 < y->n_steps && y->steps[j + 1].step <= r->lo)
    j++;
  long double sum = 0;
  uint64_t at = r->lo;
  for (;;) {
    uint64_t va = x->steps[i].bytes, vb = y->steps[j].bytes;
    uint64_t d = absdiff(va, vb);
    r->a[r->n] = (step_row_t){at, va};
    r->b[r->n] = (step_row_t){at, vb};
    if (d && !r->differs) r->differs = 1, r->first_diff = at;
    if (d > r->max_dev) r->max_dev = d, r->max_step = at, r->max_row = r->n;
    r->n++;
    /* the next change on either side, within [lo, hi] */
    uint64_t next = r->hi;
    int more = 0;
    if (i + 1 < x->n_steps && x->steps[i + 1].step <= r->hi)
      next = x->steps[i + 1].step, more = 1;
    if (j + 1 < y->n_steps && y->steps[j + 1].step <= r->hi &&
        (!more || y->steps[j + 1].step < next))
      next = y->steps[j + 1].step, more = 1;
    /* this row stands for [at, next) or, the last one, [at, hi] */
    uint64_t span = more ? next - at : r->hi - at + 1;
    sum += (long double)d * (long double)(span ? span : UINT64_MAX);
    if (!more) break;
    if (i + 1 < x->n_steps && x->steps[i + 1].step == next) i++;
    if (j + 1 < y->n_steps && y->steps[j + 1].step == next) j++;
    at = next;
  }
  r->mean_dev = (double)(sum / (long double)r->steps);
  return NNMEM_OK;
}

static void render_json(nnmem__jw_t *w, const doc_t *x, const doc_t *y,
                        const rows_t *r) {
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "a", x->name);
  nnmem__jw_kv_string(w, "b", y->name);
  nnmem__jw_key(w, "keys");
  nnmem__jw_array(w);
  for (int k = 0; k < N_KEYS; k++) {
    if (!x->has[k] || !y->has[k]) continue;
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "key", keys[k]);
    if (k == RATIO_KEY) {
      nnmem__jw_kv_double(w, "a", x->ratio);
      nnmem__jw_kv_double(w, "b", y->ratio);
      nnmem__jw_kv_double(w, "delta", y->ratio - x->ratio);
    } else {
      nnmem__jw_kv_u64(w, "a", x->v[k]);
      nnmem__jw_kv_u64(w, "b", y->v[k]);
      nnmem__jw_key(w, "delta");
      put_delta(w, x->v[k], y->v[k]);
      nnmem__jw_key(w, "ratio");
      if (x->v[k])
        nnmem__jw_double(w, (double)y->v[k] / (double)x->v[k]);
      else
        nnmem__jw_null(w);
    }
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
  for (int side = 0; side < 2; side++) {
    const doc_t *p = side ? y : x, *q = side ? x : y;
    nnmem__jw_key(w, side ? "only_in_b" : "only_in_a");
    nnmem__jw_array(w);
    for (int k = 0; k < N_KEYS; k++)
      if (p->has[k] && !q->has[k]) nnmem__jw_string(w, keys[k]);
    if (p->has_timeline && !q->has_timeline) nnmem__jw_string(w, "timeline");
    nnmem__jw_end(w);
  }
  /* Step 4's figures; the rows are the steps where either side changes */
  nnmem__jw_kv_u64(w, "steps_compared", r->steps);
  nnmem__jw_key(w, "timeline");
  if (!r->steps) {
    nnmem__jw_null(w);
  } else {
    nnmem__jw_object(w);
    nnmem__jw_kv_u64(w, "first_step", r->lo);
    nnmem__jw_kv_u64(w, "last_step", r->hi);
    nnmem__jw_key(w, "first_difference");
    if (r->differs)
      nnmem__jw_u64(w, r->first_diff);
    else
      nnmem__jw_null(w);
    nnmem__jw_kv_u64(w, "max_deviation", r->max_dev);
    nnmem__jw_kv_u64(w, "max_deviation_step", r->max_dev ? r->max_step : r->lo);
    nnmem__jw_key(w, "max_deviation_of_a_peak");
    if (x->v[0])
      nnmem__jw_double(w, (double)r->max_dev / (double)x->v[0]);
    else
      nnmem__jw_null(w);
    nnmem__jw_kv_double(w, "mean_deviation", r->mean_dev);
    nnmem__jw_end(w);
  }
  nnmem__jw_key(w, "steps");
  nnmem__jw_array(w);
  for (size_t i = 0; i < r->n; i++) {
    nnmem__jw_object(w);
    nnmem__jw_kv_u64(w, "step", r->a[i].step);
    nnmem__jw_kv_u64(w, "a", r->a[i].bytes);
    nnmem__jw_kv_u64(w, "b", r->b[i].bytes);
    nnmem__jw_key(w, "delta");
    put_delta(w, r->a[i].bytes, r->b[i].bytes);
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
  nnmem__jw_end(w);
}

/* The timeline lines of the text form (step 4's figures). */
static void render_timeline_text(nnmem__text_t *t, const doc_t *x,
                                 const rows_t *r) {
  if (!r->steps) {
    nnmem__text_printf(t, "timeline: no step in common\n");
    return;
  }
  nnmem__text_printf(t,
                     "timeline: steps %" PRIu64 "..%" PRIu64
                     " compared (%" PRIu64 " steps)",
                     r->lo, r->hi, r->steps);
  if (!r->differs) {
    nnmem__text_printf(t, ": identical\n");
    return;
  }
  const step_row_t *ra = &r->a[r->max_row], *rb = &r->b[r->max_row];
  nnmem__text_printf(t, "\n  first difference at step %" PRIu64 "\n",
                     r->first_diff);
  nnmem__text_printf(t,
                     "  max deviation %" PRIu64 " B at step %" PRIu64
                     " (%" PRIu64 " -> %" PRIu64 ")",
                     r->max_dev, r->max_step, ra->bytes, rb->bytes);
  if (x->v[0])
    nnmem__text_printf(t, ", %.2f%% of A's peak_memory",
                       100.0 * (double)r->max_dev / (double)x->v[0]);
  nnmem__text_printf(t, "\n  mean deviation %.1f B per step\n", r->mean_dev);
}

static void render_text(nnmem__text_t *t, const doc_t *x, const doc_t *y,
                        const rows_t *r) {
  nnmem__text_printf(t, "A: %s\nB: %s\n", x->name, y->name);
  nnmem__text_printf(t, "%-18s %20s %20s %16s %9s\n", "key", "A", "B", "B - A",
                     "B / A");
  for (int k = 0; k < N_KEYS; k++) {
    if (!x->has[k] || !y->has[k]) continue;
    if (k == RATIO_KEY) {
      nnmem__text_printf(t, "%-18s %20.4f %20.4f %+16.4f %9s\n", keys[k],
                         x->ratio, y->ratio, y->ratio - x->ratio, "-");
      continue;
    }
    nnmem__text_printf(t, "%-18s %20" PRIu64 " %20" PRIu64, keys[k], x->v[k],
                       y->v[k]);
    text_delta(t, x->v[k], y->v[k]);
    text_ratio(t, x->v[k], y->v[k]);
  }
  for (int side = 0; side < 2; side++) {
    const doc_t *p = side ? y : x, *q = side ? x : y;
    int any = 0;
    for (int k = 0; k < N_KEYS; k++)
      if (p->has[k] && !q->has[k])
        nnmem__text_printf(t, "%s%s",
                           any++  ? ", "
                           : side ? "only in B: "
                                  : "only in A: ",
                           keys[k]);
    if (p->has_timeline && !q->has_timeline)
      nnmem__text_printf(t, "%s%s",
                         any++  ? ", "
                         : side ? "only in B: "
                                : "only in A: ",
                         "timeline");
    if (any) nnmem__text_putc(t, '\n');
  }
  if (x->has_timeline && y->has_timeline) render_timeline_text(t, x, r);
}

nnmem_status_t nnmem_profile_diff(const char *text_a, size_t len_a,
                                  const char *name_a, const char *text_b,
                                  size_t len_b, const char *name_b, int json,
                                  char **out, double *peak_excess_out,
                                  nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if (!text_a || !text_b || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_profile_diff: NULL argument");
  doc_t x = {.name = name_a ? name_a : "<a>"};
  doc_t y = {.name = name_b ? name_b : "<b>"};
  rows_t r = {0};
  nnmem_status_t st = read_doc(&x, text_a, len_a, diag);
  if (st == NNMEM_OK) st = read_doc(&y, text_b, len_b, diag);
  if (st == NNMEM_OK && compare_timelines(&x, &y, &r) != NNMEM_OK)
    st = nnmem__diag(diag, NNMEM_ERR_NOMEM, "out of memory");
  nnmem__text_t t;
  nnmem__text_init(&t);
  if (st == NNMEM_OK && json) {
    nnmem__jw_t w;
    nnmem__jw_init(&w, &t, NNMEM__JW_PRETTY);
    render_json(&w, &x, &y, &r);
    st = nnmem__jw_finish(&w);
  } else if (st == NNMEM_OK) {
    render_text(&t, &x, &y, &r);
    st = nnmem__text_status(&t);
  }
  if (st == NNMEM_OK && peak_excess_out)
    *peak_excess_out = !x.v[0] ? 0.0
                       : y.v[0] >= x.v[0]
                           ? (double)(y.v[0] - x.v[0]) / (double)x.v[0]
                           : -(double)(x.v[0] - y.v[0]) / (double)x.v[0];
  free(x.steps);
  free(y.steps);
  free(r.a);
  free(r.b);
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    return st;
  }
  *out = t.data;
  return NNMEM_OK;
}

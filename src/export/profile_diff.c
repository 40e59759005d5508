/* profile_diff.c - two memory_profile.json documents compared key by key
 * (nnmem_profile_diff, nnmem/profiler.h; the CLI's `nnmem diff`).
 *
 * Steps: 1. parse each text with numbers kept exact (import/json_exact.h);
 * 2. read the known keys of each (the four required ones, the optional
 * ones, the timeline: steps strictly increasing), every error naming the
 * file and the key; 3. for each key in the fixed order, a row when both
 * have it, else the key goes to only_in_a / only_in_b; 4. the timelines
 * merged on step (both sorted): one row per step both have; 5. render as
 * text or as JSON through the one writer.
 * Complexity: O(text + steps). Thread-safety: each call is independent. */
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

typedef struct rows {
  size_t n;
  step_row_t *a, *b; /* matched steps */
} rows_t;

/* Step 4: the steps both timelines have (both strictly increasing). */
static nnmem_status_t match_steps(const doc_t *x, const doc_t *y, rows_t *r) {
  size_t cap = x->n_steps < y->n_steps ? x->n_steps : y->n_steps;
  r->n = 0;
  r->a = calloc(cap ? cap : 1, sizeof *r->a);
  r->b = calloc(cap ? cap : 1, sizeof *r->b);
  if (!r->a || !r->b) return NNMEM_ERR_NOMEM;
  for (size_t i = 0, j = 0; i < x->n_steps && j < y->n_steps;) {
    if (x->steps[i].step < y->steps[j].step) {
      i++;
    } else if (x->steps[i].step > y->steps[j].step) {
      j++;
    } else {
      r->a[r->n] = x->steps[i++];
      r->b[r->n++] = y->steps[j++];
    }
  }
  return NNMEM_OK;
}

static size_t largest_step_delta(const rows_t *r) {
  size_t best = 0;
  uint64_t bd = 0;
  for (size_t i = 0; i < r->n; i++) {
    uint64_t a = r->a[i].bytes, b = r->b[i].bytes, d = a > b ? a - b : b - a;
    if (d > bd) bd = d, best = i;
  }
  return best;
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
  nnmem__jw_kv_u64(w, "steps_compared", r->n);
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
  if (x->has_timeline && y->has_timeline) {
    nnmem__text_printf(t, "steps compared: %zu", r->n);
    if (r->n) {
      size_t i = largest_step_delta(r);
      nnmem__text_printf(t,
                         ", largest difference at step %" PRIu64 ": %" PRIu64
                         " -> %" PRIu64,
                         r->a[i].step, r->a[i].bytes, r->b[i].bytes);
    }
    nnmem__text_putc(t, '\n');
  }
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
  if (st == NNMEM_OK && match_steps(&x, &y, &r) != NNMEM_OK)
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

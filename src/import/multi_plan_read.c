/* multi_plan_read.c - reads a multi-plan document (nnmem/io.h: what
 * `nnmem plan --shared-arena --out` and `nnmem plan --dim NAME=LO..HI --out`
 * write, tools/nnmem/cmd_plan_multi.c) back, for `nnmem verify`.
 *
 * Steps:
 *   1. parse with the numbers kept exact (json_exact.h: 64-bit integers as
 *      tagged strings); the document must be an object;
 *   2. top-level keys, each at most once: "format" == "nnmem-shared-arena",
 *      "version" == 1, "mode" "shared-arena" or "shape-buckets",
 *      "arena_bytes" an integer, "dim" a non-empty string (required for
 *      shape buckets, refused for shared arenas), "plans" a non-empty list;
 *   3. per plans[i]: an object with "label" and "input" (non-empty
 *      strings), "group" and "base" (integers; group < 2^32), "value"
 *      (shape buckets: an integer >= 1, increasing from plan to plan;
 *      refused otherwise) and "plan", read by the plan JSON reader
 *      (plan_json_read.c) with its "alignment" (a power of two, 1 when
 *      absent); errors name "FILE: plans[i] ('label')".
 * The parsed tree is kept: a plan's "order" and "concat_kept_out" are read
 * later, against the graph the caller loads for it.
 * Invariants: count >= 1; every entry's problem passes nnmem_problem_check
 * and has as many offsets as buffers; bucket values strictly increase.
 * Complexity: O(text + buffers). Thread-safety: each document is
 * independent; read-only after creation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "import/json_exact.h"
#include "nnmem/io.h"

#define NUM_TAG '\x01'

typedef struct mp_entry {
  nnmem_multi_plan_entry_t pub;
  nnmem_problem_t *problem;
  uint64_t *offsets;
  const cJSON *plan; /* the "plan" object in doc */
  char where[200];   /* "FILE: plans[i] ('label')" for messages */
} mp_entry_t;

struct nnmem_multi_plan {
  cJSON *doc;
  char *name;
  int buckets;
  const char *dim;
  uint64_t arena_bytes;
  size_t n;
  mp_entry_t *e;
};

static nnmem_status_t bad(nnmem_diag_t *diag, const char *where,
                          const char *key, const char *what) {
  return nnmem__diag(diag, NNMEM_ERR_PARSE, "%s: '%s' %s", where, key, what);
}

/* Member `key` of obj: NULL when absent; an error when given twice. */
static nnmem_status_t get(const cJSON *obj, const char *where, const char *key,
                          const cJSON **out, nnmem_diag_t *diag) {
  int twice = 0;
  *out = nnmem__json_member(obj, key, &twice);
  return twice ? bad(diag, where, key, "is given twice") : NNMEM_OK;
}

/* A non-empty string that is not a number. */
static nnmem_status_t get_string(const cJSON *obj, const char *where,
                                 const char *key, const char **out,
                                 nnmem_diag_t *diag) {
  const cJSON *j;
  nnmem_status_t st = get(obj, where, key, &j, diag);
  if (st != NNMEM_OK) return st;
  if (!j) return bad(diag, where, key, "is missing");
  if (!cJSON_IsString(j) || !j->valuestring[0] ||
      j->valuestring[0] == NUM_TAG)
    return bad(diag, where, key, "must be a non-empty string");
  *out = j->valuestring;
  return NNMEM_OK;
}

static nnmem_status_t get_u64(const cJSON *obj, const char *where,
                              const char *key, uint64_t *out,
                              nnmem_diag_t *diag) {
  const cJSON *j;
  nnmem_status_t st = get(obj, where, key, &j, diag);
  if (st != NNMEM_OK) return st;
  if (!j) return bad(diag, where, key, "is missing");
  if (nnmem__json_exact_u64(j, out) != 0)
    return bad(diag, where, key, "must be an integer in [0, 2^64 - 1]");
  return NNMEM_OK;
}

/* Step 3: "alignment" of a plan (1 when absent). */
static nnmem_status_t plan_alignment(const cJSON *plan, const char *where,
                                     uint64_t *out, nnmem_diag_t *diag) {
  const cJSON *j;
  nnmem_status_t st = get(plan, where, "alignment", &j, diag);
  *out = 1;
  if (st != NNMEM_OK || !j) return st;
  if (nnmem__json_exact_u64(j, out) != 0 || *out == 0 ||
      *out > ((uint64_t)1 << 40) || !nnmem__is_pow2(*out))
    return bad(diag, where, "plan.alignment",
               "must be a power of two up to 2^40");
  return NNMEM_OK;
}

/* Step 3 for plans[i]. */
static nnmem_status_t read_entry(nnmem_multi_plan_t *m, const cJSON *p,
                                 size_t i, nnmem_diag_t *diag) {
  mp_entry_t *e = &m->e[i];
  nnmem_multi_plan_entry_t *pub = &e->pub;
  snprintf(e->where, sizeof e->where, "%s: plans[%zu]", m->name, i);
  if (!cJSON_IsObject(p))
    return nnmem__diag(diag, NNMEM_ERR_PARSE, "%s is not an object",
                       e->where);
  nnmem_status_t st = get_string(p, e->where, "label", &pub->label, diag);
  if (st != NNMEM_OK) return st;
  size_t used = strlen(e->where);
  snprintf(e->where + used, sizeof e->where - used, " ('%.80s')", pub->label);
  uint64_t group = 0, value = 0;
  st = get_string(p, e->where, "input", &pub->input, diag);
  if (st == NNMEM_OK) st = get_u64(p, e->where, "group", &group, diag);
  if (st == NNMEM_OK) st = get_u64(p, e->where, "base", &pub->base, diag);
  if (st != NNMEM_OK) return st;
  if (group > UINT32_MAX)
    return bad(diag, e->where, "group", "must be below 2^32");
  pub->group = (uint32_t)group;
  const cJSON *jv;
  if ((st = get(p, e->where, "value", &jv, diag)) != NNMEM_OK) return st;
  if (m->buckets) {
    if (!jv) return bad(diag, e->where, "value", "is missing (shape buckets)");
    if (nnmem__json_exact_u64(jv, &value) != 0 || value < 1 ||
        value > (uint64_t)INT64_MAX)
      return bad(diag, e->where, "value", "must be an integer >= 1");
    if (i && (int64_t)value <= m->e[i - 1].pub.value)
      return bad(diag, e->where, "value",
                 "must exceed the previous bucket's value");
    pub->has_value = 1;
    pub->value = (int64_t)value;
  } else if (jv) {
    return bad(diag, e->where, "value",
               "belongs to shape buckets (mode is shared-arena)");
  }
  if ((st = get(p, e->where, "plan", &e->plan, diag)) != NNMEM_OK) return st;
  if (!cJSON_IsObject(e->plan))
    return bad(diag, e->where, "plan", "must be a plan JSON object");
  st = plan_alignment(e->plan, e->where, &pub->alignment, diag);
  if (st == NNMEM_OK)
    st = nnmem__plan_read_doc(e->where, e->plan, &e->problem, &e->offsets,
                              diag);
  pub->problem = e->problem;
  pub->offsets = e->offsets;
  return st;
}

/* Step 2. */
static nnmem_status_t read_top(nnmem_multi_plan_t *m, nnmem_diag_t *diag) {
  const cJSON *d = m->doc, *plans;
  const char *w = m->name, *format, *mode;
  uint64_t version = 0;
  if (!cJSON_IsObject(d))
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "%s: not a multi-plan document (a JSON object)", w);
  nnmem_status_t st = get_string(d, w, "format", &format, diag);
  if (st != NNMEM_OK) return st;
  if (strcmp(format, "nnmem-shared-arena") != 0)
    return bad(diag, w, "format", "must be \"nnmem-shared-arena\"");
  if ((st = get_u64(d, w, "version", &version, diag)) != NNMEM_OK) return st;
  if (version != 1) return bad(diag, w, "version", "must be 1");
  if ((st = get_string(d, w, "mode", &mode, diag)) != NNMEM_OK) return st;
  if (strcmp(mode, "shape-buckets") == 0)
    m->buckets = 1;
  else if (strcmp(mode, "shared-arena") != 0)
    return bad(diag, w, "mode", "must be \"shared-arena\" or \"shape-buckets\"");
  st = get_u64(d, w, "arena_bytes", &m->arena_bytes, diag);
  const cJSON *jd;
  if (st == NNMEM_OK) st = get(d, w, "dim", &jd, diag);
  if (st != NNMEM_OK) return st;
  if (m->buckets) {
    if ((st = get_string(d, w, "dim", &m->dim, diag)) != NNMEM_OK) return st;
  } else if (jd) {
    return bad(diag, w, "dim", "belongs to shape buckets");
  }
  if ((st = get(d, w, "plans", &plans, diag)) != NNMEM_OK) return st;
  if (!cJSON_IsArray(plans) || cJSON_GetArraySize(plans) < 1)
    return bad(diag, w, "plans", "must be a non-empty list");
  m->n = (size_t)cJSON_GetArraySize(plans);
  m->e = calloc(m->n, sizeof *m->e);
  if (!m->e) return nnmem__diag(diag, NNMEM_ERR_NOMEM, "out of memory");
  size_t i = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, plans) {
    if ((st = read_entry(m, p, i++, diag)) != NNMEM_OK) return st;
  }
  return NNMEM_OK;
}

nnmem_status_t nnmem_multi_plan_read_json(const char *data, size_t len,
                                          const char *display_name,
                                          nnmem_multi_plan_t **out,
                                          nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if (!data || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_multi_plan_read_json: NULL argument");
  nnmem_multi_plan_t *m = calloc(1, sizeof *m);
  if (m) m->name = nnmem__strdup(display_name ? display_name : "<plans>");
  if (!m || !m->name) {
    free(m);
    return nnmem__diag(diag, NNMEM_ERR_NOMEM, "out of memory");
  }
  nnmem_status_t st =
      nnmem__json_exact_parse(m->name, data, len, &m->doc, diag);
  if (st == NNMEM_OK) st = read_top(m, diag);
  if (st != NNMEM_OK) {
    nnmem_multi_plan_destroy(m);
    return st;
  }
  *out = m;
  return NNMEM_OK;
}

void nnmem_multi_plan_destroy(nnmem_multi_plan_t *m) {
  if (!m) return;
  for (size_t i = 0; m->e && i < m->n; i++) {
    nnmem_problem_destroy(m->e[i].problem);
    free(m->e[i].offsets);
  }
  free(m->e);
  cJSON_Delete(m->doc);
  free(m->name);
  free(m);
}

int nnmem_multi_plan_is_buckets(const nnmem_multi_plan_t *m) {
  return m ? m->buckets : 0;
}
const char *nnmem_multi_plan_dim(const nnmem_multi_plan_t *m) {
  return m ? m->dim : NULL;
}
uint64_t nnmem_multi_plan_arena_bytes(const nnmem_multi_plan_t *m) {
  return m ? m->arena_bytes : 0;
}
size_t nnmem_multi_plan_count(const nnmem_multi_plan_t *m) {
  return m ? m->n : 0;
}

nnmem_status_t nnmem_multi_plan_entry(const nnmem_multi_plan_t *m, size_t i,
                                      nnmem_multi_plan_entry_t *out) {
  if (!m || !out || i >= m->n) return NNMEM_ERR_INVALID;
  *out = m->e[i].pub;
  return NNMEM_OK;
}

nnmem_status_t nnmem_multi_plan_order(const nnmem_multi_plan_t *m, size_t i,
                                      const nnmem_graph_t *g,
                                      uint32_t **order_out,
                                      nnmem_diag_t *diag) {
  if (order_out) *order_out = NULL;
  if (!m || !g || !order_out || i >= m->n)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_multi_plan_order: bad argument");
  return nnmem__plan_read_doc_order(m->e[i].where, m->e[i].plan, g, order_out,
                                    diag);
}

nnmem_status_t nnmem_multi_plan_concat_kept_out(const nnmem_multi_plan_t *m,
                                                size_t i,
                                                const nnmem_graph_t *g,
                                                uint8_t **kept_out,
                                                nnmem_diag_t *diag) {
  if (kept_out) *kept_out = NULL;
  if (!m || !g || !kept_out || i >= m->n)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_multi_plan_concat_kept_out: bad argument");
  return nnmem__plan_read_doc_kept_out(m->e[i].where, m->e[i].plan, g,
                                       kept_out, diag);
}

/* exec_read.c - reads a fitted plan JSON (export/fit_json.c) for the
 * executor, and matches it against a model (nnmem_exec_plan_parse,
 * nnmem_exec_plan_match).
 *
 * Steps:
 *   1. cJSON parse; the "fit" object must be there (a plain plan JSON has
 *      no schedule: refused with that reason) with version 1;
 *   2. every number read must be a whole number in [0, 2^53) (cJSON keeps
 *      doubles; larger sizes cannot be executed on this machine anyway);
 *      errors name the file and the member path ("fit.tiers[1].buffers[4]
 *      .size");
 *   3. tiers -> problems (gaps, parents by id) checked by
 *      nnmem_problem_check, offsets verified by nnmem_plan_verify with the
 *      tier's alignment and capacity (the independent verifier); every
 *      buffer inside the tier's height (the region a run allocates);
 *   4. the digest of the executed content recomputed in the writer's order
 *      (exec_digest.h) and compared with fit.digest;
 *   5. references in range; every access inside its buffer's active time;
 *      copies: sizes equal, device buffer active over [start, done] (in)
 *      or [start, done) (out), host buffer live over [start, done).
 * Complexity O(text + buffers * gaps). Thread-safety: independent calls. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "fit/exec_digest.h"
#include "fit/exec_internal.h"

typedef struct rd {
  const char *name;
  nnmem_diag_t *diag;
  uint64_t h; /* the digest, fed in the writer's order */
} rd_t;

static nnmem_status_t bad(rd_t *r, const char *path, const char *what) {
  return nnmem__diag(r->diag, NNMEM_ERR_PARSE, "%s: %s: %s", r->name, path,
                     what);
}

static nnmem_status_t get_u64(rd_t *r, const cJSON *o, const char *key,
                              const char *path, uint64_t *out) {
  const cJSON *v =
      cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
  char p[160];
  snprintf(p, sizeof p, "%s.%s", path, key);
  if (!v) return bad(r, p, "missing");
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
      v->valuedouble != floor(v->valuedouble) || v->valuedouble >= 0x1p53)
    return bad(r, p, "must be a whole number in [0, 2^53)");
  *out = (uint64_t)v->valuedouble;
  return NNMEM_OK;
}

static nnmem_status_t get_u64_item(rd_t *r, const cJSON *v, const char *path,
                                   uint64_t *out) {
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
      v->valuedouble != floor(v->valuedouble) || v->valuedouble >= 0x1p53)
    return bad(r, path, "must be a whole number in [0, 2^53)");
  *out = (uint64_t)v->valuedouble;
  return NNMEM_OK;
}

static const cJSON *get_array(rd_t *r, const cJSON *o, const char *key,
                              const char *path, nnmem_status_t *st) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsArray(v)) {
    char p[160];
    snprintf(p, sizeof p, "%s.%s", path, key);
    *st = bad(r, p, v ? "must be an array" : "missing");
    return NULL;
  }
  return v;
}

static nnmem_status_t read_buffer(rd_t *r, const cJSON *b, const char *path,
                                  exec_tier_t *t, size_t i) {
  uint64_t off, size, first, last;
  nnmem_status_t st = get_u64(r, b, "offset", path, &off);
  if (st == NNMEM_OK) st = get_u64(r, b, "size", path, &size);
  if (st == NNMEM_OK) st = get_u64(r, b, "first", path, &first);
  if (st == NNMEM_OK) st = get_u64(r, b, "last", path, &last);
  if (st != NNMEM_OK) return st;
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "id");
  if (!cJSON_IsString(id)) return bad(r, path, "id: must be a string");
  if (nnmem_problem_add(t->problem, id->valuestring, size, 1, first, last,
                        NULL) != NNMEM_OK)
    return bad(r, path, "bad buffer (last <= first, or size overflows)");
  t->offsets[i] = off;
  const cJSON *gaps = cJSON_GetObjectItemCaseSensitive(b, "gaps");
  if (gaps) {
    if (!cJSON_IsArray(gaps)) return bad(r, path, "gaps: must be an array");
    for (const cJSON *g = gaps->child; g; g = g->next) {
      uint64_t a = 0, e = 0;
      char gp[200];
      snprintf(gp, sizeof gp, "%s.gaps", path);
      if (!cJSON_IsArray(g) || cJSON_GetArraySize(g) != 2 ||
          get_u64_item(r, g->child, gp, &a) ||
          get_u64_item(r, g->child->next, gp, &e))
        return bad(r, gp, "each gap is [first, last]");
      if (nnmem_problem_add_gap(t->problem, i, a, e) != NNMEM_OK)
        return bad(r, gp, "a gap needs last > first");
    }
  }
  return NNMEM_OK;
}

/* Parents after all buffers (ids looked up in the tier). */
static nnmem_status_t read_parent(rd_t *r, const cJSON *b, const char *path,
                                  exec_tier_t *t, size_t i) {
  const cJSON *par = cJSON_GetObjectItemCaseSensitive(b, "parent");
  if (!par) return NNMEM_OK;
  size_t q;
  uint64_t rel;
  if (!cJSON_IsString(par) ||
      nnmem_problem_find(t->problem, par->valuestring, &q) != NNMEM_OK)
    return bad(r, path, "parent: not a buffer of this tier");
  nnmem_status_t st = get_u64(r, b, "parent_offset", path, &rel);
  if (st != NNMEM_OK) return st;
  nnmem_problem_set_parent(t->problem, i, q, rel);
  return NNMEM_OK;
}

static nnmem_status_t read_tier(rd_t *r, const cJSON *o, uint32_t ti,
                                exec_tier_t *t) {
  char path[64];
  snprintf(path, sizeof path, "fit.tiers[%u]", ti);
  const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
  if (!cJSON_IsString(nm)) return bad(r, path, "name: must be a string");
  snprintf(t->name, sizeof t->name, "%s", nm->valuestring);
  nnmem_status_t st = get_u64(r, o, "alignment", path, &t->alignment);
  if (st == NNMEM_OK) st = get_u64(r, o, "capacity", path, &t->capacity);
  if (st == NNMEM_OK) st = get_u64(r, o, "height", path, &t->height);
  if (st != NNMEM_OK) return st;
  if (!nnmem__is_pow2(t->alignment))
    return bad(r, path, "alignment: not a power of two");
  const cJSON *bufs = get_array(r, o, "buffers", path, &st);
  if (!bufs) return st;
  size_t n = (size_t)cJSON_GetArraySize(bufs), i = 0;
  nnmem__exec_digest_pair(&r->h, ti, n);
  t->offsets = calloc(n ? n : 1, sizeof *t->offsets);
  if (!t->offsets || nnmem_problem_create(&t->problem) != NNMEM_OK)
    return NNMEM_ERR_NOMEM;
  for (const cJSON *b = bufs->child; b; b = b->next, i++) {
    char bp[96];
    snprintf(bp, sizeof bp, "%s.buffers[%zu]", path, i);
    if (!cJSON_IsObject(b)) return bad(r, bp, "must be an object");
    if ((st = read_buffer(r, b, bp, t, i)) != NNMEM_OK) return st;
  }
  i = 0;
  for (const cJSON *b = bufs->child; b; b = b->next, i++) {
    char bp[96];
    snprintf(bp, sizeof bp, "%s.buffers[%zu]", path, i);
    if ((st = read_parent(r, b, bp, t, i)) != NNMEM_OK) return st;
  }
  /* the digest in the writer's order: buffer, its gaps, its parent */
  const nnmem_buffer_t *bb = nnmem_problem_buffers(t->problem);
  for (i = 0; i < n; i++) {
    const nnmem_interval_t *g;
    size_t ng = nnmem_problem_gaps(t->problem, i, &g), q;
    uint64_t rel;
    nnmem__exec_digest_buffer(&r->h, t->offsets[i], bb[i].size, bb[i].first,
                              bb[i].last);
    for (size_t k = 0; k < ng; k++)
      nnmem__exec_digest_pair(&r->h, g[k].first, g[k].last);
    if (nnmem_problem_parent(t->problem, i, &q, &rel) == NNMEM_OK)
      nnmem__exec_digest_pair(&r->h, q, rel);
  }
  return NNMEM_OK;
}

static nnmem_status_t read_refs(rd_t *r, const cJSON *a, const char *path,
                                exec_ref_t **out, size_t *n_out) {
  size_t n = (size_t)cJSON_GetArraySize(a), i = 0;
  *out = calloc(n ? n : 1, sizeof **out);
  *n_out = n;
  if (!*out) return NNMEM_ERR_NOMEM;
  for (const cJSON *e = a->child; e; e = e->next, i++) {
    uint64_t t = 0, b = 0;
    char p[96];
    snprintf(p, sizeof p, "%s[%zu]", path, i);
    if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 ||
        get_u64_item(r, e->child, p, &t) ||
        get_u64_item(r, e->child->next, p, &b))
      return bad(r, p, "must be [tier, buffer]");
    (*out)[i].tier = (uint32_t)(t > UINT32_MAX ? UINT32_MAX : t);
    (*out)[i].buffer = (size_t)b;
    nnmem__exec_digest_pair(&r->h, t, b);
  }
  return NNMEM_OK;
}

/* "part", "parts", "split" of schedule entry s (all or none): parts in
 * [2, 2^20], part < parts, and the parts of an op consecutive steps
 * 0, 1, .. parts - 1 of one op with one split kind. */
static nnmem_status_t read_part(rd_t *r, nnmem_exec_plan_t *p, size_t s,
                                const cJSON *e, const char *path) {
  exec_step_t *sp = &p->step[s];
  const exec_step_t *prev = s ? &p->step[s - 1] : NULL;
  const cJSON *jp = cJSON_GetObjectItemCaseSensitive(e, "part");
  const cJSON *jn = cJSON_GetObjectItemCaseSensitive(e, "parts");
  const cJSON *js = cJSON_GetObjectItemCaseSensitive(e, "split");
  sp->part = 0, sp->parts = 1;
  if (prev && prev->part + 1 < prev->parts && !jp)
    return bad(r, path, "part: the split op before it has parts left");
  if (!jp && !jn && !js) return NNMEM_OK;
  uint64_t part = 0, parts = 0;
  nnmem_status_t st;
  if ((st = get_u64(r, e, "part", path, &part)) ||
      (st = get_u64(r, e, "parts", path, &parts)))
    return st;
  if (!cJSON_IsString(js) || (strcmp(js->valuestring, "rows") &&
                              strcmp(js->valuestring, "accumulate")))
    return bad(r, path, "split: must be \"rows\" or \"accumulate\"");
  if (parts < 2 || parts > (1u << 20) || part >= parts)
    return bad(r, path, "part, parts: need 2 <= parts <= 2^20, part < parts");
  sp->part = (uint32_t)part, sp->parts = (uint32_t)parts;
  sp->accumulate = strcmp(js->valuestring, "accumulate") == 0;
  int follows = prev && prev->parts == sp->parts &&
                prev->part + 1 == sp->part &&
                prev->accumulate == sp->accumulate &&
                strcmp(prev->op, sp->op) == 0;
  if (part ? !follows : prev && prev->part + 1 < prev->parts)
    return bad(r, path, "part: the parts of a split op must be consecutive "
                        "steps 0, 1, ... of one op");
  nnmem__exec_digest_pair(&r->h, sp->part, sp->parts);
  /* the writer's codes (fit_internal.h: FIT_SPLIT_ACCUM 2, _PARTS 1) */
  nnmem__exec_digest_pair(&r->h, sp->accumulate ? 2 : 1, 0);
  return NNMEM_OK;
}

static nnmem_status_t read_schedule(rd_t *r, nnmem_exec_plan_t *p,
                                    const cJSON *fit) {
  nnmem_status_t st = NNMEM_OK;
  const cJSON *a = get_array(r, fit, "schedule", "fit", &st);
  if (!a) return st;
  if ((uint64_t)cJSON_GetArraySize(a) != p->steps)
    return bad(r, "fit.schedule", "must have one entry per step");
  p->step = calloc(p->steps ? p->steps : 1, sizeof *p->step);
  if (!p->step) return NNMEM_ERR_NOMEM;
  size_t s = 0;
  for (const cJSON *e = a->child; e; e = e->next, s++) {
    char path[64], rp[80];
    snprintf(path, sizeof path, "fit.schedule[%zu]", s);
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(e, "op");
    if (!cJSON_IsString(op)) return bad(r, path, "op: must be a string");
    p->step[s].op = nnmem__strdup(op->valuestring);
    if (!p->step[s].op) return NNMEM_ERR_NOMEM;
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(e, "seconds");
    if (sec && (!cJSON_IsNumber(sec) || !isfinite(sec->valuedouble) ||
                sec->valuedouble < 0 ||
                sec->valuedouble > NNMEM_FIT_OP_SECONDS_MAX))
      return bad(r, path, "seconds: must be a number in [0, 1e6]");
    p->step[s].seconds = sec ? sec->valuedouble : 0;
    if ((st = read_part(r, p, s, e, path)) != NNMEM_OK) return st;
    const cJSON *rd = get_array(r, e, "reads", path, &st);
    if (!rd) return st;
    snprintf(rp, sizeof rp, "%s.reads", path);
    st = read_refs(r, rd, rp, &p->step[s].reads, &p->step[s].n_reads);
    if (st != NNMEM_OK) return st;
    const cJSON *wr = get_array(r, e, "writes", path, &st);
    if (!wr) return st;
    snprintf(rp, sizeof rp, "%s.writes", path);
    st = read_refs(r, wr, rp, &p->step[s].writes, &p->step[s].n_writes);
    if (st != NNMEM_OK) return st;
    nnmem__exec_digest_pair(&r->h, p->step[s].n_reads, p->step[s].n_writes);
  }
  if (s && p->step[s - 1].part + 1 < p->step[s - 1].parts)
    return bad(r, "fit.schedule", "the last split op has parts left");
  return NNMEM_OK;
}

static nnmem_status_t read_copies(rd_t *r, nnmem_exec_plan_t *p,
                                  const cJSON *fit) {
  nnmem_status_t st = NNMEM_OK;
  const cJSON *a = get_array(r, fit, "copies", "fit", &st);
  if (!a) return st;
  p->n_copies = (size_t)cJSON_GetArraySize(a);
  p->copies = calloc(p->n_copies ? p->n_copies : 1, sizeof *p->copies);
  if (!p->copies) return NNMEM_ERR_NOMEM;
  size_t i = 0;
  for (const cJSON *e = a->child; e; e = e->next, i++) {
    char path[64];
    snprintf(path, sizeof path, "fit.copies[%zu]", i);
    exec_copy_t *c = &p->copies[i];
    const cJSON *dir = cJSON_GetObjectItemCaseSensitive(e, "dir");
    if (!cJSON_IsString(dir) ||
        (strcmp(dir->valuestring, "in") && strcmp(dir->valuestring, "out")))
      return bad(r, path, "dir: must be \"in\" or \"out\"");
    c->in = strcmp(dir->valuestring, "in") == 0;
    uint64_t t = 0, b = 0, hb = 0;
    if ((st = get_u64(r, e, "tier", path, &t)) ||
        (st = get_u64(r, e, "buffer", path, &b)) ||
        (st = get_u64(r, e, "host_buffer", path, &hb)) ||
        (st = get_u64(r, e, "bytes", path, &c->bytes)) ||
        (st = get_u64(r, e, "start", path, &c->start)) ||
        (st = get_u64(r, e, "done", path, &c->done)))
      return st;
    c->tier = (uint32_t)(t > UINT32_MAX ? UINT32_MAX : t);
    c->buffer = (size_t)b;
    c->host_buffer = (size_t)hb;
    nnmem__exec_digest_copy(&r->h, c->in ? NNMEM_COPY_IN : NNMEM_COPY_OUT, t, b,
                            hb, c->bytes, c->start, c->done);
  }
  return NNMEM_OK;
}

static nnmem_status_t read_tensors(rd_t *r, nnmem_exec_plan_t *p,
                                   const cJSON *fit) {
  nnmem_status_t st = NNMEM_OK;
  const cJSON *a = get_array(r, fit, "tensors", "fit", &st);
  if (!a) return st;
  p->n_tensors = (size_t)cJSON_GetArraySize(a);
  p->tensors = calloc(p->n_tensors ? p->n_tensors : 1, sizeof *p->tensors);
  if (!p->tensors) return NNMEM_ERR_NOMEM;
  size_t i = 0;
  for (const cJSON *e = a->child; e; e = e->next, i++) {
    char path[64];
    snprintf(path, sizeof path, "fit.tensors[%zu]", i);
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
    if (!cJSON_IsString(nm)) return bad(r, path, "name: must be a string");
    if ((st = get_u64(r, e, "size", path, &p->tensors[i].size)) != NNMEM_OK)
      return st;
    if (!(p->tensors[i].name = nnmem__strdup(nm->valuestring)))
      return NNMEM_ERR_NOMEM;
  }
  return NNMEM_OK;
}

/* Optional figures of the cost model: fit.costs.{compute_s, exposed_s} and
 * the main tier's link_bandwidth in fit.device.tiers. */
static double opt_number(const cJSON *o, const char *key, int *bad_value) {
  const cJSON *v =
      cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
  if (!v) return 0;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0) {
    *bad_value = 1;
    return 0;
  }
  return v->valuedouble;
}

static nnmem_status_t read_estimates(rd_t *r, nnmem_exec_plan_t *p,
                                     const cJSON *fit) {
  int b = 0;
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(fit, "costs");
  p->est_compute_s = opt_number(c, "compute_s", &b);
  p->est_exposed_s = opt_number(c, "exposed_s", &b);
  if (b) return bad(r, "fit.costs", "times must be numbers >= 0");
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(fit, "device");
  const cJSON *ts =
      cJSON_IsObject(d) ? cJSON_GetObjectItemCaseSensitive(d, "tiers") : NULL;
  const cJSON *m =
      cJSON_IsArray(ts) ? cJSON_GetArrayItem(ts, (int)p->main_tier) : NULL;
  p->link_bandwidth = opt_number(m, "link_bandwidth", &b);
  if (b) return bad(r, "fit.device.tiers", "link_bandwidth: must be >= 0");
  return NNMEM_OK;
}

/* ---- step 5: references and active times ----------------------------------
 */

static int active_at(const exec_tier_t *t, size_t i, uint64_t s) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(t->problem) + i;
  if (s < b->first || s >= b->last) return 0;
  const nnmem_interval_t *g;
  size_t ng = nnmem_problem_gaps(t->problem, i, &g);
  for (size_t k = 0; k < ng; k++)
    if (s >= g[k].first && s < g[k].last) return 0;
  return 1;
}

static nnmem_status_t check_ref(rd_t *r, const nnmem_exec_plan_t *p,
                                const exec_ref_t *e, uint64_t s,
                                const char *what, int device_only) {
  if (e->tier >= p->n_tiers || (device_only && e->tier + 1 == p->n_tiers) ||
      e->buffer >= nnmem_problem_count(p->tiers[e->tier].problem))
    return nnmem__diag(r->diag, NNMEM_ERR_CONFLICT,
                       "%s: %s refers to [%u, %zu], which is not a buffer",
                       r->name, what, e->tier, e->buffer);
  if (!active_at(&p->tiers[e->tier], e->buffer, s))
    return nnmem__diag(r->diag, NNMEM_ERR_CONFLICT,
                       "%s: %s uses buffer '%s' of tier %s at step %llu, "
                       "outside its active time",
                       r->name, what,
                       nnmem_problem_id(p->tiers[e->tier].problem, e->buffer),
                       p->tiers[e->tier].name, (unsigned long long)s);
  return NNMEM_OK;
}

static nnmem_status_t check_copy(rd_t *r, const nnmem_exec_plan_t *p,
                                 const exec_copy_t *c, size_t i) {
  char what[64];
  snprintf(what, sizeof what, "fit.copies[%zu]", i);
  uint32_t host = p->n_tiers - 1;
  /* a copy in may be due at the step it starts (then it is exposed) */
  if (c->start > c->done || (!c->in && c->start == c->done) ||
      c->done >= p->steps)
    return nnmem__diag(r->diag, NNMEM_ERR_CONFLICT,
                       "%s: %s: start must be before done (< %llu)", r->name,
                       what, (unsigned long long)p->steps);
  uint64_t before = c->done > c->start ? c->done - 1 : c->start;
  exec_ref_t d = {c->tier, c->buffer};
  nnmem_status_t st = check_ref(r, p, &d, c->start, what, 1);
  if (st == NNMEM_OK) st = check_ref(r, p, &d, before, what, 1);
  if (st == NNMEM_OK && c->in) st = check_ref(r, p, &d, c->done, what, 1);
  exec_ref_t h = {host, c->host_buffer};
  if (st == NNMEM_OK) st = check_ref(r, p, &h, c->start, what, 0);
  if (st == NNMEM_OK) st = check_ref(r, p, &h, before, what, 0);
  if (st != NNMEM_OK) return st;
  const nnmem_buffer_t *db = nnmem_problem_buffers(p->tiers[c->tier].problem);
  const nnmem_buffer_t *hb = nnmem_problem_buffers(p->tiers[host].problem);
  if (db[c->buffer].size != c->bytes || hb[c->host_buffer].size != c->bytes)
    return nnmem__diag(r->diag, NNMEM_ERR_CONFLICT,
                       "%s: %s: bytes %llu differ from the buffers' sizes",
                       r->name, what, (unsigned long long)c->bytes);
  return NNMEM_OK;
}

static nnmem_status_t check_accesses(rd_t *r, const nnmem_exec_plan_t *p) {
  nnmem_status_t st = NNMEM_OK;
  for (size_t i = 0; i < p->n_init && st == NNMEM_OK; i++)
    st = check_ref(r, p, &p->init[i], 0, "fit.init", 0);
  for (size_t i = 0; i < p->n_final && st == NNMEM_OK; i++)
    st = check_ref(r, p, &p->final[i], p->steps ? p->steps - 1 : 0, "fit.final",
                   1);
  for (uint64_t s = 0; s < p->steps && st == NNMEM_OK; s++) {
    char what[112];
    snprintf(what, sizeof what, "fit.schedule[%llu] (op %.40s)",
             (unsigned long long)s, p->step[s].op);
    for (size_t i = 0; i < p->step[s].n_reads && st == NNMEM_OK; i++)
      st = check_ref(r, p, &p->step[s].reads[i], s, what, 1);
    for (size_t i = 0; i < p->step[s].n_writes && st == NNMEM_OK; i++)
      st = check_ref(r, p, &p->step[s].writes[i], s, what, 1);
  }
  for (size_t i = 0; i < p->n_copies && st == NNMEM_OK; i++)
    st = check_copy(r, p, &p->copies[i], i);
  return st;
}

/* Step 3: each tier's problem and the independent verifier. */
static nnmem_status_t verify_tiers(rd_t *r, const nnmem_exec_plan_t *p) {
  for (uint32_t t = 0; t < p->n_tiers; t++) {
    const exec_tier_t *tr = &p->tiers[t];
    nnmem_diag_t d = {{0}};
    nnmem_status_t st = nnmem_problem_check(tr->problem, &d);
    if (st == NNMEM_OK)
      st = nnmem_plan_verify(tr->problem, tr->offsets, tr->alignment,
                             t + 1 < p->n_tiers ? tr->capacity : 0, NULL, &d);
    if (st != NNMEM_OK)
      return nnmem__diag(r->diag, NNMEM_ERR_CONFLICT,
                         "%s: tier %s: the plan is invalid: %s", r->name,
                         tr->name, d.message);
    /* the region the executor allocates is `height` bytes (not in the
     * digest): every buffer must lie inside it */
    const nnmem_buffer_t *b = nnmem_problem_buffers(tr->problem);
    size_t n = nnmem_problem_count(tr->problem);
    for (size_t i = 0; i < n; i++) {
      uint64_t rel = 0, q;
      size_t root = i, par;
      while (nnmem_problem_parent(tr->problem, root, &par, &q) == NNMEM_OK)
        rel += q, root = par;
      uint64_t at = tr->offsets[root] + rel;
      if (b[i].size && (at < tr->offsets[root] || at + b[i].size < at ||
                        at + b[i].size > tr->height))
        return nnmem__diag(r->diag, NNMEM_ERR_CONFLICT,
                           "%s: tier %s: buffer '%s' ends at %llu, past the "
                           "tier's height %llu",
                           r->name, tr->name,
                           nnmem_problem_id(tr->problem, i),
                           (unsigned long long)(at + b[i].size),
                           (unsigned long long)tr->height);
    }
  }
  return NNMEM_OK;
}

static nnmem_status_t read_fit(rd_t *r, nnmem_exec_plan_t *p,
                               const cJSON *root) {
  const cJSON *fit = cJSON_GetObjectItemCaseSensitive(root, "fit");
  if (!cJSON_IsObject(fit))
    return nnmem__diag(r->diag, NNMEM_ERR_UNSUPPORTED,
                       "%s: no execution schedule (\"fit\"): this plan was "
                       "written without --mem-limit/--device; re-plan with "
                       "nnmem plan ... --mem-limit SIZE --out FILE",
                       r->name);
  uint64_t ver = 0, main = 0;
  nnmem_status_t st = get_u64(r, fit, "version", "fit", &ver);
  if (st == NNMEM_OK && ver != 1)
    return bad(r, "fit.version", "unsupported version (expected 1)");
  if (st == NNMEM_OK) st = get_u64(r, fit, "limit", "fit", &p->limit);
  if (st == NNMEM_OK) st = get_u64(r, fit, "steps", "fit", &p->steps);
  if (st == NNMEM_OK) st = get_u64(r, fit, "main_tier", "fit", &main);
  if (st != NNMEM_OK) return st;
  const cJSON *md = cJSON_GetObjectItemCaseSensitive(fit, "model_digest");
  if (!cJSON_IsString(md) ||
      sscanf(md->valuestring, "%16llx",
             (unsigned long long *)&p->model_digest) != 1)
    return bad(r, "fit.model_digest", "must be 16 hex digits");
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  p->model = nnmem__strdup(cJSON_IsString(model) ? model->valuestring : "");
  const cJSON *tiers = get_array(r, fit, "tiers", "fit", &st);
  if (!tiers) return st;
  int nt = cJSON_GetArraySize(tiers);
  if (nt < 2 || nt > NNMEM_DEVICE_MAX_TIERS || main + 2 != (uint64_t)nt)
    return bad(r, "fit.tiers", "2 to 4 tiers, the main one second to last");
  p->n_tiers = (uint32_t)nt;
  p->main_tier = (uint32_t)main;
  nnmem__exec_digest_pair(&r->h, p->limit, p->steps);
  nnmem__exec_digest_pair(&r->h, p->n_tiers, p->main_tier);
  uint32_t t = 0;
  for (const cJSON *e = tiers->child; e && st == NNMEM_OK; e = e->next, t++)
    st = read_tier(r, e, t, &p->tiers[t]);
  const cJSON *a;
  if (st == NNMEM_OK && (a = get_array(r, fit, "init", "fit", &st)))
    st = read_refs(r, a, "fit.init", &p->init, &p->n_init);
  if (st == NNMEM_OK) nnmem__exec_digest_pair(&r->h, 0xacce55, p->n_init);
  if (st == NNMEM_OK) st = read_schedule(r, p, fit);
  if (st == NNMEM_OK && (a = get_array(r, fit, "final", "fit", &st)))
    st = read_refs(r, a, "fit.final", &p->final, &p->n_final);
  if (st == NNMEM_OK) nnmem__exec_digest_pair(&r->h, 0xacce55, p->n_final);
  if (st == NNMEM_OK) st = read_copies(r, p, fit);
  if (st == NNMEM_OK) st = read_tensors(r, p, fit);
  if (st == NNMEM_OK) st = read_estimates(r, p, fit);
  if (st != NNMEM_OK) return st;
  uint64_t want = 0;
  const cJSON *dg = cJSON_GetObjectItemCaseSensitive(fit, "digest");
  if (!cJSON_IsString(dg) ||
      sscanf(dg->valuestring, "%16llx", (unsigned long long *)&want) != 1)
    return bad(r, "fit.digest", "must be 16 hex digits");
  if (want != r->h)
    return nnmem__diag(r->diag, NNMEM_ERR_CONFLICT,
                       "%s: corrupted: the content's digest is %016llx but "
                       "fit.digest says %016llx (a number changed after nnmem "
                       "wrote the file)",
                       r->name, (unsigned long long)r->h,
                       (unsigned long long)want);
  st = verify_tiers(r, p);
  return st == NNMEM_OK ? check_accesses(r, p) : st;
}

uint64_t nnmem_exec_plan_steps(const nnmem_exec_plan_t *p) {
  return p ? p->steps : 0;
}

uint64_t nnmem_exec_plan_bytes(const nnmem_exec_plan_t *p) {
  uint64_t sum = 0;
  for (uint32_t t = 0; p && t < p->n_tiers; t++)
    sum =
        sum + p->tiers[t].height < sum ? UINT64_MAX : sum + p->tiers[t].height;
  return sum;
}

void nnmem_exec_plan_destroy(nnmem_exec_plan_t *p) {
  if (!p) return;
  for (uint32_t t = 0; t < NNMEM_DEVICE_MAX_TIERS; t++) {
    nnmem_problem_destroy(p->tiers[t].problem);
    free(p->tiers[t].offsets);
  }
  for (uint64_t s = 0; p->step && s < p->steps; s++) {
    free(p->step[s].op);
    free(p->step[s].reads);
    free(p->step[s].writes);
  }
  free(p->step);
  free(p->init);
  free(p->final);
  free(p->copies);
  for (size_t i = 0; i < p->n_tensors; i++)
    free(p->tensors[i].name);
  free(p->tensors);
  free(p->model);
  free(p->name);
  free(p);
}

nnmem_status_t nnmem_exec_plan_parse(const char *data, size_t len,
                                     const char *name, nnmem_exec_plan_t **out,
                                     nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if (!data || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_exec_plan_parse: NULL argument");
  rd_t r = {name ? name : "plan JSON", diag, NNMEM__FNV_SEED};
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(data, len, &end, 0);
  if (!root)
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "%s: corrupted: not valid JSON (near byte %zu)", r.name,
                       end && end >= data ? (size_t)(end - data) : (size_t)0);
  nnmem_exec_plan_t *p = calloc(1, sizeof *p);
  nnmem_status_t st = p ? NNMEM_OK : NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK && !(p->name = nnmem__strdup(r.name)))
    st = NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) st = read_fit(&r, p, root);
  cJSON_Delete(root);
  if (st != NNMEM_OK) {
    if (st == NNMEM_ERR_NOMEM)
      nnmem__diag(diag, st, "%s: out of memory", r.name);
    nnmem_exec_plan_destroy(p);
    return st;
  }
  *out = p;
  return NNMEM_OK;
}

nnmem_status_t nnmem_exec_plan_match(const nnmem_exec_plan_t *p,
                                     const nnmem_graph_t *g,
                                     nnmem_diag_t *diag) {
  if (!p || !g)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_exec_plan_match: NULL argument");
  uint64_t ops = 0; /* a split op's parts run one op */
  for (uint64_t s = 0; s < p->steps; s++)
    ops += p->step[s].part == 0;
  if (nnmem_graph_op_count(g) != ops)
    return nnmem__diag(diag, NNMEM_ERR_CONFLICT,
                       "%s does not match the model: %llu ops in the plan, "
                       "%zu in the model",
                       p->name, (unsigned long long)ops,
                       nnmem_graph_op_count(g));
  if (nnmem_graph_tensor_count(g) != p->n_tensors)
    return nnmem__diag(diag, NNMEM_ERR_CONFLICT,
                       "%s does not match the model: %zu tensors in the plan, "
                       "%zu in the model",
                       p->name, p->n_tensors, nnmem_graph_tensor_count(g));
  for (uint32_t t = 0; t < p->n_tensors; t++) {
    nnmem_tensor_info_t ti;
    if (nnmem_graph_tensor(g, t, &ti) != NNMEM_OK) break;
    if (strcmp(ti.name, p->tensors[t].name) || ti.bytes != p->tensors[t].size)
      return nnmem__diag(
          diag, NNMEM_ERR_CONFLICT,
          "%s does not match the model: tensor %u is '%s' of %llu B in the "
          "plan but '%s' of %llu B in the model",
          p->name, t, p->tensors[t].name,
          (unsigned long long)p->tensors[t].size, ti.name,
          (unsigned long long)ti.bytes);
  }
  for (uint64_t s = 0; s < p->steps; s++) {
    uint32_t id;
    int found = 0;
    for (id = 0; id < nnmem_graph_op_count(g) && !found; id++) {
      nnmem_op_info_t oi;
      found = nnmem_graph_op(g, id, &oi) == NNMEM_OK &&
              strcmp(oi.name, p->step[s].op) == 0;
    }
    if (!found)
      return nnmem__diag(diag, NNMEM_ERR_CONFLICT,
                         "%s does not match the model: step %llu runs op "
                         "'%s', which the model does not have",
                         p->name, (unsigned long long)s, p->step[s].op);
  }
  if (nnmem_graph_digest(g) != p->model_digest)
    return nnmem__diag(diag, NNMEM_ERR_CONFLICT,
                       "%s does not match the model: same ops and tensor "
                       "sizes, but the operands or kinds differ (digest "
                       "%016llx, plan %016llx)",
                       p->name, (unsigned long long)nnmem_graph_digest(g),
                       (unsigned long long)p->model_digest);
  return NNMEM_OK;
}

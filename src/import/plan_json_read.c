/* plan_json_read.c - reads a plan JSON (the output of `nnmem plan --out
 * plan.json`, src/export/plan_json.c) back as a problem plus offsets, for
 * `nnmem verify` and any user who checks a plan written by nnmem.
 *
 * cJSON stores numbers as doubles, exact only up to 2^53, while offsets and
 * sizes go to 2^64 - 1. So:
 *   1. copy the text, turning every number token outside strings into a
 *      string that starts with the byte 0x01 ("\u0001" escape) and keeps
 *      the token's characters; the JSON stays valid and cJSON keeps the
 *      digits exactly. The copy must mean what the text means, so this
 *      step rejects: NUL bytes and invalid UTF-8 (with line:column), tokens
 *      that are not RFC 8259 numbers ("007", "1-2": quoted they would be
 *      valid strings), strings whose first character is U+0001 (they would
 *      read as numbers), control characters in strings and \u0000 (cJSON
 *      would cut the string there);
 *   2. parse the copy with cJSON, nothing but whitespace after the
 *      document; a tagged object key ({1: 2}) is not JSON;
 *   3. for each element of "buffers": "id" (a string, or a number used as
 *      its text), "offset", "size", "first", "last" as tagged numbers read
 *      digit by digit into uint64_t (no sign, fraction or exponent; at most
 *      2^64 - 1), and first < last;
 *   4. add the buffers to a new problem in file order (alignment 1) and
 *      collect the offsets. A repeated id, or a key given twice in one
 *      buffer, is an error that names it.
 *   5. optional keys of a buffer: "gaps" (a list of [first, last] pairs),
 * "parent" (an id listed in "buffers") with "parent_offset"; after all buffers
 * the parents are looked up and the gap and sub-buffer rules of
 * nnmem_problem_check are checked, the error naming buffers[i] and its id.
 * Other keys ("model", "strategy", "tensors", ...) are ignored.
 * nnmem_plan_read_json_order runs steps 1-2 and reads "order" (the op
 * names in step order, written for graph plans) against a graph: every
 * element a string naming an op, every op exactly once; op names are
 * looked up in a sorted index (O(n log n)).
 * nnmem_plan_read_json_concat_kept_out reads "concat_kept_out" the same way
 * (op names, each at most once; absent: none).
 * Invariants: on success problem count == offsets count == buffers listed;
 * every id read is non-empty valid UTF-8 without U+0000 and does not start
 * with U+0001, so nnmem_problem_format_plan_json writes it back to the
 * same bytes (checked by tests/fuzz/fuzz_plan_json.c).
 * Complexity: O(text + buffers). Thread-safety: each call is independent. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/text.h"
#include "common/util.h"
#include "import/json_exact.h"
#include "nnmem/io.h"
#include "plan/problem_internal.h"

#define NUM_TAG '\x01'

typedef struct reader {
  const char *name;
  nnmem_problem_t *p;
  uint64_t *offs;
  nnmem_diag_t *diag;
  const cJSON **parent; /* per buffer: its "parent" string, or NULL */
  uint64_t *parent_off;
} reader_t;

/* Length of the JSON number (RFC 8259, section 6) that fills s[0, n)
 * exactly, or 0 when s[0, n) is not one ("007", "1.", "-", "1e", "1-2"). */
static size_t json_number_len(const char *s, size_t n) {
  size_t i = 0, d;
  if (i < n && s[i] == '-') i++;
  if (i < n && s[i] == '0') {
    i++;
  } else {
    for (d = i; i < n && isdigit((unsigned char)s[i]);)
      i++;
    if (i == d) return 0;
  }
  if (i < n && s[i] == '.') {
    for (d = ++i; i < n && isdigit((unsigned char)s[i]);)
      i++;
    if (i == d) return 0;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    for (d = i; i < n && isdigit((unsigned char)s[i]);)
      i++;
    if (i == d) return 0;
  }
  return i == n ? n : 0;
}

static nnmem_status_t text_error(const reader_t *r, const char *data,
                                 size_t len, size_t pos, const char *what) {
  size_t line, col;
  nnmem__text_position(data, len, pos, &line, &col);
  return nnmem__diag(r->diag, NNMEM_ERR_PARSE, "%s:%zu:%zu: %s", r->name, line,
                     col, what);
}

/* Inside a string at data[i] (after the opening quote when `first`): the
 * bytes the tagging cannot tell apart from its own, or that cJSON would
 * change. NULL when fine. */
static const char *string_byte_error(const char *data, size_t len, size_t i,
                                     int first) {
  if ((unsigned char)data[i] < 0x20)
    return "not valid JSON: control character in a string";
  if (data[i] != '\\' || len - i < 6 || data[i + 1] != 'u') return NULL;
  if (memcmp(data + i + 2, "0000", 4) == 0)
    return "\\u0000 in a string is not supported (ids are C strings)";
  if (first && memcmp(data + i + 2, "0001", 4) == 0)
    return "a string starting with \\u0001 is not supported";
  return NULL;
}

/* The number token at data[start] (the longest run of digits and "+-.eE")
 * appended to out[*o] as "\u0001<token>"; returns the index after the token,
 * 0 when the token is not a JSON number. */
static size_t copy_number(const char *data, size_t len, size_t start, char *out,
                          size_t *o) {
  size_t i = start;
  while (i < len &&
         (isdigit((unsigned char)data[i]) || strchr("+-.eE", data[i]) != NULL))
    i++;
  if (json_number_len(data + start, i - start) == 0) return 0;
  memcpy(out + *o, "\"\\u0001", 7);
  *o += 7;
  memcpy(out + *o, data + start, i - start);
  *o += i - start;
  out[(*o)++] = '"';
  return i;
}

/* Step 1: *out = a copy of data[0, len) with number tokens quoted and
 * tagged. Rejects what would make the copy mean something else: NUL bytes,
 * invalid UTF-8, tokens that are not JSON numbers (they would become
 * strings), strings starting with U+0001 (they would read as numbers),
 * control characters and \u0000 in strings. Each token grows by at most 8
 * bytes ("\u0001" + 2 quotes), and a token is at least 1 byte, so
 * 9 * len + 1 is enough. */
static nnmem_status_t tag_numbers(const reader_t *r, const char *data,
                                  size_t len, char **out_p) {
  size_t bad = 0;
  int kind = nnmem__utf8_check(data, len, &bad);
  if (kind)
    return text_error(r, data, len, bad,
                      kind == 2 ? "NUL byte" : "invalid UTF-8 byte");
  if (len > (SIZE_MAX - 1) / 9)
    return nnmem__diag(r->diag, NNMEM_ERR_NOMEM, "%s: out of memory", r->name);
  char *out = malloc(9 * len + 1);
  if (!out)
    return nnmem__diag(r->diag, NNMEM_ERR_NOMEM, "%s: out of memory", r->name);
  size_t o = 0;
  int in_string = 0;
  const char *why = NULL;
  for (size_t i = 0; i < len; i++) {
    char c = data[i];
    if (in_string) {
      if ((why = string_byte_error(data, len, i, in_string == 1)) != NULL) {
        bad = i;
        break;
      }
      in_string = 2;
      out[o++] = c;
      if (c == '\\' && i + 1 < len)
        out[o++] = data[++i];
      else if (c == '"')
        in_string = 0;
    } else if (c == '"') {
      in_string = 1;
      out[o++] = c;
    } else if (c == '-' || isdigit((unsigned char)c)) {
      size_t end = copy_number(data, len, i, out, &o);
      if (!end) {
        why = "not valid JSON: bad number";
        bad = i;
        break;
      }
      i = end - 1;
    } else {
      out[o++] = c;
    }
  }
  if (why) {
    free(out);
    return text_error(r, data, len, bad, why);
  }
  out[o] = '\0';
  *out_p = out;
  return NNMEM_OK;
}

/* 1 when an object key in j's tree is a tagged number: {1: 2} is not
 * JSON. Recursion depth is bounded by cJSON's nesting limit. */
static int has_number_key(const cJSON *j) {
  for (const cJSON *c = j->child; c; c = c->next)
    if ((c->string && c->string[0] == NUM_TAG) || has_number_key(c)) return 1;
  return 0;
}

/* The exact value of a tagged number that is a whole number in
 * [0, 2^64 - 1]; -1 when it is not one. */
static int tagged_u64(const cJSON *j, uint64_t *v) {
  if (!cJSON_IsString(j) || j->valuestring[0] != NUM_TAG) return -1;
  const char *s = j->valuestring + 1;
  if (!*s) return -1;
  uint64_t r = 0;
  for (; *s; s++) {
    if (!isdigit((unsigned char)*s)) return -1;
    unsigned d = (unsigned)(*s - '0');
    if (r > (UINT64_MAX - d) / 10) return -1;
    r = r * 10 + d;
  }
  *v = r;
  return 0;
}

/* The member `key` of object b, NULL when absent; *twice = 1 when the key
 * is there more than once (JSON leaves open which one counts). */
static const cJSON *member(const cJSON *b, const char *key, int *twice) {
  const cJSON *found = NULL;
  *twice = 0;
  for (const cJSON *c = b->child; c; c = c->next)
    if (c->string && strcmp(c->string, key) == 0) {
      if (found) *twice = 1;
      if (!found) found = c;
    }
  return found;
}

static nnmem_status_t duplicate_key(reader_t *r, size_t i, const char *key) {
  return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                     "%s: buffers[%zu]: key '%s' is given twice", r->name, i,
                     key);
}

static nnmem_status_t get_field(reader_t *r, const cJSON *b, size_t i,
                                const char *id, const char *key, uint64_t *v) {
  int twice;
  const cJSON *j = member(b, key, &twice);
  if (twice) return duplicate_key(r, i, key);
  if (!j)
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: buffers[%zu] ('%s'): missing key '%s'", r->name, i,
                       id, key);
  if (tagged_u64(j, v) != 0)
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: buffers[%zu] ('%s'): '%s' must be an integer in "
                       "[0, 2^64 - 1]",
                       r->name, i, id, key);
  return NNMEM_OK;
}

/* Step 5: "gaps" of buffers[i] (already added as buffer i). */
static nnmem_status_t read_gaps(reader_t *r, const cJSON *b, size_t i,
                                const char *id) {
  int twice;
  const cJSON *jg = member(b, "gaps", &twice), *g;
  if (twice) return duplicate_key(r, i, "gaps");
  if (!jg) return NNMEM_OK;
  if (!cJSON_IsArray(jg))
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: buffers[%zu] ('%s'): 'gaps' must be a list of "
                       "[first, last] pairs",
                       r->name, i, id);
  size_t k = 0;
  cJSON_ArrayForEach(g, jg) {
    uint64_t lo, hi;
    if (!cJSON_IsArray(g) || cJSON_GetArraySize(g) != 2 ||
        tagged_u64(cJSON_GetArrayItem(g, 0), &lo) != 0 ||
        tagged_u64(cJSON_GetArrayItem(g, 1), &hi) != 0 || hi <= lo)
      return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                         "%s: buffers[%zu] ('%s'): gaps[%zu] must be [first, "
                         "last] with integers first < last",
                         r->name, i, id, k);
    nnmem_status_t st = nnmem_problem_add_gap(r->p, i, lo, hi);
    if (st) return nnmem__diag(r->diag, st, "%s: out of memory", r->name);
    k++;
  }
  return NNMEM_OK;
}

/* Step 5: "parent" and "parent_offset" of buffers[i], kept for later. */
static nnmem_status_t read_parent(reader_t *r, const cJSON *b, size_t i,
                                  const char *id) {
  int twice, twice2;
  const cJSON *jp = member(b, "parent", &twice);
  const cJSON *jo = member(b, "parent_offset", &twice2);
  if (twice) return duplicate_key(r, i, "parent");
  if (twice2) return duplicate_key(r, i, "parent_offset");
  if (!jp && !jo) return NNMEM_OK;
  if (!cJSON_IsString(jp) || !jp->valuestring[0] || !jo)
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: buffers[%zu] ('%s'): 'parent' (an id) and "
                       "'parent_offset' come together",
                       r->name, i, id);
  r->parent[i] = jp;
  return get_field(r, b, i, id, "parent_offset", &r->parent_off[i]);
}

/* Step 5: sets every parent relation and checks the rules. */
static nnmem_status_t resolve_parents(reader_t *r, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!r->parent[i]) continue;
    const char *pid = r->parent[i]->valuestring,
               *id = nnmem_problem_id(r->p, i);
    if (pid[0] == NUM_TAG) pid++;
    size_t q;
    if (nnmem_problem_find(r->p, pid, &q) != NNMEM_OK)
      return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                         "%s: buffers[%zu] ('%s'): parent '%s' is not listed "
                         "in \"buffers\"",
                         r->name, i, id, pid);
    if (q == i)
      return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                         "%s: buffers[%zu] ('%s'): a buffer cannot be its "
                         "own parent",
                         r->name, i, id);
    nnmem_status_t st = nnmem_problem_set_parent(r->p, i, q, r->parent_off[i]);
    if (st) return nnmem__diag(r->diag, st, "%s: out of memory", r->name);
  }
  nnmem_diag_t d;
  size_t bad = 0;
  if (nnmem__problem_check_extras(r->p, &d, &bad))
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE, "%s: buffers[%zu]: %s",
                       r->name, bad, d.message);
  return NNMEM_OK;
}

/* Step 3 for buffers[i]. */
static nnmem_status_t read_buffer(reader_t *r, const cJSON *b, size_t i) {
  if (!cJSON_IsObject(b))
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: buffers[%zu] is not an object", r->name, i);
  int twice;
  const cJSON *jid = member(b, "id", &twice);
  if (twice) return duplicate_key(r, i, "id");
  if (!cJSON_IsString(jid) || !jid->valuestring[0])
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: buffers[%zu]: missing or empty 'id'", r->name, i);
  const char *id = jid->valuestring;
  if (id[0] == NUM_TAG) id++; /* a number as id: its text */
  uint64_t off, size, first, last;
  nnmem_status_t st = get_field(r, b, i, id, "offset", &off);
  if (st == NNMEM_OK) st = get_field(r, b, i, id, "size", &size);
  if (st == NNMEM_OK) st = get_field(r, b, i, id, "first", &first);
  if (st == NNMEM_OK) st = get_field(r, b, i, id, "last", &last);
  if (st != NNMEM_OK) return st;
  size_t prev = 0;
  if (nnmem_problem_find(r->p, id, &prev) == NNMEM_OK)
    return nnmem__diag(r->diag, NNMEM_ERR_DUPLICATE,
                       "%s: buffer '%s' is listed twice (buffers[%zu] and "
                       "buffers[%zu])",
                       r->name, id, prev, i);
  st = nnmem_problem_add(r->p, id, size, 1, first, last, NULL);
  if (st != NNMEM_OK)
    return nnmem__diag(r->diag, st,
                       "%s: buffers[%zu] ('%s'): %s (first %llu, last %llu)",
                       r->name, i, id,
                       st == NNMEM_ERR_INVALID ? "'last' must exceed 'first'"
                                               : nnmem_status_str(st),
                       (unsigned long long)first, (unsigned long long)last);
  r->offs[i] = off;
  st = read_gaps(r, b, i, id);
  if (st == NNMEM_OK) st = read_parent(r, b, i, id);
  return st;
}

static nnmem_status_t read_doc(reader_t *r, const cJSON *doc) {
  const cJSON *bufs = cJSON_GetObjectItemCaseSensitive(doc, "buffers");
  if (!cJSON_IsObject(doc) || !cJSON_IsArray(bufs))
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: not a plan JSON (no \"buffers\" list)", r->name);
  size_t n = (size_t)cJSON_GetArraySize(bufs), i = 0;
  r->offs = calloc(n ? n : 1, sizeof *r->offs);
  if (!r->offs) return nnmem__diag(r->diag, NNMEM_ERR_NOMEM, "out of memory");
  r->parent = calloc(n ? n : 1, sizeof *r->parent);
  r->parent_off = calloc(n ? n : 1, sizeof *r->parent_off);
  if (!r->parent || !r->parent_off)
    return nnmem__diag(r->diag, NNMEM_ERR_NOMEM, "out of memory");
  nnmem_status_t st = nnmem_problem_create(&r->p);
  const cJSON *b;
  cJSON_ArrayForEach(b, bufs) {
    if (st != NNMEM_OK) break;
    st = read_buffer(r, b, i++);
  }
  if (st == NNMEM_OK) st = resolve_parents(r, n);
  return st;
}

nnmem_status_t nnmem_plan_read_json(const char *data, size_t len,
                                    const char *display_name,
                                    nnmem_problem_t **problem_out,
                                    uint64_t **offsets_out,
                                    nnmem_diag_t *diag) {
  if (problem_out) *problem_out = NULL;
  if (offsets_out) *offsets_out = NULL;
  if (!data || !problem_out || !offsets_out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_plan_read_json: NULL argument");
  const char *name = display_name ? display_name : "<plan>";
  cJSON *doc = NULL;
  nnmem_status_t st = nnmem__json_exact_parse(name, data, len, &doc, diag);
  if (st == NNMEM_OK)
    st = nnmem__plan_read_doc(name, doc, problem_out, offsets_out, diag);
  cJSON_Delete(doc);
  return st;
}

nnmem_status_t nnmem_plan_read_json_file(const char *path,
                                         nnmem_problem_t **problem_out,
                                         uint64_t **offsets_out,
                                         nnmem_diag_t *diag) {
  char *data = NULL;
  size_t len = 0;
  if (problem_out) *problem_out = NULL;
  if (offsets_out) *offsets_out = NULL;
  nnmem_status_t st = nnmem_file_read(path, &data, &len, diag);
  if (st != NNMEM_OK) return st;
  st = nnmem_plan_read_json(data, len, path, problem_out, offsets_out, diag);
  free(data);
  return st;
}

/* ---- the operator order ---------------------------------------------------*/

typedef struct op_name {
  const char *name;
  uint32_t op;
} op_name_t;

static int op_name_cmp(const void *a, const void *b) {
  return strcmp(((const op_name_t *)a)->name, ((const op_name_t *)b)->name);
}

/* Resolves the JSON list `list` (member `key`) of op names against the
 * graph: seen[op] is set for each (an op named twice is an error) and,
 * when order is given, order[i] is the i-th name's op. seen has room for
 * the graph's ops and starts zeroed. */
static nnmem_status_t resolve_op_names(reader_t *r, const cJSON *list,
                                       const char *key, const nnmem_graph_t *g,
                                       uint8_t *seen, uint32_t *order) {
  size_t n = nnmem_graph_op_count(g);
  op_name_t *idx = malloc((n + 1) * sizeof *idx);
  if (!idx) return nnmem__diag(r->diag, NNMEM_ERR_NOMEM, "out of memory");
  for (uint32_t o = 0; o < n; o++) {
    nnmem_op_info_t oi;
    nnmem_graph_op(g, o, &oi);
    idx[o].name = oi.name;
    idx[o].op = o;
  }
  qsort(idx, n, sizeof *idx, op_name_cmp);
  nnmem_status_t st = NNMEM_OK;
  size_t i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, list) {
    if (!cJSON_IsString(e) || e->valuestring[0] == NUM_TAG) {
      st = nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: %s[%zu] is not an op name", r->name, key, i);
      break;
    }
    op_name_t probe = {e->valuestring, 0};
    const op_name_t *hit = bsearch(&probe, idx, n, sizeof *idx, op_name_cmp);
    if (!hit)
      st = nnmem__diag(r->diag, NNMEM_ERR_NOT_FOUND,
                       "%s: %s[%zu]: the graph has no op '%s'", r->name, key,
                       i, e->valuestring);
    else if (seen[hit->op])
      st = nnmem__diag(r->diag, NNMEM_ERR_DUPLICATE,
                       "%s: %s[%zu]: op '%s' is listed twice", r->name, key, i,
                       e->valuestring);
    if (st != NNMEM_OK) break;
    seen[hit->op] = 1;
    if (order) order[i] = hit->op;
    i++;
  }
  free(idx);
  return st;
}

static nnmem_status_t read_order(reader_t *r, const cJSON *doc,
                                 const nnmem_graph_t *g, uint32_t **out) {
  int twice;
  const cJSON *jo = member(doc, "order", &twice);
  if (twice)
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: key 'order' is given twice", r->name);
  if (!jo) return NNMEM_OK; /* file order */
  size_t n = nnmem_graph_op_count(g);
  if (!cJSON_IsArray(jo) || (size_t)cJSON_GetArraySize(jo) != n)
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: 'order' must list the graph's %zu ops", r->name, n);
  uint32_t *order = malloc((n + 1) * sizeof *order);
  uint8_t *seen = calloc(n + 1, 1);
  nnmem_status_t st =
      order && seen ? resolve_op_names(r, jo, "order", g, seen, order)
                    : nnmem__diag(r->diag, NNMEM_ERR_NOMEM, "out of memory");
  free(seen);
  if (st != NNMEM_OK) {
    free(order);
    return st;
  }
  *out = order;
  return NNMEM_OK;
}

/* "concat_kept_out": a list of op names, each at most once, as a per-op
 * flag array (NULL when the key is absent). */
static nnmem_status_t read_kept_out(reader_t *r, const cJSON *doc,
                                    const nnmem_graph_t *g, uint8_t **out) {
  int twice;
  const cJSON *jk = member(doc, "concat_kept_out", &twice);
  if (twice)
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: key 'concat_kept_out' is given twice", r->name);
  if (!jk) return NNMEM_OK;
  if (!cJSON_IsArray(jk))
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: 'concat_kept_out' must be a list of op names",
                       r->name);
  uint8_t *k = calloc(nnmem_graph_op_count(g) + 1, 1);
  nnmem_status_t st =
      k ? resolve_op_names(r, jk, "concat_kept_out", g, k, NULL)
        : nnmem__diag(r->diag, NNMEM_ERR_NOMEM, "out of memory");
  if (st != NNMEM_OK) {
    free(k);
    return st;
  }
  *out = k;
  return NNMEM_OK;
}

/* Steps 1-2 for the readers of one member of a plan JSON (the order, the
 * ops kept out of concat-into-output): the document with its numbers
 * tagged, which must be an object. */
static nnmem_status_t parse_plan_object(reader_t *r, const char *data,
                                        size_t len, cJSON **doc) {
  char *tagged = NULL;
  nnmem_status_t st = tag_numbers(r, data, len, &tagged);
  if (st != NNMEM_OK) return st;
  const char *end = NULL;
  *doc = cJSON_ParseWithLengthOpts(tagged, strlen(tagged) + 1, &end, 1);
  free(tagged);
  if (!*doc || !cJSON_IsObject(*doc))
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE, "%s: not a JSON object",
                       r->name);
  return NNMEM_OK;
}

nnmem_status_t nnmem_plan_read_json_concat_kept_out(
    const char *data, size_t len, const char *display_name,
    const nnmem_graph_t *g, uint8_t **kept_out, nnmem_diag_t *diag) {
  if (kept_out) *kept_out = NULL;
  if (!data || !g || !kept_out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_plan_read_json_concat_kept_out: NULL argument");
  reader_t r = {.name = display_name ? display_name : "<plan>", .diag = diag};
  cJSON *doc = NULL;
  nnmem_status_t st = parse_plan_object(&r, data, len, &doc);
  if (st == NNMEM_OK) st = read_kept_out(&r, doc, g, kept_out);
  cJSON_Delete(doc);
  return st;
}

nnmem_status_t nnmem_plan_read_json_order(const char *data, size_t len,
                                          const char *display_name,
                                          const nnmem_graph_t *g,
                                          uint32_t **order_out,
                                          nnmem_diag_t *diag) {
  if (order_out) *order_out = NULL;
  if (!data || !g || !order_out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_plan_read_json_order: NULL argument");
  reader_t r = {.name = display_name ? display_name : "<plan>", .diag = diag};
  cJSON *doc = NULL;
  nnmem_status_t st = parse_plan_object(&r, data, len, &doc);
  if (st == NNMEM_OK) st = read_order(&r, doc, g, order_out);
  cJSON_Delete(doc);
  return st;
}

/* ---- readers of a plan object inside another document (json_exact.h) ---- */

nnmem_status_t nnmem__plan_read_doc(const char *name, const cJSON *doc,
                                    nnmem_problem_t **problem_out,
                                    uint64_t **offsets_out,
                                    nnmem_diag_t *diag) {
  reader_t r = {name, NULL, NULL, diag, NULL, NULL};
  *problem_out = NULL;
  *offsets_out = NULL;
  nnmem_status_t st = read_doc(&r, doc);
  free(r.parent);
  free(r.parent_off);
  if (st != NNMEM_OK) {
    nnmem_problem_destroy(r.p);
    free(r.offs);
    return st;
  }
  *problem_out = r.p;
  *offsets_out = r.offs;
  return NNMEM_OK;
}

nnmem_status_t nnmem__plan_read_doc_order(const char *name, const cJSON *doc,
                                          const nnmem_graph_t *g,
                                          uint32_t **order_out,
                                          nnmem_diag_t *diag) {
  reader_t r = {.name = name, .diag = diag};
  *order_out = NULL;
  return read_order(&r, doc, g, order_out);
}

nnmem_status_t nnmem__plan_read_doc_kept_out(const char *name, const cJSON *doc,
                                             const nnmem_graph_t *g,
                                             uint8_t **kept_out,
                                             nnmem_diag_t *diag) {
  reader_t r = {.name = name, .diag = diag};
  *kept_out = NULL;
  return read_kept_out(&r, doc, g, kept_out);
}

/* ---- steps 1-2 for other readers of nnmem's JSON (json_exact.h) ---------- */

nnmem_status_t nnmem__json_exact_parse(const char *name, const char *data,
                                       size_t len, cJSON **out,
                                       nnmem_diag_t *diag) {
  *out = NULL;
  reader_t r = {.name = name, .diag = diag};
  char *tagged = NULL;
  nnmem_status_t st = tag_numbers(&r, data, len, &tagged);
  if (st != NNMEM_OK) return st;
  const char *end = NULL;
  cJSON *doc = cJSON_ParseWithLengthOpts(tagged, strlen(tagged) + 1, &end, 1);
  free(tagged);
  if (!doc)
    return nnmem__diag(diag, NNMEM_ERR_PARSE, "%s: not valid JSON", name);
  if (has_number_key(doc)) {
    cJSON_Delete(doc);
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "%s: not valid JSON: a number as an object key", name);
  }
  *out = doc;
  return NNMEM_OK;
}

int nnmem__json_exact_u64(const cJSON *j, uint64_t *v) {
  return tagged_u64(j, v);
}

int nnmem__json_exact_double(const cJSON *j, double *v) {
  if (!cJSON_IsString(j) || j->valuestring[0] != NUM_TAG) return -1;
  char *end = NULL;
  *v = strtod(j->valuestring + 1, &end);
  return end && *end == '\0' && end != j->valuestring + 1 ? 0 : -1;
}

const cJSON *nnmem__json_member(const cJSON *obj, const char *key, int *twice) {
  return member(obj, key, twice);
}

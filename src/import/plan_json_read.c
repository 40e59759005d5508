/* plan_json_read.c - reads a plan JSON (the output of `nnmem plan --out
 * plan.json`, src/export/plan_json.c) back as a problem plus offsets, for
 * `nnmem verify` and any user who checks a plan written by nnmem.
 *
 * cJSON stores numbers as doubles, exact only up to 2^53, while offsets and
 * sizes go to 2^64 - 1. So:
 *   1. copy the text, turning every number token outside strings into a
 *      string that starts with the byte 0x01 ("\u0001" escape) and keeps
 *      the token's characters; the JSON stays valid and cJSON keeps the
 *      digits exactly. A string of the input whose first character is
 *      U+0001 or U+0002 (raw or escaped) gets "\u0002" put in front, so
 *      after parsing a value starting with 0x01 is always a tagged number
 *      and one starting with 0x02 a string with one byte to drop (an id
 *      "\u0001x" stays "\u0001x", and "\u00017" is not the number 7);
 *   2. parse the copy with cJSON (structure, strings, escapes);
 *   3. for each element of "buffers": "id" (a string, or a number used as
 *      its text), "offset", "size", "first", "last" as tagged numbers read
 *      digit by digit into uint64_t (no sign, fraction or exponent; at most
 *      2^64 - 1), and first < last;
 *   4. add the buffers to a new problem in file order (alignment 1) and
 *      collect the offsets. A repeated id is an error that names it.
 * Other keys ("model", "strategy", "tensors", ...) are ignored.
 * Invariant: on success problem count == offsets count == buffers listed.
 * Complexity: O(text + buffers). Thread-safety: each call is independent. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "nnmem/io.h"

#define NUM_TAG '\x01'
#define STR_TAG '\x02'

/* 1 when the string whose opening quote is data[i] starts with U+0001 or
 * U+0002, raw or as a "\u0001" / "\u0002" escape. */
static int starts_with_tag(const char *data, size_t len, size_t i) {
  if (i + 1 < len && (data[i + 1] == NUM_TAG || data[i + 1] == STR_TAG))
    return 1;
  return i + 6 < len && memcmp(data + i + 1, "\\u000", 5) == 0 &&
         (data[i + 6] == '1' || data[i + 6] == '2');
}

/* Step 1: a copy of data[0, len) with number tokens quoted and tagged;
 * NULL on NOMEM. Each token grows by at most 8 bytes ("\u0001" + 2
 * quotes), and a token is at least 1 byte (a string: 6 bytes, at least 2),
 * so 9 * len + 1 is enough. */
static char *tag_numbers(const char *data, size_t len) {
  if (len > (SIZE_MAX - 1) / 9) return NULL;
  char *out = malloc(9 * len + 1);
  if (!out) return NULL;
  size_t o = 0;
  int in_string = 0;
  for (size_t i = 0; i < len; i++) {
    char c = data[i];
    if (in_string) {
      out[o++] = c;
      if (c == '\\' && i + 1 < len)
        out[o++] = data[++i];
      else if (c == '"')
        in_string = 0;
    } else if (c == '"') {
      in_string = 1;
      out[o++] = c;
      if (starts_with_tag(data, len, i)) {
        memcpy(out + o, "\\u0002", 6);
        o += 6;
      }
    } else if (c == '-' || isdigit((unsigned char)c)) {
      memcpy(out + o, "\"\\u0001", 7);
      o += 7;
      while (i < len && (isdigit((unsigned char)data[i]) ||
                         strchr("+-.eE", data[i]) != NULL))
        out[o++] = data[i++];
      out[o++] = '"';
      i--;
    } else {
      out[o++] = c;
    }
  }
  out[o] = '\0';
  return out;
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

typedef struct reader {
  const char *name;
  nnmem_problem_t *p;
  uint64_t *offs;
  nnmem_diag_t *diag;
} reader_t;

static nnmem_status_t get_field(reader_t *r, const cJSON *b, size_t i,
                                const char *id, const char *key, uint64_t *v) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(b, key);
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

/* Step 3 for buffers[i]. */
static nnmem_status_t read_buffer(reader_t *r, const cJSON *b, size_t i) {
  if (!cJSON_IsObject(b))
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: buffers[%zu] is not an object", r->name, i);
  const cJSON *jid = cJSON_GetObjectItemCaseSensitive(b, "id");
  if (!cJSON_IsString(jid) || !jid->valuestring[0])
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: buffers[%zu]: missing or empty 'id'", r->name, i);
  const char *id = jid->valuestring;
  /* a number as id: its text; a tagged string: its own bytes */
  if (id[0] == NUM_TAG || id[0] == STR_TAG) id++;
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
  return NNMEM_OK;
}

static nnmem_status_t read_doc(reader_t *r, const cJSON *doc) {
  const cJSON *bufs = cJSON_GetObjectItemCaseSensitive(doc, "buffers");
  if (!cJSON_IsObject(doc) || !cJSON_IsArray(bufs))
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s: not a plan JSON (no \"buffers\" list)", r->name);
  size_t n = (size_t)cJSON_GetArraySize(bufs), i = 0;
  r->offs = calloc(n ? n : 1, sizeof *r->offs);
  if (!r->offs) return nnmem__diag(r->diag, NNMEM_ERR_NOMEM, "out of memory");
  nnmem_status_t st = nnmem_problem_create(&r->p);
  const cJSON *b;
  cJSON_ArrayForEach(b, bufs) {
    if (st != NNMEM_OK) break;
    st = read_buffer(r, b, i++);
  }
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
  reader_t r = {display_name ? display_name : "<plan>", NULL, NULL, diag};
  char *tagged = tag_numbers(data, len);
  if (!tagged) return nnmem__diag(diag, NNMEM_ERR_NOMEM, "out of memory");
  cJSON *doc = cJSON_Parse(tagged);
  nnmem_status_t st;
  if (!doc)
    st = nnmem__diag(diag, NNMEM_ERR_PARSE, "%s: not valid JSON", r.name);
  else
    st = read_doc(&r, doc);
  cJSON_Delete(doc);
  free(tagged);
  if (st != NNMEM_OK) {
    nnmem_problem_destroy(r.p);
    free(r.offs);
    return st;
  }
  *problem_out = r.p;
  *offsets_out = r.offs;
  return NNMEM_OK;
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

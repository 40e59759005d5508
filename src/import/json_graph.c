/* json_graph.c - reader for the JSON graph format (docs/graph-format.md,
 * docs/graph.schema.json).
 *
 *   {"format_version": 1, "name": "tiny", "description": "...",
 *    "tensors": [{"name", "kind", "dtype", "shape", "bytes", "align"}],
 *    "ops": [{"name", "type", "inputs", "outputs", "workspace",
 *             "inplace", "view", "slice": {"axis", "start"}}]}
 *
 * Algorithm:
 *   1. check the text is UTF-8 without NUL bytes, parse it with cJSON
 *      (a syntax error is reported as file:line:column);
 *   2. check the top-level object: no unknown or repeated keys, the
 *      format version, the name;
 *   3. for each tensor: check its keys and their types, resolve dtype and
 *      kind names, add it with nnmem_graph_add_tensor;
 *   4. for each op: check its keys, resolve input / output names through
 *      nnmem_graph_find_tensor (an unknown name is an error naming the op
 *      and the tensor), add it with nnmem_graph_add_op, then its optional
 *      "slice" with nnmem_graph_set_op_slice;
 *   5. nnmem_graph_check (unproduced inputs, cycles), so every error of the
 *      file comes out at load time with the file name.
 * Every message has the form "FILE: op 'conv1' (ops[3]): what"; errors the
 * graph library finds are prefixed with "FILE: ops[3]: ".
 *
 * Numbers: JSON numbers are doubles in cJSON, so integers (sizes, dims) must
 * be exact: at most 2^53 - 1 (2^53 + 1 would read as 2^53).
 * Complexity: O(file size) expected (hash lookups for names).
 * Thread-safety: each call is independent (cJSON's global error pointer is
 * not used). */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/text.h"
#include "common/util.h"
#include "nnmem/io.h"

#define MAX_EXACT 9007199254740991.0 /* 2^53 - 1 */

typedef struct jctx {
  const char *file;
  nnmem_diag_t *diag;
  nnmem_graph_t *g;
  char where[300]; /* "op 'conv1' (ops[3])", or "" at the top level */
  nnmem__strset_t op_names;
  uint32_t *io; /* scratch: an op's input and output tensor ids */
  size_t io_cap;
} jctx_t;

/* Fills diag with "FILE: WHERE: message" and returns st. */
static nnmem_status_t jerr(jctx_t *c, nnmem_status_t st, const char *fmt, ...)
    NNMEM__PRINTF(3, 4);
static nnmem_status_t jerr(jctx_t *c, nnmem_status_t st, const char *fmt, ...) {
  char msg[NNMEM_DIAG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return nnmem__diag(c->diag, st, "%s: %s%s%s", c->file, c->where,
                     c->where[0] ? ": " : "", msg);
}

static const char *type_name(const cJSON *j) {
  if (cJSON_IsString(j)) return "a string";
  if (cJSON_IsNumber(j)) return "a number";
  if (cJSON_IsBool(j)) return "a boolean";
  if (cJSON_IsNull(j)) return "null";
  if (cJSON_IsArray(j)) return "an array";
  if (cJSON_IsObject(j)) return "an object";
  return "invalid";
}

/* Rejects repeated keys and keys not in `allowed` (NULL-terminated). */
static nnmem_status_t check_keys(jctx_t *c, const cJSON *obj,
                                 const char *const *allowed) {
  char unknown[256] = "", list[256] = "";
  int n_unknown = 0;
  unsigned char seen[32] = {0}; /* every allowed list is shorter */
  for (size_t i = 0; allowed[i]; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
             i ? ", " : "", allowed[i]);
  /* linear in the keys: only an allowed key can be a reportable duplicate
   * (a repeated unknown key is reported as unknown) */
  for (const cJSON *k = obj->child; k; k = k->next) {
    size_t i = 0;
    while (allowed[i] && strcmp(allowed[i], k->string) != 0)
      i++;
    if (allowed[i] && i < sizeof seen && seen[i]++)
      return jerr(c, NNMEM_ERR_PARSE, "key '%s' appears twice", k->string);
    if (allowed[i]) continue;
    size_t used = strlen(unknown);
    if (n_unknown < 4)
      snprintf(unknown + used, sizeof unknown - used, "%s'%s'",
               n_unknown ? ", " : "", k->string);
    else if (n_unknown == 4)
      snprintf(unknown + used, sizeof unknown - used, ", ...");
    n_unknown++;
  }
  if (!n_unknown) return NNMEM_OK;
  return jerr(c, NNMEM_ERR_PARSE, "unknown %skey%s %s (allowed: %s)",
              c->where[0] ? "" : "top-level ", n_unknown > 1 ? "s" : "",
              unknown, list);
}

/* Reads an exact integer in [min, 2^53 - 1] from `j` (named `what`). */
static nnmem_status_t get_int(jctx_t *c, const cJSON *j, const char *what,
                              double min, double *out) {
  if (!cJSON_IsNumber(j))
    return jerr(c, NNMEM_ERR_PARSE, "'%s' must be an integer, not %s", what,
                type_name(j));
  double d = j->valuedouble;
  if (d < min)
    return jerr(c, NNMEM_ERR_PARSE, "'%s' is %g but must be >= %.0f", what, d,
                min);
  if (d > MAX_EXACT)
    return jerr(c, NNMEM_ERR_OVERFLOW,
                "'%s' is %.0f, above 2^53 - 1 (larger JSON integers are not "
                "read exactly)",
                what, d);
  if (d != (double)(int64_t)d) /* safe: min <= d < 2^53 */
    return jerr(c, NNMEM_ERR_PARSE, "'%s' must be an integer, not %g", what, d);
  *out = d;
  return NNMEM_OK;
}

/* Optional unsigned integer member `key` (0 when absent). */
static nnmem_status_t get_opt_u64(jctx_t *c, const cJSON *obj, const char *key,
                                  double min, uint64_t *out, int *present) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
  *out = 0;
  if (present) *present = j != NULL;
  if (!j) return NNMEM_OK;
  double d = 0;
  nnmem_status_t st = get_int(c, j, key, min, &d);
  if (st == NNMEM_OK) *out = (uint64_t)d;
  return st;
}

/* String member `key`; NULL when absent and optional. */
static nnmem_status_t get_string(jctx_t *c, const cJSON *obj, const char *key,
                                 int required, const char **out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
  *out = NULL;
  if (!j) {
    if (!required) return NNMEM_OK;
    return jerr(c, NNMEM_ERR_PARSE, "missing required field '%s'", key);
  }
  if (!cJSON_IsString(j))
    return jerr(c, NNMEM_ERR_PARSE, "'%s' must be a string, not %s", key,
                type_name(j));
  if (required && !j->valuestring[0])
    return jerr(c, NNMEM_ERR_PARSE, "'%s' must not be empty", key);
  *out = j->valuestring;
  return NNMEM_OK;
}

/* Required array member `key`. */
static nnmem_status_t get_array(jctx_t *c, const cJSON *obj, const char *key,
                                const cJSON **out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!j) return jerr(c, NNMEM_ERR_PARSE, "missing required field '%s'", key);
  if (!cJSON_IsArray(j))
    return jerr(c, NNMEM_ERR_PARSE, "'%s' must be an array, not %s", key,
                type_name(j));
  *out = j;
  return NNMEM_OK;
}

/* Sets c->where to "<what> 'name' (<list>[i])" or "<list>[i]". */
static void set_where(jctx_t *c, const char *what, const cJSON *item,
                      const char *list, size_t i) {
  const cJSON *n = cJSON_IsObject(item)
                       ? cJSON_GetObjectItemCaseSensitive(item, "name")
                       : NULL;
  if (cJSON_IsString(n) && n->valuestring[0])
    snprintf(c->where, sizeof c->where, "%s '%.200s' (%s[%zu])", what,
             n->valuestring, list, i);
  else
    snprintf(c->where, sizeof c->where, "%s[%zu]", list, i);
}

/* ---- tensors --------------------------------------------------------------
 */

static nnmem_status_t read_shape(jctx_t *c, const cJSON *shape, int64_t *dims,
                                 uint32_t *rank) {
  if (!cJSON_IsArray(shape))
    return jerr(c, NNMEM_ERR_PARSE, "'shape' must be an array, not %s",
                type_name(shape));
  int n = cJSON_GetArraySize(shape);
  if (n > NNMEM_MAX_RANK)
    return jerr(c, NNMEM_ERR_PARSE, "'shape' has %d dimensions, at most %d", n,
                NNMEM_MAX_RANK);
  int i = 0;
  for (const cJSON *d = shape->child; d; d = d->next, i++) {
    char what[24];
    snprintf(what, sizeof what, "shape[%d]", i);
    double v;
    nnmem_status_t st = get_int(c, d, what, 0, &v);
    if (st != NNMEM_OK) return st;
    dims[i] = (int64_t)v;
  }
  *rank = (uint32_t)n;
  return NNMEM_OK;
}

/* Resolves "kind" and "dtype" names. */
static nnmem_status_t tensor_enums(jctx_t *c, const cJSON *t,
                                   nnmem_tensor_desc_t *d) {
  const char *kind, *dtype;
  nnmem_status_t st = get_string(c, t, "kind", 0, &kind);
  if (st == NNMEM_OK) st = get_string(c, t, "dtype", 0, &dtype);
  if (st != NNMEM_OK) return st;
  d->kind = NNMEM_TENSOR_ACTIVATION;
  if (kind && nnmem_tensor_kind_parse(kind, &d->kind) != NNMEM_OK)
    return jerr(c, NNMEM_ERR_PARSE,
                "unknown kind '%.64s' (expected input, output, weight, "
                "constant, activation or workspace)",
                kind);
  d->dtype = NNMEM_DTYPE_UNDEFINED;
  if (dtype && nnmem_dtype_parse(dtype, &d->dtype) != NNMEM_OK)
    return jerr(c, NNMEM_ERR_PARSE,
                "unknown dtype '%.64s' (expected float32, float16, bfloat16, "
                "float64, int8, uint8, int16, uint16, int32, uint32, int64, "
                "uint64 or bool)",
                dtype);
  return NNMEM_OK;
}

static nnmem_status_t read_tensor(jctx_t *c, const cJSON *t, size_t i) {
  static const char *const keys[] = {"name",  "kind",  "dtype", "shape",
                                     "bytes", "align", NULL};
  set_where(c, "tensor", t, "tensors", i);
  if (!cJSON_IsObject(t))
    return jerr(c, NNMEM_ERR_PARSE, "must be an object, not %s", type_name(t));
  nnmem_tensor_desc_t d = {0};
  int64_t dims[NNMEM_MAX_RANK];
  int has_bytes;
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
  nnmem_status_t st = check_keys(c, t, keys);
  if (st == NNMEM_OK) st = get_string(c, t, "name", 1, &d.name);
  if (st == NNMEM_OK) st = tensor_enums(c, t, &d);
  if (st == NNMEM_OK) st = get_opt_u64(c, t, "bytes", 1, &d.bytes, &has_bytes);
  if (st == NNMEM_OK) st = get_opt_u64(c, t, "align", 1, &d.align, NULL);
  if (st == NNMEM_OK && shape) st = read_shape(c, shape, dims, &d.rank);
  if (st != NNMEM_OK) return st;
  d.shape = dims;
  if (d.align && !nnmem__is_pow2(d.align))
    return jerr(c, NNMEM_ERR_PARSE, "'align' %llu is not a power of two",
                (unsigned long long)d.align);
  if (!has_bytes && !shape)
    return jerr(c, NNMEM_ERR_PARSE,
                "needs a 'shape' (with a 'dtype') or a 'bytes' size");
  if (!has_bytes && d.dtype == NNMEM_DTYPE_UNDEFINED)
    return jerr(c, NNMEM_ERR_PARSE,
                "'shape' needs a 'dtype' (or give 'bytes')");
  uint32_t first;
  if (nnmem_graph_find_tensor(c->g, d.name, &first) == NNMEM_OK)
    return jerr(c, NNMEM_ERR_DUPLICATE, "name already used by tensors[%u]",
                first);
  nnmem_diag_t inner = {{0}};
  st = nnmem_graph_add_tensor(c->g, &d, NULL, &inner);
  if (st != NNMEM_OK) {
    snprintf(c->where, sizeof c->where, "tensors[%zu]", i);
    return jerr(c, st, "%s", inner.message);
  }
  return NNMEM_OK;
}

/* ---- ops
 * --------------------------------------------------------------------- */

/* Resolves the names of `list` ("inputs" / "outputs") into c->io + at. */
static nnmem_status_t op_tensors(jctx_t *c, const cJSON *op, const char *key,
                                 size_t at, uint32_t *count) {
  const cJSON *arr = NULL;
  nnmem_status_t st = get_array(c, op, key, &arr);
  if (st != NNMEM_OK) return st;
  size_t n = (size_t)cJSON_GetArraySize(arr);
  st = nnmem__grow((void **)&c->io, &c->io_cap, at + n + 1, sizeof *c->io);
  if (st != NNMEM_OK) return jerr(c, st, "out of memory");
  size_t k = 0;
  for (const cJSON *j = arr->child; j; j = j->next, k++) {
    if (!cJSON_IsString(j))
      return jerr(c, NNMEM_ERR_PARSE,
                  "%s[%zu] must be a tensor name (a string), not %s", key, k,
                  type_name(j));
    if (nnmem_graph_find_tensor(c->g, j->valuestring, &c->io[at + k]) !=
        NNMEM_OK)
      return jerr(c, NNMEM_ERR_PARSE, "%.*s '%.200s' is not a declared tensor",
                  (int)strlen(key) - 1, key, j->valuestring);
  }
  *count = (uint32_t)n;
  return NNMEM_OK;
}

/* Reads the optional "inplace" / "view" input index into flags. */
static nnmem_status_t op_alias(jctx_t *c, const cJSON *op, nnmem_op_desc_t *d) {
  uint64_t v;
  int present;
  nnmem_status_t st = get_opt_u64(c, op, "inplace", 0, &v, &present);
  if (st != NNMEM_OK) return st;
  if (present) {
    if (v >= d->n_inputs)
      return jerr(c, NNMEM_ERR_PARSE,
                  "'inplace' is input index %llu but the op has %u input%s",
                  (unsigned long long)v, d->n_inputs,
                  d->n_inputs == 1 ? "" : "s");
    d->flags |= NNMEM_OP_INPLACE;
    d->inplace_input = (uint32_t)v;
  }
  st = get_opt_u64(c, op, "view", 0, &v, &present);
  if (st != NNMEM_OK || !present) return st;
  if (v >= d->n_inputs)
    return jerr(c, NNMEM_ERR_PARSE,
                "'view' is input index %llu but the op has %u input%s",
                (unsigned long long)v, d->n_inputs,
                d->n_inputs == 1 ? "" : "s");
  if (d->flags & NNMEM_OP_INPLACE)
    return jerr(c, NNMEM_ERR_PARSE, "'inplace' and 'view' exclude each other");
  d->flags |= NNMEM_OP_VIEW;
  d->view_input = (uint32_t)v;
  return NNMEM_OK;
}

/* Reads the optional "slice": {"axis": A, "start": S} of op `id`; the
 * graph library checks it against the op's shapes. */
static nnmem_status_t op_slice(jctx_t *c, const cJSON *op, uint32_t id,
                               size_t i) {
  static const char *const keys[] = {"axis", "start", NULL};
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(op, "slice");
  if (!j) return NNMEM_OK;
  if (!cJSON_IsObject(j))
    return jerr(c, NNMEM_ERR_PARSE,
                "'slice' must be an object {\"axis\", \"start\"}, not %s",
                type_name(j));
  nnmem_status_t st = check_keys(c, j, keys);
  const cJSON *ja = cJSON_GetObjectItemCaseSensitive(j, "axis");
  const cJSON *js = cJSON_GetObjectItemCaseSensitive(j, "start");
  if (st == NNMEM_OK && (!ja || !js))
    return jerr(c, NNMEM_ERR_PARSE, "'slice' needs 'axis' and 'start'");
  double axis = 0, start = 0;
  if (st == NNMEM_OK) st = get_int(c, ja, "slice.axis", 0, &axis);
  if (st == NNMEM_OK) st = get_int(c, js, "slice.start", 0, &start);
  if (st != NNMEM_OK) return st;
  if (axis >= NNMEM_MAX_RANK)
    return jerr(c, NNMEM_ERR_PARSE, "'slice.axis' is %.0f, at most %d", axis,
                NNMEM_MAX_RANK - 1);
  nnmem_diag_t inner = {{0}};
  st = nnmem_graph_set_op_slice(c->g, id, (uint32_t)axis, (int64_t)start,
                                &inner);
  if (st != NNMEM_OK) {
    snprintf(c->where, sizeof c->where, "ops[%zu]", i);
    return jerr(c, st, "%s", inner.message);
  }
  return NNMEM_OK;
}

static nnmem_status_t read_op(jctx_t *c, const cJSON *op, size_t i) {
  static const char *const keys[] = {"name",    "type",      "inputs",
                                     "outputs", "workspace", "inplace",
                                     "view",    "slice",     NULL};
  set_where(c, "op", op, "ops", i);
  if (!cJSON_IsObject(op))
    return jerr(c, NNMEM_ERR_PARSE, "must be an object, not %s", type_name(op));
  nnmem_op_desc_t d = {0};
  nnmem_status_t st = check_keys(c, op, keys);
  if (st == NNMEM_OK) st = get_string(c, op, "name", 1, &d.name);
  if (st == NNMEM_OK) st = get_string(c, op, "type", 1, &d.type);
  if (st == NNMEM_OK) st = op_tensors(c, op, "inputs", 0, &d.n_inputs);
  if (st == NNMEM_OK)
    st = op_tensors(c, op, "outputs", d.n_inputs, &d.n_outputs);
  if (st == NNMEM_OK)
    st = get_opt_u64(c, op, "workspace", 0, &d.workspace_bytes, NULL);
  if (st == NNMEM_OK) st = op_alias(c, op, &d);
  if (st != NNMEM_OK) return st;
  size_t first;
  st = nnmem__strset_insert(&c->op_names, d.name, strlen(d.name), i, &first);
  if (st == NNMEM_ERR_DUPLICATE)
    return jerr(c, st, "name already used by ops[%zu]", first);
  if (st != NNMEM_OK) return jerr(c, st, "out of memory");
  d.inputs = c->io;
  d.outputs = c->io + d.n_inputs;
  nnmem_diag_t inner = {{0}};
  uint32_t id;
  st = nnmem_graph_add_op(c->g, &d, &id, &inner);
  if (st != NNMEM_OK) {
    snprintf(c->where, sizeof c->where, "ops[%zu]", i);
    return jerr(c, st, "%s", inner.message);
  }
  return op_slice(c, op, id, i);
}

/* ---- document ------------------------------------------------------------ */

static int is_word(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-' ||
         ch == '+';
}

/* Open brackets before `pos`, outside strings: tells cJSON's nesting limit
 * apart from other syntax errors. */
static size_t depth_at(const char *s, size_t pos) {
  size_t depth = 0;
  int in_str = 0;
  for (size_t i = 0; i < pos; i++) {
    if (in_str) {
      if (s[i] == '\\' && i + 1 < pos)
        i++;
      else if (s[i] == '"')
        in_str = 0;
    } else if (s[i] == '"') {
      in_str = 1;
    } else if (s[i] == '[' || s[i] == '{') {
      depth++;
    } else if ((s[i] == ']' || s[i] == '}') && depth) {
      depth--;
    }
  }
  return depth;
}

/* Step 1: encoding and syntax. */
static nnmem_status_t parse_text(jctx_t *c, const char *data, size_t len,
                                 cJSON **root) {
  size_t bad, line, col;
  int kind = nnmem__utf8_check(data, len, &bad);
  if (kind) {
    nnmem__text_position(data, len, bad, &line, &col);
    return nnmem__diag(c->diag, NNMEM_ERR_PARSE, "%s:%zu:%zu: %s", c->file,
                       line, col,
                       kind == 2 ? "NUL byte" : "invalid UTF-8 byte");
  }
  size_t lead = 0;
  while (lead < len && (data[lead] == ' ' || data[lead] == '\t' ||
                        data[lead] == '\n' || data[lead] == '\r'))
    lead++;
  if (lead == len)
    return nnmem__diag(c->diag, NNMEM_ERR_PARSE,
                       "%s: empty file (expected a JSON graph object)",
                       c->file);
  char *copy = malloc(len + 1);
  if (!copy)
    return nnmem__diag(c->diag, NNMEM_ERR_NOMEM, "%s: out of memory", c->file);
  memcpy(copy, data, len);
  copy[len] = '\0';
  const char *end = NULL;
  *root = cJSON_ParseWithLengthOpts(copy, len + 1, &end, 1);
  if (*root) {
    free(copy);
    return NNMEM_OK;
  }
  size_t pos = end && end >= copy ? (size_t)(end - copy) : 0;
  if (pos > len) pos = len;
  while (pos > 0 && pos < len && is_word(copy[pos]) && is_word(copy[pos - 1]))
    pos--; /* cJSON may stop inside a bare word: show all of it */
  nnmem__text_position(copy, len, pos, &line, &col);
  if (pos < len && depth_at(copy, pos) >= CJSON_NESTING_LIMIT) {
    free(copy);
    return nnmem__diag(c->diag, NNMEM_ERR_PARSE,
                       "%s:%zu:%zu: not valid JSON: nested more than %d "
                       "levels deep",
                       c->file, line, col, CJSON_NESTING_LIMIT);
  }
  size_t show = 0;
  while (pos + show < len && show < 24 && copy[pos + show] != '\n' &&
         copy[pos + show] != '\r')
    show++;
  nnmem_status_t st = nnmem__diag(
      c->diag, NNMEM_ERR_PARSE, "%s:%zu:%zu: not valid JSON%s%.*s%s", c->file,
      line, col, pos >= len ? " (unexpected end of input)" : " near '",
      (int)show, copy + pos, pos >= len ? "" : "'");
  free(copy);
  return st;
}

/* Step 2: the top-level object. */
static nnmem_status_t read_top(jctx_t *c, const cJSON *root,
                               const char **name) {
  static const char *const keys[] = {"format_version", "name", "description",
                                     "tensors",        "ops",  NULL};
  if (!cJSON_IsObject(root))
    return jerr(c, NNMEM_ERR_PARSE, "the document must be an object, not %s",
                type_name(root));
  nnmem_status_t st = check_keys(c, root, keys);
  if (st != NNMEM_OK) return st;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "format_version");
  if (!v)
    return jerr(c, NNMEM_ERR_PARSE, "missing required field 'format_version'");
  double ver = 0;
  st = get_int(c, v, "format_version", 0, &ver);
  if (st != NNMEM_OK) return st;
  if (ver != 1)
    return jerr(c, NNMEM_ERR_UNSUPPORTED,
                "format_version %.0f is not supported (this build reads 1)",
                ver);
  const char *desc;
  st = get_string(c, root, "description", 0, &desc);
  if (st == NNMEM_OK) st = get_string(c, root, "name", 0, name);
  return st;
}

/* Default graph name: the file name without directory and ".json". */
static void default_name(const char *file, char *out, size_t cap) {
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  size_t n = strlen(base);
  if (n > 5 && strcmp(base + n - 5, ".json") == 0) n -= 5;
  snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), base);
}

/* Steps 3-5 on a parsed document. */
static nnmem_status_t build(jctx_t *c, const cJSON *root) {
  const char *name = NULL;
  const cJSON *tensors = NULL, *ops = NULL;
  nnmem_status_t st = read_top(c, root, &name);
  if (st == NNMEM_OK) st = get_array(c, root, "tensors", &tensors);
  if (st == NNMEM_OK) st = get_array(c, root, "ops", &ops);
  if (st != NNMEM_OK) return st;
  char fallback[128];
  default_name(c->file, fallback, sizeof fallback);
  st = nnmem_graph_create(name && name[0] ? name : fallback, &c->g);
  if (st != NNMEM_OK) return jerr(c, st, "out of memory");
  size_t i = 0;
  for (const cJSON *t = tensors->child; t && st == NNMEM_OK; t = t->next)
    st = read_tensor(c, t, i++);
  i = 0;
  for (const cJSON *op = ops->child; op && st == NNMEM_OK; op = op->next)
    st = read_op(c, op, i++);
  if (st != NNMEM_OK) return st;
  c->where[0] = '\0';
  nnmem_diag_t inner = {{0}};
  st = nnmem_graph_check(c->g, &inner);
  if (st != NNMEM_OK) return jerr(c, st, "%s", inner.message);
  return NNMEM_OK;
}

nnmem_status_t nnmem_graph_parse_json(const char *data, size_t len,
                                      const char *display_name,
                                      nnmem_graph_t **out, nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if ((!data && len) || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_graph_parse_json: NULL argument");
  jctx_t c = {
      display_name ? display_name : "<json>", diag, NULL, "", {0}, NULL, 0};
  nnmem__strset_init(&c.op_names);
  cJSON *root = NULL;
  nnmem_status_t st = parse_text(&c, data ? data : "", len, &root);
  if (st == NNMEM_OK) st = build(&c, root);
  cJSON_Delete(root);
  nnmem__strset_free(&c.op_names);
  free(c.io);
  if (st != NNMEM_OK) {
    nnmem_graph_destroy(c.g);
    return st;
  }
  *out = c.g;
  return NNMEM_OK;
}

nnmem_status_t nnmem_graph_read_json_file(const char *path, nnmem_graph_t **out,
                                          nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if (!path || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_graph_read_json_file: NULL argument");
  char *data;
  size_t len;
  nnmem_status_t st = nnmem_file_read(path, &data, &len, diag);
  if (st != NNMEM_OK) return st;
  st = nnmem_graph_parse_json(data, len, path, out, diag);
  free(data);
  return st;
}

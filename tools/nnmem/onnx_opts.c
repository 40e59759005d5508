/* onnx_opts.c - the ONNX options shared by `nnmem plan` and `nnmem inspect`
 * (--dim NAME=VALUE, --dtype, --layout, --strict), the import summary
 * printed in reports and the JSON fields added for ONNX inputs
 * ("unresolved_tensors" and an "onnx" object).
 * Thread-safety: single-threaded program. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args.h"
#include "cli.h"
#include "units.h"

static int set_dim(const char *cmd, cli_onnx_opts_t *o, const char *v) {
  const char *eq = strchr(v, '=');
  const char *why = NULL;
  uint64_t n = 0;
  if (!eq || eq == v)
    return cli_usage_error(cmd, "bad --dim '%s': expected NAME=VALUE", v);
  if (cli_parse_uint(eq + 1, (uint64_t)1 << 40, &n, &why) != 0 || n == 0)
    return cli_usage_error(cmd, "bad --dim '%s': %s", v,
                           why ? why : "the value must be >= 1");
  if (o->n_dims == CLI_MAX_DIMS)
    return cli_usage_error(cmd, "too many --dim options (at most %d)",
                           CLI_MAX_DIMS);
  /* the name points into argv: cut it at '=' in place */
  ((char *)eq)[0] = 0;
  o->dims[o->n_dims].name = v;
  o->dims[o->n_dims].value = (int64_t)n;
  o->n_dims++;
  return 0;
}

int cli_onnx_option(const char *cmd, cli_onnx_opts_t *o, const char *opt,
                    const char *value) {
  if (!o->first) o->first = opt;
  if (strcmp(opt, "dim") == 0) return set_dim(cmd, o, value);
  if (strcmp(opt, "dtype") == 0) {
    if (nnmem_dtype_parse(value, &o->dtype) != NNMEM_OK ||
        o->dtype == NNMEM_DTYPE_UNDEFINED)
      return cli_usage_error(cmd,
                             "unknown --dtype '%s' (float32, float16, "
                             "bfloat16, int8, ...)",
                             value);
    return 0;
  }
  if (strcmp(opt, "layout") == 0) {
    if (nnmem_onnx_layout_parse(value, &o->layout) != NNMEM_OK)
      return cli_usage_error(cmd,
                             "unknown --layout '%s' (expected NCHW, NHWC "
                             "or NC1HWC0)",
                             value);
    return 0;
  }
  o->strict = 1;
  return 0;
}

void cli_onnx_config(const cli_onnx_opts_t *o, uint64_t align,
                     nnmem_onnx_config_t *cfg) {
  nnmem_onnx_config_init(cfg);
  cfg->dims = o->dims;
  cfg->n_dims = o->n_dims;
  cfg->dtype = o->dtype;
  cfg->layout = o->layout;
  cfg->strict = o->strict;
  cfg->alignment = align;
}

int cli_is_onnx(const char *path) {
  size_t n = strlen(path);
  return n > 5 && strcasecmp(path + n - 5, ".onnx") == 0;
}

static void put_list(FILE *f, const char *label, size_t count,
                     const nnmem_onnx_named_t *e, int with_value) {
  if (!count) return;
  fprintf(f, "  %-14s", label);
  size_t shown =
      count < NNMEM_ONNX_REPORT_LIST ? count : NNMEM_ONNX_REPORT_LIST;
  for (size_t i = 0; i < shown; i++) {
    char name[4 * NNMEM_ONNX_NAME_MAX], what[4 * NNMEM_ONNX_NAME_MAX];
    const char *n = cli_printable(e[i].name, name, sizeof name);
    const char *w = cli_printable(e[i].what, what, sizeof what);
    if (with_value)
      fprintf(f, "%s %s=%lld (%s)", i ? "," : "", n, (long long)e[i].value, w);
    else
      fprintf(f, "%s %s (%s)", i ? "," : "", n, w);
  }
  if (count > shown) fprintf(f, ", ... %zu more", count - shown);
  fputc('\n', f);
}

void cli_onnx_summary(FILE *f, const nnmem_onnx_report_t *r) {
  char producer[4 * NNMEM_ONNX_NAME_MAX];
  fprintf(f, "  %-14s opset %lld, ir %lld%s%s\n", "onnx", (long long)r->opset,
          (long long)r->ir_version, r->producer[0] ? ", " : "",
          cli_printable(r->producer, producer, sizeof producer));
  fprintf(f, "  %-14s %zu nodes (%zu folded to constants", "import", r->nodes,
          r->folded_nodes);
  if (r->subgraph_nodes)
    fprintf(f, ", %zu more in subgraphs", r->subgraph_nodes);
  fprintf(f, "), unresolved tensors %zu\n", r->unresolved_tensors);
  put_list(f, "defaults", r->n_defaults, r->defaults, 1);
  put_list(f, "unsupported", r->n_unsupported, r->unsupported, 0);
  put_list(f, "unresolved", r->n_unresolved_listed, r->unresolved, 0);
  put_list(f, "upper bounds", r->n_data_dependent, r->data_dependent, 0);
}

static cJSON *named_list(const nnmem_onnx_named_t *e, size_t count,
                         const char *k1, const char *k2, int with_value) {
  cJSON *a = cJSON_CreateArray();
  size_t shown =
      count < NNMEM_ONNX_REPORT_LIST ? count : NNMEM_ONNX_REPORT_LIST;
  for (size_t i = 0; a && i < shown; i++) {
    cJSON *o = cJSON_CreateObject();
    if (!o) break;
    cJSON_AddStringToObject(o, k1, e[i].name);
    cJSON_AddStringToObject(o, k2, e[i].what);
    if (with_value) cJSON_AddNumberToObject(o, "value", (double)e[i].value);
    cJSON_AddItemToArray(a, o);
  }
  return a;
}

/* The "onnx" object as text (caller frees); NULL on NOMEM. */
static char *onnx_object(const nnmem_onnx_report_t *r) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "opset", (double)r->opset);
  cJSON_AddNumberToObject(o, "nodes", (double)r->nodes);
  cJSON_AddNumberToObject(o, "subgraph_nodes", (double)r->subgraph_nodes);
  cJSON_AddNumberToObject(o, "folded_nodes", (double)r->folded_nodes);
  cJSON_AddNumberToObject(o, "unsupported_nodes", (double)r->n_unsupported);
  cJSON_AddNumberToObject(o, "data_dependent_tensors",
                          (double)r->n_data_dependent);
  cJSON_AddItemToObject(
      o, "defaults", named_list(r->defaults, r->n_defaults, "dim", "class", 1));
  cJSON_AddItemToObject(
      o, "unsupported",
      named_list(r->unsupported, r->n_unsupported, "node", "op_type", 0));
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return text;
}

/* Inserts the fields before the object's closing brace, keeping the
 * library's formatting and exact integers. */
nnmem_status_t cli_onnx_json_add(char **json, const nnmem_onnx_report_t *r) {
  char *close = strrchr(*json, '}');
  if (!close) return NNMEM_ERR_PARSE;
  char *obj = onnx_object(r);
  if (!obj) return NNMEM_ERR_NOMEM;
  size_t head = (size_t)(close - *json);
  while (head > 0 && strchr(" \t\r\n", (*json)[head - 1]))
    head--;
  size_t cap = head + strlen(obj) + strlen(close) + 96;
  char *out = malloc(cap);
  if (!out) {
    free(obj);
    return NNMEM_ERR_NOMEM;
  }
  snprintf(out, cap,
           "%.*s,\n  \"unresolved_tensors\": %zu,\n  \"onnx\": %s\n%s",
           (int)head, *json, r->unresolved_tensors, obj, close);
  free(obj);
  free(*json);
  *json = out;
  return NNMEM_OK;
}

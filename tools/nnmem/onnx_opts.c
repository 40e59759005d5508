/* onnx_opts.c - the ONNX options shared by `nnmem plan` and `nnmem inspect`
 * (--dim NAME=VALUE, NAME=LO..HI or NAME=V1,V2 (shape buckets), --dtype,
 * --layout, --strict), the import summary
 * printed in reports and the JSON fields added for ONNX inputs
 * ("unresolved_tensors" and an "onnx" object).
 * Thread-safety: single-threaded program. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args.h"
#include "cli.h"
#include "units.h"

/* --dim NAME=LO..HI or NAME=V1,V2,...: shape buckets (the library parses
 * and checks them); one such --dim per command. */
static int set_buckets(const char *cmd, cli_onnx_opts_t *o, const char *v) {
  nnmem_diag_t d = {{0}};
  if (o->has_buckets)
    return cli_usage_error(cmd,
                           "only one --dim may be a range or a list ('%s=...' "
                           "and '%s')",
                           o->buckets.name, v);
  if (nnmem_onnx_dim_buckets_parse(v, &o->buckets, &d) != NNMEM_OK)
    return cli_usage_error(cmd, "%s", d.message);
  o->has_buckets = 1;
  return 0;
}

static int set_dim(const char *cmd, cli_onnx_opts_t *o, const char *v) {
  const char *eq = strchr(v, '=');
  const char *why = NULL;
  uint64_t n = 0;
  if (eq && (strstr(eq, "..") || strchr(eq, ',')))
    return set_buckets(cmd, o, v);
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
  if (r->n_unsupported) {
    const nnmem_onnx_first_unsupported_t *u = &r->first_unsupported;
    char op[128], node[128];
    fprintf(f,
            "  unsupported operator '%s' (domain %s, opset %lld) at node "
            "'%s': %zu tensor%s downstream unresolved\n",
            cli_printable(u->op_type, op, sizeof op), u->domain,
            (long long)u->opset, cli_printable(u->node, node, sizeof node),
            u->downstream_unresolved, u->downstream_unresolved == 1 ? "" : "s");
  }
  put_list(f, "unsupported", r->n_unsupported, r->unsupported, 0);
  put_list(f, "unresolved", r->n_unresolved_listed, r->unresolved, 0);
  put_list(f, "upper bounds", r->n_data_dependent, r->data_dependent, 0);
}

static void named_list(nnmem__jw_t *w, const char *key,
                       const nnmem_onnx_named_t *e, size_t count,
                       const char *k1, const char *k2, int with_value) {
  size_t shown =
      count < NNMEM_ONNX_REPORT_LIST ? count : NNMEM_ONNX_REPORT_LIST;
  nnmem__jw_key(w, key);
  nnmem__jw_array(w);
  for (size_t i = 0; i < shown; i++) {
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, k1, e[i].name);
    nnmem__jw_kv_string(w, k2, e[i].what);
    if (with_value) nnmem__jw_kv_i64(w, "value", (int64_t)e[i].value);
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
}

void cli_onnx_json_add(nnmem__jw_t *w, const nnmem_onnx_report_t *r) {
  nnmem__jw_kv_u64(w, "unresolved_tensors", r->unresolved_tensors);
  nnmem__jw_key(w, "onnx");
  nnmem__jw_object(w);
  nnmem__jw_kv_i64(w, "opset", (int64_t)r->opset);
  nnmem__jw_kv_u64(w, "nodes", r->nodes);
  nnmem__jw_kv_u64(w, "subgraph_nodes", r->subgraph_nodes);
  nnmem__jw_kv_u64(w, "folded_nodes", r->folded_nodes);
  nnmem__jw_kv_u64(w, "unsupported_nodes", r->n_unsupported);
  nnmem__jw_kv_u64(w, "data_dependent_tensors", r->n_data_dependent);
  named_list(w, "defaults", r->defaults, r->n_defaults, "dim", "class", 1);
  named_list(w, "unsupported", r->unsupported, r->n_unsupported, "node",
             "op_type", 0);
  if (r->n_unsupported) {
    const nnmem_onnx_first_unsupported_t *u = &r->first_unsupported;
    nnmem__jw_key(w, "first_unsupported");
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "node", u->node);
    nnmem__jw_kv_string(w, "op_type", u->op_type);
    nnmem__jw_kv_string(w, "domain", u->domain);
    nnmem__jw_kv_i64(w, "opset", (int64_t)u->opset);
    nnmem__jw_kv_u64(w, "downstream_unresolved", u->downstream_unresolved);
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
}

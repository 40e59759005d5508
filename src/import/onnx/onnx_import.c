/* onnx_import.c - the public entry points of the ONNX importer
 * (nnmem/onnx.h): configuration, parsing, inference, conversion, report.
 *
 * Steps of nnmem_onnx_import:
 *   1. check arguments and the configuration (dim bindings >= 1);
 *   2. bound the message nesting (onnx_wire.c), then unpack the ModelProto
 *      from the buffer with protobuf-c (a truncated or corrupted buffer
 *      fails there); a message without a graph is "not an ONNX model";
 *   3. the default-domain opset (1 when the model imports none);
 *   4. build the main scope (onnx_scope.c), infer it (onnx_infer.c),
 *      convert it (onnx_convert.c) and validate the graph
 *      (nnmem_graph_check);
 *   5. fill the report; free the protobuf and the scope.
 * Invariant: on failure nothing stays allocated and *out is NULL.
 * Complexity: O(model size) plus inference. Thread-safety: each call is
 * independent. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "import/onnx/onnx_internal.h"
#include "nnmem/io.h"

void nnmem_onnx_config_init(nnmem_onnx_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
  cfg->default_batch = 1;
  cfg->default_sequence = 128;
}

nnmem_status_t nnmem_onnx_layout_parse(const char *name,
                                       nnmem_onnx_layout_t *out) {
  if (!name || !out) return NNMEM_ERR_INVALID;
  if (strcasecmp(name, "NCHW") == 0)
    *out = NNMEM_ONNX_LAYOUT_NCHW;
  else if (strcasecmp(name, "NHWC") == 0)
    *out = NNMEM_ONNX_LAYOUT_NHWC;
  else if (strcasecmp(name, "NC1HWC0") == 0)
    *out = NNMEM_ONNX_LAYOUT_NC1HWC0;
  else
    return NNMEM_ERR_INVALID;
  return NNMEM_OK;
}

static nnmem_status_t check_config(ox_ctx_t *c) {
  nnmem_onnx_config_t *k = &c->cfg;
  if (k->default_batch <= 0) k->default_batch = 1;
  if (k->default_sequence <= 0) k->default_sequence = 128;
  for (size_t i = 0; i < k->n_dims; i++)
    if (!k->dims || !k->dims[i].name || k->dims[i].value < 1)
      return nnmem__diag(c->diag, NNMEM_ERR_INVALID,
                         "%s: dim binding #%zu needs a name and a value >= 1",
                         c->file, i);
  for (size_t i = 0; i < k->n_input_shapes; i++) {
    const nnmem_onnx_input_shape_t *o =
        k->input_shapes ? &k->input_shapes[i] : NULL;
    int ok = o && o->name && o->rank <= NNMEM_MAX_RANK && (o->dims || !o->rank);
    for (uint32_t d = 0; ok && d < o->rank; d++)
      ok = o->dims[d] >= 0;
    if (!ok)
      return nnmem__diag(c->diag, NNMEM_ERR_INVALID,
                         "%s: input shape #%zu needs a name, rank <= %d and "
                         "dims >= 0",
                         c->file, i, NNMEM_MAX_RANK);
  }
  if ((unsigned)k->layout > NNMEM_ONNX_LAYOUT_NC1HWC0 ||
      (unsigned)k->dtype >= NNMEM_DTYPE_COUNT_ ||
      k->dtype == NNMEM_DTYPE_STRING ||
      (k->alignment && !nnmem__is_pow2(k->alignment)))
    return nnmem__diag(c->diag, NNMEM_ERR_INVALID,
                       "%s: bad layout, dtype (floating tensors convert to a "
                       "numeric type) or alignment in the config",
                       c->file);
  return NNMEM_OK;
}

static size_t count_body_nodes(const Onnx__GraphProto *g, int depth) {
  size_t n = 0;
  if (depth > OX_MAX_DEPTH + 1) return 0;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *np = g->node[i];
    for (size_t k = 0; k < np->n_attribute; k++) {
      const Onnx__AttributeProto *a = np->attribute[k];
      if (a->g) n += a->g->n_node + count_body_nodes(a->g, depth + 1);
      for (size_t j = 0; j < a->n_graphs; j++)
        n += a->graphs[j]->n_node + count_body_nodes(a->graphs[j], depth + 1);
    }
  }
  return n;
}

/* A context with the display name, report (zeroed) and diag. */
static void ctx_init(ox_ctx_t *c, const char *file, nnmem_onnx_report_t *rep,
                     nnmem_diag_t *diag) {
  memset(c, 0, sizeof *c);
  c->file = file;
  c->diag = diag;
  c->rep = rep;
  memset(rep, 0, sizeof *rep);
}

static void find_opset(ox_ctx_t *c, const Onnx__ModelProto *m);

/* Steps 1-3 of nnmem_onnx_import: configuration (NULL: defaults), nesting
 * bound, unpack, graph present, opset. On success c->model = *out (caller
 * frees with onnx__model_proto__free_unpacked). */
static nnmem_status_t open_model(ox_ctx_t *c, const void *data, size_t len,
                                 const nnmem_onnx_config_t *cfg,
                                 Onnx__ModelProto **out) {
  *out = NULL;
  if (cfg)
    c->cfg = *cfg;
  else
    nnmem_onnx_config_init(&c->cfg);
  nnmem_status_t st = check_config(c);
  if (st != NNMEM_OK) return st;
  if (nnmem__onnx_wire_too_deep(data, len))
    return nnmem__diag(c->diag, NNMEM_ERR_UNSUPPORTED,
                       "%s: messages (subgraphs or types) are nested more "
                       "than %d levels deep",
                       c->file, OX_MAX_WIRE_DEPTH);
  Onnx__ModelProto *m =
      onnx__model_proto__unpack(NULL, len, (const uint8_t *)data);
  if (!m)
    return nnmem__diag(c->diag, NNMEM_ERR_PARSE,
                       "%s: not a valid ONNX protobuf (truncated or corrupted "
                       "data, %zu bytes)",
                       c->file, len);
  if (!m->graph) {
    onnx__model_proto__free_unpacked(m, NULL);
    return nnmem__diag(c->diag, NNMEM_ERR_PARSE,
                       "%s: not an ONNX model (the protobuf has no graph)",
                       c->file);
  }
  c->model = m;
  find_opset(c, m);
  *out = m;
  return NNMEM_OK;
}

static void find_opset(ox_ctx_t *c, const Onnx__ModelProto *m) {
  c->opset = m->n_opset_import ? 0 : 1;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const char *d = m->opset_import[i]->domain;
    if (!d || !d[0] || strcmp(d, "ai.onnx") == 0)
      c->opset = m->opset_import[i]->version;
  }
  c->ir_version = m->has_ir_version ? m->ir_version : 0;
}

static void fill_report(ox_ctx_t *c, const Onnx__ModelProto *m, ox_scope_t *s,
                        const nnmem_graph_t *g) {
  nnmem_onnx_report_t *r = c->rep;
  r->ir_version = c->ir_version;
  r->opset = c->opset;
  snprintf(r->producer, sizeof r->producer, "%s%s%s",
           m->producer_name ? m->producer_name : "",
           m->producer_version && m->producer_version[0] ? " " : "",
           m->producer_version ? m->producer_version : "");
  r->nodes = m->graph->n_node;
  r->subgraph_nodes = count_body_nodes(m->graph, 0);
  r->ops = nnmem_graph_op_count(g);
  r->tensors = nnmem_graph_tensor_count(g);
  r->folded_nodes = 0;
  for (size_t i = 0; i < s->n_nodes; i++)
    r->folded_nodes += s->folded[i];
}

static nnmem_status_t run(ox_ctx_t *c, const Onnx__ModelProto *m,
                          const char *name, nnmem_graph_t **out) {
  ox_scope_t *s = NULL;
  nnmem_graph_t *g = NULL;
  nnmem_status_t st = nnmem__onnx_scope_build(c, NULL, m->graph, 0, &s);
  if (st == NNMEM_OK) st = nnmem__onnx_scope_infer(c, s);
  if (st == NNMEM_OK) st = nnmem__onnx_check_bindings(c);
  if (st == NNMEM_OK) st = nnmem__onnx_scope_to_graph(c, s, name, &g);
  if (st == NNMEM_OK) {
    nnmem_diag_t tmp = {{0}};
    st = nnmem_graph_check(g, &tmp);
    if (st != NNMEM_OK)
      nnmem__diag(c->diag, st, "%s: %s", c->file, tmp.message);
  }
  if (st == NNMEM_OK) fill_report(c, m, s, g);
  if (st == NNMEM_OK) nnmem__onnx_count_downstream(c, s);
  nnmem__onnx_scope_free(s);
  if (st != NNMEM_OK) {
    nnmem_graph_destroy(g);
    return st;
  }
  *out = g;
  return NNMEM_OK;
}

/* "dir/model.onnx" -> "model". */
static void base_name(const char *path, char *buf, size_t cap) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  snprintf(buf, cap, "%s", b);
  char *dot = strrchr(buf, '.');
  if (dot && dot != buf) *dot = 0;
}

nnmem_status_t nnmem_onnx_import(const void *data, size_t len,
                                 const char *display_name,
                                 const nnmem_onnx_config_t *cfg,
                                 nnmem_graph_t **out,
                                 nnmem_onnx_report_t *report,
                                 nnmem_diag_t *diag) {
  if (diag) diag->message[0] = 0;
  if (!out || (!data && len))
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "onnx_import: NULL argument");
  *out = NULL;
  nnmem_onnx_report_t local;
  ox_ctx_t c;
  Onnx__ModelProto *m = NULL;
  ctx_init(&c, display_name ? display_name : "<memory>",
           report ? report : &local, diag);
  c.rep->size = sizeof *c.rep;
  nnmem_status_t st = open_model(&c, data, len, cfg, &m);
  if (st != NNMEM_OK) return st;
  char name[128];
  base_name(c.file, name, sizeof name);
  st = run(&c, m, name[0] ? name : "onnx", out);
  onnx__model_proto__free_unpacked(m, NULL);
  return st;
}

nnmem_status_t nnmem_onnx_import_file(const char *path,
                                      const nnmem_onnx_config_t *cfg,
                                      nnmem_graph_t **out,
                                      nnmem_onnx_report_t *report,
                                      nnmem_diag_t *diag) {
  if (!path || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "onnx_import: NULL argument");
  char *data = NULL;
  size_t len = 0;
  uint64_t max = 0; /* a config of an older, smaller size has no limit */
  if (cfg && (cfg->size == 0 ||
              cfg->size >= offsetof(nnmem_onnx_config_t, max_input_bytes) +
                               sizeof cfg->max_input_bytes))
    max = cfg->max_input_bytes;
  nnmem_status_t st = nnmem_file_read_limited(path, max, &data, &len, diag);
  if (st != NNMEM_OK) return st;
  st = nnmem_onnx_import(data, len, path, cfg, out, report, diag);
  free(data);
  return st;
}

nnmem_status_t nnmem__onnx_tensor_info(const void *data, size_t len,
                                       int32_t *elem, uint32_t *rank,
                                       int64_t *dims, nnmem_diag_t *diag) {
  Onnx__TensorProto *t =
      onnx__tensor_proto__unpack(NULL, len, (const uint8_t *)data);
  if (!t) return nnmem__diag(diag, NNMEM_ERR_PARSE, "not a TensorProto");
  nnmem_status_t st = NNMEM_OK;
  if (t->n_dims > OX_MAX_RANK) {
    st = nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED, "rank %zu", t->n_dims);
  } else {
    *elem = t->has_data_type ? t->data_type : 0;
    *rank = (uint32_t)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++)
      dims[i] = t->dims[i];
  }
  onnx__tensor_proto__free_unpacked(t, NULL);
  return st;
}

/* ---- conformance hooks
 * -----------------------------------------------------*/

void nnmem__onnx_io_free(ox_io_t *io) {
  for (size_t i = 0; i < io->n_in; i++)
    free(io->in_names[i]);
  for (size_t i = 0; i < io->n_out; i++)
    free(io->out_names[i]);
  io->n_in = io->n_out = 0;
}

static int is_non_tensor(const Onnx__ValueInfoProto *vi) {
  return vi->type &&
         vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
         vi->type->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET;
}

static nnmem_status_t collect_inputs(const Onnx__GraphProto *g, ox_io_t *io) {
  for (size_t i = 0; i < g->n_output; i++)
    io->non_tensor |= is_non_tensor(g->output[i]);
  for (size_t i = 0; i < g->n_input && io->n_in < 64; i++) {
    io->non_tensor |= is_non_tensor(g->input[i]);
    const char *nm = g->input[i]->name ? g->input[i]->name : "";
    int init = 0;
    for (size_t k = 0; k < g->n_initializer && !init; k++)
      init =
          g->initializer[k]->name && strcmp(g->initializer[k]->name, nm) == 0;
    if (init) continue;
    io->in_names[io->n_in] = nnmem__strdup(nm);
    if (!io->in_names[io->n_in]) return NNMEM_ERR_NOMEM;
    io->n_in++;
  }
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_input_names(const void *data, size_t len,
                                       ox_io_t *io, nnmem_diag_t *diag) {
  ox_ctx_t c;
  nnmem_onnx_report_t rep;
  Onnx__ModelProto *m = NULL;
  memset(io, 0, sizeof *io);
  ctx_init(&c, "<model>", &rep, diag);
  nnmem_status_t st = open_model(&c, data, len, NULL, &m);
  if (st != NNMEM_OK) return st;
  st = collect_inputs(m->graph, io);
  onnx__model_proto__free_unpacked(m, NULL);
  return st;
}

static nnmem_status_t copy_outputs(ox_scope_t *s, ox_io_t *io) {
  const Onnx__GraphProto *g = s->gp;
  for (size_t i = 0; i < g->n_output && io->n_out < 64; i++) {
    const char *nm = g->output[i]->name ? g->output[i]->name : "";
    ox_val_t *v = nnmem__onnx_scope_find(s, nm);
    size_t k = io->n_out;
    io->out_names[k] = nnmem__strdup(nm);
    if (!io->out_names[k]) return NNMEM_ERR_NOMEM;
    io->n_out++;
    io->elem[k] = v ? v->elem : 0;
    io->rank[k] = v ? v->rank : -1;
    for (int32_t d = 0; v && d < v->rank; d++)
      io->dims[k][d] = v->dims[d];
  }
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_infer_outputs(const void *data, size_t len,
                                         const nnmem_onnx_config_t *cfg,
                                         const void *const *in_pb,
                                         const size_t *in_pb_len, ox_io_t *io,
                                         nnmem_onnx_report_t *report,
                                         nnmem_diag_t *diag) {
  ox_ctx_t c;
  Onnx__ModelProto *m = NULL;
  ox_scope_t *s = NULL;
  memset(io, 0, sizeof *io);
  ctx_init(&c, "<model>", report, diag);
  c.in_pb = in_pb;
  c.in_pb_len = in_pb_len;
  c.no_decl_fallback = 1; /* measure inference, not the declarations */
  nnmem_status_t st = open_model(&c, data, len, cfg, &m);
  if (st != NNMEM_OK) return st;
  st = nnmem__onnx_scope_build(&c, NULL, m->graph, 0, &s);
  if (st == NNMEM_OK) st = nnmem__onnx_scope_infer(&c, s);
  if (st == NNMEM_OK) st = copy_outputs(s, io);
  if (st == NNMEM_OK) st = collect_inputs(m->graph, io);
  nnmem__onnx_scope_free(s);
  onnx__model_proto__free_unpacked(m, NULL);
  if (st != NNMEM_OK) nnmem__onnx_io_free(io);
  return st;
}

nnmem_status_t nnmem__onnx_check_decls(const void *data, size_t len,
                                       const nnmem_onnx_config_t *cfg,
                                       size_t *checked, size_t *mismatched,
                                       char *first, size_t cap,
                                       nnmem_diag_t *diag) {
  ox_ctx_t c;
  nnmem_onnx_report_t rep;
  Onnx__ModelProto *m = NULL;
  ox_scope_t *s = NULL;
  ctx_init(&c, "<model>", &rep, diag);
  c.no_decl_fallback = 1;
  *checked = *mismatched = 0;
  if (cap) first[0] = 0;
  nnmem_status_t st = open_model(&c, data, len, cfg, &m);
  if (st != NNMEM_OK) return st;
  st = nnmem__onnx_scope_build(&c, NULL, m->graph, 0, &s);
  if (st == NNMEM_OK) st = nnmem__onnx_scope_infer(&c, s);
  for (size_t i = 0; st == NNMEM_OK && i < s->n_vals; i++) {
    const ox_val_t *v = &s->vals[i];
    if (!v->decl || v->is_input || v->is_init) continue;
    (*checked)++;
    char why[256];
    if (!nnmem__onnx_decl_mismatch(&c, v, why, sizeof why)) continue;
    if (*mismatched == 0 && cap) snprintf(first, cap, "%s", why);
    (*mismatched)++;
  }
  nnmem__onnx_scope_free(s);
  onnx__model_proto__free_unpacked(m, NULL);
  return st;
}

/* onnx_convert.c - an inferred scope becomes an nnmem graph; bodies are
 * planned to size their op's workspace.
 *
 * Steps of nnmem__onnx_scope_to_graph:
 *   1. one tensor per value: initializers -> WEIGHT, graph inputs -> INPUT,
 *      outputs of folded nodes -> CONSTANT, graph outputs -> OUTPUT, others
 *      -> ACTIVATION; values of an enclosing scope used by a body become
 *      WEIGHT tensors of the body graph (they live outside its arena);
 *   2. size: dtype (cfg->dtype replaces floating types; strings are
 *      NNMEM_DTYPE_STRING, a 16-byte handle per element, the characters
 *      unplanned), layout (NHWC permutes rank-4 non-weight shapes; NC1HWC0
 *      makes them [N, ceil(C / C0), H, W, C0]), types nnmem has no enum for
 *      (complex, 8-bit floats, 4-bit ints) get explicit byte sizes; a
 *      data-dependent value (sized by an upper bound) carries
 *      NNMEM_TENSOR_UPPER_BOUND; bytes are ceil(elements x bits / 8) and
 *      must fit 64 bits (the bit count need not): an exact size that does
 *      not is NNMEM_ERR_OVERFLOW, a bound that does not is unresolved; a
 *      value whose type or shape is unknown is unresolved: 0 bytes,
 *      counted and listed in the report (strict mode: an error naming it);
 *   3. one op per node that is not folded, in execution order, with
 *      implicit (captured) inputs appended; VIEW / INPLACE flags from the
 *      registry when sizes allow; control ops carry their body workspace;
 *      node names are made unique ("name#k") and empty ones generated.
 * nnmem__onnx_body_bytes runs steps 1-3 on a body, then liveness and the
 * heap-best-fit planner; the plan height is the body's workspace.
 * Complexity: O(V + E) plus planning of bodies. Thread-safety: pure. */
#include <stdio.h>
#include <string.h>

#include "common/text.h"
#include "import/onnx/onnx_internal.h"
#include "nnmem/liveness.h"
#include "nnmem/plan.h"

static nnmem_dtype_t map_dtype(int32_t e) {
  switch (e) {
    case OX_FLOAT:
      return NNMEM_DTYPE_FLOAT32;
    case OX_UINT8:
      return NNMEM_DTYPE_UINT8;
    case OX_INT8:
      return NNMEM_DTYPE_INT8;
    case OX_UINT16:
      return NNMEM_DTYPE_UINT16;
    case OX_INT16:
      return NNMEM_DTYPE_INT16;
    case OX_INT32:
      return NNMEM_DTYPE_INT32;
    case OX_INT64:
      return NNMEM_DTYPE_INT64;
    case OX_BOOL:
      return NNMEM_DTYPE_BOOL;
    case OX_FLOAT16:
      return NNMEM_DTYPE_FLOAT16;
    case OX_DOUBLE:
      return NNMEM_DTYPE_FLOAT64;
    case OX_UINT32:
      return NNMEM_DTYPE_UINT32;
    case OX_UINT64:
      return NNMEM_DTYPE_UINT64;
    case OX_BFLOAT16:
      return NNMEM_DTYPE_BFLOAT16;
    case OX_STRING:
      return NNMEM_DTYPE_STRING;
    default:
      return NNMEM_DTYPE_UNDEFINED;
  }
}

static int in_scope(const ox_scope_t *s, const ox_val_t *v) {
  return v >= s->vals && v < s->vals + s->n_vals;
}

static nnmem_tensor_kind_t kind_of(const ox_scope_t *s, const ox_val_t *v) {
  if (v->is_init) return NNMEM_TENSOR_WEIGHT;
  if (v->is_input) return NNMEM_TENSOR_INPUT;
  if (v->is_const) return NNMEM_TENSOR_CONSTANT;
  if (v->producer >= 0 && s->folded[v->producer]) return NNMEM_TENSOR_CONSTANT;
  if (v->is_output) return NNMEM_TENSOR_OUTPUT;
  return NNMEM_TENSOR_ACTIVATION;
}

static void note_unresolved(ox_ctx_t *c, const ox_scope_t *s,
                            const ox_val_t *v) {
  nnmem_onnx_report_t *r = c->rep;
  if (r->n_unresolved_listed < NNMEM_ONNX_REPORT_LIST) {
    nnmem_onnx_named_t *e = &r->unresolved[r->n_unresolved_listed++];
    snprintf(e->name, sizeof e->name, "%s", v->name);
    snprintf(e->what, sizeof e->what, "%s",
             v->producer >= 0 ? s->nodes[v->producer].type : "input");
  }
  r->unresolved_tensors++;
}

static int c0_of(size_t bits) {
  return bits <= 8 ? 32 : bits <= 16 ? 16 : bits <= 32 ? 8 : 4;
}

/* Bytes of r dims of `bits`-bit elements, ceil(n * bits / 8) for n
 * elements, into *bytes; 1 when that exceeds 2^64 - 1. Computed as
 * (n / 8) * bits + ceil((n % 8) * bits / 8) so that only the byte count,
 * never the bit count n * bits, has to fit 64 bits; a zero dim gives 0
 * whatever the other dims. */
static int bytes_overflow(const int64_t *dims, int32_t r, size_t bits,
                          uint64_t *bytes) {
  uint64_t n = 1, hi, lo;
  *bytes = 0;
  for (int32_t i = 0; i < r; i++)
    if (dims[i] == 0) return 0;
  for (int32_t i = 0; i < r; i++)
    if (nnmem__mul_overflow(n, (uint64_t)dims[i], &n)) return 1;
  lo = (n % 8 * bits + 7) / 8;
  if (nnmem__mul_overflow(n / 8, bits, &hi) || hi > UINT64_MAX - lo) return 1;
  *bytes = hi + lo;
  return 0;
}

/* Step 2: fills desc (dims into `dims`); returns SIZE_OK, SIZE_UNKNOWN
 * (unresolved), SIZE_BOUND_OVERFLOW (an upper bound, e.g. a while-loop's
 * INT64_MAX trip count, that does not fit 64 bits: the bound is useless,
 * the size unknown, so unresolved too) or SIZE_OVERFLOW (an exact size
 * that does not fit: NNMEM_ERR_OVERFLOW, as nnmem_graph_add_tensor
 * reports for the typed ones). */
enum { SIZE_OK, SIZE_UNKNOWN, SIZE_BOUND_OVERFLOW, SIZE_OVERFLOW };

static int size_desc(const ox_ctx_t *c, const ox_val_t *v, int weight,
                     nnmem_tensor_desc_t *d, int64_t *dims) {
  if (v->non_tensor || !v->elem || !nnmem__onnx_known(v)) return SIZE_UNKNOWN;
  int32_t elem = v->elem;
  nnmem_dtype_t dt = map_dtype(elem);
  if (c->cfg.dtype != NNMEM_DTYPE_UNDEFINED && nnmem__onnx_is_float(elem))
    dt = c->cfg.dtype;
  int32_t r = v->rank;
  memcpy(dims, v->dims, sizeof v->dims);
  size_t bits = dt ? 8 * nnmem_dtype_size(dt) : nnmem__onnx_elem_bits(elem);
  if (!weight && r == 4 && c->cfg.layout == NNMEM_ONNX_LAYOUT_NHWC) {
    int64_t t = dims[1];
    dims[1] = dims[2];
    dims[2] = dims[3];
    dims[3] = t;
  } else if (!weight && r == 4 && c->cfg.layout == NNMEM_ONNX_LAYOUT_NC1HWC0) {
    int64_t c0 = c0_of(bits ? bits : 32);
    dims[4] = c0;
    dims[1] = v->dims[1] / c0 + (v->dims[1] % c0 != 0); /* no overflow */
    r = 5;
  }
  uint64_t bytes; /* below, a type of no known width: the widest */
  if (bytes_overflow(dims, r, bits ? bits : 128, &bytes))
    return v->data_dep ? SIZE_BOUND_OVERFLOW : SIZE_OVERFLOW;
  d->dtype = dt;
  d->rank = (uint32_t)r;
  d->shape = dims;
  d->flags = v->data_dep ? NNMEM_TENSOR_UPPER_BOUND : 0;
  if (dt == NNMEM_DTYPE_UNDEFINED) { /* explicit bytes */
    d->bytes = bytes;
    if (d->bytes == 0)
      d->shape = NULL, d->rank = 0, d->dtype = NNMEM_DTYPE_UINT8;
  }
  return SIZE_OK;
}

/* A tensor name must be UTF-8, as in the CSV and JSON readers: a name
 * that is not could not be matched again in the plan files nnmem writes
 * (JSON shows such bytes as U+FFFD, the CSV reader refuses them). */
static nnmem_status_t check_name(ox_ctx_t *c, const char *name) {
  size_t bad = 0;
  if (nnmem__utf8_check(name, strlen(name), &bad) == 0) return NNMEM_OK;
  return nnmem__diag(c->diag, NNMEM_ERR_PARSE,
                     "%s: tensor name '%.*s' is not valid UTF-8 (byte "
                     "0x%02x at offset %zu of the name)",
                     c->file, (int)bad, name,
                     (unsigned)(unsigned char)name[bad], bad);
}

static nnmem_status_t add_value(ox_ctx_t *c, ox_scope_t *s, nnmem_graph_t *g,
                                ox_val_t *v) {
  static const int64_t zero[1] = {0};
  if (check_name(c, v->name) != NNMEM_OK) return NNMEM_ERR_PARSE;
  int64_t dims[OX_MAX_RANK + 1];
  nnmem_tensor_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = v->name;
  d.kind = kind_of(s, v);
  d.align = c->cfg.alignment;
  int weight = d.kind == NNMEM_TENSOR_WEIGHT || d.kind == NNMEM_TENSOR_CONSTANT;
  const char *from =
      v->producer >= 0 ? s->nodes[v->producer].name : "graph input";
  int sz = size_desc(c, v, weight, &d, dims);
  if (sz == SIZE_OVERFLOW)
    return nnmem__diag(c->diag, NNMEM_ERR_OVERFLOW,
                       "%s: tensor '%s' (from %s): byte size overflows 64 "
                       "bits",
                       c->file, v->name, from);
  if (sz != SIZE_OK) {
    if (c->cfg.strict)
      return nnmem__diag(c->diag, NNMEM_ERR_UNSUPPORTED,
                         "%s: tensor '%s' (from %s) has %s (strict mode)",
                         c->file, v->name, from,
                         sz == SIZE_BOUND_OVERFLOW
                             ? "an upper-bound size that overflows 64 bits"
                         : v->elem ? "an unknown shape"
                                   : "an unknown type");
    if (s->depth == 0) note_unresolved(c, s, v);
    v->unresolved = s->depth == 0;
    d.dtype = NNMEM_DTYPE_UINT8;
    d.rank = 1;
    d.shape = zero;
    d.bytes = 0;
  }
  nnmem_diag_t tmp = {{0}};
  nnmem_status_t st = nnmem_graph_add_tensor(g, &d, &v->gid, &tmp);
  if (st != NNMEM_OK)
    return nnmem__diag(c->diag, st, "%s: %s", c->file, tmp.message);
  return NNMEM_OK;
}

/* Tensor id of a node input (outer values become body WEIGHT tensors). */
static nnmem_status_t input_id(ox_ctx_t *c, ox_scope_t *s, nnmem_graph_t *g,
                               ox_val_t *v, uint32_t *id) {
  if (in_scope(s, v)) {
    *id = v->gid;
    return NNMEM_OK;
  }
  if (nnmem_graph_find_tensor(g, v->name, id) == NNMEM_OK) return NNMEM_OK;
  if (check_name(c, v->name) != NNMEM_OK) return NNMEM_ERR_PARSE;
  ox_val_t copy = *v;
  copy.is_init = 1;
  copy.is_input = copy.is_const = copy.is_output = 0;
  copy.producer = -1;
  nnmem_tensor_desc_t d;
  int64_t dims[OX_MAX_RANK + 1];
  memset(&d, 0, sizeof d);
  d.name = v->name;
  d.kind = NNMEM_TENSOR_WEIGHT;
  if (size_desc(c, &copy, 1, &d, dims) != SIZE_OK) { /* as in its scope */
    static const int64_t zero[1] = {0};
    d.dtype = NNMEM_DTYPE_UINT8;
    d.rank = 1;
    d.shape = zero;
    d.bytes = 0;
  }
  return nnmem_graph_add_tensor(g, &d, id, c->diag);
}

static uint64_t bytes_of(const nnmem_graph_t *g, uint32_t id) {
  nnmem_tensor_info_t ti;
  return nnmem_graph_tensor(g, id, &ti) == NNMEM_OK ? ti.bytes : 0;
}

static int weight_like(const nnmem_graph_t *g, uint32_t id) {
  nnmem_tensor_info_t ti;
  if (nnmem_graph_tensor(g, id, &ti) != NNMEM_OK) return 1;
  return ti.kind == NNMEM_TENSOR_WEIGHT || ti.kind == NNMEM_TENSOR_CONSTANT;
}

static void op_flags(const ox_ctx_t *c, const ox_node_t *n, const ox_op_t *op,
                     const nnmem_graph_t *g, const uint32_t *ids,
                     nnmem_op_desc_t *d) {
  if (!op || !n->in || n->n_in == 0 || !n->in[0] || !n->out[0] ||
      d->n_inputs == 0 || d->n_outputs == 0 || d->outputs[0] != n->out[0]->gid)
    return;
  uint64_t ib = bytes_of(g, ids[0]), ob = bytes_of(g, d->outputs[0]);
  if (ob == 0 || ib < ob) return;
  if ((op->flags & OX_VIEW) && ib == ob) {
    d->flags = NNMEM_OP_VIEW;
    d->view_input = 0;
  } else if ((op->flags & OX_INPLACE) && ib == ob && !weight_like(g, ids[0])) {
    d->flags = NNMEM_OP_INPLACE;
    d->inplace_input = 0;
  }
}

/* Adds node i as an op (step 3). */
static nnmem_status_t add_node(ox_ctx_t *c, ox_scope_t *s, nnmem_graph_t *g,
                               size_t i, uint32_t *ids, uint32_t *outs) {
  ox_node_t *n = &s->nodes[i];
  nnmem_op_desc_t d;
  memset(&d, 0, sizeof d);
  uint32_t ni = 0, no = 0;
  int first_is_in0 = 0;
  for (size_t k = 0; k < n->n_in + n->n_implicit; k++) {
    if (!n->in[k]) continue;
    if (k == 0) first_is_in0 = 1;
    nnmem_status_t st = input_id(c, s, g, n->in[k], &ids[ni]);
    if (st != NNMEM_OK) return st;
    ni++;
  }
  for (size_t k = 0; k < n->n_out; k++)
    if (n->out[k]) outs[no++] = n->out[k]->gid;
  if (no == 0) return NNMEM_OK;
  d.type = n->type;
  d.inputs = ids;
  d.n_inputs = ni;
  d.outputs = outs;
  d.n_outputs = no;
  d.workspace_bytes = n->workspace;
  if (first_is_in0) op_flags(c, n, s->ops[i], g, ids, &d);
  char name[160];
  const char *base = n->np->name && n->np->name[0] ? n->np->name : NULL;
  if (base)
    snprintf(name, sizeof name, "%s", base);
  else
    snprintf(name, sizeof name, "%s_%zu", n->type, i);
  for (int attempt = 0;; attempt++) {
    d.name = name;
    nnmem_diag_t tmp = {{0}};
    uint32_t id;
    nnmem_status_t st = nnmem_graph_add_op(g, &d, &id, &tmp);
    if (st == NNMEM_OK && n->has_slice && first_is_in0)
      (void)nnmem_graph_set_op_slice(g, id, (uint32_t)n->slice_axis,
                                     n->slice_start, NULL);
    /* a refusal means the graph's sizes differ from the inferred ones
     * (upper bounds, buckets): the op stays a plain copy */
    if (st == NNMEM_OK) return NNMEM_OK;
    if (st != NNMEM_ERR_DUPLICATE || attempt > 1000)
      return nnmem__diag(c->diag, st, "%s: node '%s' (%s): %s", c->file,
                         n->name, n->type, tmp.message);
    snprintf(name, sizeof name, "%s#%d", base ? base : n->type, attempt + 1);
  }
}

nnmem_status_t nnmem__onnx_scope_to_graph(ox_ctx_t *c, ox_scope_t *s,
                                          const char *name,
                                          nnmem_graph_t **out) {
  nnmem_graph_t *g = NULL;
  nnmem_status_t st = nnmem_graph_create(name, &g);
  size_t max_io = 1;
  for (size_t i = 0; i < s->n_nodes; i++) {
    size_t k = s->nodes[i].n_in + s->nodes[i].n_implicit + s->nodes[i].n_out;
    if (k > max_io) max_io = k;
  }
  uint32_t *ids = malloc(2 * max_io * sizeof *ids);
  if (st == NNMEM_OK && !ids) st = NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < s->n_vals && st == NNMEM_OK; i++)
    st = add_value(c, s, g, &s->vals[i]);
  for (size_t k = 0; k < s->n_nodes && st == NNMEM_OK; k++) {
    size_t i = s->order[k];
    if (s->folded[i]) continue;
    st = add_node(c, s, g, i, ids, ids + max_io);
  }
  free(ids);
  if (st != NNMEM_OK) {
    nnmem_graph_destroy(g);
    return st;
  }
  *out = g;
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_body_bytes(ox_ctx_t *c, ox_scope_t *s,
                                      uint64_t *out) {
  nnmem_graph_t *g = NULL;
  nnmem_liveness_t *l = NULL;
  nnmem_plan_t *p = NULL;
  *out = 0;
  int strict = c->cfg.strict;
  c->cfg.strict = 0; /* body tensors are not reported separately */
  nnmem_status_t st = nnmem__onnx_scope_to_graph(c, s, "body", &g);
  c->cfg.strict = strict;
  if (st != NNMEM_OK) return st;
  nnmem_diag_t tmp = {{0}};
  st = nnmem_liveness_analyze(g, NULL, &l, &tmp);
  if (st == NNMEM_OK) {
    nnmem_planner_config_t pc;
    nnmem_planner_config_init(&pc);
    pc.strategy = NNMEM_STRATEGY_HEAP_BEST_FIT;
    pc.alignment = c->cfg.alignment;
    st = nnmem_plan_create(nnmem_liveness_problem(l), &pc, &p, &tmp);
  }
  if (st == NNMEM_OK) *out = nnmem_plan_height(p);
  if (st != NNMEM_OK)
    nnmem__diag(c->diag, st, "%s: planning subgraph '%s': %s", c->file,
                s->gp->name ? s->gp->name : "", tmp.message);
  nnmem_plan_destroy(p);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
  return st;
}

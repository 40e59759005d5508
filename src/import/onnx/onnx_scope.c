/* onnx_scope.c - one ONNX graph (the main graph or an If / Loop / Scan
 * body) as a scope of values: building the value table, checking names,
 * ordering the nodes and running shape inference node by node.
 *
 * Steps of nnmem__onnx_scope_build:
 *   1. reject bodies nested deeper than OX_MAX_DEPTH;
 *   2. one value per initializer (sizes from dims, small values kept), per
 *      graph input that is not an initializer (declared type; symbolic dims
 *      bound by nnmem__onnx_bind_dim) and per node output; a name defined
 *      twice is NNMEM_ERR_DUPLICATE naming the node;
 *   3. value_info / graph outputs attach declared types (used as the
 *      fallback shape of unsupported operators);
 *   4. dependencies: each node input (and each name a body uses from
 *      outside, "implicit inputs") must be defined in this scope or an
 *      enclosing one, else "input nobody produces"; an iterative DFS in file
 *      order gives a topological order (file order when it already is one)
 *      and finds cycles (NNMEM_ERR_CYCLE naming a node on the cycle).
 * nnmem__onnx_scope_infer then visits the nodes in that order: supported
 * operators run their inference function; a node whose outputs all got
 * values, or whose inputs are all constants, is folded (its outputs are
 * constants); outputs still unknown take the declared type when it is
 * complete, otherwise they stay unresolved.
 * Invariants: vals never reallocates after step 2 (pointers into it stay
 * valid); every node input is a value of this scope or an enclosing one.
 * Complexity: O(V + E) expected (hashing). Thread-safety: per context. */
#include <stdio.h>
#include <string.h>

#include "import/onnx/onnx_internal.h"

static const char *S(const char *s) {
  return s ? s : "";
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* ---- value table -------------------------------------------------------*/

static ox_val_t *find_local(ox_scope_t *s, const char *name) {
  size_t m = s->hash_cap - 1;
  for (size_t i = hash_str(name) & m;; i = (i + 1) & m) {
    uint32_t e = s->hash[i];
    if (!e) return NULL;
    if (strcmp(s->vals[e - 1].name, name) == 0) return &s->vals[e - 1];
  }
}

ox_val_t *nnmem__onnx_scope_find(ox_scope_t *s, const char *name) {
  for (; s; s = s->parent) {
    ox_val_t *v = find_local(s, name);
    if (v) return v;
  }
  return NULL;
}

/* Adds a value (capacity reserved up front); NULL when the name exists. */
static ox_val_t *add_val(ox_scope_t *s, const char *name) {
  if (find_local(s, name) || s->n_vals >= s->cap_vals) return NULL;
  ox_val_t *v = &s->vals[s->n_vals++];
  memset(v, 0, sizeof *v);
  v->name = name;
  v->rank = -1;
  v->producer = -1;
  size_t m = s->hash_cap - 1, i = hash_str(name) & m;
  while (s->hash[i])
    i = (i + 1) & m;
  s->hash[i] = (uint32_t)s->n_vals;
  return v;
}

void nnmem__onnx_scope_free(ox_scope_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n_vals; i++)
    nnmem__onnx_val_free(&s->vals[i]);
  for (size_t i = 0; i < s->n_nodes; i++) {
    free(s->nodes[i].in);
  }
  free(s->vals);
  free(s->hash);
  free(s->nodes);
  free(s->order);
  free(s->ops);
  free(s->folded);
  free(s);
}

/* ---- symbolic dims -------------------------------------------------------*/

static int name_has(const char *s, const char *sub) {
  size_t n = strlen(sub);
  for (; *s; s++) {
    size_t i = 0;
    while (i < n && s[i] && (s[i] | 32) == (sub[i] | 32))
      i++;
    if (i == n) return 1;
  }
  return 0;
}

static void note_default(ox_ctx_t *c, const char *param, const char *cls,
                         int64_t value) {
  nnmem_onnx_report_t *r = c->rep;
  size_t shown = r->n_defaults < NNMEM_ONNX_REPORT_LIST
                     ? r->n_defaults
                     : NNMEM_ONNX_REPORT_LIST;
  for (size_t i = 0; i < shown; i++)
    if (strncmp(r->defaults[i].name, param, NNMEM_ONNX_NAME_MAX - 1) == 0)
      return;
  if (r->n_defaults < NNMEM_ONNX_REPORT_LIST) {
    nnmem_onnx_named_t *e = &r->defaults[r->n_defaults];
    snprintf(e->name, sizeof e->name, "%s", param);
    snprintf(e->what, sizeof e->what, "%s", cls);
    e->value = value;
  }
  r->n_defaults++;
}

/* The binding named exactly `name`, or NULL. */
static const nnmem_onnx_dim_t *find_binding(const ox_ctx_t *c,
                                            const char *name) {
  for (size_t i = 0; i < c->cfg.n_dims; i++)
    if (c->cfg.dims[i].name && strcmp(c->cfg.dims[i].name, name) == 0)
      return &c->cfg.dims[i];
  return NULL;
}

/* Value of symbolic dim `param`: an exact binding; else, for a batch-like
 * (sequence-like) name, a binding of the class name "batch" ("sequence");
 * else the class default, noted in the report. */
int64_t nnmem__onnx_bind_dim(ox_ctx_t *c, const char *param) {
  int batch = name_has(param, "batch") || strcmp(param, "N") == 0 ||
              strncmp(param, "unk__", 5) == 0;
  int seq = !batch && (name_has(param, "seq") || name_has(param, "len") ||
                       name_has(param, "time") || name_has(param, "token") ||
                       name_has(param, "step"));
  /* the class alias counts as used even when an exact binding wins: the
   * model has a dim of its kind */
  const nnmem_onnx_dim_t *alias = batch ? find_binding(c, "batch")
                                  : seq ? find_binding(c, "sequence")
                                        : NULL;
  const nnmem_onnx_dim_t *d = find_binding(c, param);
  nnmem__onnx_note_dim(c, param, d);
  nnmem__onnx_note_dim(c, NULL, alias);
  if (d) return d->value;
  if (batch) {
    if (alias) return alias->value;
    note_default(c, param, "batch", c->cfg.default_batch);
    return c->cfg.default_batch;
  }
  if (seq) {
    if (alias) return alias->value;
    note_default(c, param, "sequence", c->cfg.default_sequence);
    return c->cfg.default_sequence;
  }
  note_default(c, param[0] ? param : "(unnamed)", "other", 1);
  return 1;
}

/* ---- declared types ------------------------------------------------------*/

/* Type of a ValueInfoProto into v. `bind`: symbolic dims get values;
 * otherwise they stay -1. */
static nnmem_status_t apply_decl(ox_ctx_t *c, const Onnx__ValueInfoProto *vi,
                                 ox_val_t *v, int bind, int is_input) {
  const Onnx__TypeProto *tp = vi->type;
  if (!tp) return NNMEM_OK;
  if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
    v->non_tensor = tp->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET;
    return NNMEM_OK;
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  if (tt->has_elem_type) v->elem = tt->elem_type;
  if (!tt->shape) return NNMEM_OK;
  if (tt->shape->n_dim > OX_MAX_RANK)
    return nnmem__diag(c->diag, NNMEM_ERR_UNSUPPORTED,
                       "%s: tensor '%s' has rank %zu (at most %d)", c->file,
                       v->name, tt->shape->n_dim, OX_MAX_RANK);
  v->rank = (int32_t)tt->shape->n_dim;
  for (size_t i = 0; i < tt->shape->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    int64_t x = -1;
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
      x = d->dim_value;
    else if (bind)
      x = nnmem__onnx_bind_dim(
          c,
          d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
              ? S(d->dim_param)
              : "");
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
        (x < 0 || (is_input && x == 0)))
      return nnmem__diag(c->diag, NNMEM_ERR_INVALID,
                         "%s: tensor '%s': dim %zu is %lld (must be >= 1)",
                         c->file, v->name, i, (long long)x);
    v->dims[i] = x;
  }
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_apply_decl(ox_ctx_t *c, ox_val_t *v) {
  if (!v->decl) return NNMEM_OK;
  ox_val_t t;
  memset(&t, 0, sizeof t);
  t.name = v->name;
  t.rank = -1;
  nnmem_status_t st = apply_decl(c, v->decl, &t, 1, 0);
  if (st != NNMEM_OK) return st;
  if (!v->elem) v->elem = t.elem;
  if (t.non_tensor) v->non_tensor = 1;
  if (v->rank < 0 && t.rank >= 0) nnmem__onnx_set_shape(v, t.rank, t.dims);
  if (v->rank != t.rank) return NNMEM_OK;
  for (int32_t i = 0; i < v->rank; i++)
    if (v->dims[i] < 0) v->dims[i] = t.dims[i];
  return NNMEM_OK;
}

int nnmem__onnx_decl_mismatch(ox_ctx_t *c, const ox_val_t *v, char *why,
                              size_t cap) {
  ox_val_t t;
  memset(&t, 0, sizeof t);
  t.name = v->name;
  t.rank = -1;
  if (!v->decl || apply_decl(c, v->decl, &t, 0, 0) != NNMEM_OK) return 0;
  int bad = (t.elem && v->elem && t.elem != v->elem) ||
            (t.rank >= 0 && v->rank >= 0 && t.rank != v->rank);
  for (int32_t i = 0; !bad && t.rank == v->rank && i < t.rank; i++)
    bad = t.dims[i] >= 0 && v->dims[i] >= 0 && t.dims[i] != v->dims[i];
  if (bad)
    snprintf(why, cap,
             "'%s': inferred %s rank %d [%lld,%lld,...], declared "
             "%s rank %d [%lld,%lld,...]",
             v->name, nnmem__onnx_type_name(v->elem), (int)v->rank,
             (long long)(v->rank > 0 ? v->dims[0] : 0),
             (long long)(v->rank > 1 ? v->dims[1] : 0),
             nnmem__onnx_type_name(t.elem), (int)t.rank,
             (long long)(t.rank > 0 ? t.dims[0] : 0),
             (long long)(t.rank > 1 ? t.dims[1] : 0));
  return bad;
}

/* Conformance hook: binds the values of a small input from its serialized
 * TensorProto (the value stays an input, not a constant). */
static nnmem_status_t bind_values(ox_ctx_t *c, size_t i, ox_val_t *v) {
  if (!c->in_pb || !c->in_pb[i]) return NNMEM_OK;
  Onnx__TensorProto *t = onnx__tensor_proto__unpack(
      NULL, c->in_pb_len[i], (const uint8_t *)c->in_pb[i]);
  if (!t) return NNMEM_OK;
  size_t n = 1;
  for (size_t k = 0; k < t->n_dims && n <= 4096; k++)
    n *= t->n_dims && t->dims[k] >= 0 ? (size_t)t->dims[k] : 4097;
  int32_t e = t->has_data_type ? t->data_type : 0;
  nnmem_status_t st = NNMEM_OK;
  if ((nnmem__onnx_is_int(e) && n <= 1024) ||
      (nnmem__onnx_is_float(e) && n <= 16)) {
    st = nnmem__onnx_load_tensor(c, t, v, v->name);
    v->is_const = 0;
  }
  onnx__tensor_proto__free_unpacked(t, NULL);
  return st;
}

/* cfg->input_shapes override of a main-graph input: 1 when applied. */
static int apply_override(ox_ctx_t *c, ox_val_t *v, nnmem_status_t *st) {
  *st = NNMEM_OK;
  for (size_t i = 0; i < c->cfg.n_input_shapes; i++) {
    const nnmem_onnx_input_shape_t *o = &c->cfg.input_shapes[i];
    if (!o->name || strcmp(o->name, v->name) != 0) continue;
    if (o->elem_type > 0) v->elem = o->elem_type;
    if (o->rank <= OX_MAX_RANK)
      nnmem__onnx_set_shape(v, (int32_t)o->rank, o->dims);
    *st = bind_values(c, i, v);
    return 1;
  }
  return 0;
}

/* ---- building
 * --------------------------------------------------------------*/

static nnmem_status_t dup_error(ox_ctx_t *c, const char *name,
                                const char *what) {
  return nnmem__diag(c->diag, NNMEM_ERR_DUPLICATE,
                     "%s: tensor name '%s' is defined twice (%s)", c->file,
                     name, what);
}

static nnmem_status_t add_initializers(ox_ctx_t *c, ox_scope_t *s) {
  const Onnx__GraphProto *gp = s->gp;
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    if (!t->name || !t->name[0])
      return nnmem__diag(c->diag, NNMEM_ERR_PARSE,
                         "%s: initializer #%zu has no name", c->file, i);
    ox_val_t *v = add_val(s, t->name);
    if (!v) return dup_error(c, t->name, "initializer");
    v->is_init = 1;
    nnmem_status_t st = nnmem__onnx_load_tensor(c, t, v, "initializer");
    if (st != NNMEM_OK) return st;
  }
  for (size_t i = 0; i < gp->n_sparse_initializer; i++) {
    const Onnx__SparseTensorProto *sp = gp->sparse_initializer[i];
    const char *nm = sp->values && sp->values->name ? sp->values->name : "";
    if (!nm[0])
      return nnmem__diag(c->diag, NNMEM_ERR_PARSE,
                         "%s: sparse initializer #%zu has no name", c->file, i);
    ox_val_t *v = add_val(s, nm);
    if (!v) return dup_error(c, nm, "sparse initializer");
    v->is_init = v->is_const = 1;
    v->elem = sp->values->has_data_type ? sp->values->data_type : OX_FLOAT;
    if (sp->n_dims > OX_MAX_RANK)
      return nnmem__diag(c->diag, NNMEM_ERR_UNSUPPORTED,
                         "%s: sparse initializer '%s' has rank %zu", c->file,
                         nm, sp->n_dims);
    for (size_t k = 0; k < sp->n_dims; k++)
      if (sp->dims[k] < 0)
        return nnmem__diag(c->diag, NNMEM_ERR_INVALID,
                           "%s: sparse initializer '%s' has a negative dim",
                           c->file, nm);
    nnmem__onnx_set_shape(v, (int32_t)sp->n_dims, sp->dims);
  }
  return NNMEM_OK;
}

static nnmem_status_t add_inputs(ox_ctx_t *c, ox_scope_t *s) {
  const Onnx__GraphProto *gp = s->gp;
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    if (!vi->name || !vi->name[0])
      return nnmem__diag(c->diag, NNMEM_ERR_PARSE,
                         "%s: graph input #%zu has no name", c->file, i);
    ox_val_t *v = find_local(s, vi->name);
    if (v && v->is_init) continue; /* an initializer: a weight */
    if (v) return dup_error(c, vi->name, "graph input");
    v = add_val(s, vi->name);
    if (!v) return NNMEM_ERR_NOMEM;
    v->is_input = 1;
    v->decl = vi;
    nnmem_status_t st;
    if (s->depth == 0 && apply_override(c, v, &st)) {
      if (st != NNMEM_OK) return st;
      continue;
    }
    st = apply_decl(c, vi, v, s->depth == 0, s->depth == 0);
    if (st != NNMEM_OK) return st;
  }
  return NNMEM_OK;
}

static nnmem_status_t add_node_outputs(ox_ctx_t *c, ox_scope_t *s) {
  const Onnx__GraphProto *gp = s->gp;
  for (size_t i = 0; i < gp->n_node; i++) {
    const Onnx__NodeProto *np = gp->node[i];
    for (size_t k = 0; k < np->n_output; k++) {
      const char *nm = S(np->output[k]);
      if (!nm[0]) continue;
      ox_val_t *v = add_val(s, nm);
      if (!v)
        return nnmem__diag(c->diag, NNMEM_ERR_DUPLICATE,
                           "%s: node '%s' (%s): output '%s' is already "
                           "defined",
                           c->file, S(np->name), S(np->op_type), nm);
      v->producer = (int32_t)i;
    }
  }
  return NNMEM_OK;
}

/* Every graph output must name a value of this scope or an enclosing one. */
static nnmem_status_t check_outputs(ox_ctx_t *c, ox_scope_t *s) {
  for (size_t i = 0; i < s->gp->n_output; i++) {
    const char *nm = S(s->gp->output[i]->name);
    if (!nnmem__onnx_scope_find(s, nm))
      return nnmem__diag(c->diag, NNMEM_ERR_PARSE,
                         "%s: graph output '%s' is not produced by any node, "
                         "initializer or graph input",
                         c->file, nm);
  }
  return NNMEM_OK;
}

static void attach_decls(ox_scope_t *s) {
  const Onnx__GraphProto *gp = s->gp;
  for (size_t i = 0; i < gp->n_value_info; i++) {
    ox_val_t *v =
        gp->value_info[i]->name ? find_local(s, gp->value_info[i]->name) : NULL;
    if (v && !v->decl) v->decl = gp->value_info[i];
  }
  for (size_t i = 0; i < gp->n_output; i++) {
    ox_val_t *v =
        gp->output[i]->name ? find_local(s, gp->output[i]->name) : NULL;
    if (!v) continue;
    v->is_output = 1;
    if (!v->is_input) v->decl = gp->output[i];
  }
}

static size_t count_vals(const Onnx__GraphProto *gp) {
  size_t n = gp->n_initializer + gp->n_sparse_initializer + gp->n_input;
  for (size_t i = 0; i < gp->n_node; i++)
    n += gp->node[i]->n_output;
  return n;
}

static nnmem_status_t scope_alloc(const Onnx__GraphProto *gp,
                                  ox_scope_t **out) {
  ox_scope_t *s = calloc(1, sizeof *s);
  if (!s) return NNMEM_ERR_NOMEM;
  s->gp = gp;
  s->cap_vals = count_vals(gp);
  s->hash_cap = 16;
  while (s->hash_cap < 2 * s->cap_vals + 2)
    s->hash_cap *= 2;
  s->vals = calloc(s->cap_vals ? s->cap_vals : 1, sizeof *s->vals);
  s->hash = calloc(s->hash_cap, sizeof *s->hash);
  size_t nn = gp->n_node ? gp->n_node : 1;
  s->nodes = calloc(nn, sizeof *s->nodes);
  s->order = calloc(nn, sizeof *s->order);
  s->ops = calloc(nn, sizeof *s->ops);
  s->folded = calloc(nn, 1);
  *out = s;
  if (!s->vals || !s->hash || !s->nodes || !s->order || !s->ops || !s->folded)
    return NNMEM_ERR_NOMEM;
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_scope_build(ox_ctx_t *c, ox_scope_t *parent,
                                       const Onnx__GraphProto *gp, int depth,
                                       ox_scope_t **out) {
  *out = NULL;
  if (depth > OX_MAX_DEPTH)
    return nnmem__diag(c->diag, NNMEM_ERR_UNSUPPORTED,
                       "%s: subgraph '%s' is nested %d levels deep (at most "
                       "%d)",
                       c->file, S(gp->name), depth, OX_MAX_DEPTH);
  ox_scope_t *s = NULL;
  nnmem_status_t st = scope_alloc(gp, &s);
  if (st == NNMEM_OK) {
    s->parent = parent;
    s->depth = depth;
    st = add_initializers(c, s);
  }
  if (st == NNMEM_OK) st = add_inputs(c, s);
  if (st == NNMEM_OK) st = add_node_outputs(c, s);
  if (st == NNMEM_OK) {
    attach_decls(s);
    st = check_outputs(c, s);
  }
  if (st == NNMEM_OK) {
    st = nnmem__onnx_topo_order(c, s);
  }
  if (st != NNMEM_OK) {
    if (st == NNMEM_ERR_NOMEM && c->diag && !c->diag->message[0])
      nnmem__diag(c->diag, st, "%s: out of memory", c->file);
    nnmem__onnx_scope_free(s);
    return st;
  }
  *out = s;
  return NNMEM_OK;
}

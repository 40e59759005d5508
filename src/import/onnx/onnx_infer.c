/* onnx_infer.c - node views, topological order and the inference driver of
 * one scope.
 *
 * Steps:
 *   1. node views (make_views): each node's explicit inputs are looked up in
 *      the scope chain (missing optional inputs -> NULL); the names its
 *      bodies read from outside (free names: used in the body, defined
 *      nowhere inside it, found recursively) become implicit inputs; a name
 *      defined nowhere is "an input nobody produces";
 *   2. order (nnmem__onnx_topo_order): iterative depth-first search from
 *      each node in file order over "produced by" edges; post-order is a
 *      topological order equal to file order when that already is one; a
 *      node met again while on the DFS stack closes a cycle;
 *   3. inference (nnmem__onnx_scope_infer): in that order, check the node's
 *      domain, run the registry's inference function, fold (outputs become
 *      constants when every input is constant or every output got its
 *      values), flag outputs computed from an upper bound (propagate_bound),
 *      take declared types for what is still unknown; the first
 *      unsupported node is described in the report (op, domain, opset);
 *   4. after conversion (nnmem__onnx_count_downstream): forward
 *      reachability from that node's outputs counts the unresolved
 *      main-graph values it leaves behind.
 * Complexity: O(V + E) plus the bodies. Thread-safety: per context. */
#include <stdio.h>
#include <string.h>

#include "import/onnx/onnx_internal.h"

static const char *S(const char *s) {
  return s ? s : "";
}

/* ---- free names of bodies ------------------------------------------------*/

typedef struct strset {
  const char **slot;
  size_t cap, n;
} strset_t;

static uint64_t hs(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* Inserts; returns 1 when new, 0 when present, -1 on NOMEM. */
static int set_add(strset_t *s, const char *k) {
  if (2 * (s->n + 1) > s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    const char **slot = calloc(cap, sizeof *slot);
    if (!slot) return -1;
    for (size_t i = 0; i < s->cap; i++) {
      if (!s->slot[i]) continue;
      size_t j = hs(s->slot[i]) & (cap - 1);
      while (slot[j])
        j = (j + 1) & (cap - 1);
      slot[j] = s->slot[i];
    }
    free(s->slot);
    s->slot = slot;
    s->cap = cap;
  }
  size_t j = hs(k) & (s->cap - 1);
  for (; s->slot[j]; j = (j + 1) & (s->cap - 1))
    if (strcmp(s->slot[j], k) == 0) return 0;
  s->slot[j] = k;
  s->n++;
  return 1;
}

static int set_has(const strset_t *s, const char *k) {
  if (!s->cap) return 0;
  for (size_t j = hs(k) & (s->cap - 1); s->slot[j]; j = (j + 1) & (s->cap - 1))
    if (strcmp(s->slot[j], k) == 0) return 1;
  return 0;
}

/* Collects defined names (into def) and used names (into used, in order)
 * of a graph and its bodies. */
static int walk_body(const Onnx__GraphProto *g, strset_t *def, strset_t *used,
                     const char ***list, size_t *n_list, size_t *cap_list,
                     int depth) {
  if (depth > OX_MAX_DEPTH + 1) return -2;
  for (size_t i = 0; i < g->n_input; i++)
    if (g->input[i]->name && set_add(def, g->input[i]->name) < 0) return -1;
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name && set_add(def, g->initializer[i]->name) < 0)
      return -1;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *np = g->node[i];
    for (size_t k = 0; k < np->n_output; k++)
      if (S(np->output[k])[0] && set_add(def, np->output[k]) < 0) return -1;
  }
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *np = g->node[i];
    for (size_t k = 0; k < np->n_input; k++) {
      const char *nm = S(np->input[k]);
      if (!nm[0]) continue;
      int r = set_add(used, nm);
      if (r < 0) return -1;
      if (r == 0) continue;
      if (nnmem__grow((void **)list, cap_list, *n_list + 1, sizeof **list))
        return -1;
      (*list)[(*n_list)++] = nm;
    }
    for (size_t k = 0; k < np->n_attribute; k++) {
      const Onnx__AttributeProto *a = np->attribute[k];
      if (a->g) {
        int r = walk_body(a->g, def, used, list, n_list, cap_list, depth + 1);
        if (r) return r;
      }
      for (size_t j = 0; j < a->n_graphs; j++) {
        int r = walk_body(a->graphs[j], def, used, list, n_list, cap_list,
                          depth + 1);
        if (r) return r;
      }
    }
  }
  return 0;
}

static int has_body(const Onnx__NodeProto *np) {
  for (size_t k = 0; k < np->n_attribute; k++)
    if (np->attribute[k]->g || np->attribute[k]->n_graphs) return 1;
  return 0;
}

/* Free names of the bodies of np: malloc'd list (caller frees). */
static nnmem_status_t free_names(ox_ctx_t *c, const Onnx__NodeProto *np,
                                 int depth, const char ***out, size_t *n_out) {
  strset_t def = {0}, used = {0};
  const char **list = NULL;
  size_t n = 0, cap = 0;
  int r = 0;
  for (size_t k = 0; k < np->n_attribute && !r; k++) {
    const Onnx__AttributeProto *a = np->attribute[k];
    if (a->g) r = walk_body(a->g, &def, &used, &list, &n, &cap, depth + 1);
    for (size_t j = 0; j < a->n_graphs && !r; j++)
      r = walk_body(a->graphs[j], &def, &used, &list, &n, &cap, depth + 1);
  }
  size_t m = 0;
  for (size_t i = 0; i < n && !r; i++)
    if (!set_has(&def, list[i])) list[m++] = list[i];
  free(def.slot);
  free(used.slot);
  if (r) {
    free(list);
    if (r == -2)
      return nnmem__diag(c->diag, NNMEM_ERR_UNSUPPORTED,
                         "%s: node '%s' (%s): subgraphs nested more than %d "
                         "levels deep",
                         c->file, S(np->name), S(np->op_type), OX_MAX_DEPTH);
    return NNMEM_ERR_NOMEM;
  }
  *out = list;
  *n_out = m;
  return NNMEM_OK;
}

/* ---- node views ---------------------------------------------------------*/

static nnmem_status_t missing_input(ox_ctx_t *c, const ox_node_t *n,
                                    const char *name, int implicit) {
  return nnmem__diag(c->diag, NNMEM_ERR_PARSE,
                     "%s: node '%s' (%s): %sinput '%s' is not produced by any "
                     "node, initializer or graph input",
                     c->file, n->name, n->type, implicit ? "subgraph " : "",
                     name);
}

static nnmem_status_t make_view(ox_ctx_t *c, ox_scope_t *s, size_t i) {
  const Onnx__NodeProto *np = s->gp->node[i];
  ox_node_t *n = &s->nodes[i];
  n->np = np;
  n->scope = s;
  n->opset = c->opset;
  n->type = S(np->op_type);
  n->name = S(np->name)[0]                        ? np->name
            : np->n_output && S(np->output[0])[0] ? np->output[0]
                                                  : n->type;
  const char **fn = NULL;
  size_t n_fn = 0;
  if (has_body(np)) {
    nnmem_status_t st = free_names(c, np, s->depth, &fn, &n_fn);
    if (st != NNMEM_OK) return st;
  }
  size_t total = np->n_input + n_fn + np->n_output;
  n->in = calloc(total ? total : 1, sizeof *n->in);
  if (!n->in) {
    free(fn);
    return NNMEM_ERR_NOMEM;
  }
  n->n_in = np->n_input;
  n->n_implicit = n_fn;
  n->out = n->in + np->n_input + n_fn;
  n->n_out = np->n_output;
  nnmem_status_t st = NNMEM_OK;
  for (size_t k = 0; k < np->n_input + n_fn && st == NNMEM_OK; k++) {
    const char *nm = k < np->n_input ? S(np->input[k]) : fn[k - np->n_input];
    if (!nm[0]) continue;
    n->in[k] = nnmem__onnx_scope_find(s, nm);
    if (!n->in[k]) st = missing_input(c, n, nm, k >= np->n_input);
  }
  for (size_t k = 0; k < np->n_output; k++)
    if (S(np->output[k])[0])
      n->out[k] = nnmem__onnx_scope_find(s, np->output[k]);
  free(fn);
  return st;
}

/* ---- topological order ---------------------------------------------------*/

/* Producer node (in this scope) of input k of node i, or -1. */
static int32_t dep_of(ox_scope_t *s, size_t i, size_t k) {
  ox_val_t *v = s->nodes[i].in[k];
  if (!v || v < s->vals || v >= s->vals + s->n_vals) return -1;
  return v->producer;
}

static nnmem_status_t dfs_order(ox_ctx_t *c, ox_scope_t *s) {
  size_t n = s->gp->n_node, done = 0;
  uint8_t *state = calloc(n ? n : 1, 1);
  size_t *stk = malloc((n ? n : 1) * sizeof *stk);
  size_t *next = calloc(n ? n : 1, sizeof *next);
  nnmem_status_t st = (!state || !stk || !next) ? NNMEM_ERR_NOMEM : NNMEM_OK;
  for (size_t r = 0; r < n && st == NNMEM_OK; r++) {
    if (state[r]) continue;
    size_t top = 0;
    stk[top++] = r;
    state[r] = 1;
    while (top && st == NNMEM_OK) {
      size_t i = stk[top - 1];
      ox_node_t *nd = &s->nodes[i];
      if (next[i] < nd->n_in + nd->n_implicit) {
        int32_t d = dep_of(s, i, next[i]++);
        if (d < 0 || state[d] == 2) continue;
        if (state[d] == 1) {
          st = nnmem__diag(c->diag, NNMEM_ERR_CYCLE,
                           "%s: the graph has a cycle through node '%s' (%s)",
                           c->file, nd->name, nd->type);
          break;
        }
        state[d] = 1;
        stk[top++] = (size_t)d;
        continue;
      }
      state[i] = 2;
      s->order[done++] = (uint32_t)i;
      top--;
    }
  }
  free(state);
  free(stk);
  free(next);
  return st;
}

nnmem_status_t nnmem__onnx_topo_order(ox_ctx_t *c, ox_scope_t *s) {
  size_t n = s->gp->n_node;
  s->n_nodes = n;
  for (size_t i = 0; i < n; i++) {
    nnmem_status_t st = make_view(c, s, i);
    if (st != NNMEM_OK) return st;
  }
  return dfs_order(c, s);
}

/* ---- inference
 * -------------------------------------------------------------*/

static int default_domain(const char *d) {
  return !d || !d[0] || strcmp(d, "ai.onnx") == 0;
}

/* Is `domain` imported by the model? */
static int domain_imported(const ox_ctx_t *c, const char *domain) {
  const Onnx__ModelProto *m = c->model;
  if (m->n_opset_import == 0) return default_domain(domain);
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const char *d = m->opset_import[i]->domain;
    if (default_domain(d) && default_domain(domain)) return 1;
    if (d && domain && strcmp(d, domain) == 0) return 1;
  }
  return 0;
}

/* The model's opset of `domain` (0 when not imported). */
static int64_t domain_opset(const ox_ctx_t *c, const char *domain) {
  if (default_domain(domain)) return c->opset;
  const Onnx__ModelProto *m = c->model;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const char *d = m->opset_import[i]->domain;
    if (d && strcmp(d, domain) == 0) return m->opset_import[i]->version;
  }
  return 0;
}

static void note_first_unsupported(ox_ctx_t *c, const ox_node_t *n) {
  nnmem_onnx_first_unsupported_t *f = &c->rep->first_unsupported;
  const char *dom = n->np->domain;
  snprintf(f->node, sizeof f->node, "%s", n->name);
  snprintf(f->op_type, sizeof f->op_type, "%s", n->type);
  snprintf(f->domain, sizeof f->domain, "%s",
           default_domain(dom) ? "ai.onnx" : dom);
  f->opset = domain_opset(c, dom);
  f->downstream_unresolved = 0;
  c->first_unsupported = c->top_node;
}

static void note_unsupported(ox_ctx_t *c, const ox_node_t *n) {
  nnmem_onnx_report_t *r = c->rep;
  if (r->n_unsupported == 0) note_first_unsupported(c, n);
  if (r->n_unsupported < NNMEM_ONNX_REPORT_LIST) {
    nnmem_onnx_named_t *e = &r->unsupported[r->n_unsupported];
    snprintf(e->name, sizeof e->name, "%s", n->name);
    snprintf(e->what, sizeof e->what, "%s%s%s", S(n->np->domain),
             S(n->np->domain)[0] ? "." : "", n->type);
  }
  r->n_unsupported++;
}

void nnmem__onnx_mark_data_dep(ox_ctx_t *c, const ox_node_t *n, ox_val_t *v) {
  if (!v || v->data_dep) return;
  v->data_dep = 1;
  nnmem_onnx_report_t *r = c->rep;
  if (r->n_data_dependent < NNMEM_ONNX_REPORT_LIST) {
    nnmem_onnx_named_t *e = &r->data_dependent[r->n_data_dependent];
    snprintf(e->name, sizeof e->name, "%s", v->name);
    snprintf(e->what, sizeof e->what, "%s", n->type);
  }
  r->n_data_dependent++;
}

/* Sizes computed from an upper bound are upper bounds too. Conservative:
 * any input that is a bound or holds values computed from one flags every
 * output, except that Shape / Size of a bound have an exact size (only
 * their values are bounds). The report lists only the sources. */
static void propagate_bound(ox_node_t *n) {
  int dep = 0;
  for (size_t k = 0; k < n->n_in + n->n_implicit && !dep; k++)
    dep = n->in[k] && (n->in[k]->data_dep || n->in[k]->vals_dep);
  if (!dep) return;
  int exact = strcmp(n->type, "Shape") == 0 || strcmp(n->type, "Size") == 0;
  for (size_t k = 0; k < n->n_out; k++) {
    if (!n->out[k]) continue;
    n->out[k]->vals_dep = 1;
    if (!exact) n->out[k]->data_dep = 1;
  }
}

/* Outputs become constants when all inputs are, or all outputs got values. */
static void fold(ox_scope_t *s, size_t i, const ox_op_t *op) {
  ox_node_t *n = &s->nodes[i];
  if (op->flags & (OX_NOFOLD | OX_CONTROL)) return;
  int all_const = 1, all_vals = n->n_out > 0;
  for (size_t k = 0; k < n->n_in; k++)
    if (n->in[k] && !n->in[k]->is_const) all_const = 0;
  for (size_t k = 0; k < n->n_out; k++)
    if (n->out[k] && !n->out[k]->has_vals) all_vals = 0;
  if (!all_const && !all_vals) return;
  s->folded[i] = 1;
  for (size_t k = 0; k < n->n_out; k++)
    if (n->out[k]) n->out[k]->is_const = 1;
}

static nnmem_status_t infer_node(ox_ctx_t *c, ox_scope_t *s, size_t i) {
  ox_node_t *n = &s->nodes[i];
  const char *dom = n->np->domain;
  if (!domain_imported(c, dom))
    return nnmem__diag(c->diag, NNMEM_ERR_UNSUPPORTED,
                       "%s: node '%s' (%s) uses operator domain '%s' that the "
                       "model does not import",
                       c->file, n->name, n->type,
                       default_domain(dom) ? "ai.onnx" : dom);
  const ox_op_t *op = default_domain(dom) ? nnmem__onnx_find_op(n->type) : NULL;
  s->ops[i] = op;
  if (!op) {
    note_unsupported(c, n);
  } else {
    nnmem_status_t st = op->infer(c, n);
    if (st != NNMEM_OK) return st;
    fold(s, i, op);
    propagate_bound(n);
  }
  for (size_t k = 0; k < n->n_out && !(op && c->no_decl_fallback); k++) {
    ox_val_t *v = n->out[k];
    if (!v || (nnmem__onnx_known(v) && v->elem)) continue;
    nnmem_status_t st = nnmem__onnx_apply_decl(c, v);
    if (st != NNMEM_OK) return st;
  }
  return NNMEM_OK;
}

nnmem_status_t nnmem__onnx_scope_infer(ox_ctx_t *c, ox_scope_t *s) {
  if (s->depth == 0) c->top_node = c->first_unsupported = -1;
  for (size_t k = 0; k < s->n_nodes; k++) {
    if (s->depth == 0) c->top_node = s->order[k];
    nnmem_status_t st = infer_node(c, s, s->order[k]);
    if (st != NNMEM_OK) return st;
  }
  return NNMEM_OK;
}

/* Forward reachability from the first unsupported node's outputs in
 * execution order; O(V + E). */
void nnmem__onnx_count_downstream(ox_ctx_t *c, const ox_scope_t *s) {
  if (c->first_unsupported < 0 || s->n_vals == 0) return;
  uint8_t *reach = calloc(s->n_vals, 1);
  if (!reach) return; /* the count stays 0 */
  size_t count = 0;
  for (size_t k = 0; k < s->n_nodes; k++) {
    const ox_node_t *n = &s->nodes[s->order[k]];
    int hit = (int64_t)s->order[k] == c->first_unsupported;
    for (size_t i = 0; !hit && i < n->n_in + n->n_implicit; i++) {
      const ox_val_t *v = n->in[i];
      hit = v && v >= s->vals && v < s->vals + s->n_vals && reach[v - s->vals];
    }
    for (size_t i = 0; hit && i < n->n_out; i++) {
      const ox_val_t *v = n->out[i];
      if (!v || v < s->vals || v >= s->vals + s->n_vals || reach[v - s->vals])
        continue;
      reach[v - s->vals] = 1;
      count += v->unresolved;
    }
  }
  free(reach);
  c->rep->first_unsupported.downstream_unresolved = count;
}

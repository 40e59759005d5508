/* order_model.c - the cost model of operator ordering: what liveness.c and
 * nnmem_problem_lower_bound make of an order, computed one op at a time.
 *
 * Liveness (src/analysis/liveness.c) groups tensors into buffers. Views
 * always join their input's buffer, whatever the order, so a tensor and its
 * views (transitively) form a *unit* known before any order is chosen; a
 * unit's bytes are max(member bytes) rounded up to max(member align, model
 * alignment), exactly the size the lower bound counts. In-place ops are the
 * one order-dependent grouping: op o writes output 0 into the buffer of its
 * in-place input when that buffer dies at o (every other reader ran), holds
 * no graph input / output and is at least as large. Such a join chains the
 * output's unit W to the input's buffer; a buffer is then a chain of units,
 * of which only the newest is live.
 *
 * The step function, for op o run after the set S (decisions T):
 *   1. in place? U = o's in-place input unit; every reader of U except o in
 *      S, U not a graph output, the chain of U (followed back through T)
 *      holds no graph input / output and its bytes >= bytes(output 0);
 *   2. live = before + workspace(o) + bytes of each unit o creates (for a
 *      joined W: the growth of the chain's rounded size, normally 0);
 *   3. after = live - workspace(o) - bytes of each buffer that dies at o: an
 *      input unit all of whose readers ran (unless it continues as W), a new
 *      unit nobody reads, and at the first step the unread graph inputs;
 *   4. sub-buffer groups (concat-into-output, split / slice views; below
 *      from the relations every order makes): a unit inside a group costs
 *      nothing of its own; the group root's bytes are charged when o makes
 *      the first unit of the group and freed when o is the last reader of
 *      any of its units (om_groups).
 *
 *     group of Concat(X0, X1) -> T:   steps  p(X0) ... p(X1) ... cat ... last
 *                                     T's bytes |=========================|
 *                                     X0, X1: 0 (inside T)
 *
 * Invariant: `after` = the bytes of the buffers live after the step, a
 * function of (S, T restricted to live chains); peak over the steps of
 * `live` = nnmem_problem_lower_bound of the liveness problem, except when an
 * in-place join grows the chain's rounded size (may_grow: liveness then
 * charges the larger size from the chain's start) or liveness makes a
 * sub-buffer relation only in some orders (sub_dyn); the search then
 * re-evaluates its result with liveness and reports it as not proven.
 * ip_neutral: when every in-place op's input chain and output unit have one
 * raw size and rounding, a join changes no buffer's bytes: the decision
 * only lowers the bytes of its own step, T never changes a later cost and
 * the search keeps T empty (the chain walk then stops at the live unit,
 * whose size is the chain's).
 * Complexity: build O(V + E), plus O(V + E) per Concat / Split for the
 * sub-buffer groups; a step O(sum over o's inputs of their reader counts +
 * chain lengths + the units and readers of the groups o touches).
 * Thread-safety: the model is immutable after build. */
#include <string.h>

#include "analysis/liveness_internal.h"
#include "analysis/order_model.h"
#include "common/util.h"

typedef struct vec {
  uint32_t *a;
  size_t n, cap;
} vec_t;

static nnmem_status_t push(vec_t *v, uint32_t x) {
  if (v->n == v->cap) {
    nnmem_status_t st =
        nnmem__grow((void **)&v->a, &v->cap, v->n + 1, sizeof *v->a);
    if (st != NNMEM_OK) return st;
  }
  v->a[v->n++] = x;
  return NNMEM_OK;
}

static uint64_t round_size(uint64_t raw, uint64_t align, uint64_t model) {
  uint64_t r;
  if (nnmem__align_up(raw, nnmem__max_u64(align, model), &r)) return UINT64_MAX;
  return r;
}

void nnmem__om_free(nnmem__om_t *m) {
  if (!m) return;
  free(m->units);
  free(m->ops);
  free(m->idx);
  free(m->file_order);
  free(m->nests);
  memset(m, 0, sizeof *m);
}

typedef struct omb {
  const nnmem_graph_t *g;
  nnmem__om_t *m;
  int no_reuse;
  uint32_t *unit_of; /* tensor -> unit, NONE for the weight region */
  uint8_t *is_root;
  uint32_t *root_op; /* unit -> producing op (or NONE) */
  size_t cap_units;
  vec_t idx;
} omb_t;

static nnmem_status_t new_unit(omb_t *b, uint32_t t, int32_t prod) {
  nnmem__om_t *m = b->m;
  nnmem_status_t st = nnmem__grow((void **)&m->units, &b->cap_units,
                                  m->n_units + 1, sizeof *m->units);
  if (st != NNMEM_OK) return st;
  nnmem__om_unit_t *u = &m->units[m->n_units];
  memset(u, 0, sizeof *u);
  u->prod = prod;
  u->align = 1;
  b->unit_of[t] = (uint32_t)m->n_units++;
  b->is_root[t] = 1;
  return NNMEM_OK;
}

/* Units: graph inputs, then each op's outputs in file order (a view output
 * joins its input's unit, as liveness.c's try_alias does). */
static nnmem_status_t make_units(omb_t *b) {
  const nnmem_graph_t *g = b->g;
  nnmem__om_t *m = b->m;
  size_t nt = nnmem_graph_tensor_count(g);
  nnmem_status_t st = NNMEM_OK;
  for (uint32_t t = 0; t < nt && st == NNMEM_OK; t++) {
    nnmem_tensor_info_t ti;
    nnmem_graph_tensor(g, t, &ti);
    b->unit_of[t] = NNMEM__OM_NONE;
    if (ti.kind == NNMEM_TENSOR_INPUT) st = new_unit(b, t, -1);
  }
  for (size_t s = 0; s < m->n_ops && st == NNMEM_OK; s++) {
    uint32_t o = m->file_order[s];
    nnmem_op_info_t oi;
    nnmem_graph_op(g, o, &oi);
    for (uint32_t k = 0; k < oi.n_outputs && st == NNMEM_OK; k++) {
      uint32_t t = oi.outputs[k];
      nnmem_tensor_info_t ti, si;
      nnmem_graph_tensor(g, t, &ti);
      if (k == 0 && !b->no_reuse && (oi.flags & NNMEM_OP_VIEW)) {
        uint32_t src = oi.inputs[oi.view_input];
        nnmem_graph_tensor(g, src, &si);
        if (ti.kind != NNMEM_TENSOR_WORKSPACE &&
            si.kind != NNMEM_TENSOR_WORKSPACE) {
          b->unit_of[t] = b->unit_of[src]; /* NONE: the weight region */
          continue;
        }
      }
      st = new_unit(b, t, (int32_t)o);
    }
  }
  return st;
}

static void unit_sizes(omb_t *b) {
  const nnmem_graph_t *g = b->g;
  nnmem__om_t *m = b->m;
  size_t nt = nnmem_graph_tensor_count(g);
  for (uint32_t t = 0; t < nt; t++) {
    if (b->unit_of[t] == NNMEM__OM_NONE) continue;
    nnmem_tensor_info_t ti;
    nnmem_graph_tensor(g, t, &ti);
    nnmem__om_unit_t *u = &m->units[b->unit_of[t]];
    u->raw = nnmem__max_u64(u->raw, ti.bytes);
    u->align = nnmem__max_u64(u->align, ti.align);
    if (ti.kind == NNMEM_TENSOR_INPUT) u->has_in = 1;
    if (ti.kind == NNMEM_TENSOR_OUTPUT) u->has_out = 1;
  }
  for (size_t i = 0; i < m->n_units; i++)
    m->units[i].rsize =
        round_size(m->units[i].raw, m->units[i].align, m->align);
}

/* In-place eligibility of op o (liveness.c's try_alias without the
 * order-dependent part). */
static void inplace_of(omb_t *b, uint32_t o, const nnmem_op_info_t *oi) {
  nnmem__om_op_t *op = &b->m->ops[o];
  op->ip_in = op->ip_out = NNMEM__OM_NONE;
  if (b->no_reuse || !(oi->flags & NNMEM_OP_INPLACE) ||
      (oi->flags & NNMEM_OP_VIEW) || !oi->n_outputs)
    return;
  nnmem_tensor_info_t ti, si;
  uint32_t src = oi->inputs[oi->inplace_input];
  nnmem_graph_tensor(b->g, oi->outputs[0], &ti);
  nnmem_graph_tensor(b->g, src, &si);
  if (ti.kind == NNMEM_TENSOR_WORKSPACE || si.kind == NNMEM_TENSOR_WORKSPACE ||
      b->unit_of[src] == NNMEM__OM_NONE)
    return;
  op->ip_in = b->unit_of[src];
  op->ip_out = b->unit_of[oi->outputs[0]];
  op->ip_bytes = ti.bytes;
  const nnmem__om_unit_t *u = &b->m->units[op->ip_in];
  const nnmem__om_unit_t *w = &b->m->units[op->ip_out];
  if (w->raw > op->ip_bytes || nnmem__max_u64(w->align, b->m->align) >
                                   nnmem__max_u64(u->align, b->m->align))
    b->m->may_grow = 1;
}

/* Per op: distinct input units, created units, producer ops. */
static nnmem_status_t op_lists(omb_t *b, uint32_t *stamp, uint32_t *pstamp) {
  const nnmem_graph_t *g = b->g;
  nnmem__om_t *m = b->m;
  nnmem_status_t st = NNMEM_OK;
  for (uint32_t o = 0; o < m->n_ops && st == NNMEM_OK; o++) {
    nnmem_op_info_t oi;
    nnmem_graph_op(g, o, &oi);
    nnmem__om_op_t *op = &m->ops[o];
    op->in_off = (uint32_t)b->idx.n;
    for (uint32_t i = 0; i < oi.n_inputs && st == NNMEM_OK; i++) {
      uint32_t u = b->unit_of[oi.inputs[i]];
      if (u == NNMEM__OM_NONE || stamp[u] == o + 1) continue;
      stamp[u] = o + 1;
      st = push(&b->idx, u);
    }
    op->in_n = (uint32_t)(b->idx.n - op->in_off);
    op->new_off = (uint32_t)b->idx.n;
    for (uint32_t k = 0; k < oi.n_outputs && st == NNMEM_OK; k++)
      if (b->is_root[oi.outputs[k]])
        st = push(&b->idx, b->unit_of[oi.outputs[k]]);
    op->new_n = (uint32_t)(b->idx.n - op->new_off);
    op->pred_off = (uint32_t)b->idx.n;
    for (uint32_t i = 0; i < oi.n_inputs && st == NNMEM_OK; i++) {
      nnmem_tensor_info_t ti;
      nnmem_graph_tensor(g, oi.inputs[i], &ti);
      if (ti.producer < 0 || pstamp[ti.producer] == o + 1) continue;
      pstamp[ti.producer] = o + 1;
      st = push(&b->idx, (uint32_t)ti.producer);
    }
    op->pred_n = (uint32_t)(b->idx.n - op->pred_off);
    inplace_of(b, o, &oi);
  }
  return st;
}

/* Reverse lists: readers of each unit, successors of each op. */
static nnmem_status_t reverse_lists(omb_t *b) {
  nnmem__om_t *m = b->m;
  nnmem_status_t st = NNMEM_OK;
  size_t base = b->idx.n;
  for (uint32_t o = 0; o < m->n_ops; o++) {
    const nnmem__om_op_t *op = &m->ops[o];
    for (uint32_t i = 0; i < op->in_n; i++)
      m->units[b->idx.a[op->in_off + i]].rd_n++;
    for (uint32_t i = 0; i < op->pred_n; i++)
      m->ops[b->idx.a[op->pred_off + i]].succ_n++;
  }
  size_t total = base;
  for (size_t u = 0; u < m->n_units; u++) {
    m->units[u].rd_off = (uint32_t)total;
    total += m->units[u].rd_n;
    m->units[u].rd_n = 0;
  }
  for (size_t o = 0; o < m->n_ops; o++) {
    m->ops[o].succ_off = (uint32_t)total;
    total += m->ops[o].succ_n;
    m->ops[o].succ_n = 0;
  }
  if (total > UINT32_MAX) return NNMEM_ERR_OVERFLOW;
  while (b->idx.n < total && st == NNMEM_OK)
    st = push(&b->idx, 0);
  for (uint32_t o = 0; o < m->n_ops && st == NNMEM_OK; o++) {
    const nnmem__om_op_t *op = &m->ops[o];
    for (uint32_t i = 0; i < op->in_n; i++) {
      nnmem__om_unit_t *u = &m->units[b->idx.a[op->in_off + i]];
      b->idx.a[u->rd_off + u->rd_n++] = o;
    }
    for (uint32_t i = 0; i < op->pred_n; i++) {
      nnmem__om_op_t *p = &m->ops[b->idx.a[op->pred_off + i]];
      b->idx.a[p->succ_off + p->succ_n++] = o;
    }
  }
  return st;
}

/* Largest raw size / align of any chain a unit can end (units are numbered
 * in file order, so an in-place input's unit comes first). */
static void chain_bounds(nnmem__om_t *m) {
  m->ip_neutral = 1;
  for (size_t i = 0; i < m->n_units; i++) {
    nnmem__om_unit_t *u = &m->units[i];
    u->cmax_raw = u->raw;
    u->cmax_align = u->align;
    if (u->prod < 0) continue;
    const nnmem__om_op_t *op = &m->ops[u->prod];
    if (op->ip_in == NNMEM__OM_NONE || op->ip_out != i) continue;
    const nnmem__om_unit_t *in = &m->units[op->ip_in];
    u->cmax_raw = nnmem__max_u64(u->raw, in->cmax_raw);
    u->cmax_align = nnmem__max_u64(u->align, in->cmax_align);
    uint64_t a = m->align;
    if (in->raw != u->raw || in->cmax_raw != u->raw ||
        nnmem__max_u64(in->cmax_align, a) != nnmem__max_u64(u->align, a) ||
        nnmem__max_u64(in->align, a) != nnmem__max_u64(u->align, a))
      m->ip_neutral = 0;
  }
}

/* ---- sub-buffers (concat-into-output, split / slice views) ------------
 * concat.c decides them on the finished liveness buffers of one order. The
 * model needs them before any order exists, so it takes the relations that
 * hold in *every* order and counts the rest as order-dependent (sub_dyn):
 *   - a static in-place chain: op o joins its in-place input U in every
 *     order when o is U's only reader and the join is allowed by size and
 *     I/O (else the join may depend on the order: dyn);
 *   - a Concat input X (unit UX, static chain) nests into the output's unit
 *     UT when concat.c's conditions hold and every reader of UX's group
 *     other than the Concat is its ancestor: then X's buffer dies at the
 *     Concat in every order, never after the output, and no in-place op can
 *     write into it after X (that op would have to run after the Concat);
 *     a reader that is not an ancestor makes the relation order-dependent;
 *   - a Split output O nests into the input's unit UI when concat.c's
 *     conditions hold, no in-place reader of UI other than an ancestor of
 *     the Split can join it (else dyn) and O's unit has no in-place reader
 *     (one that joins in every order: no nesting; one that may: dyn);
 *   - a Slice output (concat.c's step 4) is a Split with one part at its
 *     start offset (view_static serves both).
 * Ops are visited in file order: the relations kept are those every order
 * makes, and in every order a Split runs before the Concats reading its
 * outputs, as in the file order. A group is a root unit and every unit
 * nested in it, transitively; the step function charges the root's bytes
 * from the first production of any of its units and frees them after the
 * last reader of any of them. */

typedef struct subb {
  omb_t *b;
  uint32_t *sprev;  /* unit -> static in-place predecessor, or NONE */
  uint8_t *dyn;     /* unit: chain composition depends on the order */
  uint32_t *parent; /* unit -> the unit it is nested in, or NONE */
  uint32_t *mark;   /* op -> epoch of the latest ancestor marking */
  uint32_t *stack;
  uint8_t *kids; /* unit: some unit is nested in it */
  uint32_t epoch;
  size_t events; /* nestings made or found order-dependent */
} subb_t;

static void static_chains(subb_t *x) {
  const nnmem__om_t *m = x->b->m;
  for (uint32_t u = 0; u < m->n_units; u++) {
    x->sprev[u] = NNMEM__OM_NONE;
    const nnmem__om_unit_t *un = &m->units[u];
    if (un->prod < 0) continue;
    const nnmem__om_op_t *op = &m->ops[un->prod];
    if (op->ip_in == NNMEM__OM_NONE || op->ip_out != u) continue;
    uint32_t U = op->ip_in;
    if (m->units[U].has_out) continue; /* never joins */
    if (x->dyn[U]) {
      x->dyn[u] = 1;
      continue;
    }
    uint64_t raw = 0;
    int io = 0;
    for (uint32_t c = U; c != NNMEM__OM_NONE; c = x->sprev[c]) {
      raw = nnmem__max_u64(raw, m->units[c].raw);
      io |= m->units[c].has_in | m->units[c].has_out;
    }
    if (io || op->ip_bytes > raw) continue; /* never joins */
    if (m->units[U].rd_n == 1)
      x->sprev[u] = U;
    else
      x->dyn[u] = 1;
  }
}

/* Marks every ancestor op of o with a new epoch. */
static void mark_ancestors(subb_t *x, uint32_t o) {
  const nnmem__om_t *m = x->b->m;
  const uint32_t *idx = x->b->idx.a;
  size_t sp = 0;
  x->epoch++;
  x->stack[sp++] = o;
  while (sp) {
    const nnmem__om_op_t *op = &m->ops[x->stack[--sp]];
    for (uint32_t j = 0; j < op->pred_n; j++) {
      uint32_t p = idx[op->pred_off + j];
      if (x->mark[p] == x->epoch) continue;
      x->mark[p] = x->epoch;
      x->stack[sp++] = p;
    }
  }
}

static uint32_t top_of(const subb_t *x, uint32_t u) {
  while (x->parent[u] != NNMEM__OM_NONE)
    u = x->parent[u];
  return u;
}

/* Every reader of unit u, and of every unit nested in it, other than o is
 * an ancestor of o (marked). */
static int readers_before(const subb_t *x, uint32_t u, uint32_t o) {
  const nnmem__om_t *m = x->b->m;
  for (uint32_t v = x->kids[u] ? 0 : u; v < m->n_units; v++) {
    if (!x->kids[u] && v != u) break;
    if (v != u && (x->parent[v] == NNMEM__OM_NONE || top_of(x, v) != u))
      continue;
    const nnmem__om_unit_t *un = &m->units[v];
    for (uint32_t i = 0; i < un->rd_n; i++) {
      uint32_t r = x->b->idx.a[un->rd_off + i];
      if (r != o && x->mark[r] != x->epoch) return 0;
    }
  }
  return 1;
}

/* Every reader of every unit nested in u is an ancestor of o (marked). */
static int members_read_before(const subb_t *x, uint32_t u, uint32_t o) {
  const nnmem__om_t *m = x->b->m;
  for (uint32_t v = 0; v < m->n_units; v++) {
    if (v == u || x->parent[v] == NNMEM__OM_NONE || top_of(x, v) != u) continue;
    const nnmem__om_unit_t *un = &m->units[v];
    for (uint32_t i = 0; i < un->rd_n; i++) {
      uint32_t r = x->b->idx.a[un->rd_off + i];
      if (r != o && x->mark[r] != x->epoch) return 0;
    }
  }
  return 1;
}

static void nest(subb_t *x, uint32_t child, uint32_t root, uint64_t al) {
  nnmem__om_t *m = x->b->m;
  x->parent[child] = root;
  x->kids[root] = 1;
  x->events++;
  if (al > m->units[root].align) m->units[root].align = al;
}

/* Concat input X of op o at byte offset `at` into unit ut. */
static void concat_input(subb_t *x, uint32_t o, uint32_t t, uint64_t at,
                         uint32_t ut) {
  nnmem__om_t *m = x->b->m;
  nnmem_tensor_info_t xi;
  nnmem_graph_tensor(x->b->g, t, &xi);
  uint32_t ux = x->b->unit_of[t];
  if (xi.kind != NNMEM_TENSOR_ACTIVATION || ux == NNMEM__OM_NONE || ux == ut ||
      x->parent[ux] != NNMEM__OM_NONE)
    return;
  uint64_t raw = 0, al = 1;
  int io = 0;
  for (uint32_t c = ux; c != NNMEM__OM_NONE; c = x->sprev[c]) {
    raw = nnmem__max_u64(raw, m->units[c].raw);
    al = nnmem__max_u64(al, m->units[c].align);
    io |= m->units[c].has_in | m->units[c].has_out;
  }
  if (io || raw != xi.bytes || at % nnmem__max_u64(al, m->align)) return;
  if (x->dyn[ux] || !readers_before(x, ux, o)) {
    m->sub_dyn = 1, x->events++; /* nested in some orders only */
    return;
  }
  for (uint32_t c = ux; c != NNMEM__OM_NONE; c = x->sprev[c])
    nest(x, c, ut, al);
}

static void concat_static(subb_t *x, uint32_t o, const nnmem_op_info_t *oi) {
  nnmem_tensor_info_t to;
  if (oi->n_outputs != 1) return;
  nnmem_graph_tensor(x->b->g, oi->outputs[0], &to);
  uint32_t ut = x->b->unit_of[oi->outputs[0]];
  if (ut == NNMEM__OM_NONE || x->parent[ut] != NNMEM__OM_NONE ||
      nnmem__tiling_axis(x->b->g, &to, oi->inputs, oi->n_inputs) < 0)
    return;
  mark_ancestors(x, o);
  uint64_t rel = 0;
  for (uint32_t k = 0; k < oi->n_inputs; k++) {
    nnmem_tensor_info_t xi;
    nnmem_graph_tensor(x->b->g, oi->inputs[k], &xi);
    concat_input(x, o, oi->inputs[k], rel, ut);
    rel += xi.bytes;
  }
}

/* An in-place reader of unit u (other than o's ancestors) that may join
 * it: 0 none, 1 one joins in every order, 2 the join depends on the order.
 * u's chain is taken as it is in the order being checked (dyn: maybe). */
static int inplace_reader(const subb_t *x, uint32_t u, uint32_t o) {
  const nnmem__om_t *m = x->b->m;
  const nnmem__om_unit_t *un = &m->units[u];
  if (un->has_out) return 0;
  uint64_t raw = 0;
  int io = 0;
  for (uint32_t c = u; c != NNMEM__OM_NONE; c = x->sprev[c]) {
    raw = nnmem__max_u64(raw, m->units[c].raw);
    io |= m->units[c].has_in | m->units[c].has_out;
  }
  if (io && !x->dyn[u]) return 0;
  for (uint32_t i = 0; i < un->rd_n; i++) {
    uint32_t r = x->b->idx.a[un->rd_off + i];
    const nnmem__om_op_t *op = &m->ops[r];
    if (r == o || op->ip_in != u ||
        (o != NNMEM__OM_NONE && x->mark[r] == x->epoch))
      continue;
    if (op->ip_bytes > raw && !x->dyn[u]) continue;
    return un->rd_n == 1 && !x->dyn[u] ? 1 : 2;
  }
  return 0;
}

/* Tensors outs[0..n) of op o as views of input `in` at `base`, `base` +
 * outs[0]'s bytes, ... (a Split's outputs; a Slice is one part). */
static void view_static(subb_t *x, uint32_t o, uint32_t in,
                        const uint32_t *outs, uint32_t n, uint64_t base) {
  nnmem__om_t *m = x->b->m;
  uint32_t ui = x->b->unit_of[in];
  if (ui == NNMEM__OM_NONE || x->parent[ui] != NNMEM__OM_NONE) return;
  mark_ancestors(x, o);
  if (inplace_reader(x, ui, o)) { /* may write into I after the Split */
    m->sub_dyn = 1, x->events++;
    return;
  }
  if (x->kids[ui] && !members_read_before(x, ui, o)) {
    m->sub_dyn = 1,
    x->events++; /* an earlier view of I may be live at the Split */
    return;
  }
  uint64_t rel = base;
  for (uint32_t k = 0; k < n; k++) {
    nnmem_tensor_info_t xo;
    nnmem_graph_tensor(x->b->g, outs[k], &xo);
    uint64_t at = rel;
    rel += xo.bytes;
    uint32_t uo = x->b->unit_of[outs[k]];
    if (xo.kind != NNMEM_TENSOR_ACTIVATION || uo == NNMEM__OM_NONE ||
        uo == ui || x->parent[uo] != NNMEM__OM_NONE)
      continue;
    const nnmem__om_unit_t *un = &m->units[uo];
    if (un->has_in || un->has_out || un->raw != xo.bytes ||
        at % nnmem__max_u64(un->align, m->align))
      continue;
    x->epoch++; /* no ancestor exemption for O's readers */
    int ip = inplace_reader(x, uo, NNMEM__OM_NONE);
    if (ip) {
      m->sub_dyn |= ip == 2, x->events += ip == 2;
      continue;
    }
    nest(x, uo, ui, un->align);
  }
}

static void split_static(subb_t *x, uint32_t o, const nnmem_op_info_t *oi) {
  if (oi->n_inputs < 1) return;
  nnmem_tensor_info_t ii;
  nnmem_graph_tensor(x->b->g, oi->inputs[0], &ii);
  if (nnmem__tiling_axis(x->b->g, &ii, oi->outputs, oi->n_outputs) < 0) return;
  view_static(x, o, oi->inputs[0], oi->outputs, oi->n_outputs, 0);
}

static void slice_static(subb_t *x, uint32_t o, const nnmem_op_info_t *oi) {
  uint64_t at;
  if (nnmem__slice_offset(x->b->g, o, &at))
    view_static(x, o, oi->inputs[0], oi->outputs, 1, at);
}

/* Members of each group root (CSR into idx), top of every unit. */
static nnmem_status_t group_lists(subb_t *x) {
  nnmem__om_t *m = x->b->m;
  nnmem_status_t st = NNMEM_OK;
  for (uint32_t u = 0; u < m->n_units; u++)
    m->units[u].top =
        x->parent[u] == NNMEM__OM_NONE ? NNMEM__OM_NONE : top_of(x, u);
  for (uint32_t u = 0; u < m->n_units; u++)
    if (x->parent[u] != NNMEM__OM_NONE) { /* a member (roots: no parent) */
      m->units[m->units[u].top].top = m->units[u].top;
      m->units[m->units[u].top].gm_n++;
      m->n_members++;
    }
  size_t at = x->b->idx.n;
  for (uint32_t u = 0; u < m->n_units; u++) {
    nnmem__om_unit_t *un = &m->units[u];
    un->gm_off = (uint32_t)at;
    at += un->top == u ? un->gm_n : 0;
    un->gm_n = 0;
  }
  if (at > UINT32_MAX) return NNMEM_ERR_OVERFLOW;
  while (x->b->idx.n < at && st == NNMEM_OK)
    st = push(&x->b->idx, 0);
  for (uint32_t u = 0; u < m->n_units && st == NNMEM_OK; u++) {
    uint32_t g = m->units[u].top;
    if (g == NNMEM__OM_NONE || g == u) continue;
    nnmem__om_unit_t *r = &m->units[g];
    x->b->idx.a[r->gm_off + r->gm_n++] = u;
  }
  return st;
}

static nnmem_status_t sub_groups(omb_t *b, int sub, const uint8_t *skip) {
  nnmem__om_t *m = b->m;
  for (size_t u = 0; u < m->n_units; u++)
    m->units[u].top = NNMEM__OM_NONE;
  m->nests = calloc(m->n_ops + 1, 1);
  if (!m->nests) return NNMEM_ERR_NOMEM;
  if (!sub || b->no_reuse || !m->n_units) return NNMEM_OK;
  subb_t x;
  memset(&x, 0, sizeof x);
  x.b = b;
  x.sprev = malloc(m->n_units * sizeof *x.sprev);
  x.dyn = calloc(m->n_units, 1);
  x.parent = malloc(m->n_units * sizeof *x.parent);
  x.mark = calloc(m->n_ops + 1, sizeof *x.mark);
  x.stack = malloc((m->n_ops + 1) * sizeof *x.stack);
  x.kids = calloc(m->n_units, 1);
  nnmem_status_t st = NNMEM_OK;
  if (!x.sprev || !x.dyn || !x.parent || !x.mark || !x.stack || !x.kids)
    st = NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) {
    for (size_t u = 0; u < m->n_units; u++)
      x.parent[u] = NNMEM__OM_NONE;
    static_chains(&x);
    for (size_t s = 0; s < m->n_ops; s++) {
      uint32_t o = m->file_order[s];
      nnmem_op_info_t oi;
      nnmem_graph_op(b->g, o, &oi);
      if ((oi.flags & (NNMEM_OP_VIEW | NNMEM_OP_INPLACE)) || (skip && skip[o]))
        continue;
      size_t before = x.events;
      int kind = nnmem__subbuf_op(b->g, o, &oi);
      if (kind == NNMEM__SUBBUF_CONCAT)
        concat_static(&x, o, &oi);
      else if (kind == NNMEM__SUBBUF_SPLIT)
        split_static(&x, o, &oi);
      else if (kind == NNMEM__SUBBUF_SLICE)
        slice_static(&x, o, &oi);
      else
        continue;
      if (x.events != before) m->nests[o] = 1;
    }
    st = group_lists(&x);
  }
  for (size_t u = 0; u < m->n_units; u++) /* aligns may have been raised */
    m->units[u].rsize =
        round_size(m->units[u].raw, m->units[u].align, m->align);
  for (size_t o = 0; o < m->n_ops; o++) { /* inplace_of's test, again */
    const nnmem__om_op_t *op = &m->ops[o];
    if (op->ip_in == NNMEM__OM_NONE) continue;
    const nnmem__om_unit_t *u = &m->units[op->ip_in];
    const nnmem__om_unit_t *w = &m->units[op->ip_out];
    if (nnmem__max_u64(w->align, m->align) > nnmem__max_u64(u->align, m->align))
      m->may_grow = 1;
  }
  free(x.sprev), free(x.dyn), free(x.parent), free(x.mark), free(x.stack);
  free(x.kids);
  return st;
}

/* The unit whose bytes stand for u: its group root, or itself. */
static uint32_t key_of(const nnmem__om_t *m, uint32_t u) {
  return m->units[u].top == NNMEM__OM_NONE ? u : m->units[u].top;
}

/* The i-th unit of op's inputs then new units has the key of an earlier
 * one (new_off == in_off + in_n). */
static int key_seen(const nnmem__om_t *m, const nnmem__om_op_t *op,
                    uint32_t i) {
  uint32_t k = key_of(m, m->idx[op->in_off + i]);
  for (uint32_t j = 0; j < i; j++)
    if (key_of(m, m->idx[op->in_off + j]) == k) return 1;
  return 0;
}

/* Workspace, per-op lower bounds, the bytes before step 0; fails when the
 * sum of every size could overflow (then no sum in the search can). */
static nnmem_status_t totals(omb_t *b, nnmem_diag_t *diag) {
  nnmem__om_t *m = b->m;
  uint64_t all = 0;
  int over = 0;
  for (size_t u = 0; u < m->n_units; u++) {
    const nnmem__om_unit_t *un = &m->units[u];
    over |=
        un->rsize == UINT64_MAX || nnmem__add_overflow(all, un->rsize, &all);
    if (un->has_in) {
      m->m0 += un->rsize;
      if (!un->rd_n && !un->has_out) m->m0_unread += un->rsize;
    }
  }
  for (uint32_t o = 0; o < m->n_ops; o++) {
    nnmem_op_info_t oi;
    nnmem_graph_op(b->g, o, &oi);
    nnmem__om_op_t *op = &m->ops[o];
    op->ws = round_size(oi.workspace_bytes, 1, m->align);
    over |= op->ws == UINT64_MAX || nnmem__add_overflow(all, op->ws, &all);
    op->lb = op->ws; /* each buffer (group) read or written, once */
    for (uint32_t i = 0; i < op->in_n + op->new_n; i++) {
      uint32_t u = m->idx[op->in_off + i]; /* new_off == in_off + in_n */
      if (i >= op->in_n && u == op->ip_out && op->ip_in != NNMEM__OM_NONE &&
          (m->units[u].top == NNMEM__OM_NONE || m->units[u].top == u))
        continue;
      if (!key_seen(m, op, i)) op->lb += m->units[key_of(m, u)].rsize;
    }
  }
  if (over || all > UINT64_MAX / 4)
    return nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
                       "ordering: the graph's tensor bytes add up past 2^62");
  return NNMEM_OK;
}

nnmem_status_t nnmem__om_build(const nnmem_graph_t *g, uint64_t align,
                               int no_reuse, int sub, const uint8_t *skip,
                               nnmem__om_t *m, nnmem_diag_t *diag) {
  memset(m, 0, sizeof *m);
  m->align = align ? align : 1;
  m->n_ops = nnmem_graph_op_count(g);
  size_t nt = nnmem_graph_tensor_count(g);
  omb_t b;
  memset(&b, 0, sizeof b);
  b.g = g;
  b.m = m;
  b.no_reuse = no_reuse;
  m->file_order = malloc((m->n_ops + 1) * sizeof *m->file_order);
  m->ops = calloc(m->n_ops + 1, sizeof *m->ops);
  b.unit_of = malloc((nt + 1) * sizeof *b.unit_of);
  b.is_root = calloc(nt + 1, 1);
  uint32_t *stamp = calloc(nt + 1, sizeof *stamp);
  uint32_t *pstamp = calloc(m->n_ops + 1, sizeof *pstamp);
  nnmem_status_t st = NNMEM_OK;
  if (!m->file_order || !m->ops || !b.unit_of || !b.is_root || !stamp ||
      !pstamp)
    st = nnmem__diag(diag, NNMEM_ERR_NOMEM, "ordering: out of memory");
  if (st == NNMEM_OK) st = nnmem_graph_schedule(g, m->file_order, diag);
  if (st == NNMEM_OK) st = make_units(&b);
  if (st == NNMEM_OK) {
    unit_sizes(&b);
    st = op_lists(&b, stamp, pstamp);
  }
  if (st == NNMEM_OK) st = reverse_lists(&b);
  if (st == NNMEM_OK) st = sub_groups(&b, sub, skip);
  m->idx = b.idx.a;
  if (st == NNMEM_OK) chain_bounds(m);
  if (st == NNMEM_OK) st = totals(&b, diag);
  if (st != NNMEM_OK && diag && !diag->message[0])
    nnmem__diag(diag, st, "ordering: %s", nnmem_status_str(st));
  free(b.unit_of);
  free(b.is_root);
  free(stamp);
  free(pstamp);
  if (st != NNMEM_OK) nnmem__om_free(m);
  return st;
}

/* ---- the step function --------------------------------------------------*/

static int scheduled(const nnmem__om_view_t *v, const uint64_t *S,
                     uint32_t op) {
  uint32_t p = v->part[op];
  if (p != v->cur) return p < v->cur;
  return nnmem__om_bit(S, v->local[op]);
}

static int took(const nnmem__om_view_t *v, const uint64_t *T, uint32_t op) {
  uint32_t p = v->part[op];
  if (p != v->cur) return p < v->cur && v->tfix[op];
  return nnmem__om_bit(T, v->local[op]);
}

/* Every reader of unit u other than o ran. */
static int all_read(const nnmem__om_view_t *v, const uint64_t *S, uint32_t u,
                    uint32_t o) {
  const nnmem__om_unit_t *un = &v->m->units[u];
  for (uint32_t i = 0; i < un->rd_n; i++) {
    uint32_t r = v->m->idx[un->rd_off + i];
    if (r != o && !scheduled(v, S, r)) return 0;
  }
  return 1;
}

/* The buffer whose newest unit is u: max raw, max align, holds I/O. */
static void chain(const nnmem__om_view_t *v, const uint64_t *T, uint32_t u,
                  uint64_t *raw, uint64_t *align, int *io) {
  const nnmem__om_t *m = v->m;
  *raw = 0;
  *align = 1;
  *io = 0;
  for (;;) {
    const nnmem__om_unit_t *un = &m->units[u];
    *raw = nnmem__max_u64(*raw, un->raw);
    *align = nnmem__max_u64(*align, un->align);
    *io |= un->has_in | un->has_out;
    if (un->prod < 0 || !took(v, T, (uint32_t)un->prod)) return;
    u = m->ops[un->prod].ip_in;
  }
}

static uint64_t chain_bytes(const nnmem__om_view_t *v, const uint64_t *T,
                            uint32_t u) {
  uint64_t raw, al;
  int io;
  chain(v, T, u, &raw, &al, &io);
  return round_size(raw, al, v->m->align);
}

/* Forgets the decisions of the dead chain ending in u (this part only). */
static void chain_forget(const nnmem__om_view_t *v, uint64_t *T, uint32_t u) {
  const nnmem__om_t *m = v->m;
  for (;;) {
    int32_t p = m->units[u].prod;
    if (p < 0 || !took(v, T, (uint32_t)p)) return;
    if (v->part[p] == v->cur) nnmem__om_clear(T, v->local[p]);
    u = m->ops[p].ip_in;
  }
}

/* Sub-buffer groups: the root's bytes are live from the first production
 * of any unit of the group (a graph-input root: from the start) ... */
static int group_started(const nnmem__om_view_t *v, const uint64_t *S,
                         uint32_t g, uint32_t o) {
  const nnmem__om_t *m = v->m;
  const nnmem__om_unit_t *r = &m->units[g];
  for (uint32_t i = 0; i <= r->gm_n; i++) {
    uint32_t u = i < r->gm_n ? m->idx[r->gm_off + i] : g;
    int32_t p = m->units[u].prod;
    if (p < 0 || ((uint32_t)p != o && scheduled(v, S, (uint32_t)p))) return 1;
  }
  return 0;
}

/* ... to the last reader of any of them (the root produced). */
static int group_done(const nnmem__om_view_t *v, const uint64_t *S, uint32_t g,
                      uint32_t o) {
  const nnmem__om_t *m = v->m;
  const nnmem__om_unit_t *r = &m->units[g];
  if (r->has_out || (r->prod >= 0 && (uint32_t)r->prod != o &&
                     !scheduled(v, S, (uint32_t)r->prod)))
    return 0;
  for (uint32_t i = 0; i <= r->gm_n; i++)
    if (!all_read(v, S, i < r->gm_n ? m->idx[r->gm_off + i] : g, o)) return 0;
  return 1;
}

/* The groups op o touches, each once: starts the ones o starts, frees the
 * ones that end at o (not the in-place input that continues as output 0). */
static void om_groups(const nnmem__om_view_t *v, const uint64_t *S,
                      const uint64_t *T, uint32_t o, uint32_t keep,
                      uint64_t *live, uint64_t *dead, uint64_t *t_out) {
  const nnmem__om_t *m = v->m;
  const nnmem__om_op_t *op = &m->ops[o];
  for (uint32_t i = 0; i < op->in_n + op->new_n; i++) {
    uint32_t u = m->idx[op->in_off + i], g = m->units[u].top;
    if (g == NNMEM__OM_NONE || key_seen(m, op, i)) continue;
    int started = group_started(v, S, g, o);
    if (!started && m->units[g].prod != (int32_t)o)
      *live += m->units[g].rsize; /* o produces its first member */
    if (g == keep || !group_done(v, S, g, o)) continue;
    *dead += chain_bytes(v, T, g);
    if (t_out) chain_forget(v, t_out, g);
  }
}

void nnmem__om_step(const nnmem__om_view_t *v, const uint64_t *S,
                    const uint64_t *T, uint64_t m_before, uint32_t o,
                    nnmem__om_step_t *out, uint64_t *t_out) {
  const nnmem__om_t *m = v->m;
  const nnmem__om_op_t *op = &m->ops[o];
  uint64_t live = m_before + op->ws, dead = 0, jold = 0, jnew = 0;
  int join = 0;
  if (op->ip_in != NNMEM__OM_NONE && !m->units[op->ip_in].has_out &&
      (m->units[op->ip_in].top == NNMEM__OM_NONE ||
       m->units[op->ip_in].top == op->ip_in) &&
      all_read(v, S, op->ip_in, o)) { /* step 1 */
    uint64_t raw, al;
    int io;
    chain(v, T, op->ip_in, &raw, &al, &io);
    if (!io && op->ip_bytes <= raw) {
      const nnmem__om_unit_t *w = &m->units[op->ip_out];
      join = 1;
      jold = round_size(raw, al, m->align);
      jnew = round_size(nnmem__max_u64(raw, w->raw),
                        nnmem__max_u64(al, w->align), m->align);
    }
  }
  for (uint32_t i = 0; i < op->new_n; i++) { /* step 2 */
    uint32_t u = m->idx[op->new_off + i];
    const nnmem__om_unit_t *un = &m->units[u];
    if (un->top != NNMEM__OM_NONE &&
        (un->top != u || group_started(v, S, u, o)))
      continue; /* a member (om_groups) or the root of a started group */
    int joined = join && u == op->ip_out;
    live += joined ? jnew - jold : un->rsize;
    if (un->rd_n || un->has_out || un->top == u) continue;
    dead += joined ? jnew : un->rsize; /* nobody reads it: step 3 */
    if (joined) join = 2;              /* the whole chain dies */
  }
  for (uint32_t i = 0; i < op->in_n; i++) {
    uint32_t u = m->idx[op->in_off + i];
    if (join && u == op->ip_in) continue;            /* continues as W */
    if (m->units[u].top != NNMEM__OM_NONE) continue; /* om_groups */
    if (m->units[u].has_out || !all_read(v, S, u, o)) continue;
    dead += chain_bytes(v, T, u);
    if (t_out) chain_forget(v, t_out, u);
  }
  if (m->n_members)
    om_groups(v, S, T, o, join ? op->ip_in : NNMEM__OM_NONE, &live, &dead,
              t_out);
  if (v->first) dead += m->m0_unread;
  if (t_out && join == 1) nnmem__om_set(t_out, v->local[o]);
  if (t_out && join == 2) chain_forget(v, t_out, op->ip_in);
  out->live = live;
  out->after = live - op->ws - dead;
}

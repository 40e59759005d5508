/* onnx_ops_control.c - control flow (If, Loop, Scan) and the operator
 * registry.
 *
 * Bodies are nested scopes (parent = the node's scope), so names a body
 * reads from outside resolve to the enclosing values; those values are the
 * op's implicit inputs (onnx_infer.c) and stay live across it.
 * Steps for each body:
 *   1. build the scope; seed the body's inputs from the outer values
 *      (Loop: iteration number int64 [], condition bool [], carried state
 *      like the initial values; Scan: states, then scan slices without the
 *      scan axis);
 *   2. infer it; its outputs give the op's output types (Loop / Scan scan
 *      outputs gain the trip count / sequence length as a leading or
 *      `scan_output_axes` dim);
 *   3. plan the body (nnmem__onnx_body_bytes) once: its arena height is
 *      the op's workspace, reused by every iteration.
 * If with a constant condition takes the chosen branch only; otherwise the
 * output dims are the larger of the two branches' and the workspace the
 * larger body. A Loop whose trip count is unknown or whose condition is not
 * constant is sized by its trip-count input (an upper bound, reported as
 * data-dependent); without a known trip count its scan outputs stay
 * unresolved. Scan of opset 8 (batch-major, with sequence_lens) prepends
 * the batch (and sequence) dims instead. Loop-carried state takes the
 * body's type, with dims the body leaves unknown taken from the initial
 * value. Complexity: the bodies' inference and planning.
 * Thread-safety: pure. */
#include <string.h>

#include "import/onnx/onnx_internal.h"

typedef struct body {
  ox_scope_t *s;
  uint64_t bytes;
} body_t;

/* Steps 1-3 for one body; `seed` (nullable) gives body input i's type. */
static nnmem_status_t run_body(ox_ctx_t *c, ox_node_t *n,
                               const Onnx__GraphProto *g, ox_val_t **seed,
                               size_t n_seed, body_t *b) {
  memset(b, 0, sizeof *b);
  nnmem_status_t st =
      nnmem__onnx_scope_build(c, n->scope, g, n->scope->depth + 1, &b->s);
  if (st != NNMEM_OK) return st;
  for (size_t i = 0; i < g->n_input && i < n_seed; i++) {
    ox_val_t *v = g->input[i]->name
                      ? nnmem__onnx_scope_find(b->s, g->input[i]->name)
                      : NULL;
    if (!v || !seed[i]) continue;
    if (seed[i]->elem) v->elem = seed[i]->elem;
    if (seed[i]->rank >= 0)
      nnmem__onnx_set_shape(v, seed[i]->rank, seed[i]->dims);
  }
  for (size_t i = 0; i < b->s->n_vals; i++) /* unseeded inputs: declared */
    if (b->s->vals[i].is_input && b->s->vals[i].decl) {
      st = nnmem__onnx_apply_decl(c, &b->s->vals[i]);
      if (st != NNMEM_OK) return st;
    }
  st = nnmem__onnx_scope_infer(c, b->s);
  if (st == NNMEM_OK) st = nnmem__onnx_body_bytes(c, b->s, &b->bytes);
  return st;
}

static ox_val_t *body_out(const body_t *b, size_t i) {
  const Onnx__GraphProto *g = b->s->gp;
  if (i >= g->n_output || !g->output[i]->name) return NULL;
  return nnmem__onnx_scope_find(b->s, g->output[i]->name);
}

static void body_free(body_t *b) {
  nnmem__onnx_scope_free(b->s);
  b->s = NULL;
}

/* Larger of two shapes (for If outputs). */
static void merge_max(ox_val_t *dst, const ox_val_t *a, const ox_val_t *b) {
  if (!a && !b) return;
  if (!a || !b) {
    nnmem__onnx_copy_type(dst, a ? a : b);
    return;
  }
  dst->elem = a->elem ? a->elem : b->elem;
  if (a->rank != b->rank) {
    nnmem__onnx_copy_type(dst,
                          nnmem__onnx_numel(a) >= nnmem__onnx_numel(b) ? a : b);
    return;
  }
  dst->rank = a->rank;
  for (int32_t d = 0; d < a->rank; d++)
    dst->dims[d] = a->dims[d] < 0 || b->dims[d] < 0 ? -1
                   : a->dims[d] > b->dims[d]        ? a->dims[d]
                                                    : b->dims[d];
}

static nnmem_status_t infer_if(ox_ctx_t *c, ox_node_t *n) {
  const Onnx__GraphProto *tg, *eg;
  nnmem_status_t st = nnmem__onnx_attr_graph(c, n, "then_branch", &tg);
  if (st == NNMEM_OK) st = nnmem__onnx_attr_graph(c, n, "else_branch", &eg);
  if (st != NNMEM_OK) return st;
  if (!tg || !eg)
    return nnmem__onnx_node_error(c, n, NNMEM_ERR_PARSE,
                                  "needs then_branch and else_branch");
  ox_val_t *cond = OX_IN(n, 0);
  int pick = cond && cond->has_vals && cond->nvals == 1
                 ? (nnmem__onnx_int_at(cond, 0) != 0 ? 1 : 2)
                 : 0;
  body_t bt = {0}, be = {0};
  if (pick != 2) st = run_body(c, n, tg, NULL, 0, &bt);
  if (st == NNMEM_OK && pick != 1) st = run_body(c, n, eg, NULL, 0, &be);
  if (st == NNMEM_OK) {
    for (size_t k = 0; k < n->n_out; k++) {
      ox_val_t *o = OX_OUT(n, k);
      if (!o) continue;
      merge_max(o, bt.s ? body_out(&bt, k) : NULL,
                be.s ? body_out(&be, k) : NULL);
    }
    n->workspace = bt.bytes > be.bytes ? bt.bytes : be.bytes;
  }
  body_free(&bt);
  body_free(&be);
  return st;
}

/* Scan output k of shape `slice` with `len` inserted at `axis`. */
static void with_seq(ox_val_t *o, const ox_val_t *slice, int64_t len,
                     int64_t axis) {
  if (!o || !slice) return;
  o->elem = slice->elem;
  if (slice->rank < 0 || slice->rank >= OX_MAX_RANK) return;
  int32_t r = slice->rank + 1, a;
  if (!nnmem__onnx_axis(axis, r, &a)) a = 0;
  int64_t dims[OX_MAX_RANK];
  for (int32_t d = 0, k = 0; d < r; d++)
    dims[d] = d == a ? len : slice->dims[k++];
  nnmem__onnx_set_shape(o, r, dims);
}

/* A loop-carried state: the body's type, unknown dims taken from the
 * initial value. */
static void state_type(ox_val_t *o, const ox_val_t *body,
                       const ox_val_t *init) {
  if (!o) return;
  nnmem__onnx_copy_type(o, body && body->rank >= 0 ? body : init);
  if (!init || o->rank != init->rank) return;
  if (!o->elem) o->elem = init->elem;
  for (int32_t d = 0; d < o->rank; d++)
    if (o->dims[d] < 0) o->dims[d] = init->dims[d];
}

/* `v` without its first `drop` dims into `out`; `pre` dims of `v` kept in
 * front of `slice` give the op output (opset-8 Scan, batch-major). */
static void drop_front(const ox_val_t *v, int32_t drop, ox_val_t *out) {
  memset(out, 0, sizeof *out);
  out->elem = v->elem;
  out->rank = v->rank >= drop ? v->rank - drop : -1;
  for (int32_t d = 0; d < out->rank; d++)
    out->dims[d] = v->dims[d + drop];
}

static void add_front(ox_val_t *o, const ox_val_t *slice, const int64_t *pre,
                      int32_t n_pre) {
  if (!o || !slice) return;
  o->elem = slice->elem;
  if (slice->rank < 0 || slice->rank + n_pre > OX_MAX_RANK) return;
  int64_t dims[OX_MAX_RANK];
  for (int32_t d = 0; d < n_pre; d++)
    dims[d] = pre[d];
  for (int32_t d = 0; d < slice->rank; d++)
    dims[n_pre + d] = slice->dims[d];
  nnmem__onnx_set_shape(o, slice->rank + n_pre, dims);
}

static nnmem_status_t infer_loop(ox_ctx_t *c, ox_node_t *n) {
  const Onnx__GraphProto *g;
  nnmem_status_t st = nnmem__onnx_attr_graph(c, n, "body", &g);
  if (st != NNMEM_OK) return st;
  if (!g) return nnmem__onnx_node_error(c, n, NNMEM_ERR_PARSE, "needs a body");
  ox_val_t iter = {0}, cond = {0}, *seed[64] = {0};
  iter.elem = OX_INT64;
  cond.elem = OX_BOOL;
  seed[0] = &iter;
  seed[1] = &cond;
  size_t n_state = n->n_in > 2 ? n->n_in - 2 : 0;
  for (size_t i = 0; i < n_state && i + 2 < 64; i++)
    seed[i + 2] = n->in[i + 2];
  body_t b;
  st = run_body(c, n, g, seed, n_state + 2 < 64 ? n_state + 2 : 64, &b);
  if (st == NNMEM_OK) {
    ox_val_t *m = OX_IN(n, 0);
    int64_t trips = m && m->has_vals ? nnmem__onnx_int_at(m, 0) : -1;
    for (size_t k = 0; k < n->n_out; k++) {
      ox_val_t *o = OX_OUT(n, k), *bo = body_out(&b, k + 1);
      if (!o) continue;
      if (k < n_state) {
        state_type(o, bo, n->in[k + 2]);
        continue;
      }
      with_seq(o, bo, trips, 0);
      if (OX_IN(n, 1) && !OX_IN(n, 1)->is_const)
        nnmem__onnx_mark_data_dep(c, n, o);
    }
    n->workspace = b.bytes;
  }
  body_free(&b);
  return st;
}

/* Scan of opset 8: inputs [sequence_lens], states, scan inputs, all with a
 * leading batch axis; scan inputs are [batch, sequence, ...]. */
static nnmem_status_t infer_scan8(ox_ctx_t *c, ox_node_t *n,
                                  const Onnx__GraphProto *g, int64_t nsi) {
  if (n->n_in < 1 + (size_t)nsi || n->n_in > 64) return NNMEM_OK;
  size_t n_state = n->n_in - 1 - (size_t)nsi;
  ox_val_t parts[64], *seed[64] = {0};
  int64_t pre[2] = {-1, -1};
  for (size_t i = 1; i < n->n_in; i++) {
    ox_val_t *x = n->in[i];
    if (!x) continue;
    int scan = i > n_state;
    drop_front(x, scan ? 2 : 1, &parts[i - 1]);
    seed[i - 1] = &parts[i - 1];
    if (x->rank >= 1) pre[0] = x->dims[0];
    if (scan && x->rank >= 2) pre[1] = x->dims[1];
  }
  body_t b;
  nnmem_status_t st = run_body(c, n, g, seed, n->n_in - 1, &b);
  if (st == NNMEM_OK) {
    for (size_t k = 0; k < n->n_out; k++)
      add_front(OX_OUT(n, k), body_out(&b, k), pre, k < n_state ? 1 : 2);
    n->workspace = b.bytes;
  }
  body_free(&b);
  return st;
}

static nnmem_status_t infer_scan(ox_ctx_t *c, ox_node_t *n) {
  const Onnx__GraphProto *g;
  int64_t nsi;
  const int64_t *in_ax, *out_ax;
  size_t n_in_ax, n_out_ax;
  nnmem_status_t st = nnmem__onnx_attr_graph(c, n, "body", &g);
  if (st == NNMEM_OK)
    st = nnmem__onnx_attr_int(c, n, "num_scan_inputs", 0, &nsi);
  if (st == NNMEM_OK)
    st = nnmem__onnx_attr_ints(c, n, "scan_input_axes", &in_ax, &n_in_ax);
  if (st == NNMEM_OK)
    st = nnmem__onnx_attr_ints(c, n, "scan_output_axes", &out_ax, &n_out_ax);
  if (st != NNMEM_OK) return st;
  if (!g) return nnmem__onnx_node_error(c, n, NNMEM_ERR_PARSE, "needs a body");
  if (nsi < 0 || (size_t)nsi > n->n_in) return NNMEM_OK;
  if (n->opset < 9) return infer_scan8(c, n, g, nsi);
  size_t n_state = n->n_in - (size_t)nsi;
  ox_val_t slices[32], *seed[64] = {0};
  int64_t seq = -1;
  for (size_t i = 0; i < n->n_in && i < 64; i++) {
    seed[i] = n->in[i];
    if (i < n_state || i - n_state >= 32 || !n->in[i] || n->in[i]->rank < 1)
      continue;
    ox_val_t *x = n->in[i], *sl = &slices[i - n_state];
    int32_t a;
    if (!nnmem__onnx_axis(n_in_ax ? in_ax[(i - n_state) % n_in_ax] : 0, x->rank,
                          &a))
      a = 0;
    memset(sl, 0, sizeof *sl);
    sl->elem = x->elem;
    sl->rank = x->rank - 1;
    for (int32_t d = 0, k = 0; d < x->rank; d++)
      if (d != a) sl->dims[k++] = x->dims[d];
    seq = x->dims[a];
    seed[i] = sl;
  }
  body_t b;
  st = run_body(c, n, g, seed, n->n_in < 64 ? n->n_in : 64, &b);
  if (st == NNMEM_OK) {
    for (size_t k = 0; k < n->n_out; k++) {
      ox_val_t *o = OX_OUT(n, k), *bo = body_out(&b, k);
      if (k < n_state)
        state_type(o, bo, n->in[k]);
      else
        with_seq(o, bo, seq, n_out_ax ? out_ax[(k - n_state) % n_out_ax] : 0);
    }
    n->workspace = b.bytes;
  }
  body_free(&b);
  return st;
}

const ox_op_t nnmem__onnx_ops_control[] = {{"If", infer_if, OX_CONTROL},
                                           {"Loop", infer_loop, OX_CONTROL},
                                           {"Scan", infer_scan, OX_CONTROL},
                                           {NULL, NULL, 0}};

/* ---- registry ------------------------------------------------------------*/

static const ox_op_t *const families[] = {
    nnmem__onnx_ops_elem,    nnmem__onnx_ops_nn,   nnmem__onnx_ops_shape,
    nnmem__onnx_ops_control, nnmem__onnx_ops_misc, nnmem__onnx_ops_legacy};

const ox_op_t *nnmem__onnx_find_op(const char *type) {
  if (!type) return NULL;
  for (size_t f = 0; f < sizeof families / sizeof *families; f++)
    for (const ox_op_t *o = families[f]; o->type; o++)
      if (strcmp(o->type, type) == 0) return o;
  return NULL;
}

size_t nnmem_onnx_supported_count(void) {
  size_t n = 0;
  for (size_t f = 0; f < sizeof families / sizeof *families; f++)
    for (const ox_op_t *o = families[f]; o->type; o++)
      n++;
  return n;
}

const char *nnmem_onnx_supported_name(size_t i) {
  for (size_t f = 0; f < sizeof families / sizeof *families; f++)
    for (const ox_op_t *o = families[f]; o->type; o++)
      if (i-- == 0) return o->type;
  return NULL;
}

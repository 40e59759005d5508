/* liveness.c - liveness analysis: a graph and an operator order become a
 * static allocation problem (one buffer per group of aliased tensors and one
 * per op workspace) plus a separate read-only weight region.
 *
 * Algorithm:
 *   1. Validate the graph (nnmem_graph_check) and the order: a permutation of
 *      the op ids in which every producer comes before its readers
 *      (NULL order = nnmem_graph_schedule). pos[op] = its step.
 *   2. Tensor lifetimes. A tensor produced at step p lives from p, a graph
 *      input from 0; its end is 1 + the last step that reads it, at least
 *      first + 1; a graph output lives to the end (= number of steps).
 *   3. Weight region: weights and constants in id order, each at an offset
 *      and with a size rounded up to a = max(tensor align, cfg->alignment).
 *   4. Buffers, visiting the steps in order. Graph inputs get their buffers
 *      first. Output 0 of a VIEW op joins the buffer of input view_input;
 *      output 0 of an INPLACE op joins the buffer of input inplace_input
 *      when that buffer dies at this step (its last step is this one and it
 *      holds no graph input / output) and the output fits; any other output
 *      gets a new buffer; workspace bytes give a buffer "<op>:workspace"
 *      live on [step, step + 1). A buffer's size / align is the max over its
 *      tensors, its lifetime the union of theirs. A view of a weight or
 *      constant lives in the weight region (no arena bytes).
 *      Aliasing only ever adds a fresh tensor to an existing buffer, so the
 *      union-find degenerates to one buffer index per tensor (O(1) finds).
 *      Soundness of "dies here": a buffer can only gain a new view through a
 *      later reader of one of its tensors, whose last use is then > step.
 *   5. Concat-into-output and split views (concat.c), unless turned off:
 *      buffers become sub-buffers of a Concat output / Split or Slice
 *      input.
 *   6. With cfg->no_reuse every tensor gets its own buffer.
 *
 *       steps ->   0    1    2    3
 *       A (input) [====)                A -> op1 -> B -> op2 -> C (output)
 *       B              [=========)      B -> op3 -> D (output)
 *       C                   [=======)   B stays live until op3 ran.
 *       D                        [==)
 *
 * Invariants: every non-weight tensor maps to exactly one buffer; a buffer's
 * [first, last) contains each of its tensors' lifetimes; in-place never
 * joins a buffer that is live after the step.
 * Complexity: O((V + E) log V) for the schedule, O(V + E) for the rest.
 * Thread-safety: reads the graph only; the result is immutable. */
#include <stdio.h>
#include <string.h>

#include "analysis/liveness_internal.h"
#include "common/util.h"

void nnmem_liveness_config_init(nnmem_liveness_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

void nnmem_liveness_destroy(nnmem_liveness_t *l) {
  if (!l) return;
  nnmem_problem_destroy(l->problem);
  free(l->order);
  free(l->kept_out);
  free(l->tensors);
  free(l->kinds);
  free(l);
}

static int is_weight_kind(nnmem_tensor_kind_t k) {
  return k == NNMEM_TENSOR_WEIGHT || k == NNMEM_TENSOR_CONSTANT;
}

/* ---- step 1: the order --------------------------------------------------*/

static nnmem_status_t order_check(builder_t *b, nnmem_diag_t *diag) {
  const nnmem_graph_t *g = b->g;
  size_t n = (size_t)b->l->steps;
  for (size_t s = 0; s < n; s++)
    b->pos[s] = UINT32_MAX;
  for (size_t s = 0; s < n; s++) {
    uint32_t o = b->l->order[s];
    if (o >= n)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "order[%zu] = %u is not an op (graph has %zu ops)", s,
                         o, n);
    nnmem_op_info_t oi;
    nnmem_graph_op(g, o, &oi);
    if (b->pos[o] != UINT32_MAX)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "op '%s' appears twice in the order (steps %u and "
                         "%zu)",
                         oi.name, b->pos[o], s);
    b->pos[o] = (uint32_t)s;
  }
  for (size_t s = 0; s < n; s++) {
    nnmem_op_info_t oi;
    nnmem_graph_op(g, b->l->order[s], &oi);
    for (uint32_t i = 0; i < oi.n_inputs; i++) {
      nnmem_tensor_info_t ti;
      nnmem_graph_tensor(g, oi.inputs[i], &ti);
      if (ti.producer < 0 || b->pos[ti.producer] < s) continue;
      nnmem_op_info_t pi;
      nnmem_graph_op(g, (uint32_t)ti.producer, &pi);
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "order is not topological: op '%s' at step %zu reads "
                         "tensor '%s' produced by op '%s' at step %u",
                         oi.name, s, ti.name, pi.name, b->pos[ti.producer]);
    }
  }
  return NNMEM_OK;
}

static nnmem_status_t order_make(builder_t *b, nnmem_diag_t *diag) {
  size_t n = (size_t)b->l->steps;
  if (b->cfg.no_concat_ops) { /* kept with the result (plan JSON) */
    b->l->kept_out = malloc(n ? n : 1);
    if (!b->l->kept_out)
      return nnmem__diag(diag, NNMEM_ERR_NOMEM,
                         "out of memory analyzing tensor lifetimes");
    if (n) memcpy(b->l->kept_out, b->cfg.no_concat_ops, n);
  }
  b->l->order = malloc((n ? n : 1) * sizeof *b->l->order);
  b->pos = malloc((n ? n : 1) * sizeof *b->pos);
  if (!b->l->order || !b->pos)
    return nnmem__diag(diag, NNMEM_ERR_NOMEM,
                       "out of memory analyzing tensor lifetimes");
  if (b->cfg.order) {
    if (n) memcpy(b->l->order, b->cfg.order, n * sizeof *b->l->order);
    return order_check(b, diag);
  }
  nnmem_status_t st = nnmem_graph_schedule(b->g, b->l->order, diag);
  if (st != NNMEM_OK) return st;
  for (size_t s = 0; s < n; s++)
    b->pos[b->l->order[s]] = (uint32_t)s;
  return NNMEM_OK;
}

/* ---- steps 2 and 3: lifetimes and the weight region ---------------------*/

static nnmem_status_t lifetimes(builder_t *b, nnmem_diag_t *diag) {
  const nnmem_graph_t *g = b->g;
  nnmem_liveness_t *l = b->l;
  uint64_t steps = l->steps, cursor = 0;
  for (uint32_t t = 0; t < l->n_tensors; t++) {
    nnmem_tensor_info_t ti;
    nnmem_graph_tensor(g, t, &ti);
    nnmem_tensor_live_t *tl = &l->tensors[t];
    tl->buffer = NNMEM_NO_BUFFER;
    if (is_weight_kind(ti.kind)) {
      uint64_t a = nnmem__max_u64(ti.align, b->cfg.alignment), sz;
      if (nnmem__align_up(cursor, a, &tl->weight_offset) ||
          nnmem__align_up(ti.bytes, a, &sz) ||
          nnmem__add_overflow(tl->weight_offset, sz, &cursor))
        return nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
                           "weight region overflows 64 bits at tensor '%s'",
                           ti.name);
      tl->first = 0;
      tl->last = steps;
      b->in_weights[t] = 1;
      continue;
    }
    tl->first = ti.producer >= 0 ? b->pos[ti.producer] : 0;
    tl->last = tl->first + 1;
    if (ti.kind == NNMEM_TENSOR_OUTPUT && steps > tl->last) tl->last = steps;
  }
  l->weight_bytes = cursor;
  for (uint64_t s = 0; s < steps; s++) {
    nnmem_op_info_t oi;
    nnmem_graph_op(g, l->order[s], &oi);
    for (uint32_t i = 0; i < oi.n_inputs; i++) {
      nnmem_tensor_live_t *tl = &l->tensors[oi.inputs[i]];
      if (!b->in_weights[oi.inputs[i]] && tl->last < s + 1) tl->last = s + 1;
    }
  }
  return NNMEM_OK;
}

/* ---- step 4: buffers ----------------------------------------------------*/

static nnmem_status_t buf_new(builder_t *b, lbuf_t **out) {
  nnmem_status_t st = nnmem__grow((void **)&b->bufs, &b->cap_bufs,
                                  b->n_bufs + 1, sizeof *b->bufs);
  if (st != NNMEM_OK) return st;
  if (b->n_bufs >= UINT32_MAX - 1) return NNMEM_ERR_OVERFLOW;
  *out = &b->bufs[b->n_bufs++];
  memset(*out, 0, sizeof **out);
  return NNMEM_OK;
}

/* Puts tensor t into buffer `bi` (growing size, align and lifetime). */
static void buf_join(builder_t *b, uint32_t bi, uint32_t t,
                     const nnmem_tensor_info_t *ti) {
  lbuf_t *bf = &b->bufs[bi];
  const nnmem_tensor_live_t *tl = &b->l->tensors[t];
  if (ti->bytes > bf->size) bf->size = ti->bytes;
  if (ti->align > bf->align) bf->align = ti->align;
  if (tl->first < bf->first) bf->first = tl->first;
  if (tl->last > bf->last) bf->last = tl->last;
  if (ti->kind == NNMEM_TENSOR_INPUT || ti->kind == NNMEM_TENSOR_OUTPUT)
    bf->has_io = 1;
  b->l->tensors[t].buffer = bi;
}

static nnmem_status_t buf_own(builder_t *b, uint32_t t,
                              const nnmem_tensor_info_t *ti) {
  lbuf_t *bf;
  nnmem_status_t st = buf_new(b, &bf);
  if (st != NNMEM_OK) return st;
  bf->tensor = t;
  bf->align = 1;
  bf->first = b->l->tensors[t].first;
  bf->last = b->l->tensors[t].last;
  bf->kind = ti->kind == NNMEM_TENSOR_WORKSPACE ? NNMEM_BUFFER_WORKSPACE
                                                : NNMEM_BUFFER_ACTIVATION;
  bf->last_write = b->l->tensors[t].first;
  buf_join(b, (uint32_t)(b->n_bufs - 1), t, ti);
  return NNMEM_OK;
}

/* Tries to alias output 0 (`t`) of op `oi` at step s with one of its inputs;
 * returns 1 when it did. */
static int try_alias(builder_t *b, const nnmem_op_info_t *oi, uint64_t s,
                     uint32_t t, const nnmem_tensor_info_t *ti) {
  int view = (oi->flags & NNMEM_OP_VIEW) != 0;
  if (b->cfg.no_reuse || !(oi->flags & (NNMEM_OP_VIEW | NNMEM_OP_INPLACE)))
    return 0;
  uint32_t src = oi->inputs[view ? oi->view_input : oi->inplace_input];
  nnmem_tensor_info_t si;
  nnmem_graph_tensor(b->g, src, &si);
  if (ti->kind == NNMEM_TENSOR_WORKSPACE || si.kind == NNMEM_TENSOR_WORKSPACE)
    return 0;
  if (b->in_weights[src]) {
    if (!view) return 0;
    b->in_weights[t] = 1; /* a view of a weight stays in the weight region */
    b->l->tensors[t].weight_offset = b->l->tensors[src].weight_offset;
    return 1;
  }
  uint32_t bi = b->l->tensors[src].buffer;
  const lbuf_t *bf = &b->bufs[bi];
  if (!view && (bf->last != s + 1 || bf->has_io || ti->bytes > bf->size))
    return 0;
  if (!view) b->bufs[bi].last_write = s;
  buf_join(b, bi, t, ti);
  return 1;
}

static nnmem_status_t workspace_buf(builder_t *b, uint32_t op, uint64_t s,
                                    uint64_t bytes) {
  lbuf_t *bf;
  nnmem_status_t st = buf_new(b, &bf);
  if (st != NNMEM_OK) return st;
  bf->tensor = UINT32_MAX;
  bf->op = op;
  bf->size = bytes;
  bf->align = 1;
  bf->first = s;
  bf->last = s + 1;
  bf->last_write = s;
  bf->kind = NNMEM_BUFFER_WORKSPACE;
  return NNMEM_OK;
}

static nnmem_status_t build_buffers(builder_t *b) {
  const nnmem_graph_t *g = b->g;
  nnmem_status_t st = NNMEM_OK;
  for (uint32_t t = 0; t < b->l->n_tensors && st == NNMEM_OK; t++) {
    nnmem_tensor_info_t ti;
    nnmem_graph_tensor(g, t, &ti);
    if (ti.kind == NNMEM_TENSOR_INPUT) st = buf_own(b, t, &ti);
  }
  for (uint64_t s = 0; s < b->l->steps && st == NNMEM_OK; s++) {
    uint32_t o = b->l->order[s];
    nnmem_op_info_t oi;
    nnmem_graph_op(g, o, &oi);
    for (uint32_t k = 0; k < oi.n_outputs && st == NNMEM_OK; k++) {
      uint32_t t = oi.outputs[k];
      nnmem_tensor_info_t ti;
      nnmem_graph_tensor(g, t, &ti);
      if (k == 0 && try_alias(b, &oi, s, t, &ti))
        b->l->aliased++;
      else
        st = buf_own(b, t, &ti);
    }
    if (st == NNMEM_OK && oi.workspace_bytes)
      st = workspace_buf(b, o, s, oi.workspace_bytes);
  }
  return st;
}

/* The id of a workspace buffer: "<op>:workspace", made unique against
 * tensor names (which are the other buffer ids) with a "#n" suffix. */
static nnmem_status_t workspace_id(const nnmem_graph_t *g, const char *op,
                                   char **out) {
  size_t cap = strlen(op) + 32;
  char *id = malloc(cap);
  if (!id) return NNMEM_ERR_NOMEM;
  snprintf(id, cap, "%s:workspace", op);
  for (unsigned n = 2; nnmem_graph_find_tensor(g, id, NULL) == NNMEM_OK; n++)
    snprintf(id, cap, "%s:workspace#%u", op, n);
  *out = id;
  return NNMEM_OK;
}

static nnmem_status_t emit_problem(builder_t *b, nnmem_diag_t *diag) {
  nnmem_liveness_t *l = b->l;
  nnmem_status_t st = nnmem_problem_create(&l->problem);
  if (st == NNMEM_OK && b->n_bufs) {
    l->kinds = malloc(b->n_bufs * sizeof *l->kinds);
    if (!l->kinds) st = NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < b->n_bufs && st == NNMEM_OK; i++) {
    const lbuf_t *bf = &b->bufs[i];
    char *ws = NULL;
    const char *id;
    if (bf->tensor == UINT32_MAX) {
      nnmem_op_info_t oi;
      nnmem_graph_op(b->g, bf->op, &oi);
      st = workspace_id(b->g, oi.name, &ws);
      id = ws;
    } else {
      nnmem_tensor_info_t ti;
      nnmem_graph_tensor(b->g, bf->tensor, &ti);
      id = ti.name;
    }
    if (st == NNMEM_OK)
      st = nnmem_problem_add(l->problem, id, bf->size, bf->align, bf->first,
                             bf->last, NULL);
    if (st != NNMEM_OK)
      nnmem__diag(diag, st, "buffer '%s': %s", id ? id : "?",
                  nnmem_status_str(st));
    free(ws);
    l->kinds[i] = bf->kind;
  }
  for (size_t i = 0; i < b->n_bufs && st == NNMEM_OK; i++)
    if (b->bufs[i].parent)
      st = nnmem_problem_set_parent(l->problem, i, b->bufs[i].parent - 1,
                                    b->bufs[i].rel);
  if (st != NNMEM_OK && diag && !diag->message[0])
    nnmem__diag(diag, st, "analyzing tensor lifetimes: %s",
                nnmem_status_str(st));
  return st;
}

/* ---- entry --------------------------------------------------------------*/

static nnmem_status_t config_read(const nnmem_liveness_config_t *cfg,
                                  nnmem_liveness_config_t *out,
                                  nnmem_diag_t *diag) {
  nnmem_liveness_config_init(out);
  if (cfg) {
    size_t n = cfg->size && cfg->size < sizeof *out ? cfg->size : sizeof *out;
    memcpy(out, cfg, n);
  }
  if (!out->alignment) out->alignment = 1;
  if (!nnmem__is_pow2(out->alignment))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "alignment %llu is not a power of two",
                       (unsigned long long)out->alignment);
  return NNMEM_OK;
}

static nnmem_status_t analyze(builder_t *b, nnmem_diag_t *diag) {
  nnmem_status_t st = nnmem_graph_check(b->g, diag);
  if (st != NNMEM_OK) return st;
  nnmem_liveness_t *l = b->l;
  l->steps = nnmem_graph_op_count(b->g);
  l->n_tensors = nnmem_graph_tensor_count(b->g);
  l->tensors = calloc(l->n_tensors ? l->n_tensors : 1, sizeof *l->tensors);
  b->in_weights = calloc(l->n_tensors ? l->n_tensors : 1, 1);
  if (!l->tensors || !b->in_weights)
    return nnmem__diag(diag, NNMEM_ERR_NOMEM,
                       "out of memory analyzing tensor lifetimes");
  st = order_make(b, diag);
  if (st == NNMEM_OK) st = lifetimes(b, diag);
  if (st != NNMEM_OK) return st;
  st = build_buffers(b);
  if (st == NNMEM_OK && !b->cfg.no_reuse && !b->cfg.no_concat_into_output)
    st = nnmem__liveness_concat(b);
  if (st != NNMEM_OK)
    return nnmem__diag(diag, st, "analyzing tensor lifetimes: %s",
                       nnmem_status_str(st));
  return emit_problem(b, diag);
}

nnmem_status_t nnmem_liveness_analyze(const nnmem_graph_t *g,
                                      const nnmem_liveness_config_t *cfg,
                                      nnmem_liveness_t **out,
                                      nnmem_diag_t *diag) {
  if (diag) diag->message[0] = 0;
  if (!g || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "liveness: NULL argument");
  *out = NULL;
  builder_t b;
  memset(&b, 0, sizeof b);
  b.g = g;
  nnmem_status_t st = config_read(cfg, &b.cfg, diag);
  if (st != NNMEM_OK) return st;
  b.l = calloc(1, sizeof *b.l);
  if (!b.l)
    return nnmem__diag(diag, NNMEM_ERR_NOMEM,
                       "out of memory analyzing tensor lifetimes");
  st = analyze(&b, diag);
  free(b.pos);
  free(b.bufs);
  free(b.in_weights);
  if (st != NNMEM_OK) {
    nnmem_liveness_destroy(b.l);
    return st;
  }
  *out = b.l;
  return NNMEM_OK;
}

/* ---- read-back ----------------------------------------------------------*/

const nnmem_problem_t *nnmem_liveness_problem(const nnmem_liveness_t *l) {
  return l ? l->problem : NULL;
}

uint64_t nnmem_liveness_steps(const nnmem_liveness_t *l) {
  return l ? l->steps : 0;
}

const uint32_t *nnmem_liveness_order(const nnmem_liveness_t *l) {
  return l ? l->order : NULL;
}

nnmem_status_t nnmem_liveness_tensor(const nnmem_liveness_t *l, uint32_t tensor,
                                     nnmem_tensor_live_t *out) {
  if (!l || !out) return NNMEM_ERR_INVALID;
  if (tensor >= l->n_tensors) return NNMEM_ERR_NOT_FOUND;
  *out = l->tensors[tensor];
  return NNMEM_OK;
}

nnmem_buffer_kind_t nnmem_liveness_buffer_kind(const nnmem_liveness_t *l,
                                               size_t buffer) {
  if (!l || !l->kinds || buffer >= nnmem_problem_count(l->problem))
    return NNMEM_BUFFER_ACTIVATION;
  return l->kinds[buffer];
}

uint64_t nnmem_liveness_weight_bytes(const nnmem_liveness_t *l) {
  return l ? l->weight_bytes : 0;
}

size_t nnmem_liveness_aliased_tensors(const nnmem_liveness_t *l) {
  return l ? l->aliased : 0;
}

size_t nnmem_liveness_sub_buffers(const nnmem_liveness_t *l) {
  return l ? l->sub_buffers : 0;
}

uint64_t nnmem_liveness_sub_bytes(const nnmem_liveness_t *l) {
  return l ? l->sub_bytes : 0;
}

const uint8_t *nnmem_liveness_concat_kept_out(const nnmem_liveness_t *l) {
  return l ? l->kept_out : NULL;
}

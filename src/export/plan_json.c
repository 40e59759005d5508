/* plan_json.c - writes a planned graph as JSON: where every buffer and
 * every tensor lives.
 *
 *   {"model": "small_cnn", "strategy": "greedy-size", "alignment": 64,
 *    "arena_height": 851968, "weight_bytes": 20904,
 *    "order": ["conv1", "relu1", ...],
 *    "concat_kept_out": ["cat3"],  (only when some op is kept out)
 *    "buffers": [{"id": "conv1.out", "offset": 0, "size": 65536,
 *                 "first": 0, "last": 2, "kind": "activation"}, ...],
 *    "tensors": [{"name": "conv1.w", "kind": "weight", "region": "weights",
 *                 "buffer": null, "offset": 0, "size": 1728,
 *                 "first": 0, "last": 10}, ...]}
 *
 * Algorithm:
 *   1. check the plan belongs to the liveness problem (same count);
 *   2. the operator order the lifetimes count steps in (op names, step 0
 *      first: nnmem_liveness_order), then the buffers in problem order:
 *      id, plan offset, size, lifetime, kind;
 *   3. tensors in graph order: a tensor without a buffer (weights,
 *      constants and views of them) is in region "weights" at its weight
 *      offset; any other is in region "arena" at its buffer's plan offset;
 *   4. build the text in memory with the one JSON writer (exact 64-bit
 *      integers, no doubles) and write it atomically.
 * A bare problem (a MiniMalloc CSV) has the same document without "model",
 * "weight_bytes", "tensors" and the buffers' "kind":
 *   {"strategy", "alignment", "arena_height",
 *    "buffers": [{"id", "offset", "size", "first", "last"}]}
 * so `nnmem verify PROBLEM plan.json` reads both the same way. Either form
 * adds to a buffer, only when they apply: "gaps" ([[first,
 * last], ...], steps in which it holds nothing), "parent" (the id of the
 * buffer it lies inside) and "parent_offset" (bytes from its start).
 *
 * Complexity: O(buffers + tensors). Thread-safety: each call is
 * independent; the inputs are only read. */
#include <stdio.h>
#include <stdlib.h>

#include "export/export_json.h"

/* The id of buffer i, or its index as text when it has none. */
static const char *buffer_id(const nnmem_problem_t *p, size_t i, char *num,
                             size_t cap) {
  const char *id = nnmem_problem_id(p, i);
  if (id) return id;
  snprintf(num, cap, "%zu", i);
  return num;
}

/* Optional per-buffer keys: "gaps": [[first, last], ...]
 * when it has gaps, "parent" (the parent's id) and "parent_offset" when it
 * is a sub-buffer. */
static void put_extras(nnmem__jw_t *w, const nnmem_problem_t *p, size_t i) {
  const nnmem_interval_t *g;
  size_t ng = nnmem_problem_gaps(p, i, &g), q;
  uint64_t rel;
  if (ng) {
    nnmem__jw_key(w, "gaps");
    nnmem__jw_array(w);
    for (size_t k = 0; k < ng; k++) {
      nnmem__jw_array(w);
      nnmem__jw_u64(w, g[k].first);
      nnmem__jw_u64(w, g[k].last);
      nnmem__jw_end(w);
    }
    nnmem__jw_end(w);
  }
  if (nnmem_problem_parent(p, i, &q, &rel) == NNMEM_OK) {
    char num[24];
    nnmem__jw_kv_string(w, "parent", buffer_id(p, q, num, sizeof num));
    nnmem__jw_kv_u64(w, "parent_offset", rel);
  }
}

/* "buffers": [...]; `l` may be NULL (a bare problem: no "kind"). */
static void put_buffers(nnmem__jw_t *w, const nnmem_problem_t *p,
                        const nnmem_liveness_t *l, const uint64_t *off) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t n = nnmem_problem_count(p);
  nnmem__jw_key(w, "buffers");
  nnmem__jw_array(w);
  for (size_t i = 0; i < n; i++) {
    char num[24];
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "id", buffer_id(p, i, num, sizeof num));
    nnmem__jw_kv_u64(w, "offset", off[i]);
    nnmem__jw_kv_u64(w, "size", b[i].size);
    nnmem__jw_kv_u64(w, "first", b[i].first);
    nnmem__jw_kv_u64(w, "last", b[i].last);
    put_extras(w, p, i);
    if (l)
      nnmem__jw_kv_string(
          w, "kind",
          nnmem_liveness_buffer_kind(l, i) == NNMEM_BUFFER_WORKSPACE
              ? "workspace"
              : "activation");
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
}

/* "order": the op names in step order. */
static nnmem_status_t put_order(nnmem__jw_t *w, const nnmem_graph_t *g,
                                const nnmem_liveness_t *l) {
  const uint32_t *order = nnmem_liveness_order(l);
  uint64_t steps = nnmem_liveness_steps(l);
  if (steps != nnmem_graph_op_count(g)) return NNMEM_ERR_INVALID;
  nnmem__jw_key(w, "order");
  nnmem__jw_array(w);
  for (uint64_t s = 0; s < steps; s++) {
    nnmem_op_info_t oi;
    if (nnmem_graph_op(g, order[s], &oi) != NNMEM_OK) return NNMEM_ERR_INVALID;
    nnmem__jw_string(w, oi.name);
  }
  nnmem__jw_end(w);
  return NNMEM_OK;
}

/* "concat_kept_out": the Concat / Split ops kept out of concat-into-output
 * (nnmem_liveness_config_t.no_concat_ops), only when there are some. */
static void put_kept_out(nnmem__jw_t *w, const nnmem_graph_t *g,
                         const nnmem_liveness_t *l) {
  const uint8_t *k = nnmem_liveness_concat_kept_out(l);
  size_t n = nnmem_graph_op_count(g), any = 0;
  for (size_t o = 0; k && o < n; o++)
    any += k[o] != 0;
  if (!any) return;
  nnmem__jw_key(w, "concat_kept_out");
  nnmem__jw_array(w);
  for (uint32_t o = 0; o < n; o++) {
    nnmem_op_info_t oi;
    if (k[o] && nnmem_graph_op(g, o, &oi) == NNMEM_OK)
      nnmem__jw_string(w, oi.name);
  }
  nnmem__jw_end(w);
}

/* One tensor record; returns NNMEM_ERR_INVALID when l and g disagree. */
static nnmem_status_t put_tensor(nnmem__jw_t *w, const nnmem_graph_t *g,
                                 const nnmem_liveness_t *l, const uint64_t *off,
                                 size_t n_buf, uint32_t i) {
  nnmem_tensor_info_t ti;
  nnmem_tensor_live_t tl;
  if (nnmem_graph_tensor(g, i, &ti) != NNMEM_OK ||
      nnmem_liveness_tensor(l, i, &tl) != NNMEM_OK)
    return NNMEM_ERR_INVALID;
  int in_arena = tl.buffer != NNMEM_NO_BUFFER;
  if (in_arena && tl.buffer >= n_buf) return NNMEM_ERR_INVALID;
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "name", ti.name);
  nnmem__jw_kv_string(w, "kind", nnmem_tensor_kind_name(ti.kind));
  nnmem__jw_kv_string(w, "region", in_arena ? "arena" : "weights");
  nnmem__jw_key(w, "buffer");
  if (in_arena)
    nnmem__jw_u64(w, tl.buffer);
  else
    nnmem__jw_null(w);
  nnmem__jw_kv_u64(w, "offset", in_arena ? off[tl.buffer] : tl.weight_offset);
  nnmem__jw_kv_u64(w, "size", ti.bytes);
  nnmem__jw_kv_u64(w, "first", tl.first);
  nnmem__jw_kv_u64(w, "last", tl.last);
  nnmem__jw_end(w);
  return NNMEM_OK;
}

nnmem_status_t nnmem__plan_json(nnmem__jw_t *w, const nnmem_graph_t *g,
                                const nnmem_liveness_t *l,
                                const nnmem_plan_t *plan, uint64_t alignment) {
  const nnmem_problem_t *p = nnmem_liveness_problem(l);
  size_t n_buf = nnmem_problem_count(p);
  if (nnmem_plan_count(plan) != n_buf) return NNMEM_ERR_INVALID;
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "model",
                      nnmem_graph_name(g) ? nnmem_graph_name(g) : "");
  nnmem__jw_kv_string(w, "strategy",
                      nnmem_strategy_name(nnmem_plan_strategy(plan)));
  nnmem__jw_kv_u64(w, "alignment", alignment ? alignment : 1);
  nnmem__jw_kv_u64(w, "arena_height", nnmem_plan_height(plan));
  nnmem__jw_kv_u64(w, "weight_bytes", nnmem_liveness_weight_bytes(l));
  nnmem_status_t st = put_order(w, g, l);
  if (st != NNMEM_OK) return st;
  put_kept_out(w, g, l);
  put_buffers(w, p, l, nnmem_plan_offsets(plan));
  nnmem__jw_key(w, "tensors");
  nnmem__jw_array(w);
  size_t n = nnmem_graph_tensor_count(g);
  for (uint32_t i = 0; i < n && st == NNMEM_OK; i++)
    st = put_tensor(w, g, l, nnmem_plan_offsets(plan), n_buf, i);
  nnmem__jw_end(w);
  nnmem__jw_end(w);
  return st;
}

nnmem_status_t nnmem__problem_plan_json(nnmem__jw_t *w,
                                        const nnmem_problem_t *p,
                                        const nnmem_plan_t *plan,
                                        uint64_t alignment) {
  if (nnmem_plan_count(plan) != nnmem_problem_count(p))
    return NNMEM_ERR_INVALID;
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "strategy",
                      nnmem_strategy_name(nnmem_plan_strategy(plan)));
  nnmem__jw_kv_u64(w, "alignment", alignment ? alignment : 1);
  nnmem__jw_kv_u64(w, "arena_height", nnmem_plan_height(plan));
  put_buffers(w, p, NULL, nnmem_plan_offsets(plan));
  nnmem__jw_end(w);
  return NNMEM_OK;
}

/* Finishes the document into *out (malloc'd, caller frees). `name` is what
 * messages call the output (its path, or "plan JSON"). */
static nnmem_status_t finish_text(nnmem__jw_t *w, nnmem__text_t *t,
                                  nnmem_status_t st, const char *name,
                                  const char *what, char **out, size_t *len_out,
                                  nnmem_diag_t *diag) {
  if (st != NNMEM_OK)
    nnmem__diag(diag, st, "%s: %s", name, what);
  else if ((st = nnmem__jw_finish(w)) != NNMEM_OK)
    nnmem__diag(diag, st, "%s: %s", name,
                st == NNMEM_ERR_NOMEM ? "out of memory" : "JSON writer misuse");
  if (st != NNMEM_OK) {
    nnmem__text_free(t);
    return st;
  }
  *out = t->data;
  if (len_out) *len_out = t->len;
  return NNMEM_OK;
}

static nnmem_status_t format_graph_plan(const nnmem_graph_t *g,
                                        const nnmem_liveness_t *l,
                                        const nnmem_plan_t *plan,
                                        uint64_t alignment, const char *name,
                                        char **out, size_t *len_out,
                                        nnmem_diag_t *diag) {
  size_t n_buf = nnmem_problem_count(nnmem_liveness_problem(l));
  if (nnmem_plan_count(plan) != n_buf)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "%s: the plan has %zu buffers but the liveness problem "
                       "has %zu",
                       name, nnmem_plan_count(plan), n_buf);
  nnmem__text_t t;
  nnmem__jw_t w;
  nnmem__text_init(&t);
  nnmem__jw_init(&w, &t, NNMEM__JW_PRETTY);
  nnmem_status_t st = nnmem__plan_json(&w, g, l, plan, alignment);
  return finish_text(&w, &t, st, name,
                     "the liveness analysis is not of this graph", out, len_out,
                     diag);
}

static nnmem_status_t format_problem_plan(const nnmem_problem_t *p,
                                          const nnmem_plan_t *plan,
                                          uint64_t alignment, const char *name,
                                          char **out, size_t *len_out,
                                          nnmem_diag_t *diag) {
  if (nnmem_plan_count(plan) != nnmem_problem_count(p))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "%s: the plan has %zu buffers but the problem has %zu",
                       name, nnmem_plan_count(plan), nnmem_problem_count(p));
  nnmem__text_t t;
  nnmem__jw_t w;
  nnmem__text_init(&t);
  nnmem__jw_init(&w, &t, NNMEM__JW_PRETTY);
  nnmem_status_t st = nnmem__problem_plan_json(&w, p, plan, alignment);
  return finish_text(&w, &t, st, name, "the plan is not of this problem", out,
                     len_out, diag);
}

/* Writes text that a format function made to `path` atomically. */
static nnmem_status_t write_text(nnmem_status_t st, char *text, size_t len,
                                 const char *path, nnmem_diag_t *diag) {
  if (st == NNMEM_OK) st = nnmem_file_write_atomic(path, text, len, diag);
  free(text);
  return st;
}

nnmem_status_t nnmem_plan_format_json(const nnmem_graph_t *g,
                                      const nnmem_liveness_t *l,
                                      const nnmem_plan_t *plan,
                                      uint64_t alignment, char **out,
                                      size_t *len_out, nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if (!g || !l || !plan || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_plan_format_json: NULL argument");
  return format_graph_plan(g, l, plan, alignment, "plan JSON", out, len_out,
                           diag);
}

nnmem_status_t nnmem_plan_write_json(const nnmem_graph_t *g,
                                     const nnmem_liveness_t *l,
                                     const nnmem_plan_t *plan,
                                     uint64_t alignment, const char *path,
                                     nnmem_diag_t *diag) {
  if (!g || !l || !plan || !path)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_plan_write_json: NULL argument");
  char *text = NULL;
  size_t len = 0;
  nnmem_status_t st =
      format_graph_plan(g, l, plan, alignment, path, &text, &len, diag);
  return write_text(st, text, len, path, diag);
}

nnmem_status_t nnmem_problem_format_plan_json(const nnmem_problem_t *p,
                                              const nnmem_plan_t *plan,
                                              uint64_t alignment, char **out,
                                              size_t *len_out,
                                              nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if (!p || !plan || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_problem_format_plan_json: NULL argument");
  return format_problem_plan(p, plan, alignment, "plan JSON", out, len_out,
                             diag);
}

nnmem_status_t nnmem_problem_write_plan_json(const nnmem_problem_t *p,
                                             const nnmem_plan_t *plan,
                                             uint64_t alignment,
                                             const char *path,
                                             nnmem_diag_t *diag) {
  if (!p || !plan || !path)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_problem_write_plan_json: NULL argument");
  char *text = NULL;
  size_t len = 0;
  nnmem_status_t st =
      format_problem_plan(p, plan, alignment, path, &text, &len, diag);
  return write_text(st, text, len, path, diag);
}

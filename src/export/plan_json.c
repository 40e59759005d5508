/* plan_json.c - writes a planned graph as JSON: where every buffer and
 * every tensor lives.
 *
 *   {"model": "small_cnn", "strategy": "greedy-size", "alignment": 64,
 *    "arena_height": 851968, "weight_bytes": 20904,
 *    "buffers": [{"id": "conv1.out", "offset": 0, "size": 65536,
 *                 "first": 0, "last": 2, "kind": "activation"}, ...],
 *    "tensors": [{"name": "conv1.w", "kind": "weight", "region": "weights",
 *                 "buffer": null, "offset": 0, "size": 1728,
 *                 "first": 0, "last": 10}, ...]}
 *
 * Algorithm:
 *   1. check the plan belongs to the liveness problem (same count);
 *   2. buffers in problem order: id, plan offset, size, lifetime, kind;
 *   3. tensors in graph order: a tensor without a buffer (weights,
 *      constants and views of them) is in region "weights" at its weight
 *      offset; any other is in region "arena" at its buffer's plan offset;
 *   4. build the text in memory (exact 64-bit integers, no doubles) and
 *      write it atomically.
 *
 * Complexity: O(buffers + tensors). Thread-safety: each call is
 * independent; the inputs are only read. */
#include <stdio.h>

#include "common/text.h"
#include "nnmem/io.h"

static void put_key(nnmem__text_t *t, const char *key) {
  nnmem__text_json_string(t, key);
  nnmem__text_puts(t, ": ");
}

static void put_u64(nnmem__text_t *t, const char *key, uint64_t v) {
  put_key(t, key);
  nnmem__text_u64(t, v);
}

static void put_str(nnmem__text_t *t, const char *key, const char *v) {
  put_key(t, key);
  nnmem__text_json_string(t, v);
}

static void put_buffers(nnmem__text_t *t, const nnmem_liveness_t *l,
                        const nnmem_plan_t *plan) {
  const nnmem_problem_t *p = nnmem_liveness_problem(l);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  const uint64_t *off = nnmem_plan_offsets(plan);
  size_t n = nnmem_problem_count(p);
  nnmem__text_puts(t, "  \"buffers\": [");
  for (size_t i = 0; i < n; i++) {
    const char *id = nnmem_problem_id(p, i);
    char num[24];
    if (!id) {
      snprintf(num, sizeof num, "%zu", i);
      id = num;
    }
    nnmem__text_puts(t, i ? ",\n    {" : "\n    {");
    put_str(t, "id", id);
    nnmem__text_puts(t, ", ");
    put_u64(t, "offset", off[i]);
    nnmem__text_puts(t, ", ");
    put_u64(t, "size", b[i].size);
    nnmem__text_puts(t, ", ");
    put_u64(t, "first", b[i].first);
    nnmem__text_puts(t, ", ");
    put_u64(t, "last", b[i].last);
    nnmem__text_puts(t, ", ");
    put_str(t, "kind",
            nnmem_liveness_buffer_kind(l, i) == NNMEM_BUFFER_WORKSPACE
                ? "workspace"
                : "activation");
    nnmem__text_putc(t, '}');
  }
  nnmem__text_puts(t, n ? "\n  ],\n" : "],\n");
}

/* One tensor record; returns NNMEM_ERR_INVALID when l and g disagree. */
static nnmem_status_t put_tensor(nnmem__text_t *t, const nnmem_graph_t *g,
                                 const nnmem_liveness_t *l, const uint64_t *off,
                                 size_t n_buf, uint32_t i) {
  nnmem_tensor_info_t ti;
  nnmem_tensor_live_t tl;
  if (nnmem_graph_tensor(g, i, &ti) != NNMEM_OK ||
      nnmem_liveness_tensor(l, i, &tl) != NNMEM_OK)
    return NNMEM_ERR_INVALID;
  int in_arena = tl.buffer != NNMEM_NO_BUFFER;
  if (in_arena && tl.buffer >= n_buf) return NNMEM_ERR_INVALID;
  nnmem__text_puts(t, i ? ",\n    {" : "\n    {");
  put_str(t, "name", ti.name);
  nnmem__text_puts(t, ", ");
  put_str(t, "kind", nnmem_tensor_kind_name(ti.kind));
  nnmem__text_puts(t, ", ");
  put_str(t, "region", in_arena ? "arena" : "weights");
  nnmem__text_puts(t, ", ");
  put_key(t, "buffer");
  if (in_arena)
    nnmem__text_u64(t, tl.buffer);
  else
    nnmem__text_puts(t, "null");
  nnmem__text_puts(t, ", ");
  put_u64(t, "offset", in_arena ? off[tl.buffer] : tl.weight_offset);
  nnmem__text_puts(t, ", ");
  put_u64(t, "size", ti.bytes);
  nnmem__text_puts(t, ", ");
  put_u64(t, "first", tl.first);
  nnmem__text_puts(t, ", ");
  put_u64(t, "last", tl.last);
  nnmem__text_putc(t, '}');
  return NNMEM_OK;
}

/* nnmem_plan_format_json with `path`, the name messages give the output. */
static nnmem_status_t format_plan(const nnmem_graph_t *g,
                                  const nnmem_liveness_t *l,
                                  const nnmem_plan_t *plan, uint64_t alignment,
                                  const char *path, char **out, size_t *len_out,
                                  nnmem_diag_t *diag) {
  *out = NULL;
  size_t n_buf = nnmem_problem_count(nnmem_liveness_problem(l));
  if (nnmem_plan_count(plan) != n_buf)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "%s: the plan has %zu buffers but the liveness problem "
                       "has %zu",
                       path, nnmem_plan_count(plan), n_buf);
  nnmem__text_t t;
  nnmem__text_init(&t);
  nnmem__text_puts(&t, "{\n  ");
  put_str(&t, "model", nnmem_graph_name(g) ? nnmem_graph_name(g) : "");
  nnmem__text_puts(&t, ",\n  ");
  put_str(&t, "strategy", nnmem_strategy_name(nnmem_plan_strategy(plan)));
  nnmem__text_puts(&t, ",\n  ");
  put_u64(&t, "alignment", alignment ? alignment : 1);
  nnmem__text_puts(&t, ",\n  ");
  put_u64(&t, "arena_height", nnmem_plan_height(plan));
  nnmem__text_puts(&t, ",\n  ");
  put_u64(&t, "weight_bytes", nnmem_liveness_weight_bytes(l));
  nnmem__text_puts(&t, ",\n");
  put_buffers(&t, l, plan);
  nnmem__text_puts(&t, "  \"tensors\": [");
  size_t n = nnmem_graph_tensor_count(g);
  nnmem_status_t st = NNMEM_OK;
  for (uint32_t i = 0; i < n && st == NNMEM_OK; i++)
    st = put_tensor(&t, g, l, nnmem_plan_offsets(plan), n_buf, i);
  nnmem__text_puts(&t, n ? "\n  ]\n}\n" : "]\n}\n");
  if (st != NNMEM_OK)
    nnmem__diag(diag, st, "%s: the liveness analysis is not of this graph",
                path);
  else if ((st = nnmem__text_status(&t)) != NNMEM_OK)
    nnmem__diag(diag, st, "%s: out of memory", path);
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    return st;
  }
  *out = t.data;
  if (len_out) *len_out = t.len;
  return NNMEM_OK;
}

nnmem_status_t nnmem_plan_format_json(const nnmem_graph_t *g,
                                      const nnmem_liveness_t *l,
                                      const nnmem_plan_t *plan,
                                      uint64_t alignment, char **out,
                                      size_t *len_out, nnmem_diag_t *diag) {
  if (!g || !l || !plan || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_plan_format_json: NULL argument");
  return format_plan(g, l, plan, alignment, "plan JSON", out, len_out, diag);
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
      format_plan(g, l, plan, alignment, path, &text, &len, diag);
  if (st == NNMEM_OK) st = nnmem_file_write_atomic(path, text, len, diag);
  free(text);
  return st;
}

/* test_onnx_pb.h - helpers of the ONNX unit tests (test_onnx*.c): a
 * minimal protobuf writer, builders of ONNX messages (value_info, tensor,
 * attributes, node, graph, model), import / shape / plan assertions.
 * Header-only (static inline) so each test program includes what it uses. */
#ifndef NNMEM_TEST_ONNX_PB_H
#define NNMEM_TEST_ONNX_PB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---- a minimal protobuf writer ------------------------------------------*/

typedef struct pb {
  uint8_t *b;
  size_t n, cap;
} pb_t;

static inline void put(pb_t *p, const void *d, size_t n) {
  if (n == 0) return;
  if (p->n + n > p->cap) {
    p->cap = (p->n + n) * 2 + 64;
    p->b = realloc(p->b, p->cap);
    assert_non_null(p->b);
  }
  memcpy(p->b + p->n, d, n);
  p->n += n;
}

static inline void varint(pb_t *p, uint64_t v) {
  uint8_t c[10];
  size_t n = 0;
  do {
    c[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) c[n] |= 0x80;
    n++;
  } while (v);
  put(p, c, n);
}

static inline void f_int(pb_t *p, int field, int64_t v) {
  varint(p, (uint64_t)field << 3);
  varint(p, (uint64_t)v);
}

static inline void f_bytes(pb_t *p, int field, const void *d, size_t n) {
  varint(p, (uint64_t)field << 3 | 2);
  varint(p, n);
  put(p, d, n);
}

static inline void f_str(pb_t *p, int field, const char *s) {
  f_bytes(p, field, s, strlen(s));
}

static inline void f_float(pb_t *p, int field, float f) {
  varint(p, (uint64_t)field << 3 | 5);
  put(p, &f, 4);
}

/* Appends `sub` as a length-delimited field and frees it. */
static inline void f_msg(pb_t *p, int field, pb_t *sub) {
  f_bytes(p, field, sub->b, sub->n);
  free(sub->b);
  memset(sub, 0, sizeof *sub);
}

/* ---- ONNX messages
 * -----------------------------------------------------------*/

enum { FLOAT = 1, INT64 = 7, BOOL = 9, FLOAT16 = 10 };

/* dims: >= 0 a value, -1 "batch", -2 "sequence", -3 "other". */
static inline pb_t value_info(const char *name, int elem, int rank,
                              const int64_t *dims) {
  pb_t vi = {0}, tp = {0}, tt = {0}, sh = {0};
  static const char *const params[] = {"", "batch", "sequence", "other"};
  for (int i = 0; i < rank; i++) {
    pb_t d = {0};
    if (dims[i] >= 0)
      f_int(&d, 1, dims[i]);
    else
      f_str(&d, 2, params[-dims[i]]);
    f_msg(&sh, 1, &d);
  }
  f_int(&tt, 1, elem);
  if (rank >= 0) f_msg(&tt, 2, &sh);
  free(sh.b);
  f_msg(&tp, 1, &tt);
  f_str(&vi, 1, name);
  f_msg(&vi, 2, &tp);
  return vi;
}

/* An int64 tensor with values (raw_data), or with external data when
 * vals is NULL. */
static inline pb_t tensor(const char *name, int elem, int rank,
                          const int64_t *dims, const int64_t *vals) {
  pb_t t = {0};
  size_t n = 1;
  for (int i = 0; i < rank; i++) {
    f_int(&t, 1, dims[i]);
    n *= (size_t)dims[i];
  }
  f_int(&t, 2, elem);
  f_str(&t, 8, name);
  if (vals && elem == BOOL) {
    uint8_t b[64];
    for (size_t i = 0; i < n && i < 64; i++)
      b[i] = vals[i] != 0;
    f_bytes(&t, 9, b, n);
  } else if (vals) {
    f_bytes(&t, 9, vals, n * 8);
  } else {
    pb_t kv = {0};
    f_str(&kv, 1, "location");
    f_str(&kv, 2, "weights.bin");
    f_msg(&t, 13, &kv);
    f_int(&t, 14, 1);
  }
  return t;
}

static inline pb_t attr_int(const char *name, int64_t v) {
  pb_t a = {0};
  f_str(&a, 1, name);
  f_int(&a, 20, 2);
  f_int(&a, 3, v);
  return a;
}

static inline pb_t attr_ints(const char *name, int n, const int64_t *v) {
  pb_t a = {0};
  f_str(&a, 1, name);
  f_int(&a, 20, 7);
  for (int i = 0; i < n; i++)
    f_int(&a, 8, v[i]);
  return a;
}

static inline pb_t attr_str(const char *name, const char *s) {
  pb_t a = {0};
  f_str(&a, 1, name);
  f_int(&a, 20, 3);
  f_str(&a, 4, s);
  return a;
}

static inline pb_t attr_float(const char *name, float v) {
  pb_t a = {0};
  f_str(&a, 1, name);
  f_int(&a, 20, 1);
  f_float(&a, 2, v);
  return a;
}

static inline pb_t attr_floats(const char *name, int n, const float *v) {
  pb_t a = {0};
  f_str(&a, 1, name);
  f_int(&a, 20, 6);
  for (int i = 0; i < n; i++)
    f_float(&a, 7, v[i]);
  return a;
}

/* A float tensor with n values (raw_data). */
static inline pb_t ftensor(const char *name, int rank, const int64_t *dims,
                           const float *vals, size_t n) {
  pb_t t = {0};
  for (int i = 0; i < rank; i++)
    f_int(&t, 1, dims[i]);
  f_int(&t, 2, FLOAT);
  f_str(&t, 8, name);
  f_bytes(&t, 9, vals, n * sizeof *vals);
  return t;
}

static inline pb_t attr_graph(const char *name, pb_t *g) {
  pb_t a = {0};
  f_str(&a, 1, name);
  f_int(&a, 20, 5);
  f_msg(&a, 6, g);
  return a;
}

/* A node: "in1,in2" / "out1" comma lists (empty entries allowed), attrs
 * consumed. */
static inline pb_t node(const char *op, const char *name, const char *ins,
                        const char *outs, int n_attr, pb_t *attrs) {
  pb_t nd = {0};
  char buf[256];
  const char *lists[2] = {ins, outs};
  for (int l = 0; l < 2; l++) {
    if (!lists[l]) continue;
    snprintf(buf, sizeof buf, "%s", lists[l]);
    char *s = buf;
    for (;;) {
      char *comma = strchr(s, ',');
      if (comma) *comma = 0;
      f_str(&nd, l + 1, s);
      if (!comma) break;
      s = comma + 1;
    }
  }
  if (name) f_str(&nd, 3, name);
  f_str(&nd, 4, op);
  for (int i = 0; i < n_attr; i++)
    f_msg(&nd, 5, &attrs[i]);
  return nd;
}

typedef struct gb {
  pb_t g;
} gb_t;

static inline void g_node(gb_t *g, pb_t nd) {
  f_msg(&g->g, 1, &nd);
}
static inline void g_init(gb_t *g, pb_t t) {
  f_msg(&g->g, 5, &t);
}
static inline void g_input(gb_t *g, pb_t vi) {
  f_msg(&g->g, 11, &vi);
}
static inline void g_output(gb_t *g, pb_t vi) {
  f_msg(&g->g, 12, &vi);
}
static inline void g_value_info(gb_t *g, pb_t vi) {
  f_msg(&g->g, 13, &vi);
}

/* Wraps a graph into a model with the default-domain opset. */
static inline pb_t model(gb_t *g, int64_t opset, const char *domain) {
  pb_t m = {0}, os = {0};
  f_int(&m, 1, 8);
  f_str(&os, 1, domain);
  f_int(&os, 2, opset);
  f_msg(&m, 8, &os);
  f_str(&m, 2, "nnmem-test");
  f_str(&g->g, 2, "g");
  f_msg(&m, 7, &g->g);
  return m;
}

static inline nnmem_status_t import(pb_t *m, const nnmem_onnx_config_t *cfg,
                                    nnmem_graph_t **g, nnmem_onnx_report_t *rep,
                                    nnmem_diag_t *diag) {
  nnmem_onnx_report_t local;
  nnmem_status_t st =
      nnmem_onnx_import(m->b, m->n, "t.onnx", cfg, g, rep ? rep : &local, diag);
  return st;
}

static inline nnmem_tensor_info_t tinfo(const nnmem_graph_t *g,
                                        const char *name) {
  uint32_t id;
  nnmem_tensor_info_t t;
  if (nnmem_graph_find_tensor(g, name, &id) != NNMEM_OK)
    fail_msg("no tensor '%s'", name);
  assert_ok(nnmem_graph_tensor(g, id, &t));
  return t;
}

static inline void assert_shape(const nnmem_graph_t *g, const char *name,
                                int rank, const int64_t *dims) {
  nnmem_tensor_info_t t = tinfo(g, name);
  if ((int)t.rank != rank) fail_msg("%s: rank %u, want %d", name, t.rank, rank);
  for (int i = 0; i < rank; i++)
    if (t.shape[i] != dims[i])
      fail_msg("%s: dim %d is %lld, want %lld", name, i, (long long)t.shape[i],
               (long long)dims[i]);
}

#define SHAPE(g, name, ...)                                     \
  do {                                                          \
    const int64_t d_[] = {__VA_ARGS__};                         \
    assert_shape(g, name, (int)(sizeof d_ / sizeof d_[0]), d_); \
  } while (0)

/* Liveness + auto plan through the verifier. */
static inline void plan_ok(const nnmem_graph_t *g) {
  nnmem_liveness_t *l = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = nnmem_liveness_analyze(g, NULL, &l, &d);
  if (st != NNMEM_OK) fail_msg("liveness: %s", d.message);
  nnmem_plan_t *p = tu_plan_verified(nnmem_liveness_problem(l), NULL);
  nnmem_plan_destroy(p);
  nnmem_liveness_destroy(l);
}

/* Imports `m` (which it frees; `rep` may be NULL), which must succeed, and
 * plans the graph through the verifier (plan_ok). Caller destroys it. */
static inline nnmem_graph_t *import_ok(pb_t *m, nnmem_onnx_report_t *rep) {
  nnmem_graph_t *g = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = import(m, NULL, &g, rep, &d);
  free(m->b);
  if (st != NNMEM_OK) fail_msg("import: %s", d.message);
  plan_ok(g);
  return g;
}

static inline const nnmem_op_info_t *find_op(const nnmem_graph_t *g,
                                             const char *type,
                                             nnmem_op_info_t *out) {
  for (uint32_t i = 0; i < nnmem_graph_op_count(g); i++) {
    assert_ok(nnmem_graph_op(g, i, out));
    if (strcmp(out->type, type) == 0) return out;
  }
  fail_msg("no op of type %s", type);
  return NULL;
}

/* Imports `m` (which it frees), expecting status `want` and a message
 * containing `needle` (NULL: any), and no graph. */
static inline void expect_fail(pb_t *m, nnmem_status_t want,
                               const char *needle) {
  nnmem_graph_t *g = (nnmem_graph_t *)m; /* must be reset to NULL */
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = import(m, NULL, &g, NULL, &d);
  if (st != want)
    fail_msg("status %s, want %s (%s)", nnmem_status_name(st),
             nnmem_status_name(want), d.message);
  assert_null(g);
  if (needle && !strstr(d.message, needle))
    fail_msg("message '%s' lacks '%s'", d.message, needle);
  free(m->b);
}

#endif

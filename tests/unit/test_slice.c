/* test_slice.c - Slice outputs as views of their input (concat.c step 4):
 * the graph API that records slice parameters (nnmem_graph_set_op_slice)
 * and its refusals, the ONNX importer that sets them from constant
 * starts / ends / axes / steps (Slice of opsets 9 and 13, DynamicSlice), and
 * the liveness pass on small graphs whose offsets and peaks are worked out by
 * hand: a contiguous Slice nests at start * row bytes; a non-contiguous one, a
 * Slice of a weight, one whose input a later in-place op rewrites, the second
 * of two live Slices of one tensor and one over upper-bound sizes stay copies,
 * as Split outputs do. Every plan goes through the independent verifier
 * (tu_plan_verified). */
#include <stdint.h>

#include "test_onnx_pb.h"

#define ACT NNMEM_TENSOR_ACTIVATION
#define IN NNMEM_TENSOR_INPUT
#define OUT NNMEM_TENSOR_OUTPUT
#define WGT NNMEM_TENSOR_WEIGHT

static uint32_t TS(nnmem_graph_t *g, const char *name, nnmem_tensor_kind_t k,
                   nnmem_dtype_t dt, uint32_t rank, const int64_t *shape) {
  nnmem_tensor_desc_t d = {0};
  d.name = name;
  d.kind = k;
  d.dtype = dt;
  d.rank = rank;
  d.shape = shape;
  uint32_t id = 0;
  nnmem_diag_t diag = {{0}};
  if (nnmem_graph_add_tensor(g, &d, &id, &diag) != NNMEM_OK)
    fail_msg("%s", diag.message);
  return id;
}

/* A float32 tensor of shape [n, c, 4, 4] (64 * n * c bytes). */
static uint32_t T4(nnmem_graph_t *g, const char *name, nnmem_tensor_kind_t k,
                   int64_t n, int64_t c) {
  int64_t shape[4] = {n, c, 4, 4};
  return TS(g, name, k, NNMEM_DTYPE_FLOAT32, 4, shape);
}

static uint32_t OP(nnmem_graph_t *g, const char *name, const char *type,
                   const uint32_t *in, uint32_t nin, const uint32_t *out,
                   uint32_t nout, uint32_t flags) {
  nnmem_op_desc_t d = {0};
  d.name = name;
  d.type = type;
  d.inputs = in;
  d.n_inputs = nin;
  d.outputs = out;
  d.n_outputs = nout;
  d.flags = flags;
  nnmem_diag_t diag = {{0}};
  uint32_t id = 0;
  if (nnmem_graph_add_op(g, &d, &id, &diag) != NNMEM_OK)
    fail_msg("%s", diag.message);
  return id;
}

static uint32_t op1(nnmem_graph_t *g, const char *name, uint32_t in,
                    uint32_t out, uint32_t flags) {
  return OP(g, name, "Conv", &in, 1, &out, 1, flags);
}

/* A Slice op reading `in`, writing `out`, with its parameters set. */
static uint32_t slice(nnmem_graph_t *g, const char *name, uint32_t in,
                      uint32_t out, uint32_t axis, int64_t start) {
  uint32_t id = OP(g, name, "Slice", &in, 1, &out, 1, 0);
  nnmem_diag_t d = {{0}};
  if (nnmem_graph_set_op_slice(g, id, axis, start, &d) != NNMEM_OK)
    fail_msg("%s", d.message);
  return id;
}

static nnmem_liveness_t *analyze(const nnmem_graph_t *g, int off) {
  nnmem_liveness_config_t c;
  nnmem_liveness_config_init(&c);
  c.no_concat_into_output = off;
  nnmem_liveness_t *l = NULL;
  nnmem_diag_t d = {{0}};
  if (nnmem_liveness_analyze(g, &c, &l, &d) != NNMEM_OK)
    fail_msg("%s", d.message);
  assert_ok(nnmem_problem_check(nnmem_liveness_problem(l), NULL));
  return l;
}

static uint32_t buf_of(const nnmem_liveness_t *l, uint32_t t) {
  nnmem_tensor_live_t tl;
  assert_ok(nnmem_liveness_tensor(l, t, &tl));
  return tl.buffer;
}

static int nested(const nnmem_liveness_t *l, uint32_t t) {
  uint32_t b = buf_of(l, t);
  return b != NNMEM_NO_BUFFER &&
         nnmem_problem_parent(nnmem_liveness_problem(l), b, NULL, NULL) ==
             NNMEM_OK;
}

static uint64_t height(const nnmem_liveness_t *l) {
  nnmem_plan_t *pl = tu_plan_verified(nnmem_liveness_problem(l), NULL);
  uint64_t h = nnmem_plan_height(pl);
  nnmem_plan_destroy(pl);
  return h;
}

static void expect_refused(nnmem_graph_t *g, uint32_t op, uint32_t axis,
                           int64_t start, const char *needle) {
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_graph_set_op_slice(g, op, axis, start, &d),
                   NNMEM_ERR_INVALID);
  if (!strstr(d.message, needle))
    fail_msg("message '%s' lacks '%s'", d.message, needle);
}

/* nnmem_graph_set_op_slice checks the op's shapes and names the op. */
static void test_graph_api(void **state) {
  (void)state;
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("api", &g));
  uint32_t x = T4(g, "X", IN, 1, 6), s = T4(g, "S", ACT, 1, 2),
           p = T4(g, "P", ACT, 1, 3), q = T4(g, "Q", ACT, 1, 3);
  int64_t hshape[4] = {1, 6, 4, 4};
  uint32_t h = TS(g, "H", ACT, NNMEM_DTYPE_FLOAT16, 4, hshape);
  uint32_t sl = OP(g, "sl", "Slice", &x, 1, &s, 1, 0);
  uint32_t pq[2] = {p, q};
  uint32_t sp = OP(g, "sp", "Split", &x, 1, pq, 2, 0);
  uint32_t cast = OP(g, "cast", "Cast", &x, 1, &h, 1, 0);
  uint32_t axis = 9;
  int64_t start = -1;
  assert_int_equal(nnmem_graph_op_slice(g, sl, &axis, &start), 0);
  assert_int_equal(nnmem_graph_op_slice(NULL, sl, NULL, NULL), 0);
  assert_int_equal(nnmem_graph_op_slice(g, 99, NULL, NULL), 0);
  expect_refused(g, 99, 1, 0, "unknown op id 99");
  expect_refused(g, sp, 1, 0, "op 'sp'");
  expect_refused(g, cast, 1, 0, "differ in rank or dtype");
  expect_refused(g, sl, 4, 0, "op 'sl': slice axis 4 out of range");
  expect_refused(g, sl, 1, -1, "exceeds dim 1");
  expect_refused(g, sl, 1, 5, "op 'sl': slice [5, 5 + 2) exceeds dim 1");
  expect_refused(g, sl, 2, 0, "dim 1 differs");
  assert_int_equal(nnmem_graph_op_slice(g, sl, NULL, NULL), 0);
  assert_ok(nnmem_graph_set_op_slice(g, sl, 1, 4, NULL));
  assert_int_equal(nnmem_graph_op_slice(g, sl, &axis, &start), 1);
  assert_int_equal(axis, 1);
  assert_int_equal(start, 4);
  nnmem_graph_destroy(g);
}

/*   X[1,1] -a-> A[1,6] -slice(axis 1, start 2)-> S[1,3] -d-> Y[1,1]
 * (x64 bytes). Off: step 1 holds A + S = 384 + 192 = 576. On: S is bytes
 * [128, 320) of A, A lives until S's reader (step 2): peak max(X + A,
 * A + Y) = 448. */
static void test_contiguous_nests(void **state) {
  (void)state;
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("c", &g));
  uint32_t x = T4(g, "X", IN, 1, 1), a = T4(g, "A", ACT, 1, 6),
           s = T4(g, "S", ACT, 1, 3), y = T4(g, "Y", OUT, 1, 1);
  op1(g, "a", x, a, 0);
  slice(g, "slice", a, s, 1, 2);
  op1(g, "d", s, y, 0);
  nnmem_liveness_t *on = analyze(g, 0), *off = analyze(g, 1);
  const nnmem_problem_t *p = nnmem_liveness_problem(on);
  size_t q = 0;
  uint64_t rel = 0;
  assert_ok(nnmem_problem_parent(p, buf_of(on, s), &q, &rel));
  assert_int_equal(q, buf_of(on, a));
  assert_int_equal(rel, 128);
  assert_int_equal(nnmem_problem_buffers(p)[buf_of(on, a)].last, 3);
  assert_int_equal(nnmem_liveness_sub_buffers(on), 1);
  assert_int_equal(nnmem_liveness_sub_bytes(on), 192);
  assert_int_equal(nnmem_liveness_sub_buffers(off), 0);
  assert_false(nested(off, s));
  assert_int_equal(height(on), 448);
  assert_int_equal(height(off), 576);
  nnmem_liveness_destroy(on);
  nnmem_liveness_destroy(off);
  nnmem_graph_destroy(g);
}

/* Not contiguous: the last axis of [1, 6, 4] (each row contributes a
 * piece), and axis 1 with a batch of 2. Neither nests. */
static void test_not_contiguous(void **state) {
  (void)state;
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("nc", &g));
  int64_t xs[3] = {1, 6, 4}, ss[3] = {1, 6, 2};
  uint32_t x = TS(g, "X", IN, NNMEM_DTYPE_FLOAT32, 3, xs),
           a = TS(g, "A", ACT, NNMEM_DTYPE_FLOAT32, 3, xs),
           s = TS(g, "S", ACT, NNMEM_DTYPE_FLOAT32, 3, ss),
           b = T4(g, "B", ACT, 2, 4), c = T4(g, "C", ACT, 2, 2);
  uint32_t x4 = T4(g, "X4", IN, 2, 1), y = T4(g, "Y", OUT, 1, 1);
  op1(g, "a", x, a, 0);
  slice(g, "last_axis", a, s, 2, 1);
  op1(g, "b", x4, b, 0);
  slice(g, "batch2", b, c, 1, 0);
  uint32_t sc[2] = {s, c};
  OP(g, "tail", "Add", sc, 2, &y, 1, 0);
  nnmem_liveness_t *l = analyze(g, 0);
  assert_false(nested(l, s));
  assert_false(nested(l, c));
  assert_int_equal(nnmem_liveness_sub_buffers(l), 0);
  (void)height(l);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* A Slice of a weight stays a copy (the weight region is not in the
 * arena). A Slice of a graph input follows the Split rule (a graph input's
 * buffer is written before step 0, so its views are safe): both nest, at
 * the same offsets a Split would use. */
static void test_weight_and_graph_input(void **state) {
  (void)state;
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("wi", &g));
  uint32_t w = T4(g, "W", WGT, 1, 4), x = T4(g, "X", IN, 1, 4),
           sw = T4(g, "SW", ACT, 1, 2), sx = T4(g, "SX", ACT, 1, 1),
           y = T4(g, "Y", OUT, 1, 1);
  slice(g, "of_weight", w, sw, 1, 2);
  slice(g, "of_input", x, sx, 1, 3);
  uint32_t ab[2] = {sw, sx};
  OP(g, "tail", "Add", ab, 2, &y, 1, 0);
  nnmem_liveness_t *l = analyze(g, 0);
  assert_false(nested(l, sw));
  size_t q;
  uint64_t rel;
  assert_ok(
      nnmem_problem_parent(nnmem_liveness_problem(l), buf_of(l, sx), &q, &rel));
  assert_int_equal(q, buf_of(l, x));
  assert_int_equal(rel, 192);
  assert_int_equal(nnmem_liveness_sub_buffers(l), 1);
  (void)height(l);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
  /* the same graph input split: its last part nests at the same offset */
  assert_ok(nnmem_graph_create("wi2", &g));
  x = T4(g, "X", IN, 1, 4);
  uint32_t p0 = T4(g, "P0", ACT, 1, 3), p1 = T4(g, "P1", ACT, 1, 1);
  y = T4(g, "Y", OUT, 1, 1);
  uint32_t pp[2] = {p0, p1};
  OP(g, "split", "Split", &x, 1, pp, 2, 0);
  OP(g, "tail", "Add", pp, 2, &y, 1, 0);
  l = analyze(g, 0);
  assert_ok(
      nnmem_problem_parent(nnmem_liveness_problem(l), buf_of(l, p1), &q, &rel));
  assert_int_equal(rel, 192);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* A later in-place op rewriting the input (relu in place on A after the
 * Slice) would change S's bytes: S stays a copy. Without the relu it
 * nests. */
static void test_later_inplace_blocks(void **state) {
  (void)state;
  for (int with_relu = 0; with_relu < 2; with_relu++) {
    nnmem_graph_t *g = NULL;
    assert_ok(nnmem_graph_create("ip", &g));
    uint32_t x = T4(g, "X", IN, 1, 1), a = T4(g, "A", ACT, 1, 4),
             s = T4(g, "S", ACT, 1, 2), y = T4(g, "Y", OUT, 1, 1), r = x;
    op1(g, "a", x, a, 0);
    slice(g, "slice", a, s, 1, 0);
    if (with_relu) r = T4(g, "R", ACT, 1, 4);
    if (with_relu) op1(g, "relu", a, r, NNMEM_OP_INPLACE);
    uint32_t sr[2] = {s, r};
    OP(g, "tail", "Add", sr, 2, &y, 1, 0);
    nnmem_liveness_t *l = analyze(g, 0);
    if (with_relu) assert_int_equal(buf_of(l, a), buf_of(l, r));
    assert_int_equal(nested(l, s), !with_relu);
    (void)height(l);
    nnmem_liveness_destroy(l);
    nnmem_graph_destroy(g);
  }
}

/* Two Slices of one tensor, both live: the first nests, the second would
 * overlap the first one's live view (the Split rule) and is a copy. With
 * the first one read before the second Slice runs, both nest. */
static void test_two_slices(void **state) {
  (void)state;
  for (int early = 0; early < 2; early++) {
    nnmem_graph_t *g = NULL;
    assert_ok(nnmem_graph_create("two", &g));
    uint32_t x = T4(g, "X", IN, 1, 1), a = T4(g, "A", ACT, 1, 6),
             s1 = T4(g, "S1", ACT, 1, 2), s2 = T4(g, "S2", ACT, 1, 3),
             u = T4(g, "U", ACT, 1, 2), y = T4(g, "Y", OUT, 1, 1);
    op1(g, "a", x, a, 0);
    slice(g, "first", a, s1, 1, 0);
    if (early) op1(g, "u", s1, u, 0);
    slice(g, "second", a, s2, 1, 3);
    if (!early) op1(g, "u", s1, u, 0);
    uint32_t us[2] = {u, s2};
    OP(g, "tail", "Add", us, 2, &y, 1, 0);
    nnmem_liveness_t *l = analyze(g, 0);
    assert_true(nested(l, s1));
    assert_int_equal(nested(l, s2), early);
    if (early) {
      uint64_t rel;
      assert_ok(nnmem_problem_parent(nnmem_liveness_problem(l), buf_of(l, s2),
                                     NULL, &rel));
      assert_int_equal(rel, 192);
    }
    assert_int_equal(nnmem_liveness_sub_buffers(l), 1 + (size_t)early);
    (void)height(l);
    nnmem_liveness_destroy(l);
    nnmem_graph_destroy(g);
  }
}

/* ONNX: X -> Transpose (identity) -> T[1,6,4,4] -> Slice -> S -> Transpose
 * -> Y (not an in-place op: Y in S's buffer would keep S out).
 * `st`/`en`/`ax`/`stp` are the Slice's constant inputs (opset 13). */
static nnmem_graph_t *onnx_slice(int n, const int64_t *st, const int64_t *en,
                                 const int64_t *ax, const int64_t *stp) {
  gb_t g = {{0}};
  const int64_t xd[] = {1, 6, 4, 4}, perm[] = {0, 1, 2, 3}, len[] = {n};
  g_input(&g, value_info("X", FLOAT, 4, xd));
  g_init(&g, tensor("st", INT64, 1, len, st));
  g_init(&g, tensor("en", INT64, 1, len, en));
  g_init(&g, tensor("ax", INT64, 1, len, ax));
  g_init(&g, tensor("stp", INT64, 1, len, stp));
  pb_t a[] = {attr_ints("perm", 4, perm)};
  g_node(&g, node("Transpose", "tr", "X", "T", 1, a));
  g_node(&g, node("Slice", "sl", "T,st,en,ax,stp", "S", 0, NULL));
  g_node(&g, node("Transpose", "tail", "S", "Y", 1, a));
  g_output(&g, value_info("Y", FLOAT, -1, NULL));
  pb_t m = model(&g, 13, "");
  return import_ok(&m, NULL);
}

/* Slice op of an imported graph: its parameters (or -1 when none) and
 * whether liveness nested S. */
static void expect_onnx(nnmem_graph_t *g, int64_t axis, int64_t start,
                        int views) {
  nnmem_op_info_t oi;
  uint32_t id = 0, n = (uint32_t)nnmem_graph_op_count(g);
  for (; id < n; id++) {
    assert_ok(nnmem_graph_op(g, id, &oi));
    if (strcmp(oi.type, "Slice") == 0) break;
  }
  assert_true(id < n);
  uint32_t a = 0;
  int64_t s = 0;
  int has = nnmem_graph_op_slice(g, id, &a, &s);
  assert_int_equal(has, axis >= 0);
  if (has) {
    assert_int_equal(a, axis);
    assert_int_equal(s, start);
  }
  nnmem_liveness_t *l = analyze(g, 0);
  assert_int_equal(nnmem_liveness_sub_buffers(l), (size_t)views);
  (void)height(l);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

static void test_onnx_import(void **state) {
  (void)state;
  /* channels [-4, 5) = [2, 5), axis -3 = 1: a view at 2 * 64 */
  const int64_t st1[] = {-4}, en1[] = {5}, ax1[] = {-3}, one[] = {1};
  expect_onnx(onnx_slice(1, st1, en1, ax1, one), 1, 2, 1);
  /* axis 1 cut, axis 2 whole (0..INT64_MAX): still one axis */
  const int64_t st2[] = {3, 0}, en2[] = {INT64_MAX, INT64_MAX}, ax2[] = {1, 2},
                one2[] = {1, 1};
  expect_onnx(onnx_slice(2, st2, en2, ax2, one2), 1, 3, 1);
  /* the whole tensor: axis 0 start 0, nested at 0 */
  const int64_t st3[] = {0}, en3[] = {6}, ax3[] = {1};
  expect_onnx(onnx_slice(1, st3, en3, ax3, one), 0, 0, 1);
  /* two axes cut: no parameters */
  const int64_t st4[] = {1, 1}, en4[] = {3, 3};
  expect_onnx(onnx_slice(2, st4, en4, ax2, one2), -1, 0, 0);
  /* step 2 and a reversed slice: none */
  const int64_t two[] = {2}, neg[] = {-1}, st5[] = {5}, en5[] = {-7};
  expect_onnx(onnx_slice(1, st3, en3, ax3, two), -1, 0, 0);
  expect_onnx(onnx_slice(1, st5, en5, ax3, neg), -1, 0, 0);
  /* the last axis: recorded, not contiguous, so no view */
  const int64_t ax6[] = {3}, st6[] = {1}, en6[] = {3};
  expect_onnx(onnx_slice(1, st6, en6, ax6, one), 3, 1, 0);
  /* opset 9: attributes */
  gb_t g = {{0}};
  const int64_t xd[] = {1, 6, 4, 4}, perm[] = {0, 1, 2, 3};
  g_input(&g, value_info("X", FLOAT, 4, xd));
  pb_t a[] = {attr_ints("perm", 4, perm)};
  g_node(&g, node("Transpose", "tr", "X", "T", 1, a));
  pb_t sa[] = {attr_ints("starts", 1, st6), attr_ints("ends", 1, en6),
               attr_ints("axes", 1, ax3)};
  g_node(&g, node("Slice", "sl", "T", "S", 3, sa));
  g_node(&g, node("Transpose", "tail", "S", "Y", 1, a));
  g_output(&g, value_info("Y", FLOAT, -1, NULL));
  pb_t m = model(&g, 9, "");
  expect_onnx(import_ok(&m, NULL), 1, 1, 1);
}

/* DynamicSlice (opset 8, experimental: Slice with inputs) goes through the
 * same inference and records its parameters on its own node. */
static void test_onnx_dynamic_slice(void **state) {
  (void)state;
  gb_t g = {{0}};
  const int64_t xd[] = {1, 6, 4, 4}, perm[] = {0, 1, 2, 3}, one[] = {1};
  const int64_t st[] = {4}, en[] = {6}, ax[] = {1};
  g_input(&g, value_info("X", FLOAT, 4, xd));
  g_init(&g, tensor("st", INT64, 1, one, st));
  g_init(&g, tensor("en", INT64, 1, one, en));
  g_init(&g, tensor("ax", INT64, 1, one, ax));
  pb_t a[] = {attr_ints("perm", 4, perm)};
  g_node(&g, node("Transpose", "tr", "X", "T", 1, a));
  g_node(&g, node("DynamicSlice", "ds", "T,st,en,ax", "S", 0, NULL));
  pb_t b[] = {attr_ints("perm", 4, perm)};
  g_node(&g, node("Transpose", "tail", "S", "Y", 1, b));
  g_output(&g, value_info("Y", FLOAT, -1, NULL));
  pb_t m = model(&g, 8, "");
  nnmem_graph_t *gr = import_ok(&m, NULL);
  nnmem_op_info_t oi;
  uint32_t id = 0, n = (uint32_t)nnmem_graph_op_count(gr);
  for (; id < n; id++) {
    assert_ok(nnmem_graph_op(gr, id, &oi));
    if (strcmp(oi.type, "DynamicSlice") == 0) break;
  }
  assert_true(id < n);
  uint32_t axis = 0;
  int64_t start = 0;
  assert_int_equal(nnmem_graph_op_slice(gr, id, &axis, &start), 1);
  assert_int_equal(axis, 1);
  assert_int_equal(start, 4);
  nnmem_liveness_t *l = analyze(gr, 0);
  assert_int_equal(nnmem_liveness_sub_buffers(l), 1);
  assert_int_equal(nnmem_liveness_sub_bytes(l), 128);
  (void)height(l);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(gr);
}

/* Sizes that are upper bounds (data-dependent shapes) are not exact
 * layouts: no view, though the parameters are accepted. */
static void test_upper_bound(void **state) {
  (void)state;
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("ub", &g));
  int64_t as[4] = {1, 6, 4, 4};
  nnmem_tensor_desc_t d = {0};
  d.name = "A";
  d.kind = ACT;
  d.dtype = NNMEM_DTYPE_FLOAT32;
  d.rank = 4;
  d.shape = as;
  d.flags = NNMEM_TENSOR_UPPER_BOUND;
  uint32_t x = T4(g, "X", IN, 1, 1), a = 0;
  assert_ok(nnmem_graph_add_tensor(g, &d, &a, NULL));
  uint32_t s = T4(g, "S", ACT, 1, 3), y = T4(g, "Y", OUT, 1, 1);
  op1(g, "a", x, a, 0);
  slice(g, "slice", a, s, 1, 2);
  op1(g, "d", s, y, 0);
  nnmem_liveness_t *l = analyze(g, 0);
  assert_false(nested(l, s));
  assert_int_equal(nnmem_liveness_sub_buffers(l), 0);
  (void)height(l);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_graph_api),
      cmocka_unit_test(test_contiguous_nests),
      cmocka_unit_test(test_not_contiguous),
      cmocka_unit_test(test_weight_and_graph_input),
      cmocka_unit_test(test_later_inplace_blocks),
      cmocka_unit_test(test_two_slices),
      cmocka_unit_test(test_onnx_import),
      cmocka_unit_test(test_onnx_dynamic_slice),
      cmocka_unit_test(test_upper_bound),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

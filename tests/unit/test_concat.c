/* test_concat.c - concat-into-output and split views in the liveness
 * analysis: small graphs whose sub-buffers, offsets and peaks are worked
 * out by hand, the cases that must be skipped (graph inputs, weights, an
 * input of two Concats, an input reused in place later, a non-contiguous
 * layout), and the option that turns the pass off. Every plan goes through
 * the independent verifier (tu_plan_verified). */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define ACT NNMEM_TENSOR_ACTIVATION
#define IN NNMEM_TENSOR_INPUT
#define OUT NNMEM_TENSOR_OUTPUT
#define WGT NNMEM_TENSOR_WEIGHT

/* A float32 tensor of shape [n, c, 4, 4] (64 * n * c bytes). */
static uint32_t T4(nnmem_graph_t *g, const char *name, nnmem_tensor_kind_t k,
                   int64_t n, int64_t c) {
  int64_t shape[4] = {n, c, 4, 4};
  nnmem_tensor_desc_t d = {0};
  d.name = name;
  d.kind = k;
  d.dtype = NNMEM_DTYPE_FLOAT32;
  d.rank = 4;
  d.shape = shape;
  uint32_t id = 0;
  nnmem_diag_t diag = {{0}};
  if (nnmem_graph_add_tensor(g, &d, &id, &diag) != NNMEM_OK)
    fail_msg("%s", diag.message);
  return id;
}

static void OP(nnmem_graph_t *g, const char *name, const char *type,
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
  if (nnmem_graph_add_op(g, &d, NULL, &diag) != NNMEM_OK)
    fail_msg("%s", diag.message);
}

static void op1(nnmem_graph_t *g, const char *name, uint32_t in, uint32_t out,
                uint32_t flags) {
  OP(g, name, "Conv", &in, 1, &out, 1, flags);
}

static nnmem_liveness_t *analyze(const nnmem_graph_t *g, int off) {
  nnmem_liveness_config_t c;
  nnmem_liveness_config_init(&c);
  c.no_concat_into_output = off;
  nnmem_liveness_t *l = NULL;
  nnmem_diag_t d = {{0}};
  if (nnmem_liveness_analyze(g, &c, &l, &d) != NNMEM_OK)
    fail_msg("%s", d.message);
  return l;
}

/* Buffer of tensor t. */
static uint32_t buf_of(const nnmem_liveness_t *l, uint32_t t) {
  nnmem_tensor_live_t tl;
  assert_ok(nnmem_liveness_tensor(l, t, &tl));
  return tl.buffer;
}

static uint64_t height(const nnmem_liveness_t *l) {
  nnmem_plan_t *pl = tu_plan_verified(nnmem_liveness_problem(l), NULL);
  uint64_t h = nnmem_plan_height(pl);
  nnmem_plan_destroy(pl);
  return h;
}

/*   X -> a -> A[1,2] \
 *   X -> b -> B[1,3]  > concat -> C[1,5] -> d -> Y[1,1] (output)
 * Off: step 2 holds A + B + C = 128 + 192 + 320 = 640 bytes.
 * On: A and B live inside C, which is live from step 0: the peak is
 * X + C = 64 + 320 = 384 (steps 0, 1) or C + Y = 384 (step 3). */
static void test_concat_by_hand(void **state) {
  (void)state;
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("c", &g));
  uint32_t x = T4(g, "X", IN, 1, 1), a = T4(g, "A", ACT, 1, 2),
           b = T4(g, "B", ACT, 1, 3), c = T4(g, "C", ACT, 1, 5),
           y = T4(g, "Y", OUT, 1, 1);
  op1(g, "a", x, a, 0);
  op1(g, "b", x, b, 0);
  uint32_t ab[2] = {a, b};
  OP(g, "concat", "Concat", ab, 2, &c, 1, 0);
  op1(g, "d", c, y, 0);
  nnmem_liveness_t *on = analyze(g, 0), *off = analyze(g, 1);
  const nnmem_problem_t *p = nnmem_liveness_problem(on);
  size_t q = 0;
  uint64_t rel = 1;
  assert_ok(nnmem_problem_parent(p, buf_of(on, a), &q, &rel));
  assert_int_equal(q, buf_of(on, c));
  assert_int_equal(rel, 0);
  assert_ok(nnmem_problem_parent(p, buf_of(on, b), &q, &rel));
  assert_int_equal(q, buf_of(on, c));
  assert_int_equal(rel, 128);
  assert_int_equal(nnmem_problem_buffers(p)[buf_of(on, c)].first, 0);
  assert_int_equal(nnmem_liveness_sub_buffers(on), 2);
  assert_int_equal(nnmem_liveness_sub_bytes(on), 320);
  assert_int_equal(nnmem_liveness_sub_buffers(off), 0);
  assert_int_equal(
      nnmem_problem_parent(nnmem_liveness_problem(off), 0, NULL, NULL),
      NNMEM_ERR_NOT_FOUND);
  uint64_t lb_on = 0, lb_off = 0;
  assert_ok(nnmem_problem_lower_bound(p, 1, &lb_on));
  assert_ok(nnmem_problem_lower_bound(nnmem_liveness_problem(off), 1, &lb_off));
  assert_int_equal(lb_on, 384);
  assert_int_equal(lb_off, 640);
  assert_int_equal(height(on), 384);
  assert_int_equal(height(off), 640);
  /* the profile sees the same arena */
  nnmem_liveness_destroy(on);
  nnmem_liveness_destroy(off);
  nnmem_graph_destroy(g);
}

/* Inputs that must stay copies: a graph input, a weight, an input whose
 * buffer a later in-place op reuses, the second Concat of one input;
 * a batch of 2 (not contiguous) skips the whole op. */
static void test_concat_skips(void **state) {
  (void)state;
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("s", &g));
  uint32_t x = T4(g, "X", IN, 1, 1), w = T4(g, "W", WGT, 1, 1),
           a = T4(g, "A", ACT, 1, 1), r = T4(g, "R", ACT, 1, 1),
           e = T4(g, "E", ACT, 1, 1), c1 = T4(g, "C1", ACT, 1, 4),
           c2 = T4(g, "C2", ACT, 1, 2), y = T4(g, "Y", OUT, 1, 7);
  op1(g, "a", x, a, 0);
  op1(g, "e", x, e, 0);
  uint32_t in1[4] = {x, w, a, e};
  OP(g, "concat1", "Concat", in1, 4, &c1, 1, 0);
  uint32_t in2[2] = {e, e}; /* e again: already inside C1 */
  OP(g, "concat2", "Concat", in2, 2, &c2, 1, 0);
  op1(g, "relu", a, r, NNMEM_OP_INPLACE); /* reuses A's bytes after C1 */
  uint32_t fin[3] = {c1, c2, r};
  OP(g, "tail", "Add", fin, 3, &y, 1, 0);
  nnmem_liveness_t *l = analyze(g, 0);
  const nnmem_problem_t *p = nnmem_liveness_problem(l);
  size_t q;
  uint64_t rel;
  assert_int_equal(nnmem_problem_parent(p, buf_of(l, x), NULL, NULL),
                   NNMEM_ERR_NOT_FOUND);
  assert_int_equal(buf_of(l, w), NNMEM_NO_BUFFER);
  assert_int_equal(nnmem_problem_parent(p, buf_of(l, a), NULL, NULL),
                   NNMEM_ERR_NOT_FOUND); /* relu writes into it later */
  assert_ok(nnmem_problem_parent(p, buf_of(l, e), &q, &rel));
  assert_int_equal(q, buf_of(l, c1));
  assert_int_equal(rel, 192); /* after X, W, A: 3 * 64 */
  assert_int_equal(nnmem_liveness_sub_buffers(l), 1);
  assert_int_equal(nnmem_problem_parent(p, buf_of(l, c1), NULL, NULL),
                   NNMEM_ERR_NOT_FOUND);
  (void)height(l);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
  /* batch 2: slices are not contiguous */
  assert_ok(nnmem_graph_create("b", &g));
  x = T4(g, "X", IN, 2, 1);
  a = T4(g, "A", ACT, 2, 1);
  uint32_t b = T4(g, "B", ACT, 2, 1), c = T4(g, "C", OUT, 2, 2);
  op1(g, "a", x, a, 0);
  op1(g, "b", x, b, 0);
  uint32_t ab[2] = {a, b};
  OP(g, "concat", "Concat", ab, 2, &c, 1, 0);
  l = analyze(g, 0);
  assert_int_equal(nnmem_liveness_sub_buffers(l), 0);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* Split: outputs are views of their slices; the input stays live while
 * they are. Concat of concats nests (a child of a child). */
static void test_split_and_nesting(void **state) {
  (void)state;
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("sp", &g));
  uint32_t x = T4(g, "X", IN, 1, 1), s = T4(g, "S", ACT, 1, 6),
           p1 = T4(g, "P", ACT, 1, 2), p2 = T4(g, "Q", ACT, 1, 4),
           u = T4(g, "U", ACT, 1, 2), v = T4(g, "V", ACT, 1, 4),
           a = T4(g, "A", ACT, 1, 1), b = T4(g, "B", ACT, 1, 1),
           inner = T4(g, "I", ACT, 1, 2), outer = T4(g, "O", ACT, 1, 3),
           y = T4(g, "Y", OUT, 1, 1);
  op1(g, "s", x, s, 0);
  uint32_t pq[2] = {p1, p2};
  OP(g, "split", "Split", &s, 1, pq, 2, 0);
  op1(g, "u", p1, u, 0);
  op1(g, "v", p2, v, 0);
  op1(g, "a", u, a, 0);
  op1(g, "b", v, b, 0);
  uint32_t ab[2] = {a, b};
  OP(g, "inner", "Concat", ab, 2, &inner, 1, 0);
  uint32_t ix[2] = {inner, a}; /* a is already inside I: copied */
  OP(g, "outer", "Concat", ix, 2, &outer, 1, 0);
  op1(g, "y", outer, y, 0);
  nnmem_liveness_t *l = analyze(g, 0);
  const nnmem_problem_t *p = nnmem_liveness_problem(l);
  size_t q;
  uint64_t rel;
  assert_ok(nnmem_problem_parent(p, buf_of(l, p1), &q, &rel));
  assert_int_equal(q, buf_of(l, s));
  assert_int_equal(rel, 0);
  assert_ok(nnmem_problem_parent(p, buf_of(l, p2), &q, &rel));
  assert_int_equal(q, buf_of(l, s));
  assert_int_equal(rel, 128);
  /* S lives until its last view (Q, read by op v at step 3) */
  assert_int_equal(nnmem_problem_buffers(p)[buf_of(l, s)].last, 4);
  assert_ok(nnmem_problem_parent(p, buf_of(l, b), &q, &rel));
  assert_int_equal(q, buf_of(l, inner));
  assert_int_equal(rel, 64);
  assert_ok(nnmem_problem_parent(p, buf_of(l, inner), &q, &rel));
  assert_int_equal(q, buf_of(l, outer));
  assert_int_equal(rel, 0);
  /* I, and so A and B, sit inside O: O is live from A's step */
  assert_int_equal(nnmem_problem_buffers(p)[buf_of(l, outer)].first,
                   nnmem_problem_buffers(p)[buf_of(l, a)].first);
  assert_int_equal(nnmem_liveness_sub_buffers(l), 5);
  assert_ok(nnmem_problem_check(p, NULL));
  (void)height(l);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* An input that is the end of an in-place chain (conv -> relu in place)
 * and an input that is a view (flatten) of an earlier tensor go into the
 * output: nothing writes their bytes after they are made. */
static void test_concat_inplace_and_view_inputs(void **state) {
  (void)state;
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("iv", &g));
  uint32_t x = T4(g, "X", IN, 1, 1), a = T4(g, "A", ACT, 1, 2),
           r = T4(g, "R", ACT, 1, 2), b = T4(g, "B", ACT, 1, 3),
           v = T4(g, "V", ACT, 1, 3), c = T4(g, "C", ACT, 1, 5),
           y = T4(g, "Y", OUT, 1, 1);
  op1(g, "a", x, a, 0);
  op1(g, "relu", a, r, NNMEM_OP_INPLACE); /* R reuses A's bytes */
  op1(g, "b", x, b, 0);
  op1(g, "view", b, v, NNMEM_OP_VIEW); /* V is B's bytes */
  uint32_t rv[2] = {r, v};
  OP(g, "concat", "Concat", rv, 2, &c, 1, 0);
  op1(g, "d", c, y, 0);
  nnmem_liveness_t *l = analyze(g, 0);
  const nnmem_problem_t *p = nnmem_liveness_problem(l);
  assert_int_equal(buf_of(l, a), buf_of(l, r));
  assert_int_equal(buf_of(l, b), buf_of(l, v));
  size_t q;
  uint64_t rel;
  assert_ok(nnmem_problem_parent(p, buf_of(l, r), &q, &rel));
  assert_int_equal(q, buf_of(l, c));
  assert_int_equal(rel, 0);
  assert_ok(nnmem_problem_parent(p, buf_of(l, v), &q, &rel));
  assert_int_equal(q, buf_of(l, c));
  assert_int_equal(rel, 128);
  /* C lives from step 0 (A made); peak X + C = 64 + 320 */
  assert_int_equal(height(l), 384);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concat_by_hand),
      cmocka_unit_test(test_concat_skips),
      cmocka_unit_test(test_split_and_nesting),
      cmocka_unit_test(test_concat_inplace_and_view_inputs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_liveness.c - liveness analysis and the memory profile on small
 * graphs whose lifetimes, buffers and peaks are computed by hand. Every plan
 * goes through the independent verifier (tu_plan_verified). */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

/* ---- helpers ------------------------------------------------------------*/

static nnmem_graph_t *new_graph(void) {
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("t", &g));
  return g;
}

static uint32_t T(nnmem_graph_t *g, const char *name, nnmem_tensor_kind_t kind,
                  uint64_t bytes) {
  nnmem_tensor_desc_t d = {0};
  d.name = name;
  d.kind = kind;
  d.bytes = bytes;
  uint32_t id = 0;
  nnmem_diag_t diag = {{0}};
  if (nnmem_graph_add_tensor(g, &d, &id, &diag) != NNMEM_OK)
    fail_msg("%s", diag.message);
  return id;
}

#define ACT NNMEM_TENSOR_ACTIVATION
#define IN NNMEM_TENSOR_INPUT
#define OUT NNMEM_TENSOR_OUTPUT
#define WGT NNMEM_TENSOR_WEIGHT

/* Adds op `name` reading in[0..nin) and writing out[0..nout). */
static void OP(nnmem_graph_t *g, const char *name, const uint32_t *in,
               uint32_t nin, const uint32_t *out, uint32_t nout, uint32_t flags,
               uint32_t idx, uint64_t ws) {
  nnmem_op_desc_t d = {0};
  d.name = name;
  d.type = "Op";
  d.inputs = in;
  d.n_inputs = nin;
  d.outputs = out;
  d.n_outputs = nout;
  d.flags = flags;
  d.inplace_input = idx;
  d.view_input = idx;
  d.workspace_bytes = ws;
  nnmem_diag_t diag = {{0}};
  if (nnmem_graph_add_op(g, &d, NULL, &diag) != NNMEM_OK)
    fail_msg("%s", diag.message);
}

/* 1-in 1-out op. */
static void op1(nnmem_graph_t *g, const char *name, uint32_t in, uint32_t out,
                uint32_t flags) {
  OP(g, name, &in, 1, &out, 1, flags, 0, 0);
}

static nnmem_liveness_t *analyze(const nnmem_graph_t *g,
                                 const nnmem_liveness_config_t *cfg) {
  nnmem_liveness_t *l = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_liveness_analyze(g, cfg, &l, &diag);
  if (st != NNMEM_OK)
    fail_msg("liveness: %s: %s", nnmem_status_name(st), diag.message);
  return l;
}

/* Asserts tensor `t` lives on [first, last) in a buffer whose problem id is
 * `buf_id` (NULL = no buffer). */
static void expect_tensor(const nnmem_liveness_t *l, uint32_t t, uint64_t first,
                          uint64_t last, const char *buf_id) {
  nnmem_tensor_live_t tl;
  assert_ok(nnmem_liveness_tensor(l, t, &tl));
  assert_int_equal(tl.first, first);
  assert_int_equal(tl.last, last);
  if (!buf_id) {
    assert_int_equal(tl.buffer, NNMEM_NO_BUFFER);
    return;
  }
  assert_int_not_equal(tl.buffer, NNMEM_NO_BUFFER);
  assert_string_equal(nnmem_problem_id(nnmem_liveness_problem(l), tl.buffer),
                      buf_id);
}

/* Asserts problem buffer `id` has the given size and lifetime. */
static void expect_buffer(const nnmem_liveness_t *l, const char *id,
                          uint64_t size, uint64_t first, uint64_t last) {
  const nnmem_problem_t *p = nnmem_liveness_problem(l);
  size_t i;
  if (nnmem_problem_find(p, id, &i) != NNMEM_OK) fail_msg("no buffer '%s'", id);
  const nnmem_buffer_t *b = &nnmem_problem_buffers(p)[i];
  assert_int_equal(b->size, size);
  assert_int_equal(b->first, first);
  assert_int_equal(b->last, last);
}

static uint64_t lower_bound(const nnmem_liveness_t *l) {
  uint64_t lb = 0;
  assert_ok(nnmem_problem_lower_bound(nnmem_liveness_problem(l), 1, &lb));
  return lb;
}

/* Plans with `strategy`, verifies, returns the height. */
static uint64_t plan_height(const nnmem_liveness_t *l,
                            nnmem_strategy_t strategy) {
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.strategy = strategy;
  nnmem_plan_t *plan = tu_plan_verified(nnmem_liveness_problem(l), &cfg);
  uint64_t h = nnmem_plan_height(plan);
  nnmem_plan_destroy(plan);
  return h;
}

/* ---- lifetimes ----------------------------------------------------------*/

/* in -> op0 -> a -> op1 -> b -> op2 -> out, all 100 bytes.
 *   in [0,1)  a [0,2)  b [1,3)  out [2,3)
 * Live bytes per step: 200, 200, 200 -> LB 200; greedy-size packs into 2
 * slots: height 200; naive 400. */
static void test_chain(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 100), a = T(g, "a", ACT, 100);
  uint32_t b = T(g, "b", ACT, 100), out = T(g, "out", OUT, 100);
  op1(g, "op0", in, a, 0);
  op1(g, "op1", a, b, 0);
  op1(g, "op2", b, out, 0);
  nnmem_liveness_t *l = analyze(g, NULL);
  assert_int_equal(nnmem_liveness_steps(l), 3);
  const uint32_t *order = nnmem_liveness_order(l);
  for (uint32_t i = 0; i < 3; i++)
    assert_int_equal(order[i], i);
  expect_tensor(l, in, 0, 1, "in");
  expect_tensor(l, a, 0, 2, "a");
  expect_tensor(l, b, 1, 3, "b");
  expect_tensor(l, out, 2, 3, "out");
  assert_int_equal(nnmem_problem_count(nnmem_liveness_problem(l)), 4);
  assert_int_equal(nnmem_liveness_aliased_tensors(l), 0);
  assert_int_equal(nnmem_liveness_weight_bytes(l), 0);
  assert_int_equal(nnmem_liveness_buffer_kind(l, 0), NNMEM_BUFFER_ACTIVATION);
  assert_int_equal(lower_bound(l), 200);
  assert_int_equal(plan_height(l, NNMEM_STRATEGY_GREEDY_SIZE), 200);
  assert_int_equal(plan_height(l, NNMEM_STRATEGY_NAIVE), 400);

  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.strategy = NNMEM_STRATEGY_GREEDY_SIZE;
  nnmem_plan_t *plan = tu_plan_verified(nnmem_liveness_problem(l), &cfg);
  nnmem_profile_t pr;
  assert_ok(nnmem_profile_compute(g, l, plan, 0, &pr));
  assert_int_equal(pr.size, sizeof pr);
  assert_int_equal(pr.arena_height, 200);
  assert_int_equal(pr.arena_lower_bound, 200);
  assert_int_equal(pr.workspace_memory, 0);
  assert_int_equal(pr.activation_memory, 200);
  assert_int_equal(pr.weight_memory, 0);
  assert_int_equal(pr.peak_memory, 200);
  assert_int_equal(pr.lower_bound, 200);
  assert_int_equal(pr.naive_arena, 400);
  assert_int_equal(pr.naive_memory, 400);
  assert_true(pr.reuse_ratio > 0.4999 && pr.reuse_ratio < 0.5001);
  assert_int_equal(pr.peak_step, 0);
  assert_int_equal(pr.buffers, 4);
  assert_int_equal(pr.tensors, 4);
  assert_int_equal(pr.strategy, NNMEM_STRATEGY_GREEDY_SIZE);
  assert_true(pr.plan_seconds >= 0.0);
  nnmem_plan_destroy(plan);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* The example: A -> Op1 -> B -> Op2 -> C, B -> Op3 -> D (A input,
 * C and D outputs). B is freed only after Op2 and Op3: [0, 3). */
static void test_abcd(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t A = T(g, "A", IN, 10), B = T(g, "B", ACT, 20);
  uint32_t C = T(g, "C", OUT, 30), D = T(g, "D", OUT, 40);
  op1(g, "Op1", A, B, 0);
  op1(g, "Op2", B, C, 0);
  op1(g, "Op3", B, D, 0);
  nnmem_liveness_t *l = analyze(g, NULL);
  expect_tensor(l, A, 0, 1, "A");
  expect_tensor(l, B, 0, 3, "B");
  expect_tensor(l, C, 1, 3, "C");
  expect_tensor(l, D, 2, 3, "D");
  expect_buffer(l, "B", 20, 0, 3);
  /* steps: 0: A+B = 30, 1: B+C = 50, 2: B+C+D = 90 */
  assert_int_equal(lower_bound(l), 90);
  assert_int_equal(plan_height(l, NNMEM_STRATEGY_GREEDY_SIZE), 90);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* Diamond: in(10) -> op0 -> a(20); a -> op1 -> b(30); a -> op2 -> c(40);
 * (b, c) -> op3 -> out(50).
 *   in [0,1) a [0,3) b [1,4) c [2,4) out [3,4)
 * live: 30, 50, 90, 120 -> LB 120 at step 3. */
static void test_diamond(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 10), a = T(g, "a", ACT, 20);
  uint32_t b = T(g, "b", ACT, 30), c = T(g, "c", ACT, 40);
  uint32_t out = T(g, "out", OUT, 50);
  op1(g, "op0", in, a, 0);
  op1(g, "op1", a, b, 0);
  op1(g, "op2", a, c, 0);
  uint32_t bc[2] = {b, c};
  OP(g, "op3", bc, 2, &out, 1, 0, 0, 0);
  nnmem_liveness_t *l = analyze(g, NULL);
  expect_tensor(l, in, 0, 1, "in");
  expect_tensor(l, a, 0, 3, "a");
  expect_tensor(l, b, 1, 4, "b");
  expect_tensor(l, c, 2, 4, "c");
  expect_tensor(l, out, 3, 4, "out");
  assert_int_equal(lower_bound(l), 120);
  uint64_t h = plan_height(l, NNMEM_STRATEGY_AUTO);
  assert_true(h >= 120);
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  nnmem_plan_t *plan = tu_plan_verified(nnmem_liveness_problem(l), &cfg);
  nnmem_profile_t pr;
  assert_ok(nnmem_profile_compute(g, l, plan, 1, &pr));
  assert_int_equal(pr.peak_step, 3);
  assert_int_equal(pr.arena_lower_bound, 120);
  assert_int_equal(pr.naive_arena, 150);
  nnmem_plan_destroy(plan);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* Skip connection: x(input, 8) -> conv -> y(8) -> relu -> z(8);
 * (z, x) -> add -> out(8). x stays live until the add: [0, 3). */
static void test_skip(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t x = T(g, "x", IN, 8), y = T(g, "y", ACT, 8);
  uint32_t z = T(g, "z", ACT, 8), out = T(g, "out", OUT, 8);
  op1(g, "conv", x, y, 0);
  op1(g, "relu", y, z, 0);
  uint32_t zx[2] = {z, x};
  OP(g, "add", zx, 2, &out, 1, 0, 0, 0);
  nnmem_liveness_t *l = analyze(g, NULL);
  expect_tensor(l, x, 0, 3, "x");
  expect_tensor(l, y, 0, 2, "y");
  expect_tensor(l, z, 1, 3, "z");
  expect_tensor(l, out, 2, 3, "out");
  /* steps: 0: x+y 16, 1: x+y+z 24, 2: x+z+out 24 */
  assert_int_equal(lower_bound(l), 24);
  assert_int_equal(plan_height(l, NNMEM_STRATEGY_GREEDY_SIZE), 24);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* Inputs and outputs: an unread input lives [0, 1), a read one to its last
 * reader; an output produced at step 0 of 3 lives [0, 3); an activation
 * nobody reads lives [p, p + 1). */
static void test_io_lifetimes(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t unused = T(g, "unused", IN, 4), late = T(g, "late", IN, 4);
  uint32_t early = T(g, "early", OUT, 4), dead = T(g, "dead", ACT, 4);
  uint32_t x = T(g, "x", ACT, 4), out = T(g, "out", OUT, 4);
  uint32_t outs0[2] = {early, x};
  OP(g, "s0", NULL, 0, outs0, 2, 0, 0, 0);
  op1(g, "s1", x, dead, 0);
  uint32_t in2[2] = {x, late};
  OP(g, "s2", in2, 2, &out, 1, 0, 0, 0);
  nnmem_liveness_t *l = analyze(g, NULL);
  expect_tensor(l, unused, 0, 1, "unused");
  expect_tensor(l, late, 0, 3, "late");
  expect_tensor(l, early, 0, 3, "early");
  expect_tensor(l, x, 0, 3, "x");
  expect_tensor(l, dead, 1, 2, "dead");
  expect_tensor(l, out, 2, 3, "out");
  /* problem order: inputs first, then outputs step by step */
  const nnmem_problem_t *p = nnmem_liveness_problem(l);
  assert_int_equal(nnmem_problem_count(p), 6);
  assert_string_equal(nnmem_problem_id(p, 0), "unused");
  assert_string_equal(nnmem_problem_id(p, 1), "late");
  assert_string_equal(nnmem_problem_id(p, 2), "early");
  assert_string_equal(nnmem_problem_id(p, 3), "x");
  assert_string_equal(nnmem_problem_id(p, 4), "dead");
  assert_string_equal(nnmem_problem_id(p, 5), "out");
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* ---- in-place -----------------------------------------------------------*/

/* conv -> bn -> relu all in place: one buffer. */
static void test_inplace_dies(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 64), c = T(g, "c", ACT, 64);
  uint32_t bn = T(g, "bn", ACT, 64), r = T(g, "r", ACT, 48);
  uint32_t out = T(g, "out", OUT, 16);
  op1(g, "conv", in, c, 0);
  op1(g, "bnop", c, bn, NNMEM_OP_INPLACE);
  op1(g, "relu", bn, r, NNMEM_OP_INPLACE); /* smaller output fits */
  op1(g, "head", r, out, 0);
  nnmem_liveness_t *l = analyze(g, NULL);
  expect_tensor(l, c, 0, 2, "c");
  expect_tensor(l, bn, 1, 3, "c");
  expect_tensor(l, r, 2, 4, "c");
  expect_buffer(l, "c", 64, 0, 4);
  assert_int_equal(nnmem_problem_count(nnmem_liveness_problem(l)), 3);
  assert_int_equal(nnmem_liveness_aliased_tensors(l), 2);
  /* in+c 128, c 64, c 64, c+out 80 */
  assert_int_equal(lower_bound(l), 128);
  assert_int_equal(plan_height(l, NNMEM_STRATEGY_GREEDY_SIZE), 128);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* In place is refused when the input is read later, when the output is
 * larger, and when the input is a graph input or output. */
static void test_inplace_refused(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 16), a = T(g, "a", ACT, 16);
  uint32_t b = T(g, "b", ACT, 16), big = T(g, "big", ACT, 32);
  uint32_t o1 = T(g, "o1", OUT, 16), c = T(g, "c", ACT, 16);
  uint32_t d = T(g, "d", OUT, 16);
  op1(g, "ip_input", in, a, NNMEM_OP_INPLACE); /* graph input: refused */
  op1(g, "ip_alive", a, b, NNMEM_OP_INPLACE);  /* a read at step 2 too */
  uint32_t ab[2] = {a, b};
  OP(g, "ip_big", ab, 2, &big, 1, NNMEM_OP_INPLACE, 1, 0); /* 32 > 16 */
  op1(g, "mk_o1", big, o1, 0);
  op1(g, "ip_output", o1, c, NNMEM_OP_INPLACE); /* o1 is a graph output */
  op1(g, "ip_ok", c, d, NNMEM_OP_INPLACE);      /* c dies: d joins it */
  nnmem_liveness_t *l = analyze(g, NULL);
  expect_tensor(l, in, 0, 1, "in");
  expect_tensor(l, a, 0, 3, "a");
  expect_tensor(l, b, 1, 3, "b");
  expect_tensor(l, big, 2, 4, "big");
  expect_tensor(l, o1, 3, 6, "o1");
  expect_tensor(l, c, 4, 6, "c");
  expect_tensor(l, d, 5, 6, "c");
  expect_buffer(l, "c", 16, 4, 6);
  assert_int_equal(nnmem_liveness_aliased_tensors(l), 1);
  assert_int_equal(nnmem_problem_count(nnmem_liveness_problem(l)), 6);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* An in-place Add reading the same tensor twice: it dies here. */
static void test_inplace_same_input_twice(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 8), a = T(g, "a", ACT, 8);
  uint32_t s = T(g, "s", ACT, 8), out = T(g, "out", OUT, 8);
  op1(g, "p", in, a, 0);
  uint32_t aa[2] = {a, a};
  OP(g, "sq", aa, 2, &s, 1, NNMEM_OP_INPLACE, 1, 0);
  op1(g, "q", s, out, 0);
  nnmem_liveness_t *l = analyze(g, NULL);
  expect_tensor(l, s, 1, 3, "a");
  expect_buffer(l, "a", 8, 0, 3);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* ---- views --------------------------------------------------------------*/

/* a(16) is viewed as v(24, larger) at step 1; v is read at step 3, so a's
 * buffer lives to 4 even though a itself is last read at step 2. The
 * in-place op at step 2 on a must not reuse the buffer (v is still live).
 *   steps: 0 mk_a: in -> a, 1 view: a -> v, 2 ip: a -> w (in place refused),
 *          3 use: (v, w) -> out */
static void test_view_extends(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 8), a = T(g, "a", ACT, 16);
  uint32_t v = T(g, "v", ACT, 24), w = T(g, "w", ACT, 16);
  uint32_t out = T(g, "out", OUT, 8);
  op1(g, "mk_a", in, a, 0);
  op1(g, "view", a, v, NNMEM_OP_VIEW);
  op1(g, "ip", a, w, NNMEM_OP_INPLACE);
  uint32_t vw[2] = {v, w};
  OP(g, "use", vw, 2, &out, 1, 0, 0, 0);
  nnmem_liveness_t *l = analyze(g, NULL);
  expect_tensor(l, a, 0, 3, "a");
  expect_tensor(l, v, 1, 4, "a");
  expect_tensor(l, w, 2, 4, "w");
  expect_buffer(l, "a", 24, 0, 4);
  assert_int_equal(nnmem_liveness_aliased_tensors(l), 1);
  /* steps: 0: in+a 32, 1: a 24, 2: a+w 40, 3: a+w+out 48 */
  assert_int_equal(lower_bound(l), 48);
  assert_int_equal(plan_height(l, NNMEM_STRATEGY_GREEDY_SIZE), 48);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* Views of a graph input and of a weight; a view that is a graph output
 * keeps its buffer to the end. */
static void test_view_io_weight(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 32), w = T(g, "w", WGT, 100);
  uint32_t vi = T(g, "vi", ACT, 32), vw = T(g, "vw", ACT, 100);
  uint32_t m = T(g, "m", ACT, 32), out = T(g, "out", OUT, 32);
  uint32_t last = T(g, "last", OUT, 4);
  op1(g, "reshape_in", in, vi, NNMEM_OP_VIEW);
  op1(g, "reshape_w", w, vw, NNMEM_OP_VIEW);
  uint32_t xs[2] = {vi, vw};
  OP(g, "mm", xs, 2, &m, 1, 0, 0, 0);
  op1(g, "flat", m, out, NNMEM_OP_VIEW);
  op1(g, "tail", out, last, 0);
  nnmem_liveness_t *l = analyze(g, NULL);
  expect_tensor(l, in, 0, 1, "in");
  expect_tensor(l, vi, 0, 3, "in");
  expect_buffer(l, "in", 32, 0, 3);
  expect_tensor(l, vw, 1, 3, NULL); /* lives in the weight region */
  nnmem_tensor_live_t tl;
  assert_ok(nnmem_liveness_tensor(l, vw, &tl));
  assert_int_equal(tl.weight_offset, 0);
  expect_tensor(l, w, 0, 5, NULL);
  expect_tensor(l, m, 2, 4, "m");
  expect_tensor(l, out, 3, 5, "m");
  expect_buffer(l, "m", 32, 2, 5);
  assert_int_equal(nnmem_liveness_weight_bytes(l), 100);
  assert_int_equal(nnmem_liveness_aliased_tensors(l), 3);
  assert_int_equal(nnmem_problem_count(nnmem_liveness_problem(l)), 3);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* ---- workspace ----------------------------------------------------------*/

/* conv at step 1 has 1000 bytes of scratch; gemm at step 2 writes a
 * WORKSPACE tensor of 300 bytes that nobody reads. */
static void test_workspace(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 100), a = T(g, "a", ACT, 100);
  uint32_t b = T(g, "b", ACT, 100), out = T(g, "out", OUT, 100);
  uint32_t scratch = T(g, "scratch", NNMEM_TENSOR_WORKSPACE, 300);
  op1(g, "pre", in, a, 0);
  OP(g, "conv", &a, 1, &b, 1, 0, 0, 1000);
  uint32_t outs[2] = {out, scratch};
  OP(g, "gemm", &b, 1, outs, 2, 0, 0, 0);
  nnmem_liveness_t *l = analyze(g, NULL);
  expect_buffer(l, "conv:workspace", 1000, 1, 2);
  expect_buffer(l, "scratch", 300, 2, 3);
  expect_tensor(l, scratch, 2, 3, "scratch");
  const nnmem_problem_t *p = nnmem_liveness_problem(l);
  assert_int_equal(nnmem_problem_count(p), 6);
  size_t i;
  assert_ok(nnmem_problem_find(p, "conv:workspace", &i));
  assert_int_equal(nnmem_liveness_buffer_kind(l, i), NNMEM_BUFFER_WORKSPACE);
  assert_ok(nnmem_problem_find(p, "scratch", &i));
  assert_int_equal(nnmem_liveness_buffer_kind(l, i), NNMEM_BUFFER_WORKSPACE);
  assert_ok(nnmem_problem_find(p, "b", &i));
  assert_int_equal(nnmem_liveness_buffer_kind(l, i), NNMEM_BUFFER_ACTIVATION);
  /* steps: 0: in+a 200, 1: a+b+ws 1200, 2: b+out+scratch 500 */
  assert_int_equal(lower_bound(l), 1200);
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.strategy = NNMEM_STRATEGY_GREEDY_SIZE;
  nnmem_plan_t *plan = tu_plan_verified(p, &cfg);
  assert_int_equal(nnmem_plan_height(plan), 1200);
  nnmem_profile_t pr;
  assert_ok(nnmem_profile_compute(g, l, plan, 0, &pr));
  assert_int_equal(pr.workspace_memory, 1000);
  assert_int_equal(pr.activation_memory, 200);
  assert_int_equal(pr.peak_memory, 1200);
  assert_int_equal(pr.arena_lower_bound, 1200);
  assert_int_equal(pr.peak_step, 1);
  /* naive: 4 x 100 + scratch 300 + workspace 1000 */
  assert_int_equal(pr.naive_arena, 1700);
  nnmem_plan_destroy(plan);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* A tensor named like a workspace id pushes the workspace id to "#2". */
static void test_workspace_id_clash(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 4);
  uint32_t clash = T(g, "op:workspace", ACT, 4);
  OP(g, "op", &in, 1, &clash, 1, 0, 0, 64);
  nnmem_liveness_t *l = analyze(g, NULL);
  expect_buffer(l, "op:workspace", 4, 0, 1);
  expect_buffer(l, "op:workspace#2", 64, 0, 1);
  assert_ok(nnmem_problem_check(nnmem_liveness_problem(l), NULL));
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* ---- weights ------------------------------------------------------------*/

/* Weights / constants never enter the problem; the region packs them end to
 * end, each at a multiple of max(its align, cfg alignment). */
static void test_weights(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 40);
  uint32_t w1 = T(g, "w1", WGT, 10);
  nnmem_tensor_desc_t d = {0};
  d.name = "w2";
  d.kind = WGT;
  d.bytes = 4;
  d.align = 256;
  uint32_t w2;
  assert_ok(nnmem_graph_add_tensor(g, &d, &w2, NULL));
  uint32_t c = T(g, "c", NNMEM_TENSOR_CONSTANT, 100);
  uint32_t out = T(g, "out", OUT, 40);
  uint32_t ins[4] = {in, w1, w2, c};
  OP(g, "fc", ins, 4, &out, 1, 0, 0, 0);

  /* alignment 1: w1 @0 (10), w2 @256 (256 rounded), c @512 (100) = 612 */
  nnmem_liveness_t *l = analyze(g, NULL);
  assert_int_equal(nnmem_problem_count(nnmem_liveness_problem(l)), 2);
  assert_int_equal(nnmem_liveness_weight_bytes(l), 612);
  nnmem_tensor_live_t tl;
  assert_ok(nnmem_liveness_tensor(l, w1, &tl));
  assert_int_equal(tl.buffer, NNMEM_NO_BUFFER);
  assert_int_equal(tl.weight_offset, 0);
  assert_ok(nnmem_liveness_tensor(l, w2, &tl));
  assert_int_equal(tl.weight_offset, 256);
  assert_ok(nnmem_liveness_tensor(l, c, &tl));
  assert_int_equal(tl.weight_offset, 512);
  nnmem_liveness_destroy(l);

  /* alignment 64: w1 @0 (64), w2 @256 (256), c @512 (128) = 640 */
  nnmem_liveness_config_t cfg;
  nnmem_liveness_config_init(&cfg);
  cfg.alignment = 64;
  l = analyze(g, &cfg);
  assert_int_equal(nnmem_liveness_weight_bytes(l), 640);
  nnmem_planner_config_t pc;
  nnmem_planner_config_init(&pc);
  pc.alignment = 64;
  nnmem_plan_t *plan = tu_plan_verified(nnmem_liveness_problem(l), &pc);
  nnmem_profile_t pr;
  assert_ok(nnmem_profile_compute(g, l, plan, 64, &pr));
  assert_int_equal(pr.weight_memory, 640);
  /* in and out (40 each, 64 aligned) overlap at step 0 */
  assert_int_equal(pr.arena_lower_bound, 128);
  assert_int_equal(pr.lower_bound, 768);
  assert_int_equal(pr.naive_arena, 128);
  assert_int_equal(pr.naive_memory, 768);
  assert_int_equal(pr.peak_memory, 640 + pr.arena_height);
  assert_int_equal(pr.arena_height, 128);
  nnmem_plan_destroy(plan);
  nnmem_liveness_destroy(l);

  cfg.alignment = 48;
  assert_int_equal(nnmem_liveness_analyze(g, &cfg, &l, NULL),
                   NNMEM_ERR_INVALID);
  nnmem_graph_destroy(g);
}

/* Zero ops; only weights; only an input. */
static void test_empty_graphs(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  nnmem_liveness_t *l = analyze(g, NULL);
  assert_int_equal(nnmem_liveness_steps(l), 0);
  assert_int_equal(nnmem_problem_count(nnmem_liveness_problem(l)), 0);
  nnmem_plan_t *plan = tu_plan_verified(nnmem_liveness_problem(l), NULL);
  nnmem_profile_t pr;
  assert_ok(nnmem_profile_compute(g, l, plan, 0, &pr));
  assert_int_equal(pr.peak_memory, 0);
  assert_int_equal(pr.naive_arena, 0);
  assert_true(pr.reuse_ratio == 0.0);
  nnmem_plan_destroy(plan);
  nnmem_liveness_destroy(l);

  T(g, "w", WGT, 1000);
  T(g, "k", NNMEM_TENSOR_CONSTANT, 24);
  l = analyze(g, NULL);
  assert_int_equal(nnmem_problem_count(nnmem_liveness_problem(l)), 0);
  assert_int_equal(nnmem_liveness_weight_bytes(l), 1024);
  nnmem_liveness_destroy(l);

  T(g, "x", IN, 8);
  l = analyze(g, NULL);
  expect_buffer(l, "x", 8, 0, 1);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* ---- no_reuse -----------------------------------------------------------*/

static void test_no_reuse(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 16), a = T(g, "a", ACT, 16);
  uint32_t b = T(g, "b", ACT, 16), v = T(g, "v", ACT, 16);
  uint32_t out = T(g, "out", OUT, 16);
  T(g, "w", WGT, 16);
  op1(g, "conv", in, a, 0);
  op1(g, "relu", a, b, NNMEM_OP_INPLACE);
  op1(g, "view", b, v, NNMEM_OP_VIEW);
  op1(g, "head", v, out, 0);
  nnmem_liveness_config_t cfg;
  nnmem_liveness_config_init(&cfg);
  cfg.no_reuse = 1;
  nnmem_liveness_t *l = analyze(g, &cfg);
  assert_int_equal(nnmem_problem_count(nnmem_liveness_problem(l)), 5);
  assert_int_equal(nnmem_liveness_aliased_tensors(l), 0);
  expect_tensor(l, b, 1, 3, "b");
  expect_tensor(l, v, 2, 4, "v");
  nnmem_liveness_destroy(l);
  l = analyze(g, NULL); /* with reuse: a, b, v share one buffer */
  assert_int_equal(nnmem_problem_count(nnmem_liveness_problem(l)), 3);
  assert_int_equal(nnmem_liveness_aliased_tensors(l), 2);
  expect_buffer(l, "a", 16, 0, 4);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* ---- orders -------------------------------------------------------------*/

/* Two branches of different widths: in -> {big1 -> big2, small} -> join.
 * The order changes lifetimes. */
static void test_user_order(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t in = T(g, "in", IN, 1), x1 = T(g, "x1", ACT, 100);
  uint32_t x2 = T(g, "x2", ACT, 10), s = T(g, "s", ACT, 50);
  uint32_t out = T(g, "out", OUT, 1);
  op1(g, "b1", in, x1, 0); /* 0 */
  op1(g, "b2", x1, x2, 0); /* 1 */
  op1(g, "sm", in, s, 0);  /* 2 */
  uint32_t j[2] = {x2, s};
  OP(g, "join", j, 2, &out, 1, 0, 0, 0); /* 3 */

  /* default 0 1 2 3: x1 [0,2) x2 [1,4) s [2,4) in [0,3)
   * live: 101, 111, 61, 61 -> 111 */
  nnmem_liveness_t *l = analyze(g, NULL);
  assert_int_equal(lower_bound(l), 111);
  nnmem_liveness_destroy(l);

  /* order 2 0 1 3: s [0,4) in [0,2) x1 [1,3) x2 [2,4)
   * live: 51, 151, 160, 61 -> 160 */
  uint32_t order[4] = {2, 0, 1, 3};
  nnmem_liveness_config_t cfg;
  nnmem_liveness_config_init(&cfg);
  cfg.order = order;
  l = analyze(g, &cfg);
  const uint32_t *used = nnmem_liveness_order(l);
  for (int i = 0; i < 4; i++)
    assert_int_equal(used[i], order[i]);
  expect_tensor(l, s, 0, 4, "s");
  expect_tensor(l, x1, 1, 3, "x1");
  assert_int_equal(lower_bound(l), 160);
  nnmem_liveness_destroy(l);

  nnmem_diag_t diag = {{0}};
  uint32_t bad_topo[4] = {1, 0, 2, 3};
  cfg.order = bad_topo;
  assert_int_equal(nnmem_liveness_analyze(g, &cfg, &l, &diag),
                   NNMEM_ERR_INVALID);
  assert_null(l);
  assert_string_equal(diag.message,
                      "order is not topological: op 'b2' at step 0 reads "
                      "tensor 'x1' produced by op 'b1' at step 1");
  uint32_t dup[4] = {0, 1, 1, 3};
  cfg.order = dup;
  assert_int_equal(nnmem_liveness_analyze(g, &cfg, &l, &diag),
                   NNMEM_ERR_INVALID);
  assert_string_equal(diag.message,
                      "op 'b2' appears twice in the order (steps 1 and 2)");
  uint32_t range[4] = {0, 1, 7, 3};
  cfg.order = range;
  assert_int_equal(nnmem_liveness_analyze(g, &cfg, &l, &diag),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(diag.message, "order[2] = 7"));
  nnmem_graph_destroy(g);
}

/* Invalid graphs are rejected with the graph checker's message. */
static void test_invalid_graphs(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t a = T(g, "a", ACT, 4), b = T(g, "b", ACT, 4);
  op1(g, "X", a, b, 0);
  nnmem_liveness_t *l = NULL;
  nnmem_diag_t diag = {{0}};
  assert_int_equal(nnmem_liveness_analyze(g, NULL, &l, &diag),
                   NNMEM_ERR_INVALID);
  assert_string_equal(diag.message,
                      "op 'X' reads tensor 'a' which nobody produces");
  assert_null(l);
  op1(g, "Y", b, a, 0); /* now a cycle X -> Y -> X */
  assert_int_equal(nnmem_liveness_analyze(g, NULL, &l, &diag), NNMEM_ERR_CYCLE);
  assert_non_null(strstr(diag.message, "cycle"));
  nnmem_graph_destroy(g);
}

/* ---- randomized ---------------------------------------------------------*/

/* Random DAGs with random flags: every tensor's lifetime lies inside its
 * buffer's, buffer sizes cover their tensors, every plan verifies, the
 * profile is consistent (LB <= height <= naive for greedy-size). */
static void check_random_graph(uint64_t seed) {
  uint64_t rs = seed;
  nnmem_graph_t *g = new_graph();
  enum { N = 40 };
  char name[16];
  uint32_t ids[N + 2];
  ids[0] = T(g, "in", IN, 1 + tu_rand(&rs) % 64);
  for (int k = 1; k <= N; k++) {
    snprintf(name, sizeof name, "t%d", k);
    ids[k] = T(g, name, k == N ? OUT : ACT, 1 + tu_rand(&rs) % 64);
  }
  ids[N + 1] = T(g, "w", WGT, 32);
  for (int k = 1; k <= N; k++) {
    uint32_t in[3], nin = 1 + (uint32_t)(tu_rand(&rs) % 3);
    for (uint32_t i = 0; i < nin; i++)
      in[i] = ids[tu_rand(&rs) % k];
    if (tu_rand(&rs) % 5 == 0) in[nin - 1] = ids[N + 1];
    uint32_t r = (uint32_t)(tu_rand(&rs) % 4);
    uint32_t flags = r == 1 ? NNMEM_OP_INPLACE : r == 2 ? NNMEM_OP_VIEW : 0;
    snprintf(name, sizeof name, "op%d", k);
    OP(g, name, in, nin, &ids[k], 1, flags, (uint32_t)(tu_rand(&rs) % nin),
       tu_rand(&rs) % 3 == 0 ? tu_rand(&rs) % 100 : 0);
  }
  for (int no_reuse = 0; no_reuse < 2; no_reuse++) {
    nnmem_liveness_config_t cfg;
    nnmem_liveness_config_init(&cfg);
    cfg.no_reuse = no_reuse;
    nnmem_liveness_t *l = analyze(g, &cfg);
    const nnmem_problem_t *p = nnmem_liveness_problem(l);
    const nnmem_buffer_t *bufs = nnmem_problem_buffers(p);
    for (uint32_t t = 0; t <= N; t++) {
      nnmem_tensor_live_t tl;
      nnmem_tensor_info_t ti;
      assert_ok(nnmem_liveness_tensor(l, ids[t], &tl));
      assert_ok(nnmem_graph_tensor(g, ids[t], &ti));
      if (tl.buffer == NNMEM_NO_BUFFER) continue; /* a view of w */
      const nnmem_buffer_t *b = &bufs[tl.buffer];
      if (b->first > tl.first || b->last < tl.last || b->size < ti.bytes)
        fail_msg("seed %llu: tensor %s outside its buffer",
                 (unsigned long long)seed, ti.name);
    }
    nnmem_planner_config_t pc;
    nnmem_planner_config_init(&pc);
    pc.strategy = NNMEM_STRATEGY_GREEDY_SIZE;
    pc.alignment = 8;
    nnmem_plan_t *plan = tu_plan_verified(p, &pc);
    nnmem_profile_t pr;
    assert_ok(nnmem_profile_compute(g, l, plan, 8, &pr));
    if (pr.arena_lower_bound > pr.arena_height ||
        pr.arena_height > pr.naive_arena || pr.lower_bound > pr.peak_memory)
      fail_msg("seed %llu: LB %llu height %llu naive %llu",
               (unsigned long long)seed,
               (unsigned long long)pr.arena_lower_bound,
               (unsigned long long)pr.arena_height,
               (unsigned long long)pr.naive_arena);
    nnmem_plan_destroy(plan);
    nnmem_liveness_destroy(l);
  }
  nnmem_graph_destroy(g);
}

static void test_random(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 200; seed++)
    check_random_graph(seed * 7919);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chain),
      cmocka_unit_test(test_abcd),
      cmocka_unit_test(test_diamond),
      cmocka_unit_test(test_skip),
      cmocka_unit_test(test_io_lifetimes),
      cmocka_unit_test(test_inplace_dies),
      cmocka_unit_test(test_inplace_refused),
      cmocka_unit_test(test_inplace_same_input_twice),
      cmocka_unit_test(test_view_extends),
      cmocka_unit_test(test_view_io_weight),
      cmocka_unit_test(test_workspace),
      cmocka_unit_test(test_workspace_id_clash),
      cmocka_unit_test(test_weights),
      cmocka_unit_test(test_empty_graphs),
      cmocka_unit_test(test_no_reuse),
      cmocka_unit_test(test_user_order),
      cmocka_unit_test(test_invalid_graphs),
      cmocka_unit_test(test_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_graph.c - the graph IR: dtypes and kinds, tensor and op validation,
 * name lookup, nnmem_graph_check and the stable schedule. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

/* ---- helpers ------------------------------------------------------------*/

static nnmem_status_t op_try(nnmem_graph_t *g, const char *name,
                             const uint32_t *in, uint32_t nin,
                             const uint32_t *out, uint32_t nout, uint32_t flags,
                             uint32_t idx, nnmem_diag_t *diag) {
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
  return nnmem_graph_add_op(g, &d, NULL, diag);
}

/* Adds a 1-in 1-out op. */
static void op1(nnmem_graph_t *g, const char *name, uint32_t in, uint32_t out) {
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = op_try(g, name, &in, 1, &out, 1, 0, 0, &diag);
  if (st != NNMEM_OK) fail_msg("add_op %s: %s", name, diag.message);
}

static nnmem_graph_t *new_graph(void) {
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("t", &g));
  return g;
}

/* ---- dtypes and kinds ---------------------------------------------------*/

static void test_dtypes(void **state) {
  (void)state;
  assert_int_equal(nnmem_dtype_size(NNMEM_DTYPE_UNDEFINED), 0);
  assert_int_equal(nnmem_dtype_size(NNMEM_DTYPE_FLOAT32), 4);
  assert_int_equal(nnmem_dtype_size(NNMEM_DTYPE_FLOAT16), 2);
  assert_int_equal(nnmem_dtype_size(NNMEM_DTYPE_BFLOAT16), 2);
  assert_int_equal(nnmem_dtype_size(NNMEM_DTYPE_FLOAT64), 8);
  assert_int_equal(nnmem_dtype_size(NNMEM_DTYPE_INT8), 1);
  assert_int_equal(nnmem_dtype_size(NNMEM_DTYPE_UINT16), 2);
  assert_int_equal(nnmem_dtype_size(NNMEM_DTYPE_INT64), 8);
  assert_int_equal(nnmem_dtype_size(NNMEM_DTYPE_BOOL), 1);
  assert_int_equal(nnmem_dtype_size(NNMEM_DTYPE_COUNT_), 0);
  assert_string_equal(nnmem_dtype_name(NNMEM_DTYPE_BFLOAT16), "bfloat16");
  assert_string_equal(nnmem_dtype_name(NNMEM_DTYPE_UINT64), "uint64");
  nnmem_dtype_t t;
  for (int i = 1; i < NNMEM_DTYPE_COUNT_; i++) {
    assert_ok(nnmem_dtype_parse(nnmem_dtype_name((nnmem_dtype_t)i), &t));
    assert_int_equal(t, i);
  }
  assert_ok(nnmem_dtype_parse("f32", &t));
  assert_int_equal(t, NNMEM_DTYPE_FLOAT32);
  assert_ok(nnmem_dtype_parse("FP16", &t));
  assert_int_equal(t, NNMEM_DTYPE_FLOAT16);
  assert_ok(nnmem_dtype_parse("half", &t));
  assert_int_equal(t, NNMEM_DTYPE_FLOAT16);
  assert_ok(nnmem_dtype_parse("float", &t));
  assert_int_equal(t, NNMEM_DTYPE_FLOAT32);
  assert_ok(nnmem_dtype_parse("bf16", &t));
  assert_int_equal(t, NNMEM_DTYPE_BFLOAT16);
  assert_int_equal(nnmem_dtype_parse("float33", &t), NNMEM_ERR_NOT_FOUND);
  assert_int_equal(nnmem_dtype_parse("undefined", &t), NNMEM_ERR_NOT_FOUND);
  assert_int_equal(nnmem_dtype_parse(NULL, &t), NNMEM_ERR_INVALID);
}

static void test_kinds(void **state) {
  (void)state;
  const char *names[] = {"activation", "input",    "output",
                         "weight",     "constant", "workspace"};
  for (int i = 0; i < NNMEM_TENSOR_KIND_COUNT_; i++) {
    assert_string_equal(nnmem_tensor_kind_name((nnmem_tensor_kind_t)i),
                        names[i]);
    nnmem_tensor_kind_t k;
    assert_ok(nnmem_tensor_kind_parse(names[i], &k));
    assert_int_equal(k, i);
  }
  nnmem_tensor_kind_t k;
  assert_ok(nnmem_tensor_kind_parse("Weight", &k));
  assert_int_equal(k, NNMEM_TENSOR_WEIGHT);
  assert_int_equal(nnmem_tensor_kind_parse("bogus", &k), NNMEM_ERR_NOT_FOUND);
  assert_string_equal(nnmem_tensor_kind_name(NNMEM_TENSOR_KIND_COUNT_),
                      "unknown");
}

/* ---- tensors ------------------------------------------------------------*/

static void test_tensor_sizes(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  assert_string_equal(nnmem_graph_name(g), "t");
  int64_t shape[4] = {2, 3, 4, 5};
  nnmem_tensor_desc_t d = {0};
  d.name = "x";
  d.dtype = NNMEM_DTYPE_FLOAT16;
  d.rank = 4;
  d.shape = shape;
  d.align = 64;
  uint32_t id;
  assert_ok(nnmem_graph_add_tensor(g, &d, &id, NULL));
  assert_int_equal(id, 0);
  nnmem_tensor_info_t ti;
  assert_ok(nnmem_graph_tensor(g, id, &ti));
  assert_int_equal(ti.bytes, 2 * 3 * 4 * 5 * 2);
  assert_int_equal(ti.align, 64);
  assert_int_equal(ti.rank, 4);
  assert_int_equal(ti.shape[3], 5);
  assert_int_equal(ti.producer, -1);
  assert_int_equal(ti.n_consumers, 0);
  assert_string_equal(ti.name, "x");

  /* Scalar: rank 0 = one element; explicit bytes override the shape. */
  d.name = "s";
  d.rank = 0;
  d.dtype = NNMEM_DTYPE_FLOAT64;
  d.align = 0;
  assert_ok(nnmem_graph_add_tensor(g, &d, &id, NULL));
  assert_ok(nnmem_graph_tensor(g, id, &ti));
  assert_int_equal(ti.bytes, 8);
  assert_int_equal(ti.align, 1);
  d.name = "raw";
  d.rank = 4;
  d.bytes = 1000;
  d.dtype = NNMEM_DTYPE_UNDEFINED;
  assert_ok(nnmem_graph_add_tensor(g, &d, &id, NULL));
  assert_ok(nnmem_graph_tensor(g, id, &ti));
  assert_int_equal(ti.bytes, 1000);
  /* A zero dim gives a zero-byte tensor. */
  int64_t zero[2] = {0, 7};
  nnmem_tensor_desc_t z = {0};
  z.name = "empty";
  z.dtype = NNMEM_DTYPE_INT32;
  z.rank = 2;
  z.shape = zero;
  assert_ok(nnmem_graph_add_tensor(g, &z, &id, NULL));
  assert_ok(nnmem_graph_tensor(g, id, &ti));
  assert_int_equal(ti.bytes, 0);
  assert_int_equal(nnmem_graph_tensor_count(g), 4);
  assert_int_equal(nnmem_graph_tensor(g, 4, &ti), NNMEM_ERR_NOT_FOUND);
  nnmem_graph_destroy(g);
}

static void test_tensor_errors(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  nnmem_diag_t diag = {{0}};
  int64_t shape[3] = {2, -3, 4};
  nnmem_tensor_desc_t d = {0};
  d.name = "neg";
  d.dtype = NNMEM_DTYPE_FLOAT32;
  d.rank = 3;
  d.shape = shape;
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, &diag),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(diag.message, "'neg'"));
  assert_non_null(strstr(diag.message, "negative"));

  int64_t big[3] = {INT64_MAX, 4, 2};
  d.name = "huge";
  d.shape = big;
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, &diag),
                   NNMEM_ERR_OVERFLOW);
  assert_non_null(strstr(diag.message, "'huge'"));
  /* 2^62 float32 elements overflow too (2^64 bytes). */
  int64_t edge[2] = {(int64_t)1 << 31, (int64_t)1 << 31};
  d.rank = 2;
  d.shape = edge;
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, NULL),
                   NNMEM_ERR_OVERFLOW);
  /* ... but with one element less it fits. */
  edge[1] = ((int64_t)1 << 31) - 1;
  d.name = "fits";
  assert_ok(nnmem_graph_add_tensor(g, &d, NULL, NULL));

  d.name = "rank";
  d.rank = NNMEM_MAX_RANK + 1;
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, &diag),
                   NNMEM_ERR_INVALID);
  d.rank = 0;
  d.name = NULL;
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, &diag),
                   NNMEM_ERR_INVALID);
  d.name = "";
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, &diag),
                   NNMEM_ERR_INVALID);
  d.name = "nodtype";
  d.dtype = NNMEM_DTYPE_UNDEFINED;
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, &diag),
                   NNMEM_ERR_INVALID);
  d.dtype = NNMEM_DTYPE_COUNT_;
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, &diag),
                   NNMEM_ERR_INVALID);
  d.dtype = NNMEM_DTYPE_INT8;
  d.align = 12;
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, &diag),
                   NNMEM_ERR_INVALID);
  d.align = 0;
  d.kind = NNMEM_TENSOR_KIND_COUNT_;
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, &diag),
                   NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_graph_tensor_count(g), 1); /* only "fits" */

  tu_add_tensor(g, "dup", NNMEM_TENSOR_ACTIVATION, 4);
  d.name = "dup";
  d.kind = NNMEM_TENSOR_ACTIVATION;
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, &diag),
                   NNMEM_ERR_DUPLICATE);
  assert_non_null(strstr(diag.message, "'dup'"));
  assert_int_equal(nnmem_graph_tensor_count(g), 2);
  nnmem_graph_destroy(g);
}

static void test_find_many(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  enum { N = 20000 };
  char name[32];
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "tensor_%d", i);
    assert_int_equal(tu_add_tensor(g, name, NNMEM_TENSOR_ACTIVATION, 4), i);
  }
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "tensor_%d", i);
    uint32_t id;
    assert_ok(nnmem_graph_find_tensor(g, name, &id));
    assert_int_equal(id, i);
  }
  uint32_t id;
  assert_int_equal(nnmem_graph_find_tensor(g, "tensor_x", &id),
                   NNMEM_ERR_NOT_FOUND);
  assert_int_equal(nnmem_graph_find_tensor(g, "", &id), NNMEM_ERR_NOT_FOUND);
  nnmem_graph_destroy(g);
}

/* ---- ops ----------------------------------------------------------------*/

static void test_op_readback(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  uint32_t x = tu_add_tensor(g, "x", NNMEM_TENSOR_INPUT, 16);
  uint32_t w = tu_add_tensor(g, "w", NNMEM_TENSOR_WEIGHT, 8);
  uint32_t y = tu_add_tensor(g, "y", NNMEM_TENSOR_ACTIVATION, 16);
  uint32_t z = tu_add_tensor(g, "z", NNMEM_TENSOR_OUTPUT, 16);
  nnmem_op_desc_t d = {0};
  uint32_t in[3] = {x, w, x};
  d.name = "mul";
  d.type = "Mul";
  d.inputs = in;
  d.n_inputs = 3;
  d.outputs = &y;
  d.n_outputs = 1;
  d.workspace_bytes = 128;
  d.flags = NNMEM_OP_INPLACE;
  d.inplace_input = 2;
  uint32_t id;
  assert_ok(nnmem_graph_add_op(g, &d, &id, NULL));
  assert_int_equal(id, 0);
  op1(g, "relu", y, z);
  nnmem_op_info_t oi;
  assert_ok(nnmem_graph_op(g, 0, &oi));
  assert_string_equal(oi.name, "mul");
  assert_string_equal(oi.type, "Mul");
  assert_int_equal(oi.n_inputs, 3);
  assert_int_equal(oi.inputs[1], w);
  assert_int_equal(oi.n_outputs, 1);
  assert_int_equal(oi.outputs[0], y);
  assert_int_equal(oi.workspace_bytes, 128);
  assert_int_equal(oi.flags, NNMEM_OP_INPLACE);
  assert_int_equal(oi.inplace_input, 2);
  assert_int_equal(nnmem_graph_op(g, 2, &oi), NNMEM_ERR_NOT_FOUND);
  assert_int_equal(nnmem_graph_op_count(g), 2);
  nnmem_tensor_info_t ti;
  assert_ok(nnmem_graph_tensor(g, x, &ti));
  assert_int_equal(ti.n_consumers, 1); /* read twice by one op */
  assert_int_equal(ti.producer, -1);
  assert_ok(nnmem_graph_tensor(g, y, &ti));
  assert_int_equal(ti.producer, 0);
  assert_int_equal(ti.n_consumers, 1);
  assert_ok(nnmem_graph_tensor(g, z, &ti));
  assert_int_equal(ti.producer, 1);
  assert_ok(nnmem_graph_check(g, NULL));
  nnmem_graph_destroy(g);
}

static void test_op_errors(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  nnmem_diag_t diag = {{0}};
  uint32_t in = tu_add_tensor(g, "in", NNMEM_TENSOR_INPUT, 4);
  uint32_t w = tu_add_tensor(g, "w", NNMEM_TENSOR_WEIGHT, 4);
  uint32_t c = tu_add_tensor(g, "c", NNMEM_TENSOR_CONSTANT, 4);
  uint32_t a = tu_add_tensor(g, "a", NNMEM_TENSOR_ACTIVATION, 4);
  uint32_t b = tu_add_tensor(g, "b", NNMEM_TENSOR_ACTIVATION, 4);
  op1(g, "first", in, a);

  uint32_t bad = 99, two[2] = {b, b};
  assert_int_equal(op_try(g, "x", &bad, 1, &b, 1, 0, 0, &diag),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(diag.message, "unknown tensor id 99"));
  assert_int_equal(op_try(g, "x", &a, 1, &bad, 1, 0, 0, &diag),
                   NNMEM_ERR_INVALID);
  /* second producer */
  assert_int_equal(op_try(g, "second", &in, 1, &a, 1, 0, 0, &diag),
                   NNMEM_ERR_INVALID);
  assert_string_equal(diag.message,
                      "op 'second' writes tensor 'a' which op 'first' "
                      "already produces");
  /* the same tensor twice among one op's outputs; b is left unproduced */
  assert_int_equal(op_try(g, "twice", &a, 1, two, 2, 0, 0, &diag),
                   NNMEM_ERR_INVALID);
  nnmem_tensor_info_t ti;
  assert_ok(nnmem_graph_tensor(g, b, &ti));
  assert_int_equal(ti.producer, -1);
  /* writing a weight / constant / input */
  assert_int_equal(op_try(g, "ww", &a, 1, &w, 1, 0, 0, &diag),
                   NNMEM_ERR_INVALID);
  assert_string_equal(diag.message,
                      "op 'ww' writes tensor 'w' which is a graph weight");
  assert_int_equal(op_try(g, "wc", &a, 1, &c, 1, 0, 0, &diag),
                   NNMEM_ERR_INVALID);
  assert_int_equal(op_try(g, "wi", &a, 1, &in, 1, 0, 0, &diag),
                   NNMEM_ERR_INVALID);
  /* flags */
  assert_int_equal(op_try(g, "f", &a, 1, &b, 1, NNMEM_OP_INPLACE, 1, &diag),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(diag.message, "inplace_input 1 out of range"));
  assert_int_equal(op_try(g, "f", &a, 1, &b, 1, NNMEM_OP_VIEW, 3, &diag),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(diag.message, "view_input 3 out of range"));
  assert_int_equal(op_try(g, "f", NULL, 0, &b, 1, NNMEM_OP_VIEW, 0, &diag),
                   NNMEM_ERR_INVALID);
  assert_int_equal(op_try(g, "f", &a, 1, NULL, 0, NNMEM_OP_INPLACE, 0, &diag),
                   NNMEM_ERR_INVALID);
  assert_int_equal(
      op_try(g, "f", &a, 1, &b, 1, NNMEM_OP_VIEW | NNMEM_OP_INPLACE, 0, &diag),
      NNMEM_ERR_INVALID);
  assert_int_equal(op_try(g, "f", &a, 1, &b, 1, 0x10, 0, &diag),
                   NNMEM_ERR_INVALID);
  assert_int_equal(op_try(g, "f", NULL, 1, &b, 1, 0, 0, &diag),
                   NNMEM_ERR_INVALID);
  /* names */
  assert_int_equal(op_try(g, "first", &a, 1, &b, 1, 0, 0, &diag),
                   NNMEM_ERR_DUPLICATE);
  assert_string_equal(diag.message, "op 'first' is defined twice");
  assert_int_equal(op_try(g, NULL, &a, 1, &b, 1, 0, 0, &diag),
                   NNMEM_ERR_INVALID);
  nnmem_op_desc_t d = {0};
  d.name = "notype";
  assert_int_equal(nnmem_graph_add_op(g, &d, NULL, &diag), NNMEM_ERR_INVALID);
  /* Nothing above changed the graph: b can still be produced. */
  assert_int_equal(nnmem_graph_op_count(g), 1);
  op1(g, "second", a, b);
  assert_ok(nnmem_graph_check(g, NULL));
  nnmem_graph_destroy(g);
}

/* ---- check --------------------------------------------------------------*/

static void test_check_unproduced(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  nnmem_diag_t diag = {{0}};
  uint32_t x = tu_add_tensor(g, "x", NNMEM_TENSOR_INPUT, 4);
  uint32_t y = tu_add_tensor(g, "Y", NNMEM_TENSOR_ACTIVATION, 4);
  uint32_t z = tu_add_tensor(g, "z", NNMEM_TENSOR_OUTPUT, 4);
  uint32_t in[2] = {x, y};
  assert_ok(op_try(g, "X", in, 2, &z, 1, 0, 0, NULL));
  assert_int_equal(nnmem_graph_check(g, &diag), NNMEM_ERR_INVALID);
  assert_string_equal(diag.message,
                      "op 'X' reads tensor 'Y' which nobody produces");
  nnmem_graph_destroy(g);

  /* an output nobody writes (and nobody reads) */
  g = new_graph();
  tu_add_tensor(g, "lonely", NNMEM_TENSOR_OUTPUT, 4);
  assert_int_equal(nnmem_graph_check(g, &diag), NNMEM_ERR_INVALID);
  assert_string_equal(diag.message,
                      "tensor 'lonely' (output) is never produced");
  nnmem_graph_destroy(g);

  /* inputs, weights and constants need no producer; zero ops is fine */
  g = new_graph();
  tu_add_tensor(g, "i", NNMEM_TENSOR_INPUT, 4);
  tu_add_tensor(g, "w", NNMEM_TENSOR_WEIGHT, 4);
  tu_add_tensor(g, "c", NNMEM_TENSOR_CONSTANT, 4);
  assert_ok(nnmem_graph_check(g, &diag));
  assert_ok(nnmem_graph_schedule(g, NULL, &diag));
  nnmem_graph_destroy(g);
}

static void test_check_cycle(void **state) {
  (void)state;
  nnmem_graph_t *g = new_graph();
  nnmem_diag_t diag = {{0}};
  /* in -> pre -> a -> A -> b -> B -> c -> C -> a2;  A also reads c:
   * cycle A -> B -> C? no: A reads c (made by B), B reads b (made by A). */
  uint32_t in = tu_add_tensor(g, "in", NNMEM_TENSOR_INPUT, 4);
  uint32_t a = tu_add_tensor(g, "a", NNMEM_TENSOR_ACTIVATION, 4);
  uint32_t b = tu_add_tensor(g, "b", NNMEM_TENSOR_ACTIVATION, 4);
  uint32_t c = tu_add_tensor(g, "c", NNMEM_TENSOR_ACTIVATION, 4);
  uint32_t out = tu_add_tensor(g, "out", NNMEM_TENSOR_OUTPUT, 4);
  op1(g, "pre", in, a);
  uint32_t ain[2] = {a, c};
  assert_ok(op_try(g, "A", ain, 2, &b, 1, 0, 0, NULL));
  op1(g, "B", b, c);
  op1(g, "post", c, out);
  uint32_t order[4];
  assert_int_equal(nnmem_graph_schedule(g, order, &diag), NNMEM_ERR_CYCLE);
  assert_string_equal(diag.message,
                      "graph has a cycle through op 'A': 'A' -> 'B' -> 'A'");
  memset(&diag, 0, sizeof diag);
  assert_int_equal(nnmem_graph_check(g, &diag), NNMEM_ERR_CYCLE);
  assert_non_null(strstr(diag.message, "'A' -> 'B'"));
  nnmem_graph_destroy(g);

  /* an op reading its own output */
  g = new_graph();
  uint32_t s = tu_add_tensor(g, "s", NNMEM_TENSOR_ACTIVATION, 4);
  op1(g, "self", s, s);
  assert_int_equal(nnmem_graph_check(g, &diag), NNMEM_ERR_CYCLE);
  assert_string_equal(diag.message,
                      "graph has a cycle through op 'self': 'self' -> 'self'");
  nnmem_graph_destroy(g);
}

/* ---- schedule -----------------------------------------------------------*/

static void test_schedule_stable(void **state) {
  (void)state;
  /* A diamond built in a valid order keeps it: 0 1 2 3. */
  nnmem_graph_t *g = new_graph();
  uint32_t in = tu_add_tensor(g, "in", NNMEM_TENSOR_INPUT, 4);
  uint32_t a = tu_add_tensor(g, "a", NNMEM_TENSOR_ACTIVATION, 4);
  uint32_t b = tu_add_tensor(g, "b", NNMEM_TENSOR_ACTIVATION, 4);
  uint32_t c = tu_add_tensor(g, "c", NNMEM_TENSOR_ACTIVATION, 4);
  uint32_t d = tu_add_tensor(g, "d", NNMEM_TENSOR_OUTPUT, 4);
  op1(g, "op0", in, a);
  op1(g, "op1", a, b);
  op1(g, "op2", a, c);
  uint32_t bc[2] = {b, c};
  assert_ok(op_try(g, "op3", bc, 2, &d, 1, 0, 0, NULL));
  uint32_t order[4];
  assert_ok(nnmem_graph_schedule(g, order, NULL));
  for (uint32_t i = 0; i < 4; i++)
    assert_int_equal(order[i], i);
  nnmem_graph_destroy(g);

  /* Built backwards: ops 0..3 are consumers first. The order must be
   * topological and, among ready ops, pick the lowest index:
   *   op0: c,d -> out   op1: a -> c   op2: a -> d   op3: in -> a
   * ready: {3}; then {1, 2} -> 1, 2; then 0. */
  g = new_graph();
  in = tu_add_tensor(g, "in", NNMEM_TENSOR_INPUT, 4);
  a = tu_add_tensor(g, "a", NNMEM_TENSOR_ACTIVATION, 4);
  c = tu_add_tensor(g, "c", NNMEM_TENSOR_ACTIVATION, 4);
  d = tu_add_tensor(g, "d", NNMEM_TENSOR_ACTIVATION, 4);
  uint32_t out = tu_add_tensor(g, "out", NNMEM_TENSOR_OUTPUT, 4);
  uint32_t cd[2] = {c, d};
  assert_ok(op_try(g, "op0", cd, 2, &out, 1, 0, 0, NULL));
  op1(g, "op1", a, c);
  op1(g, "op2", a, d);
  op1(g, "op3", in, a);
  assert_ok(nnmem_graph_check(g, NULL));
  assert_ok(nnmem_graph_schedule(g, order, NULL));
  assert_int_equal(order[0], 3);
  assert_int_equal(order[1], 1);
  assert_int_equal(order[2], 2);
  assert_int_equal(order[3], 0);
  nnmem_graph_destroy(g);
}

/* Random DAGs with ops added in a shuffled order: the schedule is a
 * topological permutation, and the same graph built in that order maps to
 * the identity. */
static void test_schedule_random(void **state) {
  (void)state;
  uint64_t seed = 0x5eed1234u;
  for (int round = 0; round < 50; round++) {
    uint64_t rs = seed + (uint64_t)round;
    enum { N = 60 };
    uint32_t perm[N];
    for (uint32_t i = 0; i < N; i++)
      perm[i] = i;
    for (uint32_t i = N - 1; i > 0; i--) {
      uint32_t j = (uint32_t)(tu_rand(&rs) % (i + 1));
      uint32_t t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    /* Logical op k writes tensor t_k and reads up to 3 of t_0..t_{k-1}. */
    nnmem_graph_t *g = new_graph();
    char name[16];
    for (int k = 0; k < N; k++) {
      snprintf(name, sizeof name, "t%d", k);
      tu_add_tensor(g, name, NNMEM_TENSOR_ACTIVATION, 4);
    }
    uint32_t ins[N][3], nin[N];
    for (uint32_t k = 0; k < N; k++) {
      nin[k] = k ? (uint32_t)(tu_rand(&rs) % 4) : 0;
      for (uint32_t i = 0; i < nin[k]; i++)
        ins[k][i] = (uint32_t)(tu_rand(&rs) % k);
    }
    for (uint32_t i = 0; i < N; i++) { /* op index i = logical perm[i] */
      uint32_t k = perm[i];
      snprintf(name, sizeof name, "op%u", k);
      if (op_try(g, name, ins[k], nin[k], &k, 1, 0, 0, NULL) != NNMEM_OK)
        fail_msg("seed %llu: add_op", (unsigned long long)(seed + round));
    }
    uint32_t order[N], pos[N];
    assert_ok(nnmem_graph_schedule(g, order, NULL));
    for (uint32_t s = 0; s < N; s++)
      pos[order[s]] = s;
    for (uint32_t i = 0; i < N; i++) {
      uint32_t k = perm[i];
      for (uint32_t j = 0; j < nin[k]; j++) {
        uint32_t producer_index = 0;
        while (perm[producer_index] != ins[k][j])
          producer_index++;
        if (pos[producer_index] >= pos[i])
          fail_msg("seed %llu: not topological",
                   (unsigned long long)(seed + round));
      }
    }
    nnmem_graph_destroy(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtypes),
      cmocka_unit_test(test_kinds),
      cmocka_unit_test(test_tensor_sizes),
      cmocka_unit_test(test_tensor_errors),
      cmocka_unit_test(test_find_many),
      cmocka_unit_test(test_op_readback),
      cmocka_unit_test(test_op_errors),
      cmocka_unit_test(test_check_unproduced),
      cmocka_unit_test(test_check_cycle),
      cmocka_unit_test(test_schedule_stable),
      cmocka_unit_test(test_schedule_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

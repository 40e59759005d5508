/* test_onnx_report.c - what the ONNX importer reports beyond shapes: the
 * first unsupported operator (node, op type, domain, the model's opset of
 * that domain, unresolved tensors downstream of it, counted by hand), the
 * per-tensor upper-bound flag of data-dependent outputs (NonZero) through
 * the graph IR, string tensors as NNMEM_DTYPE_STRING (16-byte handles), and
 * sizes near 2^64 bytes: bounds that fit are sized, bounds that do not are
 * unresolved, exact sizes that do not are NNMEM_ERR_OVERFLOW.
 */
#include <stdint.h>

#include "test_onnx_pb.h"

enum { STRING = 8 };

/* A model importing the default domain at `opset` and, when `domain2` is
 * set, that domain at `opset2`. */
static pb_t model2(gb_t *g, int64_t opset, const char *domain2,
                   int64_t opset2) {
  pb_t m = model(g, opset, "");
  if (domain2) {
    pb_t os = {0};
    f_str(&os, 1, domain2);
    f_int(&os, 2, opset2);
    f_msg(&m, 8, &os);
  }
  return m;
}

/* X -> Relu (n1) -> A -> Foo (n3) -> B -> Relu (n4) -> C; Add(C, A) (n5)
 * -> D (output, no declared shape); Sigmoid(X) (n6) -> E; Bar (n7, a second
 * unsupported op) on E -> F. Downstream of n3: B, C, D = 3 unresolved; F
 * is unresolved too but not downstream of n3. */
static void test_first_unsupported(void **state) {
  (void)state;
  const int64_t xd[] = {1, 3, 8, 8};
  gb_t g = {{0}};
  g_input(&g, value_info("X", FLOAT, 4, xd));
  g_node(&g, node("Relu", "n1", "X", "A", 0, NULL));
  g_node(&g, node("Foo", "n3", "A", "B", 0, NULL));
  g_node(&g, node("Relu", "n4", "B", "C", 0, NULL));
  g_node(&g, node("Add", "n5", "C,A", "D", 0, NULL));
  g_node(&g, node("Sigmoid", "n6", "X", "E", 0, NULL));
  g_node(&g, node("Bar", "n7", "E", "F", 0, NULL));
  g_output(&g, value_info("D", FLOAT, -1, NULL));
  g_output(&g, value_info("F", FLOAT, -1, NULL));
  pb_t m = model(&g, 7, "");
  nnmem_onnx_report_t rep;
  nnmem_graph_t *gr = import_ok(&m, &rep);
  assert_int_equal(rep.n_unsupported, 2);
  assert_int_equal(rep.unresolved_tensors, 4); /* B, C, D, F */
  const nnmem_onnx_first_unsupported_t *u = &rep.first_unsupported;
  assert_string_equal(u->node, "n3");
  assert_string_equal(u->op_type, "Foo");
  assert_string_equal(u->domain, "ai.onnx");
  assert_int_equal(u->opset, 7);
  assert_int_equal(u->downstream_unresolved, 3);
  nnmem_graph_destroy(gr);

  /* a custom domain: its own opset; the output has a declared shape, so
   * nothing downstream is unresolved */
  gb_t h = {{0}};
  g_input(&h, value_info("X", FLOAT, 4, xd));
  pb_t nd = node("Baz", "custom", "X", "Y", 0, NULL);
  f_str(&nd, 7, "com.example");
  g_node(&h, nd);
  g_output(&h, value_info("Y", FLOAT, 4, xd));
  m = model2(&h, 13, "com.example", 3);
  gr = import_ok(&m, &rep);
  assert_string_equal(rep.first_unsupported.domain, "com.example");
  assert_string_equal(rep.first_unsupported.op_type, "Baz");
  assert_int_equal(rep.first_unsupported.opset, 3);
  assert_int_equal(rep.first_unsupported.downstream_unresolved, 0);
  assert_int_equal(rep.unresolved_tensors, 0);
  nnmem_graph_destroy(gr);
}

/* Unsupported ops inside both If branches count at the If node: the If's
 * output Y (unknown: no branch sizes it) and Relu(Y) -> Z are downstream;
 * the node named is the first one in the bodies (then_branch). */
static void test_first_unsupported_in_body(void **state) {
  (void)state;
  const int64_t xd[] = {4, 8};
  gb_t tb = {{0}}, eb = {{0}};
  g_node(&tb, node("Qux", "inner", "X", "t_out", 0, NULL));
  g_output(&tb, value_info("t_out", FLOAT, -1, NULL));
  f_str(&tb.g, 2, "then");
  g_node(&eb, node("Quux", "inner2", "X", "e_out", 0, NULL));
  g_output(&eb, value_info("e_out", FLOAT, -1, NULL));
  f_str(&eb.g, 2, "else");
  gb_t g = {{0}};
  g_input(&g, value_info("C", BOOL, 0, NULL));
  g_input(&g, value_info("X", FLOAT, 2, xd));
  g_node(&g, node("Relu", "pre", "X", "P", 0, NULL));
  pb_t a[] = {attr_graph("then_branch", &tb.g),
              attr_graph("else_branch", &eb.g)};
  g_node(&g, node("If", "if", "C", "Y", 2, a));
  g_node(&g, node("Relu", "post", "Y", "Z", 0, NULL));
  g_output(&g, value_info("Z", FLOAT, -1, NULL));
  g_output(&g, value_info("P", FLOAT, -1, NULL));
  pb_t m = model(&g, 11, "");
  nnmem_onnx_report_t rep;
  nnmem_graph_t *gr = import_ok(&m, &rep);
  assert_int_equal(rep.n_unsupported, 2);
  assert_string_equal(rep.first_unsupported.node, "inner");
  assert_string_equal(rep.first_unsupported.op_type, "Qux");
  assert_int_equal(rep.first_unsupported.opset, 11);
  assert_int_equal(rep.unresolved_tensors, 2); /* Y, Z */
  assert_int_equal(rep.first_unsupported.downstream_unresolved, 2);
  nnmem_graph_destroy(gr);
}

/* NonZero of X [2, 3] is sized [2, 6] (rank x numel) and flagged as an
 * upper bound, and so is its Transpose [6, 2] (computed from it) and a
 * Range whose limit comes from its shape; Shape(NZ) has an exact size.
 * S [4] strings -> Identity -> T: dtype string, 4 x 16 bytes. */
static void test_upper_bound_and_strings(void **state) {
  (void)state;
  const int64_t xd[] = {2, 3}, sd[] = {4};
  gb_t g = {{0}};
  g_input(&g, value_info("X", FLOAT, 2, xd));
  g_input(&g, value_info("S", STRING, 1, sd));
  g_node(&g, node("NonZero", "nz", "X", "NZ", 0, NULL));
  g_node(&g, node("Relu", "relu", "X", "R", 0, NULL));
  g_node(&g, node("Identity", "id", "S", "T", 0, NULL));
  g_node(&g, node("Transpose", "tr", "NZ", "NZT", 0, NULL));
  g_node(&g, node("Shape", "sh", "NZ", "SH", 0, NULL));
  g_node(&g, node("Gather", "ga", "SH,one", "N", 0, NULL));
  g_node(&g, node("Range", "rg", "zero,N,one", "RG", 0, NULL));
  g_init(&g, tensor("zero", INT64, 0, NULL, (const int64_t[]){0}));
  g_init(&g, tensor("one", INT64, 0, NULL, (const int64_t[]){1}));
  g_output(&g, value_info("NZT", INT64, -1, NULL));
  g_output(&g, value_info("RG", INT64, -1, NULL));
  g_output(&g, value_info("NZ", INT64, -1, NULL));
  g_output(&g, value_info("R", FLOAT, -1, NULL));
  g_output(&g, value_info("T", STRING, -1, NULL));
  pb_t m = model(&g, 13, "");
  nnmem_onnx_report_t rep;
  nnmem_graph_t *gr = import_ok(&m, &rep);
  assert_int_equal(rep.unresolved_tensors, 0);
  assert_int_equal(rep.n_data_dependent, 1);
  uint32_t nz, r, t;
  assert_ok(nnmem_graph_find_tensor(gr, "NZ", &nz));
  assert_ok(nnmem_graph_find_tensor(gr, "R", &r));
  assert_ok(nnmem_graph_find_tensor(gr, "T", &t));
  SHAPE(gr, "NZ", 2, 6);
  assert_int_equal(tinfo(gr, "NZ").bytes, 2 * 6 * 8);
  assert_true(nnmem_graph_tensor_size_is_upper_bound(gr, nz));
  assert_true(tinfo(gr, "NZ").flags & NNMEM_TENSOR_UPPER_BOUND);
  assert_false(nnmem_graph_tensor_size_is_upper_bound(gr, r));
  SHAPE(gr, "NZT", 6, 2);
  assert_true(tinfo(gr, "NZT").flags & NNMEM_TENSOR_UPPER_BOUND);
  SHAPE(gr, "SH", 2);
  assert_false(tinfo(gr, "SH").flags & NNMEM_TENSOR_UPPER_BOUND);
  SHAPE(gr, "RG", 6); /* Range(0, Shape(NZ)[1] = 6, 1) */
  assert_true(tinfo(gr, "RG").flags & NNMEM_TENSOR_UPPER_BOUND);
  assert_int_equal(rep.n_data_dependent, 1); /* the report lists sources */
  assert_false(nnmem_graph_tensor_size_is_upper_bound(gr, 9999));
  assert_false(nnmem_graph_tensor_size_is_upper_bound(NULL, 0));
  nnmem_tensor_info_t ti = tinfo(gr, "T");
  assert_int_equal(ti.dtype, NNMEM_DTYPE_STRING);
  assert_string_equal(nnmem_dtype_name(ti.dtype), "string");
  assert_int_equal(ti.bytes, 4 * 16);
  assert_int_equal(tinfo(gr, "S").dtype, NNMEM_DTYPE_STRING);
  nnmem_graph_destroy(gr);

  /* --dtype converts floating tensors only: a string target is refused */
  nnmem_onnx_config_t cfg;
  nnmem_onnx_config_init(&cfg);
  cfg.dtype = NNMEM_DTYPE_STRING;
  gb_t h = {{0}};
  g_input(&h, value_info("X", FLOAT, 2, xd));
  g_node(&h, node("Relu", "relu", "X", "R", 0, NULL));
  g_output(&h, value_info("R", FLOAT, -1, NULL));
  m = model(&h, 13, "");
  nnmem_diag_t d = {{0}};
  gr = NULL;
  assert_int_equal(import(&m, &cfg, &gr, NULL, &d), NNMEM_ERR_INVALID);
  assert_null(gr);
  assert_non_null(strstr(d.message, "dtype"));
  free(m.b);
}

/* The graph API on its own: the flag round-trips, unknown flags fail, the
 * string dtype parses and sizes 16 bytes per element. */
static void test_graph_flag_and_string_dtype(void **state) {
  (void)state;
  nnmem_graph_t *g = NULL;
  assert_ok(nnmem_graph_create("g", &g));
  const int64_t dims[] = {3, 5};
  nnmem_tensor_desc_t d = {0};
  d.name = "s";
  d.kind = NNMEM_TENSOR_INPUT;
  d.dtype = NNMEM_DTYPE_STRING;
  d.rank = 2;
  d.shape = dims;
  d.flags = NNMEM_TENSOR_UPPER_BOUND;
  uint32_t id;
  assert_ok(nnmem_graph_add_tensor(g, &d, &id, NULL));
  nnmem_tensor_info_t ti;
  assert_ok(nnmem_graph_tensor(g, id, &ti));
  assert_int_equal(ti.bytes, 3 * 5 * 16);
  assert_int_equal(ti.flags, NNMEM_TENSOR_UPPER_BOUND);
  assert_true(nnmem_graph_tensor_size_is_upper_bound(g, id));
  d.name = "bad";
  d.flags = 0x80;
  nnmem_diag_t diag = {{0}};
  assert_int_equal(nnmem_graph_add_tensor(g, &d, NULL, &diag),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(diag.message, "'bad'"));
  nnmem_dtype_t t;
  assert_ok(nnmem_dtype_parse("string", &t));
  assert_int_equal(t, NNMEM_DTYPE_STRING);
  assert_int_equal(nnmem_dtype_size(NNMEM_DTYPE_STRING), 16);
  nnmem_graph_destroy(g);
}

/* X [s] -> NonZero -> NZ [1, s] (a bound) -> Cast -> F -> Transpose -> FT
 * [s, 1]; MatMul(FT, F) -> Y [s, s] float, a bound by propagation. */
static pb_t bound_matmul(int64_t s) {
  const int64_t xd[] = {s};
  gb_t g = {{0}};
  pb_t to = attr_int("to", FLOAT);
  g_input(&g, value_info("X", FLOAT, 1, xd));
  g_node(&g, node("NonZero", "nz", "X", "NZ", 0, NULL));
  g_node(&g, node("Cast", "cast", "NZ", "F", 1, &to));
  g_node(&g, node("Transpose", "tr", "F", "FT", 0, NULL));
  g_node(&g, node("MatMul", "mm", "FT,F", "Y", 0, NULL));
  g_output(&g, value_info("Y", FLOAT, -1, NULL));
  return model(&g, 13, "");
}

/* Regression (BERT with --dim sequence=1e9: attention scores [1, 2, 1e9,
 * 1e9] downstream of a NonZero were unresolved): a bound is sized when its
 * bytes fit 64 bits even where its bit count (elements x 32) does not.
 * s = 2^30: Y holds 2^60 elements, 2^62 bytes (2^65 bits). s = 2^31: Y
 * takes 2^64 bytes, a bound that does not fit: unresolved, listed, and in
 * strict mode an error saying so; the same MatMul on exact inputs is
 * NNMEM_ERR_OVERFLOW naming Y. Explicit byte sizes (complex128, int4)
 * follow the same rule: 2^59 complex128 = 2^63 bytes, 2^60 overflow. */
static void test_huge_bound_sizes(void **state) {
  (void)state;
  const int64_t s30 = INT64_C(1) << 30, s31 = INT64_C(1) << 31;
  pb_t m = bound_matmul(s30);
  nnmem_onnx_report_t rep;
  nnmem_graph_t *gr = import_ok(&m, &rep);
  assert_int_equal(rep.unresolved_tensors, 0);
  SHAPE(gr, "Y", s30, s30);
  assert_true(tinfo(gr, "Y").bytes == UINT64_C(1) << 62);
  assert_true(tinfo(gr, "Y").flags & NNMEM_TENSOR_UPPER_BOUND);
  nnmem_graph_destroy(gr);

  m = bound_matmul(s31);
  gr = import_ok(&m, &rep);
  assert_int_equal(rep.unresolved_tensors, 1);
  assert_string_equal(rep.unresolved[0].name, "Y");
  assert_string_equal(rep.unresolved[0].what, "MatMul");
  assert_int_equal(tinfo(gr, "Y").bytes, 0);
  SHAPE(gr, "FT", s31, 1);
  nnmem_graph_destroy(gr);
  nnmem_onnx_config_t cfg;
  nnmem_onnx_config_init(&cfg);
  cfg.strict = 1;
  m = bound_matmul(s31);
  nnmem_diag_t d = {{0}};
  gr = NULL;
  assert_int_equal(import(&m, &cfg, &gr, NULL, &d), NNMEM_ERR_UNSUPPORTED);
  assert_null(gr);
  assert_non_null(strstr(d.message, "'Y'"));
  assert_non_null(strstr(d.message, "upper-bound size that overflows"));
  free(m.b);

  const int64_t ad[] = {s31, 1}, bd[] = {1, s31};
  gb_t g = {{0}};
  g_input(&g, value_info("A", FLOAT, 2, ad));
  g_input(&g, value_info("B", FLOAT, 2, bd));
  g_node(&g, node("MatMul", "mm", "A,B", "Y", 0, NULL));
  g_output(&g, value_info("Y", FLOAT, -1, NULL));
  m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_OVERFLOW, "'Y'");

  enum { COMPLEX128 = 15, INT4 = 22 };
  const int64_t c59[] = {INT64_C(1) << 59}, c60[] = {INT64_C(1) << 60},
                i3[] = {3};
  memset(&g, 0, sizeof g);
  g_input(&g, value_info("C", COMPLEX128, 1, c59));
  g_input(&g, value_info("Q", INT4, 1, i3));
  m = model(&g, 13, "");
  gr = import_ok(&m, &rep);
  assert_true(tinfo(gr, "C").bytes == UINT64_C(1) << 63);
  assert_int_equal(tinfo(gr, "Q").bytes, 2); /* 12 bits, whole bytes */
  nnmem_graph_destroy(gr);
  memset(&g, 0, sizeof g);
  g_input(&g, value_info("C", COMPLEX128, 1, c60));
  m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_OVERFLOW, "'C'");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_unsupported),
      cmocka_unit_test(test_first_unsupported_in_body),
      cmocka_unit_test(test_upper_bound_and_strings),
      cmocka_unit_test(test_graph_flag_and_string_dtype),
      cmocka_unit_test(test_huge_bound_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

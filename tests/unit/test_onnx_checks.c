/* test_onnx_checks.c - ONNX shape inference checked against the operator
 * specification on edge cases found in review: split sizes, GatherND
 * batch_dims, negative pads, pooling ceil mode, out-of-range window
 * attributes, ConvTranspose / MaxUnpool overflow, Einsum ellipses, TopK k,
 * DepthToSpace divisibility, Reshape element counts, DFT negative axes,
 * Cast to bool folding and TfIdfVectorizer's output width. Each bad case
 * fails with INVALID, a message naming the node, no graph and no leak
 * (ASan). Expected shapes are computed by hand from the ONNX operator
 * documents. */
#include <stdint.h>

#include "test_onnx_pb.h"

/* A model with input X (float, shape xd), initializers `inits`, and one
 * node; the node's outputs are the graph outputs (declared untyped). */
static pb_t one_node(int64_t opset, int rank, const int64_t *xd, pb_t nd,
                     int n_init, pb_t *inits, const char *outs) {
  gb_t g = {{0}};
  g_input(&g, value_info("X", FLOAT, rank, xd));
  for (int i = 0; i < n_init; i++)
    g_init(&g, inits[i]);
  g_node(&g, nd);
  char buf[128];
  snprintf(buf, sizeof buf, "%s", outs);
  for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
    g_output(&g, value_info(s, FLOAT, -1, NULL));
  return model(&g, opset, "");
}

/* Imports `m` (freed), which must succeed; returns the graph. */
static void test_split_sizes(void **state) {
  (void)state;
  const int64_t xd[] = {4}, big[] = {2, INT64_MAX}, few[] = {1, 1},
                ok[] = {1, 3};
  pb_t a = attr_ints("split", 2, big);
  pb_t m = one_node(11, 1, xd, node("Split", "sp", "X", "A,B", 1, &a), 0, NULL,
                    "A,B");
  expect_fail(&m, NNMEM_ERR_INVALID, "'sp'");
  a = attr_ints("split", 2, few);
  m = one_node(11, 1, xd, node("Split", "sp", "X", "A,B", 1, &a), 0, NULL,
               "A,B");
  expect_fail(&m, NNMEM_ERR_INVALID, "add up to 2, the axis has 4");
  a = attr_ints("split", 2, ok);
  m = one_node(11, 1, xd, node("Split", "sp", "X", "A,B", 1, &a), 0, NULL,
               "A,B");
  nnmem_graph_t *g = import_ok(&m, NULL);
  SHAPE(g, "A", 1);
  SHAPE(g, "B", 3);
  nnmem_graph_destroy(g);
  /* equal parts (no split sizes): 1 cannot make 3 parts */
  const int64_t x1[] = {1};
  m = one_node(18, 1, x1, node("Split", "sp3", "X", "A,B,C", 0, NULL), 0, NULL,
               "A,B,C");
  expect_fail(&m, NNMEM_ERR_INVALID, "cannot split 1 into 3 parts");
  /* constant input: the values are split too, even with a huge size */
  gb_t gg = {{0}};
  const int64_t vals[] = {1, 2, 3, 4};
  g_init(&gg, tensor("C", INT64, 1, xd, vals));
  a = attr_ints("split", 2, big);
  g_node(&gg, node("Split", "csp", "C", "A,B", 1, &a));
  g_output(&gg, value_info("A", INT64, -1, NULL));
  m = model(&gg, 11, "");
  expect_fail(&m, NNMEM_ERR_INVALID, "'csp'");
}

static void test_gather_nd(void **state) {
  (void)state;
  const int64_t xd[] = {2, 3}, id[] = {2, 1}, iv[] = {1, 0}, id3[] = {1, 3},
                iv3[] = {0, 0, 0};
  pb_t a = attr_int("batch_dims", -1);
  pb_t t = tensor("I", INT64, 2, id, iv);
  pb_t m = one_node(13, 2, xd, node("GatherND", "gnd", "X,I", "Y", 1, &a), 1,
                    &t, "Y");
  expect_fail(&m, NNMEM_ERR_INVALID, "'gnd'");
  t = tensor("I", INT64, 2, id3, iv3);
  m = one_node(13, 2, xd, node("GatherND", "gnd", "X,I", "Y", 0, NULL), 1, &t,
               "Y");
  expect_fail(&m, NNMEM_ERR_INVALID, "larger than the data rank");
  t = tensor("I", INT64, 2, id, iv);
  m = one_node(13, 2, xd, node("GatherND", "gnd", "X,I", "Y", 0, NULL), 1, &t,
               "Y");
  nnmem_graph_t *g = import_ok(&m, NULL);
  SHAPE(g, "Y", 2, 3); /* indices[:-1] + data[1:] */
  nnmem_graph_destroy(g);
}

static void test_pad(void **state) {
  (void)state;
  const int64_t xd[] = {3}, neg[] = {-2, -2}, grow[] = {1, 2};
  pb_t a = attr_ints("pads", 2, neg);
  pb_t m =
      one_node(2, 1, xd, node("Pad", "pad", "X", "Y", 1, &a), 0, NULL, "Y");
  expect_fail(&m, NNMEM_ERR_INVALID, "'pad'"); /* 3 - 4 = -1 */
  a = attr_ints("pads", 2, grow);
  m = one_node(2, 1, xd, node("Pad", "pad", "X", "Y", 1, &a), 0, NULL, "Y");
  nnmem_graph_t *g = import_ok(&m, NULL);
  SHAPE(g, "Y", 6);
  nnmem_graph_destroy(g);
}

static pb_t pool(int64_t x, int64_t k, int64_t s, int64_t p, int ceil) {
  const int64_t xd[] = {1, 1, x}, kk[] = {k}, ss[] = {s}, pp[] = {p, p};
  pb_t a[4] = {attr_ints("kernel_shape", 1, kk), attr_ints("strides", 1, ss),
               attr_ints("pads", 2, pp), attr_int("ceil_mode", ceil)};
  return one_node(13, 3, xd, node("MaxPool", "mp", "X", "Y", 4, a), 0, NULL,
                  "Y");
}

static void test_pool_ceil(void **state) {
  (void)state;
  /* {x, k, s, pad, ceil_mode, expected}: floor((x + 2p - k) / s) + 1, or
   * ceil, minus a last window starting in the right padding */
  static const int64_t cases[][6] = {{6, 3, 2, 0, 0, 2}, {6, 3, 2, 0, 1, 3},
                                     {5, 2, 2, 1, 0, 3}, {5, 2, 2, 1, 1, 3},
                                     {4, 3, 2, 0, 1, 2}, {7, 2, 3, 0, 1, 3}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int64_t *c = cases[i];
    pb_t m = pool(c[0], c[1], c[2], c[3], (int)c[4]);
    nnmem_graph_t *g = import_ok(&m, NULL);
    nnmem_tensor_info_t t = tinfo(g, "Y");
    if (t.shape[2] != c[5])
      fail_msg("case %zu: %lld, want %lld", i, (long long)t.shape[2],
               (long long)c[5]);
    nnmem_graph_destroy(g);
  }
  /* a kernel larger than the padded input: unknown (strict mode fails) */
  pb_t m = pool(2, 3, 1, 0, 0);
  nnmem_onnx_config_t cfg;
  nnmem_onnx_config_init(&cfg);
  cfg.strict = 1;
  nnmem_graph_t *g = NULL;
  nnmem_diag_t d = {{0}};
  assert_int_equal(import(&m, &cfg, &g, NULL, &d), NNMEM_ERR_UNSUPPORTED);
  assert_null(g);
  assert_non_null(strstr(d.message, "'Y'"));
  free(m.b);
  m = pool(8, 2, 0, 0, 0);
  expect_fail(&m, NNMEM_ERR_INVALID, "'mp'"); /* stride 0 */
  m = pool(8, 2, 1, INT64_MAX, 0);
  expect_fail(&m, NNMEM_ERR_INVALID, "out of range");
  m = pool(8, 2, 1, -1, 0);
  expect_fail(&m, NNMEM_ERR_INVALID, "out of range");
}

static void test_conv_transpose_and_unpool(void **state) {
  (void)state;
  const int64_t xd[] = {1, 2, 5}, wd[] = {2, 3, 3}, kmin[] = {INT64_MIN},
                s2[] = {2}, k3[] = {3}, p0[] = {0, 0};
  pb_t a = attr_ints("kernel_shape", 1, kmin);
  pb_t t = tensor("W", FLOAT, 3, wd, NULL);
  pb_t m = one_node(13, 3, xd, node("ConvTranspose", "ct", "X,W", "Y", 1, &a),
                    1, &t, "Y");
  expect_fail(&m, NNMEM_ERR_INVALID, "'ct'");
  pb_t b[2] = {attr_ints("strides", 1, s2), attr_ints("pads", 2, p0)};
  t = tensor("W", FLOAT, 3, wd, NULL);
  m = one_node(13, 3, xd, node("ConvTranspose", "ct", "X,W", "Y", 2, b), 1, &t,
               "Y");
  nnmem_graph_t *g = import_ok(&m, NULL);
  SHAPE(g, "Y", 1, 3, 11); /* 2 (5 - 1) + 3 - 0 - 0 */
  nnmem_graph_destroy(g);
  /* MaxUnpool: (x - 1) s + k - pads, overflowing */
  const int64_t big[] = {1, 1, (int64_t)1 << 40}, sbig[] = {(int64_t)1 << 30};
  pb_t u[2] = {attr_ints("kernel_shape", 1, k3), attr_ints("strides", 1, sbig)};
  gb_t gg = {{0}};
  g_input(&gg, value_info("X", FLOAT, 3, big));
  g_input(&gg, value_info("I", INT64, 3, big));
  g_node(&gg, node("MaxUnpool", "unpool", "X,I", "Y", 2, u));
  g_output(&gg, value_info("Y", FLOAT, -1, NULL));
  m = model(&gg, 11, "");
  expect_fail(&m, NNMEM_ERR_INVALID, "'unpool'");
}

static void test_einsum_ellipsis(void **state) {
  (void)state;
  const int64_t xd[] = {2, 3, 4};
  pb_t a = attr_str("equation", "...i...->i");
  pb_t m =
      one_node(12, 3, xd, node("Einsum", "es", "X", "Y", 1, &a), 0, NULL, "Y");
  expect_fail(&m, NNMEM_ERR_INVALID, "'es'");
  a = attr_str("equation", "..i->i");
  m = one_node(12, 3, xd, node("Einsum", "es", "X", "Y", 1, &a), 0, NULL, "Y");
  expect_fail(&m, NNMEM_ERR_INVALID, "does not match");
  a = attr_str("equation", "...ij->...ji");
  m = one_node(12, 3, xd, node("Einsum", "es", "X", "Y", 1, &a), 0, NULL, "Y");
  nnmem_graph_t *g = import_ok(&m, NULL);
  SHAPE(g, "Y", 2, 4, 3);
  nnmem_graph_destroy(g);
}

static void test_topk_depth_reshape(void **state) {
  (void)state;
  const int64_t xd[] = {1, 5}, one[] = {1}, seven[] = {7}, three[] = {3};
  pb_t t = tensor("K", INT64, 1, one, seven);
  pb_t m = one_node(11, 2, xd, node("TopK", "topk", "X,K", "V,I", 0, NULL), 1,
                    &t, "V,I");
  expect_fail(&m, NNMEM_ERR_INVALID, "'topk'");
  t = tensor("K", INT64, 1, one, three);
  m = one_node(11, 2, xd, node("TopK", "topk", "X,K", "V,I", 0, NULL), 1, &t,
               "V,I");
  nnmem_graph_t *g = import_ok(&m, NULL);
  SHAPE(g, "V", 1, 3);
  nnmem_graph_destroy(g);
  const int64_t cd[] = {1, 3, 2, 2}, c8[] = {1, 8, 2, 2};
  pb_t a = attr_int("blocksize", 2);
  m = one_node(13, 4, cd, node("DepthToSpace", "d2s", "X", "Y", 1, &a), 0, NULL,
               "Y");
  expect_fail(&m, NNMEM_ERR_INVALID, "'d2s'");
  a = attr_int("blocksize", 2);
  m = one_node(13, 4, c8, node("DepthToSpace", "d2s", "X", "Y", 1, &a), 0, NULL,
               "Y");
  g = import_ok(&m, NULL);
  SHAPE(g, "Y", 1, 2, 4, 4);
  nnmem_graph_destroy(g);
  const int64_t rd[] = {2, 3};
  t = tensor("S", INT64, 1, one, seven);
  m = one_node(13, 2, rd, node("Reshape", "rs", "X,S", "Y", 0, NULL), 1, &t,
               "Y");
  expect_fail(&m, NNMEM_ERR_INVALID, "reshapes 6 elements into 7");
}

static void test_dft_axis(void **state) {
  (void)state;
  const int64_t xd[] = {2, 8, 1};
  pb_t a[2] = {attr_int("axis", -2), attr_int("onesided", 1)};
  pb_t m =
      one_node(17, 3, xd, node("DFT", "dft", "X", "Y", 2, a), 0, NULL, "Y");
  nnmem_graph_t *g = import_ok(&m, NULL);
  SHAPE(g, "Y", 2, 5, 2); /* axis -2 of rank 3 is 1: 8 / 2 + 1 */
  nnmem_graph_destroy(g);
  pb_t b = attr_int("axis", -1); /* the real/imaginary dim */
  m = one_node(17, 3, xd, node("DFT", "dft", "X", "Y", 1, &b), 0, NULL, "Y");
  expect_fail(&m, NNMEM_ERR_INVALID, "'dft'");
}

static void test_cast_bool_fold(void **state) {
  (void)state;
  /* Reshape(X[6], Cast(Cast([2, 3], bool), int64) + [1, 2]) = [2, 3] */
  gb_t g = {{0}};
  const int64_t xd[] = {6}, two[] = {2}, c[] = {2, 3}, k[] = {1, 2};
  g_input(&g, value_info("X", FLOAT, 1, xd));
  g_init(&g, tensor("C", INT64, 1, two, c));
  g_init(&g, tensor("K", INT64, 1, two, k));
  pb_t a = attr_int("to", BOOL), b = attr_int("to", INT64);
  g_node(&g, node("Cast", "tobool", "C", "B", 1, &a));
  g_node(&g, node("Cast", "toint", "B", "I", 1, &b));
  g_node(&g, node("Add", "add", "I,K", "S", 0, NULL));
  g_node(&g, node("Reshape", "rs", "X,S", "Y", 0, NULL));
  g_output(&g, value_info("Y", FLOAT, -1, NULL));
  pb_t m = model(&g, 13, "");
  nnmem_graph_t *gr = import_ok(&m, NULL);
  SHAPE(gr, "Y", 2, 3);
  nnmem_graph_destroy(gr);
}

/* NC1HWC0 pads C up to a multiple of C0 without overflowing on a huge C. */
static void test_blocked_layout_huge_channels(void **state) {
  (void)state;
  const int64_t xd[] = {1, INT64_MAX, 1, 1}, cd[] = {1, 20, 3, 3};
  nnmem_onnx_config_t cfg;
  nnmem_onnx_config_init(&cfg);
  cfg.layout = NNMEM_ONNX_LAYOUT_NC1HWC0;
  pb_t m = one_node(13, 4, xd, node("Relu", "relu", "X", "Y", 0, NULL), 0, NULL,
                    "Y");
  nnmem_graph_t *g = NULL;
  nnmem_diag_t d = {{0}};
  assert_int_equal(import(&m, &cfg, &g, NULL, &d), NNMEM_ERR_OVERFLOW);
  assert_null(g);
  free(m.b);
  m = one_node(13, 4, cd, node("Relu", "relu", "X", "Y", 0, NULL), 0, NULL,
               "Y");
  assert_ok(import(&m, &cfg, &g, NULL, &d));
  free(m.b);
  SHAPE(g, "Y", 1, 3, 3, 3, 8); /* float32: C0 = 8, 20 -> 3 blocks */
  nnmem_graph_destroy(g);
}

/* A while-loop as exporters write it: M = INT64_MAX, a runtime condition.
 * The carried state is sized; the scan output (M x slice, which overflows)
 * stays unresolved instead of failing the import. */
static void test_loop_unbounded_trip_count(void **state) {
  (void)state;
  gb_t body = {{0}}, g = {{0}};
  const int64_t two[] = {2}, one[] = {1}, mx[] = {INT64_MAX};
  g_input(&body, value_info("i", INT64, 0, NULL));
  g_input(&body, value_info("cin", BOOL, 0, NULL));
  g_input(&body, value_info("v", FLOAT, 1, two));
  g_node(&body, node("Identity", "keep", "cin", "cout", 0, NULL));
  g_node(&body, node("Relu", "step", "v", "v2", 0, NULL));
  g_node(&body, node("Neg", "emit", "v", "e", 0, NULL));
  g_output(&body, value_info("cout", BOOL, 0, NULL));
  g_output(&body, value_info("v2", FLOAT, -1, NULL));
  g_output(&body, value_info("e", FLOAT, -1, NULL));
  f_str(&body.g, 2, "body");
  g_input(&g, value_info("X", FLOAT, 1, two));
  g_input(&g, value_info("C", BOOL, 0, NULL));
  g_init(&g, tensor("M", INT64, 0, one, mx));
  pb_t a = attr_graph("body", &body.g);
  g_node(&g, node("Loop", "while", "M,C,X", "V,E", 1, &a));
  g_output(&g, value_info("V", FLOAT, -1, NULL));
  g_output(&g, value_info("E", FLOAT, -1, NULL));
  pb_t m = model(&g, 13, "");
  nnmem_graph_t *gr = NULL;
  nnmem_onnx_report_t rep;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = import(&m, NULL, &gr, &rep, &d);
  free(m.b);
  if (st != NNMEM_OK) fail_msg("import: %s", d.message);
  SHAPE(gr, "V", 2);
  assert_int_equal(rep.unresolved_tensors, 1);
  assert_string_equal(rep.unresolved[0].name, "E");
  plan_ok(gr);
  nnmem_graph_destroy(gr);
}

/* cfg->input_shapes entries are checked like dim bindings. */
static void test_bad_input_shapes(void **state) {
  (void)state;
  const int64_t xd[] = {2}, neg[] = {-3};
  nnmem_onnx_input_shape_t is = {"X", 1, neg, 0};
  nnmem_onnx_config_t cfg;
  nnmem_onnx_config_init(&cfg);
  cfg.input_shapes = &is;
  cfg.n_input_shapes = 1;
  nnmem_graph_t *g = NULL;
  nnmem_diag_t d = {{0}};
  for (int k = 0; k < 3; k++) {
    if (k == 1) is = (nnmem_onnx_input_shape_t){NULL, 1, xd, 0};
    if (k == 2) is = (nnmem_onnx_input_shape_t){"X", 99, xd, 0};
    pb_t m = one_node(13, 1, xd, node("Relu", "relu", "X", "Y", 0, NULL), 0,
                      NULL, "Y");
    assert_int_equal(import(&m, &cfg, &g, NULL, &d), NNMEM_ERR_INVALID);
    assert_null(g);
    assert_non_null(strstr(d.message, "input shape #0"));
    free(m.b);
  }
}

/* A float32 initializer with values (raw data). */
/* Resize 18: keep_aspect_ratio_policy (one scale over `axes`, rounded) and
 * tf_crop_and_resize (the roi extent scales the input). */
static void test_resize_policies(void **state) {
  (void)state;
  const int64_t xd[] = {1, 3, 20, 10}, two[] = {2}, hw[] = {2, 3},
                sv[] = {8, 8};
  static const struct {
    const char *policy;
    int64_t h, w;
  } cases[] = {{"not_larger", 8, 4}, {"not_smaller", 16, 8}, {"stretch", 8, 8}};
  for (size_t i = 0; i < 3; i++) {
    pb_t a[2] = {attr_ints("axes", 2, hw),
                 attr_str("keep_aspect_ratio_policy", cases[i].policy)};
    pb_t t = tensor("S", INT64, 1, two, sv);
    pb_t m = one_node(18, 4, xd, node("Resize", "rz", "X,,,S", "Y", 2, a), 1,
                      &t, "Y");
    nnmem_graph_t *g = import_ok(&m, NULL);
    SHAPE(g, "Y", 1, 3, cases[i].h, cases[i].w);
    nnmem_graph_destroy(g);
  }
  const int64_t cd[] = {1, 1, 10, 10}, four[] = {4}, eight[] = {8};
  const float scales[] = {1, 1, 3, 2}, roi[] = {0, 0, 0, 0.25f, 1, 1, 0.5f, 1};
  pb_t in[2] = {ftensor("R", 1, eight, roi, 8),
                ftensor("C", 1, four, scales, 4)};
  pb_t a = attr_str("coordinate_transformation_mode", "tf_crop_and_resize");
  pb_t m = one_node(13, 4, cd, node("Resize", "rz", "X,R,C", "Y", 1, &a), 2, in,
                    "Y");
  nnmem_graph_t *g = import_ok(&m, NULL);
  SHAPE(g, "Y", 1, 1, 15, 15); /* floor(10 x 0.5 x 3), floor(10 x 0.75 x 2) */
  nnmem_graph_destroy(g);
}

/* TfIdfVectorizer: [N, C] -> [N, max(ngram_indexes) + 1] float, [C] ->
 * [max + 1]; a bad mode, no pool or an empty index list fail. */
static void test_tfidf(void **state) {
  (void)state;
  const int64_t xd[] = {2, 6}, cnt[] = {0, 4}, idx[] = {0, 1, 2, 3, 6, 4, 5},
                pool[] = {2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 1};
  for (int rank = 1; rank <= 2; rank++) {
    pb_t a[7] = {attr_str("mode", "TF"),
                 attr_int("min_gram_length", 1),
                 attr_int("max_gram_length", 2),
                 attr_int("max_skip_count", 0),
                 attr_ints("ngram_counts", 2, cnt),
                 attr_ints("ngram_indexes", 7, idx),
                 attr_ints("pool_int64s", 11, pool)};
    pb_t m = one_node(9, rank, rank == 2 ? xd : xd + 1,
                      node("TfIdfVectorizer", "tfidf", "X", "Y", 7, a), 0, NULL,
                      "Y");
    nnmem_graph_t *g = import_ok(&m, NULL);
    if (rank == 2)
      SHAPE(g, "Y", 2, 7);
    else
      SHAPE(g, "Y", 7);
    assert_int_equal(tinfo(g, "Y").dtype, NNMEM_DTYPE_FLOAT32);
    nnmem_graph_destroy(g);
  }
  pb_t a[4] = {attr_str("mode", "TFX"), attr_int("min_gram_length", 1),
               attr_int("max_gram_length", 1),
               attr_ints("ngram_indexes", 1, idx)};
  pb_t m = one_node(9, 2, xd, node("TfIdfVectorizer", "tfidf", "X", "Y", 4, a),
                    0, NULL, "Y");
  expect_fail(&m, NNMEM_ERR_INVALID, "'TFX'");
  pb_t b[4] = {attr_str("mode", "TF"), attr_int("min_gram_length", 1),
               attr_int("max_gram_length", 1),
               attr_ints("ngram_indexes", 1, idx)};
  m = one_node(9, 2, xd, node("TfIdfVectorizer", "tfidf", "X", "Y", 4, b), 0,
               NULL, "Y");
  expect_fail(&m, NNMEM_ERR_INVALID, "pool_int64s");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_sizes),
      cmocka_unit_test(test_gather_nd),
      cmocka_unit_test(test_pad),
      cmocka_unit_test(test_pool_ceil),
      cmocka_unit_test(test_conv_transpose_and_unpool),
      cmocka_unit_test(test_einsum_ellipsis),
      cmocka_unit_test(test_topk_depth_reshape),
      cmocka_unit_test(test_dft_axis),
      cmocka_unit_test(test_cast_bool_fold),
      cmocka_unit_test(test_blocked_layout_huge_channels),
      cmocka_unit_test(test_loop_unbounded_trip_count),
      cmocka_unit_test(test_bad_input_shapes),
      cmocka_unit_test(test_resize_policies),
      cmocka_unit_test(test_tfidf),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

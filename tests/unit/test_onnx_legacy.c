/* test_onnx_legacy.c - the experimental operators of the early opsets
 * (ImageScaler, Crop, Affine, Scale, ScaledTanh, ParametricSoftplus,
 * GRUUnit, ConstantFill, GivenTensorFill, DynamicSlice,
 * MeanVarianceNormalization's opset 1 attributes) and Upsample's opset 1 /
 * 7 / 9 forms: a style-transfer-like opset 8 model imports with no
 * unresolved tensor and plans through the verifier; each operator's shapes
 * and dtypes are checked against values computed by hand from the ONNX
 * operator documents of those versions; each bad attribute fails with
 * INVALID (PARSE for a wrongly typed attribute) naming the node. */
#include <stdint.h>

#include "test_onnx_pb.h"

enum { INT32 = 6 };

static void dtype_is(const nnmem_graph_t *g, const char *name,
                     nnmem_dtype_t want) {
  nnmem_tensor_info_t t = tinfo(g, name);
  if (t.dtype != want)
    fail_msg("%s: dtype %s, want %s", name, nnmem_dtype_name(t.dtype),
             nnmem_dtype_name(want));
}

/* ImageScaler -> Conv -> InstanceNormalization -> Relu -> Conv (stride 2)
 * -> Upsample (opset 7-8 `scales` attribute) -> Conv -> Affine -> Crop
 * (border) -> Crop (border + scale) -> ScaledTanh, at opset 8. */
static void test_style_transfer(void **state) {
  (void)state;
  const int64_t xd[] = {1, 3, 224, 224}, w1[] = {16, 3, 9, 9}, c16[] = {16},
                w2[] = {32, 16, 3, 3}, w3[] = {3, 32, 9, 9},
                p4[] = {4, 4, 4, 4}, p1[] = {1, 1, 1, 1}, s2[] = {2, 2},
                b2[] = {2, 2, 2, 2}, b48[] = {4, 8, 0, 0}, hw[] = {200, 210};
  const float bias[] = {-0.5f, -0.4f, -0.3f}, up[] = {1, 1, 2, 2};
  gb_t g = {{0}};
  g_input(&g, value_info("X", FLOAT, 4, xd));
  g_init(&g, tensor("W1", FLOAT, 4, w1, NULL));
  g_init(&g, tensor("S", FLOAT, 1, c16, NULL));
  g_init(&g, tensor("Bi", FLOAT, 1, c16, NULL));
  g_init(&g, tensor("W2", FLOAT, 4, w2, NULL));
  g_init(&g, tensor("W3", FLOAT, 4, w3, NULL));
  pb_t is[2] = {attr_float("scale", 1.0f / 255), attr_floats("bias", 3, bias)};
  g_node(&g, node("ImageScaler", "scaler", "X", "A", 2, is));
  pb_t c1 = attr_ints("pads", 4, p4);
  g_node(&g, node("Conv", "conv1", "A,W1", "B", 1, &c1));
  g_node(&g, node("InstanceNormalization", "in1", "B,S,Bi", "C", 0, NULL));
  g_node(&g, node("Relu", "relu1", "C", "D", 0, NULL));
  pb_t c2[2] = {attr_ints("pads", 4, p1), attr_ints("strides", 2, s2)};
  g_node(&g, node("Conv", "conv2", "D,W2", "E", 2, c2));
  pb_t u[2] = {attr_floats("scales", 4, up), attr_str("mode", "nearest")};
  g_node(&g, node("Upsample", "up", "E", "F", 2, u));
  pb_t c3 = attr_ints("pads", 4, p4);
  g_node(&g, node("Conv", "conv3", "F,W3", "G", 1, &c3));
  pb_t af[2] = {attr_float("alpha", 127.5f), attr_float("beta", 127.5f)};
  g_node(&g, node("Affine", "affine", "G", "H", 2, af));
  pb_t cr1 = attr_ints("border", 4, b2);
  g_node(&g, node("Crop", "crop1", "H", "I", 1, &cr1));
  pb_t cr2[2] = {attr_ints("border", 4, b48), attr_ints("scale", 2, hw)};
  g_node(&g, node("Crop", "crop2", "I", "J", 2, cr2));
  g_node(&g, node("ScaledTanh", "tanh", "J", "Y", 0, NULL));
  g_output(&g, value_info("Y", FLOAT, -1, NULL));
  pb_t m = model(&g, 8, "");
  nnmem_onnx_report_t rep;
  nnmem_graph_t *gr = import_ok(&m, &rep);
  assert_int_equal(rep.unresolved_tensors, 0);
  assert_int_equal(rep.n_unsupported, 0);
  assert_int_equal(rep.opset, 8);
  SHAPE(gr, "A", 1, 3, 224, 224);
  SHAPE(gr, "B", 1, 16, 224, 224); /* 224 + 8 - 9 + 1 */
  SHAPE(gr, "E", 1, 32, 112, 112); /* floor((224 + 2 - 3) / 2) + 1 */
  SHAPE(gr, "F", 1, 32, 224, 224); /* x 2 */
  SHAPE(gr, "H", 1, 3, 224, 224);
  SHAPE(gr, "I", 1, 3, 220, 220); /* 224 - 2 - 2 */
  SHAPE(gr, "J", 1, 3, 200, 210); /* scale; 8 + 200 <= 220, 4 + 210 <= 220 */
  SHAPE(gr, "Y", 1, 3, 200, 210);
  dtype_is(gr, "Y", NNMEM_DTYPE_FLOAT32);
  assert_int_equal(tinfo(gr, "Y").bytes, 3 * 200 * 210 * 4);
  nnmem_op_info_t op;
  assert_true(find_op(gr, "ImageScaler", &op)->flags & NNMEM_OP_INPLACE);
  nnmem_graph_destroy(gr);
}

/* ParametricSoftplus, Scale, GRUUnit, ConstantFill (attribute shape, input
 * shape, input_as_shape + extra_shape), GivenTensorFill, DynamicSlice and
 * MeanVarianceNormalization (opset 1 attributes), at opset 8. */
static void test_pointwise_fills_slices(void **state) {
  (void)state;
  const int64_t xd[] = {2, 6, 5}, hd[] = {1, 2, 4}, gd[] = {1, 2, 12},
                ld[] = {2}, td[] = {1}, one[] = {1}, st[] = {1}, en[] = {4},
                sh23[] = {2, 3}, ex4[] = {4}, ex7[] = {7}, sh22[] = {2, 2};
  const float four[] = {1, 2, 3, 4};
  gb_t g = {{0}};
  g_input(&g, value_info("X", FLOAT, 3, xd));
  g_input(&g, value_info("H", FLOAT, 3, hd));
  g_input(&g, value_info("Gt", FLOAT, 3, gd));
  g_input(&g, value_info("L", FLOAT, 1, ld));
  g_input(&g, value_info("T", FLOAT, 1, td));
  g_init(&g, tensor("st", INT64, 1, one, st));
  g_init(&g, tensor("en", INT64, 1, one, en));
  g_init(&g, tensor("ax", INT64, 1, one, one));
  pb_t ps[2] = {attr_float("alpha", 2), attr_float("beta", 0.5f)};
  g_node(&g, node("ParametricSoftplus", "ps", "X", "P", 2, ps));
  pb_t sc = attr_float("scale", 3);
  g_node(&g, node("Scale", "sc", "P", "Q", 1, &sc));
  g_node(&g, node("GRUUnit", "gru", "H,Gt,L,T", "Hn", 0, NULL));
  pb_t cf[3] = {attr_ints("shape", 2, sh23), attr_int("dtype", INT64),
                attr_float("value", 5)};
  g_node(&g, node("ConstantFill", "cf", "", "CF", 3, cf));
  g_node(&g, node("Shape", "shape", "X", "SX", 0, NULL));
  pb_t cf2[3] = {attr_int("input_as_shape", 1),
                 attr_ints("extra_shape", 1, ex4), attr_int("dtype", INT32)};
  g_node(&g, node("ConstantFill", "cf2", "SX", "CF2", 3, cf2));
  pb_t cf3[2] = {attr_ints("extra_shape", 1, ex7), attr_int("dtype", BOOL)};
  g_node(&g, node("ConstantFill", "cf3", "Q", "CF3", 2, cf3));
  pb_t gf[2] = {attr_ints("shape", 2, sh22), attr_floats("values", 4, four)};
  g_node(&g, node("GivenTensorFill", "gf", "", "GF", 2, gf));
  g_node(&g, node("DynamicSlice", "ds", "Q,st,en,ax", "DS", 0, NULL));
  pb_t mv = attr_int("across_channels", 1);
  g_node(&g, node("MeanVarianceNormalization", "mvn", "DS", "MV", 1, &mv));
  g_output(&g, value_info("Hn", FLOAT, -1, NULL));
  g_output(&g, value_info("CF3", BOOL, -1, NULL));
  g_output(&g, value_info("MV", FLOAT, -1, NULL));
  pb_t m = model(&g, 8, "");
  nnmem_onnx_report_t rep;
  nnmem_graph_t *gr = import_ok(&m, &rep);
  assert_int_equal(rep.unresolved_tensors, 0);
  SHAPE(gr, "Q", 2, 6, 5);
  SHAPE(gr, "Hn", 1, 2, 4); /* hidden_prev's shape; gates 12 = 3 x 4 */
  SHAPE(gr, "CF", 2, 3);
  dtype_is(gr, "CF", NNMEM_DTYPE_INT64);
  assert_int_equal(tinfo(gr, "CF").kind, NNMEM_TENSOR_CONSTANT);
  SHAPE(gr, "CF2", 2, 6, 5, 4); /* Shape(X) values, then extra_shape */
  dtype_is(gr, "CF2", NNMEM_DTYPE_INT32);
  SHAPE(gr, "CF3", 2, 6, 5, 7); /* Q's shape, then extra_shape */
  dtype_is(gr, "CF3", NNMEM_DTYPE_BOOL);
  SHAPE(gr, "GF", 2, 2);
  dtype_is(gr, "GF", NNMEM_DTYPE_FLOAT32);
  SHAPE(gr, "DS", 2, 3, 5); /* axis 1, [1, 4) */
  SHAPE(gr, "MV", 2, 3, 5);
  nnmem_graph_destroy(gr);
}

/* X [1, 3, 4, 4] -> Upsample at `opset` with attributes `a` and inputs. */
static pb_t upsample_model(int64_t opset, int n_attr, pb_t *a, const char *ins,
                           int n_init, pb_t *inits) {
  const int64_t xd[] = {1, 3, 4, 4};
  gb_t g = {{0}};
  g_input(&g, value_info("X", FLOAT, 4, xd));
  for (int i = 0; i < n_init; i++)
    g_init(&g, inits[i]);
  g_node(&g, node("Upsample", "bad", ins, "Y", n_attr, a));
  g_output(&g, value_info("Y", FLOAT, -1, NULL));
  return model(&g, opset, "");
}

static void test_upsample_forms(void **state) {
  (void)state;
  pb_t a1[3] = {attr_float("height_scale", 2), attr_float("width_scale", 3),
                attr_str("mode", "bilinear")};
  pb_t m = upsample_model(1, 3, a1, "X", 0, NULL);
  nnmem_graph_t *g = import_ok(&m, NULL);
  SHAPE(g, "Y", 1, 3, 8, 12);
  nnmem_graph_destroy(g);
  const float s7[] = {1, 1, 2, 2.5f};
  pb_t a7[2] = {attr_floats("scales", 4, s7), attr_str("mode", "linear")};
  m = upsample_model(7, 2, a7, "X", 0, NULL);
  g = import_ok(&m, NULL);
  SHAPE(g, "Y", 1, 3, 8, 10); /* floor(4 x 2.5) */
  nnmem_graph_destroy(g);
  const float s9[] = {1, 1, 1.5f, 2};
  const int64_t four[] = {4};
  for (int64_t opset = 9; opset <= 10; opset++) {
    pb_t t = ftensor("S", 1, four, s9, 4);
    m = upsample_model(opset, 0, NULL, "X,S", 1, &t);
    g = import_ok(&m, NULL);
    SHAPE(g, "Y", 1, 3, 6, 8);
    nnmem_graph_destroy(g);
  }
}

/* A one-node model: X (float, rank-4 [1, 3, 4, 4] unless rank 3) -> op. */
static pb_t bad_model(int64_t opset, const char *op, const char *ins,
                      int n_attr, pb_t *a, int rank3) {
  const int64_t xd[] = {1, 3, 4, 4}, sd[] = {4};
  const float s9[] = {1, 1, 2, 2};
  gb_t g = {{0}};
  g_input(&g, value_info("X", FLOAT, rank3 ? 3 : 4, rank3 ? xd + 1 : xd));
  g_init(&g, ftensor("S", 1, sd, s9, 4));
  g_node(&g, node(op, "bad", ins, "Y", n_attr, a));
  g_output(&g, value_info("Y", FLOAT, -1, NULL));
  return model(&g, opset, "");
}

static void fails(pb_t m, nnmem_status_t want, const char *needle) {
  nnmem_graph_t *g = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = import(&m, NULL, &g, NULL, &d);
  free(m.b);
  if (st != want)
    fail_msg("status %s, want %s (%s)", nnmem_status_name(st),
             nnmem_status_name(want), d.message);
  assert_null(g);
  if (!strstr(d.message, "node 'bad'") || !strstr(d.message, needle))
    fail_msg("message '%s' lacks the node or '%s'", d.message, needle);
}

static void test_bad_attributes(void **state) {
  (void)state;
  const int64_t b3[] = {1, 1, 1}, b0[] = {0, 0, 0, 0}, s55[] = {5, 5},
                sh[] = {2, 2}, b1[] = {1, 1, 1, 1};
  const float two[] = {0.5f, 0.5f}, s3[] = {1, 2, 2}, half[] = {1, 1, 0.5f, 2},
              v3[] = {1, 2, 3};
  const nnmem_status_t INV = NNMEM_ERR_INVALID;
  pb_t a = attr_ints("border", 3, b3);
  fails(bad_model(8, "Crop", "X", 1, &a, 0), INV, "border");
  pb_t cr[2] = {attr_ints("border", 4, b0), attr_ints("scale", 2, s55)};
  fails(bad_model(8, "Crop", "X", 2, cr, 0), INV, "does not fit");
  a = attr_ints("border", 4, b1);
  fails(bad_model(8, "Crop", "X", 1, &a, 1), INV, "rank 3");
  a = attr_floats("bias", 2, two);
  fails(bad_model(8, "ImageScaler", "X", 1, &a, 0), INV, "2 values");
  fails(bad_model(7, "Upsample", "X", 0, NULL, 0), INV, "scales");
  a = attr_floats("scales", 4, half);
  fails(bad_model(7, "Upsample", "X", 1, &a, 0), INV, ">= 1");
  a = attr_floats("scales", 3, s3);
  fails(bad_model(8, "Upsample", "X", 1, &a, 0), INV, "3 values");
  a = attr_float("height_scale", 2);
  fails(bad_model(1, "Upsample", "X", 1, &a, 0), INV, "width_scale");
  pb_t um[2] = {attr_str("mode", "cubic"), attr_floats("scales", 4, half)};
  fails(bad_model(8, "Upsample", "X", 2, um, 0), INV, "mode 'cubic'");
  fails(bad_model(9, "Upsample", "X", 0, NULL, 0), INV, "scales");
  a = attr_int("dtype", 3);
  fails(bad_model(8, "ConstantFill", "", 1, &a, 0), INV, "dtype 3");
  a = attr_ints("shape", 2, sh);
  fails(bad_model(8, "ConstantFill", "X", 1, &a, 0), INV, "not both");
  pb_t gf[2] = {attr_ints("shape", 2, sh), attr_floats("values", 3, v3)};
  fails(bad_model(8, "GivenTensorFill", "", 2, gf, 0), INV, "3 entries");
  a = attr_int("across_channels", 2);
  fails(bad_model(8, "MeanVarianceNormalization", "X", 1, &a, 0), INV,
        "across_channels");
  fails(bad_model(8, "GRUUnit", "X,X,X,X", 0, NULL, 0), INV, "3 x");
  a = attr_int("alpha", 2); /* an int where a float belongs */
  fails(bad_model(8, "Affine", "X", 1, &a, 0), NNMEM_ERR_PARSE, "alpha");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_style_transfer),
      cmocka_unit_test(test_pointwise_fills_slices),
      cmocka_unit_test(test_upsample_forms),
      cmocka_unit_test(test_bad_attributes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

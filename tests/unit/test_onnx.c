/* test_onnx.c - the ONNX importer on small models built in the test with a
 * minimal protobuf writer: shape inference of convolutions, pooling, Gemm,
 * Reshape (0 / -1), broadcasting, folding of integer shape chains, opset
 * variants, If / Loop bodies, dtype / layout options, and bad input
 * (truncated or corrupted protobuf, not ONNX, unknown domain, cycles,
 * missing producers, duplicate names, bad dims, attribute types, deep
 * nesting) with clear messages and no leak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_onnx_pb.h"

/* ---- shapes --------------------------------------------------------------*/

static pb_t cnn_model(void) {
  gb_t g = {{0}};
  const int64_t xd[] = {1, 3, 224, 224}, wd[] = {64, 3, 7, 7}, bd[] = {10, 64},
                yd[] = {1, 10};
  const int64_t two[] = {2, 2}, three[] = {3, 3}, seven[] = {7, 7},
                p3[] = {3, 3, 3, 3}, p1[] = {1, 1, 1, 1};
  g_input(&g, value_info("X", FLOAT, 4, xd));
  g_init(&g, tensor("W", FLOAT, 4, wd, NULL)); /* external data */
  g_init(&g, tensor("B", FLOAT, 2, bd, NULL));
  pb_t ca[] = {attr_ints("strides", 2, two), attr_ints("pads", 4, p3),
               attr_ints("kernel_shape", 2, seven)};
  g_node(&g, node("Conv", "conv1", "X,W", "c1", 3, ca));
  g_node(&g, node("Relu", "relu1", "c1", "r1", 0, NULL));
  pb_t pa[] = {attr_ints("kernel_shape", 2, three),
               attr_ints("strides", 2, two), attr_ints("pads", 4, p1)};
  g_node(&g, node("MaxPool", "pool1", "r1", "p1", 3, pa));
  pb_t pc[] = {attr_ints("kernel_shape", 2, three),
               attr_ints("strides", 2, two), attr_int("ceil_mode", 1)};
  g_node(&g, node("MaxPool", "pool2", "p1", "p2", 3, pc));
  pb_t ap[] = {attr_ints("kernel_shape", 2, three),
               attr_ints("strides", 2, two),
               attr_str("auto_pad", "SAME_UPPER")};
  g_node(&g, node("AveragePool", "pool3", "p2", "a1", 3, ap));
  g_node(&g, node("GlobalAveragePool", "gap", "a1", "gp", 0, NULL));
  g_node(&g, node("Flatten", "flat", "gp", "f", 0, NULL));
  pb_t ga[] = {attr_int("transB", 1)};
  g_node(&g, node("Gemm", "fc", "f,B", "Y", 1, ga));
  g_output(&g, value_info("Y", FLOAT, 2, yd));
  return model(&g, 13, "");
}

static void test_cnn_shapes(void **state) {
  (void)state;
  pb_t m = cnn_model();
  nnmem_graph_t *g = NULL;
  nnmem_onnx_report_t rep;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = import(&m, NULL, &g, &rep, &d);
  if (st != NNMEM_OK) fail_msg("%s", d.message);
  SHAPE(g, "c1", 1, 64, 112, 112);
  SHAPE(g, "p1", 1, 64, 56, 56);
  SHAPE(g, "p2", 1, 64, 28, 28); /* ceil_mode: 27 without it */
  SHAPE(g, "a1", 1, 64, 14, 14);
  SHAPE(g, "gp", 1, 64, 1, 1);
  SHAPE(g, "f", 1, 64);
  SHAPE(g, "Y", 1, 10);
  assert_int_equal(tinfo(g, "c1").bytes, 64 * 112 * 112 * 4);
  assert_int_equal(tinfo(g, "W").bytes, 64 * 3 * 7 * 7 * 4); /* external */
  assert_int_equal(tinfo(g, "W").kind, NNMEM_TENSOR_WEIGHT);
  assert_int_equal(tinfo(g, "X").kind, NNMEM_TENSOR_INPUT);
  assert_int_equal(tinfo(g, "Y").kind, NNMEM_TENSOR_OUTPUT);
  assert_int_equal(tinfo(g, "r1").kind, NNMEM_TENSOR_ACTIVATION);
  nnmem_op_info_t op;
  assert_int_equal(find_op(g, "Flatten", &op)->flags, NNMEM_OP_VIEW);
  assert_int_equal(find_op(g, "Relu", &op)->flags, NNMEM_OP_INPLACE);
  assert_int_equal(find_op(g, "Conv", &op)->flags, 0);
  assert_int_equal(rep.nodes, 8);
  assert_int_equal(rep.ops, 8);
  assert_int_equal(rep.unresolved_tensors, 0);
  assert_int_equal(rep.opset, 13);
  plan_ok(g);
  nnmem_graph_destroy(g);
  free(m.b);
}

static void test_cnn_dtype_layout(void **state) {
  (void)state;
  pb_t m = cnn_model();
  nnmem_onnx_config_t cfg;
  nnmem_onnx_config_init(&cfg);
  cfg.dtype = NNMEM_DTYPE_FLOAT16;
  cfg.layout = NNMEM_ONNX_LAYOUT_NC1HWC0;
  cfg.alignment = 256;
  nnmem_graph_t *g = NULL;
  nnmem_diag_t d = {{0}};
  assert_ok(import(&m, &cfg, &g, NULL, &d));
  SHAPE(g, "c1", 1, 4, 112, 112, 16); /* 64 channels = 4 x 16 */
  SHAPE(g, "X", 1, 1, 224, 224, 16);  /* 3 channels padded to 16 */
  assert_int_equal(tinfo(g, "X").bytes, 224 * 224 * 16 * 2);
  assert_int_equal(tinfo(g, "X").dtype, NNMEM_DTYPE_FLOAT16);
  assert_int_equal(tinfo(g, "X").align, 256);
  SHAPE(g, "W", 64, 3, 7, 7); /* weights keep their layout */
  assert_int_equal(tinfo(g, "W").bytes, 64 * 3 * 7 * 7 * 2);
  SHAPE(g, "Y", 1, 10);
  plan_ok(g);
  nnmem_graph_destroy(g);
  nnmem_onnx_config_init(&cfg);
  cfg.layout = NNMEM_ONNX_LAYOUT_NHWC;
  assert_ok(import(&m, &cfg, &g, NULL, &d));
  SHAPE(g, "c1", 1, 112, 112, 64);
  nnmem_graph_destroy(g);
  free(m.b);
}

static void test_reshape_broadcast(void **state) {
  (void)state;
  gb_t g = {{0}};
  const int64_t xd[] = {2, 3, 4}, sd[] = {2}, sv[] = {0, -1}, ad[] = {3, 1},
                t4[] = {2, 3, 4};
  g_input(&g, value_info("X", FLOAT, 3, xd));
  g_input(&g, value_info("A", FLOAT, 2, ad));
  g_init(&g, tensor("shape", INT64, 1, sd, sv));
  g_node(&g, node("Reshape", "r", "X,shape", "R", 0, NULL));
  g_node(&g, node("Sub", "s", "X,A", "S", 0, NULL)); /* broadcast */
  g_node(&g, node("Mul", "m", "S,X", "M", 0, NULL)); /* same shape */
  g_node(&g, node("Sigmoid", "sg", "M", "Y", 0, NULL));
  g_output(&g, value_info("Y", FLOAT, 3, t4));
  g_output(&g, value_info("R", FLOAT, -1, NULL));
  pb_t m = model(&g, 14, "");
  nnmem_graph_t *gr = NULL;
  nnmem_diag_t d = {{0}};
  assert_ok(import(&m, NULL, &gr, NULL, &d));
  SHAPE(gr, "R", 2, 12);
  SHAPE(gr, "S", 2, 3, 4);
  SHAPE(gr, "M", 2, 3, 4);
  nnmem_op_info_t op;
  assert_int_equal(find_op(gr, "Reshape", &op)->flags, NNMEM_OP_VIEW);
  assert_int_equal(find_op(gr, "Mul", &op)->flags, NNMEM_OP_INPLACE);
  plan_ok(gr);
  nnmem_graph_destroy(gr);
  free(m.b);
}

/* A tensor name that is not UTF-8 is refused with its valid prefix, as the
 * CSV and JSON readers do (the plan files could not name it again). */
static void test_name_not_utf8(void **state) {
  (void)state;
  gb_t g = {{0}};
  const int64_t xd[] = {4};
  g_input(&g, value_info("X", FLOAT, 1, xd));
  g_node(&g, node("Relu", "r", "X", "Yb\xff\xfe", 0, NULL));
  g_output(&g, value_info("Yb\xff\xfe", FLOAT, 1, xd));
  pb_t m = model(&g, 14, "");
  nnmem_graph_t *gr = NULL;
  nnmem_diag_t d = {{0}};
  assert_int_equal(import(&m, NULL, &gr, NULL, &d), NNMEM_ERR_PARSE);
  assert_null(gr);
  assert_non_null(strstr(d.message, "tensor name 'Yb' is not valid UTF-8"));
  assert_non_null(strstr(d.message, "0xff at offset 2"));
  free(m.b);
}

/* Shape -> Gather -> Mul -> Unsqueeze -> Concat -> Reshape folds. */
static pb_t folding_model(void) {
  gb_t g = {{0}};
  const int64_t xd[] = {-1, -2, 8}, one[] = {1}, zero = 0, onev = 1, eight = 8,
                ax0 = 0;
  g_input(&g, value_info("X", FLOAT, 3, xd));
  g_init(&g, tensor("i0", INT64, 0, NULL, &zero));
  g_init(&g, tensor("i1", INT64, 0, NULL, &onev));
  g_init(&g, tensor("c8", INT64, 1, one, &eight));
  g_init(&g, tensor("axes", INT64, 1, one, &ax0));
  g_node(&g, node("Shape", "shape", "X", "sh", 0, NULL));
  g_node(&g, node("Gather", "g0", "sh,i0", "b", 0, NULL));
  g_node(&g, node("Gather", "g1", "sh,i1", "s", 0, NULL));
  g_node(&g, node("Mul", "bs", "b,s", "bs", 0, NULL));
  g_node(&g, node("Unsqueeze", "u", "bs,axes", "bsu", 0, NULL));
  pb_t ca[] = {attr_int("axis", 0)};
  g_node(&g, node("Concat", "cat", "bsu,c8", "newshape", 1, ca));
  g_node(&g, node("Reshape", "r", "X,newshape", "Y", 0, NULL));
  g_output(&g, value_info("Y", FLOAT, -1, NULL));
  return model(&g, 13, "");
}

static void test_folding_chain(void **state) {
  (void)state;
  pb_t m = folding_model();
  nnmem_onnx_config_t cfg;
  nnmem_onnx_config_init(&cfg);
  nnmem_onnx_dim_t dims[] = {{"batch", 4}, {"sequence", 16}};
  cfg.dims = dims;
  cfg.n_dims = 2;
  nnmem_graph_t *g = NULL;
  nnmem_onnx_report_t rep;
  nnmem_diag_t d = {{0}};
  assert_ok(import(&m, &cfg, &g, &rep, &d));
  SHAPE(g, "Y", 64, 8);
  SHAPE(g, "newshape", 2);
  assert_int_equal(tinfo(g, "newshape").kind, NNMEM_TENSOR_CONSTANT);
  assert_int_equal(tinfo(g, "bs").kind, NNMEM_TENSOR_CONSTANT);
  assert_int_equal(nnmem_graph_op_count(g), 1); /* only the Reshape runs */
  assert_int_equal(rep.folded_nodes, 6);
  assert_int_equal(rep.n_defaults, 0);
  plan_ok(g);
  nnmem_graph_destroy(g);
  /* unbound: batch -> 1, sequence -> 128, both reported */
  assert_ok(import(&m, NULL, &g, &rep, &d));
  SHAPE(g, "Y", 128, 8);
  assert_int_equal(rep.n_defaults, 2);
  assert_string_equal(rep.defaults[0].name, "batch");
  assert_int_equal(rep.defaults[0].value, 1);
  assert_string_equal(rep.defaults[1].name, "sequence");
  assert_int_equal(rep.defaults[1].value, 128);
  nnmem_graph_destroy(g);
  free(m.b);
}

/* A binding that matches no symbolic dim is an error listing the model's
 * dims, with a suggestion for a typo; the aliases "batch" / "sequence" are
 * errors only when the model has no dim of that kind (defect 10). */
static void test_unknown_dim_binding(void **state) {
  (void)state;
  const int64_t xd[] = {-1, -3, 4}; /* [batch, other, 4] */
  gb_t gb = {{0}};
  g_input(&gb, value_info("X", FLOAT, 3, xd));
  g_node(&gb, node("Relu", "relu", "X", "Y", 0, NULL));
  g_output(&gb, value_info("Y", FLOAT, -1, NULL));
  pb_t m = model(&gb, 13, "");
  struct {
    const char *name, *needle; /* needle NULL: accepted */
  } cases[] = {{"batch", NULL},
               {"other", NULL},
               {"bacth", "did you mean 'batch'?"},
               {"othr", "did you mean 'other'?"},
               {"zzzzzzzz", "symbolic dims of the model: batch, other"},
               {"sequence", "no symbolic dim of the model is sequence-like"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nnmem_onnx_config_t cfg;
    nnmem_onnx_config_init(&cfg);
    nnmem_onnx_dim_t dims[] = {{cases[i].name, 8}};
    cfg.dims = dims;
    cfg.n_dims = 1;
    nnmem_graph_t *g = NULL;
    nnmem_diag_t d = {{0}};
    nnmem_status_t st = import(&m, &cfg, &g, NULL, &d);
    if (!cases[i].needle) {
      assert_ok(st);
      nnmem_graph_destroy(g);
      continue;
    }
    assert_int_equal(st, NNMEM_ERR_INVALID);
    assert_null(g);
    if (!strstr(d.message, cases[i].needle))
      fail_msg("'%s': message '%s' lacks '%s'", cases[i].name, d.message,
               cases[i].needle);
    if (strstr(cases[i].needle, "did you") == NULL &&
        strstr(d.message, "did you"))
      fail_msg("'%s': unexpected suggestion in '%s'", cases[i].name, d.message);
  }
  free(m.b);
}

/* The same ops across opsets: attributes (old) and inputs (new). */
static void check_opset_variant(int64_t opset) {
  gb_t g = {{0}};
  const int64_t xd[] = {2, 1, 6}, one[] = {1}, two[] = {2};
  const int64_t ax1 = 1, ax0 = 0, sp[] = {2, 4}, st[] = {1}, en[] = {5},
                pads[] = {0, 0, 1, 0, 0, 2};
  g_input(&g, value_info("X", FLOAT, 3, xd));
  int old = opset < 13;
  if (old) {
    pb_t a1[] = {attr_ints("axes", 1, &ax1)};
    g_node(&g, node("Squeeze", "sq", "X", "sq", 1, a1));
    pb_t a2[] = {attr_ints("axes", 1, &ax0)};
    g_node(&g, node("Unsqueeze", "us", "sq", "us", 1, a2));
    pb_t a3[] = {attr_int("axis", 2), attr_ints("split", 2, sp)};
    g_node(&g, node("Split", "sp", "us", "s0,s1", 2, a3));
    pb_t a4[] = {attr_ints("axes", 1, &ax1), attr_int("keepdims", 0)};
    g_node(&g, node("ReduceSum", "rs", "X", "rs", 2, a4));
  } else {
    g_init(&g, tensor("ax1", INT64, 1, one, &ax1));
    g_init(&g, tensor("ax0", INT64, 1, one, &ax0));
    g_init(&g, tensor("split", INT64, 1, two, sp));
    g_node(&g, node("Squeeze", "sq", "X,ax1", "sq", 0, NULL));
    g_node(&g, node("Unsqueeze", "us", "sq,ax0", "us", 0, NULL));
    pb_t a3[] = {attr_int("axis", 2)};
    g_node(&g, node("Split", "sp", "us,split", "s0,s1", 1, a3));
    pb_t a4[] = {attr_int("keepdims", 0)};
    g_node(&g, node("ReduceSum", "rs", "X,ax1", "rs", 1, a4));
  }
  if (opset < 10) {
    const int64_t axis2 = 2;
    pb_t a6[] = {attr_ints("starts", 1, st), attr_ints("ends", 1, en),
                 attr_ints("axes", 1, &axis2)};
    g_node(&g, node("Slice", "sl", "X", "sl", 3, a6));
  } else {
    const int64_t axis2 = 2;
    g_init(&g, tensor("st", INT64, 1, one, st));
    g_init(&g, tensor("en", INT64, 1, one, en));
    g_init(&g, tensor("ax2", INT64, 1, one, &axis2));
    g_node(&g, node("Slice", "sl", "X,st,en,ax2", "sl", 0, NULL));
  }
  if (opset < 11) {
    pb_t a7[] = {attr_ints("pads", 6, pads)};
    g_node(&g, node("Pad", "pd", "X", "pd", 1, a7));
  } else {
    const int64_t six[] = {6};
    g_init(&g, tensor("pads", INT64, 1, six, pads));
    g_node(&g, node("Pad", "pd", "X,pads", "pd", 0, NULL));
  }
  g_output(&g, value_info("s1", FLOAT, -1, NULL));
  pb_t m = model(&g, opset, "");
  nnmem_graph_t *gr = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t s = import(&m, NULL, &gr, NULL, &d);
  if (s != NNMEM_OK) fail_msg("opset %lld: %s", (long long)opset, d.message);
  SHAPE(gr, "sq", 2, 6);
  SHAPE(gr, "us", 1, 2, 6);
  SHAPE(gr, "s0", 1, 2, 2);
  SHAPE(gr, "s1", 1, 2, 4);
  SHAPE(gr, "rs", 2, 6);
  SHAPE(gr, "sl", 2, 1, 4);
  SHAPE(gr, "pd", 2, 1, 9);
  plan_ok(gr);
  nnmem_graph_destroy(gr);
  free(m.b);
}

static void test_opset_variants(void **state) {
  (void)state;
  check_opset_variant(9);
  check_opset_variant(11);
  check_opset_variant(13);
  check_opset_variant(18);
}

/* A tour of other operator rules, each with hand-computed shapes. */
static void test_more_ops(void **state) {
  (void)state;
  gb_t g = {{0}};
  const int64_t x2[] = {4, 6}, cs[] = {2}, csv[] = {2, 8}, a3[] = {2, 3, 4},
                b3[] = {2, 4, 5}, xt[] = {1, 2, 5, 5}, wt[] = {2, 3, 3, 3},
                two[] = {2, 2}, k1[] = {1}, kv = 2, xr[] = {1, 3, 8, 8},
                s4[] = {4}, sv[] = {1, 3, 16, 12}, xl[] = {7, 2, 5},
                g3[] = {3, 4, 5}, i2[] = {2, 2}, iv[] = {0, 1, 2, 3},
                v4[] = {4}, rv[] = {1, 10, 3};
  g_input(&g, value_info("X2", FLOAT, 2, x2));
  g_init(&g, tensor("crop", INT64, 1, cs, csv));
  g_node(&g, node("CenterCropPad", "ccp", "X2,crop", "ccp", 0, NULL));
  g_input(&g, value_info("A", FLOAT, 3, a3));
  g_input(&g, value_info("B", FLOAT, 3, b3));
  pb_t ea[] = {attr_str("equation", "bij,bjk->bik")};
  g_node(&g, node("Einsum", "ein", "A,B", "ein", 1, ea));
  g_input(&g, value_info("XT", FLOAT, 4, xt));
  g_init(&g, tensor("WT", FLOAT, 4, wt, NULL));
  pb_t ta[] = {attr_ints("strides", 2, two)};
  g_node(&g, node("ConvTranspose", "ct", "XT,WT", "ct", 1, ta));
  g_init(&g, tensor("K", INT64, 1, k1, &kv));
  g_node(&g, node("TopK", "topk", "X2,K", "tv,ti", 0, NULL));
  g_input(&g, value_info("XR", FLOAT, 4, xr));
  g_init(&g, tensor("sizes", INT64, 1, s4, sv));
  g_node(&g, node("Resize", "rs", "XR,,,sizes", "rs", 0, NULL));
  g_input(&g, value_info("XL", FLOAT, 3, xl));
  pb_t la[] = {attr_int("hidden_size", 4),
               attr_str("direction", "bidirectional")};
  g_node(&g, node("LSTM", "lstm", "XL,WT,WT", "ly,lh,lc", 2, la));
  g_input(&g, value_info("G", FLOAT, 3, g3));
  g_init(&g, tensor("gi", INT64, 2, i2, iv));
  pb_t gaa[] = {attr_int("axis", 1)};
  g_node(&g, node("Gather", "gather", "G,gi", "gat", 1, gaa));
  g_input(&g, value_info("V", FLOAT, 1, v4));
  g_node(&g, node("MatMul", "mv", "V,B", "mv", 0, NULL));
  g_init(&g, tensor("r0", INT64, 0, NULL, &rv[0]));
  g_init(&g, tensor("r1", INT64, 0, NULL, &rv[1]));
  g_init(&g, tensor("r2", INT64, 0, NULL, &rv[2]));
  g_node(&g, node("Range", "range", "r0,r1,r2", "range", 0, NULL));
  pb_t to[] = {attr_int("to", FLOAT)};
  g_node(&g, node("Cast", "cast", "range", "rangef", 1, to));
  pb_t m = model(&g, 13, "");
  nnmem_graph_t *gr = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = import(&m, NULL, &gr, NULL, &d);
  if (st != NNMEM_OK) fail_msg("%s", d.message);
  SHAPE(gr, "ccp", 2, 8);
  SHAPE(gr, "ein", 2, 3, 5);
  SHAPE(gr, "ct", 1, 3, 11, 11); /* 2 (5 - 1) + 3 */
  SHAPE(gr, "tv", 4, 2);
  assert_int_equal(tinfo(gr, "ti").dtype, NNMEM_DTYPE_INT64);
  SHAPE(gr, "rs", 1, 3, 16, 12);
  SHAPE(gr, "ly", 7, 2, 2, 4);
  SHAPE(gr, "lh", 2, 2, 4);
  SHAPE(gr, "gat", 3, 2, 2, 5);
  SHAPE(gr, "mv", 2, 5); /* [4] x [2,4,5] */
  SHAPE(gr, "range", 3); /* 1, 4, 7 */
  assert_int_equal(tinfo(gr, "rangef").kind, NNMEM_TENSOR_CONSTANT);
  assert_int_equal(tinfo(gr, "rangef").dtype, NNMEM_DTYPE_FLOAT32);
  plan_ok(gr);
  nnmem_graph_destroy(gr);
  free(m.b);
}

/* ---- control flow
 * ----------------------------------------------------------*/

static pb_t branch(const char *op, const char *out) {
  gb_t b = {{0}};
  g_node(&b, node(op, NULL, "X", out, 0, NULL));
  g_output(&b, value_info(out, FLOAT, -1, NULL));
  f_str(&b.g, 2, out);
  return b.g;
}

static pb_t if_model(int const_cond) {
  gb_t g = {{0}};
  const int64_t xd[] = {4, 8}, t = 1;
  if (const_cond)
    g_init(&g, tensor("C", BOOL, 0, NULL, &t));
  else
    g_input(&g, value_info("C", BOOL, 0, NULL));
  g_input(&g, value_info("X", FLOAT, 2, xd));
  pb_t tb = branch("Relu", "t_out"), eb = branch("Tanh", "e_out");
  pb_t a[] = {attr_graph("then_branch", &tb), attr_graph("else_branch", &eb)};
  g_node(&g, node("If", "if", "C", "Y", 2, a));
  g_output(&g, value_info("Y", FLOAT, -1, NULL));
  return model(&g, 13, "");
}

static void test_if(void **state) {
  (void)state;
  for (int k = 0; k < 2; k++) {
    pb_t m = if_model(k);
    nnmem_graph_t *g = NULL;
    nnmem_onnx_report_t rep;
    nnmem_diag_t d = {{0}};
    nnmem_status_t st = import(&m, NULL, &g, &rep, &d);
    if (st != NNMEM_OK) fail_msg("%s", d.message);
    SHAPE(g, "Y", 4, 8);
    nnmem_op_info_t op;
    find_op(g, "If", &op);
    assert_int_equal(op.n_inputs, 2); /* C + the captured X */
    uint32_t xid;
    assert_ok(nnmem_graph_find_tensor(g, "X", &xid));
    assert_int_equal(op.inputs[1], xid);
    assert_int_equal(op.workspace_bytes, 4 * 8 * 4); /* one body tensor */
    assert_int_equal(rep.subgraph_nodes, 2);
    plan_ok(g);
    nnmem_graph_destroy(g);
    free(m.b);
  }
}

static void test_loop(void **state) {
  (void)state;
  gb_t body = {{0}};
  g_input(&body, value_info("iter", INT64, 0, NULL));
  g_input(&body, value_info("cond_in", BOOL, 0, NULL));
  g_input(&body, value_info("v_in", FLOAT, -1, NULL));
  g_node(&body, node("Add", "add", "v_in,W", "v_out", 0, NULL));
  g_node(&body, node("Identity", "idc", "cond_in", "cond_out", 0, NULL));
  g_node(&body, node("Sigmoid", "sig", "v_out", "scan_o", 0, NULL));
  g_output(&body, value_info("cond_out", BOOL, 0, NULL));
  g_output(&body, value_info("v_out", FLOAT, -1, NULL));
  g_output(&body, value_info("scan_o", FLOAT, -1, NULL));
  f_str(&body.g, 2, "body");
  gb_t g = {{0}};
  const int64_t vd[] = {2, 2}, three = 3, t = 1;
  g_init(&g, tensor("M", INT64, 0, NULL, &three));
  g_init(&g, tensor("cond", BOOL, 0, NULL, &t));
  g_input(&g, value_info("v0", FLOAT, 2, vd));
  g_input(&g, value_info("W", FLOAT, 2, vd));
  pb_t a[] = {attr_graph("body", &body.g)};
  g_node(&g, node("Loop", "loop", "M,cond,v0", "v_final,scans", 1, a));
  g_output(&g, value_info("v_final", FLOAT, -1, NULL));
  g_output(&g, value_info("scans", FLOAT, -1, NULL));
  pb_t m = model(&g, 13, "");
  nnmem_graph_t *gr = NULL;
  nnmem_onnx_report_t rep;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = import(&m, NULL, &gr, &rep, &d);
  if (st != NNMEM_OK) fail_msg("%s", d.message);
  SHAPE(gr, "v_final", 2, 2);
  SHAPE(gr, "scans", 3, 2, 2);
  nnmem_op_info_t op;
  find_op(gr, "Loop", &op);
  assert_int_equal(op.n_inputs, 4); /* M, cond, v0 + captured W */
  assert_true(op.workspace_bytes >= 16 && op.workspace_bytes <= 64);
  assert_int_equal(rep.unresolved_tensors, 0);
  plan_ok(gr);
  nnmem_graph_destroy(gr);
  free(m.b);
}

static void test_scan(void **state) {
  (void)state;
  gb_t body = {{0}};
  g_input(&body, value_info("s_in", FLOAT, -1, NULL));
  g_input(&body, value_info("x_t", FLOAT, -1, NULL));
  g_node(&body, node("Add", "acc", "s_in,x_t", "s_out", 0, NULL));
  g_node(&body, node("Relu", "r", "s_out", "y_t", 0, NULL));
  g_output(&body, value_info("s_out", FLOAT, -1, NULL));
  g_output(&body, value_info("y_t", FLOAT, -1, NULL));
  f_str(&body.g, 2, "scan_body");
  gb_t g = {{0}};
  const int64_t sd[] = {2}, xd[] = {5, 2};
  g_input(&g, value_info("s0", FLOAT, 1, sd));
  g_input(&g, value_info("xs", FLOAT, 2, xd));
  pb_t a[] = {attr_graph("body", &body.g), attr_int("num_scan_inputs", 1)};
  g_node(&g, node("Scan", "scan", "s0,xs", "s_final,ys", 2, a));
  g_output(&g, value_info("s_final", FLOAT, -1, NULL));
  g_output(&g, value_info("ys", FLOAT, -1, NULL));
  pb_t m = model(&g, 11, "");
  nnmem_graph_t *gr = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = import(&m, NULL, &gr, NULL, &d);
  if (st != NNMEM_OK) fail_msg("%s", d.message);
  SHAPE(gr, "s_final", 2);
  SHAPE(gr, "ys", 5, 2);
  nnmem_op_info_t op;
  find_op(gr, "Scan", &op);
  assert_true(op.workspace_bytes >= 8 && op.workspace_bytes <= 32);
  plan_ok(gr);
  nnmem_graph_destroy(gr);
  free(m.b);
}

/* Data-dependent outputs take their documented upper bound and are
 * reported; a constant input makes them exact. */
static void test_data_dependent(void **state) {
  (void)state;
  gb_t g = {{0}};
  const int64_t xd[] = {3, 4}, cd[] = {4}, cv[] = {0, 7, 0, 2};
  g_input(&g, value_info("X", FLOAT, 2, xd));
  g_init(&g, tensor("C", INT64, 1, cd, cv));
  g_node(&g, node("NonZero", "nz", "X", "idx", 0, NULL));
  g_node(&g, node("NonZero", "nzc", "C", "idxc", 0, NULL));
  g_output(&g, value_info("idx", INT64, -1, NULL));
  g_output(&g, value_info("idxc", INT64, -1, NULL));
  pb_t m = model(&g, 13, "");
  nnmem_graph_t *gr = NULL;
  nnmem_onnx_report_t rep;
  nnmem_diag_t d = {{0}};
  assert_ok(import(&m, NULL, &gr, &rep, &d));
  SHAPE(gr, "idx", 2, 12); /* [rank, numel]: the upper bound */
  SHAPE(gr, "idxc", 1, 2); /* exact: two nonzero constants */
  assert_int_equal(rep.n_data_dependent, 1);
  assert_string_equal(rep.data_dependent[0].name, "idx");
  assert_string_equal(rep.data_dependent[0].what, "NonZero");
  nnmem_graph_destroy(gr);
  free(m.b);
}

/* ---- unsupported operators ---------------------------------------------*/

static void test_unsupported(void **state) {
  (void)state;
  const int64_t xd[] = {3, 5};
  for (int declared = 0; declared < 2; declared++) {
    gb_t g = {{0}};
    g_input(&g, value_info("X", FLOAT, 2, xd));
    g_node(&g, node("FancyOp", "fancy", "X", "F", 0, NULL));
    g_node(&g, node("Relu", "relu", "F", "Y", 0, NULL));
    if (declared) g_value_info(&g, value_info("F", FLOAT, 2, xd));
    g_output(&g, value_info("Y", FLOAT, -1, NULL));
    pb_t m = model(&g, 13, "");
    nnmem_graph_t *gr = NULL;
    nnmem_onnx_report_t rep;
    nnmem_diag_t d = {{0}};
    assert_ok(import(&m, NULL, &gr, &rep, &d));
    assert_int_equal(rep.n_unsupported, 1);
    assert_string_equal(rep.unsupported[0].name, "fancy");
    assert_string_equal(rep.unsupported[0].what, "FancyOp");
    assert_int_equal(rep.unresolved_tensors, declared ? 0 : 2);
    if (declared) SHAPE(gr, "Y", 3, 5);
    if (!declared) assert_string_equal(rep.unresolved[0].name, "F");
    plan_ok(gr);
    nnmem_graph_destroy(gr);
    nnmem_onnx_config_t cfg;
    nnmem_onnx_config_init(&cfg);
    cfg.strict = 1;
    nnmem_status_t st = import(&m, &cfg, &gr, &rep, &d);
    if (declared) {
      assert_ok(st);
      nnmem_graph_destroy(gr);
    } else {
      assert_int_equal(st, NNMEM_ERR_UNSUPPORTED);
      assert_null(gr);
      assert_non_null(strstr(d.message, "'F'"));
      assert_non_null(strstr(d.message, "fancy"));
    }
    free(m.b);
  }
}

/* ---- bad input
 * -------------------------------------------------------------*/

static void test_truncated_and_corrupted(void **state) {
  (void)state;
  pb_t m = cnn_model();
  size_t failed = 0;
  for (size_t len = 0; len < m.n; len++) {
    nnmem_graph_t *g = NULL;
    nnmem_diag_t d = {{0}};
    nnmem_status_t st =
        nnmem_onnx_import(m.b, len, "cut.onnx", NULL, &g, NULL, &d);
    if (st == NNMEM_OK) {
      nnmem_graph_destroy(g);
      continue;
    }
    failed++;
    assert_null(g);
    assert_true(d.message[0] != 0);
  }
  assert_true(failed > m.n / 2);
  free(m.b);
}

static void test_corrupted_bytes(void **state) {
  (void)state;
  pb_t m = cnn_model();
  uint64_t seed = 20261129;
  uint8_t *copy = malloc(m.n);
  assert_non_null(copy);
  for (int round = 0; round < 3000; round++) {
    memcpy(copy, m.b, m.n);
    int flips = 1 + (int)(tu_rand(&seed) % 4);
    for (int k = 0; k < flips; k++)
      copy[tu_rand(&seed) % m.n] = (uint8_t)tu_rand(&seed);
    nnmem_graph_t *g = NULL;
    nnmem_diag_t d = {{0}};
    nnmem_status_t st =
        nnmem_onnx_import(copy, m.n, "bad.onnx", NULL, &g, NULL, &d);
    if (st == NNMEM_OK) {
      nnmem_graph_destroy(g);
    } else if (!d.message[0]) {
      fail_msg("round %d (seed 20261129): status %s without a message", round,
               nnmem_status_name(st));
    }
  }
  free(copy);
  free(m.b);
}

static void test_not_onnx(void **state) {
  (void)state;
  const char *texts[] = {"hello, this is not a model\n",
                         "{\"tensors\": [], \"ops\": []}", ""};
  for (int i = 0; i < 3; i++) {
    nnmem_graph_t *g = NULL;
    nnmem_diag_t d = {{0}};
    nnmem_status_t st = nnmem_onnx_import(texts[i], strlen(texts[i]), "x.onnx",
                                          NULL, &g, NULL, &d);
    assert_int_equal(st, NNMEM_ERR_PARSE);
    assert_null(g);
    assert_non_null(strstr(d.message, "x.onnx"));
  }
}

/* Names with control bytes reach messages escaped: one line, and the name
 * still readable (defect 9). */
static void test_control_bytes_in_names(void **state) {
  (void)state;
  const int64_t xd[] = {2, 3};
  gb_t g = {{0}};
  g_input(&g, value_info("X", FLOAT, 2, xd));
  g_node(&g,
         node("Add", "evil\n\x1b[31m", "X,no\nwhere\x1b[31m", "Y", 0, NULL));
  pb_t m = model(&g, 13, "");
  nnmem_graph_t *gr = NULL;
  nnmem_diag_t d = {{0}};
  assert_int_not_equal(import(&m, NULL, &gr, NULL, &d), NNMEM_OK);
  assert_null(gr);
  for (const char *c = d.message; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f)
      fail_msg("raw control byte 0x%02x in '%s'", (unsigned char)*c, d.message);
  assert_non_null(strstr(d.message, "no\\nwhere\\x1b[31m"));
  free(m.b);
}

static void test_bad_graphs(void **state) {
  (void)state;
  const int64_t xd[] = {2, 3}, zd[] = {0, 3}, nd[] = {-2},
                big[] = {1LL << 31, 1LL << 31, 1LL << 31};
  gb_t g = {{0}};
  pb_t n1;
  /* unknown domain */
  g_input(&g, value_info("X", FLOAT, 2, xd));
  n1 = node("Relu", "custom_relu", "X", "Y", 0, NULL);
  f_str(&n1, 7, "com.example");
  g_node(&g, n1);
  pb_t m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_UNSUPPORTED, "com.example");
  /* the default domain is not imported */
  memset(&g, 0, sizeof g);
  g_input(&g, value_info("X", FLOAT, 2, xd));
  g_node(&g, node("Relu", "relu", "X", "Y", 0, NULL));
  m = model(&g, 3, "ai.onnx.ml");
  expect_fail(&m, NNMEM_ERR_UNSUPPORTED, "'relu'");
  /* cycle */
  memset(&g, 0, sizeof g);
  g_input(&g, value_info("X", FLOAT, 2, xd));
  g_node(&g, node("Add", "n1", "X,b", "a", 0, NULL));
  g_node(&g, node("Relu", "n2", "a", "b", 0, NULL));
  m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_CYCLE, "cycle");
  /* input nobody produces */
  memset(&g, 0, sizeof g);
  g_input(&g, value_info("X", FLOAT, 2, xd));
  g_node(&g, node("Add", "adder", "X,nowhere", "Y", 0, NULL));
  m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_PARSE, "'nowhere'");
  /* a graph output nobody produces */
  memset(&g, 0, sizeof g);
  g_input(&g, value_info("X", FLOAT, 2, xd));
  g_output(&g, value_info("ghost", FLOAT, 2, xd));
  m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_PARSE, "'ghost'");
  /* duplicate tensor names */
  memset(&g, 0, sizeof g);
  g_input(&g, value_info("X", FLOAT, 2, xd));
  g_node(&g, node("Relu", "first", "X", "Y", 0, NULL));
  g_node(&g, node("Tanh", "second", "X", "Y", 0, NULL));
  m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_DUPLICATE, "'second'");
  /* zero dim in a graph input */
  memset(&g, 0, sizeof g);
  g_input(&g, value_info("Z", FLOAT, 2, zd));
  m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_INVALID, "'Z'");
  /* negative dim in an initializer */
  memset(&g, 0, sizeof g);
  g_init(&g, tensor("neg", FLOAT, 1, nd, NULL));
  m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_INVALID, "'neg'");
  /* byte size overflows 64 bits */
  memset(&g, 0, sizeof g);
  g_input(&g, value_info("huge", FLOAT, 3, big));
  m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_OVERFLOW, "huge");
  /* attribute of the wrong type */
  memset(&g, 0, sizeof g);
  const int64_t x4[] = {1, 1, 8, 8}, w4[] = {1, 1, 3, 3};
  g_input(&g, value_info("X", FLOAT, 4, x4));
  g_init(&g, tensor("W", FLOAT, 4, w4, NULL));
  pb_t a[] = {attr_str("strides", "2,2")};
  g_node(&g, node("Conv", "conv_bad", "X,W", "Y", 1, a));
  m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_PARSE, "strides");
}

/* If inside If ... deeper than the limit. */
static void test_deep_nesting(void **state) {
  (void)state;
  pb_t inner = branch("Relu", "leaf");
  for (int level = 0; level < 24; level++) {
    gb_t b = {{0}};
    pb_t other = branch("Relu", "o");
    pb_t a[] = {attr_graph("then_branch", &inner),
                attr_graph("else_branch", &other)};
    char out[32];
    snprintf(out, sizeof out, "lvl%d", level);
    g_node(&b, node("If", out, "C", out, 2, a));
    g_output(&b, value_info(out, FLOAT, -1, NULL));
    f_str(&b.g, 2, out);
    inner = b.g;
  }
  gb_t g = {{0}};
  const int64_t xd[] = {2};
  g_input(&g, value_info("C", BOOL, 0, NULL));
  g_input(&g, value_info("X", FLOAT, 1, xd));
  pb_t tb = inner, eb = branch("Relu", "e");
  pb_t a[] = {attr_graph("then_branch", &tb), attr_graph("else_branch", &eb)};
  g_node(&g, node("If", "top", "C", "Y", 2, a));
  pb_t m = model(&g, 13, "");
  expect_fail(&m, NNMEM_ERR_UNSUPPORTED, "nested");
}

/* Writes a varint ending just before `*at` (building back to front). */
static void put_back(uint8_t *buf, size_t *at, uint64_t v) {
  uint8_t c[10];
  size_t n = 0;
  do {
    c[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) c[n] |= 0x80;
    n++;
  } while (v);
  *at -= n;
  memcpy(buf + *at, c, n);
}

/* A graph input whose type is Sequence(Sequence(...)) 100,000 levels deep:
 * rejected before protobuf-c's recursive unpacking could exhaust the
 * stack. */
static void test_deep_type_nesting(void **state) {
  (void)state;
  const size_t levels = 100000, cap = 16 * levels + 256;
  uint8_t *buf = malloc(cap);
  assert_non_null(buf);
  size_t at = cap;
  const uint8_t inner[] = {0x0a, 0x02, 0x08, 0x01}; /* tensor_type: float */
  at -= sizeof inner;
  memcpy(buf + at, inner, sizeof inner);
  for (size_t i = 0; i < levels; i++) {
    put_back(buf, &at, cap - at); /* Sequence.elem_type = TypeProto */
    put_back(buf, &at, 1 << 3 | 2);
    put_back(buf, &at, cap - at); /* TypeProto.sequence_type */
    put_back(buf, &at, 4 << 3 | 2);
  }
  put_back(buf, &at, cap - at); /* ValueInfo.type */
  put_back(buf, &at, 2 << 3 | 2);
  const uint8_t name[] = {0x0a, 0x01, 'S'}; /* ValueInfo.name = "S" */
  at -= sizeof name;
  memcpy(buf + at, name, sizeof name);
  put_back(buf, &at, cap - at); /* Graph.input */
  put_back(buf, &at, 11 << 3 | 2);
  put_back(buf, &at, cap - at); /* Model.graph */
  put_back(buf, &at, 7 << 3 | 2);
  nnmem_graph_t *g = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st =
      nnmem_onnx_import(buf + at, cap - at, "deep.onnx", NULL, &g, NULL, &d);
  assert_int_equal(st, NNMEM_ERR_UNSUPPORTED);
  assert_null(g);
  assert_non_null(strstr(d.message, "nested"));
  free(buf);
}

static void test_supported_list(void **state) {
  (void)state;
  assert_true(nnmem_onnx_supported_count() >= 120);
  int conv = 0;
  for (size_t i = 0; i < nnmem_onnx_supported_count(); i++)
    conv |= strcmp(nnmem_onnx_supported_name(i), "Conv") == 0;
  assert_true(conv);
  assert_null(nnmem_onnx_supported_name(nnmem_onnx_supported_count()));
  nnmem_onnx_layout_t l;
  assert_ok(nnmem_onnx_layout_parse("nc1hwc0", &l));
  assert_int_equal(l, NNMEM_ONNX_LAYOUT_NC1HWC0);
  assert_int_equal(nnmem_onnx_layout_parse("CHWN", &l), NNMEM_ERR_INVALID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cnn_shapes),
      cmocka_unit_test(test_cnn_dtype_layout),
      cmocka_unit_test(test_reshape_broadcast),
      cmocka_unit_test(test_name_not_utf8),
      cmocka_unit_test(test_folding_chain),
      cmocka_unit_test(test_opset_variants),
      cmocka_unit_test(test_more_ops),
      cmocka_unit_test(test_if),
      cmocka_unit_test(test_loop),
      cmocka_unit_test(test_scan),
      cmocka_unit_test(test_data_dependent),
      cmocka_unit_test(test_unsupported),
      cmocka_unit_test(test_truncated_and_corrupted),
      cmocka_unit_test(test_corrupted_bytes),
      cmocka_unit_test(test_not_onnx),
      cmocka_unit_test(test_bad_graphs),
      cmocka_unit_test(test_control_bytes_in_names),
      cmocka_unit_test(test_unknown_dim_binding),
      cmocka_unit_test(test_deep_nesting),
      cmocka_unit_test(test_deep_type_nesting),
      cmocka_unit_test(test_supported_list),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

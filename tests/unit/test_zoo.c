/* test_zoo.c - the built-in models: counts, shapes, exact weight bytes and
 * activation lower bounds derived by hand (derivations in the comments). */
#include <string.h>

#include "testutil.h"

static nnmem_graph_t *build(const char *name, uint32_t batch) {
  nnmem_graph_t *g = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_zoo_build(name, batch, &g, &diag);
  if (st != NNMEM_OK) fail_msg("zoo %s: %s", name, diag.message);
  return g;
}

static nnmem_tensor_info_t tensor(const nnmem_graph_t *g, const char *name) {
  uint32_t id;
  if (nnmem_graph_find_tensor(g, name, &id) != NNMEM_OK)
    fail_msg("no tensor '%s'", name);
  nnmem_tensor_info_t ti;
  assert_ok(nnmem_graph_tensor(g, id, &ti));
  return ti;
}

static void expect_shape(const nnmem_tensor_info_t *ti, uint32_t rank,
                         const int64_t *dims) {
  assert_int_equal(ti->rank, rank);
  for (uint32_t i = 0; i < rank; i++)
    assert_int_equal(ti->shape[i], dims[i]);
}

typedef struct counts {
  size_t weights, constants, inputs, outputs;
  uint64_t weight_elems;    /* float32 weights */
  uint64_t trainable_elems; /* without BN running mean / var */
} counts_t;

static counts_t count(const nnmem_graph_t *g) {
  counts_t c = {0};
  for (uint32_t t = 0; t < nnmem_graph_tensor_count(g); t++) {
    nnmem_tensor_info_t ti;
    assert_ok(nnmem_graph_tensor(g, t, &ti));
    if (ti.kind == NNMEM_TENSOR_WEIGHT) {
      c.weights++;
      assert_int_equal(ti.dtype, NNMEM_DTYPE_FLOAT32);
      c.weight_elems += ti.bytes / 4;
      if (!strstr(ti.name, ".running_")) c.trainable_elems += ti.bytes / 4;
    }
    c.constants += ti.kind == NNMEM_TENSOR_CONSTANT;
    c.inputs += ti.kind == NNMEM_TENSOR_INPUT;
    c.outputs += ti.kind == NNMEM_TENSOR_OUTPUT;
  }
  return c;
}

typedef struct planned {
  uint64_t weights, lb, naive, height, peak_step;
} planned_t;

/* Liveness + a verified plan + the profile. */
static planned_t plan_model(const nnmem_graph_t *g) {
  nnmem_liveness_t *l = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_liveness_analyze(g, NULL, &l, &diag);
  if (st != NNMEM_OK) fail_msg("liveness: %s", diag.message);
  const uint32_t *order = nnmem_liveness_order(l);
  for (uint32_t i = 0; i < nnmem_liveness_steps(l); i++)
    assert_int_equal(order[i], i); /* built in a valid order */
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.strategy = NNMEM_STRATEGY_GREEDY_SIZE;
  nnmem_plan_t *plan = tu_plan_verified(nnmem_liveness_problem(l), &cfg);
  nnmem_profile_t pr;
  assert_ok(nnmem_profile_compute(g, l, plan, 0, &pr));
  planned_t r = {pr.weight_memory, pr.arena_lower_bound, pr.naive_arena,
                 pr.arena_height, pr.peak_step};
  assert_true(pr.arena_height >= pr.arena_lower_bound);
  assert_true(pr.arena_height <= pr.naive_arena);
  assert_int_equal(pr.lower_bound, pr.weight_memory + pr.arena_lower_bound);
  assert_int_equal(pr.peak_memory, pr.weight_memory + pr.arena_height);
  assert_int_equal(pr.workspace_memory, 0);
  assert_int_equal(pr.tensors, nnmem_graph_tensor_count(g));
  nnmem_plan_destroy(plan);
  nnmem_liveness_destroy(l);
  return r;
}

static void test_names(void **state) {
  (void)state;
  size_t n = 0;
  const char *const *names = nnmem_zoo_names(&n);
  assert_int_equal(n, 3);
  assert_string_equal(names[0], "resnet50");
  assert_string_equal(names[1], "mobilenetv2");
  assert_string_equal(names[2], "bert-base");
  nnmem_graph_t *g = (nnmem_graph_t *)1;
  nnmem_diag_t diag = {{0}};
  assert_int_equal(nnmem_zoo_build("vgg", 1, &g, &diag), NNMEM_ERR_NOT_FOUND);
  assert_null(g);
  assert_non_null(strstr(diag.message, "'vgg'"));
  for (size_t i = 0; i < n; i++) {
    g = build(names[i], 0);
    assert_string_equal(nnmem_graph_name(g), names[i]);
    assert_ok(nnmem_graph_check(g, NULL));
    nnmem_graph_destroy(g);
  }
}

/* Hand computation of ResNet-50's float32 weights.
 * Convs: conv1 64*3*7*7 = 9,408. A stage of width w, input cin, n blocks:
 *   block 0: w*cin + 9*w*w + 4w*w + 4w*cin (downsample)
 *   others:  w*4w  + 9*w*w + 4w*w
 *   layer1 212,992  layer2 1,212,416  layer3 7,077,888  layer4 14,942,208
 *   => 23,454,912.
 * BN channels: 64 + per block (w + w + 4w) + per downsample 4w = 26,560;
 * trainable 2 per channel (53,120), stored 4 per channel (106,240).
 * fc: 2048*1000 + 1000 = 2,049,000.
 * Trainable: 23,454,912 + 53,120 + 2,049,000 = 25,557,032 (torchvision).
 * Stored:    23,454,912 + 106,240 + 2,049,000 = 25,610,152 floats
 *            = 102,440,608 bytes. */
static void test_resnet50_weights(void **state) {
  (void)state;
  uint64_t conv = 64 * 3 * 7 * 7, bn = 64, cin = 64;
  const uint64_t blocks[4] = {3, 4, 6, 3};
  for (int s = 0; s < 4; s++) {
    uint64_t w = 64u << s;
    conv += w * cin + 9 * w * w + 4 * w * w + 4 * w * cin;
    conv += (blocks[s] - 1) * (w * 4 * w + 9 * w * w + 4 * w * w);
    bn += blocks[s] * 6 * w + 4 * w;
    cin = 4 * w;
  }
  assert_int_equal(conv, 23454912);
  assert_int_equal(bn, 26560);
  uint64_t fc = 2048 * 1000 + 1000;
  assert_int_equal(conv + 2 * bn + fc, 25557032);

  nnmem_graph_t *g = build("resnet50", 1);
  counts_t c = count(g);
  assert_int_equal(c.trainable_elems, 25557032);
  assert_int_equal(c.weight_elems, conv + 4 * bn + fc);
  assert_int_equal(c.weight_elems, 25610152);
  /* 53 convs + 53 BNs x 4 + fc weight and bias */
  assert_int_equal(c.weights, 53 + 53 * 4 + 2);
  assert_int_equal(c.constants, 0);
  assert_int_equal(c.inputs, 1);
  assert_int_equal(c.outputs, 1);
  /* ops: stem 4, 16 blocks x 10, 4 downsamples x 2, head 3 = 175;
   * tensors: 267 weights + input + one output per op = 443 */
  assert_int_equal(nnmem_graph_op_count(g), 175);
  assert_int_equal(nnmem_graph_tensor_count(g), 443);
  nnmem_tensor_info_t ti = tensor(g, "input");
  const int64_t in_shape[4] = {1, 3, 224, 224};
  expect_shape(&ti, 4, in_shape);
  assert_int_equal(ti.kind, NNMEM_TENSOR_INPUT);
  ti = tensor(g, "logits");
  const int64_t out_shape[2] = {1, 1000};
  expect_shape(&ti, 2, out_shape);
  assert_int_equal(ti.kind, NNMEM_TENSOR_OUTPUT);
  ti = tensor(g, "layer4.2.relu3");
  const int64_t last_shape[4] = {1, 2048, 7, 7};
  expect_shape(&ti, 4, last_shape);
  ti = tensor(g, "layer2.0.conv2.weight");
  const int64_t w_shape[4] = {128, 128, 3, 3};
  expect_shape(&ti, 4, w_shape);
  ti = tensor(g, "maxpool");
  const int64_t mp_shape[4] = {1, 64, 56, 56};
  expect_shape(&ti, 4, mp_shape);
  nnmem_graph_destroy(g);
}

/* Naive arena of ResNet-50 at batch 1, every activation its own bytes:
 * input 3*224*224, stem conv1/bn1/relu 3 x 64*112*112, maxpool 64*56*56;
 * per block (input side Hin, output side H = Hin / stride):
 *   conv1, bn1, relu1: 3 x w*Hin^2; conv2, bn2, relu2: 3 x w*H^2;
 *   conv3, bn3, add, relu3: 4 x 4w*H^2; downsample conv + bn: 2 x 4w*H^2;
 * head: avgpool + flatten 2 x 2048, logits 1000. All x 4 bytes. */
static uint64_t resnet50_naive(uint64_t n) {
  uint64_t f = 3 * 224 * 224 + 3 * 64 * 112 * 112 + 64 * 56 * 56;
  const uint64_t blocks[4] = {3, 4, 6, 3};
  uint64_t h = 56;
  for (int s = 0; s < 4; s++) {
    uint64_t w = 64u << s;
    for (uint64_t i = 0; i < blocks[s]; i++) {
      uint64_t hin = h;
      if (s > 0 && i == 0) h /= 2;
      f += 3 * w * hin * hin + 3 * w * h * h + 16 * w * h * h;
      if (i == 0) f += 8 * w * h * h;
    }
  }
  f += 2 * 2048 + 1000;
  return 4 * n * f;
}

/* Activation lower bound of ResNet-50 (in-place BN / ReLU / Add, flatten a
 * view). Sizes at batch 1 (bytes): A = 64x56x56x4 = 802,816,
 * B = 256x56x56x4 = 3,211,264, stem S = 64x112x112x4 = 3,211,264.
 *   stem: conv1 input 602,112 + S = 3,813,376; maxpool S + A = 4,014,080.
 *   layer1.0 at downsample.0 (step 12): the block input A (still needed),
 *     the conv3/bn3 buffer B and the downsample output B = 7,225,344.
 *   layer1.1/.2 at conv3: block input B + relu2 A + conv3 output B =
 *     7,225,344; every other step of layer1 holds less.
 *   layer2..4 hold at most half of that per step (channels x2, area /4):
 *     e.g. layer2.0 downsample: B + 2 x 1,605,632 = 6,422,528.
 * => 7,225,344 bytes, first reached at step 12; batch N scales it by N. */
static void test_resnet50_plan(void **state) {
  (void)state;
  nnmem_graph_t *g = build("resnet50", 1);
  planned_t p = plan_model(g);
  assert_int_equal(p.weights, 102440608);
  assert_int_equal(p.lb, 7225344);
  assert_int_equal(p.peak_step, 12);
  assert_int_equal(p.naive, resnet50_naive(1));
  assert_int_equal(p.naive, 150849440);
  nnmem_graph_destroy(g);

  g = build("resnet50", 32);
  nnmem_tensor_info_t ti = tensor(g, "input");
  const int64_t in_shape[4] = {32, 3, 224, 224};
  expect_shape(&ti, 4, in_shape);
  ti = tensor(g, "logits");
  assert_int_equal(ti.bytes, 32 * 1000 * 4);
  planned_t q = plan_model(g);
  assert_int_equal(q.weights, 102440608);
  assert_int_equal(q.lb, 32 * 7225344ull);
  assert_int_equal(q.lb, 231211008);
  assert_int_equal(q.naive, resnet50_naive(32));
  assert_int_equal(q.peak_step, 12);
  nnmem_graph_destroy(g);
}

/* MobileNetV2: trainable 3,504,872 (torchvision); BN channels
 * 32 + 48 + 528 + 1152 + 2944 + 3360 + 5472 + 2240 + 1280 = 17,056, so the
 * stored weights are 3,504,872 + 2 x 17,056 = 3,538,984 floats =
 * 14,155,936 bytes.
 * Lower bound at batch 1: features.2 (16 -> 24, stride 2) at its depthwise
 * conv (step 11): the expanded 96x112x112 buffer (4,816,896 bytes; the
 * block input died at the expand conv) + the depthwise output 96x56x56
 * (1,204,224) = 6,021,120. Earlier steps: features.1's depthwise holds
 * 2 x 32x112x112x4 = 3,211,264; the expand conv 802,816 + 4,816,896 =
 * 5,619,712. Later blocks are smaller. */
static void test_mobilenetv2(void **state) {
  (void)state;
  nnmem_graph_t *g = build("mobilenetv2", 1);
  counts_t c = count(g);
  assert_int_equal(c.trainable_elems, 3504872);
  assert_int_equal(c.weight_elems, 3504872 + 2 * 17056);
  /* 52 convs, 52 BNs, classifier weight + bias */
  assert_int_equal(c.weights, 52 + 52 * 4 + 2);
  /* ops: 3 + 5 (t = 1 block) + 16 x 8 + 10 Adds + 3 + 3 = 152 */
  assert_int_equal(nnmem_graph_op_count(g), 152);
  assert_int_equal(nnmem_graph_tensor_count(g), 262 + 1 + 152);
  nnmem_tensor_info_t ti = tensor(g, "features.18.2");
  const int64_t last_shape[4] = {1, 1280, 7, 7};
  expect_shape(&ti, 4, last_shape);
  ti = tensor(g, "features.2.conv.1.0.weight"); /* depthwise */
  const int64_t dw_shape[4] = {96, 1, 3, 3};
  expect_shape(&ti, 4, dw_shape);
  ti = tensor(g, "logits");
  const int64_t out_shape[2] = {1, 1000};
  expect_shape(&ti, 2, out_shape);
  uint32_t id;
  assert_ok(nnmem_graph_find_tensor(g, "features.3.add", &id));
  assert_int_equal(nnmem_graph_find_tensor(g, "features.2.add", &id),
                   NNMEM_ERR_NOT_FOUND);
  planned_t p = plan_model(g);
  assert_int_equal(p.weights, 14155936);
  assert_int_equal(p.lb, 6021120);
  assert_int_equal(p.peak_step, 11);
  nnmem_graph_destroy(g);

  g = build("mobilenetv2", 8);
  planned_t q = plan_model(g);
  assert_int_equal(q.lb, 8 * 6021120ull);
  assert_int_equal(q.naive, 8 * p.naive);
  nnmem_graph_destroy(g);
}

/* BERT-base: embeddings 30522*768 + 512*768 + 2*768 + 2*768 = 23,837,184;
 * per layer 4 x (768*768 + 768) + 2 x 2*768 + (768*3072 + 3072) +
 * (3072*768 + 768) = 7,087,872, x 12 = 85,054,464; total 108,891,648
 * floats = 435,566,592 bytes, + constants 2 x 128 int64 + 3 float32
 * scalars = 2,060 -> 435,568,652.
 * Lower bound at batch 1 (step 22, layer 0's scores MatMul): the embedding
 * LayerNorm output h, the three head tensors q, k, v (4 x 393,216), the
 * scores (12x128x128x4 = 786,432) and the extended mask (512) =
 * 2,359,808; the softmax step holds the same (q, k dead; scores + probs).
 * The FFN holds at most h1 + 1,572,864 + ... < that. */
static void test_bert(void **state) {
  (void)state;
  nnmem_graph_t *g = build("bert-base", 1);
  counts_t c = count(g);
  assert_int_equal(c.weight_elems, 108891648);
  assert_int_equal(c.weights, 5 + 12 * 16);
  assert_int_equal(c.constants, 5);
  assert_int_equal(c.inputs, 2);
  assert_int_equal(c.outputs, 1);
  /* ops: embeddings 6 + mask 4 + 12 x 30 = 370 */
  assert_int_equal(nnmem_graph_op_count(g), 370);
  assert_int_equal(nnmem_graph_tensor_count(g), 197 + 5 + 2 + 370);
  nnmem_tensor_info_t ti = tensor(g, "input_ids");
  const int64_t ids_shape[2] = {1, 128};
  expect_shape(&ti, 2, ids_shape);
  assert_int_equal(ti.dtype, NNMEM_DTYPE_INT64);
  assert_int_equal(ti.kind, NNMEM_TENSOR_INPUT);
  ti = tensor(g, "attention_mask");
  assert_int_equal(ti.dtype, NNMEM_DTYPE_INT64);
  ti = tensor(g, "last_hidden_state");
  const int64_t out_shape[3] = {1, 128, 768};
  expect_shape(&ti, 3, out_shape);
  assert_int_equal(ti.kind, NNMEM_TENSOR_OUTPUT);
  ti = tensor(g, "encoder.layer.5.attention.self.scores");
  const int64_t sc_shape[4] = {1, 12, 128, 128};
  expect_shape(&ti, 4, sc_shape);
  ti = tensor(g, "encoder.layer.5.attention.self.key.transpose");
  const int64_t kt_shape[4] = {1, 12, 64, 128};
  expect_shape(&ti, 4, kt_shape);
  planned_t p = plan_model(g);
  assert_int_equal(p.weights, 435568652);
  assert_int_equal(p.lb, 2359808);
  assert_int_equal(p.peak_step, 22);
  nnmem_graph_destroy(g);

  g = build("bert-base", 4);
  ti = tensor(g, "last_hidden_state");
  const int64_t out4[3] = {4, 128, 768};
  expect_shape(&ti, 3, out4);
  planned_t q = plan_model(g);
  assert_int_equal(q.weights, 435568652);
  assert_int_equal(q.lb, 4 * 2359808ull);
  nnmem_graph_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_resnet50_weights),
      cmocka_unit_test(test_resnet50_plan),
      cmocka_unit_test(test_mobilenetv2),
      cmocka_unit_test(test_bert),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

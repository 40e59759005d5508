/* zoo_mobilenetv2.c - MobileNetV2 1.0 at 224 x 224 (Sandler et al. 2018,
 * "MobileNetV2: Inverted Residuals and Linear Bottlenecks"), torchvision
 * layout and parameter names.
 *
 * Structure (input "input" N x 3 x 224 x 224, output "logits" N x 1000):
 *   1. features.0: conv 3x3/2 3->32, bn, ReLU6 (Clip)      -> 32 x 112 x 112
 *   2. features.1..17: inverted residual blocks from the (t, c, n, s) table
 *      [1,16,1,1] [6,24,2,2] [6,32,3,2] [6,64,4,2] [6,96,3,1] [6,160,3,2]
 *      [6,320,1,1]; block = [expand 1x1 conv, bn, Clip when t != 1] ->
 *      depthwise 3x3/s conv, bn, Clip -> project 1x1 conv, bn -> Add with
 *      the block input when s == 1 and in == out (10 blocks)
 *   3. features.18: conv 1x1 320->1280, bn, Clip            -> 1280 x 7 x 7
 *   4. pool (GlobalAveragePool), flatten (view), classifier.1 1280->1000
 *      (dropout omitted: it is the identity at inference).
 * BatchNormalization, Clip and Add are in place on input 0. 152 ops, 415
 * tensors (262 weights).
 *
 * Trainable parameters: 3,504,872 (torchvision's count). The weight region
 * also holds BN running mean / var (17,056 BN channels x 2 floats):
 * 3,538,984 floats = 14,155,936 bytes.
 * Thread-safety: builds into the caller's graph only. */
#include <stdio.h>

#include "graph/zoo_builder.h"

/* conv + bn + Clip named "<pre>.0", "<pre>.1", "<pre>.2". */
static nnmem__zoo_act_t conv_bn_relu6(nnmem__zoo_t *b, const char *pre,
                                      nnmem__zoo_act_t x, int64_t out_c,
                                      int64_t k, int64_t stride,
                                      int64_t groups) {
  char n[96];
  snprintf(n, sizeof n, "%s.0", pre);
  x = nnmem__zoo_conv(b, n, x, out_c, k, stride, k / 2, groups);
  snprintf(n, sizeof n, "%s.1", pre);
  x = nnmem__zoo_bn(b, n, x);
  snprintf(n, sizeof n, "%s.2", pre);
  return nnmem__zoo_unary(b, n, "Clip", x);
}

static nnmem__zoo_act_t inverted_residual(nnmem__zoo_t *b, int idx,
                                          nnmem__zoo_act_t x, int64_t t,
                                          int64_t out_c, int64_t stride) {
  char pre[64], n[96];
  int layer = 0;
  nnmem__zoo_act_t y = x;
  int64_t hidden = x.c * t;
  if (t != 1) {
    snprintf(pre, sizeof pre, "features.%d.conv.%d", idx, layer++);
    y = conv_bn_relu6(b, pre, y, hidden, 1, 1, 1);
  }
  snprintf(pre, sizeof pre, "features.%d.conv.%d", idx, layer++);
  y = conv_bn_relu6(b, pre, y, hidden, 3, stride, hidden);
  snprintf(n, sizeof n, "features.%d.conv.%d", idx, layer++);
  y = nnmem__zoo_conv(b, n, y, out_c, 1, 1, 0, 1);
  snprintf(n, sizeof n, "features.%d.conv.%d", idx, layer);
  y = nnmem__zoo_bn(b, n, y);
  if (stride == 1 && x.c == out_c) {
    snprintf(n, sizeof n, "features.%d.add", idx);
    y = nnmem__zoo_add(b, n, y, x);
  }
  return y;
}

void nnmem__zoo_mobilenetv2(nnmem__zoo_t *b) {
  static const int64_t cfg[7][4] = {
      {1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
      {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int64_t in_shape[4] = {b->batch, 3, 224, 224};
  nnmem__zoo_act_t x = {0, 3, 224, 224};
  x.id = nnmem__zoo_tensor(b, "input", NNMEM_TENSOR_INPUT, NNMEM_DTYPE_FLOAT32,
                           4, in_shape);
  x = conv_bn_relu6(b, "features.0", x, 32, 3, 2, 1);
  int idx = 1;
  for (int r = 0; r < 7; r++) {
    for (int64_t i = 0; i < cfg[r][2]; i++) {
      int64_t stride = i == 0 ? cfg[r][3] : 1;
      x = inverted_residual(b, idx++, x, cfg[r][0], cfg[r][1], stride);
    }
  }
  char pre[32];
  snprintf(pre, sizeof pre, "features.%d", idx);
  x = conv_bn_relu6(b, pre, x, 1280, 1, 1, 1);
  nnmem__zoo_classifier(b, "pool", "flatten", "classifier.1", x, 1000);
}

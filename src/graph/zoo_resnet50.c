/* zoo_resnet50.c - ResNet-50 v1.5 (He et al. 2016, "Deep Residual Learning
 * for Image Recognition"; v1.5 = torchvision's layout with the stride on the
 * 3x3 conv of each bottleneck).
 *
 * Structure (input "input" N x 3 x 224 x 224, output "logits" N x 1000):
 *   1. conv1 7x7/2 3->64, bn1, relu, maxpool 3x3/2 pad 1   -> 64 x 56 x 56
 *   2. four stages layer1..layer4 of [3, 4, 6, 3] bottlenecks, widths
 *      64/128/256/512, expansion 4; a bottleneck is
 *        conv1 1x1 -> bn1 -> relu1 -> conv2 3x3/s -> bn2 -> relu2 ->
 *        conv3 1x1 -> bn3 -> [downsample.0 1x1/s conv -> downsample.1 bn on
 *        the block input, first block of a stage only] -> add -> relu3;
 *      stride 2 in the first block of layer2..layer4
 *                                                          -> 2048 x 7 x 7
 *   3. avgpool (GlobalAveragePool), flatten (view), fc 2048->1000 (Gemm).
 * BatchNormalization, Relu and Add are in place on input 0. Convs have no
 * bias. 175 ops, 443 tensors (267 weights).
 *
 * Trainable parameters: 25,557,032 (torchvision's count: conv weights,
 * BN scale and bias, fc). The weight region also holds the BN running mean
 * and var (26,560 BN channels x 2 more floats): 25,610,152 floats =
 * 102,440,608 bytes.
 * Thread-safety: builds into the caller's graph only. */
#include <stdio.h>

#include "graph/zoo_builder.h"

/* One bottleneck block; `stride` on conv2; downsample when `ds`. */
static nnmem__zoo_act_t bottleneck(nnmem__zoo_t *b, const char *pre,
                                   nnmem__zoo_act_t x, int64_t width,
                                   int64_t stride, int ds) {
  char n[96];
#define NAME(s) (snprintf(n, sizeof n, "%s.%s", pre, s), n)
  nnmem__zoo_act_t y = nnmem__zoo_conv(b, NAME("conv1"), x, width, 1, 1, 0, 1);
  y = nnmem__zoo_bn(b, NAME("bn1"), y);
  y = nnmem__zoo_unary(b, NAME("relu1"), "Relu", y);
  y = nnmem__zoo_conv(b, NAME("conv2"), y, width, 3, stride, 1, 1);
  y = nnmem__zoo_bn(b, NAME("bn2"), y);
  y = nnmem__zoo_unary(b, NAME("relu2"), "Relu", y);
  y = nnmem__zoo_conv(b, NAME("conv3"), y, width * 4, 1, 1, 0, 1);
  y = nnmem__zoo_bn(b, NAME("bn3"), y);
  nnmem__zoo_act_t id = x;
  if (ds) {
    id =
        nnmem__zoo_conv(b, NAME("downsample.0"), x, width * 4, 1, stride, 0, 1);
    id = nnmem__zoo_bn(b, NAME("downsample.1"), id);
  }
  y = nnmem__zoo_add(b, NAME("add"), y, id);
  y = nnmem__zoo_unary(b, NAME("relu3"), "Relu", y);
#undef NAME
  return y;
}

void nnmem__zoo_resnet50(nnmem__zoo_t *b) {
  int64_t in_shape[4] = {b->batch, 3, 224, 224};
  nnmem__zoo_act_t x = {0, 3, 224, 224};
  x.id = nnmem__zoo_tensor(b, "input", NNMEM_TENSOR_INPUT, NNMEM_DTYPE_FLOAT32,
                           4, in_shape);
  x = nnmem__zoo_conv(b, "conv1", x, 64, 7, 2, 3, 1);
  x = nnmem__zoo_bn(b, "bn1", x);
  x = nnmem__zoo_unary(b, "relu", "Relu", x);
  nnmem__zoo_act_t p = {0, 64, (x.h + 2 - 3) / 2 + 1, (x.w + 2 - 3) / 2 + 1};
  int64_t p_shape[4] = {b->batch, p.c, p.h, p.w};
  p.id = nnmem__zoo_tensor(b, "maxpool", NNMEM_TENSOR_ACTIVATION,
                           NNMEM_DTYPE_FLOAT32, 4, p_shape);
  nnmem__zoo_op(b, "maxpool", "MaxPool", &x.id, 1, p.id, 0, 0);
  x = p;
  static const int blocks[4] = {3, 4, 6, 3};
  for (int s = 0; s < 4; s++) {
    int64_t width = 64 << s;
    for (int i = 0; i < blocks[s]; i++) {
      char pre[32];
      snprintf(pre, sizeof pre, "layer%d.%d", s + 1, i);
      int64_t stride = (s > 0 && i == 0) ? 2 : 1;
      x = bottleneck(b, pre, x, width, stride, i == 0);
    }
  }
  nnmem__zoo_classifier(b, "avgpool", "flatten", "fc", x, 1000);
}

/* zoo_builder.h - internal helpers the built-in models use to add tensors
 * and ops through the public graph API (never installed).
 *
 * Errors are sticky: the first failing call records its status in the
 * builder (and the graph's diag) and every later call does nothing and
 * returns tensor id 0, so a model function can build without checking each
 * call and look at b->st once at the end. */
#ifndef NNMEM_ZOO_BUILDER_H
#define NNMEM_ZOO_BUILDER_H

#include "nnmem/graph.h"

typedef struct nnmem__zoo {
  nnmem_graph_t *g;
  nnmem_status_t st;
  nnmem_diag_t *diag;
  int64_t batch;
} nnmem__zoo_t;

/* An NCHW float32 activation: tensor id and its channel / spatial dims. */
typedef struct nnmem__zoo_act {
  uint32_t id;
  int64_t c, h, w;
} nnmem__zoo_act_t;

/* Adds a tensor (float32 unless dtype says otherwise). */
uint32_t nnmem__zoo_tensor(nnmem__zoo_t *b, const char *name,
                           nnmem_tensor_kind_t kind, nnmem_dtype_t dtype,
                           uint32_t rank, const int64_t *shape);

/* Adds a float32 WEIGHT tensor of `rank` dims. */
uint32_t nnmem__zoo_weight(nnmem__zoo_t *b, const char *name, uint32_t rank,
                           const int64_t *shape);

/* Adds an op with one output. `flags` NNMEM_OP_*; `flag_input` is the
 * in-place / view input index. */
void nnmem__zoo_op(nnmem__zoo_t *b, const char *name, const char *type,
                   const uint32_t *inputs, uint32_t n_inputs, uint32_t output,
                   uint32_t flags, uint32_t flag_input);

/* Convenience for CNNs (NCHW, float32, names in torchvision style). */
/* Conv `name` with weight "<name>.weight" [out_c, x.c / groups, k, k], no
 * bias; output tensor `name`. */
nnmem__zoo_act_t nnmem__zoo_conv(nnmem__zoo_t *b, const char *name,
                                 nnmem__zoo_act_t x, int64_t out_c, int64_t k,
                                 int64_t stride, int64_t pad, int64_t groups);
/* BatchNormalization (in place on x) with scale, bias, running mean and
 * running var, 4 x C weights "<name>.weight/.bias/.running_mean/
 * .running_var". */
nnmem__zoo_act_t nnmem__zoo_bn(nnmem__zoo_t *b, const char *name,
                               nnmem__zoo_act_t x);
/* A one-input element-wise op in place on x ("Relu", "Clip", ...). */
nnmem__zoo_act_t nnmem__zoo_unary(nnmem__zoo_t *b, const char *name,
                                  const char *type, nnmem__zoo_act_t x);
/* Residual Add of two equal-shape activations, in place on `a`. */
nnmem__zoo_act_t nnmem__zoo_add(nnmem__zoo_t *b, const char *name,
                                nnmem__zoo_act_t a, nnmem__zoo_act_t x);
/* GlobalAveragePool + Flatten (view) + Gemm classifier with weight
 * [classes, C] and bias [classes] into OUTPUT tensor "logits". */
void nnmem__zoo_classifier(nnmem__zoo_t *b, const char *pool,
                           const char *flatten, const char *fc,
                           nnmem__zoo_act_t x, int64_t classes);

/* The models (zoo_<model>.c); b->g is an empty graph. */
void nnmem__zoo_resnet50(nnmem__zoo_t *b);
void nnmem__zoo_mobilenetv2(nnmem__zoo_t *b);
void nnmem__zoo_bert_base(nnmem__zoo_t *b);

#endif /* NNMEM_ZOO_BUILDER_H */

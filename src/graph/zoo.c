/* zoo.c - the built-in model zoo: the name table, nnmem_zoo_build and the
 * builder helpers shared by the models (zoo_builder.h).
 *
 * Algorithm:
 *   1. Look the name up in the table (NNMEM_ERR_NOT_FOUND otherwise).
 *   2. Create an empty graph and run the model's builder function, which
 *      adds tensors and ops through the public graph API; the first error is
 *      kept in the builder (sticky) and later calls do nothing.
 *   3. On error destroy the graph; the diag names the failing tensor / op.
 *
 * Modelling conventions (all models): float32 activations and weights,
 * NCHW for CNNs; a tensor produced by an op is named like the op; weights
 * use torchvision / HuggingFace parameter names. BatchNormalization holds
 * 4 weights per channel (scale, bias, running mean, running var), as an
 * inference runtime does, so the weight region is larger than the
 * trainable parameter count (which counts only scale and bias).
 * Complexity: O(size of the model). Thread-safety: static tables only;
 * each call builds its own graph. */
#include <stdio.h>
#include <string.h>

#include "graph/zoo_builder.h"
#include "common/util.h"
#include "nnmem/zoo.h"

typedef struct zoo_entry {
  const char *name;
  void (*build)(nnmem__zoo_t *b);
} zoo_entry_t;

static const zoo_entry_t zoo_table[] = {
    {"resnet50", nnmem__zoo_resnet50},
    {"mobilenetv2", nnmem__zoo_mobilenetv2},
    {"bert-base", nnmem__zoo_bert_base},
};
#define ZOO_COUNT (sizeof zoo_table / sizeof zoo_table[0])

static const char *const zoo_names[] = {"resnet50", "mobilenetv2", "bert-base"};

const char *const *nnmem_zoo_names(size_t *count) {
  if (count) *count = ZOO_COUNT;
  return zoo_names;
}

nnmem_status_t nnmem_zoo_build(const char *name, uint32_t batch,
                               nnmem_graph_t **out, nnmem_diag_t *diag) {
  if (!name || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "zoo: NULL argument");
  *out = NULL;
  const zoo_entry_t *e = NULL;
  for (size_t i = 0; i < ZOO_COUNT; i++)
    if (strcmp(name, zoo_table[i].name) == 0) e = &zoo_table[i];
  if (!e) {
    char known[128] = "";
    for (size_t i = 0, o = 0; i < ZOO_COUNT && o < sizeof known; i++)
      o += (size_t)snprintf(known + o, sizeof known - o, "%s%s", i ? ", " : "",
                            zoo_table[i].name);
    return nnmem__diag(diag, NNMEM_ERR_NOT_FOUND,
                       "unknown built-in model '%s' (known: %s)", name, known);
  }
  nnmem__zoo_t b = {NULL, NNMEM_OK, diag, batch ? batch : 1};
  b.st = nnmem_graph_create(name, &b.g);
  if (b.st != NNMEM_OK)
    return nnmem__diag(diag, b.st, "building the built-in model '%s': %s", name,
                       nnmem_status_str(b.st));
  e->build(&b);
  if (b.st != NNMEM_OK) {
    nnmem_graph_destroy(b.g);
    return b.st;
  }
  *out = b.g;
  return NNMEM_OK;
}

/* ---- builder helpers ----------------------------------------------------*/

uint32_t nnmem__zoo_tensor(nnmem__zoo_t *b, const char *name,
                           nnmem_tensor_kind_t kind, nnmem_dtype_t dtype,
                           uint32_t rank, const int64_t *shape) {
  if (b->st != NNMEM_OK) return 0;
  nnmem_tensor_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.kind = kind;
  d.dtype = dtype;
  d.rank = rank;
  d.shape = shape;
  uint32_t id = 0;
  b->st = nnmem_graph_add_tensor(b->g, &d, &id, b->diag);
  return id;
}

uint32_t nnmem__zoo_weight(nnmem__zoo_t *b, const char *name, uint32_t rank,
                           const int64_t *shape) {
  return nnmem__zoo_tensor(b, name, NNMEM_TENSOR_WEIGHT, NNMEM_DTYPE_FLOAT32,
                           rank, shape);
}

void nnmem__zoo_op(nnmem__zoo_t *b, const char *name, const char *type,
                   const uint32_t *inputs, uint32_t n_inputs, uint32_t output,
                   uint32_t flags, uint32_t flag_input) {
  if (b->st != NNMEM_OK) return;
  nnmem_op_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.type = type;
  d.inputs = inputs;
  d.n_inputs = n_inputs;
  d.outputs = &output;
  d.n_outputs = 1;
  d.flags = flags;
  if (flags & NNMEM_OP_INPLACE) d.inplace_input = flag_input;
  if (flags & NNMEM_OP_VIEW) d.view_input = flag_input;
  b->st = nnmem_graph_add_op(b->g, &d, NULL, b->diag);
}

/* Names longer than this are a bug in a model file, not user input. */
#define ZOO_NAME_MAX 128

static uint32_t act_tensor(nnmem__zoo_t *b, const char *name, int64_t c,
                           int64_t h, int64_t w) {
  int64_t shape[4] = {b->batch, c, h, w};
  return nnmem__zoo_tensor(b, name, NNMEM_TENSOR_ACTIVATION,
                           NNMEM_DTYPE_FLOAT32, 4, shape);
}

nnmem__zoo_act_t nnmem__zoo_conv(nnmem__zoo_t *b, const char *name,
                                 nnmem__zoo_act_t x, int64_t out_c, int64_t k,
                                 int64_t stride, int64_t pad, int64_t groups) {
  char wname[ZOO_NAME_MAX];
  snprintf(wname, sizeof wname, "%s.weight", name);
  int64_t wshape[4] = {out_c, x.c / groups, k, k};
  uint32_t in[2] = {x.id, nnmem__zoo_weight(b, wname, 4, wshape)};
  nnmem__zoo_act_t y = {0, out_c, (x.h + 2 * pad - k) / stride + 1,
                        (x.w + 2 * pad - k) / stride + 1};
  y.id = act_tensor(b, name, y.c, y.h, y.w);
  nnmem__zoo_op(b, name, "Conv", in, 2, y.id, 0, 0);
  return y;
}

nnmem__zoo_act_t nnmem__zoo_bn(nnmem__zoo_t *b, const char *name,
                               nnmem__zoo_act_t x) {
  static const char *const parts[4] = {"weight", "bias", "running_mean",
                                       "running_var"};
  uint32_t in[5] = {x.id, 0, 0, 0, 0};
  for (int i = 0; i < 4; i++) {
    char wname[ZOO_NAME_MAX];
    snprintf(wname, sizeof wname, "%s.%s", name, parts[i]);
    in[i + 1] = nnmem__zoo_weight(b, wname, 1, &x.c);
  }
  nnmem__zoo_act_t y = x;
  y.id = act_tensor(b, name, x.c, x.h, x.w);
  nnmem__zoo_op(b, name, "BatchNormalization", in, 5, y.id, NNMEM_OP_INPLACE,
                0);
  return y;
}

nnmem__zoo_act_t nnmem__zoo_unary(nnmem__zoo_t *b, const char *name,
                                  const char *type, nnmem__zoo_act_t x) {
  nnmem__zoo_act_t y = x;
  y.id = act_tensor(b, name, x.c, x.h, x.w);
  nnmem__zoo_op(b, name, type, &x.id, 1, y.id, NNMEM_OP_INPLACE, 0);
  return y;
}

nnmem__zoo_act_t nnmem__zoo_add(nnmem__zoo_t *b, const char *name,
                                nnmem__zoo_act_t a, nnmem__zoo_act_t x) {
  uint32_t in[2] = {a.id, x.id};
  nnmem__zoo_act_t y = a;
  y.id = act_tensor(b, name, a.c, a.h, a.w);
  nnmem__zoo_op(b, name, "Add", in, 2, y.id, NNMEM_OP_INPLACE, 0);
  return y;
}

void nnmem__zoo_classifier(nnmem__zoo_t *b, const char *pool,
                           const char *flatten, const char *fc,
                           nnmem__zoo_act_t x, int64_t classes) {
  uint32_t pooled = act_tensor(b, pool, x.c, 1, 1);
  nnmem__zoo_op(b, pool, "GlobalAveragePool", &x.id, 1, pooled, 0, 0);
  int64_t flat_shape[2] = {b->batch, x.c};
  uint32_t flat = nnmem__zoo_tensor(b, flatten, NNMEM_TENSOR_ACTIVATION,
                                    NNMEM_DTYPE_FLOAT32, 2, flat_shape);
  nnmem__zoo_op(b, flatten, "Flatten", &pooled, 1, flat, NNMEM_OP_VIEW, 0);
  char wname[ZOO_NAME_MAX], bname[ZOO_NAME_MAX];
  snprintf(wname, sizeof wname, "%s.weight", fc);
  snprintf(bname, sizeof bname, "%s.bias", fc);
  int64_t wshape[2] = {classes, x.c};
  uint32_t in[3] = {flat, nnmem__zoo_weight(b, wname, 2, wshape),
                    nnmem__zoo_weight(b, bname, 1, &classes)};
  int64_t out_shape[2] = {b->batch, classes};
  uint32_t logits = nnmem__zoo_tensor(b, "logits", NNMEM_TENSOR_OUTPUT,
                                      NNMEM_DTYPE_FLOAT32, 2, out_shape);
  nnmem__zoo_op(b, fc, "Gemm", in, 3, logits, 0, 0);
}

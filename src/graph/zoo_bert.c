/* zoo_bert.c - BERT-base encoder (Devlin et al. 2019, "BERT: Pre-training
 * of Deep Bidirectional Transformers"), HuggingFace BertModel layout without
 * the pooler, sequence length 128, as its ONNX export computes it.
 *
 * Sizes: hidden 768, 12 layers, 12 heads of 64, FFN 3072, vocab 30522, 512
 * positions, 2 token types. Inputs "input_ids", "attention_mask" (int64
 * N x 128); output "last_hidden_state" (float32 N x 128 x 768).
 *   1. embeddings: Gather word / token type / position rows, two Adds,
 *      LayerNorm. Token type ids (all 0) and position ids (0..127) are int64
 *      [1, 128] constants, their embeddings [1, 128, 768] broadcast.
 *   2. extended mask: Unsqueeze (view) -> Cast float -> Sub from 1 -> Mul by
 *      the float minimum: N x 1 x 1 x 128, added to every score.
 *   3. per layer: Q, K, V = MatMul + Add bias; Reshape (view) to
 *      N x 128 x 12 x 64 and Transpose (a copy) to heads (K to N x 12 x 64 x
 *      128); scores MatMul N x 12 x 128 x 128, Div by 8, Add mask, Softmax;
 *      context MatMul, Transpose back, Reshape (view) to N x 128 x 768;
 *      output MatMul + bias, residual Add, LayerNorm; FFN MatMul 768->3072 +
 *      bias, Gelu, MatMul 3072->768 + bias, residual Add, LayerNorm.
 * Bias Adds, residual Adds, Div, mask Add, Sub, Mul and Gelu are in place
 * (input 0; the mask Sub on input 1); Softmax, LayerNorm, MatMul, Gather and
 * Transpose write new tensors. 370 ops, 574 tensors (197 weights, 5
 * constants, 2 inputs). Linear weights are stored [in, out] as MatMul reads
 * them (HuggingFace keeps [out, in]; same element count).
 *
 * Trainable parameters: 108,891,648 (HuggingFace bert-base-uncased without
 * the pooler's 590,592). Weight region: those as float32 plus the constants
 * (2 x 128 int64 + 3 float32 scalars) = 435,566,592 + 2,060 = 435,568,652
 * bytes. Thread-safety: builds into the caller's graph only. */
#include <stdio.h>

#include "graph/zoo_builder.h"

#define SEQ 128
#define HIDDEN 768
#define HEADS 12
#define HEAD_DIM 64
#define FFN 3072
#define LAYERS 12

typedef struct bert {
  nnmem__zoo_t *b;
  uint32_t scale; /* constant 8 */
  uint32_t mask;  /* N x 1 x 1 x SEQ additive mask */
} bert_t;

static uint32_t act(nnmem__zoo_t *b, const char *name, uint32_t rank,
                    int64_t d1, int64_t d2, int64_t d3) {
  int64_t shape[4] = {b->batch, d1, d2, d3};
  return nnmem__zoo_tensor(b, name, NNMEM_TENSOR_ACTIVATION,
                           NNMEM_DTYPE_FLOAT32, rank, shape);
}

static uint32_t constant(nnmem__zoo_t *b, const char *name, nnmem_dtype_t dt,
                         uint32_t rank, const int64_t *shape) {
  return nnmem__zoo_tensor(b, name, NNMEM_TENSOR_CONSTANT, dt, rank, shape);
}

/* Element-wise binary op `name` in place on input `inplace`. */
static uint32_t binary(nnmem__zoo_t *b, const char *name, const char *type,
                       uint32_t x, uint32_t y, uint32_t out, uint32_t inplace) {
  uint32_t in[2] = {x, y};
  nnmem__zoo_op(b, name, type, in, 2, out, NNMEM_OP_INPLACE, inplace);
  return out;
}

/* MatMul by "<name>.weight" [in, out] + Add "<name>.bias" (in place):
 * x is N x SEQ x in_f, the result N x SEQ x out_f. */
static uint32_t linear(nnmem__zoo_t *b, const char *name, uint32_t x,
                       int64_t in_f, int64_t out_f) {
  char n[128];
  int64_t wshape[2] = {in_f, out_f};
  snprintf(n, sizeof n, "%s.weight", name);
  uint32_t in[2] = {x, nnmem__zoo_weight(b, n, 2, wshape)};
  uint32_t y = act(b, name, 3, SEQ, out_f, 0);
  nnmem__zoo_op(b, name, "MatMul", in, 2, y, 0, 0);
  snprintf(n, sizeof n, "%s.bias", name);
  uint32_t bias = nnmem__zoo_weight(b, n, 1, &out_f);
  snprintf(n, sizeof n, "%s.bias_add", name);
  return binary(b, n, "Add", y, bias, act(b, n, 3, SEQ, out_f, 0), 0);
}

/* LayerNormalization with "<name>.weight" / ".bias"; output `out_name`
 * (kind `kind`). */
static uint32_t layer_norm(nnmem__zoo_t *b, const char *name, uint32_t x,
                           const char *out_name, nnmem_tensor_kind_t kind) {
  char n[128];
  int64_t h = HIDDEN, shape[3] = {b->batch, SEQ, HIDDEN};
  snprintf(n, sizeof n, "%s.weight", name);
  uint32_t in[3] = {x, nnmem__zoo_weight(b, n, 1, &h), 0};
  snprintf(n, sizeof n, "%s.bias", name);
  in[2] = nnmem__zoo_weight(b, n, 1, &h);
  uint32_t y =
      nnmem__zoo_tensor(b, out_name, kind, NNMEM_DTYPE_FLOAT32, 3, shape);
  nnmem__zoo_op(b, name, "LayerNormalization", in, 3, y, 0, 0);
  return y;
}

/* Reshape (view) x to N x SEQ x HEADS x HEAD_DIM and Transpose it to
 * N x HEADS x SEQ x HEAD_DIM (or x HEAD_DIM x SEQ for keys). */
static uint32_t to_heads(nnmem__zoo_t *b, const char *name, uint32_t x,
                         int key) {
  char n[160]; /* names are short; room for any suffix below */
  snprintf(n, sizeof n, "%.120s.reshape", name);
  uint32_t r = act(b, n, 4, SEQ, HEADS, HEAD_DIM);
  nnmem__zoo_op(b, n, "Reshape", &x, 1, r, NNMEM_OP_VIEW, 0);
  snprintf(n, sizeof n, "%.120s.transpose", name);
  uint32_t t = key ? act(b, n, 4, HEADS, HEAD_DIM, SEQ)
                   : act(b, n, 4, HEADS, SEQ, HEAD_DIM);
  nnmem__zoo_op(b, n, "Transpose", &r, 1, t, 0, 0);
  return t;
}

static uint32_t self_attention(bert_t *m, const char *pre, uint32_t h) {
  nnmem__zoo_t *b = m->b;
  char n[128], base[96];
  snprintf(base, sizeof base, "%s.attention.self", pre);
  const char *parts[3] = {"query", "key", "value"};
  uint32_t heads[3];
  for (int i = 0; i < 3; i++) {
    snprintf(n, sizeof n, "%s.%s", base, parts[i]);
    heads[i] = to_heads(b, n, linear(b, n, h, HIDDEN, HIDDEN), i == 1);
  }
  uint32_t in[2] = {heads[0], heads[1]};
  snprintf(n, sizeof n, "%s.scores", base);
  uint32_t s = act(b, n, 4, HEADS, SEQ, SEQ);
  nnmem__zoo_op(b, n, "MatMul", in, 2, s, 0, 0);
  snprintf(n, sizeof n, "%s.scale", base);
  s = binary(b, n, "Div", s, m->scale, act(b, n, 4, HEADS, SEQ, SEQ), 0);
  snprintf(n, sizeof n, "%s.mask", base);
  s = binary(b, n, "Add", s, m->mask, act(b, n, 4, HEADS, SEQ, SEQ), 0);
  snprintf(n, sizeof n, "%s.softmax", base);
  uint32_t p = act(b, n, 4, HEADS, SEQ, SEQ);
  nnmem__zoo_op(b, n, "Softmax", &s, 1, p, 0, 0);
  in[0] = p;
  in[1] = heads[2];
  snprintf(n, sizeof n, "%s.context", base);
  uint32_t c = act(b, n, 4, HEADS, SEQ, HEAD_DIM);
  nnmem__zoo_op(b, n, "MatMul", in, 2, c, 0, 0);
  snprintf(n, sizeof n, "%s.context.transpose", base);
  uint32_t ct = act(b, n, 4, SEQ, HEADS, HEAD_DIM);
  nnmem__zoo_op(b, n, "Transpose", &c, 1, ct, 0, 0);
  snprintf(n, sizeof n, "%s.context.reshape", base);
  uint32_t cr = act(b, n, 3, SEQ, HIDDEN, 0);
  nnmem__zoo_op(b, n, "Reshape", &ct, 1, cr, NNMEM_OP_VIEW, 0);
  return cr;
}

static uint32_t encoder_layer(bert_t *m, int l, uint32_t h) {
  nnmem__zoo_t *b = m->b;
  char pre[32], n[128], ln[128];
  snprintf(pre, sizeof pre, "encoder.layer.%d", l);
  uint32_t ctx = self_attention(m, pre, h);
  snprintf(n, sizeof n, "%s.attention.output.dense", pre);
  uint32_t a = linear(b, n, ctx, HIDDEN, HIDDEN);
  snprintf(n, sizeof n, "%s.attention.output.residual", pre);
  a = binary(b, n, "Add", a, h, act(b, n, 3, SEQ, HIDDEN, 0), 0);
  snprintf(n, sizeof n, "%s.attention.output.LayerNorm", pre);
  uint32_t h1 = layer_norm(b, n, a, n, NNMEM_TENSOR_ACTIVATION);
  snprintf(n, sizeof n, "%s.intermediate.dense", pre);
  uint32_t f = linear(b, n, h1, HIDDEN, FFN);
  snprintf(n, sizeof n, "%s.intermediate.gelu", pre);
  uint32_t gl = act(b, n, 3, SEQ, FFN, 0);
  nnmem__zoo_op(b, n, "Gelu", &f, 1, gl, NNMEM_OP_INPLACE, 0);
  snprintf(n, sizeof n, "%s.output.dense", pre);
  f = linear(b, n, gl, FFN, HIDDEN);
  snprintf(n, sizeof n, "%s.output.residual", pre);
  f = binary(b, n, "Add", f, h1, act(b, n, 3, SEQ, HIDDEN, 0), 0);
  snprintf(ln, sizeof ln, "%s.output.LayerNorm", pre);
  int last = l == LAYERS - 1;
  return layer_norm(b, ln, f, last ? "last_hidden_state" : ln,
                    last ? NNMEM_TENSOR_OUTPUT : NNMEM_TENSOR_ACTIVATION);
}

/* Gathers rows of table "<name>.weight" [rows, HIDDEN] at `ids`; the result
 * has `lead` as its first dim. */
static uint32_t embed(nnmem__zoo_t *b, const char *name, int64_t rows,
                      uint32_t ids, int64_t lead) {
  char n[96];
  int64_t wshape[2] = {rows, HIDDEN}, shape[3] = {lead, SEQ, HIDDEN};
  snprintf(n, sizeof n, "%s.weight", name);
  uint32_t in[2] = {nnmem__zoo_weight(b, n, 2, wshape), ids};
  uint32_t y = nnmem__zoo_tensor(b, name, NNMEM_TENSOR_ACTIVATION,
                                 NNMEM_DTYPE_FLOAT32, 3, shape);
  nnmem__zoo_op(b, name, "Gather", in, 2, y, 0, 0);
  return y;
}

static uint32_t embeddings(nnmem__zoo_t *b, uint32_t input_ids) {
  int64_t ids_shape[2] = {1, SEQ};
  uint32_t tt =
      constant(b, "embeddings.token_type_ids", NNMEM_DTYPE_INT64, 2, ids_shape);
  uint32_t pos =
      constant(b, "embeddings.position_ids", NNMEM_DTYPE_INT64, 2, ids_shape);
  uint32_t x =
      embed(b, "embeddings.word_embeddings", 30522, input_ids, b->batch);
  uint32_t t = embed(b, "embeddings.token_type_embeddings", 2, tt, 1);
  x = binary(b, "embeddings.add_token_type", "Add", x, t,
             act(b, "embeddings.add_token_type", 3, SEQ, HIDDEN, 0), 0);
  uint32_t p = embed(b, "embeddings.position_embeddings", 512, pos, 1);
  x = binary(b, "embeddings.add_position", "Add", x, p,
             act(b, "embeddings.add_position", 3, SEQ, HIDDEN, 0), 0);
  return layer_norm(b, "embeddings.LayerNorm", x, "embeddings.LayerNorm",
                    NNMEM_TENSOR_ACTIVATION);
}

/* (1 - float(mask[:, None, None, :])) * float_min. */
static uint32_t extended_mask(nnmem__zoo_t *b, uint32_t mask) {
  int64_t shape[4] = {b->batch, 1, 1, SEQ};
  uint32_t u =
      nnmem__zoo_tensor(b, "extended_attention_mask.unsqueeze",
                        NNMEM_TENSOR_ACTIVATION, NNMEM_DTYPE_INT64, 4, shape);
  nnmem__zoo_op(b, "extended_attention_mask.unsqueeze", "Unsqueeze", &mask, 1,
                u, NNMEM_OP_VIEW, 0);
  uint32_t c = act(b, "extended_attention_mask.cast", 4, 1, 1, SEQ);
  nnmem__zoo_op(b, "extended_attention_mask.cast", "Cast", &u, 1, c, 0, 0);
  uint32_t one =
      constant(b, "extended_attention_mask.one", NNMEM_DTYPE_FLOAT32, 0, NULL);
  uint32_t fmin =
      constant(b, "extended_attention_mask.min", NNMEM_DTYPE_FLOAT32, 0, NULL);
  uint32_t s = binary(b, "extended_attention_mask.sub", "Sub", one, c,
                      act(b, "extended_attention_mask.sub", 4, 1, 1, SEQ), 1);
  return binary(b, "extended_attention_mask", "Mul", s, fmin,
                act(b, "extended_attention_mask", 4, 1, 1, SEQ), 0);
}

void nnmem__zoo_bert_base(nnmem__zoo_t *b) {
  int64_t in_shape[2] = {b->batch, SEQ};
  uint32_t ids = nnmem__zoo_tensor(b, "input_ids", NNMEM_TENSOR_INPUT,
                                   NNMEM_DTYPE_INT64, 2, in_shape);
  uint32_t mask = nnmem__zoo_tensor(b, "attention_mask", NNMEM_TENSOR_INPUT,
                                    NNMEM_DTYPE_INT64, 2, in_shape);
  bert_t m = {b, 0, 0};
  uint32_t h = embeddings(b, ids);
  m.mask = extended_mask(b, mask);
  m.scale = constant(b, "attention_scale", NNMEM_DTYPE_FLOAT32, 0, NULL);
  for (int l = 0; l < LAYERS; l++)
    h = encoder_layer(&m, l, h);
}

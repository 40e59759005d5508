/* nnmem/zoo.h - built-in models built through the public graph API, with
 * exact shapes: "resnet50" (the default), "mobilenetv2", "bert-base"
 * (encoder, sequence 128). Weights are WEIGHT tensors, the image / token
 * inputs INPUT tensors, the logits OUTPUT tensors. */
#ifndef NNMEM_ZOO_H
#define NNMEM_ZOO_H

#include "nnmem/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Names of the built-in models; *count receives how many. */
NNMEM_API const char *const *nnmem_zoo_names(size_t *count);

/* Builds model `name` with batch size `batch` (0 = 1). NNMEM_ERR_NOT_FOUND
 * for an unknown name. */
NNMEM_API nnmem_status_t nnmem_zoo_build(const char *name, uint32_t batch,
                                         nnmem_graph_t **out,
                                         nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_ZOO_H */

/* onnx_hooks.h - internal entry points of the ONNX importer used by the
 * conformance test (never installed; no protobuf types). */
#ifndef NNMEM_ONNX_HOOKS_H
#define NNMEM_ONNX_HOOKS_H

#include "nnmem/onnx.h"

#define OX_HOOK_RANK NNMEM_MAX_RANK

/* ---- for tests (conformance) ---- */
/* The inferred type and shape of each graph output of a model (at most
 * `max`): elem[i], rank[i] (-1 unknown), dims[i][*] (-1 unknown). Also
 * names the non-initializer graph inputs (pointers valid until
 * nnmem__onnx_io_free). */
typedef struct ox_io {
  size_t n_out;
  int32_t elem[64];
  int32_t rank[64];
  int64_t dims[64][OX_HOOK_RANK];
  size_t n_in;
  char *in_names[64];
  char *out_names[64];
  int non_tensor; /* some graph input / output is a sequence, map, ... */
} ox_io_t;
/* `in_pb[i]` / `in_pb_len[i]` (nullable arrays aligned with
 * cfg->input_shapes) are serialized TensorProtos whose values are bound to
 * that input when small (integers up to 1,024 elements, floats up to 16),
 * as ONNX's data propagation does for known inputs. Declared output shapes
 * are never used for supported operators. */
nnmem_status_t nnmem__onnx_infer_outputs(const void *data, size_t len,
                                         const nnmem_onnx_config_t *cfg,
                                         const void *const *in_pb,
                                         const size_t *in_pb_len, ox_io_t *io,
                                         nnmem_onnx_report_t *report,
                                         nnmem_diag_t *diag);
/* Only the graph input names (no inference). */
nnmem_status_t nnmem__onnx_input_names(const void *data, size_t len,
                                       ox_io_t *io, nnmem_diag_t *diag);
void nnmem__onnx_io_free(ox_io_t *io);
/* Infers the main graph (no declared-shape fallback) and compares every
 * value that has a declared type (value_info, graph outputs) with the
 * inferred one: *checked values compared, *mismatched that disagree, the
 * first disagreement described in `first`. */
nnmem_status_t nnmem__onnx_check_decls(const void *data, size_t len,
                                       const nnmem_onnx_config_t *cfg,
                                       size_t *checked, size_t *mismatched,
                                       char *first, size_t cap,
                                       nnmem_diag_t *diag);
/* The type and shape of a serialized TensorProto. */
nnmem_status_t nnmem__onnx_tensor_info(const void *data, size_t len,
                                       int32_t *elem, uint32_t *rank,
                                       int64_t *dims, nnmem_diag_t *diag);

#endif /* NNMEM_ONNX_HOOKS_H */

/* fuzz_onnx.c - fuzz harness for the ONNX importer.
 *
 * 1. nnmem_onnx_import on the raw bytes, with the default configuration and,
 *    chosen by the input's length parity, with strict mode, an NHWC /
 *    NC1HWC0 layout and a float16 dtype (so the layout and dtype passes
 *    are reached too).
 * 2. When it imports: graph invariant check, then liveness (with and
 *    without reuse), every strategy plans the problem and the verifier
 *    checks each plan (fuzz_common.h).
 * Findings: sanitizer reports, crashes, and aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c. Not thread-safe. */
#include "fuzz_common.h"

#include "nnmem/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  nnmem_onnx_config_t cfg;
  nnmem_onnx_config_init(&cfg);
  const nnmem_onnx_dim_t dims[] = {{"batch", 2}, {"N", 3}};
  cfg.dims = dims;
  cfg.n_dims = 2;
  unsigned mode = (unsigned)(size % 4);
  cfg.strict = mode == 1;
  cfg.layout = mode == 2   ? NNMEM_ONNX_LAYOUT_NHWC
               : mode == 3 ? NNMEM_ONNX_LAYOUT_NC1HWC0
                           : NNMEM_ONNX_LAYOUT_NCHW;
  cfg.dtype = mode == 3 ? NNMEM_DTYPE_FLOAT16 : NNMEM_DTYPE_UNDEFINED;
  cfg.alignment = mode == 2 ? 64 : 0;
  nnmem_graph_t *g = NULL;
  nnmem_onnx_report_t rep;
  nnmem_diag_t diag = {0};
  if (nnmem_onnx_import(data, size, "fuzz.onnx", &cfg, &g, &rep, &diag) !=
      NNMEM_OK) {
    if (g) fuzz_fail("graph set on error", NULL);
    return 0;
  }
  if (nnmem_graph_check(g, &diag) != NNMEM_OK)
    fuzz_fail("imported graph fails its invariant check", &diag);
  fuzz_graph_plan(g);
  nnmem_graph_destroy(g);
  return 0;
}

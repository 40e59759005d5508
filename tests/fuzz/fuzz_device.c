/* fuzz_device.c - fuzz harness for the device description reader
 * (nnmem_device_parse_json, src/fit/device.c).
 *
 * 1. nnmem_device_parse_json on the raw bytes (no NUL added: the reader
 *    must respect `len`).
 * 2. On error: a non-empty diag message that names the input ("fuzz.json").
 * 3. On success: nnmem_device_check passes; a fixed 3-op chain is fitted on
 *    the device at the main tier's capacity and at a tight limit; a fit
 *    that succeeds has every tier's plan verified, its plan JSON read back
 *    by the executor's reader and executed with real bytes (PASS required);
 *    a fit that fails says NNMEM_ERR_CAPACITY with a message.
 * Findings: sanitizer reports, crashes, aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c. Not thread-safe. */
#include <string.h>

#include "fuzz_common.h"

static nnmem_graph_t *chain(void) {
  nnmem_graph_t *g = NULL;
  if (nnmem_graph_create("chain", &g) != NNMEM_OK) abort();
  const char *names[] = {"in", "w1", "a", "w2", "b", "out"};
  const nnmem_tensor_kind_t kinds[] = {
      NNMEM_TENSOR_INPUT,  NNMEM_TENSOR_WEIGHT,     NNMEM_TENSOR_ACTIVATION,
      NNMEM_TENSOR_WEIGHT, NNMEM_TENSOR_ACTIVATION, NNMEM_TENSOR_OUTPUT};
  const uint64_t bytes[] = {4096, 65536, 8192, 32768, 4096, 1024};
  uint32_t id[6];
  for (int i = 0; i < 6; i++) {
    nnmem_tensor_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = names[i];
    d.kind = kinds[i];
    d.bytes = bytes[i];
    if (nnmem_graph_add_tensor(g, &d, &id[i], NULL) != NNMEM_OK) abort();
  }
  const uint32_t i1[2] = {id[0], id[1]}, i2[2] = {id[2], id[3]},
                 i3[1] = {id[4]};
  const uint32_t *ins[3] = {i1, i2, i3};
  const uint32_t nin[3] = {2, 2, 1}, outs[3] = {id[2], id[4], id[5]};
  const char *ops[3] = {"op1", "op2", "op3"};
  for (int i = 0; i < 3; i++) {
    nnmem_op_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = ops[i];
    d.type = i == 2 ? "Relu" : "Gemm";
    d.inputs = ins[i];
    d.n_inputs = nin[i];
    d.outputs = &outs[i];
    d.n_outputs = 1;
    if (nnmem_graph_add_op(g, &d, NULL, NULL) != NNMEM_OK) abort();
  }
  return g;
}

static void fit_and_run(const nnmem_graph_t *g, const nnmem_device_t *d,
                        uint64_t limit) {
  nnmem_fit_t *f = NULL;
  nnmem_diag_t diag = {0};
  nnmem_status_t st = nnmem_fit(g, d, limit, NULL, &f, &diag);
  if (st != NNMEM_OK) {
    if (f) fuzz_fail("a failed fit returned an object", NULL);
    if (!diag.message[0]) fuzz_fail("a failed fit without a message", NULL);
    return;
  }
  for (uint32_t t = 0; t < d->n_tiers; t++) {
    const nnmem_problem_t *p = nnmem_fit_tier_problem(f, t);
    const nnmem_plan_t *pl = nnmem_fit_tier_plan(f, t);
    if (nnmem_plan_verify(p, nnmem_plan_offsets(pl), d->tiers[t].alignment, 0,
                          NULL, &diag) != NNMEM_OK)
      fuzz_fail("a tier's plan fails the verifier", &diag);
  }
  char *text = NULL;
  size_t len = 0;
  if (nnmem_fit_format_json(f, g, &text, &len, &diag) != NNMEM_OK)
    fuzz_fail("cannot format a fit", &diag);
  nnmem_exec_plan_t *ep = NULL;
  if (nnmem_exec_plan_parse(text, len, "fit.json", &ep, &diag) != NNMEM_OK)
    fuzz_fail("a written fit does not read back", &diag);
  if (nnmem_exec_run(ep, NULL, NULL, &diag) != NNMEM_OK)
    fuzz_fail("a fit fails the executor", &diag);
  nnmem_exec_plan_destroy(ep);
  free(text);
  nnmem_fit_destroy(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  nnmem_device_t d;
  nnmem_diag_t diag = {0};
  if (nnmem_device_parse_json((const char *)data, size, "fuzz.json", &d,
                              &diag) != NNMEM_OK) {
    if (!strstr(diag.message, "fuzz.json"))
      fuzz_fail("a device error does not name the file", &diag);
    return 0;
  }
  if (nnmem_device_check(&d, &diag) != NNMEM_OK)
    fuzz_fail("an accepted device fails its check", &diag);
  nnmem_graph_t *g = chain();
  uint32_t m = nnmem_device_main_tier(&d);
  fit_and_run(g, &d, d.tiers[m].capacity < (1u << 24) ? 0 : 1u << 24);
  fit_and_run(g, &d, 60000);
  nnmem_graph_destroy(g);
  return 0;
}

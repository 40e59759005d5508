/* fuzz_json_graph.c - fuzz harness for the JSON graph reader.
 *
 * 1. nnmem_graph_parse_json on the raw bytes (no NUL terminator added).
 * 2. When it parses: graph invariant check, then liveness (with and without
 *    reuse), every strategy plans the problem and the verifier checks each
 *    plan (fuzz_common.h).
 * 3. Graphs of at most 300 ops: the memory-aware order (a small exact
 *    budget): a valid order (liveness accepts it), its reported peak equals
 *    liveness + lower bound of that order, never above the file order.
 * Findings: sanitizer reports, crashes, and aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c. Not thread-safe. */
#include <string.h>

#include "fuzz_common.h"

/* Step 3. */
static void fuzz_order(const nnmem_graph_t *g) {
  size_t n = nnmem_graph_op_count(g);
  if (n > 300) return;
  uint32_t *order = malloc((n + 1) * sizeof *order);
  if (!order) return;
  nnmem_order_config_t cfg;
  nnmem_order_config_init(&cfg);
  cfg.max_states = 20000;
  cfg.alignment = n % 2 ? 64 : 1;
  nnmem_order_report_t r;
  memset(&r, 0, sizeof r);
  nnmem_diag_t diag = {0};
  nnmem_status_t st = nnmem_graph_order_memory(g, &cfg, order, &r, &diag);
  if (st != NNMEM_OK) {
    if (st != NNMEM_ERR_OVERFLOW && st != NNMEM_ERR_NOMEM)
      fuzz_fail("ordering a checked graph failed", &diag);
    if (!diag.message[0]) fuzz_fail("ordering error without a message", NULL);
    free(order);
    return;
  }
  uint64_t peak = 0;
  if (nnmem_graph_order_peak(g, order, cfg.alignment, 0, &peak, &diag) !=
      NNMEM_OK)
    fuzz_fail("the memory order is not a valid order", &diag);
  if (peak != r.peak) fuzz_fail("reported peak differs from liveness", NULL);
  if (r.peak > r.file_peak) fuzz_fail("memory order above file order", NULL);
  free(order);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  nnmem_graph_t *g = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_graph_parse_json((const char *)data, size, "fuzz.json", &g,
                             &diag) != NNMEM_OK) {
    if (g) fuzz_fail("graph set on error", NULL);
    return 0;
  }
  if (nnmem_graph_check(g, &diag) != NNMEM_OK)
    fuzz_fail("parsed graph fails its invariant check", &diag);
  fuzz_graph_plan(g);
  fuzz_order(g);
  nnmem_graph_destroy(g);
  return 0;
}

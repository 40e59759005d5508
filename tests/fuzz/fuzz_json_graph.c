/* fuzz_json_graph.c - fuzz harness for the JSON graph reader.
 *
 * 1. nnmem_graph_parse_json on the raw bytes (no NUL terminator added).
 * 2. When it parses: graph invariant check, then liveness (with and without
 *    reuse), every strategy plans the problem and the verifier checks each
 *    plan (fuzz_common.h).
 * Findings: sanitizer reports, crashes, and aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c. Not thread-safe. */
#include "fuzz_common.h"

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
  nnmem_graph_destroy(g);
  return 0;
}

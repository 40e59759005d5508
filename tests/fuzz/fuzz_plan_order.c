/* fuzz_plan_order.c - fuzz harness for the "order" and "concat_kept_out"
 * of a plan JSON (nnmem_plan_read_json_order, _concat_kept_out,
 * src/import/plan_json_read.c) against a fixed graph (the diamond x -> A1 /
 * B1 -> A2 / B2 -> Add of tests/cli/order.sh).
 *
 * 1. nnmem_plan_read_json_order on the raw bytes (no NUL terminator).
 * 2. On error: the output NULL and a non-empty diag message.
 * 3. On success: NULL (no "order") or a permutation of the graph's ops;
 *    liveness either accepts it (then its problem passes its check and the
 *    order it reports is the one read) or names why not.
 * 4. nnmem_plan_read_json_concat_kept_out: on error NULL and a message; on
 *    success NULL or one 0/1 flag per op, which liveness takes as
 *    no_concat_ops and reports back unchanged.
 * Findings: sanitizer reports, crashes, and aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c. Not thread-safe. */
#include <string.h>

#include "fuzz_common.h"

static nnmem_graph_t *diamond(void) {
  static const char text[] =
      "{\"format_version\": 1, \"name\": \"diamond\", \"tensors\": ["
      "{\"name\": \"x\", \"kind\": \"input\", \"bytes\": 1000},"
      "{\"name\": \"a1\", \"bytes\": 10000},"
      "{\"name\": \"b1\", \"bytes\": 10000},"
      "{\"name\": \"a2\", \"bytes\": 100},"
      "{\"name\": \"b2\", \"bytes\": 100},"
      "{\"name\": \"y\", \"kind\": \"output\", \"bytes\": 100}],"
      "\"ops\": ["
      "{\"name\": \"A1\", \"type\": \"C\", \"inputs\": [\"x\"], "
      "\"outputs\": [\"a1\"]},"
      "{\"name\": \"B1\", \"type\": \"C\", \"inputs\": [\"x\"], "
      "\"outputs\": [\"b1\"]},"
      "{\"name\": \"A2\", \"type\": \"C\", \"inputs\": [\"a1\"], "
      "\"outputs\": [\"a2\"]},"
      "{\"name\": \"B2\", \"type\": \"C\", \"inputs\": [\"b1\"], "
      "\"outputs\": [\"b2\"]},"
      "{\"name\": \"Add\", \"type\": \"A\", \"inputs\": [\"a2\", "
      "\"b2\"], \"outputs\": [\"y\"]}]}";
  nnmem_graph_t *g = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_graph_parse_json(text, sizeof text - 1, "diamond.json", &g,
                             &diag) != NNMEM_OK)
    fuzz_fail("the fixed graph does not parse", &diag);
  return g;
}

/* Step 4. */
static void kept_out(const nnmem_graph_t *g, const uint8_t *data, size_t size) {
  uint8_t *kept = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_plan_read_json_concat_kept_out(
          (const char *)data, size, "fuzz.json", g, &kept, &diag) != NNMEM_OK) {
    if (kept) fuzz_fail("kept_out set on error", NULL);
    if (!diag.message[0]) fuzz_fail("kept_out error without a message", NULL);
    return;
  }
  if (!kept) return;
  size_t n = nnmem_graph_op_count(g);
  for (size_t i = 0; i < n; i++)
    if (kept[i] > 1) fuzz_fail("kept_out flag not 0/1", NULL);
  nnmem_liveness_config_t lc;
  nnmem_liveness_config_init(&lc);
  lc.no_concat_ops = kept;
  nnmem_liveness_t *l = NULL;
  if (nnmem_liveness_analyze(g, &lc, &l, &diag) != NNMEM_OK)
    fuzz_fail("liveness refused kept_out", &diag);
  const uint8_t *back = nnmem_liveness_concat_kept_out(l);
  if (!back || memcmp(back, kept, n)) fuzz_fail("kept_out not kept", NULL);
  nnmem_liveness_destroy(l);
  free(kept);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  static nnmem_graph_t *g;
  if (!g) g = diamond();
  kept_out(g, data, size);
  uint32_t *order = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_plan_read_json_order((const char *)data, size, "fuzz.json", g,
                                 &order, &diag) != NNMEM_OK) {
    if (order) fuzz_fail("output set on error", NULL);
    if (!diag.message[0]) fuzz_fail("error without a message", NULL);
    return 0;
  }
  if (!order) return 0; /* no "order": the file order */
  size_t n = nnmem_graph_op_count(g);
  uint8_t seen[8] = {0};
  for (size_t i = 0; i < n; i++) {
    if (order[i] >= n || seen[order[i]]) fuzz_fail("not a permutation", NULL);
    seen[order[i]] = 1;
  }
  nnmem_liveness_config_t lc;
  nnmem_liveness_config_init(&lc);
  lc.order = order;
  nnmem_liveness_t *l = NULL;
  if (nnmem_liveness_analyze(g, &lc, &l, &diag) == NNMEM_OK) {
    if (nnmem_problem_check(nnmem_liveness_problem(l), &diag) != NNMEM_OK)
      fuzz_fail("liveness problem fails its check", &diag);
    if (memcmp(nnmem_liveness_order(l), order, n * sizeof *order))
      fuzz_fail("liveness uses another order", NULL);
  } else if (!diag.message[0]) {
    fuzz_fail("liveness refused the order without a message", NULL);
  }
  nnmem_liveness_destroy(l);
  free(order);
  return 0;
}

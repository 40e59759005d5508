/* fuzz_multi_plan.c - fuzz harness for the multi-plan document reader
 * (nnmem_multi_plan_read_json, src/import/multi_plan_read.c: what `nnmem
 * plan --shared-arena --out` and `--dim NAME=LO..HI --out` write, read back
 * by `nnmem verify`).
 *
 * 1. nnmem_multi_plan_read_json on the raw bytes (no NUL terminator).
 * 2. On error: the output NULL and a non-empty diag message.
 * 3. On success: at least one plan; a shape-bucket document has a dim name
 *    and strictly increasing values >= 1, a shared-arena one neither; every
 *    entry has a label, an input, a power-of-two alignment, a problem that
 *    passes nnmem_problem_check with its offsets (nnmem_plan_verify runs on
 *    them: it may reject, never crash); out-of-range entries are refused.
 * 4. Each plan's "order" and "concat_kept_out" against a fixed 3-op chain:
 *    NULL or a permutation / 0-1 flags; on error NULL and a message.
 * Findings: sanitizer reports, crashes, and aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c. Not thread-safe. */
#include <string.h>

#include "fuzz_common.h"

static nnmem_graph_t *chain(void) {
  static const char text[] =
      "{\"format_version\": 1, \"name\": \"chain\", \"tensors\": ["
      "{\"name\": \"x\", \"kind\": \"input\", \"bytes\": 64},"
      "{\"name\": \"a\", \"bytes\": 128},"
      "{\"name\": \"b\", \"bytes\": 128},"
      "{\"name\": \"y\", \"kind\": \"output\", \"bytes\": 64}],"
      "\"ops\": ["
      "{\"name\": \"A\", \"type\": \"C\", \"inputs\": [\"x\"], "
      "\"outputs\": [\"a\"]},"
      "{\"name\": \"B\", \"type\": \"C\", \"inputs\": [\"a\"], "
      "\"outputs\": [\"b\"]},"
      "{\"name\": \"Y\", \"type\": \"C\", \"inputs\": [\"b\"], "
      "\"outputs\": [\"y\"]}]}";
  nnmem_graph_t *g = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_graph_parse_json(text, sizeof text - 1, "chain.json", &g, &diag) !=
      NNMEM_OK)
    fuzz_fail("the fixed graph does not parse", &diag);
  return g;
}

/* Step 4 for plan i. */
static void order_and_kept(const nnmem_multi_plan_t *m, size_t i,
                           const nnmem_graph_t *g) {
  size_t n = nnmem_graph_op_count(g);
  uint32_t *order = NULL;
  uint8_t *kept = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_multi_plan_order(m, i, g, &order, &diag) != NNMEM_OK) {
    if (order) fuzz_fail("order set on error", NULL);
    if (!diag.message[0]) fuzz_fail("order error without a message", NULL);
  } else if (order) {
    uint8_t seen[4] = {0};
    for (size_t k = 0; k < n; k++) {
      if (order[k] >= n || seen[order[k]]) fuzz_fail("not a permutation", NULL);
      seen[order[k]] = 1;
    }
  }
  free(order);
  diag.message[0] = '\0';
  if (nnmem_multi_plan_concat_kept_out(m, i, g, &kept, &diag) != NNMEM_OK) {
    if (kept) fuzz_fail("kept_out set on error", NULL);
    if (!diag.message[0]) fuzz_fail("kept_out error without a message", NULL);
  } else if (kept) {
    for (size_t k = 0; k < n; k++)
      if (kept[k] > 1) fuzz_fail("kept_out flag not 0/1", NULL);
  }
  free(kept);
}

/* Step 3 for plan i. */
static void check_entry(const nnmem_multi_plan_t *m, size_t i,
                        int64_t *prev_value) {
  nnmem_multi_plan_entry_t e;
  nnmem_diag_t diag = {0};
  if (nnmem_multi_plan_entry(m, i, &e) != NNMEM_OK)
    fuzz_fail("entry in range refused", NULL);
  if (!e.label || !e.label[0] || !e.input || !e.input[0])
    fuzz_fail("entry without label or input", NULL);
  if (!e.alignment || (e.alignment & (e.alignment - 1)))
    fuzz_fail("alignment not a power of two", NULL);
  if (!e.problem || (nnmem_problem_count(e.problem) && !e.offsets))
    fuzz_fail("entry without its plan", NULL);
  if (nnmem_problem_check(e.problem, &diag) != NNMEM_OK)
    fuzz_fail("plan problem fails its check", &diag);
  (void)nnmem_plan_verify(e.problem, e.offsets, e.alignment, 0, NULL, &diag);
  if (nnmem_multi_plan_is_buckets(m)) {
    if (!e.has_value || e.value < 1 || e.value <= *prev_value)
      fuzz_fail("bucket values not increasing from 1", NULL);
    *prev_value = e.value;
  } else if (e.has_value) {
    fuzz_fail("a shared-arena plan with a bucket value", NULL);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  static nnmem_graph_t *g;
  if (!g) g = chain();
  nnmem_multi_plan_t *m = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_multi_plan_read_json((const char *)data, size, "fuzz.json", &m,
                                 &diag) != NNMEM_OK) {
    if (m) fuzz_fail("output set on error", NULL);
    if (!diag.message[0]) fuzz_fail("error without a message", NULL);
    return 0;
  }
  size_t n = nnmem_multi_plan_count(m);
  if (n < 1) fuzz_fail("a document without plans", NULL);
  if (nnmem_multi_plan_is_buckets(m) != (nnmem_multi_plan_dim(m) != NULL))
    fuzz_fail("dim name present exactly for buckets", NULL);
  int64_t prev = 0;
  for (size_t i = 0; i < n; i++) {
    check_entry(m, i, &prev);
    order_and_kept(m, i, g);
  }
  nnmem_multi_plan_entry_t e;
  if (nnmem_multi_plan_entry(m, n, &e) == NNMEM_OK)
    fuzz_fail("entry past the end accepted", NULL);
  nnmem_multi_plan_destroy(m);
  return 0;
}

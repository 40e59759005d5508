/* fuzz_plan_json.c - fuzz harness for the plan JSON reader
 * (nnmem_plan_read_json, src/import/plan_json_read.c).
 *
 * 1. nnmem_plan_read_json on the raw bytes (no NUL terminator added: the
 *    reader must respect `len`).
 * 2. On error: both outputs NULL and a non-empty diag message.
 * 3. On success: the problem passes nnmem_problem_check, the offsets array
 *    is there, the verifier runs on the read offsets (it may reject them),
 *    every strategy plans the problem and each plan verifies
 *    (fuzz_common.h).
 * 4. Round trip: when the offsets fit in 64 bits with their sizes
 *    (nnmem_plan_from_offsets), nnmem_problem_format_plan_json writes the
 *    plan and the reader reads the text back to the same ids, sizes,
 *    lifetimes, offsets, gaps and parents (with relative offsets), exactly.
 * Findings: sanitizer reports, crashes, and aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c. Not thread-safe. */
#include <string.h>

#include "fuzz_common.h"

/* Step 4: p and offs (n buffers) survive write -> read unchanged. */
static void round_trip(const nnmem_problem_t *p, const uint64_t *offs) {
  nnmem_plan_t *plan = NULL;
  if (nnmem_plan_from_offsets(p, offs, &plan) != NNMEM_OK) return;
  nnmem_diag_t diag = {0};
  char *text = NULL;
  size_t len = 0;
  if (nnmem_problem_format_plan_json(p, plan, 1, &text, &len, &diag) !=
      NNMEM_OK)
    fuzz_fail("cannot format a plan read from a plan JSON", &diag);
  nnmem_problem_t *q = NULL;
  uint64_t *qoffs = NULL;
  if (nnmem_plan_read_json(text, len, "round-trip.json", &q, &qoffs, &diag) !=
      NNMEM_OK)
    fuzz_fail("written plan JSON does not read back", &diag);
  size_t n = nnmem_problem_count(p);
  if (nnmem_problem_count(q) != n)
    fuzz_fail("round trip changes the buffer count", NULL);
  const nnmem_buffer_t *a = nnmem_problem_buffers(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(q);
  for (size_t i = 0; i < n; i++) {
    const char *ia = nnmem_problem_id(p, i), *ib = nnmem_problem_id(q, i);
    if (!ia || !ib || strcmp(ia, ib) != 0)
      fuzz_fail("round trip changes an id", NULL);
    if (a[i].size != b[i].size || a[i].first != b[i].first ||
        a[i].last != b[i].last || a[i].align != b[i].align)
      fuzz_fail("round trip changes a size or lifetime", NULL);
    if (offs[i] != qoffs[i]) fuzz_fail("round trip changes an offset", NULL);
    if (!fuzz_same_extras(p, q, i))
      fuzz_fail("round trip changes gaps or a parent", NULL);
  }
  nnmem_problem_destroy(q);
  free(qoffs);
  free(text);
  nnmem_plan_destroy(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  nnmem_problem_t *p = NULL;
  uint64_t *offs = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_plan_read_json((const char *)data, size, "fuzz.json", &p, &offs,
                           &diag) != NNMEM_OK) {
    if (p || offs) fuzz_fail("output set on error", NULL);
    if (!diag.message[0]) fuzz_fail("error without a message", NULL);
    return 0;
  }
  if (!p) fuzz_fail("no problem on success", NULL);
  if (nnmem_problem_count(p) > 0 && !offs)
    fuzz_fail("no offsets for a non-empty plan", NULL);
  if (nnmem_problem_check(p, &diag) != NNMEM_OK)
    fuzz_fail("read problem fails its invariant check", &diag);
  if (offs) {
    nnmem_verify_report_t rep;
    (void)nnmem_plan_verify(p, offs, 1, 0, &rep, &diag);
    round_trip(p, offs);
  }
  fuzz_plan_and_verify(p, 1);
  nnmem_problem_destroy(p);
  free(offs);
  return 0;
}

/* fuzz_csv.c - fuzz harness for the MiniMalloc CSV reader.
 *
 * 1. nnmem_csv_parse on the raw bytes (no NUL terminator is added: the
 *    reader must respect `len`).
 * 2. When it parses: problem invariant check, lower bound and total bytes,
 *    then every strategy plans it and the verifier checks each plan
 *    (fuzz_common.h); a file `offset` column is verified too.
 * Findings: sanitizer reports, crashes, and aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c (CTest replays the
 * committed corpus). Not thread-safe. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  nnmem_csv_t *csv = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_csv_parse((const char *)data, size, "fuzz.csv", &csv, &diag) !=
      NNMEM_OK) {
    if (csv) fuzz_fail("csv set on error", NULL);
    return 0;
  }
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  if (nnmem_problem_check(p, &diag) != NNMEM_OK)
    fuzz_fail("parsed problem fails its invariant check", &diag);
  uint64_t lb = 0, total = 0;
  if (nnmem_problem_lower_bound(p, 1, &lb) == NNMEM_OK &&
      nnmem_problem_total_bytes(p, 1, &total) == NNMEM_OK && lb > total)
    fuzz_fail("lower bound above total bytes", NULL);
  const uint64_t *offsets = nnmem_csv_offsets(csv);
  if (offsets) {
    nnmem_verify_report_t rep;
    (void)nnmem_plan_verify(p, offsets, 1, 0, &rep, &diag);
  }
  fuzz_plan_and_verify(p, 1);
  nnmem_csv_destroy(csv);
  return 0;
}

/* fuzz_csv.c - fuzz harness for the MiniMalloc CSV reader.
 *
 * 1. nnmem_csv_parse on the raw bytes (no NUL terminator is added: the
 *    reader must respect `len`).
 * 2. When it parses: problem invariant check, lower bound and total bytes,
 *    then every strategy plans it and the verifier checks each plan
 *    (fuzz_common.h); a file `offset` column is verified too.
 * 3. Round trip: nnmem_problem_format_csv (gaps, parent and
 *    parent_offset columns included) reads back to the same sizes,
 *    lifetimes, alignments, gaps and parents.
 * Findings: sanitizer reports, crashes, and aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c (CTest replays the
 * committed corpus). Not thread-safe. */
#include "fuzz_common.h"

/* Step 3. */
static void round_trip(const nnmem_problem_t *p) {
  char *text = NULL;
  size_t len = 0;
  nnmem_diag_t diag = {0};
  if (nnmem_problem_format_csv(p, NULL, &text, &len, &diag) != NNMEM_OK)
    fuzz_fail("cannot format a parsed problem as CSV", &diag);
  nnmem_csv_t *back = NULL;
  if (nnmem_csv_parse(text, len, "round-trip.csv", &back, &diag) != NNMEM_OK)
    fuzz_fail("written CSV does not read back", &diag);
  const nnmem_problem_t *q = nnmem_csv_problem(back);
  size_t n = nnmem_problem_count(p);
  if (nnmem_problem_count(q) != n)
    fuzz_fail("round trip changes the count", NULL);
  const nnmem_buffer_t *a = nnmem_problem_buffers(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(q);
  for (size_t i = 0; i < n; i++) {
    if (a[i].size != b[i].size || a[i].first != b[i].first ||
        a[i].last != b[i].last || a[i].align != b[i].align)
      fuzz_fail("round trip changes a size, lifetime or alignment", NULL);
    if (!fuzz_same_extras(p, q, i))
      fuzz_fail("round trip changes gaps or a parent", NULL);
  }
  nnmem_csv_destroy(back);
  free(text);
}

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
  round_trip(p);
  nnmem_csv_destroy(csv);
  return 0;
}

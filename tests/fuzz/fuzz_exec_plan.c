/* fuzz_exec_plan.c - fuzz harness for the fitted plan reader and the
 * executor (nnmem_exec_plan_parse, nnmem_exec_run; src/fit/exec_read.c,
 * src/fit/exec.c): what `nnmem run PLAN.json` reads.
 *
 * 1. nnmem_exec_plan_parse on the raw bytes.
 * 2. On error: NULL output and a non-empty message naming the input.
 * 3. On success (the digest, the per-tier verifier and the active-time
 *    checks passed): when every tier is at most 4 MiB, nnmem_exec_run
 *    runs it; it may pass or report a mismatch (NNMEM_ERR_CONFLICT) with a
 *    message, nothing else.
 * Findings: sanitizer reports, crashes, aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c. Not thread-safe. */
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  nnmem_exec_plan_t *p = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_exec_plan_parse((const char *)data, size, "fuzz.json", &p, &diag) !=
      NNMEM_OK) {
    if (p) fuzz_fail("a refused plan returned an object", NULL);
    if (!strstr(diag.message, "fuzz.json"))
      fuzz_fail("a refused plan's message does not name the file", &diag);
    return 0;
  }
  nnmem_exec_report_t rep;
  memset(&rep, 0, sizeof rep);
  rep.size = sizeof rep;
  nnmem_status_t st = NNMEM_OK;
  if (nnmem_exec_plan_bytes(p) <= (4u << 20))
    st = nnmem_exec_run(p, NULL, &rep, &diag);
  if (st != NNMEM_OK && st != NNMEM_ERR_CONFLICT && st != NNMEM_ERR_NOMEM)
    fuzz_fail("the executor failed in an unexpected way", &diag);
  if (st != NNMEM_OK && !diag.message[0])
    fuzz_fail("a failed run without a message", NULL);
  nnmem_exec_plan_destroy(p);
  return 0;
}

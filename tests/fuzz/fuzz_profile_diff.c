/* fuzz_profile_diff.c - fuzz harness for the memory-profile reader of
 * `nnmem diff` (nnmem_profile_diff, src/export/profile_diff.c, over the
 * exact-number JSON parse of src/import/plan_json_read.c).
 *
 * The input is split at its first NUL byte into A and B (no NUL: A = B =
 * the whole input; the reader must respect the lengths, no terminator).
 * 1. diff(A, A) in text and JSON: both succeed or both fail; on failure
 *    the output is NULL and the message names "a.json"; on success the
 *    peak excess is exactly 0 and the JSON output parses with cJSON.
 * 2. diff(A, B) and diff(B, A): success exactly when both A and B read
 *    (step 1 on each), and then the two peak excesses never have the same
 *    sign (one is 0 when a peak is 0); a failure names a file.
 * 3. the timeline comparison (JSON): A against itself has no difference
 *    (first_difference null, max and mean deviation 0); A against B and B
 *    against A agree on the steps compared, the first step that differs
 *    and the largest deviation (|B - A| is symmetric), and every row's
 *    delta is b - a.
 * Findings: sanitizer reports, crashes, aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c. Not thread-safe. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

/* Step 1 on one text: 1 when it reads as a profile. */
static int reads(const char *t, size_t n) {
  char *out[2] = {NULL, NULL};
  nnmem_status_t st[2];
  double ex = -1;
  for (int json = 0; json < 2; json++) {
    nnmem_diag_t d = {0};
    out[json] = (char *)1;
    st[json] = nnmem_profile_diff(t, n, "a.json", t, n, "a.json", json,
                                  &out[json], &ex, &d);
    if (st[json] != NNMEM_OK) {
      if (out[json]) fuzz_fail("output set on error", &d);
      if (!strstr(d.message, "a.json")) fuzz_fail("error names no file", &d);
    } else if (ex != 0.0) {
      fuzz_fail("a profile against itself has a peak excess", NULL);
    }
  }
  if ((st[0] == NNMEM_OK) != (st[1] == NNMEM_OK))
    fuzz_fail("text and JSON modes disagree on the input", NULL);
  if (st[1] == NNMEM_OK) {
    cJSON *j = cJSON_Parse(out[1]);
    if (!j) fuzz_fail("diff --json output is not JSON", NULL);
    const cJSON *tl = cJSON_GetObjectItemCaseSensitive(j, "timeline");
    if (cJSON_IsObject(tl) &&
        (!cJSON_IsNull(
             cJSON_GetObjectItemCaseSensitive(tl, "first_difference")) ||
         cJSON_GetObjectItemCaseSensitive(tl, "max_deviation")->valuedouble !=
             0 ||
         cJSON_GetObjectItemCaseSensitive(tl, "mean_deviation")->valuedouble !=
             0))
      fuzz_fail("a timeline differs from itself", NULL);
    cJSON_Delete(j);
  }
  free(out[0]);
  free(out[1]);
  return st[0] == NNMEM_OK;
}

static const cJSON *member(const cJSON *o, const char *k) {
  return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* Step 3 on diff(A, B) = x and diff(B, A) = y. Doubles compare exactly:
 * both sides print the same integers. */
static void check_symmetric(const cJSON *x, const cJSON *y) {
  if (member(x, "steps_compared")->valuedouble !=
      member(y, "steps_compared")->valuedouble)
    fuzz_fail("the two directions compare different steps", NULL);
  const cJSON *tx = member(x, "timeline"), *ty = member(y, "timeline");
  if (cJSON_IsObject(tx) != cJSON_IsObject(ty))
    fuzz_fail("a timeline comparison in one direction only", NULL);
  if (cJSON_IsObject(tx)) {
    const cJSON *fx = member(tx, "first_difference");
    const cJSON *fy = member(ty, "first_difference");
    if (cJSON_IsNull(fx) != cJSON_IsNull(fy) ||
        (!cJSON_IsNull(fx) && fx->valuedouble != fy->valuedouble) ||
        member(tx, "max_deviation")->valuedouble !=
            member(ty, "max_deviation")->valuedouble ||
        member(tx, "max_deviation_step")->valuedouble !=
            member(ty, "max_deviation_step")->valuedouble)
      fuzz_fail("|B - A| is not symmetric", NULL);
  }
  for (const cJSON *r = member(x, "steps")->child; r; r = r->next)
    if (member(r, "delta")->valuedouble !=
            member(r, "b")->valuedouble - member(r, "a")->valuedouble &&
        member(r, "a")->valuedouble < 9007199254740992.0 &&
        member(r, "b")->valuedouble < 9007199254740992.0)
      fuzz_fail("a row's delta is not b - a", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  const char *a = (const char *)data, *b = a;
  size_t na = size, nb = size;
  const char *nul = memchr(a, 0, size);
  if (nul) {
    na = (size_t)(nul - a);
    b = nul + 1;
    nb = size - na - 1;
  }
  int ra = reads(a, na), rb = nul ? reads(b, nb) : ra;
  double e1 = 0, e2 = 0;
  cJSON *tj[2] = {NULL, NULL};
  for (int dir = 0; dir < 2; dir++) {
    nnmem_diag_t d = {0};
    char *out = NULL;
    nnmem_status_t st = dir ? nnmem_profile_diff(b, nb, "b.json", a, na,
                                                 "a.json", 1, &out, &e2, &d)
                            : nnmem_profile_diff(a, na, "a.json", b, nb,
                                                 "b.json", 1, &out, &e1, &d);
    if ((st == NNMEM_OK) != (ra && rb))
      fuzz_fail("diff of two files disagrees with reading each", &d);
    if (st != NNMEM_OK && !strstr(d.message, ".json"))
      fuzz_fail("error names no file", &d);
    if (st == NNMEM_OK && !(tj[dir] = cJSON_Parse(out)))
      fuzz_fail("diff --json output is not JSON", NULL);
    free(out);
  }
  if (tj[0] && tj[1]) check_symmetric(tj[0], tj[1]);
  cJSON_Delete(tj[0]);
  cJSON_Delete(tj[1]);
  /* never the same sign (a zero peak gives 0 by definition) */
  if (ra && rb && ((e1 > 0 && e2 > 0) || (e1 < 0 && e2 < 0)))
    fuzz_fail("peak excess has the same sign both ways", NULL);
  return 0;
}

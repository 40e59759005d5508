/* onnx_buckets.c - the shape buckets of one symbolic dim: parsing
 * "NAME=LO..HI" / "NAME=V1,V2,..." (the CLI's --dim with a range or a
 * list), the bucket choice for ranges, and the checker.
 *
 * Steps of nnmem_onnx_dim_buckets_parse:
 *   1. split at the first '=': NAME (1..NNMEM_ONNX_NAME_MAX - 1 bytes)
 *      and the value text;
 *   2. "A..B": a range; both decimal integers in [1, 2^40], A <= B;
 *      buckets = A, each power of two p with A < p < B, B (why powers of
 *      two: see nnmem/onnx.h);
 *   3. else a comma-separated list of such integers (one value is a list
 *      of one); sorted ascending, a value given twice is an error;
 *   4. the result passes nnmem_onnx_dim_buckets_check.
 * Invariant (the checker): values strictly ascending, all in [lo, hi],
 * 1 <= n <= NNMEM_ONNX_BUCKETS_MAX; a range has values[0] = lo and
 * values[n-1] = hi.
 * Complexity: O(length + n^2) (insertion sort of at most 64 values).
 * Thread-safety: pure functions of their arguments. */
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/onnx.h"

/* One decimal integer in [1, NNMEM_ONNX_DIM_MAX] at s[0, len). */
static nnmem_status_t parse_value(const char *spec, const char *s, size_t len,
                                  int64_t *out, nnmem_diag_t *diag) {
  int64_t v = 0;
  if (len == 0)
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "bad --dim '%s': a value is missing", spec);
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return nnmem__diag(diag, NNMEM_ERR_PARSE,
                         "bad --dim '%s': '%.*s' is not a whole number", spec,
                         (int)(len < 40 ? len : 40), s);
    v = v * 10 + (s[i] - '0');
    if (v > NNMEM_ONNX_DIM_MAX)
      return nnmem__diag(diag, NNMEM_ERR_PARSE,
                         "bad --dim '%s': %.*s is over 2^40", spec,
                         (int)(len < 40 ? len : 40), s);
  }
  if (v == 0)
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "bad --dim '%s': a dim must be >= 1, not 0", spec);
  *out = v;
  return NNMEM_OK;
}

static nnmem_status_t range_buckets(const char *spec,
                                    nnmem_onnx_dim_buckets_t *b,
                                    nnmem_diag_t *diag) {
  if (b->lo > b->hi)
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "bad --dim '%s': the range is empty (%lld > %lld)", spec,
                       (long long)b->lo, (long long)b->hi);
  b->is_range = 1;
  b->values[b->n++] = b->lo;
  for (int64_t p = 1; p < b->hi; p *= 2) /* at most 40 powers: fits 64 */
    if (p > b->lo) b->values[b->n++] = p;
  if (b->hi > b->lo) b->values[b->n++] = b->hi;
  return NNMEM_OK;
}

static nnmem_status_t list_buckets(const char *spec, const char *v,
                                   nnmem_onnx_dim_buckets_t *b,
                                   nnmem_diag_t *diag) {
  for (;;) {
    const char *comma = strchr(v, ',');
    size_t len = comma ? (size_t)(comma - v) : strlen(v);
    int64_t x = 0;
    if (b->n == NNMEM_ONNX_BUCKETS_MAX)
      return nnmem__diag(diag, NNMEM_ERR_PARSE,
                         "bad --dim '%s': more than %d values", spec,
                         NNMEM_ONNX_BUCKETS_MAX);
    nnmem_status_t st = parse_value(spec, v, len, &x, diag);
    if (st != NNMEM_OK) return st;
    size_t i = b->n++; /* insertion into the sorted prefix */
    while (i > 0 && b->values[i - 1] > x) {
      b->values[i] = b->values[i - 1];
      i--;
    }
    if (i > 0 && b->values[i - 1] == x)
      return nnmem__diag(diag, NNMEM_ERR_PARSE,
                         "bad --dim '%s': %lld is listed twice", spec,
                         (long long)x);
    b->values[i] = x;
    if (!comma) break;
    v = comma + 1;
  }
  b->lo = b->values[0];
  b->hi = b->values[b->n - 1];
  return NNMEM_OK;
}

nnmem_status_t nnmem_onnx_dim_buckets_parse(const char *spec,
                                            nnmem_onnx_dim_buckets_t *out,
                                            nnmem_diag_t *diag) {
  if (!spec || !out) return NNMEM_ERR_INVALID;
  memset(out, 0, sizeof *out);
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec)
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "bad --dim '%s': expected NAME=VALUE, NAME=LO..HI or "
                       "NAME=V1,V2,...",
                       spec);
  if ((size_t)(eq - spec) >= sizeof out->name)
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "bad --dim: the name is longer than %d bytes",
                       NNMEM_ONNX_NAME_MAX - 1);
  memcpy(out->name, spec, (size_t)(eq - spec));
  const char *v = eq + 1, *dots = strstr(v, "..");
  nnmem_status_t st;
  if (dots) {
    st = parse_value(spec, v, (size_t)(dots - v), &out->lo, diag);
    if (st == NNMEM_OK)
      st = parse_value(spec, dots + 2, strlen(dots + 2), &out->hi, diag);
    if (st == NNMEM_OK) st = range_buckets(spec, out, diag);
  } else {
    st = list_buckets(spec, v, out, diag);
  }
  if (st == NNMEM_OK) st = nnmem_onnx_dim_buckets_check(out, diag);
  if (st != NNMEM_OK) {
    nnmem_status_t keep = st;
    memset(out, 0, sizeof *out);
    return keep;
  }
  return NNMEM_OK;
}

nnmem_status_t nnmem_onnx_dim_buckets_check(const nnmem_onnx_dim_buckets_t *b,
                                            nnmem_diag_t *diag) {
  if (!b) return NNMEM_ERR_INVALID;
  if (b->n == 0 || b->n > NNMEM_ONNX_BUCKETS_MAX)
    return nnmem__diag(diag, NNMEM_ERR_STATE, "buckets: %zu values", b->n);
  if (memchr(b->name, 0, sizeof b->name) == NULL || !b->name[0])
    return nnmem__diag(diag, NNMEM_ERR_STATE, "buckets: bad name");
  for (size_t i = 0; i < b->n; i++) {
    if (b->values[i] < 1 || b->values[i] < b->lo || b->values[i] > b->hi)
      return nnmem__diag(
          diag, NNMEM_ERR_STATE, "buckets: value %lld outside [%lld, %lld]",
          (long long)b->values[i], (long long)b->lo, (long long)b->hi);
    if (i && b->values[i] <= b->values[i - 1])
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "buckets: values %zu and %zu not ascending", i - 1, i);
  }
  if (b->values[0] != b->lo || b->values[b->n - 1] != b->hi)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "buckets: the first and last values are not lo, hi");
  return NNMEM_OK;
}

nnmem_status_t nnmem_onnx_dim_bucket_of(const nnmem_onnx_dim_buckets_t *b,
                                        int64_t value, size_t *index_out) {
  if (!b || !index_out || b->n == 0) return NNMEM_ERR_INVALID;
  size_t lo = 0, hi = b->n; /* first index with values[i] >= value */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (b->values[mid] < value)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == b->n) return NNMEM_ERR_NOT_FOUND;
  *index_out = lo;
  return NNMEM_OK;
}

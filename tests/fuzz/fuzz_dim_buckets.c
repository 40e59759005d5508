/* fuzz_dim_buckets.c - fuzz harness for the shape-bucket spec of
 * `--dim NAME=LO..HI` / `NAME=V1,V2` and for the arena layout of several
 * models.
 *
 * 1. The bytes up to the first NUL (at most 1 KiB) are a spec:
 *    nnmem_onnx_dim_buckets_parse; on success the checker must accept the
 *    result, a range must hold LO and HI, and nnmem_onnx_dim_bucket_of must
 *    agree with a linear scan for LO - 1 .. HI + 1 and a few values between;
 *    on failure the output must be zeroed and a message set.
 * 2. The bytes after the NUL are models, 9 bytes each: a height (8 bytes,
 *    little-endian, top byte masked so sums stay meaningful) and a group (1
 *    byte, mod 4); nnmem_arena_layout (alignment from the input length)
 *    must pass nnmem_arena_layout_check, size >= every height, size <=
 *    sum of heights + alignment per model, and size must equal max(alone
 *    heights, per-group stacked tops) recomputed here.
 * Findings: sanitizer reports, crashes, aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c (CTest replays the
 * committed corpus). Not thread-safe. */
#include <string.h>

#include "fuzz_common.h"

static void check_buckets(const char *spec) {
  nnmem_onnx_dim_buckets_t b;
  nnmem_diag_t diag = {0};
  if (nnmem_onnx_dim_buckets_parse(spec, &b, &diag) != NNMEM_OK) {
    if (b.n != 0 || !diag.message[0])
      fuzz_fail("failed parse left output or no message", NULL);
    return;
  }
  if (nnmem_onnx_dim_buckets_check(&b, &diag) != NNMEM_OK)
    fuzz_fail("parsed buckets fail their checker", &diag);
  if (b.is_range && (b.values[0] != b.lo || b.values[b.n - 1] != b.hi))
    fuzz_fail("range does not hold lo and hi", NULL);
  int64_t probe[8] = {b.lo - 1, b.lo,     b.lo + 1,          b.hi - 1,
                      b.hi,     b.hi + 1, (b.lo + b.hi) / 2, 1};
  for (int k = 0; k < 8; k++) {
    size_t lin = b.n, got = 0;
    for (size_t j = 0; j < b.n && lin == b.n; j++)
      if (b.values[j] >= probe[k]) lin = j;
    nnmem_status_t st = nnmem_onnx_dim_bucket_of(&b, probe[k], &got);
    if (lin == b.n ? st != NNMEM_ERR_NOT_FOUND : (st != NNMEM_OK || got != lin))
      fuzz_fail("bucket_of disagrees with a linear scan", NULL);
  }
}

static void check_layout(const uint8_t *d, size_t len, uint64_t align) {
  enum { MAXN = 64 };
  uint64_t h[MAXN], base[MAXN], top[4] = {0}, want = 0, sum = 0;
  uint32_t g[MAXN];
  size_t n = 0;
  for (; n < MAXN && (n + 1) * 9 <= len; n++) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
      v = v << 8 | d[n * 9 + (size_t)i];
    h[n] = v & 0x00ffffffffffffffULL;
    g[n] = d[n * 9 + 8] % 4;
  }
  if (!n) return;
  nnmem_arena_layout_config_t c;
  nnmem_arena_layout_config_init(&c);
  c.groups = g;
  c.alignment = align;
  nnmem_arena_layout_t lay;
  nnmem_diag_t diag = {0};
  if (nnmem_arena_layout(h, n, &c, base, &lay, &diag) != NNMEM_OK)
    fuzz_fail("layout of 56-bit heights failed", &diag);
  if (nnmem_arena_layout_check(h, n, &c, base, lay.size, &diag) != NNMEM_OK)
    fuzz_fail("layout fails its checker", &diag);
  for (size_t i = 0; i < n; i++) { /* the same stacking, recomputed */
    sum += h[i];
    if (!g[i]) {
      want = want > h[i] ? want : h[i];
      continue;
    }
    uint64_t b = (top[g[i]] + align - 1) / align * align;
    int first = 1;
    for (size_t j = 0; j < i; j++)
      if (g[j] == g[i]) first = 0;
    if (first) b = 0;
    if (base[i] != b) fuzz_fail("base differs from the stacking", NULL);
    top[g[i]] = b + h[i];
    want = want > top[g[i]] ? want : top[g[i]];
  }
  if (lay.size != want || lay.sum_heights != sum)
    fuzz_fail("size or sum differs from the recomputation", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  const uint8_t *nul = memchr(data, 0, size);
  size_t slen = nul ? (size_t)(nul - data) : size;
  if (slen <= 1024) {
    char spec[1025];
    memcpy(spec, data, slen);
    spec[slen] = '\0';
    check_buckets(spec);
  }
  if (nul) {
    size_t rest = size - slen - 1;
    check_layout(nul + 1, rest, (uint64_t)1 << (size % 9));
  }
  return 0;
}

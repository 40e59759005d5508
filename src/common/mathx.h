/* The three pieces of libm the leak records' sampling needs, written out.
 *
 * The malloc front (libnnmem_malloc.so) carries the leak records; with
 * log, expm1 and llround from libm it loaded libm.so into every program it
 * ran under, which cost about 320 KB of resident memory in programs that
 * never sample. These need no tables: a range reduction to [1/sqrt2, sqrt2)
 * or [0, ln 2) and a short series, good to about 1e-15 relative, which is
 * far finer than a sampling interval or an estimate needs. */

#ifndef NNMEM_MATHX_H
#define NNMEM_MATHX_H

#include <stdint.h>
#include <string.h>

#define NNMEM__LN2 0.69314718055994530942

/* ln(x) for a finite x > 0 (normal or subnormal); the callers pass
 * x in (0, 1]. x = m * 2^e with m in [1/sqrt2, sqrt2), then
 * ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172: eleven odd terms
 * of the atanh series leave less than 0.172^22 / 23 (1e-18). */
static inline double nnmem__ln(double x) {
  int e = 0;
  if (x < 0x1p-1022) { /* subnormal: scale into the normal range */
    x *= 0x1p54;
    e = -54;
  }
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  e += (int)((b >> 52) & 0x7ff) - 1023;
  b = (b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL; /* m in [1, 2) */
  double m;
  memcpy(&m, &b, sizeof m);
  if (m > 1.41421356237309504880) {
    m *= 0.5;
    e++;
  }
  double s = (m - 1.0) / (m + 1.0), s2 = s * s, sum = 0.0;
  for (int k = 21; k >= 1; k -= 2) sum = 1.0 / k + s2 * sum;
  return (double)e * NNMEM__LN2 + 2.0 * s * sum;
}

/* -ln(x / 2^53) for an integer x in [1, 2^53]: an exponential variate of
 * mean 1 from 53 random bits (the leak records' sampling interval, drawn
 * once per sample). nnmem__ln's method with three changes that suit a
 * draw: the range reduction to m in [1/sqrt2, sqrt2) is branchless (adding
 * 2^52 - the mantissa of sqrt2 carries into the exponent exactly when the
 * mantissa is >= sqrt2's: e one higher, m halved), no subnormal case (x is
 * an integer >= 1), and five odd terms of the atanh series, not eleven:
 * the tail left is below 2 s^11 / (11 (1 - s^2)) < 7.1e-10 for |s| <
 * 0.1716, an absolute error under 1e-9 (a sampling interval of N bytes
 * off by under 1e-9 N: 5e-4 bytes at 512 KiB, below its rounding to a
 * whole byte). About a third of nnmem__ln's instructions. */
static inline double nnmem__neg_ln_u53(uint64_t x) {
  double d = (double)x; /* exact: x <= 2^53 */
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  b += 0x3ff0000000000000ULL - 0x3fe6a09e667f3bcdULL; /* 1 - sqrt2/2 */
  int e = (int)(b >> 52) - 1023;                      /* 0 .. 53 */
  b = (b & 0x000fffffffffffffULL) + 0x3fe6a09e667f3bcdULL;
  double m;
  memcpy(&m, &b, sizeof m); /* [1/sqrt2, sqrt2), x = m 2^e */
  double s = (m - 1.0) / (m + 1.0), s2 = s * s;
  double p = 1.0 / 9.0;
  p = 1.0 / 7.0 + s2 * p;
  p = 1.0 / 5.0 + s2 * p;
  p = 1.0 / 3.0 + s2 * p;
  p = 1.0 + s2 * p;
  return (double)(53 - e) * NNMEM__LN2 - 2.0 * s * p;
}

/* 1 - e^-x for x >= 0, without cancellation for small x (what
 * -expm1(-x) gives). Below 0.5 the alternating series; above it
 * e^-x = 2^-k e^-r with r in [0, ln 2), whose Taylor series needs 20
 * terms for 1e-18. */
static inline double nnmem__one_minus_exp_neg(double x) {
  if (!(x > 0.0)) return 0.0;
  if (x < 0.5) {
    double term = x, sum = 0.0;
    for (int n = 1; n <= 24; n++) {
      sum += term;
      term *= -x / (n + 1);
    }
    return sum;
  }
  if (x > 746.0) return 1.0; /* e^-x underflows */
  int k = (int)(x / NNMEM__LN2);
  double r = x - (double)k * NNMEM__LN2, term = 1.0, ex = 0.0;
  for (int n = 1; n <= 21; n++) {
    ex += term;
    term *= -r / n;
  }
  while (k >= 60) { /* e^-x = e^-r * 2^-k, in steps that stay exact */
    ex *= 0x1p-60;
    k -= 60;
  }
  ex *= 1.0 / (double)(UINT64_C(1) << k);
  return 1.0 - ex;
}

/* v rounded to the nearest integer, halves away from zero, for v >= 0;
 * 0 for a negative or NaN v, UINT64_MAX from 2^64 on. The fraction is
 * taken exactly (v - trunc(v) is exact below 2^64), not by adding 0.5,
 * which rounds 0.49999999999999994 up. */
static inline uint64_t nnmem__round_u64(double v) {
  if (!(v > 0.0)) return 0;
  if (v >= 0x1p64) return UINT64_MAX;
  uint64_t t = (uint64_t)v;
  return t + (v - (double)t >= 0.5);
}

#endif /* NNMEM_MATHX_H */

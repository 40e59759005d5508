/* units.c - the CLI's number parsing and byte formatting.
 *
 * Size parsing ("1.5MiB" -> 1572864):
 *   1. read the integer digits (at least one; no sign, no spaces), checked
 *      against 64-bit overflow;
 *   2. read an optional fraction of at most 6 digits;
 *   3. match the unit (case-insensitive): "", B, K/KiB, M/MiB, G/GiB,
 *      T/TiB (powers of 1024), KB, MB, GB, TB (powers of 1000);
 *   4. value = int * unit + frac * unit / 10^digits; the fraction part must
 *      divide exactly (whole bytes) and the sum must fit 64 bits.
 * Invariant: a successful parse writes *out; a failed one leaves it alone
 * and sets *why to a static reason.
 * Complexity: O(length). Thread-safety: pure functions. */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

static int fail(const char **why, const char *reason) {
  if (why) *why = reason;
  return -1;
}

/* Reads decimal digits into *v; returns how many were read, -1 on overflow. */
static int read_digits(const char **p, uint64_t *v) {
  int n = 0;
  uint64_t acc = 0;
  while (isdigit((unsigned char)**p)) {
    if (nnmem__mul_overflow(acc, 10, &acc) ||
        nnmem__add_overflow(acc, (uint64_t)(**p - '0'), &acc))
      return -1;
    (*p)++;
    n++;
  }
  *v = acc;
  return n;
}

static int unit_multiplier(const char *u, uint64_t *mult) {
  static const struct {
    const char *name;
    uint64_t mult;
  } units[] = {
      {"", 1},
      {"b", 1},
      {"k", 1ull << 10},
      {"kib", 1ull << 10},
      {"m", 1ull << 20},
      {"mib", 1ull << 20},
      {"g", 1ull << 30},
      {"gib", 1ull << 30},
      {"t", 1ull << 40},
      {"tib", 1ull << 40},
      {"kb", 1000ull},
      {"mb", 1000000ull},
      {"gb", 1000000000ull},
      {"tb", 1000000000000ull},
  };
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(u, units[i].name) == 0) {
      *mult = units[i].mult;
      return 0;
    }
  }
  return -1;
}

int cli_parse_size(const char *s, uint64_t *out, const char **why) {
  const char *p = s;
  uint64_t ip = 0, fp = 0, pow10 = 1, mult = 1, v, frac;
  if (!s || !*s) return fail(why, "empty size");
  if (*p == '-') return fail(why, "size must not be negative");
  int n = read_digits(&p, &ip);
  if (n < 0) return fail(why, "size overflows 64 bits");
  if (n == 0) return fail(why, "size must start with a digit");
  if (*p == '.') {
    p++;
    const char *f0 = p;
    int nd = read_digits(&p, &fp);
    if (nd <= 0) return fail(why, "expected digits after '.'");
    if (nd > 6) return fail(why, "at most 6 decimals");
    for (const char *q = f0; q < p; q++)
      pow10 *= 10;
  }
  if (unit_multiplier(p, &mult) != 0)
    return fail(why, "unknown unit (use B, K, M, G, T, KiB..TiB, KB..TB)");
  if (nnmem__mul_overflow(ip, mult, &v))
    return fail(why, "size overflows 64 bits");
  /* fp < 10^6 and mult <= 2^40, so the product fits 64 bits. */
  if ((fp * mult) % pow10 != 0) return fail(why, "not a whole number of bytes");
  frac = fp * mult / pow10;
  if (nnmem__add_overflow(v, frac, &v))
    return fail(why, "size overflows 64 bits");
  *out = v;
  return 0;
}

int cli_parse_uint(const char *s, uint64_t max, uint64_t *out,
                   const char **why) {
  const char *p = s;
  uint64_t v;
  if (!s || !*s) return fail(why, "empty number");
  if (*p == '-') return fail(why, "must not be negative");
  int n = read_digits(&p, &v);
  if (n < 0) return fail(why, "number too large");
  if (n == 0 || *p) return fail(why, "not a whole number");
  if (v > max) return fail(why, "number too large");
  *out = v;
  return 0;
}

int cli_parse_seconds(const char *s, double *out, const char **why) {
  char *end = NULL;
  if (!s || !*s) return fail(why, "empty number");
  if (*s == '-') return fail(why, "must not be negative");
  if (!isdigit((unsigned char)*s) && *s != '.')
    return fail(why, "not a number");
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno == ERANGE || !isfinite(v) || v < 0)
    return fail(why, "not a non-negative number of seconds");
  *out = v;
  return 0;
}

char *cli_fmt_human(uint64_t bytes, char *buf, size_t cap) {
  static const char *const names[] = {"B",   "KiB", "MiB", "GiB",
                                      "TiB", "PiB", "EiB"};
  if (bytes < 1024) {
    snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    return buf;
  }
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, cap, "%.1f %s", v, names[u]);
  return buf;
}

char *cli_fmt_grouped(uint64_t v, char *buf, size_t cap) {
  char digits[32], tmp[40];
  int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
  size_t o = 0;
  for (int i = 0; i < n; i++) {
    if (i > 0 && (n - i) % 3 == 0) tmp[o++] = ',';
    tmp[o++] = digits[i];
  }
  tmp[o] = '\0';
  snprintf(buf, cap, "%s", tmp);
  return buf;
}

char *cli_fmt_bytes(uint64_t bytes, char *buf, size_t cap) {
  char h[32], g[40];
  if (bytes < 1024) return cli_fmt_human(bytes, buf, cap);
  snprintf(buf, cap, "%s (%s B)", cli_fmt_human(bytes, h, sizeof h),
           cli_fmt_grouped(bytes, g, sizeof g));
  return buf;
}

char *cli_fmt_ratio(uint64_t a, uint64_t b, char *buf, size_t cap) {
  if (b == 0)
    snprintf(buf, cap, "%s", a == 0 ? "1.000x" : "-");
  else
    snprintf(buf, cap, "%.3fx", (double)a / (double)b);
  return buf;
}

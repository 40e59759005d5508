/* bench_util.h - the clock and the median the benchmarks share.
 * Static inline: each bench is one program. Thread-safe. */
#ifndef NNMEM_BENCH_UTIL_H
#define NNMEM_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort order of doubles. */
static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v in place); n > 0. */
static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif /* NNMEM_BENCH_UTIL_H */

/* util.c - diagnostics, growable arrays, strings and the clock used by every
 * module. Thread-safe: no shared state. */
#define _POSIX_C_SOURCE 200809L
#include "common/util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

nnmem_status_t nnmem__diag(nnmem_diag_t *diag, nnmem_status_t status,
                           const char *fmt, ...) {
  if (diag) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(diag->message, sizeof diag->message, fmt, ap);
    va_end(ap);
  }
  return status;
}

nnmem_status_t nnmem__grow(void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return NNMEM_OK;
  size_t ncap = *cap ? *cap : 8;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2) return NNMEM_ERR_OVERFLOW;
    ncap *= 2;
  }
  if (elem && ncap > SIZE_MAX / elem) return NNMEM_ERR_OVERFLOW;
  void *p = realloc(*arr, ncap * elem);
  if (!p) return NNMEM_ERR_NOMEM;
  *arr = p;
  *cap = ncap;
  return NNMEM_OK;
}

char *nnmem__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

double nnmem__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* util.c - diagnostics, growable arrays, strings and the clock used by every
 * module. Thread-safe: no shared state. */
#define _POSIX_C_SOURCE 200809L
#include "common/util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

size_t nnmem__escape(const char *s, char *buf, size_t cap) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  if (!cap) return 0;
  for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
    char e[5] = {0};
    if (*u >= 0x20 && *u != 0x7f)
      e[0] = (char)*u;
    else if (*u == '\n' || *u == '\t' || *u == '\r')
      e[0] = '\\', e[1] = *u == '\n' ? 'n' : *u == '\t' ? 't' : 'r';
    else
      e[0] = '\\', e[1] = 'x', e[2] = hex[*u >> 4], e[3] = hex[*u & 15];
    size_t n = strlen(e);
    if (o + n >= cap) break; /* truncated at a whole escape */
    memcpy(buf + o, e, n);
    o += n;
  }
  buf[o] = '\0';
  return o;
}

/* Messages are one line: names from input files (ONNX node and tensor
 * names, CSV ids, JSON strings) may hold newlines or terminal escapes, so
 * every control byte in a formatted message is escaped here, in one place,
 * whichever importer put the name in. */
nnmem_status_t nnmem__diag(nnmem_diag_t *diag, nnmem_status_t status,
                           const char *fmt, ...) {
  if (diag) {
    char raw[sizeof diag->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    nnmem__escape(raw, diag->message, sizeof diag->message);
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

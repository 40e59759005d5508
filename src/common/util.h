/* util.h - internal helpers shared by every module (never installed):
 * diagnostics, checked arithmetic, growable arrays, string duplication. */
#ifndef NNMEM_UTIL_H
#define NNMEM_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "nnmem/status.h"

#if defined(__GNUC__)
#define NNMEM__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define NNMEM__PRINTF(f, a)
#endif

/* Debug level: 0 release, 1 debug (checkers run after each mutation in
 * tests). A constant rather than #ifdef so debug code always compiles. */
#ifdef NNMEM_DEBUG
enum { nnmem__debug = 1 };
#else
enum { nnmem__debug = 0 };
#endif

/* Writes a formatted message into diag (when not NULL); returns `status` so
 * callers can `return nnmem__diag(diag, NNMEM_ERR_PARSE, "...")`. Control
 * bytes in the result (from user-controlled names) are escaped as by
 * nnmem__escape, so a message is always one printable line. */
nnmem_status_t nnmem__diag(nnmem_diag_t *diag, nnmem_status_t status,
                           const char *fmt, ...) NNMEM__PRINTF(3, 4);

/* Copies `s` into buf (cap bytes, NUL-terminated, truncated at a whole
 * escape) with each control byte written as an escape: newline "\\n", tab
 * "\\t", carriage return "\\r", others (ESC, DEL, ...) "\\x1b". Other bytes,
 * UTF-8 included, stay. Returns the length written. */
size_t nnmem__escape(const char *s, char *buf, size_t cap);

/* Checked arithmetic: return 0 on success, 1 on overflow. */
static inline int nnmem__add_overflow(uint64_t a, uint64_t b, uint64_t *r) {
  return __builtin_add_overflow(a, b, r);
}
static inline int nnmem__mul_overflow(uint64_t a, uint64_t b, uint64_t *r) {
  return __builtin_mul_overflow(a, b, r);
}

static inline int nnmem__is_pow2(uint64_t x) {
  return x && !(x & (x - 1));
}

/* Rounds x up to a multiple of the power of two `a`; 1 on overflow. */
static inline int nnmem__align_up(uint64_t x, uint64_t a, uint64_t *r) {
  if (a <= 1) {
    *r = x;
    return 0;
  }
  uint64_t t;
  if (nnmem__add_overflow(x, a - 1, &t)) return 1;
  *r = t & ~(a - 1);
  return 0;
}

static inline uint64_t nnmem__max_u64(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}

/* Grows *arr (element size `elem`) so it holds at least `need` elements;
 * *cap is updated. Returns NNMEM_OK or NNMEM_ERR_NOMEM / NNMEM_ERR_OVERFLOW. */
nnmem_status_t nnmem__grow(void **arr, size_t *cap, size_t need, size_t elem);

/* strdup that returns NULL on failure (C11 has no strdup). */
char *nnmem__strdup(const char *s);

/* Monotonic clock in seconds. */
double nnmem__now(void);

#endif /* NNMEM_UTIL_H */

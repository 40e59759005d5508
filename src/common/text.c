/* text.c - text helpers shared by the importers and exporters: a string
 * builder, UTF-8 validation, line / column lookup and a string hash set.
 *
 * Algorithms:
 *   1. The builder doubles its capacity (amortized O(1) per byte) and
 *      remembers the first allocation failure, so writers check once.
 *   2. UTF-8 validation follows the well-formed byte sequence table of
 *      Unicode 15, section 3.9, table 3-7 (lead byte decides the allowed
 *      range of the first continuation byte, which excludes overlong forms,
 *      surrogates and code points above U+10FFFF).
 *   3. The hash set is open addressing with linear probing on a power-of-two
 *      table kept at most half full (FNV-1a 64-bit hash); it doubles and
 *      rehashes when full.
 *
 * Invariants: builder data[len] == '\0'; set count <= cap / 2.
 * Complexity: validation O(n); set insert O(1) expected.
 * Thread-safety: no shared state; each object belongs to one thread. */
#include "common/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void nnmem__text_init(nnmem__text_t *t) {
  memset(t, 0, sizeof *t);
}

void nnmem__text_free(nnmem__text_t *t) {
  free(t->data);
  nnmem__text_init(t);
}

static int text_reserve(nnmem__text_t *t, size_t extra) {
  if (t->failed) return 0;
  if (extra > SIZE_MAX - t->len - 1 ||
      nnmem__grow((void **)&t->data, &t->cap, t->len + extra + 1, 1) !=
          NNMEM_OK) {
    t->failed = 1;
    return 0;
  }
  return 1;
}

void nnmem__text_append(nnmem__text_t *t, const char *s, size_t n) {
  if (!text_reserve(t, n)) return;
  if (n) memcpy(t->data + t->len, s, n);
  t->len += n;
  t->data[t->len] = '\0';
}

void nnmem__text_puts(nnmem__text_t *t, const char *s) {
  nnmem__text_append(t, s, strlen(s));
}

void nnmem__text_putc(nnmem__text_t *t, char c) {
  nnmem__text_append(t, &c, 1);
}

void nnmem__text_u64(nnmem__text_t *t, uint64_t v) {
  char buf[24];
  size_t i = sizeof buf;
  do {
    buf[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  nnmem__text_append(t, buf + i, sizeof buf - i);
}

void nnmem__text_printf(nnmem__text_t *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    t->failed = 1;
    return;
  }
  if (!text_reserve(t, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

nnmem_status_t nnmem__text_status(const nnmem__text_t *t) {
  return t->failed ? NNMEM_ERR_NOMEM : NNMEM_OK;
}

size_t nnmem__utf8_seq(const unsigned char *p, size_t avail) {
  unsigned char c = p[0];
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (avail < n || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return n;
}

int nnmem__utf8_check(const char *data, size_t len, size_t *bad_pos) {
  const unsigned char *p = (const unsigned char *)data;
  size_t i = 0;
  while (i < len) {
    if (p[i] >= 0x80) {
      size_t n = nnmem__utf8_seq(p + i, len - i);
      if (!n) {
        *bad_pos = i;
        return 1;
      }
      i += n;
    } else if (p[i] == 0) {
      *bad_pos = i;
      return 2;
    } else {
      i++;
    }
  }
  return 0;
}

void nnmem__text_position(const char *data, size_t len, size_t pos,
                          size_t *line, size_t *col) {
  size_t ln = 1, start = 0;
  if (pos > len) pos = len;
  for (size_t i = 0; i < pos; i++) {
    if (data[i] == '\n') {
      ln++;
      start = i + 1;
    }
  }
  *line = ln;
  *col = pos - start + 1;
}

void nnmem__strset_init(nnmem__strset_t *s) {
  memset(s, 0, sizeof *s);
}

void nnmem__strset_free(nnmem__strset_t *s) {
  free(s->keys);
  free(s->lens);
  free(s->values);
  nnmem__strset_init(s);
}

static uint64_t fnv1a(const char *k, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)k[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* Slot of key, or of the empty slot where it belongs. Needs cap > count. */
static size_t strset_slot(const nnmem__strset_t *s, const char *key,
                          size_t len) {
  size_t mask = s->cap - 1;
  size_t i = (size_t)fnv1a(key, len) & mask;
  while (s->keys[i] && (s->lens[i] != len || memcmp(s->keys[i], key, len) != 0))
    i = (i + 1) & mask;
  return i;
}

static nnmem_status_t strset_rehash(nnmem__strset_t *s, size_t ncap) {
  nnmem__strset_t n = {0};
  n.cap = ncap;
  n.keys = calloc(ncap, sizeof *n.keys);
  n.lens = malloc(ncap * sizeof *n.lens);
  n.values = malloc(ncap * sizeof *n.values);
  if (!n.keys || !n.lens || !n.values) {
    nnmem__strset_free(&n);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < s->cap; i++) {
    if (!s->keys[i]) continue;
    size_t j = strset_slot(&n, s->keys[i], s->lens[i]);
    n.keys[j] = s->keys[i];
    n.lens[j] = s->lens[i];
    n.values[j] = s->values[i];
  }
  n.count = s->count;
  nnmem__strset_free(s);
  *s = n;
  return NNMEM_OK;
}

nnmem_status_t nnmem__strset_reserve(nnmem__strset_t *s, size_t n) {
  size_t cap = s->cap ? s->cap : 64;
  while (cap / 2 < n) {
    if (cap > SIZE_MAX / 4) return NNMEM_ERR_OVERFLOW;
    cap *= 2;
  }
  return cap == s->cap ? NNMEM_OK : strset_rehash(s, cap);
}

nnmem_status_t nnmem__strset_insert(nnmem__strset_t *s, const char *key,
                                    size_t len, size_t value,
                                    size_t *existing) {
  if ((s->count + 1) * 2 > s->cap) {
    size_t ncap = s->cap ? s->cap * 2 : 64;
    if (ncap < s->cap) return NNMEM_ERR_OVERFLOW;
    nnmem_status_t st = strset_rehash(s, ncap);
    if (st != NNMEM_OK) return st;
  }
  size_t i = strset_slot(s, key, len);
  if (s->keys[i]) {
    if (existing) *existing = s->values[i];
    return NNMEM_ERR_DUPLICATE;
  }
  s->keys[i] = key;
  s->lens[i] = len;
  s->values[i] = value;
  s->count++;
  return NNMEM_OK;
}

/* text.h - internal text helpers for the file formats (never installed):
 * a growable string builder, UTF-8 validation, line / column lookup and a
 * string hash set. JSON is written by common/json_write.h only. Used by
 * src/import and src/export. */
#ifndef NNMEM_TEXT_H
#define NNMEM_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

/* ---- string builder ------------------------------------------------------
 * Invariant: when `data` is not NULL, data[len] == '\0' and len < cap.
 * After an allocation failure `failed` is set and later appends are no-ops,
 * so a writer can append everything and check once at the end. */
typedef struct nnmem__text {
  char *data;
  size_t len;
  size_t cap;
  int failed;
} nnmem__text_t;

void nnmem__text_init(nnmem__text_t *t);
void nnmem__text_free(nnmem__text_t *t);
void nnmem__text_append(nnmem__text_t *t, const char *s, size_t n);
void nnmem__text_puts(nnmem__text_t *t, const char *s);
void nnmem__text_putc(nnmem__text_t *t, char c);
void nnmem__text_u64(nnmem__text_t *t, uint64_t v);
void nnmem__text_printf(nnmem__text_t *t, const char *fmt, ...)
    NNMEM__PRINTF(2, 3);
/* NNMEM_OK, or NNMEM_ERR_NOMEM when an append failed. */
nnmem_status_t nnmem__text_status(const nnmem__text_t *t);

/* ---- UTF-8 and positions --------------------------------------------------
 * Length (1..4) of the well-formed UTF-8 sequence at p[0, avail), or 0 when
 * the bytes there are not one. */
size_t nnmem__utf8_seq(const unsigned char *p, size_t avail);

/* Checks that data[0, len) is valid UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF) without NUL bytes. Returns 0 when it is;
 * otherwise 1 (invalid UTF-8) or 2 (NUL byte) with the byte's position in
 * *bad_pos. O(len). */
int nnmem__utf8_check(const char *data, size_t len, size_t *bad_pos);

/* 1-based line and column of byte `pos` in data[0, len). O(pos). */
void nnmem__text_position(const char *data, size_t len, size_t pos,
                          size_t *line, size_t *col);

/* ---- string hash set -------------------------------------------------------
 * Open addressing (linear probing, load <= 1/2) over keys (pointer, length)
 * that the caller keeps alive; each key maps to a size_t value. */
typedef struct nnmem__strset {
  const char **keys;
  size_t *lens;
  size_t *values;
  size_t cap; /* power of two, or 0 */
  size_t count;
} nnmem__strset_t;

void nnmem__strset_init(nnmem__strset_t *s);
void nnmem__strset_free(nnmem__strset_t *s);
/* Makes room for `n` keys without rehashing. */
nnmem_status_t nnmem__strset_reserve(nnmem__strset_t *s, size_t n);
/* Inserts key -> value. When the key is present, stores nothing, sets
 * *existing to its value and returns NNMEM_ERR_DUPLICATE. */
nnmem_status_t nnmem__strset_insert(nnmem__strset_t *s, const char *key,
                                    size_t len, size_t value, size_t *existing);

#endif /* NNMEM_TEXT_H */

/* json_write.h - the one JSON writer of nnmem (internal, never installed).
 *
 * Every JSON the library or the CLI prints goes through this writer, so all
 * outputs share one escaper and one style:
 *   - integers are printed exactly from uint64_t / int64_t (never through a
 *     double: 2^53 + 1 and 2^64 - 1 come out digit for digit);
 *   - strings are escaped per RFC 8259; bytes that are not valid UTF-8 become
 *     U+FFFD so the output is always valid JSON;
 *   - pretty (2-space indentation, one member per line) or compact (no
 *     whitespace at all), chosen once per writer.
 *
 * Usage:
 *   nnmem__text_t t; nnmem__text_init(&t);
 *   nnmem__jw_t w; nnmem__jw_init(&w, &t, NNMEM__JW_PRETTY);
 *   nnmem__jw_object(&w);
 *     nnmem__jw_key(&w, "peak"); nnmem__jw_u64(&w, 42);
 *     nnmem__jw_key(&w, "names"); nnmem__jw_array(&w);
 *       nnmem__jw_string(&w, "a"); nnmem__jw_end(&w);
 *   nnmem__jw_end(&w);
 *   st = nnmem__jw_finish(&w);   // NNMEM_OK: t.data holds the document
 *
 * Misuse (a value where a key is due, end without an open container, too
 * deep nesting, an unbalanced document at finish) sets an error that
 * nnmem__jw_finish reports as NNMEM_ERR_STATE; later calls are no-ops, so a
 * writer can emit everything and check once. Not thread-safe (one writer per
 * thread). Every call is O(length of what it appends). */
#ifndef NNMEM_JSON_WRITE_H
#define NNMEM_JSON_WRITE_H

#include <stdint.h>

#include "common/text.h"

#define NNMEM__JW_MAX_DEPTH 64

typedef enum nnmem__jw_style {
  NNMEM__JW_PRETTY = 0, /* 2-space indentation, newline after the document */
  NNMEM__JW_COMPACT = 1 /* no whitespace, newline after the document */
} nnmem__jw_style_t;

typedef struct nnmem__jw {
  nnmem__text_t *out;
  nnmem__jw_style_t style;
  int depth;     /* open containers */
  int misuse;    /* set on the first misuse; later calls do nothing */
  int after_key; /* a key was written, its value is due */
  int done;      /* a complete top-level value was written */
  /* Per open container: 'o' object / 'a' array, and whether it has members. */
  char kind[NNMEM__JW_MAX_DEPTH];
  char has_members[NNMEM__JW_MAX_DEPTH];
} nnmem__jw_t;

void nnmem__jw_init(nnmem__jw_t *w, nnmem__text_t *out,
                    nnmem__jw_style_t style);

/* Containers. */
void nnmem__jw_object(nnmem__jw_t *w);
void nnmem__jw_array(nnmem__jw_t *w);
void nnmem__jw_end(nnmem__jw_t *w); /* closes the innermost container */

/* The key of the next object member (escaped like a string). */
void nnmem__jw_key(nnmem__jw_t *w, const char *key);

/* Values. */
void nnmem__jw_string(nnmem__jw_t *w, const char *s); /* NULL -> null */
void nnmem__jw_string_n(nnmem__jw_t *w, const char *s, size_t len); /* ditto */
void nnmem__jw_u64(nnmem__jw_t *w, uint64_t v);
void nnmem__jw_i64(nnmem__jw_t *w, int64_t v);
/* A finite double in the fewest significant digits (15..17) that read back
 * as the same double; NaN and infinities, which JSON cannot hold, are
 * written as null. */
void nnmem__jw_double(nnmem__jw_t *w, double v);
void nnmem__jw_bool(nnmem__jw_t *w, int v);
void nnmem__jw_null(nnmem__jw_t *w);
/* Appends already-formatted JSON text as one value (the caller vouches for
 * it; used to embed a document produced by this same writer). */
void nnmem__jw_raw(nnmem__jw_t *w, const char *json, size_t len);

/* Key + value shorthands. */
void nnmem__jw_kv_string(nnmem__jw_t *w, const char *key, const char *s);
void nnmem__jw_kv_u64(nnmem__jw_t *w, const char *key, uint64_t v);
void nnmem__jw_kv_i64(nnmem__jw_t *w, const char *key, int64_t v);
void nnmem__jw_kv_double(nnmem__jw_t *w, const char *key, double v);
void nnmem__jw_kv_bool(nnmem__jw_t *w, const char *key, int v);

/* NNMEM_OK when one complete, balanced document was written (a trailing
 * newline is appended); NNMEM_ERR_STATE on misuse (or a second call: the
 * writer is done); NNMEM_ERR_NOMEM when an append failed. */
nnmem_status_t nnmem__jw_finish(nnmem__jw_t *w);

/* Appends `s` (len bytes) as a JSON string literal, quotes included. The
 * writer's escaper, for the few places that build JSON text piecewise. */
void nnmem__json_escape(nnmem__text_t *t, const char *s, size_t len);

#endif /* NNMEM_JSON_WRITE_H */

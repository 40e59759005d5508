/* json_write.c - the one JSON writer (see json_write.h).
 *
 * State: a stack of open containers (kind + "has members"), a flag for "a key
 * was written, its value is due", and a misuse flag. Separators are emitted
 * before each member: "," when the container already has one, then (pretty
 * style) a newline and 2 spaces per open container.
 *
 * Invariants (checked by the functions themselves, reported at finish):
 *   - inside an object, key and value alternate (after_key toggles);
 *   - inside an array or at the top level, no key is written;
 *   - at most one top-level value; depth <= NNMEM__JW_MAX_DEPTH.
 *
 * Integers use a digit loop on uint64_t (exact for every value); doubles use
 * the shortest of "%.15g" / "%.16g" / "%.17g" that reads back as the same
 * binary64 (17 significant digits always do), with '.' as the separator
 * whatever the C locale says.
 * Complexity: O(length appended) per call. Thread-safety: one writer per
 * thread; no shared state. */
#include "common/json_write.h"

#include <ctype.h>
#include <float.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

void nnmem__jw_init(nnmem__jw_t *w, nnmem__text_t *out,
                    nnmem__jw_style_t style) {
  memset(w, 0, sizeof *w);
  w->out = out;
  w->style = style;
}

static void newline_indent(nnmem__jw_t *w, int depth) {
  if (w->style != NNMEM__JW_PRETTY) return;
  nnmem__text_putc(w->out, '\n');
  for (int i = 0; i < depth; i++)
    nnmem__text_append(w->out, "  ", 2);
}

/* Before any value: checks the grammar and writes the separator. Returns 0
 * when the value may be written. */
static int begin_value(nnmem__jw_t *w) {
  if (w->misuse) return -1;
  if (w->depth == 0) {
    if (w->done) goto misuse;
    return 0;
  }
  int top = w->depth - 1;
  if (w->kind[top] == 'o') {
    if (!w->after_key) goto misuse;
    w->after_key = 0;
    return 0;
  }
  if (w->has_members[top]) nnmem__text_putc(w->out, ',');
  w->has_members[top] = 1;
  newline_indent(w, w->depth);
  return 0;
misuse:
  w->misuse = 1;
  return -1;
}

/* After a complete value at depth 0. */
static void end_value(nnmem__jw_t *w) {
  if (w->depth == 0) w->done = 1;
}

static void open_container(nnmem__jw_t *w, char kind) {
  if (begin_value(w)) return;
  if (w->depth >= NNMEM__JW_MAX_DEPTH) {
    w->misuse = 1;
    return;
  }
  nnmem__text_putc(w->out, kind == 'o' ? '{' : '[');
  w->kind[w->depth] = kind;
  w->has_members[w->depth] = 0;
  w->depth++;
}

void nnmem__jw_object(nnmem__jw_t *w) {
  open_container(w, 'o');
}
void nnmem__jw_array(nnmem__jw_t *w) {
  open_container(w, 'a');
}

void nnmem__jw_end(nnmem__jw_t *w) {
  if (w->misuse) return;
  if (w->depth == 0 || w->after_key) {
    w->misuse = 1;
    return;
  }
  int top = --w->depth;
  if (w->has_members[top]) newline_indent(w, w->depth);
  nnmem__text_putc(w->out, w->kind[top] == 'o' ? '}' : ']');
  end_value(w);
}

void nnmem__jw_key(nnmem__jw_t *w, const char *key) {
  if (w->misuse) return;
  int top = w->depth - 1;
  if (w->depth == 0 || w->kind[top] != 'o' || w->after_key || !key) {
    w->misuse = 1;
    return;
  }
  if (w->has_members[top]) nnmem__text_putc(w->out, ',');
  w->has_members[top] = 1;
  newline_indent(w, w->depth);
  nnmem__json_escape(w->out, key, strlen(key));
  nnmem__text_append(w->out, w->style == NNMEM__JW_PRETTY ? ": " : ":",
                     w->style == NNMEM__JW_PRETTY ? 2 : 1);
  w->after_key = 1;
}

void nnmem__jw_string_n(nnmem__jw_t *w, const char *s, size_t len) {
  if (!s) {
    nnmem__jw_null(w);
    return;
  }
  if (begin_value(w)) return;
  nnmem__json_escape(w->out, s, len);
  end_value(w);
}

void nnmem__jw_string(nnmem__jw_t *w, const char *s) {
  if (!s) {
    nnmem__jw_null(w);
    return;
  }
  nnmem__jw_string_n(w, s, strlen(s));
}

void nnmem__jw_u64(nnmem__jw_t *w, uint64_t v) {
  if (begin_value(w)) return;
  nnmem__text_u64(w->out, v);
  end_value(w);
}

void nnmem__jw_i64(nnmem__jw_t *w, int64_t v) {
  if (begin_value(w)) return;
  if (v < 0) {
    nnmem__text_putc(w->out, '-');
    nnmem__text_u64(w->out, (uint64_t)0 - (uint64_t)v);
  } else {
    nnmem__text_u64(w->out, (uint64_t)v);
  }
  end_value(w);
}

/* The shortest of "%.15g", "%.16g", "%.17g" that reads back as `v` (17
 * digits always do), so 0.1 prints as 0.1, not 0.10000000000000001. The
 * decimal separator of a locale that uses another one (",") becomes '.'. */
void nnmem__jw_double(nnmem__jw_t *w, double v) {
  if (!(v == v) || v > DBL_MAX || v < -DBL_MAX) {
    nnmem__jw_null(w);
    return;
  }
  if (begin_value(w)) return;
  char buf[40];
  int n = 0;
  for (int digits = 15; digits <= 17; digits++) {
    n = snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (digits == 17 || strtod(buf, NULL) == v) break;
  }
  for (int i = 0; i < n; i++) /* locale-proof: only digits, sign, e, '.' */
    if (!isdigit((unsigned char)buf[i]) && !strchr("+-eE", buf[i]))
      buf[i] = '.';
  nnmem__text_append(w->out, buf, n > 0 ? (size_t)n : 0);
  /* "1e+20" and "3" are valid JSON numbers already; nothing to add. */
  end_value(w);
}

void nnmem__jw_bool(nnmem__jw_t *w, int v) {
  if (begin_value(w)) return;
  nnmem__text_puts(w->out, v ? "true" : "false");
  end_value(w);
}

void nnmem__jw_null(nnmem__jw_t *w) {
  if (begin_value(w)) return;
  nnmem__text_puts(w->out, "null");
  end_value(w);
}

void nnmem__jw_raw(nnmem__jw_t *w, const char *json, size_t len) {
  if (begin_value(w)) return;
  nnmem__text_append(w->out, json, len);
  end_value(w);
}

void nnmem__jw_kv_string(nnmem__jw_t *w, const char *key, const char *s) {
  nnmem__jw_key(w, key);
  nnmem__jw_string(w, s);
}
void nnmem__jw_kv_u64(nnmem__jw_t *w, const char *key, uint64_t v) {
  nnmem__jw_key(w, key);
  nnmem__jw_u64(w, v);
}
void nnmem__jw_kv_i64(nnmem__jw_t *w, const char *key, int64_t v) {
  nnmem__jw_key(w, key);
  nnmem__jw_i64(w, v);
}
void nnmem__jw_kv_double(nnmem__jw_t *w, const char *key, double v) {
  nnmem__jw_key(w, key);
  nnmem__jw_double(w, v);
}
void nnmem__jw_kv_bool(nnmem__jw_t *w, const char *key, int v) {
  nnmem__jw_key(w, key);
  nnmem__jw_bool(w, v);
}

nnmem_status_t nnmem__jw_finish(nnmem__jw_t *w) {
  if (w->misuse || w->depth != 0 || !w->done) return NNMEM_ERR_STATE;
  nnmem__text_putc(w->out, '\n');
  w->misuse = 1; /* the document is complete: nothing more may follow */
  return nnmem__text_status(w->out);
}

void nnmem__json_escape(nnmem__text_t *t, const char *s, size_t len) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  nnmem__text_putc(t, '"');
  size_t run = 0; /* start of the bytes not yet appended */
  size_t i = 0;
  while (i < len) {
    unsigned char c = p[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      i++;
      continue;
    }
    if (c >= 0x80) {
      size_t n = nnmem__utf8_seq(p + i, len - i);
      if (n) {
        i += n;
        continue;
      }
    }
    nnmem__text_append(t, s + run, i - run);
    switch (c) {
      case '"':
        nnmem__text_puts(t, "\\\"");
        break;
      case '\\':
        nnmem__text_puts(t, "\\\\");
        break;
      case '\n':
        nnmem__text_puts(t, "\\n");
        break;
      case '\r':
        nnmem__text_puts(t, "\\r");
        break;
      case '\t':
        nnmem__text_puts(t, "\\t");
        break;
      default:
        if (c >= 0x80) { /* not UTF-8: U+FFFD */
          nnmem__text_puts(t, "\\ufffd");
        } else {
          char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
          nnmem__text_append(t, esc, sizeof esc);
        }
    }
    i++;
    run = i;
  }
  nnmem__text_append(t, s + run, len - run);
  nnmem__text_putc(t, '"');
}

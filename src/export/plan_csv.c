/* plan_csv.c - writes plans as MiniMalloc CSV files.
 *
 * nnmem_csv_write_solution (a parsed file plus offsets):
 *   1. for the header and every row, split the kept text into cells again
 *      and copy each cell's raw bytes (spaces and quotes included), except
 *      the `offset` cell of a data row, which gets the new offset;
 *   2. when the file had no `offset` column, append one (",offset" to the
 *      header, ",<offset>" to each row), so a legacy file stays legacy and
 *      extra columns survive in their order;
 *   3. write the text atomically (nnmem_file_write_atomic).
 * nnmem_problem_write_csv (any problem):
 *   1. write `id,lower,upper,size,alignment[,gaps][,parent,parent_offset]
 *      [,offset]`, one row per buffer (gaps only when some buffer has one,
 *      the parent pair only when some buffer has a parent);
 *      the id is the buffer's id (quoted when it holds a comma, quote,
 *      newline or edge spaces) or its index when it has none.
 *
 * Lines end with "\n". Complexity: O(output size).
 * Thread-safety: each call is independent. */
#include <string.h>

#include "common/text.h"
#include "import/csv_internal.h"

/* Hands the finished text to the caller (*out, *len_out) or reports it. */
static nnmem_status_t take_text(nnmem__text_t *t, const char *what, char **out,
                                size_t *len_out, nnmem_diag_t *diag) {
  nnmem_status_t st = nnmem__text_status(t);
  if (st == NNMEM_OK && !t->data) { /* empty text: still a string */
    nnmem__text_putc(t, '\0');
    t->len = 0;
    st = nnmem__text_status(t);
  }
  if (st != NNMEM_OK) {
    nnmem__text_free(t);
    return nnmem__diag(diag, st, "%s: out of memory", what);
  }
  *out = t->data;
  if (len_out) *len_out = t->len;
  return NNMEM_OK;
}

/* Writes formatted text to `path` atomically. */
static nnmem_status_t write_text(nnmem_status_t st, char *text, size_t len,
                                 const char *path, nnmem_diag_t *diag) {
  if (st == NNMEM_OK) st = nnmem_file_write_atomic(path, text, len, diag);
  free(text);
  return st;
}

/* nnmem_csv_format_solution with `path`, the name messages give it. */
static nnmem_status_t format_solution(const nnmem_csv_t *csv,
                                      const uint64_t *offsets, const char *path,
                                      char **out, size_t *len_out,
                                      nnmem_diag_t *diag) {
  *out = NULL;
  if (!offsets) offsets = csv->offsets;
  if (!offsets && csv->n_rows)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "%s: no offsets given and the input has none", path);
  nnmem__csv_cell_t *cells = malloc(csv->n_cols * sizeof *cells);
  if (!cells)
    return nnmem__diag(diag, NNMEM_ERR_NOMEM, "%s: out of memory", path);
  nnmem__text_t t;
  nnmem__text_init(&t);
  for (size_t row = 0; row <= csv->n_rows; row++) {
    nnmem__csv_row_cells(csv, row, cells);
    for (size_t c = 0; c < csv->n_cols; c++) {
      if (c) nnmem__text_putc(&t, ',');
      if (row > 0 && c == csv->offset_col)
        nnmem__text_u64(&t, offsets[row - 1]);
      else
        nnmem__text_append(&t, csv->text + cells[c].raw_begin,
                           cells[c].raw_end - cells[c].raw_begin);
    }
    if (csv->offset_col == SIZE_MAX) {
      nnmem__text_putc(&t, ',');
      if (row == 0)
        nnmem__text_puts(&t, "offset");
      else
        nnmem__text_u64(&t, offsets[row - 1]);
    }
    nnmem__text_putc(&t, '\n');
  }
  free(cells);
  return take_text(&t, path, out, len_out, diag);
}

nnmem_status_t nnmem_csv_format_solution(const nnmem_csv_t *csv,
                                         const uint64_t *offsets, char **out,
                                         size_t *len_out, nnmem_diag_t *diag) {
  if (!csv || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_csv_format_solution: NULL argument");
  return format_solution(csv, offsets, "CSV solution", out, len_out, diag);
}

nnmem_status_t nnmem_csv_write_solution(const nnmem_csv_t *csv,
                                        const uint64_t *offsets,
                                        const char *path, nnmem_diag_t *diag) {
  if (!csv || !path)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_csv_write_solution: NULL argument");
  char *text = NULL;
  size_t len = 0;
  nnmem_status_t st = format_solution(csv, offsets, path, &text, &len, diag);
  return write_text(st, text, len, path, diag);
}

/* Appends a CSV cell, quoting it when it would not read back as is. */
static void put_cell(nnmem__text_t *t, const char *s) {
  size_t n = strlen(s);
  int quote = n && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' ||
                    s[n - 1] == '\t' || s[0] == '"');
  if (strpbrk(s, ",\"\r\n")) quote = 1;
  if (!quote) {
    nnmem__text_append(t, s, n);
    return;
  }
  nnmem__text_putc(t, '"');
  for (; *s; s++) {
    if (*s == '"') nnmem__text_putc(t, '"');
    nnmem__text_putc(t, *s);
  }
  nnmem__text_putc(t, '"');
}

/* ",lo-hi lo-hi" (MiniMalloc's gaps cell, half-open like lower/upper). */
static void put_gaps(nnmem__text_t *t, const nnmem_problem_t *p, size_t i) {
  const nnmem_interval_t *g;
  size_t ng = nnmem_problem_gaps(p, i, &g);
  nnmem__text_putc(t, ',');
  for (size_t k = 0; k < ng; k++)
    nnmem__text_printf(t, "%s%llu-%llu", k ? " " : "",
                       (unsigned long long)g[k].first,
                       (unsigned long long)g[k].last);
}

/* ",parent-id,rel" or ",," for a root. */
static void put_parent(nnmem__text_t *t, const nnmem_problem_t *p, size_t i) {
  size_t q;
  uint64_t rel;
  nnmem__text_putc(t, ',');
  if (nnmem_problem_parent(p, i, &q, &rel) != NNMEM_OK) {
    nnmem__text_putc(t, ',');
    return;
  }
  const char *id = nnmem_problem_id(p, q);
  if (id && *id)
    put_cell(t, id);
  else
    nnmem__text_u64(t, q);
  nnmem__text_printf(t, ",%llu", (unsigned long long)rel);
}

nnmem_status_t nnmem_problem_format_csv(const nnmem_problem_t *p,
                                        const uint64_t *offsets, char **out,
                                        size_t *len_out, nnmem_diag_t *diag) {
  if (!p || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_problem_format_csv: NULL argument");
  *out = NULL;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t n = nnmem_problem_count(p);
  nnmem__text_t t;
  nnmem__text_init(&t);
  int gaps = nnmem_problem_gapped_count(p) > 0;
  int kids = nnmem_problem_child_count(p) > 0;
  nnmem__text_puts(&t, "id,lower,upper,size,alignment");
  if (gaps) nnmem__text_puts(&t, ",gaps");
  if (kids) nnmem__text_puts(&t, ",parent,parent_offset");
  nnmem__text_puts(&t, offsets ? ",offset\n" : "\n");
  for (size_t i = 0; i < n; i++) {
    const char *id = nnmem_problem_id(p, i);
    if (id && *id)
      put_cell(&t, id);
    else
      nnmem__text_u64(&t, i);
    nnmem__text_printf(
        &t, ",%llu,%llu,%llu,%llu", (unsigned long long)b[i].first,
        (unsigned long long)b[i].last, (unsigned long long)b[i].size,
        (unsigned long long)(b[i].align ? b[i].align : 1));
    if (gaps) put_gaps(&t, p, i);
    if (kids) put_parent(&t, p, i);
    if (offsets) {
      nnmem__text_putc(&t, ',');
      nnmem__text_u64(&t, offsets[i]);
    }
    nnmem__text_putc(&t, '\n');
  }
  return take_text(&t, "problem CSV", out, len_out, diag);
}

nnmem_status_t nnmem_problem_write_csv(const nnmem_problem_t *p,
                                       const uint64_t *offsets,
                                       const char *path, nnmem_diag_t *diag) {
  if (!p || !path)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_problem_write_csv: NULL argument");
  char *text = NULL;
  size_t len = 0;
  nnmem_status_t st = nnmem_problem_format_csv(p, offsets, &text, &len, diag);
  return write_text(st, text, len, path, diag);
}

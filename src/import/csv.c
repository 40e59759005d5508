/* csv.c - reader for MiniMalloc-format CSV problems.
 *
 * Format: a header row naming the columns, then one buffer per row.
 *   modern  id,lower,upper,size      lifetime [lower, upper)  (half-open)
 *   legacy  buffer,start,end,size    lifetime [start, end]    (inclusive)
 * Columns may come in any order; `alignment` and `offset` are optional;
 * any other column is kept verbatim for nnmem_csv_write_solution.
 * Optional `gaps` (MiniMalloc's): space-separated gaps `lo-hi`, each the
 * steps [lo, hi) in which the buffer holds nothing ([lo, hi] in a legacy
 * file, like its lifetime); MiniMalloc's windowed form `lo-hi@a:b` is
 * refused (not supported). Optional nnmem extension `parent` and
 * `parent_offset`: the id of the buffer this one lies inside and the byte
 * offset there (empty cells: a root); see nnmem/problem.h for the rules. Cells
 * may be quoted RFC 4180 style ("a,b", "say ""hi"""). CRLF line ends, a UTF-8
 * BOM, a last line without newline and blank lines at the end are accepted.
 *
 * Algorithm (one pass over the bytes after step 1):
 *   1. validate the whole file as UTF-8 without NUL bytes (the first bad
 *      byte is reported with its line and column), drop a BOM, reject an
 *      empty file, count newlines to size the row arrays once;
 *   2. split the header into cells and map names to roles (exact match
 *      after trimming spaces); pick the legacy roles when none of
 *      id/lower/upper is present and one of buffer/start/end is;
 *   3. for every row: split into cells (no copies; cells are spans of the
 *      text), check the count, parse the numbers with overflow checks,
 *      copy the id into one preallocated arena, add the buffer to the
 *      problem (room reserved for every row; its id index finds a
 *      duplicate, and the message names both lines) and the size to a
 *      checked running sum.
 *
 * Invariants of a parsed nnmem_csv_t: nnmem_problem_count == n_rows, row r
 * (1-based) is buffer r - 1, every row has exactly n_cols cells, ids are
 * unique, offsets (when present) has n_rows entries.
 * Complexity: O(file size) time, expected (hash set); O(rows) memory besides
 * the copy of the text. Thread-safety: each call is independent. */
#include <inttypes.h>
#include <string.h>

#include "common/text.h"
#include "common/util.h"
#include "import/csv_internal.h"
#include "plan/problem_internal.h"

enum {
  COL_ID,
  COL_LOWER,
  COL_UPPER,
  COL_SIZE,
  COL_ALIGN,
  COL_OFFSET,
  COL_GAPS,
  COL_PARENT,
  COL_PARENT_OFFSET,
  COL_N
};
#define REQUIRED_COLS 4
static const char *const modern_names[COL_N] = {
    "id",     "lower", "upper",  "size",         "alignment",
    "offset", "gaps",  "parent", "parent_offset"};
static const char *const legacy_names[COL_N] = {
    "buffer", "start", "end",    "size",         "alignment",
    "offset", "gaps",  "parent", "parent_offset"};

/* Cursor over the text; `line` is the line of `pos`. */
typedef struct reader {
  const char *text;
  size_t len;
  size_t pos;
  size_t line;
  const char *name;
  nnmem_diag_t *diag;
} reader_t;

static int is_blank(char c) {
  return c == ' ' || c == '\t';
}

/* Does a cell end at i (comma, LF, CRLF, or a CR that ends the file)? */
static int at_delim(const reader_t *r, size_t i) {
  if (i >= r->len) return 1;
  char c = r->text[i];
  if (c == ',' || c == '\n') return 1;
  return c == '\r' && (i + 1 == r->len || r->text[i + 1] == '\n');
}

/* Scans a quoted cell starting at the opening quote at i. */
static nnmem_status_t read_quoted(reader_t *r, size_t i, nnmem__csv_cell_t *c,
                                  size_t *end) {
  size_t line0 = r->line;
  c->val_begin = ++i;
  for (;;) {
    if (i >= r->len)
      return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                         "%s:%zu: unterminated quoted field", r->name, line0);
    if (r->text[i] == '"') {
      if (i + 1 < r->len && r->text[i + 1] == '"') {
        c->escaped = 1;
        i += 2;
        continue;
      }
      break;
    }
    if (r->text[i] == '\n') r->line++;
    i++;
  }
  c->val_end = i++;
  while (i < r->len && is_blank(r->text[i]))
    i++;
  if (!at_delim(r, i))
    return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                       "%s:%zu: unexpected text after a closing quote", r->name,
                       r->line);
  *end = i;
  return NNMEM_OK;
}

/* Reads the cell at r->pos and the delimiter after it. *end_of_row is set
 * when the delimiter ended the row (newline or end of file). */
static nnmem_status_t read_cell(reader_t *r, nnmem__csv_cell_t *c,
                                int *end_of_row) {
  size_t i = r->pos;
  c->raw_begin = i;
  c->escaped = 0;
  while (i < r->len && is_blank(r->text[i]))
    i++;
  if (i < r->len && r->text[i] == '"') {
    nnmem_status_t st = read_quoted(r, i, c, &i);
    if (st != NNMEM_OK) return st;
  } else {
    c->val_begin = i;
    while (!at_delim(r, i))
      i++;
    size_t e = i;
    while (e > c->val_begin && is_blank(r->text[e - 1]))
      e--;
    c->val_end = e;
  }
  c->raw_end = i;
  if (i < r->len && r->text[i] == ',') {
    r->pos = i + 1;
    *end_of_row = 0;
    return NNMEM_OK;
  }
  if (i < r->len && r->text[i] == '\r') i++;
  if (i < r->len && r->text[i] == '\n') {
    i++;
    r->line++;
  }
  r->pos = i;
  *end_of_row = 1;
  return NNMEM_OK;
}

/* Reads one row; stores at most `max` cells, counts all of them. */
static nnmem_status_t read_row(reader_t *r, nnmem__csv_cell_t *cells,
                               size_t max, size_t *count) {
  nnmem__csv_cell_t extra;
  size_t k = 0;
  int end = 0;
  while (!end) {
    nnmem_status_t st = read_cell(r, k < max ? &cells[k] : &extra, &end);
    if (st != NNMEM_OK) return st;
    k++;
  }
  *count = k;
  return NNMEM_OK;
}

void nnmem__csv_row_cells(const nnmem_csv_t *csv, size_t row,
                          nnmem__csv_cell_t *cells) {
  reader_t r = {csv->text, csv->len, csv->row_start[row], 1, "", NULL};
  size_t count;
  (void)read_row(&r, cells, csv->n_cols, &count);
}

/* ---- parse state ----------------------------------------------------------
 */
typedef struct parse {
  reader_t r;
  nnmem_csv_t *csv;
  size_t col[COL_N]; /* column of each role, SIZE_MAX when absent */
  const char *const *names;
  nnmem__csv_cell_t *header; /* the header's n_cols cells */
  nnmem__csv_cell_t *cells;  /* the current row's cells, n_cols + 1 */
  size_t ids_len;
  size_t max_rows; /* newlines + 1: no more rows than that */
  uint64_t size_sum;
  size_t *parent_cell; /* per row: (text offset of the parent id + 1) * 2
                          + 1 when it holds "" escapes; 0 = no parent */
  size_t *parent_end;  /* per row: where that id ends */
  uint64_t *parent_rel;
} parse_t;

static int only_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!is_blank(s[i]) && s[i] != '\r' && s[i] != '\n') return 0;
  return 1;
}

static int cell_is(const parse_t *ps, const nnmem__csv_cell_t *c,
                   const char *name) {
  size_t n = c->val_end - c->val_begin;
  return strlen(name) == n && memcmp(ps->r.text + c->val_begin, name, n) == 0;
}

/* Finds the role of each header cell. */
static nnmem_status_t map_header(parse_t *ps, size_t n) {
  int modern = 0, legacy = 0;
  for (size_t i = 0; i < n; i++)
    for (int k = COL_ID; k <= COL_UPPER; k++) {
      modern |= cell_is(ps, &ps->header[i], modern_names[k]);
      legacy |= cell_is(ps, &ps->header[i], legacy_names[k]);
    }
  ps->csv->legacy = !modern && legacy;
  ps->names = ps->csv->legacy ? legacy_names : modern_names;
  for (int k = 0; k < COL_N; k++)
    ps->col[k] = SIZE_MAX;
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < COL_N; k++) {
      if (!cell_is(ps, &ps->header[i], ps->names[k])) continue;
      if (ps->col[k] != SIZE_MAX)
        return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                           "%s:1: column '%s' appears twice in the header "
                           "(columns %zu and %zu)",
                           ps->r.name, ps->names[k], ps->col[k] + 1, i + 1);
      ps->col[k] = i;
    }
  for (int k = 0; k < REQUIRED_COLS; k++)
    if (ps->col[k] == SIZE_MAX)
      return nnmem__diag(
          ps->r.diag, NNMEM_ERR_PARSE,
          "%s:1: header has no '%s' column (expected %s,%s,%s,%s)", ps->r.name,
          ps->names[k], ps->names[0], ps->names[1], ps->names[2], ps->names[3]);
  return NNMEM_OK;
}

static nnmem_status_t read_header(parse_t *ps) {
  nnmem_csv_t *csv = ps->csv;
  size_t cap = 16, n = 0;
  for (;;) {
    ps->header = malloc(cap * sizeof *ps->header);
    if (!ps->header) return NNMEM_ERR_NOMEM;
    reader_t save = ps->r;
    nnmem_status_t st = read_row(&ps->r, ps->header, cap, &n);
    if (st != NNMEM_OK) return st;
    if (n <= cap) break;
    free(ps->header); /* more columns than cells: read the header again */
    ps->header = NULL;
    ps->r = save;
    cap = n;
  }
  csv->n_cols = n;
  ps->cells = malloc((n + 1) * sizeof *ps->cells);
  if (!ps->cells) return NNMEM_ERR_NOMEM;
  nnmem_status_t st = map_header(ps, n);
  if (st != NNMEM_OK) return st;
  csv->offset_col = ps->col[COL_OFFSET];
  return NNMEM_OK;
}

/* Parses the cell of role `k` as a non-negative decimal integer. */
static nnmem_status_t cell_u64(parse_t *ps, size_t line, int k, uint64_t *out) {
  const nnmem__csv_cell_t *c = &ps->cells[ps->col[k]];
  const char *s = ps->r.text + c->val_begin;
  size_t n = c->val_end - c->val_begin, i = 0;
  const char *name = ps->names[k], *file = ps->r.name;
  int shown = n > 40 ? 40 : (int)n;
  if (n == 0)
    return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                       "%s:%zu: empty value in column '%s'", file, line, name);
  uint64_t v = 0;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10)
      return nnmem__diag(ps->r.diag, NNMEM_ERR_OVERFLOW,
                         "%s:%zu: value '%.*s' in column '%s' does not fit "
                         "in 64 bits",
                         file, line, shown, s, name);
    v = v * 10 + d;
  }
  *out = v;
  if (i == n) return NNMEM_OK;
  const char *why = "is not a non-negative integer";
  if (s[0] == '-' && n > 1)
    why = "is negative";
  else if (i > 0 && s[i] == '.')
    why = "is fractional (expected an integer)";
  return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                     "%s:%zu: value '%.*s' in column '%s' %s", file, line,
                     shown, s, name, why);
}

/* Copies the id cell into the arena (parse_values checks it is new). */
static nnmem_status_t take_id(parse_t *ps, size_t row, const char **id) {
  nnmem_csv_t *csv = ps->csv;
  const nnmem__csv_cell_t *c = &ps->cells[ps->col[COL_ID]];
  char *dst = csv->ids + ps->ids_len;
  size_t n = 0;
  for (size_t i = c->val_begin; i < c->val_end; i++) {
    dst[n++] = ps->r.text[i];
    if (c->escaped && ps->r.text[i] == '"') i++; /* "" -> " */
  }
  dst[n] = '\0';
  size_t line = csv->row_line[row];
  if (n == 0)
    return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                       "%s:%zu: empty value in column '%s'", ps->r.name, line,
                       ps->names[COL_ID]);
  ps->ids_len += n + 1;
  *id = dst;
  return NNMEM_OK;
}

/* Reads the lifetime columns into [first, last). */
static nnmem_status_t row_lifetime(parse_t *ps, size_t line, uint64_t *first,
                                   uint64_t *last) {
  nnmem_status_t st = cell_u64(ps, line, COL_LOWER, first);
  if (st == NNMEM_OK) st = cell_u64(ps, line, COL_UPPER, last);
  if (st != NNMEM_OK) return st;
  const char *file = ps->r.name;
  if (ps->csv->legacy) {
    if (*last < *first)
      return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                         "%s:%zu: end (%" PRIu64 ") < start (%" PRIu64 ")",
                         file, line, *last, *first);
    if (*last == UINT64_MAX)
      return nnmem__diag(ps->r.diag, NNMEM_ERR_OVERFLOW,
                         "%s:%zu: end + 1 overflows 64 bits", file, line);
    ++*last;
  } else if (*last <= *first) {
    return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                       "%s:%zu: upper (%" PRIu64 ") <= lower (%" PRIu64
                       "): the lifetime [lower, upper) is empty",
                       file, line, *last, *first);
  }
  return NNMEM_OK;
}

/* Reads one decimal number of a gap at s[*i] (stops at a non-digit). */
static int gap_number(const char *s, size_t n, size_t *i, uint64_t *v) {
  size_t start = *i;
  *v = 0;
  for (; *i < n && s[*i] >= '0' && s[*i] <= '9'; ++*i) {
    unsigned d = (unsigned)(s[*i] - '0');
    if (*v > (UINT64_MAX - d) / 10) return 0;
    *v = *v * 10 + d;
  }
  return *i > start;
}

/* Parses the `gaps` cell of row `row` (buffer row - 1) and adds them. */
static nnmem_status_t row_gaps(parse_t *ps, size_t row, size_t line,
                               const char *id) {
  const nnmem__csv_cell_t *c = &ps->cells[ps->col[COL_GAPS]];
  const char *s = ps->r.text + c->val_begin, *file = ps->r.name;
  size_t n = c->val_end - c->val_begin, i = 0, b = row - 1;
  while (i < n) {
    if (s[i] == ' ') {
      i++;
      continue;
    }
    size_t tok = i, tok_end = i;
    while (tok_end < n && s[tok_end] != ' ')
      tok_end++;
    int shown = tok_end - tok > 40 ? 40 : (int)(tok_end - tok);
    uint64_t lo, hi;
    if (memchr(s + tok, '@', tok_end - tok))
      return nnmem__diag(ps->r.diag, NNMEM_ERR_UNSUPPORTED,
                         "%s:%zu: buffer '%.64s': gap '%.*s' has a window "
                         "(@lower:upper), which nnmem does not support",
                         file, line, id, shown, s + tok);
    if (!gap_number(s, tok_end, &i, &lo) || i >= tok_end || s[i++] != '-' ||
        !gap_number(s, tok_end, &i, &hi) || i != tok_end)
      return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                         "%s:%zu: buffer '%.64s': gap '%.*s' is not of the "
                         "form lower-upper (non-negative integers)",
                         file, line, id, shown, s + tok);
    if (ps->csv->legacy && hi == UINT64_MAX)
      return nnmem__diag(ps->r.diag, NNMEM_ERR_OVERFLOW,
                         "%s:%zu: buffer '%.64s': gap end + 1 overflows 64 "
                         "bits",
                         file, line, id);
    if (ps->csv->legacy) hi++;
    if (hi <= lo)
      return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                         "%s:%zu: buffer '%.64s': gap '%.*s' is empty", file,
                         line, id, shown, s + tok);
    nnmem_status_t st = nnmem_problem_add_gap(ps->csv->problem, b, lo, hi);
    if (st) return nnmem__diag(ps->r.diag, st, "%s: out of memory", file);
  }
  const char *why;
  size_t k;
  if (nnmem__problem_check_gaps(ps->csv->problem, b, &why, &k)) {
    const nnmem_interval_t *g;
    (void)nnmem_problem_gaps(ps->csv->problem, b, &g);
    const nnmem_buffer_t *bu = nnmem_problem_buffers(ps->csv->problem) + b;
    int leg = ps->csv->legacy;
    return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                       "%s:%zu: buffer '%.64s': gap %" PRIu64 "-%" PRIu64
                       " %s (lifetime %" PRIu64 "-%" PRIu64 ")",
                       file, line, id, g[k].first, g[k].last - leg, why,
                       bu->first, bu->last - leg);
  }
  return NNMEM_OK;
}

/* Keeps the `parent` / `parent_offset` cells of a row for resolution once
 * every id is known. */
static nnmem_status_t row_parent(parse_t *ps, size_t row, size_t line) {
  const nnmem__csv_cell_t *c = &ps->cells[ps->col[COL_PARENT]];
  const nnmem__csv_cell_t *o = &ps->cells[ps->col[COL_PARENT_OFFSET]];
  ps->parent_cell[row - 1] = 0;
  if (c->val_end == c->val_begin) {
    if (o->val_end != o->val_begin)
      return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                         "%s:%zu: parent_offset given without a parent",
                         ps->r.name, line);
    return NNMEM_OK;
  }
  /* (begin + 1) * 2 + escaped: 0 means none */
  ps->parent_cell[row - 1] = (c->val_begin + 1) * 2 + (size_t)c->escaped;
  ps->parent_end[row - 1] = c->val_end;
  return cell_u64(ps, line, COL_PARENT_OFFSET, &ps->parent_rel[row - 1]);
}

/* After all rows: looks the parent ids up, sets the relation and checks
 * the sub-buffer rules, naming the child's line. */
static nnmem_status_t resolve_parents(parse_t *ps) {
  nnmem_csv_t *csv = ps->csv;
  const char *file = ps->r.name;
  for (size_t b = 0; b < csv->n_rows; b++) {
    if (!ps->parent_cell[b]) continue;
    size_t at = ps->parent_cell[b] / 2 - 1, len = ps->parent_end[b] - at, q;
    int esc = (int)(ps->parent_cell[b] & 1);
    char *pid = malloc(len + 1);
    if (!pid) return NNMEM_ERR_NOMEM;
    size_t k = 0; /* the cell's value, "" collapsed to " */
    for (size_t j = at; j < at + len; j++) {
      pid[k++] = csv->text[j];
      if (esc && csv->text[j] == '"' && j + 1 < at + len &&
          csv->text[j + 1] == '"')
        j++;
    }
    pid[k] = '\0';
    nnmem_status_t st = nnmem_problem_find(csv->problem, pid, &q);
    if (st == NNMEM_OK && q == b)
      st = nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                       "%s:%zu: buffer '%.64s' is its own parent", file,
                       csv->row_line[b + 1], pid);
    else if (st == NNMEM_OK)
      st = nnmem_problem_set_parent(csv->problem, b, q, ps->parent_rel[b]);
    else
      st = nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                       "%s:%zu: parent '%.64s' is not a buffer of this file",
                       file, csv->row_line[b + 1], pid);
    free(pid);
    if (st) return st;
  }
  nnmem_diag_t d;
  size_t bad = 0;
  if (nnmem__problem_check_extras(csv->problem, &d, &bad))
    return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE, "%s:%zu: %s", file,
                       csv->row_line[bad + 1], d.message);
  return NNMEM_OK;
}

/* Parses the values of data row `row` (cells already split). */
static nnmem_status_t parse_values(parse_t *ps, size_t row) {
  nnmem_csv_t *csv = ps->csv;
  size_t line = csv->row_line[row];
  const char *file = ps->r.name;
  uint64_t first = 0, last = 0, size = 0, align = 1;
  const char *id = NULL;
  nnmem_status_t st = take_id(ps, row, &id);
  if (st == NNMEM_OK) st = row_lifetime(ps, line, &first, &last);
  if (st == NNMEM_OK) st = cell_u64(ps, line, COL_SIZE, &size);
  if (st == NNMEM_OK && ps->col[COL_ALIGN] != SIZE_MAX) {
    st = cell_u64(ps, line, COL_ALIGN, &align);
    if (st == NNMEM_OK && !nnmem__is_pow2(align))
      return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                         "%s:%zu: alignment %" PRIu64 " is not a power of two",
                         file, line, align);
  }
  if (st == NNMEM_OK && csv->offsets)
    st = cell_u64(ps, line, COL_OFFSET, &csv->offsets[row - 1]);
  if (st == NNMEM_OK && ps->parent_cell) st = row_parent(ps, row, line);
  if (st != NNMEM_OK) return st;
  if (nnmem__add_overflow(ps->size_sum, size, &ps->size_sum))
    return nnmem__diag(ps->r.diag, NNMEM_ERR_OVERFLOW,
                       "%s:%zu: sum of sizes overflows 64 bits", file, line);
  size_t dups = nnmem__problem_dup_ids(csv->problem), had = 0;
  st = nnmem_problem_add(csv->problem, id, size, align, first, last, NULL);
  if (st == NNMEM_OK && nnmem__problem_dup_ids(csv->problem) != dups &&
      nnmem_problem_find(csv->problem, id, &had) == NNMEM_OK)
    return nnmem__diag(ps->r.diag, NNMEM_ERR_DUPLICATE,
                       "%s:%zu: duplicate id '%.64s' (first on line %zu)", file,
                       line, id, csv->row_line[had + 1]);
  if (st == NNMEM_ERR_OVERFLOW)
    return nnmem__diag(ps->r.diag, st,
                       "%s:%zu: size %" PRIu64
                       " rounded up to alignment %" PRIu64 " overflows 64 bits",
                       file, line, size, align);
  if (st != NNMEM_OK)
    return nnmem__diag(ps->r.diag, st, "%s:%zu: cannot add the buffer: %s",
                       file, line, nnmem_status_str(st));
  if (ps->col[COL_GAPS] != SIZE_MAX) return row_gaps(ps, row, line, id);
  return NNMEM_OK;
}

/* Reads the data rows. */
static nnmem_status_t read_rows(parse_t *ps) {
  nnmem_csv_t *csv = ps->csv;
  reader_t *r = &ps->r;
  while (r->pos < r->len) {
    size_t row = csv->n_rows + 1, n = 0;
    csv->row_start[row] = r->pos;
    csv->row_line[row] = r->line;
    nnmem_status_t st = read_row(r, ps->cells, csv->n_cols + 1, &n);
    if (st != NNMEM_OK) return st;
    const nnmem__csv_cell_t *c0 = &ps->cells[0];
    if (n == 1 &&
        only_blank(r->text + c0->raw_begin, c0->raw_end - c0->raw_begin)) {
      if (only_blank(r->text + r->pos, r->len - r->pos)) break;
      return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                         "%s:%zu: blank line between data rows", r->name,
                         csv->row_line[row]);
    }
    if (n < csv->n_cols) {
      const nnmem__csv_cell_t *h = &ps->header[n];
      int cut = r->pos >= r->len && r->text[r->len - 1] != '\n';
      return nnmem__diag(
          r->diag, NNMEM_ERR_PARSE,
          "%s:%zu: row has %zu fields but the header has %zu (missing "
          "'%.*s'%s)",
          r->name, csv->row_line[row], n, csv->n_cols,
          (int)(h->val_end - h->val_begin), r->text + h->val_begin,
          cut ? "; the last line is cut off" : "");
    }
    if (n > csv->n_cols)
      return nnmem__diag(r->diag, NNMEM_ERR_PARSE,
                         "%s:%zu: row has %zu fields but the header has %zu",
                         r->name, csv->row_line[row], n, csv->n_cols);
    st = parse_values(ps, row);
    if (st != NNMEM_OK) return st;
    csv->n_rows++;
  }
  return NNMEM_OK;
}

/* Step 1: encoding checks, BOM, empty file; sizes the csv's arrays. */
static nnmem_status_t prepare(parse_t *ps, char *text, size_t *len) {
  const char *name = ps->r.name;
  size_t bad, n = *len;
  if (n >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
    memmove(text, text + 3, n - 3 + 1);
    n -= 3;
    *len = n;
  }
  int bad_kind = nnmem__utf8_check(text, n, &bad);
  if (bad_kind) {
    size_t line, col;
    nnmem__text_position(text, n, bad, &line, &col);
    if (bad_kind == 2)
      return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                         "%s:%zu: NUL byte at column %zu", name, line, col);
    return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                       "%s:%zu: invalid UTF-8 byte 0x%02x at column %zu", name,
                       line, (unsigned)(unsigned char)text[bad], col);
  }
  if (only_blank(text, n))
    return nnmem__diag(ps->r.diag, NNMEM_ERR_PARSE,
                       "%s:1: empty file (expected a header such as "
                       "id,lower,upper,size)",
                       name);
  size_t lines = 1;
  for (const char *p = text; (p = memchr(p, '\n', (size_t)(text + n - p))); p++)
    lines++;
  nnmem_csv_t *csv = ps->csv;
  ps->max_rows = lines;
  csv->row_start = malloc((lines + 1) * sizeof *csv->row_start);
  csv->row_line = malloc((lines + 1) * sizeof *csv->row_line);
  csv->ids = malloc(n + lines + 1); /* ids are at most the text + NULs */
  if (!csv->row_start || !csv->row_line || !csv->ids) return NNMEM_ERR_NOMEM;
  csv->row_start[0] = 0;
  csv->row_line[0] = 1;
  nnmem_status_t st = nnmem_problem_create(&csv->problem);
  if (st == NNMEM_OK) st = nnmem__problem_reserve(csv->problem, lines);
  return st;
}

/* Parses `text` (NUL-terminated, len bytes), taking ownership of it. */
static nnmem_status_t parse_owned(char *text, size_t len, const char *name,
                                  nnmem_csv_t **out, nnmem_diag_t *diag) {
  nnmem_csv_t *csv = calloc(1, sizeof *csv);
  if (!csv) {
    free(text);
    return nnmem__diag(diag, NNMEM_ERR_NOMEM, "%s: out of memory", name);
  }
  csv->text = text;
  parse_t ps = {.r = {text, len, 0, 1, name, diag}, .csv = csv};
  nnmem_status_t st = prepare(&ps, text, &len);
  ps.r.len = csv->len = len;
  if (st == NNMEM_OK) st = read_header(&ps);
  if (st == NNMEM_OK && csv->offset_col != SIZE_MAX) {
    csv->offsets = malloc(ps.max_rows * sizeof *csv->offsets);
    if (!csv->offsets) st = NNMEM_ERR_NOMEM;
  }
  if (st == NNMEM_OK && (ps.col[COL_PARENT] != SIZE_MAX) !=
                            (ps.col[COL_PARENT_OFFSET] != SIZE_MAX))
    st = nnmem__diag(diag, NNMEM_ERR_PARSE,
                     "%s:1: columns 'parent' and 'parent_offset' come "
                     "together",
                     name);
  if (st == NNMEM_OK && ps.col[COL_PARENT] != SIZE_MAX) {
    ps.parent_cell = calloc(ps.max_rows, sizeof *ps.parent_cell);
    ps.parent_end = calloc(ps.max_rows, sizeof *ps.parent_end);
    ps.parent_rel = calloc(ps.max_rows, sizeof *ps.parent_rel);
    if (!ps.parent_cell || !ps.parent_end || !ps.parent_rel)
      st = NNMEM_ERR_NOMEM;
  }
  if (st == NNMEM_OK) st = read_rows(&ps);
  if (st == NNMEM_OK && ps.parent_cell) st = resolve_parents(&ps);
  free(ps.parent_cell);
  free(ps.parent_end);
  free(ps.parent_rel);
  free(ps.header);
  free(ps.cells);
  if (st == NNMEM_ERR_NOMEM) nnmem__diag(diag, st, "%s: out of memory", name);
  if (st != NNMEM_OK) {
    nnmem_csv_destroy(csv);
    return st;
  }
  *out = csv;
  return NNMEM_OK;
}

nnmem_status_t nnmem_csv_parse(const char *data, size_t len,
                               const char *display_name, nnmem_csv_t **out,
                               nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if ((!data && len) || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_csv_parse: NULL argument");
  const char *name = display_name ? display_name : "<csv>";
  char *copy = malloc(len + 1);
  if (!copy)
    return nnmem__diag(diag, NNMEM_ERR_NOMEM, "%s: out of memory", name);
  if (len) memcpy(copy, data, len);
  copy[len] = '\0';
  return parse_owned(copy, len, name, out, diag);
}

nnmem_status_t nnmem_csv_read_file(const char *path, nnmem_csv_t **out,
                                   nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if (!path || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_csv_read_file: NULL argument");
  char *text;
  size_t len;
  nnmem_status_t st = nnmem_file_read(path, &text, &len, diag);
  if (st != NNMEM_OK) return st;
  return parse_owned(text, len, path, out, diag);
}

void nnmem_csv_destroy(nnmem_csv_t *csv) {
  if (!csv) return;
  nnmem_problem_destroy(csv->problem);
  free(csv->offsets);
  free(csv->text);
  free(csv->row_start);
  free(csv->row_line);
  free(csv->ids);
  free(csv);
}

const nnmem_problem_t *nnmem_csv_problem(const nnmem_csv_t *csv) {
  return csv ? csv->problem : NULL;
}

const uint64_t *nnmem_csv_offsets(const nnmem_csv_t *csv) {
  return csv ? csv->offsets : NULL;
}

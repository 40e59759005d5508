/* csv_internal.h - the parsed MiniMalloc CSV object, shared by the reader
 * (src/import/csv.c) and the solution writer (src/export/plan_csv.c).
 * Never installed. */
#ifndef NNMEM_CSV_INTERNAL_H
#define NNMEM_CSV_INTERNAL_H

#include "nnmem/io.h"

/* The file's text is kept so that rows can be written back verbatim.
 * Row 0 is the header; rows 1..n_rows are the buffers, in problem order.
 * row_start[r] is the offset in `text` where row r begins. */
struct nnmem_csv {
  nnmem_problem_t *problem;
  uint64_t *offsets; /* one per buffer; NULL when there is no offset column */
  char *text;        /* the file's bytes after any BOM, NUL-terminated */
  size_t len;
  size_t n_cols;
  size_t offset_col; /* column index of `offset`, or SIZE_MAX */
  int legacy;        /* header buffer,start,end,size (inclusive end) */
  size_t n_rows;
  size_t *row_start; /* n_rows + 1 entries */
  size_t *row_line;  /* 1-based line of each row, n_rows + 1 entries */
  char *ids;         /* every id NUL-terminated, end to end */
};

/* One cell of a row: the raw bytes (with spaces and quotes, for verbatim
 * output) and the value (trimmed, quotes removed; `escaped` when it holds
 * doubled quotes "" that still need collapsing). */
typedef struct nnmem__csv_cell {
  size_t raw_begin, raw_end;
  size_t val_begin, val_end;
  int escaped;
} nnmem__csv_cell_t;

/* Splits row `row` of a parsed csv into csv->n_cols cells. Cannot fail on a
 * parsed file. */
void nnmem__csv_row_cells(const nnmem_csv_t *csv, size_t row,
                          nnmem__csv_cell_t *cells);

#endif /* NNMEM_CSV_INTERNAL_H */

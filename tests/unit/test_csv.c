/* test_csv.c - MiniMalloc CSV reader and writers: formats, every bad-input
 * message, round trips through the planner (verified plans) and atomic
 * writes. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

/* ---- helpers ---------------------------------------------------------------
 */

static nnmem_csv_t *parse_ok_n(const char *text, size_t len) {
  nnmem_csv_t *csv = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_csv_parse(text, len, "t.csv", &csv, &diag);
  if (st != NNMEM_OK)
    fail_msg("parse failed: %s: %s", nnmem_status_name(st), diag.message);
  assert_non_null(csv);
  return csv;
}

static nnmem_csv_t *parse_ok(const char *text) {
  return parse_ok_n(text, strlen(text));
}

/* Parses `text` (len bytes), expects status `want` and a message holding
 * every one of the NULL-terminated substrings. */
static void expect_err_n(const char *text, size_t len, nnmem_status_t want,
                         ...) {
  nnmem_csv_t *csv = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_csv_parse(text, len, "t.csv", &csv, &diag);
  if (st != want)
    fail_msg("want %s, got %s (%s)", nnmem_status_name(want),
             nnmem_status_name(st), diag.message);
  assert_null(csv);
  va_list ap;
  va_start(ap, want);
  for (const char *s; (s = va_arg(ap, const char *));)
    if (!strstr(diag.message, s))
      fail_msg("message '%s' lacks '%s'", diag.message, s);
  va_end(ap);
}

#define expect_err(text, want, ...) \
  expect_err_n(text, strlen(text), want, __VA_ARGS__, (const char *)NULL)

static void assert_buf(const nnmem_problem_t *p, size_t i, const char *id,
                       uint64_t first, uint64_t last, uint64_t size,
                       uint64_t align) {
  const nnmem_buffer_t *b = &nnmem_problem_buffers(p)[i];
  assert_string_equal(nnmem_problem_id(p, i), id);
  assert_int_equal(b->first, first);
  assert_int_equal(b->last, last);
  assert_int_equal(b->size, size);
  assert_int_equal(b->align, align);
}

static int make_tmpdir(void **state) {
  (void)state;
  return tu_tmpdir_create("test_csv");
}

static int remove_tmpdir(void **state) {
  (void)state;
  return tu_tmpdir_remove();
}

static char *slurp(const char *path) {
  char *data = NULL;
  size_t len = 0;
  assert_ok(nnmem_file_read(path, &data, &len, NULL));
  return data;
}

/* ---- formats ----------------------------------------------------------------
 */

static const char example12[] =
    "id,lower,upper,size\n"
    "b1,0,3,4\n"
    "b2,3,9,4\n"
    "b3,0,9,4\n"
    "b4,9,21,4\n"
    "b5,0,21,4\n";

static void test_basic(void **state) {
  (void)state;
  nnmem_csv_t *csv = parse_ok(example12);
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  assert_int_equal(nnmem_problem_count(p), 5);
  assert_buf(p, 0, "b1", 0, 3, 4, 1);
  assert_buf(p, 3, "b4", 9, 21, 4, 1);
  assert_buf(p, 4, "b5", 0, 21, 4, 1);
  assert_null(nnmem_csv_offsets(csv));
  uint64_t lb = 0;
  assert_ok(nnmem_problem_lower_bound(p, 1, &lb));
  assert_int_equal(lb, 12); /* b3 + b5 + b1 (or b2 / b4) */
  nnmem_csv_destroy(csv);
}

static void test_any_order_alignment_offset(void **state) {
  (void)state;
  nnmem_csv_t *csv = parse_ok(
      " size , upper,id,lower ,alignment,offset\n"
      "100,5,x,2,64,128\n"
      "8,3, 7 ,0,1,0\n");
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  assert_int_equal(nnmem_problem_count(p), 2);
  assert_buf(p, 0, "x", 2, 5, 100, 64);
  assert_buf(p, 1, "7", 0, 3, 8, 1);
  const uint64_t *off = nnmem_csv_offsets(csv);
  assert_non_null(off);
  assert_int_equal(off[0], 128);
  assert_int_equal(off[1], 0);
  nnmem_csv_destroy(csv);
}

static void test_legacy_inclusive_end(void **state) {
  (void)state;
  nnmem_csv_t *csv = parse_ok(
      "buffer,start,end,size\n"
      "0,0,2,10\n"
      "1,3,3,20\n");
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  assert_buf(p, 0, "0", 0, 3, 10, 1); /* end 2 inclusive -> upper 3 */
  assert_buf(p, 1, "1", 3, 4, 20, 1); /* one step */
  nnmem_csv_destroy(csv);
}

static void test_crlf_bom_no_final_newline(void **state) {
  (void)state;
  nnmem_csv_t *csv = parse_ok(
      "\xEF\xBB\xBFid,lower,upper,size\r\n"
      "a,0,2,16\r\n"
      "b,1,3,32");
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  assert_int_equal(nnmem_problem_count(p), 2);
  assert_buf(p, 0, "a", 0, 2, 16, 1);
  assert_buf(p, 1, "b", 1, 3, 32, 1);
  nnmem_csv_destroy(csv);
  /* blank lines (and CRLF blank lines) at the end are fine */
  csv = parse_ok("id,lower,upper,size\na,0,2,16\n\r\n  \n\n");
  assert_int_equal(nnmem_problem_count(nnmem_csv_problem(csv)), 1);
  nnmem_csv_destroy(csv);
  /* a header without rows is an empty problem */
  csv = parse_ok("id,lower,upper,size");
  assert_int_equal(nnmem_problem_count(nnmem_csv_problem(csv)), 0);
  nnmem_csv_destroy(csv);
}

static void test_quoted_and_unicode(void **state) {
  (void)state;
  nnmem_csv_t *csv = parse_ok(
      "id,lower,upper,size,note\n"
      "\"conv,1\",0,2,16,\"say \"\"hi\"\"\"\n"
      "\xC3\xA9t\xC3\xA9,1,3,32,\"two\nlines\"\n"
      "last,0,1,1,x\n");
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  assert_int_equal(nnmem_problem_count(p), 3);
  assert_buf(p, 0, "conv,1", 0, 2, 16, 1);
  assert_buf(p, 1, "\xC3\xA9t\xC3\xA9", 1, 3, 32, 1);
  assert_buf(p, 2, "last", 0, 1, 1, 1);
  nnmem_csv_destroy(csv);
  /* an escaped quote inside an id */
  csv = parse_ok("id,lower,upper,size\n\"a\"\"b\",0,1,1\n");
  assert_string_equal(nnmem_problem_id(nnmem_csv_problem(csv), 0), "a\"b");
  nnmem_csv_destroy(csv);
}

static void test_max_values(void **state) {
  (void)state;
  nnmem_csv_t *csv = parse_ok(
      "id,lower,upper,size\n"
      "a,0,18446744073709551615,18446744073709551615\n");
  assert_buf(nnmem_csv_problem(csv), 0, "a", 0, UINT64_MAX, UINT64_MAX, 1);
  nnmem_csv_destroy(csv);
}

/* ---- bad input: one message each, naming file and line ----------------------
 */

static void test_err_empty(void **state) {
  (void)state;
  expect_err("", NNMEM_ERR_PARSE, "t.csv:1:", "empty file");
  expect_err("\n \r\n", NNMEM_ERR_PARSE, "t.csv:1:", "empty file");
  expect_err("\xEF\xBB\xBF", NNMEM_ERR_PARSE, "t.csv:1:", "empty file");
}

static void test_err_header(void **state) {
  (void)state;
  expect_err("id,lower,size\na,0,1\n", NNMEM_ERR_PARSE,
             "t.csv:1:", "no 'upper' column");
  expect_err("name,lower,upper,size\n", NNMEM_ERR_PARSE,
             "t.csv:1:", "no 'id' column");
  expect_err("buffer,start,size\n", NNMEM_ERR_PARSE,
             "t.csv:1:", "no 'end' column");
  expect_err("id,lower,upper,size,size\n", NNMEM_ERR_PARSE,
             "t.csv:1:", "'size' appears twice", "columns 4 and 5");
  /* names match exactly: "Size" is an extra column, not `size` */
  expect_err("id,lower,upper,Size\n", NNMEM_ERR_PARSE, "no 'size' column");
}

static void test_err_field_count(void **state) {
  (void)state;
  expect_err("id,lower,upper,size\na,0,1,4\nb,0,1\n", NNMEM_ERR_PARSE,
             "t.csv:3:", "3 fields", "header has 4", "missing 'size'");
  expect_err("id,lower,upper,size\na,0,1,4\nb,0,", NNMEM_ERR_PARSE,
             "t.csv:3:", "missing 'size'", "cut off");
  expect_err("id,lower,upper,size\na,0,1,4,5\n", NNMEM_ERR_PARSE,
             "t.csv:2:", "5 fields");
  expect_err("id,lower,upper,size\na,0,1,4\n\nb,0,1,4\n", NNMEM_ERR_PARSE,
             "t.csv:3:", "blank line");
  expect_err("id,lower,upper,size\n\"a,0,1,4\n", NNMEM_ERR_PARSE,
             "t.csv:2:", "unterminated quoted field");
  expect_err("id,lower,upper,size\n\"a\"x,0,1,4\n", NNMEM_ERR_PARSE,
             "t.csv:2:", "after a closing quote");
}

static void test_err_numbers(void **state) {
  (void)state;
  const char *h = "id,lower,upper,size\na,0,1,4\n";
  char buf[256];
#define ROW(r) (snprintf(buf, sizeof buf, "%s%s\n", h, r), buf)
  expect_err(ROW("b,x,1,4"), NNMEM_ERR_PARSE, "t.csv:3:", "'x'",
             "column 'lower'", "not a non-negative integer");
  expect_err(ROW("b,0,1,-4"), NNMEM_ERR_PARSE, "t.csv:3:", "'-4'",
             "column 'size'", "negative");
  expect_err(ROW("b,0,1.5,4"), NNMEM_ERR_PARSE, "t.csv:3:", "'1.5'",
             "column 'upper'", "fractional");
  expect_err(ROW("b,0,1,1e3"), NNMEM_ERR_PARSE, "t.csv:3:", "column 'size'");
  expect_err(ROW("b,0,1,"), NNMEM_ERR_PARSE,
             "t.csv:3:", "empty value in column 'size'");
  expect_err(ROW("b,0,1,18446744073709551616"), NNMEM_ERR_OVERFLOW,
             "t.csv:3:", "column 'size'", "64 bits");
  expect_err(ROW("b,0,99999999999999999999999,1"), NNMEM_ERR_OVERFLOW,
             "t.csv:3:", "column 'upper'");
  expect_err(ROW("b,5,5,4"), NNMEM_ERR_PARSE,
             "t.csv:3:", "upper (5) <= lower (5)");
  expect_err(ROW("b,7,2,4"), NNMEM_ERR_PARSE,
             "t.csv:3:", "upper (2) <= lower (7)");
  expect_err(ROW(",0,1,4"), NNMEM_ERR_PARSE,
             "t.csv:3:", "empty value in column 'id'");
#undef ROW
  expect_err("buffer,start,end,size\n0,4,3,1\n", NNMEM_ERR_PARSE,
             "t.csv:2:", "end (3) < start (4)");
  expect_err("buffer,start,end,size\n0,4,18446744073709551615,1\n",
             NNMEM_ERR_OVERFLOW, "t.csv:2:", "end + 1");
}

static void test_err_duplicate_id(void **state) {
  (void)state;
  expect_err("id,lower,upper,size\na,0,1,4\nb,0,1,4\na,2,3,4\n",
             NNMEM_ERR_DUPLICATE, "t.csv:4:", "duplicate id 'a'",
             "first on line 2");
  /* quoting and spaces do not make ids different */
  expect_err("id,lower,upper,size\n 7,0,1,4\n\"7\",2,3,4\n",
             NNMEM_ERR_DUPLICATE, "t.csv:3:", "'7'", "line 2");
}

static void test_err_alignment(void **state) {
  (void)state;
  expect_err("id,lower,upper,size,alignment\na,0,1,4,8\nb,0,1,4,3\n",
             NNMEM_ERR_PARSE, "t.csv:3:", "alignment 3", "not a power of two");
  expect_err("id,lower,upper,size,alignment\na,0,1,4,0\n", NNMEM_ERR_PARSE,
             "t.csv:2:", "alignment 0");
}

static void test_err_encoding(void **state) {
  (void)state;
  expect_err("id,lower,upper,size\na,0,1,4\nb\xFF,0,1,4\n", NNMEM_ERR_PARSE,
             "t.csv:3:", "invalid UTF-8", "0xff", "column 2");
  /* overlong '/' and a lone continuation byte */
  expect_err("id,lower,upper,size\n\xC0\xAF,0,1,4\n", NNMEM_ERR_PARSE,
             "t.csv:2:", "UTF-8");
  expect_err("id,lower,upper,size\n\x80,0,1,4\n", NNMEM_ERR_PARSE,
             "t.csv:2:", "UTF-8");
  /* a sequence cut by the end of the file */
  expect_err("id,lower,upper,size\na,0,1,4\xE2\x82", NNMEM_ERR_PARSE,
             "t.csv:2:", "UTF-8");
  static const char nul[] = "id,lower,upper,size\na,0,1\0,4\n";
  expect_err_n(nul, sizeof nul - 1, NNMEM_ERR_PARSE, "t.csv:2:", "NUL byte",
               (const char *)NULL);
}

static void test_err_sum_overflow(void **state) {
  (void)state;
  expect_err(
      "id,lower,upper,size\n"
      "a,0,1,9223372036854775808\n"
      "b,5,6,9223372036854775807\n"
      "c,7,8,1\n",
      NNMEM_ERR_OVERFLOW, "t.csv:4:", "sum of sizes overflows 64 bits");
}

static void test_err_offset_empty(void **state) {
  (void)state;
  expect_err("id,lower,upper,size,offset\na,0,1,4,0\nb,0,1,4,\n",
             NNMEM_ERR_PARSE, "t.csv:3:", "empty value in column 'offset'");
}

static void test_read_file_errors(void **state) {
  (void)state;
  nnmem_csv_t *csv = NULL;
  nnmem_diag_t diag = {{0}};
  assert_int_equal(nnmem_csv_read_file(tu_tmp_path("missing.csv"), &csv, &diag),
                   NNMEM_ERR_IO);
  assert_non_null(strstr(diag.message, "missing.csv"));
  assert_null(csv);
  /* a directory is not a file */
  assert_int_equal(nnmem_csv_read_file(tu_tmpdir(), &csv, &diag), NNMEM_ERR_IO);
  assert_non_null(strstr(diag.message, tu_tmpdir()));
  /* a file's errors carry its path */
  const char *path = tu_tmp_path("bad.csv");
  const char *text = "id,lower,upper,size\na,0,1,4\nb,0,1\n";
  assert_ok(nnmem_file_write_atomic(path, text, strlen(text), NULL));
  assert_int_equal(nnmem_csv_read_file(path, &csv, &diag), NNMEM_ERR_PARSE);
  char want[600];
  snprintf(want, sizeof want, "%s:3:", path);
  assert_non_null(strstr(diag.message, want));
  unlink(path);
}

/* ---- writers and round trips ------------------------------------------------
 */

static void assert_same_problem(const nnmem_problem_t *a,
                                const nnmem_problem_t *b) {
  size_t n = nnmem_problem_count(a);
  assert_int_equal(nnmem_problem_count(b), n);
  const nnmem_buffer_t *x = nnmem_problem_buffers(a);
  const nnmem_buffer_t *y = nnmem_problem_buffers(b);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(nnmem_problem_id(a, i), nnmem_problem_id(b, i));
    assert_int_equal(x[i].first, y[i].first);
    assert_int_equal(x[i].last, y[i].last);
    assert_int_equal(x[i].size, y[i].size);
    assert_int_equal(x[i].align, y[i].align);
  }
}

static void test_solution_round_trip(void **state) {
  (void)state;
  nnmem_csv_t *csv = parse_ok(example12);
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  nnmem_plan_t *plan = tu_plan_verified(p, NULL);
  assert_int_equal(nnmem_plan_height(plan), 12); /* the optimum */
  const char *path = tu_tmp_path("sol.csv");
  assert_ok(
      nnmem_csv_write_solution(csv, nnmem_plan_offsets(plan), path, NULL));
  nnmem_csv_t *back = NULL;
  assert_ok(nnmem_csv_read_file(path, &back, NULL));
  assert_same_problem(p, nnmem_csv_problem(back));
  const uint64_t *off = nnmem_csv_offsets(back);
  assert_non_null(off);
  assert_memory_equal(off, nnmem_plan_offsets(plan), 5 * sizeof *off);
  assert_ok(nnmem_plan_verify(nnmem_csv_problem(back), off, 1, 12, NULL, NULL));
  /* writing the re-read file with its own offsets gives the same bytes */
  char *first = slurp(path);
  assert_ok(nnmem_csv_write_solution(back, NULL, path, NULL));
  char *second = slurp(path);
  assert_string_equal(first, second);
  free(first);
  free(second);
  unlink(path);
  nnmem_csv_destroy(back);
  nnmem_plan_destroy(plan);
  nnmem_csv_destroy(csv);
}

static void test_solution_keeps_columns(void **state) {
  (void)state;
  /* extra columns, their order, cell text (spaces, quotes) are kept; the
   * offset column is replaced in place; CRLF and BOM are dropped */
  nnmem_csv_t *csv = parse_ok(
      "\xEF\xBB\xBFnote,size,id, lower,upper,offset,tag\r\n"
      "\"x,y\",4, a ,0,2,999,t1\r\n"
      "plain,8,b,1,3,7,t2");
  uint64_t offs[2] = {16, 0};
  const char *path = tu_tmp_path("keep.csv");
  assert_ok(nnmem_csv_write_solution(csv, offs, path, NULL));
  char *text = slurp(path);
  assert_string_equal(text,
                      "note,size,id, lower,upper,offset,tag\n"
                      "\"x,y\",4, a ,0,2,16,t1\n"
                      "plain,8,b,1,3,0,t2\n");
  free(text);
  nnmem_csv_destroy(csv);
  unlink(path);
}

static void test_legacy_round_trip(void **state) {
  (void)state;
  const char *in =
      "buffer,start,end,size,kind\n"
      "0,0,2,32,act\n"
      "1,3,5,32,act\n"
      "2,1,4,16,ws\n";
  nnmem_csv_t *csv = parse_ok(in);
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  nnmem_plan_t *plan = tu_plan_verified(p, NULL);
  /* 0 [0,3) and 1 [3,6) can share; 2 [1,5) overlaps both: height 48 */
  assert_int_equal(nnmem_plan_height(plan), 48);
  const char *path = tu_tmp_path("legacy.csv");
  assert_ok(
      nnmem_csv_write_solution(csv, nnmem_plan_offsets(plan), path, NULL));
  char *text = slurp(path);
  assert_non_null(
      strstr(text, "buffer,start,end,size,kind,offset\n0,0,2,32,act,"));
  free(text);
  nnmem_csv_t *back = NULL;
  assert_ok(nnmem_csv_read_file(path, &back, NULL));
  assert_same_problem(p, nnmem_csv_problem(back));
  assert_memory_equal(nnmem_csv_offsets(back), nnmem_plan_offsets(plan),
                      3 * sizeof(uint64_t));
  nnmem_csv_destroy(back);
  nnmem_plan_destroy(plan);
  nnmem_csv_destroy(csv);
  unlink(path);
}

static void test_problem_write_csv(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "conv1", 100, 64, 0, 2, NULL));
  assert_ok(nnmem_problem_add(p, "a,\"b\"", 50, 1, 1, 3, NULL));
  assert_ok(nnmem_problem_add(p, NULL, 25, 8, 2, 4, NULL));
  nnmem_plan_t *plan = tu_plan_verified(p, NULL);
  const char *path = tu_tmp_path("prob.csv");
  assert_ok(nnmem_problem_write_csv(p, nnmem_plan_offsets(plan), path, NULL));
  char *text = slurp(path);
  assert_true(strncmp(text,
                      "id,lower,upper,size,alignment,offset\nconv1,0,2,100,64,",
                      53) == 0);
  assert_non_null(strstr(text, "\n\"a,\"\"b\"\"\",1,3,50,1,"));
  assert_non_null(strstr(text, "\n2,2,4,25,8,"));
  free(text);
  nnmem_csv_t *back = NULL;
  assert_ok(nnmem_csv_read_file(path, &back, NULL));
  const nnmem_problem_t *q = nnmem_csv_problem(back);
  assert_int_equal(nnmem_problem_count(q), 3);
  assert_buf(q, 0, "conv1", 0, 2, 100, 64);
  assert_buf(q, 1, "a,\"b\"", 1, 3, 50, 1);
  assert_buf(q, 2, "2", 2, 4, 25, 8);
  assert_memory_equal(nnmem_csv_offsets(back), nnmem_plan_offsets(plan),
                      3 * sizeof(uint64_t));
  nnmem_csv_destroy(back);
  /* without offsets: no offset column */
  assert_ok(nnmem_problem_write_csv(p, NULL, path, NULL));
  text = slurp(path);
  assert_true(strncmp(text, "id,lower,upper,size,alignment\n", 30) == 0);
  free(text);
  unlink(path);
  nnmem_plan_destroy(plan);
  nnmem_problem_destroy(p);
}

static void test_atomic_write_failures(void **state) {
  (void)state;
  nnmem_csv_t *csv = parse_ok(example12);
  uint64_t offs[5] = {0, 0, 4, 0, 8};
  nnmem_diag_t diag = {{0}};
  int before = tu_tmpdir_count();
  /* a directory that does not exist: clean failure, nothing created */
  char path[600];
  snprintf(path, sizeof path, "%s/no/such/dir/out.csv", tu_tmpdir());
  assert_int_equal(nnmem_csv_write_solution(csv, offs, path, &diag),
                   NNMEM_ERR_IO);
  assert_non_null(strstr(diag.message, "out.csv"));
  struct stat sb;
  assert_int_not_equal(stat(path, &sb), 0);
  assert_int_equal(
      nnmem_problem_write_csv(nnmem_csv_problem(csv), offs, path, &diag),
      NNMEM_ERR_IO);
  /* the target is a directory: rename fails, the temporary is removed */
  const char *dir = tu_tmp_path("adir");
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(nnmem_csv_write_solution(csv, offs, dir, &diag),
                   NNMEM_ERR_IO);
  assert_int_equal(tu_tmpdir_count(), before + 1); /* only adir */
  rmdir(dir);
  /* an existing file is replaced whole */
  const char *target = tu_tmp_path("old.csv");
  assert_ok(nnmem_file_write_atomic(target, "old contents\n", 13, NULL));
  assert_ok(nnmem_csv_write_solution(csv, offs, target, NULL));
  char *text = slurp(target);
  assert_true(strncmp(text, "id,lower,upper,size,offset\nb1,0,3,4,0\n", 38) ==
              0);
  free(text);
  assert_int_equal(tu_tmpdir_count(), before + 1); /* no temporary left */
  unlink(target);
  nnmem_csv_destroy(csv);
}

/* A target that is a device once links are followed is written in place:
 * the link and the device stay, and a full device is an error. */
static void test_atomic_write_devices(void **state) {
  (void)state;
  struct stat sb;
  nnmem_diag_t diag = {0};
  char full[600], null[600], real[600], link[600];
  snprintf(full, sizeof full, "%s", tu_tmp_path("full.json"));
  snprintf(null, sizeof null, "%s", tu_tmp_path("null.json"));
  snprintf(real, sizeof real, "%s", tu_tmp_path("real.json"));
  snprintf(link, sizeof link, "%s", tu_tmp_path("link.json"));
  if (stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode)) {
    assert_int_equal(symlink("/dev/full", full), 0);
    assert_int_equal(nnmem_file_write_atomic(full, "{}\n", 3, &diag),
                     NNMEM_ERR_IO);
    assert_non_null(strstr(diag.message, "full.json"));
    assert_int_equal(lstat(full, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    unlink(full);
  }
  if (stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode)) {
    assert_int_equal(symlink("/dev/null", null), 0);
    assert_ok(nnmem_file_write_atomic(null, "{}\n", 3, NULL));
    assert_int_equal(lstat(null, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    unlink(null);
  }
  /* a link to a regular file: the file is replaced, the link stays */
  assert_ok(nnmem_file_write_atomic(real, "old\n", 4, NULL));
  assert_int_equal(symlink(real, link), 0);
  assert_ok(nnmem_file_write_atomic(link, "new\n", 4, NULL));
  assert_int_equal(lstat(link, &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
  char *text = slurp(real);
  assert_string_equal(text, "new\n");
  free(text);
  unlink(link);
  unlink(real);
  const char *dir = tu_tmp_path("outdir.json");
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(nnmem_file_write_atomic(dir, "{}\n", 3, &diag),
                   NNMEM_ERR_IO);
  assert_non_null(strstr(diag.message, "is a directory"));
  rmdir(dir);
}

static void test_large_generated(void **state) {
  (void)state;
  /* 30000 rows with numeric ids: linear parse, ids hashed */
  const size_t n = 30000;
  char *text = malloc(n * 48 + 32);
  size_t len = (size_t)sprintf(text, "id,lower,upper,size\n");
  uint64_t seed = 12345;
  for (size_t i = 0; i < n; i++) {
    uint64_t a = tu_rand(&seed) % 1000, d = 1 + tu_rand(&seed) % 50;
    len += (size_t)sprintf(text + len, "%zu,%llu,%llu,%llu\n", i,
                           (unsigned long long)a, (unsigned long long)(a + d),
                           (unsigned long long)(1 + tu_rand(&seed) % 4096));
  }
  nnmem_csv_t *csv = parse_ok_n(text, len);
  assert_int_equal(nnmem_problem_count(nnmem_csv_problem(csv)), n);
  assert_string_equal(nnmem_problem_id(nnmem_csv_problem(csv), n - 1), "29999");
  nnmem_csv_destroy(csv);
  free(text);
}

/* Random byte edits of a valid file: every result parses or fails with a
 * located message; what parses survives the solution writer unchanged. */
static void test_mutations(void **state) {
  (void)state;
  static const char base[] =
      "id,lower,upper,size,alignment,note\r\n"
      "a,0,3,16,8,\"x,y\"\n"
      "b,2,9,4,1,z\n"
      "c,5,6,18446744073709551615,2,\n";
  static const char alphabet[] = ",\n\r\"0123456789-. ab\xFF\xC3\xA9";
  const uint64_t seed0 = 20240611;
  uint64_t seed = seed0;
  char text[sizeof base];
  const char *path = tu_tmp_path("mut.csv");
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(text, base, sizeof base);
    size_t len = sizeof base - 1;
    int edits = 1 + (int)(tu_rand(&seed) % 3);
    for (int e = 0; e < edits && len > 0; e++) {
      size_t at = tu_rand(&seed) % len;
      uint64_t r = tu_rand(&seed);
      if (r % 5 == 0)
        len = at; /* truncate */
      else
        text[at] = r % 17 == 0 ? '\0' : alphabet[r % (sizeof alphabet - 1)];
    }
    nnmem_csv_t *csv = NULL;
    nnmem_diag_t diag = {{0}};
    nnmem_status_t st = nnmem_csv_parse(text, len, "t.csv", &csv, &diag);
    if (st != NNMEM_OK) {
      if (strncmp(diag.message, "t.csv:", 6) != 0 ||
          (st != NNMEM_ERR_PARSE && st != NNMEM_ERR_OVERFLOW &&
           st != NNMEM_ERR_DUPLICATE))
        fail_msg("seed %llu iteration %d: %s: %s", (unsigned long long)seed0,
                 iter, nnmem_status_name(st), diag.message);
      continue;
    }
    const nnmem_problem_t *p = nnmem_csv_problem(csv);
    size_t n = nnmem_problem_count(p);
    uint64_t offs[8] = {0};
    assert_true(n <= 8);
    assert_ok(nnmem_csv_write_solution(csv, offs, path, NULL));
    nnmem_csv_t *back = NULL;
    st = nnmem_csv_read_file(path, &back, &diag);
    if (st != NNMEM_OK)
      fail_msg("seed %llu iteration %d: re-read: %s", (unsigned long long)seed0,
               iter, diag.message);
    assert_same_problem(p, nnmem_csv_problem(back));
    nnmem_csv_destroy(back);
    nnmem_csv_destroy(csv);
  }
  unlink(path);
}

static void test_null_arguments(void **state) {
  (void)state;
  nnmem_csv_t *csv = NULL;
  assert_int_equal(nnmem_csv_parse(NULL, 3, "x", &csv, NULL),
                   NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_csv_parse("a", 1, "x", NULL, NULL), NNMEM_ERR_INVALID);
  assert_null(nnmem_csv_problem(NULL));
  assert_null(nnmem_csv_offsets(NULL));
  nnmem_csv_destroy(NULL);
  csv = parse_ok(example12);
  assert_int_equal(nnmem_csv_write_solution(csv, NULL, tu_tmp_path("x"), NULL),
                   NNMEM_ERR_INVALID);
  nnmem_csv_destroy(csv);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic),
      cmocka_unit_test(test_any_order_alignment_offset),
      cmocka_unit_test(test_legacy_inclusive_end),
      cmocka_unit_test(test_crlf_bom_no_final_newline),
      cmocka_unit_test(test_quoted_and_unicode),
      cmocka_unit_test(test_max_values),
      cmocka_unit_test(test_err_empty),
      cmocka_unit_test(test_err_header),
      cmocka_unit_test(test_err_field_count),
      cmocka_unit_test(test_err_numbers),
      cmocka_unit_test(test_err_duplicate_id),
      cmocka_unit_test(test_err_alignment),
      cmocka_unit_test(test_err_encoding),
      cmocka_unit_test(test_err_sum_overflow),
      cmocka_unit_test(test_err_offset_empty),
      cmocka_unit_test(test_read_file_errors),
      cmocka_unit_test(test_solution_round_trip),
      cmocka_unit_test(test_solution_keeps_columns),
      cmocka_unit_test(test_legacy_round_trip),
      cmocka_unit_test(test_problem_write_csv),
      cmocka_unit_test(test_atomic_write_failures),
      cmocka_unit_test(test_atomic_write_devices),
      cmocka_unit_test(test_large_generated),
      cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_null_arguments),
  };
  return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}

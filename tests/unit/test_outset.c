/* test_outset.c - output sets (src/common/outset.h): all files or none.
 * Each case checks the files' bytes afterwards and counts the scratch
 * directory's entries, so a leftover temporary fails the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/outset.h"
#include "nnmem/io.h"
#include "testutil.h"

static int setup(void **state) {
  (void)state;
  return tu_tmpdir_create("test_outset");
}

static int teardown(void **state) {
  (void)state;
  return tu_tmpdir_remove();
}

/* The whole file at `path` equals `want`. */
static void assert_file(const char *path, const char *want) {
  char *data = NULL;
  size_t len = 0;
  assert_int_equal(nnmem_file_read(path, &data, &len, NULL), NNMEM_OK);
  assert_string_equal(data, want);
  free(data);
}

static void put_file(const char *path, const char *text) {
  assert_int_equal(nnmem_file_write_atomic(path, text, strlen(text), NULL),
                   NNMEM_OK);
}

static nnmem_status_t write_hello(void *ctx, FILE *f, nnmem_diag_t *diag) {
  (void)diag;
  fputs((const char *)ctx, f);
  return NNMEM_OK;
}

static nnmem_status_t write_fails(void *ctx, FILE *f, nnmem_diag_t *diag) {
  (void)ctx;
  fputs("partial", f);
  if (diag) snprintf(diag->message, sizeof diag->message, "formatter failed");
  return NNMEM_ERR_PARSE;
}

/* What a signal handler does while the temporary is being written:
 * nnmem__outset_unlink_temps must find it (the CLI's SIGINT guard). */
typedef struct {
  nnmem__outset_t *set;
  int before;
  int after_unlink;
} interrupt_t;

static nnmem_status_t write_interrupted(void *ctx, FILE *f,
                                        nnmem_diag_t *diag) {
  (void)diag;
  interrupt_t *in = ctx;
  fputs("half", f);
  nnmem__outset_unlink_temps(in->set);
  in->after_unlink = tu_tmpdir_count();
  return NNMEM_OK;
}

static void test_signal_while_writing(void **state) {
  (void)state;
  nnmem__outset_t *s = NULL;
  assert_int_equal(nnmem__outset_create(&s), NNMEM_OK);
  interrupt_t in = {s, tu_tmpdir_count(), -1};
  nnmem_status_t st = nnmem__outset_add_fn(s, tu_tmp_path("sig.txt"),
                                           write_interrupted, &in, NULL);
  (void)st; /* the unlinked temporary may or may not fail later steps */
  assert_int_equal(in.after_unlink, in.before); /* no temporary left */
  nnmem__outset_destroy(s);
}

static void test_commit_all(void **state) {
  (void)state;
  char a[512], b[512];
  snprintf(a, sizeof a, "%s", tu_tmp_path("a.txt"));
  snprintf(b, sizeof b, "%s", tu_tmp_path("b.txt"));
  put_file(a, "old a");
  int before = tu_tmpdir_count();
  nnmem__outset_t *s = NULL;
  assert_int_equal(nnmem__outset_create(&s), NNMEM_OK);
  assert_int_equal(nnmem__outset_add_bytes(s, a, "new a", 5, NULL), NNMEM_OK);
  assert_int_equal(nnmem__outset_add_fn(s, b, write_hello, "new b", NULL),
                   NNMEM_OK);
  assert_file(a, "old a"); /* nothing visible before the commit */
  assert_int_equal(nnmem__outset_commit(s, NULL), NNMEM_OK);
  nnmem__outset_destroy(s);
  assert_file(a, "new a");
  assert_file(b, "new b");
  assert_int_equal(tu_tmpdir_count(), before + 1); /* b only */
}

static void test_none_on_failure(void **state) {
  (void)state;
  char a[512], b[512];
  snprintf(a, sizeof a, "%s", tu_tmp_path("keep.txt"));
  snprintf(b, sizeof b, "%s", tu_tmp_path("missing/dir/b.txt"));
  put_file(a, "old");
  int before = tu_tmpdir_count();
  nnmem__outset_t *s = NULL;
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem__outset_create(&s), NNMEM_OK);
  assert_int_equal(nnmem__outset_add_bytes(s, a, "new", 3, NULL), NNMEM_OK);
  assert_int_equal(tu_tmpdir_count(), before + 1); /* the temporary */
  assert_int_equal(nnmem__outset_add_bytes(s, b, "x", 1, &d), NNMEM_ERR_IO);
  assert_non_null(strstr(d.message, "missing/dir/b.txt"));
  nnmem__outset_destroy(s); /* never committed */
  assert_file(a, "old");
  assert_int_equal(tu_tmpdir_count(), before);
  /* a failing write function */
  assert_int_equal(nnmem__outset_create(&s), NNMEM_OK);
  assert_int_equal(nnmem__outset_add_bytes(s, a, "new", 3, NULL), NNMEM_OK);
  assert_int_not_equal(nnmem__outset_add_fn(s, b, write_fails, NULL, &d),
                       NNMEM_OK);
  nnmem__outset_destroy(s);
  assert_file(a, "old");
  assert_int_equal(tu_tmpdir_count(), before);
}

static void test_device_fails_last(void **state) {
  (void)state;
  if (access("/dev/full", W_OK) != 0) skip();
  char a[512];
  snprintf(a, sizeof a, "%s", tu_tmp_path("dev.txt"));
  put_file(a, "old");
  int before = tu_tmpdir_count();
  nnmem__outset_t *s = NULL;
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem__outset_create(&s), NNMEM_OK);
  assert_int_equal(nnmem__outset_add_bytes(s, a, "new", 3, NULL), NNMEM_OK);
  assert_int_equal(nnmem__outset_add_bytes(s, "/dev/full", "x", 1, NULL),
                   NNMEM_OK);
  assert_int_equal(nnmem__outset_commit(s, &d), NNMEM_ERR_IO);
  assert_non_null(strstr(d.message, "/dev/full"));
  nnmem__outset_destroy(s);
  assert_file(a, "old");
  assert_int_equal(tu_tmpdir_count(), before);
}

static void test_links(void **state) {
  (void)state;
  char target[512], link[512], dangling[512];
  snprintf(target, sizeof target, "%s", tu_tmp_path("target.txt"));
  snprintf(link, sizeof link, "%s", tu_tmp_path("link.txt"));
  snprintf(dangling, sizeof dangling, "%s", tu_tmp_path("dangling.txt"));
  put_file(target, "old");
  assert_int_equal(symlink(target, link), 0);
  assert_int_equal(symlink(tu_tmp_path("nowhere.txt"), dangling), 0);
  put_file(link, "through");
  assert_file(target, "through");
  char buf[8];
  assert_true(readlink(link, buf, sizeof buf) > 0); /* still a link */
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_file_write_atomic(dangling, "x", 1, &d), NNMEM_ERR_IO);
  assert_non_null(strstr(d.message, "does not exist"));
  assert_true(readlink(dangling, buf, sizeof buf) > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_commit_all),
      cmocka_unit_test(test_none_on_failure),
      cmocka_unit_test(test_device_fails_last),
      cmocka_unit_test(test_links),
      cmocka_unit_test(test_signal_while_writing),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_csv_data.c - reads every CSV under $NNMEM_DATA_DIR/dsa (the real
 * MiniMalloc benchmarks and idealloc traces), checks buffer counts and the
 * published lower bounds, and round-trips each through the solution writer.
 * Exits 77 (skipped) when the data folder is absent. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

typedef struct expected {
  const char *stem; /* file name without .csv */
  size_t buffers;
  uint64_t lower_bound; /* 0 = not checked */
} expected_t;

/* Counts and lower bounds from shared/data/README.md. */
static const expected_t expected[] = {
    {"resnet50", 1042, 1515472556ULL},    {"tiny_bert", 1821, 758936113ULL},
    {"bert_base", 5620, 15734934689ULL},  {"pangu_2.6B", 18692, 5530099775ULL},
    {"iopddl_S_1", 28526, 1498635932ULL}, {"example.12", 5, 12},
};

static char files[64][512];
static size_t n_files;

static void collect(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(path, &sb) != 0) continue;
    size_t n = strlen(e->d_name);
    if (S_ISDIR(sb.st_mode))
      collect(path);
    else if (n > 4 && strcmp(e->d_name + n - 4, ".csv") == 0 && n_files < 64)
      snprintf(files[n_files++], sizeof files[0], "%s", path);
  }
  closedir(d);
}

static const expected_t *lookup(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
    size_t n = strlen(expected[i].stem);
    if (strncmp(base, expected[i].stem, n) == 0 &&
        strcmp(base + n, ".csv") == 0)
      return &expected[i];
  }
  return NULL;
}

static void test_every_file(void **state) {
  (void)state;
  size_t checked = 0;
  char out[64];
  strcpy(out, "/tmp/nnmem_csv_data_XXXXXX");
  int fd = mkstemp(out);
  assert_true(fd >= 0);
  close(fd);
  for (size_t f = 0; f < n_files; f++) {
    nnmem_csv_t *csv = NULL;
    nnmem_diag_t diag = {{0}};
    nnmem_status_t st = nnmem_csv_read_file(files[f], &csv, &diag);
    if (st != NNMEM_OK) fail_msg("%s: %s", files[f], diag.message);
    const nnmem_problem_t *p = nnmem_csv_problem(csv);
    size_t n = nnmem_problem_count(p);
    assert_true(n > 0);
    assert_ok(nnmem_problem_check(p, NULL));
    const expected_t *e = lookup(files[f]);
    if (e) {
      if (n != e->buffers)
        fail_msg("%s: %zu buffers, want %zu", files[f], n, e->buffers);
      uint64_t lb = 0;
      assert_ok(nnmem_problem_lower_bound(p, 1, &lb));
      if (e->lower_bound && lb != e->lower_bound)
        fail_msg("%s: lower bound %llu, want %llu", files[f],
                 (unsigned long long)lb, (unsigned long long)e->lower_bound);
      checked++;
    }
    /* the file's problem survives the solution writer unchanged */
    uint64_t *zeros = calloc(n, sizeof *zeros);
    assert_ok(nnmem_csv_write_solution(csv, zeros, out, NULL));
    nnmem_csv_t *back = NULL;
    assert_ok(nnmem_csv_read_file(out, &back, NULL));
    const nnmem_problem_t *q = nnmem_csv_problem(back);
    assert_int_equal(nnmem_problem_count(q), n);
    assert_memory_equal(nnmem_problem_buffers(q), nnmem_problem_buffers(p),
                        n * sizeof(nnmem_buffer_t));
    assert_string_equal(nnmem_problem_id(q, n - 1), nnmem_problem_id(p, n - 1));
    nnmem_csv_destroy(back);
    free(zeros);
    nnmem_csv_destroy(csv);
  }
  unlink(out);
  assert_int_equal(checked, sizeof expected / sizeof expected[0]);
}

int main(void) {
  const char *data = tu_data_dir();
  if (!data) {
    fprintf(stderr, "NNMEM_DATA_DIR not set or absent: skipped\n");
    return 77;
  }
  char dir[512];
  snprintf(dir, sizeof dir, "%s/dsa", data);
  collect(dir);
  if (n_files == 0) {
    fprintf(stderr, "%s: no CSV files: skipped\n", dir);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

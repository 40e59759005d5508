/* test_onnx_buckets.c - the shape buckets of --dim NAME=LO..HI / V1,V2:
 * hand-computed bucket lists, the bucket serving a value (checked against
 * a linear scan over random values, seed printed), every bad input with
 * its message, and the checker catching broken lists. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

static void expect(const char *spec, size_t n, const int64_t *want) {
  nnmem_onnx_dim_buckets_t b;
  nnmem_diag_t d = {{0}};
  if (nnmem_onnx_dim_buckets_parse(spec, &b, &d) != NNMEM_OK)
    fail_msg("%s: %s", spec, d.message);
  if (b.n != n) fail_msg("%s: %zu buckets, want %zu", spec, b.n, n);
  for (size_t i = 0; i < n; i++)
    if (b.values[i] != want[i])
      fail_msg("%s: bucket %zu is %lld, want %lld", spec, i,
               (long long)b.values[i], (long long)want[i]);
  assert_ok(nnmem_onnx_dim_buckets_check(&b, NULL));
}

static void test_ranges_and_lists(void **state) {
  (void)state;
  expect("batch=1..32", 6, (const int64_t[]){1, 2, 4, 8, 16, 32});
  expect("batch=3..20", 5, (const int64_t[]){3, 4, 8, 16, 20});
  expect("n=5..5", 1, (const int64_t[]){5});
  expect("n=7..8", 2, (const int64_t[]){7, 8});
  expect("seq=8,1,4,2", 4, (const int64_t[]){1, 2, 4, 8});
  expect("seq=9", 1, (const int64_t[]){9});
  nnmem_onnx_dim_buckets_t b;
  assert_ok(
      nnmem_onnx_dim_buckets_parse("max_seq_len=1..1099511627776", &b, NULL));
  assert_int_equal(b.n, 41); /* 1, 2^1 .. 2^39, 2^40 */
  assert_string_equal(b.name, "max_seq_len");
  assert_int_equal(b.is_range, 1);
}

static void test_bucket_of(void **state) {
  (void)state;
  nnmem_onnx_dim_buckets_t b;
  assert_ok(nnmem_onnx_dim_buckets_parse("b=3..20", &b, NULL));
  size_t k = 99;
  assert_ok(nnmem_onnx_dim_bucket_of(&b, 1, &k));
  assert_int_equal(k, 0);
  assert_ok(nnmem_onnx_dim_bucket_of(&b, 5, &k));
  assert_int_equal(k, 2); /* 8 serves 5 */
  assert_ok(nnmem_onnx_dim_bucket_of(&b, 20, &k));
  assert_int_equal(k, 4);
  assert_int_equal(nnmem_onnx_dim_bucket_of(&b, 21, &k), NNMEM_ERR_NOT_FOUND);
  uint64_t rng = 12345; /* seed 12345 */
  for (int i = 0; i < 2000; i++) {
    int64_t v = 1 + (int64_t)(tu_rand(&rng) % 25);
    size_t lin = b.n;
    for (size_t j = 0; j < b.n && lin == b.n; j++)
      if (b.values[j] >= v) lin = j;
    nnmem_status_t st = nnmem_onnx_dim_bucket_of(&b, v, &k);
    if (lin == b.n)
      assert_int_equal(st, NNMEM_ERR_NOT_FOUND);
    else if (st != NNMEM_OK || k != lin)
      fail_msg("seed 12345 value %lld: %zu, linear scan %zu", (long long)v, k,
               lin);
  }
}

static void bad(const char *spec, const char *msg) {
  nnmem_onnx_dim_buckets_t b;
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_onnx_dim_buckets_parse(spec, &b, &d), NNMEM_ERR_PARSE);
  if (!strstr(d.message, msg))
    fail_msg("%s: message '%s' lacks '%s'", spec, d.message, msg);
  assert_int_equal(b.n, 0);
}

static void test_bad_input(void **state) {
  (void)state;
  bad("batch", "expected NAME=VALUE");
  bad("=4", "expected NAME=VALUE");
  bad("batch=8..2", "the range is empty (8 > 2)");
  bad("batch=0..4", "must be >= 1, not 0");
  bad("batch=0", "must be >= 1, not 0");
  bad("batch=x..4", "'x' is not a whole number");
  bad("batch=1..", "a value is missing");
  bad("batch=1,,2", "a value is missing");
  bad("batch=-1..4", "'-1' is not a whole number");
  bad("batch=1..2..3", "'2..3' is not a whole number");
  bad("batch=2,4,2", "2 is listed twice");
  bad("batch=1..99999999999999999999", "over 2^40");
  char many[400] = "b=";
  for (int i = 1; i <= 65; i++)
    snprintf(many + strlen(many), sizeof many - strlen(many), "%s%d",
             i > 1 ? "," : "", i);
  bad(many, "more than 64 values");
}

static void test_checker(void **state) {
  (void)state;
  nnmem_onnx_dim_buckets_t b;
  assert_ok(nnmem_onnx_dim_buckets_parse("b=1..8", &b, NULL));
  nnmem_diag_t d = {{0}};
  b.values[2] = b.values[1]; /* not ascending */
  assert_int_equal(nnmem_onnx_dim_buckets_check(&b, &d), NNMEM_ERR_STATE);
  assert_ok(nnmem_onnx_dim_buckets_parse("b=1..8", &b, NULL));
  b.hi = 16; /* last value is not hi */
  assert_int_equal(nnmem_onnx_dim_buckets_check(&b, &d), NNMEM_ERR_STATE);
  b.n = 0;
  assert_int_equal(nnmem_onnx_dim_buckets_check(&b, &d), NNMEM_ERR_STATE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ranges_and_lists),
      cmocka_unit_test(test_bucket_of),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_checker),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

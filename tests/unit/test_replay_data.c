/* test_replay_data.c - replays the real traces of ../shared/data/dsa/traces
 * through the default (tiered) pool on an unbacked simulated device: the
 * peak live bytes equal the published lower bounds and the default pool
 * reserves at most 1.10x of them. Skips (77) without the data folder. */
#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"

static const struct {
  const char *name;
  uint64_t lower_bound; /* from ../shared/data/README.md */
} traces[] = {{"resnet50", 1515472556ULL},
              {"tiny_bert", 758936113ULL},
              {"bert_base", 15734934689ULL},
              {"pangu_2.6B", 5530099775ULL},
              {"iopddl_S_1", 1498635932ULL}};

static void test_traces(void **state) {
  (void)state;
  const char *dir = tu_data_dir();
  for (size_t i = 0; i < sizeof traces / sizeof *traces; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/dsa/traces/%s.csv", dir, traces[i].name);
    nnmem_csv_t *csv = NULL;
    nnmem_diag_t d;
    assert_ok(nnmem_csv_read_file(path, &csv, &d));
    nnmem_replay_result_t r;
    assert_ok(nnmem_pool_replay(nnmem_csv_problem(csv), NNMEM_POOL_TIERED, NULL,
                                256, &r, &d));
    assert_int_equal(r.peak_live_bytes, traces[i].lower_bound);
    if (r.reserved_over_live > 1.10)
      fail_msg("%s: reserved %.4fx live", traces[i].name, r.reserved_over_live);
    nnmem_csv_destroy(csv);
  }
}

int main(void) {
  if (!tu_data_dir()) return 77;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_traces)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

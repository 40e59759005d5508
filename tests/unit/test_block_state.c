/* test_block_state.c - the block state machine: every (state, operation)
 * pair against a table written out by hand, holder counting, epochs, bad
 * indices, counters, and the checker. Concurrency: test_stress_threads.c. */
#include <string.h>

#include "testutil.h"

enum { ACQ, REL, RECY, REUSE, N_OPS };

static nnmem_status_t apply(nnmem_block_table_t *t, int op, size_t i) {
  switch (op) {
    case ACQ:
      return nnmem_block_acquire(t, i);
    case REL:
      return nnmem_block_release(t, i, NULL);
    case RECY:
      return nnmem_block_recycle(t, i);
    default:
      return nnmem_block_reuse(t, i);
  }
}

/* Drives block 0 of a fresh table into `st` (ACTIVE: one holder). */
static void reach(nnmem_block_table_t *t, nnmem_block_state_t st) {
  if (st == NNMEM_BLOCK_ALLOCATED) return;
  assert_ok(nnmem_block_acquire(t, 0));
  if (st == NNMEM_BLOCK_ACTIVE) return;
  assert_ok(nnmem_block_release(t, 0, NULL));
  if (st == NNMEM_BLOCK_RELEASED) return;
  assert_ok(nnmem_block_recycle(t, 0));
}

static void test_table(void **state) {
  (void)state;
  /* legal[state][op], and the state reached (by hand from the diagram) */
  static const int legal[4][N_OPS] = {
      {1, 0, 0, 0}, /* allocated: acquire only */
      {1, 1, 0, 0}, /* active: acquire, release */
      {0, 0, 1, 0}, /* released: recycle */
      {0, 0, 0, 1}, /* recycled: reuse */
  };
  static const nnmem_block_state_t next[4][N_OPS] = {
      {NNMEM_BLOCK_ACTIVE, 0, 0, 0},
      {NNMEM_BLOCK_ACTIVE, NNMEM_BLOCK_RELEASED, 0, 0},
      {0, 0, NNMEM_BLOCK_RECYCLED, 0},
      {0, 0, 0, NNMEM_BLOCK_ALLOCATED},
  };
  uint64_t illegal = 0;
  for (int s = 0; s < 4; s++)
    for (int op = 0; op < N_OPS; op++) {
      nnmem_block_table_t *t = NULL;
      assert_ok(nnmem_block_table_create(2, &t));
      reach(t, (nnmem_block_state_t)s);
      nnmem_status_t st = apply(t, op, 0);
      nnmem_block_state_t now;
      uint32_t epoch;
      assert_ok(nnmem_block_get(t, 0, &now, NULL, &epoch));
      nnmem_block_counters_t c;
      assert_ok(nnmem_block_table_counters(t, &c));
      if (legal[s][op]) {
        assert_int_equal(st, NNMEM_OK);
        assert_int_equal(now, next[s][op]);
        assert_int_equal(c.illegal, 0);
        assert_int_equal(epoch, op == REUSE ? 1 : 0);
      } else {
        assert_int_equal(st, NNMEM_ERR_STATE);
        assert_int_equal(now, (nnmem_block_state_t)s); /* unchanged */
        assert_int_equal(c.illegal, 1);
        illegal++;
      }
      assert_ok(nnmem_block_table_check(t, NULL));
      nnmem_block_table_destroy(t);
    }
  assert_int_equal(illegal, 16 - 5); /* 5 legal pairs in the table */
}

static void test_holders(void **state) {
  (void)state;
  nnmem_block_table_t *t = NULL;
  assert_ok(nnmem_block_table_create(4, &t));
  for (int k = 0; k < 3; k++)
    assert_ok(nnmem_block_acquire(t, 2));
  uint32_t h;
  int last = 7;
  assert_ok(nnmem_block_get(t, 2, NULL, &h, NULL));
  assert_int_equal(h, 3);
  assert_ok(nnmem_block_release(t, 2, &last));
  assert_int_equal(last, 0);
  assert_ok(nnmem_block_release(t, 2, &last));
  assert_int_equal(last, 0);
  assert_ok(nnmem_block_release(t, 2, &last));
  assert_int_equal(last, 1);
  assert_int_equal(nnmem_block_release(t, 2, &last), NNMEM_ERR_STATE);
  assert_int_equal(last, 0);
  assert_int_equal(nnmem_block_acquire(t, 4), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_block_acquire(NULL, 0), NNMEM_ERR_INVALID);
  nnmem_block_counters_t c;
  assert_ok(nnmem_block_table_counters(t, &c));
  assert_int_equal(c.transitions, 6);
  assert_int_equal(c.illegal, 1);
  assert_int_equal(c.bad_index, 1);
  nnmem_block_table_t *z = (nnmem_block_table_t *)1;
  assert_int_equal(nnmem_block_table_create(0, &z), NNMEM_ERR_INVALID);
  assert_null(z);
  assert_string_equal(nnmem_block_state_name(NNMEM_BLOCK_RECYCLED), "recycled");
  assert_string_equal(nnmem_block_state_name((nnmem_block_state_t)9), "?");
  nnmem_block_table_destroy(t);
  nnmem_block_table_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_table),
                                     cmocka_unit_test(test_holders)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

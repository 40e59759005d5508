/* test_cli_suggest.c - the CLI's "did you mean" helper (tools/nnmem/
 * suggest.c, compiled into this test): hand-computed distances, the
 * distance bracketed by two independent breadth-first searches over single
 * edits on random short strings, and which suggestions are made or
 * withheld. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "../../tools/nnmem/suggest.c"

static size_t dist(const char *a, const char *b) {
  return cli_edit_distance(a, strlen(a), b, strlen(b));
}

static void test_hand_computed(void **state) {
  (void)state;
  assert_int_equal(dist("", ""), 0);
  assert_int_equal(dist("", "plan"), 4);
  assert_int_equal(dist("plan", ""), 4);
  assert_int_equal(dist("plan", "plan"), 0);
  assert_int_equal(dist("PLAN", "plan"), 0);              /* case ignored */
  assert_int_equal(dist("plam", "plan"), 1);              /* substitution */
  assert_int_equal(dist("verfiy", "verify"), 1);          /* transposition */
  assert_int_equal(dist("greedysize", "greedy-size"), 1); /* insertion */
  assert_int_equal(dist("resnet500", "resnet50"), 1);     /* deletion */
  /* cap|t|iy -> cap|ac|ity: two insertions and a transposition */
  assert_int_equal(dist("captiy", "capacity"), 3);
  assert_int_equal(dist("kitten", "sitting"), 3);
  /* OSA edits no substring twice: "ca" -> "abc" is 3, not 2 */
  assert_int_equal(dist("ca", "abc"), 3);
  char long_word[80];
  memset(long_word, 'a', sizeof long_word - 1);
  long_word[sizeof long_word - 1] = '\0';
  assert_int_equal(dist(long_word, "a"), (size_t)-1);
}

/* Breadth-first search over strings of at most 6 letters of "abc": the
 * fewest single edits turning a into b. swaps = 1 adds adjacent
 * transpositions (unrestricted Damerau-Levenshtein, a lower bound of OSA);
 * swaps = 0 is plain Levenshtein (an upper bound). */
#define BFS_MAX 6

/* A string of a..c as a base-4 number (digits 1..3): distinct strings,
 * distinct codes. */
static size_t code(const char *s) {
  size_t c = 0;
  for (; *s; s++)
    c = c * 4 + (size_t)(*s - 'a' + 1);
  return c;
}

static size_t bfs(const char *a, const char *b, int swaps) {
  enum { N = 1 << (2 * BFS_MAX + 2) }; /* > every code of <= 6 letters */
  static int seen[N];
  static char queue[N][BFS_MAX + 1];
  static size_t depth[N];
  memset(seen, 0, sizeof seen);
  size_t head = 0, tail = 0;
  strcpy(queue[tail], a);
  depth[tail++] = 0;
  seen[code(a)] = 1;
  while (head < tail) {
    char cur[BFS_MAX + 2];
    strcpy(cur, queue[head]);
    size_t d = depth[head++];
    if (strcmp(cur, b) == 0) return d;
    size_t len = strlen(cur);
    char next[BFS_MAX + 2];
    for (size_t i = 0; i <= len; i++) {
      for (char c = 'a'; c <= 'c'; c++) {
        /* insert c at i */
        if (len < BFS_MAX) {
          memcpy(next, cur, i);
          next[i] = c;
          strcpy(next + i + 1, cur + i);
          size_t k = code(next);
          if (!seen[k]) {
            seen[k] = 1;
            strcpy(queue[tail], next);
            depth[tail++] = d + 1;
          }
        }
        /* substitute c at i */
        if (i < len && cur[i] != c) {
          strcpy(next, cur);
          next[i] = c;
          size_t k = code(next);
          if (!seen[k]) {
            seen[k] = 1;
            strcpy(queue[tail], next);
            depth[tail++] = d + 1;
          }
        }
      }
      /* delete at i */
      if (i < len) {
        memcpy(next, cur, i);
        strcpy(next + i, cur + i + 1);
        size_t k = code(next);
        if (!seen[k]) {
          seen[k] = 1;
          strcpy(queue[tail], next);
          depth[tail++] = d + 1;
        }
      }
      /* swap i, i+1 */
      if (swaps && i + 1 < len && cur[i] != cur[i + 1]) {
        strcpy(next, cur);
        next[i] = cur[i + 1];
        next[i + 1] = cur[i];
        size_t k = code(next);
        if (!seen[k]) {
          seen[k] = 1;
          strcpy(queue[tail], next);
          depth[tail++] = d + 1;
        }
      }
    }
  }
  return (size_t)-1;
}

static void random_word(uint64_t *rng, char *out) {
  size_t len = (size_t)(tu_rand(rng) % 6); /* 0..5: BFS may pass through 6 */
  for (size_t i = 0; i < len; i++)
    out[i] = (char)('a' + tu_rand(rng) % 3);
  out[len] = '\0';
}

static void test_bracketed_by_bfs(void **state) {
  (void)state;
  uint64_t seed = 0x5eed5u, rng = seed;
  int strictly_between = 0;
  for (int t = 0; t < 300; t++) {
    char a[8], b[8];
    random_word(&rng, a);
    random_word(&rng, b);
    size_t osa = dist(a, b), dl = bfs(a, b, 1), lev = bfs(a, b, 0);
    if (!(dl <= osa && osa <= lev))
      fail_msg("seed %llu: d('%s', '%s') = %zu outside [%zu, %zu]",
               (unsigned long long)seed, a, b, osa, dl, lev);
    assert_int_equal(osa, dist(b, a)); /* symmetric */
    assert_true((osa == 0) == (strcmp(a, b) == 0));
    if (osa < lev) strictly_between++;
  }
  /* transpositions did occur and were counted as one edit */
  assert_true(strictly_between > 0);
}

static void test_suggestions(void **state) {
  (void)state;
  const char *cmds[] = {"plan", "inspect", "verify", "replay", "help"};
  assert_string_equal(cli_suggest("plam", cmds, 5), "plan");
  assert_string_equal(cli_suggest("verfiy", cmds, 5), "verify");
  assert_string_equal(cli_suggest("Replay", cmds, 5), "replay");
  assert_string_equal(cli_suggest("insp", cmds, 5), "inspect"); /* prefix */
  assert_null(cli_suggest("xyzzy", cmds, 5));
  assert_null(cli_suggest("x", cmds, 5));
  assert_null(cli_suggest(NULL, cmds, 5));
  const char *opts[] = {"capacity", "align", "quiet", "json", "out"};
  assert_string_equal(cli_suggest("captiy", opts, 5), "capacity");
  assert_string_equal(cli_suggest("jsno", opts, 5), "json");
  assert_null(cli_suggest("o", opts, 5)); /* too short to guess */
  /* a prefix of two candidates is ambiguous */
  const char *two[] = {"greedy-size", "greedy-breadth"};
  assert_null(cli_suggest("gr", two, 2));
  assert_string_equal(cli_suggest("greedysize", two, 2), "greedy-size");
  /* the nearest wins, the first of equals */
  const char *near[] = {"abcd", "abce", "abcf"};
  assert_string_equal(cli_suggest("abcx", near, 3), "abcd");
  assert_string_equal(cli_suggest("abcf", near, 3), "abcf");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_computed),
      cmocka_unit_test(test_bracketed_by_bfs),
      cmocka_unit_test(test_suggestions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

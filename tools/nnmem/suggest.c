/* suggest.c - nearest-name suggestions for mistyped command-line words (see
 * suggest.h).
 *
 * Distance: optimal string alignment (OSA), i.e. Levenshtein (insert,
 * delete, substitute) plus the transposition of two adjacent characters,
 * each edit costing 1, with no substring edited twice (Damerau 1964;
 * Boytsov, "Indexing methods for approximate dictionary searching", 2011,
 * section 2.2). Steps of cli_edit_distance, the classic dynamic programme:
 *   1. d[i][j] = distance of a[0,i) and b[0,j); d[i][0] = i, d[0][j] = j;
 *   2. d[i][j] = min(d[i-1][j] + 1, d[i][j-1] + 1,
 *                    d[i-1][j-1] + (a[i-1] != b[j-1]),
 *                    d[i-2][j-2] + 1 when a[i-1..i-2] is b[j-2..j-1]
 *                    swapped);
 *   3. three rolling rows suffice (step 2 looks back two rows).
 * Accepting a candidate: distance d <= 3 and fewer edits than half the
 * longer of the two words (2d < max(|word|, |candidate|)), so "plam" ->
 * "plan", "captiy" -> "capacity" (d = 3 of 8), "greedysize" ->
 * "greedy-size", but "xyz" -> nothing; the nearest accepted one wins.
 * Failing that, the single candidate the word (2+ characters) is a prefix
 * of ("--cap" -> "--capacity").
 * Invariants: the distance is symmetric, 0 only for case-insensitively
 * equal strings, and at most max(alen, blen).
 * Complexity: O(|word| * |candidate|) per candidate, no allocation.
 * Thread-safety: reentrant (all state in the caller's cli_suggest_t). */
#include "suggest.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MAX_LEN 63

static int same_char(char x, char y) {
  return tolower((unsigned char)x) == tolower((unsigned char)y);
}

static size_t min3(size_t a, size_t b, size_t c) {
  size_t m = a < b ? a : b;
  return m < c ? m : c;
}

size_t cli_edit_distance(const char *a, size_t alen, const char *b,
                         size_t blen) {
  size_t rows[3][MAX_LEN + 1];
  if (alen > MAX_LEN || blen > MAX_LEN) return (size_t)-1;
  size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= blen; j++)
    prev[j] = j;
  for (size_t i = 1; i <= alen; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= blen; j++) {
      size_t sub = prev[j - 1] + !same_char(a[i - 1], b[j - 1]);
      cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, sub);
      if (i > 1 && j > 1 && same_char(a[i - 1], b[j - 2]) &&
          same_char(a[i - 2], b[j - 1]) && prev2[j - 2] + 1 < cur[j])
        cur[j] = prev2[j - 2] + 1;
    }
    size_t *t = prev2;
    prev2 = prev;
    prev = cur;
    cur = t;
  }
  return prev[blen];
}

void cli_suggest_init(cli_suggest_t *s, const char *word, size_t len) {
  s->word = word;
  s->wlen = len;
  s->best = NULL;
  s->best_dist = (size_t)-1;
  s->prefix = NULL;
  s->n_prefix = 0;
}

void cli_suggest_add(cli_suggest_t *s, const char *candidate) {
  size_t clen = strlen(candidate);
  size_t d = cli_edit_distance(s->word, s->wlen, candidate, clen);
  size_t longer = s->wlen > clen ? s->wlen : clen;
  if (d <= 3 && 2 * d < longer && d < s->best_dist) {
    s->best = candidate;
    s->best_dist = d;
  }
  if (s->wlen >= 2 && s->wlen < clen) {
    size_t i = 0;
    while (i < s->wlen && same_char(s->word[i], candidate[i]))
      i++;
    if (i == s->wlen) {
      s->prefix = candidate;
      s->n_prefix++;
    }
  }
}

const char *cli_suggest_result(const cli_suggest_t *s) {
  if (s->best) return s->best;
  if (s->n_prefix == 1) return s->prefix;
  return NULL;
}

const char *cli_suggest(const char *word, const char *const *candidates,
                        size_t n) {
  cli_suggest_t s;
  if (!word) return NULL;
  cli_suggest_init(&s, word, strlen(word));
  for (size_t i = 0; i < n; i++)
    if (candidates[i]) cli_suggest_add(&s, candidates[i]);
  return cli_suggest_result(&s);
}

const char *cli_did_you_mean(const char *hint, char *buf, size_t cap) {
  if (!hint || cap == 0) return "";
  snprintf(buf, cap, "; did you mean '%s'?", hint);
  return buf;
}

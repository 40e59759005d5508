/* suggest.h - "did you mean ...?" for mistyped names on the command line
 * (options, commands, strategies, built-in models, pools).
 *
 * Feed every valid name to one cli_suggest_t, then ask for the best: the
 * name nearest to the typed word by optimal-string-alignment distance
 * (Levenshtein plus adjacent transpositions, ASCII case ignored) when that
 * distance is small for the words' lengths, else the one name the word is a
 * prefix of. NULL when nothing is close enough: a suggestion must be likely
 * right, so a wild word gets none. */
#ifndef NNMEM_CLI_SUGGEST_H
#define NNMEM_CLI_SUGGEST_H

#include <stddef.h>

typedef struct cli_suggest {
  const char *word;   /* what was typed (not NUL-terminated at wlen) */
  size_t wlen;        /* its length */
  const char *best;   /* nearest candidate so far */
  size_t best_dist;   /* its distance */
  const char *prefix; /* a candidate the word is a prefix of */
  int n_prefix;       /* how many candidates the word is a prefix of */
} cli_suggest_t;

/* Starts a search for the candidate nearest to word[0, len). */
void cli_suggest_init(cli_suggest_t *s, const char *word, size_t len);

/* Considers one candidate (NUL-terminated). The first of equally near
 * candidates wins. */
void cli_suggest_add(cli_suggest_t *s, const char *candidate);

/* The suggestion, or NULL when no candidate is close enough. */
const char *cli_suggest_result(const cli_suggest_t *s);

/* The nearest of `n` candidates to the NUL-terminated `word`, or NULL. */
const char *cli_suggest(const char *word, const char *const *candidates,
                        size_t n);

/* "; did you mean 'HINT'?" in buf (up to cap bytes), or "" when hint is
 * NULL: the tail every "unknown X" message appends. Returns buf or "". */
const char *cli_did_you_mean(const char *hint, char *buf, size_t cap);

/* Optimal string alignment distance between a[0, alen) and b[0, blen),
 * ASCII case ignored; (size_t)-1 when either is longer than 63 bytes.
 * O(alen * blen) time, O(blen) space. */
size_t cli_edit_distance(const char *a, size_t alen, const char *b,
                         size_t blen);

#endif /* NNMEM_CLI_SUGGEST_H */

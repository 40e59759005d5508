/* json_out.c - the --json[=pretty|compact] option every command shares and
 * the printing of a finished JSON document on stdout.
 *
 * Steps: 1. the option's inline value picks the style (none or "pretty":
 * 2-space indentation; "compact": no whitespace); 2. a command builds its
 * document with the one JSON writer (src/common/json_write.c, exact 64-bit
 * integers); 3. cli_json_print finishes it and writes it out in one piece.
 * Thread-safety: single-threaded program. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"

int cli_json_option(const char *cmd, const char *value, int *json) {
  if (!value || strcmp(value, "pretty") == 0) {
    *json = CLI_JSON_PRETTY;
  } else if (strcmp(value, "compact") == 0) {
    *json = CLI_JSON_COMPACT;
  } else {
    return cli_usage_error(cmd, "bad --json='%s': expected pretty or compact",
                           value);
  }
  return 0;
}

void cli_json_begin(nnmem__jw_t *w, nnmem__text_t *t, int json) {
  nnmem__text_init(t);
  nnmem__jw_init(
      w, t, json == CLI_JSON_COMPACT ? NNMEM__JW_COMPACT : NNMEM__JW_PRETTY);
}

int cli_json_print(nnmem__jw_t *w, nnmem__text_t *t) {
  nnmem_status_t st = nnmem__jw_finish(w);
  if (st == NNMEM_OK) fwrite(t->data, 1, t->len, stdout);
  nnmem__text_free(t);
  if (st == NNMEM_OK) return CLI_EXIT_OK;
  fprintf(stderr, "nnmem: internal error: JSON output: %s\n",
          nnmem_status_str(st));
  return CLI_EXIT_INTERNAL;
}

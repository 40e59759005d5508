/* cmd_diff.c - `nnmem diff A.json B.json`: two memory profiles compared key
 * by key (a planned one from `nnmem plan --profile`, a measured one from
 * nnmem_profiler_export, or two of either kind).
 *
 * Steps: 1. options; 2. read both files whole (size limit, "-" = standard
 * input for one of them); 3. nnmem_profile_diff (the library reads,
 * compares and renders; errors name the file and the key); 4. print the
 * table or the JSON; 5. exit 0, or 2 when --max-excess PCT is given and B's
 * peak_memory exceeds A's by more than PCT percent.
 * Thread-safety: single-threaded. */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"

enum { DOPT_HELP, DOPT_JSON, DOPT_MAX_EXCESS, DOPT_MAX_INPUT };

static const cli_opt_t diff_table[] = {{"help", 'h', 0, DOPT_HELP},
                                       {"json", 0, 0, DOPT_JSON},
                                       {"max-excess", 0, 1, DOPT_MAX_EXCESS},
                                       {"max-input-size", 0, 1, DOPT_MAX_INPUT},
                                       {NULL, 0, 0, 0}};

typedef struct diff_opts {
  const char *a, *b;
  int json;
  int has_max_excess;
  double max_excess; /* percent */
  uint64_t max_input;
} diff_opts_t;

static void print_diff_help(void) {
  fputs(
      "Usage: nnmem diff A.json B.json [options]\n"
      "\n"
      "Compares two memory profiles key by key: a planned one (nnmem plan\n"
      "--profile) and a measured one (the run-time profiler's export,\n"
      "nnmem_profiler_export), or any two. Keys: peak_memory, weight_memory,\n"
      "activation_memory, workspace_memory (required), lower_bound,\n"
      "naive_memory, arena_height, arena_lower_bound, naive_arena,\n"
      "reuse_ratio (when both have them), then the timelines where both\n"
      "files have one (nnmem plan --profile writes the planned live bytes\n"
      "per step): an entry holds until the next; over the steps both cover,\n"
      "the first step that differs, the largest and the mean deviation.\n"
      "Either file may be '-' (standard input).\n"
      "\n"
      "Options:\n"
      "  --json                the comparison as JSON (exact integers)\n"
      "  --max-excess PCT      exit 2 when B's peak_memory exceeds A's by\n"
      "                        more than PCT percent\n"
      "  --max-input-size N    largest input read (default 2GiB)\n"
      "  -h, --help            show this help\n"
      "\n"
      "Exit codes:\n"
      "  0  compared (and within --max-excess when given)\n"
      "  1  bad usage, or a file that is not a memory profile (the message\n"
      "     names the file and the key)\n"
      "  2  B's peak exceeds A's by more than --max-excess\n"
      "  3  internal error (out of memory)\n",
      stdout);
}

static int set_diff_option(void *opts, int id, const char *v) {
  diff_opts_t *o = opts;
  char *end = NULL;
  switch (id) {
    case DOPT_JSON:
      o->json = 1;
      break;
    case DOPT_MAX_EXCESS:
      o->max_excess = strtod(v, &end);
      if (!*v || *end || !(o->max_excess >= 0) || o->max_excess > 1e9)
        return cli_usage_error(
            "diff", "--max-excess wants a percentage >= 0, not '%s'", v);
      o->has_max_excess = 1;
      break;
    case DOPT_MAX_INPUT:
      return cli_parse_max_input("diff", v, &o->max_input);
  }
  return 0;
}

int cli_cmd_diff(int argc, char **argv) {
  diff_opts_t o;
  memset(&o, 0, sizeof o);
  cli_parse_t p = {"diff",
                   diff_table,
                   DOPT_HELP,
                   print_diff_help,
                   set_diff_option,
                   &o,
                   {&o.a, &o.b, NULL},
                   NULL,
                   0,
                   NULL};
  int e = cli_args_parse(&p, argc, argv);
  if (e >= 0) return e;
  if (!o.a || !o.b)
    return cli_usage_error("diff", "needs two profiles: A.json B.json");
  if (strcmp(o.a, "-") == 0 && strcmp(o.b, "-") == 0)
    return cli_usage_error("diff", "only one input can be '-' (stdin)");
  nnmem_diag_t d = {0};
  cli_input_t ia = {0}, ib = {0};
  nnmem_status_t st = cli_input_read(&ia, o.a, o.max_input, &d);
  if (st == NNMEM_OK) st = cli_input_read(&ib, o.b, o.max_input, &d);
  char *text = NULL;
  double excess = 0;
  if (st == NNMEM_OK)
    st = nnmem_profile_diff(ia.data, ia.len, ia.name, ib.data, ib.len, ib.name,
                            o.json, &text, &excess, &d);
  cli_input_free(&ia);
  cli_input_free(&ib);
  if (st != NNMEM_OK) return cli_fail(st, &d);
  fputs(text, stdout);
  free(text);
  if (o.has_max_excess && excess * 100.0 > o.max_excess) {
    fprintf(stderr,
            "nnmem diff: B's peak_memory exceeds A's by %.2f%% (more than "
            "--max-excess %g%%)\n",
            excess * 100.0, o.max_excess);
    return CLI_EXIT_NOFIT;
  }
  return CLI_EXIT_OK;
}

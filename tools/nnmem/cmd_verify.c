/* cmd_verify.c - `nnmem verify`: an independent check of any plan of a
 * MiniMalloc problem, whoever produced it.
 *
 * Steps:
 *   1. read PROBLEM.csv; the offsets come from its own `offset` column, or,
 *      when SOLUTION.csv is given, from that file matched by buffer id (by
 *      row when the problem has no ids); the problem's sizes, alignments
 *      and lifetimes are the ones checked;
 *   2. run nnmem_plan_verify with --align and --capacity;
 *   3. print "valid: height H (lower bound LB, ratio R)" and exit 0, or name
 *      the first violation: a conflicting pair (exit 1), a misaligned or
 *      overflowing offset (exit 1), a height over --capacity (exit 2).
 * Input errors (unreadable file, bad row, unknown id, no offsets) print
 * "nnmem: <where>: <what>" on stderr and exit 1.
 * Complexity: O(n log n) (the verifier's sweep, id lookups O(1) average).
 * Thread-safety: single-threaded. */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "common/util.h"
#include "units.h"

enum { VOPT_HELP, VOPT_ALIGN, VOPT_CAPACITY, VOPT_QUIET, VOPT_MAX_INPUT };

static const cli_opt_t verify_table[] = {
    {"help", 'h', 0, VOPT_HELP},
    {"align", 'a', 1, VOPT_ALIGN},
    {"capacity", 'c', 1, VOPT_CAPACITY},
    {"quiet", 'q', 0, VOPT_QUIET},
    {"max-input-size", 0, 1, VOPT_MAX_INPUT},
    {NULL, 0, 0, 0}};

typedef struct verify_opts {
  const char *problem_path;
  const char *solution_path; /* NULL: offsets come from problem_path */
  uint64_t max_input;        /* --max-input-size; 0 = default */
  uint64_t align;
  uint64_t capacity;
  int quiet;
} verify_opts_t;

static void print_verify_help(void) {
  fputs(
      "Usage: nnmem verify PROBLEM.csv [SOLUTION.csv] [options]\n"
      "\n"
      "Checks a plan with the independent verifier: buffers whose lifetimes\n"
      "[lower, upper) intersect must not share bytes, every offset must be a\n"
      "multiple of the buffer's alignment (and --align), and the height must\n"
      "not exceed --capacity. The offsets come from PROBLEM.csv's `offset`\n"
      "column, or from SOLUTION.csv matched to PROBLEM.csv by buffer id.\n"
      "\n"
      "Options:\n"
      "  -a, --align SIZE      required alignment of every offset\n"
      "  -c, --capacity SIZE   maximum height (K/M/G = 1024^n, KB/MB/GB = "
      "1000^n)\n"
      "  -q, --quiet           print nothing; only the exit code tells\n"
      "      --max-input-size SIZE  refuse larger inputs (default 2GiB)\n"
      "  -h, --help            show this help\n"
      "A file named '-' is read from standard input.\n"
      "\n"
      "Exit codes: 0 valid; 1 invalid plan (overlap, misaligned, overflow) or\n"
      "bad input; 2 height over --capacity.\n",
      stdout);
}

static int set_verify_option(void *opts, int id, const char *v) {
  verify_opts_t *o = opts;
  const char *why = NULL;
  uint64_t n = 0;
  if (id == VOPT_QUIET) {
    o->quiet = 1;
    return 0;
  }
  if (id == VOPT_MAX_INPUT)
    return cli_parse_max_input("verify", v, &o->max_input);
  const char *name = id == VOPT_ALIGN ? "--align" : "--capacity";
  if (cli_parse_size(v, &n, &why) != 0)
    return cli_usage_error("verify", "bad %s '%s': %s", name, v, why);
  if (id == VOPT_ALIGN && !nnmem__is_pow2(n))
    return cli_usage_error("verify",
                           "bad --align '%s': must be a power of "
                           "two >= 1",
                           v);
  if (id == VOPT_CAPACITY && n == 0)
    return cli_usage_error("verify", "bad --capacity '%s': must be > 0", v);
  if (id == VOPT_ALIGN)
    o->align = n;
  else
    o->capacity = n;
  return 0;
}

/* Returns -1 to continue, else the exit code. */
static int parse_verify_args(int argc, char **argv, verify_opts_t *o) {
  memset(o, 0, sizeof *o);
  cli_parse_t p = {"verify",
                   verify_table,
                   VOPT_HELP,
                   print_verify_help,
                   set_verify_option,
                   o,
                   {&o->problem_path, &o->solution_path, NULL}};
  int e = cli_args_parse(&p, argc, argv);
  if (e >= 0) return e;
  if (!o->problem_path) return cli_usage_error("verify", "missing PROBLEM.csv");
  if (o->solution_path && strcmp(o->problem_path, "-") == 0 &&
      strcmp(o->solution_path, "-") == 0)
    return cli_usage_error("verify", "only one input can be '-' (stdin)");
  return -1;
}

/* Offsets of the problem's buffers taken from the solution file. */
static nnmem_status_t match_offsets(const verify_opts_t *o,
                                    const nnmem_csv_t *pcsv,
                                    const nnmem_csv_t *scsv, uint64_t *offs,
                                    nnmem_diag_t *d) {
  const nnmem_problem_t *p = nnmem_csv_problem(pcsv);
  const nnmem_problem_t *s = nnmem_csv_problem(scsv);
  const uint64_t *so = nnmem_csv_offsets(scsv);
  size_t np = nnmem_problem_count(p), ns = nnmem_problem_count(s);
  if (!so)
    return nnmem__diag(d, NNMEM_ERR_PARSE, "%s: no 'offset' column",
                       o->solution_path);
  if (np != ns)
    return nnmem__diag(d, NNMEM_ERR_PARSE, "%s has %zu buffers but %s has %zu",
                       o->solution_path, ns, o->problem_path, np);
  for (size_t i = 0; i < np; i++) {
    const char *id = nnmem_problem_id(p, i);
    size_t j = i;
    if (id && nnmem_problem_find(s, id, &j) != NNMEM_OK)
      return nnmem__diag(d, NNMEM_ERR_NOT_FOUND,
                         "%s: no buffer '%s' (listed in %s)", o->solution_path,
                         id, o->problem_path);
    offs[i] = so[j];
  }
  return NNMEM_OK;
}

/* Fills a new array with the offsets to check (caller frees). */
static nnmem_status_t load_offsets(const verify_opts_t *o,
                                   const nnmem_csv_t *pcsv, uint64_t **out,
                                   nnmem_diag_t *d) {
  size_t n = nnmem_problem_count(nnmem_csv_problem(pcsv));
  *out = NULL;
  if (!o->solution_path && !nnmem_csv_offsets(pcsv))
    return nnmem__diag(d, NNMEM_ERR_PARSE,
                       "%s: no 'offset' column (give the solution file as a "
                       "second argument)",
                       o->problem_path);
  uint64_t *offs = calloc(n ? n : 1, sizeof *offs);
  if (!offs) return NNMEM_ERR_NOMEM;
  nnmem_status_t st = NNMEM_OK;
  if (!o->solution_path) {
    if (n) memcpy(offs, nnmem_csv_offsets(pcsv), n * sizeof *offs);
  } else {
    nnmem_csv_t *scsv = NULL;
    st = cli_read_csv(o->solution_path, o->max_input, &scsv, d);
    if (st == NNMEM_OK) st = match_offsets(o, pcsv, scsv, offs, d);
    nnmem_csv_destroy(scsv);
  }
  if (st != NNMEM_OK) {
    free(offs);
    return st;
  }
  *out = offs;
  return NNMEM_OK;
}

static void describe(const nnmem_problem_t *p, const uint64_t *offs, size_t i,
                     char *buf, size_t cap) {
  const nnmem_buffer_t *b = &nnmem_problem_buffers(p)[i];
  char nb[32];
  snprintf(buf, cap, "'%s' [%llu,%llu) @ [%llu,%llu)",
           cli_buffer_name(p, i, nb, sizeof nb), (unsigned long long)b->first,
           (unsigned long long)b->last, (unsigned long long)offs[i],
           (unsigned long long)(offs[i] + b->size));
}

/* Prints the verdict; returns the exit code. */
static int print_verdict(const verify_opts_t *o, const nnmem_problem_t *p,
                         const uint64_t *offs, const nnmem_verify_report_t *r,
                         nnmem_status_t st, const nnmem_diag_t *d) {
  char a[640], b[640], nb[32];
  const nnmem_buffer_t *bufs = nnmem_problem_buffers(p);
  FILE *f = o->quiet ? NULL : stdout;
  if (st == NNMEM_OK && r->valid) {
    uint64_t lb = 0;
    nnmem_problem_lower_bound(p, o->align, &lb);
    if (f)
      fprintf(f, "valid: height %llu (lower bound %llu, ratio %s)\n",
              (unsigned long long)r->height, (unsigned long long)lb,
              cli_fmt_ratio(r->height, lb, b, sizeof b));
    return CLI_EXIT_OK;
  }
  if (r->has_conflict) {
    describe(p, offs, r->conflict_a, a, sizeof a);
    describe(p, offs, r->conflict_b, b, sizeof b);
    if (f) fprintf(f, "conflict: buffers %s and %s overlap\n", a, b);
  } else if (r->overflow) {
    size_t i = r->overflow_index;
    if (f)
      fprintf(f,
              "overflow: buffer '%s' offset %llu + size %llu exceeds 64 "
              "bits\n",
              cli_buffer_name(p, i, nb, sizeof nb), (unsigned long long)offs[i],
              (unsigned long long)bufs[i].size);
  } else if (r->misaligned) {
    size_t i = r->misaligned_index;
    if (f)
      fprintf(f,
              "misaligned: buffer '%s' offset %llu is not a multiple of "
              "%llu\n",
              cli_buffer_name(p, i, nb, sizeof nb), (unsigned long long)offs[i],
              (unsigned long long)nnmem__max_u64(bufs[i].align, o->align));
  } else if (r->over_capacity) {
    if (f)
      fprintf(f, "over capacity: height %llu > capacity %llu\n",
              (unsigned long long)r->height, (unsigned long long)o->capacity);
    return CLI_EXIT_NOFIT;
  } else if (f) {
    fprintf(f, "invalid: %s\n",
            d->message[0] ? d->message : nnmem_status_str(st));
  }
  return CLI_EXIT_INVALID;
}

int cli_cmd_verify(int argc, char **argv) {
  verify_opts_t o;
  int e = parse_verify_args(argc, argv, &o);
  if (e >= 0) return e;
  nnmem_diag_t d = {{0}};
  nnmem_csv_t *csv = NULL;
  uint64_t *offs = NULL;
  nnmem_status_t st = cli_read_csv(o.problem_path, o.max_input, &csv, &d);
  if (st == NNMEM_OK) st = load_offsets(&o, csv, &offs, &d);
  if (st != NNMEM_OK) {
    nnmem_csv_destroy(csv);
    return cli_fail(st, &d);
  }
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  nnmem_verify_report_t rep;
  memset(&rep, 0, sizeof rep);
  st = nnmem_plan_verify(p, offs, o.align, o.capacity, &rep, &d);
  if (st != NNMEM_OK && st != NNMEM_ERR_CONFLICT && st != NNMEM_ERR_CAPACITY)
    e = cli_fail(st, &d);
  else
    e = print_verdict(&o, p, offs, &rep, st, &d);
  free(offs);
  nnmem_csv_destroy(csv);
  return e;
}

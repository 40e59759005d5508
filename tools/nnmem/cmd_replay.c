/* cmd_replay.c - `nnmem replay`: replays a buffer trace (MiniMalloc CSV:
 * allocate at `lower`, free at `upper`) through a pool on an unbacked
 * simulated device and reports what the pool had to reserve.
 *
 * Steps:
 *   1. read TRACE.csv with the library's CSV reader;
 *   2. for each pool kind asked for (--pool KIND, or --pool all), run
 *      nnmem_pool_replay (events in time order, frees first at equal times);
 *   3. print peak_live_bytes, peak_reserved_bytes, their ratio,
 *      fragmentation at the peak and ns per operation, as text or --json.
 * Errors print "nnmem: <where>: <what>" on stderr and exit 1 (bad input) or
 * 3 (the pool failed: out of memory).
 * Complexity: O(n log n) plus the pools. Thread-safety: single-threaded. */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "common/util.h"
#include "units.h"

int cli_cmd_replay(int argc, char **argv);

enum { ROPT_HELP, ROPT_POOL, ROPT_JSON, ROPT_ALIGN, ROPT_MAX_INPUT };

static const cli_opt_t replay_table[] = {
    {"help", 'h', 0, ROPT_HELP},
    {"pool", 'p', 1, ROPT_POOL},
    {"json", 'j', 0, ROPT_JSON},
    {"device-align", 'a', 1, ROPT_ALIGN},
    {"max-input-size", 0, 1, ROPT_MAX_INPUT},
    {NULL, 0, 0, 0}};

typedef struct replay_opts {
  const char *trace;
  int all;
  nnmem_pool_kind_t kind;
  int json;
  uint64_t align;
  uint64_t max_input; /* --max-input-size; 0 = default */
} replay_opts_t;

static void print_replay_help(void) {
  fputs(
      "Usage: nnmem replay TRACE.csv [options]\n"
      "\n"
      "Replays a buffer trace (MiniMalloc CSV: each buffer is allocated at\n"
      "`lower` and freed at `upper`; frees run before allocations at equal\n"
      "times) through a memory pool on a simulated device whose addresses\n"
      "are not backed by host memory, so traces larger than this machine's\n"
      "memory replay fine. Prints the peak live bytes, the peak bytes the\n"
      "pool reserved from the device, fragmentation at that peak, and the\n"
      "time per operation.\n"
      "\n"
      "Options:\n"
      "  -p, --pool KIND       tiered (default), tlsf, buddy, best-fit,\n"
      "                        first-fit, slab, or all (side by side)\n"
      "  -a, --device-align N  device alignment: 64, 128, 256 (default), 512\n"
      "  -j, --json            machine-readable output\n"
      "      --max-input-size SIZE  refuse larger traces (default 2GiB)\n"
      "  -h, --help            show this help\n"
      "TRACE.csv '-' is read from standard input.\n"
      "\n"
      "Exit codes: 0 ok; 1 bad usage or bad input; 3 the pool failed.\n",
      stdout);
}

static int set_replay_option(void *opts, int id, const char *v) {
  replay_opts_t *o = opts;
  const char *why = NULL;
  if (id == ROPT_JSON) {
    o->json = 1;
  } else if (id == ROPT_MAX_INPUT) {
    return cli_parse_max_input("replay", v, &o->max_input);
  } else if (id == ROPT_POOL) {
    if (strcmp(v, "all") == 0)
      o->all = 1;
    else if (nnmem_pool_kind_parse(v, &o->kind) != NNMEM_OK ||
             o->kind == NNMEM_POOL_FIXED)
      return cli_usage_error("replay",
                             "bad --pool '%s': expected tiered, tlsf, buddy, "
                             "best-fit, first-fit, slab or all",
                             v);
  } else if (id == ROPT_ALIGN) {
    if (cli_parse_size(v, &o->align, &why) != 0)
      return cli_usage_error("replay", "bad --device-align '%s': %s", v, why);
    if (o->align < 64 || o->align > 512 || !nnmem__is_pow2(o->align))
      return cli_usage_error("replay",
                             "bad --device-align '%s': must be 64, 128, 256 "
                             "or 512",
                             v);
  }
  return 0;
}

/* Returns -1 to continue, else the exit code. */
static int parse_replay_args(int argc, char **argv, replay_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->kind = NNMEM_POOL_TIERED;
  o->align = 256;
  cli_parse_t p = {"replay",          replay_table,      ROPT_HELP,
                   print_replay_help, set_replay_option, o,
                   {&o->trace, NULL}};
  int e = cli_args_parse(&p, argc, argv);
  if (e >= 0) return e;
  if (!o->trace) return cli_usage_error("replay", "missing TRACE.csv");
  return -1;
}

static void print_text(const char *kind, const nnmem_replay_result_t *r) {
  char a[64], b[64];
  printf("pool: %s\n", kind);
  printf("  peak_live_bytes:     %s\n",
         cli_fmt_bytes(r->peak_live_bytes, a, sizeof a));
  printf(
      "  peak_reserved_bytes: %s  (%s live)\n",
      cli_fmt_bytes(r->peak_reserved_bytes, a, sizeof a),
      cli_fmt_ratio(r->peak_reserved_bytes, r->peak_live_bytes, b, sizeof b));
  printf("  fragmentation:       %.4f (at the reservation peak)\n",
         r->fragmentation);
  printf(
      "  ns_per_op:           %.1f  (%llu operations, %llu device "
      "requests)\n",
      r->ns_per_op, (unsigned long long)r->operations,
      (unsigned long long)r->backend_allocs);
}

static void print_json(const char *trace, const char *kind,
                       const nnmem_replay_result_t *r, int first) {
  printf("%s{\"trace\":\"", first ? "" : ",\n ");
  for (const unsigned char *c = (const unsigned char *)trace; *c; c++) {
    if (*c < 0x20) /* JSON allows no raw control character */
      printf("\\u%04x", *c);
    else
      printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
  }
  printf(
      "\",\"pool\":\"%s\",\"operations\":%llu,\"peak_live_bytes\":%llu,"
      "\"peak_reserved_bytes\":%llu,\"reserved_over_live\":%.6f,"
      "\"fragmentation\":%.6f,\"ns_per_op\":%.2f,\"device_requests\":%llu}",
      kind, (unsigned long long)r->operations,
      (unsigned long long)r->peak_live_bytes,
      (unsigned long long)r->peak_reserved_bytes, r->reserved_over_live,
      r->fragmentation, r->ns_per_op, (unsigned long long)r->backend_allocs);
}

int cli_cmd_replay(int argc, char **argv) {
  replay_opts_t o;
  int rc = parse_replay_args(argc, argv, &o);
  if (rc >= 0) return rc;
  nnmem_diag_t d = {{0}};
  nnmem_csv_t *csv = NULL;
  nnmem_status_t st = cli_read_csv(o.trace, o.max_input, &csv, &d);
  if (st != NNMEM_OK) return cli_fail(st, &d);
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  nnmem_pool_kind_t first = o.all ? NNMEM_POOL_TIERED : o.kind;
  nnmem_pool_kind_t last = o.all ? NNMEM_POOL_SLAB : o.kind;
  if (o.json)
    printf(o.all ? "[" : "");
  else
    printf("trace: %s (%zu buffers)\n", o.trace, nnmem_problem_count(p));
  for (int k = (int)first; k <= (int)last; k++) {
    nnmem_replay_result_t r;
    st = nnmem_pool_replay(p, (nnmem_pool_kind_t)k, NULL, o.align, &r, &d);
    if (st != NNMEM_OK) break;
    const char *name = nnmem_pool_kind_name((nnmem_pool_kind_t)k);
    if (o.json)
      print_json(o.trace, name, &r, k == (int)first);
    else
      print_text(name, &r);
  }
  if (o.json) printf(o.all ? "]\n" : "\n");
  nnmem_csv_destroy(csv);
  if (st != NNMEM_OK) return cli_fail(st, &d);
  return CLI_EXIT_OK;
}

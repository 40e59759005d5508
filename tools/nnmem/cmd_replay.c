/* cmd_replay.c - `nnmem replay`: replays a buffer trace (MiniMalloc CSV:
 * allocate at `lower`, free at `upper`) through a pool on an unbacked
 * simulated device and reports what the pool had to reserve.
 *
 * Steps:
 *   1. read TRACE.csv with the library's CSV reader;
 *   2. for each pool kind asked for (--pool KIND, or --pool all), run
 *      nnmem_pool_replay (events in time order, frees first at equal times);
 *   3. print peak_live_bytes, peak_reserved_bytes, their ratio,
 *      fragmentation at the peak (1 - largest free block / free bytes
 *      inside the reserved regions, at the moment the reservation peaked)
 *      and ns per operation, as text or --json (always a list of pool
 *      results, one per pool, through the one JSON writer);
 *   4. --prometheus: every pool's stats after its replay, one label set
 *      (pool="KIND") per pool, in the text exposition format;
 *   4b. --metrics-port: a live endpoint (nnmem/metrics.h) serves /metrics
 *      while the command runs, each pool's stats once its replay is done
 *      (and --metrics-linger seconds after); a port in use is reported
 *      on stderr and the replay goes on without it, then exits 1;
 *   5. --defrag off|auto: the trace also runs through a handle heap
 *      (nnmem_heap_replay) of --heap-capacity bytes (default 1.05 x the
 *      peak live bytes), without compaction and, for auto, with it: two more
 *      results (pool "heap", defrag "off" / "auto") with fragmentation over
 *      time (up to 64 samples), compactions and bytes moved; the heap's
 *      memory is the --backend's (one region of its capacity), or with
 *      --segment host-vm / cuda-vm a growable segment (host address space,
 *      or GPU virtual addresses through the CUDA driver's virtual memory
 *      API over --backend cuda) committed granule by granule; --remap lets
 *      compaction move whole pages / granules by remapping them (bytes
 *      remapped reported beside bytes moved);
 *   6. --numa-nodes N: the trace also runs through a NUMA pool of the
 *      same kind over N simulated nodes (replay_numa.c says who allocates
 *      and frees what): the total and per-node records (allocations,
 *      remote frees, peak reserved bytes), in every output format.
 *   7. --tenants N [--quota SIZE]: instead, the trace is shared by N tenant
 *      domains over one pool (nnmem_domain_replay: buffer i belongs to
 *      tenant i % N; at each free the next tenant first tries to free the
 *      block without a grant, which must be refused; every fourth block of
 *      a tenant is freed by the next one under a grant): per-tenant use,
 *      peak, refusals by reason, isolation checks performed and refused, as
 *      text, --json (one result with a "per_tenant" list) or --prometheus
 *      (the pool's families, then nnmem_domain_*{domain="tenantI"}).
 * Errors print "nnmem: <where>: <what>" on stderr and exit 1 (bad input) or
 * 3 (the pool failed: out of memory; a tenant probe was not refused).
 * Complexity: O(n log n) plus the pools. Thread-safety: single-threaded. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "replay_numa.h"
#include "suggest.h"
#include "cli.h"
#include "common/util.h"
#include "runtime/stats_internal.h"
#include "units.h"

int cli_cmd_replay(int argc, char **argv);

enum {
  ROPT_HELP,
  ROPT_POOL,
  ROPT_JSON,
  ROPT_ALIGN,
  ROPT_PROM,
  ROPT_MAX_INPUT,
  ROPT_DEFRAG,
  ROPT_HEAP_CAP,
  ROPT_LAT_HIGH,
  ROPT_LAT_EVERY,
  ROPT_BACKEND,
  ROPT_NUMA,
  ROPT_TENANTS,
  ROPT_QUOTA,
  ROPT_METRICS_PORT,
  ROPT_METRICS_ADDR,
  ROPT_METRICS_LINGER,
  ROPT_SEGMENT,
  ROPT_REMAP
};

static const cli_opt_t replay_table[] = {
    {"help", 'h', 0, ROPT_HELP},
    {"pool", 'p', 1, ROPT_POOL},
    {"json", 'j', CLI_OPT_INLINE, ROPT_JSON},
    {"prometheus", 0, 0, ROPT_PROM},
    {"device-align", 'a', 1, ROPT_ALIGN},
    {"max-input-size", 0, 1, ROPT_MAX_INPUT},
    {"defrag", 0, 1, ROPT_DEFRAG},
    {"heap-capacity", 0, 1, ROPT_HEAP_CAP},
    {"lat-high", 0, 1, ROPT_LAT_HIGH},
    {"lat-every", 0, 1, ROPT_LAT_EVERY},
    {"backend", 0, 1, ROPT_BACKEND},
    {"numa-nodes", 0, 1, ROPT_NUMA},
    {"tenants", 0, 1, ROPT_TENANTS},
    {"quota", 0, 1, ROPT_QUOTA},
    {"metrics-port", 0, 1, ROPT_METRICS_PORT},
    {"metrics-addr", 0, 1, ROPT_METRICS_ADDR},
    {"metrics-linger", 0, 1, ROPT_METRICS_LINGER},
    {"segment", 0, 1, ROPT_SEGMENT},
    {"remap", 0, 0, ROPT_REMAP},
    {NULL, 0, 0, 0}};

#define N_REPLAY_POOLS (NNMEM_POOL_SLAB - NNMEM_POOL_TIERED + 1)

typedef struct replay_opts {
  const char *trace;
  int all;
  nnmem_pool_kind_t kind;
  int json; /* CLI_JSON_* */
  int prometheus;
  uint64_t align;
  uint64_t max_input;     /* --max-input-size; 0 = default */
  int defrag;             /* 0 none, 1 off, 2 auto */
  uint64_t heap_capacity; /* 0 = 1.05 x peak live */
  double lat_high;        /* --lat-high; 0 = latency signal off */
  uint64_t lat_every;     /* --lat-every; 0 = the heap's default */
  int backend;            /* BACKEND_* */
  uint32_t numa_nodes;    /* --numa-nodes; 0 = no NUMA run */
  uint32_t tenants;       /* --tenants; 0 = no domains */
  uint64_t quota;         /* --quota; UINT64_MAX = none given */
  int metrics;            /* --metrics-port given */
  uint16_t metrics_port;
  const char *metrics_addr; /* NULL = 127.0.0.1 */
  double metrics_linger;    /* seconds to keep serving after the replay */
  int segment;              /* --segment: SEGMENT_*; -1 = not given */
  int remap;                /* --remap */
} replay_opts_t;

enum { BACKEND_SIM = 0, BACKEND_HOST, BACKEND_MMAP, BACKEND_CUDA };

/* --segment names, in nnmem_segment_kind_t order. */
static const char *const segment_names[] = {"backend", "host-vm", "cuda-vm"};

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
      "Fragmentation is 1 - largest free block / free bytes, over the free\n"
      "bytes inside what the pool had reserved, at the moment its reservation\n"
      "peaked: 0 means all free memory was one block; 0.9 means the largest\n"
      "free block was a tenth of it.\n"
      "\n"
      "Options:\n"
      "  -p, --pool KIND       tiered (default), tlsf, buddy, best-fit,\n"
      "                        first-fit, slab, shape (one preallocated\n"
      "                        block of the trace's total bytes, never\n"
      "                        grown), or all (side by side; not shape)\n"
      "  -a, --device-align N  device alignment: 64, 128, 256 (default), 512\n"
      "  -j, --json[=compact]  machine-readable output: a list with one\n"
      "                        result per pool (pretty, or compact)\n"
      "      --prometheus      after the replay, print each pool's stats in\n"
      "                        the Prometheus text format (label pool=KIND)\n"
      "      --max-input-size SIZE  refuse larger traces (default 2GiB)\n"
      "      --defrag MODE     also replay through a handle heap (one\n"
      "                        contiguous segment, best fit): off, or auto\n"
      "                        (off and, side by side, compaction when an\n"
      "                        allocation finds no gap); fragmentation over\n"
      "                        time, compactions, bytes moved\n"
      "      --heap-capacity SIZE  the heap's bytes (default 1.05 x the\n"
      "                        peak live bytes; with --segment cuda-vm\n"
      "                        --remap also 2 MiB per buffer of 2 MiB or\n"
      "                        more live at once: those are aligned to the\n"
      "                        granule so that compaction can remap them)\n"
      "      --segment KIND    the heap's memory (with --defrag): backend\n"
      "                        (default: one region of its capacity from\n"
      "                        --backend), host-vm (reserved host address\n"
      "                        space, committed in 64 KiB granules as blocks\n"
      "                        touch them) or cuda-vm (GPU virtual addresses,\n"
      "                        committed granule by granule with the CUDA\n"
      "                        driver's virtual memory API; needs --backend\n"
      "                        cuda and a device with virtual memory\n"
      "                        management)\n"
      "      --remap           with --segment host-vm or cuda-vm: compaction\n"
      "                        moves whole pages (mremap) or granules (their\n"
      "                        physical memory remapped) instead of copying\n"
      "                        them; bytes_remapped says how many\n"
      "      --lat-high RATIO  with --defrag auto: also compact when the\n"
      "                        allocation latency rises, i.e. its moving\n"
      "                        average reaches RATIO x its lowest value\n"
      "                        (RATIO > 1, e.g. 2; re-armed below\n"
      "                        min(1.25, RATIO) x; needs utilization >=\n"
      "                        70%). Reads the clock, so compactions vary\n"
      "                        from run to run; default off\n"
      "      --lat-every N     time one allocation in N (default 16)\n"
      "      --backend NAME    where the pools get memory: sim (default:\n"
      "                        the unbacked simulated device), host, mmap\n"
      "                        (real host memory: live bytes must fit), or\n"
      "                        cuda (GPU memory through the CUDA driver;\n"
      "                        device alignment 256)\n"
      "      --numa-nodes N    also replay through a NUMA pool of the same\n"
      "                        kind over N simulated nodes (1-64), each on\n"
      "                        its own simulated device: buffer i is\n"
      "                        allocated by node i mod N and freed by it,\n"
      "                        every 4th of a node's by the next node;\n"
      "                        per-node stats\n"
      "      --tenants N       share the trace among N tenant domains (1 to\n"
      "                        64; buffer i belongs to tenant i % N) over one\n"
      "                        pool: per-tenant use and peak, refusals by\n"
      "                        reason, isolation checks (at each free the\n"
      "                        next tenant tries to free the block without\n"
      "                        a grant: refused; every 4th block of a tenant\n"
      "                        is freed by the next one under a grant)\n"
      "      --quota SIZE      each tenant's quota (default: none); a\n"
      "                        buffer past it is refused and skipped\n"
      "      --metrics-port N  serve /metrics (Prometheus text format) on\n"
      "                        this port while the command runs: each pool's\n"
      "                        stats once its replay is done; 0 = any free\n"
      "                        port\n"
      "                        (the address is printed on stderr). A port\n"
      "                        in use is reported and the replay goes on\n"
      "                        without the endpoint\n"
      "      --metrics-addr A  the address to bind (default 127.0.0.1)\n"
      "      --metrics-linger S  keep serving S seconds after the replay\n"
      "  -h, --help            show this help\n"
      "TRACE.csv '-' is read from standard input.\n"
      "\n"
      "Exit codes: 0 ok; 1 bad usage or bad input; 3 the pool failed (or,\n"
      "with --tenants, a cross-tenant free without a grant was not refused).\n",
      stdout);
}

static int set_replay_option(void *opts, int id, const char *v) {
  replay_opts_t *o = opts;
  const char *why = NULL;
  if (id == ROPT_JSON) {
    return cli_json_option("replay", v, &o->json);
  } else if (id == ROPT_PROM) {
    o->prometheus = 1;
  } else if (id == ROPT_METRICS_PORT) {
    char *end = NULL;
    unsigned long port = strtoul(v, &end, 10);
    if (!*v || *end || port > 65535 || v[0] == '-')
      return cli_usage_error("replay",
                             "--metrics-port wants 0..65535, not '%s'", v);
    o->metrics = 1;
    o->metrics_port = (uint16_t)port;
  } else if (id == ROPT_METRICS_ADDR) {
    o->metrics_addr = v;
  } else if (id == ROPT_REMAP) {
    o->remap = 1;
  } else if (id == ROPT_SEGMENT) {
    int k = 0;
    while (k < 3 && strcmp(v, segment_names[k]) != 0)
      k++;
    if (k == 3) {
      char hint[96];
      return cli_usage_error(
          "replay", "bad --segment '%s': expected backend, host-vm or cuda-vm%s",
          v, cli_did_you_mean(cli_suggest(v, segment_names, 3), hint,
                              sizeof hint));
    }
    o->segment = k;
  } else if (id == ROPT_METRICS_LINGER) {
    char *end = NULL;
    o->metrics_linger = strtod(v, &end);
    if (!*v || *end || !(o->metrics_linger >= 0) || o->metrics_linger > 86400)
      return cli_usage_error("replay",
                             "--metrics-linger wants seconds in [0, 86400], "
                             "not '%s'",
                             v);
  } else if (id == ROPT_MAX_INPUT) {
    return cli_parse_max_input("replay", v, &o->max_input);
  } else if (id == ROPT_DEFRAG) {
    if (strcmp(v, "off") == 0)
      o->defrag = 1;
    else if (strcmp(v, "auto") == 0)
      o->defrag = 2;
    else {
      static const char *const modes[] = {"off", "auto"};
      char hint[64];
      return cli_usage_error(
          "replay", "bad --defrag '%s': expected off or auto%s", v,
          cli_did_you_mean(cli_suggest(v, modes, 2), hint, sizeof hint));
    }
  } else if (id == ROPT_LAT_HIGH) {
    char *end = NULL;
    o->lat_high = strtod(v, &end);
    if (!*v || *end || !(o->lat_high > 1) || o->lat_high > 1e6)
      return cli_usage_error("replay",
                             "bad --lat-high '%s': expected a ratio above 1 "
                             "(e.g. 2)",
                             v);
  } else if (id == ROPT_LAT_EVERY) {
    if (cli_parse_uint(v, UINT32_MAX, &o->lat_every, &why) != 0 ||
        o->lat_every == 0)
      return cli_usage_error("replay", "bad --lat-every '%s': %s", v,
                             why ? why : "must be 1 or more");
  } else if (id == ROPT_HEAP_CAP) {
    if (cli_parse_size(v, &o->heap_capacity, &why) != 0 ||
        o->heap_capacity == 0)
      return cli_usage_error("replay", "bad --heap-capacity '%s': %s", v,
                             why ? why : "must be > 0");
  } else if (id == ROPT_POOL) {
    if (strcmp(v, "all") == 0)
      o->all = 1;
    else if (nnmem_pool_kind_parse(v, &o->kind) != NNMEM_OK ||
             o->kind == NNMEM_POOL_FIXED) {
      static const char *const kinds[] = {"tiered",   "tlsf",      "buddy",
                                          "best-fit", "first-fit", "slab",
                                          "shape",    "all"};
      char hint[64];
      return cli_usage_error(
          "replay",
          "bad --pool '%s': expected tiered, tlsf, buddy, best-fit, "
          "first-fit, slab, shape or all%s",
          v, cli_did_you_mean(cli_suggest(v, kinds, 8), hint, sizeof hint));
    }
  } else if (id == ROPT_BACKEND) {
    static const char *const names[] = {"sim", "host", "mmap", "cuda"};
    int k = 0;
    while (k < 4 && strcmp(v, names[k]) != 0)
      k++;
    if (k == 4) {
      char hint[96];
      return cli_usage_error(
          "replay", "bad --backend '%s': expected sim, host, mmap or cuda%s", v,
          cli_did_you_mean(cli_suggest(v, names, 4), hint, sizeof hint));
    }
    o->backend = k;
  } else if (id == ROPT_NUMA) {
    uint64_t n = 0;
    if (cli_parse_uint(v, NNMEM_NUMA_MAX_NODES, &n, &why) != 0 || n == 0)
      return cli_usage_error("replay", "bad --numa-nodes '%s': %s", v,
                             why ? why : "must be 1 to 64");
    o->numa_nodes = (uint32_t)n;
  } else if (id == ROPT_TENANTS) {
    uint64_t n = 0;
    if (cli_parse_size(v, &n, &why) != 0 || n < 1 || n > NNMEM_DOMAIN_MAX)
      return cli_usage_error("replay", "bad --tenants '%s': expected 1 to %d",
                             v, NNMEM_DOMAIN_MAX);
    o->tenants = (uint32_t)n;
  } else if (id == ROPT_QUOTA) {
    if (cli_parse_size(v, &o->quota, &why) != 0)
      return cli_usage_error("replay", "bad --quota '%s': %s", v, why);
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
  o->quota = UINT64_MAX;
  o->segment = -1;
  cli_parse_t p = {"replay",
                   replay_table,
                   ROPT_HELP,
                   print_replay_help,
                   set_replay_option,
                   o,
                   {&o->trace, NULL},
                   NULL,
                   0,
                   NULL};
  int e = cli_args_parse(&p, argc, argv);
  if (e >= 0) return e;
  if (!o->trace) return cli_usage_error("replay", "missing TRACE.csv");
  if (o->heap_capacity && !o->defrag)
    return cli_usage_error("replay", "--heap-capacity needs --defrag");
  if (o->segment >= 0 && !o->defrag)
    return cli_usage_error("replay",
                           "--segment chooses the heap's memory: it needs "
                           "--defrag");
  if (o->segment == NNMEM_SEGMENT_CUDA_VM && o->backend != BACKEND_CUDA)
    return cli_usage_error("replay",
                           "--segment cuda-vm reserves GPU virtual addresses: "
                           "it needs --backend cuda");
  if (o->remap && o->segment != NNMEM_SEGMENT_HOST_VM &&
      o->segment != NNMEM_SEGMENT_CUDA_VM)
    return cli_usage_error("replay",
                           "--remap needs --segment host-vm or cuda-vm (one "
                           "backend region has no pages to remap)");
  if ((o->lat_high > 0 || o->lat_every) && o->defrag != 2)
    return cli_usage_error("replay",
                           "--lat-high and --lat-every need --defrag auto");
  if (o->lat_every && !(o->lat_high > 0))
    return cli_usage_error("replay", "--lat-every needs --lat-high");
  if (o->defrag && o->prometheus)
    return cli_usage_error("replay",
                           "--defrag results have no Prometheus form; use "
                           "--json");
  if (o->numa_nodes && (o->all || o->kind == NNMEM_POOL_SHAPE))
    return cli_usage_error("replay",
                           "--numa-nodes needs one growing pool kind (not "
                           "all, not shape)");
  if (o->numa_nodes && o->backend != BACKEND_SIM)
    return cli_usage_error("replay",
                           "--numa-nodes runs on simulated devices; drop "
                           "--backend");
  if (o->tenants && o->numa_nodes)
    return cli_usage_error("replay",
                           "--tenants and --numa-nodes are two different "
                           "replays; give one");
  if (o->quota != UINT64_MAX && !o->tenants)
    return cli_usage_error("replay", "--quota needs --tenants");
  if (o->tenants && (o->all || o->defrag || o->backend != BACKEND_SIM ||
                     o->kind == NNMEM_POOL_SHAPE))
    return cli_usage_error("replay",
                           "--tenants replays on the simulated device through "
                           "one pool: no --pool all or shape, --defrag or "
                           "--backend");
  if (o->json && o->prometheus)
    return cli_usage_error("replay",
                           "--json and --prometheus are two output formats; "
                           "give one");
  if ((o->metrics_addr || o->metrics_linger > 0) && !o->metrics)
    return cli_usage_error("replay",
                           "--metrics-addr and --metrics-linger need "
                           "--metrics-port");
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
  printf(
      "  fragmentation:       %.4f (1 - largest free block / free bytes, at "
      "the reservation peak)\n",
      r->fragmentation);
  printf(
      "  ns_per_op:           %.1f  (%llu operations, %llu device "
      "requests)\n",
      r->ns_per_op, (unsigned long long)r->operations,
      (unsigned long long)r->backend_allocs);
}

static void put_json(nnmem__jw_t *w, const char *trace, const char *kind,
                     const nnmem_replay_result_t *r) {
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "trace", trace);
  nnmem__jw_kv_string(w, "pool", kind);
  nnmem__jw_kv_u64(w, "operations", r->operations);
  nnmem__jw_kv_u64(w, "peak_live_bytes", r->peak_live_bytes);
  nnmem__jw_kv_u64(w, "peak_reserved_bytes", r->peak_reserved_bytes);
  nnmem__jw_kv_double(w, "reserved_over_live", r->reserved_over_live);
  nnmem__jw_kv_double(w, "fragmentation", r->fragmentation);
  nnmem__jw_kv_double(w, "ns_per_op", r->ns_per_op);
  nnmem__jw_kv_u64(w, "device_requests", r->backend_allocs);
  nnmem__jw_end(w);
}

/* Prints the stats of the `n` replayed pools in the Prometheus format. */
static int print_prometheus(const nnmem_stats_t *st, size_t n) {
  size_t len = 0;
  nnmem_status_t s = nnmem_stats_format_prometheus(st, n, NULL, 0, &len);
  char *buf = s == NNMEM_ERR_OVERFLOW || s == NNMEM_OK ? malloc(len + 1) : NULL;
  if (buf) s = nnmem_stats_format_prometheus(st, n, buf, len + 1, &len);
  if (!buf || s != NNMEM_OK) {
    free(buf);
    return cli_fail(buf ? s : NNMEM_ERR_NOMEM, NULL);
  }
  fwrite(buf, 1, len, stdout);
  free(buf);
  return CLI_EXIT_OK;
}

#define HEAP_SAMPLES 64

typedef struct heap_run {
  nnmem_heap_replay_result_t r;
  uint64_t every, n;
  uint64_t op[HEAP_SAMPLES], live[HEAP_SAMPLES], committed[HEAP_SAMPLES];
  double frag[HEAP_SAMPLES];
  char device_error[256]; /* cuda: the driver's words when one did not fit */
} heap_run_t;

static void heap_sample(void *user, uint64_t op, uint64_t live,
                        uint64_t committed, double frag) {
  heap_run_t *h = user;
  if (op % h->every != 0 || h->n >= HEAP_SAMPLES) return;
  h->op[h->n] = op;
  h->live[h->n] = live;
  h->committed[h->n] = committed;
  h->frag[h->n++] = frag;
}

static nnmem_status_t heap_replay(const replay_opts_t *o,
                                  const nnmem_problem_t *p, uint64_t cap,
                                  int autom, nnmem_backend_t *be,
                                  heap_run_t *h, nnmem_diag_t *d) {
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.capacity = cap;
  c.segment = o->segment > 0 ? (nnmem_segment_kind_t)o->segment
                             : NNMEM_SEGMENT_BACKEND;
  c.remap = o->remap;
  c.defrag = autom ? NNMEM_DEFRAG_AUTO : NNMEM_DEFRAG_OFF;
  if (autom && o->lat_high > 0) { /* the latency signal (heap.h) */
    c.lat_high = o->lat_high;
    c.lat_low = o->lat_high < 1.25 ? o->lat_high : 1.25;
    c.lat_every = (uint32_t)o->lat_every;
  }
  memset(h, 0, sizeof *h);
  h->every = 2 * (uint64_t)nnmem_problem_count(p) / HEAP_SAMPLES + 1;
  return nnmem_heap_replay_backend(p, &c, be, heap_sample, h, &h->r, d);
}

/* ", segment cuda-vm, remap" for a segment other than the default. */
static const char *segment_note(const replay_opts_t *o, char *buf,
                                size_t cap) {
  buf[0] = 0;
  if (o->segment > 0)
    snprintf(buf, cap, ", segment %s%s", segment_names[o->segment],
             o->remap ? ", remap" : "");
  return buf;
}

static void heap_text(const replay_opts_t *o, const char *mode, uint64_t cap,
                      double lat_high, const heap_run_t *h) {
  char a[64], b[64], seg[64];
  const nnmem_heap_replay_result_t *r = &h->r;
  printf("pool: heap (defrag %s, capacity %s%s)\n", mode,
         cli_fmt_bytes(cap, a, sizeof a), segment_note(o, seg, sizeof seg));
  if (r->failed_at)
    printf("  fits:                no (buffer %llu did not fit)\n",
           (unsigned long long)(r->failed_at - 1));
  if (r->failed_at && h->device_error[0])
    printf("  device:              %s\n", h->device_error);
  if (!r->failed_at)
    printf("  fits:                yes\n");
  printf("  peak_live_bytes:     %s\n",
         cli_fmt_bytes(r->peak_live_bytes, a, sizeof a));
  printf("  peak_top:            %s  (%s live)\n",
         cli_fmt_bytes(r->peak_top, a, sizeof a),
         cli_fmt_ratio(r->peak_top, r->peak_live_bytes, b, sizeof b));
  printf(
      "  fragmentation:       mean %.4f, max %.4f (1 - largest "
      "allocatable block / free bytes, after each allocation)\n",
      r->frag_mean, r->frag_max);
  if (o->segment > 0)
    printf("  compactions:         %llu (%s moved, %s of it by remapping)\n",
           (unsigned long long)r->compactions,
           cli_fmt_bytes(r->bytes_moved, a, sizeof a),
           cli_fmt_bytes(r->bytes_remapped, b, sizeof b));
  else
    printf("  compactions:         %llu (%s moved)\n",
           (unsigned long long)r->compactions,
           cli_fmt_bytes(r->bytes_moved, a, sizeof a));
  if (lat_high > 0)
    printf(
        "  latency signal:      %llu compactions at >= %gx the lowest "
        "average (%llu allocations timed)\n",
        (unsigned long long)r->compactions_latency, lat_high,
        (unsigned long long)r->lat_samples);
}

static void heap_json(nnmem__jw_t *w, const replay_opts_t *o,
                      const char *mode, uint64_t cap, double lat_high,
                      const heap_run_t *h) {
  const nnmem_heap_replay_result_t *r = &h->r;
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "trace", o->trace);
  nnmem__jw_kv_string(w, "pool", "heap");
  nnmem__jw_kv_string(w, "defrag", mode);
  nnmem__jw_kv_string(w, "segment",
                      segment_names[o->segment > 0 ? o->segment : 0]);
  nnmem__jw_key(w, "remap");
  nnmem__jw_bool(w, o->remap);
  nnmem__jw_kv_u64(w, "capacity", cap);
  nnmem__jw_kv_u64(w, "operations", r->operations);
  nnmem__jw_key(w, "fits");
  nnmem__jw_bool(w, r->failed_at == 0);
  nnmem__jw_kv_u64(w, "failed_buffer", r->failed_at ? r->failed_at - 1 : 0);
  if (r->failed_at && h->device_error[0])
    nnmem__jw_kv_string(w, "device_error", h->device_error);
  nnmem__jw_kv_u64(w, "peak_live_bytes", r->peak_live_bytes);
  nnmem__jw_kv_u64(w, "peak_committed_bytes", r->peak_committed_bytes);
  nnmem__jw_kv_u64(w, "peak_top", r->peak_top);
  nnmem__jw_kv_double(w, "fragmentation_mean", r->frag_mean);
  nnmem__jw_kv_double(w, "fragmentation_max", r->frag_max);
  nnmem__jw_kv_u64(w, "compactions", r->compactions);
  nnmem__jw_kv_u64(w, "bytes_moved", r->bytes_moved);
  nnmem__jw_kv_u64(w, "bytes_remapped", r->bytes_remapped);
  if (lat_high > 0) {
    nnmem__jw_kv_double(w, "lat_high", lat_high);
    nnmem__jw_kv_u64(w, "compactions_latency", r->compactions_latency);
    nnmem__jw_kv_u64(w, "lat_samples", r->lat_samples);
  }
  nnmem__jw_key(w, "timeline");
  nnmem__jw_array(w);
  for (uint64_t i = 0; i < h->n; i++) {
    nnmem__jw_object(w);
    nnmem__jw_kv_u64(w, "operation", h->op[i]);
    nnmem__jw_kv_u64(w, "live_bytes", h->live[i]);
    nnmem__jw_kv_u64(w, "committed_bytes", h->committed[i]);
    nnmem__jw_kv_double(w, "fragmentation", h->frag[i]);
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
  nnmem__jw_end(w);
}

/* The granularity of current GPUs' physical allocations, for the default
 * capacity of a remapping CUDA VM heap (a larger device granule only
 * shows as "fits: no"; give --heap-capacity then). */
#define CUDA_VM_GRANULE (2u << 20)

typedef struct big_event {
  uint64_t t;
  int d; /* -1 free, +1 alloc: frees first at equal steps */
} big_event_t;

static int big_cmp(const void *a, const void *b) {
  const big_event_t *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->d - y->d;
}

/* The most buffers of at least g bytes live at once: with --remap on CUDA
 * VM each is aligned to the granule (nnmem_heap_replay_backend) and may
 * leave up to a granule of padding before it. */
static uint64_t max_live_big(const nnmem_problem_t *p, uint64_t g) {
  size_t n = nnmem_problem_count(p), k = 0;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  big_event_t *ev = malloc((2 * n + 1) * sizeof *ev);
  if (!ev) return n; /* every buffer: an upper bound */
  for (size_t i = 0; i < n; i++)
    if (b[i].size >= g) {
      ev[k++] = (big_event_t){b[i].first, 1};
      ev[k++] = (big_event_t){b[i].last, -1};
    }
  qsort(ev, k, sizeof *ev, big_cmp);
  int64_t live = 0, most = 0;
  for (size_t i = 0; i < k; i++)
    if ((live += ev[i].d) > most) most = live;
  free(ev);
  return (uint64_t)most;
}

/* The heap runs of --defrag: off, and auto when asked, on `be` (NULL: the
 * unbacked simulated device). A CUDA driver error gets the driver's text. */
static nnmem_status_t run_heaps(const replay_opts_t *o,
                                const nnmem_problem_t *p, nnmem_backend_t *be,
                                nnmem__jw_t *w, nnmem_diag_t *d) {
  uint64_t cap = o->heap_capacity;
  if (!cap) {
    uint64_t lb = 0;
    nnmem_status_t s = nnmem_problem_lower_bound(p, 256, &lb);
    if (s != NNMEM_OK) return s;
    cap = lb + lb / 20;
    if (o->segment == NNMEM_SEGMENT_CUDA_VM && o->remap) /* the padding */
      cap += max_live_big(p, CUDA_VM_GRANULE) * CUDA_VM_GRANULE;
    if (cap < 65536) cap = 65536;
  }
  heap_run_t *h = malloc(sizeof *h);
  if (!h) return NNMEM_ERR_NOMEM;
  nnmem_status_t s = NNMEM_OK;
  for (int mode = 0; mode < o->defrag && s == NNMEM_OK; mode++) {
    const char *name = mode ? "auto" : "off";
    char before[256] = ""; /* the driver's words, only when new */
    if (o->backend == BACKEND_CUDA)
      snprintf(before, sizeof before, "%s", nnmem_backend_cuda_last_error(be));
    s = heap_replay(o, p, cap, mode, be, h, d);
    if (s != NNMEM_OK) break;
    if (h->r.failed_at && o->backend == BACKEND_CUDA &&
        strcmp(before, nnmem_backend_cuda_last_error(be)) != 0)
      snprintf(h->device_error, sizeof h->device_error, "%s",
               nnmem_backend_cuda_last_error(be));
    double lat = mode ? o->lat_high : 0;
    if (o->json)
      heap_json(w, o, name, cap, lat, h);
    else
      heap_text(o, name, cap, lat, h);
  }
  free(h);
  const char *cuda = o->backend == BACKEND_CUDA && be
                         ? nnmem_backend_cuda_last_error(be)
                         : NULL;
  if (s != NNMEM_OK && cuda && cuda[0] && !strstr(d->message, cuda)) {
    size_t n = strlen(d->message);
    snprintf(d->message + n, sizeof d->message - n, " (CUDA: %s)", cuda);
  }
  return s;
}

/* The NUMA run's records: text table or JSON objects (total first). */
static void numa_text(const replay_opts_t *o, const nnmem_stats_t *st) {
  char a[64];
  printf(
      "pool: numa (%s on %u simulated nodes; buffer i allocated by node "
      "i mod %u, every 4th of a node's freed by the next)\n",
      nnmem_pool_kind_name(o->kind), (unsigned)o->numa_nodes,
      (unsigned)o->numa_nodes);
  printf("  %-6s %12s %13s %14s  %s\n", "node", "allocations", "remote_frees",
         "remote_allocs", "peak_reserved_bytes");
  for (uint32_t k = 0; k <= o->numa_nodes; k++) {
    const nnmem_stats_t *s = &st[k == o->numa_nodes ? 0 : k + 1];
    char node[16];
    snprintf(node, sizeof node, "%u", (unsigned)k);
    printf("  %-6s %12llu %13llu %14llu  %s\n",
           k == o->numa_nodes ? "total" : node,
           (unsigned long long)s->alloc_count,
           (unsigned long long)s->remote_frees,
           (unsigned long long)s->remote_allocs,
           cli_fmt_bytes(s->reserved_bytes_peak, a, sizeof a));
  }
}

static void numa_json(nnmem__jw_t *w, const replay_opts_t *o,
                      const nnmem_stats_t *st) {
  for (uint32_t k = 0; k <= o->numa_nodes; k++) {
    const nnmem_stats_t *s = &st[k];
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "trace", o->trace);
    nnmem__jw_kv_string(w, "pool", s->name);
    nnmem__jw_kv_string(w, "kind", nnmem_pool_kind_name(o->kind));
    nnmem__jw_kv_u64(w, "nodes", o->numa_nodes);
    if (k) nnmem__jw_kv_u64(w, "node", k - 1);
    nnmem__jw_kv_u64(w, "allocations", s->alloc_count);
    nnmem__jw_kv_u64(w, "frees", s->free_count);
    nnmem__jw_kv_u64(w, "remote_frees", s->remote_frees);
    nnmem__jw_kv_u64(w, "remote_allocs", s->remote_allocs);
    nnmem__jw_kv_u64(w, "peak_reserved_bytes", s->reserved_bytes_peak);
    nnmem__jw_kv_u64(w, "device_requests", s->backend_allocs);
    nnmem__jw_end(w);
  }
}

/* The --numa-nodes run: its nodes + 1 records appended to stats[*n]. */
static nnmem_status_t run_numa(const replay_opts_t *o, const nnmem_problem_t *p,
                               nnmem__jw_t *w, nnmem_stats_t *stats, size_t *n,
                               nnmem_diag_t *d) {
  nnmem_stats_t *st = &stats[*n];
  nnmem_status_t s =
      cli_replay_numa(p, o->kind, o->numa_nodes, o->align, st, d);
  if (s != NNMEM_OK) return s;
  *n += o->numa_nodes + 1;
  if (o->json)
    numa_json(w, o, st);
  else if (!o->prometheus)
    numa_text(o, st);
  return NNMEM_OK;
}

/* ---- --tenants: the trace shared by tenant domains ---- */

static uint64_t sum_checks(const nnmem_domain_replay_result_t *r) {
  uint64_t c = 0;
  for (uint32_t t = 0; t < r->tenants; t++)
    c += r->tenant[t].checks;
  return c;
}

static void tenants_text(const replay_opts_t *o, const char *pool,
                         const nnmem_domain_replay_result_t *r) {
  char a[64], b[64];
  if (o->quota == UINT64_MAX)
    snprintf(b, sizeof b, "no quota");
  else
    snprintf(b, sizeof b, "quota %s each",
             cli_fmt_bytes(o->quota, a, sizeof a));
  printf("tenants: %u (buffer i -> tenant i %% %u), %s, pool %s\n", r->tenants,
         r->tenants, b, pool);
  printf("  operations:          %llu (%llu buffers refused and skipped)\n",
         (unsigned long long)r->operations, (unsigned long long)r->skipped);
  printf("  peak_live_bytes:     %s\n",
         cli_fmt_bytes(r->peak_live_bytes, a, sizeof a));
  printf(
      "  peak_reserved_bytes: %s  (%s live)\n",
      cli_fmt_bytes(r->peak_reserved_bytes, a, sizeof a),
      cli_fmt_ratio(r->peak_reserved_bytes, r->peak_live_bytes, b, sizeof b));
  printf(
      "  isolation:           %llu checks; %llu of %llu cross-tenant frees "
      "without a grant refused; %llu granted frees\n",
      (unsigned long long)sum_checks(r), (unsigned long long)r->probes_refused,
      (unsigned long long)r->probes, (unsigned long long)r->granted_frees);
  printf("  %-10s %12s %8s %8s %8s %8s  %s\n", "tenant", "peak_bytes", "allocs",
         "frees", "granted", "checks", "refused quota/pool/denied/invalid");
  for (uint32_t t = 0; t < r->tenants; t++) {
    const nnmem_domain_stats_t *d = &r->tenant[t];
    printf("  %-10s %12llu %8llu %8llu %8llu %8llu  %llu/%llu/%llu/%llu\n",
           d->name, (unsigned long long)d->peak_bytes,
           (unsigned long long)d->allocs, (unsigned long long)d->frees,
           (unsigned long long)d->frees_granted, (unsigned long long)d->checks,
           (unsigned long long)d->refused_quota,
           (unsigned long long)d->refused_pool,
           (unsigned long long)d->refused_denied,
           (unsigned long long)d->refused_invalid);
  }
}

static void tenants_json(nnmem__jw_t *w, const replay_opts_t *o,
                         const char *pool,
                         const nnmem_domain_replay_result_t *r) {
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "trace", o->trace);
  nnmem__jw_kv_string(w, "pool", pool);
  nnmem__jw_kv_u64(w, "tenants", r->tenants);
  nnmem__jw_kv_string(w, "assignment", "round-robin by buffer index");
  nnmem__jw_key(w, "quota");
  if (o->quota == UINT64_MAX)
    nnmem__jw_null(w);
  else
    nnmem__jw_u64(w, o->quota);
  nnmem__jw_kv_u64(w, "operations", r->operations);
  nnmem__jw_kv_u64(w, "skipped_buffers", r->skipped);
  nnmem__jw_kv_u64(w, "peak_live_bytes", r->peak_live_bytes);
  nnmem__jw_kv_u64(w, "peak_reserved_bytes", r->peak_reserved_bytes);
  nnmem__jw_key(w, "isolation");
  nnmem__jw_object(w);
  nnmem__jw_kv_u64(w, "checks", sum_checks(r));
  nnmem__jw_kv_u64(w, "probes", r->probes);
  nnmem__jw_kv_u64(w, "probes_refused", r->probes_refused);
  nnmem__jw_kv_u64(w, "granted_frees", r->granted_frees);
  nnmem__jw_end(w);
  nnmem__jw_key(w, "per_tenant");
  nnmem__jw_array(w);
  for (uint32_t t = 0; t < r->tenants; t++)
    nnmem__domain_stats_json(w, &r->tenant[t]);
  nnmem__jw_end(w);
  nnmem__jw_end(w);
}

/* The pool's families, then the tenants'. */
static int tenants_prometheus(const nnmem_stats_t *pool,
                              const nnmem_domain_replay_result_t *r) {
  size_t l1 = 0, l2 = 0;
  nnmem_status_t s = nnmem_stats_format_prometheus(pool, 1, NULL, 0, &l1);
  if (s == NNMEM_ERR_OVERFLOW)
    s = nnmem_domain_stats_format_prometheus(r->tenant, r->tenants, NULL, 0,
                                             &l2);
  char *buf = s == NNMEM_ERR_OVERFLOW ? malloc(l1 + l2 + 1) : NULL;
  if (buf) s = nnmem_stats_format_prometheus(pool, 1, buf, l1 + 1, &l1);
  if (buf && s == NNMEM_OK)
    s = nnmem_domain_stats_format_prometheus(r->tenant, r->tenants, buf + l1,
                                             l2 + 1, &l2);
  if (!buf || s != NNMEM_OK) {
    free(buf);
    return cli_fail(buf ? s : NNMEM_ERR_NOMEM, NULL);
  }
  fwrite(buf, 1, l1 + l2, stdout);
  free(buf);
  return CLI_EXIT_OK;
}

static int run_tenants(const replay_opts_t *o, const nnmem_problem_t *p) {
  nnmem_diag_t d = {{0}};
  nnmem_domain_replay_result_t r;
  nnmem_stats_t pool_st;
  nnmem_status_t st =
      nnmem_domain_replay(p, o->kind, o->tenants, o->quota, &r, &pool_st, &d);
  if (st != NNMEM_OK) {
    int rc = cli_fail(st, &d);
    return st == NNMEM_ERR_STATE ? CLI_EXIT_INTERNAL : rc;
  }
  const char *pool = nnmem_pool_kind_name(o->kind);
  snprintf(pool_st.name, sizeof pool_st.name, "%s", pool);
  int rc = CLI_EXIT_OK;
  if (o->prometheus) {
    rc = tenants_prometheus(&pool_st, &r);
  } else if (o->json) {
    nnmem__text_t t;
    nnmem__jw_t w;
    cli_json_begin(&w, &t, o->json);
    nnmem__jw_array(&w);
    tenants_json(&w, o, pool, &r);
    nnmem__jw_end(&w);
    rc = cli_json_print(&w, &t);
  } else {
    char shown[512];
    printf("trace: %s (%zu buffers)\n",
           cli_printable(o->trace, shown, sizeof shown),
           nnmem_problem_count(p));
    tenants_text(o, pool, &r);
  }
  free(r.tenant);
  return rc;
}

/* ---- --metrics-port: what /metrics serves while the command runs ------ */

static struct {
  pthread_mutex_t lock; /* the server's thread reads, the replay writes */
  nnmem_stats_t st[N_REPLAY_POOLS];
  size_t n;
} served = {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0};

static nnmem_status_t collect_served(void *ctx, nnmem_stats_t *out, size_t cap,
                                     size_t *n) {
  (void)ctx;
  pthread_mutex_lock(&served.lock);
  *n = served.n < cap ? served.n : cap;
  memcpy(out, served.st, *n * sizeof *out);
  pthread_mutex_unlock(&served.lock);
  return NNMEM_OK;
}

static void publish(const nnmem_stats_t *st) {
  pthread_mutex_lock(&served.lock);
  if (served.n < N_REPLAY_POOLS) served.st[served.n++] = *st;
  pthread_mutex_unlock(&served.lock);
}

/* Starts the endpoint; on failure says so on stderr and returns NULL: the
 * replay goes on without it, and the command exits 1 once it is done (the
 * endpoint asked for was not served). */
static nnmem_metrics_t *metrics_start(const replay_opts_t *o) {
  nnmem_metrics_config_t mc;
  nnmem_metrics_config_init(&mc);
  mc.addr = o->metrics_addr;
  mc.port = o->metrics_port;
  mc.collect = collect_served;
  nnmem_metrics_t *m = NULL;
  nnmem_diag_t d = {{0}};
  if (nnmem_metrics_start(&mc, &m, &d) != NNMEM_OK) {
    fprintf(stderr,
            "nnmem: %s; replaying without the endpoint (exit status 1)\n",
            d.message);
    return NULL;
  }
  const char *a = o->metrics_addr ? o->metrics_addr : "127.0.0.1";
  int v6 = strchr(a, ':') != NULL;
  fprintf(stderr, "nnmem: metrics on http://%s%s%s:%u/metrics\n", v6 ? "[" : "",
          a, v6 ? "]" : "", (unsigned)nnmem_metrics_port(m));
  fflush(stderr);
  return m;
}

static void metrics_finish(nnmem_metrics_t *m, double linger) {
  if (!m) return;
  fflush(stdout); /* the report first, then the lingering endpoint */
  struct timespec ts = {(time_t)linger,
                        (long)((linger - (double)(time_t)linger) * 1e9)};
  while (linger > 0 && nanosleep(&ts, &ts) != 0) {
  }
  nnmem_metrics_stop(m);
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
  if (o.tenants) {
    rc = run_tenants(&o, p);
    nnmem_csv_destroy(csv);
    return rc;
  }
  nnmem_backend_t *be = NULL;
  if (o.backend == BACKEND_HOST)
    st = nnmem_backend_host_create(&be);
  else if (o.backend == BACKEND_MMAP)
    st = nnmem_backend_mmap_create(NULL, &be);
  else if (o.backend == BACKEND_CUDA)
    st = nnmem_backend_cuda_create(NULL, &be, &d);
  if (st != NNMEM_OK) {
    if (!d.message[0])
      nnmem__diag(&d, st, "cannot create the %s backend: %s",
                  o.backend == BACKEND_HOST ? "host" : "mmap",
                  nnmem_status_str(st));
    nnmem_csv_destroy(csv);
    return cli_fail(st, &d);
  }
  nnmem_metrics_t *ms = o.metrics ? metrics_start(&o) : NULL;
  nnmem_pool_kind_t first = o.all ? NNMEM_POOL_TIERED : o.kind;
  nnmem_pool_kind_t last = o.all ? NNMEM_POOL_SLAB : o.kind;
  nnmem_stats_t stats[N_REPLAY_POOLS + NNMEM_NUMA_MAX_NODES + 1];
  size_t n_stats = 0;
  nnmem__text_t t;
  nnmem__jw_t w;
  cli_json_begin(&w, &t, o.json);
  nnmem__jw_array(&w);
  char shown[512];
  if (!o.json && !o.prometheus)
    printf("trace: %s (%zu buffers)\n",
           cli_printable(o.trace, shown, sizeof shown), nnmem_problem_count(p));
  for (int k = (int)first; k <= (int)last; k++) {
    nnmem_replay_result_t r;
    nnmem_stats_t *sp = &stats[n_stats];
    st = nnmem_pool_replay_backend(p, (nnmem_pool_kind_t)k, NULL, be, o.align,
                                   &r, sp, &d);
    if (st != NNMEM_OK) break;
    const char *name = nnmem_pool_kind_name((nnmem_pool_kind_t)k);
    snprintf(sp->name, sizeof sp->name, "%s", name); /* label = the kind */
    n_stats++;
    if (ms) publish(sp);
    if (o.json)
      put_json(&w, o.trace, name, &r);
    else if (!o.prometheus)
      print_text(name, &r);
  }
  if (st == NNMEM_OK && o.numa_nodes)
    st = run_numa(&o, p, &w, stats, &n_stats, &d);
  if (st == NNMEM_OK && o.defrag) st = run_heaps(&o, p, be, &w, &d);
  nnmem__jw_end(&w);
  nnmem_csv_destroy(csv);
  nnmem_backend_destroy(be);
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    rc = cli_fail(st, &d);
    if (st == NNMEM_ERR_IO || st == NNMEM_ERR_STATE) /* the device failed */
      rc = CLI_EXIT_INTERNAL;
  } else if (o.prometheus) {
    nnmem__text_free(&t);
    rc = print_prometheus(stats, n_stats);
  } else if (o.json) {
    rc = cli_json_print(&w, &t);
  } else {
    nnmem__text_free(&t);
    rc = CLI_EXIT_OK;
  }
  metrics_finish(ms, o.metrics_linger);
  if (o.metrics && !ms && rc == CLI_EXIT_OK) rc = CLI_EXIT_INVALID;
  return rc;
}

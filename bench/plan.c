/* bench/plan.c - the planner benchmark: every strategy on every MiniMalloc
 * CSV problem under a folder, compared with the lower bound in one run.
 *
 *   plan [DIR] [--csv OUT.csv] [--strategies a,b,...] [--repeat N]
 *        [--synthetic]
 *   plan --gen comb:N|random:N|zeroslack:SEED:N [--out FILE.csv]
 *        [--strategies ...]
 *   plan --search [DIR]   the placement search tables (plan_search.c):
 *        challenging A-F at 1 MiB, 60 zero-slack problems (20 each of
 *        100, 200, 300 buffers), the traces with --optimal --time-limit 1
 *   plan --gen randwire:N:SEED|nasnet:CELLS:SEED --out FILE.json
 *   plan --order [--csv OUT.csv]   operator order table (bench/order.c)
 *
 * Steps:
 *   1. collect every *.csv under DIR recursively (default: the shared data
 *      folder's dsa/, NNMEM_DEFAULT_DATA_DIR "/dsa" from CMake), sorted by
 *      path; a missing DIR is reported and the program exits 0;
 *   2. per file: parse, compute the lower bound (max live bytes);
 *   3. per strategy (default: every strategy the library names, in enum
 *      order, then auto): plan --repeat times (default 3), take the median
 *      wall time,
 *      VERIFY every plan with the independent verifier;
 *   4. print one table row per file and strategy (height, height / lower
 *      bound, median ms) and write the same rows to OUT.csv (default
 *      bench-plan.csv in the current folder), then the geometric mean of
 *      height / lower bound and the total time per strategy;
 *   5. scaling check: the largest file doubled (a second copy of every
 *      buffer shifted after the first: lower' = lower + max upper) planned
 *      with auto; prints time(2n) / time(n);
 *   6. --synthetic: the generated problems of issue 7 (see gen_problem):
 *      comb:120000 and random:1000000, every strategy once, time and
 *      time / greedy-size time; then auto with a 1 s time limit on
 *      comb:60000 and random:1000000 (wall time, height, whether the limit
 *      cut the search).
 * --gen with --out writes one generated problem as a MiniMalloc CSV and
 * exits; without --out it runs step 6 on that problem only.
 * It asserts nothing about time; it exits 1 only when a plan is invalid or
 * a file cannot be read.
 * Thread-safety: single-threaded program. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "nnmem/nnmem.h"
#include "plan_search.h"
#include "order.h"
#include "bench_util.h"

#ifndef NNMEM_DEFAULT_DATA_DIR
#define NNMEM_DEFAULT_DATA_DIR "../shared/data"
#endif

#define MAX_REPEAT 101

typedef struct bench_opts {
  const char *dir;
  const char *csv_out;
  nnmem_strategy_t strategies[NNMEM_STRATEGY_COUNT_];
  size_t n_strategies;
  int repeat;
  int synthetic;
  int search;
  const char *gen, *gen_out;
  int order; /* --order: the operator order table */
} bench_opts_t;

typedef struct path_list {
  char **items;
  size_t n, cap;
} path_list_t;

/* Per strategy totals for the summary. */
typedef struct strategy_sum {
  double log_ratio_sum;
  size_t n;
  double ms;
} strategy_sum_t;

static int failures;

static void usage(FILE *f) {
  fprintf(f,
          "Usage: plan [DIR] [--csv OUT.csv] [--strategies a,b,...] "
          "[--repeat N]\n"
          "  DIR           folder searched recursively for *.csv problems\n"
          "                (default %s/dsa)\n"
          "  --csv FILE    write the rows to FILE (default bench-plan.csv)\n"
          "  --strategies  comma-separated names (default: all):",
          NNMEM_DEFAULT_DATA_DIR);
  for (int s = 0; s < NNMEM_STRATEGY_COUNT_; s++)
    fprintf(f, " %s", nnmem_strategy_name((nnmem_strategy_t)s));
  fprintf(
      f,
      "\n  --repeat N    runs per measurement, median reported (default "
      "3)\n"
      "  --synthetic   also plan the generated comb and random problems\n"
      "  --search      the placement search tables (challenging set, 60\n"
      "                zero-slack problems, traces with --optimal)\n"
      "  --gen KIND:N  a generated problem (comb:N, random:N,\n"
      "                zeroslack:SEED:N; N buffers):\n"
      "  --order       the operator order table: generated RandWire stages\n"
      "                and NASNet-like cells, built-in and ONNX models\n"
      "                (file order vs memory order; bench-order.csv)\n"
      "  --gen randwire:N:SEED | nasnet:CELLS:SEED  write that graph as a\n"
      "                JSON graph to --out FILE.json (default stdout)\n"
      "                with --out FILE write it as CSV, else plan only it\n");
}

static int parse_strategies(const char *list, bench_opts_t *o) {
  char *copy = nnmem__strdup(list), *save = NULL;
  if (!copy) return -1;
  o->n_strategies = 0;
  for (char *t = strtok_r(copy, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    nnmem_strategy_t s;
    if (nnmem_strategy_parse(t, &s) != NNMEM_OK ||
        o->n_strategies == NNMEM_STRATEGY_COUNT_) {
      fprintf(stderr, "plan: unknown strategy '%s'\n", t);
      free(copy);
      return -1;
    }
    o->strategies[o->n_strategies++] = s;
  }
  free(copy);
  return o->n_strategies ? 0 : -1;
}

/* Returns -1 to continue, else an exit code. */
static int parse_args(int argc, char **argv, bench_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->dir = NNMEM_DEFAULT_DATA_DIR "/dsa";
  o->csv_out = "bench-plan.csv";
  o->repeat = 3;
  /* Every strategy, auto (enum value 0) last: it picks among the others. */
  for (int s = 1; s < NNMEM_STRATEGY_COUNT_; s++)
    o->strategies[o->n_strategies++] = (nnmem_strategy_t)s;
  o->strategies[o->n_strategies++] = NNMEM_STRATEGY_AUTO;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has_value = i + 1 < argc;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--csv") == 0 && has_value) {
      o->csv_out = argv[++i];
    } else if (strcmp(a, "--strategies") == 0 && has_value) {
      if (parse_strategies(argv[++i], o) != 0) return 1;
    } else if (strcmp(a, "--repeat") == 0 && has_value) {
      o->repeat = atoi(argv[++i]);
      if (o->repeat < 1 || o->repeat > MAX_REPEAT) {
        fprintf(stderr, "plan: --repeat must be 1..%d\n", MAX_REPEAT);
        return 1;
      }
    } else if (strcmp(a, "--synthetic") == 0) {
      o->synthetic = 1;
    } else if (strcmp(a, "--search") == 0) {
      o->search = 1;
    } else if (strcmp(a, "--order") == 0) {
      o->order = 1;
    } else if (strcmp(a, "--gen") == 0 && has_value) {
      o->gen = argv[++i];
    } else if (strcmp(a, "--out") == 0 && has_value) {
      o->gen_out = argv[++i];
    } else if (a[0] != '-') {
      o->dir = a;
    } else {
      fprintf(stderr, "plan: bad argument '%s'\n", a);
      usage(stderr);
      return 1;
    }
  }
  return -1;
}

static int ends_with_csv(const char *name) {
  size_t n = strlen(name);
  return n > 4 && strcmp(name + n - 4, ".csv") == 0;
}

static int push_path(path_list_t *l, const char *dir, const char *name) {
  size_t len = strlen(dir) + strlen(name) + 2;
  char *p = malloc(len);
  if (!p || nnmem__grow((void **)&l->items, &l->cap, l->n + 1,
                        sizeof *l->items) != NNMEM_OK) {
    free(p);
    return -1;
  }
  snprintf(p, len, "%s/%s", dir, name);
  l->items[l->n++] = p;
  return 0;
}

/* Appends every *.csv under `dir` (recursively) to `l`. */
static int collect(const char *dir, path_list_t *l) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    size_t before = l->n;
    if (push_path(l, dir, e->d_name) != 0) {
      rc = -1;
      break;
    }
    struct stat sb;
    char *full = l->items[before];
    int ok = stat(full, &sb) == 0;
    if (ok && S_ISDIR(sb.st_mode)) {
      l->n--;
      rc = (collect(full, l) == 0 || errno == EACCES) ? 0 : -1;
      free(full);
    } else if (!ok || !S_ISREG(sb.st_mode) || !ends_with_csv(e->d_name)) {
      l->n--;
      free(full);
    }
  }
  closedir(d);
  return rc;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Plans `p` `repeat` times with strategy `s`, verifying every plan.
 * Returns the median milliseconds (negative on failure); *height_out gets
 * the height. */
static double measure(const nnmem_problem_t *p, nnmem_strategy_t s, int repeat,
                      uint64_t *height_out, const char *what) {
  double ms[MAX_REPEAT];
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.strategy = s;
  for (int r = 0; r < repeat; r++) {
    nnmem_plan_t *plan = NULL;
    nnmem_diag_t d = {{0}};
    double t0 = nnmem__now();
    nnmem_status_t st = nnmem_plan_create(p, &cfg, &plan, &d);
    ms[r] = (nnmem__now() - t0) * 1e3;
    if (st == NNMEM_OK)
      st = nnmem_plan_verify(p, nnmem_plan_offsets(plan), 0, 0, NULL, &d);
    if (st != NNMEM_OK) {
      fprintf(stderr, "plan: %s with %s: %s: %s\n", what,
              nnmem_strategy_name(s), nnmem_status_name(st), d.message);
      nnmem_plan_destroy(plan);
      failures++;
      return -1.0;
    }
    *height_out = nnmem_plan_height(plan);
    nnmem_plan_destroy(plan);
  }
  qsort(ms, (size_t)repeat, sizeof ms[0], cmp_double);
  return ms[repeat / 2];
}

static const char *rel_name(const char *path, const char *dir) {
  size_t n = strlen(dir);
  if (strncmp(path, dir, n) == 0 && path[n] == '/') return path + n + 1;
  return path;
}

/* Benchmarks one file; returns its buffer count (0 on failure) and the
 * median auto time in *auto_ms. */
static size_t bench_file(const bench_opts_t *o, const char *path, FILE *csv,
                         strategy_sum_t *sums, double *auto_ms) {
  nnmem_csv_t *c = NULL;
  nnmem_diag_t d = {{0}};
  uint64_t lb = 0;
  const char *name = rel_name(path, o->dir);
  if (nnmem_csv_read_file(path, &c, &d) != NNMEM_OK) {
    fprintf(stderr, "plan: %s\n", d.message);
    failures++;
    return 0;
  }
  const nnmem_problem_t *p = nnmem_csv_problem(c);
  size_t n = nnmem_problem_count(p);
  nnmem_problem_lower_bound(p, 0, &lb);
  *auto_ms = -1.0;
  for (size_t k = 0; k < o->n_strategies; k++) {
    nnmem_strategy_t s = o->strategies[k];
    uint64_t h = 0;
    double ms = measure(p, s, o->repeat, &h, name);
    double ratio = lb ? (double)h / (double)lb : 1.0;
    if (s == NNMEM_STRATEGY_AUTO) *auto_ms = ms;
    char nb[24] = "", lbb[24] = "";
    if (k == 0) {
      snprintf(nb, sizeof nb, "%zu", n);
      snprintf(lbb, sizeof lbb, "%llu", (unsigned long long)lb);
    }
    printf("%-34s %8s %15s  %-15s %15llu %8.4f %10.3f%s\n", k == 0 ? name : "",
           nb, lbb, nnmem_strategy_name(s), (unsigned long long)h, ratio, ms,
           ms < 0 ? "  INVALID" : "");
    if (csv)
      fprintf(csv, "%s,%zu,%llu,%s,%llu,%.6f,%.3f,%d\n", name, n,
              (unsigned long long)lb, nnmem_strategy_name(s),
              (unsigned long long)h, ratio, ms, ms >= 0);
    if (ms >= 0 && h > 0 && lb > 0) {
      sums[k].log_ratio_sum += log(ratio);
      sums[k].n++;
      sums[k].ms += ms;
    }
  }
  nnmem_csv_destroy(c);
  return n;
}

/* The problem twice, the copy shifted after the end of the original. */
static nnmem_status_t doubled(const nnmem_problem_t *p, nnmem_problem_t **out) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  uint64_t shift = 0;
  for (size_t i = 0; i < n; i++)
    shift = nnmem__max_u64(shift, b[i].last);
  nnmem_status_t st = nnmem_problem_create(out);
  for (int copy = 0; copy < 2 && st == NNMEM_OK; copy++) {
    uint64_t off = copy ? shift : 0;
    for (size_t i = 0; i < n && st == NNMEM_OK; i++)
      st = nnmem_problem_add(*out, NULL, b[i].size, b[i].align,
                             b[i].first + off, b[i].last + off, NULL);
  }
  if (st != NNMEM_OK) {
    nnmem_problem_destroy(*out);
    *out = NULL;
  }
  return st;
}

static void scaling(const bench_opts_t *o, const char *path) {
  nnmem_csv_t *c = NULL;
  nnmem_problem_t *p2 = NULL;
  nnmem_diag_t d = {{0}};
  uint64_t h1 = 0, h2 = 0;
  if (nnmem_csv_read_file(path, &c, &d) != NNMEM_OK) return;
  const nnmem_problem_t *p = nnmem_csv_problem(c);
  if (doubled(p, &p2) == NNMEM_OK) {
    const char *name = rel_name(path, o->dir);
    double t1 = measure(p, NNMEM_STRATEGY_AUTO, o->repeat, &h1, name);
    double t2 = measure(p2, NNMEM_STRATEGY_AUTO, o->repeat, &h2, "doubled");
    printf(
        "\nscaling (auto, %s doubled in time): n=%zu %.2f ms, 2n=%zu %.2f "
        "ms, time(2n)/time(n) = %.2f (height %llu -> %llu)\n",
        name, nnmem_problem_count(p), t1, nnmem_problem_count(p2), t2,
        t1 > 0 ? t2 / t1 : 0.0, (unsigned long long)h1, (unsigned long long)h2);
  }
  nnmem_problem_destroy(p2);
  nnmem_csv_destroy(c);
}

/* Generated problems (issue 7, "a user's first hour"):
 *   comb:N    n = N / 3; n long-lived 1-byte buffers [0,3) alternating
 *             with n short-lived ones [0,1), then n 2-byte buffers [1,2).
 *             Placed in time order the 1-byte buffers interleave into two
 *             complementary combs; the 2-byte ones fit none of the holes.
 *   random:N  N buffers, T = N / 4 steps: first uniform in [0, T), length
 *             1 + uniform [0, 256), size 64 * (1 + uniform [0, 1024)),
 *             xorshift64* seeded with RANDOM_SEED. */
#define RANDOM_SEED 42u

static uint64_t xorshift(uint64_t *s) {
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

static nnmem_status_t gen_problem(const char *spec, nnmem_problem_t **out) {
  const char *colon = strchr(spec, ':');
  long long n = colon ? atoll(colon + 1) : 0;
  size_t kind = colon ? (size_t)(colon - spec) : 0;
  nnmem_status_t st = n > 0 ? nnmem_problem_create(out) : NNMEM_ERR_INVALID;
  if (st != NNMEM_OK) return st;
  if (kind == 4 && strncmp(spec, "comb", 4) == 0) {
    long long m = n / 3;
    for (long long i = 0; i < m && st == NNMEM_OK; i++) {
      st = nnmem_problem_add(*out, NULL, 1, 1, 0, 3, NULL);
      if (st == NNMEM_OK) st = nnmem_problem_add(*out, NULL, 1, 1, 0, 1, NULL);
    }
    for (long long i = 0; i < m && st == NNMEM_OK; i++)
      st = nnmem_problem_add(*out, NULL, 2, 1, 1, 2, NULL);
  } else if (kind == 6 && strncmp(spec, "random", 6) == 0) {
    uint64_t rng = RANDOM_SEED, steps = (uint64_t)(n / 4 > 0 ? n / 4 : 1);
    for (long long i = 0; i < n && st == NNMEM_OK; i++) {
      uint64_t first = xorshift(&rng) % steps;
      uint64_t len = 1 + xorshift(&rng) % 256;
      uint64_t size = 64 * (1 + xorshift(&rng) % 1024);
      st = nnmem_problem_add(*out, NULL, size, 1, first, first + len, NULL);
    }
  } else if (kind == 9 && strncmp(spec, "zeroslack", 9) == 0) {
    /* zeroslack:SEED:N, capacity 1 MiB (plan_search.c) */
    const char *c2 = strchr(colon + 1, ':');
    long long m = c2 ? atoll(c2 + 1) : 0;
    nnmem_problem_destroy(*out);
    *out = NULL;
    st = m > 0 ? zeroslack_problem((uint64_t)n, (size_t)m, 1048576, out)
               : NNMEM_ERR_INVALID;
  } else {
    st = NNMEM_ERR_INVALID;
  }
  if (st != NNMEM_OK) {
    nnmem_problem_destroy(*out);
    *out = NULL;
  }
  return st;
}

static int write_generated(const bench_opts_t *o) {
  nnmem_problem_t *p = NULL;
  if (!o->gen_out || gen_problem(o->gen, &p) != NNMEM_OK) {
    fprintf(stderr, "plan: --gen comb:N|random:N --out FILE (got '%s')\n",
            o->gen);
    return 1;
  }
  FILE *f = fopen(o->gen_out, "w");
  if (!f) {
    fprintf(stderr, "plan: cannot write '%s': %s\n", o->gen_out,
            strerror(errno));
    nnmem_problem_destroy(p);
    return 1;
  }
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  fprintf(f, "id,lower,upper,size\n");
  for (size_t i = 0; i < nnmem_problem_count(p); i++)
    fprintf(f, "%zu,%llu,%llu,%llu\n", i, (unsigned long long)b[i].first,
            (unsigned long long)b[i].last, (unsigned long long)b[i].size);
  int rc = fclose(f) == 0 ? 0 : 1;
  if (strncmp(o->gen, "random", 6) == 0)
    printf("wrote %s: %zu buffers (%s, seed %u)\n", o->gen_out,
           nnmem_problem_count(p), o->gen, RANDOM_SEED);
  else
    printf("wrote %s: %zu buffers (%s)\n", o->gen_out, nnmem_problem_count(p),
           o->gen);
  nnmem_problem_destroy(p);
  return rc;
}

/* One time-limited auto run: wall time, height, whether the limit cut. */
static void limited_run(const char *spec, double limit_s) {
  nnmem_problem_t *p = NULL;
  if (gen_problem(spec, &p) != NNMEM_OK) return;
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.time_limit_s = limit_s;
  nnmem_plan_t *plan = NULL;
  nnmem_diag_t d = {{0}};
  uint64_t lb = 0;
  nnmem_problem_lower_bound(p, 0, &lb);
  double t0 = nnmem__now();
  nnmem_status_t st = nnmem_plan_create(p, &cfg, &plan, &d);
  double ms = (nnmem__now() - t0) * 1e3;
  if (st == NNMEM_OK)
    st = nnmem_plan_verify(p, nnmem_plan_offsets(plan), 0, 0, NULL, &d);
  if (st != NNMEM_OK) {
    fprintf(stderr, "plan: %s limited: %s\n", spec, d.message);
    failures++;
  } else {
    printf(
        "%-16s auto --time-limit %.1f: %10.1f ms, height/LB %.4f (%s, "
        "%s, %u strateg%s run)\n",
        spec, limit_s, ms,
        lb ? (double)nnmem_plan_height(plan) / (double)lb : 1.0,
        nnmem_strategy_name(nnmem_plan_strategy(plan)),
        nnmem_plan_time_limited(plan) ? "limit reached" : "finished",
        nnmem_plan_strategies_run(plan),
        nnmem_plan_strategies_run(plan) == 1 ? "y" : "ies");
  }
  nnmem_plan_destroy(plan);
  nnmem_problem_destroy(p);
}

/* Step 6: every strategy once on each generated problem. */
static void synthetic(const bench_opts_t *o, const char *const *specs,
                      size_t n_specs) {
  printf("\nsynthetic problems (one run each; ratio = time / greedy-size)\n");
  for (size_t i = 0; i < n_specs; i++) {
    nnmem_problem_t *p = NULL;
    uint64_t lb = 0;
    if (gen_problem(specs[i], &p) != NNMEM_OK) continue;
    nnmem_problem_lower_bound(p, 0, &lb);
    double ms[NNMEM_STRATEGY_COUNT_] = {0}, base = -1;
    for (size_t k = 0; k < o->n_strategies; k++) {
      uint64_t h = 0;
      ms[k] = measure(p, o->strategies[k], 1, &h, specs[i]);
      if (o->strategies[k] == NNMEM_STRATEGY_GREEDY_SIZE) base = ms[k];
      printf("%-16s %-15s %12.1f ms  height/LB %.4f\n", k ? "" : specs[i],
             nnmem_strategy_name(o->strategies[k]), ms[k],
             lb ? (double)h / (double)lb : 1.0);
    }
    if (base > 0)
      for (size_t k = 0; k < o->n_strategies; k++)
        printf("%-16s %-15s %12.2fx greedy-size\n", "",
               nnmem_strategy_name(o->strategies[k]), ms[k] / base);
    nnmem_problem_destroy(p);
  }
}

/* --synthetic: issue 7's targets. */
static void synthetic_default(const bench_opts_t *o) {
  static const char *const specs[] = {"comb:120000", "random:1000000"};
  synthetic(o, specs, 2);
  limited_run("comb:60000", 1.0);
  limited_run("random:1000000", 1.0);
}

static void summary(const bench_opts_t *o, const strategy_sum_t *sums) {
  printf("\n%-15s %22s %14s\n", "strategy", "geomean height/bound", "total ms");
  for (size_t k = 0; k < o->n_strategies; k++)
    printf("%-15s %22.4f %14.2f\n", nnmem_strategy_name(o->strategies[k]),
           sums[k].n ? exp(sums[k].log_ratio_sum / (double)sums[k].n) : 0.0,
           sums[k].ms);
}

static void run_all(const bench_opts_t *o, const path_list_t *files,
                    FILE *csv) {
  strategy_sum_t sums[NNMEM_STRATEGY_COUNT_];
  size_t largest = 0, largest_n = 0;
  memset(sums, 0, sizeof sums);
  printf("%-34s %8s %15s  %-15s %15s %8s %10s\n", "file", "buffers",
         "lower bound", "strategy", "height", "h/LB", "median ms");
  if (csv)
    fprintf(csv,
            "file,buffers,lower_bound,strategy,height,height_over_lb,"
            "median_ms,valid\n");
  for (size_t i = 0; i < files->n; i++) {
    double auto_ms;
    size_t n = bench_file(o, files->items[i], csv, sums, &auto_ms);
    if (n > largest_n) {
      largest_n = n;
      largest = i;
    }
  }
  summary(o, sums);
  if (largest_n) scaling(o, files->items[largest]);
}

int main(int argc, char **argv) {
  bench_opts_t o;
  path_list_t files = {0};
  int rc = parse_args(argc, argv, &o);
  if (rc >= 0) return rc;
  if (o.gen && bench_order_is_graph_spec(o.gen))
    return bench_order_gen(o.gen, o.gen_out ? o.gen_out : "-");
  if (o.order)
    return bench_order_table(
        NNMEM_DEFAULT_DATA_DIR "/models",
        strcmp(o.csv_out, "bench-plan.csv") ? o.csv_out : "bench-order.csv");
  if (o.gen && o.gen_out) return write_generated(&o);
  if (o.gen) { /* one generated problem only */
    synthetic(&o, &o.gen, 1);
    limited_run(o.gen, 1.0);
    return failures ? 1 : 0;
  }
  struct stat sb;
  if (o.search) { /* the tables need the data; zero-slack ones do not */
    if (stat(o.dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
      bench_zeroslack(20, 200, &failures);
    else
      bench_search(o.dir, &failures);
    return failures ? 1 : 0;
  }
  if (stat(o.dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    printf("plan: data folder '%s' not found; nothing to measure\n", o.dir);
    return 0;
  }
  if (collect(o.dir, &files) != 0) {
    fprintf(stderr, "plan: cannot list '%s': %s\n", o.dir, strerror(errno));
    return 1;
  }
  qsort(files.items, files.n, sizeof *files.items, cmp_str);
  FILE *csv = fopen(o.csv_out, "w");
  if (!csv)
    fprintf(stderr, "plan: cannot write '%s': %s\n", o.csv_out,
            strerror(errno));
  printf("planner benchmark: %zu problems under %s, %d run(s) each\n\n",
         files.n, o.dir, o.repeat);
  run_all(&o, &files, csv);
  if (o.synthetic) synthetic_default(&o);
  if (csv) {
    fclose(csv);
    printf("rows written to %s\n", o.csv_out);
  }
  for (size_t i = 0; i < files.n; i++)
    free(files.items[i]);
  free(files.items);
  return failures ? 1 : 0;
}

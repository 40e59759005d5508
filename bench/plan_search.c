/* bench/plan_search.c - the placement search part of bench/plan
 * (`plan --search [DIR]`), three tables:
 *   1. MiniMalloc's challenging problems DIR/minimalloc/[A-F] at their
 *      capacity 1 MiB: placed or not, seconds, search nodes;
 *   2. zero-slack problems from zeroslack_problem (seeds 1..20 of 100, 200
 *      and 300 buffers): placed at exactly their capacity within 30 s
 *      each, share;
 *   3. every trace DIR/traces/*.csv with optimal = 1 and a 1 s limit:
 *      status, height / bound, seconds.
 * Every plan is verified (a failure counts in *failures); nothing about
 * time is asserted. Thread-safety: single-threaded program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "nnmem/nnmem.h"
#include "plan_search.h"

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

/* Cuts [a0, a1) x [t0, t1) into pieces until `left` pieces are to come:
 * each split along address or time at a random point. */
static nnmem_status_t cut(nnmem_problem_t *p, uint64_t *r, uint64_t a0,
                          uint64_t a1, uint64_t t0, uint64_t t1, size_t want) {
  int can_a = a1 - a0 >= 2, can_t = t1 - t0 >= 2;
  if (want <= 1 || (!can_a && !can_t))
    return nnmem_problem_add(p, NULL, a1 - a0, 1, t0, t1, NULL);
  size_t wl = 1 + rng_next(r) % (want - 1);
  if (can_a && (!can_t || rng_next(r) % 2)) {
    uint64_t m = a0 + 1 + rng_next(r) % (a1 - a0 - 1);
    nnmem_status_t st = cut(p, r, a0, m, t0, t1, wl);
    return st ? st : cut(p, r, m, a1, t0, t1, want - wl);
  }
  uint64_t m = t0 + 1 + rng_next(r) % (t1 - t0 - 1);
  nnmem_status_t st = cut(p, r, a0, a1, t0, m, wl);
  return st ? st : cut(p, r, a0, a1, m, t1, want - wl);
}

nnmem_status_t zeroslack_problem(uint64_t seed, size_t n, uint64_t capacity,
                                 nnmem_problem_t **out) {
  uint64_t r = seed * 0x9E3779B97F4A7C15ULL + 1;
  nnmem_status_t st = nnmem_problem_create(out);
  if (st == NNMEM_OK) st = cut(*out, &r, 0, capacity, 0, 1000, n);
  return st;
}

static double cpu_now(void) { /* this process's CPU time */
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Plans p with cfg; prints nothing; returns the status, verifies plans.
 * secs[0]: wall seconds, secs[1]: CPU seconds (other processes on a
 * shared machine stretch the first, not the second). */
static nnmem_status_t run(const nnmem_problem_t *p,
                          const nnmem_planner_config_t *cfg, int *failures,
                          nnmem_plan_t **out, double secs[2]) {
  nnmem_diag_t d = {{0}};
  double t0 = nnmem__now(), c0 = cpu_now();
  nnmem_status_t st = nnmem_plan_create(p, cfg, out, &d);
  secs[0] = nnmem__now() - t0, secs[1] = cpu_now() - c0;
  if (st == NNMEM_OK &&
      nnmem_plan_verify(p, nnmem_plan_offsets(*out), cfg->alignment,
                        cfg->capacity, NULL, &d) != NNMEM_OK) {
    fprintf(stderr, "plan --search: invalid plan: %s\n", d.message);
    ++*failures;
  }
  return st;
}

static nnmem_problem_t *load(const char *path, nnmem_csv_t **csv) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 20, n = 0;
  char *buf = malloc(cap);
  for (size_t k; buf && (k = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += k;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  nnmem_status_t st =
      buf ? nnmem_csv_parse(buf, n, path, csv, NULL) : NNMEM_ERR_NOMEM;
  free(buf);
  return st == NNMEM_OK ? (nnmem_problem_t *)nnmem_csv_problem(*csv) : NULL;
}

/* Places p at capacity 1 MiB with a 30 s limit and no node limit (the
 * challenging and the zero-slack tables); prints nothing. */
static nnmem_status_t place_1mib(const nnmem_problem_t *p, int *failures,
                                 nnmem_plan_t **pl, double secs[2],
                                 nnmem_plan_status_t *ps) {
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.capacity = 1048576;
  cfg.time_limit_s = 30;
  cfg.node_budget = UINT64_MAX;
  cfg.status_out = ps;
  return run(p, &cfg, failures, pl, secs);
}

static void challenging(const char *dir, int *failures) {
  printf("\nMiniMalloc challenging problems at capacity 1 MiB\n");
  printf("%-6s %8s %8s %10s %10s %12s  %s\n", "file", "buffers", "placed",
         "seconds", "cpu s", "nodes", "status");
  for (char c = 'A'; c <= 'F'; c++) {
    char path[4096];
    nnmem_csv_t *csv = NULL;
    snprintf(path, sizeof path, "%s/minimalloc/%c.1048576.csv", dir, c);
    nnmem_problem_t *p = load(path, &csv);
    if (!p) {
      printf("%c      (absent)\n", c);
      continue;
    }
    nnmem_plan_status_t ps;
    nnmem_plan_t *pl = NULL;
    double s[2];
    nnmem_status_t st = place_1mib(p, failures, &pl, s, &ps);
    printf("%-6c %8zu %8s %10.3f %10.3f %12llu  %s\n", c,
           nnmem_problem_count(p), st == NNMEM_OK ? "yes" : "no", s[0], s[1],
           (unsigned long long)nnmem_plan_search_nodes(pl),
           nnmem_plan_status_name(ps));
    nnmem_plan_destroy(pl);
    nnmem_csv_destroy(csv);
  }
}

void bench_zeroslack(int count, size_t n, int *failures) {
  int placed = 0;
  double worst = 0, worst_cpu = 0;
  printf(
      "\nzero-slack problems (%zu buffers cut from 1 MiB x 1000 steps), "
      "capacity 1 MiB, 30 s each\n",
      n);
  printf("%-6s %8s %8s %10s %10s  %s\n", "seed", "buffers", "placed", "seconds",
         "cpu s", "status");
  for (int seed = 1; seed <= count; seed++) {
    nnmem_problem_t *p = NULL;
    if (zeroslack_problem((uint64_t)seed, n, 1048576, &p) != NNMEM_OK) continue;
    nnmem_plan_status_t ps;
    nnmem_plan_t *pl = NULL;
    double s[2];
    nnmem_status_t st = place_1mib(p, failures, &pl, s, &ps);
    placed += st == NNMEM_OK;
    worst = s[0] > worst ? s[0] : worst;
    worst_cpu = s[1] > worst_cpu ? s[1] : worst_cpu;
    printf("%-6d %8zu %8s %10.3f %10.3f  %s\n", seed, nnmem_problem_count(p),
           st == NNMEM_OK ? "yes" : "no", s[0], s[1],
           nnmem_plan_status_name(ps));
    nnmem_plan_destroy(pl);
    nnmem_problem_destroy(p);
  }
  printf("placed %d of %d (%.0f%%), slowest %.3f s (cpu %.3f s)\n", placed,
         count, 100.0 * placed / count, worst, worst_cpu);
}

/* One row of the trace table: auto alone, then --optimal --time-limit 1. */
static void trace_row(const char *name, const nnmem_problem_t *p,
                      int *failures) {
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  nnmem_plan_t *pl = NULL;
  double s[2];
  uint64_t h0 = 0; /* the heuristics alone, the same run */
  if (run(p, &cfg, failures, &pl, s) == NNMEM_OK) h0 = nnmem_plan_height(pl);
  nnmem_plan_destroy(pl);
  pl = NULL;
  cfg.optimal = 1;
  cfg.time_limit_s = 1;
  if (run(p, &cfg, failures, &pl, s) == NNMEM_OK) {
    uint64_t h = nnmem_plan_height(pl), b = nnmem_plan_bound(pl);
    double r0 = b ? (double)h0 / (double)b : 1.0;
    printf("%-14s %8zu %16llu %16llu %10.5f %10.5f %8.3f %8.3f %10s\n", name,
           nnmem_problem_count(p), (unsigned long long)h, (unsigned long long)b,
           r0, b ? (double)h / (double)b : 1.0, s[0], s[1],
           nnmem_plan_status_name(nnmem_plan_status(pl)));
  }
  nnmem_plan_destroy(pl);
}

/* Two copies of p one after the other in time (two training iterations). */
static nnmem_problem_t *twice(const nnmem_problem_t *p) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t n = nnmem_problem_count(p);
  uint64_t end = 0;
  nnmem_problem_t *q = NULL;
  for (size_t i = 0; i < n; i++)
    end = b[i].last > end ? b[i].last : end;
  if (nnmem_problem_create(&q) != NNMEM_OK) return NULL;
  for (uint64_t c = 0; c < 2; c++)
    for (size_t i = 0; i < n; i++)
      if (nnmem_problem_add(q, NULL, b[i].size, b[i].align,
                            b[i].first + c * end, b[i].last + c * end,
                            NULL) != NNMEM_OK) {
        nnmem_problem_destroy(q);
        return NULL;
      }
  return q;
}

static void traces(const char *dir, int *failures) {
  static const char *const names[] = {"resnet50", "tiny_bert", "bert_base",
                                      "pangu_2.6B", "iopddl_S_1"};
  printf(
      "\ntraces, --optimal --time-limit 1 (heuristics: auto alone; x2: "
      "two copies one after the other)\n");
  printf("%-14s %8s %16s %16s %10s %10s %8s %8s %10s\n", "trace", "buffers",
         "height", "bound", "heuristics", "h/bound", "seconds", "cpu s",
         "status");
  for (size_t i = 0; i < 5; i++) {
    char path[4096];
    nnmem_csv_t *csv = NULL;
    snprintf(path, sizeof path, "%s/traces/%s.csv", dir, names[i]);
    nnmem_problem_t *p = load(path, &csv);
    if (!p) continue;
    trace_row(names[i], p, failures);
    if (strcmp(names[i], "pangu_2.6B") == 0) {
      nnmem_problem_t *q = twice(p);
      if (q) trace_row("pangu_2.6B x2", q, failures);
      nnmem_problem_destroy(q);
    }
    nnmem_csv_destroy(csv);
  }
}

void bench_search(const char *dir, int *failures) {
  challenging(dir, failures);
  for (size_t n = 100; n <= 300; n += 100)
    bench_zeroslack(20, n, failures);
  traces(dir, failures);
}

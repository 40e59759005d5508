/* bench/replenish.c - hot-path allocation latency of the fixed pool with
 * and without asynchronous replenishment, on a burst workload, in the same
 * run.
 *
 * Workload: `bursts` bursts of `burst` allocations of 4 KiB blocks in a
 * tight loop, each allocation timed on its own (CLOCK_MONOTONIC); between
 * bursts the thread sleeps `pause` us (a kernel running elsewhere), then
 * frees a random half of the burst, so the live set grows by burst / 2 per
 * burst and the pool keeps needing chunks (64 blocks each). Backends:
 *   mmap      anonymous mappings (one mmap system call per chunk);
 *   slow-sim  the simulated device behind a table that spins `slow` us per
 *             request (a device allocator such as cudaMalloc).
 * Modes, interleaved per repetition: off (the pool grows synchronously when
 * it finds no free block) and on (replenish = 1, the pool's own thread,
 * watermark 10%). Reported per backend and mode over all repetitions:
 * p50 / p99 / p99.9 / max ns of one allocation, the allocations that found
 * the pool empty (empty_hits) and the chunks refilled in the background.
 * The timer itself costs ~20-30 ns and is inside every figure.
 *
 * Usage: bench/replenish [--repeat N] [--bursts N] [--burst N]
 *        [--pause US] [--slow US] [--csv FILE]
 * Prints a table; writes bench-replenish.csv. Asserts nothing. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "nnmem/nnmem.h"

enum { BLOCK = 4096, PER_CHUNK = 64 };

static uint64_t ns_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The slow table: spins, then forwards to the wrapped backend. */
typedef struct slow {
  nnmem_backend_t table;
  nnmem_backend_t *inner;
  uint64_t spin_ns;
} slow_t;

static nnmem_status_t slow_alloc(void *ctx, uint64_t size, uint64_t align,
                                 void **out) {
  slow_t *s = ctx;
  uint64_t until = ns_now() + s->spin_ns;
  while (ns_now() < until) {
  }
  return nnmem_backend_alloc(s->inner, size, align, out);
}

static nnmem_status_t slow_free(void *ctx, void *p, uint64_t size) {
  slow_t *s = ctx;
  return nnmem_backend_free(s->inner, p, size);
}

static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

typedef struct opts {
  int repeat, bursts, burst;
  uint64_t pause_us, slow_us;
  const char *csv;
} opts_t;

typedef struct result {
  uint64_t *lat;
  size_t n;
  uint64_t empty_hits, refills, chunks;
} result_t;

/* One run: a fresh pool; appends latencies to r. */
static int run(const opts_t *o, nnmem_backend_t *b, int on, uint64_t seed,
               result_t *r) {
  nnmem_pool_config_t c;
  nnmem_pool_config_init(&c);
  c.block_size = BLOCK;
  c.chunk_size = (uint64_t)BLOCK * PER_CHUNK;
  c.thread_safe = 1; /* the same lock in both modes */
  c.replenish = on;
  nnmem_pool_t *pool = NULL;
  if (nnmem_pool_create(NNMEM_POOL_FIXED, &c, b, &pool) != NNMEM_OK) return 1;
  size_t cap = (size_t)o->bursts * (size_t)o->burst;
  void **live = malloc(cap * sizeof *live);
  void **cur = malloc((size_t)o->burst * sizeof *cur);
  if (!live || !cur) return 1;
  size_t n_live = 0;
  struct timespec pause = {(time_t)(o->pause_us / 1000000),
                           (long)(o->pause_us % 1000000) * 1000};
  for (int k = 0; k < o->bursts; k++) {
    for (int i = 0; i < o->burst; i++) {
      uint64_t t0 = ns_now();
      nnmem_status_t st = nnmem_pool_alloc(pool, BLOCK, 0, &cur[i]);
      uint64_t t1 = ns_now();
      if (st != NNMEM_OK) return 1;
      r->lat[r->n++] = t1 - t0;
    }
    nanosleep(&pause, NULL);
    for (int i = 0; i < o->burst; i++) {
      if (rng_next(&seed) & 1)
        (void)nnmem_pool_free(pool, cur[i]);
      else
        live[n_live++] = cur[i];
    }
  }
  nnmem_stats_t s;
  (void)nnmem_pool_stats(pool, &s);
  r->empty_hits += s.empty_hits;
  r->refills += s.refills;
  r->chunks += s.backend_allocs;
  for (size_t i = 0; i < n_live; i++)
    (void)nnmem_pool_free(pool, live[i]);
  nnmem_pool_destroy(pool);
  free(live);
  free(cur);
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static uint64_t pct(const result_t *r, double p) {
  size_t i = (size_t)(p / 100.0 * (double)(r->n - 1) + 0.5);
  return r->lat[i];
}

static int parse(int argc, char **argv, opts_t *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return 1;
    if (!strcmp(a, "--repeat"))
      o->repeat = atoi(v);
    else if (!strcmp(a, "--bursts"))
      o->bursts = atoi(v);
    else if (!strcmp(a, "--burst"))
      o->burst = atoi(v);
    else if (!strcmp(a, "--pause"))
      o->pause_us = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--slow"))
      o->slow_us = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--csv"))
      o->csv = v;
    else
      return 1;
    i++;
  }
  return o->repeat < 1 || o->bursts < 1 || o->burst < 1;
}

int main(int argc, char **argv) {
  opts_t o = {5, 200, 256, 200, 50, "bench-replenish.csv"};
  if (parse(argc, argv, &o)) {
    fprintf(stderr,
            "usage: replenish [--repeat N] [--bursts N] [--burst N] "
            "[--pause US] [--slow US] [--csv FILE]\n");
    return 1;
  }
  nnmem_backend_t *mm = NULL, *sim = NULL;
  if (nnmem_backend_mmap_create(NULL, &mm) != NNMEM_OK ||
      nnmem_backend_sim_create(NULL, &sim) != NNMEM_OK)
    return 1;
  slow_t slow = {*sim, sim, o.slow_us * 1000};
  slow.table.ctx = &slow;
  slow.table.alloc = slow_alloc;
  slow.table.free = slow_free;
  slow.table.destroy = NULL;
  slow.table.mem_info = NULL;
  nnmem_backend_t *backs[2] = {mm, &slow.table};
  const char *bname[2] = {"mmap", "slow-sim"};
  size_t per = (size_t)o.repeat * (size_t)o.bursts * (size_t)o.burst;
  result_t res[2][2];
  memset(res, 0, sizeof res);
  for (int b = 0; b < 2; b++)
    for (int m = 0; m < 2; m++)
      if (!(res[b][m].lat = malloc(per * sizeof(uint64_t)))) return 1;
  for (int rep = 0; rep < o.repeat; rep++)
    for (int b = 0; b < 2; b++)
      for (int m = 0; m < 2; m++) {
        int mode = (rep & 1) ? 1 - m : m; /* alternate which goes first */
        if (run(&o, backs[b], mode, 0x5eed + (uint64_t)rep, &res[b][mode])) {
          fprintf(stderr, "replenish: run failed\n");
          return 1;
        }
      }
  FILE *csv = fopen(o.csv, "w");
  if (csv)
    fprintf(csv,
            "backend,replenish,allocs,p50_ns,p99_ns,p999_ns,max_ns,"
            "empty_hits,refills,chunks\n");
  printf(
      "fixed pool, 4 KiB blocks, chunks of 64; %d x %d bursts of %d "
      "allocations, %llu us pauses; slow-sim: %llu us per request\n",
      o.repeat, o.bursts, o.burst, (unsigned long long)o.pause_us,
      (unsigned long long)o.slow_us);
  printf("%-9s %-9s %9s %7s %8s %8s %9s %10s %8s\n", "backend", "replenish",
         "allocs", "p50 ns", "p99 ns", "p99.9 ns", "max ns", "empty hits",
         "refills");
  for (int b = 0; b < 2; b++)
    for (int m = 0; m < 2; m++) {
      result_t *r = &res[b][m];
      qsort(r->lat, r->n, sizeof *r->lat, cmp_u64);
      printf("%-9s %-9s %9zu %7llu %8llu %8llu %9llu %10llu %8llu\n", bname[b],
             m ? "on" : "off", r->n, (unsigned long long)pct(r, 50),
             (unsigned long long)pct(r, 99), (unsigned long long)pct(r, 99.9),
             (unsigned long long)r->lat[r->n - 1],
             (unsigned long long)r->empty_hits, (unsigned long long)r->refills);
      if (csv)
        fprintf(csv, "%s,%s,%zu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n", bname[b],
                m ? "on" : "off", r->n, (unsigned long long)pct(r, 50),
                (unsigned long long)pct(r, 99),
                (unsigned long long)pct(r, 99.9),
                (unsigned long long)r->lat[r->n - 1],
                (unsigned long long)r->empty_hits,
                (unsigned long long)r->refills, (unsigned long long)r->chunks);
      free(r->lat);
    }
  if (csv) fclose(csv);
  nnmem_backend_destroy(sim);
  nnmem_backend_destroy(mm);
  return 0;
}

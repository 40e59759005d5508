/* bench/leaks.c - the cost of leak records (nnmem/leaks.h) on the ring
 * benchmark of bench/alloc.c, and of the two ways to take a backtrace.
 *
 *   leaks [--repeat N] [--csv OUT.csv] [--only MODE]
 *
 * Steps:
 *   1. ring: 1,024 live blocks, each step frees a random slot and
 *      allocates a random size in [16, 4096] into it (the same seed and
 *      sizes as bench/alloc.c's ring); one allocator per mode - records
 *      off, sampled (1 in 512 KiB, depth 16), full with depth 16, full
 *      without backtrace (depth 0), sampled 1 in 2 MiB, sampled 1 in 512
 *      KiB without backtrace, sampled 1 in 1 TiB (records on, no sample
 *      ever taken: the fixed cost), sampled 1 in 1 MiB and 1 in 16 KiB (a
 *      sample every ~8 steps: a sample's own cost, magnified) - rounds
 *      interleaved across modes so that background load hits all alike.
 *      Each round is timed twice: the thread's CPU time (what the figures
 *      use: time the VM gave other processes is not counted) and wall
 *      time. Per mode: the median CPU ns per step over --repeat rounds
 *      (default 15); the ratio to "off" per round (each mode's round
 *      against the "off" round just before it: paired, so that load
 *      drifting between rounds cancels) with its median and its range
 *      (min - max); the median wall ns per step;
 *   2. backtrace cost: from a call chain 24 frames deep, glibc backtrace()
 *      of 16 frames against libunwind's unw_backtrace() (libunwind.so.8
 *      opened with dlopen, as the leak records do; "absent" without it),
 *      ns per call, median of runs;
 *   3. every row also goes to OUT.csv (default bench-leaks.csv).
 * Compiled without nnmem/leaks.h (NNMEM_BENCH_BASELINE, against an older
 * nnmem) it runs the ring with records absent only: the "off" figure of
 * that build is the baseline for "zero cost when off".
 * It asserts nothing about time. Thread-safety: one thread. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dlfcn.h>

#include "nnmem/nnmem.h"

#include "bench_util.h"

enum { RING = 1024, STEPS = 1000000, MAX_REPEAT = 51, NMODE = 9 };

static uint64_t rnd(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* Seconds of CPU time the calling thread has used. */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One round; CPU ns per step, *wall = wall ns per step. */
static double ring(nnmem_allocator_t *a, const uint32_t *slot,
                   const uint32_t *size, double *wall) {
  static void *live[RING];
  for (int i = 0; i < RING; i++) {
    live[i] = nnmem_alloc(a, 16 + (size_t)i % 4081);
    *(volatile char *)live[i] = 1;
  }
  double t0 = now(), c0 = cpu_now();
  for (int s = 0; s < STEPS; s++) {
    uint32_t k = slot[s];
    nnmem_free(a, live[k]);
    live[k] = nnmem_alloc(a, size[s]);
    *(volatile char *)live[k] = 1;
  }
  double c = cpu_now() - c0, t = now() - t0;
  for (int i = 0; i < RING; i++)
    nnmem_free(a, live[i]);
  *wall = t * 1e9 / STEPS;
  return c * 1e9 / STEPS;
}

static nnmem_allocator_t *make(int mode) {
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
#ifndef NNMEM_BENCH_BASELINE
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  lc.mode = mode == 0   ? NNMEM_LEAKS_OFF
            : mode == 1 ? NNMEM_LEAKS_SAMPLED
                        : NNMEM_LEAKS_FULL;
  if (mode == 3) lc.depth = 0;
  if (mode == 4) lc.mode = NNMEM_LEAKS_SAMPLED, lc.sample_bytes = 2u << 20;
  if (mode == 5) lc.mode = NNMEM_LEAKS_SAMPLED, lc.depth = 0;
  /* records on, no sample ever taken: the fixed cost alone */
  if (mode == 6) lc.mode = NNMEM_LEAKS_SAMPLED, lc.sample_bytes = 1ull << 40;
  if (mode == 7) lc.mode = NNMEM_LEAKS_SAMPLED, lc.sample_bytes = 1u << 20;
  /* a sample every ~8 steps: the cost of one sample, magnified 32 times */
  if (mode == 8) lc.mode = NNMEM_LEAKS_SAMPLED, lc.sample_bytes = 16u << 10;
  cfg.leaks = &lc;
#else
  (void)mode;
#endif
  nnmem_allocator_t *a = NULL;
  if (nnmem_allocator_create(&cfg, &a) != NNMEM_OK) exit(1);
  return a;
}

/* ---- backtrace cost ---------------------------------------------------- */

typedef int (*bt_fn)(void **, int);
static volatile int sink;

static __attribute__((noinline)) double deep(int d, bt_fn fn, int calls) {
  if (d > 0) {
    double r = deep(d - 1, fn, calls);
    sink += d;
    return r;
  }
  void *buf[16];
  double t0 = now();
  for (int i = 0; i < calls; i++)
    sink += fn(buf, 16);
  return (now() - t0) * 1e9 / calls;
}

/* libunwind's unw_backtrace, opened as src/runtime/leaks.c opens it; NULL
 * when libunwind.so.8 is absent. */
static int (*unw_bt)(void **buf, int n);
static void open_unwind(void) {
  void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  void *f = h ? dlsym(h, "unw_backtrace") : NULL;
  if (f) memcpy(&unw_bt, &f, sizeof f);
}

int main(int argc, char **argv) {
  int repeat = 15;
  const char *csv_path = "bench-leaks.csv";
  const char *only = NULL; /* one mode besides "off" (perf runs) */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
      csv_path = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else {
      fprintf(stderr,
              "usage: leaks [--repeat N] [--csv OUT.csv] [--only MODE]\n");
      return 1;
    }
  }
  if (repeat < 1 || repeat > MAX_REPEAT) repeat = 15;
  FILE *csv = fopen(csv_path, "w");
  if (!csv) return 1;
  fprintf(csv, "bench,what,ns,ratio,ratio_min,ratio_max,wall_ns\n");
  uint32_t *slot = malloc(STEPS * sizeof *slot);
  uint32_t *size = malloc(STEPS * sizeof *size);
  uint64_t seed = 88172645463325252ULL;
  for (int s = 0; s < STEPS; s++) {
    slot[s] = (uint32_t)(rnd(&seed) % RING);
    size[s] = 16 + (uint32_t)(rnd(&seed) % 4081);
  }
#ifdef NNMEM_BENCH_BASELINE
  const int nmode = 1;
  static const char *names[NMODE] = {"baseline"};
#else
  const int nmode = NMODE;
  static const char *names[NMODE] = {
      "off",          "sampled-512KiB", "full-depth16",
      "full-depth0",  "sampled-2MiB",   "sampled-512KiB-depth0",
      "sampled-1TiB", "sampled-1MiB",   "sampled-16KiB"};
#endif
  static double t[NMODE][MAX_REPEAT], w[NMODE][MAX_REPEAT],
      q[NMODE][MAX_REPEAT];
  nnmem_allocator_t *al[NMODE] = {0};
  int on[NMODE] = {1}; /* "off" always runs: the ratios' reference */
  for (int m = 1; m < nmode; m++)
    on[m] = !only || !strcmp(only, names[m]);
  for (int m = 0; m < nmode; m++)
    if (on[m]) al[m] = make(m);
  printf(
      "ring: %d live blocks, 16 B - 4 KiB, %d steps, %d rounds interleaved;\n"
      "ns/step: median thread CPU time; vs off: median of the per-round "
      "ratios to the\n\"off\" round before (range: min - max); wall: median "
      "wall time\n",
      RING, STEPS, repeat);
  for (int r = 0; r < repeat; r++)
    for (int m = 0; m < nmode; m++) {
      if (!on[m]) continue;
      t[m][r] = ring(al[m], slot, size, &w[m][r]);
      q[m][r] = t[m][r] / t[0][r];
    }
  printf("%-22s %9s %9s %17s %9s\n", "records", "ns/step", "vs off", "range",
         "wall ns");
  for (int m = 0; m < nmode; m++) {
    if (!on[m]) continue;
    double v = median(t[m], repeat), wv = median(w[m], repeat);
    double ratio = median(q[m], repeat); /* sorts q[m] */
    double lo = q[m][0], hi = q[m][repeat - 1];
    printf("%-22s %9.2f %8.3fx %7.3fx - %.3fx %9.2f\n", names[m], v, ratio, lo,
           hi, wv);
    fprintf(csv, "ring,%s,%.2f,%.4f,%.4f,%.4f,%.2f\n", names[m], v, ratio, lo,
            hi, wv);
    nnmem_allocator_destroy(al[m]);
  }
  if (only) {
    fclose(csv);
    free(slot);
    free(size);
    return 0;
  }
  double bt[MAX_REPEAT], uw[MAX_REPEAT];
  open_unwind();
  for (int r = 0; r < repeat; r++) {
    bt[r] = deep(24, backtrace, 20000);
    uw[r] = unw_bt ? deep(24, unw_bt, 20000) : 0;
  }
  double b = median(bt, repeat), u = median(uw, repeat);
  printf("\nbacktrace of 16 frames from 24 deep, ns per call (median of %d)\n",
         repeat);
  printf("%-28s %10.1f\n", "glibc backtrace()", b);
  fprintf(csv, "backtrace,glibc,%.1f,1,,,\n", b);
  if (unw_bt) {
    printf("%-28s %10.1f  (%.2fx glibc)\n", "libunwind unw_backtrace()", u,
           u / b);
    fprintf(csv, "backtrace,libunwind,%.1f,%.4f,,,\n", u, u / b);
  } else {
    printf("%-28s %10s\n", "libunwind unw_backtrace()", "absent");
  }
  fclose(csv);
  free(slot);
  free(size);
  return 0;
}

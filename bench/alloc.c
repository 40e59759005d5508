/* bench/alloc.c - the allocator benchmark: nnmem against glibc malloc,
 * jemalloc and mimalloc in one run (not part of `make test`).
 *
 *   alloc [--csv OUT.csv] [--repeat N] [--data DIR]
 *
 * Steps:
 *   1. jemalloc is linked when CMake found it (NNMEM_BENCH_JEMALLOC; its
 *      initial-exec TLS cannot be dlopen'ed) and called through mallocx /
 *      dallocx; linking it replaces malloc for the whole process, so glibc
 *      is called as __libc_malloc / __libc_free. mimalloc is loaded with
 *      dlopen (mi_malloc / mi_free). An absent allocator is skipped and the
 *      table says so (install: libjemalloc-dev, libmimalloc-dev);
 *   2. (a) ring: 1,024 live blocks, each step frees a random slot and
 *      allocates a random size in [16, 4096] into it (sizes and slots drawn
 *      beforehand), one byte written per block; ns per step (one free + one
 *      allocation) and per call, median of --repeat runs (default 7);
 *   3. (b) tensor replay: every trace of DIR/dsa/traces through every nnmem
 *      pool kind on an unbacked simulated device (peak reserved / peak live,
 *      fragmentation, ns per operation), and through nnmem's allocator
 *      front and each malloc on real memory (reserved sampled at each new
 *      live maximum where the allocator reports it; traces whose live bytes
 *      pass half of this machine's memory are skipped for them); ns/op are
 *      medians of min(--repeat, 5) replays;
 *   4. (c) the ring on two threads (each its own ring) against one thread:
 *      throughput ratio by wall time, median of runs; and the same ratio
 *      by each thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which time
 *      slices taken by other processes do not inflate: on a loaded
 *      machine the wall ratio measures the load, the CPU ratio what the
 *      two threads cost each other (shared lines, locks, bandwidth);
 *   5. ratios against every alternative; every row also goes to OUT.csv
 *      (default bench-alloc.csv);
 *   6. (d) the cost of sampled latency (cycle counter on the thread-cache
 *      path): the ring on three nnmem allocators, latency_sample about
 *      never / 1 in 64 / every call, and the figures the default one
 *      reports (latency p50/p99/mean, hit rate, lock contention,
 *      fragmentation). --only-sampling runs just (d).
 * It asserts nothing about time. Thread-safety: its own threads only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nnmem/nnmem.h"
#include "bench_util.h"

#ifndef NNMEM_DEFAULT_DATA_DIR
#define NNMEM_DEFAULT_DATA_DIR "../shared/data"
#endif

enum { RING = 1024, STEPS = 2000000, MAX_REPEAT = 51, MAX_ALLOCS = 4 };

typedef struct allocator {
  const char *name;
  int present;
  void *(*alloc)(void *ctx, size_t n);
  void (*release)(void *ctx, void *p);
  void *ctx;
  uint64_t (*reserved)(void); /* bytes held from the OS now; NULL: unknown */
} allocator_t;

#ifdef NNMEM_BENCH_JEMALLOC
void *mallocx(size_t size, int flags);
void dallocx(void *ptr, int flags);
static void *(*je_mallocx)(size_t, int) = mallocx;
static void (*je_dallocx)(void *, int) = dallocx;
#else
static void *(*je_mallocx)(size_t, int);
static void (*je_dallocx)(void *, int);
#endif
#ifdef NNMEM_BENCH_JEMALLOC
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
            size_t newlen);
static uint64_t je_reserved(void) { /* refresh, then the mapped bytes */
  uint64_t epoch = 1;
  size_t len = sizeof epoch, mapped = 0, ml = sizeof mapped;
  mallctl("epoch", &epoch, &len, &epoch, len);
  return mallctl("stats.mapped", &mapped, &ml, NULL, 0) == 0 ? mapped : 0;
}
#endif
static uint64_t glibc_reserved(void) { /* all arenas + mmapped chunks */
  struct mallinfo2 mi = mallinfo2();
  return (uint64_t)mi.arena + (uint64_t)mi.hblkhd;
}
void *__libc_malloc(size_t size); /* glibc's own, whoever owns malloc */
void __libc_free(void *ptr);
static void *(*mi_malloc_fn)(size_t);
static void (*mi_free_fn)(void *);

static void *glibc_alloc(void *c, size_t n) {
  (void)c;
  return __libc_malloc(n);
}
static void glibc_free(void *c, void *p) {
  (void)c;
  __libc_free(p);
}
static void *je_alloc(void *c, size_t n) {
  (void)c;
  return je_mallocx(n, 0);
}
static void je_free(void *c, void *p) {
  (void)c;
  je_dallocx(p, 0);
}
static void *mi_alloc(void *c, size_t n) {
  (void)c;
  return mi_malloc_fn(n);
}
static void mi_free_w(void *c, void *p) {
  (void)c;
  mi_free_fn(p);
}
static nnmem_allocator_t *g_nn;
static uint64_t nn_reserved(void) {
  nnmem_stats_t st;
  return nnmem_allocator_stats(g_nn, &st) == NNMEM_OK ? st.reserved_bytes : 0;
}
static void *nn_alloc(void *c, size_t n) {
  return nnmem_alloc(c, n);
}
static void nn_free(void *c, void *p) {
  nnmem_free(c, p);
}

static allocator_t allocs[MAX_ALLOCS];

static void load_allocators(nnmem_allocator_t *nn) {
  g_nn = nn;
  allocs[0] = (allocator_t){"nnmem", 1, nn_alloc, nn_free, nn, nn_reserved};
  allocs[1] =
      (allocator_t){"glibc", 1, glibc_alloc, glibc_free, NULL, glibc_reserved};
  allocs[2] = (allocator_t){
      "jemalloc", je_mallocx && je_dallocx, je_alloc, je_free, NULL, NULL};
#ifdef NNMEM_BENCH_JEMALLOC
  allocs[2].reserved = je_reserved;
#endif
  void *h = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
  if (h) {
    mi_malloc_fn = (void *(*)(size_t))dlsym(h, "mi_malloc");
    mi_free_fn = (void (*)(void *))dlsym(h, "mi_free");
  }
  allocs[3] = (allocator_t){
      "mimalloc", mi_malloc_fn && mi_free_fn, mi_alloc, mi_free_w, NULL, NULL};
  for (int i = 0; i < MAX_ALLOCS; i++)
    if (!allocs[i].present)
      printf("note: %s not found (install lib%s-dev); skipped\n",
             allocs[i].name, allocs[i].name);
}

static double cpu_now(void) { /* the calling thread's CPU time */
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

typedef struct ring_job {
  const allocator_t *al;
  const uint32_t *slot, *size;
  double seconds, cpu; /* wall and this thread's CPU time */
} ring_job_t;

static void *ring_run(void *arg) {
  ring_job_t *j = arg;
  void *live[RING];
  for (int i = 0; i < RING; i++) {
    live[i] = j->al->alloc(j->al->ctx, 16 + (size_t)i % 4081);
    *(volatile char *)live[i] = 1;
  }
  double t0 = now(), c0 = cpu_now();
  for (int s = 0; s < STEPS; s++) {
    uint32_t k = j->slot[s];
    j->al->release(j->al->ctx, live[k]);
    live[k] = j->al->alloc(j->al->ctx, j->size[s]);
    *(volatile char *)live[k] = 1;
  }
  j->seconds = now() - t0;
  j->cpu = cpu_now() - c0;
  for (int i = 0; i < RING; i++)
    j->al->release(j->al->ctx, live[i]);
  return NULL;
}

static void make_steps(uint32_t *slot, uint32_t *size, uint64_t seed) {
  for (int s = 0; s < STEPS; s++) {
    slot[s] = (uint32_t)(rnd(&seed) % RING);
    size[s] = 16 + (uint32_t)(rnd(&seed) % 4081);
  }
}

/* One round for one allocator: the ring on this thread (*t1, seconds),
 * then on two new threads at once (sp[0] = throughput ratio 2 vs 1 by wall
 * time; sp[1] = the same by each thread's CPU time, which time slices lost
 * to other processes do not inflate: below 2.0 only by what the two
 * threads cost each other - shared cache lines, locks, memory bandwidth). */
static void ring_round(const allocator_t *al, const uint32_t *slot,
                       const uint32_t *size, double *t1, double sp[2]) {
  ring_job_t j = {al, slot, size, 0, 0};
  ring_run(&j);
  *t1 = j.seconds;
  ring_job_t j2[2] = {{al, slot, size, 0, 0},
                      {al, slot + STEPS, size + STEPS, 0, 0}};
  pthread_t th[2];
  for (int t = 0; t < 2; t++)
    pthread_create(&th[t], NULL, ring_run, &j2[t]);
  for (int t = 0; t < 2; t++)
    pthread_join(th[t], NULL);
  double wall = j2[0].seconds > j2[1].seconds ? j2[0].seconds : j2[1].seconds;
  double cpu = j2[0].cpu > j2[1].cpu ? j2[0].cpu : j2[1].cpu;
  sp[0] = 2.0 * *t1 / wall; /* throughput(2 threads) / throughput(1) */
  sp[1] = 2.0 * j.cpu / cpu;
}

/* (a) and (c). Rounds are interleaved across allocators (round r of every
 * allocator before round r + 1) so that background load hits all alike. */
static void bench_ring(int repeat, FILE *csv) {
  static double t1[MAX_ALLOCS][MAX_REPEAT], sp[2][MAX_ALLOCS][MAX_REPEAT];
  uint32_t *slot = malloc(STEPS * sizeof *slot * 2);
  uint32_t *size = malloc(STEPS * sizeof *size * 2);
  make_steps(slot, size, 88172645463325252ULL);
  make_steps(slot + STEPS, size + STEPS, 0x9E3779B97F4A7C15ULL);
  double one[MAX_ALLOCS] = {0}, scale[MAX_ALLOCS] = {0}, cscale = 0;
  printf(
      "\n(a) ring: %d live blocks, random replacement, 16 B - 4 KiB, "
      "%d steps, median of %d\n(c) 2 threads: each its own ring at once, "
      "throughput over 1 thread by wall time and by thread CPU time\n",
      RING, STEPS, repeat);
  for (int r = 0; r < repeat; r++)
    for (int a = 0; a < MAX_ALLOCS; a++)
      if (allocs[a].present) {
        double two[2];
        ring_round(&allocs[a], slot, size, &t1[a][r], two);
        sp[0][a][r] = two[0];
        sp[1][a][r] = two[1];
      }
  printf("%-10s %12s %12s %14s %14s\n", "allocator", "ns/step", "ns/call",
         "2 threads", "2 thr (cpu)");
  for (int a = 0; a < MAX_ALLOCS; a++) {
    if (!allocs[a].present) {
      printf("%-10s %12s\n", allocs[a].name, "absent");
      continue;
    }
    one[a] = median(t1[a], repeat) * 1e9 / STEPS;
    scale[a] = median(sp[0][a], repeat);
    cscale = median(sp[1][a], repeat);
    printf("%-10s %12.1f %12.1f %13.2fx %13.2fx\n", allocs[a].name, one[a],
           one[a] / 2, scale[a], cscale);
    fprintf(csv, "ring,%s,,%.2f,%.3f\n", allocs[a].name, one[a], scale[a]);
    fprintf(csv, "ring-cpu,%s,,,%.3f\n", allocs[a].name, cscale);
  }
  printf("ratios (nnmem ns/step / other):");
  for (int a = 1; a < MAX_ALLOCS; a++)
    if (allocs[a].present)
      printf("  %s %.2fx", allocs[a].name, one[0] / one[a]);
  printf("\n");
  free(slot);
  free(size);
}

typedef nnmem_trace_event_t event_t;

/* Real-memory replay through a malloc; ns per operation. When the
 * allocator reports its reservation, a second untimed pass samples it each
 * time the live bytes reach a new maximum: *resv_out is the largest sample
 * over the peak live bytes (0 when unknown). */
static double malloc_pass(const allocator_t *al, const nnmem_problem_t *p,
                          int sample, double *resv_out);
static double malloc_replay(const allocator_t *al, const nnmem_problem_t *p,
                            double *resv_out) {
  double ns = malloc_pass(al, p, 0, resv_out);
  *resv_out = 0;
  if (al->reserved) (void)malloc_pass(al, p, 1, resv_out);
  return ns;
}

static double malloc_pass(const allocator_t *al, const nnmem_problem_t *p,
                          int sample, double *resv_out) {
  size_t n = nnmem_problem_count(p), k = 0;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  event_t *ev = NULL;
  void **addr = calloc(n, sizeof *addr);
  if (nnmem_trace_events(p, &ev, &k) != NNMEM_OK || !addr) {
    free(ev);
    free(addr);
    return 0;
  }
  uint64_t live = 0, peak = 0, resv = 0;
  double t0 = now();
  for (size_t e = 0; e < k; e++) {
    uint32_t i = ev[e].index;
    if (ev[e].is_alloc) {
      addr[i] = al->alloc(al->ctx, b[i].size);
      if (addr[i]) *(volatile char *)addr[i] = 1;
      live += b[i].size;
      if (sample && live > peak) {
        peak = live;
        uint64_t r = al->reserved();
        if (r > resv) resv = r;
      }
    } else {
      al->release(al->ctx, addr[i]);
      live -= b[i].size;
    }
  }
  double dt = now() - t0;
  if (sample && peak) *resv_out = (double)resv / (double)peak;
  free(addr);
  free(ev);
  return k ? dt * 1e9 / (double)k : 0;
}

/* Median ns/op of `repeat` replays of pool `k` (the other figures do not
 * change between runs: the replay is deterministic). */
static nnmem_status_t pool_replay_median(const nnmem_problem_t *p,
                                         nnmem_pool_kind_t k, int repeat,
                                         nnmem_replay_result_t *r,
                                         nnmem_diag_t *d) {
  double ns[MAX_REPEAT];
  for (int i = 0; i < repeat; i++) {
    nnmem_status_t st = nnmem_pool_replay(p, k, NULL, 256, r, d);
    if (st != NNMEM_OK) return st;
    ns[i] = r->ns_per_op;
  }
  r->ns_per_op = median(ns, repeat);
  return NNMEM_OK;
}

static void bench_trace(const char *path, const char *name, int repeat,
                        FILE *csv) {
  nnmem_csv_t *c = NULL;
  nnmem_diag_t d;
  if (nnmem_csv_read_file(path, &c, &d) != NNMEM_OK) {
    printf("%s: %s\n", name, d.message);
    return;
  }
  const nnmem_problem_t *p = nnmem_csv_problem(c);
  uint64_t live = 0;
  for (int k = NNMEM_POOL_TIERED; k <= NNMEM_POOL_SLAB; k++) {
    nnmem_replay_result_t r;
    if (pool_replay_median(p, (nnmem_pool_kind_t)k, repeat, &r, &d) !=
        NNMEM_OK) {
      printf("  %-12s %-10s failed: %s\n", name,
             nnmem_pool_kind_name((nnmem_pool_kind_t)k), d.message);
      continue;
    }
    live = r.peak_live_bytes;
    printf("  %-12s %-10s %8.3fx %8.3f %9.1f\n", name,
           nnmem_pool_kind_name((nnmem_pool_kind_t)k), r.reserved_over_live,
           r.fragmentation, r.ns_per_op);
    fprintf(csv, "replay,%s,%s,%.2f,%.4f,%.4f\n", name,
            nnmem_pool_kind_name((nnmem_pool_kind_t)k), r.ns_per_op,
            r.reserved_over_live, r.fragmentation);
  }
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  int fits = live < (uint64_t)pages * (uint64_t)psz / 2;
  for (int a = 0; a < MAX_ALLOCS; a++) { /* nnmem: the allocator front */
    if (!allocs[a].present) continue;
    if (!fits) {
      printf("  %-12s %-10s %8s %8s %9s (live bytes > half of RAM)\n", name,
             allocs[a].name, "-", "-", "skipped");
      continue;
    }
    double resv = 0, t[MAX_REPEAT];
    for (int i = 0; i < repeat; i++)
      t[i] = malloc_replay(&allocs[a], p, &resv);
    double ns = median(t, repeat);
    char rs[32] = "-";
    if (resv > 0) snprintf(rs, sizeof rs, "%.3fx", resv);
    printf("  %-12s %-10s %9s %8s %9.1f\n", name, allocs[a].name, rs, "-", ns);
    fprintf(csv, "replay,%s,%s,%.2f,%.4f,\n", name, allocs[a].name, ns, resv);
  }
  nnmem_csv_destroy(c);
}

static void bench_traces(const char *data, int repeat, FILE *csv) {
  static const char *names[] = {"resnet50", "tiny_bert", "bert_base",
                                "pangu_2.6B", "iopddl_S_1"};
  printf(
      "\n(b) tensor replay: nnmem pools on an unbacked simulated device; "
      "mallocs on real memory, reserved sampled at each new live maximum "
      "(glibc: mallinfo2 arena + mmapped; jemalloc: stats.mapped; '-': "
      "not measured)\n");
  printf("  %-12s %-10s %9s %8s %9s\n", "trace", "pool", "resv/live", "frag",
         "ns/op");
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/dsa/traces/%s.csv", data, names[i]);
    if (access(path, R_OK) != 0) {
      printf("  %s: absent (%s); skipped\n", names[i], path);
      continue;
    }
    bench_trace(path, names[i], repeat, csv);
  }
}

/* (d) the cost of sampled latency: the ring on nnmem allocators that differ
 * only in latency_sample (about never, 1 in 64 = the default, every call),
 * rounds interleaved, median ns/step by wall and by thread CPU time; then
 * the figures the sampling produces on the default one (the stats of the
 * 1-thread and 2-thread rings): latency p50 / p99 / mean, hit rate, lock
 * contention, fragmentation. */
static void bench_sampling(int repeat, FILE *csv) {
  static const uint32_t every[3] = {UINT32_MAX, 64, 1};
  static const char *const label[3] = {"off", "1/64", "1/1"};
  static double wall[3][MAX_REPEAT], cpu[3][MAX_REPEAT];
  uint32_t *slot = malloc(STEPS * sizeof *slot * 2);
  uint32_t *size = malloc(STEPS * sizeof *size * 2);
  make_steps(slot, size, 88172645463325252ULL);
  make_steps(slot + STEPS, size + STEPS, 0x9E3779B97F4A7C15ULL);
  nnmem_allocator_t *na[3];
  allocator_t al[3];
  for (int v = 0; v < 3; v++) {
    nnmem_allocator_config_t cfg;
    nnmem_allocator_config_init(&cfg);
    cfg.latency_sample = every[v];
    if (nnmem_allocator_create(&cfg, &na[v]) != NNMEM_OK) exit(1);
    al[v] = (allocator_t){"nnmem", 1, nn_alloc, nn_free, na[v], NULL};
  }
  printf(
      "\n(d) sampled latency: the ring on nnmem with latency_sample off / "
      "1 in 64 (default) / every call, median of %d\n",
      repeat);
  double two[2];
  for (int r = 0; r < repeat; r++)
    for (int v = 0; v < 3; v++) {
      ring_job_t j = {&al[v], slot, size, 0, 0};
      ring_run(&j);
      wall[v][r] = j.seconds * 1e9 / STEPS;
      cpu[v][r] = j.cpu * 1e9 / STEPS;
    }
  ring_round(&al[1], slot, size, &(double){0}, two); /* 2 threads: locks */
  printf("%-10s %12s %12s %12s\n", "sampling", "ns/step", "cpu ns/step",
         "vs off");
  double off = median(cpu[0], repeat);
  for (int v = 0; v < 3; v++) {
    double w = median(wall[v], repeat), c = median(cpu[v], repeat);
    printf("%-10s %12.1f %12.1f %11.2f%%\n", label[v], w, c,
           (c / off - 1) * 100);
    fprintf(csv, "sampling,%s,,%.2f,%.4f\n", label[v], c, c / off);
  }
  nnmem_stats_t st;
  if (nnmem_allocator_stats(na[1], &st) == NNMEM_OK)
    printf(
        "1/64 figures: %llu samples, latency p50 %llu ns, p99 %llu ns, "
        "mean %.1f ns; hit rate %.4f; lock contention %.4f (%llu of %llu "
        "acquisitions); fragmentation %.4f\n",
        (unsigned long long)st.latency_samples,
        (unsigned long long)nnmem_stats_latency_percentile(&st, 50),
        (unsigned long long)nnmem_stats_latency_percentile(&st, 99),
        nnmem_stats_latency_mean_ns(&st), nnmem_stats_hit_rate(&st),
        nnmem_stats_lock_contention(&st), (unsigned long long)st.lock_contended,
        (unsigned long long)st.lock_acquisitions, st.fragmentation);
  for (int v = 0; v < 3; v++)
    nnmem_allocator_destroy(na[v]);
  free(slot);
  free(size);
}

int main(int argc, char **argv) {
  const char *csv_path = "bench-alloc.csv", *data = NNMEM_DEFAULT_DATA_DIR;
  int repeat = 7, only_sampling = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--only-sampling") == 0)
      only_sampling = 1;
    else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
      csv_path = argv[++i];
    else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
      repeat = atoi(argv[++i]);
    else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
      data = argv[++i];
    else {
      fprintf(stderr,
              "usage: alloc [--csv OUT.csv] [--repeat N] "
              "[--data DIR] [--only-sampling]\n");
      return 1;
    }
  }
  if (repeat < 1) repeat = 1;
  if (repeat > MAX_REPEAT) repeat = MAX_REPEAT;
  nnmem_allocator_t *nn = NULL;
  if (nnmem_allocator_create(NULL, &nn) != NNMEM_OK) return 1;
  FILE *csv = fopen(csv_path, "w");
  if (!csv) {
    perror(csv_path);
    nnmem_allocator_destroy(nn);
    return 1;
  }
  fprintf(csv,
          "bench,allocator_or_trace,pool,ns,ratio_or_scaling,"
          "fragmentation\n");
  load_allocators(nn);
  if (!only_sampling) {
    bench_ring(repeat, csv);
    bench_traces(data, repeat < 5 ? repeat : 5, csv);
  }
  bench_sampling(repeat, csv);
  fclose(csv);
  printf("\nrows written to %s\n", csv_path);
  nnmem_allocator_destroy(nn);
  return 0;
}

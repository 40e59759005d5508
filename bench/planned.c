/* bench/planned.c - record, plan, serve: the plan-backed allocator
 * (nnmem/planned.h) against the tiered pool on the shared traces.
 *
 *   planned [--repeat N] [--csv OUT.csv] [--data DIR]
 *
 * Steps, for every trace of DIR/dsa/traces:
 *   1. the trace as a run: its distinct event times become steps 0, 1, ...;
 *      at step t the buffers with first == t are allocated (file order),
 *      then those with last == t + 1 freed, so the run's lifetimes are the
 *      trace's [first, last);
 *   2. recording run through nnmem_planned_record (on nnmem's allocator,
 *      untimed); the recorded problem is planned (nnmem_plan_create,
 *      defaults) and checked by nnmem_plan_verify;
 *   3. served run: nnmem_planned_serve on an address range of the plan's
 *      height (mmap, MAP_NORESERVE, never touched: the traces reach 15 GB),
 *      the same events timed: wall time / operations (allocations + frees,
 *      step markers included in the time) and / allocations; median of
 *      --repeat (default 7); served and fallback counts;
 *   3a. the same served run through nnmem/planned_inline.h (the fast
 *      paths in line, the library called for the rest), rounds
 *      interleaved;
 *   3b. the bench's own loop alone: the same events with no library call
 *      at all (allocations load the full run's pointers, frees load their
 *      pointer into a sink, no step markers), rounds interleaved with the
 *      full runs; (full - loop) / allocations is the library's time per
 *      allocation (its alloc, its free, its share of the step markers),
 *      next to the whole replay's;
 *   4. the tiered pool on the same trace (nnmem_pool_replay on an unbacked
 *      simulated device: wall time / operations, peak reserved), median;
 *   5. rows to OUT.csv (default bench-planned.csv).
 * Peak of the plan-backed allocator = the plan's height (its one range).
 * It asserts nothing about time. Thread-safety: one thread. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "nnmem/nnmem.h"
#include "nnmem/planned_inline.h"
#include "bench_util.h"

#ifndef NNMEM_DEFAULT_DATA_DIR
#define NNMEM_DEFAULT_DATA_DIR "../shared/data"
#endif
enum { MAX_REPEAT = 51 };

/* One event, 16 bytes read in order: an allocation carries its size, so
 * the replay reads no buffer table (a free reads the pointer its
 * allocation stored, ptr[buf]). */
typedef struct ev {
  uint32_t t;    /* dense step (< 2 x buffers) */
  uint32_t buf;  /* buffer index */
  uint64_t size; /* allocation: its size; free: 0 */
} ev_t;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static int ev_cmp(const void *a, const void *b) {
  const ev_t *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  if (!x->size != !y->size) return x->size ? -1 : 1; /* allocations first */
  return (x->buf > y->buf) - (x->buf < y->buf);
}

static uint64_t dense(const uint64_t *times, size_t nt, uint64_t v) {
  size_t lo = 0, hi = nt;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (times[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Step 1: the events of `p` with dense steps. */
static ev_t *make_events(const nnmem_problem_t *p, size_t *n_out) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  uint64_t *times = malloc(2 * n * sizeof *times);
  ev_t *ev = malloc(2 * n * sizeof *ev);
  for (size_t i = 0; i < n; i++) {
    times[2 * i] = b[i].first;
    times[2 * i + 1] = b[i].last - 1;
  }
  qsort(times, 2 * n, sizeof *times, cmp_u64);
  size_t nt = 0;
  for (size_t i = 0; i < 2 * n; i++)
    if (i == 0 || times[i] != times[nt - 1]) times[nt++] = times[i];
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (b[i].size == 0) continue;
    ev[k++] =
        (ev_t){(uint32_t)dense(times, nt, b[i].first), (uint32_t)i, b[i].size};
    ev[k++] = (ev_t){(uint32_t)dense(times, nt, b[i].last - 1), (uint32_t)i, 0};
  }
  qsort(ev, k, sizeof *ev, ev_cmp);
  free(times);
  *n_out = k;
  return ev;
}

static void *volatile sink;

/* The served run (3), with the library calls or, with `inl`, through
 * nnmem/planned_inline.h (3a); always inlined with a constant `inl`, so
 * each caller's loop has one kind of call and no test of `inl`. */
static inline __attribute__((always_inline)) double
play_served(nnmem_planned_t *pl, const ev_t *ev, size_t n, void **ptr,
            int inl) {
  uint32_t step = 0;
  double t0 = now();
  for (size_t i = 0; i < n; i++) {
    while (step < ev[i].t) {
      if (inl)
        nnmem_step_inline(pl);
      else
        nnmem_step(pl);
      step++;
    }
    if (ev[i].size)
      ptr[ev[i].buf] = inl ? nnmem_planned_alloc_inline(pl, ev[i].size)
                           : nnmem_planned_alloc(pl, ev[i].size);
    else if (inl)
      nnmem_planned_free_inline(pl, ptr[ev[i].buf]);
    else
      nnmem_planned_free(pl, ptr[ev[i].buf]);
  }
  return now() - t0;
}

static double play_calls(nnmem_planned_t *pl, const ev_t *ev, size_t n,
                         void **ptr) {
  return play_served(pl, ev, n, ptr, 0);
}

static double play_inline(nnmem_planned_t *pl, const ev_t *ev, size_t n,
                          void **ptr) {
  return play_served(pl, ev, n, ptr, 1);
}

/* The bench's own loop alone (3b): nothing of the library is called, an
 * allocation loads its pointer from given[], a free its pointer. */
static double play_loop(const ev_t *ev, size_t n, void **ptr,
                        void *const *given) {
  double t0 = now();
  for (size_t i = 0; i < n; i++) {
    if (ev[i].size)
      ptr[ev[i].buf] = given[ev[i].buf];
    else
      sink = ptr[ev[i].buf];
  }
  return now() - t0;
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
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t n = nnmem_problem_count(p), nev;
  ev_t *ev = make_events(p, &nev);
  void **ptr = calloc(n, sizeof *ptr);
  nnmem_allocator_t *a = NULL;
  nnmem_allocator_create(NULL, &a);
  /* 2. record, plan, verify */
  nnmem_planned_t *pl = NULL;
  nnmem_planned_record(a, NULL, &pl);
  play_calls(pl, ev, nev, ptr);
  nnmem_problem_t *rec = NULL;
  nnmem_plan_t *plan = NULL;
  nnmem_status_t st = nnmem_planned_problem(pl, &rec);
  nnmem_planned_destroy(pl);
  if (st == NNMEM_OK) st = nnmem_plan_create(rec, NULL, &plan, &d);
  if (st == NNMEM_OK)
    st = nnmem_plan_verify(rec, nnmem_plan_offsets(plan), 1, 0, NULL, &d);
  if (st != NNMEM_OK) {
    printf("  %-12s record/plan failed: %s\n", name, d.message);
    goto out;
  }
  uint64_t height = nnmem_plan_height(plan), lb = 0;
  nnmem_problem_lower_bound(rec, 1, &lb);
  /* 3. served runs */
  void *base = mmap(NULL, height, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    printf("  %-12s cannot map %llu bytes\n", name, (unsigned long long)height);
    goto out;
  }
  nnmem_planned_config_t pc;
  nnmem_planned_config_init(&pc);
  pc.base = base;
  double t[MAX_REPEAT], tl[MAX_REPEAT], ti[MAX_REPEAT];
  nnmem_planned_stats_t pi = {0};
  void **given = calloc(n, sizeof *given);
  nnmem_planned_stats_t ps = {0};
  for (int r = 0; r < repeat; r++)
    for (int inl = 0; inl < 2; inl++) { /* calls, then inline */
      st = nnmem_planned_serve(a, rec, nnmem_plan_offsets(plan), &pc, &pl,
                               &d);
      if (st != NNMEM_OK) {
        printf("  %-12s serve failed: %s\n", name, d.message);
        munmap(base, height);
        free(given);
        goto out;
      }
      if (inl) {
        ti[r] = play_inline(pl, ev, nev, ptr);
        nnmem_planned_stats(pl, &pi);
      } else {
        t[r] = play_calls(pl, ev, nev, ptr);
        nnmem_planned_stats(pl, &ps);
      }
      nnmem_planned_destroy(pl);
      if (!inl) {
        memcpy(given, ptr, n * sizeof *given);
        tl[r] = play_loop(ev, nev, ptr, given);
      }
    }
  if (pi.served != ps.served || pi.fallback != ps.fallback)
    printf("  %-12s inline run served %llu, fallback %llu: differs\n", name,
           (unsigned long long)pi.served, (unsigned long long)pi.fallback);
  free(given);
  double sec = median(t, repeat), secl = median(tl, repeat),
         seci = median(ti, repeat);
  size_t allocs = nev / 2;
  /* 4. the tiered pool */
  double tt[MAX_REPEAT];
  nnmem_replay_result_t rr = {0};
  for (int r = 0; r < repeat; r++) {
    if (nnmem_pool_replay(p, NNMEM_POOL_TIERED, NULL, 1, &rr, &d) != NNMEM_OK) {
      printf("  %-12s tiered failed: %s\n", name, d.message);
      break;
    }
    tt[r] = rr.ns_per_op;
  }
  double tns = median(tt, repeat);
  printf(
      "  %-12s %7zu %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %14llu %14llu "
      "%14llu %7llu/%llu\n",
      name, allocs, sec * 1e9 / (double)nev, sec * 1e9 / (double)allocs,
      (sec - secl) * 1e9 / (double)allocs, seci * 1e9 / (double)allocs,
      (seci - secl) * 1e9 / (double)allocs, tns, (unsigned long long)height,
      (unsigned long long)rr.peak_reserved_bytes, (unsigned long long)lb,
      (unsigned long long)ps.served, (unsigned long long)ps.allocs);
  fprintf(csv,
          "%s,%zu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%llu,%llu,%llu,%llu,%llu\n",
          name, allocs, sec * 1e9 / (double)nev, sec * 1e9 / (double)allocs,
          (sec - secl) * 1e9 / (double)allocs, seci * 1e9 / (double)allocs,
          (seci - secl) * 1e9 / (double)allocs, tns, (unsigned long long)height,
          (unsigned long long)rr.peak_reserved_bytes, (unsigned long long)lb,
          (unsigned long long)ps.served, (unsigned long long)ps.fallback);
  munmap(base, height);
out:
  nnmem_plan_destroy(plan);
  nnmem_problem_destroy(rec);
  nnmem_allocator_destroy(a);
  free(ptr);
  free(ev);
  nnmem_csv_destroy(c);
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  int repeat = 7;
  const char *csv_path = "bench-planned.csv", *dir = getenv("NNMEM_DATA_DIR");
  if (!dir || !*dir) dir = NNMEM_DEFAULT_DATA_DIR;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
      csv_path = argv[++i];
    else if (!strcmp(argv[i], "--data") && i + 1 < argc)
      dir = argv[++i];
    else {
      fprintf(stderr,
              "usage: planned [--repeat N] [--csv OUT.csv] "
              "[--data DIR]\n");
      return 1;
    }
  }
  if (repeat < 1 || repeat > MAX_REPEAT) repeat = 7;
  char tdir[4096];
  snprintf(tdir, sizeof tdir, "%s/dsa/traces", dir);
  DIR *dd = opendir(tdir);
  if (!dd) {
    fprintf(stderr, "planned: no traces in %s\n", tdir);
    return 1;
  }
  char *names[64];
  int nn = 0;
  for (struct dirent *e; (e = readdir(dd)) && nn < 64;) {
    size_t l = strlen(e->d_name);
    if (l > 4 && !strcmp(e->d_name + l - 4, ".csv"))
      names[nn++] = strdup(e->d_name);
  }
  closedir(dd);
  qsort(names, (size_t)nn, sizeof *names, name_cmp);
  FILE *csv = fopen(csv_path, "w");
  if (!csv) return 1;
  fprintf(csv,
          "trace,allocs,planned_ns_per_op,planned_ns_per_alloc,"
          "planned_library_ns_per_alloc,inline_ns_per_alloc,"
          "inline_library_ns_per_alloc,"
          "tiered_ns_per_op,plan_height,tiered_peak_reserved,"
          "lower_bound,served,fallback\n");
  printf(
      "record -> plan -> serve, median of %d; plan/op, plan/alc: wall time "
      "of the replay (allocs, frees, steps) / operations, / allocations; lib/"
      "alc: (replay - the bench loop alone) / allocations, the library's "
      "alloc, free and step markers; inl rep, inl/alc: plan/alc and lib/alc "
      "through nnmem/planned_inline.h\n",
      repeat);
  printf("  %-12s %7s %8s %8s %8s %8s %8s %8s %14s %14s %14s %s\n",
         "trace", "allocs", "plan/op", "plan/alc", "lib/alc", "inl rep",
         "inl/alc", "tier/op",
         "plan height", "tiered peak", "lower bound", "served");
  for (int i = 0; i < nn; i++) {
    char path[8192], name[256];
    snprintf(path, sizeof path, "%s/%s", tdir, names[i]);
    snprintf(name, sizeof name, "%.*s", (int)(strlen(names[i]) - 4), names[i]);
    bench_trace(path, name, repeat, csv);
    free(names[i]);
  }
  fclose(csv);
  return 0;
}

/* bench/heap.c - the handle heap benchmark (not part of `make test`):
 *
 *   heap [--csv OUT.csv] [--data DIR] [--seed N] [--only 1|2|3|4]
 *
 * Steps:
 *   1. fragmentation: every trace of DIR/dsa/traces, the same trace with
 *      randomized sizes (x U[0.5, 1.5]) and lifetimes (each end moved by up
 *      to 25% of the trace length), and a long-running mixed-shape workload
 *      (400,000 buffers of 12 shapes with random lifetimes), replayed through
 *      a heap whose capacity is 1.05 x the peak live bytes (rounded to the
 *      alignment, 16). Without compaction (off) and with it (auto: compact
 *      when an allocation finds no gap), with 1% of the live blocks pinned
 *      at each compaction; reports whether the trace fits, the compactions,
 *      bytes moved, and the worst largest-allocatable-block / free-bytes
 *      ratio right after a compaction (pinned blocks included);
 *   2. growable segments: the traces on a growable segment (granules of
 *      64 KiB and 2 MiB, no compaction): peak committed / peak live against
 *      every chunked pool kind's peak reserved / peak live (nnmem_pool_replay)
 *      and the best of them;
 *   3. compaction throughput: 512 MiB of 2 MiB blocks in a host virtual
 *      segment, every other block freed, compacted by copy and by mremap
 *      (GB/s = bytes moved / wall seconds, median of 5);
 *   4. pin/unpin on the ring: 1,024 live handles, 10^7 steps each pinning a
 *      random handle, writing one byte and unpinning, against the same loop
 *      with raw pointers, rounds interleaved: ns per call = (handle loop -
 *      raw loop) / 2 calls, by wall time and by thread CPU time (which
 *      time slices lost to other processes do not inflate), medians of 5;
 *   5. rows also go to OUT.csv (default bench-heap.csv).
 * It asserts nothing about time. Thread-safety: one thread. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nnmem/nnmem.h"
#include "bench_util.h"

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef nnmem_trace_event_t ev_t;

static ev_t *events(const nnmem_problem_t *p, size_t *n_out) {
  ev_t *ev = NULL;
  if (nnmem_trace_events(p, &ev, n_out) != NNMEM_OK) *n_out = 0;
  return ev;
}

/* Peak live bytes with sizes rounded to `align`. */
static uint64_t peak_live(const nnmem_problem_t *p, uint64_t align) {
  size_t n;
  ev_t *ev = events(p, &n);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  uint64_t live = 0, peak = 0;
  for (size_t k = 0; k < n; k++) {
    uint64_t s = (b[ev[k].index].size + align - 1) & ~(align - 1);
    if (ev[k].is_alloc) {
      live += s;
      if (live > peak) peak = live;
    } else {
      live -= s;
    }
  }
  free(ev);
  return peak;
}

typedef struct frag_result {
  int fits;
  uint64_t failed_at, compactions, bytes_moved, pinned;
  double worst_largest_ratio, top_over_live;
} frag_result_t;

/* Replays `p` through a heap of `cap` bytes; auto: compact on a miss with
 * 1% of the live blocks pinned at that moment. */
static frag_result_t replay(const nnmem_problem_t *p, uint64_t cap, int autom,
                            size_t pin_per_100, uint64_t seed) {
  frag_result_t r = {1, 0, 0, 0, 0, 1.0, 0};
  nnmem_sim_config_t sc = {0};
  nnmem_backend_t *dev = NULL;
  nnmem_heap_t *h = NULL;
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.capacity = cap;
  c.alignment = 16;
  nnmem_backend_sim_create(&sc, &dev);
  if (nnmem_heap_create(&c, dev, &h, NULL) != NNMEM_OK) abort();
  size_t n, nb = nnmem_problem_count(p);
  ev_t *ev = events(p, &n);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  nnmem_handle_t *hd = calloc(nb + 1, sizeof *hd);
  uint32_t *live_ids = malloc((nb + 1) * sizeof *live_ids);
  uint32_t *pos = malloc((nb + 1) * sizeof *pos);
  size_t n_live = 0;
  uint64_t live = 0, peak = 0;
  for (size_t k = 0; k < n && r.fits; k++) {
    uint32_t i = ev[k].index;
    if (!ev[k].is_alloc) {
      nnmem_handle_free(h, hd[i]);
      live -= b[i].size;
      live_ids[pos[i]] = live_ids[--n_live];
      pos[live_ids[pos[i]]] = pos[i];
      continue;
    }
    nnmem_status_t s = nnmem_handle_alloc(h, b[i].size, 16, &hd[i]);
    if (s == NNMEM_ERR_NOMEM && autom) {
      size_t npin = n_live * pin_per_100 / 100;
      uint32_t *pinned = malloc((npin + 1) * sizeof *pinned);
      for (size_t q = 0; q < npin; q++) {
        void *addr;
        pinned[q] = live_ids[rnd(&seed) % n_live];
        nnmem_handle_pin(h, hd[pinned[q]], &addr);
      }
      nnmem_compact_report_t rep;
      nnmem_heap_compact(h, &rep);
      r.compactions++;
      r.bytes_moved += rep.bytes_moved;
      r.pinned += rep.pinned_blocks;
      double ratio = rep.free_bytes
                         ? (double)rep.largest_after / (double)rep.free_bytes
                         : 1.0;
      if (ratio < r.worst_largest_ratio) r.worst_largest_ratio = ratio;
      for (size_t q = 0; q < npin; q++)
        nnmem_handle_unpin(h, hd[pinned[q]]);
      free(pinned);
      s = nnmem_handle_alloc(h, b[i].size, 16, &hd[i]);
      if (s == NNMEM_ERR_NOMEM) { /* pinned blocks in the way: unpinned now */
        nnmem_heap_compact(h, &rep);
        r.compactions++;
        r.bytes_moved += rep.bytes_moved;
        s = nnmem_handle_alloc(h, b[i].size, 16, &hd[i]);
      }
    }
    if (s != NNMEM_OK) {
      r.fits = 0;
      r.failed_at = i + 1ULL;
      break;
    }
    pos[i] = (uint32_t)n_live;
    live_ids[n_live++] = i;
    live += b[i].size;
    if (live > peak) peak = live;
  }
  nnmem_heap_counters_t hc;
  nnmem_heap_stats(h, NULL, &hc);
  r.top_over_live = peak ? (double)hc.top_peak / (double)peak : 0;
  nnmem_heap_destroy(h);
  nnmem_backend_destroy(dev);
  free(ev);
  free(hd);
  free(live_ids);
  free(pos);
  return r;
}

/* The trace with sizes x U[0.5, 1.5] and lifetimes moved randomly. */
static nnmem_problem_t *randomized(const nnmem_problem_t *p, uint64_t seed) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  uint64_t horizon = 1;
  for (size_t i = 0; i < n; i++)
    if (b[i].last > horizon) horizon = b[i].last;
  nnmem_problem_t *q = NULL;
  nnmem_problem_create(&q);
  for (size_t i = 0; i < n; i++) {
    uint64_t size = b[i].size / 2 + rnd(&seed) % (b[i].size + 1);
    uint64_t jit = horizon / 4 + 1;
    uint64_t first = b[i].first + rnd(&seed) % jit;
    uint64_t last = b[i].last + rnd(&seed) % jit;
    if (last <= first) last = first + 1;
    nnmem_problem_add(q, NULL, size ? size : 1, 1, first, last, NULL);
  }
  return q;
}

/* Long-running mixed shapes: 12 shapes, random lifetimes up to 64 steps. */
static nnmem_problem_t *mixed(uint64_t seed, size_t n) {
  static const uint64_t shapes[12] = {4096,    65536,    150528,   602112,
                                      1 << 20, 1572864,  3 << 20,  4816896,
                                      8 << 20, 12582912, 16 << 20, 25 << 20};
  nnmem_problem_t *q = NULL;
  nnmem_problem_create(&q);
  for (size_t i = 0; i < n; i++) {
    uint64_t s = shapes[rnd(&seed) % 12], first = i / 8;
    uint64_t last = first + 1 + rnd(&seed) % 64;
    nnmem_problem_add(q, NULL, s, 1, first, last, NULL);
  }
  return q;
}

static void frag_row(FILE *csv, const char *name, const nnmem_problem_t *p,
                     uint64_t seed) {
  uint64_t pl = peak_live(p, 16);
  uint64_t cap = (uint64_t)((double)pl * 1.05) & ~15ULL;
  frag_result_t off = replay(p, cap, 0, 0, seed);
  frag_result_t on = replay(p, cap, 1, 0, seed);
  frag_result_t pin = replay(p, cap, 1, 1, seed);
  printf("  %-18s %12llu %4s %4s %5llu %14llu %9.4f %9.4f %9.3f\n", name,
         (unsigned long long)pl, off.fits ? "yes" : "no",
         on.fits && pin.fits ? "yes" : "no", (unsigned long long)on.compactions,
         (unsigned long long)on.bytes_moved, on.worst_largest_ratio,
         pin.worst_largest_ratio, on.top_over_live);
  fprintf(csv, "frag,%s,%llu,%d,%d,%d,%llu,%llu,%.4f,%.4f,%.4f\n", name,
          (unsigned long long)pl, off.fits, on.fits, pin.fits,
          (unsigned long long)on.compactions,
          (unsigned long long)on.bytes_moved, on.worst_largest_ratio,
          pin.worst_largest_ratio, on.top_over_live);
}

static void growable_row(FILE *csv, const char *name,
                         const nnmem_problem_t *p) {
  double best = 1e30;
  const char *best_name = "";
  for (int k = NNMEM_POOL_TIERED; k <= NNMEM_POOL_SLAB; k++) {
    nnmem_replay_result_t r;
    if (nnmem_pool_replay(p, (nnmem_pool_kind_t)k, NULL, 256, &r, NULL) !=
        NNMEM_OK)
      continue;
    if (r.reserved_over_live < best) {
      best = r.reserved_over_live;
      best_name = nnmem_pool_kind_name((nnmem_pool_kind_t)k);
    }
  }
  double g[3];
  uint64_t gran[3] = {4 << 10, 64 << 10, 2 << 20};
  uint64_t total = 0;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  for (size_t i = 0; i < nnmem_problem_count(p); i++)
    total += (b[i].size + 255) & ~255ULL;
  for (int k = 0; k < 3; k++) {
    nnmem_heap_config_t c;
    nnmem_heap_config_init(&c);
    c.capacity = total;
    c.granule = gran[k];
    nnmem_heap_replay_result_t r;
    g[k] = nnmem_heap_replay(p, &c, NULL, NULL, &r, NULL) == NNMEM_OK &&
                   !r.failed_at
               ? (double)r.peak_committed_bytes / (double)r.peak_live_bytes
               : -1;
  }
  printf("  %-12s %9.4f %9.4f %9.4f %9.4f %-9s\n", name, g[0], g[1], g[2], best,
         best_name);
  fprintf(csv, "growable,%s,%.6f,%.6f,%.6f,%.6f,%s\n", name, g[0], g[1], g[2],
          best, best_name);
}

static double compact_gbps(int remap, uint64_t *remapped) {
  const uint64_t blk = 2 << 20, n = 256;
  double t[5];
  for (int r = 0; r < 5; r++) {
    nnmem_heap_config_t c;
    nnmem_heap_config_init(&c);
    c.capacity = blk * n;
    c.segment = NNMEM_SEGMENT_HOST_VM;
    c.remap = remap;
    c.alignment = 4096;
    nnmem_heap_t *h = NULL;
    if (nnmem_heap_create(&c, NULL, &h, NULL) != NNMEM_OK) abort();
    nnmem_handle_t hd[256];
    for (uint64_t i = 0; i < n; i++) {
      void *p;
      nnmem_handle_alloc(h, blk, 0, &hd[i]);
      nnmem_handle_pin(h, hd[i], &p);
      memset(p, (int)i, blk);
      nnmem_handle_unpin(h, hd[i]);
    }
    for (uint64_t i = 0; i < n; i += 2)
      nnmem_handle_free(h, hd[i]);
    nnmem_compact_report_t rep;
    nnmem_heap_compact(h, &rep);
    t[r] = (double)rep.bytes_moved / rep.seconds / 1e9;
    *remapped = rep.bytes_remapped;
    nnmem_heap_destroy(h);
  }
  qsort(t, 5, sizeof *t, cmp_dbl);
  return t[2];
}

#define RING 1024
#define STEPS 10000000

static void pin_ring(FILE *csv, uint64_t seed) {
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.capacity = 8 << 20;
  c.segment = NNMEM_SEGMENT_HOST_VM;
  nnmem_heap_t *h = NULL;
  if (nnmem_heap_create(&c, NULL, &h, NULL) != NNMEM_OK) abort();
  nnmem_handle_t hd[RING];
  char *raw[RING];
  for (int i = 0; i < RING; i++) {
    nnmem_handle_alloc(h, 16 + (uint64_t)i % 4081, 0, &hd[i]);
    nnmem_handle_pin(h, hd[i], (void **)&raw[i]);
    nnmem_handle_unpin(h, hd[i]);
  }
  uint32_t *slot = malloc(STEPS * sizeof *slot);
  for (int s = 0; s < STEPS; s++)
    slot[s] = (uint32_t)(rnd(&seed) % RING);
  double th[5], tr[5], ch[5], cr[5];
  for (int r = 0; r < 5; r++) {
    double t0 = now(), c0 = cpu_now();
    for (int s = 0; s < STEPS; s++) {
      char *p;
      nnmem_handle_pin(h, hd[slot[s]], (void **)&p);
      *(volatile char *)p = 1;
      nnmem_handle_unpin(h, hd[slot[s]]);
    }
    th[r] = now() - t0;
    ch[r] = cpu_now() - c0;
    t0 = now();
    c0 = cpu_now();
    for (int s = 0; s < STEPS; s++)
      *(volatile char *)raw[slot[s]] = 1;
    tr[r] = now() - t0;
    cr[r] = cpu_now() - c0;
  }
  qsort(th, 5, sizeof *th, cmp_dbl);
  qsort(tr, 5, sizeof *tr, cmp_dbl);
  qsort(ch, 5, sizeof *ch, cmp_dbl);
  qsort(cr, 5, sizeof *cr, cmp_dbl);
  double per = (th[2] - tr[2]) / STEPS / 2 * 1e9;
  double per_cpu = (ch[2] - cr[2]) / STEPS / 2 * 1e9;
  printf(
      "  handle step %.2f ns, raw step %.2f ns: pin/unpin %.2f ns per "
      "call (thread CPU: %.2f, %.2f: %.2f ns per call)\n",
      th[2] / STEPS * 1e9, tr[2] / STEPS * 1e9, per, ch[2] / STEPS * 1e9,
      cr[2] / STEPS * 1e9, per_cpu);
  fprintf(csv, "pin_unpin,ring,%.3f,%.3f,%.3f,%.3f\n", th[2] / STEPS * 1e9,
          tr[2] / STEPS * 1e9, per, per_cpu);
  free(slot);
  nnmem_heap_destroy(h);
}

int main(int argc, char **argv) {
  const char *csv_path = "bench-heap.csv", *dir = NNMEM_DEFAULT_DATA_DIR;
  uint64_t seed = 42;
  int only = 0; /* 0: every part; else just that one */
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--csv"))
      csv_path = argv[i + 1];
    else if (!strcmp(argv[i], "--data"))
      dir = argv[i + 1];
    else if (!strcmp(argv[i], "--seed"))
      seed = strtoull(argv[i + 1], 0, 10);
    else if (!strcmp(argv[i], "--only"))
      only = atoi(argv[i + 1]);
  }
  FILE *csv = fopen(csv_path, "w");
  if (!csv) return 1;
  static const char *traces[] = {"resnet50", "tiny_bert", "bert_base",
                                 "pangu_2.6B", "iopddl_S_1"};
  printf(
      "seed %llu\n(1) fragmentation: capacity = 1.05 x peak live; fits "
      "without (off) / with compaction (auto, with 0%% and with 1%% of the "
      "live blocks pinned at each compaction); lg/fr = min over "
      "compactions of largest allocatable block / free bytes right after "
      "it; top/live = peak address used / peak live (auto, no pins)\n",
      (unsigned long long)seed);
  printf("  %-18s %12s %4s %4s %5s %14s %9s %9s %9s\n", "trace", "peak live",
         "off", "auto", "comp.", "bytes moved", "lg/fr", "lg/fr 1%",
         "top/live");
  nnmem_problem_t *probs[5] = {0};
  nnmem_csv_t *csvs[5] = {0};
  for (int t = 0; t < 5; t++) {
    char path[1024], name[64];
    snprintf(path, sizeof path, "%s/dsa/traces/%s.csv", dir, traces[t]);
    nnmem_diag_t d;
    if (nnmem_csv_read_file(path, &csvs[t], &d) != NNMEM_OK) {
      printf("  %s: %s (skipped)\n", traces[t], d.message);
      continue;
    }
    const nnmem_problem_t *p = nnmem_csv_problem(csvs[t]);
    probs[t] = randomized(p, seed + (uint64_t)t);
    if (only && only != 1) continue;
    frag_row(csv, traces[t], p, seed);
    snprintf(name, sizeof name, "%s-random", traces[t]);
    frag_row(csv, name, probs[t], seed);
  }
  nnmem_problem_t *mx = mixed(seed, 400000);
  if (!only || only == 1) frag_row(csv, "mixed-400k", mx, seed);
  printf(
      "\n(2) growable segment (no compaction): peak committed / peak "
      "live vs the best chunked pool's peak reserved / peak live\n");
  printf("  %-12s %9s %9s %9s %9s %-9s\n", "trace", "4KiB", "64KiB", "2MiB",
         "best pool", "(kind)");
  for (int t = 0; t < 5 && (!only || only == 2); t++)
    if (csvs[t]) growable_row(csv, traces[t], nnmem_csv_problem(csvs[t]));
  if (!only || only == 2) growable_row(csv, "mixed-400k", mx);
  printf(
      "\n(3) compaction of 256 MiB (128 x 2 MiB blocks moved) in a host "
      "segment, median of 5\n");
  uint64_t rc = 0, rr = 0;
  double copy = 0, remap = 0;
  if (!only || only == 3) {
    copy = compact_gbps(0, &rc);
    remap = compact_gbps(1, &rr);
    size_t len = 128u << 20;
    char *a = malloc(len * 2);
    memset(a, 1, len * 2);
    double t[5];
    for (int r = 0; r < 5; r++) {
      double t0 = now();
      memmove(a, a + len, len);
      t[r] = (double)len / (now() - t0) / 1e9;
    }
    qsort(t, 5, sizeof *t, cmp_dbl);
    printf("  memmove of 128 MiB in faulted-in memory (baseline) %.2f GB/s\n",
           t[2]);
    fprintf(csv, "compact,memmove-baseline,%.3f\n", t[2]);
    free(a);
    printf("  copy  %8.2f GB/s (remapped %llu bytes)\n", copy,
           (unsigned long long)rc);
    printf("  remap %8.2f GB/s (remapped %llu bytes)  remap/copy %.1fx\n",
           remap, (unsigned long long)rr, remap / copy);
    fprintf(csv, "compact,copy,%.3f\ncompact,remap,%.3f\n", copy, remap);
  }
  printf(
      "\n(4) ring: 1,024 handles, pin + 1-byte write + unpin, median of "
      "5 x 10^7 steps\n");
  if (!only || only == 4) pin_ring(csv, seed);
  for (int t = 0; t < 5; t++) {
    nnmem_problem_destroy(probs[t]);
    nnmem_csv_destroy(csvs[t]);
  }
  nnmem_problem_destroy(mx);
  fclose(csv);
  return 0;
}

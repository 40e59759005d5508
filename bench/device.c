/* device.c - nnmem pools on GPU memory against CUDA's own allocators, in
 * one run: every pool kind over the cuda backend (nnmem_backend_cuda_create)
 * vs cudaMalloc/cudaFree and vs cudaMallocAsync/cudaFreeAsync on the
 * device's default memory pool (release threshold: keep everything, CUDA's
 * stream-ordered caching allocator).
 *
 * Workloads: (a) the shared tensor traces (../shared/data/dsa/traces),
 * buffer i allocated at its first step and freed at its last, frees first
 * at equal steps; (b) a ring: 64 slots, each step frees a random slot and
 * allocates 256 B .. 4 MiB into it (fixed seed 7), 200,000 steps.
 * Reported per allocator: ns per operation (alloc or free, wall clock of
 * the whole pass / operations; the async allocator's pass ends with a
 * stream synchronize), and peak reserved / peak live bytes (nnmem: the
 * pool's reserved_bytes_peak; cudaMalloc: device memory in use, from
 * cudaMemGetInfo, sampled at each new live maximum; cudaMallocAsync: the
 * pool's reserved high-water mark).
 *
 * The growable CUDA segment (a handle heap on NNMEM_SEGMENT_CUDA_VM: GPU
 * virtual addresses reserved once, 2 MiB granules backed with cuMemCreate +
 * cuMemMap as blocks touch them) is one more row on every workload: its
 * peak reserved is the peak of committed granules. Then compaction
 * throughput on the GPU, remapping vs copying in the same run: a heap of
 * --vm-bytes (default 4 GiB) filled to about 75% with blocks of 1..8
 * granules (granule-aligned), every other block freed, compacted; GB/s =
 * bytes moved / the compaction's wall time (which includes committing the
 * target granules and releasing the vacated ones, and ends with a device
 * synchronize), median of 3, at the device's granule and at 32 MiB; the
 * first and last 64 bytes of every surviving block are checked after each
 * compaction.
 *
 * Needs the CUDA runtime to build (CMake builds it when the toolkit is
 * found) and a GPU to run: without one it says so and exits 0. --vm-only
 * runs only what goes through nnmem's cuda backend (pools, the CUDA
 * segment, compaction), so it also runs over the stand-in driver
 * (NNMEM_CUDA_LIBRARY=.../libfakecuda.so) to exercise this program.
 * Usage: bench/device [--data DIR] [--ring-steps N] [--csv FILE]
 *                     [--vm-bytes N] [--compaction-csv FILE] [--vm-only] */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nnmem/nnmem.h"
#include "bench_util.h"

#define RING_SLOTS 64

static uint64_t rnd(uint64_t *s) {
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

/* One operation of a workload: allocate `size` into slot `slot`, or free
 * the slot (size 0). */
typedef struct op {
  uint32_t slot;
  uint64_t size;
} op_t;

typedef struct workload {
  const char *name;
  op_t *ops;
  size_t n_ops, n_slots;
} workload_t;

static int trace_workload(const char *path, const char *name, workload_t *w) {
  nnmem_csv_t *c = NULL;
  nnmem_diag_t d;
  if (nnmem_csv_read_file(path, &c, &d) != NNMEM_OK) {
    printf("  %s: %s\n", name, d.message);
    return -1;
  }
  const nnmem_problem_t *p = nnmem_csv_problem(c);
  size_t n = nnmem_problem_count(p), k = 0;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  nnmem_trace_event_t *ev = NULL;
  if (nnmem_trace_events(p, &ev, &k) != NNMEM_OK ||
      !(w->ops = malloc((k + 1) * sizeof *w->ops))) {
    free(ev);
    nnmem_csv_destroy(c);
    return -1;
  }
  for (size_t e = 0; e < k; e++)
    w->ops[e] = (op_t){ev[e].index, ev[e].is_alloc ? b[ev[e].index].size : 0};
  w->n_ops = k, w->n_slots = n, w->name = name;
  free(ev);
  nnmem_csv_destroy(c);
  return 0;
}

static int ring_workload(size_t steps, workload_t *w) {
  uint64_t s = 7;
  w->ops = malloc((2 * steps + 2 * RING_SLOTS) * sizeof *w->ops);
  if (!w->ops) return -1;
  size_t k = 0;
  int used[RING_SLOTS] = {0};
  for (size_t i = 0; i < steps; i++) {
    uint32_t slot = (uint32_t)(rnd(&s) % RING_SLOTS);
    if (used[slot]) w->ops[k++] = (op_t){slot, 0};
    w->ops[k++] = (op_t){slot, 256 + rnd(&s) % (4u << 20)};
    used[slot] = 1;
  }
  for (uint32_t slot = 0; slot < RING_SLOTS; slot++)
    if (used[slot]) w->ops[k++] = (op_t){slot, 0};
  w->n_ops = k, w->n_slots = RING_SLOTS, w->name = "ring";
  return 0;
}

typedef struct result {
  double ns_per_op;
  uint64_t peak_live, peak_reserved;
  int ok;
  char why[160];
} result_t;

static uint64_t device_used(void) {
  size_t f = 0, t = 0;
  return cudaMemGetInfo(&f, &t) == cudaSuccess ? (uint64_t)(t - f) : 0;
}

/* cudaMalloc / cudaFree; reserved = device memory in use above the start,
 * sampled (untimed pass) at each new live maximum. */
static void run_cuda_malloc(const workload_t *w, result_t *r) {
  void **slot = calloc(w->n_slots, sizeof *slot);
  uint64_t *sz = calloc(w->n_slots, sizeof *sz);
  for (int pass = 0; pass < 2 && slot && sz; pass++) {
    uint64_t live = 0, peak = 0, base = device_used(), resv = 0;
    double t0 = now();
    for (size_t i = 0; i < w->n_ops; i++) {
      const op_t *o = &w->ops[i];
      if (o->size) {
        cudaError_t e = cudaMalloc(&slot[o->slot], o->size);
        if (e != cudaSuccess) {
          snprintf(r->why, sizeof r->why, "cudaMalloc: %s",
                   cudaGetErrorString(e));
          goto out;
        }
        sz[o->slot] = o->size, live += o->size;
        if (pass == 1 && live > peak) {
          peak = live;
          uint64_t u = device_used() - base;
          if (u > resv) resv = u;
        }
      } else {
        cudaFree(slot[o->slot]);
        live -= sz[o->slot];
      }
    }
    if (pass == 0)
      r->ns_per_op = (now() - t0) * 1e9 / (double)w->n_ops;
    else
      r->peak_live = peak, r->peak_reserved = resv, r->ok = 1;
  }
out:
  free(slot);
  free(sz);
}

/* cudaMallocAsync / cudaFreeAsync on stream 0 from the default pool,
 * which keeps what is freed (release threshold = all). */
static void run_cuda_async(const workload_t *w, result_t *r) {
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, 0) != cudaSuccess) {
    snprintf(r->why, sizeof r->why, "no default memory pool");
    return;
  }
  uint64_t keep = UINT64_MAX, zero = 0;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero);
  void **slot = calloc(w->n_slots, sizeof *slot);
  uint64_t *sz = calloc(w->n_slots, sizeof *sz), live = 0, peak = 0;
  if (!slot || !sz) goto out;
  double t0 = now();
  for (size_t i = 0; i < w->n_ops; i++) {
    const op_t *o = &w->ops[i];
    if (o->size) {
      cudaError_t e = cudaMallocAsync(&slot[o->slot], o->size, 0);
      if (e != cudaSuccess) {
        snprintf(r->why, sizeof r->why, "cudaMallocAsync: %s",
                 cudaGetErrorString(e));
        goto out;
      }
      sz[o->slot] = o->size, live += o->size;
      if (live > peak) peak = live;
    } else {
      cudaFreeAsync(slot[o->slot], 0);
      live -= sz[o->slot];
    }
  }
  cudaStreamSynchronize(0);
  r->ns_per_op = (now() - t0) * 1e9 / (double)w->n_ops;
  uint64_t high = 0;
  cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &high);
  r->peak_live = peak, r->peak_reserved = high, r->ok = 1;
out:
  cudaMemPoolTrimTo(pool, 0);
  free(slot);
  free(sz);
}

/* An nnmem pool of `kind` over the cuda backend. */
static void run_pool(const workload_t *w, nnmem_backend_t *be,
                     nnmem_pool_kind_t kind, result_t *r) {
  nnmem_pool_t *pool = NULL;
  nnmem_diag_t d = {0};
  if (nnmem_pool_create_diag(kind, NULL, be, &pool, &d) != NNMEM_OK) {
    snprintf(r->why, sizeof r->why, "create: %s", d.message);
    return;
  }
  void **slot = calloc(w->n_slots, sizeof *slot);
  uint64_t *sz = calloc(w->n_slots, sizeof *sz), live = 0, peak = 0;
  if (!slot || !sz) goto out;
  double t0 = now();
  for (size_t i = 0; i < w->n_ops; i++) {
    const op_t *o = &w->ops[i];
    if (o->size) {
      nnmem_status_t st = nnmem_pool_alloc(pool, o->size, 256, &slot[o->slot]);
      if (st != NNMEM_OK) {
        snprintf(r->why, sizeof r->why, "alloc of %llu B: %s (%s)",
                 (unsigned long long)o->size, nnmem_status_str(st),
                 nnmem_backend_cuda_last_error(be));
        goto out;
      }
      sz[o->slot] = o->size, live += o->size;
      if (live > peak) peak = live;
    } else {
      nnmem_pool_free(pool, slot[o->slot]);
      live -= sz[o->slot];
    }
  }
  r->ns_per_op = (now() - t0) * 1e9 / (double)w->n_ops;
  nnmem_stats_t st;
  nnmem_stats_init(&st);
  nnmem_pool_stats(pool, &st);
  r->peak_live = peak, r->peak_reserved = st.reserved_bytes_peak, r->ok = 1;
out:
  free(slot);
  free(sz);
  nnmem_pool_destroy(pool);
}

/* A handle heap on a CUDA_VM segment of `capacity` bytes (virtual; device
 * memory is committed granule by granule). */
static void run_heap(const workload_t *w, nnmem_backend_t *be,
                     uint64_t capacity, result_t *r) {
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.name = "cuda_vm";
  c.capacity = capacity;
  c.segment = NNMEM_SEGMENT_CUDA_VM;
  nnmem_heap_t *h = NULL;
  nnmem_diag_t d = {{0}};
  if (nnmem_heap_create(&c, be, &h, &d) != NNMEM_OK) {
    snprintf(r->why, sizeof r->why, "create: %s", d.message);
    return;
  }
  nnmem_handle_t *slot = calloc(w->n_slots, sizeof *slot);
  uint64_t *sz = calloc(w->n_slots, sizeof *sz), live = 0, peak = 0;
  if (!slot || !sz) goto out;
  double t0 = now();
  for (size_t i = 0; i < w->n_ops; i++) {
    const op_t *o = &w->ops[i];
    if (o->size) {
      nnmem_status_t st = nnmem_handle_alloc(h, o->size, 256, &slot[o->slot]);
      if (st != NNMEM_OK) {
        snprintf(r->why, sizeof r->why, "alloc of %llu B: %s (%s)",
                 (unsigned long long)o->size, nnmem_status_str(st),
                 nnmem_backend_cuda_last_error(be));
        goto out;
      }
      sz[o->slot] = o->size, live += o->size;
      if (live > peak) peak = live;
    } else {
      nnmem_handle_free(h, slot[o->slot]);
      live -= sz[o->slot];
    }
  }
  r->ns_per_op = (now() - t0) * 1e9 / (double)w->n_ops;
  nnmem_stats_t st;
  nnmem_stats_init(&st);
  nnmem_heap_stats(h, &st, NULL);
  r->peak_live = peak, r->peak_reserved = st.reserved_bytes_peak, r->ok = 1;
out:
  free(slot);
  free(sz);
  nnmem_heap_destroy(h);
}

static void report(FILE *csv, const char *wl, const char *who,
                   const result_t *r) {
  if (!r->ok) {
    printf("  %-12s %-16s failed: %s\n", wl, who, r->why);
    return;
  }
  double ratio = r->peak_live ? (double)r->peak_reserved / r->peak_live : 0;
  printf("  %-12s %-16s %10.1f %10.3fx %14llu\n", wl, who, r->ns_per_op, ratio,
         (unsigned long long)r->peak_reserved);
  fprintf(csv, "%s,%s,%.2f,%.4f,%llu,%llu\n", wl, who, r->ns_per_op, ratio,
          (unsigned long long)r->peak_reserved,
          (unsigned long long)r->peak_live);
}

static int vm_only; /* --vm-only: no CUDA runtime rows */

static void run_all(const workload_t *w, nnmem_backend_t *be, FILE *csv) {
  result_t r;
  uint64_t free_b = 0, total = 0;
  memset(&r, 0, sizeof r);
  if (nnmem_backend_mem_info(be, &free_b, &total) == NNMEM_OK)
    run_heap(w, be, total, &r); /* addresses for the whole device */
  else
    snprintf(r.why, sizeof r.why, "no free/total from the device");
  report(csv, w->name, "nnmem heap cuda_vm", &r);
  for (int k = 0; k < NNMEM_POOL_KIND_COUNT_; k++) {
    if (k == NNMEM_POOL_FIXED || k == NNMEM_POOL_SHAPE) continue; /* sized */
    memset(&r, 0, sizeof r);
    run_pool(w, be, (nnmem_pool_kind_t)k, &r);
    char who[40];
    snprintf(who, sizeof who, "nnmem %s", nnmem_pool_kind_name(k));
    report(csv, w->name, who, &r);
  }
  if (vm_only) return;
  memset(&r, 0, sizeof r);
  run_cuda_malloc(w, &r);
  report(csv, w->name, "cudaMalloc", &r);
  memset(&r, 0, sizeof r);
  run_cuda_async(w, &r);
  report(csv, w->name, "cudaMallocAsync", &r);
}

/* ---- compaction throughput: remap vs copy --------------------------- */

static uint64_t granule_of(nnmem_backend_t *be, uint64_t want) {
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.capacity = 1, c.granule = want, c.segment = NNMEM_SEGMENT_CUDA_VM;
  nnmem_heap_t *h = NULL;
  nnmem_handle_t t;
  nnmem_stats_t st;
  uint64_t g = 0;
  nnmem_stats_init(&st);
  if (nnmem_heap_create(&c, be, &h, NULL) == NNMEM_OK &&
      nnmem_handle_alloc(h, 1, 0, &t) == NNMEM_OK &&
      nnmem_heap_stats(h, &st, NULL) == NNMEM_OK)
    g = st.reserved_bytes; /* one granule committed */
  nnmem_heap_destroy(h);
  return g;
}

/* Writes (check = 0) or checks the 64 bytes at both ends of block k. */
static int ends(nnmem_heap_t *h, nnmem_backend_t *be, nnmem_handle_t t,
                uint64_t size, uint32_t k, int check) {
  unsigned char want[64], got[64];
  void *p = NULL;
  if (nnmem_handle_pin(h, t, &p) != NNMEM_OK) return -1;
  int bad = 0;
  for (int e = 0; e < 2 && !bad; e++) {
    unsigned char *at = (unsigned char *)p + (e ? size - 64 : 0);
    for (int i = 0; i < 64; i++)
      want[i] = (unsigned char)(k * 7 + (uint32_t)i * 13 + (uint32_t)e);
    if (!check)
      bad = nnmem_backend_copy(be, at, want, 64, NNMEM_COPY_HOST_TO_DEVICE);
    else
      bad = nnmem_backend_copy(be, got, at, 64, NNMEM_COPY_DEVICE_TO_HOST) ||
            memcmp(want, got, 64) != 0;
  }
  nnmem_handle_unpin(h, t);
  return bad ? -1 : 0;
}

/* One compaction of the standard layout; 0 and *r filled, or -1 (why). */
static int compact_once(nnmem_backend_t *be, uint64_t bytes, uint64_t g,
                        int remap, nnmem_compact_report_t *r, char *why,
                        size_t cap) {
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.capacity = bytes, c.granule = g, c.segment = NNMEM_SEGMENT_CUDA_VM;
  c.remap = remap;
  nnmem_heap_t *h = NULL;
  nnmem_diag_t d = {{0}};
  if (nnmem_heap_create(&c, be, &h, &d) != NNMEM_OK) {
    snprintf(why, cap, "create: %s", d.message);
    return -1;
  }
  size_t n = (size_t)(bytes / g), k = 0;
  nnmem_handle_t *t = calloc(n ? n : 1, sizeof *t);
  uint64_t *sz = calloc(n ? n : 1, sizeof *sz), used = 0;
  int rc = t && sz ? 0 : -1;
  uint64_t s = 42;
  while (rc == 0 && k < n) {
    sz[k] = (1 + rnd(&s) % 8) * g;
    if (used + sz[k] > bytes / 4 * 3) sz[k] = g; /* the last ones small */
    if (used + sz[k] > bytes / 4 * 3) break;
    if (nnmem_handle_alloc(h, sz[k], g, &t[k]) != NNMEM_OK ||
        ends(h, be, t[k], sz[k], (uint32_t)k, 0) != 0) {
      snprintf(why, cap, "filling: %s", nnmem_backend_cuda_last_error(be));
      rc = -1;
    }
    used += sz[k++];
  }
  for (size_t i = 0; rc == 0 && i < k; i += 2)
    nnmem_handle_free(h, t[i]);
  if (rc == 0 && nnmem_heap_compact(h, r) != NNMEM_OK) {
    snprintf(why, cap, "compact: %s", nnmem_backend_cuda_last_error(be));
    rc = -1;
  }
  for (size_t i = 1; rc == 0 && i < k; i += 2)
    if (ends(h, be, t[i], sz[i], (uint32_t)i, 1) != 0) {
      snprintf(why, cap, "block %zu lost its bytes", i);
      rc = -1;
    }
  free(t);
  free(sz);
  nnmem_heap_destroy(h);
  return rc;
}

static void vm_compaction(nnmem_backend_t *be, uint64_t bytes,
                          const char *csv_path) {
  uint64_t dev = granule_of(be, 1);
  if (!dev) {
    printf("  compaction: no CUDA virtual memory (%s)\n",
           nnmem_backend_cuda_last_error(be));
    return;
  }
  FILE *csv = fopen(csv_path, "w");
  if (!csv) {
    perror(csv_path);
    return;
  }
  fprintf(csv, "granule,how,gb_per_s,bytes_moved,bytes_remapped\n");
  printf("\ncompaction, %llu MiB heap on a CUDA_VM segment (median of 3)\n",
         (unsigned long long)(bytes >> 20));
  printf("  %-10s %-6s %10s %12s %12s\n", "granule", "how", "GB/s", "moved MiB",
         "remapped MiB");
  uint64_t grans[2] = {dev, dev < (32u << 20) ? 32u << 20 : 0};
  for (int gi = 0; gi < 2 && grans[gi]; gi++)
    for (int remap = 1; remap >= 0; remap--) {
      double gbs[3];
      nnmem_compact_report_t r = {0};
      char why[300] = "";
      int reps = 0;
      for (; reps < 3; reps++) {
        if (compact_once(be, bytes, grans[gi], remap, &r, why, sizeof why))
          break;
        gbs[reps] = r.seconds > 0 ? (double)r.bytes_moved / r.seconds / 1e9 : 0;
      }
      const char *how = remap ? "remap" : "copy";
      if (reps < 3) {
        printf("  %-10llu %-6s failed: %s\n", (unsigned long long)grans[gi],
               how, why);
        continue;
      }
      double m = median(gbs, 3);
      if (r.bytes_moved == 0) {
        printf(
            "  %-10llu %-6s nothing moved: --vm-bytes too small for this "
            "granule\n",
            (unsigned long long)grans[gi], how);
        continue;
      }
      printf("  %-10llu %-6s %10.2f %12.1f %12.1f\n",
             (unsigned long long)grans[gi], how, m,
             (double)r.bytes_moved / 1048576.0,
             (double)r.bytes_remapped / 1048576.0);
      fprintf(csv, "%llu,%s,%.3f,%llu,%llu\n", (unsigned long long)grans[gi],
              how, m, (unsigned long long)r.bytes_moved,
              (unsigned long long)r.bytes_remapped);
    }
  fclose(csv);
  printf("(csv: %s)\n", csv_path);
}

int main(int argc, char **argv) {
  const char *data = NNMEM_DEFAULT_DATA_DIR, *csv_path = "bench-device.csv";
  const char *vm_csv = "bench-device-compaction.csv";
  size_t ring_steps = 200000;
  uint64_t vm_bytes = 4ULL << 30;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--data") && i + 1 < argc)
      data = argv[++i];
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
      csv_path = argv[++i];
    else if (!strcmp(argv[i], "--ring-steps") && i + 1 < argc)
      ring_steps = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--vm-bytes") && i + 1 < argc)
      vm_bytes = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--compaction-csv") && i + 1 < argc)
      vm_csv = argv[++i];
    else if (!strcmp(argv[i], "--vm-only"))
      vm_only = 1;
    else {
      fprintf(stderr,
              "usage: %s [--data DIR] [--ring-steps N] [--csv FILE] "
              "[--vm-bytes N] [--compaction-csv FILE] [--vm-only]\n",
              argv[0]);
      return 1;
    }
  }
  int count = 0;
  cudaError_t e = vm_only ? cudaSuccess : cudaGetDeviceCount(&count);
  if (!vm_only && (e != cudaSuccess || count == 0)) {
    printf("bench/device: no CUDA device (%s): skipped\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 0;
  }
  nnmem_backend_t *be = NULL;
  nnmem_diag_t d = {0};
  nnmem_status_t bst = nnmem_backend_cuda_create(NULL, &be, &d);
  if (bst != NNMEM_OK) {
    printf("bench/device: %s%s\n", d.message,
           bst == NNMEM_ERR_UNSUPPORTED ? ": skipped" : "");
    return bst == NNMEM_ERR_UNSUPPORTED ? 0 : 1;
  }
  FILE *csv = fopen(csv_path, "w");
  if (!csv) {
    perror(csv_path);
    nnmem_backend_destroy(be);
    return 1;
  }
  fprintf(csv,
          "workload,allocator,ns_per_op,reserved_over_live,"
          "peak_reserved,peak_live\n");
  printf("bench/device on %s\n", nnmem_backend_cuda_device_name(be));
  printf("  %-12s %-16s %10s %11s %14s\n", "workload", "allocator", "ns/op",
         "resv/live", "peak reserved");
  static const char *names[] = {"resnet50", "tiny_bert", "bert_base",
                                "pangu_2.6B", "iopddl_S_1"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/dsa/traces/%s.csv", data, names[i]);
    workload_t w = {0};
    if (access(path, R_OK) != 0) {
      printf("  %s: absent (%s); skipped\n", names[i], path);
      continue;
    }
    if (trace_workload(path, names[i], &w) == 0) run_all(&w, be, csv);
    free(w.ops);
  }
  workload_t ring = {0};
  if (ring_workload(ring_steps, &ring) == 0) run_all(&ring, be, csv);
  free(ring.ops);

  fclose(csv);
  printf("(csv: %s)\n", csv_path);
  vm_compaction(be, vm_bytes, vm_csv);
  nnmem_backend_destroy(be);
  return 0;
}

/* bench/multi.c - several plans in one arena, measured:
 *
 *   multi [MODELS_DIR] [--csv OUT.csv] [--requests N] [--seed S]
 *         [--pool-factor F]
 *
 * Part 1, shared arena: every *.onnx under MODELS_DIR (default: the shared
 * data folder's models/) is planned (auto strategy, verified) and all are
 * bound to one arena on an unbacked simulated device with
 * nnmem_arena_create_grouped, first taking turns (sequential), then all
 * concurrent. Printed per model: the arena height and weights; then the
 * shared arena, the sum of heights (separate arenas), the saving, and the
 * check arena == max(heights) (sequential) and == sum (concurrent, up to
 * alignment).
 *
 * Part 2, dynamic shapes: tiny BERT's max_seq_len bucketed as 16..128
 * (16 32 64 128); a replayed sequence of N requests (default 1000, fixed
 * seed, printed) with sequence lengths uniform in 1..160, so about a fifth
 * fall outside every bucket. Three ways to serve them, each on its own
 * simulated device, counting the device allocation calls:
 *   a. per shape: each request allocates an arena of its exact plan height
 *      and frees it afterwards (what a runtime without planning does);
 *   b. grow on demand: one arena, re-allocated whenever a request needs
 *      more than it holds (the usual "realloc to the largest seen");
 *   c. buckets + dynamic-shape pool: one arena sized for the largest bucket
 *      serves every length <= 128 with its bucket's plan; longer ones are
 *      served buffer by buffer, in lifetime order, by a shape pool whose
 *      one block (taken once) is F (default 1.25) x the lower bound of the
 *      longest length (160) + 256 B. A pool failure (the block too
 *      fragmented) would count as a device allocation.
 * Re-allocations avoided = allocations of (a) or (b) - those of (c).
 * Rows go to OUT.csv (default bench-multi.csv). It asserts nothing about
 * time; it exits 1 only when a plan fails the verifier or the arena is not
 * what the layout promises.
 * Thread-safety: single-threaded program. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/nnmem.h"

#ifndef NNMEM_DEFAULT_DATA_DIR
#define NNMEM_DEFAULT_DATA_DIR "../shared/data"
#endif

#define MAX_MODELS 64

typedef struct planned {
  nnmem_graph_t *g;
  nnmem_liveness_t *l;
  nnmem_plan_t *plan;
  nnmem_profile_t prof;
} planned_t;

static void planned_free(planned_t *p) {
  nnmem_plan_destroy(p->plan);
  nnmem_liveness_destroy(p->l);
  nnmem_graph_destroy(p->g);
  memset(p, 0, sizeof *p);
}

/* Imports (with one optional dim binding), analyses, plans, verifies. */
static int plan_model(const char *path, const char *dim, int64_t value,
                      planned_t *out) {
  nnmem_onnx_config_t oc;
  nnmem_onnx_config_init(&oc);
  nnmem_onnx_dim_t d = {dim, value};
  if (dim) {
    oc.dims = &d;
    oc.n_dims = 1;
  }
  nnmem_diag_t diag = {{0}};
  memset(out, 0, sizeof *out);
  nnmem_status_t st = nnmem_onnx_import_file(path, &oc, &out->g, NULL, &diag);
  if (st == NNMEM_OK) st = nnmem_liveness_analyze(out->g, NULL, &out->l, &diag);
  const nnmem_problem_t *pr =
      st == NNMEM_OK ? nnmem_liveness_problem(out->l) : NULL;
  if (st == NNMEM_OK) st = nnmem_plan_create(pr, NULL, &out->plan, &diag);
  if (st == NNMEM_OK)
    st =
        nnmem_plan_verify(pr, nnmem_plan_offsets(out->plan), 0, 0, NULL, &diag);
  if (st == NNMEM_OK)
    st = nnmem_profile_compute(out->g, out->l, out->plan, 0, &out->prof);
  if (st != NNMEM_OK) {
    fprintf(stderr, "multi: %s: %s\n", path,
            diag.message[0] ? diag.message : nnmem_status_str(st));
    planned_free(out);
    return 1;
  }
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t list_models(const char *dir, char **names) {
  DIR *d = opendir(dir);
  size_t n = 0;
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < MAX_MODELS) {
    size_t len = strlen(e->d_name);
    if (len > 5 && strcmp(e->d_name + len - 5, ".onnx") == 0)
      names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, by_name);
  return n;
}

static nnmem_backend_t *sim_device(void) {
  nnmem_sim_config_t c = {0};
  c.alignment = 256;
  nnmem_backend_t *b = NULL;
  return nnmem_backend_sim_create(&c, &b) == NNMEM_OK ? b : NULL;
}

static uint64_t device_allocs(nnmem_backend_t *b) {
  nnmem_sim_counters_t c;
  if (nnmem_backend_sim_counters(b, &c) != NNMEM_OK) return 0;
  return c.requests - c.failed;
}

/* One arena for `n` plans: sequential (groups NULL) or all concurrent. */
static int bind(planned_t *m, size_t n, int concurrent, uint64_t *size,
                uint64_t *sum) {
  const nnmem_problem_t *pr[MAX_MODELS];
  const nnmem_plan_t *pl[MAX_MODELS];
  uint32_t groups[MAX_MODELS];
  for (size_t i = 0; i < n; i++) {
    pr[i] = nnmem_liveness_problem(m[i].l);
    pl[i] = m[i].plan;
    groups[i] = concurrent ? 1 : 0;
  }
  nnmem_arena_layout_config_t c;
  nnmem_arena_layout_config_init(&c);
  c.groups = groups;
  nnmem_backend_t *dev = sim_device();
  nnmem_arena_t *a = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st =
      dev ? nnmem_arena_create_grouped(pr, pl, n, &c, dev, &a, &d)
          : NNMEM_ERR_NOMEM;
  if (st != NNMEM_OK) {
    fprintf(stderr, "multi: arena: %s\n", d.message);
    nnmem_backend_destroy(dev);
    return 1;
  }
  nnmem_arena_info_t info;
  nnmem_arena_info(a, &info);
  *size = info.size;
  *sum = info.sum_heights;
  nnmem_arena_destroy(a);
  nnmem_backend_destroy(dev);
  return 0;
}

static int part_shared(const char *dir, FILE *csv) {
  char *names[MAX_MODELS];
  size_t n = list_models(dir, names), ok = 0;
  static planned_t m[MAX_MODELS];
  uint64_t max_h = 0, weights = 0;
  int bad = 0;
  if (n < 2) {
    printf("shared arena: fewer than two models under %s, skipped\n", dir);
    for (size_t i = 0; i < n; i++)
      free(names[i]);
    return 0;
  }
  printf("== shared arena: %zu models of %s, one arena\n", n, dir);
  printf("%-48s %14s %14s\n", "model", "height B", "weights B");
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (plan_model(path, NULL, 0, &m[ok])) {
      bad = 1;
      continue;
    }
    uint64_t h = nnmem_plan_height(m[ok].plan);
    printf("%-48s %14llu %14llu\n", names[i], (unsigned long long)h,
           (unsigned long long)m[ok].prof.weight_memory);
    fprintf(csv, "shared,%s,height,%llu\n", names[i], (unsigned long long)h);
    max_h = nnmem__max_u64(max_h, h);
    weights += m[ok].prof.weight_memory;
    ok++;
  }
  uint64_t seq = 0, sum = 0, conc = 0, sum2 = 0;
  if (ok >= 2 && !bind(m, ok, 0, &seq, &sum) && !bind(m, ok, 1, &conc, &sum2)) {
    printf("sequential arena   %14llu B  (max of heights %llu: %s)\n",
           (unsigned long long)seq, (unsigned long long)max_h,
           seq == max_h ? "equal" : "DIFFERENT");
    printf("separate arenas    %14llu B  (sum of heights)\n",
           (unsigned long long)sum);
    printf("saving             %14llu B  %.1f%% (%.2fx smaller)\n",
           (unsigned long long)(sum - seq),
           sum ? 100.0 * (double)(sum - seq) / (double)sum : 0.0,
           seq ? (double)sum / (double)seq : 0.0);
    printf("all concurrent     %14llu B  (sum, stacked at 256 B alignment)\n",
           (unsigned long long)conc);
    printf("weights            %14llu B  (per model, resident, not shared)\n",
           (unsigned long long)weights);
    fprintf(csv, "shared,all,sequential_arena,%llu\n", (unsigned long long)seq);
    fprintf(csv, "shared,all,separate_arenas,%llu\n", (unsigned long long)sum);
    fprintf(csv, "shared,all,concurrent_arena,%llu\n",
            (unsigned long long)conc);
    if (seq != max_h || conc < sum) bad = 1;
  } else {
    bad = 1;
  }
  for (size_t i = 0; i < ok; i++)
    planned_free(&m[i]);
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  return bad;
}

/* ---- part 2 ---- */

enum { LEN_MAX = 160, BUCKET_HI = 128 };
static double g_pool_factor = 1.25; /* --pool-factor: block / lower bound */

typedef struct shape_cache {
  planned_t p[LEN_MAX + 1]; /* by sequence length, planned on first use */
} shape_cache_t;

static planned_t *shape(shape_cache_t *c, const char *path, int64_t len) {
  if (!c->p[len].plan && plan_model(path, "max_seq_len", len, &c->p[len]))
    return NULL;
  return &c->p[len];
}

/* Serves one inference of `pr` buffer by buffer from the pool; returns the
 * number of failed allocations (0 when the block held it). */
static uint64_t serve_from_pool(nnmem_pool_t *pool, const nnmem_problem_t *pr) {
  size_t n = nnmem_problem_count(pr), k = 0;
  const nnmem_buffer_t *b = nnmem_problem_buffers(pr);
  nnmem_trace_event_t *ev = NULL; /* sub-buffers: inside their parent */
  void **addr = calloc(n + 1, sizeof *addr);
  uint64_t failed = 0;
  if (nnmem_trace_events(pr, &ev, &k) != NNMEM_OK) k = 0;
  for (size_t e = 0; ev && addr && e < k; e++) {
    size_t i = ev[e].index;
    if (!ev[e].is_alloc) {
      if (addr[i]) (void)nnmem_pool_free(pool, addr[i]);
      addr[i] = NULL;
    } else if (nnmem_pool_alloc(pool, b[i].size, b[i].align, &addr[i]) !=
               NNMEM_OK) {
      failed++;
    }
  }
  free(ev);
  free(addr);
  return failed;
}

static int part_shapes(const char *dir, uint64_t n_req, uint64_t seed,
                       FILE *csv) {
  char path[4096];
  snprintf(path, sizeof path,
           "%s/tiny_BertForQuestionAnswering_pt14_opset10.onnx", dir);
  FILE *f = fopen(path, "rb");
  if (!f) {
    printf("dynamic shapes: %s absent, skipped\n", path);
    return 0;
  }
  fclose(f);
  nnmem_onnx_dim_buckets_t bk;
  nnmem_diag_t d = {{0}};
  if (nnmem_onnx_dim_buckets_parse("max_seq_len=16..128", &bk, &d) != NNMEM_OK)
    return 1;
  static shape_cache_t cache;
  int bad = 0;
  /* (c)'s static part: the bucket arena (largest bucket) and the pool */
  uint64_t arena = 0, outside = 0, pool_fail = 0;
  for (size_t i = 0; i < bk.n; i++) {
    planned_t *p = shape(&cache, path, bk.values[i]);
    if (!p) return 1;
    arena = nnmem__max_u64(arena, nnmem_plan_height(p->plan));
  }
  planned_t *cap = shape(&cache, path, LEN_MAX);
  if (!cap) return 1;
  uint64_t lb = 0;
  (void)nnmem_problem_lower_bound(nnmem_liveness_problem(cap->l), 0, &lb);
  nnmem_backend_t *dev_a = sim_device(), *dev_b = sim_device(),
                  *dev_c = sim_device();
  void *arena_c = NULL, *grow = NULL;
  uint64_t grow_size = 0;
  nnmem_pool_config_t pc;
  nnmem_pool_config_init(&pc);
  pc.chunk_size = (uint64_t)((double)lb * g_pool_factor) + 256;
  pc.alignment = 256;
  nnmem_pool_t *pool = NULL;
  if (!dev_a || !dev_b || !dev_c ||
      nnmem_backend_alloc(dev_c, arena, 256, &arena_c) != NNMEM_OK ||
      nnmem_pool_create_diag(NNMEM_POOL_SHAPE, &pc, dev_c, &pool, &d) !=
          NNMEM_OK) {
    fprintf(stderr, "multi: shapes setup: %s\n", d.message);
    bad = 1;
  }
  uint64_t rng = seed ? seed : 1;
  for (uint64_t r = 0; !bad && r < n_req; r++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    int64_t len = 1 + (int64_t)(rng % LEN_MAX);
    planned_t *p = shape(&cache, path, len);
    if (!p) {
      bad = 1;
      break;
    }
    uint64_t h = nnmem_plan_height(p->plan);
    void *x = NULL; /* (a) per shape */
    if (nnmem_backend_alloc(dev_a, h ? h : 1, 256, &x) == NNMEM_OK)
      (void)nnmem_backend_free(dev_a, x, h ? h : 1);
    if (h > grow_size) { /* (b) grow on demand */
      if (grow) (void)nnmem_backend_free(dev_b, grow, grow_size);
      grow_size = h;
      (void)nnmem_backend_alloc(dev_b, grow_size, 256, &grow);
    }
    size_t k; /* (c) */
    if (nnmem_onnx_dim_bucket_of(&bk, len, &k) != NNMEM_OK) {
      outside++;
      pool_fail += serve_from_pool(pool, nnmem_liveness_problem(p->l));
      nnmem_diag_t pd = {{0}};
      if (nnmem_pool_check(pool, &pd) != NNMEM_OK) {
        fprintf(stderr, "multi: shape pool: %s\n", pd.message);
        bad = 1;
      }
    }
  }
  uint64_t a = device_allocs(dev_a), b = device_allocs(dev_b),
           c = device_allocs(dev_c) + pool_fail;
  printf("\n== dynamic shapes: tiny BERT, max_seq_len buckets 16..128 (");
  for (size_t i = 0; i < bk.n; i++)
    printf("%s%lld", i ? " " : "", (long long)bk.values[i]);
  printf("), %llu requests, lengths 1..%d (seed %llu)\n",
         (unsigned long long)n_req, LEN_MAX, (unsigned long long)seed);
  printf(
      "  requests outside the buckets: %llu (served by the shape pool, "
      "block %llu B = %.2f x lower bound at %d + 256 B; %llu failed pool "
      "allocations)\n",
      (unsigned long long)outside, (unsigned long long)pc.chunk_size,
      g_pool_factor, LEN_MAX, (unsigned long long)pool_fail);
  printf("  %-30s %14s %22s\n", "strategy", "device allocs",
         "avoided by buckets+pool");
  printf("  %-30s %14llu %22llu\n", "a. arena per shape", (unsigned long long)a,
         (unsigned long long)(a - c));
  printf("  %-30s %14llu %22llu\n", "b. grow on demand", (unsigned long long)b,
         (unsigned long long)(b > c ? b - c : 0));
  printf("  %-30s %14llu %22s\n", "c. buckets + shape pool",
         (unsigned long long)c, "-");
  printf(
      "  bucket arena %llu B + pool block %llu B; grow-on-demand ended at "
      "%llu B\n",
      (unsigned long long)arena, (unsigned long long)pc.chunk_size,
      (unsigned long long)grow_size);
  fprintf(csv, "shapes,per_shape,device_allocs,%llu\n", (unsigned long long)a);
  fprintf(csv, "shapes,grow,device_allocs,%llu\n", (unsigned long long)b);
  fprintf(csv, "shapes,buckets_pool,device_allocs,%llu\n",
          (unsigned long long)c);
  fprintf(csv, "shapes,buckets_pool,outside,%llu\n",
          (unsigned long long)outside);
  nnmem_pool_destroy(pool);
  if (arena_c) (void)nnmem_backend_free(dev_c, arena_c, arena);
  if (grow) (void)nnmem_backend_free(dev_b, grow, grow_size);
  nnmem_backend_destroy(dev_a);
  nnmem_backend_destroy(dev_b);
  nnmem_backend_destroy(dev_c);
  for (int i = 0; i <= LEN_MAX; i++)
    planned_free(&cache.p[i]);
  return bad;
}

int main(int argc, char **argv) {
  const char *dir = NNMEM_DEFAULT_DATA_DIR "/models",
             *csv_path = "bench-multi.csv";
  uint64_t n_req = 1000, seed = 42;
  for (int i = 1; i < argc; i++) {
    int v = i + 1 < argc;
    if (strcmp(argv[i], "--csv") == 0 && v)
      csv_path = argv[++i];
    else if (strcmp(argv[i], "--requests") == 0 && v)
      n_req = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--pool-factor") == 0 && v)
      g_pool_factor = strtod(argv[++i], NULL);
    else if (strcmp(argv[i], "--seed") == 0 && v)
      seed = strtoull(argv[++i], NULL, 10);
    else if (argv[i][0] != '-')
      dir = argv[i];
    else {
      fprintf(stderr,
              "usage: multi [MODELS_DIR] [--csv OUT.csv] [--requests N] "
              "[--seed S] [--pool-factor F]\n");
      return 1;
    }
  }
  FILE *csv = fopen(csv_path, "w");
  if (!csv) {
    perror(csv_path);
    return 1;
  }
  fprintf(csv, "part,what,metric,value\n");
  int bad = part_shared(dir, csv);
  bad |= part_shapes(dir, n_req, seed, csv);
  fclose(csv);
  return bad;
}

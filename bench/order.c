/* bench/order.c - generators of irregularly wired graphs and the operator
 * order benchmark.
 *
 * Generators (fixed seeds, printed in every table row):
 *   randwire:N:SEED  one RandWire stage (Xie et al., ICCV 2019): a
 *       Watts-Strogatz small-world graph WS(K = 4, P = 0.75) on N nodes
 *       (ring lattice, each edge (i, i + j) rewired to a random node with
 *       probability P), made a DAG by orienting each edge from the lower
 *       node index to the higher. Node i sums its inputs (an Add, in place,
 *       when it has more than one; nodes without inputs read the stage
 *       input), then ReLU (in place), Conv, BatchNorm (in place); the
 *       outputs of nodes without successors are summed into the stage
 *       output. Every feature map is 1x78x28x28 float32 (the small regime).
 *   nasnet:CELLS:SEED  CELLS NASNet-like normal cells (Zoph et al., CVPR
 *       2018): cell inputs h[-2], h[-1]; 5 blocks, each combining two
 *       hidden states picked at random (earlier blocks included) through a
 *       random op (separable conv 3x3 / 5x5 = ReLU, depthwise, pointwise,
 *       BN; avg / max pool; identity) and an Add; the blocks nobody in the
 *       cell reads are concatenated and a 1x1 conv brings the result back
 *       to C channels. Feature maps 1x44x32x32 float32.
 * The graph is written as JSON (docs/graph-format.md) through the one JSON
 * writer and read back with nnmem_graph_parse_json, so the table measures
 * exactly what `nnmem plan g.json --order memory` sees.
 * Table: per graph, ops, live peak in file order and in memory order, the
 * reduction, the seconds of nnmem_graph_order_memory, exact / heuristic
 * (and the greedy beam-1 peak, for the heuristic's quality), and the
 * Concat / Split ops the search kept out of concat-into-output (as
 * `nnmem plan --order memory` lets it). Asserts
 * nothing about time. Thread-safety: single-threaded. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_write.h"
#include "common/text.h"
#include "common/util.h"
#include "nnmem/nnmem.h"
#include "order.h"

#define MAX_NODES 1500
#define MAX_IN 16

typedef struct gt {
  char name[24];
  const char *kind;
  uint64_t c, h, w;
} gt_t;

typedef struct gop {
  char name[24];
  const char *type;
  uint32_t in[MAX_IN], n_in, out;
  int inplace; /* index into in[], -1 = none */
} gop_t;

typedef struct gg {
  char name[48];
  gt_t *t;  /* 8 * MAX_NODES + 64 */
  gop_t *o; /* same */
  uint32_t nt, no;
  uint64_t rng;
} gg_t;

#define GG_CAP (8 * MAX_NODES + 64)

static uint64_t rnd(gg_t *g) {
  g->rng ^= g->rng >> 12;
  g->rng ^= g->rng << 25;
  g->rng ^= g->rng >> 27;
  return g->rng * 2685821657736338717ull;
}

static uint32_t tensor(gg_t *g, const char *kind, uint64_t c, uint64_t h,
                       uint64_t w, const char *fmt, int i) {
  gt_t *t = &g->t[g->nt];
  snprintf(t->name, sizeof t->name, fmt, i);
  t->kind = kind;
  t->c = c, t->h = h, t->w = w;
  return g->nt++;
}

/* Adds op (type, inputs) -> a new tensor like `like`; returns the tensor. */
static uint32_t op(gg_t *g, const char *type, const uint32_t *in, uint32_t n,
                   int inplace, const char *kind, uint64_t c, const char *fmt,
                   int i) {
  gop_t *o = &g->o[g->no++];
  snprintf(o->name, sizeof o->name, fmt, i);
  o->type = type;
  memcpy(o->in, in, n * sizeof *in);
  o->n_in = n;
  o->inplace = inplace;
  char tn[24];
  snprintf(tn, sizeof tn, "%s.out", o->name);
  o->out = tensor(g, kind, c, g->t[in[0]].h, g->t[in[0]].w, "%s", 0);
  snprintf(g->t[o->out].name, sizeof g->t[o->out].name, "%s", tn);
  return o->out;
}

/* ---- RandWire -----------------------------------------------------------*/

static uint8_t adj[MAX_NODES][MAX_NODES];

static void randwire(gg_t *g, int n, uint64_t seed) {
  memset(adj, 0, sizeof adj);
  g->rng = seed * 0x9e3779b97f4a7c15ull + 1;
  snprintf(g->name, sizeof g->name, "randwire_%d_s%llu", n,
           (unsigned long long)seed);
  const int K = 4;
  for (int i = 0; i < n; i++)
    for (int j = 1; j <= K / 2; j++)
      adj[i][(i + j) % n] = adj[(i + j) % n][i] = 1;
  for (int j = 1; j <= K / 2; j++)
    for (int i = 0; i < n; i++) {
      int b = (i + j) % n;
      if (rnd(g) % 100 >= 75 || !adj[i][b]) continue; /* P = 0.75 */
      int r = (int)(rnd(g) % (uint64_t)n), tries = 0;
      while ((r == i || adj[i][r]) && tries++ < 4 * n)
        r = (int)(rnd(g) % (uint64_t)n);
      if (r == i || adj[i][r]) continue;
      adj[i][b] = adj[b][i] = 0;
      adj[i][r] = adj[r][i] = 1;
    }
  const uint64_t C = 78, H = 28;
  static uint32_t out[MAX_NODES];
  static int has_succ[MAX_NODES];
  memset(has_succ, 0, sizeof has_succ);
  uint32_t x = tensor(g, "input", C, H, H, "x", 0);
  for (int v = 0; v < n; v++) {
    uint32_t in[MAX_IN], k = 0;
    for (int u = 0; u < v && k < MAX_IN; u++)
      if (adj[u][v]) in[k++] = out[u], has_succ[u] = 1;
    uint32_t t = x;
    if (k == 0) t = x;
    if (k == 1) t = in[0];
    if (k > 1) t = op(g, "Sum", in, k, 0, "activation", C, "n%d.sum", v);
    t = op(g, "Relu", &t, 1, 0, "activation", C, "n%d.relu", v);
    t = op(g, "Conv", &t, 1, -1, "activation", C, "n%d.conv", v);
    out[v] =
        op(g, "BatchNormalization", &t, 1, 0, "activation", C, "n%d.bn", v);
  }
  uint32_t leaves[MAX_IN], k = 0, part = 0, acc = UINT32_MAX;
  for (int v = 0; v < n; v++) { /* sums of at most MAX_IN - 1 leaves */
    if (has_succ[v]) continue;
    if (k == 0 && acc != UINT32_MAX) leaves[k++] = acc;
    leaves[k++] = out[v];
    if (k == MAX_IN) {
      acc = op(g, "Sum", leaves, k, -1, "activation", C, "stage.sum%d", part++);
      k = 0;
    }
  }
  if (k == 0) leaves[k++] = acc;
  op(g, "Sum", leaves, k, -1, "output", C, "stage.out%d", 0);
}

/* ---- NASNet-like cells --------------------------------------------------*/

static uint32_t nas_op(gg_t *g, int kind, uint32_t t, int cell, int blk,
                       int side) {
  const uint64_t C = 44;
  char base[24];
  int id = cell * 100 + blk * 10 + side;
  snprintf(base, sizeof base, "c%%d");
  switch (kind) {
    case 0:
    case 1: /* separable conv 3x3 / 5x5 */
      t = op(g, "Relu", &t, 1, -1, "activation", C, "c%d.relu", id);
      t = op(g, "DepthwiseConv", &t, 1, -1, "activation", C, "c%d.dw", id);
      t = op(g, "Conv", &t, 1, -1, "activation", C, "c%d.pw", id);
      return op(g, "BatchNormalization", &t, 1, 0, "activation", C, "c%d.bn",
                id);
    case 2:
      return op(g, "AveragePool", &t, 1, -1, "activation", C, "c%d.avg", id);
    case 3:
      return op(g, "MaxPool", &t, 1, -1, "activation", C, "c%d.max", id);
    default:
      return t; /* identity */
  }
}

static void nasnet(gg_t *g, int cells, uint64_t seed) {
  g->rng = seed * 0x9e3779b97f4a7c15ull + 7;
  snprintf(g->name, sizeof g->name, "nasnet_%d_s%llu", cells,
           (unsigned long long)seed);
  const uint64_t C = 44, H = 32;
  uint32_t h2 = tensor(g, "input", C, H, H, "h_prev2", 0);
  uint32_t h1 = tensor(g, "input", C, H, H, "h_prev1", 0);
  for (int c = 0; c < cells; c++) {
    uint32_t hs[7] = {h2, h1}, used[7] = {0}, nh = 2;
    for (int b = 0; b < 5; b++) {
      uint32_t pick[2];
      for (int s = 0; s < 2; s++) {
        uint32_t i = (uint32_t)(rnd(g) % nh);
        used[i] = 1;
        pick[s] = nas_op(g, (int)(rnd(g) % 5), hs[i], c, b, s);
      }
      hs[nh++] =
          op(g, "Add", pick, 2, 0, "activation", C, "c%d.add", c * 10 + b);
    }
    uint32_t cat[5], k = 0;
    for (uint32_t i = 2; i < nh; i++)
      if (!used[i]) cat[k++] = hs[i];
    uint32_t t = op(g, "Concat", cat, k, -1, "activation", C * k, "c%d.cat", c);
    h2 = h1;
    h1 = op(g, "Conv", &t, 1, -1, c + 1 == cells ? "output" : "activation", C,
            "c%d.reduce", c);
  }
}

/* ---- JSON ---------------------------------------------------------------*/

static nnmem_status_t to_json(const gg_t *g, char **out) {
  nnmem__text_t t;
  nnmem__jw_t w;
  nnmem__text_init(&t);
  nnmem__jw_init(&w, &t, NNMEM__JW_COMPACT);
  nnmem__jw_object(&w);
  nnmem__jw_kv_u64(&w, "format_version", 1);
  nnmem__jw_kv_string(&w, "name", g->name);
  nnmem__jw_key(&w, "tensors");
  nnmem__jw_array(&w);
  for (uint32_t i = 0; i < g->nt; i++) {
    nnmem__jw_object(&w);
    nnmem__jw_kv_string(&w, "name", g->t[i].name);
    nnmem__jw_kv_string(&w, "kind", g->t[i].kind);
    nnmem__jw_kv_string(&w, "dtype", "float32");
    nnmem__jw_key(&w, "shape");
    nnmem__jw_array(&w);
    uint64_t dims[4] = {1, g->t[i].c, g->t[i].h, g->t[i].w};
    for (int d = 0; d < 4; d++)
      nnmem__jw_u64(&w, dims[d]);
    nnmem__jw_end(&w);
    nnmem__jw_end(&w);
  }
  nnmem__jw_end(&w);
  nnmem__jw_key(&w, "ops");
  nnmem__jw_array(&w);
  for (uint32_t i = 0; i < g->no; i++) {
    const gop_t *o = &g->o[i];
    nnmem__jw_object(&w);
    nnmem__jw_kv_string(&w, "name", o->name);
    nnmem__jw_kv_string(&w, "type", o->type);
    nnmem__jw_key(&w, "inputs");
    nnmem__jw_array(&w);
    for (uint32_t k = 0; k < o->n_in; k++)
      nnmem__jw_string(&w, g->t[o->in[k]].name);
    nnmem__jw_end(&w);
    nnmem__jw_key(&w, "outputs");
    nnmem__jw_array(&w);
    nnmem__jw_string(&w, g->t[o->out].name);
    nnmem__jw_end(&w);
    if (o->inplace >= 0) nnmem__jw_kv_u64(&w, "inplace", (uint64_t)o->inplace);
    nnmem__jw_end(&w);
  }
  nnmem__jw_end(&w);
  nnmem__jw_end(&w);
  nnmem_status_t st = nnmem__jw_finish(&w);
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    return st;
  }
  *out = t.data;
  return NNMEM_OK;
}

int bench_order_is_graph_spec(const char *spec) {
  return !strncmp(spec, "randwire:", 9) || !strncmp(spec, "nasnet:", 7);
}

static int generate(const char *spec, char **json) {
  int a = 0;
  unsigned long long seed = 0;
  gg_t *g = calloc(1, sizeof *g);
  if (g)
    g->t = calloc(GG_CAP, sizeof *g->t), g->o = calloc(GG_CAP, sizeof *g->o);
  if (!g || !g->t || !g->o) {
    if (g) free(g->t), free(g->o);
    free(g);
    return 1;
  }
  int ok = 0;
  if (sscanf(spec, "randwire:%d:%llu", &a, &seed) == 2 && a >= 2 &&
      a <= MAX_NODES) {
    randwire(g, a, seed);
    ok = 1;
  } else if (sscanf(spec, "nasnet:%d:%llu", &a, &seed) == 2 && a >= 1 &&
             a <= 20) {
    nasnet(g, a, seed);
    ok = 1;
  }
  int e = 1;
  if (!ok)
    fprintf(stderr,
            "plan: bad generator '%s' (randwire:N:SEED with N in "
            "2..64, nasnet:CELLS:SEED with CELLS in 1..20)\n",
            spec);
  else if (to_json(g, json) == NNMEM_OK)
    e = 0;
  free(g->t), free(g->o);
  free(g);
  return e;
}

int bench_order_gen(const char *spec, const char *out) {
  char *json = NULL;
  if (generate(spec, &json)) return 1;
  FILE *f = strcmp(out, "-") ? fopen(out, "w") : stdout;
  int e = !f || fputs(json, f) < 0 || fputc('\n', f) < 0;
  if (f && f != stdout) e |= fclose(f) != 0;
  if (e) fprintf(stderr, "plan: cannot write %s\n", out);
  free(json);
  return e;
}

/* ---- the table ----------------------------------------------------------*/

static int failures;

static void row(FILE *csv, const char *name, const nnmem_graph_t *g) {
  size_t n = nnmem_graph_op_count(g);
  uint32_t *order = malloc((n + 1) * sizeof *order);
  nnmem_order_report_t r, h;
  memset(&r, 0, sizeof r);
  memset(&h, 0, sizeof h);
  uint8_t *kept = calloc(n + 1, 1);
  nnmem_order_config_t cfg;
  nnmem_order_config_init(&cfg);
  cfg.concat_ops_out = kept; /* as `nnmem plan --order memory` */
  nnmem_diag_t d = {{0}};
  double t0 = nnmem__now();
  nnmem_status_t st = nnmem_graph_order_memory(g, &cfg, order, &r, &d);
  double sec = nnmem__now() - t0;
  uint64_t check = 0;
  nnmem_liveness_config_t lc;
  nnmem_liveness_config_init(&lc);
  lc.order = order;
  lc.no_concat_ops = kept;
  nnmem_liveness_t *l = NULL;
  if (st == NNMEM_OK) st = nnmem_liveness_analyze(g, &lc, &l, &d);
  if (st == NNMEM_OK)
    st = nnmem_problem_lower_bound(nnmem_liveness_problem(l), 1, &check);
  nnmem_liveness_destroy(l);
  free(kept);
  cfg.concat_ops_out = NULL;
  cfg.method = NNMEM_ORDER_HEURISTIC;
  cfg.beam_width = 1;
  if (st == NNMEM_OK) st = nnmem_graph_order_memory(g, &cfg, order, &h, &d);
  free(order);
  if (st != NNMEM_OK || check != r.peak || r.peak > r.file_peak ||
      h.peak < r.peak * (uint64_t)r.exact) {
    printf("%-34s FAILED: %s\n", name, st != NNMEM_OK ? d.message : "check");
    failures++;
    return;
  }
  double red =
      r.file_peak ? 100.0 * (double)(r.file_peak - r.peak) / (double)r.file_peak
                  : 0.0;
  printf("%-34s %6zu %14llu %14llu %7.1f%% %8.3f  %-9s %14llu %5zu %4zu\n",
         name, n, (unsigned long long)r.file_peak, (unsigned long long)r.peak,
         red, sec, r.exact ? "exact" : "heuristic", (unsigned long long)h.peak,
         r.largest_part, r.concat_ops_off);
  fprintf(csv, "%s,%zu,%llu,%llu,%.2f,%.4f,%s,%llu,%zu,%zu\n", name, n,
          (unsigned long long)r.file_peak, (unsigned long long)r.peak, red, sec,
          r.exact ? "exact" : "heuristic", (unsigned long long)h.peak,
          r.largest_part, r.concat_ops_off);
  fflush(stdout);
}

static void generated_rows(FILE *csv) {
  const char *specs[] = {"randwire:16:%d", "randwire:24:%d",
                         "randwire:32:%d", "nasnet:1:%d",
                         "nasnet:3:%d",    "randwire:1400:%d"};
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++)
    for (int seed = 1; seed <= (strstr(specs[s], "1400") ? 2 : 5); seed++) {
      char spec[48], *json = NULL;
      snprintf(spec, sizeof spec, specs[s], seed);
      if (generate(spec, &json)) {
        failures++;
        continue;
      }
      nnmem_graph_t *g = NULL;
      nnmem_diag_t d = {{0}};
      if (nnmem_graph_parse_json(json, strlen(json), spec, &g, &d) !=
          NNMEM_OK) {
        printf("%-34s FAILED: %s\n", spec, d.message);
        failures++;
      } else {
        row(csv, spec, g);
      }
      nnmem_graph_destroy(g);
      free(json);
    }
}

static void model_rows(FILE *csv, const char *dir) {
  size_t nz = 0;
  const char *const *zoo = nnmem_zoo_names(&nz);
  for (size_t i = 0; i < nz; i++) {
    nnmem_graph_t *g = NULL;
    if (nnmem_zoo_build(zoo[i], 1, &g, NULL) == NNMEM_OK) row(csv, zoo[i], g);
    nnmem_graph_destroy(g);
  }
  DIR *dp = dir ? opendir(dir) : NULL;
  if (!dp) return;
  char *names[64];
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(dp)) && n < 64) {
    size_t l = strlen(e->d_name);
    if (l > 5 && !strcmp(e->d_name + l - 5, ".onnx"))
      names[n++] = nnmem__strdup(e->d_name);
  }
  closedir(dp);
  for (size_t i = 0; i < n; i++) /* sorted by name */
    for (size_t j = i + 1; j < n; j++)
      if (strcmp(names[j], names[i]) < 0) {
        char *t = names[i];
        names[i] = names[j], names[j] = t;
      }
  for (size_t i = 0; i < n; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    nnmem_graph_t *g = NULL;
    nnmem_onnx_config_t cfg;
    nnmem_onnx_config_init(&cfg);
    if (nnmem_onnx_import_file(path, &cfg, &g, NULL, NULL) == NNMEM_OK)
      row(csv, names[i], g);
    else
      printf("%-34s (not imported)\n", names[i]);
    nnmem_graph_destroy(g);
    free(names[i]);
  }
}

int bench_order_table(const char *models_dir, const char *csv_out) {
  const char *path = csv_out ? csv_out : "bench-order.csv";
  FILE *csv = fopen(path, "w");
  if (!csv) {
    fprintf(stderr, "plan: cannot write %s\n", path);
    return 1;
  }
  fprintf(csv,
          "graph,ops,file_peak,memory_peak,reduction_pct,seconds,method,"
          "greedy_peak,largest_part,concat_kept_out\n");
  printf("%-34s %6s %14s %14s %8s %8s  %-9s %14s %5s %4s\n", "graph", "ops",
         "file peak", "memory peak", "saved", "seconds", "method",
         "greedy peak", "part", "kept");
  generated_rows(csv);
  model_rows(csv, models_dir);
  fclose(csv);
  printf("rows written to %s\n", path);
  return failures ? 1 : 0;
}

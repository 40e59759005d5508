/* bench/fit.c - fitting under a memory limit: every shared model (and the
 * built-in zoo) at 75 %, 50 % and 25 % of its unconstrained peak (or its
 * smallest achievable footprint, whichever is larger: the
 * smallest one the fitter achieves, by bisection). Per row:
 * the fitter's transfer bytes, exposed time and time to fit, whether the
 * plan passed the executor, against on-demand LRU swapping (no prefetch)
 * and Belady's MIN eviction (nnmem_fit_baseline; whole tensors, MIN also
 * on the fitter's weight slices and split ops, the smaller counts). Where
 * an op's whole operands exceed the limit (split ops fit below that) LRU
 * on whole tensors cannot run: LRU then runs the fitter's values and
 * steps (slices, split ops), marked '*', and a row no baseline can run is
 * marked '!' and not counted as meeting a figure. `floor` is the
 * exposed time no schedule with the plan's op times can beat, over LRU's:
 * the larger of the link floor (the copies in share one link, start at
 * step 0 at the earliest and at best overlap all compute: exposed >= bytes
 * in / link - compute, for the row's bytes) and the memory floor
 * (`mfloor`, nnmem_fit_floor: the weights ops k..j read that did not fit
 * on the device beside op k's own operands when op k ended; docs/fit.md,
 * Baselines). Prints a table
 * and a tally against the figures, writes CSV (--csv FILE).
 * Asserts nothing about time.
 *
 * Usage: bench/fit [--device NAME] [--data DIR] [--csv FILE] [--no-run]
 *                  [--slice-bytes N|off] [--no-split] [--only SUBSTRING]
 * (--no-split: ops read all their weight's slices in one step, as before
 * operator splitting; --only: the models whose name contains it)
 * Thread-safety: single-threaded. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/nnmem.h"

/* Rows against the figures (bytes <= 1.10 x MIN, exposed <= 0.5 x
 * LRU) and rows whose floor is above 0.5. */
static struct tally {
  int rows, bytes_ok, exposed_ok, floor_over, lru_parts;
} tally;

typedef struct opts {
  const char *device, *data, *csv, *only;
  int no_run;
} opts_t;

/* The fitter's options (--slice-bytes): every fit of a run uses them. */
static nnmem_fit_config_t fit_cfg;

static int run_plan(const nnmem_fit_t *f, const nnmem_graph_t *g) {
  char *text = NULL;
  size_t len = 0;
  nnmem_exec_plan_t *p = NULL;
  int ok = nnmem_fit_format_json(f, g, &text, &len, NULL) == NNMEM_OK &&
           nnmem_exec_plan_parse(text, len, "bench", &p, NULL) == NNMEM_OK &&
           nnmem_exec_run(p, NULL, NULL, NULL) == NNMEM_OK;
  nnmem_exec_plan_destroy(p);
  free(text);
  return ok;
}

static void row(FILE *csv, const char *model, const nnmem_graph_t *g,
                const nnmem_device_t *d, int pct, uint64_t limit, int no_run) {
  nnmem_fit_t *f = NULL;
  nnmem_diag_t diag = {{0}};
  double t0 = nnmem__now();
  nnmem_status_t st = nnmem_fit(g, d, limit, &fit_cfg, &f, &diag);
  double secs = nnmem__now() - t0;
  /* LRU and MIN swap whole tensors (what a runtime without a plan does);
   * MIN also on the fitter's weight slices: the bytes figure is taken
   * against the smaller of the two */
  nnmem_fit_config_t whole = fit_cfg;
  whole.slice_bytes = UINT64_MAX;
  nnmem_baseline_result_t lru = {0}, bel = {0}, bel_sl = {0};
  nnmem_fit_baseline(g, d, limit, &whole, NNMEM_BASELINE_LRU, &lru, NULL);
  nnmem_fit_baseline(g, d, limit, &whole, NNMEM_BASELINE_BELADY, &bel, NULL);
  nnmem_fit_baseline(g, d, limit, &fit_cfg, NNMEM_BASELINE_BELADY, &bel_sl,
                     NULL);
  if (bel_sl.feasible &&
      (!bel.feasible || bel_sl.transfer_bytes < bel.transfer_bytes))
    bel = bel_sl;
  /* below an op's whole operands (a split op's whole weight) a runtime
   * without a plan must run the same parts too: LRU on the fitter's
   * values and steps, marked '*' */
  int lru_parts = 0;
  if (!lru.feasible) {
    nnmem_fit_baseline(g, d, limit, &fit_cfg, NNMEM_BASELINE_LRU, &lru, NULL);
    lru_parts = 1;
  }
  if (st != NNMEM_OK) {
    printf("%-34.34s %3d%% %12llu  no fit: %.60s\n", model, pct,
           (unsigned long long)limit, diag.message);
    if (csv)
      fprintf(csv, "%s,%d,%llu,nofit,,,,,,,,,,,,\n", model, pct,
              (unsigned long long)limit);
    return;
  }
  nnmem_fit_costs_t c;
  nnmem_fit_costs(f, &c);
  int ran = no_run ? -1 : run_plan(f, g);
  double bytes_ratio =
      bel.transfer_bytes ? (double)c.transfer_bytes / (double)bel.transfer_bytes
                         : 0;
  double exp_ratio = lru.exposed_s > 0 ? c.exposed_s / lru.exposed_s : 0;
  /* the link floor (bytes in / link - compute) and the memory floor
   * (nnmem_fit_floor, docs/fit.md Baselines); `floor` is the larger */
  nnmem_fit_floor_t fl = {0};
  nnmem_fit_floor(f, &fl);
  double floor_s = fl.link_s > fl.memory_s ? fl.link_s : fl.memory_s;
  double floor_ratio = lru.exposed_s > 0 ? floor_s / lru.exposed_s : 0;
  double mfloor_ratio = lru.exposed_s > 0 ? fl.memory_s / lru.exposed_s : 0;
  tally.rows++;
  tally.bytes_ok += bel.feasible && bytes_ratio <= 1.10;
  tally.exposed_ok += lru.feasible && exp_ratio <= 0.5;
  tally.floor_over += floor_ratio > 0.5;
  tally.lru_parts += lru_parts;
  printf(
      "%-34.34s %3d%% %12llu %12llu %9.3f %12llu %8.3f%c %12llu %6.2f %6.2f "
      "%6.2f %6.2f %8.4f %4s\n",
      model, pct, (unsigned long long)limit,
      (unsigned long long)c.transfer_bytes, c.exposed_s * 1e3,
      (unsigned long long)lru.transfer_bytes, lru.exposed_s * 1e3,
      !lru.feasible ? '!' : lru_parts ? '*' : ' ',
      (unsigned long long)bel.transfer_bytes, bytes_ratio, exp_ratio,
      floor_ratio, mfloor_ratio, secs,
      ran < 0 ? "-"
      : ran   ? "pass"
              : "FAIL");
  if (csv)
    fprintf(csv,
            "%s,%d,%llu,%llu,%.9f,%.9f,%llu,%.9f,%llu,%.4f,%.4f,%.4f,%.4f,"
            "%.6f,%s,%d\n",
            model, pct, (unsigned long long)limit,
            (unsigned long long)c.transfer_bytes, c.exposed_s, c.compute_s,
            (unsigned long long)lru.transfer_bytes, lru.exposed_s,
            (unsigned long long)bel.transfer_bytes, bytes_ratio, exp_ratio,
            floor_ratio, mfloor_ratio, secs,
            ran < 0 ? "-"
            : ran   ? "pass"
                    : "FAIL",
            lru_parts);
  nnmem_fit_destroy(f);
}

static void model_rows(FILE *csv, const char *name, const nnmem_graph_t *g,
                       const nnmem_device_t *d, int no_run) {
  nnmem_fit_t *f = NULL;
  nnmem_diag_t diag = {{0}};
  if (nnmem_fit(g, d, UINT64_MAX / 4, &fit_cfg, &f, &diag) != NNMEM_OK) {
    printf("%-34.34s skipped: %.80s\n", name, diag.message);
    return;
  }
  uint64_t peak = nnmem_fit_unconstrained_peak(f);
  uint64_t minf = nnmem_fit_min_footprint(f, NULL);
  nnmem_fit_destroy(f);
  /* the smallest limit the fitter achieves (bisection), not the bound */
  uint64_t achievable = minf;
  if (nnmem_fit_smallest_limit(g, d, &fit_cfg, &achievable, NULL) == NNMEM_OK)
    minf = achievable;
  const int pct[] = {75, 50, 25};
  for (int i = 0; i < 3; i++) {
    uint64_t limit = peak / 100 * (uint64_t)pct[i];
    if (limit < minf) limit = minf;
    row(csv, name, g, d, pct[i], limit, no_run);
  }
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  opts_t o = {"edge-npu", NNMEM_DEFAULT_DATA_DIR, NULL, NULL, 0};
  nnmem_fit_config_init(&fit_cfg);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc)
      o.device = argv[++i];
    else if (!strcmp(argv[i], "--data") && i + 1 < argc)
      o.data = argv[++i];
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
      o.csv = argv[++i];
    else if (!strcmp(argv[i], "--no-run"))
      o.no_run = 1;
    else if (!strcmp(argv[i], "--no-split"))
      fit_cfg.no_split = 1;
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      o.only = argv[++i];
    else if (!strcmp(argv[i], "--slice-bytes") && i + 1 < argc) {
      const char *v = argv[++i];
      fit_cfg.slice_bytes =
          !strcmp(v, "off") ? UINT64_MAX : strtoull(v, NULL, 10);
    }
    else {
      fprintf(stderr,
              "usage: fit [--device NAME] [--data DIR] [--csv FILE] "
              "[--no-run] [--slice-bytes N|off] [--no-split] "
              "[--only SUBSTRING]\n");
      return 1;
    }
  }
  nnmem_device_t d;
  if (nnmem_device_preset(o.device, &d) != NNMEM_OK) {
    fprintf(stderr, "fit: unknown device preset '%s'\n", o.device);
    return 1;
  }
  FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
  if (csv)
    fprintf(csv,
            "model,pct,limit,bytes,exposed_s,compute_s,lru_bytes,"
            "lru_exposed_s,belady_bytes,bytes_vs_belady,exposed_vs_lru,"
            "floor_vs_lru,mfloor_vs_lru,"
            "fit_s,run,lru_on_parts\n");
  printf(
      "device %s; bytes per inference; exposed ms; vsMIN = bytes / "
      "Belady bytes, vsLRU = exposed / LRU exposed, floor = (bytes in / "
      "link - compute, or mfloor if larger) / LRU exposed, mfloor = the "
      "memory floor / LRU exposed\n",
      d.name);
  printf("%-34s %4s %12s %12s %9s %12s %9s %12s %6s %6s %6s %6s %8s %4s\n",
         "model", "lim", "limit B", "bytes", "exposed", "LRU bytes",
         "LRU exp", "MIN bytes", "vsMIN", "vsLRU", "floor", "mfloor", "fit s",
         "run");
  size_t nz = 0;
  const char *const *zoo = nnmem_zoo_names(&nz);
  for (size_t i = 0; i < nz; i++) {
    nnmem_graph_t *g = NULL;
    if ((o.only && !strstr(zoo[i], o.only)) ||
        nnmem_zoo_build(zoo[i], 1, &g, NULL) != NNMEM_OK)
      continue;
    model_rows(csv, zoo[i], g, &d, o.no_run);
    nnmem_graph_destroy(g);
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/models", o.data ? o.data : "");
  DIR *dp = o.data && o.data[0] ? opendir(dir) : NULL;
  char *names[256];
  size_t n = 0;
  for (struct dirent *e; dp && (e = readdir(dp)) && n < 256;) {
    size_t len = strlen(e->d_name);
    if (len > 5 && !strcmp(e->d_name + len - 5, ".onnx") &&
        (!o.only || strstr(e->d_name, o.only)))
      names[n++] = nnmem__strdup(e->d_name);
  }
  if (dp) closedir(dp);
  qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    nnmem_onnx_config_t cfg;
    nnmem_onnx_config_init(&cfg);
    nnmem_graph_t *g = NULL;
    nnmem_diag_t diag = {{0}};
    if (nnmem_onnx_import_file(path, &cfg, &g, NULL, &diag) == NNMEM_OK)
      model_rows(csv, names[i], g, &d, o.no_run);
    else
      printf("%-34.34s skipped: %.80s\n", names[i], diag.message);
    nnmem_graph_destroy(g);
    free(names[i]);
  }
  if (csv) fclose(csv);
  printf(
      "rows %d: bytes <= 1.10 x MIN on %d; exposed <= 0.5 x LRU on %d; "
      "floor > 0.5 (out of reach: the row's bytes or memory) on %d; LRU on "
      "the split ops' parts (*: whole operands do not fit) on %d\n",
      tally.rows, tally.bytes_ok, tally.exposed_ok, tally.floor_over,
      tally.lru_parts);
  return 0;
}

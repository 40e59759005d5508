/* record_serve.c - record a run's allocations, serve the next run from a
 * plan of them, and list leaks by call site, with the public API only.
 *
 * Usage: record_serve record OUT.csv     a 6-step toy model, recorded
 *        record_serve serve PLAN.json    the same run served from the plan
 *        record_serve diverge PLAN.json  the run with one request bigger
 *        record_serve leaks              a leak report (text, by site)
 * The toy model: each step allocates an activation and a workspace, frees
 * the workspace and the previous step's activation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnmem/nnmem.h"

static void model(nnmem_planned_t *r, int bump) {
  void *prev = NULL;
  for (int s = 0; s < 6; s++) {
    size_t act = (size_t)(1 + s % 3) << 20, ws = (size_t)256 << 10;
    void *a = nnmem_planned_alloc(r, act + (bump && s == 3 ? 64 : 0));
    void *w = nnmem_planned_alloc(r, ws);
    memset(a, s, act);
    nnmem_planned_free(r, w);
    nnmem_planned_free(r, prev);
    prev = a;
    nnmem_step(r);
  }
  nnmem_planned_free(r, prev);
}

static int leaks(nnmem_allocator_t *a) {
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  lc.depth = 0; /* sites by file:line only: the same output on every build */
  nnmem_allocator_leaks_enable(a, &lc);
  for (int i = 0; i < 3; i++)
    (void)NNMEM_ALLOC(a, 1000); /* leaked */
  void *kept = NNMEM_ALLOC(a, 50000);
  (void)kept;
  void *freed = NNMEM_ALLOC(a, 4096);
  nnmem_free(a, freed);
  char *text;
  size_t len;
  if (nnmem_allocator_leaks_report(a, NNMEM_LEAKS_TEXT, &text, &len) !=
      NNMEM_OK)
    return 1;
  fwrite(text, 1, len, stdout);
  free(text);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: record_serve record OUT.csv | serve PLAN.json | "
            "diverge PLAN.json | leaks\n");
    return 1;
  }
  nnmem_allocator_t *a = NULL;
  if (nnmem_allocator_create(NULL, &a) != NNMEM_OK) return 1;
  int rc = 0;
  nnmem_diag_t d = {{0}};
  nnmem_planned_t *r = NULL;
  if (!strcmp(argv[1], "leaks")) {
    rc = leaks(a);
  } else if (!strcmp(argv[1], "record") && argc > 2) {
    nnmem_planned_record(a, NULL, &r);
    model(r, 0);
    if (nnmem_planned_write_csv(r, argv[2], &d) != NNMEM_OK) {
      fprintf(stderr, "record_serve: %s\n", d.message);
      rc = 1;
    }
  } else if ((!strcmp(argv[1], "serve") || !strcmp(argv[1], "diverge")) &&
             argc > 2) {
    if (nnmem_planned_load(a, argv[2], NULL, &r, &d) != NNMEM_OK) {
      fprintf(stderr, "record_serve: %s\n", d.message);
      rc = 1;
    } else {
      model(r, !strcmp(argv[1], "diverge"));
      nnmem_planned_stats_t st;
      nnmem_planned_stats(r, &st);
      printf(
          "requests %llu: %llu from the plan, %llu from the pools "
          "(size diverged %llu, order diverged %llu, disabled %d)\n"
          "reserved for the plan: %llu bytes (its height)\n",
          (unsigned long long)st.allocs, (unsigned long long)st.served,
          (unsigned long long)st.fallback, (unsigned long long)st.size_diverged,
          (unsigned long long)st.order_diverged, st.disabled,
          (unsigned long long)st.height);
    }
  } else {
    fprintf(stderr, "record_serve: unknown command '%s'\n", argv[1]);
    rc = 1;
  }
  nnmem_planned_destroy(r);
  nnmem_allocator_destroy(a);
  return rc;
}

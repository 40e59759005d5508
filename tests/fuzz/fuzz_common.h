/* fuzz_common.h - shared by the fuzz harnesses in tests/fuzz/: the libFuzzer
 * entry point signature and the checks run on whatever a reader accepts.
 *
 * A harness hands a parsed problem to fuzz_plan_and_verify, which plans it
 * with every strategy and runs the independent verifier on each plan; a
 * plan the verifier rejects aborts (a finding). Errors from the planner
 * (overflow, invalid sizes) are fine: only crashes, sanitizer reports and
 * invalid plans are findings. Not thread-safe (libFuzzer runs one input at a
 * time). */
#ifndef NNMEM_FUZZ_COMMON_H
#define NNMEM_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "nnmem/nnmem.h"

/* Inputs larger than this are skipped: they only slow the fuzzer down. */
#define FUZZ_MAX_INPUT (64u * 1024u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next input byte of a program of operations (0 past its end). */
static inline uint8_t fuzz_take(const uint8_t **p, const uint8_t *end) {
  return *p < end ? *(*p)++ : 0;
}

/* Aborts with a message: the harness found a broken invariant. */
static inline void fuzz_fail(const char *what, const nnmem_diag_t *diag) {
  fprintf(stderr, "fuzz finding: %s: %s\n", what, diag ? diag->message : "");
  abort();
}

/* The placement search (small node budget): --optimal, then the decision
 * problem at the proven bound; every plan verified, the bound never above
 * the height, "optimal" only at the bound. */
static inline void fuzz_search_and_verify(const nnmem_problem_t *p,
                                          uint64_t align) {
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.alignment = align;
  cfg.optimal = 1;
  cfg.node_budget = 2000;
  nnmem_plan_t *plan = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_plan_create(p, &cfg, &plan, &diag) != NNMEM_OK) return;
  uint64_t h = nnmem_plan_height(plan), b = nnmem_plan_bound(plan);
  if (nnmem_plan_verify(p, nnmem_plan_offsets(plan), align, 0, NULL, &diag))
    fuzz_fail("search plan fails verify", &diag);
  if (b > h) fuzz_fail("search bound above the height", NULL);
  if (nnmem_plan_status(plan) == NNMEM_PLAN_OPTIMAL && b != h)
    fuzz_fail("optimal but not at the bound", NULL);
  nnmem_plan_destroy(plan);
  if (b == 0) return;
  cfg.optimal = 0;
  cfg.capacity = b;
  plan = NULL;
  if (nnmem_plan_create(p, &cfg, &plan, &diag) != NNMEM_OK) return;
  if (nnmem_plan_verify(p, nnmem_plan_offsets(plan), align, b, NULL, &diag))
    fuzz_fail("search plan at the bound fails verify", &diag);
  nnmem_plan_destroy(plan);
}

/* Plans `p` with each strategy (and alignment `align`) and verifies every
 * plan that the planner returns, then runs the search
 * (fuzz_search_and_verify). */
static inline void fuzz_plan_and_verify(const nnmem_problem_t *p,
                                        uint64_t align) {
  for (int s = 0; s < (int)NNMEM_STRATEGY_COUNT_; s++) {
    nnmem_planner_config_t cfg;
    nnmem_planner_config_init(&cfg);
    cfg.strategy = (nnmem_strategy_t)s;
    cfg.alignment = align;
    nnmem_plan_t *plan = NULL;
    nnmem_diag_t diag = {0};
    if (nnmem_plan_create(p, &cfg, &plan, &diag) != NNMEM_OK) continue;
    if (nnmem_plan_count(plan) != nnmem_problem_count(p))
      fuzz_fail("plan count differs from the problem's", NULL);
    nnmem_verify_report_t rep;
    nnmem_status_t st =
        nnmem_plan_verify(p, nnmem_plan_offsets(plan), align, 0, &rep, &diag);
    if (st != NNMEM_OK || !rep.valid) fuzz_fail("plan fails verify", &diag);
    if (rep.height != nnmem_plan_height(plan))
      fuzz_fail("verified height differs from the plan's", NULL);
    nnmem_plan_destroy(plan);
  }
  fuzz_search_and_verify(p, align);
}

/* Liveness of `g`, then plan + verify of its problem: with reuse and
 * concat-into-output (default), without concat-into-output, without
 * reuse; the liveness problem must pass nnmem_problem_check. */
static inline void fuzz_graph_plan(const nnmem_graph_t *g) {
  for (int mode = 0; mode <= 2; mode++) { /* default, no concat, no reuse */
    nnmem_liveness_config_t lc;
    nnmem_liveness_config_init(&lc);
    lc.no_concat_into_output = mode == 1;
    lc.no_reuse = mode == 2;
    nnmem_liveness_t *l = NULL;
    nnmem_diag_t diag = {0};
    if (nnmem_liveness_analyze(g, &lc, &l, &diag) != NNMEM_OK) continue;
    /* sub-buffers from concat-into-output must follow the problem rules */
    if (nnmem_problem_check(nnmem_liveness_problem(l), &diag) != NNMEM_OK)
      fuzz_fail("liveness problem fails its check", &diag);
    if (mode && nnmem_liveness_sub_buffers(l))
      fuzz_fail("sub-buffers with concat-into-output off", NULL);
    fuzz_plan_and_verify(nnmem_liveness_problem(l), 64);
    nnmem_liveness_destroy(l);
  }
}

/* 1 when buffer i of p and of q has the same gaps and the same parent
 * (by index) at the same relative offset. */
static inline int fuzz_same_extras(const nnmem_problem_t *p,
                                   const nnmem_problem_t *q, size_t i) {
  const nnmem_interval_t *ga, *gb;
  size_t na = nnmem_problem_gaps(p, i, &ga), nb = nnmem_problem_gaps(q, i, &gb);
  if (na != nb) return 0;
  for (size_t k = 0; k < na; k++)
    if (ga[k].first != gb[k].first || ga[k].last != gb[k].last) return 0;
  size_t pa = 0, pb = 0;
  uint64_t ra = 0, rb = 0;
  nnmem_status_t sa = nnmem_problem_parent(p, i, &pa, &ra);
  nnmem_status_t sb = nnmem_problem_parent(q, i, &pb, &rb);
  return sa == sb && pa == pb && ra == rb;
}

#endif

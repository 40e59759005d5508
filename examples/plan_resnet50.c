/* plan_resnet50.c - plans the memory of the built-in ResNet-50 with the
 * public API only: zoo -> liveness -> plan -> verify -> profile.
 *
 * Usage: plan_resnet50 [batch]   (default 1) */
#include <stdio.h>
#include <stdlib.h>

#include "nnmem/nnmem.h"

static int fail(const char *what, nnmem_status_t st, const nnmem_diag_t *d) {
  fprintf(stderr, "%s: %s: %s\n", what, nnmem_status_str(st), d->message);
  return 1;
}

static double mib(uint64_t bytes) {
  return (double)bytes / (1024.0 * 1024.0);
}

int main(int argc, char **argv) {
  uint32_t batch = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1;
  nnmem_diag_t diag = {{0}};
  nnmem_graph_t *g = NULL;
  nnmem_status_t st = nnmem_zoo_build("resnet50", batch, &g, &diag);
  if (st != NNMEM_OK) return fail("zoo", st, &diag);

  nnmem_liveness_t *live = NULL;
  st = nnmem_liveness_analyze(g, NULL, &live, &diag);
  if (st != NNMEM_OK) {
    nnmem_graph_destroy(g);
    return fail("liveness", st, &diag);
  }
  const nnmem_problem_t *problem = nnmem_liveness_problem(live);

  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.alignment = 64;
  nnmem_plan_t *plan = NULL;
  st = nnmem_plan_create(problem, &cfg, &plan, &diag);
  if (st == NNMEM_OK)
    st = nnmem_plan_verify(problem, nnmem_plan_offsets(plan), cfg.alignment, 0,
                           NULL, &diag);
  nnmem_profile_t prof;
  if (st == NNMEM_OK)
    st = nnmem_profile_compute(g, live, plan, cfg.alignment, &prof);
  if (st != NNMEM_OK) {
    nnmem_plan_destroy(plan);
    nnmem_liveness_destroy(live);
    nnmem_graph_destroy(g);
    return fail("plan", st, &diag);
  }

  printf("resnet50, batch %u: %zu tensors, %zu ops, %zu buffers\n",
         batch ? batch : 1, nnmem_graph_tensor_count(g),
         nnmem_graph_op_count(g), prof.buffers);
  printf("  weights            %12llu bytes (%8.2f MiB)\n",
         (unsigned long long)prof.weight_memory, mib(prof.weight_memory));
  printf("  arena (%-14s) %10llu bytes (%8.2f MiB)\n",
         nnmem_strategy_name(prof.strategy),
         (unsigned long long)prof.arena_height, mib(prof.arena_height));
  printf("  arena lower bound  %12llu bytes (%8.2f MiB), peak at step %llu\n",
         (unsigned long long)prof.arena_lower_bound,
         mib(prof.arena_lower_bound), (unsigned long long)prof.peak_step);
  printf("  arena without reuse%12llu bytes (%8.2f MiB), reuse %.1f%%\n",
         (unsigned long long)prof.naive_arena, mib(prof.naive_arena),
         100.0 * prof.reuse_ratio);
  printf("  peak memory        %12llu bytes (%8.2f MiB)\n",
         (unsigned long long)prof.peak_memory, mib(prof.peak_memory));

  nnmem_plan_destroy(plan);
  nnmem_liveness_destroy(live);
  nnmem_graph_destroy(g);
  return 0;
}

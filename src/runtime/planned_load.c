/* planned_load.c - nnmem_planned_load: a plan JSON file to a served run
 * (nnmem/planned.h). Apart from planned.c so that a program linking the
 * plan-backed allocator statically without this function (the malloc
 * front) links no JSON reader. */
#include <stdlib.h>

#include "nnmem/io.h"
#include "nnmem/planned.h"
#include "nnmem/problem.h"

nnmem_status_t nnmem_planned_load(nnmem_allocator_t *a,
                                  const char *plan_json_path,
                                  const nnmem_planned_config_t *cfg,
                                  nnmem_planned_t **out, nnmem_diag_t *diag) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  if (!a || !plan_json_path) return NNMEM_ERR_INVALID;
  nnmem_problem_t *p = NULL;
  uint64_t *off = NULL;
  nnmem_status_t st = nnmem_plan_read_json_file(plan_json_path, &p, &off, diag);
  if (st == NNMEM_OK) st = nnmem_planned_serve(a, p, off, cfg, out, diag);
  nnmem_problem_destroy(p);
  free(off);
  return st;
}

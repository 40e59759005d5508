/* testutil.c - helpers shared by the unit tests. */
#include "testutil.h"

#include <stdlib.h>
#include <sys/stat.h>

nnmem_plan_t *tu_plan_verified(const nnmem_problem_t *p,
                               const nnmem_planner_config_t *cfg) {
  nnmem_plan_t *plan = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_plan_create(p, cfg, &plan, &diag);
  if (st != NNMEM_OK) fail_msg("plan: %s: %s", nnmem_status_name(st), diag.message);
  nnmem_verify_report_t rep;
  uint64_t align = cfg ? cfg->alignment : 0;
  uint64_t cap = cfg ? cfg->capacity : 0;
  st = nnmem_plan_verify(p, nnmem_plan_offsets(plan), align, cap, &rep, &diag);
  if (st != NNMEM_OK) fail_msg("verify: %s", diag.message);
  assert_int_equal(rep.height, nnmem_plan_height(plan));
  return plan;
}

const char *tu_data_dir(void) {
  const char *d = getenv("NNMEM_DATA_DIR");
  struct stat sb;
  if (!d || stat(d, &sb) != 0 || !S_ISDIR(sb.st_mode)) return NULL;
  return d;
}

uint64_t tu_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

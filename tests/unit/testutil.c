/* testutil.c - helpers shared by the unit tests. */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

nnmem_plan_t *tu_plan_verified(const nnmem_problem_t *p,
                               const nnmem_planner_config_t *cfg) {
  nnmem_plan_t *plan = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_plan_create(p, cfg, &plan, &diag);
  if (st != NNMEM_OK)
    fail_msg("plan: %s: %s", nnmem_status_name(st), diag.message);
  nnmem_verify_report_t rep;
  uint64_t align = cfg ? cfg->alignment : 0;
  uint64_t cap = cfg ? cfg->capacity : 0;
  st = nnmem_plan_verify(p, nnmem_plan_offsets(plan), align, cap, &rep, &diag);
  if (st != NNMEM_OK) fail_msg("verify: %s", diag.message);
  assert_int_equal(rep.height, nnmem_plan_height(plan));
  return plan;
}

uint32_t tu_add_tensor(nnmem_graph_t *g, const char *name,
                       nnmem_tensor_kind_t kind, uint64_t bytes) {
  nnmem_tensor_desc_t d = {0};
  d.name = name;
  d.kind = kind;
  d.bytes = bytes;
  uint32_t id = UINT32_MAX;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_graph_add_tensor(g, &d, &id, &diag);
  if (st != NNMEM_OK) fail_msg("add_tensor %s: %s", name, diag.message);
  return id;
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

static char tmpdir[128];

int tu_tmpdir_create(const char *name) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/nnmem_%s_XXXXXX", name);
  return mkdtemp(tmpdir) ? 0 : -1;
}

int tu_tmpdir_remove(void) {
  DIR *d = opendir(tmpdir);
  if (!d) return 0;
  char path[512];
  for (struct dirent *e; (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(tmpdir);
  return 0;
}

const char *tu_tmpdir(void) {
  return tmpdir;
}

const char *tu_tmp_path(const char *file) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, file);
  return path;
}

int tu_tmpdir_count(void) {
  DIR *d = opendir(tmpdir);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

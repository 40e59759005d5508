/* testutil.h - helpers shared by the unit tests (cmocka). */
#ifndef NNMEM_TESTUTIL_H
#define NNMEM_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "nnmem/nnmem.h"

/* Asserts a status is NNMEM_OK, printing its name otherwise. */
#define assert_ok(expr)                                                       \
  do {                                                                        \
    nnmem_status_t st_ = (expr);                                              \
    if (st_ != NNMEM_OK) fail_msg("%s -> %s", #expr, nnmem_status_name(st_)); \
  } while (0)

/* Plans `p` with `cfg`, runs the independent verifier on the result (which
 * must be valid) and returns the plan (caller destroys). */
nnmem_plan_t *tu_plan_verified(const nnmem_problem_t *p,
                               const nnmem_planner_config_t *cfg);

/* Adds a tensor (name, kind, bytes; the rest zero) to `g`, failing the test
 * with the library's message when it is refused; returns its id. */
uint32_t tu_add_tensor(nnmem_graph_t *g, const char *name,
                       nnmem_tensor_kind_t kind, uint64_t bytes);

/* The shared data folder ($NNMEM_DATA_DIR) or NULL when absent. */
const char *tu_data_dir(void);

/* A scratch directory for one test program: tu_tmpdir_create makes
 * /tmp/nnmem_<name>_XXXXXX (cmocka group setup signature: pass it through
 * a wrapper), tu_tmpdir_remove deletes it and the files in it,
 * tu_tmp_path names a file inside it (static buffer), tu_tmpdir_count
 * counts its entries (hidden ones too: a leftover ".x.tmp-XXXXXX" counts). */
int tu_tmpdir_create(const char *name);
int tu_tmpdir_remove(void);
const char *tu_tmpdir(void);
const char *tu_tmp_path(const char *file);
int tu_tmpdir_count(void);

/* Deterministic PRNG (xorshift64*). */
uint64_t tu_rand(uint64_t *state);

/* A log of the pointers a callback is handed (on_misuse,
 * on_quarantine_write): the first 16 kept, n counts them all. */
typedef struct tu_ptr_log {
  const void *p[16];
  int n;
} tu_ptr_log_t;

static inline void tu_log_ptr(void *ctx, const void *ptr) {
  tu_ptr_log_t *l = ctx;
  if (l->n < 16) l->p[l->n] = ptr;
  l->n++;
}

/* An allocator that queues frees `batch` at a time (0: none) and hands
 * its refused frees to on_misuse(ctx, ptr); the test fails when it cannot
 * be made. */
static inline nnmem_allocator_t *tu_allocator_misuse(
    uint32_t batch, void (*on_misuse)(void *ctx, const void *ptr),
    void *ctx) {
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
  cfg.free_batch = batch;
  cfg.on_misuse = on_misuse;
  cfg.misuse_ctx = ctx;
  nnmem_allocator_t *a = NULL;
  assert_ok(nnmem_allocator_create(&cfg, &a));
  return a;
}

#endif

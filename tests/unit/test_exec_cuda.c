/* test_exec_cuda.c - the GPU executor (src/fit/exec_cuda.c) over the
 * stand-in driver (tests/fakes/fake_cuda.c, path in $NNMEM_FAKE_CUDA),
 * which runs C versions of the kernels on its fake device memory and keeps
 * a virtual clock per stream (kernels take their spin cycles, copies bytes
 * / FAKE_CUDA_LINK_BW on one engine per direction).
 *
 * - fitted plans of built-in models at 75/50/25 % of their unconstrained
 *   peak (every tier's plan checked by the independent verifier when
 *   nnmem_exec_plan_parse reads it) pass on the fake GPU and on the
 *   simulated device;
 * - with the fake link at the plan's link bandwidth, the measured exposed
 *   transfer time (the compute stream's waits, from events) equals the
 *   cost model's figure computed by the fitter (fit.c), a second,
 *   independent implementation of the schedule: a missing or extra event
 *   wait changes it;
 * - a corrupted byte (cfg.corrupt_step) is found on the device and the
 *   error names the op reading it and the buffer;
 * - the N-th launch / async copy / event record failing (swept) stops the
 *   run with the CUDA error named, and every allocation, stream, event,
 *   module and pinned buffer is freed (the fake's counters);
 * - a kernel faulting asynchronously mid-run (the N-th launch, swept; the
 *   host learns of it only at a sync point): the run stops at the next
 *   sync point, before the next step's kernels, names the faulting op and
 *   the CUDA error, and frees everything; a corrupted byte stops the run
 *   within 2 x check_every + 1 steps of the op that reads it;
 * - a device too small: NNMEM_ERR_NOMEM naming free/total;
 * - a build without kernels: NNMEM_ERR_UNSUPPORTED before anything runs
 *   (the rest is skipped there);
 * - on a real GPU (libcuda.so.1 opens, a device exists; skipped otherwise):
 *   a plan passes and a corrupted byte is found. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit/exec_internal.h"
#include "nnmem/fit.h"
#include "nnmem/zoo.h"
#include "testutil.h"

static void *fake;
static long (*fake_live)(void);
static long (*fake_objects)(void);
static int (*fake_depth)(void);
static long (*fake_fault_step)(void);

static int setup(void **state) {
  (void)state;
  const char *path = getenv("NNMEM_FAKE_CUDA");
  if (!path) return -1;
  fake = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!fake) return -1;
  *(void **)&fake_live = dlsym(fake, "fake_cuda_live");
  *(void **)&fake_objects = dlsym(fake, "fake_cuda_exec_objects");
  *(void **)&fake_depth = dlsym(fake, "fake_cuda_ctx_depth");
  *(void **)&fake_fault_step = dlsym(fake, "fake_cuda_fault_step");
  setenv("FAKE_CUDA_CAPACITY", "4000000000", 1);
  return fake_live && fake_objects && fake_depth && fake_fault_step ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  if (fake) dlclose(fake);
  return 0;
}

static nnmem_backend_t *gpu(void) {
  nnmem_cuda_config_t cfg = {sizeof cfg, 0, getenv("NNMEM_FAKE_CUDA")};
  nnmem_backend_t *b = NULL;
  nnmem_diag_t d = {0};
  assert_int_equal(nnmem_backend_cuda_create(&cfg, &b, &d), NNMEM_OK);
  return b;
}

/* A fitted plan of `model` on `device` at `pct` % of its unconstrained
 * peak, written as plan JSON and read back for the executor. */
typedef struct fitted {
  nnmem_exec_plan_t *p;
  nnmem_fit_costs_t costs;
  double link;
} fitted_t;

/* `pct` <= 100: percent of the unconstrained peak; larger: bytes. */
static fitted_t fit_plan(const char *model, const char *device, uint64_t pct,
                         int offload_only) {
  nnmem_graph_t *g = NULL;
  nnmem_device_t d;
  nnmem_fit_t *f = NULL;
  nnmem_diag_t diag = {0};
  assert_int_equal(nnmem_zoo_build(model, 1, &g, &diag), NNMEM_OK);
  assert_int_equal(nnmem_device_preset(device, &d), NNMEM_OK);
  assert_int_equal(nnmem_fit(g, &d, 0, NULL, &f, &diag), NNMEM_OK);
  uint64_t limit =
      pct > 100 ? pct : nnmem_fit_unconstrained_peak(f) / 100 * pct;
  nnmem_fit_destroy(f);
  f = NULL;
  nnmem_fit_config_t fc;
  nnmem_fit_config_init(&fc);
  fc.no_stream = offload_only;
  nnmem_status_t st = nnmem_fit(g, &d, limit, &fc, &f, &diag);
  if (st != NNMEM_OK) print_message("%s: %s\n", model, diag.message);
  assert_int_equal(st, NNMEM_OK);
  fitted_t out = {0};
  nnmem_fit_costs(f, &out.costs);
  out.link = d.tiers[nnmem_device_main_tier(&d)].link_bandwidth;
  char *json = NULL;
  size_t len = 0;
  assert_int_equal(nnmem_fit_format_json(f, g, &json, &len, &diag), NNMEM_OK);
  st = nnmem_exec_plan_parse(json, len, model, &out.p, &diag);
  if (st != NNMEM_OK) print_message("%s\n", diag.message);
  assert_int_equal(st, NNMEM_OK);
  free(json);
  nnmem_fit_destroy(f);
  nnmem_graph_destroy(g);
  return out;
}

static nnmem_status_t run_gpu(const nnmem_exec_plan_t *p, double scale,
                              uint64_t corrupt, nnmem_exec_report_t *rep,
                              nnmem_diag_t *d) {
  nnmem_backend_t *b = gpu();
  nnmem_exec_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.size = sizeof cfg;
  cfg.cuda = b;
  cfg.spin_scale = scale;
  cfg.corrupt_step = corrupt;
  memset(rep, 0, sizeof *rep);
  rep->size = sizeof *rep;
  nnmem_status_t st = nnmem_exec_run(p, &cfg, rep, d);
  nnmem_backend_destroy(b);
  /* whatever happened, nothing is left behind */
  assert_int_equal(fake_live(), 0);
  assert_int_equal(fake_objects(), 0);
  assert_int_equal(fake_depth(), 0);
  return st;
}

static void set_link(double bw) {
  char v[64];
  snprintf(v, sizeof v, "%.17g", bw);
  setenv("FAKE_CUDA_LINK_BW", v, 1);
}

static void test_no_kernels(void **state) {
  (void)state;
  if (nnmem_exec_cuda_kernels()) skip();
  fitted_t f = fit_plan("mobilenetv2", "edge-npu", 50, 0);
  nnmem_exec_report_t rep;
  nnmem_diag_t d = {0};
  assert_int_equal(run_gpu(f.p, 1, 0, &rep, &d), NNMEM_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.message, "built without CUDA kernels"));
  assert_int_equal(rep.launches, 0);
  nnmem_exec_plan_destroy(f.p);
}

/* Plans at 75/50/25 % pass on the fake GPU and the simulated device; the
 * measured exposed time equals the fitter's estimate. */
static void test_models(void **state) {
  (void)state;
  if (!nnmem_exec_cuda_kernels()) skip();
  /* 25 % is below mobilenetv2's smallest footprint (30 %): 35 % there.
   * The last: resnet50 at 12 MB (10 %) offloads activations too (as in
   * test_fit's test_offload). */
  const struct {
    const char *model, *device;
    uint64_t pct[3];
  } cases[] = {{"mobilenetv2", "edge-npu", {75, 50, 35}},
               {"resnet50", "edge-npu", {75, 50, 25}},
               {"bert-base", "datacenter", {75, 50, 25}},
               {"resnet50", "edge-npu", {12000000, 12000000, 12000000}}};
  uint64_t offloads = 0;
  for (size_t m = 0; m < sizeof cases / sizeof *cases; m++)
    for (size_t k = 0; k < 3; k++) {
      if (k && cases[m].pct[k] == cases[m].pct[k - 1]) continue;
      fitted_t f =
          fit_plan(cases[m].model, cases[m].device, cases[m].pct[k], 0);
      set_link(f.link);
      nnmem_exec_report_t rep, sim;
      nnmem_diag_t d = {0};
      nnmem_status_t st = run_gpu(f.p, 1, 0, &rep, &d);
      if (st) print_message("%s\n", d.message);
      assert_int_equal(st, NNMEM_OK);
      memset(&sim, 0, sizeof sim);
      sim.size = sizeof sim;
      assert_int_equal(nnmem_exec_run(f.p, NULL, &sim, &d), NNMEM_OK);
      print_message(
          "%s on %s at %llu: %llu copies, exposed measured %.9f s, "
          "fitter %.9f s, timeline %.9f s\n",
          cases[m].model, cases[m].device, (unsigned long long)cases[m].pct[k],
          (unsigned long long)rep.copies, rep.wait_s, f.costs.exposed_s,
          rep.est_exposed_s);
      assert_int_equal(rep.steps, nnmem_exec_plan_steps(f.p));
      assert_int_equal(rep.copies, sim.copies); /* every transfer issued */
      assert_int_equal(rep.copy_bytes, f.costs.transfer_bytes);
      double tol = 1e-6 + 1e-4 * f.costs.exposed_s;
      uint64_t outs = 0;
      for (size_t i = 0; i < f.p->n_copies; i++)
        outs += !f.p->copies[i].in;
      offloads += outs;
      /* The estimate is the fitter's own timeline (earliest deadline
       * first on each link) and the executor feeds each copy stream in
       * the order that timeline begins the copies, so the measurement
       * equals it, except where a copy in must wait for a copy out due at
       * the same step that still reads its device bytes: the cost model
       * lets both run (resnet50 at 12 MB: 24 us of 24.7 ms). */
      assert_true(fabs(rep.est_exposed_s - f.costs.exposed_s) <= tol);
      assert_true(rep.wait_s >= f.costs.exposed_s - tol);
      assert_true(rep.wait_s <= f.costs.exposed_s * (outs ? 1.01 : 1) + tol);
      assert_true(fabs(rep.kernel_s - f.costs.compute_s) <=
                  1e-6 + 1e-4 * f.costs.compute_s);
      assert_true(rep.gap_s <= 1e-9); /* no launch gaps on the fake */
      nnmem_exec_plan_destroy(f.p);
    }
  print_message("%llu copies out in all\n", (unsigned long long)offloads);
  assert_true(offloads > 0); /* the offload path ran */
  unsetenv("FAKE_CUDA_LINK_BW");
}

/* Op times scaled: kernels take longer, fewer copies stay exposed; the
 * measurement still follows the model's timeline at that scale. */
static void test_spin_scale(void **state) {
  (void)state;
  if (!nnmem_exec_cuda_kernels()) skip();
  fitted_t f = fit_plan("resnet50", "edge-npu", 50, 0);
  set_link(f.link);
  double prev = INFINITY;
  const double scales[] = {0.5, 1, 4};
  for (size_t i = 0; i < 3; i++) {
    nnmem_exec_report_t rep;
    nnmem_diag_t d = {0};
    assert_int_equal(run_gpu(f.p, scales[i], 0, &rep, &d), NNMEM_OK);
    print_message("scale %.1f: compute %.6f s, exposed %.6f s (model %.6f)\n",
                  scales[i], rep.kernel_s, rep.wait_s, rep.est_exposed_s);
    assert_true(fabs(rep.kernel_s - scales[i] * f.costs.compute_s) <=
                1e-6 + 1e-4 * rep.kernel_s);
    assert_true(fabs(rep.wait_s - rep.est_exposed_s) <=
                1e-6 + 1e-4 * rep.est_exposed_s);
    assert_true(rep.wait_s <= prev + 1e-9);
    prev = rep.wait_s;
  }
  unsetenv("FAKE_CUDA_LINK_BW");
  nnmem_exec_plan_destroy(f.p);
}

/* A byte overwritten after step N-1's op: found by the kernel that reads
 * it; the error names an op and the corrupted buffer. */
static void test_corruption(void **state) {
  (void)state;
  if (!nnmem_exec_cuda_kernels()) skip();
  fitted_t f = fit_plan("mobilenetv2", "edge-npu", 50, 0);
  uint64_t steps = nnmem_exec_plan_steps(f.p), found = 0;
  for (uint64_t n = 1; n <= steps; n += 13) {
    const exec_step_t *e = &f.p->step[n - 1];
    if (!e->n_writes) continue;
    const char *id = nnmem_problem_id(f.p->tiers[e->writes[0].tier].problem,
                                      e->writes[0].buffer);
    nnmem_exec_report_t rep;
    nnmem_diag_t d = {0};
    assert_int_equal(run_gpu(f.p, 1, n, &rep, &d), NNMEM_ERR_CONFLICT);
    char want[160];
    snprintf(want, sizeof want, "buffer '%s'", id);
    if (n == 1) print_message("%s\n", d.message);
    assert_non_null(strstr(d.message, want));
    assert_non_null(strstr(d.message, "found on the GPU"));
    assert_true(strstr(d.message, ": op ") ||
                strstr(d.message, "graph output"));
    /* found at a sync point mid-run, not after the last step */
    unsigned rd = 0;
    unsigned long long at = 0, of = 0;
    assert_int_equal(sscanf(d.message, "step %u:", &rd), 1);
    const char *sp = strstr(d.message, "at the sync point before step ");
    if (rd + 2 * NNMEM_EXEC_CHECK_EVERY + 1 < steps) {
      assert_non_null(sp);
      assert_int_equal(sscanf(sp, "at the sync point before step %llu of %llu",
                              &at, &of),
                       2);
      assert_int_equal(of, steps);
      assert_true(at > rd && at <= rd + 2 * NNMEM_EXEC_CHECK_EVERY + 1);
    }
    found++;
  }
  assert_true(found >= 5);
  nnmem_exec_plan_destroy(f.p);
}

/* The N-th launch, async copy or event record fails: swept. */
static void sweep(const nnmem_exec_plan_t *p, const char *var, long upto,
                  long stride, const char *err) {
  long failed = 0;
  for (long n = 1; n <= upto; n += stride) {
    char v[32];
    snprintf(v, sizeof v, "%ld", n);
    setenv(var, v, 1);
    nnmem_exec_report_t rep;
    nnmem_diag_t d = {0};
    nnmem_status_t st = run_gpu(p, 1, 0, &rep, &d);
    if (st == NNMEM_OK) continue; /* fewer than n calls */
    assert_int_equal(st, NNMEM_ERR_IO);
    assert_non_null(strstr(d.message, err));
    assert_non_null(strstr(d.message, "everything freed"));
    if (failed == 0) print_message("%s=%ld: %s\n", var, n, d.message);
    failed++;
  }
  unsetenv(var);
  assert_true(failed >= 3);
}

static void test_injected_failures(void **state) {
  (void)state;
  if (!nnmem_exec_cuda_kernels()) skip();
  fitted_t f = fit_plan("mobilenetv2", "edge-npu", 35, 0);
  uint64_t steps = nnmem_exec_plan_steps(f.p);
  assert_true(f.p->n_copies >= 3);
  sweep(f.p, "FAKE_CUDA_FAIL_LAUNCH", (long)(2 * steps + 4), 41,
        "CUDA_ERROR_LAUNCH_FAILED");
  sweep(f.p, "FAKE_CUDA_FAIL_COPY", (long)f.p->n_copies + 1,
        f.p->n_copies > 40 ? 37 : 1, "CUDA_ERROR_ILLEGAL_ADDRESS");
  sweep(f.p, "FAKE_CUDA_FAIL_EVENT", (long)(2 * steps + 2 * f.p->n_copies + 6),
        97, "CUDA_ERROR_INVALID_HANDLE");
  nnmem_exec_plan_destroy(f.p);
}

/* The N-th launch faults asynchronously (an illegal address inside the
 * kernel; the launch itself succeeds): swept over every launch of a run. */
static void test_async_fault(void **state) {
  (void)state;
  if (!nnmem_exec_cuda_kernels()) skip();
  fitted_t f = fit_plan("mobilenetv2", "edge-npu", 35, 0);
  uint64_t steps = nnmem_exec_plan_steps(f.p);
  nnmem_exec_report_t rep;
  nnmem_diag_t d = {0};
  assert_int_equal(run_gpu(f.p, 1, 0, &rep, &d), NNMEM_OK);
  long all = (long)rep.launches, named = 0, mid = 0;
  assert_true(all > 2 * (long)steps / 2);
  for (long n = 1; n <= all;
       n = n < 8 || n >= all - 4 ? n + 1 : (n + 17 < all - 4 ? n + 17 : all - 4)) {
    char v[32];
    snprintf(v, sizeof v, "%ld", n);
    setenv("FAKE_CUDA_FAULT_LAUNCH", v, 1);
    memset(&d, 0, sizeof d);
    nnmem_status_t st = run_gpu(f.p, 1, 0, &rep, &d);
    long k = fake_fault_step();
    unsetenv("FAKE_CUDA_FAULT_LAUNCH");
    if (st == NNMEM_OK) print_message("fault at launch %ld: %s\n", n, "ok?");
    assert_int_equal(st, NNMEM_ERR_IO);
    assert_non_null(strstr(d.message, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    assert_non_null(strstr(d.message, "everything freed"));
    /* no kernel of a later step was launched: a step launches at most a
     * check and a write kernel */
    assert_true((long)rep.launches <= n + 1);
    if (k >= 0 && (uint64_t)k < steps) {
      char want[160];
      snprintf(want, sizeof want, "step %ld (op %s)", k, f.p->step[k].op);
      if (!strstr(d.message, want))
        print_message("launch %ld: want '%s' in: %s\n", n, want, d.message);
      assert_non_null(strstr(d.message, want));
      assert_true((long)rep.launches < all);
      if (mid++ == 0) print_message("launch %ld: %s\n", n, d.message);
      named++;
    } else if (n == all) { /* the graph outputs' check */
      print_message("launch %ld (last): %s\n", n, d.message);
      assert_non_null(strstr(d.message, "after the last step"));
    }
  }
  assert_true(named >= 10);
  /* a device that lags the host (every event query pending): the host
   * learns at its wait for done(s - E), E = check_every; the message names
   * the steps in flight, the faulting one among them, at most E + 1 */
  setenv("FAKE_CUDA_QUERY_PENDING", "1", 1);
  uint32_t every = NNMEM_EXEC_CHECK_EVERY;
  long ranged = 0;
  for (long n = 20; n <= all - 20; n += 23) {
    char v[32];
    snprintf(v, sizeof v, "%ld", n);
    setenv("FAKE_CUDA_FAULT_LAUNCH", v, 1);
    memset(&d, 0, sizeof d);
    nnmem_status_t st = run_gpu(f.p, 1, 0, &rep, &d);
    long k = fake_fault_step();
    unsetenv("FAKE_CUDA_FAULT_LAUNCH");
    assert_int_equal(st, NNMEM_ERR_IO);
    assert_non_null(strstr(d.message, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    if (k < 0 || (uint64_t)k >= steps) continue;
    unsigned long long a = 0, b = 0;
    const char *at = strstr(d.message, "steps ");
    if (at && sscanf(at, "steps %llu..%llu", &a, &b) == 2) {
      if (ranged++ == 0) print_message("lagging, launch %ld: %s\n", n, d.message);
    } else {
      assert_int_equal(sscanf(d.message, "step %llu", &a), 1);
      b = a;
    }
    assert_true(a <= (unsigned long long)k && (unsigned long long)k <= b);
    assert_true(b - a <= every);
    assert_true((long)rep.launches < all);
  }
  unsetenv("FAKE_CUDA_QUERY_PENDING");
  assert_true(ranged >= 3);
  nnmem_exec_plan_destroy(f.p);
}

static void test_too_small(void **state) {
  (void)state;
  if (!nnmem_exec_cuda_kernels()) skip();
  fitted_t f = fit_plan("mobilenetv2", "edge-npu", 50, 0);
  setenv("FAKE_CUDA_CAPACITY", "1000000", 1);
  nnmem_exec_report_t rep;
  nnmem_diag_t d = {0};
  assert_int_equal(run_gpu(f.p, 1, 0, &rep, &d), NNMEM_ERR_NOMEM);
  print_message("%s\n", d.message);
  assert_non_null(strstr(d.message, "1000000 B free of 1000000 B"));
  assert_int_equal(rep.launches, 0);
  setenv("FAKE_CUDA_CAPACITY", "4000000000", 1);
  /* not a cuda backend */
  nnmem_backend_t *host = NULL;
  assert_int_equal(nnmem_backend_host_create(&host), NNMEM_OK);
  nnmem_exec_config_t cfg = {.size = sizeof cfg, .cuda = host};
  assert_int_not_equal(nnmem_exec_run(f.p, &cfg, NULL, &d), NNMEM_OK);
  nnmem_backend_destroy(host);
  nnmem_exec_plan_destroy(f.p);
}

/* The real driver, when there is one (scripts/gpu-check.sh): a fitted
 * plan passes on the GPU and a corrupted byte is found there. */
static void test_real_device(void **state) {
  (void)state;
  nnmem_cuda_config_t cc = {sizeof cc, 0, "libcuda.so.1"};
  nnmem_backend_t *b = NULL;
  nnmem_diag_t d = {0};
  if (!nnmem_exec_cuda_kernels() ||
      nnmem_backend_cuda_create(&cc, &b, &d) != NNMEM_OK) {
    print_message("no GPU here: %s\n", d.message);
    skip();
  }
  fitted_t f = fit_plan("resnet50", "edge-npu", 50, 0);
  nnmem_exec_config_t cfg = {.size = sizeof cfg, .cuda = b};
  nnmem_exec_report_t rep = {.size = sizeof rep};
  nnmem_status_t st = nnmem_exec_run(f.p, &cfg, &rep, &d);
  if (st) print_message("%s\n", d.message);
  assert_int_equal(st, NNMEM_OK);
  print_message(
      "%s: exposed measured %.6f s, model %.6f s; kernels %.6f s "
      "(model %.6f s), link %.3g B/s, clock %.3g Hz\n",
      nnmem_backend_cuda_device_name(b), rep.wait_s, rep.est_exposed_s,
      rep.kernel_s, rep.est_compute_s, rep.link_bytes_per_s, rep.cycles_per_s);
  cfg.corrupt_step = 3;
  assert_int_equal(nnmem_exec_run(f.p, &cfg, &rep, &d), NNMEM_ERR_CONFLICT);
  print_message("%s\n", d.message);
  assert_non_null(strstr(d.message, "found on the GPU"));
  nnmem_backend_destroy(b);
  nnmem_exec_plan_destroy(f.p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_kernels),
      cmocka_unit_test(test_models),
      cmocka_unit_test(test_spin_scale),
      cmocka_unit_test(test_corruption),
      cmocka_unit_test(test_injected_failures),
      cmocka_unit_test(test_async_fault),
      cmocka_unit_test(test_too_small),
      cmocka_unit_test(test_real_device),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_fit.c - device descriptions, the cost model, fitting under a limit
 * and the executor (nnmem/fit.h).
 *
 * Every fit is checked independently: each tier's plan goes through
 * nnmem_plan_verify with the tier's alignment and capacity, the main tier's
 * height is compared with the limit, and the plan JSON is read back and
 * executed with real bytes (the executor must pass and move exactly the
 * bytes the cost model counts). Hand-computed values: the FLOPs of a Conv
 * and a MatMul, the smallest footprint of a chain. Failure paths: bad
 * device files (file and field named), an impossible limit, fault
 * injection swept over every allocation and the first copies, a corrupted
 * plan, a plan of another model, an executed read of unwritten bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit/exec_digest.h"
#include "testutil.h"

/* A device with alignment 1 everywhere (exact sizes for hand checks). */
static nnmem_device_t plain_device(uint64_t cap) {
  nnmem_device_t d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "plain");
  d.n_tiers = 2;
  snprintf(d.tiers[0].name, sizeof d.tiers[0].name, "ddr");
  d.tiers[0].capacity = cap;
  d.tiers[0].alignment = 1;
  d.tiers[0].bandwidth = 1e9;
  d.tiers[0].link_bandwidth = 1e8;
  snprintf(d.tiers[1].name, sizeof d.tiers[1].name, "host");
  d.tiers[1].alignment = 1;
  d.tiers[1].bandwidth = 1e9;
  d.compute_rate = 1e9;
  return d;
}

static void test_presets(void **state) {
  (void)state;
  size_t n = 0;
  const char *const *names = nnmem_device_preset_names(&n);
  assert_int_equal(n, 3);
  for (size_t i = 0; i < n; i++) {
    nnmem_device_t d;
    assert_ok(nnmem_device_preset(names[i], &d));
    assert_ok(nnmem_device_check(&d, NULL));
    assert_true(d.tiers[nnmem_device_main_tier(&d)].capacity > 0);
  }
  nnmem_device_t d;
  assert_int_equal(nnmem_device_preset("gpu9000", &d), NNMEM_ERR_NOT_FOUND);
}

static void test_device_json(void **state) {
  (void)state;
  const char *doc =
      "{\"name\": \"mini\", \"compute_rate\": 2e12, \"alignment\": 128,"
      " \"conv_algorithm\": \"im2col\", \"tiers\": ["
      " {\"name\": \"sram\", \"capacity\": 1048576, \"bandwidth\": 1e11,"
      "  \"link_bandwidth\": 2e10},"
      " {\"name\": \"ddr\", \"capacity\": 536870912, \"alignment\": 64,"
      "  \"bandwidth\": 2e10, \"link_bandwidth\": 2e9},"
      " {\"name\": \"host\"}]}";
  nnmem_device_t d;
  assert_ok(nnmem_device_parse_json(doc, strlen(doc), "mini.json", &d, NULL));
  assert_string_equal(d.name, "mini");
  assert_int_equal(d.n_tiers, 3);
  assert_int_equal(d.tiers[0].capacity, 1048576);
  assert_int_equal(d.tiers[0].alignment, 128); /* the device default */
  assert_int_equal(d.tiers[1].alignment, 64);
  assert_int_equal(d.conv, NNMEM_CONV_IM2COL);
  assert_int_equal(nnmem_device_main_tier(&d), 1);
}

static void test_device_json_bad(void **state) {
  (void)state;
  static const struct {
    const char *doc, *expect;
  } cases[] = {
      {"{\"compute_rate\": 1e12, \"tiers\": [{\"name\": \"ddr\"}, {\"name\": "
       "\"host\"}]}",
       "bad.json: tiers[0].capacity: missing"},
      {"{\"compute_rate\": 1e12, \"tiers\": [{\"name\": \"ddr\", "
       "\"capacity\": -5}, {\"name\": \"host\"}]}",
       "bad.json: tiers[0].capacity: must be >= 0 bytes (got -5)"},
      {"{\"compute_rate\": 1e12, \"tiers\": [{\"name\": \"ddr\", "
       "\"capacity\": 100, \"bandwidth\": 0}, {\"name\": \"host\"}]}",
       "bad.json: tiers[0].bandwidth: must be > 0 (got 0)"},
      {"{\"compute_rate\": 1e12, \"tiers\": [{\"name\": \"ddr\", "
       "\"capacity\": 100, \"link_bandwidth\": 1e9}, {\"name\": \"moon\"}]}",
       "bad.json: tiers[1].name: unknown tier 'moon'"},
      {"{\"compute_rate\": 1e12, \"tiers\": [{\"name\": \"ddr\", "
       "\"capacty\": 100}, {\"name\": \"host\"}]}",
       "bad.json: tiers[0].capacty: unknown field"},
      {"{\"compute_rate\": 1e12, \"tiers\": [{\"name\": \"host\"}, "
       "{\"name\": \"ddr\", \"capacity\": 100}]}",
       "bad.json: tiers[0].name: 'host' cannot be tier 0 of 2"},
      {"{\"compute_rate\": 1e12, \"tiers\": [{\"name\": \"ddr\", "
       "\"capacity\": 100}, {\"name\": \"host\"}]}",
       "bad.json: tiers[0].link_bandwidth: must be > 0"},
      {"{\"compute_rate\": 1e12, \"tiers\": [{\"name\": \"ddr\", "
       "\"capacity\": 9007199254740992}, {\"name\": \"host\"}]}",
       "bad.json: tiers[0].capacity: must be a whole number of bytes below "
       "2^53 (got 9.0072e+15)"},
      {"{\"tiers\": []}", "bad.json: compute_rate: missing"},
      {"{\"compute_rate\": 0, \"tiers\": []}",
       "bad.json: compute_rate: must be > 0"},
      {"{\"compute_rate\": 1", "bad.json: not valid JSON"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nnmem_device_t d;
    nnmem_diag_t diag = {{0}};
    nnmem_status_t st = nnmem_device_parse_json(
        cases[i].doc, strlen(cases[i].doc), "bad.json", &d, &diag);
    assert_true(st != NNMEM_OK);
    if (!strstr(diag.message, cases[i].expect))
      fail_msg("case %zu: '%s' lacks '%s'", i, diag.message, cases[i].expect);
  }
}

static uint32_t shaped(nnmem_graph_t *g, const char *name,
                       nnmem_tensor_kind_t kind, uint32_t rank,
                       const int64_t *shape) {
  nnmem_tensor_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.kind = kind;
  d.dtype = NNMEM_DTYPE_FLOAT32;
  d.rank = rank;
  d.shape = shape;
  uint32_t id;
  assert_ok(nnmem_graph_add_tensor(g, &d, &id, NULL));
  return id;
}

static void add_op(nnmem_graph_t *g, const char *name, const char *type,
                   const uint32_t *in, uint32_t nin, uint32_t out) {
  nnmem_op_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.type = type;
  d.inputs = in;
  d.n_inputs = nin;
  d.outputs = &out;
  d.n_outputs = 1;
  assert_ok(nnmem_graph_add_op(g, &d, NULL, NULL));
}

/* Conv 3->8 channels, 3x3 kernel, 4x4 output: 2 * 128 * 27 = 6912 FLOPs;
 * MatMul [2,5] x [5,3]: 2 * 6 * 5 = 60; im2col 27 * 16 * 4 B = 1728 B. */
static void test_cost_by_hand(void **state) {
  (void)state;
  nnmem_graph_t *g;
  assert_ok(nnmem_graph_create("cost", &g));
  int64_t xs[4] = {1, 3, 6, 6}, ws[4] = {8, 3, 3, 3}, ys[4] = {1, 8, 4, 4};
  int64_t as[2] = {2, 5}, bs[2] = {5, 3}, cs[2] = {2, 3};
  uint32_t x = shaped(g, "x", NNMEM_TENSOR_INPUT, 4, xs);
  uint32_t w = shaped(g, "w", NNMEM_TENSOR_WEIGHT, 4, ws);
  uint32_t y = shaped(g, "y", NNMEM_TENSOR_OUTPUT, 4, ys);
  uint32_t a = shaped(g, "a", NNMEM_TENSOR_INPUT, 2, as);
  uint32_t b = shaped(g, "b", NNMEM_TENSOR_WEIGHT, 2, bs);
  uint32_t c = shaped(g, "c", NNMEM_TENSOR_OUTPUT, 2, cs);
  uint32_t in1[2] = {x, w}, in2[2] = {a, b};
  add_op(g, "conv", "Conv", in1, 2, y);
  add_op(g, "mm", "MatMul", in2, 2, c);
  nnmem_device_t d = plain_device(1 << 20);
  d.conv = NNMEM_CONV_IM2COL;
  d.op_overhead_s = 1e-6;
  nnmem_op_cost_t oc;
  assert_ok(nnmem_op_cost(g, 0, &d, &oc));
  assert_true(oc.flops == 6912.0);
  assert_int_equal(oc.bytes, (108 + 216 + 128) * 4);
  assert_int_equal(oc.workspace, 27 * 16 * 4);
  /* memory bound: 1808 B at 1e9 B/s = 1.808 us > 6.912 us? no: compute */
  double expect = 6912.0 / 1e9 + 1e-6;
  assert_true(oc.seconds > expect * 0.999999 && oc.seconds < expect * 1.000001);
  assert_ok(nnmem_op_cost(g, 1, &d, &oc));
  assert_true(oc.flops == 60.0);
  assert_int_equal(oc.workspace, 0);
  nnmem_graph_destroy(g);
}

/* in(100) -op1(w 1000)-> a(200) -op2-> out(50): op1 needs 1300 B at once. */
/* in (100 B) + w (1000 B) -> op1 (Gemm) -> a (200 B) -> op2 (Relu) -> out
 * (50 B): shapeless tensors, so op times come from bytes alone. */
static nnmem_graph_t *gemm_relu_chain(void) {
  nnmem_graph_t *g;
  assert_ok(nnmem_graph_create("chain", &g));
  uint32_t in = tu_add_tensor(g, "in", NNMEM_TENSOR_INPUT, 100);
  uint32_t w = tu_add_tensor(g, "w", NNMEM_TENSOR_WEIGHT, 1000);
  uint32_t a = tu_add_tensor(g, "a", NNMEM_TENSOR_ACTIVATION, 200);
  uint32_t out = tu_add_tensor(g, "out", NNMEM_TENSOR_OUTPUT, 50);
  uint32_t i1[2] = {in, w}, i2[1] = {a};
  add_op(g, "op1", "Gemm", i1, 2, a);
  add_op(g, "op2", "Relu", i2, 1, out);
  return g;
}

static void test_min_footprint_by_hand(void **state) {
  (void)state;
  nnmem_graph_t *g = gemm_relu_chain();
  nnmem_device_t d = plain_device(1 << 20);
  nnmem_fit_t *f = NULL;
  nnmem_diag_t diag = {{0}};
  assert_int_equal(nnmem_fit(g, &d, 1299, NULL, &f, &diag), NNMEM_ERR_CAPACITY);
  assert_null(f);
  assert_non_null(strstr(diag.message,
                         "the smallest device footprint for "
                         "this model is 1300 bytes (op op1"));
  assert_ok(nnmem_fit(g, &d, 1300, NULL, &f, NULL));
  uint32_t op = 99;
  assert_int_equal(nnmem_fit_min_footprint(f, &op), 1300);
  assert_int_equal(op, 0);
  /* unconstrained: w 1000 + in 100 + a 200 live together = 1300 */
  assert_int_equal(nnmem_fit_unconstrained_peak(f), 1300);
  nnmem_fit_destroy(f);
  nnmem_graph_destroy(g);
}

/* Each tier verified; JSON read back, run with real bytes. */
static void check_fit(const nnmem_fit_t *f, const nnmem_graph_t *g,
                      uint64_t limit) {
  const nnmem_device_t *d = nnmem_fit_device(f);
  uint32_t m = nnmem_device_main_tier(d);
  for (uint32_t t = 0; t < d->n_tiers; t++) {
    const nnmem_problem_t *p = nnmem_fit_tier_problem(f, t);
    const nnmem_plan_t *pl = nnmem_fit_tier_plan(f, t);
    uint64_t cap = t == m               ? limit
                   : t + 1 < d->n_tiers ? d->tiers[t].capacity
                                        : 0;
    assert_ok(nnmem_plan_verify(p, nnmem_plan_offsets(pl),
                                d->tiers[t].alignment, cap, NULL, NULL));
  }
  assert_true(nnmem_plan_height(nnmem_fit_tier_plan(f, m)) <= limit);
  char *text = NULL;
  size_t len = 0;
  assert_ok(nnmem_fit_format_json(f, g, &text, &len, NULL));
  /* the classic plan JSON reader sees the main tier (old consumers) */
  nnmem_problem_t *cp_prob = NULL;
  uint64_t *cp_offs = NULL;
  assert_ok(
      nnmem_plan_read_json(text, len, "fit.json", &cp_prob, &cp_offs, NULL));
  assert_int_equal(nnmem_problem_count(cp_prob),
                   nnmem_problem_count(nnmem_fit_tier_problem(f, m)));
  assert_ok(nnmem_plan_verify(cp_prob, cp_offs, d->tiers[m].alignment, limit,
                              NULL, NULL));
  nnmem_problem_destroy(cp_prob);
  free(cp_offs);
  nnmem_exec_plan_t *ep = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_exec_plan_parse(text, len, "fit.json", &ep, &diag);
  if (st != NNMEM_OK) fail_msg("parse: %s", diag.message);
  assert_ok(nnmem_exec_plan_match(ep, g, NULL));
  nnmem_exec_report_t rep;
  memset(&rep, 0, sizeof rep);
  rep.size = sizeof rep;
  st = nnmem_exec_run(ep, NULL, &rep, &diag);
  if (st != NNMEM_OK) fail_msg("run: %s", diag.message);
  nnmem_fit_costs_t c;
  nnmem_fit_costs(f, &c);
  const nnmem_fit_copy_t *cp;
  assert_int_equal(rep.copies, nnmem_fit_copies(f, &cp));
  nnmem_fit_floor_t fl; /* lower bounds: never above the fit itself */
  assert_ok(nnmem_fit_floor(f, &fl));
  assert_true(fl.link_s >= 0 && fl.memory_s >= 0);
  assert_true(fl.link_s <= c.exposed_s * (1 + 1e-9) + 1e-12);
  assert_true(fl.memory_s <= c.exposed_s * (1 + 1e-9) + 1e-12);
  assert_int_equal(rep.copy_bytes, c.transfer_bytes);
  assert_int_equal(rep.steps, nnmem_fit_steps(f));
  assert_true(rep.tier_bytes[m] <= limit);
  nnmem_exec_plan_destroy(ep);
  free(text);
}

/* What a fitted plan's JSON cannot hold, found by fuzz_device (a fit was
 * written, then refused by nnmem run): byte counts of 2^53 or more (a
 * 1e17-byte tier) and op times over NNMEM_FIT_OP_SECONDS_MAX (a compute
 * rate of 4.6e-5 FLOP/s). A device with such a capacity or alignment is
 * refused, a limit above NNMEM_FIT_LIMIT_MAX is taken as it (the plan
 * runs), and a fit whose op times are out of range is refused naming the
 * op. */
static nnmem_graph_t *late_weight_chain(void);

static void test_out_of_range_devices(void **state) {
  (void)state;
  nnmem_graph_t *g = gemm_relu_chain();
  nnmem_device_t d = plain_device(1 << 20);
  nnmem_fit_t *f = NULL;
  nnmem_diag_t diag = {{0}};
  assert_ok(nnmem_fit(g, &d, UINT64_MAX, NULL, &f, NULL));
  assert_int_equal(nnmem_fit_limit(f), NNMEM_FIT_LIMIT_MAX);
  check_fit(f, g, NNMEM_FIT_LIMIT_MAX); /* written, read back and run */
  nnmem_fit_destroy(f);
  f = NULL;
  nnmem_device_t big = plain_device(1ull << 53);
  assert_int_equal(nnmem_device_check(&big, &diag), NNMEM_ERR_INVALID);
  assert_non_null(strstr(diag.message, "tiers[0].capacity: 9007199254740992"));
  assert_int_equal(nnmem_fit(g, &big, 0, NULL, &f, &diag), NNMEM_ERR_INVALID);
  assert_null(f);
  big = plain_device(1 << 20);
  big.tiers[1].alignment = 1ull << 53;
  assert_int_equal(nnmem_device_check(&big, &diag), NNMEM_ERR_INVALID);
  assert_non_null(strstr(diag.message, "tiers[1].alignment"));
  nnmem_device_t slow = plain_device(1 << 20);
  slow.tiers[0].bandwidth = 1e-3; /* op1 moves 1,300 B: 1.3e6 s */
  assert_ok(nnmem_device_check(&slow, NULL));
  assert_int_equal(nnmem_fit(g, &slow, 0, NULL, &f, &diag), NNMEM_ERR_INVALID);
  assert_null(f);
  if (!strstr(diag.message, "op 'op1' (Gemm): the cost model gives"))
    fail_msg("slow device: %s", diag.message);
  /* an on-chip tier of 0.002 B/s (fuzz_device): the op times are set
   * again once values sit on chip, and checked again */
  nnmem_device_t chip;
  assert_ok(nnmem_device_preset("edge-npu", &chip));
  chip.tiers[0].bandwidth = 0.002;
  nnmem_graph_t *big_g = late_weight_chain();
  assert_int_equal(nnmem_fit(big_g, &chip, 0, NULL, &f, &diag),
                   NNMEM_ERR_INVALID);
  assert_null(f);
  if (!strstr(diag.message, "sram bandwidth 0.002 B/s"))
    fail_msg("slow sram: %s", diag.message);
  nnmem_graph_destroy(big_g);
  nnmem_graph_destroy(g);
}

static void test_zoo_limits(void **state) {
  (void)state;
  const char *models[] = {"resnet50", "mobilenetv2", "bert-base"};
  const int pct[] = {75, 50, 25};
  nnmem_device_t d;
  assert_ok(nnmem_device_preset("edge-npu", &d));
  for (size_t i = 0; i < 3; i++) {
    nnmem_graph_t *g;
    assert_ok(nnmem_zoo_build(models[i], 1, &g, NULL));
    nnmem_fit_t *f = NULL;
    assert_ok(nnmem_fit(g, &d, UINT64_MAX / 4, NULL, &f, NULL));
    uint64_t peak = nnmem_fit_unconstrained_peak(f);
    uint64_t minf = nnmem_fit_min_footprint(f, NULL);
    assert_int_equal(nnmem_fit_copies(f, NULL), 0); /* nothing had to move */
    nnmem_fit_destroy(f);
    for (size_t k = 0; k < 3; k++) {
      uint64_t limit = peak / 100 * (uint64_t)pct[k];
      if (limit < minf + minf / 4) limit = minf + minf / 4;
      nnmem_diag_t diag = {{0}};
      nnmem_status_t st = nnmem_fit(g, &d, limit, NULL, &f, &diag);
      if (st != NNMEM_OK)
        fail_msg("%s at %d%%: %s", models[i], pct[k], diag.message);
      check_fit(f, g, limit);
      nnmem_fit_costs_t c;
      nnmem_fit_costs(f, &c);
      assert_true(c.transfer_bytes > 0); /* the limit forced moves */
      printf("%s %d%%: limit %llu, %zu moves, %llu B moved\n", models[i],
             pct[k], (unsigned long long)limit, nnmem_fit_moves(f, NULL),
             (unsigned long long)c.transfer_bytes);
      nnmem_fit_destroy(f);
    }
    nnmem_graph_destroy(g);
  }
}

/* The choice among stream windows (fit.c step 8) against fits made with one
 * window bound each (cfg.max_ahead): the default fit is never slower than
 * the shortest-window fit, moves at most 5 % more bytes than the fewest of
 * them, and is one of them (same bytes and exposed time); copies are
 * listed by issue step, earliest deadline first within a step; the run
 * passes. */
static void test_window_choice(void **state) {
  (void)state;
  nnmem_device_t d;
  assert_ok(nnmem_device_preset("edge-npu", &d));
  nnmem_graph_t *g;
  assert_ok(nnmem_zoo_build("mobilenetv2", 1, &g, NULL));
  nnmem_fit_t *f = NULL;
  assert_ok(nnmem_fit(g, &d, UINT64_MAX / 4, NULL, &f, NULL));
  uint64_t peak = nnmem_fit_unconstrained_peak(f);
  uint64_t minf = nnmem_fit_min_footprint(f, NULL);
  nnmem_fit_destroy(f);
  const uint32_t aheads[] = {1, 4, 12};
  for (int pct = 50; pct >= 30; pct -= 20) {
    uint64_t limit = peak / 100 * (uint64_t)pct;
    if (limit < minf + minf / 4) limit = minf + minf / 4;
    nnmem_fit_costs_t c[3], best;
    uint64_t fewest = UINT64_MAX;
    int found = 0;
    for (size_t i = 0; i < 3; i++) {
      nnmem_fit_config_t cfg;
      nnmem_fit_config_init(&cfg);
      cfg.max_ahead = aheads[i];
      assert_ok(nnmem_fit(g, &d, limit, &cfg, &f, NULL));
      check_fit(f, g, limit);
      nnmem_fit_costs(f, &c[i]);
      if (c[i].transfer_bytes < fewest) fewest = c[i].transfer_bytes;
      nnmem_fit_destroy(f);
    }
    assert_ok(nnmem_fit(g, &d, limit, NULL, &f, NULL));
    check_fit(f, g, limit);
    nnmem_fit_costs(f, &best);
    const nnmem_fit_copy_t *cp;
    size_t n = nnmem_fit_copies(f, &cp);
    for (size_t i = 1; i < n; i++)
      assert_true(cp[i - 1].start < cp[i].start ||
                  (cp[i - 1].start == cp[i].start &&
                   cp[i - 1].done <= cp[i].done));
    nnmem_fit_destroy(f);
    assert_true(best.exposed_s <= c[0].exposed_s);
    assert_true((double)best.transfer_bytes <= 1.05 * (double)fewest);
    for (size_t i = 0; i < 3; i++)
      found |= best.transfer_bytes == c[i].transfer_bytes &&
               best.exposed_s == c[i].exposed_s;
    assert_true(found);
    printf("mobilenetv2 %d%%: exposed %.3f ms (windows 1/4/12: %.3f %.3f "
           "%.3f), bytes %llu\n",
           pct, best.exposed_s * 1e3, c[0].exposed_s * 1e3,
           c[1].exposed_s * 1e3, c[2].exposed_s * 1e3,
           (unsigned long long)best.transfer_bytes);
  }
  nnmem_graph_destroy(g);
}

/* On-chip placement: with the sram tier some buffers live there, its plan
 * fits its capacity, the estimated compute time drops, the run passes. */
static void test_onchip(void **state) {
  (void)state;
  nnmem_graph_t *g;
  assert_ok(nnmem_zoo_build("resnet50", 1, &g, NULL));
  nnmem_device_t d;
  assert_ok(nnmem_device_preset("edge-npu", &d));
  nnmem_fit_config_t cfg;
  nnmem_fit_config_init(&cfg);
  uint64_t limit = 40u * 1000 * 1000;
  nnmem_fit_t *with = NULL, *without = NULL;
  assert_ok(nnmem_fit(g, &d, limit, &cfg, &with, NULL));
  cfg.no_sram = 1;
  assert_ok(nnmem_fit(g, &d, limit, &cfg, &without, NULL));
  assert_true(nnmem_problem_count(nnmem_fit_tier_problem(with, 0)) > 0);
  assert_int_equal(nnmem_problem_count(nnmem_fit_tier_problem(without, 0)), 0);
  assert_true(nnmem_plan_height(nnmem_fit_tier_plan(with, 0)) <=
              d.tiers[0].capacity);
  nnmem_fit_costs_t a, b;
  nnmem_fit_costs(with, &a);
  nnmem_fit_costs(without, &b);
  assert_true(a.compute_s < b.compute_s);
  check_fit(with, g, limit);
  check_fit(without, g, limit);
  nnmem_fit_destroy(with);
  nnmem_fit_destroy(without);
  nnmem_graph_destroy(g);
}

/* The zoo model fitted on edge-npu at 25 % of its unconstrained peak, or
 * its smallest limit when that is larger (as bench/fit's rows); checked
 * (check_fit). *g, *d, *limit: the graph (caller destroys), the device and
 * the limit. */
static nnmem_fit_t *fit_quarter(const char *model, nnmem_graph_t **g,
                                nnmem_device_t *d, uint64_t *limit) {
  assert_ok(nnmem_zoo_build(model, 1, g, NULL));
  assert_ok(nnmem_device_preset("edge-npu", d));
  nnmem_fit_t *f = NULL;
  assert_ok(nnmem_fit(*g, d, UINT64_MAX / 4, NULL, &f, NULL));
  *limit = nnmem_fit_unconstrained_peak(f) / 100 * 25;
  nnmem_fit_destroy(f);
  uint64_t smallest = 0;
  assert_ok(nnmem_fit_smallest_limit(*g, d, NULL, &smallest, NULL));
  if (*limit < smallest) *limit = smallest;
  f = NULL;
  assert_ok(nnmem_fit(*g, d, *limit, NULL, &f, NULL));
  check_fit(f, *g, *limit);
  return f;
}

/* The exposed seconds of the LRU baseline on whole tensors (as bench/fit's
 * rows whose whole operands fit). */
static double lru_exposed(const nnmem_graph_t *g, const nnmem_device_t *d,
                          uint64_t limit) {
  nnmem_baseline_result_t lru;
  nnmem_fit_config_t whole;
  nnmem_fit_config_init(&whole);
  whole.slice_bytes = UINT64_MAX;
  assert_ok(nnmem_fit_baseline(g, d, limit, &whole, NNMEM_BASELINE_LRU, &lru,
                               NULL));
  return lru.exposed_s;
}

/* Prefetch against on-demand swapping (the figure, on the cost
 * model: no clock involved). mobilenetv2 at 25 % of its peak is bound by
 * memory at the end (the classifier's 5 MB weight) and had idle link time
 * early: the link-paced leads and the leads chosen again after on-chip
 * placement (fit_leads.c, fit.c) bring its exposed time under half of
 * LRU's (0.65 before them). The plan passes the verifier and the run. */
static void test_exposed_vs_lru(void **state) {
  (void)state;
  nnmem_graph_t *g;
  nnmem_device_t d;
  uint64_t limit;
  nnmem_fit_t *f = fit_quarter("mobilenetv2", &g, &d, &limit);
  nnmem_fit_costs_t c;
  nnmem_fit_costs(f, &c);
  double lru = lru_exposed(g, &d, limit);
  printf("mobilenetv2 at %llu B: exposed %.3f ms, LRU %.3f ms (%.2f)\n",
         (unsigned long long)limit, c.exposed_s * 1e3, lru * 1e3,
         c.exposed_s / lru);
  assert_true(c.transfer_bytes > 0 && lru > 0);
  assert_true(c.exposed_s <= 0.5 * lru);
  nnmem_fit_destroy(f);
  nnmem_graph_destroy(g);
}

/* On-chip relief (fit.c, choose_onchip): resnet50 at 25 % of its peak on
 * edge-npu held its 3.2 MB layer1 skip tensors in lpddr beside the 7.2 MB
 * im2col buffers while the link idled. They now go on chip (values larger
 * than a quarter of the 4 MiB sram), and the exposed time falls under
 * half of LRU's (0.507 before); the total is lower than without the sram
 * at all. The plan passes the verifier per tier and the run. */
static void test_onchip_relief(void **state) {
  (void)state;
  nnmem_graph_t *g;
  nnmem_device_t d;
  uint64_t limit;
  nnmem_fit_t *f = fit_quarter("resnet50", &g, &d, &limit);
  const nnmem_problem_t *sram = nnmem_fit_tier_problem(f, 0);
  const nnmem_buffer_t *b = nnmem_problem_buffers(sram);
  size_t large = 0;
  for (size_t i = 0; i < nnmem_problem_count(sram); i++)
    large += b[i].size > d.tiers[0].capacity / 4;
  nnmem_fit_costs_t c, cn;
  nnmem_fit_costs(f, &c);
  nnmem_fit_config_t cfg;
  nnmem_fit_config_init(&cfg);
  cfg.no_sram = 1;
  nnmem_fit_t *fn = NULL;
  assert_ok(nnmem_fit(g, &d, limit, &cfg, &fn, NULL));
  nnmem_fit_costs(fn, &cn);
  double lru = lru_exposed(g, &d, limit);
  printf("resnet50 at %llu B: %zu sram buffers over a quarter of it; exposed "
         "%.3f ms, LRU %.3f ms (%.3f); total %.3f ms, without sram %.3f ms\n",
         (unsigned long long)limit, large, c.exposed_s * 1e3, lru * 1e3,
         c.exposed_s / lru, c.total_s * 1e3, cn.total_s * 1e3);
  assert_true(large > 0);
  assert_true(lru > 0);
  assert_true(c.exposed_s <= 0.5 * lru);
  assert_true(c.total_s < cn.total_s);
  nnmem_fit_destroy(fn);
  nnmem_fit_destroy(f);
  nnmem_graph_destroy(g);
}

/* Near the smallest limit activations are offloaded too: their device
 * buffers get gaps, copies go out and back in, and the executor checks
 * the bytes that come back. */
static void test_offload(void **state) {
  (void)state;
  nnmem_graph_t *g;
  assert_ok(nnmem_zoo_build("resnet50", 1, &g, NULL));
  nnmem_device_t d;
  assert_ok(nnmem_device_preset("edge-npu", &d));
  uint64_t limit = 12u * 1000 * 1000;
  nnmem_fit_t *f = NULL;
  assert_ok(nnmem_fit(g, &d, limit, NULL, &f, NULL));
  const nnmem_fit_move_t *m;
  size_t n = nnmem_fit_moves(f, &m), offloads = 0;
  for (size_t i = 0; i < n; i++)
    if (m[i].kind == NNMEM_MOVE_OFFLOAD) {
      offloads++;
      assert_true(m[i].idle_steps > 0);
    }
  assert_true(offloads > 0);
  const nnmem_problem_t *p = nnmem_fit_tier_problem(f, 1);
  assert_true(nnmem_problem_gapped_count(p) >= offloads);
  const nnmem_fit_copy_t *c;
  size_t nc = nnmem_fit_copies(f, &c), outs = 0;
  for (size_t i = 0; i < nc; i++)
    outs += c[i].dir == NNMEM_COPY_OUT;
  assert_int_equal(outs, offloads);
  check_fit(f, g, limit);
  nnmem_fit_destroy(f);
  nnmem_graph_destroy(g);
}

/* Weight slices (fit.c, weight_slices): a chain of MatMuls whose last
 * weight is large (16 MiB, rows 1024) under a limit that holds it with
 * little to spare: the class of input where a whole-tensor copy must wait
 * for its whole buffer to be free. The fit holds it in slices of whole
 * rows (checked: names, sizes, rows cover [0, 1024) in order), each
 * slice's plan verified and the run passes with the slices' copies; the
 * slices expose less time than the same fit with whole tensors. A weight
 * under two slices, or whose bytes are not whole rows, stays whole. */
static nnmem_graph_t *late_weight_chain(void) {
  nnmem_graph_t *g;
  assert_ok(nnmem_graph_create("late", &g));
  int64_t xs[2] = {256, 1024}, ws[2] = {1024, 1024}, bs[2] = {1024, 4096};
  int64_t ys[2] = {256, 4096}, odd[1] = {300000};
  uint32_t prev = shaped(g, "x", NNMEM_TENSOR_INPUT, 2, xs);
  for (int i = 0; i < 6; i++) {
    char wn[16], an[16], on[16];
    snprintf(wn, sizeof wn, "w%d", i);
    snprintf(an, sizeof an, "a%d", i);
    snprintf(on, sizeof on, "mm%d", i);
    uint32_t w = shaped(g, wn, NNMEM_TENSOR_WEIGHT, 2, ws);
    uint32_t a = shaped(g, an, NNMEM_TENSOR_ACTIVATION, 2, xs);
    uint32_t in[2] = {prev, w};
    add_op(g, on, "MatMul", in, 2, a);
    prev = a;
  }
  /* a 1-D weight of 1.2 MB: rows of 4 B, but under two 1 MiB slices */
  uint32_t o = shaped(g, "odd", NNMEM_TENSOR_WEIGHT, 1, odd);
  uint32_t b = shaped(g, "big", NNMEM_TENSOR_WEIGHT, 2, bs);
  uint32_t y = shaped(g, "y", NNMEM_TENSOR_OUTPUT, 2, ys);
  uint32_t z = shaped(g, "z", NNMEM_TENSOR_ACTIVATION, 2, xs);
  uint32_t in0[2] = {prev, o}, in1[2] = {z, b};
  add_op(g, "addodd", "Add", in0, 2, z);
  add_op(g, "last", "MatMul", in1, 2, y);
  return g;
}

static void test_weight_slices(void **state) {
  (void)state;
  nnmem_graph_t *g = late_weight_chain();
  nnmem_device_t d = plain_device(1ull << 30);
  d.tiers[0].alignment = d.tiers[1].alignment = 256;
  d.tiers[0].bandwidth = 1e10;
  d.tiers[0].link_bandwidth = 1e9; /* 16 MiB: 16.8 ms */
  d.compute_rate = 1e11;           /* each 1024-wide MatMul: 5.4 ms */
  d.op_overhead_s = 1e-6;
  uint64_t limit = 24u << 20;
  nnmem_fit_config_t cfg;
  nnmem_fit_config_init(&cfg);
  cfg.no_split = 1; /* slices read by their op at once (test_split_ops) */
  nnmem_fit_t *sl = NULL, *whole = NULL;
  nnmem_diag_t diag = {{0}};
  if (nnmem_fit(g, &d, limit, &cfg, &sl, &diag) != NNMEM_OK)
    fail_msg("sliced: %s", diag.message);
  cfg.slice_bytes = UINT64_MAX;
  if (nnmem_fit(g, &d, limit, &cfg, &whole, &diag) != NNMEM_OK)
    fail_msg("whole: %s", diag.message);
  check_fit(sl, g, limit);
  check_fit(whole, g, limit);
  /* the slices of "big": 16 of 64 rows (1 MiB: limit / 64 = 0.375 MiB is
   * below the 1 MiB floor), in row order, each with a device buffer (the
   * main tier); the streamed ones also have their home on the host */
  uint32_t m = nnmem_device_main_tier(&d);
  size_t n_slices[2] = {0, 0};
  for (uint32_t t = m; t < d.n_tiers; t++) {
    const nnmem_problem_t *p = nnmem_fit_tier_problem(sl, t);
    const nnmem_buffer_t *bf = nnmem_problem_buffers(p);
    uint64_t next_row = 0, bytes = 0;
    for (size_t i = 0; i < nnmem_problem_count(p); i++) {
      unsigned long long r0, r1;
      assert_null(strstr(nnmem_problem_id(p, i), "odd["));
      if (sscanf(nnmem_problem_id(p, i), "big[%llu:%llu]", &r0, &r1) != 2)
        continue;
      assert_true(t > m || r0 == next_row);
      assert_int_equal(r1 - r0, 64);
      assert_int_equal(bf[i].size, (r1 - r0) * 4096 * 4);
      next_row = r1, bytes += bf[i].size, n_slices[t - m]++;
    }
    if (t == m) {
      assert_int_equal(next_row, 1024);
      assert_int_equal(bytes, 16u << 20);
    }
  }
  assert_int_equal(n_slices[0], 16);
  assert_true(n_slices[1] > 0); /* some slices are streamed */
  /* 4 MiB weights: 4 slices each; the 1-D one of 1.2 MB whole */
  const nnmem_problem_t *hp = nnmem_fit_tier_problem(sl, m + 1);
  const nnmem_problem_t *mp = nnmem_fit_tier_problem(sl, m);
  size_t idx;
  assert_true(nnmem_problem_find(mp, "odd", &idx) == NNMEM_OK ||
              nnmem_problem_find(hp, "odd", &idx) == NNMEM_OK);
  assert_true(nnmem_problem_find(mp, "w3[0:256]", &idx) == NNMEM_OK ||
              nnmem_problem_find(hp, "w3[0:256]", &idx) == NNMEM_OK);
  assert_int_equal(nnmem_problem_find(mp, "big", &idx), NNMEM_ERR_NOT_FOUND);
  assert_int_equal(nnmem_problem_find(nnmem_fit_tier_problem(whole, m),
                                      "w3[0:256]", &idx),
                   NNMEM_ERR_NOT_FOUND);
  nnmem_fit_costs_t a, b;
  nnmem_fit_costs(sl, &a);
  nnmem_fit_costs(whole, &b);
  printf("late 16 MiB weight at %llu B: exposed %.3f ms sliced, %.3f ms "
         "whole (bytes %llu, %llu)\n",
         (unsigned long long)limit, a.exposed_s * 1e3, b.exposed_s * 1e3,
         (unsigned long long)a.transfer_bytes,
         (unsigned long long)b.transfer_bytes);
  assert_true(a.exposed_s < b.exposed_s);
  nnmem_fit_destroy(sl);
  nnmem_fit_destroy(whole);
  nnmem_graph_destroy(g);
}

/* Operator splitting (fit_split.c). The late-weight chain: its MatMuls
 * read [K, N] weights sliced along K, so they split into parts that add
 * partial sums ("accumulate"): 4 parts per 4 MiB weight, 16 for the
 * 16 MiB one; 8 ops become 6 x 4 + 1 + 16 = 41 steps. A Conv [512, 512,
 * 3, 3] with batch 1 and a Gemm [4000, 512] with one row split into
 * "rows" parts: part q writes output rows [r_q, r_q+1) as a sub-buffer
 * "NAME#q" of its output at r_q x row bytes. Every plan is verified per
 * tier and run (check_fit: the executor checks each part's slice and
 * output pattern); splitting exposes less than the same slices read by
 * one op; `no_split` and slices off give one step per op. */
static void test_split_ops(void **state) {
  (void)state;
  nnmem_graph_t *g = late_weight_chain();
  nnmem_device_t d = plain_device(1ull << 30);
  d.tiers[0].alignment = d.tiers[1].alignment = 256;
  d.tiers[0].bandwidth = 1e10;
  d.tiers[0].link_bandwidth = 1e9;
  d.compute_rate = 1e11;
  d.op_overhead_s = 1e-6;
  uint64_t limit = 24u << 20;
  nnmem_fit_config_t cfg;
  nnmem_fit_config_init(&cfg);
  nnmem_fit_t *sp = NULL, *one = NULL, *whole = NULL;
  nnmem_diag_t diag = {{0}};
  if (nnmem_fit(g, &d, limit, &cfg, &sp, &diag) != NNMEM_OK)
    fail_msg("split: %s", diag.message);
  cfg.no_split = 1;
  if (nnmem_fit(g, &d, limit, &cfg, &one, &diag) != NNMEM_OK)
    fail_msg("one op: %s", diag.message);
  cfg.no_split = 0;
  cfg.slice_bytes = UINT64_MAX;
  if (nnmem_fit(g, &d, limit, &cfg, &whole, &diag) != NNMEM_OK)
    fail_msg("whole: %s", diag.message);
  check_fit(sp, g, limit);
  check_fit(one, g, limit);
  check_fit(whole, g, limit);
  assert_int_equal(nnmem_fit_ops(sp), 8);
  assert_int_equal(nnmem_fit_steps(sp), 41);
  assert_int_equal(nnmem_fit_steps(one), 8);
  assert_int_equal(nnmem_fit_steps(whole), 8);
  uint64_t expect_parts[8] = {4, 4, 4, 4, 4, 4, 1, 16}, s = 0;
  for (int o = 0; o < 8; o++)
    for (uint64_t q = 0; q < expect_parts[o]; q++, s++) {
      nnmem_fit_step_t st;
      assert_ok(nnmem_fit_step(sp, s, &st));
      assert_int_equal(st.op, nnmem_fit_order(sp)[o]);
      assert_int_equal(st.part, q);
      assert_int_equal(st.parts, expect_parts[o]);
      assert_int_equal(st.accumulate, expect_parts[o] > 1);
    }
  nnmem_fit_step_t st;
  assert_int_equal(nnmem_fit_step(sp, 41, &st), NNMEM_ERR_INVALID);
  char *text = NULL;
  assert_ok(nnmem_fit_format_json(sp, g, &text, NULL, NULL));
  assert_non_null(strstr(text, "\"parts\": 16"));
  assert_non_null(strstr(text, "\"split\": \"accumulate\""));
  free(text);
  nnmem_fit_costs_t a, b;
  nnmem_fit_costs(sp, &a);
  nnmem_fit_costs(one, &b);
  printf("late 16 MiB weight at %llu B: exposed %.3f ms split (%.3f total),"
         " %.3f ms one op (%.3f total)\n",
         (unsigned long long)limit, a.exposed_s * 1e3, a.total_s * 1e3,
         b.exposed_s * 1e3, b.total_s * 1e3);
  assert_true(a.exposed_s < b.exposed_s);
  assert_true(a.total_s < b.total_s);
  nnmem_fit_destroy(sp);
  nnmem_fit_destroy(one);
  nnmem_fit_destroy(whole);
  nnmem_graph_destroy(g);

  /* "rows" parts: Conv (batch 1) and Gemm [N, K], one row */
  assert_ok(nnmem_graph_create("rows", &g));
  int64_t xs[4] = {1, 512, 14, 14}, ws[4] = {512, 512, 3, 3};
  int64_t ps[2] = {1, 512}, gw[2] = {4000, 512}, ys[2] = {1, 4000};
  uint32_t x = shaped(g, "x", NNMEM_TENSOR_INPUT, 4, xs);
  uint32_t w1 = shaped(g, "w1", NNMEM_TENSOR_WEIGHT, 4, ws);
  uint32_t c1 = shaped(g, "c1", NNMEM_TENSOR_ACTIVATION, 4, xs);
  uint32_t pool = shaped(g, "pool", NNMEM_TENSOR_ACTIVATION, 2, ps);
  uint32_t w2 = shaped(g, "w2", NNMEM_TENSOR_WEIGHT, 2, gw);
  uint32_t y = shaped(g, "y", NNMEM_TENSOR_OUTPUT, 2, ys);
  uint32_t i1[2] = {x, w1}, i2[2] = {pool, w2};
  add_op(g, "conv", "Conv", i1, 2, c1);
  add_op(g, "gap", "GlobalAveragePool", &c1, 1, pool);
  add_op(g, "fc", "Gemm", i2, 2, y);
  d.op_overhead_s = 0;
  limit = 12u << 20; /* 9 MiB + 7.8 MB of weights: some must stream */
  nnmem_fit_config_init(&cfg);
  if (nnmem_fit(g, &d, limit, &cfg, &sp, &diag) != NNMEM_OK)
    fail_msg("rows: %s", diag.message);
  check_fit(sp, g, limit);
  /* 9 MiB / 1 MiB: 9 parts of the 512 channels; 7.8 MB: 7 of 4000 rows */
  assert_int_equal(nnmem_fit_steps(sp), 9 + 1 + 7);
  uint32_t m = nnmem_device_main_tier(&d);
  const nnmem_problem_t *p = nnmem_fit_tier_problem(sp, m);
  const struct { const char *name; uint64_t rows, k, row_b; } out[2] = {
      {"c1", 512, 9, 14 * 14 * 4}, {"y", 4000, 7, 4}};
  for (int i = 0; i < 2; i++) {
    size_t yi, pi, parent;
    uint64_t rel;
    assert_ok(nnmem_problem_find(p, out[i].name, &yi));
    for (uint64_t q = 0; q < out[i].k; q++) {
      char id[32];
      snprintf(id, sizeof id, "%s#%llu", out[i].name, (unsigned long long)q);
      assert_ok(nnmem_problem_find(p, id, &pi));
      assert_ok(nnmem_problem_parent(p, pi, &parent, &rel));
      uint64_t r0 = q * out[i].rows / out[i].k;
      uint64_t r1 = (q + 1) * out[i].rows / out[i].k;
      assert_int_equal(parent, yi);
      assert_int_equal(rel, r0 * out[i].row_b);
      assert_int_equal(nnmem_problem_buffers(p)[pi].size,
                       (r1 - r0) * out[i].row_b);
    }
  }
  for (uint64_t t = 0; t < nnmem_fit_steps(sp); t++) {
    assert_ok(nnmem_fit_step(sp, t, &st));
    assert_int_equal(st.accumulate, 0);
  }
  nnmem_fit_destroy(sp);
  nnmem_graph_destroy(g);
}

/* The memory floor by hand (floor.c): a -A(wa 16 MiB)-> b -Relu-> r
 * -B(wb 16 MiB)-> c under a 24 MiB limit, no op overhead. While op A
 * runs the device holds wa, A's input a (16 KiB) and output b (4 KiB),
 * so at most 24 MiB - 16 MiB - 20 KiB of wb is there when A ends, and
 * 8 MiB + 20 KiB cross the link after A and before op B: exposed >=
 * (8 MiB + 20 KiB) / link - t(Relu), op times from nnmem_op_cost
 * (slices add no launch cost without overhead; no on-chip tier). The
 * fit itself may not beat it (check_fit). */
static void test_memory_floor_by_hand(void **state) {
  (void)state;
  nnmem_graph_t *g;
  assert_ok(nnmem_graph_create("two", &g));
  int64_t xs[2] = {1, 4096}, ws[2] = {4096, 1024}, ys[2] = {1, 1024};
  int64_t w2s[2] = {1024, 4096};
  uint32_t a = shaped(g, "a", NNMEM_TENSOR_INPUT, 2, xs);
  uint32_t wa = shaped(g, "wa", NNMEM_TENSOR_WEIGHT, 2, ws);
  uint32_t b = shaped(g, "b", NNMEM_TENSOR_ACTIVATION, 2, ys);
  uint32_t wb = shaped(g, "wb", NNMEM_TENSOR_WEIGHT, 2, w2s);
  uint32_t r = shaped(g, "r", NNMEM_TENSOR_ACTIVATION, 2, ys);
  uint32_t c = shaped(g, "c", NNMEM_TENSOR_OUTPUT, 2, xs);
  uint32_t i1[2] = {a, wa}, i2[2] = {r, wb};
  add_op(g, "A", "MatMul", i1, 2, b);
  add_op(g, "relu", "Relu", &b, 1, r);
  add_op(g, "B", "MatMul", i2, 2, c);
  nnmem_device_t d = plain_device(1ull << 30);
  d.tiers[0].link_bandwidth = 1e9; /* 8 MiB: 8.4 ms */
  d.tiers[0].bandwidth = 1e11;      /* A reads 16 MiB: 0.17 ms */
  d.compute_rate = 1e11;
  uint64_t limit = 24u << 20;
  nnmem_fit_t *f = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_fit_config_t cfg; /* whole ops: the steps of the formula */
  nnmem_fit_config_init(&cfg);
  cfg.no_split = 1;
  if (nnmem_fit(g, &d, limit, &cfg, &f, &diag) != NNMEM_OK)
    fail_msg("fit: %s", diag.message);
  check_fit(f, g, limit);
  nnmem_op_cost_t orelu;
  assert_ok(nnmem_op_cost(g, 1, &d, &orelu));
  double expect = (double)((8u << 20) + 4096 * 4 + 1024 * 4) / 1e9 -
                  orelu.seconds;
  nnmem_fit_floor_t fl;
  assert_ok(nnmem_fit_floor(f, &fl));
  nnmem_fit_costs_t co;
  nnmem_fit_costs(f, &co);
  printf("two 16 MiB weights at 24 MiB: memory floor %.4f ms (by hand "
         "%.4f), link floor %.4f ms, fit %.4f ms\n",
         fl.memory_s * 1e3, expect * 1e3, fl.link_s * 1e3, co.exposed_s * 1e3);
  assert_true(expect > 0);
  assert_true(fl.memory_s > expect * (1 - 1e-9) &&
              fl.memory_s < expect * (1 + 1e-9));
  assert_int_equal(fl.from_step, 0);
  assert_int_equal(fl.to_step, 2);
  assert_int_equal(nnmem_fit_floor(NULL, &fl), NNMEM_ERR_INVALID);
  nnmem_fit_destroy(f);
  nnmem_graph_destroy(g);
}

/* A weight read by the first op: no compute can hide its copy. Op A
 * reads wa (8 MiB) first; a Tile, a Relu and a ReduceMean on 4 MiB
 * tensors follow (the peak), then four Relus on 128 KiB (0.26 ms each)
 * and op B, which reads wb (8 MiB). Under 18 MiB one weight streams, and
 * either frees the whole excess: wa (held at step 0 only) or wb (held
 * from the fourth-last step, its 0.84 ms copy hidden by the Relus). wa's
 * copy is waited for before op A, so the fit streams wb and keeps wa. */
static void test_first_op_weight_kept(void **state) {
  (void)state;
  nnmem_graph_t *g;
  assert_ok(nnmem_graph_create("first", &g));
  int64_t as[2] = {1, 2048}, was[2] = {2048, 1024}, bs[2] = {1, 1024};
  int64_t ss[2] = {1, 128}, big[2] = {1, 1 << 20}, sm[2] = {1, 32768};
  int64_t wbs[2] = {32768, 64}, cs[2] = {1, 64};
  uint32_t a = shaped(g, "a", NNMEM_TENSOR_INPUT, 2, as);
  uint32_t wa = shaped(g, "wa", NNMEM_TENSOR_WEIGHT, 2, was);
  uint32_t b = shaped(g, "b", NNMEM_TENSOR_OUTPUT, 2, bs);
  uint32_t s0 = shaped(g, "s0", NNMEM_TENSOR_INPUT, 2, ss);
  uint32_t p1 = shaped(g, "p1", NNMEM_TENSOR_ACTIVATION, 2, big);
  uint32_t p2 = shaped(g, "p2", NNMEM_TENSOR_ACTIVATION, 2, big);
  uint32_t wb = shaped(g, "wb", NNMEM_TENSOR_WEIGHT, 2, wbs);
  uint32_t c = shaped(g, "c", NNMEM_TENSOR_OUTPUT, 2, cs);
  uint32_t ia[2] = {a, wa};
  add_op(g, "A", "MatMul", ia, 2, b);
  add_op(g, "tile", "Tile", &s0, 1, p1);
  add_op(g, "relu", "Relu", &p1, 1, p2);
  uint32_t prev = shaped(g, "q", NNMEM_TENSOR_ACTIVATION, 2, sm);
  add_op(g, "mean", "ReduceMean", &p2, 1, prev);
  for (int i = 0; i < 4; i++) {
    char name[16];
    snprintf(name, sizeof name, "q%d", i);
    uint32_t y = shaped(g, name, NNMEM_TENSOR_ACTIVATION, 2, sm);
    snprintf(name, sizeof name, "relu%d", i);
    add_op(g, name, "Relu", &prev, 1, y);
    prev = y;
  }
  uint32_t ib[2] = {prev, wb};
  add_op(g, "B", "MatMul", ib, 2, c);
  nnmem_device_t d = plain_device(1ull << 30);
  d.tiers[0].link_bandwidth = 1e10; /* 8 MiB: 0.84 ms */
  uint64_t limit = 18u << 20;
  nnmem_fit_config_t cfg; /* whole weights: one copy each */
  nnmem_fit_config_init(&cfg);
  cfg.slice_bytes = UINT64_MAX;
  nnmem_fit_t *f = NULL;
  nnmem_diag_t diag = {{0}};
  if (nnmem_fit(g, &d, limit, &cfg, &f, &diag) != NNMEM_OK)
    fail_msg("fit: %s", diag.message);
  check_fit(f, g, limit);
  const nnmem_fit_move_t *mv;
  size_t n = nnmem_fit_moves(f, &mv);
  int streamed_a = 0, streamed_b = 0;
  for (size_t i = 0; i < n; i++) {
    streamed_a |= mv[i].kind == NNMEM_MOVE_STREAM && !strcmp(mv[i].name, "wa");
    streamed_b |= mv[i].kind == NNMEM_MOVE_STREAM && !strcmp(mv[i].name, "wb");
  }
  nnmem_fit_costs_t co;
  nnmem_fit_costs(f, &co);
  double copy_a = (double)(8u << 20) / 1e10;
  printf("first-op weight: %zu moves, wa %s, wb %s, exposed %.4f ms (wa's "
         "copy %.4f ms)\n",
         n, streamed_a ? "streamed" : "kept", streamed_b ? "streamed" : "kept",
         co.exposed_s * 1e3, copy_a * 1e3);
  assert_false(streamed_a);
  assert_true(streamed_b);
  assert_true(co.exposed_s < copy_a);
  nnmem_fit_destroy(f);
  nnmem_graph_destroy(g);
}

/* Fails every allocation in turn, then the first copies. */
static void test_fault_injection(void **state) {
  (void)state;
  nnmem_graph_t *g;
  assert_ok(nnmem_zoo_build("mobilenetv2", 1, &g, NULL));
  nnmem_device_t d;
  assert_ok(nnmem_device_preset("edge-npu", &d));
  nnmem_fit_t *f = NULL;
  assert_ok(nnmem_fit(g, &d, 10u * 1000 * 1000, NULL, &f, NULL));
  char *text = NULL;
  size_t len = 0;
  assert_ok(nnmem_fit_format_json(f, g, &text, &len, NULL));
  nnmem_exec_plan_t *ep = NULL;
  assert_ok(nnmem_exec_plan_parse(text, len, "fit.json", &ep, NULL));
  size_t regions = 0;
  for (uint32_t t = 0; t < d.n_tiers; t++)
    regions += nnmem_plan_height(nnmem_fit_tier_plan(f, t)) > 0;
  assert_true(regions >= 2);
  for (uint64_t n = 1; n <= regions + 1; n++) {
    nnmem_exec_config_t cfg = {sizeof cfg, n, 0};
    nnmem_diag_t diag = {{0}};
    nnmem_status_t st = nnmem_exec_run(ep, &cfg, NULL, &diag);
    if (n <= regions) {
      assert_int_equal(st, NNMEM_ERR_NOMEM);
      assert_non_null(strstr(diag.message, "fault injected"));
    } else {
      assert_ok(st);
    }
  }
  size_t copies = nnmem_fit_copies(f, NULL);
  assert_true(copies > 0);
  for (uint64_t n = 1; n <= copies + 1; n += (n < 4 ? 1 : copies - 3)) {
    nnmem_exec_config_t cfg = {sizeof cfg, 0, n};
    nnmem_exec_report_t rep;
    memset(&rep, 0, sizeof rep);
    rep.size = sizeof rep;
    nnmem_status_t st = nnmem_exec_run(ep, &cfg, &rep, NULL);
    assert_int_equal(st, n <= copies ? NNMEM_ERR_IO : NNMEM_OK);
    assert_int_equal(rep.copies, n <= copies ? n - 1 : copies);
  }
  nnmem_exec_plan_destroy(ep);
  free(text);
  nnmem_fit_destroy(f);
  nnmem_graph_destroy(g);
}

/* `text` with the first `from` replaced by `to`: refused, with `why`. */
static void refused_edit(const char *text, size_t len, const char *from,
                         const char *to, const char *why) {
  const char *at = strstr(text, from);
  assert_non_null(at);
  size_t head = (size_t)(at - text), fl = strlen(from), tl = strlen(to);
  char *t = malloc(len - fl + tl + 1);
  assert_non_null(t);
  memcpy(t, text, head);
  memcpy(t + head, to, tl);
  memcpy(t + head + tl, at + fl, len - head - fl);
  nnmem_exec_plan_t *ep = NULL;
  nnmem_diag_t diag = {{0}};
  assert_int_equal(
      nnmem_exec_plan_parse(t, len - fl + tl, "fit.json", &ep, &diag),
      NNMEM_ERR_PARSE);
  assert_null(ep);
  if (!strstr(diag.message, why)) fail_msg("%s: got %s", why, diag.message);
  free(t);
}

static void test_refused_plans(void **state) {
  (void)state;
  nnmem_graph_t *g, *other, *batch2;
  assert_ok(nnmem_zoo_build("resnet50", 1, &g, NULL));
  assert_ok(nnmem_zoo_build("mobilenetv2", 1, &other, NULL));
  assert_ok(nnmem_zoo_build("resnet50", 2, &batch2, NULL));
  nnmem_device_t d;
  assert_ok(nnmem_device_preset("edge-npu", &d));
  nnmem_fit_t *f = NULL;
  assert_ok(nnmem_fit(g, &d, 40u * 1000 * 1000, NULL, &f, NULL));
  char *text = NULL;
  size_t len = 0;
  assert_ok(nnmem_fit_format_json(f, g, &text, &len, NULL));
  nnmem_exec_plan_t *ep = NULL;
  nnmem_diag_t diag = {{0}};
  /* another model, another batch */
  assert_ok(nnmem_exec_plan_parse(text, len, "fit.json", &ep, NULL));
  assert_int_equal(nnmem_exec_plan_match(ep, other, &diag), NNMEM_ERR_CONFLICT);
  assert_non_null(strstr(diag.message, "does not match the model"));
  assert_int_equal(nnmem_exec_plan_match(ep, batch2, &diag),
                   NNMEM_ERR_CONFLICT);
  assert_non_null(strstr(diag.message, "of 602112 B in the plan but"));
  nnmem_exec_plan_destroy(ep);
  /* a changed number: the first "size" of the fit tiers, one digit up */
  char *fit = strstr(text, "\"fit\"");
  char *size = strstr(fit, "\"size\": ");
  assert_non_null(size);
  char *digit = size + strlen("\"size\": ");
  *digit = *digit == '9' ? '1' : (char)(*digit + 1);
  assert_int_equal(nnmem_exec_plan_parse(text, len, "fit.json", &ep, &diag),
                   NNMEM_ERR_CONFLICT);
  assert_null(ep);
  assert_non_null(strstr(diag.message, "fit.json: corrupted"));
  /* cut short */
  assert_int_equal(nnmem_exec_plan_parse(text, len / 2, "fit.json", &ep, &diag),
                   NNMEM_ERR_PARSE);
  free(text);
  /* split ops (this plan has some): parts out of order, a bad count, an
   * unknown split kind, a part missing its fields: refused as such */
  assert_ok(nnmem_fit_format_json(f, g, &text, &len, NULL));
  assert_non_null(strstr(text, "\"part\": 1,"));
  refused_edit(text, len, "\"part\": 1,", "\"part\": 0,",
               "parts of a split op must be consecutive");
  refused_edit(text, len, "\"parts\": ", "\"parts\": 1, \"x\": ",
               "need 2 <= parts");
  refused_edit(text, len, "\"split\": \"", "\"split\": \"z",
               "split: must be");
  refused_edit(text, len, "\"part\": 1,", "\"qart\": 1,",
               "has parts left");
  free(text);
  /* a classic plan without a schedule */
  nnmem_liveness_t *l;
  assert_ok(nnmem_liveness_analyze(g, NULL, &l, NULL));
  nnmem_plan_t *pl = tu_plan_verified(nnmem_liveness_problem(l), NULL);
  assert_ok(nnmem_plan_format_json(g, l, pl, 0, &text, &len, NULL));
  assert_int_equal(nnmem_exec_plan_parse(text, len, "old.json", &ep, &diag),
                   NNMEM_ERR_UNSUPPORTED);
  assert_non_null(strstr(diag.message, "no execution schedule"));
  free(text);
  nnmem_plan_destroy(pl);
  nnmem_liveness_destroy(l);
  nnmem_fit_destroy(f);
  nnmem_graph_destroy(g);
  nnmem_graph_destroy(other);
  nnmem_graph_destroy(batch2);
}

/* A hand-made plan whose step 0 reads a buffer nobody wrote: valid as a
 * plan (the verifier cannot see it), caught by the executor's patterns. */
static void test_executor_catches_unwritten(void **state) {
  (void)state;
  uint64_t h = NNMEM__FNV_SEED;
  nnmem__exec_digest_pair(&h, 1024, 1); /* limit, steps */
  nnmem__exec_digest_pair(&h, 2, 0);    /* tiers, main */
  nnmem__exec_digest_pair(&h, 0, 1);    /* tier 0: 1 buffer */
  nnmem__exec_digest_buffer(&h, 0, 64, 0, 1);
  nnmem__exec_digest_pair(&h, 1, 0);        /* tier 1: none */
  nnmem__exec_digest_pair(&h, 0xacce55, 0); /* init */
  nnmem__exec_digest_pair(&h, 0, 0);        /* step 0 reads [0, 0] */
  nnmem__exec_digest_pair(&h, 1, 0);        /* 1 read, 0 writes */
  nnmem__exec_digest_pair(&h, 0xacce55, 0); /* final */
  char doc[1200];
  snprintf(doc, sizeof doc,
           "{\"model\": \"m\", \"fit\": {\"version\": 1, \"model_digest\": "
           "\"0000000000000000\", \"limit\": 1024, \"steps\": 1, "
           "\"main_tier\": 0, \"tiers\": [{\"name\": \"ddr\", \"alignment\": "
           "64, \"capacity\": 1024, \"height\": 64, \"buffers\": [{\"id\": "
           "\"a\", \"offset\": 0, \"size\": 64, \"first\": 0, \"last\": 1}]}, "
           "{\"name\": \"host\", \"alignment\": 64, \"capacity\": 0, "
           "\"height\": 0, \"buffers\": []}], \"init\": [], \"schedule\": "
           "[{\"op\": \"r\", \"reads\": [[0, 0]], \"writes\": []}], "
           "\"final\": [], \"copies\": [], \"tensors\": [], \"digest\": "
           "\"%016llx\"}}",
           (unsigned long long)h);
  nnmem_exec_plan_t *ep = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st =
      nnmem_exec_plan_parse(doc, strlen(doc), "hand.json", &ep, &diag);
  if (st != NNMEM_OK) fail_msg("%s", diag.message);
  assert_int_equal(nnmem_exec_run(ep, NULL, NULL, &diag), NNMEM_ERR_CONFLICT);
  assert_non_null(strstr(diag.message,
                         "buffer 'a' (tier ddr): bytes 0..64 "
                         "were never written"));
  nnmem_exec_plan_destroy(ep);
}

/* A hand-made plan with a split op: "y" (64 B) written by two "rows"
 * parts, each its half as a sub-buffer, then read whole. The executor
 * passes it, and stops when part 1 writes nothing: its rows were never
 * written (the parts' writes are what it checks, not the op's). */
static void hand_split_plan(int part1_writes, nnmem_status_t expect,
                            const char *why) {
  uint64_t h = NNMEM__FNV_SEED;
  nnmem__exec_digest_pair(&h, 1024, 3); /* limit, steps */
  nnmem__exec_digest_pair(&h, 2, 0);    /* tiers, main */
  nnmem__exec_digest_pair(&h, 0, 3);    /* tier 0: 3 buffers */
  nnmem__exec_digest_buffer(&h, 0, 64, 0, 3);
  nnmem__exec_digest_buffer(&h, 0, 32, 0, 1);
  nnmem__exec_digest_pair(&h, 0, 0); /* parent y at 0 */
  nnmem__exec_digest_buffer(&h, 32, 32, 1, 2);
  nnmem__exec_digest_pair(&h, 0, 32);       /* parent y at 32 */
  nnmem__exec_digest_pair(&h, 1, 0);        /* tier 1: none */
  nnmem__exec_digest_pair(&h, 0xacce55, 0); /* init */
  nnmem__exec_digest_pair(&h, 0, 2);        /* step 0: part 0 of 2 */
  nnmem__exec_digest_pair(&h, 1, 0);        /* rows */
  nnmem__exec_digest_pair(&h, 0, 1);        /* writes y#0 */
  nnmem__exec_digest_pair(&h, 0, 1);
  nnmem__exec_digest_pair(&h, 1, 2); /* step 1: part 1 of 2 */
  nnmem__exec_digest_pair(&h, 1, 0);
  if (part1_writes) nnmem__exec_digest_pair(&h, 0, 2); /* writes y#1 */
  nnmem__exec_digest_pair(&h, 0, part1_writes ? 1 : 0);
  nnmem__exec_digest_pair(&h, 0, 0); /* step 2 reads y */
  nnmem__exec_digest_pair(&h, 1, 0);
  nnmem__exec_digest_pair(&h, 0xacce55, 0); /* final */
  char doc[2000];
  snprintf(
      doc, sizeof doc,
      "{\"model\": \"m\", \"fit\": {\"version\": 1, \"model_digest\": "
      "\"0000000000000000\", \"limit\": 1024, \"steps\": 3, "
      "\"main_tier\": 0, \"tiers\": [{\"name\": \"ddr\", \"alignment\": "
      "32, \"capacity\": 1024, \"height\": 64, \"buffers\": [{\"id\": "
      "\"y\", \"offset\": 0, \"size\": 64, \"first\": 0, \"last\": 3}, "
      "{\"id\": \"y#0\", \"offset\": 0, \"size\": 32, \"first\": 0, "
      "\"last\": 1, \"parent\": \"y\", \"parent_offset\": 0}, {\"id\": "
      "\"y#1\", \"offset\": 32, \"size\": 32, \"first\": 1, \"last\": 2, "
      "\"parent\": \"y\", \"parent_offset\": 32}]}, {\"name\": \"host\", "
      "\"alignment\": 64, \"capacity\": 0, \"height\": 0, \"buffers\": "
      "[]}], \"init\": [], \"schedule\": [{\"op\": \"fc\", \"part\": 0, "
      "\"parts\": 2, \"split\": \"rows\", \"reads\": [], \"writes\": "
      "[[0, 1]]}, {\"op\": \"fc\", \"part\": 1, \"parts\": 2, \"split\": "
      "\"rows\", \"reads\": [], \"writes\": [%s]}, {\"op\": \"r\", "
      "\"reads\": [[0, 0]], \"writes\": []}], \"final\": [], \"copies\": "
      "[], \"tensors\": [], \"digest\": \"%016llx\"}}",
      part1_writes ? "[0, 2]" : "", (unsigned long long)h);
  nnmem_exec_plan_t *ep = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st =
      nnmem_exec_plan_parse(doc, strlen(doc), "hand.json", &ep, &diag);
  if (st != NNMEM_OK) fail_msg("%s", diag.message);
  nnmem_exec_report_t rep;
  memset(&rep, 0, sizeof rep);
  rep.size = sizeof rep;
  assert_int_equal(nnmem_exec_run(ep, NULL, &rep, &diag), expect);
  if (why && !strstr(diag.message, why)) fail_msg("got: %s", diag.message);
  if (expect == NNMEM_OK) assert_int_equal(rep.steps, 3);
  nnmem_exec_plan_destroy(ep);
}

static void test_executor_split_parts(void **state) {
  (void)state;
  hand_split_plan(1, NNMEM_OK, NULL);
  hand_split_plan(0, NNMEM_ERR_CONFLICT,
                  "buffer 'y' (tier ddr): bytes 32..64 were never written");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_presets),
      cmocka_unit_test(test_device_json),
      cmocka_unit_test(test_device_json_bad),
      cmocka_unit_test(test_cost_by_hand),
      cmocka_unit_test(test_min_footprint_by_hand),
      cmocka_unit_test(test_out_of_range_devices),
      cmocka_unit_test(test_zoo_limits),
      cmocka_unit_test(test_window_choice),
      cmocka_unit_test(test_onchip),
      cmocka_unit_test(test_exposed_vs_lru),
      cmocka_unit_test(test_onchip_relief),
      cmocka_unit_test(test_offload),
      cmocka_unit_test(test_weight_slices),
      cmocka_unit_test(test_split_ops),
      cmocka_unit_test(test_executor_split_parts),
      cmocka_unit_test(test_memory_floor_by_hand),
      cmocka_unit_test(test_first_op_weight_kept),
      cmocka_unit_test(test_fault_injection),
      cmocka_unit_test(test_refused_plans),
      cmocka_unit_test(test_executor_catches_unwritten),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_order.c - memory-aware operator order (nnmem_graph_order_memory).
 *
 * The exact order is checked against exhaustive enumeration of every
 * topological order of small random graphs (fixed seeds, printed), each
 * order's peak computed independently by liveness + lower bound; the
 * heuristic is checked to be a valid order never below the exact peak and
 * equal on chains; a hand-computed diamond; cycle errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define MAX_OPS 10

typedef struct gen {
  uint64_t rng;
  int equal_views; /* views as large as their input, aligns 0 */
} gen_t;

static uint32_t rnd(gen_t *g, uint32_t n) {
  return (uint32_t)(tu_rand(&g->rng) % n);
}

/* A random graph of n ops: 1-2 inputs, a weight, ops reading 1-3 earlier
 * tensors, some in-place / view / workspace / graph outputs. */
static nnmem_graph_t *random_graph(gen_t *gn, uint32_t n) {
  nnmem_graph_t *g;
  assert_ok(nnmem_graph_create("random", &g));
  uint32_t pool[64], np = 0, w;
  uint64_t bytes[64];
  uint32_t n_in = 1 + rnd(gn, 2);
  char name[32];
  for (uint32_t i = 0; i < n_in; i++) {
    snprintf(name, sizeof name, "in%u", i);
    bytes[np] = 8 * (1 + rnd(gn, 16));
    pool[np] = tu_add_tensor(g, name, NNMEM_TENSOR_INPUT, bytes[np]);
    np++;
  }
  w = tu_add_tensor(g, "w", NNMEM_TENSOR_WEIGHT, 64);
  for (uint32_t o = 0; o < n; o++) {
    uint32_t ins[4], n_ins = 1 + rnd(gn, 3), outs[2];
    for (uint32_t i = 0; i < n_ins; i++)
      ins[i] = pool[np - 1 - rnd(gn, np < 4 ? np : 4) % np];
    if (n_ins > 1 && rnd(gn, 2)) ins[n_ins - 1] = pool[rnd(gn, np)];
    uint64_t b0 = bytes[np - 1];
    for (uint32_t i = 0; i < np; i++)
      if (pool[i] == ins[0]) b0 = bytes[i];
    if (rnd(gn, 5) == 0) ins[n_ins++] = w;
    nnmem_op_desc_t d;
    memset(&d, 0, sizeof d);
    snprintf(name, sizeof name, "op%u", o);
    d.name = name;
    d.type = "T";
    d.inputs = ins;
    d.n_inputs = n_ins;
    uint32_t r = rnd(gn, 10);
    if (r < 3) d.flags = NNMEM_OP_INPLACE;
    if (r == 3) d.flags = NNMEM_OP_VIEW;
    if (rnd(gn, 5) == 0) d.workspace_bytes = 8 * (1 + rnd(gn, 8));
    uint32_t n_outs = rnd(gn, 6) == 0 ? 2 : 1;
    for (uint32_t k = 0; k < n_outs; k++) {
      char tn[32];
      snprintf(tn, sizeof tn, "t%u_%u", o, k);
      uint64_t b = 8 * (1 + rnd(gn, 16));
      if (k == 0 && d.flags == NNMEM_OP_VIEW && gn->equal_views) b = b0;
      if (k == 0 && d.flags == NNMEM_OP_INPLACE && rnd(gn, 2)) b = b0;
      nnmem_tensor_desc_t td;
      memset(&td, 0, sizeof td);
      td.name = tn;
      td.kind = rnd(gn, 7) == 0 ? NNMEM_TENSOR_OUTPUT : NNMEM_TENSOR_ACTIVATION;
      td.bytes = b;
      if (!gn->equal_views && rnd(gn, 8) == 0) td.align = 32;
      assert_ok(nnmem_graph_add_tensor(g, &td, &outs[k], NULL));
      if (np < 64) bytes[np] = b, pool[np++] = outs[k];
    }
    d.outputs = outs;
    d.n_outputs = n_outs;
    assert_ok(nnmem_graph_add_op(g, &d, NULL, NULL));
  }
  return g;
}

/* Exhaustive enumeration: min peak over every topological order. */
typedef struct enum_ctx {
  const nnmem_graph_t *g;
  uint32_t n, order[MAX_OPS], used[MAX_OPS];
  uint64_t align, best, count;
} enum_ctx_t;

static int is_ready(enum_ctx_t *e, uint32_t o) {
  nnmem_op_info_t oi;
  nnmem_graph_op(e->g, o, &oi);
  for (uint32_t i = 0; i < oi.n_inputs; i++) {
    nnmem_tensor_info_t ti;
    nnmem_graph_tensor(e->g, oi.inputs[i], &ti);
    if (ti.producer >= 0 && !e->used[ti.producer]) return 0;
  }
  return 1;
}

static void enumerate(enum_ctx_t *e, uint32_t d) {
  if (d == e->n) {
    uint64_t p;
    assert_ok(nnmem_graph_order_peak(e->g, e->order, e->align, 0, &p, NULL));
    if (p < e->best) e->best = p;
    e->count++;
    return;
  }
  for (uint32_t o = 0; o < e->n; o++) {
    if (e->used[o] || !is_ready(e, o)) continue;
    e->used[o] = 1;
    e->order[d] = o;
    enumerate(e, d + 1);
    e->used[o] = 0;
  }
}

static uint64_t brute_min(const nnmem_graph_t *g, uint64_t align) {
  enum_ctx_t e;
  memset(&e, 0, sizeof e);
  e.g = g;
  e.n = (uint32_t)nnmem_graph_op_count(g);
  e.align = align;
  e.best = UINT64_MAX;
  enumerate(&e, 0);
  return e.best;
}

/* Runs the order search; checks the result is a valid order whose
 * independent peak equals the report. */
static nnmem_order_report_t run_order(const nnmem_graph_t *g,
                                      nnmem_order_method_t method,
                                      uint32_t beam, uint64_t align) {
  nnmem_order_config_t cfg;
  nnmem_order_config_init(&cfg);
  cfg.method = method;
  cfg.beam_width = beam;
  cfg.alignment = align;
  nnmem_order_report_t r;
  memset(&r, 0, sizeof r);
  uint32_t order[MAX_OPS * 64];
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_graph_order_memory(g, &cfg, order, &r, &diag);
  if (st != NNMEM_OK) fail_msg("order: %s", diag.message);
  uint64_t p, f;
  assert_ok(nnmem_graph_order_peak(g, order, align, 0, &p, NULL));
  assert_int_equal(p, r.peak);
  assert_ok(nnmem_graph_order_peak(g, NULL, align, 0, &f, NULL));
  assert_int_equal(f, r.file_peak);
  assert_true(r.peak <= r.file_peak);
  return r;
}

static void check_random(int equal_views, uint64_t seed0, int rounds) {
  int exact = 0, total = 0, beam_equal = 0;
  for (int k = 0; k < rounds; k++) {
    gen_t gn = {seed0 + (uint64_t)k, equal_views};
    uint32_t n = 3 + (uint32_t)(k % 7);
    nnmem_graph_t *g = random_graph(&gn, n);
    uint64_t align = (k % 3 == 0) ? 16 : 1;
    uint64_t best = brute_min(g, align);
    nnmem_order_report_t r = run_order(g, NNMEM_ORDER_AUTO, 0, align);
    nnmem_order_report_t h1 = run_order(g, NNMEM_ORDER_HEURISTIC, 1, align);
    nnmem_order_report_t h = run_order(g, NNMEM_ORDER_HEURISTIC, 0, align);
    if (r.peak < best || (r.exact && r.peak != best) || h.peak < best ||
        h1.peak < best)
      fail_msg(
          "seed %llu (%u ops, align %llu): exact %llu (proven %d), "
          "heuristic %llu / greedy %llu, enumeration %llu",
          (unsigned long long)(seed0 + (uint64_t)k), n,
          (unsigned long long)align, (unsigned long long)r.peak, r.exact,
          (unsigned long long)h.peak, (unsigned long long)h1.peak,
          (unsigned long long)best);
    exact += r.exact;
    beam_equal += h.peak == best;
    total++;
    nnmem_graph_destroy(g);
  }
  printf("seeds %llu..%llu: %d/%d proven optimal, beam optimal on %d\n",
         (unsigned long long)seed0, (unsigned long long)(seed0 + rounds - 1),
         exact, total, beam_equal);
  if (equal_views) assert_true(exact * 10 >= total * 9);
}

static void test_exact_vs_enumeration(void **state) {
  (void)state;
  check_random(1, 1000, 300);
}

static void test_exact_vs_enumeration_odd_sizes(void **state) {
  (void)state;
  check_random(0, 5000, 300);
}

/* ---- exhaustive search over downsets, for graphs up to ~30 ops ----------
 * An independent oracle (it shares nothing with order_model.c): the bytes
 * live while op o runs after the set P are recomputed from the graph by the
 * liveness rules (a tensor is live when produced in P + o or a graph input,
 * and it is a graph output, is produced by o, or has a reader outside P;
 * graph inputs live at step 0; o's workspace); best[S] = min over ops o of S
 * that no other op of S reads from of max(best[S - o], live(S - o, o)),
 * memoized over every downset S (a hash map of 64-bit sets). Graphs
 * without in-place / view ops, where liveness buffers are single tensors. */
typedef struct dp {
  const nnmem_graph_t *g;
  uint32_t n;
  uint64_t align, *keys, *vals, mask;
  uint64_t pred[64], reads[64][4], out_of[64][4]; /* tensor bitsets */
  uint64_t downsets;
} dp_t;

static uint64_t round_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

static uint64_t live_at(dp_t *d, uint64_t P, uint32_t o) {
  size_t nt = nnmem_graph_tensor_count(d->g);
  uint64_t live = 0;
  nnmem_op_info_t oi;
  nnmem_graph_op(d->g, o, &oi);
  for (uint32_t t = 0; t < nt; t++) {
    nnmem_tensor_info_t ti;
    nnmem_graph_tensor(d->g, t, &ti);
    if (ti.kind == NNMEM_TENSOR_WEIGHT || ti.kind == NNMEM_TENSOR_CONSTANT)
      continue;
    int produced = ti.producer < 0 || ((P >> ti.producer) & 1) ||
                   (uint32_t)ti.producer == o;
    if (!produced) continue;
    int reader_out = 0;
    for (uint32_t r = 0; r < d->n && !reader_out; r++)
      reader_out = ((d->reads[r][t / 64] >> (t % 64)) & 1) && !((P >> r) & 1);
    if (ti.kind == NNMEM_TENSOR_OUTPUT || reader_out ||
        (uint32_t)ti.producer == o || (ti.producer < 0 && P == 0))
      live += round_up(ti.bytes, d->align);
  }
  return live + round_up(oi.workspace_bytes, d->align);
}

static uint64_t *dp_slot(dp_t *d, uint64_t S) {
  for (uint64_t i = (S * 0x9e3779b97f4a7c15ull) & d->mask;;
       i = (i + 1) & d->mask)
    if (d->keys[i] == S || d->keys[i] == UINT64_MAX) return &d->keys[i];
}

static uint64_t dp_best(dp_t *d, uint64_t S) {
  if (!S) return 0;
  uint64_t *k = dp_slot(d, S);
  if (*k == S) return d->vals[k - d->keys];
  uint64_t best = UINT64_MAX;
  for (uint32_t o = 0; o < d->n; o++) {
    if (!((S >> o) & 1)) continue;
    int sink = 1; /* no op of S depends on o */
    for (uint32_t q = 0; q < d->n && sink; q++)
      sink = !(((S >> q) & 1) && ((d->pred[q] >> o) & 1));
    if (!sink) continue;
    uint64_t P = S & ~((uint64_t)1 << o), a = dp_best(d, P),
             b = live_at(d, P, o);
    if ((a > b ? a : b) < best) best = a > b ? a : b;
  }
  k = dp_slot(d, S); /* the recursion may have moved nothing: open table */
  *k = S;
  d->vals[k - d->keys] = best;
  d->downsets++;
  return best;
}

static uint64_t dp_min(const nnmem_graph_t *g, uint64_t align,
                       uint64_t *downsets) {
  dp_t *d = calloc(1, sizeof *d);
  d->g = g;
  d->n = (uint32_t)nnmem_graph_op_count(g);
  d->align = align;
  assert_true(d->n <= 64 && nnmem_graph_tensor_count(g) <= 256);
  d->mask = (1u << 18) - 1;
  d->keys = malloc((d->mask + 1) * sizeof *d->keys);
  d->vals = malloc((d->mask + 1) * sizeof *d->vals);
  memset(d->keys, 0xff, (d->mask + 1) * sizeof *d->keys);
  for (uint32_t o = 0; o < d->n; o++) {
    nnmem_op_info_t oi;
    nnmem_graph_op(g, o, &oi);
    for (uint32_t i = 0; i < oi.n_inputs; i++) {
      nnmem_tensor_info_t ti;
      nnmem_graph_tensor(g, oi.inputs[i], &ti);
      d->reads[o][oi.inputs[i] / 64] |= (uint64_t)1 << (oi.inputs[i] % 64);
      if (ti.producer >= 0) d->pred[o] |= (uint64_t)1 << ti.producer;
    }
  }
  for (uint32_t o = 0; o < d->n; o++) /* transitive: sinks test is exact */
    for (uint32_t q = 0; q < d->n; q++)
      if ((d->pred[o] >> q) & 1) d->pred[o] |= d->pred[q];
  uint64_t all = d->n == 64 ? UINT64_MAX : (((uint64_t)1 << d->n) - 1);
  uint64_t best = dp_best(d, all);
  *downsets = d->downsets;
  free(d->keys), free(d->vals), free(d);
  return best;
}

/* Random layered DAGs of 20-30 ops (no in-place / views), 2-4 ops wide:
 * the exact search's optimum equals the downset oracle's. */
static void test_exact_vs_downset_oracle(void **state) {
  (void)state;
  int proven = 0;
  for (uint64_t seed = 77; seed < 77 + 24; seed++) {
    gen_t gn = {seed, 1};
    uint32_t n = 20 + (uint32_t)(seed % 11);
    nnmem_graph_t *g;
    assert_ok(nnmem_graph_create("layered", &g));
    uint32_t t[64], nt = 0;
    t[nt++] = tu_add_tensor(g, "in", NNMEM_TENSOR_INPUT, 8 * (1 + rnd(&gn, 8)));
    for (uint32_t o = 0; o < n; o++) {
      char name[16], tn[16];
      snprintf(name, sizeof name, "op%u", o);
      snprintf(tn, sizeof tn, "t%u", o);
      uint32_t ins[3], k = 1 + rnd(&gn, 2);
      for (uint32_t i = 0; i < k; i++) /* from the last few tensors */
        ins[i] = t[nt - 1 - rnd(&gn, nt < 5 ? nt : 5)];
      if (k == 2 && ins[0] == ins[1]) k = 1;
      uint32_t out = tu_add_tensor(
          g, tn, o + 1 == n ? NNMEM_TENSOR_OUTPUT : NNMEM_TENSOR_ACTIVATION,
          8 * (1 + rnd(&gn, 32)));
      nnmem_op_desc_t d;
      memset(&d, 0, sizeof d);
      d.name = name;
      d.type = "T";
      d.inputs = ins;
      d.n_inputs = k;
      d.outputs = &out;
      d.n_outputs = 1;
      if (rnd(&gn, 6) == 0) d.workspace_bytes = 8 * (1 + rnd(&gn, 16));
      assert_ok(nnmem_graph_add_op(g, &d, NULL, NULL));
      t[nt++] = out;
    }
    uint64_t align = seed % 2 ? 1 : 32, downsets = 0;
    uint64_t best = dp_min(g, align, &downsets);
    nnmem_order_report_t r = run_order(g, NNMEM_ORDER_AUTO, 0, align);
    nnmem_order_report_t h = run_order(g, NNMEM_ORDER_HEURISTIC, 0, align);
    if (r.peak != best || !r.exact || h.peak < best)
      fail_msg(
          "seed %llu (%u ops, %llu downsets): exact %llu (proven %d), "
          "heuristic %llu, oracle %llu",
          (unsigned long long)seed, n, (unsigned long long)downsets,
          (unsigned long long)r.peak, r.exact, (unsigned long long)h.peak,
          (unsigned long long)best);
    proven += r.exact;
    printf("seed %llu: %u ops, %llu downsets, optimum %llu (file %llu)\n",
           (unsigned long long)seed, n, (unsigned long long)downsets,
           (unsigned long long)best, (unsigned long long)r.file_peak);
    nnmem_graph_destroy(g);
  }
  assert_int_equal(proven, 24);
}

/* x -> a1 (100) -> a2 (1); x -> b1 (100) -> b2 (1); add(a2, b2).
 * File order a1 b1 a2 b2 add peaks at b1: x 10 + a1 100 + b1 100 = 210;
 * a1 a2 b1 b2 add peaks at 111 (x + a1 + a2, then x + a2 + b1). */
static void test_diamond_by_hand(void **state) {
  (void)state;
  nnmem_graph_t *g;
  assert_ok(nnmem_graph_create("diamond", &g));
  uint32_t x = tu_add_tensor(g, "x", NNMEM_TENSOR_INPUT, 10);
  uint32_t a1 = tu_add_tensor(g, "a1", NNMEM_TENSOR_ACTIVATION, 100);
  uint32_t b1 = tu_add_tensor(g, "b1", NNMEM_TENSOR_ACTIVATION, 100);
  uint32_t a2 = tu_add_tensor(g, "a2", NNMEM_TENSOR_ACTIVATION, 1);
  uint32_t b2 = tu_add_tensor(g, "b2", NNMEM_TENSOR_ACTIVATION, 1);
  uint32_t y = tu_add_tensor(g, "y", NNMEM_TENSOR_OUTPUT, 1);
  struct {
    const char *name;
    uint32_t in[2], n_in, out;
  } ops[] = {{"A1", {x}, 1, a1},
             {"B1", {x}, 1, b1},
             {"A2", {a1}, 1, a2},
             {"B2", {b1}, 1, b2},
             {"Add", {a2, b2}, 2, y}};
  for (size_t i = 0; i < 5; i++) {
    nnmem_op_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = ops[i].name;
    d.type = "T";
    d.inputs = ops[i].in;
    d.n_inputs = ops[i].n_in;
    d.outputs = &ops[i].out;
    d.n_outputs = 1;
    assert_ok(nnmem_graph_add_op(g, &d, NULL, NULL));
  }
  nnmem_order_report_t r = run_order(g, NNMEM_ORDER_AUTO, 0, 1);
  assert_int_equal(r.file_peak, 210);
  assert_int_equal(r.peak, 111);
  assert_true(r.exact);
  nnmem_order_report_t h = run_order(g, NNMEM_ORDER_HEURISTIC, 1, 1);
  assert_int_equal(h.peak, 111);
  nnmem_graph_destroy(g);
}

/* A chain has one order: heuristic == exact == file order; each op is a
 * cut op, so every part is a single op. */
static void test_chain(void **state) {
  (void)state;
  nnmem_graph_t *g;
  assert_ok(nnmem_graph_create("chain", &g));
  uint32_t prev = tu_add_tensor(g, "in", NNMEM_TENSOR_INPUT, 40);
  for (int i = 0; i < 30; i++) {
    char tn[16], on[16];
    snprintf(tn, sizeof tn, "t%d", i);
    snprintf(on, sizeof on, "op%d", i);
    uint32_t t = tu_add_tensor(
        g, tn, i == 29 ? NNMEM_TENSOR_OUTPUT : NNMEM_TENSOR_ACTIVATION,
        (uint64_t)(8 + (i * 37) % 50));
    nnmem_op_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = on;
    d.type = "T";
    d.inputs = &prev;
    d.n_inputs = 1;
    d.outputs = &t;
    d.n_outputs = 1;
    d.flags = i % 3 == 0 ? NNMEM_OP_INPLACE : 0;
    assert_ok(nnmem_graph_add_op(g, &d, NULL, NULL));
    prev = t;
  }
  nnmem_order_report_t r = run_order(g, NNMEM_ORDER_AUTO, 0, 1);
  nnmem_order_report_t h = run_order(g, NNMEM_ORDER_HEURISTIC, 1, 1);
  assert_int_equal(r.peak, h.peak);
  assert_int_equal(r.peak, r.file_peak);
  assert_true(r.exact);
  assert_int_equal(r.parts, 30);
  nnmem_graph_destroy(g);
}

static void test_cycle(void **state) {
  (void)state;
  nnmem_graph_t *g;
  assert_ok(nnmem_graph_create("cycle", &g));
  uint32_t t1 = tu_add_tensor(g, "t1", NNMEM_TENSOR_ACTIVATION, 8);
  uint32_t t2 = tu_add_tensor(g, "t2", NNMEM_TENSOR_ACTIVATION, 8);
  uint32_t io[][2] = {{t2, t1}, {t1, t2}};
  const char *names[] = {"first", "second"};
  for (int i = 0; i < 2; i++) {
    nnmem_op_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = names[i];
    d.type = "T";
    d.inputs = &io[i][0];
    d.n_inputs = 1;
    d.outputs = &io[i][1];
    d.n_outputs = 1;
    assert_ok(nnmem_graph_add_op(g, &d, NULL, NULL));
  }
  uint32_t order[2];
  nnmem_diag_t diag = {{0}};
  assert_int_equal(nnmem_graph_order_memory(g, NULL, order, NULL, &diag),
                   NNMEM_ERR_CYCLE);
  assert_true(strstr(diag.message, "'first'") ||
              strstr(diag.message, "'second'"));
  assert_int_equal(nnmem_graph_order_memory(NULL, NULL, order, NULL, &diag),
                   NNMEM_ERR_INVALID);
  nnmem_graph_destroy(g);
}

/* The RandWire stage of the README (examples/graphs/randwire_16.json, 57
 * ops): proven optimal within the default budget at the figure the README
 * shows; the heuristic (beam and greedy) never below it. */
static void test_randwire_example(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/graphs/randwire_16.json",
           NNMEM_SOURCE_DIR);
  nnmem_graph_t *g = NULL;
  nnmem_diag_t d = {{0}};
  if (nnmem_graph_read_json_file(path, &g, &d) != NNMEM_OK)
    fail_msg("%s", d.message);
  nnmem_order_report_t r = run_order(g, NNMEM_ORDER_AUTO, 0, 1);
  assert_true(r.exact);
  assert_int_equal(r.peak, 2446080);
  assert_int_equal(r.file_peak, 2935296);
  nnmem_order_report_t h = run_order(g, NNMEM_ORDER_HEURISTIC, 0, 1);
  nnmem_order_report_t h1 = run_order(g, NNMEM_ORDER_HEURISTIC, 1, 1);
  assert_true(h.peak >= r.peak && h1.peak >= r.peak);
  printf("randwire_16: exact %llu, beam %llu, greedy %llu, file %llu\n",
         (unsigned long long)r.peak, (unsigned long long)h.peak,
         (unsigned long long)h1.peak, (unsigned long long)r.file_peak);
  nnmem_graph_destroy(g);
}

/* Concat-into-output and the order (a miniature of light_shufflenet).
 *
 *   in (24 B) -> a -> x0 (16 B) --\
 *   in2 (4 B) -> b -> big1 (64) -> c -> big2 (64) -> d -> x1 (16 B) --> cat
 *                                              Concat(x0, x1) -> out (32 B)
 *
 * File order b c d a cat. At c, big1 + big2 (128 B) are live with either
 * `in` (a not run yet: 152 B) or x0 (a ran first: 144 B). Without
 * sub-buffers the best order runs a first: 144 B, proven. With
 * concat-into-output x0 is written into `out`, live from a on: a-first
 * peaks at 32 + 128 = 160 B, above the file order's 152 B (its `out` only
 * starts at d). The search's model knows the sub-buffers (x0 and x1 cost
 * the bytes of `out` from their first production on), so it proves the
 * file order's 152 B optimal for the plan that will be built (the
 * test_order_sub enumeration checks such proofs on random graphs).
 * Regression: no_concat_into_output was not in the order config, and the
 * search measured every order with sub-buffers. */
static void test_concat_into_output(void **state) {
  (void)state;
  static const char json[] =
      "{\"format_version\": 1, \"name\": \"concat_order\", \"tensors\": ["
      "{\"name\": \"in\", \"kind\": \"input\", \"dtype\": \"float32\","
      " \"shape\": [1, 6]},"
      "{\"name\": \"in2\", \"kind\": \"input\", \"dtype\": \"float32\","
      " \"shape\": [1, 1]},"
      "{\"name\": \"x0\", \"dtype\": \"float32\", \"shape\": [1, 4]},"
      "{\"name\": \"big1\", \"dtype\": \"float32\", \"shape\": [1, 16]},"
      "{\"name\": \"big2\", \"dtype\": \"float32\", \"shape\": [1, 16]},"
      "{\"name\": \"x1\", \"dtype\": \"float32\", \"shape\": [1, 4]},"
      "{\"name\": \"out\", \"kind\": \"output\", \"dtype\": \"float32\","
      " \"shape\": [1, 8]}], \"ops\": ["
      "{\"name\": \"b\", \"type\": \"T\", \"inputs\": [\"in2\"],"
      " \"outputs\": [\"big1\"]},"
      "{\"name\": \"c\", \"type\": \"T\", \"inputs\": [\"big1\"],"
      " \"outputs\": [\"big2\"]},"
      "{\"name\": \"d\", \"type\": \"T\", \"inputs\": [\"big2\"],"
      " \"outputs\": [\"x1\"]},"
      "{\"name\": \"a\", \"type\": \"T\", \"inputs\": [\"in\"],"
      " \"outputs\": [\"x0\"]},"
      "{\"name\": \"cat\", \"type\": \"Concat\", \"inputs\": [\"x0\", \"x1\"],"
      " \"outputs\": [\"out\"]}]}";
  nnmem_graph_t *g = NULL;
  nnmem_diag_t d = {{0}};
  if (nnmem_graph_parse_json(json, sizeof json - 1, "concat_order", &g, &d))
    fail_msg("%s", d.message);
  /* the a-first order measured by liveness itself, with and without
   * sub-buffers: the two sides of the regression */
  const uint32_t a_first[5] = {3, 0, 1, 2, 4};
  uint64_t expect[2] = {160, 144};
  for (int noc = 0; noc < 2; noc++) {
    nnmem_liveness_config_t lc;
    nnmem_liveness_config_init(&lc);
    lc.order = a_first;
    lc.no_concat_into_output = noc;
    nnmem_liveness_t *l = NULL;
    assert_ok(nnmem_liveness_analyze(g, &lc, &l, NULL));
    assert_int_equal(nnmem_liveness_sub_buffers(l), noc ? 0 : 2);
    uint64_t lb;
    assert_ok(nnmem_problem_lower_bound(nnmem_liveness_problem(l), 1, &lb));
    assert_int_equal(lb, expect[noc]);
    nnmem_liveness_destroy(l);
  }
  uint32_t order[5];
  for (int noc = 0; noc < 2; noc++) {
    nnmem_order_config_t cfg;
    nnmem_order_config_init(&cfg);
    cfg.no_concat_into_output = noc;
    nnmem_order_report_t r;
    memset(&r, 0, sizeof r);
    assert_ok(nnmem_graph_order_memory(g, &cfg, order, &r, NULL));
    assert_int_equal(r.file_peak, 152);
    assert_int_equal(r.peak, noc ? 144 : 152);
    assert_int_equal(r.exact, 1);
    if (noc) assert_int_equal(order[0], 3); /* a first */
    uint64_t p;
    nnmem_liveness_config_t lc;
    nnmem_liveness_config_init(&lc);
    lc.order = order;
    lc.no_concat_into_output = noc;
    nnmem_liveness_t *l = NULL;
    assert_ok(nnmem_liveness_analyze(g, &lc, &l, NULL));
    assert_ok(nnmem_problem_lower_bound(nnmem_liveness_problem(l), 1, &p));
    assert_int_equal(p, r.peak);
    nnmem_liveness_destroy(l);
  }
  /* Letting the search keep Concats out of concat-into-output: `cat` kept
   * out, a first, 144 B as without sub-buffers (and the liveness built
   * with the choice agrees). */
  uint8_t kept[5] = {9, 9, 9, 9, 9};
  nnmem_order_config_t cfg;
  nnmem_order_config_init(&cfg);
  cfg.concat_ops_out = kept;
  nnmem_order_report_t r;
  memset(&r, 0, sizeof r);
  assert_ok(nnmem_graph_order_memory(g, &cfg, order, &r, NULL));
  assert_int_equal(r.file_peak, 152);
  assert_int_equal(r.peak, 144);
  assert_int_equal(r.exact, 1);
  assert_int_equal(r.concat_ops_off, 1);
  const uint8_t want[5] = {0, 0, 0, 0, 1}; /* op 4 is cat */
  assert_memory_equal(kept, want, 5);
  nnmem_liveness_config_t lc;
  nnmem_liveness_config_init(&lc);
  lc.order = order;
  lc.no_concat_ops = kept;
  nnmem_liveness_t *l = NULL;
  assert_ok(nnmem_liveness_analyze(g, &lc, &l, NULL));
  assert_int_equal(nnmem_liveness_sub_buffers(l), 0);
  uint64_t p;
  assert_ok(nnmem_problem_lower_bound(nnmem_liveness_problem(l), 1, &p));
  assert_int_equal(p, 144);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

/* The built-in models: valid orders, never above the file order. */
static void test_zoo(void **state) {
  (void)state;
  const char *models[] = {"resnet50", "mobilenetv2", "bert-tiny"};
  for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
    nnmem_graph_t *g = NULL;
    if (nnmem_zoo_build(models[i], 1, &g, NULL) != NNMEM_OK) continue;
    size_t n = nnmem_graph_op_count(g);
    uint32_t *order = malloc(n * sizeof *order);
    nnmem_order_report_t r;
    memset(&r, 0, sizeof r);
    assert_ok(nnmem_graph_order_memory(g, NULL, order, &r, NULL));
    uint64_t p;
    assert_ok(nnmem_graph_order_peak(g, order, 1, 0, &p, NULL));
    assert_int_equal(p, r.peak);
    assert_true(r.peak <= r.file_peak);
    printf("%s: %zu ops, file %llu, memory %llu, %zu parts (%zu exact)\n",
           models[i], n, (unsigned long long)r.file_peak,
           (unsigned long long)r.peak, r.parts, r.parts_exact);
    free(order);
    nnmem_graph_destroy(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_diamond_by_hand),
      cmocka_unit_test(test_chain),
      cmocka_unit_test(test_cycle),
      cmocka_unit_test(test_exact_vs_enumeration),
      cmocka_unit_test(test_exact_vs_enumeration_odd_sizes),
      cmocka_unit_test(test_exact_vs_downset_oracle),
      cmocka_unit_test(test_randwire_example),
      cmocka_unit_test(test_concat_into_output),
      cmocka_unit_test(test_zoo),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

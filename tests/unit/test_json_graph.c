/* test_json_graph.c - the JSON graph reader: the example graphs, every
 * field, and one message per kind of bad input (naming file and node). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static nnmem_graph_t *parse_ok(const char *text) {
  nnmem_graph_t *g = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st =
      nnmem_graph_parse_json(text, strlen(text), "g.json", &g, &diag);
  if (st != NNMEM_OK)
    fail_msg("parse failed: %s: %s", nnmem_status_name(st), diag.message);
  return g;
}

static void expect_err_v(const char *text, size_t len, nnmem_status_t want,
                         va_list ap) {
  nnmem_graph_t *g = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_graph_parse_json(text, len, "g.json", &g, &diag);
  if (st != want)
    fail_msg("want %s, got %s (%s)", nnmem_status_name(want),
             nnmem_status_name(st), diag.message);
  assert_null(g);
  if (strncmp(diag.message, "g.json:", 7) != 0)
    fail_msg("message '%s' does not start with the file name", diag.message);
  for (const char *s; (s = va_arg(ap, const char *));)
    if (!strstr(diag.message, s))
      fail_msg("message '%s' lacks '%s'", diag.message, s);
}

static void expect_err_f(const char *text, nnmem_status_t want, ...) {
  va_list ap;
  va_start(ap, want);
  expect_err_v(text, strlen(text), want, ap);
  va_end(ap);
}
#define expect_err(text, want, ...) \
  expect_err_f(text, want, __VA_ARGS__, (const char *)NULL)

/* A document with the given tensors and ops arrays (JSON text). */
static const char *doc(const char *tensors, const char *ops) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "{\"format_version\": 1, \"name\": \"t\",\n \"tensors\": [%s],\n "
           "\"ops\": [%s]}",
           tensors, ops);
  return buf;
}

static uint32_t tid(const nnmem_graph_t *g, const char *name) {
  uint32_t id = UINT32_MAX;
  assert_ok(nnmem_graph_find_tensor(g, name, &id));
  return id;
}

static nnmem_tensor_info_t tinfo(const nnmem_graph_t *g, const char *name) {
  nnmem_tensor_info_t ti;
  assert_ok(nnmem_graph_tensor(g, tid(g, name), &ti));
  return ti;
}

static nnmem_graph_t *load_example(const char *file) {
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/graphs/%s", NNMEM_SOURCE_DIR, file);
  nnmem_graph_t *g = NULL;
  nnmem_diag_t diag = {{0}};
  nnmem_status_t st = nnmem_graph_read_json_file(path, &g, &diag);
  if (st != NNMEM_OK) fail_msg("%s: %s", path, diag.message);
  return g;
}

/* ---- valid graphs
 * ------------------------------------------------------------ */

static void test_tiny_example(void **state) {
  (void)state;
  nnmem_graph_t *g = load_example("tiny.json");
  assert_string_equal(nnmem_graph_name(g), "tiny");
  assert_int_equal(nnmem_graph_tensor_count(g), 4);
  assert_int_equal(nnmem_graph_op_count(g), 3);
  nnmem_tensor_info_t a = tinfo(g, "A"), b = tinfo(g, "B"), c = tinfo(g, "C");
  assert_int_equal(a.kind, NNMEM_TENSOR_INPUT);
  assert_int_equal(a.bytes, 1024);
  assert_int_equal(b.kind, NNMEM_TENSOR_ACTIVATION);
  assert_int_equal(b.dtype, NNMEM_DTYPE_FLOAT32);
  assert_int_equal(b.rank, 2);
  assert_int_equal(b.shape[1], 256);
  assert_int_equal(b.producer, 0);
  assert_int_equal(b.n_consumers, 2);
  assert_int_equal(c.kind, NNMEM_TENSOR_OUTPUT);
  assert_int_equal(c.bytes, 512);
  assert_int_equal(tinfo(g, "D").bytes, 256);
  nnmem_op_info_t op;
  assert_ok(nnmem_graph_op(g, 2, &op));
  assert_string_equal(op.name, "Op3");
  assert_string_equal(op.type, "Slice");
  assert_int_equal(op.n_inputs, 1);
  assert_int_equal(op.inputs[0], tid(g, "B"));
  assert_int_equal(op.outputs[0], tid(g, "D"));
  nnmem_graph_destroy(g);
}

static void test_small_cnn_example(void **state) {
  (void)state;
  nnmem_graph_t *g = load_example("small_cnn.json");
  assert_int_equal(nnmem_graph_tensor_count(g), 17);
  assert_int_equal(nnmem_graph_op_count(g), 10);
  assert_int_equal(tinfo(g, "conv1.out").bytes, 16 * 32 * 32 * 4);
  nnmem_tensor_info_t w = tinfo(g, "fc.w");
  assert_int_equal(w.kind, NNMEM_TENSOR_WEIGHT);
  assert_int_equal(w.bytes, 640);
  assert_int_equal(w.align, 64);
  assert_int_equal(tinfo(g, "fc.b").kind, NNMEM_TENSOR_CONSTANT);
  nnmem_op_info_t op;
  assert_ok(nnmem_graph_op(g, 0, &op)); /* conv1 */
  assert_int_equal(op.workspace_bytes, 110592);
  assert_int_equal(op.n_inputs, 3);
  assert_ok(nnmem_graph_op(g, 5, &op)); /* add: residual, in place */
  assert_string_equal(op.name, "add");
  assert_int_equal(op.flags, NNMEM_OP_INPLACE);
  assert_int_equal(op.inplace_input, 0);
  assert_int_equal(op.inputs[1], tid(g, "relu1.out"));
  assert_ok(nnmem_graph_op(g, 8, &op)); /* flatten: a view */
  assert_int_equal(op.flags, NNMEM_OP_VIEW);
  assert_int_equal(op.view_input, 0);
  /* the graph plans: 4 in-place ops and 1 view share buffers */
  nnmem_liveness_t *l = NULL;
  assert_ok(nnmem_liveness_analyze(g, NULL, &l, NULL));
  assert_int_equal(nnmem_liveness_aliased_tensors(l), 5);
  /* weights: 1728 + 64 + 9216 + 9216 + 640 (at 64-aligned 20224) + 40 */
  assert_int_equal(nnmem_liveness_weight_bytes(l), 20904);
  nnmem_plan_t *plan = tu_plan_verified(nnmem_liveness_problem(l), NULL);
  nnmem_plan_destroy(plan);
  nnmem_liveness_destroy(l);
  nnmem_graph_destroy(g);
}

static void test_fields(void **state) {
  (void)state;
  nnmem_graph_t *g = parse_ok(
      doc("{\"name\": \"in\", \"kind\": \"input\", \"bytes\": 100},"
          "{\"name\": \"s\", \"dtype\": \"fp16\", \"shape\": []},"
          "{\"name\": \"e\", \"dtype\": \"int8\", \"shape\": [3, 0]},"
          "{\"name\": \"ws\", \"kind\": \"workspace\", \"bytes\": "
          "9007199254740991},"
          "{\"name\": \"out\", \"kind\": \"output\", \"dtype\": \"bool\", "
          "\"shape\": [7], \"bytes\": 64, \"align\": 16}",
          "{\"name\": \"a\", \"type\": \"X\", \"inputs\": [\"in\", \"in\"], "
          "\"outputs\": [\"s\", \"e\", \"ws\"], \"workspace\": 0},"
          "{\"name\": \"b\", \"type\": \"Y\", \"inputs\": [\"s\"], "
          "\"outputs\": [\"out\"], \"workspace\": 4096}"));
  assert_string_equal(nnmem_graph_name(g), "t");
  assert_int_equal(tinfo(g, "in").bytes, 100);
  assert_int_equal(tinfo(g, "s").bytes, 2); /* scalar fp16 */
  assert_int_equal(tinfo(g, "s").dtype, NNMEM_DTYPE_FLOAT16);
  assert_int_equal(tinfo(g, "e").bytes, 0);
  assert_int_equal(tinfo(g, "ws").bytes, 9007199254740991ULL);
  assert_int_equal(tinfo(g, "out").bytes, 64); /* bytes wins over shape */
  assert_int_equal(tinfo(g, "out").rank, 1);
  assert_int_equal(tinfo(g, "out").align, 16);
  nnmem_op_info_t op;
  assert_ok(nnmem_graph_op(g, 1, &op));
  assert_int_equal(op.workspace_bytes, 4096);
  assert_int_equal(op.flags, 0);
  nnmem_graph_destroy(g);
  /* no name: the file name without .json; empty graph */
  g = NULL;
  const char *empty = "{\"format_version\": 1, \"tensors\": [], \"ops\": []}";
  assert_ok(nnmem_graph_parse_json(empty, strlen(empty), "dir/my_net.json", &g,
                                   NULL));
  assert_string_equal(nnmem_graph_name(g), "my_net");
  assert_int_equal(nnmem_graph_tensor_count(g), 0);
  nnmem_graph_destroy(g);
}

static void test_every_example_loads(void **state) {
  (void)state;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/examples/graphs", NNMEM_SOURCE_DIR);
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    nnmem_graph_t *g = load_example(e->d_name);
    assert_int_equal(nnmem_graph_check(g, NULL), NNMEM_OK);
    nnmem_graph_destroy(g);
    n++;
  }
  closedir(d);
  assert_true(n >= 2);
}

/* ---- bad input
 * ------------------------------------------------------------------ */

static void test_err_syntax(void **state) {
  (void)state;
  expect_err("{\n  \"format_version\": 1,\n  oops\n}", NNMEM_ERR_PARSE,
             "g.json:3:3:", "not valid JSON", "oops");
  expect_err("", NNMEM_ERR_PARSE, "g.json: empty file");
  expect_err(" \n\t\r\n", NNMEM_ERR_PARSE, "g.json: empty file");
  expect_err("{\"format_version\": 1,\n \"tensors\": [", NNMEM_ERR_PARSE,
             "g.json:2:", "end of input");
  expect_err("{\"format_version\": 1} trailing", NNMEM_ERR_PARSE,
             "g.json:1:23:", "not valid JSON");
  expect_err("{\"name\": \"\xFF\"}", NNMEM_ERR_PARSE, "g.json:1:11:", "UTF-8");
  static const char nul[] = "{\"name\": \"a\0\"}";
  nnmem_graph_t *g = NULL;
  nnmem_diag_t diag = {{0}};
  assert_int_equal(
      nnmem_graph_parse_json(nul, sizeof nul - 1, "g.json", &g, &diag),
      NNMEM_ERR_PARSE);
  assert_non_null(strstr(diag.message, "g.json:1:12: NUL"));
}

static void test_err_top_level(void **state) {
  (void)state;
  expect_err("[1, 2]", NNMEM_ERR_PARSE, "must be an object, not an array");
  expect_err(
      "{\"format_version\": 1, \"tensors\": [], \"ops\": [], \"foo\": 1, "
      "\"bar\": {}}",
      NNMEM_ERR_PARSE, "unknown top-level keys 'foo', 'bar'");
  expect_err("{\"tensors\": [], \"ops\": []}", NNMEM_ERR_PARSE,
             "missing required field 'format_version'");
  expect_err("{\"format_version\": 2, \"tensors\": [], \"ops\": []}",
             NNMEM_ERR_UNSUPPORTED, "format_version 2");
  expect_err("{\"format_version\": \"1\", \"tensors\": [], \"ops\": []}",
             NNMEM_ERR_PARSE,
             "'format_version' must be an integer, not a string");
  expect_err("{\"format_version\": 1, \"ops\": []}", NNMEM_ERR_PARSE,
             "missing required field 'tensors'");
  expect_err("{\"format_version\": 1, \"tensors\": {}, \"ops\": []}",
             NNMEM_ERR_PARSE, "'tensors' must be an array, not an object");
  expect_err(
      "{\"format_version\": 1, \"name\": 3, \"tensors\": [], \"ops\": []}",
      NNMEM_ERR_PARSE, "'name' must be a string, not a number");
  expect_err(
      "{\"format_version\": 1, \"tensors\": [], \"ops\": [], \"ops\": []}",
      NNMEM_ERR_PARSE, "key 'ops' appears twice");
}

/* 200000 unknown keys: the key check is linear (it was quadratic, minutes)
 * and the message lists the first few, not all of them. */
static void test_err_many_keys(void **state) {
  (void)state;
  const size_t n = 200000;
  char *text = malloc(n * 16 + 64);
  assert_non_null(text);
  size_t len = (size_t)sprintf(text, "{\"format_version\": 1");
  for (size_t i = 0; i < n; i++)
    len += (size_t)sprintf(text + len, ", \"k%zu\": 0", i);
  len += (size_t)sprintf(text + len, "}");
  nnmem_graph_t *g = NULL;
  nnmem_diag_t diag = {{0}};
  clock_t t0 = clock();
  assert_int_equal(nnmem_graph_parse_json(text, len, "g.json", &g, &diag),
                   NNMEM_ERR_PARSE);
  double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
  if (secs > 5.0) fail_msg("200000 keys took %.1f s", secs);
  assert_non_null(strstr(diag.message,
                         "unknown top-level keys 'k0', 'k1', 'k2', 'k3', ..."));
  free(text);
}

/* Deep nesting stops at cJSON's limit with a message that says so. */
static void test_err_deep_nesting(void **state) {
  (void)state;
  const size_t n = 100000;
  char *text = malloc(2 * n + 1);
  assert_non_null(text);
  memset(text, '[', n);
  memset(text + n, ']', n);
  text[2 * n] = '\0';
  expect_err_f(text, NNMEM_ERR_PARSE, "g.json:1:", "nested more than",
               "levels deep", (const char *)NULL);
  free(text);
}

static void test_err_tensors(void **state) {
  (void)state;
  expect_err(doc("{\"kind\": \"input\", \"bytes\": 4}", ""), NNMEM_ERR_PARSE,
             "g.json: tensors[0]: missing required field 'name'");
  expect_err(doc("{\"name\": 5, \"bytes\": 4}", ""), NNMEM_ERR_PARSE,
             "tensors[0]: 'name' must be a string, not a number");
  expect_err(doc("7", ""), NNMEM_ERR_PARSE,
             "tensors[0]: must be an object, not a number");
  expect_err(
      doc("{\"name\": \"a\", \"bytes\": 4},"
          "{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [2, -3]}",
          ""),
      NNMEM_ERR_PARSE,
      "g.json: tensor 'x' (tensors[1]): 'shape[1]' is -3 but must be >= 0");
  expect_err(
      doc("{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [2.5]}", ""),
      NNMEM_ERR_PARSE,
      "tensor 'x' (tensors[0]): 'shape[0]' must be an integer");
  expect_err(
      doc("{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": \"2\"}", ""),
      NNMEM_ERR_PARSE, "'shape' must be an array, not a string");
  expect_err(doc("{\"name\": \"x\", \"dtype\": \"float32\", "
                 "\"shape\": [1,1,1,1,1,1,1,1,1]}",
                 ""),
             NNMEM_ERR_PARSE, "9 dimensions, at most 8");
  expect_err(
      doc("{\"name\": \"x\", \"dtype\": \"float33\", \"shape\": [2]}", ""),
      NNMEM_ERR_PARSE, "tensor 'x' (tensors[0]): unknown dtype 'float33'");
  expect_err(doc("{\"name\": \"x\", \"kind\": \"param\", \"bytes\": 2}", ""),
             NNMEM_ERR_PARSE, "tensor 'x' (tensors[0]): unknown kind 'param'");
  expect_err(
      doc("{\"name\": \"x\", \"bytes\": 2},{\"name\": \"x\", \"bytes\": 4}",
          ""),
      NNMEM_ERR_DUPLICATE,
      "tensor 'x' (tensors[1]): name already used by tensors[0]");
  expect_err(doc("{\"name\": \"big\", \"dtype\": \"float32\", "
                 "\"shape\": [4294967296, 4294967296]}",
                 ""),
             NNMEM_ERR_OVERFLOW, "tensors[0]", "'big'", "overflows 64 bits");
  expect_err(doc("{\"name\": \"x\", \"bytes\": 1e19}", ""), NNMEM_ERR_OVERFLOW,
             "tensor 'x' (tensors[0]): 'bytes'", "2^53");
  /* 2^53 + 1 parses as 2^53: neither is accepted, nothing is rounded */
  expect_err(doc("{\"name\": \"x\", \"bytes\": 9007199254740993}", ""),
             NNMEM_ERR_OVERFLOW, "'bytes' is 9007199254740992, above 2^53 - 1");
  expect_err(doc("{\"name\": \"x\", \"bytes\": 9007199254740992}", ""),
             NNMEM_ERR_OVERFLOW, "above 2^53 - 1");
  expect_err(doc("{\"name\": \"x\", \"bytes\": 0}", ""), NNMEM_ERR_PARSE,
             "'bytes' is 0 but must be >= 1");
  expect_err(doc("{\"name\": \"x\", \"bytes\": -4}", ""), NNMEM_ERR_PARSE,
             "'bytes' is -4");
  expect_err(doc("{\"name\": \"x\", \"shape\": [2]}", ""), NNMEM_ERR_PARSE,
             "'shape' needs a 'dtype'");
  expect_err(doc("{\"name\": \"x\", \"dtype\": \"int8\"}", ""), NNMEM_ERR_PARSE,
             "needs a 'shape'");
  expect_err(doc("{\"name\": \"x\", \"bytes\": 8, \"align\": 3}", ""),
             NNMEM_ERR_PARSE, "'align' 3 is not a power of two");
  expect_err(doc("{\"name\": \"x\", \"bytes\": 8, \"shap\": [1]}", ""),
             NNMEM_ERR_PARSE, "tensor 'x' (tensors[0]): unknown key 'shap'",
             "allowed: name, kind, dtype, shape, bytes, align");
  expect_err(doc("{\"name\": \"x\", \"bytes\": 8, \"bytes\": 9}", ""),
             NNMEM_ERR_PARSE, "key 'bytes' appears twice");
  expect_err(doc("{\"name\": \"x\", \"bytes\": true}", ""), NNMEM_ERR_PARSE,
             "'bytes' must be an integer, not a boolean");
}

#define T_IN "{\"name\": \"in\", \"kind\": \"input\", \"bytes\": 4}"
#define T_A "{\"name\": \"a\", \"bytes\": 4}"
#define T_B "{\"name\": \"b\", \"bytes\": 4}"

static void test_err_ops(void **state) {
  (void)state;
  expect_err(doc(T_IN "," T_A,
                 "{\"name\": \"conv1\", \"type\": \"Conv\", \"inputs\": "
                 "[\"in\", \"x\"], \"outputs\": [\"a\"]}"),
             NNMEM_ERR_PARSE,
             "g.json: op 'conv1' (ops[0]): input 'x' is not a declared tensor");
  expect_err(doc(T_IN,
                 "{\"name\": \"c\", \"type\": \"Conv\", \"inputs\": [\"in\"], "
                 "\"outputs\": [\"y\"]}"),
             NNMEM_ERR_PARSE, "op 'c' (ops[0]): output 'y' is not a declared");
  expect_err(doc(T_IN, "{\"type\": \"Conv\", \"inputs\": [], \"outputs\": []}"),
             NNMEM_ERR_PARSE, "g.json: ops[0]: missing required field 'name'");
  expect_err(doc(T_IN, "{\"name\": \"c\", \"inputs\": [], \"outputs\": []}"),
             NNMEM_ERR_PARSE, "op 'c' (ops[0]): missing required field 'type'");
  expect_err(doc(T_IN, "{\"name\": \"c\", \"type\": \"X\", \"outputs\": []}"),
             NNMEM_ERR_PARSE, "missing required field 'inputs'");
  expect_err(doc(T_IN,
                 "{\"name\": \"c\", \"type\": \"X\", \"inputs\": \"in\", "
                 "\"outputs\": []}"),
             NNMEM_ERR_PARSE, "'inputs' must be an array, not a string");
  expect_err(doc(T_IN,
                 "{\"name\": \"c\", \"type\": \"X\", \"inputs\": [0], "
                 "\"outputs\": []}"),
             NNMEM_ERR_PARSE, "inputs[0] must be a tensor name");
  expect_err(doc(T_IN "," T_A,
                 "{\"name\": \"c\", \"type\": \"X\", \"inputs\": [\"in\"], "
                 "\"outputs\": [\"a\"], \"inplace\": 1}"),
             NNMEM_ERR_PARSE, "op 'c' (ops[0]): 'inplace' is input index 1",
             "1 input");
  expect_err(doc(T_IN "," T_A,
                 "{\"name\": \"c\", \"type\": \"X\", \"inputs\": [\"in\"], "
                 "\"outputs\": [\"a\"], \"view\": -1}"),
             NNMEM_ERR_PARSE, "'view' is -1");
  expect_err(doc(T_IN "," T_A,
                 "{\"name\": \"c\", \"type\": \"X\", \"inputs\": [\"in\"], "
                 "\"outputs\": [\"a\"], \"workspace\": 1.5}"),
             NNMEM_ERR_PARSE, "'workspace' must be an integer, not 1.5");
  expect_err(doc(T_IN "," T_A,
                 "{\"name\": \"c\", \"type\": \"X\", \"inputs\": [\"in\"], "
                 "\"outputs\": [\"a\"], \"attrs\": {}}"),
             NNMEM_ERR_PARSE, "op 'c' (ops[0]): unknown key 'attrs'");
  expect_err(doc(T_IN "," T_A "," T_B,
                 "{\"name\": \"c\", \"type\": \"X\", \"inputs\": [\"in\"], "
                 "\"outputs\": [\"a\"]},"
                 "{\"name\": \"c\", \"type\": \"X\", \"inputs\": [\"a\"], "
                 "\"outputs\": [\"b\"]}"),
             NNMEM_ERR_DUPLICATE,
             "op 'c' (ops[1]): name already used by ops[0]");
  /* errors found by the graph library keep its text, prefixed */
  expect_err(doc(T_IN,
                 "{\"name\": \"w\", \"type\": \"X\", \"inputs\": [], "
                 "\"outputs\": [\"in\"]}"),
             NNMEM_ERR_INVALID, "g.json: ops[0]:", "'w'", "'in'");
  expect_err(doc(T_IN "," T_A,
                 "{\"name\": \"p\", \"type\": \"X\", \"inputs\": [\"in\"], "
                 "\"outputs\": [\"a\"]},"
                 "{\"name\": \"q\", \"type\": \"X\", \"inputs\": [\"in\"], "
                 "\"outputs\": [\"a\"]}"),
             NNMEM_ERR_INVALID, "g.json: ops[1]:", "'q'", "'p'");
}

/* "slice": {"axis", "start"} reaches nnmem_graph_op_slice; bad values name
 * the op. */
#define T_X6                                                        \
  "{\"name\": \"x\", \"kind\": \"input\", \"dtype\": \"float32\", " \
  "\"shape\": [1, 6, 4]}"
#define T_S2 "{\"name\": \"s\", \"dtype\": \"float32\", \"shape\": [1, 2, 4]}"
#define OP_SL(slice)                                              \
  "{\"name\": \"sl\", \"type\": \"Slice\", \"inputs\": [\"x\"], " \
  "\"outputs\": [\"s\"], \"slice\": " slice "}"
static void test_slice(void **state) {
  (void)state;
  nnmem_graph_t *g =
      parse_ok(doc(T_X6 "," T_S2, OP_SL("{\"axis\": 1, \"start\": 3}")));
  uint32_t axis = 0;
  int64_t start = 0;
  assert_int_equal(nnmem_graph_op_slice(g, 0, &axis, &start), 1);
  assert_int_equal(axis, 1);
  assert_int_equal(start, 3);
  nnmem_graph_destroy(g);
  expect_err(doc(T_X6 "," T_S2, OP_SL("[1, 3]")), NNMEM_ERR_PARSE,
             "g.json: op 'sl' (ops[0]): 'slice' must be an object",
             "not an array");
  expect_err(doc(T_X6 "," T_S2, OP_SL("{\"axis\": 1}")), NNMEM_ERR_PARSE,
             "op 'sl' (ops[0]): 'slice' needs 'axis' and 'start'");
  expect_err(
      doc(T_X6 "," T_S2, OP_SL("{\"axis\": 1, \"start\": 0, \"step\": 1}")),
      NNMEM_ERR_PARSE, "op 'sl' (ops[0]): unknown key 'step'");
  expect_err(doc(T_X6 "," T_S2, OP_SL("{\"axis\": -1, \"start\": 0}")),
             NNMEM_ERR_PARSE, "op 'sl' (ops[0]): 'slice.axis' is -1");
  expect_err(doc(T_X6 "," T_S2, OP_SL("{\"axis\": 1, \"start\": 0.5}")),
             NNMEM_ERR_PARSE, "'slice.start' must be an integer, not 0.5");
  expect_err(doc(T_X6 "," T_S2, OP_SL("{\"axis\": 1e15, \"start\": 0}")),
             NNMEM_ERR_PARSE, "'slice.axis' is 1000000000000000, at most 7");
  expect_err(doc(T_X6 "," T_S2, OP_SL("{\"axis\": 3, \"start\": 0}")),
             NNMEM_ERR_INVALID,
             "g.json: ops[0]: op 'sl': slice axis 3 out of range");
  expect_err(doc(T_X6 "," T_S2, OP_SL("{\"axis\": 1, \"start\": 5}")),
             NNMEM_ERR_INVALID, "op 'sl': slice [5, 5 + 2) exceeds dim 1");
  expect_err(doc(T_X6 "," T_S2, OP_SL("{\"axis\": 2, \"start\": 0}")),
             NNMEM_ERR_INVALID,
             "op 'sl': slice along axis 2 but dim 1 differs");
  expect_err(doc(T_X6 "," T_S2 "," T_B,
                 "{\"name\": \"sl\", \"type\": \"Slice\", \"inputs\": "
                 "[\"x\"], \"outputs\": [\"s\", \"b\"], \"slice\": "
                 "{\"axis\": 1, \"start\": 0}}"),
             NNMEM_ERR_INVALID, "op 'sl': a slice needs one output");
}

static void test_err_graph_check(void **state) {
  (void)state;
  /* a -> p -> b -> q -> a: a cycle, found at load time */
  expect_err(doc(T_A "," T_B,
                 "{\"name\": \"p\", \"type\": \"X\", \"inputs\": [\"a\"], "
                 "\"outputs\": [\"b\"]},"
                 "{\"name\": \"q\", \"type\": \"X\", \"inputs\": [\"b\"], "
                 "\"outputs\": [\"a\"]}"),
             NNMEM_ERR_CYCLE, "g.json: ", "'p'", "'q'");
  /* an activation nobody produces */
  expect_err(doc(T_A "," T_B,
                 "{\"name\": \"p\", \"type\": \"X\", \"inputs\": [\"a\"], "
                 "\"outputs\": [\"b\"]}"),
             NNMEM_ERR_INVALID, "g.json: ", "'a'");
}

/* Random byte edits of the CNN example: each parses or fails with a
 * message that starts with the file name. */
static void test_mutations(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/graphs/small_cnn.json",
           NNMEM_SOURCE_DIR);
  char *base = NULL;
  size_t len = 0;
  assert_ok(nnmem_file_read(path, &base, &len, NULL));
  char *text = malloc(len + 1);
  static const char alphabet[] = "{}[]\",:0123456789-.e aZ\n\xFF";
  const uint64_t seed0 = 77;
  uint64_t seed = seed0;
  for (int iter = 0; iter < 1500; iter++) {
    memcpy(text, base, len + 1);
    size_t n = len;
    int edits = 1 + (int)(tu_rand(&seed) % 3);
    for (int e = 0; e < edits && n > 0; e++) {
      size_t at = tu_rand(&seed) % n;
      uint64_t r = tu_rand(&seed);
      if (r % 7 == 0)
        n = at;
      else
        text[at] = alphabet[r % (sizeof alphabet - 1)];
    }
    nnmem_graph_t *g = NULL;
    nnmem_diag_t diag = {{0}};
    nnmem_status_t st = nnmem_graph_parse_json(text, n, "g.json", &g, &diag);
    if (st == NNMEM_OK) {
      nnmem_graph_destroy(g);
      continue;
    }
    if (strncmp(diag.message, "g.json", 6) != 0 || g)
      fail_msg("seed %llu iteration %d: %s: %s", (unsigned long long)seed0,
               iter, nnmem_status_name(st), diag.message);
  }
  free(text);
  free(base);
}

static void test_read_file(void **state) {
  (void)state;
  nnmem_graph_t *g = NULL;
  nnmem_diag_t diag = {{0}};
  assert_int_equal(
      nnmem_graph_read_json_file("/nonexistent/graph.json", &g, &diag),
      NNMEM_ERR_IO);
  assert_non_null(strstr(diag.message, "/nonexistent/graph.json"));
  assert_null(g);
  assert_int_equal(nnmem_graph_parse_json(NULL, 2, "x", &g, NULL),
                   NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_graph_parse_json("{}", 2, "x", NULL, NULL),
                   NNMEM_ERR_INVALID);
  /* a file's messages carry its path */
  char path[64];
  strcpy(path, "/tmp/nnmem_test_graph_XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  const char *text = doc(T_IN,
                         "{\"name\": \"c\", \"type\": \"X\", "
                         "\"inputs\": [\"zz\"], \"outputs\": []}");
  assert_ok(nnmem_file_write_atomic(path, text, strlen(text), NULL));
  assert_int_equal(nnmem_graph_read_json_file(path, &g, &diag),
                   NNMEM_ERR_PARSE);
  assert_true(strncmp(diag.message, path, strlen(path)) == 0);
  assert_non_null(strstr(diag.message, "op 'c' (ops[0]): input 'zz'"));
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tiny_example),
      cmocka_unit_test(test_small_cnn_example),
      cmocka_unit_test(test_fields),
      cmocka_unit_test(test_every_example_loads),
      cmocka_unit_test(test_err_syntax),
      cmocka_unit_test(test_err_top_level),
      cmocka_unit_test(test_err_tensors),
      cmocka_unit_test(test_err_ops),
      cmocka_unit_test(test_err_graph_check),
      cmocka_unit_test(test_err_many_keys),
      cmocka_unit_test(test_err_deep_nesting),
      cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_read_file),
      cmocka_unit_test(test_slice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_export.c - plan JSON and memory_profile.json writers: exact
 * contents on hand-computed graphs, key sets, and clean failures. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/export_json.h"
#include "testutil.h"

static int setup(void **state) {
  (void)state;
  return tu_tmpdir_create("test_export");
}

static int teardown(void **state) {
  (void)state;
  return tu_tmpdir_remove();
}

static cJSON *read_json(const char *path) {
  char *data = NULL;
  size_t len = 0;
  assert_ok(nnmem_file_read(path, &data, &len, NULL));
  cJSON *j = cJSON_ParseWithLength(data, len);
  if (!j) fail_msg("%s is not valid JSON:\n%s", path, data);
  free(data);
  return j;
}

static double num(const cJSON *obj, const char *key) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!cJSON_IsNumber(j)) fail_msg("key '%s' is not a number", key);
  return j->valuedouble;
}

static const char *str(const cJSON *obj, const char *key) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!cJSON_IsString(j)) fail_msg("key '%s' is not a string", key);
  return j->valuestring;
}

/* The tensor record named `name` in a plan JSON document. */
static const cJSON *tensor_rec(const cJSON *doc, const char *name) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "tensors");
  for (const cJSON *t = arr ? arr->child : NULL; t; t = t->next)
    if (strcmp(str(t, "name"), name) == 0) return t;
  fail_msg("no tensor '%s' in the plan JSON", name);
  return NULL;
}

typedef struct planned {
  nnmem_graph_t *g;
  nnmem_liveness_t *l;
  nnmem_plan_t *plan;
} planned_t;

static planned_t plan_example(const char *file, uint64_t alignment) {
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/graphs/%s", NNMEM_SOURCE_DIR, file);
  planned_t r = {0};
  nnmem_diag_t diag = {{0}};
  if (nnmem_graph_read_json_file(path, &r.g, &diag) != NNMEM_OK)
    fail_msg("%s", diag.message);
  assert_ok(nnmem_liveness_analyze(r.g, NULL, &r.l, NULL));
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  cfg.alignment = alignment;
  r.plan = tu_plan_verified(nnmem_liveness_problem(r.l), &cfg);
  return r;
}

static void planned_free(planned_t *r) {
  nnmem_plan_destroy(r->plan);
  nnmem_liveness_destroy(r->l);
  nnmem_graph_destroy(r->g);
}

/* ---- plan JSON
 * ---------------------------------------------------------------- */

static void test_plan_json_tiny(void **state) {
  (void)state;
  planned_t r = plan_example("tiny.json", 0);
  /* A [0,1) 1 KiB, B [0,3) 1 KiB, C [1,3) 512, D [2,3) 256: the peak is
   * step 0 (A + B = 2048) and C, D fit where A was */
  assert_int_equal(nnmem_plan_height(r.plan), 2048);
  const char *path = tu_tmp_path("tiny_plan.json");
  assert_ok(nnmem_plan_write_json(r.g, r.l, r.plan, 0, path, NULL));
  cJSON *doc = read_json(path);
  assert_string_equal(str(doc, "model"), "tiny");
  assert_string_equal(str(doc, "strategy"),
                      nnmem_strategy_name(nnmem_plan_strategy(r.plan)));
  assert_int_equal(num(doc, "alignment"), 1);
  assert_int_equal(num(doc, "arena_height"), 2048);
  assert_int_equal(num(doc, "weight_bytes"), 0);
  const cJSON *bufs = cJSON_GetObjectItemCaseSensitive(doc, "buffers");
  assert_int_equal(cJSON_GetArraySize(bufs), 4);
  const uint64_t *off = nnmem_plan_offsets(r.plan);
  static const uint64_t first[4] = {0, 0, 1, 2}, last[4] = {1, 3, 3, 3};
  static const uint64_t size[4] = {1024, 1024, 512, 256};
  static const char *const ids[4] = {"A", "B", "C", "D"};
  int i = 0;
  for (const cJSON *b = bufs->child; b; b = b->next, i++) {
    assert_string_equal(str(b, "id"), ids[i]);
    assert_int_equal(num(b, "offset"), off[i]);
    assert_int_equal(num(b, "size"), size[i]);
    assert_int_equal(num(b, "first"), first[i]);
    assert_int_equal(num(b, "last"), last[i]);
    assert_string_equal(str(b, "kind"), "activation");
  }
  const cJSON *c = tensor_rec(doc, "C");
  assert_string_equal(str(c, "kind"), "output");
  assert_string_equal(str(c, "region"), "arena");
  assert_int_equal(num(c, "buffer"), 2);
  assert_int_equal(num(c, "offset"), off[2]);
  assert_int_equal(num(c, "size"), 512);
  assert_int_equal(num(c, "first"), 1);
  assert_int_equal(num(c, "last"), 3);
  cJSON_Delete(doc);
  planned_free(&r);
}

static void test_plan_json_cnn(void **state) {
  (void)state;
  planned_t r = plan_example("small_cnn.json", 64);
  const char *path = tu_tmp_path("cnn_plan.json");
  assert_ok(nnmem_plan_write_json(r.g, r.l, r.plan, 64, path, NULL));
  cJSON *doc = read_json(path);
  assert_string_equal(str(doc, "model"), "small_cnn");
  assert_int_equal(num(doc, "alignment"), 64);
  assert_int_equal(num(doc, "arena_height"), nnmem_plan_height(r.plan));
  /* the peak is conv3: relu1.out (kept for the residual add), relu2.out,
   * conv3.out (64 KiB each) and its 576 KiB workspace; planners reach it */
  assert_int_equal(nnmem_plan_height(r.plan), 3 * 65536 + 589824);
  /* weights: 1728 + 64 + 9216 + 9216, fc.w at 20224 (aligned 64) + 640,
   * fc.b 40 -> 20904 (the liveness analysis ran with weight alignment 1) */
  assert_int_equal(num(doc, "weight_bytes"), 20904);
  const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(doc, "tensors");
  assert_int_equal(cJSON_GetArraySize(tensors), 17);
  const cJSON *w = tensor_rec(doc, "fc.w");
  assert_string_equal(str(w, "region"), "weights");
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(w, "buffer")));
  assert_int_equal(num(w, "offset"), 20224);
  assert_int_equal(num(w, "size"), 640);
  assert_int_equal(num(tensor_rec(doc, "conv1.w"), "offset"), 0);
  assert_int_equal(num(tensor_rec(doc, "conv1.b"), "offset"), 1728);
  assert_string_equal(str(tensor_rec(doc, "fc.b"), "kind"), "constant");
  /* in-place and view tensors share their input's buffer and offset */
  const cJSON *c1 = tensor_rec(doc, "conv1.out"),
              *r1 = tensor_rec(doc, "relu1.out");
  assert_int_equal(num(c1, "buffer"), num(r1, "buffer"));
  assert_int_equal(num(c1, "offset"), num(r1, "offset"));
  assert_int_equal(num(tensor_rec(doc, "pool.out"), "buffer"),
                   num(tensor_rec(doc, "flatten.out"), "buffer"));
  /* three workspace buffers (conv1, conv2, conv3), each live one step */
  int ws = 0;
  const cJSON *bufs = cJSON_GetObjectItemCaseSensitive(doc, "buffers");
  for (const cJSON *b = bufs->child; b; b = b->next) {
    if (strcmp(str(b, "kind"), "workspace") != 0) continue;
    ws++;
    assert_int_equal(num(b, "last") - num(b, "first"), 1);
    assert_int_equal((uint64_t)num(b, "offset") % 64, 0);
  }
  assert_int_equal(ws, 3);
  cJSON_Delete(doc);
  planned_free(&r);
}

static void test_plan_json_errors(void **state) {
  (void)state;
  planned_t r = plan_example("tiny.json", 0);
  planned_t other = plan_example("small_cnn.json", 0);
  nnmem_diag_t diag = {{0}};
  int before = tu_tmpdir_count();
  /* a plan of another problem */
  assert_int_equal(nnmem_plan_write_json(r.g, r.l, other.plan, 0,
                                         tu_tmp_path("x.json"), &diag),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(diag.message, "x.json"));
  /* an unwritable place: nothing is left behind */
  char path[600];
  snprintf(path, sizeof path, "%s/missing/dir/plan.json", tu_tmpdir());
  assert_int_equal(nnmem_plan_write_json(r.g, r.l, r.plan, 0, path, &diag),
                   NNMEM_ERR_IO);
  assert_non_null(strstr(diag.message, "plan.json"));
  struct stat sb;
  assert_int_not_equal(stat(path, &sb), 0);
  assert_int_equal(tu_tmpdir_count(), before);
  assert_int_equal(nnmem_plan_write_json(NULL, r.l, r.plan, 0, path, NULL),
                   NNMEM_ERR_INVALID);
  planned_free(&other);
  planned_free(&r);
}

/* ---- profile JSON
 * --------------------------------------------------------------- */

static const char *const profile_keys[] = {"model",
                                           "peak_memory",
                                           "weight_memory",
                                           "activation_memory",
                                           "workspace_memory",
                                           "lower_bound",
                                           "naive_memory",
                                           "arena_height",
                                           "arena_lower_bound",
                                           "bound_kind",
                                           "optimal",
                                           "naive_saturated",
                                           "naive_arena",
                                           "reuse_ratio",
                                           "strategy",
                                           "buffers",
                                           "tensors",
                                           "peak_step",
                                           "plan_seconds"};

static void test_profile_format(void **state) {
  (void)state;
  nnmem_profile_t p = {0};
  p.size = sizeof p;
  p.peak_memory = (1ULL << 60) + 1; /* exact, beyond a double's 2^53 */
  p.weight_memory = 2;
  p.activation_memory = 3;
  p.workspace_memory = 4;
  p.lower_bound = 5;
  p.naive_memory = 6;
  p.arena_height = 7;
  p.arena_lower_bound = 8;
  p.naive_arena = 9;
  p.reuse_ratio = 0.25;
  p.strategy = NNMEM_STRATEGY_GREEDY_SIZE;
  p.buffers = 10;
  p.tensors = 11;
  p.peak_step = 12;
  p.plan_seconds = 0.5;
  char *text = NULL;
  assert_ok(nnmem_profile_format_json(&p, "net \"v2\"", &text));
  assert_non_null(strstr(text, "\"peak_memory\": 1152921504606846977,"));
  assert_non_null(strstr(text, "\"model\": \"net \\\"v2\\\"\""));
  cJSON *doc = cJSON_Parse(text);
  assert_non_null(doc);
  size_t n_keys = sizeof profile_keys / sizeof profile_keys[0];
  assert_int_equal(cJSON_GetArraySize(doc), n_keys);
  for (size_t i = 0; i < n_keys; i++)
    assert_non_null(cJSON_GetObjectItemCaseSensitive(doc, profile_keys[i]));
  assert_int_equal(num(doc, "weight_memory"), 2);
  assert_int_equal(num(doc, "naive_arena"), 9);
  assert_true(
      cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "naive_saturated")));
  assert_int_equal(num(doc, "peak_step"), 12);
  assert_true(num(doc, "reuse_ratio") == 0.25);
  assert_true(num(doc, "plan_seconds") == 0.5);
  assert_string_equal(str(doc, "strategy"), "greedy-size");
  cJSON_Delete(doc);
  free(text);
  /* without a model; NaN stays valid JSON (null: JSON has no NaN) */
  p.reuse_ratio = 0.0 / 0.0;
  assert_ok(nnmem_profile_format_json(&p, NULL, &text));
  doc = cJSON_Parse(text);
  assert_non_null(doc);
  assert_null(cJSON_GetObjectItemCaseSensitive(doc, "model"));
  assert_int_equal(cJSON_GetArraySize(doc), n_keys - 1);
  assert_true(
      cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "reuse_ratio")));
  cJSON_Delete(doc);
  free(text);
  assert_int_equal(nnmem_profile_format_json(NULL, NULL, &text),
                   NNMEM_ERR_INVALID);
}

static void test_profile_write(void **state) {
  (void)state;
  planned_t r = plan_example("tiny.json", 0);
  nnmem_profile_t p;
  assert_ok(nnmem_profile_compute(r.g, r.l, r.plan, 0, &p));
  const char *path = tu_tmp_path("memory_profile.json");
  assert_ok(nnmem_profile_write_json(&p, "tiny", path, NULL));
  cJSON *doc = read_json(path);
  assert_string_equal(str(doc, "model"), "tiny");
  assert_int_equal(num(doc, "arena_height"), 2048);
  assert_int_equal(num(doc, "arena_lower_bound"), 2048);
  assert_int_equal(num(doc, "naive_arena"), 1024 + 1024 + 512 + 256);
  assert_int_equal(num(doc, "weight_memory"), 0);
  assert_int_equal(num(doc, "peak_memory"), p.peak_memory);
  assert_int_equal(num(doc, "buffers"), 4);
  assert_int_equal(num(doc, "tensors"), 4);
  assert_true(num(doc, "reuse_ratio") > 0.2727 &&
              num(doc, "reuse_ratio") < 0.2728); /* 1 - 2048 / 2816 */
  cJSON_Delete(doc);
  /* failure: no file, no temporary */
  int before = tu_tmpdir_count();
  char bad[600];
  snprintf(bad, sizeof bad, "%s/nope/memory_profile.json", tu_tmpdir());
  nnmem_diag_t diag = {{0}};
  assert_int_equal(nnmem_profile_write_json(&p, NULL, bad, &diag),
                   NNMEM_ERR_IO);
  assert_non_null(strstr(diag.message, "memory_profile.json"));
  assert_int_equal(tu_tmpdir_count(), before);
  planned_free(&r);
}

/* ---- plan JSON read back (nnmem_plan_read_json) ----------------------- */

static nnmem_status_t read_plan(const char *text, nnmem_problem_t **p,
                                uint64_t **offs, nnmem_diag_t *d) {
  return nnmem_plan_read_json(text, strlen(text), "t.json", p, offs, d);
}

/* Exact to 2^64 - 1; numbers inside strings (ids with digits, escaped
 * quotes, "-1") are left alone; a number as id is its text; extra keys and
 * the graph form's "tensors" are ignored. */
static void test_plan_read_exact(void **state) {
  (void)state;
  const char *text =
      "{\"model\": \"m\", \"alignment\": 1, \"buffers\": [\n"
      " {\"id\": \"a\\\"1, -2.5e3\", \"offset\": 18446744073709551615, "
      "\"size\": 0, \"first\": 1700000000000000003, \"last\": "
      "1700000000000000004, \"kind\": \"activation\"},\n"
      " {\"id\": 42, \"offset\": 9007199254740993, \"size\": "
      "9007199254740991, \"first\": 0, \"last\": 1}],\n"
      " \"tensors\": [{\"name\": \"x\", \"offset\": -1.5e300}]}";
  nnmem_problem_t *p = NULL;
  uint64_t *offs = NULL;
  assert_ok(read_plan(text, &p, &offs, NULL));
  assert_int_equal(nnmem_problem_count(p), 2);
  assert_string_equal(nnmem_problem_id(p, 0), "a\"1, -2.5e3");
  assert_string_equal(nnmem_problem_id(p, 1), "42");
  assert_true(offs[0] == UINT64_MAX);
  assert_true(offs[1] == 9007199254740993ULL);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  assert_true(b[0].first == 1700000000000000003ULL);
  assert_true(b[0].last == 1700000000000000004ULL);
  assert_true(b[1].size == 9007199254740991ULL);
  nnmem_problem_destroy(p);
  free(offs);
}

/* Strings that start with U+0001 or U+0002 (the reader's internal tags)
 * keep every byte, and a string "\u00017" is not the number 7. */
static void expect_read_error(const char *text, nnmem_status_t want,
                              const char *msg);

/* The reader tags numbers with a leading U+0001 internally: a string that
 * starts with U+0001 could not be told from a number, so it is refused with
 * a message saying so (never read as a number or with a byte lost); a raw
 * control byte is not JSON; U+0002 and an inner U+0001 are plain bytes. */
static void test_plan_read_tag_bytes(void **state) {
  (void)state;
  const char *text =
      "{\"buffers\": [\n"
      " {\"id\": \"\\u00027\", \"offset\": 4, \"size\": 4, \"first\": 0, "
      "\"last\": 1},\n"
      " {\"id\": \"a\\u0001b\", \"offset\": 8, \"size\": 4, \"first\": 0, "
      "\"last\": 1}]}";
  nnmem_problem_t *p = NULL;
  uint64_t *offs = NULL;
  assert_ok(read_plan(text, &p, &offs, NULL));
  assert_int_equal(nnmem_problem_count(p), 2);
  assert_string_equal(nnmem_problem_id(p, 0),
                      "\x02"
                      "7");
  assert_string_equal(nnmem_problem_id(p, 1),
                      "a\x01"
                      "b");
  assert_true(offs[1] == 8);
  nnmem_problem_destroy(p);
  free(offs);
  expect_read_error(
      "{\"buffers\": [{\"id\": \"\\u0001ctl\", \"offset\": 0, \"size\": 4, "
      "\"first\": 0, \"last\": 1}]}",
      NNMEM_ERR_PARSE, "a string starting with \\u0001 is not supported");
  expect_read_error(
      "{\"buffers\": [{\"id\": \"\x01raw\", \"offset\": 0, \"size\": 4, "
      "\"first\": 0, \"last\": 1}]}",
      NNMEM_ERR_PARSE, "control character in a string");
}

static void expect_read_error(const char *text, nnmem_status_t want,
                              const char *msg) {
  nnmem_problem_t *p = (nnmem_problem_t *)&p;
  uint64_t *offs = (uint64_t *)&offs;
  nnmem_diag_t d = {{0}};
  assert_int_equal(read_plan(text, &p, &offs, &d), want);
  assert_null(p);
  assert_null(offs);
  if (!strstr(d.message, msg))
    fail_msg("message '%s' lacks '%s'", d.message, msg);
}

static void test_plan_read_errors(void **state) {
  (void)state;
#define B(x) "{\"buffers\": [" x "]}"
#define NO_ID "\"offset\": 0, \"size\": 4, \"first\": 0"
#define OK1 "\"id\": \"a\", \"offset\": 0, \"size\": 4, \"first\": 0"
  expect_read_error(B("{" OK1 ", \"last\": 1}, {" OK1 ", \"last\": 2}"),
                    NNMEM_ERR_DUPLICATE, "buffer 'a' is listed twice");
  expect_read_error(B("{" OK1 "}"), NNMEM_ERR_PARSE, "missing key 'last'");
  /* a string "\u00017" is not the number 7 */
  expect_read_error(B("{" OK1 ", \"last\": \"\\u00017\"}"), NNMEM_ERR_PARSE,
                    "starting with \\u0001 is not supported");
  expect_read_error(B("{" OK1 ", \"last\": -1}"), NNMEM_ERR_PARSE,
                    "'last' must be an integer");
  expect_read_error(B("{" OK1 ", \"last\": 1.5}"), NNMEM_ERR_PARSE,
                    "'last' must be an integer");
  expect_read_error(B("{" OK1 ", \"last\": 1e3}"), NNMEM_ERR_PARSE,
                    "'last' must be an integer");
  expect_read_error(B("{" OK1 ", \"last\": \"7\"}"), NNMEM_ERR_PARSE,
                    "'last' must be an integer");
  expect_read_error(B("{" OK1 ", \"last\": 18446744073709551616}"),
                    NNMEM_ERR_PARSE, "'last' must be an integer");
  expect_read_error(B("{" OK1 ", \"last\": 0}"), NNMEM_ERR_INVALID,
                    "'last' must exceed 'first'");
  expect_read_error(B("{\"offset\": 0}"), NNMEM_ERR_PARSE,
                    "missing or empty 'id'");
  expect_read_error(B("7"), NNMEM_ERR_PARSE, "buffers[0] is not an object");
  expect_read_error("{\"buffers\": 3}", NNMEM_ERR_PARSE, "not a plan JSON");
  expect_read_error("{\"buffers\": [", NNMEM_ERR_PARSE, "not valid JSON");
  expect_read_error("", NNMEM_ERR_PARSE, "t.json");
  /* What the number tagging must not change (found by fuzz_plan_json):
   * a string that starts with the tag byte would read as a number, invalid
   * UTF-8 would be written back as U+FFFD, text that is not JSON would
   * become JSON once its numbers are quoted. */
  expect_read_error(B("{\"id\": \"\x01\", \"offset\": 8, \"size\": 0, "
                      "\"first\": 0, \"last\": 3}"),
                    NNMEM_ERR_PARSE, "t.json:1:22: not valid JSON: control");
  expect_read_error(B("{\"id\": \"\\u00017\", \"offset\": \"\\u00010\"}"),
                    NNMEM_ERR_PARSE, "starting with \\u0001 is not supported");
  expect_read_error(B("{\"id\": \"a\\u0000b\", " NO_ID ", \"last\": 1}"),
                    NNMEM_ERR_PARSE, "\\u0000 in a string");
  expect_read_error(B("{\"id\": \"\xd3\", " NO_ID ", \"last\": 1}"),
                    NNMEM_ERR_PARSE, "t.json:1:22: invalid UTF-8 byte");
  expect_read_error(B("{" OK1 ", \"last\": 01}"), NNMEM_ERR_PARSE,
                    "bad number");
  expect_read_error("{\"alignment\": 1-2, \"buffers\": []}", NNMEM_ERR_PARSE,
                    "t.json:1:15: not valid JSON: bad number");
  expect_read_error("{\"buffers\": [], 7: 1}", NNMEM_ERR_PARSE,
                    "a number as an object key");
  expect_read_error("{\"buffers\": []} x", NNMEM_ERR_PARSE, "not valid JSON");
  expect_read_error(B("{" OK1 ", \"last\": 1, \"offset\": 9}"), NNMEM_ERR_PARSE,
                    "key 'offset' is given twice");
  nnmem_problem_t *p = (nnmem_problem_t *)&p;
  uint64_t *offs = (uint64_t *)&offs;
  nnmem_diag_t d = {{0}};
  assert_int_equal(
      nnmem_plan_read_json("{\"buffers\": []}\0", 16, "n.json", &p, &offs, &d),
      NNMEM_ERR_PARSE);
  assert_null(p);
  assert_null(offs);
  assert_non_null(strstr(d.message, "n.json:1:16: NUL byte"));
  /* U+0001 inside an id (not first) and other escapes are fine */
  assert_ok(
      read_plan(B("{\"id\": \"a\\u0001\\u00e9\\/\", " NO_ID ", \"last\": 1}"),
                &p, &offs, NULL));
  assert_string_equal(nnmem_problem_id(p, 0), "a\x01\xc3\xa9/");
  nnmem_problem_destroy(p);
  free(offs);
#undef B
#undef OK1
#undef NO_ID
}

/* Write -> read round trip of a bare problem's plan JSON. */
static void test_plan_read_round_trip(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  assert_ok(nnmem_problem_add(p, "x", 9007199254740993ULL, 1,
                              1700000000000000000ULL, 1700000000000000003ULL,
                              NULL));
  assert_ok(nnmem_problem_add(p, "y", 5, 1, 1700000000000000001ULL,
                              1700000000000000002ULL, NULL));
  nnmem_planner_config_t cfg;
  nnmem_planner_config_init(&cfg);
  nnmem_plan_t *plan = tu_plan_verified(p, &cfg);
  const char *path = tu_tmp_path("rt.json");
  assert_ok(nnmem_problem_write_plan_json(p, plan, 1, path, NULL));
  nnmem_problem_t *q = NULL;
  uint64_t *offs = NULL;
  assert_ok(nnmem_plan_read_json_file(path, &q, &offs, NULL));
  assert_int_equal(nnmem_problem_count(q), 2);
  for (size_t i = 0; i < 2; i++) {
    const nnmem_buffer_t *a = &nnmem_problem_buffers(p)[i];
    const nnmem_buffer_t *b = &nnmem_problem_buffers(q)[i];
    assert_string_equal(nnmem_problem_id(p, i), nnmem_problem_id(q, i));
    assert_true(a->size == b->size && a->first == b->first &&
                a->last == b->last);
    assert_true(offs[i] == nnmem_plan_offsets(plan)[i]);
  }
  assert_ok(nnmem_plan_verify(q, offs, 1, 0, NULL, NULL));
  nnmem_problem_destroy(q);
  free(offs);
  nnmem_plan_destroy(plan);
  nnmem_problem_destroy(p);
}

/* The format functions give exactly the bytes the writers write. */
static void test_format_matches_write(void **state) {
  (void)state;
  planned_t r = plan_example("tiny.json", 0);
  const char *path = tu_tmp_path("fmt_plan.json");
  assert_ok(nnmem_plan_write_json(r.g, r.l, r.plan, 0, path, NULL));
  char *file = NULL, *text = NULL;
  size_t flen = 0, tlen = 0;
  assert_ok(nnmem_file_read(path, &file, &flen, NULL));
  assert_ok(nnmem_plan_format_json(r.g, r.l, r.plan, 0, &text, &tlen, NULL));
  assert_int_equal(flen, tlen);
  assert_memory_equal(file, text, tlen);
  free(file);
  free(text);
  const nnmem_problem_t *p = nnmem_liveness_problem(r.l);
  path = tu_tmp_path("fmt_plan.csv");
  assert_ok(nnmem_problem_write_csv(p, nnmem_plan_offsets(r.plan), path, NULL));
  assert_ok(nnmem_file_read(path, &file, &flen, NULL));
  assert_ok(nnmem_problem_format_csv(p, nnmem_plan_offsets(r.plan), &text,
                                     &tlen, NULL));
  assert_int_equal(flen, tlen);
  assert_memory_equal(file, text, tlen);
  free(file);
  free(text);
  planned_free(&r);
}

/* nnmem_file_read_limited: a regular file over the limit is refused by its
 * size, /dev/zero after limit + 1 bytes; at the limit it reads. */
static void test_read_limit(void **state) {
  (void)state;
  const char *path = tu_tmp_path("limit.txt");
  assert_ok(nnmem_file_write_atomic(path, "0123456789", 10, NULL));
  char *data = NULL;
  size_t len = 0;
  nnmem_diag_t diag = {{0}};
  assert_int_equal(nnmem_file_read_limited(path, 9, &data, &len, &diag),
                   NNMEM_ERR_UNSUPPORTED);
  assert_null(data);
  assert_non_null(strstr(diag.message, "over the limit"));
  assert_ok(nnmem_file_read_limited(path, 10, &data, &len, NULL));
  assert_int_equal(len, 10);
  assert_string_equal(data, "0123456789");
  free(data);
  data = NULL;
  assert_int_equal(
      nnmem_file_read_limited("/dev/zero", 100000, &data, &len, &diag),
      NNMEM_ERR_UNSUPPORTED);
  assert_null(data);
}

/* The planned timeline (profile_timeline.c) against a brute force: live
 * root bytes at every step, summed buffer by buffer, with gaps and
 * sub-buffers; its largest entry is nnmem_problem_peak. Random problems,
 * fixed seed (printed on failure). */
static uint64_t tl_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static uint64_t brute_live(const nnmem_problem_t *p, uint64_t align,
                           uint64_t step) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  uint64_t live = 0;
  for (size_t i = 0; i < nnmem_problem_count(p); i++) {
    if (nnmem_problem_parent(p, i, NULL, NULL) == NNMEM_OK) continue;
    if (step < b[i].first || step >= b[i].last) continue;
    const nnmem_interval_t *g = NULL;
    size_t ng = nnmem_problem_gaps(p, i, &g), in_gap = 0;
    for (size_t j = 0; j < ng; j++)
      if (step >= g[j].first && step < g[j].last) in_gap = 1;
    if (in_gap) continue;
    uint64_t al = b[i].align > align ? b[i].align : align;
    live += (b[i].size + al - 1) / al * al;
  }
  return live;
}

static void test_profile_timeline(void **state) {
  (void)state;
  const uint64_t seed = 0x7133a11e5ull;
  uint64_t s = seed;
  for (int round = 0; round < 200; round++) {
    nnmem_problem_t *p = NULL;
    assert_ok(nnmem_problem_create(&p));
    size_t n = 1 + tl_rand(&s) % 12;
    char id[16];
    for (size_t i = 0; i < n; i++) {
      uint64_t first = tl_rand(&s) % 20, len = 1 + tl_rand(&s) % 10;
      snprintf(id, sizeof id, "b%zu", i);
      assert_ok(nnmem_problem_add(p, id, tl_rand(&s) % 100,
                                  (uint64_t)1 << (tl_rand(&s) % 4), first,
                                  first + len, NULL));
      if (len >= 4 && tl_rand(&s) % 3 == 0) /* a gap strictly inside */
        assert_ok(nnmem_problem_add_gap(p, i, first + 1, first + len - 1));
      if (i && tl_rand(&s) % 4 == 0) { /* a child inside an earlier root */
        size_t par = tl_rand(&s) % i;
        if (nnmem_problem_parent(p, par, NULL, NULL) != NNMEM_OK)
          assert_ok(nnmem_problem_set_parent(p, i, par, 0));
      }
    }
    uint64_t align = (uint64_t)1 << (tl_rand(&s) % 3), weights = round;
    nnmem__text_t t;
    nnmem__jw_t w;
    nnmem__text_init(&t);
    nnmem__jw_init(&w, &t, NNMEM__JW_COMPACT);
    nnmem__jw_object(&w);
    assert_ok(nnmem__profile_json_timeline(&w, p, align, weights));
    nnmem__jw_end(&w);
    assert_ok(nnmem__jw_finish(&w));
    cJSON *j = cJSON_Parse(t.data);
    if (!j)
      fail_msg("seed %#llx round %d: not JSON", (unsigned long long)seed,
               round);
    const cJSON *tl = cJSON_GetObjectItemCaseSensitive(j, "timeline");
    assert_true(cJSON_IsArray(tl));
    uint64_t end = 0, peak = 0, top = 0;
    const nnmem_buffer_t *b = nnmem_problem_buffers(p);
    for (size_t i = 0; i < n; i++)
      if (b[i].last > end) end = b[i].last;
    assert_ok(nnmem_problem_peak(p, align, &peak, NULL));
    /* every step 0 .. end - 1 against the entry in force there */
    const cJSON *e = tl->child, *cur = NULL;
    assert_int_equal(num(e, "step"), 0);
    for (uint64_t st = 0; st < end; st++) {
      while (e && (uint64_t)num(e, "step") <= st)
        cur = e, e = e->next;
      uint64_t want = brute_live(p, align, st);
      if ((uint64_t)num(cur, "activation_memory") != want ||
          (uint64_t)num(cur, "peak_bytes") != want + weights ||
          (uint64_t)num(cur, "weight_memory") != weights)
        fail_msg(
            "seed %#llx round %d step %llu: timeline says %.0f, brute "
            "force %llu",
            (unsigned long long)seed, round, (unsigned long long)st,
            num(cur, "activation_memory"), (unsigned long long)want);
      if (want > top) top = want;
    }
    assert_null(e); /* no entry past the last step */
    assert_int_equal(
        num(cJSON_GetArrayItem(tl, cJSON_GetArraySize(tl) - 1), "step"),
        end - 1);
    assert_int_equal(top, peak);
    cJSON_Delete(j);
    nnmem__text_free(&t);
    nnmem_problem_destroy(p);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plan_json_tiny),
      cmocka_unit_test(test_plan_json_cnn),
      cmocka_unit_test(test_plan_json_errors),
      cmocka_unit_test(test_profile_format),
      cmocka_unit_test(test_profile_write),
      cmocka_unit_test(test_plan_read_exact),
      cmocka_unit_test(test_plan_read_tag_bytes),
      cmocka_unit_test(test_plan_read_errors),
      cmocka_unit_test(test_plan_read_round_trip),
      cmocka_unit_test(test_format_matches_write),
      cmocka_unit_test(test_read_limit),
      cmocka_unit_test(test_profile_timeline),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

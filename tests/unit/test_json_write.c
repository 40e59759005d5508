/* test_json_write.c - the one JSON writer (src/common/json_write.c): exact
 * 64-bit integers (2^53 +- 1, 2^64 - 1, INT64_MIN) compared as text, since
 * every double-based parser would round them; doubles that read back
 * exactly in few digits; escaping of quotes, backslashes, control bytes and
 * invalid UTF-8 checked both as text and through cJSON (strings lose
 * nothing there); both styles byte for byte; and every misuse the writer
 * promises to report. */
#include <cjson/cJSON.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_write.h"
#include "testutil.h"

/* Runs `build` on a fresh writer of `style`; returns the finish status and
 * leaves the text in *t (caller frees). */
typedef void (*build_fn)(nnmem__jw_t *w);

static nnmem_status_t emit(build_fn build, nnmem__jw_style_t style,
                           nnmem__text_t *t) {
  nnmem__jw_t w;
  nnmem__text_init(t);
  nnmem__jw_init(&w, t, style);
  build(&w);
  return nnmem__jw_finish(&w);
}

static void expect_text(build_fn build, nnmem__jw_style_t style,
                        const char *want) {
  nnmem__text_t t;
  assert_ok(emit(build, style, &t));
  assert_non_null(t.data);
  assert_string_equal(t.data, want);
  assert_int_equal(strlen(t.data), t.len);
  nnmem__text_free(&t);
}

static void expect_misuse(build_fn build) {
  for (int style = 0; style < 2; style++) {
    nnmem__text_t t;
    assert_int_equal(emit(build, (nnmem__jw_style_t)style, &t),
                     NNMEM_ERR_STATE);
    nnmem__text_free(&t);
  }
}

/* ---- integers --------------------------------------------------------- */

static void build_ints(nnmem__jw_t *w) {
  nnmem__jw_array(w);
  nnmem__jw_u64(w, 0);
  nnmem__jw_u64(w, 9007199254740991ULL); /* 2^53 - 1 */
  nnmem__jw_u64(w, 9007199254740992ULL); /* 2^53 */
  nnmem__jw_u64(w, 9007199254740993ULL); /* 2^53 + 1: no double holds it */
  nnmem__jw_u64(w, 1700000000000000003ULL);
  nnmem__jw_u64(w, UINT64_MAX);
  nnmem__jw_i64(w, INT64_MIN);
  nnmem__jw_i64(w, INT64_MAX);
  nnmem__jw_i64(w, -1);
  nnmem__jw_i64(w, 0);
  nnmem__jw_end(w);
}

static void test_integers_exact(void **state) {
  (void)state;
  expect_text(build_ints, NNMEM__JW_COMPACT,
              "[0,9007199254740991,9007199254740992,9007199254740993,"
              "1700000000000000003,18446744073709551615,"
              "-9223372036854775808,9223372036854775807,-1,0]\n");
}

static void build_kv_ints(nnmem__jw_t *w) {
  nnmem__jw_object(w);
  nnmem__jw_kv_u64(w, "max", UINT64_MAX);
  nnmem__jw_kv_i64(w, "min", INT64_MIN);
  nnmem__jw_end(w);
}

static void test_integers_in_objects(void **state) {
  (void)state;
  expect_text(build_kv_ints, NNMEM__JW_PRETTY,
              "{\n  \"max\": 18446744073709551615,\n"
              "  \"min\": -9223372036854775808\n}\n");
}

/* ---- doubles ------------------------------------------------------------ */

static double g_doubles[] = {0.1,
                             0.25,
                             1.0 / 3.0,
                             -2.5e-300,
                             1e21,
                             123456789.125,
                             2.2250738585072014e-308,
                             1.7976931348623157e308,
                             -0.0,
                             5e-324};
#define N_DOUBLES (sizeof g_doubles / sizeof g_doubles[0])

static void build_doubles(nnmem__jw_t *w) {
  nnmem__jw_array(w);
  for (size_t i = 0; i < N_DOUBLES; i++)
    nnmem__jw_double(w, g_doubles[i]);
  nnmem__jw_double(w, NAN);
  nnmem__jw_double(w, INFINITY);
  nnmem__jw_double(w, -INFINITY);
  nnmem__jw_end(w);
}

static void test_doubles_round_trip(void **state) {
  (void)state;
  nnmem__text_t t;
  assert_ok(emit(build_doubles, NNMEM__JW_COMPACT, &t));
  /* short where short reads back, null for what JSON cannot hold */
  assert_non_null(strstr(t.data, "[0.1,0.25,"));
  assert_non_null(strstr(t.data, ",null,null,null]"));
  cJSON *j = cJSON_Parse(t.data);
  if (!j) fail_msg("not JSON: %s", t.data);
  assert_int_equal(cJSON_GetArraySize(j), N_DOUBLES + 3);
  for (size_t i = 0; i < N_DOUBLES; i++) {
    cJSON *e = cJSON_GetArrayItem(j, (int)i);
    assert_true(cJSON_IsNumber(e));
    /* cJSON reads with strtod: the same binary64 must come back */
    if (e->valuedouble != g_doubles[i])
      fail_msg("element %zu: %.17g read back as %.17g (%s)", i, g_doubles[i],
               e->valuedouble, t.data);
  }
  for (int k = 0; k < 3; k++)
    assert_true(cJSON_IsNull(cJSON_GetArrayItem(j, (int)N_DOUBLES + k)));
  cJSON_Delete(j);
  nnmem__text_free(&t);
}

static void build_half(nnmem__jw_t *w) {
  nnmem__jw_double(w, 0.5);
}

/* A locale whose decimal separator is ',' must not leak into JSON. Only
 * meaningful where such a locale is installed (says so otherwise). */
static void test_doubles_locale(void **state) {
  (void)state;
  const char *locs[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                        "ru_RU.UTF-8"};
  const char *got = NULL;
  for (size_t i = 0; i < sizeof locs / sizeof locs[0] && !got; i++)
    got = setlocale(LC_NUMERIC, locs[i]);
  if (!got) print_message("no comma-decimal locale installed: checks C only\n");
  expect_text(build_half, NNMEM__JW_COMPACT, "0.5\n");
  setlocale(LC_NUMERIC, "C");
}

/* ---- strings ------------------------------------------------------------ */

static const char g_ctrl[] = "q\"b\\s/\n\r\t\b\f\x01\x1f\x7f end";

static void build_ctrl(nnmem__jw_t *w) {
  nnmem__jw_string(w, g_ctrl);
}

static void test_escape_controls(void **state) {
  (void)state;
  expect_text(build_ctrl, NNMEM__JW_COMPACT,
              "\"q\\\"b\\\\s/\\n\\r\\t\\u0008\\u000c\\u0001\\u001f\x7f "
              "end\"\n");
  nnmem__text_t t;
  assert_ok(emit(build_ctrl, NNMEM__JW_PRETTY, &t));
  for (size_t i = 0; i + 1 < t.len; i++) /* no raw control byte */
    assert_true((unsigned char)t.data[i] >= 0x20);
  cJSON *j = cJSON_Parse(t.data);
  assert_non_null(j);
  assert_string_equal(j->valuestring, g_ctrl);
  cJSON_Delete(j);
  nnmem__text_free(&t);
}

/* Valid multi-byte UTF-8 passes through; every malformed sequence becomes
 * U+FFFD (overlong, surrogate, above U+10FFFF, truncated, stray
 * continuation), one per offending byte. */
static void build_utf8(nnmem__jw_t *w) {
  nnmem__jw_array(w);
  nnmem__jw_string(w, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  nnmem__jw_string(w, "\xc0\xaf");         /* overlong '/' */
  nnmem__jw_string(w, "\xed\xa0\x80");     /* surrogate U+D800 */
  nnmem__jw_string(w, "\xf4\x90\x80\x80"); /* U+110000 */
  nnmem__jw_string(w, "ab\xe2\x82");       /* truncated at the end */
  nnmem__jw_string(w, "\x80x");            /* stray continuation */
  nnmem__jw_string(w, "\xff");
  nnmem__jw_end(w);
}

static void test_escape_invalid_utf8(void **state) {
  (void)state;
  expect_text(build_utf8, NNMEM__JW_COMPACT,
              "[\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\","
              "\"\\ufffd\\ufffd\","
              "\"\\ufffd\\ufffd\\ufffd\","
              "\"\\ufffd\\ufffd\\ufffd\\ufffd\","
              "\"ab\\ufffd\\ufffd\","
              "\"\\ufffdx\","
              "\"\\ufffd\"]\n");
}

/* Embedded NUL via string_n, keys escaped like strings, NULL -> null. */
static void build_nul(nnmem__jw_t *w) {
  nnmem__jw_object(w);
  nnmem__jw_key(w, "k\"\n");
  nnmem__jw_string_n(w, "a\0b", 3);
  nnmem__jw_kv_string(w, "none", NULL);
  nnmem__jw_key(w, "none2");
  nnmem__jw_string_n(w, NULL, 0);
  nnmem__jw_end(w);
}

static void test_string_n_and_keys(void **state) {
  (void)state;
  expect_text(build_nul, NNMEM__JW_COMPACT,
              "{\"k\\\"\\n\":\"a\\u0000b\",\"none\":null,\"none2\":null}\n");
}

/* ---- structure and styles ---------------------------------------------- */

static void build_nested(nnmem__jw_t *w) {
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "name", "x");
  nnmem__jw_key(w, "empty_obj");
  nnmem__jw_object(w);
  nnmem__jw_end(w);
  nnmem__jw_key(w, "empty_arr");
  nnmem__jw_array(w);
  nnmem__jw_end(w);
  nnmem__jw_key(w, "list");
  nnmem__jw_array(w);
  nnmem__jw_u64(w, 1);
  nnmem__jw_object(w);
  nnmem__jw_kv_bool(w, "t", 1);
  nnmem__jw_kv_bool(w, "f", 0);
  nnmem__jw_key(w, "n");
  nnmem__jw_null(w);
  nnmem__jw_end(w);
  nnmem__jw_array(w);
  nnmem__jw_array(w);
  nnmem__jw_end(w);
  nnmem__jw_end(w);
  nnmem__jw_end(w);
  nnmem__jw_kv_double(w, "r", 1.5);
  nnmem__jw_end(w);
}

static void test_styles(void **state) {
  (void)state;
  expect_text(build_nested, NNMEM__JW_COMPACT,
              "{\"name\":\"x\",\"empty_obj\":{},\"empty_arr\":[],"
              "\"list\":[1,{\"t\":true,\"f\":false,\"n\":null},[[]]],"
              "\"r\":1.5}\n");
  expect_text(build_nested, NNMEM__JW_PRETTY,
              "{\n"
              "  \"name\": \"x\",\n"
              "  \"empty_obj\": {},\n"
              "  \"empty_arr\": [],\n"
              "  \"list\": [\n"
              "    1,\n"
              "    {\n"
              "      \"t\": true,\n"
              "      \"f\": false,\n"
              "      \"n\": null\n"
              "    },\n"
              "    [\n"
              "      []\n"
              "    ]\n"
              "  ],\n"
              "  \"r\": 1.5\n"
              "}\n");
}

static void build_deep(nnmem__jw_t *w) {
  for (int i = 0; i < NNMEM__JW_MAX_DEPTH; i++)
    nnmem__jw_array(w);
  for (int i = 0; i < NNMEM__JW_MAX_DEPTH; i++)
    nnmem__jw_end(w);
}

static void test_max_depth_ok(void **state) {
  (void)state;
  nnmem__text_t t;
  assert_ok(emit(build_deep, NNMEM__JW_PRETTY, &t));
  cJSON *j = cJSON_Parse(t.data);
  assert_non_null(j); /* cJSON's own nesting limit is 1000 */
  cJSON_Delete(j);
  nnmem__text_free(&t);
}

static void build_raw(nnmem__jw_t *w) {
  nnmem__jw_array(w);
  nnmem__jw_raw(w, "{\"a\":1}", 7);
  nnmem__jw_u64(w, 2);
  nnmem__jw_end(w);
}

static void test_raw(void **state) {
  (void)state;
  expect_text(build_raw, NNMEM__JW_COMPACT, "[{\"a\":1},2]\n");
}

/* ---- misuse -------------------------------------------------------------- */

static void m_value_where_key_due(nnmem__jw_t *w) {
  nnmem__jw_object(w);
  nnmem__jw_u64(w, 1);
  nnmem__jw_end(w);
}
static void m_key_in_array(nnmem__jw_t *w) {
  nnmem__jw_array(w);
  nnmem__jw_key(w, "k");
  nnmem__jw_u64(w, 1);
  nnmem__jw_end(w);
}
static void m_key_at_top(nnmem__jw_t *w) {
  nnmem__jw_key(w, "k");
  nnmem__jw_u64(w, 1);
}
static void m_two_keys(nnmem__jw_t *w) {
  nnmem__jw_object(w);
  nnmem__jw_key(w, "a");
  nnmem__jw_key(w, "b");
  nnmem__jw_u64(w, 1);
  nnmem__jw_end(w);
}
static void m_end_after_key(nnmem__jw_t *w) {
  nnmem__jw_object(w);
  nnmem__jw_key(w, "a");
  nnmem__jw_end(w);
}
static void m_end_at_top(nnmem__jw_t *w) {
  nnmem__jw_u64(w, 1);
  nnmem__jw_end(w);
}
static void m_unclosed(nnmem__jw_t *w) {
  nnmem__jw_object(w);
  nnmem__jw_kv_u64(w, "a", 1);
}
static void m_two_documents(nnmem__jw_t *w) {
  nnmem__jw_u64(w, 1);
  nnmem__jw_u64(w, 2);
}
static void m_empty(nnmem__jw_t *w) {
  (void)w;
}
static void m_null_key(nnmem__jw_t *w) {
  nnmem__jw_object(w);
  nnmem__jw_key(w, NULL);
  nnmem__jw_u64(w, 1);
  nnmem__jw_end(w);
}
static void m_too_deep(nnmem__jw_t *w) {
  for (int i = 0; i <= NNMEM__JW_MAX_DEPTH; i++)
    nnmem__jw_array(w);
  for (int i = 0; i <= NNMEM__JW_MAX_DEPTH; i++)
    nnmem__jw_end(w);
}

static void test_misuse(void **state) {
  (void)state;
  build_fn cases[] = {m_value_where_key_due,
                      m_key_in_array,
                      m_key_at_top,
                      m_two_keys,
                      m_end_after_key,
                      m_end_at_top,
                      m_unclosed,
                      m_two_documents,
                      m_empty,
                      m_null_key,
                      m_too_deep};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    print_message("misuse case %zu\n", i);
    expect_misuse(cases[i]);
  }
}

/* After misuse nothing more is written: the text stops at the fault. */
static void test_misuse_stops_output(void **state) {
  (void)state;
  nnmem__text_t t;
  assert_int_equal(emit(m_value_where_key_due, NNMEM__JW_COMPACT, &t),
                   NNMEM_ERR_STATE);
  assert_string_equal(t.data, "{");
  nnmem__text_free(&t);
}

/* A second finish is refused and appends nothing. */
static void test_finish_twice(void **state) {
  (void)state;
  nnmem__text_t t;
  nnmem__jw_t w;
  nnmem__text_init(&t);
  nnmem__jw_init(&w, &t, NNMEM__JW_PRETTY);
  nnmem__jw_u64(&w, 7);
  assert_ok(nnmem__jw_finish(&w));
  assert_int_equal(nnmem__jw_finish(&w), NNMEM_ERR_STATE);
  nnmem__jw_u64(&w, 8);
  assert_string_equal(t.data, "7\n");
  nnmem__text_free(&t);
}

/* A long document (many members, long strings) stays well formed: cJSON
 * reads every string back. */
static void test_large_document(void **state) {
  (void)state;
  nnmem__text_t t;
  nnmem__jw_t w;
  char s[300];
  nnmem__text_init(&t);
  nnmem__jw_init(&w, &t, NNMEM__JW_PRETTY);
  nnmem__jw_array(&w);
  for (int i = 0; i < 2000; i++) {
    for (size_t k = 0; k + 1 < sizeof s; k++)
      s[k] = (char)(1 + (i + k) % 126); /* every ASCII byte but NUL */
    s[sizeof s - 1] = '\0';
    nnmem__jw_string(&w, s);
  }
  nnmem__jw_end(&w);
  assert_ok(nnmem__jw_finish(&w));
  cJSON *j = cJSON_Parse(t.data);
  assert_non_null(j);
  assert_int_equal(cJSON_GetArraySize(j), 2000);
  for (size_t k = 0; k + 1 < sizeof s; k++)
    s[k] = (char)(1 + (1999 + k) % 126);
  assert_string_equal(cJSON_GetArrayItem(j, 1999)->valuestring, s);
  cJSON_Delete(j);
  nnmem__text_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_integers_exact),
      cmocka_unit_test(test_integers_in_objects),
      cmocka_unit_test(test_doubles_round_trip),
      cmocka_unit_test(test_doubles_locale),
      cmocka_unit_test(test_escape_controls),
      cmocka_unit_test(test_escape_invalid_utf8),
      cmocka_unit_test(test_string_n_and_keys),
      cmocka_unit_test(test_styles),
      cmocka_unit_test(test_max_depth_ok),
      cmocka_unit_test(test_raw),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_misuse_stops_output),
      cmocka_unit_test(test_finish_twice),
      cmocka_unit_test(test_large_document),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

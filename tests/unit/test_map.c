/* test_map.c - the memory-map renderers (include/nnmem/map.h) read back by
 * real consumers: the SVG by libxml2 (rectangle count and every rectangle's
 * coordinates recomputed here from offsets and lifetimes), the trace and
 * the HTML's embedded data by cJSON (one event per buffer, lanes that never
 * overlap, the live-bytes counter against a brute-force count, exact
 * values above 2^53 as strings), hostile names (markup, quotes, control
 * bytes, invalid UTF-8) kept well-formed, and bad arguments refused. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifdef NNMEM_HAVE_LIBXML2
#include <libxml/parser.h>
#include <libxml/tree.h>
#endif

/* Plot geometry documented in src/export/map_svg.c. */
#define PX0 96.0
#define PX1 960.0
#define PY0 100.0
#define PY1 660.0

static const char *const hostile[] = {"a</script><!--b", "q\"uo'te&amp;<x>",
                                      "ctl\x01\x1f\x7f!", "bad\xff\xfeutf8",
                                      "caf\xc3\xa9 \xe2\x82\xac"};
#define N_HOSTILE (sizeof hostile / sizeof hostile[0])

typedef struct fixture {
  nnmem_problem_t *p;
  nnmem_plan_t *plan;
} fixture_t;

/* A problem with hostile ids and a spread of lifetimes, planned and
 * verified. */
static fixture_t make_problem(size_t n, uint64_t seed) {
  fixture_t f = {0};
  assert_ok(nnmem_problem_create(&f.p));
  for (size_t i = 0; i < n; i++) {
    char id[64];
    if (i < N_HOSTILE)
      snprintf(id, sizeof id, "%s", hostile[i]);
    else
      snprintf(id, sizeof id, "b%zu", i);
    uint64_t first = tu_rand(&seed) % 50, len = 1 + tu_rand(&seed) % 10;
    uint64_t size = 1 + tu_rand(&seed) % 5000;
    assert_ok(nnmem_problem_add(f.p, id, size, 1, first, first + len, NULL));
  }
  f.plan = tu_plan_verified(f.p, NULL);
  return f;
}

static void fixture_free(fixture_t *f) {
  nnmem_plan_destroy(f->plan);
  nnmem_problem_destroy(f->p);
}

/* A graph with one buffer of each kind: X (input) -> conv (workspace) -> Y,
 * reshape (view of Y) -> Z, relu (in place on Z) -> W (output), weight w. */
typedef struct gfix {
  nnmem_graph_t *g;
  nnmem_liveness_t *l;
  nnmem_plan_t *plan;
} gfix_t;

static void add_op(nnmem_graph_t *g, const char *name, uint32_t *in,
                   uint32_t n_in, uint32_t out, uint64_t ws, uint32_t flags) {
  nnmem_op_desc_t d = {0};
  d.name = name;
  d.type = "Op";
  d.inputs = in;
  d.n_inputs = n_in;
  d.outputs = &out;
  d.n_outputs = 1;
  d.workspace_bytes = ws;
  d.flags = flags;
  assert_ok(nnmem_graph_add_op(g, &d, NULL, NULL));
}

static gfix_t make_graph(void) {
  gfix_t f = {0};
  assert_ok(nnmem_graph_create("net<&>", &f.g));
  uint32_t x = tu_add_tensor(f.g, "X", NNMEM_TENSOR_INPUT, 1024);
  uint32_t w = tu_add_tensor(f.g, "w", NNMEM_TENSOR_WEIGHT, 100);
  uint32_t y = tu_add_tensor(f.g, "Y</script>", NNMEM_TENSOR_ACTIVATION, 2048);
  uint32_t z = tu_add_tensor(f.g, "Z", NNMEM_TENSOR_ACTIVATION, 2048);
  uint32_t o = tu_add_tensor(f.g, "W", NNMEM_TENSOR_OUTPUT, 2048);
  uint32_t in1[2] = {x, w};
  add_op(f.g, "conv\"1", in1, 2, y, 512, 0);
  add_op(f.g, "reshape", &y, 1, z, 0, NNMEM_OP_VIEW);
  add_op(f.g, "relu", &z, 1, o, 0, NNMEM_OP_INPLACE);
  assert_ok(nnmem_liveness_analyze(f.g, NULL, &f.l, NULL));
  f.plan = tu_plan_verified(nnmem_liveness_problem(f.l), NULL);
  return f;
}

static void gfix_free(gfix_t *f) {
  nnmem_plan_destroy(f->plan);
  nnmem_liveness_destroy(f->l);
  nnmem_graph_destroy(f->g);
}

/* ---- SVG ----------------------------------------------------------------- */

#ifdef NNMEM_HAVE_LIBXML2
static double attr_d(xmlNode *n, const char *name) {
  xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
  if (!v) fail_msg("<%s> has no %s", (const char *)n->name, name);
  double d = strtod((const char *)v, NULL);
  xmlFree(v);
  return d;
}

/* Visits every element below `n`; counts <rect class="buf ..."> and checks
 * each against the problem. */
static size_t check_rects(xmlNode *n, const nnmem_problem_t *p,
                          const uint64_t *off, uint64_t xmin, double sx,
                          double sy, int *seen, int check_names) {
  size_t count = 0;
  for (xmlNode *c = n; c; c = c->next) {
    if (c->type != XML_ELEMENT_NODE) continue;
    xmlChar *cls = xmlGetProp(c, (const xmlChar *)"class");
    if (strcmp((const char *)c->name, "rect") == 0 && cls &&
        strncmp((const char *)cls, "buf ", 4) == 0) {
      size_t i = (size_t)attr_d(c, "data-i");
      assert_true(i < nnmem_problem_count(p));
      assert_false(seen[i]);
      seen[i] = 1;
      const nnmem_buffer_t *b = &nnmem_problem_buffers(p)[i];
      assert_float_equal(attr_d(c, "x"), PX0 + (double)(b->first - xmin) * sx,
                         0.002);
      assert_float_equal(attr_d(c, "width"), (double)(b->last - b->first) * sx,
                         0.002);
      assert_float_equal(attr_d(c, "y"), PY1 - (double)(off[i] + b->size) * sy,
                         0.002);
      assert_float_equal(attr_d(c, "height"), (double)b->size * sy, 0.002);
      /* the tooltip starts with the id, escaped and decoded back */
      xmlChar *tip = xmlNodeGetContent(c);
      const char *id = nnmem_problem_id(p, i);
      if (check_names && id && i < N_HOSTILE && i != 2 && i != 3)
        assert_memory_equal(tip, id, strlen(id));
      if (i == 2) assert_non_null(strstr((char *)tip, "ctl\xEF\xBF\xBD"));
      if (i == 3) assert_non_null(strstr((char *)tip, "bad\xEF\xBF\xBD"));
      xmlFree(tip);
      count++;
    }
    xmlFree(cls);
    count += check_rects(c->children, p, off, xmin, sx, sy, seen, check_names);
  }
  return count;
}

/* check_rects over the whole SVG of fixture `f`, with the geometry computed
 * independently: the step range and height from the problem and plan. */
static size_t svg_rects(xmlDoc *doc, const fixture_t *f, int *seen,
                        int check_names) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(f->p);
  uint64_t xmin = UINT64_MAX, xmax = 0;
  for (size_t i = 0; i < nnmem_problem_count(f->p); i++) {
    if (b[i].first < xmin) xmin = b[i].first;
    if (b[i].last > xmax) xmax = b[i].last;
  }
  double sx = (PX1 - PX0) / (double)(xmax - xmin);
  double sy = (PY1 - PY0) / (double)nnmem_plan_height(f->plan);
  return check_rects(xmlDocGetRootElement(doc), f->p,
                     nnmem_plan_offsets(f->plan), xmin, sx, sy, seen,
                     check_names);
}

static xmlDoc *parse_xml(const char *text) {
  xmlDoc *doc = xmlReadMemory(text, (int)strlen(text), "map.svg", "UTF-8",
                              XML_PARSE_NONET | XML_PARSE_NOERROR |
                                  XML_PARSE_NOWARNING | XML_PARSE_HUGE);
  if (!doc) fail_msg("the SVG is not well-formed XML");
  return doc;
}
#endif

static void test_svg_rects(void **state) {
  (void)state;
#ifndef NNMEM_HAVE_LIBXML2
  skip();
#else
  fixture_t f = make_problem(300, 7);
  nnmem_map_config_t cfg;
  nnmem_map_config_init(&cfg);
  cfg.title = "t<i>tle & \"q\"";
  char *svg = NULL;
  assert_ok(nnmem_map_svg(f.p, f.plan, NULL, NULL, &cfg, &svg));
  xmlDoc *doc = parse_xml(svg);
  int seen[300] = {0};
  size_t count = svg_rects(doc, &f, seen, 1);
  assert_int_equal(count, 300);
  assert_non_null(strstr(svg, "t&lt;i&gt;tle &amp; &quot;q&quot;"));
  assert_non_null(strstr(svg, "lower bound"));
  assert_non_null(strstr(svg, "peak step"));
  xmlFreeDoc(doc);
  free(svg);
  fixture_free(&f);
#endif
}

/* Level of detail: with a cap, the drawn rectangles are the largest by
 * size x lifetime and the subtitle says how many were left out. */
static void test_svg_cap(void **state) {
  (void)state;
#ifndef NNMEM_HAVE_LIBXML2
  skip();
#else
  fixture_t f = make_problem(400, 11);
  nnmem_map_config_t cfg;
  nnmem_map_config_init(&cfg);
  cfg.svg_max_rects = 50;
  char *svg = NULL;
  assert_ok(nnmem_map_svg(f.p, f.plan, NULL, NULL, &cfg, &svg));
  xmlDoc *doc = parse_xml(svg);
  int seen[400] = {0};
  size_t count = svg_rects(doc, &f, seen, 0);
  assert_int_equal(count, 50);
  const nnmem_buffer_t *b = nnmem_problem_buffers(f.p);
  double min_drawn = 1e300, max_left = 0;
  for (size_t i = 0; i < 400; i++) {
    double a = (double)b[i].size * (double)(b[i].last - b[i].first);
    if (seen[i] && a < min_drawn) min_drawn = a;
    if (!seen[i] && a > max_left) max_left = a;
  }
  assert_true(min_drawn >= max_left);
  assert_non_null(strstr(svg, "350 left out"));
  xmlFreeDoc(doc);
  free(svg);
  fixture_free(&f);
#endif
}

/* ---- Chrome trace ----------------------------------------------------------
 */

static const cJSON *item(const cJSON *o, const char *k) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!j) fail_msg("no key '%s'", k);
  return j;
}

static void test_trace(void **state) {
  (void)state;
  fixture_t f = make_problem(500, 3);
  char *text = NULL;
  assert_ok(nnmem_map_trace_json(f.p, f.plan, NULL, NULL, NULL, &text));
  cJSON *doc = cJSON_Parse(text);
  assert_non_null(doc);
  const nnmem_buffer_t *b = nnmem_problem_buffers(f.p);
  const uint64_t *off = nnmem_plan_offsets(f.plan);
  int seen[500] = {0};
  int lane_of[500];
  size_t x_events = 0, lanes = 0;
  uint64_t counter[64];
  memset(counter, 0xff, sizeof counter);
  const cJSON *ev;
  cJSON_ArrayForEach(ev, item(doc, "traceEvents")) {
    const char *ph = item(ev, "ph")->valuestring;
    if (strcmp(ph, "C") == 0) {
      uint64_t ts = (uint64_t)item(ev, "ts")->valuedouble;
      assert_true(ts < 64);
      counter[ts] = (uint64_t)item(item(ev, "args"), "bytes")->valuedouble;
      continue;
    }
    if (strcmp(ph, "X") != 0) continue;
    const cJSON *args = item(ev, "args");
    size_t i = (size_t)item(args, "buffer")->valuedouble;
    assert_true(i < 500);
    assert_false(seen[i]);
    seen[i] = 1;
    x_events++;
    assert_int_equal((uint64_t)item(ev, "ts")->valuedouble, b[i].first);
    assert_int_equal((uint64_t)item(ev, "dur")->valuedouble,
                     b[i].last - b[i].first);
    assert_int_equal((uint64_t)item(args, "offset")->valuedouble, off[i]);
    assert_int_equal((uint64_t)item(args, "size")->valuedouble, b[i].size);
    if (i < N_HOSTILE) assert_true(cJSON_IsString(item(ev, "name")));
    lane_of[i] = (int)item(ev, "tid")->valuedouble;
    if ((size_t)lane_of[i] + 1 > lanes) lanes = (size_t)lane_of[i] + 1;
  }
  assert_int_equal(x_events, 500);
  /* events of one lane never overlap; the lane count is the maximum
   * number of live buffers (brute force over steps) */
  size_t max_live = 0;
  for (uint64_t s = 0; s < 64; s++) {
    size_t live = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < 500; i++)
      if (b[i].first <= s && s < b[i].last) {
        live++;
        bytes += b[i].size;
        for (size_t j = i + 1; j < 500; j++)
          if (b[j].first <= s && s < b[j].last)
            assert_int_not_equal(lane_of[i], lane_of[j]);
      }
    if (live > max_live) max_live = live;
    /* the counter holds its last value until the next change */
    uint64_t c = UINT64_MAX;
    for (uint64_t t = 0; t <= s; t++)
      if (counter[t] != UINT64_MAX) c = counter[t];
    if (live) assert_int_equal(c, bytes);
  }
  assert_int_equal(lanes, max_live);
  cJSON_Delete(doc);
  free(text);
  fixture_free(&f);
}

/* ---- HTML ------------------------------------------------------------------
 */

/* The JSON inside <script type="application/json" id="data">. */
static cJSON *html_data(const char *html) {
  const char *open = "<script type=\"application/json\" id=\"data\">";
  const char *a = strstr(html, open);
  assert_non_null(a);
  a += strlen(open);
  const char *e = strstr(a, "</script>");
  assert_non_null(e);
  /* nothing in the data can end the element or open a comment */
  for (const char *p = a; p < e; p++)
    assert_true(*p != '<' && *p != '>' && *p != '&');
  cJSON *j = cJSON_ParseWithLength(a, (size_t)(e - a));
  assert_non_null(j);
  return j;
}

static void test_html_data(void **state) {
  (void)state;
  fixture_t f = make_problem(200, 5);
  char *html = NULL;
  assert_ok(nnmem_map_html(f.p, f.plan, NULL, NULL, NULL, &html));
  assert_null(strstr(html, "http://"));
  assert_null(strstr(html, "https://"));
  cJSON *d = html_data(html);
  assert_int_equal((size_t)item(d, "n")->valuedouble, 200);
  const nnmem_buffer_t *b = nnmem_problem_buffers(f.p);
  const uint64_t *off = nnmem_plan_offsets(f.plan);
  const cJSON *names = item(d, "names");
  for (int i = 0; i < 200; i++) {
    assert_int_equal((uint64_t)cJSON_GetArrayItem(item(d, "f"), i)->valuedouble,
                     b[i].first);
    assert_int_equal((uint64_t)cJSON_GetArrayItem(item(d, "l"), i)->valuedouble,
                     b[i].last);
    assert_int_equal((uint64_t)cJSON_GetArrayItem(item(d, "o"), i)->valuedouble,
                     off[i]);
    assert_int_equal((uint64_t)cJSON_GetArrayItem(item(d, "s"), i)->valuedouble,
                     b[i].size);
    const char *name = cJSON_GetArrayItem(names, i)->valuestring;
    if (i == 3) /* invalid UTF-8 became U+FFFD */
      assert_string_equal(name, "bad\xEF\xBF\xBD\xEF\xBF\xBDutf8");
    else
      assert_string_equal(name, nnmem_problem_id(f.p, (size_t)i));
  }
  cJSON_Delete(d);
  free(html);
  fixture_free(&f);
}

/* Offsets and sizes of 2^60 must survive JavaScript's doubles. */
static void test_big_values(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  uint64_t big = UINT64_C(1) << 60;
  assert_ok(nnmem_problem_add(p, "lo", big + 1, 1, 0, 2, NULL));
  assert_ok(nnmem_problem_add(p, "hi", 3, 1, 1, 3, NULL));
  uint64_t offs[2] = {0, big + 1};
  nnmem_plan_t *plan = NULL;
  assert_ok(nnmem_plan_from_offsets(p, offs, &plan));
  char *html = NULL, *trace = NULL;
  assert_ok(nnmem_map_html(p, plan, NULL, NULL, NULL, &html));
  cJSON *d = html_data(html);
  assert_string_equal(cJSON_GetArrayItem(item(d, "o"), 1)->valuestring,
                      "1152921504606846977");
  assert_string_equal(cJSON_GetArrayItem(item(d, "s"), 0)->valuestring,
                      "1152921504606846977");
  assert_true(cJSON_IsNumber(cJSON_GetArrayItem(item(d, "f"), 0)));
  assert_string_equal(item(d, "height")->valuestring, "1152921504606846980");
  cJSON_Delete(d);
  assert_ok(nnmem_map_trace_json(p, plan, NULL, NULL, NULL, &trace));
  assert_non_null(strstr(trace, "\"offset\":\"1152921504606846977\""));
  assert_non_null(strstr(trace, "\"end\":\"1152921504606846980\""));
  free(html);
  free(trace);
  nnmem_plan_destroy(plan);
  nnmem_problem_destroy(p);
}

/* ---- graphs: kinds, names, ops, weights ------------------------------------
 */

static void test_graph_kinds(void **state) {
  (void)state;
  gfix_t f = make_graph();
  const nnmem_problem_t *p = nnmem_liveness_problem(f.l);
  char *html = NULL, *svg = NULL, *trace = NULL;
  assert_ok(nnmem_map_html(p, f.plan, f.g, f.l, NULL, &html));
  cJSON *d = html_data(html);
  int kinds[4] = {0};
  const cJSON *names = item(d, "names"), *ops = item(d, "ops");
  size_t n = nnmem_problem_count(p);
  assert_int_equal(n, 3); /* X, the Y/Z/W group, conv's workspace */
  for (size_t i = 0; i < n; i++) {
    int k = (int)cJSON_GetArrayItem(item(d, "k"), (int)i)->valuedouble;
    int op = (int)cJSON_GetArrayItem(item(d, "op"), (int)i)->valuedouble;
    const char *name = cJSON_GetArrayItem(names, (int)i)->valuestring;
    kinds[k]++;
    if (k == 2) { /* alias: the three tensors, produced by conv */
      assert_string_equal(name, "Y</script>, Z, W");
      assert_string_equal(cJSON_GetArrayItem(ops, op)->valuestring, "conv\"1");
    }
    if (k == 1) /* workspace: the op scheduled at its step */
      assert_string_equal(cJSON_GetArrayItem(ops, op)->valuestring, "conv\"1");
    if (k == 0) {
      assert_string_equal(name, "X");
      assert_int_equal(op, -1); /* a graph input has no producer */
    }
  }
  assert_int_equal(kinds[0], 1);
  assert_int_equal(kinds[1], 1);
  assert_int_equal(kinds[2], 1);
  assert_int_equal((uint64_t)item(d, "weights")->valuedouble, 100);
  cJSON_Delete(d);
  assert_ok(nnmem_map_svg(p, f.plan, f.g, f.l, NULL, &svg));
  assert_non_null(strstr(svg, "id=\"weights\""));
  assert_non_null(strstr(svg, "Y&lt;/script&gt;, Z, W"));
  assert_non_null(strstr(svg, "alias (1)"));
  assert_non_null(strstr(svg, "workspace (1)"));
  assert_ok(nnmem_map_trace_json(p, f.plan, f.g, f.l, NULL, &trace));
  cJSON *t = cJSON_Parse(trace);
  assert_non_null(t);
  assert_string_equal(item(item(t, "otherData"), "model")->valuestring, "");
  cJSON_Delete(t);
  free(html);
  free(svg);
  free(trace);
  gfix_free(&f);
}

static void test_errors(void **state) {
  (void)state;
  fixture_t f = make_problem(10, 1);
  gfix_t g = make_graph();
  char *out = (char *)"untouched";
  /* a plan of another problem, a graph without liveness, NULL arguments */
  assert_int_equal(nnmem_map_svg(nnmem_liveness_problem(g.l), f.plan, NULL,
                                 NULL, NULL, &out),
                   NNMEM_ERR_INVALID);
  assert_null(out);
  assert_int_equal(nnmem_map_html(f.p, f.plan, g.g, NULL, NULL, &out),
                   NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_map_trace_json(f.p, f.plan, g.g, g.l, NULL, &out),
                   NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_map_svg(NULL, f.plan, NULL, NULL, NULL, &out),
                   NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_map_svg(f.p, f.plan, NULL, NULL, NULL, NULL),
                   NNMEM_ERR_INVALID);
  nnmem_map_config_t cfg;
  nnmem_map_config_init(&cfg);
  cfg.alignment = 3;
  assert_int_equal(nnmem_map_svg(f.p, f.plan, NULL, NULL, &cfg, &out),
                   NNMEM_ERR_INVALID);
  /* an empty problem renders */
  nnmem_problem_t *e = NULL;
  nnmem_plan_t *ep = NULL;
  assert_ok(nnmem_problem_create(&e));
  uint64_t no_offsets[1] = {0};
  assert_ok(nnmem_plan_from_offsets(e, no_offsets, &ep));
  assert_ok(nnmem_map_svg(e, ep, NULL, NULL, NULL, &out));
  free(out);
  assert_ok(nnmem_map_html(e, ep, NULL, NULL, NULL, &out));
  free(out);
  assert_ok(nnmem_map_trace_json(e, ep, NULL, NULL, NULL, &out));
  free(out);
  nnmem_plan_destroy(ep);
  nnmem_problem_destroy(e);
  gfix_free(&g);
  fixture_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_svg_rects),  cmocka_unit_test(test_svg_cap),
      cmocka_unit_test(test_trace),      cmocka_unit_test(test_html_data),
      cmocka_unit_test(test_big_values), cmocka_unit_test(test_graph_kinds),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

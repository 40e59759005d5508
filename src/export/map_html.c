/* map_html.c - the memory map of a plan as one self-contained HTML page
 * (no network): a <canvas> drawn by the script in map_html_js.h from data
 * embedded once as compact JSON arrays.
 *
 *   <header>  h1 title, subtitle (peak, lower bound, ratio, buffers,
 *             strategy, weights), legend, help line
 *   <div id="wrap">  <canvas id="map"> + <canvas id="over"> (hover outline)
 *                    + <div id="tip"> (tooltip)
 *   <output id="perf">  render time of the first frame (data-ms)
 *   <script type="application/json" id="data">
 *     {"title", "strategy", "height", "bound", "weights", "peak_step",
 *      "xmin", "xmax", "n", "kinds": [names], "ops": [op names],
 *      "f": [first...], "l": [last...], "o": [offset...], "s": [size...],
 *      "k": [kind index...], "op": [op index or -1...], "names": [...]}
 *   <script> map_html_js </script>
 *
 * Exactness: JavaScript numbers are doubles. Every array of f / l / o / s
 * (and each scalar) is written as JSON numbers when all its values are
 * below 2^53, otherwise as decimal strings; the script draws with Number()
 * (sub-pixel error only) and prints the original text (exact) and the end
 * offset with BigInt in the tooltip.
 *
 * Escaping: all text in HTML goes through nnmem__xml_escape; the JSON comes
 * from the one JSON writer, then every '<', '>' and '&' in it (they can
 * occur only inside JSON strings) becomes \u003c, \u003e, \u0026, so no
 * tensor name can close the <script> element or open "<!--".
 *
 * Complexity O(n + label bytes). Thread-safety: pure function of its
 * arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_write.h"
#include "export/map_html_js.h"
#include "export/map_model.h"

static const char *const base_colour[NNMEM__MAP_KINDS] = {"#4e79a7", "#f28e2b",
                                                          "#59a14f", "#4e79a7"};

typedef uint64_t (*field_fn)(const nnmem__map_t *m, size_t i);

static uint64_t f_first(const nnmem__map_t *m, size_t i) {
  return m->buf[i].first;
}
static uint64_t f_last(const nnmem__map_t *m, size_t i) {
  return m->buf[i].last;
}
static uint64_t f_off(const nnmem__map_t *m, size_t i) {
  return m->off[i];
}
static uint64_t f_size(const nnmem__map_t *m, size_t i) {
  return m->buf[i].size;
}

/* One of f / l / o / s: numbers, or strings when any value is >= 2^53. */
static void big_array(nnmem__jw_t *w, const char *key, const nnmem__map_t *m,
                      field_fn get) {
  int strings = 0;
  for (size_t i = 0; i < m->n && !strings; i++)
    strings = get(m, i) >= NNMEM__MAP_EXACT;
  nnmem__jw_key(w, key);
  nnmem__jw_array(w);
  for (size_t i = 0; i < m->n; i++)
    nnmem__map_jw_big(w, get(m, i), strings);
  nnmem__jw_end(w);
}

static void data_json(nnmem__jw_t *w, const nnmem__map_t *m) {
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "title", m->title);
  nnmem__jw_kv_string(w, "strategy", m->strategy);
  nnmem__map_kv_big(w, "height", m->height);
  nnmem__map_kv_big(w, "bound", m->bound);
  nnmem__map_kv_big(w, "weights", m->weight_bytes);
  nnmem__map_kv_big(w, "peak_step", m->peak_step);
  nnmem__map_kv_big(w, "xmin", m->xmin);
  nnmem__map_kv_big(w, "xmax", m->xmax);
  nnmem__jw_kv_u64(w, "n", m->n);
  nnmem__jw_key(w, "kinds");
  nnmem__jw_array(w);
  for (int k = 0; k < NNMEM__MAP_KINDS; k++)
    nnmem__jw_string(w, nnmem__map_kind_name(k));
  nnmem__jw_end(w);
  size_t n_ops = m->g ? nnmem_graph_op_count(m->g) : 0;
  nnmem__jw_key(w, "ops");
  nnmem__jw_array(w);
  for (size_t o = 0; o < n_ops; o++) {
    nnmem_op_info_t oi;
    nnmem__jw_string(
        w, nnmem_graph_op(m->g, (uint32_t)o, &oi) == NNMEM_OK ? oi.name : "");
  }
  nnmem__jw_end(w);
  big_array(w, "f", m, f_first);
  big_array(w, "l", m, f_last);
  big_array(w, "o", m, f_off);
  big_array(w, "s", m, f_size);
  nnmem__jw_key(w, "k");
  nnmem__jw_array(w);
  for (size_t i = 0; i < m->n; i++)
    nnmem__jw_u64(w, m->kind[i]);
  nnmem__jw_end(w);
  nnmem__jw_key(w, "op");
  nnmem__jw_array(w);
  for (size_t i = 0; i < m->n; i++)
    nnmem__jw_i64(w, m->op[i]);
  nnmem__jw_end(w);
  nnmem__jw_key(w, "names");
  nnmem__jw_array(w);
  for (size_t i = 0; i < m->n; i++)
    nnmem__jw_string(w, m->label[i]);
  nnmem__jw_end(w);
  nnmem__jw_end(w);
}

/* Appends JSON text with < > & as \u escapes (safe inside <script>). */
static void script_safe(nnmem__text_t *t, const char *json, size_t len) {
  size_t from = 0;
  for (size_t i = 0; i < len; i++) {
    const char *rep = json[i] == '<'   ? "\\u003c"
                      : json[i] == '>' ? "\\u003e"
                      : json[i] == '&' ? "\\u0026"
                                       : NULL;
    if (!rep) continue;
    nnmem__text_append(t, json + from, i - from);
    nnmem__text_puts(t, rep);
    from = i + 1;
  }
  nnmem__text_append(t, json + from, len - from);
}

static const char style[] =
    "<style>\n"
    "body{margin:0;font:13px sans-serif;color:#222;background:#fff;"
    "overflow:hidden}\n"
    "header{padding:8px 12px 4px}h1{font-size:17px;margin:0}\n"
    "#sub{margin-top:3px;color:#444}#help{color:#666;font-size:12px}\n"
    "#legend span{display:inline-block;margin:4px 14px 2px 0}\n"
    "#legend i{display:inline-block;width:12px;height:12px;margin-right:4px;"
    "vertical-align:-1px}\n"
    "#wrap{position:relative;margin:0 12px}\n"
    "canvas{position:absolute;left:0;top:0}#map{position:relative}\n"
    "#over{pointer-events:none}\n"
    "#tip{position:absolute;display:none;pointer-events:none;z-index:2;"
    "background:rgba(255,255,255,.96);border:1px solid #888;padding:5px 7px;"
    "white-space:pre;font:12px monospace;box-shadow:1px 1px 4px "
    "rgba(0,0,0,.3)}\n"
    "#perf{position:fixed;right:8px;bottom:2px;color:#888;font-size:11px}\n"
    "</style>\n";

static void head(nnmem__text_t *t, const nnmem__map_t *m) {
  char w[32];
  const char *title = m->title[0] ? m->title : "plan";
  nnmem__text_puts(t,
                   "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
                   "charset=\"utf-8\">\n<title>");
  nnmem__xml_escape(t, title);
  nnmem__text_puts(t, " - memory map</title>\n");
  nnmem__text_puts(t, style);
  nnmem__text_puts(t, "</head>\n<body>\n<header><h1>");
  nnmem__xml_escape(t, title);
  nnmem__text_puts(t, " - memory map</h1>\n<div id=\"sub\">");
  nnmem__map_summary(t, m);
  if (m->weight_bytes) {
    nnmem__map_bytes(w, sizeof w, m->weight_bytes);
    nnmem__text_printf(t, ", weights %s (separate read-only region)", w);
  }
  nnmem__text_puts(t, "</div>\n<div id=\"legend\">");
  for (int k = 0; k < NNMEM__MAP_KINDS; k++)
    if (m->kind_count[k])
      nnmem__text_printf(t,
                         "<span><i style=\"background:%s\"></i>%s (%zu)"
                         "</span>",
                         base_colour[k], nnmem__map_kind_name(k),
                         m->kind_count[k]);
  if (m->weight_bytes)
    nnmem__text_puts(t,
                     "<span><i style=\"background:#bab0ac\"></i>weights"
                     "</span>");
  nnmem__text_puts(
      t,
      "<span><i style=\"background:#d62728;height:2px;vertical-align:3px"
      "\"></i>lower bound</span><span><i style=\"background:#9467bd;"
      "width:2px\"></i>peak step</span></div>\n<div id=\"help\">wheel: "
      "zoom (shift: steps only, alt: addresses only) &middot; drag: pan "
      "&middot; double click: reset &middot; hover: buffer details</div>"
      "\n</header>\n<div id=\"wrap\"><canvas id=\"map\"></canvas><canvas "
      "id=\"over\"></canvas><div id=\"tip\"></div></div>\n<output "
      "id=\"perf\"></output>\n");
}

static nnmem_status_t draw(nnmem__text_t *t, const nnmem__map_t *m,
                           const nnmem_map_config_t *cfg) {
  (void)cfg;
  nnmem__text_t json;
  nnmem__text_init(&json);
  nnmem__jw_t w;
  nnmem__jw_init(&w, &json, NNMEM__JW_COMPACT);
  data_json(&w, m);
  nnmem_status_t st = nnmem__jw_finish(&w);
  if (st == NNMEM_OK) {
    head(t, m);
    nnmem__text_puts(t, "<script type=\"application/json\" id=\"data\">");
    script_safe(t, json.data, json.len);
    nnmem__text_puts(t, "</script>\n<script>\n");
    nnmem__text_puts(t, map_html_js);
    nnmem__text_puts(t, "</script>\n</body>\n</html>\n");
    st = nnmem__text_status(t);
  }
  nnmem__text_free(&json);
  return st;
}

nnmem_status_t nnmem_map_html(const nnmem_problem_t *problem,
                              const nnmem_plan_t *plan, const nnmem_graph_t *g,
                              const nnmem_liveness_t *l,
                              const nnmem_map_config_t *cfg, char **out) {
  return nnmem__map_render(problem, plan, g, l, cfg, draw, out);
}

/* map_model.c - the view of one plan that the memory-map renderers draw
 * (map_svg.c, map_html.c, map_trace.c), the entry every renderer goes
 * through (nnmem__map_render: build, draw, free, hand out), and their shared
 * text helpers (summary line, XML escaping, bytes, ticks, JSON numbers that
 * stay exact above 2^53).
 *
 * Algorithm of nnmem__map_build:
 *   1. check the arguments: plan count == problem count; graph and liveness
 *      both given (problem == liveness problem) or both absent;
 *   2. bare problem: every buffer is kind "buffer", labelled by its id;
 *   3. graph: walk the tensors once; a tensor with a buffer is chained to
 *      it (per-buffer singly linked list, graph order). A buffer's label is
 *      its first NNMEM__MAP_MAX_NAMES tensor names joined by ", " (plus
 *      "(+N more)"); its op is the producer of its earliest-born tensor; a
 *      workspace buffer (no tensor) gets the op scheduled at its first
 *      step. Kind: workspace (liveness says so), alias (two or more tensors
 *      share the buffer: views, in-place), activation otherwise;
 *   4. live-bytes curve: one sweep over the events of roots' active
 *      intervals (+size at first, -size at last, ends first at equal
 *      steps; sub-buffers lie inside their parents; sizes rounded up to
 *      max(align, alignment)), keeping only the last value at each step;
 *      peak_step = first step reaching the maximum;
 *   5. lower bound via nnmem_problem_lower_bound (not derived from 4, so a
 *      test can compare the two).
 *
 * Invariants: every label is a valid NUL-terminated string; kind < KINDS;
 * curve steps strictly increase; peak_live == max(curve_bytes).
 * Complexity: O(n log n + tensors + total label bytes). Thread-safety:
 * pure function of its arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "export/map_model.h"

void nnmem_map_config_init(nnmem_map_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

const char *nnmem__map_kind_name(int kind) {
  static const char *const names[NNMEM__MAP_KINDS] = {"activation", "workspace",
                                                      "alias", "buffer"};
  return kind >= 0 && kind < NNMEM__MAP_KINDS ? names[kind] : "buffer";
}

const char *nnmem__map_op_name(const nnmem__map_t *m, size_t i) {
  nnmem_op_info_t oi;
  if (!m->g || m->op[i] < 0 ||
      nnmem_graph_op(m->g, (uint32_t)m->op[i], &oi) != NNMEM_OK)
    return NULL;
  return oi.name;
}

typedef struct map_event {
  uint64_t step;
  int start; /* 0 = end: ends sort before starts at equal steps */
  uint64_t bytes;
} map_event_t;

static int event_cmp(const void *a, const void *b) {
  const map_event_t *x = a, *y = b;
  if (x->step != y->step) return x->step < y->step ? -1 : 1;
  return x->start - y->start;
}

static uint64_t rounded(uint64_t size, uint64_t a1, uint64_t a2) {
  uint64_t r;
  return nnmem__align_up(size, nnmem__max_u64(a1, a2), &r) ? UINT64_MAX : r;
}

/* Step 4. */
static nnmem_status_t live_curve(nnmem__map_t *m) {
  size_t n = m->n, k = 0, cap = 2 * n;
  if (!n) return NNMEM_OK;
  for (size_t i = 0; i < n; i++)
    cap += 2 * nnmem_problem_gaps(m->problem, i, NULL);
  map_event_t *ev = malloc(cap * sizeof *ev);
  m->curve_step = malloc(cap * sizeof *m->curve_step);
  m->curve_bytes = malloc(cap * sizeof *m->curve_bytes);
  if (!ev || !m->curve_step || !m->curve_bytes) {
    free(ev);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    /* a sub-buffer lies inside its parent; a gap holds nothing */
    if (nnmem_problem_parent(m->problem, i, NULL, NULL) == NNMEM_OK) continue;
    uint64_t sz = rounded(m->buf[i].size, m->buf[i].align, m->alignment);
    const nnmem_interval_t *g;
    size_t ng = nnmem_problem_gaps(m->problem, i, &g);
    uint64_t t = m->buf[i].first;
    for (size_t j = 0; j <= ng; j++) {
      uint64_t stop = j < ng ? g[j].first : m->buf[i].last;
      if (stop > t) {
        ev[k++] = (map_event_t){t, 1, sz};
        ev[k++] = (map_event_t){stop, 0, sz};
      }
      if (j < ng && g[j].last > t) t = g[j].last;
    }
  }
  qsort(ev, k, sizeof *ev, event_cmp);
  uint64_t live = 0;
  for (size_t i = 0; i < k; i++) {
    uint64_t r;
    live = ev[i].start
               ? (nnmem__add_overflow(live, ev[i].bytes, &r) ? UINT64_MAX : r)
               : live - ev[i].bytes;
    if (ev[i].start && live > m->peak_live) {
      m->peak_live = live;
      m->peak_step = ev[i].step;
    }
    if (i + 1 < k && ev[i + 1].step == ev[i].step) continue;
    m->curve_step[m->n_curve] = ev[i].step;
    m->curve_bytes[m->n_curve++] = live;
  }
  free(ev);
  return NNMEM_OK;
}

/* Joins the names of the tensors chained from head[b] (step 3). */
static char *join_names(const nnmem_graph_t *g, const uint32_t *next,
                        uint32_t first, size_t count) {
  nnmem__text_t t;
  nnmem__text_init(&t);
  size_t shown = 0;
  for (uint32_t ti = first; ti != NNMEM_NO_BUFFER && shown < count;
       ti = next[ti]) {
    nnmem_tensor_info_t info;
    if (nnmem_graph_tensor(g, ti, &info) != NNMEM_OK) continue;
    if (shown == NNMEM__MAP_MAX_NAMES) {
      nnmem__text_printf(&t, " (+%zu more)", count - shown);
      break;
    }
    if (shown++) nnmem__text_puts(&t, ", ");
    nnmem__text_puts(&t, info.name ? info.name : "");
  }
  if (!t.data) nnmem__text_puts(&t, "");
  if (t.failed) {
    nnmem__text_free(&t);
    return NULL;
  }
  return t.data;
}

typedef struct graph_scan {
  uint32_t *head, *tail, *next; /* tensor chains per buffer */
  size_t *count;                /* tensors per buffer */
  uint64_t *born;               /* first step of the op's tensor */
} graph_scan_t;

static void scan_free(graph_scan_t *s) {
  free(s->head);
  free(s->tail);
  free(s->next);
  free(s->count);
  free(s->born);
}

/* Step 3: chains, ops and kinds. */
static nnmem_status_t graph_labels(nnmem__map_t *m, const nnmem_liveness_t *l) {
  size_t nt = nnmem_graph_tensor_count(m->g), n = m->n;
  graph_scan_t s = {
      malloc(n * sizeof(uint32_t) + 1), malloc(n * sizeof(uint32_t) + 1),
      malloc(nt * sizeof(uint32_t) + 1), calloc(n + 1, sizeof(size_t)),
      malloc(n * sizeof(uint64_t) + 1)};
  if (!s.head || !s.tail || !s.next || !s.count || !s.born) {
    scan_free(&s);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t b = 0; b < n; b++) {
    s.head[b] = s.tail[b] = NNMEM_NO_BUFFER;
    m->op[b] = -1;
    s.born[b] = UINT64_MAX;
  }
  for (uint32_t t = 0; t < nt; t++) {
    nnmem_tensor_live_t tl;
    nnmem_tensor_info_t ti;
    s.next[t] = NNMEM_NO_BUFFER;
    if (nnmem_liveness_tensor(l, t, &tl) != NNMEM_OK ||
        tl.buffer == NNMEM_NO_BUFFER || tl.buffer >= n ||
        nnmem_graph_tensor(m->g, t, &ti) != NNMEM_OK)
      continue;
    uint32_t b = tl.buffer;
    if (s.head[b] == NNMEM_NO_BUFFER)
      s.head[b] = t;
    else
      s.next[s.tail[b]] = t;
    s.tail[b] = t;
    s.count[b]++;
    if (ti.producer >= 0 && tl.first < s.born[b]) {
      s.born[b] = tl.first;
      m->op[b] = ti.producer;
    }
  }
  const uint32_t *order = nnmem_liveness_order(l);
  uint64_t steps = nnmem_liveness_steps(l);
  nnmem_status_t st = NNMEM_OK;
  for (size_t b = 0; b < n && st == NNMEM_OK; b++) {
    int ws = nnmem_liveness_buffer_kind(l, b) == NNMEM_BUFFER_WORKSPACE;
    m->kind[b] = ws               ? NNMEM__MAP_WORKSPACE
                 : s.count[b] > 1 ? NNMEM__MAP_ALIAS
                                  : NNMEM__MAP_ACTIVATION;
    if (m->op[b] < 0 && ws && m->buf[b].first < steps && order)
      m->op[b] = (int32_t)order[m->buf[b].first];
    /* buffers without tensors (workspace) are labelled by id_labels */
    if (s.count[b]) {
      m->label[b] = join_names(m->g, s.next, s.head[b], s.count[b]);
      if (!m->label[b]) st = NNMEM_ERR_NOMEM;
    }
  }
  scan_free(&s);
  return st;
}

/* Bare problems (and graph buffers without tensors): the id or "#i". */
static nnmem_status_t id_labels(nnmem__map_t *m, const nnmem_problem_t *p) {
  for (size_t b = 0; b < m->n; b++) {
    if (m->label[b]) continue;
    const char *id = nnmem_problem_id(p, b);
    char num[32];
    if (!id) {
      snprintf(num, sizeof num, "#%zu", b);
      id = num;
    }
    m->label[b] = nnmem__strdup(id);
    if (!m->label[b]) return NNMEM_ERR_NOMEM;
  }
  return NNMEM_OK;
}

static void steps_range(nnmem__map_t *m) {
  m->xmin = m->n ? UINT64_MAX : 0;
  m->xmax = 0;
  for (size_t i = 0; i < m->n; i++) {
    if (m->buf[i].first < m->xmin) m->xmin = m->buf[i].first;
    if (m->buf[i].last > m->xmax) m->xmax = m->buf[i].last;
  }
  if (m->xmax <= m->xmin) m->xmax = m->xmin + 1;
}

nnmem_status_t nnmem__map_build(nnmem__map_t *m, const nnmem_problem_t *problem,
                                const nnmem_plan_t *plan,
                                const nnmem_graph_t *g,
                                const nnmem_liveness_t *l,
                                const nnmem_map_config_t *cfg) {
  memset(m, 0, sizeof *m);
  if (!problem || !plan || !g != !l) return NNMEM_ERR_INVALID;
  if (l && nnmem_liveness_problem(l) != problem) return NNMEM_ERR_INVALID;
  if (nnmem_plan_count(plan) != nnmem_problem_count(problem))
    return NNMEM_ERR_INVALID;
  m->alignment = cfg && cfg->alignment ? cfg->alignment : 1;
  if (!nnmem__is_pow2(m->alignment)) return NNMEM_ERR_INVALID;
  m->n = nnmem_problem_count(problem);
  m->buf = nnmem_problem_buffers(problem);
  m->problem = problem;
  m->off = nnmem_plan_offsets(plan);
  m->g = g;
  m->title = cfg && cfg->title ? cfg->title : "";
  m->strategy = nnmem_strategy_name(nnmem_plan_strategy(plan));
  m->height = nnmem_plan_height(plan);
  m->weight_bytes = l ? nnmem_liveness_weight_bytes(l) : 0;
  m->kind = calloc(m->n + 1, 1);
  m->label = calloc(m->n + 1, sizeof *m->label);
  m->op = malloc((m->n + 1) * sizeof *m->op);
  if (!m->kind || !m->label || !m->op) {
    nnmem__map_free(m);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < m->n; i++) {
    m->op[i] = -1;
    m->kind[i] = NNMEM__MAP_BUFFER;
  }
  nnmem_status_t st = g ? graph_labels(m, l) : NNMEM_OK;
  if (st == NNMEM_OK) st = id_labels(m, problem);
  if (st == NNMEM_OK) st = live_curve(m);
  if (st == NNMEM_OK)
    st = nnmem_problem_lower_bound(problem, m->alignment, &m->bound);
  if (st != NNMEM_OK) {
    nnmem__map_free(m);
    return st;
  }
  for (size_t i = 0; i < m->n; i++)
    m->kind_count[m->kind[i]]++;
  steps_range(m);
  return NNMEM_OK;
}

void nnmem__map_free(nnmem__map_t *m) {
  if (m->label)
    for (size_t i = 0; i < m->n; i++)
      free(m->label[i]);
  free(m->label);
  free(m->kind);
  free(m->op);
  free(m->curve_step);
  free(m->curve_bytes);
  memset(m, 0, sizeof *m);
}

nnmem_status_t nnmem__map_render(const nnmem_problem_t *problem,
                                 const nnmem_plan_t *plan,
                                 const nnmem_graph_t *g,
                                 const nnmem_liveness_t *l,
                                 const nnmem_map_config_t *cfg,
                                 nnmem__map_draw_fn draw, char **out) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  nnmem__map_t m;
  nnmem_status_t st = nnmem__map_build(&m, problem, plan, g, l, cfg);
  if (st != NNMEM_OK) return st;
  nnmem__text_t t;
  nnmem__text_init(&t);
  st = draw(&t, &m, cfg);
  nnmem__map_free(&m);
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    return st;
  }
  *out = t.data;
  return NNMEM_OK;
}

void nnmem__map_summary(nnmem__text_t *t, const nnmem__map_t *m) {
  char peak[32], bound[32];
  nnmem__map_bytes(peak, sizeof peak, m->height);
  nnmem__map_bytes(bound, sizeof bound, m->bound);
  double ratio = m->bound ? (double)m->height / (double)m->bound : 1.0;
  nnmem__text_printf(t,
                     "peak %s (%llu B), lower bound %s (%llu B), ratio "
                     "%.3fx, %zu buffers, strategy %s",
                     peak, (unsigned long long)m->height, bound,
                     (unsigned long long)m->bound, ratio, m->n, m->strategy);
}

void nnmem__map_jw_big(nnmem__jw_t *w, uint64_t v, int as_string) {
  if (!as_string) {
    nnmem__jw_u64(w, v);
    return;
  }
  char num[24];
  snprintf(num, sizeof num, "%llu", (unsigned long long)v);
  nnmem__jw_string(w, num);
}

void nnmem__map_kv_big(nnmem__jw_t *w, const char *key, uint64_t v) {
  nnmem__jw_key(w, key);
  nnmem__map_jw_big(w, v, v >= NNMEM__MAP_EXACT);
}

void nnmem__xml_escape(nnmem__text_t *t, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t len = strlen((const char *)p), i = 0;
  while (i < len) {
    unsigned char c = p[i];
    const char *rep = c == '&'    ? "&amp;"
                      : c == '<'  ? "&lt;"
                      : c == '>'  ? "&gt;"
                      : c == '"'  ? "&quot;"
                      : c == '\'' ? "&#39;"
                                  : NULL;
    if (rep) {
      nnmem__text_puts(t, rep);
      i++;
    } else if (c < 0x20 && c != '\t' && c != '\n') {
      nnmem__text_puts(t, "\xEF\xBF\xBD");
      i++;
    } else if (c == 0x7F) {
      nnmem__text_puts(t, "\xEF\xBF\xBD");
      i++;
    } else {
      size_t k = c < 0x80 ? 1 : nnmem__utf8_seq(p + i, len - i);
      if (k == 0) {
        nnmem__text_puts(t, "\xEF\xBF\xBD");
        i++;
      } else {
        nnmem__text_append(t, (const char *)p + i, k);
        i += k;
      }
    }
  }
}

void nnmem__map_bytes(char *buf, size_t cap, uint64_t v) {
  static const char *const units[] = {"B",   "KiB", "MiB", "GiB",
                                      "TiB", "PiB", "EiB"};
  int u = 0;
  double d = (double)v;
  while (d >= 1024.0 && u < 6) {
    d /= 1024.0;
    u++;
  }
  if (u == 0)
    snprintf(buf, cap, "%llu B", (unsigned long long)v);
  else
    snprintf(buf, cap, "%.3g %s", d, units[u]);
}

double nnmem__map_tick(double span, int bytes, int target, double *unit_out) {
  double unit = 1;
  if (bytes)
    while (unit * 1024.0 <= span && unit < 1152921504606846976.0)
      unit *= 1024.0;
  *unit_out = unit;
  double raw = span / unit / (target > 0 ? target : 1);
  if (!(raw > 0)) return unit;
  double p10 = pow(10.0, floor(log10(raw)));
  double f = raw / p10;
  double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  double step = nice * p10 * unit;
  return step < 1 ? 1 : step;
}

void nnmem__map_tick_label(char *buf, size_t cap, double v, double unit,
                           int bytes) {
  static const char *const units[] = {"B",   "KiB", "MiB", "GiB",
                                      "TiB", "PiB", "EiB"};
  if (!bytes) {
    snprintf(buf, cap, "%.15g", v);
    return;
  }
  int u = 0;
  for (double x = unit; x >= 1024.0 && u < 6; x /= 1024.0)
    u++;
  snprintf(buf, cap, "%.4g %s", v / unit, units[u]);
}

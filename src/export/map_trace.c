/* map_trace.c - the plan as a Chrome trace / Perfetto timeline (JSON object
 * format, loadable in chrome://tracing and ui.perfetto.dev).
 *
 * Mapping (1 schedule step = 1 microsecond, the format's time unit):
 *
 *   pid 0 "live bytes"        counter: {"ph":"C","ts":step,
 *                                       "args":{"bytes":live}} at every step
 *                             where the live bytes change
 *   pid 1 "activation"        one process per buffer kind that occurs;
 *   pid 2 "workspace"         inside it one thread per lane:
 *   pid 3 "alias"               tid 0 ---[a]--[c]-----
 *   pid 4 "buffer"              tid 1 ------[b]----[d]-
 *                             each buffer is a complete event {"ph":"X",
 *                             "name": tensor names, "cat": kind,
 *                             "ts": first, "dur": last - first,
 *                             "args": {"buffer", "offset", "size", "end",
 *                             "op"}}
 *   "otherData"               model, strategy, height, lower_bound,
 *                             peak_step, weight_bytes, steps_per_us (1)
 *
 * Lanes: buffers of one kind are taken by first step and each goes to the
 * free lane that ended earliest (interval partitioning with a min-heap of
 * lane ends), so events of one thread never overlap (the viewers expect
 * properly nested events per thread) and the lane count is the kind's
 * maximum number of simultaneously live buffers.
 *
 * Integers are written exactly by the JSON writer. Viewers read numbers as
 * doubles, so args offset / size / end above 2^53 are written as decimal
 * strings; ts / dur and the counter stay numbers (steps and live bytes that
 * large are not shown exactly by any viewer).
 *
 * Complexity O(n log n). Thread-safety: pure function of its arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_write.h"
#include "export/map_model.h"

typedef struct lane_end {
  uint64_t end;
  uint32_t lane;
} lane_end_t;

/* Min-heap of lane ends (ties: lower lane first). */
static int heap_less(const lane_end_t *a, const lane_end_t *b) {
  return a->end != b->end ? a->end < b->end : a->lane < b->lane;
}

static void heap_sift_down(lane_end_t *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && heap_less(&h[l], &h[m])) m = l;
    if (r < n && heap_less(&h[r], &h[m])) m = r;
    if (m == i) return;
    lane_end_t t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

static void heap_push(lane_end_t *h, size_t *n, lane_end_t v) {
  size_t i = (*n)++;
  h[i] = v;
  while (i && heap_less(&h[i], &h[(i - 1) / 2])) {
    lane_end_t t = h[i];
    h[i] = h[(i - 1) / 2];
    h[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}

typedef struct by_first {
  uint64_t first;
  size_t i;
} by_first_t;

static int first_cmp(const void *a, const void *b) {
  const by_first_t *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return x->i < y->i ? -1 : 1;
}

/* Lane of every buffer, per kind; lanes_per_kind[k] = lanes used. */
static nnmem_status_t assign_lanes(const nnmem__map_t *m, uint32_t *lane,
                                   uint32_t *lanes_per_kind) {
  by_first_t *order = malloc((m->n + 1) * sizeof *order);
  lane_end_t *heap = malloc((m->n + 1) * sizeof *heap);
  if (!order || !heap) {
    free(order);
    free(heap);
    return NNMEM_ERR_NOMEM;
  }
  for (int k = 0; k < NNMEM__MAP_KINDS; k++) {
    size_t cnt = 0, hn = 0;
    for (size_t i = 0; i < m->n; i++)
      if (m->kind[i] == k) order[cnt++] = (by_first_t){m->buf[i].first, i};
    qsort(order, cnt, sizeof *order, first_cmp);
    uint32_t used = 0;
    for (size_t j = 0; j < cnt; j++) {
      const nnmem_buffer_t *b = &m->buf[order[j].i];
      uint32_t ln;
      if (hn && heap[0].end <= b->first) {
        ln = heap[0].lane;
        heap[0] = (lane_end_t){b->last, ln};
        heap_sift_down(heap, hn, 0);
      } else {
        ln = used++;
        heap_push(heap, &hn, (lane_end_t){b->last, ln});
      }
      lane[order[j].i] = ln;
    }
    lanes_per_kind[k] = used;
  }
  free(order);
  free(heap);
  return NNMEM_OK;
}

static void meta(nnmem__jw_t *w, const char *what, int pid, int64_t tid,
                 const char *name) {
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "name", what);
  nnmem__jw_kv_string(w, "ph", "M");
  nnmem__jw_kv_i64(w, "pid", pid);
  if (tid >= 0) nnmem__jw_kv_i64(w, "tid", tid);
  nnmem__jw_key(w, "args");
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "name", name);
  nnmem__jw_end(w);
  nnmem__jw_end(w);
}

static void other_data(nnmem__jw_t *w, const nnmem__map_t *m) {
  nnmem__jw_key(w, "otherData");
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "model", m->title);
  nnmem__jw_kv_string(w, "strategy", m->strategy);
  nnmem__jw_kv_u64(w, "height", m->height);
  nnmem__jw_kv_u64(w, "lower_bound", m->bound);
  nnmem__jw_kv_u64(w, "peak_step", m->peak_step);
  nnmem__jw_kv_u64(w, "weight_bytes", m->weight_bytes);
  nnmem__jw_kv_u64(w, "buffers", m->n);
  nnmem__jw_kv_u64(w, "steps_per_us", 1);
  nnmem__jw_end(w);
}

static void buffer_event(nnmem__jw_t *w, const nnmem__map_t *m, size_t i,
                         uint32_t lane) {
  const nnmem_buffer_t *b = &m->buf[i];
  const char *op = nnmem__map_op_name(m, i);
  uint64_t end = m->off[i] + b->size; /* the verified plan cannot overflow */
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "name", m->label[i]);
  nnmem__jw_kv_string(w, "cat", nnmem__map_kind_name(m->kind[i]));
  nnmem__jw_kv_string(w, "ph", "X");
  nnmem__jw_kv_i64(w, "pid", m->kind[i] + 1);
  nnmem__jw_kv_u64(w, "tid", lane);
  nnmem__jw_kv_u64(w, "ts", b->first);
  nnmem__jw_kv_u64(w, "dur", b->last - b->first);
  nnmem__jw_key(w, "args");
  nnmem__jw_object(w);
  nnmem__jw_kv_u64(w, "buffer", i);
  nnmem__map_kv_big(w, "offset", m->off[i]);
  nnmem__map_kv_big(w, "size", b->size);
  nnmem__map_kv_big(w, "end", end < m->off[i] ? UINT64_MAX : end);
  if (op) nnmem__jw_kv_string(w, "op", op);
  nnmem__jw_end(w);
  nnmem__jw_end(w);
}

static void events(nnmem__jw_t *w, const nnmem__map_t *m, const uint32_t *lane,
                   const uint32_t *lanes) {
  nnmem__jw_key(w, "traceEvents");
  nnmem__jw_array(w);
  meta(w, "process_name", 0, -1, "live bytes");
  for (int k = 0; k < NNMEM__MAP_KINDS; k++) {
    if (!m->kind_count[k]) continue;
    meta(w, "process_name", k + 1, -1, nnmem__map_kind_name(k));
    for (uint32_t ln = 0; ln < lanes[k]; ln++) {
      char name[32];
      snprintf(name, sizeof name, "lane %u", (unsigned)ln);
      meta(w, "thread_name", k + 1, ln, name);
    }
  }
  for (size_t j = 0; j < m->n_curve; j++) {
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "name", "live bytes");
    nnmem__jw_kv_string(w, "ph", "C");
    nnmem__jw_kv_i64(w, "pid", 0);
    nnmem__jw_kv_u64(w, "ts", m->curve_step[j]);
    nnmem__jw_key(w, "args");
    nnmem__jw_object(w);
    nnmem__jw_kv_u64(w, "bytes", m->curve_bytes[j]);
    nnmem__jw_end(w);
    nnmem__jw_end(w);
  }
  for (size_t i = 0; i < m->n; i++)
    buffer_event(w, m, i, lane[i]);
  nnmem__jw_end(w);
}

static nnmem_status_t draw(nnmem__text_t *t, const nnmem__map_t *m,
                           const nnmem_map_config_t *cfg) {
  (void)cfg;
  uint32_t *lane = malloc((m->n + 1) * sizeof *lane);
  uint32_t lanes[NNMEM__MAP_KINDS] = {0};
  nnmem_status_t st = lane ? assign_lanes(m, lane, lanes) : NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) {
    nnmem__jw_t w;
    nnmem__jw_init(&w, t, NNMEM__JW_COMPACT);
    nnmem__jw_object(&w);
    other_data(&w, m);
    events(&w, m, lane, lanes);
    nnmem__jw_end(&w);
    st = nnmem__jw_finish(&w);
  }
  free(lane);
  return st;
}

nnmem_status_t nnmem_map_trace_json(const nnmem_problem_t *problem,
                                    const nnmem_plan_t *plan,
                                    const nnmem_graph_t *g,
                                    const nnmem_liveness_t *l,
                                    const nnmem_map_config_t *cfg, char **out) {
  return nnmem__map_render(problem, plan, g, l, cfg, draw, out);
}

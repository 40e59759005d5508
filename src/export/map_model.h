/* map_model.h - what the memory-map renderers share (internal): the view
 * of one plan that the SVG, HTML and trace writers draw, plus the XML
 * escaper, byte formatting and axis ticks.
 *
 * A map model is built once per call from (problem, plan, graph, liveness)
 * and owns only derived arrays (kinds, joined tensor names, op per buffer,
 * the live-bytes curve); the problem, plan and graph must outlive it. */
#ifndef NNMEM_MAP_MODEL_H
#define NNMEM_MAP_MODEL_H

#include <stdint.h>

#include "common/json_write.h"
#include "common/text.h"
#include "nnmem/map.h"

/* Buffer kinds as drawn (order = legend order). */
enum {
  NNMEM__MAP_ACTIVATION = 0,
  NNMEM__MAP_WORKSPACE,
  NNMEM__MAP_ALIAS,
  NNMEM__MAP_BUFFER,
  NNMEM__MAP_KINDS
};

/* At most this many tensor names are joined into one buffer label. */
#define NNMEM__MAP_MAX_NAMES 8

typedef struct nnmem__map {
  size_t n;                       /* buffers */
  const nnmem_buffer_t *buf;      /* the problem's buffers */
  const nnmem_problem_t *problem; /* for gaps and sub-buffers */
  const uint64_t *off;            /* the plan's offsets */
  const nnmem_graph_t *g;         /* NULL for a bare problem */
  uint8_t *kind;                  /* NNMEM__MAP_* per buffer */
  char **label;                   /* per buffer: tensor names joined by ", "
                                     (bare problems: the id, or "#i") */
  int32_t *op;                    /* per buffer: graph op index, or -1 */
  const char *title;              /* never NULL ("" when none) */
  const char *strategy;           /* the plan's strategy name */
  uint64_t alignment;             /* >= 1 */
  uint64_t height;                /* plan height */
  uint64_t bound;                 /* lower bound with `alignment` */
  uint64_t weight_bytes;          /* 0 for a bare problem */
  uint64_t xmin, xmax;            /* step range: min first, max last (xmax >
                                     xmin; [0, 1) for an empty problem) */
  uint64_t peak_step;             /* first step with the most live bytes */
  uint64_t peak_live;             /* those bytes (sizes rounded to alignment) */
  size_t n_curve;                 /* live-bytes curve: from curve_step[i] on, */
  uint64_t *curve_step;           /* curve_bytes[i] bytes are live (change */
  uint64_t *curve_bytes;          /* points only, steps increasing) */
  size_t kind_count[NNMEM__MAP_KINDS];
} nnmem__map_t;

/* Builds the model. `g` and `l` both NULL (bare problem) or both set with
 * problem == nnmem_liveness_problem(l); plan count must equal the problem
 * count. NNMEM_ERR_INVALID otherwise, NNMEM_ERR_NOMEM. */
nnmem_status_t nnmem__map_build(nnmem__map_t *m, const nnmem_problem_t *problem,
                                const nnmem_plan_t *plan,
                                const nnmem_graph_t *g,
                                const nnmem_liveness_t *l,
                                const nnmem_map_config_t *cfg);
void nnmem__map_free(nnmem__map_t *m);

/* Draws one map into `t` (initialised and empty); returns its status
 * (NNMEM_OK, or the first failure, e.g. the text's NNMEM_ERR_NOMEM). */
typedef nnmem_status_t (*nnmem__map_draw_fn)(nnmem__text_t *t,
                                             const nnmem__map_t *m,
                                             const nnmem_map_config_t *cfg);

/* What every public renderer does around its drawing: checks `out`, builds
 * the model, calls `draw`, frees the model, and hands the text to *out
 * (caller frees with free()) or frees it and returns the failure (*out =
 * NULL). Statuses as nnmem__map_build, then as `draw`. */
nnmem_status_t nnmem__map_render(const nnmem_problem_t *problem,
                                 const nnmem_plan_t *plan,
                                 const nnmem_graph_t *g,
                                 const nnmem_liveness_t *l,
                                 const nnmem_map_config_t *cfg,
                                 nnmem__map_draw_fn draw, char **out);

/* Appends the summary line the SVG and HTML show under the title:
 * "peak P (N B), lower bound B (N B), ratio R.RRRx, N buffers, strategy S"
 * (weights are worded by each picture). */
void nnmem__map_summary(nnmem__text_t *t, const nnmem__map_t *m);

/* Writes v as a JSON number, or as a decimal string when `as_string`
 * (viewers read numbers as doubles: exact only below NNMEM__MAP_EXACT). */
#define NNMEM__MAP_EXACT (UINT64_C(1) << 53)
void nnmem__map_jw_big(nnmem__jw_t *w, uint64_t v, int as_string);
/* Key, then v as a number below NNMEM__MAP_EXACT, else as a string. */
void nnmem__map_kv_big(nnmem__jw_t *w, const char *key, uint64_t v);

/* "activation", "workspace", "alias", "buffer". */
const char *nnmem__map_kind_name(int kind);
/* The op name of buffer i, or NULL. */
const char *nnmem__map_op_name(const nnmem__map_t *m, size_t i);

/* Appends `s` escaped for XML / HTML text and attribute values: & < > " '
 * as references; control bytes other than tab / newline and bytes that are
 * not valid UTF-8 become U+FFFD (XML 1.0 cannot hold them at all). */
void nnmem__xml_escape(nnmem__text_t *t, const char *s);

/* Human byte count: "0 B", "512 B", "1.5 KiB", "97.66 MiB" (3 significant
 * digits, powers of 1024). */
void nnmem__map_bytes(char *buf, size_t cap, uint64_t v);

/* Tick spacing for an axis over [0, span] with about `target` ticks: 1, 2 or
 * 5 x 10^k (of `unit` when bytes: the largest power of 1024 <= span), never
 * below 1. *unit_out receives the unit (1 for steps). */
double nnmem__map_tick(double span, int bytes, int target, double *unit_out);

/* Formats tick value v (a multiple of the tick) with `unit`: "20 MiB". */
void nnmem__map_tick_label(char *buf, size_t cap, double v, double unit,
                           int bytes);

#endif /* NNMEM_MAP_MODEL_H */

/* map_svg.c - the memory map of a plan as a static SVG picture.
 *
 *   0                                                     1200
 *   | title: model - memory map                               |  y 28
 *   | peak, lower bound (ratio), buffers, strategy, weights   |  y 50
 *   |      [weights band: grey, not to scale]        | legend |  y 66..88
 *   | addr +----------------------------------------+ |  [] kinds
 *   | ticks|  rect per buffer: x = step, y = address | |  -- bound
 *   |  MiB |  - - - - lower bound (red dashed) - - - | |  |  peak step
 *   |      |             : peak step (purple)       | |
 *   |      +----------------------------------------+ |  y 660
 *   |       step ticks             schedule step       |  y 700
 *         x 96                                  x 960
 *
 * Geometry (user units; also written on <g id="plot"> as data-x0, data-y1,
 * data-sx, data-sy, data-xmin so tests can recompute every rectangle):
 *   x = X0 + (first - xmin) * sx,  width  = (last - first) * sx
 *   y = Y1 - (offset + size) * sy, height = size * sy
 * with sx = (X1 - X0) / (xmax - xmin), sy = (Y1 - Y0) / max(height, 1).
 *
 * Level of detail: at most cfg->svg_max_rects (default 50,000) rectangles.
 * Above that the largest buffers by size x lifetime are drawn and a note in
 * the subtitle says how many were left out (the HTML map draws all).
 * Rectangles carry a <title> (tooltip: names, op, size, lifetime, offset).
 *
 * Steps: 1. build the map model; 2. choose the drawn buffers; 3. header,
 * style, title, weights band; 4. axes with ticks; 5. rectangles; 6. bound
 * and peak lines; 7. legend. Complexity O(n log n) (the LOD sort), output
 * O(n). Thread-safety: pure function of its arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/map_model.h"

#define SVG_W 1200
#define SVG_H 720
#define X0 96.0
#define X1 960.0
#define Y0 100.0
#define Y1 660.0
#define DEFAULT_MAX_RECTS 50000

/* Three tones per kind so neighbours stay apart; [kind][tone]. */
static const char *const tones[NNMEM__MAP_KINDS][3] = {
    {"#4e79a7", "#6b93c4", "#3b6590"}, /* activation: blue */
    {"#f28e2b", "#f6a95a", "#d9771a"}, /* workspace: orange */
    {"#59a14f", "#7bbd6f", "#438a3a"}, /* alias: green */
    {"#4e79a7", "#6b93c4", "#3b6590"}, /* buffer: blue */
};

typedef struct svg {
  nnmem__text_t *t;
  const nnmem__map_t *m;
  double sx, sy;
} svg_t;

static double xpos(const svg_t *s, uint64_t step) {
  return X0 + (double)(step - s->m->xmin) * s->sx;
}

static double ypos(const svg_t *s, double addr) {
  return Y1 - addr * s->sy;
}

typedef struct ranked {
  double area; /* size x lifetime */
  size_t i;
} ranked_t;

static int area_desc(const void *a, const void *b) {
  const ranked_t *x = a, *y = b;
  if (x->area != y->area) return x->area > y->area ? -1 : 1;
  return x->i < y->i ? -1 : 1;
}

/* Step 2: the indices to draw (all, or the `cap` largest). */
static size_t *choose(const nnmem__map_t *m, size_t cap, size_t *count) {
  size_t *idx = malloc((m->n + 1) * sizeof *idx);
  ranked_t *r = m->n > cap ? malloc(m->n * sizeof *r) : NULL;
  if (!idx || (m->n > cap && !r)) {
    free(idx);
    free(r);
    return NULL;
  }
  *count = m->n;
  for (size_t i = 0; i < m->n; i++)
    idx[i] = i;
  if (!r) return idx;
  for (size_t i = 0; i < m->n; i++)
    r[i] = (ranked_t){
        (double)m->buf[i].size * (double)(m->buf[i].last - m->buf[i].first), i};
  qsort(r, m->n, sizeof *r, area_desc);
  for (size_t j = 0; j < cap; j++)
    idx[j] = r[j].i;
  *count = cap;
  free(r);
  return idx;
}

static void header(svg_t *s, size_t drawn) {
  nnmem__text_t *t = s->t;
  const nnmem__map_t *m = s->m;
  char w[32];
  nnmem__text_printf(t,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                     "height=\"%d\" viewBox=\"0 0 %d %d\" "
                     "font-family=\"sans-serif\" font-size=\"12\">\n",
                     SVG_W, SVG_H, SVG_W, SVG_H);
  nnmem__text_puts(t, "<style>.buf{stroke:none}");
  if (drawn <= 3000) nnmem__text_puts(t, ".buf{stroke:#fff;stroke-width:.4}");
  for (int k = 0; k < NNMEM__MAP_KINDS; k++)
    for (int j = 0; j < 3; j++)
      nnmem__text_printf(t, ".k%d%d{fill:%s}", k, j, tones[k][j]);
  nnmem__text_puts(t,
                   "</style>\n<rect width=\"100%\" height=\"100%\" "
                   "fill=\"#fff\"/>\n<title>");
  nnmem__xml_escape(t, m->title);
  nnmem__text_puts(t,
                   " memory map</title>\n<text x=\"16\" y=\"28\" "
                   "font-size=\"18\" font-weight=\"bold\" id=\"title\">");
  nnmem__xml_escape(t, m->title[0] ? m->title : "plan");
  nnmem__text_puts(t,
                   " - memory map</text>\n<text x=\"16\" y=\"50\" "
                   "id=\"subtitle\">");
  nnmem__map_summary(t, m);
  if (m->weight_bytes) {
    nnmem__map_bytes(w, sizeof w, m->weight_bytes);
    nnmem__text_printf(t, ", weights %s", w);
  }
  if (drawn < m->n)
    nnmem__text_printf(t, "; showing the %zu largest buffers, %zu left out",
                       drawn, m->n - drawn);
  nnmem__text_puts(t, "</text>\n");
  if (m->weight_bytes)
    nnmem__text_printf(t,
                       "<g id=\"weights\"><rect x=\"%.0f\" y=\"66\" "
                       "width=\"%.0f\" height=\"22\" fill=\"#bab0ac\"/>"
                       "<text x=\"%.0f\" y=\"81\">weights %s: read-only "
                       "region, live for the whole run (not to scale)"
                       "</text></g>\n",
                       X0, X1 - X0, X0 + 6, w);
}

static void axes(svg_t *s) {
  nnmem__text_t *t = s->t;
  const nnmem__map_t *m = s->m;
  char lab[48];
  double unit;
  double span = (double)(m->xmax - m->xmin);
  double step = nnmem__map_tick(span, 0, 10, &unit);
  nnmem__text_printf(t,
                     "<g id=\"axes\" stroke=\"#333\"><line x1=\"%.0f\" "
                     "y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/><line x1=\"%.0f\" "
                     "y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/></g>\n",
                     X0, Y1, X1, Y1, X0, Y0, X0, Y1);
  nnmem__text_puts(t, "<g id=\"xticks\" text-anchor=\"middle\">");
  for (double v = 0; v <= span + 1e-9; v += step) {
    double x = X0 + v * s->sx;
    nnmem__map_tick_label(lab, sizeof lab, v + (double)m->xmin, 1, 0);
    nnmem__text_printf(t,
                       "<line x1=\"%.2f\" y1=\"%.0f\" x2=\"%.2f\" y2=\"%.0f\" "
                       "stroke=\"#333\"/><text x=\"%.2f\" y=\"%.0f\">%s"
                       "</text>",
                       x, Y1, x, Y1 + 5, x, Y1 + 18, lab);
  }
  nnmem__text_printf(t,
                     "</g>\n<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\">"
                     "schedule step</text>\n",
                     (X0 + X1) / 2, SVG_H - 20);
  double top = (double)(m->height ? m->height : 1);
  step = nnmem__map_tick(top, 1, 8, &unit);
  nnmem__text_puts(t, "<g id=\"yticks\" text-anchor=\"end\">");
  for (double v = 0; v <= top * (1 + 1e-12); v += step) {
    double y = ypos(s, v);
    nnmem__map_tick_label(lab, sizeof lab, v, unit, 1);
    nnmem__text_printf(t,
                       "<line x1=\"%.0f\" y1=\"%.2f\" x2=\"%.0f\" y2=\"%.2f\" "
                       "stroke=\"#333\"/><text x=\"%.0f\" y=\"%.2f\">%s"
                       "</text>",
                       X0 - 5, y, X0, y, X0 - 8, y + 4, lab);
  }
  nnmem__text_printf(t,
                     "</g>\n<text transform=\"translate(18 %.0f) "
                     "rotate(-90)\" text-anchor=\"middle\">address (offset "
                     "in the arena)</text>\n",
                     (Y0 + Y1) / 2);
}

static void tooltip(nnmem__text_t *t, const nnmem__map_t *m, size_t i) {
  const nnmem_buffer_t *b = &m->buf[i];
  const char *op = nnmem__map_op_name(m, i);
  char sz[32];
  nnmem__map_bytes(sz, sizeof sz, b->size);
  nnmem__text_puts(t, "<title>");
  nnmem__xml_escape(t, m->label[i]);
  if (op) {
    nnmem__text_puts(t, "\nop: ");
    nnmem__xml_escape(t, op);
  }
  nnmem__text_printf(t,
                     "\n%s, size %llu B (%s)\nsteps [%llu, %llu)\noffset "
                     "%llu</title>",
                     nnmem__map_kind_name(m->kind[i]),
                     (unsigned long long)b->size, sz,
                     (unsigned long long)b->first, (unsigned long long)b->last,
                     (unsigned long long)m->off[i]);
}

static void rects(svg_t *s, const size_t *idx, size_t count) {
  nnmem__text_t *t = s->t;
  const nnmem__map_t *m = s->m;
  nnmem__text_printf(
      t,
      "<g id=\"plot\" data-x0=\"%.0f\" data-y1=\"%.0f\" "
      "data-sx=\"%.17g\" data-sy=\"%.17g\" data-xmin=\"%llu\">\n",
      X0, Y1, s->sx, s->sy, (unsigned long long)m->xmin);
  for (size_t j = 0; j < count && !t->failed; j++) {
    size_t i = idx[j];
    const nnmem_buffer_t *b = &m->buf[i];
    double x = xpos(s, b->first), w = (double)(b->last - b->first) * s->sx;
    double top = (double)m->off[i] + (double)b->size;
    nnmem__text_printf(t,
                       "<rect class=\"buf k%d%d\" data-i=\"%zu\" x=\"%.3f\" "
                       "y=\"%.3f\" width=\"%.3f\" height=\"%.3f\">",
                       m->kind[i], (int)(i % 3), i, x, ypos(s, top), w,
                       (double)b->size * s->sy);
    tooltip(t, m, i);
    nnmem__text_puts(t, "</rect>\n");
  }
  nnmem__text_puts(t, "</g>\n");
}

static void marks(svg_t *s) {
  nnmem__text_t *t = s->t;
  const nnmem__map_t *m = s->m;
  char b[32];
  double yb = ypos(s, (double)m->bound);
  double xp = xpos(s, m->peak_step) + 0.5 * s->sx;
  nnmem__map_bytes(b, sizeof b, m->bound);
  nnmem__text_printf(t,
                     "<line id=\"bound\" x1=\"%.0f\" y1=\"%.3f\" x2=\"%.0f\" "
                     "y2=\"%.3f\" stroke=\"#d62728\" stroke-width=\"1.5\" "
                     "stroke-dasharray=\"6 4\"/>\n<text x=\"%.0f\" y=\"%.3f\" "
                     "fill=\"#d62728\" text-anchor=\"end\" stroke=\"#fff\" "
                     "stroke-width=\"3\" paint-order=\"stroke\">lower bound %s"
                     "</text>\n",
                     X0, yb, X1, yb, X1 - 4, yb - 4, b);
  nnmem__text_printf(
      t,
      "<line id=\"peak\" x1=\"%.3f\" y1=\"%.0f\" x2=\"%.3f\" "
      "y2=\"%.0f\" stroke=\"#9467bd\" stroke-width=\"1.5\"/>\n"
      "<text x=\"%.3f\" y=\"%.0f\" fill=\"#9467bd\" stroke=\"#fff\" "
      "stroke-width=\"3\" paint-order=\"stroke\">peak step "
      "%llu</text>\n",
      xp, Y0, xp, Y1, xp + 4, Y1 - 6, (unsigned long long)m->peak_step);
}

static void legend(svg_t *s) {
  nnmem__text_t *t = s->t;
  const nnmem__map_t *m = s->m;
  double y = Y0 + 10;
  nnmem__text_puts(t, "<g id=\"legend\">");
  for (int k = 0; k < NNMEM__MAP_KINDS; k++, y += m->kind_count[k - 1] ? 22 : 0)
    if (m->kind_count[k])
      nnmem__text_printf(t,
                         "<rect x=\"980\" y=\"%.0f\" width=\"14\" "
                         "height=\"14\" fill=\"%s\"/><text x=\"1000\" "
                         "y=\"%.0f\">%s (%zu)</text>",
                         y, tones[k][0], y + 12, nnmem__map_kind_name(k),
                         m->kind_count[k]);
  if (m->weight_bytes) {
    nnmem__text_printf(t,
                       "<rect x=\"980\" y=\"%.0f\" width=\"14\" height=\"14\" "
                       "fill=\"#bab0ac\"/><text x=\"1000\" y=\"%.0f\">weights"
                       "</text>",
                       y, y + 12);
    y += 22;
  }
  nnmem__text_printf(t,
                     "<line x1=\"980\" y1=\"%.0f\" x2=\"994\" y2=\"%.0f\" "
                     "stroke=\"#d62728\" stroke-width=\"1.5\" "
                     "stroke-dasharray=\"4 2\"/><text x=\"1000\" y=\"%.0f\">"
                     "lower bound</text>",
                     y + 7, y + 7, y + 12);
  y += 22;
  nnmem__text_printf(t,
                     "<line x1=\"987\" y1=\"%.0f\" x2=\"987\" y2=\"%.0f\" "
                     "stroke=\"#9467bd\" stroke-width=\"1.5\"/><text "
                     "x=\"1000\" y=\"%.0f\">peak step</text></g>\n",
                     y, y + 14, y + 12);
}

static nnmem_status_t draw(nnmem__text_t *t, const nnmem__map_t *m,
                           const nnmem_map_config_t *cfg) {
  size_t cap =
      cfg && cfg->svg_max_rects ? cfg->svg_max_rects : DEFAULT_MAX_RECTS;
  size_t count = 0;
  size_t *idx = choose(m, cap, &count);
  if (!idx) return NNMEM_ERR_NOMEM;
  svg_t s = {t, m, (X1 - X0) / (double)(m->xmax - m->xmin),
             (Y1 - Y0) / (double)(m->height ? m->height : 1)};
  header(&s, count);
  axes(&s);
  rects(&s, idx, count);
  marks(&s);
  legend(&s);
  nnmem__text_puts(t, "</svg>\n");
  free(idx);
  return nnmem__text_status(t);
}

nnmem_status_t nnmem_map_svg(const nnmem_problem_t *problem,
                             const nnmem_plan_t *plan, const nnmem_graph_t *g,
                             const nnmem_liveness_t *l,
                             const nnmem_map_config_t *cfg, char **out) {
  return nnmem__map_render(problem, plan, g, l, cfg, draw, out);
}

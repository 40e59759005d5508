/* nnmem/map.h - the memory map picture of a plan: SVG, self-contained HTML
 * and a Chrome trace / Perfetto JSON timeline.
 *
 * Every renderer formats a plan of a problem into a new malloc'd,
 * NUL-terminated string (the caller frees it and writes it wherever it
 * likes). With the graph and its liveness result (both or neither) the
 * pictures name tensors and ops and colour buffers by kind:
 *
 *   activation  a buffer holding one activation / input / output tensor
 *   workspace   one op's scratch (live during that op only)
 *   alias       a view / in-place group: several tensors share the buffer
 *   buffer      a bare problem (MiniMalloc CSV): no graph, no kinds
 *
 * plus the weight region as a separate band (weights are not in the arena
 * problem). The map:
 *
 *        address
 *   peak  ^  weights: 97.5 MiB (read-only, not to scale)    legend
 *         |------------------------------------------------  [ ] activation
 *         |   +----+        +-----------+  |                 [ ] workspace
 *   bound |---|----|--------|-----------|--|---- - - - -     [ ] alias
 *         |   |    |  +--+  |           |  |                 --- lower bound
 *         |   +----+  |  |  +-----------+  |                 | peak step
 *         +-----------+--+-----------------+------------> step
 *         0                              peak step
 *
 * x = schedule step: buffer i spans [first, last); y = address: buffer i
 * spans [offset, offset + size), address 0 at the bottom.
 *
 * Thread-safety: pure functions of their arguments. */
#ifndef NNMEM_MAP_H
#define NNMEM_MAP_H

#include "nnmem/export.h"
#include "nnmem/graph.h"
#include "nnmem/liveness.h"
#include "nnmem/plan.h"
#include "nnmem/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options of the renderers. Zero means default for every field. */
typedef struct nnmem_map_config {
  uint32_t size;        /* sizeof(nnmem_map_config_t); 0 = current */
  const char *title;    /* model or file name shown in the title; NULL = none */
  uint64_t alignment;   /* the planner's alignment (for the lower bound and
                           the live-bytes curve); 0 = 1 */
  size_t svg_max_rects; /* SVG level of detail: at most this many buffer
                           rectangles (the largest by size x lifetime; a
                           note names how many were left out); 0 = 50000 */
} nnmem_map_config_t;

/* Fills `cfg` with defaults (the same as a zeroed struct). */
NNMEM_API void nnmem_map_config_init(nnmem_map_config_t *cfg);

/* The SVG picture (1200 x 720 user units). One <rect class="buf"> per drawn
 * buffer with data-i (buffer index) and a <title> tooltip; all text is XML
 * escaped (invalid UTF-8 and control bytes become U+FFFD).
 * `g` and `l` may both be NULL (a bare problem); otherwise `problem` must be
 * nnmem_liveness_problem(l). `cfg` may be NULL. Returns NNMEM_ERR_INVALID
 * for NULL / mismatched arguments, NNMEM_ERR_NOMEM; *out is NULL then. */
NNMEM_API nnmem_status_t nnmem_map_svg(const nnmem_problem_t *problem,
                                       const nnmem_plan_t *plan,
                                       const nnmem_graph_t *g,
                                       const nnmem_liveness_t *l,
                                       const nnmem_map_config_t *cfg,
                                       char **out);

/* A self-contained HTML page (no network): a <canvas> that zooms (wheel),
 * pans (drag), resets (double click) and shows tensor names, op, size,
 * lifetime and offset on hover. The data is embedded once as compact JSON
 * arrays in <script type="application/json">; offsets, sizes and steps are
 * JSON numbers when every value of that array is below 2^53 and decimal
 * strings otherwise, so the tooltip always shows exact bytes. The URL
 * fragment `#hover=X,Y` (CSS pixels in the canvas) or `#hover=b:I` (the
 * pixel at the centre of buffer I) replays a mousemove through the canvas's
 * listener after load, for tests; the page writes the time of its first
 * frame (rasterized) into <output id="perf"> (data-ms) and `#bench=N` adds
 * mean full-frame, zoomed-frame and hit-test times. The peak step marked is
 * the first step with the most live bytes (sizes rounded to alignment). */
NNMEM_API nnmem_status_t nnmem_map_html(const nnmem_problem_t *problem,
                                        const nnmem_plan_t *plan,
                                        const nnmem_graph_t *g,
                                        const nnmem_liveness_t *l,
                                        const nnmem_map_config_t *cfg,
                                        char **out);

/* The plan as a Chrome trace (JSON object format; chrome://tracing,
 * ui.perfetto.dev). 1 schedule step = 1 microsecond: each buffer is one
 * complete event {"ph": "X", "ts": first, "dur": last - first} with args
 * offset, size, end (offset + size), names, op; buffers of one kind form one
 * process ("activation", ...) split into lanes (threads) so that events of
 * a lane never overlap; a counter "live bytes" (pid 0) steps at every
 * change. Integers are exact; args above 2^53 are decimal strings. */
NNMEM_API nnmem_status_t nnmem_map_trace_json(const nnmem_problem_t *problem,
                                              const nnmem_plan_t *plan,
                                              const nnmem_graph_t *g,
                                              const nnmem_liveness_t *l,
                                              const nnmem_map_config_t *cfg,
                                              char **out);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_MAP_H */

/* profiler_json.c - memory_profile.json of a run (nnmem/profiler.h): the
 * planner's keys (profile_json.c) with the measured figures, then what
 * only a run has.
 *
 *   {"source": "measured", "peak_memory": 1, "weight_memory": 1,
 *    "activation_memory": 1, "workspace_memory": 1, "lower_bound": 1,
 *    "naive_memory": 1, "arena_height": 1, "arena_lower_bound": 1,
 *    "naive_arena": 1, "reuse_ratio": 0.5, "buffers": 1, "peak_step": 1,
 *    "steps": 1, "frees": 1, "live_bytes": 0, "untracked": 0,
 *    "tag_peaks": {"activation": 1, "weight": 1, "workspace": 1},
 *    "timeline": [{"step": 0, "peak_bytes": 1, "weight_memory": 1,
 *                  "activation_memory": 0, "workspace_memory": 0}, ...],
 *    "pools": [{stats object of nnmem_stats_format_json}]}
 *
 * Algorithm: 1. take the result and the timeline (snapshots under the
 * profiler's lock); 2. write each key through the one JSON writer (exact
 * integers); 3. for the file, write the text atomically (temporary +
 * rename). Complexity: O(steps). Thread-safety: the profiler's lock. */
#include <stdlib.h>
#include <string.h>

#include "export/export_json.h"
#include "nnmem/profiler.h"
#include "runtime/stats_internal.h"

static void step_object(nnmem__jw_t *w,
                        const nnmem_profiler_step_figures_t *s) {
  nnmem__jw_object(w);
  nnmem__jw_kv_u64(w, "step", s->step);
  nnmem__jw_kv_u64(w, "peak_bytes", s->peak_bytes);
  nnmem__jw_kv_u64(w, "weight_memory", s->by_tag[NNMEM_TAG_WEIGHT]);
  nnmem__jw_kv_u64(w, "activation_memory", s->by_tag[NNMEM_TAG_ACTIVATION]);
  nnmem__jw_kv_u64(w, "workspace_memory", s->by_tag[NNMEM_TAG_WORKSPACE]);
  nnmem__jw_end(w);
}

static void members(nnmem__jw_t *w, const nnmem_profiler_result_t *r,
                    const nnmem_profiler_step_figures_t *tl, size_t n) {
  nnmem__jw_kv_string(w, "source", "measured");
  nnmem__jw_kv_u64(w, "peak_memory", r->peak_memory);
  nnmem__jw_kv_u64(w, "weight_memory", r->weight_memory);
  nnmem__jw_kv_u64(w, "activation_memory", r->activation_memory);
  nnmem__jw_kv_u64(w, "workspace_memory", r->workspace_memory);
  nnmem__jw_kv_u64(w, "lower_bound", r->peak_memory);
  nnmem__jw_kv_u64(w, "naive_memory", r->naive_memory);
  nnmem__jw_kv_u64(w, "arena_height", r->arena_height);
  nnmem__jw_kv_u64(w, "arena_lower_bound", r->arena_height);
  nnmem__jw_kv_u64(w, "naive_arena", r->naive_arena);
  nnmem__jw_kv_double(w, "reuse_ratio", r->reuse_ratio);
  nnmem__jw_kv_u64(w, "buffers", r->allocations);
  nnmem__jw_kv_u64(w, "peak_step", r->peak_step);
  nnmem__jw_kv_u64(w, "steps", r->steps);
  nnmem__jw_kv_u64(w, "frees", r->frees);
  nnmem__jw_kv_u64(w, "live_bytes", r->live_bytes);
  nnmem__jw_kv_u64(w, "untracked", r->untracked);
  nnmem__jw_key(w, "tag_peaks");
  nnmem__jw_object(w);
  for (int t = 0; t < NNMEM_TAG_COUNT_; t++)
    nnmem__jw_kv_u64(w, nnmem_tag_name((nnmem_tag_t)t), r->tag_peak[t]);
  nnmem__jw_end(w);
  nnmem__jw_key(w, "timeline");
  nnmem__jw_array(w);
  for (size_t i = 0; i < n; i++)
    step_object(w, &tl[i]);
  nnmem__jw_end(w);
  nnmem__jw_key(w, "pools");
  nnmem__jw_array(w);
  nnmem__stats_json_object(w, &r->stats);
  nnmem__jw_end(w);
}

nnmem_status_t nnmem_profiler_format_json(nnmem_profiler_t *pr, char **out) {
  if (!pr || !out) return NNMEM_ERR_INVALID;
  *out = NULL;
  nnmem_profiler_result_t r;
  nnmem_status_t st = nnmem_profiler_result(pr, &r);
  size_t n = 0;
  nnmem_profiler_step_figures_t *tl = NULL;
  /* the timeline may grow between the two calls while running */
  for (size_t cap = 0; st == NNMEM_OK; cap = n) {
    st = nnmem_profiler_timeline(pr, tl, cap, &n);
    if (st != NNMEM_ERR_OVERFLOW) break;
    free(tl);
    st = (tl = malloc(n * sizeof *tl)) ? NNMEM_OK : NNMEM_ERR_NOMEM;
  }
  if (st != NNMEM_OK) {
    free(tl);
    return st;
  }
  nnmem__text_t t;
  nnmem__jw_t w;
  nnmem__text_init(&t);
  nnmem__jw_init(&w, &t, NNMEM__JW_PRETTY);
  nnmem__jw_object(&w);
  members(&w, &r, tl, n);
  nnmem__jw_end(&w);
  free(tl);
  st = nnmem__jw_finish(&w);
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    return st;
  }
  *out = t.data;
  return NNMEM_OK;
}

nnmem_status_t nnmem_profiler_export(nnmem_profiler_t *pr, const char *path,
                                     nnmem_diag_t *diag) {
  if (!pr || !path)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_profiler_export: NULL argument");
  char *text = NULL;
  nnmem_status_t st = nnmem_profiler_format_json(pr, &text);
  if (st != NNMEM_OK)
    return nnmem__diag(diag, st, "%s: %s", path, nnmem_status_str(st));
  st = nnmem_file_write_atomic(path, text, strlen(text), diag);
  free(text);
  return st;
}

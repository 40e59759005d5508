/* profile_json.c - memory_profile.json: the numbers of nnmem_profile_t as a
 * flat JSON object.
 *
 *   {"model": "resnet50", "peak_memory": 1, "weight_memory": 1,
 *    "activation_memory": 1, "workspace_memory": 1, "lower_bound": 1,
 *    "naive_memory": 1, "arena_height": 1, "arena_lower_bound": 1,
 *    "naive_arena": 1, "naive_saturated": false, "reuse_ratio": 0.5,
 *    "strategy": "greedy-size",
 *    "buffers": 1, "tensors": 1, "peak_step": 1, "plan_seconds": 0.01}
 *
 * Algorithm: write each key in that fixed order ("model" only when given)
 * through the one JSON writer (src/common/json_write.c): byte counts and
 * steps as exact 64-bit integers, the ratio and seconds as doubles that read
 * back exactly (null for NaN or infinity); then, for the file, write the
 * text atomically. The CLI's --json report embeds the same members through
 * nnmem__profile_json_members.
 * Complexity: O(1). Thread-safety: each call is independent. */
#include <string.h>

#include "export/export_json.h"

void nnmem__profile_json_members(nnmem__jw_t *w, const nnmem_profile_t *prof,
                                 const char *model) {
  if (model) nnmem__jw_kv_string(w, "model", model);
  nnmem__jw_kv_u64(w, "peak_memory", prof->peak_memory);
  nnmem__jw_kv_u64(w, "weight_memory", prof->weight_memory);
  nnmem__jw_kv_u64(w, "activation_memory", prof->activation_memory);
  nnmem__jw_kv_u64(w, "workspace_memory", prof->workspace_memory);
  nnmem__jw_kv_u64(w, "lower_bound", prof->lower_bound);
  nnmem__jw_kv_u64(w, "naive_memory", prof->naive_memory);
  nnmem__jw_kv_u64(w, "arena_height", prof->arena_height);
  nnmem__jw_kv_u64(w, "arena_lower_bound", prof->arena_lower_bound);
  nnmem__jw_kv_string(w, "bound_kind", nnmem_bound_kind_name(prof->bound_kind));
  nnmem__jw_kv_bool(w, "optimal", prof->optimal);
  nnmem__jw_kv_u64(w, "naive_arena", prof->naive_arena);
  nnmem__jw_kv_bool(w, "naive_saturated", /* the naive figures are >= */
                    (prof->flags & NNMEM_PROFILE_NAIVE_SATURATED) != 0);
  nnmem__jw_kv_double(w, "reuse_ratio", prof->reuse_ratio);
  nnmem__jw_kv_string(w, "strategy", nnmem_strategy_name(prof->strategy));
  nnmem__jw_kv_u64(w, "buffers", prof->buffers);
  nnmem__jw_kv_u64(w, "tensors", prof->tensors);
  nnmem__jw_kv_u64(w, "peak_step", prof->peak_step);
  nnmem__jw_kv_double(w, "plan_seconds", prof->plan_seconds);
}

nnmem_status_t nnmem_profile_format_json(const nnmem_profile_t *prof,
                                         const char *model, char **out) {
  if (!prof || !out) return NNMEM_ERR_INVALID;
  *out = NULL;
  nnmem__text_t t;
  nnmem__jw_t w;
  nnmem__text_init(&t);
  nnmem__jw_init(&w, &t, NNMEM__JW_PRETTY);
  nnmem__jw_object(&w);
  nnmem__profile_json_members(&w, prof, model);
  nnmem__jw_end(&w);
  nnmem_status_t st = nnmem__jw_finish(&w);
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    return st;
  }
  *out = t.data;
  return NNMEM_OK;
}

nnmem_status_t nnmem_profile_write_json(const nnmem_profile_t *prof,
                                        const char *model, const char *path,
                                        nnmem_diag_t *diag) {
  if (!prof || !path)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_profile_write_json: NULL argument");
  char *text = NULL;
  nnmem_status_t st = nnmem_profile_format_json(prof, model, &text);
  if (st != NNMEM_OK) return nnmem__diag(diag, st, "%s: out of memory", path);
  st = nnmem_file_write_atomic(path, text, strlen(text), diag);
  free(text);
  return st;
}

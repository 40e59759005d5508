/* profile_json.c - memory_profile.json: the numbers of nnmem_profile_t as a
 * flat JSON object.
 *
 *   {"model": "resnet50", "peak_memory": 1, "weight_memory": 1,
 *    "activation_memory": 1, "workspace_memory": 1, "lower_bound": 1,
 *    "naive_memory": 1, "arena_height": 1, "arena_lower_bound": 1,
 *    "naive_arena": 1, "reuse_ratio": 0.5, "strategy": "greedy-size",
 *    "buffers": 1, "tensors": 1, "peak_step": 1, "plan_seconds": 0.01}
 *
 * Algorithm: append each key in that fixed order ("model" only when given),
 * byte counts as exact 64-bit integers, the ratio and seconds as JSON
 * numbers (a NaN or infinity becomes 0 so the output stays valid JSON), then
 * write the text atomically.
 * Complexity: O(1). Thread-safety: each call is independent. */
#include <string.h>

#include "common/text.h"
#include "nnmem/io.h"

static void put_u64(nnmem__text_t *t, const char *key, uint64_t v) {
  nnmem__text_puts(t, ",\n  ");
  nnmem__text_json_string(t, key);
  nnmem__text_puts(t, ": ");
  nnmem__text_u64(t, v);
}

static void put_double(nnmem__text_t *t, const char *key, double v) {
  nnmem__text_puts(t, ",\n  ");
  nnmem__text_json_string(t, key);
  nnmem__text_puts(t, ": ");
  nnmem__text_json_double(t, v);
}

nnmem_status_t nnmem_profile_format_json(const nnmem_profile_t *prof,
                                         const char *model, char **out) {
  if (!prof || !out) return NNMEM_ERR_INVALID;
  *out = NULL;
  nnmem__text_t t;
  nnmem__text_init(&t);
  nnmem__text_puts(&t, "{\n  ");
  if (model) {
    nnmem__text_puts(&t, "\"model\": ");
    nnmem__text_json_string(&t, model);
    nnmem__text_puts(&t, ",\n  ");
  }
  nnmem__text_puts(&t, "\"peak_memory\": ");
  nnmem__text_u64(&t, prof->peak_memory);
  put_u64(&t, "weight_memory", prof->weight_memory);
  put_u64(&t, "activation_memory", prof->activation_memory);
  put_u64(&t, "workspace_memory", prof->workspace_memory);
  put_u64(&t, "lower_bound", prof->lower_bound);
  put_u64(&t, "naive_memory", prof->naive_memory);
  put_u64(&t, "arena_height", prof->arena_height);
  put_u64(&t, "arena_lower_bound", prof->arena_lower_bound);
  put_u64(&t, "naive_arena", prof->naive_arena);
  nnmem__text_puts(&t, ",\n  \"naive_saturated\": "); /* naive is >= */
  nnmem__text_puts(
      &t, prof->flags & NNMEM_PROFILE_NAIVE_SATURATED ? "true" : "false");
  put_double(&t, "reuse_ratio", prof->reuse_ratio);
  nnmem__text_puts(&t, ",\n  \"strategy\": ");
  nnmem__text_json_string(&t, nnmem_strategy_name(prof->strategy));
  put_u64(&t, "buffers", prof->buffers);
  put_u64(&t, "tensors", prof->tensors);
  put_u64(&t, "peak_step", prof->peak_step);
  put_double(&t, "plan_seconds", prof->plan_seconds);
  nnmem__text_puts(&t, "\n}\n");
  nnmem_status_t st = nnmem__text_status(&t);
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

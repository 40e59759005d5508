/* onnx_dims.c - dim bindings (nnmem_onnx_config_t.dims, the CLI's --dim)
 * checked against the model, so a typo ("bacth=8") is an error instead of
 * a silently ignored option.
 *
 *   1. while inputs are typed, nnmem__onnx_bind_dim reports every symbolic
 *      dim it meets and the binding that gave its value (an exact name, or
 *      the class aliases "batch" / "sequence" for batch- / sequence-like
 *      names);
 *   2. after inference, each binding that gave no dim its value is an
 *      error: an exact name the model lacks ("did you mean 'batch_size'?"
 *      when a symbolic dim is within edit distance 2, or a third of the
 *      name), or an alias the model has no dim of that kind for. The
 *      message lists the model's symbolic dims. A name bound twice (only
 *      the first binding is used) is an error that says so, not "unknown".
 * Bindings past the 64th are not checked (the bitmask). Complexity:
 * O(bindings x dims x name length^2). Thread-safety: per context. */
#include <stdio.h>
#include <string.h>

#include "import/onnx/onnx_internal.h"

void nnmem__onnx_note_dim(ox_ctx_t *c, const char *param,
                          const nnmem_onnx_dim_t *d) {
  if (d && d >= c->cfg.dims && d - c->cfg.dims < 64)
    c->dims_used |= (uint64_t)1 << (d - c->cfg.dims);
  if (!param || !*param) return;
  for (size_t i = 0; i < c->n_seen_dims; i++)
    if (strcmp(c->seen_dims[i], param) == 0) return;
  if (c->n_seen_dims < OX_MAX_SEEN_DIMS) c->seen_dims[c->n_seen_dims++] = param;
}

/* Levenshtein distance of a and b, capped at 9 (names up to 63 bytes). */
static size_t edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 63 || m > 63) return 9;
  size_t row[64];
  for (size_t j = 0; j <= m; j++)
    row[j] = j;
  for (size_t i = 1; i <= n; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= m; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[m] < 9 ? row[m] : 9;
}

/* The seen dim (or alias) closest to `name`, or NULL when none is close. */
static const char *closest(const ox_ctx_t *c, const char *name) {
  static const char *const aliases[] = {"batch", "sequence"};
  size_t limit = strlen(name) / 3 > 2 ? strlen(name) / 3 : 2, best = limit + 1;
  const char *pick = NULL;
  for (size_t i = 0; i < c->n_seen_dims + 2; i++) {
    const char *cand =
        i < c->n_seen_dims ? c->seen_dims[i] : aliases[i - c->n_seen_dims];
    size_t d = edit_distance(name, cand);
    if (d < best) best = d, pick = cand;
  }
  return pick;
}

/* "batch_size, sequence" (the seen dims), or a note that there are none. */
static void list_dims(const ox_ctx_t *c, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = '\0';
  if (!c->n_seen_dims) {
    snprintf(buf, cap, "the model has no symbolic dims");
    return;
  }
  o += (size_t)snprintf(buf, cap, "symbolic dims of the model: ");
  for (size_t i = 0; i < c->n_seen_dims && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "",
                          c->seen_dims[i]);
}

nnmem_status_t nnmem__onnx_check_bindings(ox_ctx_t *c) {
  for (size_t i = 0; i < c->cfg.n_dims && i < 64; i++) {
    if (c->dims_used & ((uint64_t)1 << i)) continue;
    const char *name = c->cfg.dims[i].name;
    for (size_t j = 0; j < c->cfg.n_dims; j++) /* the same name twice */
      if (j != i && strcmp(c->cfg.dims[j].name, name) == 0)
        return nnmem__diag(c->diag, NNMEM_ERR_INVALID,
                           "%s: dim '%s' is bound twice (%s=%lld and "
                           "%s=%lld); bind it once",
                           c->file, name, name,
                           (long long)c->cfg.dims[j < i ? j : i].value, name,
                           (long long)c->cfg.dims[j < i ? i : j].value);
    char dims[512], hint[160] = "";
    list_dims(c, dims, sizeof dims);
    int alias = strcmp(name, "batch") == 0 || strcmp(name, "sequence") == 0;
    const char *near = alias ? NULL : closest(c, name);
    if (near) snprintf(hint, sizeof hint, "; did you mean '%s'?", near);
    if (alias)
      return nnmem__diag(c->diag, NNMEM_ERR_INVALID,
                         "%s: dim '%s' binds nothing: no symbolic dim of the "
                         "model is %s-like (%s)",
                         c->file, name, name, dims);
    return nnmem__diag(c->diag, NNMEM_ERR_INVALID,
                       "%s: unknown dim '%s' (%s)%s", c->file, name, dims,
                       hint);
  }
  return NNMEM_OK;
}

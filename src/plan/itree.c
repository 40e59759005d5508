/* itree.c - a static, implicitly balanced interval tree over buffer
 * lifetimes with an "active" flag per buffer, used by the strategies to find
 * the placed buffers that overlap a lifetime (and by greedy-breadth to find
 * the not-yet-ordered buffers live at a step).
 *
 * Layout: buffers sorted by `first` (ties by index) fill positions 0..n-1;
 * the node for the position range [lo, hi) is mid = (lo + hi) / 2, its
 * children the ranges [lo, mid) and [mid + 1, hi). Each node keeps
 * `maxend`, the largest `last` over ACTIVE buffers in its subtree (0 if
 * none).
 *
 *            [  first-sorted positions  ]
 *                      mid
 *               /               \
 *        [lo, mid)            [mid+1, hi)
 *   (first <= node's first)   (first >= node's first)
 *
 * Query [a, b): visit a node only when maxend > a; test the node itself;
 * go right only when the node's first < b (everything right of it starts no
 * earlier). Activation raises maxend on the path to the root; deactivation
 * recomputes it from the children on that path. Both O(log n).
 *
 * Invariant: maxend[v] = max(active(v) ? last(v) : 0, maxend[children]).
 * Thread-safety: none (one tree per planning run). */
#include <stdlib.h>

#include "common/util.h"
#include "plan/itree.h"

#define NONE UINT32_MAX

struct nnmem__itree {
  size_t n;
  uint32_t root;
  uint32_t *buf;    /* position -> buffer index */
  uint32_t *pos;    /* buffer index -> position */
  uint32_t *left, *right, *parent; /* by position */
  uint64_t *first, *last, *maxend; /* by position */
  unsigned char *active;           /* by position */
};

typedef struct keyed {
  uint64_t first;
  uint32_t idx;
} keyed_t;

static int by_first(const void *a, const void *b) {
  const keyed_t *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Builds the implicit tree over [lo, hi) iteratively; returns the root. */
static uint32_t build(nnmem__itree_t *t, uint32_t lo, uint32_t hi,
                      uint32_t parent) {
  if (lo >= hi) return NONE;
  uint32_t mid = lo + (hi - lo) / 2;
  t->parent[mid] = parent;
  t->left[mid] = build(t, lo, mid, mid);
  t->right[mid] = build(t, mid + 1, hi, mid);
  return mid;
}

nnmem_status_t nnmem__itree_create(const nnmem_problem_t *p,
                                   nnmem__itree_t **out) {
  size_t n = nnmem_problem_count(p);
  nnmem__itree_t *t = calloc(1, sizeof *t);
  if (!t) return NNMEM_ERR_NOMEM;
  t->n = n;
  size_t m = n ? n : 1;
  t->buf = malloc(m * sizeof *t->buf);
  t->pos = malloc(m * sizeof *t->pos);
  t->left = malloc(m * sizeof *t->left);
  t->right = malloc(m * sizeof *t->right);
  t->parent = malloc(m * sizeof *t->parent);
  t->first = malloc(m * sizeof *t->first);
  t->last = malloc(m * sizeof *t->last);
  t->maxend = calloc(m, sizeof *t->maxend);
  t->active = calloc(m, 1);
  if (!t->buf || !t->pos || !t->left || !t->right || !t->parent ||
      !t->first || !t->last || !t->maxend || !t->active) {
    nnmem__itree_destroy(t);
    return NNMEM_ERR_NOMEM;
  }
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  keyed_t *keys = malloc(m * sizeof *keys);
  if (!keys) {
    nnmem__itree_destroy(t);
    return NNMEM_ERR_NOMEM;
  }
  for (uint32_t i = 0; i < n; i++) keys[i] = (keyed_t){b[i].first, i};
  qsort(keys, n, sizeof *keys, by_first);
  for (uint32_t k = 0; k < n; k++) t->buf[k] = keys[k].idx;
  free(keys);
  for (uint32_t k = 0; k < n; k++) {
    t->pos[t->buf[k]] = k;
    t->first[k] = b[t->buf[k]].first;
    t->last[k] = b[t->buf[k]].last;
  }
  t->root = build(t, 0, (uint32_t)n, NONE);
  *out = t;
  return NNMEM_OK;
}

void nnmem__itree_destroy(nnmem__itree_t *t) {
  if (!t) return;
  free(t->buf);
  free(t->pos);
  free(t->left);
  free(t->right);
  free(t->parent);
  free(t->first);
  free(t->last);
  free(t->maxend);
  free(t->active);
  free(t);
}

void nnmem__itree_activate(nnmem__itree_t *t, size_t i) {
  uint32_t v = t->pos[i];
  uint64_t e = t->last[v];
  t->active[v] = 1;
  for (; v != NONE && t->maxend[v] < e; v = t->parent[v]) t->maxend[v] = e;
}

static uint64_t node_max(const nnmem__itree_t *t, uint32_t v) {
  uint64_t m = t->active[v] ? t->last[v] : 0;
  if (t->left[v] != NONE && t->maxend[t->left[v]] > m)
    m = t->maxend[t->left[v]];
  if (t->right[v] != NONE && t->maxend[t->right[v]] > m)
    m = t->maxend[t->right[v]];
  return m;
}

void nnmem__itree_deactivate(nnmem__itree_t *t, size_t i) {
  uint32_t v = t->pos[i];
  t->active[v] = 0;
  for (; v != NONE; v = t->parent[v]) {
    uint64_t m = node_max(t, v);
    if (m == t->maxend[v]) break; /* ancestors unchanged */
    t->maxend[v] = m;
  }
}

void nnmem__itree_activate_all(nnmem__itree_t *t) {
  for (size_t i = 0; i < t->n; i++) nnmem__itree_activate(t, i);
}

nnmem_status_t nnmem__itree_query(const nnmem__itree_t *t, uint64_t a,
                                  uint64_t b, uint32_t **out, size_t *n,
                                  size_t *cap) {
  /* explicit stack: depth <= log2(n) + 1 <= 64 */
  uint32_t stack[128];
  size_t sp = 0;
  if (t->root != NONE) stack[sp++] = t->root;
  while (sp) {
    uint32_t v = stack[--sp];
    if (t->maxend[v] <= a) continue;
    if (t->left[v] != NONE) stack[sp++] = t->left[v];
    if (t->first[v] < b) {
      if (t->active[v] && t->last[v] > a) {
        nnmem_status_t st = nnmem__grow((void **)out, cap, *n + 1,
                                        sizeof **out);
        if (st) return st;
        (*out)[(*n)++] = t->buf[v];
      }
      if (t->right[v] != NONE) stack[sp++] = t->right[v];
    }
  }
  return NNMEM_OK;
}

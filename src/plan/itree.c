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

typedef struct node {
  uint64_t first, last; /* the buffer's lifetime */
  uint64_t maxend;      /* max `last` over active buffers in the subtree */
  uint64_t lo, hi;      /* payload of an active buffer */
  uint32_t left, right, parent, buf;
  uint32_t active;
} node_t;

struct nnmem__itree {
  size_t n;
  uint32_t root;
  uint32_t *pos; /* buffer index -> position */
  node_t *nodes; /* by position (sorted by first) */
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

/* Builds the implicit tree over [lo, hi); returns its root. Recursion depth
 * is log2(n). */
static uint32_t build(node_t *nodes, uint32_t lo, uint32_t hi,
                      uint32_t parent) {
  if (lo >= hi) return NONE;
  uint32_t mid = lo + (hi - lo) / 2;
  nodes[mid].parent = parent;
  nodes[mid].left = build(nodes, lo, mid, mid);
  nodes[mid].right = build(nodes, mid + 1, hi, mid);
  return mid;
}

nnmem_status_t nnmem__itree_create(const nnmem_problem_t *p,
                                   nnmem__itree_t **out) {
  size_t n = nnmem_problem_count(p), m = n ? n : 1;
  nnmem__itree_t *t = calloc(1, sizeof *t);
  keyed_t *keys = malloc(m * sizeof *keys);
  if (t) {
    t->pos = malloc(m * sizeof *t->pos);
    t->nodes = calloc(m, sizeof *t->nodes);
  }
  if (!t || !keys || !t->pos || !t->nodes) {
    free(keys);
    nnmem__itree_destroy(t);
    return NNMEM_ERR_NOMEM;
  }
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  for (uint32_t i = 0; i < n; i++)
    keys[i] = (keyed_t){b[i].first, i};
  qsort(keys, n, sizeof *keys, by_first);
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = keys[k].idx;
    t->pos[i] = k;
    t->nodes[k].buf = i;
    t->nodes[k].first = b[i].first;
    t->nodes[k].last = b[i].last;
  }
  free(keys);
  t->n = n;
  t->root = build(t->nodes, 0, (uint32_t)n, NONE);
  *out = t;
  return NNMEM_OK;
}

void nnmem__itree_destroy(nnmem__itree_t *t) {
  if (!t) return;
  free(t->pos);
  free(t->nodes);
  free(t);
}

void nnmem__itree_activate(nnmem__itree_t *t, size_t i, uint64_t lo,
                           uint64_t hi) {
  uint32_t v = t->pos[i];
  node_t *nd = t->nodes;
  uint64_t e = nd[v].last;
  nd[v].active = 1;
  nd[v].lo = lo;
  nd[v].hi = hi;
  for (; v != NONE && nd[v].maxend < e; v = nd[v].parent)
    nd[v].maxend = e;
}

static uint64_t node_max(const node_t *nd, uint32_t v) {
  uint64_t m = nd[v].active ? nd[v].last : 0;
  if (nd[v].left != NONE && nd[nd[v].left].maxend > m)
    m = nd[nd[v].left].maxend;
  if (nd[v].right != NONE && nd[nd[v].right].maxend > m)
    m = nd[nd[v].right].maxend;
  return m;
}

void nnmem__itree_deactivate(nnmem__itree_t *t, size_t i) {
  uint32_t v = t->pos[i];
  t->nodes[v].active = 0;
  for (; v != NONE; v = t->nodes[v].parent) {
    uint64_t m = node_max(t->nodes, v);
    if (m == t->nodes[v].maxend) break; /* ancestors unchanged */
    t->nodes[v].maxend = m;
  }
}

size_t nnmem__itree_query(const nnmem__itree_t *t, uint64_t a, uint64_t b,
                          nnmem__itree_hit_t *out) {
  const node_t *nd = t->nodes;
  uint32_t stack[130]; /* depth <= 33 for 2^32 buffers, two pushes each */
  size_t sp = 0, k = 0;
  if (t->root != NONE) stack[sp++] = t->root;
  while (sp) {
    const node_t *v = &nd[stack[--sp]];
    if (v->maxend <= a) continue;
    if (v->left != NONE) stack[sp++] = v->left;
    if (v->first < b) {
      if (v->active && v->last > a)
        out[k++] = (nnmem__itree_hit_t){v->lo, v->hi, v->buf};
      if (v->right != NONE) stack[sp++] = v->right;
    }
  }
  return k;
}

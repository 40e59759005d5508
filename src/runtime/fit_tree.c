/* fit_tree.c - the free-block index of the best-fit and first-fit pools: a
 * treap (Seidel & Aragon, "Randomized search trees", 1996) of free blocks,
 * each node also holding the largest block size in its subtree.
 *
 * best-fit: key (size, addr); find = leftmost node with size >= request
 *   (smallest fitting block, lowest address among equals).
 * first-fit: key addr; find = leftmost node with size >= request, steered
 *   by the subtree maxima (lowest-address fitting block).
 * Steps of insert: split the tree at the new key into < and >=, merge
 * (left, node, right). Remove: split at the key (node is the minimum of the
 * right part), drop the minimum, merge back.
 * Invariants: BST order by key; heap order by prio (parent >= child);
 * max_size = max(size, left->max_size, right->max_size).
 * Complexity: O(log n) expected for every operation.
 * Thread-safety: none (pool lock). */
#include <stdio.h>

#include "runtime/pool_internal.h"
#include "runtime/rlist.h"

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ULL;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *s = x;
  return x;
}

static int less(int by_size, const nnmem__rblock_t *a,
                const nnmem__rblock_t *b) {
  if (by_size && a->size != b->size) return a->size < b->size;
  return a->addr < b->addr;
}

static void update(nnmem__rblock_t *n) {
  uint64_t m = n->size;
  if (n->left && n->left->max_size > m) m = n->left->max_size;
  if (n->right && n->right->max_size > m) m = n->right->max_size;
  n->max_size = m;
}

/* Splits t into nodes with key < k (*l) and >= k (*r). */
static void split(int by_size, nnmem__rblock_t *t, const nnmem__rblock_t *k,
                  nnmem__rblock_t **l, nnmem__rblock_t **r) {
  if (!t) {
    *l = *r = NULL;
    return;
  }
  if (less(by_size, t, k)) {
    split(by_size, t->right, k, &t->right, r);
    *l = t;
  } else {
    split(by_size, t->left, k, l, &t->left);
    *r = t;
  }
  update(t);
}

static nnmem__rblock_t *merge(nnmem__rblock_t *a, nnmem__rblock_t *b) {
  if (!a) return b;
  if (!b) return a;
  if (a->prio >= b->prio) {
    a->right = merge(a->right, b);
    update(a);
    return a;
  }
  b->left = merge(a, b->left);
  update(b);
  return b;
}

void nnmem__fit_insert(nnmem__fit_tree_t *t, nnmem__rblock_t *b) {
  nnmem__rblock_t *l, *r;
  b->left = b->right = NULL;
  b->prio = xorshift(&t->rng);
  b->max_size = b->size;
  split(t->by_size, t->root, b, &l, &r);
  t->root = merge(merge(l, b), r);
}

static nnmem__rblock_t *drop_min(nnmem__rblock_t *t) {
  if (!t->left) return t->right;
  t->left = drop_min(t->left);
  update(t);
  return t;
}

void nnmem__fit_remove(nnmem__fit_tree_t *t, nnmem__rblock_t *b) {
  nnmem__rblock_t *l, *r;
  split(t->by_size, t->root, b, &l, &r);
  r = drop_min(r); /* b is the minimum of the >= part */
  t->root = merge(l, r);
  b->left = b->right = NULL;
}

nnmem__rblock_t *nnmem__fit_find(const nnmem__fit_tree_t *t, uint64_t size) {
  nnmem__rblock_t *n = t->root, *best = NULL;
  if (t->by_size) {
    while (n) {
      if (n->size >= size) {
        best = n;
        n = n->left;
      } else {
        n = n->right;
      }
    }
    return best;
  }
  while (n && n->max_size >= size) {
    if (n->left && n->left->max_size >= size)
      n = n->left;
    else if (n->size >= size)
      return n;
    else
      n = n->right;
  }
  return NULL;
}

uint64_t nnmem__fit_largest(const nnmem__fit_tree_t *t) {
  return t->root ? t->root->max_size : 0;
}

static int walk(const nnmem__fit_tree_t *t, const nnmem__rblock_t *n,
                const nnmem__rblock_t **prev, uint64_t *count, char *msg,
                size_t cap) {
  if (!n) return 0;
  if (walk(t, n->left, prev, count, msg, cap)) return 1;
  uint64_t m = n->size;
  if (n->left && n->left->max_size > m) m = n->left->max_size;
  if (n->right && n->right->max_size > m) m = n->right->max_size;
  if ((*prev && !less(t->by_size, *prev, n)) || m != n->max_size ||
      !n->is_free || (n->left && n->left->prio > n->prio) ||
      (n->right && n->right->prio > n->prio)) {
    snprintf(msg, cap, "fit tree: order/heap/max broken at block 0x%llx",
             (unsigned long long)n->addr);
    return 1;
  }
  *prev = n;
  (*count)++;
  return walk(t, n->right, prev, count, msg, cap);
}

int nnmem__fit_check(const nnmem__fit_tree_t *t, uint64_t *n, char *msg,
                     size_t cap) {
  const nnmem__rblock_t *prev = NULL;
  *n = 0;
  return walk(t, t->root, &prev, n, msg, cap);
}

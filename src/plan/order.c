/* order.c - the orderings that turn the placement engine (place.c) into the
 * published strategies. All are deterministic: ties fall back to the buffer
 * index.
 *
 *   greedy-size     size desc, then first step asc (TFLite ArenaPlanner,
 *                   "greedy by size").
 *   size-lifetime   size desc, then lifetime length desc (XLA's heap,
 *                   spatial order).
 *   lifetime-size   lifetime length desc, then size desc (XLA's heap,
 *                   temporal order).
 *   class4-first  size class (powers of 4) desc, then first step asc, then
 *                 size desc; class4-life: lifetime desc inside a class;
 *                 class2-first: powers of 2. Coarse classes make buffers of
 *                 similar size that live one after another pack into the
 *                 same columns; on long training traces this beats exact
 *                 size order by 1-2% of height (see bench/plan).
 *   breadth         1. live bytes at every step where some buffer starts
 *                   (sweep); 2. steps by live bytes desc; 3. at each step the
 *                   buffers live there and not yet ordered, size desc
 *                   (TFLite GPU delegate, "greedy by breadth": the most
 *                   crowded step is laid out first). Uses the interval tree
 *                   with every buffer active, deactivated once ordered, so
 *                   each buffer is reported once: O(n log n + sum k log k).
 *
 * The key orderings sort their keys with an LSD radix sort (sort_keys):
 * O(n) per key byte that differs between buffers, the same order as the
 * comparison key_cmp.
 *
 * Thread-safety: reentrant. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plan/itree.h"
#include "plan/place.h"
#include "plan/radix.h"

typedef struct key {
  uint64_t k1, k2; /* both compared descending */
  uint64_t k3;     /* ascending */
  uint32_t idx;
} key_t_;

static int key_cmp(const void *a, const void *b) {
  const key_t_ *x = a, *y = b;
  if (x->k1 != y->k1) return x->k1 > y->k1 ? -1 : 1;
  if (x->k2 != y->k2) return x->k2 > y->k2 ? -1 : 1;
  if (x->k3 != y->k3) return x->k3 < y->k3 ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Sorts keys[0..n) built in index order into key_cmp order: the stable
 * radix sort of radix.h by k3 (ascending), then k2, then k1 (descending),
 * so equal keys stay in index order, key_cmp's last tie break. O(n) per
 * byte that differs, against the O(n log n) comparisons of qsort: this runs
 * once per ordering on every buffer. Falls back to qsort when the scratch
 * cannot be allocated. */
static void sort_keys(key_t_ *keys, size_t n) {
  static const struct {
    size_t off;
    int descending;
  } field[3] = {{offsetof(key_t_, k3), 0},
                {offsetof(key_t_, k2), 1},
                {offsetof(key_t_, k1), 1}};
  key_t_ *tmp = malloc((n ? n : 1) * sizeof *tmp), *a = keys, *b = tmp;
  int ok = tmp != NULL;
  for (int f = 0; f < 3 && ok; f++) {
    key_t_ *sorted = nnmem__radix_sort(a, b, n, sizeof *a, field[f].off,
                                       field[f].descending);
    if (!sorted)
      ok = 0;
    else if (sorted != a)
      b = a, a = sorted;
  }
  if (a != keys) memcpy(keys, a, n * sizeof *keys);
  /* key_cmp is a total order (the index breaks ties), so qsort finishes a
   * partial sort into the same order */
  if (!ok) qsort(keys, n, sizeof *keys, key_cmp);
  free(tmp);
}

/* Size class: floor(log2(size)) >> shift (0 for empty buffers). */
static uint64_t size_class(uint64_t size, unsigned shift) {
  return size ? (uint64_t)(63 - __builtin_clzll(size)) >> shift : 0;
}

static nnmem_status_t sort_by(const nnmem_problem_t *p, uint64_t align, int how,
                              uint32_t *order) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  key_t_ *keys = malloc((n ? n : 1) * sizeof *keys);
  if (!keys) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    uint64_t size = nnmem__padded_size(&b[i], align);
    uint64_t life = b[i].last - b[i].first;
    key_t_ k = {0, 0, 0, (uint32_t)i};
    switch (how) {
      case NNMEM__ORDER_SIZE_FIRST:
        k.k1 = size, k.k3 = b[i].first;
        break;
      case NNMEM__ORDER_SIZE_LIFE:
        k.k1 = size, k.k2 = life, k.k3 = b[i].first;
        break;
      case NNMEM__ORDER_LIFE_SIZE:
        k.k1 = life, k.k2 = size, k.k3 = b[i].first;
        break;
      case NNMEM__ORDER_CLASS4_FIRST: /* k2 = size: ties inside a step */
        k.k1 = size_class(size, 1), k.k2 = UINT64_MAX - b[i].first;
        k.k3 = UINT64_MAX - size;
        break;
      case NNMEM__ORDER_CLASS4_LIFE:
        k.k1 = size_class(size, 1), k.k2 = life, k.k3 = UINT64_MAX - size;
        break;
      default: /* NNMEM__ORDER_CLASS2_FIRST */
        k.k1 = size_class(size, 0), k.k2 = UINT64_MAX - b[i].first;
        k.k3 = UINT64_MAX - size;
        break;
    }
    keys[i] = k;
  }
  sort_keys(keys, n);
  for (size_t i = 0; i < n; i++)
    order[i] = keys[i].idx;
  free(keys);
  return NNMEM_OK;
}

typedef struct ev {
  uint64_t time, bytes;
  int start;
} ev_t;

static int ev_cmp(const void *a, const void *b) {
  const ev_t *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  return x->start - y->start; /* ends first: lifetimes are half-open */
}

/* Fills keys[] with one entry per distinct start step: k1 = live bytes,
 * k3 = step. Returns the number of steps in *m. */
static nnmem_status_t step_loads(const nnmem_problem_t *p, uint64_t align,
                                 key_t_ *keys, size_t *m) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  ev_t *ev = malloc((n ? 2 * n : 1) * sizeof *ev);
  if (!ev) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    uint64_t s = nnmem__padded_size(&b[i], align);
    ev[2 * i] = (ev_t){b[i].first, s, 1};
    ev[2 * i + 1] = (ev_t){b[i].last, s, 0};
  }
  qsort(ev, 2 * n, sizeof *ev, ev_cmp);
  uint64_t live = 0;
  size_t cnt = 0;
  for (size_t i = 0; i < 2 * n; i++) {
    if (!ev[i].start) {
      live -= ev[i].bytes;
      continue;
    }
    live = live + ev[i].bytes < live ? UINT64_MAX : live + ev[i].bytes;
    int last_of_time = i + 1 == 2 * n || ev[i + 1].time != ev[i].time;
    if (last_of_time) keys[cnt++] = (key_t_){live, 0, ev[i].time, 0};
  }
  free(ev);
  *m = cnt;
  return NNMEM_OK;
}

static nnmem_status_t order_breadth(const nnmem_problem_t *p, uint64_t align,
                                    uint32_t *order) {
  size_t n = nnmem_problem_count(p), m = 0, done = 0;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  key_t_ *steps = malloc((n ? n : 1) * sizeof *steps);
  key_t_ *live = malloc((n ? n : 1) * sizeof *live);
  nnmem__itree_hit_t *hits = malloc((n ? n : 1) * sizeof *hits);
  nnmem__itree_t *tree = NULL;
  nnmem_status_t st = steps && live && hits ? NNMEM_OK : NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) st = step_loads(p, align, steps, &m);
  if (st == NNMEM_OK) st = nnmem__itree_create(p, &tree);
  if (st == NNMEM_OK) {
    for (size_t i = 0; i < n; i++)
      nnmem__itree_activate(tree, i, 0, 0);
    qsort(steps, m, sizeof *steps, key_cmp);
  }
  for (size_t s = 0; s < m && st == NNMEM_OK; s++) {
    size_t k = nnmem__itree_query(tree, steps[s].k3, steps[s].k3 + 1, hits);
    for (size_t i = 0; i < k; i++) {
      const nnmem_buffer_t *x = &b[hits[i].idx];
      live[i] = (key_t_){nnmem__padded_size(x, align), x->last - x->first,
                         x->first, (uint32_t)hits[i].idx};
    }
    qsort(live, k, sizeof *live, key_cmp);
    for (size_t i = 0; i < k; i++) {
      order[done++] = live[i].idx;
      nnmem__itree_deactivate(tree, live[i].idx);
    }
  }
  free(steps);
  free(live);
  free(hits);
  nnmem__itree_destroy(tree);
  if (st == NNMEM_OK && done != n) st = NNMEM_ERR_STATE; /* cannot happen */
  return st;
}

nnmem_status_t nnmem__order(const nnmem_problem_t *p, uint64_t align,
                            nnmem__order_t how, uint32_t *order) {
  if (how == NNMEM__ORDER_BREADTH) return order_breadth(p, align, order);
  return sort_by(p, align, how, order);
}

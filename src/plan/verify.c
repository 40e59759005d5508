/* verify.c - the independent plan verifier. It shares no code with the
 * strategies (no interval tree, no gap search): a different algorithm
 * checking the same property, so a bug in one is caught by the other.
 *
 * Algorithm (sweep line over time, ordered set over address):
 *   1. check every offset: aligned to max(buffer align, alignment), and
 *      offset + padded size fits 64 bits; the height is the largest end;
 *   2. two events per nonzero buffer: start at `first`, end at `last`;
 *      sort by time with ends before starts at equal times (lifetimes are
 *      half-open, so [0,3) and [3,9) never meet);
 *   3. sweep: an end removes the buffer's address range from the live set;
 *      a start looks up the live ranges just below and just above its
 *      offset; since the live set is kept pairwise disjoint, the new range
 *      is disjoint from all of them iff it is disjoint from those two;
 *   4. the first pair found overlapping is reported by index (and id).
 * The live set is a treap keyed by (offset, index): O(log n) expected per
 * operation, O(n log n) in all.
 *
 * Invariant of the live set during the sweep: pairwise disjoint ranges.
 * Thread-safety: reentrant. */
#include <inttypes.h>
#include <stdlib.h>

#include "common/util.h"
#include "nnmem/plan.h"

#define NIL UINT32_MAX

typedef struct node {
  uint64_t off, end;
  uint32_t idx, prio, l, r;
} node_t;

typedef struct treap {
  node_t *nodes; /* node i belongs to buffer i */
  uint32_t root;
} treap_t;

static int key_less(const node_t *a, const node_t *b) {
  return a->off != b->off ? a->off < b->off : a->idx < b->idx;
}

/* Splits tree t into keys < k (*l) and keys >= k (*r). Recursion depth is
 * the treap height: O(log n) expected. */
static void split(treap_t *tr, uint32_t t, const node_t *k, uint32_t *l,
                  uint32_t *r) {
  if (t == NIL) {
    *l = *r = NIL;
    return;
  }
  node_t *n = &tr->nodes[t];
  if (key_less(n, k)) {
    split(tr, n->r, k, &n->r, r);
    *l = t;
  } else {
    split(tr, n->l, k, l, &n->l);
    *r = t;
  }
}

static uint32_t merge(treap_t *tr, uint32_t a, uint32_t b) {
  if (a == NIL) return b;
  if (b == NIL) return a;
  if (tr->nodes[a].prio > tr->nodes[b].prio) {
    tr->nodes[a].r = merge(tr, tr->nodes[a].r, b);
    return a;
  }
  tr->nodes[b].l = merge(tr, a, tr->nodes[b].l);
  return b;
}

static void insert(treap_t *tr, uint32_t i) {
  uint32_t l, r;
  split(tr, tr->root, &tr->nodes[i], &l, &r);
  tr->root = merge(tr, merge(tr, l, i), r);
}

static void erase(treap_t *tr, uint32_t i) {
  uint32_t l, mid, r;
  node_t hi = tr->nodes[i];
  hi.idx = i + 1; /* the key just above i's */
  split(tr, tr->root, &tr->nodes[i], &l, &mid);
  split(tr, mid, &hi, &mid, &r);
  tr->root = merge(tr, l, r); /* mid is exactly node i */
}

/* The live neighbours of node i: greatest key below, least key above. */
static void neighbours(const treap_t *tr, uint32_t i, uint32_t *below,
                       uint32_t *above) {
  *below = *above = NIL;
  const node_t *k = &tr->nodes[i];
  for (uint32_t t = tr->root; t != NIL;) {
    if (key_less(&tr->nodes[t], k)) {
      *below = t;
      t = tr->nodes[t].r;
    } else {
      *above = t;
      t = tr->nodes[t].l;
    }
  }
}

typedef struct event {
  uint64_t time;
  uint32_t idx;
  uint32_t start;
} event_t;

static int event_cmp(const void *a, const void *b) {
  const event_t *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static const char *id_of(const nnmem_problem_t *p, size_t i) {
  const char *id = nnmem_problem_id(p, i);
  return id ? id : "";
}

static nnmem_status_t report_conflict(const nnmem_problem_t *p,
                                      const node_t *nodes, size_t a, size_t b,
                                      nnmem_verify_report_t *rep,
                                      nnmem_diag_t *diag) {
  const nnmem_buffer_t *bu = nnmem_problem_buffers(p);
  if (a > b) {
    size_t t = a;
    a = b;
    b = t;
  }
  rep->valid = 0;
  rep->has_conflict = 1;
  rep->conflict_a = a;
  rep->conflict_b = b;
  return nnmem__diag(
      diag, NNMEM_ERR_CONFLICT,
      "conflict: buffer %zu '%s' live [%" PRIu64 ",%" PRIu64 ") at [%" PRIu64
      ",%" PRIu64 ") overlaps buffer %zu '%s' live [%" PRIu64 ",%" PRIu64
      ") at [%" PRIu64 ",%" PRIu64 ")",
      a, id_of(p, a), bu[a].first, bu[a].last, nodes[a].off, nodes[a].end, b,
      id_of(p, b), bu[b].first, bu[b].last, nodes[b].off, nodes[b].end);
}

/* Step 1: per-buffer checks; fills nodes[] and the height. */
static nnmem_status_t check_offsets(const nnmem_problem_t *p,
                                    const uint64_t *off, uint64_t alignment,
                                    node_t *nodes, nnmem_verify_report_t *rep,
                                    nnmem_diag_t *diag) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  uint64_t rng = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < nnmem_problem_count(p); i++) {
    uint64_t al = nnmem__max_u64(b[i].align, alignment), size;
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    nodes[i] = (node_t){off[i], 0, (uint32_t)i, (uint32_t)rng, NIL, NIL};
    if (off[i] & (al - 1)) {
      rep->valid = 0;
      rep->misaligned = 1;
      rep->misaligned_index = i;
      return nnmem__diag(diag, NNMEM_ERR_CONFLICT,
                         "buffer %zu '%s': offset %" PRIu64
                         " is not a multiple of its alignment %" PRIu64,
                         i, id_of(p, i), off[i], al);
    }
    if (nnmem__align_up(b[i].size, al, &size) ||
        nnmem__add_overflow(off[i], size, &nodes[i].end)) {
      rep->valid = 0;
      rep->overflow = 1;
      rep->overflow_index = i;
      return nnmem__diag(diag, NNMEM_ERR_CONFLICT,
                         "buffer %zu '%s': offset %" PRIu64 " + size %" PRIu64
                         " overflows 64 bits",
                         i, id_of(p, i), off[i], b[i].size);
    }
    if (nodes[i].end > rep->height) rep->height = nodes[i].end;
  }
  return NNMEM_OK;
}

/* Steps 2-4: the sweep. */
static nnmem_status_t sweep(const nnmem_problem_t *p, node_t *nodes,
                            nnmem_verify_report_t *rep, nnmem_diag_t *diag) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t n = nnmem_problem_count(p), m = 0;
  event_t *ev = malloc((n ? 2 * n : 1) * sizeof *ev);
  if (!ev) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    if (nodes[i].end == nodes[i].off) continue; /* empty: occupies nothing */
    ev[m++] = (event_t){b[i].first, (uint32_t)i, 1};
    ev[m++] = (event_t){b[i].last, (uint32_t)i, 0};
  }
  qsort(ev, m, sizeof *ev, event_cmp);
  treap_t tr = {nodes, NIL};
  nnmem_status_t st = NNMEM_OK;
  for (size_t e = 0; e < m && st == NNMEM_OK; e++) {
    uint32_t i = ev[e].idx, lo, hi;
    if (!ev[e].start) {
      erase(&tr, i);
      continue;
    }
    neighbours(&tr, i, &lo, &hi);
    if (lo != NIL && nodes[lo].end > nodes[i].off)
      st = report_conflict(p, nodes, lo, i, rep, diag);
    else if (hi != NIL && nodes[hi].off < nodes[i].end)
      st = report_conflict(p, nodes, i, hi, rep, diag);
    else
      insert(&tr, i);
  }
  free(ev);
  return st;
}

nnmem_status_t nnmem_plan_verify(const nnmem_problem_t *problem,
                                 const uint64_t *offsets, uint64_t alignment,
                                 uint64_t capacity,
                                 nnmem_verify_report_t *report,
                                 nnmem_diag_t *diag) {
  nnmem_verify_report_t local;
  nnmem_verify_report_t *rep = report ? report : &local;
  *rep = (nnmem_verify_report_t){.valid = 1};
  if (!problem || (!offsets && nnmem_problem_count(problem)))
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "problem or offsets is NULL");
  if (alignment == 0) alignment = 1;
  if (!nnmem__is_pow2(alignment))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "alignment %" PRIu64 " is not a power of two",
                       alignment);
  size_t n = nnmem_problem_count(problem);
  if (n >= UINT32_MAX)
    return nnmem__diag(diag, NNMEM_ERR_OVERFLOW, "too many buffers");
  node_t *nodes = malloc((n ? n : 1) * sizeof *nodes);
  if (!nodes) return NNMEM_ERR_NOMEM;
  nnmem_status_t st =
      check_offsets(problem, offsets, alignment, nodes, rep, diag);
  if (st == NNMEM_OK) st = sweep(problem, nodes, rep, diag);
  free(nodes);
  if (st == NNMEM_OK && capacity && rep->height > capacity) {
    rep->valid = 0;
    rep->over_capacity = 1;
    st = nnmem__diag(diag, NNMEM_ERR_CAPACITY,
                     "height %" PRIu64 " exceeds the capacity %" PRIu64,
                     rep->height, capacity);
  }
  return st;
}

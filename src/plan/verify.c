/* verify.c - the independent plan verifier. It shares no code with the
 * strategies (no interval tree, no gap search, not roots.c): a different
 * algorithm checking the same property, so a bug in one is caught by the
 * other.
 *
 * Algorithm (sweep line over time, ordered set over address):
 *   1. check every offset: aligned to max(buffer align, alignment) for a
 *      root, to its own align for a sub-buffer (its place is fixed by its
 *      parent), and offset + padded size fits 64 bits; the height is the
 *      largest end;
 *   2. check every sub-buffer against its parent: offset(child) ==
 *      offset(parent) + rel exactly, [offset, end) inside the parent's
 *      range, and each active interval of the child inside one active
 *      interval of the parent (binary search in the parent's gaps);
 *   3. sweep each *group* separately: the roots form one group, the direct
 *      children of each parent another. Within a group, two events per
 *      active interval (lifetime minus gaps) of each nonzero buffer: start
 *      and end; sort by time with ends before starts at equal times
 *      (intervals are half-open, so [0,3) and [3,9) never meet): a stable
 *      partition, then a radix sort by time (the one primitive shared with
 *      the planner: radix.h sorts, it decides nothing);
 *   4. sweep: an end removes the buffer's address range from the live set;
 *      a start looks up the live ranges just below and just above its
 *      offset; since the live set is kept pairwise disjoint, the new range
 *      is disjoint from all of them iff it is disjoint from those two;
 *   5. the first pair found overlapping is reported by index (and id).
 * Why groups suffice: by step 2 every buffer lies inside its parent in
 * address and in active time, so an overlap between buffers of two
 * different root families implies one between the two roots, and one
 * between buffers of one family that are not ancestor and descendant
 * implies one between two children of their lowest common ancestor.
 * An ancestor and its descendant share bytes by design, only at the
 * declared offset (step 2).
 * The live set is a treap keyed by (offset, index): O(log n) expected per
 * operation, O((n + gaps) log n) in all.
 *
 * Invariant of the live set during a sweep: pairwise disjoint ranges.
 * Thread-safety: reentrant. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "nnmem/plan.h"
#include "plan/radix.h"

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

/* Sorts ev[0..m) by (time, start, idx) into ev or tmp (m records),
 * returning which: the events come in index order, so a stable partition
 * by `start` (ends first) and a stable radix sort by time give it. NULL
 * when out of memory. */
static event_t *sort_events(event_t *ev, event_t *tmp, size_t m) {
  size_t k = 0;
  for (int start = 0; start < 2; start++)
    for (size_t e = 0; e < m; e++)
      if (ev[e].start == (uint32_t)start) tmp[k++] = ev[e];
  return nnmem__radix_sort(tmp, ev, m, sizeof *ev, 0, 0);
}

static const char *id_of(const nnmem_problem_t *p, size_t i) {
  const char *id = nnmem_problem_id(p, i);
  return id ? id : "";
}

static nnmem_status_t report_conflict(const nnmem_problem_t *p,
                                      const node_t *nodes, size_t a, size_t b,
                                      uint64_t step, nnmem_verify_report_t *rep,
                                      nnmem_diag_t *diag) {
  const nnmem_buffer_t *bu = nnmem_problem_buffers(p);
  if (a > b) {
    size_t t = a;
    a = b;
    b = t;
  }
  char extra[64];
  int extras = nnmem_problem_gapped_count(p) || nnmem_problem_child_count(p);
  snprintf(extra, sizeof extra, " (both active at step %" PRIu64 ")", step);
  rep->valid = 0;
  rep->has_conflict = 1;
  rep->conflict_a = a;
  rep->conflict_b = b;
  return nnmem__diag(diag, NNMEM_ERR_CONFLICT,
                     "conflict: buffer %zu '%s' live [%" PRIu64 ",%" PRIu64
                     ") at [%" PRIu64 ",%" PRIu64
                     ") overlaps buffer %zu '%s' live [%" PRIu64 ",%" PRIu64
                     ") at [%" PRIu64 ",%" PRIu64 ")%s",
                     a, id_of(p, a), bu[a].first, bu[a].last, nodes[a].off,
                     nodes[a].end, b, id_of(p, b), bu[b].first, bu[b].last,
                     nodes[b].off, nodes[b].end, extras ? extra : "");
}

/* Step 1: per-buffer checks; fills nodes[] and the height. */
static nnmem_status_t check_offsets(const nnmem_problem_t *p,
                                    const uint64_t *off, uint64_t alignment,
                                    node_t *nodes, nnmem_verify_report_t *rep,
                                    nnmem_diag_t *diag) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  uint64_t rng = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < nnmem_problem_count(p); i++) {
    int child = nnmem_problem_parent(p, i, NULL, NULL) == NNMEM_OK;
    uint64_t al = child ? b[i].align : nnmem__max_u64(b[i].align, alignment);
    uint64_t size;
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

/* Appends the start and end events of buffer i's active intervals
 * (lifetime minus gaps) to ev[*m]. */
static void add_events(const nnmem_problem_t *p, size_t i, event_t *ev,
                       size_t *m) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p) + i;
  const nnmem_interval_t *g;
  size_t ng = nnmem_problem_gaps(p, i, &g);
  uint64_t t = b->first;
  for (size_t k = 0; k <= ng; k++) {
    uint64_t stop = k < ng ? g[k].first : b->last;
    if (stop > t) {
      ev[(*m)++] = (event_t){t, (uint32_t)i, 1};
      ev[(*m)++] = (event_t){stop, (uint32_t)i, 0};
    }
    if (k < ng && g[k].last > t) t = g[k].last;
  }
}

/* Steps 3-5 for one group of buffers (members[0..count)). */
static nnmem_status_t sweep(const nnmem_problem_t *p, node_t *nodes,
                            const uint32_t *members, size_t count, event_t *ev,
                            nnmem_verify_report_t *rep, nnmem_diag_t *diag) {
  size_t m = 0;
  for (size_t j = 0; j < count; j++) {
    uint32_t i = members[j];
    if (nodes[i].end == nodes[i].off) continue; /* empty: occupies nothing */
    add_events(p, i, ev, &m);
  }
  ev = sort_events(ev, ev + m, m);
  if (!ev) return NNMEM_ERR_NOMEM;
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
      st = report_conflict(p, nodes, lo, i, ev[e].time, rep, diag);
    else if (hi != NIL && nodes[hi].off < nodes[i].end)
      st = report_conflict(p, nodes, i, hi, ev[e].time, rep, diag);
    else
      insert(&tr, i);
  }
  return st;
}

/* Is [a, b) inside one active interval of buffer q? Binary search over
 * q's sorted gaps for the first one ending after a. */
static int parent_active(const nnmem_problem_t *p, size_t q, uint64_t a,
                         uint64_t b) {
  const nnmem_buffer_t *pb = nnmem_problem_buffers(p) + q;
  const nnmem_interval_t *g;
  size_t ng = nnmem_problem_gaps(p, q, &g), lo = 0, hi = ng;
  if (a < pb->first || b > pb->last) return 0;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g[mid].last <= a)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (; lo < ng && g[lo].first < b; lo++) /* overlapping gaps: any hit */
    if (g[lo].last > a) return 0;
  return 1;
}

static nnmem_status_t report_child(const nnmem_problem_t *p, size_t i, size_t q,
                                   const char *what, nnmem_verify_report_t *rep,
                                   nnmem_diag_t *diag) {
  rep->valid = 0;
  rep->bad_child = 1;
  rep->bad_child_index = i;
  return nnmem__diag(diag, NNMEM_ERR_CONFLICT,
                     "sub-buffer %zu '%s' of buffer %zu '%s': %s", i,
                     id_of(p, i), q, id_of(p, q), what);
}

/* Step 2: every child against its parent. */
static nnmem_status_t check_children(const nnmem_problem_t *p,
                                     const uint64_t *off, const node_t *nodes,
                                     nnmem_verify_report_t *rep,
                                     nnmem_diag_t *diag) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  for (size_t i = 0; i < nnmem_problem_count(p); i++) {
    size_t q;
    uint64_t rel, want;
    if (nnmem_problem_parent(p, i, &q, &rel) != NNMEM_OK) continue;
    if (nnmem__add_overflow(off[q], rel, &want) || off[i] != want)
      return report_child(p, i, q,
                          "offset is not the parent's offset plus the "
                          "relative offset",
                          rep, diag);
    if (nodes[i].end > nodes[q].end)
      return report_child(p, i, q, "ends past the end of its parent", rep,
                          diag);
    const nnmem_interval_t *g;
    size_t ng = nnmem_problem_gaps(p, i, &g);
    uint64_t t = b[i].first;
    for (size_t k = 0; k <= ng; k++) {
      uint64_t stop = k < ng ? g[k].first : b[i].last;
      if (stop > t && !parent_active(p, q, t, stop))
        return report_child(p, i, q,
                            "active while its parent is not (the parent "
                            "dies first or has a gap)",
                            rep, diag);
      if (k < ng && g[k].last > t) t = g[k].last;
    }
  }
  return NNMEM_OK;
}

/* Groups buffers for step 3: roots first, then the children of each parent
 * (counting sort by parent). `members` gets n entries, `start` n + 2. */
static void make_groups(const nnmem_problem_t *p, uint32_t *members,
                        size_t *start) {
  size_t n = nnmem_problem_count(p), q;
  for (size_t k = 0; k < n + 2; k++)
    start[k] = 0;
  for (size_t i = 0; i < n; i++) /* slot 0: roots; slot q + 1: q's kids */
    start[(nnmem_problem_parent(p, i, &q, NULL) == NNMEM_OK ? q + 1 : 0) + 1]++;
  for (size_t k = 1; k < n + 2; k++)
    start[k] += start[k - 1];
  for (size_t i = 0; i < n; i++) {
    size_t slot = nnmem_problem_parent(p, i, &q, NULL) == NNMEM_OK ? q + 1 : 0;
    members[start[slot]++] = (uint32_t)i;
  }
  for (size_t k = n + 1; k > 0; k--) /* shift back: start[k] = begin */
    start[k] = start[k - 1];
  start[0] = 0;
}

static nnmem_status_t sweep_all(const nnmem_problem_t *p, const uint64_t *off,
                                node_t *nodes, nnmem_verify_report_t *rep,
                                nnmem_diag_t *diag) {
  size_t n = nnmem_problem_count(p), n_ev = 2 * n;
  for (size_t i = 0; i < n; i++)
    n_ev += 2 * nnmem_problem_gaps(p, i, NULL);
  event_t *ev = malloc((n_ev ? 2 * n_ev : 1) * sizeof *ev); /* + scratch */
  uint32_t *members = malloc((n ? n : 1) * sizeof *members);
  size_t *start = malloc((n + 2) * sizeof *start);
  nnmem_status_t st = ev && members && start ? NNMEM_OK : NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) st = check_children(p, off, nodes, rep, diag);
  if (st == NNMEM_OK) make_groups(p, members, start);
  for (size_t k = 0; k < n + 1 && st == NNMEM_OK; k++)
    if (start[k + 1] > start[k])
      st = sweep(p, nodes, members + start[k], start[k + 1] - start[k], ev, rep,
                 diag);
  free(ev);
  free(members);
  free(start);
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
  if (nnmem_problem_gapped_count(problem) ||
      nnmem_problem_child_count(problem)) { /* gap/sub-buffer rules hold */
    nnmem_status_t pst = nnmem_problem_check(problem, diag);
    if (pst) return pst;
  }
  node_t *nodes = malloc((n ? n : 1) * sizeof *nodes);
  if (!nodes) return NNMEM_ERR_NOMEM;
  nnmem_status_t st =
      check_offsets(problem, offsets, alignment, nodes, rep, diag);
  if (st == NNMEM_OK) st = sweep_all(problem, offsets, nodes, rep, diag);
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

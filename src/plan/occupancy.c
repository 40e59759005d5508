/* occupancy.c - the address space taken over time, as a segment tree over
 * compressed time whose nodes keep merged address-range sets.
 *
 * Why: placing a buffer needs the union of the address ranges of every
 * placed buffer whose lifetime meets its own. Listing those buffers costs
 * their number k (thousands on long training traces); their union is
 * usually a handful of ranges, because well-packed buffers sit edge to
 * edge. This structure answers with merged ranges instead of buffers.
 *
 * Construction:
 *   1. compress the distinct lifetime endpoints to ranks 0..T; buffer
 *      [first, last) covers the elementary slots [rank(first), rank(last));
 *   2. a bottom-up segment tree with N >= T leaves (node 1 the root, node v
 *      has children 2v and 2v+1, leaf s is node N + s).
 * Each node v keeps two sets of disjoint, sorted, merged ranges:
 *   cover(v)  ranges of buffers having v among their canonical nodes
 *             (the O(log T) maximal nodes partitioning their slots);
 *   below(v)  ranges of buffers having a canonical node inside v's
 *             subtree, or lying on a boundary path through v.
 * Add buffer y with slots [l, r): its range goes into cover(u) for each
 * canonical node u, and into below(w) for every canonical node and every
 * node on the two leaf-to-root paths from leaves l and r - 1 (all of those
 * contain a slot of y).
 * Query buffer x with slots [l, r): below(v) for x's canonical nodes v,
 * plus cover(w) for every node w on the paths from leaves l and r - 1.
 * Exactness: y meets x iff a canonical node u of y and a canonical node v
 * of x are nested. If u lies inside v's subtree, v is an ancestor of a
 * canonical node of y, hence a node partially covered by y, hence on one
 * of y's boundary paths: y is in below(v). If u is a strict ancestor of v,
 * u is partially covered by x, so u is on one of x's boundary paths and y
 * is in cover(u). Every set only ever holds ranges of buffers whose slots
 * meet the node's slots, so nothing extra is reported.
 *
 * Costs: add O(log T) set insertions; query O(log T) sets. A set
 * insertion is a binary search plus a memmove of the merged tail.
 * Invariant: each set is sorted by lo with hi(i) < lo(i + 1).
 * Thread-safety: none (one map per planning run). */
#include <string.h>

#include "common/util.h"
#include "plan/occupancy.h"

typedef struct rset {
  nnmem__range_t *r;
  uint32_t n, cap;
} rset_t;

struct nnmem__occ {
  size_t nbuf;
  uint32_t leaves;   /* N, a power of two */
  uint32_t *slot_lo; /* per buffer: first slot */
  uint32_t *slot_hi; /* per buffer: one past the last slot */
  rset_t *cover;     /* 2N sets */
  rset_t *below;     /* 2N sets */
};

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Rank of t among the sorted distinct times (binary search). */
static uint32_t rank_of(const uint64_t *times, size_t m, uint64_t t) {
  size_t lo = 0, hi = m;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (times[mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (uint32_t)lo;
}

nnmem_status_t nnmem__occ_create(const nnmem_problem_t *p, nnmem__occ_t **out) {
  size_t n = nnmem_problem_count(p), m = 0;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  nnmem__occ_t *o = calloc(1, sizeof *o);
  uint64_t *times = malloc((n ? 2 * n : 1) * sizeof *times);
  if (!o || !times) goto nomem;
  for (size_t i = 0; i < n; i++) {
    times[m++] = b[i].first;
    times[m++] = b[i].last;
  }
  qsort(times, m, sizeof *times, cmp_u64);
  size_t u = 0;
  for (size_t i = 0; i < m; i++)
    if (u == 0 || times[u - 1] != times[i]) times[u++] = times[i];
  o->leaves = 1;
  while (o->leaves < u)
    o->leaves *= 2;
  o->nbuf = n;
  o->slot_lo = malloc((n ? n : 1) * sizeof *o->slot_lo);
  o->slot_hi = malloc((n ? n : 1) * sizeof *o->slot_hi);
  o->cover = calloc(2 * (size_t)o->leaves, sizeof *o->cover);
  o->below = calloc(2 * (size_t)o->leaves, sizeof *o->below);
  if (!o->slot_lo || !o->slot_hi || !o->cover || !o->below) goto nomem;
  for (size_t i = 0; i < n; i++) {
    o->slot_lo[i] = rank_of(times, u, b[i].first);
    o->slot_hi[i] = rank_of(times, u, b[i].last);
  }
  free(times);
  *out = o;
  return NNMEM_OK;
nomem:
  free(times);
  nnmem__occ_destroy(o);
  return NNMEM_ERR_NOMEM;
}

void nnmem__occ_destroy(nnmem__occ_t *o) {
  if (!o) return;
  if (o->cover && o->below)
    for (size_t v = 0; v < 2 * (size_t)o->leaves; v++) {
      free(o->cover[v].r);
      free(o->below[v].r);
    }
  free(o->cover);
  free(o->below);
  free(o->slot_lo);
  free(o->slot_hi);
  free(o);
}

/* Inserts [lo, hi) into the set, merging every range it touches. */
static nnmem_status_t rset_add(rset_t *s, uint64_t lo, uint64_t hi) {
  uint32_t a = 0, z = s->n;
  while (a < z) { /* first range with hi >= lo */
    uint32_t mid = a + (z - a) / 2;
    if (s->r[mid].hi < lo)
      a = mid + 1;
    else
      z = mid;
  }
  uint32_t e = a; /* one past the last range with lo <= hi */
  while (e < s->n && s->r[e].lo <= hi)
    e++;
  if (e > a) { /* merge [a, e) into slot a */
    if (s->r[a].lo < lo) lo = s->r[a].lo;
    if (s->r[e - 1].hi > hi) hi = s->r[e - 1].hi;
    s->r[a] = (nnmem__range_t){lo, hi};
    memmove(&s->r[a + 1], &s->r[e], (s->n - e) * sizeof *s->r);
    s->n -= e - a - 1;
    return NNMEM_OK;
  }
  if (s->n == s->cap) {
    uint32_t ncap = s->cap ? s->cap * 2 : 4;
    nnmem__range_t *r = realloc(s->r, ncap * sizeof *r);
    if (!r) return NNMEM_ERR_NOMEM;
    s->r = r;
    s->cap = ncap;
  }
  memmove(&s->r[a + 1], &s->r[a], (s->n - a) * sizeof *s->r);
  s->r[a] = (nnmem__range_t){lo, hi};
  s->n++;
  return NNMEM_OK;
}

nnmem_status_t nnmem__occ_add(nnmem__occ_t *o, size_t i, uint64_t lo,
                              uint64_t hi) {
  uint32_t n = o->leaves, l = o->slot_lo[i] + n, r = o->slot_hi[i] + n;
  nnmem_status_t st = NNMEM_OK;
  /* the two boundary paths, each shared node once (same depth: walk both
   * up until they meet) */
  uint32_t a = l, z = r - 1;
  for (; a != z && !st; a >>= 1, z >>= 1) {
    st = rset_add(&o->below[a], lo, hi);
    if (!st) st = rset_add(&o->below[z], lo, hi);
  }
  for (; a >= 1 && !st; a >>= 1)
    st = rset_add(&o->below[a], lo, hi);
  for (; l < r && !st; l >>= 1, r >>= 1) {
    if (l & 1) {
      st = rset_add(&o->cover[l], lo, hi);
      if (!st) st = rset_add(&o->below[l], lo, hi);
      l++;
    }
    if ((r & 1) && !st) {
      --r;
      st = rset_add(&o->cover[r], lo, hi);
      if (!st) st = rset_add(&o->below[r], lo, hi);
    }
  }
  return st;
}

static nnmem_status_t append(const rset_t *s, nnmem__range_t **out, size_t *n,
                             size_t *cap) {
  if (!s->n) return NNMEM_OK;
  nnmem_status_t st = nnmem__grow((void **)out, cap, *n + s->n, sizeof **out);
  if (st) return st;
  memcpy(*out + *n, s->r, s->n * sizeof *s->r);
  *n += s->n;
  return NNMEM_OK;
}

nnmem_status_t nnmem__occ_query(const nnmem__occ_t *o, size_t i,
                                nnmem__range_t **out, size_t *n, size_t *cap) {
  uint32_t nl = o->leaves, l = o->slot_lo[i] + nl, r = o->slot_hi[i] + nl;
  nnmem_status_t st = NNMEM_OK;
  *n = 0;
  uint32_t a = l, z = r - 1;
  for (; a != z && !st; a >>= 1, z >>= 1) {
    st = append(&o->cover[a], out, n, cap);
    if (!st) st = append(&o->cover[z], out, n, cap);
  }
  for (; a >= 1 && !st; a >>= 1)
    st = append(&o->cover[a], out, n, cap);
  for (; l < r && !st; l >>= 1, r >>= 1) {
    if (l & 1) st = append(&o->below[l++], out, n, cap);
    if ((r & 1) && !st) st = append(&o->below[--r], out, n, cap);
  }
  return st;
}

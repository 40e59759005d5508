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
 * Coarsening (query for a buffer of `size` bytes): no gap shorter than
 * `size` can hold the buffer, and filling such gaps of one set changes no
 * gap of the union that can: a union gap G of length >= size lies inside
 * a gap of length >= size of every set, so it survives the filling, and
 * its ends stay taken. So each set is read with its gaps < size filled,
 * and a set whose largest gap (kept as an upper bound `maxgap`: only a
 * range added below the first or above the last one makes a new largest
 * gap; tightened to the exact value whenever a query walks the set) is
 * below `size` is read as the one range [first lo, last hi). A comb of
 * many 1-byte buffers with 1-byte holes is one range for a 2-byte query.
 *
 * The cut: sets of different nodes may interleave (a comb of long-lived
 * buffers and the complementary comb of short-lived ones: each set is
 * fragmented, their union solid), so coarsening alone does not bound a
 * query. When the coarsened sets would give more than
 * NNMEM__OCC_MAX_RANGES ranges the query answers [0, top): the buffer goes
 * on top of everything live with it (valid, possibly higher than the best
 * fit). Traces of real models stay far below the cut (measured: at most
 * ~1,400 ranges in one query on the shared traces), so their plans are
 * the exact best fit. A query for UINT64_MAX bytes (nothing
 * fits a gap) always answers [0, top): the placement engine's fast mode
 * past a deadline.
 *
 * Skyline mode (the placement engine past a deadline): only "the highest
 * end among placed buffers live with i" is asked, from a max segment tree
 * over the same slots: sky_tag(v) = an end applied to every slot of v
 * (set on the canonical nodes of an add), sky_mx(v) >= every end applied
 * to some slot of v (raised on the two boundary paths and, through the
 * tags, on the canonical nodes). top(i) = max of sky_mx over i's canonical
 * nodes and sky_tag over its two boundary paths (the ancestors of its
 * canonical nodes). O(log T) each, no range sets.
 *
 * Costs: add O(log T) set insertions; query O(log T) sets, at most
 * O(log T + NNMEM__OCC_MAX_RANGES) ranges. A set insertion is a binary
 * search plus a memmove of the merged tail. below(v) is kept only for the
 * nodes that are some buffer's canonical node (the only ones a query
 * reads), so short-lived buffers do not all pile into the root's set.
 * Invariant: each set is sorted by lo with hi(i) < lo(i + 1).
 * Thread-safety: none (one map per planning run). */
#include <string.h>

#include "common/util.h"
#include "plan/occupancy.h"

typedef struct rset {
  nnmem__range_t *r;
  uint32_t n, cap;
  uint64_t maxgap; /* >= the largest r[i + 1].lo - r[i].hi */
} rset_t;

struct nnmem__occ {
  size_t nbuf;
  uint32_t leaves;   /* N, a power of two */
  uint32_t *slot_lo; /* per buffer: first slot */
  uint32_t *slot_hi; /* per buffer: one past the last slot */
  rset_t *cover;     /* 2N sets */
  rset_t *below;     /* 2N sets */
  uint8_t *queried;  /* 2N flags: a canonical node of some buffer, so its
                        below set is read by some query */
  uint64_t *sky_mx;  /* skyline mode: 2N, max end over the node's slots */
  uint64_t *sky_tag; /* 2N, an end applied to every slot of the node */
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
  o->queried = calloc(2 * (size_t)o->leaves, 1);
  if (!o->slot_lo || !o->slot_hi || !o->cover || !o->below || !o->queried)
    goto nomem;
  for (size_t i = 0; i < n; i++) {
    o->slot_lo[i] = rank_of(times, u, b[i].first);
    o->slot_hi[i] = rank_of(times, u, b[i].last);
    uint32_t l = o->slot_lo[i] + o->leaves, r = o->slot_hi[i] + o->leaves;
    for (; l < r; l >>= 1, r >>= 1) { /* the canonical nodes */
      if (l & 1) o->queried[l++] = 1;
      if (r & 1) o->queried[--r] = 1;
    }
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
  free(o->queried);
  free(o->sky_mx);
  free(o->sky_tag);
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
  /* only a range added below the first or above the last makes a new gap
   * that can be larger than the old ones; one added between two ranges
   * splits their gap, and merging only removes or shrinks gaps */
  if (a == 0 && s->n > 1 && s->r[1].lo - hi > s->maxgap)
    s->maxgap = s->r[1].lo - hi;
  if (a + 1 == s->n && a > 0 && lo - s->r[a - 1].hi > s->maxgap)
    s->maxgap = lo - s->r[a - 1].hi;
  return NNMEM_OK;
}

/* below(v) is read only when v is a canonical node of a query: others
 * (the nodes high above short-lived buffers, the root first) are skipped. */
static nnmem_status_t below_add(nnmem__occ_t *o, uint32_t v, uint64_t lo,
                                uint64_t hi) {
  return o->queried[v] ? rset_add(&o->below[v], lo, hi) : NNMEM_OK;
}

nnmem_status_t nnmem__occ_add(nnmem__occ_t *o, size_t i, uint64_t lo,
                              uint64_t hi) {
  uint32_t n = o->leaves, l = o->slot_lo[i] + n, r = o->slot_hi[i] + n;
  nnmem_status_t st = NNMEM_OK;
  /* the two boundary paths, each shared node once (same depth: walk both
   * up until they meet) */
  uint32_t a = l, z = r - 1;
  for (; a != z && !st; a >>= 1, z >>= 1) {
    st = below_add(o, a, lo, hi);
    if (!st) st = below_add(o, z, lo, hi);
  }
  for (; a >= 1 && !st; a >>= 1)
    st = below_add(o, a, lo, hi);
  for (; l < r && !st; l >>= 1, r >>= 1) {
    if (l & 1) {
      st = rset_add(&o->cover[l], lo, hi);
      if (!st) st = below_add(o, l, lo, hi);
      l++;
    }
    if ((r & 1) && !st) {
      --r;
      st = rset_add(&o->cover[r], lo, hi);
      if (!st) st = below_add(o, r, lo, hi);
    }
  }
  return st;
}

/* Appends set `s` to *out, coarsened for a buffer of `size` bytes: ranges
 * separated by a gap smaller than `size` are appended as one range (no
 * such gap can hold the buffer, and filling it changes no gap that can:
 * see the file comment), so a set whose gaps are all smaller is one range.
 * Tightens s->maxgap to the exact largest gap when it walks the set. */
static nnmem_status_t append(rset_t *s, uint64_t size, nnmem__range_t **out,
                             size_t *n, size_t *cap) {
  if (!s->n) return NNMEM_OK;
  if (s->maxgap < size) { /* no gap of s can hold it */
    nnmem_status_t st = nnmem__grow((void **)out, cap, *n + 1, sizeof **out);
    if (st) return st;
    (*out)[(*n)++] = (nnmem__range_t){s->r[0].lo, s->r[s->n - 1].hi};
    return NNMEM_OK;
  }
  nnmem_status_t st = nnmem__grow((void **)out, cap, *n + s->n, sizeof **out);
  if (st) return st;
  nnmem__range_t *o = *out + *n, cur = s->r[0];
  uint64_t maxgap = 0;
  size_t k = 0;
  for (uint32_t i = 1; i < s->n; i++) {
    uint64_t gap = s->r[i].lo - cur.hi;
    if (gap > maxgap) maxgap = gap;
    if (gap < size) {
      cur.hi = s->r[i].hi;
    } else {
      o[k++] = cur;
      cur = s->r[i];
    }
  }
  o[k++] = cur;
  *n += k;
  s->maxgap = maxgap;
  return NNMEM_OK;
}

/* Calls fn(set) for every set a query of buffer `i` reads: cover(w) for the
 * nodes w on the paths from leaves l and r - 1 to the root, below(v) for
 * the canonical nodes v. Stops at the first error. */
#define FOR_QUERY_SETS(o, i, fn)                               \
  do {                                                         \
    uint32_t nl_ = (o)->leaves, l_ = (o)->slot_lo[i] + nl_,    \
             r_ = (o)->slot_hi[i] + nl_, a_ = l_, z_ = r_ - 1; \
    for (; a_ != z_ && !st; a_ >>= 1, z_ >>= 1) {              \
      st = fn(&(o)->cover[a_]);                                \
      if (!st) st = fn(&(o)->cover[z_]);                       \
    }                                                          \
    for (; a_ >= 1 && !st; a_ >>= 1)                           \
      st = fn(&(o)->cover[a_]);                                \
    for (; l_ < r_ && !st; l_ >>= 1, r_ >>= 1) {               \
      if (l_ & 1) {                                            \
        st = fn(&(o)->below[l_]);                              \
        l_++;                                                  \
      }                                                        \
      if ((r_ & 1) && !st) {                                   \
        r_--;                                                  \
        st = fn(&(o)->below[r_]);                              \
      }                                                        \
    }                                                          \
  } while (0)

nnmem_status_t nnmem__occ_query(nnmem__occ_t *o, size_t i, uint64_t size,
                                nnmem__range_t **out, size_t *n, size_t *cap) {
  nnmem_status_t st = NNMEM_OK;
  size_t bound = 0; /* ranges the coarsened sets give at most */
  uint64_t top = 0;
#define COUNT_(s)                                                 \
  ((s)->n ? (bound += (s)->maxgap < size ? 1 : (s)->n,            \
             top = nnmem__max_u64(top, (s)->r[(s)->n - 1].hi), 0) \
          : 0)
  FOR_QUERY_SETS(o, i, COUNT_);
#undef COUNT_
  *n = 0;
  if (bound > NNMEM__OCC_MAX_RANGES || size == UINT64_MAX) {
    /* the cut (or a query for the top only): everything below top */
    st = nnmem__grow((void **)out, cap, 1, sizeof **out);
    if (!st) (*out)[(*n)++] = (nnmem__range_t){0, top};
    return st;
  }
#define APPEND_(s) append((s), size, out, n, cap)
  FOR_QUERY_SETS(o, i, APPEND_);
#undef APPEND_
  return st;
}

nnmem_status_t nnmem__occ_sky_start(nnmem__occ_t *o) {
  o->sky_mx = calloc(2 * (size_t)o->leaves, sizeof *o->sky_mx);
  o->sky_tag = calloc(2 * (size_t)o->leaves, sizeof *o->sky_tag);
  return o->sky_mx && o->sky_tag ? NNMEM_OK : NNMEM_ERR_NOMEM;
}

void nnmem__occ_sky_add(nnmem__occ_t *o, size_t i, uint64_t end) {
  uint32_t nl = o->leaves, l = o->slot_lo[i] + nl, r = o->slot_hi[i] + nl;
  for (uint32_t a = l, z = r - 1; a >= 1; a >>= 1, z >>= 1) {
    if (o->sky_mx[a] < end) o->sky_mx[a] = end; /* paths: a slot of i */
    if (o->sky_mx[z] < end) o->sky_mx[z] = end;
  }
  for (; l < r; l >>= 1, r >>= 1) { /* canonical nodes: every slot */
    if (l & 1) {
      if (o->sky_tag[l] < end) o->sky_tag[l] = end;
      l++;
    }
    if (r & 1) {
      --r;
      if (o->sky_tag[r] < end) o->sky_tag[r] = end;
    }
  }
}

uint64_t nnmem__occ_sky_top(const nnmem__occ_t *o, size_t i) {
  uint32_t nl = o->leaves, l = o->slot_lo[i] + nl, r = o->slot_hi[i] + nl;
  uint64_t top = 0;
  for (uint32_t a = l, z = r - 1; a >= 1; a >>= 1, z >>= 1) {
    top = nnmem__max_u64(top, o->sky_tag[a]); /* applies to slot l */
    top = nnmem__max_u64(top, o->sky_tag[z]); /* applies to slot r - 1 */
  }
  for (; l < r; l >>= 1, r >>= 1) { /* every slot of a canonical node */
    if (l & 1) top = nnmem__max_u64(top, o->sky_mx[l++]);
    if (r & 1) top = nnmem__max_u64(top, o->sky_mx[--r]);
  }
  return top;
}

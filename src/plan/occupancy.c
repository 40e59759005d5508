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
 *      [first, last) covers the elementary slots [rank(first), rank(last))
 *      (one LSD radix sort of the 2n endpoints with their buffers, ranks
 *      read off in one sweep: O(n) per byte in which times differ, no
 *      comparisons, no binary search: this runs once per ordering);
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
 * Gap search (query for a buffer of `size` bytes): the answer is the
 * gaps of the union that are at least `size` long, below its top (the
 * largest last hi of the sets):
 *   1. a set whose largest gap `maxgap` is below `size` is read as the
 *      one range [first lo, last hi) ("solid": no gap of it can hold the
 *      buffer, and filling a set's gaps < size changes no union gap
 *      >= size: such a union gap lies inside a gap >= size of every set);
 *   2. candidates C = {[0, top)};
 *   3. C is cut by the solid ranges, then by each other set, largest set
 *      first: each candidate loses the ranges of the set that meet it, and
 *      pieces shorter than `size` are dropped (they only shrink later);
 *      a set is reached by galloping from one candidate to the next, so
 *      its ranges between candidates are skipped in O(log);
 *   4. stop when C is empty; what is left is exactly the union's gaps
 *      >= size, sorted.
 * On a well-packed plan the union has few gaps (measured on 1M random
 * buffers: ~570 ranges in ~19 sets per query, ~50 candidates after the
 * largest set, ~6 at the end), so most ranges are skipped, not sorted.
 * maxgap is exact, kept by the insertion with `maxcnt`, the number of gaps
 * of that length (see rset_add). A comb of many 1-byte buffers with 1-byte
 * holes is one range for a 2-byte query.
 *
 * The cut: sets of different nodes may interleave (a comb of long-lived
 * buffers and the complementary comb of short-lived ones: each set is
 * fragmented, their union solid), so coarsening alone does not bound a
 * query. When the sets, solid ones counted as one range, hold more than
 * NNMEM__OCC_MAX_RANGES ranges the query answers no gap: the buffer goes
 * on top of everything live with it (valid, possibly higher than the best
 * fit). Traces of real models stay far below the cut (measured: at most
 * ~1,400 ranges in one query on the shared traces), so their plans are
 * the exact best fit. A query for UINT64_MAX bytes (nothing
 * fits a gap) always answers no gap, only the top.
 *
 * Skyline mode (the placement engine past a deadline): only "the highest
 * end among placed buffers live with i" is asked, from a max segment tree
 * over the same slots (sky[v], both values of a node side by side):
 * sky_tag(v) = an end applied to every slot of v
 * (set on the canonical nodes of an add), sky_mx(v) >= every end applied
 * to some slot of v (raised on the two boundary paths and, through the
 * tags, on the canonical nodes). top(i) = max of sky_mx over i's canonical
 * nodes and sky_tag over its two boundary paths (the ancestors of its
 * canonical nodes). O(log T) each, no range sets.
 *
 * Costs: add O(log T) set insertions; query O(log T) sets, at most
 * O(log T + NNMEM__OCC_MAX_RANGES) ranges read, O(c log(n / c)) per set of
 * n ranges cut with c candidates. A set insertion is a binary search plus
 * a memmove of the merged tail (and a rescan, O(n), only when the last
 * gap of the largest length goes). Both first prefetch every set they
 * will touch: they lie far apart and mostly out of cache, and the misses
 * taken together rather than one after another are most of the time of a
 * query (prefetch_sets). below(v) is kept only for the
 * nodes that are some buffer's canonical node (the only ones a query
 * reads), so short-lived buffers do not all pile into the root's set.
 * Invariants: each set is sorted by lo with hi(i) < lo(i + 1); maxgap is
 * the largest lo(i + 1) - hi(i) (0 if none) and maxcnt how many gaps have
 * that length.
 * Thread-safety: none (one map per planning run). */
#include <string.h>

#include "common/util.h"
#include "plan/occupancy.h"
#include "plan/radix.h"

/* At most 2 sets per tree level on the paths, 2 canonical nodes a level,
 * 33 levels (N <= 2^32). */
#define MAX_QUERY_SETS 136

/* How much of each set prefetch_sets asks for ahead of reading it. */
#define PREFETCH_BYTES 4096

typedef struct rset {
  nnmem__range_t *r;
  uint32_t n, cap;
  uint64_t maxgap; /* the largest r[i + 1].lo - r[i].hi (0 if none) */
  uint64_t maxcnt; /* how many gaps are maxgap long (0 if none) */
} rset_t;

/* A skyline node: mx >= every end applied to some slot of the node, tag
 * an end applied to every slot of it. */
typedef struct sky {
  uint64_t mx, tag;
} sky_t;

struct nnmem__occ {
  size_t nbuf;
  uint32_t leaves;     /* N, a power of two */
  uint32_t *slot_lo;   /* per buffer: first slot */
  uint32_t *slot_hi;   /* per buffer: one past the last slot */
  rset_t *cover;       /* 2N sets */
  rset_t *below;       /* 2N sets */
  uint8_t *queried;    /* 2N flags: a canonical node of some buffer, so its
                          below set is read by some query */
  sky_t *sky;          /* skyline mode: 2N nodes, a node's two values side by
                          side (one miss for both) */
  nnmem__range_t *tmp; /* query scratch: candidate gaps */
  size_t tmp_cap;
};

/* A lifetime endpoint: time t of buffer who / 2, its start when who is
 * even, its end when odd. */
typedef struct endpoint {
  uint64_t t;
  uint64_t who;
} endpoint_t;

nnmem_status_t nnmem__occ_create(const nnmem_problem_t *p, nnmem__occ_t **out) {
  return nnmem__occ_create_subset(p, NULL, nnmem_problem_count(p), out);
}

nnmem_status_t nnmem__occ_create_subset(const nnmem_problem_t *p,
                                        const uint32_t *idx, size_t n,
                                        nnmem__occ_t **out) {
  size_t m = 2 * n, nb = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  nnmem__occ_t *o = calloc(1, sizeof *o);
  endpoint_t *ev = malloc((m ? m : 1) * sizeof *ev);
  endpoint_t *tmp = malloc((m ? m : 1) * sizeof *tmp), *sorted = NULL;
  if (!o || !ev || !tmp) goto nomem;
  o->nbuf = nb; /* slots are kept by buffer index of the whole problem */
  o->slot_lo = malloc((nb ? nb : 1) * sizeof *o->slot_lo);
  o->slot_hi = malloc((nb ? nb : 1) * sizeof *o->slot_hi);
  if (!o->slot_lo || !o->slot_hi) goto nomem;
  for (size_t q = 0; q < n; q++) {
    size_t i = idx ? idx[q] : q;
    ev[2 * q] = (endpoint_t){b[i].first, 2 * i};
    ev[2 * q + 1] = (endpoint_t){b[i].last, 2 * i + 1};
  }
  sorted =
      nnmem__radix_sort(ev, tmp, m, sizeof *ev, offsetof(endpoint_t, t), 0);
  if (!sorted) goto nomem;
  uint32_t u = 0; /* step 1: rank = index among the distinct times */
  for (size_t k = 0; k < m; k++) {
    if (k > 0 && sorted[k].t != sorted[k - 1].t) u++;
    uint64_t w = sorted[k].who;
    if (w & 1)
      o->slot_hi[w / 2] = u;
    else
      o->slot_lo[w / 2] = u;
  }
  u += m > 0; /* the number of distinct times */
  free(ev);
  free(tmp);
  ev = tmp = NULL;
  o->leaves = 1;
  while (o->leaves < u)
    o->leaves *= 2;
  o->cover = calloc(2 * (size_t)o->leaves, sizeof *o->cover);
  o->below = calloc(2 * (size_t)o->leaves, sizeof *o->below);
  o->queried = calloc(2 * (size_t)o->leaves, 1);
  if (!o->cover || !o->below || !o->queried) goto nomem;
  for (size_t q = 0; q < n; q++) {
    size_t i = idx ? idx[q] : q;
    uint32_t l = o->slot_lo[i] + o->leaves, r = o->slot_hi[i] + o->leaves;
    for (; l < r; l >>= 1, r >>= 1) { /* the canonical nodes */
      if (l & 1) o->queried[l++] = 1;
      if (r & 1) o->queried[--r] = 1;
    }
  }
  *out = o;
  return NNMEM_OK;
nomem:
  free(ev);
  free(tmp);
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
  free(o->sky);
  free(o->tmp);
  free(o->slot_lo);
  free(o->slot_hi);
  free(o);
}

/* Sets s->maxgap and s->maxcnt from every gap of the set. O(n). */
static void rset_rescan(rset_t *s) {
  s->maxgap = 0, s->maxcnt = 0;
  for (uint32_t i = 1; i < s->n; i++) {
    uint64_t g = s->r[i].lo - s->r[i - 1].hi;
    if (g > s->maxgap) s->maxgap = g, s->maxcnt = 0;
    s->maxcnt += g == s->maxgap;
  }
}

/* Counts gap g (new) in the set's largest-gap record. */
static void rset_gap_in(rset_t *s, uint64_t g) {
  if (g > s->maxgap) s->maxgap = g, s->maxcnt = 0;
  s->maxcnt += g == s->maxgap;
}

/* Inserts [lo, hi) into the set, merging every range it touches. Keeps
 * s->maxgap exact with s->maxcnt, the number of gaps of that length: the
 * change replaces the old gaps between ranges a - 1 .. e by at most two
 * new ones, and the set is rescanned only when the last gap of the
 * largest length went (a comb of equal gaps is never rescanned). */
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
  if (e == a && s->n == s->cap) {
    uint32_t ncap = s->cap ? s->cap * 2 : 4;
    nnmem__range_t *r = realloc(s->r, ncap * sizeof *r);
    if (!r) return NNMEM_ERR_NOMEM;
    s->r = r;
    s->cap = ncap;
  }
  for (uint32_t i = a ? a : 1; i <= e && i < s->n; i++) /* old gaps go */
    s->maxcnt -= s->r[i].lo - s->r[i - 1].hi == s->maxgap;
  if (e > a) { /* merge [a, e) into slot a */
    if (s->r[a].lo < lo) lo = s->r[a].lo;
    if (s->r[e - 1].hi > hi) hi = s->r[e - 1].hi;
    memmove(&s->r[a + 1], &s->r[e], (s->n - e) * sizeof *s->r);
    s->n -= e - a - 1;
  } else {
    memmove(&s->r[a + 1], &s->r[a], (s->n - a) * sizeof *s->r);
    s->n++;
  }
  s->r[a] = (nnmem__range_t){lo, hi};
  if (s->maxcnt == 0 && s->maxgap) { /* the largest went: rescan */
    rset_rescan(s);
    return NNMEM_OK;
  }
  if (a > 0) rset_gap_in(s, lo - s->r[a - 1].hi); /* the new gaps */
  if (a + 1 < s->n) rset_gap_in(s, s->r[a + 1].lo - hi);
  return NNMEM_OK;
}

/* Asks the memory system for the first lines of each set's ranges before
 * they are read: the sets of one buffer lie far apart and are mostly out
 * of cache (planning in size order jumps around in time), so fetching
 * them together rather than one miss after another is most of the speed
 * of a query or an add. */
static void prefetch_sets(rset_t *const *sets, size_t k) {
  for (size_t a = 0; a < k; a++)
    __builtin_prefetch(sets[a]);
  for (size_t a = 0; a < k; a++) {
    const char *r = (const char *)sets[a]->r;
    size_t bytes = (size_t)sets[a]->n * sizeof *sets[a]->r;
    for (size_t off = 0; off < bytes && off < PREFETCH_BYTES; off += 64)
      __builtin_prefetch(r + off);
  }
}

nnmem_status_t nnmem__occ_add(nnmem__occ_t *o, size_t i, uint64_t lo,
                              uint64_t hi) {
  uint32_t n = o->leaves, l = o->slot_lo[i] + n, r = o->slot_hi[i] + n;
  rset_t *sets[2 * MAX_QUERY_SETS];
  size_t k = 0;
  /* the two boundary paths, each shared node once (same depth: walk both
   * up until they meet); below(v) only where some query reads it */
  uint32_t a = l, z = r - 1;
  for (; a != z; a >>= 1, z >>= 1) {
    if (o->queried[a]) sets[k++] = &o->below[a];
    if (o->queried[z]) sets[k++] = &o->below[z];
  }
  for (; a >= 1; a >>= 1)
    if (o->queried[a]) sets[k++] = &o->below[a];
  for (; l < r; l >>= 1, r >>= 1) { /* canonical nodes: queried */
    if (l & 1) {
      sets[k++] = &o->cover[l];
      sets[k++] = &o->below[l++];
    }
    if (r & 1) {
      sets[k++] = &o->cover[--r];
      sets[k++] = &o->below[r];
    }
  }
  prefetch_sets(sets, k);
  nnmem_status_t st = NNMEM_OK;
  for (size_t q = 0; q < k && !st; q++)
    st = rset_add(sets[q], lo, hi);
  return st;
}

/* Cuts the candidate gaps c[0..nc) (sorted, disjoint) by the ranges
 * r[0..n) (sorted, disjoint): writes to `out` the pieces of the
 * candidates that no range covers and that are at least `size` long,
 * sorted; returns their number. `out` has room for nc + n pieces. Finds
 * each candidate's first range by galloping from the previous one, so
 * ranges between candidates cost O(log) rather than one step each. */
static size_t cut_gaps(const nnmem__range_t *c, size_t nc,
                       const nnmem__range_t *r, uint32_t n, uint64_t size,
                       nnmem__range_t *out) {
  size_t k = 0;
  uint32_t j = 0;
  for (size_t q = 0; q < nc; q++) {
    uint64_t a = c[q].lo, b = c[q].hi, cur = a;
    if (j < n && r[j].hi <= a) { /* gallop to the first range with hi > a */
      uint32_t lo = j + 1, step = 1, hi = j + 1;
      while (hi < n && r[hi].hi <= a) {
        lo = hi + 1;
        step *= 2;
        hi = n - hi > step ? hi + step : n;
      }
      if (hi > n) hi = n;
      while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r[mid].hi <= a)
          lo = mid + 1;
        else
          hi = mid;
      }
      j = lo;
    }
    for (; j < n && r[j].lo < b; j++) {
      if (r[j].lo > cur && r[j].lo - cur >= size)
        out[k++] = (nnmem__range_t){cur, r[j].lo};
      if (r[j].hi > cur) cur = r[j].hi;
      if (r[j].hi >= b) break; /* it may reach into the next candidate */
    }
    if (cur < b && b - cur >= size) out[k++] = (nnmem__range_t){cur, b};
  }
  return k;
}

/* Calls fn(set) for every set a query of buffer `i` reads: cover(w) for the
 * nodes w on the paths from leaves l and r - 1 to the root, below(v) for
 * the canonical nodes v. */
#define FOR_QUERY_SETS(o, i, fn)                               \
  do {                                                         \
    uint32_t nl_ = (o)->leaves, l_ = (o)->slot_lo[i] + nl_,    \
             r_ = (o)->slot_hi[i] + nl_, a_ = l_, z_ = r_ - 1; \
    for (; a_ != z_; a_ >>= 1, z_ >>= 1) {                     \
      fn(&(o)->cover[a_]);                                     \
      fn(&(o)->cover[z_]);                                     \
    }                                                          \
    for (; a_ >= 1; a_ >>= 1)                                  \
      fn(&(o)->cover[a_]);                                     \
    for (; l_ < r_; l_ >>= 1, r_ >>= 1) {                      \
      if (l_ & 1) fn(&(o)->below[l_++]);                       \
      if (r_ & 1) fn(&(o)->below[--r_]);                       \
    }                                                          \
  } while (0)

/* The gap search of the file comment, its steps numbered the same (one
 * function, longer than most: the steps share the gathered sets). */
nnmem_status_t nnmem__occ_gaps(nnmem__occ_t *o, size_t i, uint64_t size,
                               nnmem__range_t **out, size_t *n, size_t *cap,
                               uint64_t *top_out) {
  const rset_t *sets[MAX_QUERY_SETS];
  nnmem__range_t solid[MAX_QUERY_SETS];
  size_t nsets = 0, nsolid = 0, bound = 0;
  uint64_t top = 0;
  /* 1. the sets, their top and the coarsened count (the cut) */
  rset_t *all[MAX_QUERY_SETS];
  size_t nall = 0;
#define GATHER_(s) (all[nall++] = (s))
  FOR_QUERY_SETS(o, i, GATHER_);
#undef GATHER_
  prefetch_sets(all, nall);
  for (size_t a = 0; a < nall; a++) {
    const rset_t *s = all[a];
    if (!s->n) continue;
    top = nnmem__max_u64(top, s->r[s->n - 1].hi);
    if (s->maxgap < size) { /* no gap of s can hold it: one range */
      solid[nsolid++] = (nnmem__range_t){s->r[0].lo, s->r[s->n - 1].hi};
      bound++;
    } else {
      sets[nsets++] = s;
      bound += s->n;
    }
  }
  *n = 0;
  *top_out = top;
  if (bound > NNMEM__OCC_MAX_RANGES || size == UINT64_MAX || top < size)
    return NNMEM_OK; /* the cut, or a query for the top only, or no room */
  /* 2. the fragmented sets by size, largest first (insertion sort: stable,
   * so deterministic; at most MAX_QUERY_SETS): dense sets leave the fewest
   * candidates for the others to cut */
  for (size_t a = 1; a < nsets; a++) {
    const rset_t *v = sets[a];
    size_t b = a;
    for (; b > 0 && sets[b - 1]->n < v->n; b--)
      sets[b] = sets[b - 1];
    sets[b] = v;
  }
  /* 3. candidates [0, top), cut by the solid ranges, then by each set */
  size_t need = 1 + bound; /* candidates: at most 1 + the ranges cut so far */
  nnmem_status_t st = nnmem__grow((void **)out, cap, need, sizeof **out);
  if (!st)
    st = nnmem__grow((void **)&o->tmp, &o->tmp_cap, need, sizeof *o->tmp);
  if (st) return st;
  nnmem__range_t *c = *out, *t = o->tmp;
  size_t nc = 1;
  c[0] = (nnmem__range_t){0, top};
  for (size_t a = 0; a < nsolid && nc; a++) { /* one range each */
    nc = cut_gaps(c, nc, &solid[a], 1, size, t);
    nnmem__range_t *sw = c;
    c = t, t = sw;
  }
  for (size_t a = 0; a < nsets && nc; a++) {
    nc = cut_gaps(c, nc, sets[a]->r, sets[a]->n, size, t);
    nnmem__range_t *sw = c;
    c = t, t = sw;
  }
  if (c != *out) memcpy(*out, c, nc * sizeof *c);
  *n = nc;
  return NNMEM_OK;
}

nnmem_status_t nnmem__occ_sky_start(nnmem__occ_t *o) {
  o->sky = calloc(2 * (size_t)o->leaves, sizeof *o->sky);
  return o->sky ? NNMEM_OK : NNMEM_ERR_NOMEM;
}

void nnmem__occ_sky_add(nnmem__occ_t *o, size_t i, uint64_t end) {
  uint32_t nl = o->leaves, l = o->slot_lo[i] + nl, r = o->slot_hi[i] + nl;
  for (uint32_t a = l, z = r - 1; a >= 1; a >>= 1, z >>= 1) {
    if (o->sky[a].mx < end) o->sky[a].mx = end; /* paths: a slot of i */
    if (o->sky[z].mx < end) o->sky[z].mx = end;
  }
  for (; l < r; l >>= 1, r >>= 1) { /* canonical nodes: every slot */
    if (l & 1) {
      if (o->sky[l].tag < end) o->sky[l].tag = end;
      l++;
    }
    if (r & 1) {
      --r;
      if (o->sky[r].tag < end) o->sky[r].tag = end;
    }
  }
}

uint64_t nnmem__occ_sky_top(const nnmem__occ_t *o, size_t i) {
  uint32_t nl = o->leaves, l = o->slot_lo[i] + nl, r = o->slot_hi[i] + nl;
  uint64_t top = 0;
  for (uint32_t a = l, z = r - 1; a >= 1; a >>= 1, z >>= 1) {
    top = nnmem__max_u64(top, o->sky[a].tag); /* applies to slot l */
    top = nnmem__max_u64(top, o->sky[z].tag); /* applies to slot r - 1 */
  }
  for (; l < r; l >>= 1, r >>= 1) { /* every slot of a canonical node */
    if (l & 1) top = nnmem__max_u64(top, o->sky[l++].mx);
    if (r & 1) top = nnmem__max_u64(top, o->sky[--r].mx);
  }
  return top;
}

/* search.c - exact / anytime placement search: a branch-and-bound decision
 * search ("do these buffers fit under height C?") and, on top of it, the
 * descent to the minimum height with proven lower bounds.
 *
 * The search enumerates canonical placements in the sense of MiniMalloc
 * (Moffitt, ASPLOS 2024, sections 3-4): every buffer sits at offset 0 or
 * directly on top of a placed buffer it meets in time, and buffers are
 * placed in nondecreasing (offset, preorder rank). Any packing can be pushed
 * down into such a form without growing, so a complete canonical search is
 * a proof of infeasibility.
 *
 * Decision search for capacity C over a set of buffers (nnmem__search_decide):
 *   1. time is cut into sections at the distinct lifetime endpoints; a cut
 *      no buffer crosses splits the set into partitions, solved one by one
 *      (their heights are independent);
 *   2. per buffer: minoff = the lowest offset it can take now (the aligned
 *      top of the placed buffers it meets); per section: floor = the top of
 *      the placed buffers in it (raised to the least minoff of its unplaced
 *      buffers) and total = the unplaced bytes that must live in it;
 *   3. a node picks the next buffer among the unplaced ones in increasing
 *      (minoff, rank) order, only keys >= the parent's (canonical order),
 *      only minoff < min over unplaced u of minoff(u) + size(u) (dominance:
 *      a lower buffer would be left under an avoidable gap) and only
 *      minoff + size <= C;
 *   4. placing b at x = minoff(b): the neighbours' minoffs rise to the
 *      aligned x + size(b), b's sections get floor x + size(b) and lose its
 *      bytes; then inference: every section needs max(floor, x) + total
 *      <= C (its unplaced bytes stack above the floor: they all meet each
 *      other), else backtrack;
 *   4b. zero-slack inference (cover_ok): a tight section (its bytes fill C)
 *      has no hole, so some unplaced buffer must start exactly at its floor
 *      h; the run of sections with floors <= h around it must then hold
 *      disjoint such candidates (minoff <= h, h aligned for them) covering
 *      every tight section whose floor is h: a reachability DP over section
 *      boundaries, run for the levels a placement changed (its new top over
 *      its span, and each new highest floor walking away from it on either
 *      side, whose runs lost it and its raised neighbours); only when
 *      every section is tight (on the challenging set, with some tight
 *      sections, it cut 4 of 110,723 nodes of B and cost it 50% more time);
 *   5. all changes go to an undo trail; depth-first, iterative (explicit
 *      frames) inside a group of buffers (step 7), so deep problems need no
 *      deep C stack;
 *   6. round robin over a portfolio of preorderings (PREORDERS: section
 *      total, width, area in three priorities with the whole node limit;
 *      overlaps first and start-time first with 1/8 of it, which place
 *      zero-slack problems the others do not) with node limits doubling
 *      from the set size, as MiniMalloc does: a run that ends without
 *      using its limit is complete (found or proven infeasible). When
 *      every section is tight, five of them (not WTA) run again, then
 *      branching on the lowest hole: the section at the lowest floor h
 *      with the fewest candidates (minoff == h) takes each of them in
 *      turn, as an exact-cover solver picks the column with the fewest
 *      rows (complete; offsets still nondecreasing). It places zero-slack
 *      problems the canonical order does not, and the other way round;
 *   7. dynamic decomposition (MiniMalloc section 4.4): a boundary between
 *      sections that no unplaced buffer crosses any more (a count per
 *      boundary, lowered by each placement) splits the unplaced buffers
 *      into groups that no longer interact; each is searched on its own
 *      from offset 0 (canonical order restarts per group), one after the
 *      other, and one infeasible group fails the node without trying the
 *      others' alternatives again. Nested up to MAX_NEST deep (C stack);
 *      the max-total tree masks the sections outside the group;
 *   8. hatless pruning (as in MiniMalloc's current code): an unplaced buffer
 *      with no unplaced neighbour keeps its minoff, so it must be placed
 *      before any key above its own: candidates stop at the least such key
 *      (and a node with one below its canonical lower key is dead).
 * Full mode (sets up to 4096 buffers): the least unplaced minoff of each
 * section is kept with its argmin (a section is scanned again only when its
 * argmin rises or is placed; sections of over RESCAN_MAX buffers keep a
 * stale, still valid, lower value instead); the sections that did not
 * change are checked at once through a max-total segment tree (they passed
 * at the parent, so only x + their total can fail); candidates are sorted
 * once per frame. Light mode (larger sets): only b's sections and its
 * neighbours are checked and candidates are picked by O(n) scans, so memory
 * stays O(n + overlaps + widths + trail).
 *
 * Minimum height (nnmem__search_improve): bound L = alignment-aware max-live;
 * best plan H from the heuristics; decision searches at L first, then by
 * bisection between the bound and H, each with half of the budget left; a
 * proven infeasible C raises the bound to C + 1 rounded up to the common
 * alignment (kind "search"); a found plan lowers H. Stops at H == L
 * (optimal) or when the budget, the clock or the stop flag ends it.
 *
 * Measured on zero-slack problems of 300 buffers (bench/plan --gen
 * zeroslack:SEED:300, 30 s each): 13 of 20 placed before step 4b and the
 * lowest-hole branching, 15 with step 4b, 17 with both.
 * Measured on the challenging set (bench/plan --search): decomposition
 * turns F from unplaced in 30 s into 381 nodes; a per-section suffix test
 * (the unplaced buffers above each minoff must fit below C) cut under 4%
 * of the nodes and was not kept.
 * Invariants (checkable, see search_check in debug builds): each placed
 * buffer b has off(b) % al(b) == 0 and off(b) + size(b) <= C; two placed
 * buffers that meet in time do not overlap; minoff(u) >= top of the placed
 * neighbours of u. The plan handed back is verified by the caller
 * (nnmem_plan_verify shares no code with this file).
 * Complexity: a placement costs O(neighbours + width + log sections +
 * rescanned sections); a node O(unplaced log unplaced) (full) or O(unplaced)
 * per candidate (light); a decomposition O(unplaced x zeroed boundaries);
 * memory O(n + overlaps + sum of widths + trail), plus O(n^2) candidate lists
 * at most in full mode. A set with more than 2^25 overlap pairs or section
 * entries is not searched (verdict unknown). Thread-safety: reentrant; all
 * state is local to one call. */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plan/place.h"
#include "plan/search.h"

#define NONE UINT32_MAX
#define FULL_MAX_BUFFERS 4096         /* above: light inference */
#define MAX_ENTRIES ((size_t)1 << 25) /* overlaps + widths a set may have */
#define CLOCK_EVERY 256
#define RESCAN_MAX 128 /* larger sections keep a stale unplaced floor */
#define PROGRESS_EVERY 4096
#define MAX_NEST 64 /* decompositions open at once (C stack depth) */

enum { TR_MINOFF, TR_FLOOR, TR_UMIN, TR_UARG };

typedef struct trail_entry {
  uint32_t kind, idx;
  uint64_t old;
} trail_entry_t;

typedef struct cand {
  uint64_t off;
  uint32_t rank, k;
} cand_t;

typedef struct frame {
  uint64_t lo_off; /* canonical: keys >= (lo_off, lo_rank) */
  uint32_t lo_rank;
  uint64_t last_off; /* last key tried here (exclusive), when tried */
  uint32_t last_rank;
  int tried;
  uint64_t min_h; /* dominance: candidates need minoff < min_h */
  uint32_t chosen;
  size_t mark; /* trail length before the chosen placement */
  size_t cand_at, n_cand, next_cand; /* full mode: sorted candidates */
  uint64_t iso_off; /* hatless: keys above (iso_off, iso_rank) are dead */
  uint32_t iso_rank;
} frame_t;

/* One decision search over one partition (local indices 0..n). */
typedef struct srch {
  size_t n, ns;
  uint64_t cap;
  int full;
  const uint32_t *ids; /* problem index of each local buffer */
  uint64_t *size, *al, *minoff, *off;
  uint32_t *s0, *s1;            /* section range [s0, s1) */
  uint32_t *ov_at, *ov;         /* neighbours (CSR) */
  uint32_t *sec_at, *sec;       /* buffers of each section (CSR) */
  uint64_t *floor, *total;      /* per section */
  uint64_t *total0;             /* initial totals (preorder keys) */
  uint32_t *rank, *next, *prev; /* unplaced list in rank order */
  uint32_t head;                /* first unplaced (NONE: all placed) */
  uint8_t *placed;
  uint64_t *umin;   /* per section: least minoff of its unplaced buffers */
  uint32_t *uarg;   /* ... and a buffer that has it (NONE: none unplaced) */
  uint32_t *nargs;  /* per buffer: sections whose uarg it is */
  uint32_t *raised; /* scratch of place(): neighbours whose minoff rose */
  int64_t *mt;      /* max-total tree: value = max(children) + own add */
  size_t mt_leaves;
  struct cand *cand; /* candidate lists of the frames (full mode) */
  size_t cand_cap;
  trail_entry_t *trail;
  size_t n_trail, trail_cap;
  frame_t *frames;
  uint32_t *cut;   /* per boundary t (sections t-1 | t): unplaced buffers
                      crossing it (first section < t < end section) */
  uint32_t *nun;   /* per buffer: its unplaced neighbours */
  uint32_t q0, q1; /* sections of the group being searched */
  int nest;        /* decompositions open on the stack */
  uint32_t *ustk;  /* decomposition scratch: saved unplaced lists */
  size_t ustk_n, ustk_cap;
  uint8_t *tight;   /* per section: its bytes fill the capacity exactly */
  uint8_t *reach;   /* cover(): reachable section boundaries (scratch) */
  int all_tight;    /* every section tight (full mode only) */
  int branch_cover; /* this run branches on the lowest hole */
} srch_t;

static void srch_free(srch_t *s) {
  void *arrs[] = {s->size,   s->al,     s->minoff, s->off,    s->s0,
                  s->s1,     s->ov_at,  s->ov,     s->sec_at, s->sec,
                  s->floor,  s->total,  s->total0, s->rank,   s->next,
                  s->prev,   s->placed, s->umin,   s->uarg,   s->trail,
                  s->frames, s->nargs,  s->mt,     s->cand,   s->raised,
                  s->cut,    s->nun,    s->ustk,   s->tight,  s->reach};
  for (size_t i = 0; i < sizeof arrs / sizeof *arrs; i++)
    free(arrs[i]);
  memset(s, 0, sizeof *s);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Index of `t` in the sorted unique array `ts` of `m` times. */
static uint32_t time_index(const uint64_t *ts, size_t m, uint64_t t) {
  size_t lo = 0, hi = m;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ts[mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (uint32_t)lo;
}

/* The sorted distinct lifetime endpoints of the set; *m their count. */
static uint64_t *set_times(const nnmem_buffer_t *b, const uint32_t *set,
                           size_t n, size_t *m) {
  uint64_t *ts = malloc((2 * n + 1) * sizeof *ts);
  if (!ts) return NULL;
  for (size_t k = 0; k < n; k++) {
    ts[2 * k] = b[set[k]].first;
    ts[2 * k + 1] = b[set[k]].last;
  }
  qsort(ts, 2 * n, sizeof *ts, cmp_u64);
  size_t u = 0;
  for (size_t k = 0; k < 2 * n; k++)
    if (u == 0 || ts[u - 1] != ts[k]) ts[u++] = ts[k];
  *m = u;
  return ts;
}

typedef struct by_first {
  uint64_t first;
  uint32_t k;
} by_first_t;

static int cmp_first(const void *a, const void *b) {
  const by_first_t *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return x->k < y->k ? -1 : x->k > y->k;
}

/* Neighbour lists (CSR): pairs that nnmem__search_conflict accepts, found
 * by a sweep in order of first step. NNMEM_ERR_OVERFLOW when there are more
 * than MAX_ENTRIES pairs (the search then declines). */
static nnmem_status_t build_overlaps(srch_t *s, const nnmem_buffer_t *b) {
  size_t n = s->n;
  by_first_t *o = malloc((n ? n : 1) * sizeof *o);
  uint32_t *deg = calloc(n + 1, sizeof *deg);
  nnmem_status_t st = o && deg ? NNMEM_OK : NNMEM_ERR_NOMEM;
  size_t pairs = 0;
  for (int pass = 0; pass < 2 && st == NNMEM_OK; pass++) {
    if (pass == 0) {
      for (size_t k = 0; k < n; k++)
        o[k] = (by_first_t){b[s->ids[k]].first, (uint32_t)k};
      qsort(o, n, sizeof *o, cmp_first);
    }
    for (size_t a = 0; a < n && st == NNMEM_OK; a++) {
      const nnmem_buffer_t *x = &b[s->ids[o[a].k]];
      for (size_t c = a + 1; c < n && o[c].first < x->last; c++) {
        if (!nnmem__search_conflict(x, &b[s->ids[o[c].k]])) continue;
        if (pass == 0) {
          deg[o[a].k]++, deg[o[c].k]++;
          if ((pairs += 2) > MAX_ENTRIES) st = NNMEM_ERR_OVERFLOW;
        } else {
          s->ov[s->ov_at[o[a].k] + deg[o[a].k]++] = o[c].k;
          s->ov[s->ov_at[o[c].k] + deg[o[c].k]++] = o[a].k;
        }
      }
    }
    if (pass == 0 && st == NNMEM_OK) {
      s->ov_at = malloc((n + 1) * sizeof *s->ov_at);
      s->ov = malloc((pairs ? pairs : 1) * sizeof *s->ov);
      if (!s->ov_at || !s->ov) st = NNMEM_ERR_NOMEM;
      for (size_t k = 0, at = 0; k <= n && st == NNMEM_OK; k++) {
        s->ov_at[k] = (uint32_t)at;
        if (k < n) at += deg[k];
        if (k < n) deg[k] = 0;
      }
    }
  }
  free(o);
  free(deg);
  return st;
}

/* Section data: ranges, member lists (CSR), totals. */
static nnmem_status_t build_sections(srch_t *s, const nnmem_buffer_t *b) {
  size_t m = 0, n = s->n;
  uint64_t *ts = set_times(b, s->ids, n, &m);
  if (!ts) return NNMEM_ERR_NOMEM;
  s->ns = m ? m - 1 : 0;
  size_t ns = s->ns, entries = 0;
  nnmem_status_t st = NNMEM_OK;
  for (size_t k = 0; k < n; k++) {
    s->s0[k] = time_index(ts, m, b[s->ids[k]].first);
    s->s1[k] = time_index(ts, m, b[s->ids[k]].last);
    entries += s->s1[k] - s->s0[k];
  }
  free(ts);
  if (entries > MAX_ENTRIES) return NNMEM_ERR_OVERFLOW;
  s->sec_at = calloc(ns + 2, sizeof *s->sec_at);
  s->sec = malloc((entries ? entries : 1) * sizeof *s->sec);
  s->floor = calloc(ns + 1, sizeof *s->floor);
  s->total = calloc(ns + 1, sizeof *s->total);
  s->total0 = calloc(ns + 1, sizeof *s->total0);
  s->umin = calloc(ns + 1, sizeof *s->umin);
  s->nargs = calloc(s->n + 1, sizeof *s->nargs);
  for (s->mt_leaves = 1; s->mt_leaves < ns + 1; s->mt_leaves *= 2) {
  }
  s->mt = calloc(4 * s->mt_leaves, sizeof *s->mt);
  s->uarg = malloc((ns + 1) * sizeof *s->uarg);
  s->cut = calloc(ns + 1, sizeof *s->cut);
  if (!s->sec_at || !s->sec || !s->floor || !s->total || !s->total0 ||
      !s->umin || !s->uarg || !s->nargs || !s->mt || !s->cut)
    return NNMEM_ERR_NOMEM;
  for (size_t k = 0; k < n; k++)
    for (uint32_t q = s->s0[k]; q < s->s1[k]; q++) {
      s->sec_at[q + 1]++;
      /* saturating: a total past 2^64 - 1 cannot fit any capacity */
      if (nnmem__add_overflow(s->total[q], s->size[k], &s->total[q]))
        s->total[q] = UINT64_MAX;
    }
  for (size_t q = 0; q < ns; q++)
    s->sec_at[q + 1] += s->sec_at[q];
  uint32_t *fill = calloc(ns + 1, sizeof *fill);
  if (!fill) return NNMEM_ERR_NOMEM;
  for (size_t k = 0; k < n; k++)
    for (uint32_t q = s->s0[k]; q < s->s1[k]; q++)
      s->sec[s->sec_at[q] + fill[q]++] = (uint32_t)k;
  free(fill);
  memcpy(s->total0, s->total, (ns + 1) * sizeof *s->total);
  return st;
}

static void srch_reset(srch_t *s);

/* Builds the search state for the set `ids[0..n)` (nonzero sizes). */
static nnmem_status_t srch_init(srch_t *s, const nnmem_problem_t *p,
                                const uint32_t *ids, size_t n, uint64_t align,
                                uint64_t cap) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  memset(s, 0, sizeof *s);
  s->n = n, s->ids = ids, s->cap = cap, s->full = n <= FULL_MAX_BUFFERS;
  size_t m = n ? n : 1;
  s->size = malloc(m * sizeof *s->size);
  s->al = malloc(m * sizeof *s->al);
  s->minoff = calloc(m, sizeof *s->minoff);
  s->off = calloc(m, sizeof *s->off);
  s->s0 = malloc(m * sizeof *s->s0);
  s->s1 = malloc(m * sizeof *s->s1);
  s->rank = malloc(m * sizeof *s->rank);
  s->next = malloc(m * sizeof *s->next);
  s->prev = malloc(m * sizeof *s->prev);
  s->placed = calloc(m, 1);
  s->frames = calloc(m + 1, sizeof *s->frames);
  s->raised = malloc(m * sizeof *s->raised);
  s->nun = malloc(m * sizeof *s->nun);
  if (!s->size || !s->al || !s->minoff || !s->off || !s->s0 || !s->s1 ||
      !s->rank || !s->next || !s->prev || !s->placed || !s->frames ||
      !s->raised || !s->nun)
    return NNMEM_ERR_NOMEM;
  for (size_t k = 0; k < n; k++) {
    const nnmem_buffer_t *x = &b[ids[k]];
    s->al[k] = nnmem__max_u64(x->align, align);
    if (nnmem__padded_size_checked(x, align, &s->size[k]))
      s->size[k] = UINT64_MAX; /* never fits: the search says infeasible */
  }
  nnmem_status_t st = build_sections(s, b);
  for (size_t q = 0; q < s->ns && st == NNMEM_OK; q++)
    if (s->total0[q] > (uint64_t)INT64_MAX / 4) s->full = 0; /* tree range */
  if (st == NNMEM_OK) st = build_overlaps(s, b);
  if (st == NNMEM_OK && !(s->reach = calloc(s->ns + 2, 1)))
    st = NNMEM_ERR_NOMEM;
  s->all_tight = s->full && s->ns > 0;
  for (size_t q = 0; q < s->ns && st == NNMEM_OK; q++)
    s->all_tight &= s->total0[q] == cap;
  if (st == NNMEM_OK) srch_reset(s);
  return st;
}

/* ---- preorderings ------------------------------------------------------ */

typedef struct pre_key {
  uint64_t k[3];
  uint32_t idx;
} pre_key_t;

static int cmp_pre(const void *a, const void *b) {
  const pre_key_t *x = a, *y = b;
  for (int i = 0; i < 3; i++)
    if (x->k[i] != y->k[i]) return x->k[i] > y->k[i] ? -1 : 1; /* desc */
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The portfolio of step 6: key letters (all descending; T section total,
 * W width in sections, A area, O overlaps, S start, earliest first), the
 * share of each round's node limit (limit >> shift) and the branching:
 * canonical (0) or on the lowest hole (1, cover_candidates; only when every
 * section is tight, skipped otherwise; there T is the same for all, so WTA
 * would repeat TWA). */
static const struct {
  const char *keys;
  int shift, cover;
} PREORDERS[] = {{"TWA", 0, 0}, {"AWT", 0, 0}, {"WTA", 0, 0}, {"OTW", 3, 0},
                 {"SAW", 3, 0}, {"SWA", 3, 0}, {"TWA", 0, 1}, {"AWT", 0, 1},
                 {"OTW", 3, 1}, {"SAW", 3, 1}, {"SWA", 3, 1}};
#define N_PREORDERS (sizeof PREORDERS / sizeof *PREORDERS)

/* Ranks the buffers by the three keys named in `spec` (PREORDERS; all
 * descending, index tie break) and resets the unplaced list to that order.
 */
static nnmem_status_t preorder(srch_t *s, const nnmem_buffer_t *b,
                               const char *spec) {
  size_t n = s->n;
  pre_key_t *keys = malloc((n ? n : 1) * sizeof *keys);
  if (!keys) return NNMEM_ERR_NOMEM;
  for (size_t k = 0; k < n; k++) {
    uint64_t t = 0, area;
    for (uint32_t q = s->s0[k]; q < s->s1[k]; q++)
      t = nnmem__max_u64(t, s->total0[q]);
    const nnmem_buffer_t *x = &b[s->ids[k]];
    if (nnmem__mul_overflow(s->size[k], x->last - x->first, &area))
      area = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
      char ch = spec[i];
      keys[k].k[i] = ch == 'T'   ? t
                     : ch == 'W' ? s->s1[k] - s->s0[k]
                     : ch == 'A' ? area
                     : ch == 'O' ? s->ov_at[k + 1] - s->ov_at[k]
                                 : UINT64_MAX - x->first; /* 'S' */
    }
    keys[k].idx = (uint32_t)k;
  }
  qsort(keys, n, sizeof *keys, cmp_pre);
  s->head = n ? keys[0].idx : NONE;
  for (size_t r = 0; r < n; r++) {
    uint32_t k = keys[r].idx;
    s->rank[k] = (uint32_t)r;
    s->prev[k] = r ? keys[r - 1].idx : NONE;
    s->next[k] = r + 1 < n ? keys[r + 1].idx : NONE;
  }
  free(keys);
  return NNMEM_OK;
}

/* ---- the search -------------------------------------------------------- */

static nnmem_status_t trail_push(srch_t *s, uint32_t kind, uint32_t idx,
                                 uint64_t old) {
  if (s->n_trail == s->trail_cap &&
      nnmem__grow((void **)&s->trail, &s->trail_cap, s->n_trail + 1,
                  sizeof *s->trail))
    return NNMEM_ERR_NOMEM;
  s->trail[s->n_trail++] = (trail_entry_t){kind, idx, old};
  return NNMEM_OK;
}

static void undo_to(srch_t *s, size_t mark) {
  while (s->n_trail > mark) {
    trail_entry_t *t = &s->trail[--s->n_trail];
    if (t->kind == TR_UARG) {
      if (s->uarg[t->idx] != NONE) s->nargs[s->uarg[t->idx]]--;
      s->uarg[t->idx] = (uint32_t)t->old;
      if (t->old != NONE) s->nargs[t->old]++;
      continue;
    }
    uint64_t *arr = t->kind == TR_MINOFF  ? s->minoff
                    : t->kind == TR_FLOOR ? s->floor
                                          : s->umin;
    arr[t->idx] = t->old;
  }
}

static void unlink_buf(srch_t *s, uint32_t k) {
  s->placed[k] = 1;
  if (s->prev[k] != NONE)
    s->next[s->prev[k]] = s->next[k];
  else
    s->head = s->next[k];
  if (s->next[k] != NONE) s->prev[s->next[k]] = s->prev[k];
}

static void relink_buf(srch_t *s, uint32_t k) { /* LIFO inverse of unlink */
  s->placed[k] = 0;
  if (s->prev[k] != NONE)
    s->next[s->prev[k]] = k;
  else
    s->head = k;
  if (s->next[k] != NONE) s->prev[s->next[k]] = k;
}

static int fits(const srch_t *s, uint64_t base, uint64_t total) {
  return base <= s->cap && total <= s->cap - base;
}

/* Recomputes umin/uarg of section q (its argmin rose or was placed). */
static int rescan(srch_t *s, uint32_t q) {
  uint64_t lo = UINT64_MAX;
  uint32_t arg = NONE;
  if (s->sec_at[q + 1] - s->sec_at[q] > RESCAN_MAX) {     /* keep the old */
    if (trail_push(s, TR_UARG, q, s->uarg[q])) return -1; /* lower bound */
    s->nargs[s->uarg[q]]--;
    s->uarg[q] = NONE;
    return 0;
  }
  /* minoffs only rise along a branch (the trail lowers them again with
   * umin), so no unplaced member is below the old umin: one at it ends the
   * scan */
  for (uint32_t c = s->sec_at[q]; c < s->sec_at[q + 1]; c++) {
    uint32_t j = s->sec[c];
    if (s->placed[j] || s->minoff[j] >= lo) continue;
    lo = s->minoff[j], arg = j;
    if (lo <= s->umin[q]) break;
  }
  if (trail_push(s, TR_UMIN, q, s->umin[q]) ||
      trail_push(s, TR_UARG, q, s->uarg[q]))
    return -1;
  if (s->uarg[q] != NONE) s->nargs[s->uarg[q]]--;
  s->umin[q] = lo, s->uarg[q] = arg;
  if (arg != NONE) s->nargs[arg]++;
  return 0;
}

/* Adds v to the totals of sections [l, r) in the max-total tree (heap
 * layout, leaves at mt_leaves + q): mt[t] = max of its children + lazy[t],
 * the add pending on all of t's subtree, so the root mt[1] is the largest
 * section total. Bottom-up: the O(log) nodes covering [l, r) take the add,
 * then the two boundary paths are recomputed. */
static void mt_add(srch_t *s, size_t l, size_t r, int64_t v) {
  size_t L = s->mt_leaves;
  int64_t *mt = s->mt, *lazy = s->mt + 2 * L;
  if (l >= r) return;
  size_t l0 = l + L, r0 = r + L - 1;
  for (l += L, r += L; l < r; l >>= 1, r >>= 1) {
    if (l & 1) mt[l] += v, lazy[l++] += v;
    if (r & 1) mt[--r] += v, lazy[r] += v;
  }
  for (size_t p = l0 >> 1; p >= 1; p >>= 1) {
    int64_t x = mt[2 * p], y = mt[2 * p + 1];
    mt[p] = (x > y ? x : y) + lazy[p];
  }
  for (size_t p = r0 >> 1; p >= 1; p >>= 1) {
    int64_t x = mt[2 * p], y = mt[2 * p + 1];
    mt[p] = (x > y ? x : y) + lazy[p];
  }
}

/* A decomposition searches the sections [a, b) of the group [q0, q1) on
 * their own: the others leave the tree's maximum while it does (mask -1)
 * and come back after (+1); every total fits in INT64_MAX / 4. */
#define MT_MASK (INT64_MAX / 4 + 1)
static void mt_mask(srch_t *s, uint32_t q0, uint32_t q1, uint32_t a, uint32_t b,
                    int64_t sign) {
  if (!s->full) return;
  mt_add(s, q0, a, sign * -MT_MASK);
  mt_add(s, b, q1, sign * -MT_MASK);
}

static void mt_build(srch_t *s) {
  size_t L = s->mt_leaves;
  memset(s->mt + 2 * L, 0, 2 * L * sizeof *s->mt);
  for (size_t q = 0; q < L; q++)
    s->mt[L + q] = q < s->ns ? (int64_t)s->total0[q] : INT64_MIN / 4;
  for (size_t t = L - 1; t >= 1; t--)
    s->mt[t] =
        s->mt[2 * t] > s->mt[2 * t + 1] ? s->mt[2 * t] : s->mt[2 * t + 1];
}

/* Checks section q after a change: its unplaced bytes above the highest
 * of its placed top, its least unplaced minoff and the current offset. */
static int section_ok(const srch_t *s, uint32_t q, uint64_t x) {
  uint64_t f = nnmem__max_u64(nnmem__max_u64(s->floor[q], x), s->umin[q]);
  return s->total[q] == 0 || fits(s, f, s->total[q]);
}

/* Step 4b, level cover (zero-slack sections): a tight section q (its
 * bytes fill C exactly) has no hole, so its free space starts at floor[q]
 * = h and some unplaced buffer must start exactly at h there. Such a
 * buffer j has minoff(j) <= h (the floors of all its sections are <= h:
 * minoffs only rise), h % al(j) == 0 and h + size(j) <= C, and buffers
 * at the same h are disjoint in time. So the run of sections with
 * floor <= h around `q` must contain disjoint candidate intervals that
 * cover each of its tight sections with floor == h: a reachability DP over
 * section boundaries (skipping is allowed over the other sections). Run
 * only when every section is tight (s->all_tight). Returns 0 when no such
 * cover exists. O(run + its section entries). */
static int cover_ok(srch_t *s, uint32_t q, uint64_t h) {
  if (q >= s->ns || s->floor[q] > h || h >= s->cap) return 1;
  uint32_t a = q, z = q + 1, must = 0;
  while (a > s->q0 && s->floor[a - 1] <= h)
    a--;
  while (z < s->q1 && s->floor[z] <= h)
    z++;
  for (uint32_t t = a; t < z; t++)
    must |= s->floor[t] == h && s->total[t] > 0;
  if (!must) return 1;
  memset(s->reach + a, 0, z - a + 1);
  s->reach[a] = 1;
  for (uint32_t t = a; t < z; t++) {
    if (!s->reach[t]) continue;
    if (!(s->floor[t] == h && s->total[t] > 0))
      s->reach[t + 1] = 1; /* skip a section that needs no cover at h */
    for (uint32_t c = s->sec_at[t]; c < s->sec_at[t + 1]; c++) {
      uint32_t j = s->sec[c];
      if (s->s0[j] != t || s->placed[j] || s->minoff[j] > h ||
          h % s->al[j] != 0 || !fits(s, h, s->size[j]))
        continue;
      s->reach[s->s1[j]] = 1; /* minoff <= h: s1[j] <= z */
    }
  }
  return s->reach[z];
}

/* The levels place(k) at [x, e) changed: e over k's span; and below e,
 * the runs that touched k's span lost k and its neighbours (their minoffs
 * rose to e) as candidates: walking away from k on either side, each new
 * highest floor h < e names such a run (the sections between have floors
 * <= h), the others are unchanged. */
static int covers_ok(srch_t *s, uint32_t k, uint64_t e) {
  if (!s->all_tight) return 1; /* some slack: measured too weak to pay */
  if (!cover_ok(s, s->s0[k], e)) return 0;
  uint64_t m = 0;
  for (uint32_t t = s->s0[k]; t-- > s->q0 && s->floor[t] < e;)
    if (s->floor[t] >= m) {
      if (!cover_ok(s, t, s->floor[t])) return 0;
      m = s->floor[t] + 1;
    }
  m = 0;
  for (uint32_t t = s->s1[k]; t < s->q1 && s->floor[t] < e; t++)
    if (s->floor[t] >= m) {
      if (!cover_ok(s, t, s->floor[t])) return 0;
      m = s->floor[t] + 1;
    }
  return 1;
}

/* Step 4: places k at minoff(k) (changes on the trail); returns 1 when
 * the inference still allows a solution, 0 when not, -1 on NOMEM. Full
 * mode keeps the unplaced floor of each section as its argmin (only a
 * section whose argmin rose or was placed is scanned again), checks the
 * sections that changed one by one and all others at once: unchanged
 * sections passed at the parent, so they fail now only if x + their total
 * > C, i.e. x + (the largest total, from the tree) > C. */
static int place(srch_t *s, uint32_t k, int *zeroed) {
  uint64_t x = s->minoff[k], e = x + s->size[k]; /* fits(): no overflow */
  s->off[k] = x;
  unlink_buf(s, k);
  *zeroed = 0;
  for (uint32_t q = s->s0[k]; q < s->s1[k]; q++) { /* unplace() undoes */
    s->total[q] -= s->size[k];
    if (q > s->s0[k]) *zeroed |= --s->cut[q] == 0;
  }
  for (uint32_t a = s->ov_at[k]; a < s->ov_at[k + 1]; a++)
    s->nun[s->ov[a]]--;
  if (s->full) {
    mt_add(s, s->s0[k], s->s1[k], -(int64_t)s->size[k]);
    int64_t t = s->mt[1];
    if (t > 0 && !fits(s, x, (uint64_t)t)) return 0; /* cheap */
  }
  for (uint32_t q = s->s0[k]; q < s->s1[k]; q++) {
    if (trail_push(s, TR_FLOOR, q, s->floor[q])) return -1;
    s->floor[q] = e;
    if (!fits(s, e, s->total[q])) return 0;
    if (s->full && s->uarg[q] == k && rescan(s, q)) return -1;
  }
  size_t n_raised = 0; /* all raises first: a section is then scanned once,
                          after every neighbour has its final minoff */
  for (uint32_t a = s->ov_at[k]; a < s->ov_at[k + 1]; a++) {
    uint32_t j = s->ov[a];
    if (s->placed[j] || s->minoff[j] >= e) continue;
    if (trail_push(s, TR_MINOFF, j, s->minoff[j])) return -1;
    if (nnmem__align_up(e, s->al[j], &s->minoff[j])) s->minoff[j] = UINT64_MAX;
    if (!fits(s, s->minoff[j], s->size[j])) return 0;
    s->raised[n_raised++] = j;
  }
  for (size_t a = 0; a < n_raised && s->full; a++) {
    uint32_t j = s->raised[a];
    for (uint32_t q = s->s0[j]; q < s->s1[j] && s->nargs[j]; q++)
      if (s->uarg[q] == j) {
        if (rescan(s, q)) return -1;
        if (!section_ok(s, q, x)) return 0;
      }
  }
  for (uint32_t q = s->s0[k]; q < s->s1[k]; q++)
    if (!section_ok(s, q, x)) return 0;
  if (s->full) {
    int64_t t = s->mt[1];
    if (t > 0 && !fits(s, x, (uint64_t)t)) return 0;
  }
  return covers_ok(s, k, e);
}

/* Takes back place(k) (whether it passed or not) but the unplaced list. */
static void unplace_state(srch_t *s, uint32_t k, size_t mark) {
  undo_to(s, mark);
  if (s->full) mt_add(s, s->s0[k], s->s1[k], (int64_t)s->size[k]);
  for (uint32_t q = s->s0[k]; q < s->s1[k]; q++) {
    s->total[q] += s->size[k];
    if (q > s->s0[k]) s->cut[q]++;
  }
  for (uint32_t a = s->ov_at[k]; a < s->ov_at[k + 1]; a++)
    s->nun[s->ov[a]]++;
  s->placed[k] = 0;
}

static void unplace(srch_t *s, uint32_t k, size_t mark) {
  unplace_state(s, k, mark);
  relink_buf(s, k);
}

static int cmp_cand(const void *a, const void *b) {
  const cand_t *x = a, *y = b;
  if (x->off != y->off) return x->off < y->off ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Whether unplaced k is a candidate of frame f (step 3's filters). */
static int is_candidate(const srch_t *s, const frame_t *f, uint32_t k) {
  uint64_t o = s->minoff[k];
  if (o >= f->min_h || !fits(s, o, s->size[k])) return 0;
  if (o > f->iso_off || (o == f->iso_off && s->rank[k] > f->iso_rank)) return 0;
  return o > f->lo_off || (o == f->lo_off && s->rank[k] >= f->lo_rank);
}

/* Step 3: the next candidate of frame f (smallest key above the last one
 * tried), or NONE. Full mode reads the list sorted at frame entry; light
 * mode scans the unplaced buffers (no O(n) list per depth). */
static uint32_t next_candidate(srch_t *s, frame_t *f) {
  if (s->full)
    return f->next_cand < f->n_cand ? s->cand[f->cand_at + f->next_cand++].k
                                    : NONE;
  uint32_t best = NONE;
  uint64_t bo = 0;
  for (uint32_t k = s->head; k != NONE; k = s->next[k]) {
    uint64_t o = s->minoff[k];
    if (!is_candidate(s, f, k)) continue;
    if (f->tried &&
        (o < f->last_off || (o == f->last_off && s->rank[k] <= f->last_rank)))
      continue;
    if (best == NONE || o < bo) best = k, bo = o; /* list is rank order */
  }
  return best;
}

static int cmp_cand_rank(const void *a, const void *b) {
  const cand_t *x = a, *y = b;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Step 3, all sections tight (zero slack): every section's free space
 * starts at its floor, so the lowest floor h of the group must be covered
 * there by exactly one buffer (minoff == h: no floor of the group is below
 * h). Branching on which buffer covers the section of level h with the
 * fewest such candidates is complete (each solution has exactly one) and
 * places in nondecreasing offsets as the canonical order does; it replaces
 * the canonical candidates (as an exact-cover solver picks its column with
 * the fewest rows). Candidates in rank order, stored from `at`. */
static nnmem_status_t cover_candidates(srch_t *s, frame_t *f, size_t at) {
  uint64_t h = UINT64_MAX;
  for (uint32_t q = s->q0; q < s->q1; q++)
    if (s->total[q] > 0 && s->floor[q] < h) h = s->floor[q];
  uint32_t best = NONE, best_n = UINT32_MAX;
  for (uint32_t q = s->q0; q < s->q1 && best_n > 0; q++) {
    if (s->total[q] == 0 || s->floor[q] != h) continue;
    uint32_t c = 0;
    for (uint32_t e = s->sec_at[q]; e < s->sec_at[q + 1] && c < best_n; e++) {
      uint32_t j = s->sec[e];
      c += !s->placed[j] && s->minoff[j] == h && fits(s, h, s->size[j]);
    }
    if (c < best_n) best_n = c, best = q;
  }
  if (nnmem__grow((void **)&s->cand, &s->cand_cap, at + s->n, sizeof *s->cand))
    return NNMEM_ERR_NOMEM;
  for (uint32_t e = best == NONE ? 0 : s->sec_at[best];
       best != NONE && e < s->sec_at[best + 1]; e++) {
    uint32_t j = s->sec[e];
    if (!s->placed[j] && s->minoff[j] == h && fits(s, h, s->size[j]))
      s->cand[at + f->n_cand++] = (cand_t){h, s->rank[j], j};
  }
  qsort(s->cand + at, f->n_cand, sizeof *s->cand, cmp_cand_rank);
  return NNMEM_OK;
}

/* Enters frame f: dominance height and (full mode) the sorted candidates,
 * stored from `at` in s->cand. */
static nnmem_status_t frame_enter(srch_t *s, frame_t *f, uint64_t lo_off,
                                  uint32_t lo_rank, size_t at) {
  f->lo_off = lo_off, f->lo_rank = lo_rank, f->tried = 0, f->chosen = NONE;
  f->cand_at = at, f->n_cand = 0, f->next_cand = 0;
  f->iso_off = UINT64_MAX, f->iso_rank = NONE;
  f->min_h = UINT64_MAX;
  if (s->branch_cover) return cover_candidates(s, f, at);
  uint64_t h = UINT64_MAX;
  for (uint32_t k = s->head; k != NONE; k = s->next[k]) {
    uint64_t e, o = s->minoff[k];
    if (!nnmem__add_overflow(o, s->size[k], &e) && e < h) h = e;
    if (s->nun[k] == 0 &&
        (o < f->iso_off || (o == f->iso_off && s->rank[k] < f->iso_rank)))
      f->iso_off = o, f->iso_rank = s->rank[k];
  }
  f->min_h = h;
  if (!s->full) return NNMEM_OK;
  if (nnmem__grow((void **)&s->cand, &s->cand_cap, at + s->n, sizeof *s->cand))
    return NNMEM_ERR_NOMEM;
  for (uint32_t k = s->head; k != NONE; k = s->next[k])
    if (is_candidate(s, f, k))
      s->cand[at + f->n_cand++] = (cand_t){s->minoff[k], s->rank[k], k};
  qsort(s->cand + at, f->n_cand, sizeof *s->cand, cmp_cand);
  return NNMEM_OK;
}

/* Charges one node; returns 0 to go on, 1 when budget, clock or stop flag
 * ends the search (ctl->stopped says which). */
static int charge(nnmem__search_ctl_t *c, uint64_t limit_left) {
  if (c->stop && *c->stop) return c->stopped = 1;
  if (c->node_budget == 0 || limit_left == 0) {
    if (c->node_budget == 0) c->stopped = 3;
    return 1;
  }
  c->node_budget--, c->nodes++;
  if (c->nodes % CLOCK_EVERY == 0 && c->deadline > 0 &&
      nnmem__now() > c->deadline)
    return c->stopped = 2;
  if (c->progress && c->nodes % PROGRESS_EVERY == 0) {
    nnmem_search_progress_t pr = {sizeof pr, nnmem__now() - c->t0,
                                  c->best,   c->bound,
                                  c->target, c->nodes};
    c->progress(c->progress_ctx, &pr);
  }
  return 0;
}

static nnmem_status_t dfs(srch_t *s, nnmem__search_ctl_t *c, uint64_t limit,
                          uint64_t *used, size_t d0, size_t at,
                          nnmem__verdict_t *v);

/* Makes the unplaced list the `m` buffers ustk[from..] (rank order). */
static void list_set(srch_t *s, size_t from, size_t m) {
  const uint32_t *u = s->ustk + from;
  s->head = m ? u[0] : NONE;
  for (size_t r = 0; r < m; r++) {
    s->prev[u[r]] = r ? u[r - 1] : NONE;
    s->next[u[r]] = r + 1 < m ? u[r + 1] : NONE;
  }
}

/* Step 7, dynamic decomposition: k (placed at frame d - 1) left boundaries
 * that no unplaced buffer crosses; the unplaced buffers then form groups
 * between them, independent of each other, solved one after the other from
 * frame d, each by its own canonical search (candidates from offset 0).
 * One group infeasible: all are taken back, the list restored, verdict
 * infeasible. *split = 0 when there is one group only (nothing done). */
static nnmem_status_t decompose(srch_t *s, nnmem__search_ctl_t *c,
                                uint64_t limit, uint64_t *used, size_t d,
                                size_t at, uint32_t k, int *split,
                                nnmem__verdict_t *v) {
  size_t base = s->ustk_n, m = 0;
  for (uint32_t u = s->head; u != NONE; u = s->next[u])
    m++;
  if (nnmem__grow((void **)&s->ustk, &s->ustk_cap, base + 2 * m,
                  sizeof *s->ustk))
    return NNMEM_ERR_NOMEM;
  uint32_t *u = s->ustk + base, *grp = u + m, g_lo = NONE, g_hi = 0;
  m = 0;
  for (uint32_t j = s->head; j != NONE; j = s->next[j]) {
    uint32_t g = 0; /* group: zero boundaries of k's span left of j */
    for (uint32_t t = s->s0[k] + 1; t <= s->s0[j] && t < s->s1[k]; t++)
      g += s->cut[t] == 0;
    grp[m] = g, u[m++] = j;
    g_lo = g < g_lo ? g : g_lo, g_hi = g > g_hi ? g : g_hi;
  }
  *split = g_lo != g_hi;
  if (!*split) return NNMEM_OK;
  s->ustk_n = base + 2 * m;
  uint32_t q0 = s->q0, q1 = s->q1, *sub = NULL;
  size_t dd = d;
  nnmem_status_t st = NNMEM_OK;
  s->nest++;
  *v = NNMEM__FOUND;
  for (uint32_t g = g_lo; g <= g_hi && *v == NNMEM__FOUND && !st; g++) {
    size_t from = s->ustk_n, mg = 0;
    if (nnmem__grow((void **)&s->ustk, &s->ustk_cap, from + m, sizeof *s->ustk))
      st = NNMEM_ERR_NOMEM;
    for (size_t r = 0; r < m && !st; r++) /* ustk may have moved */
      if (s->ustk[base + m + r] == g) s->ustk[from + mg++] = s->ustk[base + r];
    if (st || mg == 0) continue;
    sub = s->ustk + from;
    uint32_t lo = s->s0[sub[0]], hi = s->s1[sub[0]];
    for (size_t r = 1; r < mg; r++) {
      lo = s->s0[sub[r]] < lo ? s->s0[sub[r]] : lo;
      hi = s->s1[sub[r]] > hi ? s->s1[sub[r]] : hi;
    }
    list_set(s, from, mg);
    s->q0 = lo, s->q1 = hi, s->ustk_n = from + mg;
    mt_mask(s, q0, q1, lo, hi, 1);
    st = dfs(s, c, limit, used, dd, at, v);
    mt_mask(s, q0, q1, lo, hi, -1);
    s->ustk_n = from;
    if (!st && *v == NNMEM__FOUND) dd += mg;
  }
  s->nest--;
  s->q0 = q0, s->q1 = q1;
  if (!st && *v == NNMEM__INFEASIBLE) { /* take the found groups back */
    for (size_t i = dd; i-- > d;) {
      unplace_state(s, s->frames[i].chosen, s->frames[i].mark);
      s->frames[i].chosen = NONE;
    }
    list_set(s, base, m);
  }
  s->ustk_n = base;
  return st;
}

/* Depth-first search of the unplaced list from frame d0 with at most
 * `limit` nodes (*used: spent so far, shared by nested groups). */
static nnmem_status_t dfs(srch_t *s, nnmem__search_ctl_t *c, uint64_t limit,
                          uint64_t *used, size_t d0, size_t at,
                          nnmem__verdict_t *v) {
  size_t d = d0;
  if (s->head == NONE) {
    *v = NNMEM__FOUND;
    return NNMEM_OK;
  }
  if (frame_enter(s, &s->frames[d0], 0, 0, at)) return NNMEM_ERR_NOMEM;
  for (;;) {
    frame_t *f = &s->frames[d];
    if (f->chosen != NONE) { /* back from a child or a failed placement */
      unplace(s, f->chosen, f->mark);
      f->chosen = NONE;
    }
    uint32_t k = next_candidate(s, f);
    if (k == NONE) {
      if (d == d0) {
        *v = NNMEM__INFEASIBLE;
        return NNMEM_OK;
      }
      d--;
      continue;
    }
    f->tried = 1, f->last_off = s->minoff[k], f->last_rank = s->rank[k];
    f->chosen = k, f->mark = s->n_trail;
    int zeroed = 0, split = 0, r = place(s, k, &zeroed);
    if (r < 0) return NNMEM_ERR_NOMEM;
    if (!r) continue;
    if (s->head == NONE) {
      *v = NNMEM__FOUND;
      return NNMEM_OK;
    }
    if (charge(c, limit - *used)) {
      *v = NNMEM__UNKNOWN;
      return NNMEM_OK;
    }
    ++*used;
    if (zeroed && s->nest < MAX_NEST) {
      nnmem_status_t st = decompose(s, c, limit, used, d + 1,
                                    f->cand_at + f->n_cand, k, &split, v);
      if (st) return st;
      if (split && *v != NNMEM__INFEASIBLE) return NNMEM_OK;
      if (split) continue; /* the groups cannot all be placed: next one */
    }
    if (frame_enter(s, &s->frames[d + 1], f->last_off, f->last_rank,
                    f->cand_at + f->n_cand))
      return NNMEM_ERR_NOMEM;
    d++;
  }
}

/* Resets the state of a finished run (found: placed buffers stay placed
 * until this). */
static void srch_reset(srch_t *s) {
  undo_to(s, 0);
  memset(s->placed, 0, s->n ? s->n : 1);
  memset(s->minoff, 0, (s->n ? s->n : 1) * sizeof *s->minoff);
  memset(s->floor, 0, (s->ns + 1) * sizeof *s->floor);
  memcpy(s->total, s->total0, (s->ns + 1) * sizeof *s->total);
  memset(s->nargs, 0, (s->n + 1) * sizeof *s->nargs);
  for (size_t q = 0; q < s->ns; q++) {
    int any = s->sec_at[q + 1] > s->sec_at[q];
    s->umin[q] = any ? 0 : UINT64_MAX;
    s->uarg[q] = any ? s->sec[s->sec_at[q]] : NONE;
    if (any) s->nargs[s->uarg[q]]++;
  }
  if (s->full) mt_build(s);
  memset(s->cut, 0, (s->ns + 1) * sizeof *s->cut);
  for (size_t k = 0; k < s->n; k++) {
    for (uint32_t t = s->s0[k] + 1; t < s->s1[k]; t++)
      s->cut[t]++;
    s->nun[k] = s->ov_at[k + 1] - s->ov_at[k];
  }
  s->q0 = 0, s->q1 = (uint32_t)s->ns, s->nest = 0, s->ustk_n = 0;
}

/* Step 6 on one partition. */
static nnmem_status_t decide_part(const nnmem_problem_t *p, const uint32_t *ids,
                                  size_t n, uint64_t align, uint64_t cap,
                                  nnmem__search_ctl_t *c, uint64_t *offsets,
                                  nnmem__verdict_t *v) {
  srch_t s;
  nnmem_status_t st = srch_init(&s, p, ids, n, align, cap);
  *v = NNMEM__UNKNOWN;
  if (st == NNMEM_ERR_OVERFLOW) { /* too large to search: decline */
    srch_free(&s);
    return NNMEM_OK;
  }
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  uint64_t limit = n > 16 ? n : 16;
  while (st == NNMEM_OK && *v == NNMEM__UNKNOWN && !c->stopped) {
    limit = limit > UINT64_MAX / 2 ? UINT64_MAX : limit * 2;
    for (size_t w = 0; w < N_PREORDERS && st == NNMEM_OK; w++) {
      uint64_t used = 0, lim = limit >> PREORDERS[w].shift;
      if (PREORDERS[w].cover && !s.all_tight) continue;
      s.branch_cover = PREORDERS[w].cover;
      st = preorder(&s, b, PREORDERS[w].keys);
      if (st == NNMEM_OK) st = dfs(&s, c, lim > 16 ? lim : 16, &used, 0, 0, v);
      if (st == NNMEM_OK && *v == NNMEM__FOUND)
        for (size_t k = 0; k < n; k++)
          offsets[ids[k]] = s.off[k];
      if (st == NNMEM_OK) srch_reset(&s);
      if (*v != NNMEM__UNKNOWN || c->stopped) break;
    }
  }
  srch_free(&s);
  return st;
}

nnmem_status_t nnmem__search_decide(const nnmem_problem_t *p,
                                    const uint32_t *set, size_t n,
                                    uint64_t align, uint64_t capacity,
                                    nnmem__search_ctl_t *ctl,
                                    const uint64_t *warm, uint64_t *offsets,
                                    nnmem__verdict_t *verdict) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t m = 0;
  *verdict = NNMEM__FOUND;
  if (n == 0) return NNMEM_OK;
  uint64_t *ts = set_times(b, set, n, &m);
  uint32_t *cross = calloc(m + 1, sizeof *cross);
  uint32_t *part = malloc(n * sizeof *part), *ids = malloc(n * sizeof *ids);
  nnmem_status_t st = ts && cross && part && ids ? NNMEM_OK : NNMEM_ERR_NOMEM;
  /* step 1: a time index t (0 < t < m-1) is a cut when no buffer has
   * first < ts[t] < last */
  for (size_t k = 0; k < n && st == NNMEM_OK; k++) {
    uint32_t a = time_index(ts, m, b[set[k]].first);
    uint32_t z = time_index(ts, m, b[set[k]].last);
    cross[a + 1]++, cross[z]--;
  }
  for (size_t t = 1; t <= m && st == NNMEM_OK; t++)
    cross[t] += cross[t - 1];
  for (size_t t = 0, id = 0; t < m && st == NNMEM_OK; t++) {
    if (t > 0 && cross[t] == 0) id++;
    cross[t] = (uint32_t)id; /* now: partition of time index t */
  }
  for (size_t k = 0; k < n && st == NNMEM_OK; k++)
    part[k] = cross[time_index(ts, m, b[set[k]].first)];
  /* solve partitions in order; set order kept inside each */
  size_t k0 = 0;
  uint32_t *order = malloc(n * sizeof *order);
  if (!order && st == NNMEM_OK) st = NNMEM_ERR_NOMEM;
  for (size_t k = 0; k < n && st == NNMEM_OK; k++)
    order[k] = (uint32_t)k;
  /* counting sort by partition (stable) */
  if (st == NNMEM_OK) {
    uint32_t np = part[0];
    for (size_t k = 0; k < n; k++)
      np = part[k] > np ? part[k] : np;
    uint32_t *cnt = calloc((size_t)np + 2, sizeof *cnt);
    if (!cnt) st = NNMEM_ERR_NOMEM;
    for (size_t k = 0; k < n && cnt; k++)
      cnt[part[k] + 1]++;
    for (size_t q = 1; q <= (size_t)np + 1 && cnt; q++)
      cnt[q] += cnt[q - 1];
    for (size_t k = 0; k < n && cnt; k++)
      order[cnt[part[k]]++] = (uint32_t)k;
    free(cnt);
  }
  while (st == NNMEM_OK && k0 < n && *verdict != NNMEM__INFEASIBLE) {
    size_t k1 = k0;
    while (k1 < n && part[order[k1]] == part[order[k0]])
      k1++;
    int warm_fits = warm != NULL;
    for (size_t k = k0; k < k1; k++) {
      uint32_t i = set[order[k]];
      uint64_t e;
      ids[k - k0] = i;
      if (warm_fits &&
          (nnmem__add_overflow(warm[i], nnmem__padded_size(&b[i], align), &e) ||
           e > capacity))
        warm_fits = 0;
    }
    nnmem__verdict_t v = NNMEM__FOUND;
    if (warm_fits) /* this partition of the warm plan already fits */
      for (size_t k = 0; k < k1 - k0; k++)
        offsets[ids[k]] = warm[ids[k]];
    else
      st = decide_part(p, ids, k1 - k0, align, capacity, ctl, offsets, &v);
    if (st == NNMEM_OK && v != NNMEM__FOUND) *verdict = v;
    if (*verdict == NNMEM__UNKNOWN && ctl->stopped) break;
    k0 = k1;
  }
  free(order);
  free(ts);
  free(cross);
  free(part);
  free(ids);
  return st;
}

/* problem.c - the static allocation problem: a growable array of buffers
 * with optional string ids, an id index, the lower bound and the checker.
 *
 * Storage: `bufs` holds the records, `ids` one malloc'd string (or NULL) per
 * buffer. `index` is an open-addressing hash table (linear probing, power of
 * two slots, load <= 1/2) from id to the first buffer carrying it; later
 * duplicates are counted in `dup_ids` and reported by nnmem_problem_check.
 *
 * Lower bound (nnmem_problem_lower_bound):
 *   1. two events per buffer: +size at `first`, -size at `last`;
 *   2. sort by time, ends before starts at equal times (half-open);
 *   3. sweep, the running sum's maximum is the bound. O(n log n).
 *
 * Gaps and sub-buffers (nnmem/problem.h) live in `ext`, one record per
 * buffer allocated at the first nnmem_problem_add_gap / set_parent, so a
 * plain problem pays nothing: a buffer's gaps as a sorted array, its
 * parent index + 1 and relative offset. Active intervals (lifetime minus
 * gaps) are iterated by nnmem__problem_active_next without being stored.
 * The lower bound sweeps the active intervals of roots only.
 *
 * Invariants (nnmem_problem_check): last > first, align a power of two,
 * size rounded up to align fits 64 bits, ids unique; gaps inside the
 * lifetime, pairwise disjoint, some active step left; parent chains end
 * in a root (colour walk, O(n)); a child fits its parent, its align
 * divides the parent's and its offset, its active intervals lie inside
 * the parent's (binary search in the parent's gaps); two children of one
 * parent sharing bytes are never active together (children sorted by
 * (parent, offset), each compared with the later ones starting inside it).
 * Thread-safety: none for writers; const functions are safe concurrently. */
#include <stddef.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/problem.h"
#include "plan/problem_internal.h"
#include "plan/radix.h"

/* Per-buffer extras, allocated only once a gap or a parent is set. */
typedef struct ext {
  nnmem_interval_t *gaps; /* sorted by first */
  uint32_t ngaps, gap_cap;
  uint32_t parent; /* parent index + 1; 0 = root */
  uint64_t rel;    /* offset inside the parent */
} ext_t;

struct nnmem_problem {
  nnmem_buffer_t *bufs;
  ext_t *ext;        /* NULL, or one per buffer (cap entries) */
  size_t n_gapped;   /* buffers with at least one gap */
  size_t n_children; /* buffers with a parent */
  char **ids;
  size_t n, cap;
  uint32_t *index; /* slot -> buffer index + 1; 0 = empty */
  size_t index_cap;
  size_t index_used;
  size_t dup_ids;
  size_t first_dup; /* buffer index of the first duplicate */
};

nnmem_status_t nnmem_problem_create(nnmem_problem_t **out) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = calloc(1, sizeof **out);
  return *out ? NNMEM_OK : NNMEM_ERR_NOMEM;
}

void nnmem_problem_destroy(nnmem_problem_t *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n; i++)
    free(p->ids[i]);
  if (p->ext)
    for (size_t i = 0; i < p->n; i++)
      free(p->ext[i].gaps);
  free(p->ext);
  free(p->ids);
  free(p->bufs);
  free(p->index);
  free(p);
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

/* Returns the slot holding `id`, or the empty slot where it would go. */
static size_t index_slot(const nnmem_problem_t *p, const char *id) {
  size_t mask = p->index_cap - 1;
  size_t s = (size_t)hash_str(id) & mask;
  while (p->index[s] && strcmp(p->ids[p->index[s] - 1], id) != 0)
    s = (s + 1) & mask;
  return s;
}

static nnmem_status_t index_rehash(nnmem_problem_t *p) {
  size_t ncap = p->index_cap ? p->index_cap * 2 : 64;
  uint32_t *old = p->index;
  size_t ocap = p->index_cap;
  p->index = calloc(ncap, sizeof *p->index);
  if (!p->index) {
    p->index = old;
    return NNMEM_ERR_NOMEM;
  }
  p->index_cap = ncap;
  for (size_t i = 0; i < ocap; i++)
    if (old[i]) p->index[index_slot(p, p->ids[old[i] - 1])] = old[i];
  free(old);
  return NNMEM_OK;
}

static nnmem_status_t index_add(nnmem_problem_t *p, size_t i) {
  if ((p->index_used + 1) * 2 > p->index_cap) {
    nnmem_status_t st = index_rehash(p);
    if (st) return st;
  }
  size_t s = index_slot(p, p->ids[i]);
  if (p->index[s]) {
    if (p->dup_ids++ == 0) p->first_dup = i;
    return NNMEM_OK;
  }
  p->index[s] = (uint32_t)(i + 1);
  p->index_used++;
  return NNMEM_OK;
}

nnmem_status_t nnmem__problem_reserve(nnmem_problem_t *p, size_t n) {
  size_t cap = p->cap;
  nnmem_status_t st = nnmem__grow((void **)&p->bufs, &cap, n, sizeof *p->bufs);
  if (st) return st;
  cap = p->cap;
  st = nnmem__grow((void **)&p->ids, &cap, n, sizeof *p->ids);
  if (st) return st;
  if (p->ext) {
    size_t ecap = p->cap;
    st = nnmem__grow((void **)&p->ext, &ecap, n, sizeof *p->ext);
    if (st) return st;
  }
  p->cap = cap;
  while (st == NNMEM_OK && n * 2 > p->index_cap &&
         p->index_cap < ((size_t)1 << 40))
    st = index_rehash(p);
  return st;
}

size_t nnmem__problem_dup_ids(const nnmem_problem_t *p) {
  return p->dup_ids;
}

nnmem_status_t nnmem_problem_add(nnmem_problem_t *p, const char *id,
                                 uint64_t size, uint64_t align, uint64_t first,
                                 uint64_t last, size_t *index_out) {
  if (!p) return NNMEM_ERR_INVALID;
  if (align == 0) align = 1;
  if (last <= first || !nnmem__is_pow2(align)) return NNMEM_ERR_INVALID;
  uint64_t rounded;
  if (nnmem__align_up(size, align, &rounded)) return NNMEM_ERR_OVERFLOW;
  if (p->n >= UINT32_MAX - 1) return NNMEM_ERR_OVERFLOW;
  size_t cap = p->cap;
  nnmem_status_t st =
      nnmem__grow((void **)&p->bufs, &cap, p->n + 1, sizeof *p->bufs);
  if (st) return st;
  cap = p->cap;
  st = nnmem__grow((void **)&p->ids, &cap, p->n + 1, sizeof *p->ids);
  if (st) return st;
  if (p->ext) {
    size_t ecap = p->cap;
    st = nnmem__grow((void **)&p->ext, &ecap, p->n + 1, sizeof *p->ext);
    if (st) return st;
    if (ecap != cap) return NNMEM_ERR_NOMEM; /* same growth rule: never */
  }
  p->cap = cap;
  char *copy = NULL;
  if (id && !(copy = nnmem__strdup(id))) return NNMEM_ERR_NOMEM;
  size_t i = p->n;
  p->bufs[i] = (nnmem_buffer_t){size, align, first, last};
  p->ids[i] = copy;
  if (p->ext) p->ext[i] = (ext_t){0};
  if (copy && (st = index_add(p, i)) != NNMEM_OK) {
    free(copy);
    return st;
  }
  p->n++;
  if (index_out) *index_out = i;
  return NNMEM_OK;
}

size_t nnmem_problem_count(const nnmem_problem_t *p) {
  return p ? p->n : 0;
}

const nnmem_buffer_t *nnmem_problem_buffers(const nnmem_problem_t *p) {
  return p ? p->bufs : NULL;
}

const char *nnmem_problem_id(const nnmem_problem_t *p, size_t i) {
  return p && i < p->n ? p->ids[i] : NULL;
}

nnmem_status_t nnmem_problem_find(const nnmem_problem_t *p, const char *id,
                                  size_t *index_out) {
  if (!p || !id) return NNMEM_ERR_INVALID;
  if (!p->index_cap) return NNMEM_ERR_NOT_FOUND;
  size_t s = index_slot(p, id);
  if (!p->index[s]) return NNMEM_ERR_NOT_FOUND;
  if (index_out) *index_out = p->index[s] - 1;
  return NNMEM_OK;
}

/* A lifetime event: a step and the bytes that start or end there. */
typedef struct event {
  uint64_t time, bytes;
} event_t;

nnmem_status_t nnmem_problem_peak(const nnmem_problem_t *p, uint64_t align,
                                  uint64_t *bytes_out, uint64_t *step_out) {
  if (!p) return NNMEM_ERR_INVALID;
  if (bytes_out) *bytes_out = 0;
  if (step_out) *step_out = 0;
  if (p->n == 0) return NNMEM_OK;
  size_t m = 0, cap = p->n;
  if (p->ext)
    for (size_t i = 0; i < p->n; i++)
      cap += (size_t)p->ext[i].ngaps;
  /* starts and ends apart, each sorted by step (stable radix); at equal
   * steps ends come first: lifetimes are half-open */
  event_t *ev = malloc(4 * cap * sizeof *ev);
  if (!ev) return NNMEM_ERR_NOMEM;
  event_t *st_ev = ev, *en_ev = ev + cap, *tmp = ev + 2 * cap;
  for (size_t i = 0; i < p->n; i++) {
    uint64_t sz;
    if (p->ext && p->ext[i].parent) continue; /* inside its parent */
    if (nnmem__align_up(p->bufs[i].size,
                        nnmem__max_u64(p->bufs[i].align, align), &sz)) {
      free(ev);
      return NNMEM_ERR_OVERFLOW;
    }
    size_t k = 0;
    nnmem_interval_t a;
    while (nnmem__problem_active_next(p, i, &k, &a)) {
      st_ev[m] = (event_t){a.first, sz};
      en_ev[m++] = (event_t){a.last, sz};
    }
  }
  event_t *s = nnmem__radix_sort(st_ev, tmp, m, sizeof *ev, 0, 0);
  event_t *e = s ? nnmem__radix_sort(en_ev, s == st_ev ? tmp : st_ev, m,
                                     sizeof *ev, 0, 0)
                 : NULL;
  if (!e) {
    free(ev);
    return NNMEM_ERR_NOMEM;
  }
  /* live <= sum of sizes; sums above 2^64 - 1 are reported as overflow */
  uint64_t live = 0, best = 0, at = 0;
  nnmem_status_t st = NNMEM_OK;
  for (size_t i = 0, j = 0; i < m; i++) {
    for (; j < m && e[j].time <= s[i].time; j++)
      live -= e[j].bytes;
    if (nnmem__add_overflow(live, s[i].bytes, &live)) {
      st = NNMEM_ERR_OVERFLOW;
      break;
    }
    if (live > best) best = live, at = s[i].time;
  }
  free(ev);
  if (bytes_out) *bytes_out = best;
  if (step_out) *step_out = at;
  return st;
}

nnmem_status_t nnmem_problem_lower_bound(const nnmem_problem_t *p,
                                         uint64_t align, uint64_t *lb_out) {
  if (!p || !lb_out) return NNMEM_ERR_INVALID;
  return nnmem_problem_peak(p, align, lb_out, NULL);
}

nnmem_status_t nnmem_problem_total_bytes(const nnmem_problem_t *p,
                                         uint64_t align, uint64_t *total_out) {
  if (!p || !total_out) return NNMEM_ERR_INVALID;
  uint64_t total = 0;
  for (size_t i = 0; i < p->n; i++) {
    uint64_t sz;
    if (p->ext && p->ext[i].parent) continue; /* inside its parent */
    if (nnmem__align_up(p->bufs[i].size,
                        nnmem__max_u64(p->bufs[i].align, align), &sz) ||
        nnmem__add_overflow(total, sz, &total))
      return NNMEM_ERR_OVERFLOW;
  }
  *total_out = total;
  return NNMEM_OK;
}

nnmem_status_t nnmem_problem_height(const nnmem_problem_t *p,
                                   const uint64_t *offsets,
                                   uint64_t *height_out) {
  if (!p || (!offsets && p->n) || !height_out) return NNMEM_ERR_INVALID;
  uint64_t h = 0, end;
  for (size_t i = 0; i < p->n; i++) {
    if (nnmem__add_overflow(offsets[i], p->bufs[i].size, &end))
      return NNMEM_ERR_OVERFLOW;
    if (end > h) h = end;
  }
  *height_out = h;
  return NNMEM_OK;
}

nnmem_status_t nnmem_problem_check(const nnmem_problem_t *p,
                                   nnmem_diag_t *diag) {
  if (!p) return nnmem__diag(diag, NNMEM_ERR_INVALID, "problem is NULL");
  for (size_t i = 0; i < p->n; i++) {
    const nnmem_buffer_t *b = &p->bufs[i];
    const char *id = p->ids[i] ? p->ids[i] : "";
    uint64_t r;
    if (b->last <= b->first)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "buffer %zu '%s': lifetime [%llu,%llu) is empty", i,
                         id, (unsigned long long)b->first,
                         (unsigned long long)b->last);
    if (!nnmem__is_pow2(b->align))
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "buffer %zu '%s': alignment %llu is not a power of 2",
                         i, id, (unsigned long long)b->align);
    if (nnmem__align_up(b->size, b->align, &r))
      return nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
                         "buffer %zu '%s': size overflows when aligned", i, id);
  }
  if (p->dup_ids)
    return nnmem__diag(diag, NNMEM_ERR_DUPLICATE,
                       "buffer %zu: id '%s' is used more than once",
                       p->first_dup, p->ids[p->first_dup]);
  return nnmem__problem_check_extras(p, diag, NULL);
}

/* ---- gaps and sub-buffers ------------------------------------------------ */

static nnmem_status_t ext_ensure(nnmem_problem_t *p) {
  if (p->ext) return NNMEM_OK;
  p->ext = calloc(p->cap ? p->cap : 1, sizeof *p->ext);
  return p->ext ? NNMEM_OK : NNMEM_ERR_NOMEM;
}

nnmem_status_t nnmem_problem_add_gap(nnmem_problem_t *p, size_t i,
                                     uint64_t from, uint64_t to) {
  if (!p || i >= p->n || to <= from) return NNMEM_ERR_INVALID;
  nnmem_status_t st = ext_ensure(p);
  if (st) return st;
  ext_t *e = &p->ext[i];
  if (e->ngaps == UINT32_MAX) return NNMEM_ERR_OVERFLOW;
  size_t cap = e->gap_cap;
  st = nnmem__grow((void **)&e->gaps, &cap, (size_t)e->ngaps + 1,
                   sizeof *e->gaps);
  if (st) return st;
  e->gap_cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
  size_t k = e->ngaps; /* insertion: gaps usually arrive in order */
  while (k > 0 && e->gaps[k - 1].first > from) {
    e->gaps[k] = e->gaps[k - 1];
    k--;
  }
  e->gaps[k] = (nnmem_interval_t){from, to};
  if (e->ngaps++ == 0) p->n_gapped++;
  return NNMEM_OK;
}

size_t nnmem_problem_gaps(const nnmem_problem_t *p, size_t i,
                          const nnmem_interval_t **gaps_out) {
  if (gaps_out) *gaps_out = NULL;
  if (!p || !p->ext || i >= p->n) return 0;
  if (gaps_out) *gaps_out = p->ext[i].gaps;
  return p->ext[i].ngaps;
}

nnmem_status_t nnmem_problem_set_parent(nnmem_problem_t *p, size_t child,
                                        size_t parent, uint64_t rel_offset) {
  if (!p || child >= p->n || parent >= p->n || child == parent)
    return NNMEM_ERR_INVALID;
  nnmem_status_t st = ext_ensure(p);
  if (st) return st;
  if (!p->ext[child].parent) p->n_children++;
  p->ext[child].parent = (uint32_t)(parent + 1);
  p->ext[child].rel = rel_offset;
  return NNMEM_OK;
}

nnmem_status_t nnmem_problem_parent(const nnmem_problem_t *p, size_t i,
                                    size_t *parent_out,
                                    uint64_t *rel_offset_out) {
  if (!p || i >= p->n) return NNMEM_ERR_INVALID;
  if (!p->ext || !p->ext[i].parent) return NNMEM_ERR_NOT_FOUND;
  if (parent_out) *parent_out = p->ext[i].parent - 1;
  if (rel_offset_out) *rel_offset_out = p->ext[i].rel;
  return NNMEM_OK;
}

size_t nnmem_problem_gapped_count(const nnmem_problem_t *p) {
  return p ? p->n_gapped : 0;
}

size_t nnmem_problem_child_count(const nnmem_problem_t *p) {
  return p ? p->n_children : 0;
}

int nnmem__problem_active_next(const nnmem_problem_t *p, size_t i, size_t *k,
                               nnmem_interval_t *out) {
  const nnmem_buffer_t *b = &p->bufs[i];
  size_t ng = p->ext ? p->ext[i].ngaps : 0;
  const nnmem_interval_t *g = ng ? p->ext[i].gaps : NULL;
  while (*k <= ng) {
    size_t j = (*k)++;
    uint64_t lo = j == 0 ? b->first : g[j - 1].last;
    uint64_t hi = j == ng ? b->last : g[j].first;
    if (lo < hi) {
      *out = (nnmem_interval_t){lo, hi};
      return 1;
    }
  }
  return 0;
}

nnmem_status_t nnmem__problem_check_gaps(const nnmem_problem_t *p, size_t i,
                                         const char **why, size_t *gap) {
  size_t ng = p->ext ? p->ext[i].ngaps : 0;
  const nnmem_buffer_t *b = &p->bufs[i];
  uint64_t covered = 0;
  for (size_t k = 0; k < ng; k++) {
    const nnmem_interval_t *g = &p->ext[i].gaps[k];
    *gap = k;
    if (g->first < b->first || g->last > b->last) {
      *why = "lies outside the lifetime";
      return NNMEM_ERR_INVALID;
    }
    if (k > 0 && g->first < p->ext[i].gaps[k - 1].last) {
      *why = "overlaps the gap before it";
      return NNMEM_ERR_INVALID;
    }
    covered += g->last - g->first;
  }
  if (ng && covered >= b->last - b->first) {
    *gap = ng - 1;
    *why = "leaves the buffer no active step";
    return NNMEM_ERR_INVALID;
  }
  return NNMEM_OK;
}

/* Is [a, b) inside one active interval of buffer `i`? O(log gaps). */
static int active_covers(const nnmem_problem_t *p, size_t i, uint64_t a,
                         uint64_t b) {
  const nnmem_buffer_t *bu = &p->bufs[i];
  if (a < bu->first || b > bu->last) return 0;
  size_t ng = p->ext[i].ngaps, lo = 0, hi = ng;
  const nnmem_interval_t *g = p->ext[i].gaps;
  while (lo < hi) { /* first gap ending after a */
    size_t mid = lo + (hi - lo) / 2;
    if (g[mid].last <= a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo == ng || g[lo].first >= b;
}

/* Sub-buffer rules for child i (parent set). */
static nnmem_status_t check_child(const nnmem_problem_t *p, size_t i,
                                  nnmem_diag_t *diag) {
  size_t q = p->ext[i].parent - 1;
  uint64_t rel = p->ext[i].rel, end;
  const nnmem_buffer_t *c = &p->bufs[i], *pb = &p->bufs[q];
  const char *id = p->ids[i] ? p->ids[i] : "";
  const char *pid = p->ids[q] ? p->ids[q] : "";
  if (nnmem__add_overflow(rel, c->size, &end) || end > pb->size)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "buffer %zu '%s': sub-buffer at offset %llu, size %llu "
                       "does not fit inside its parent %zu '%s' (size %llu)",
                       i, id, (unsigned long long)rel,
                       (unsigned long long)c->size, q, pid,
                       (unsigned long long)pb->size);
  if (c->align > pb->align || rel % c->align)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "buffer %zu '%s': alignment %llu is inconsistent with "
                       "its parent %zu '%s' (alignment %llu, relative offset "
                       "%llu)",
                       i, id, (unsigned long long)c->align, q, pid,
                       (unsigned long long)pb->align, (unsigned long long)rel);
  size_t k = 0;
  nnmem_interval_t a;
  while (nnmem__problem_active_next(p, i, &k, &a))
    if (!active_covers(p, q, a.first, a.last))
      return nnmem__diag(
          diag, NNMEM_ERR_INVALID,
          "buffer %zu '%s': active on [%llu,%llu) but its "
          "parent %zu '%s' (live [%llu,%llu)) is not active "
          "all that time (the parent dies first or has a gap)",
          i, id, (unsigned long long)a.first, (unsigned long long)a.last, q,
          pid, (unsigned long long)pb->first, (unsigned long long)pb->last);
  return NNMEM_OK;
}

/* No parent chain loops: colour walk, O(n). */
static nnmem_status_t check_cycles(const nnmem_problem_t *p, nnmem_diag_t *diag,
                                   size_t *bad_index) {
  unsigned char *state = calloc(p->n ? p->n : 1, 1); /* 0 new 1 path 2 ok */
  if (!state) return NNMEM_ERR_NOMEM;
  nnmem_status_t st = NNMEM_OK;
  for (size_t i = 0; i < p->n && st == NNMEM_OK; i++) {
    size_t j = i;
    while (state[j] == 0 && p->ext[j].parent) {
      state[j] = 1;
      j = p->ext[j].parent - 1;
    }
    if (state[j] == 1 && bad_index) *bad_index = j;
    if (state[j] == 1)
      st = nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "buffer %zu '%s': its chain of parents loops back to "
                       "itself",
                       j, p->ids[j] ? p->ids[j] : "");
    for (j = i; state[j] == 1; j = p->ext[j].parent - 1)
      state[j] = 2;
    state[j] = 2;
  }
  free(state);
  return st;
}

int nnmem__problem_active_meet(const nnmem_problem_t *p, size_t a, size_t b) {
  if (p->bufs[a].last <= p->bufs[b].first ||
      p->bufs[b].last <= p->bufs[a].first)
    return 0; /* the lifetimes do not even meet */
  size_t ka = 0, kb = 0;
  nnmem_interval_t x, y;
  int hx = nnmem__problem_active_next(p, a, &ka, &x);
  int hy = nnmem__problem_active_next(p, b, &kb, &y);
  while (hx && hy) {
    if (x.first < y.last && y.first < x.last) return 1;
    if (x.last <= y.last)
      hx = nnmem__problem_active_next(p, a, &ka, &x);
    else
      hy = nnmem__problem_active_next(p, b, &kb, &y);
  }
  return 0;
}

typedef struct kid {
  size_t parent, idx;
  uint64_t rel, end;
} kid_t;

static int kid_cmp(const void *a, const void *b) {
  const kid_t *x = a, *y = b;
  if (x->parent != y->parent) return x->parent < y->parent ? -1 : 1;
  if (x->rel != y->rel) return x->rel < y->rel ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Two children of one parent whose bytes overlap must never be active at
 * the same step: no plan could separate them. Children sorted by (parent,
 * offset); each is compared with the later ones that start inside it
 * (O(k log k) when the slices are disjoint, as Concat inputs are). */
static nnmem_status_t check_siblings(const nnmem_problem_t *p,
                                     nnmem_diag_t *diag, size_t *bad_index) {
  kid_t *k = malloc(p->n_children * sizeof *k);
  if (!k) return NNMEM_ERR_NOMEM;
  size_t m = 0;
  for (size_t i = 0; i < p->n; i++)
    if (p->ext[i].parent && p->bufs[i].size)
      k[m++] = (kid_t){p->ext[i].parent - 1, i, p->ext[i].rel,
                       p->ext[i].rel + p->bufs[i].size};
  qsort(k, m, sizeof *k, kid_cmp);
  nnmem_status_t st = NNMEM_OK;
  for (size_t a = 0; a < m && st == NNMEM_OK; a++)
    for (size_t b = a + 1; b < m && k[b].parent == k[a].parent &&
                           k[b].rel < k[a].end && st == NNMEM_OK;
         b++) {
      if (!nnmem__problem_active_meet(p, k[a].idx, k[b].idx)) continue;
      size_t i = k[b].idx, j = k[a].idx, q = k[a].parent;
      if (bad_index) *bad_index = i;
      st = nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "buffer %zu '%s': sub-buffer overlaps its sibling %zu "
                       "'%s' inside parent %zu '%s' while both are active",
                       i, p->ids[i] ? p->ids[i] : "", j,
                       p->ids[j] ? p->ids[j] : "", q,
                       p->ids[q] ? p->ids[q] : "");
    }
  free(k);
  return st;
}

nnmem_status_t nnmem__problem_check_extras(const nnmem_problem_t *p,
                                           nnmem_diag_t *diag,
                                           size_t *bad_index) {
  if (!p->ext) return NNMEM_OK;
  for (size_t i = 0; i < p->n; i++) {
    if (bad_index) *bad_index = i;
    const char *why = NULL;
    size_t k = 0;
    if (nnmem__problem_check_gaps(p, i, &why, &k)) {
      const nnmem_interval_t *g = &p->ext[i].gaps[k];
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "buffer %zu '%s': gap [%llu,%llu) %s (lifetime "
                         "[%llu,%llu))",
                         i, p->ids[i] ? p->ids[i] : "",
                         (unsigned long long)g->first,
                         (unsigned long long)g->last, why,
                         (unsigned long long)p->bufs[i].first,
                         (unsigned long long)p->bufs[i].last);
    }
  }
  if (!p->n_children) return NNMEM_OK;
  nnmem_status_t st = check_cycles(p, diag, bad_index);
  for (size_t i = 0; i < p->n && st == NNMEM_OK; i++)
    if (p->ext[i].parent) {
      if (bad_index) *bad_index = i;
      st = check_child(p, i, diag);
    }
  if (st == NNMEM_OK) st = check_siblings(p, diag, bad_index);
  return st;
}

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
 * Invariants (nnmem_problem_check): last > first, align a power of two,
 * size rounded up to align fits 64 bits, ids unique.
 * Thread-safety: none for writers; const functions are safe concurrently. */
#include <stddef.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/problem.h"
#include "plan/radix.h"

struct nnmem_problem {
  nnmem_buffer_t *bufs;
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
  p->cap = cap;
  char *copy = NULL;
  if (id && !(copy = nnmem__strdup(id))) return NNMEM_ERR_NOMEM;
  size_t i = p->n;
  p->bufs[i] = (nnmem_buffer_t){size, align, first, last};
  p->ids[i] = copy;
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

typedef struct event {
  uint64_t time;
  uint64_t bytes;
  int start; /* 0 = end, 1 = start: ends sort first at equal times */
} event_t;

static int event_cmp(const void *a, const void *b) {
  const event_t *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  return x->start - y->start;
}

nnmem_status_t nnmem_problem_lower_bound(const nnmem_problem_t *p,
                                         uint64_t align, uint64_t *lb_out) {
  if (!p || !lb_out) return NNMEM_ERR_INVALID;
  *lb_out = 0;
  if (p->n == 0) return NNMEM_OK;
  event_t *ev = malloc(2 * p->n * sizeof *ev);
  event_t *tmp = malloc(2 * p->n * sizeof *tmp), *sorted = NULL;
  if (!ev || !tmp) {
    free(ev);
    free(tmp);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < p->n; i++) { /* the ends first, then the starts */
    uint64_t sz;
    if (nnmem__align_up(p->bufs[i].size,
                        nnmem__max_u64(p->bufs[i].align, align), &sz)) {
      free(ev);
      free(tmp);
      return NNMEM_ERR_OVERFLOW;
    }
    ev[i] = (event_t){p->bufs[i].last, sz, 0};
    ev[p->n + i] = (event_t){p->bufs[i].first, sz, 1};
  }
  /* stable by time: ends stay before starts at equal times (event_cmp's
   * order); O(n) per byte of time that differs */
  sorted = nnmem__radix_sort(ev, tmp, 2 * p->n, sizeof *ev,
                             offsetof(event_t, time), 0);
  if (!sorted) qsort(ev, 2 * p->n, sizeof *ev, event_cmp);
  if (sorted && sorted != ev) memcpy(ev, sorted, 2 * p->n * sizeof *ev);
  free(tmp);
  /* live <= sum of sizes; sums above 2^64 saturate (reported as overflow) */
  uint64_t live = 0, best = 0;
  nnmem_status_t st = NNMEM_OK;
  for (size_t i = 0; i < 2 * p->n; i++) {
    if (ev[i].start) {
      if (nnmem__add_overflow(live, ev[i].bytes, &live)) {
        st = NNMEM_ERR_OVERFLOW;
        break;
      }
      if (live > best) best = live;
    } else {
      live -= ev[i].bytes;
    }
  }
  free(ev);
  *lb_out = best;
  return st;
}

nnmem_status_t nnmem_problem_total_bytes(const nnmem_problem_t *p,
                                         uint64_t align, uint64_t *total_out) {
  if (!p || !total_out) return NNMEM_ERR_INVALID;
  uint64_t total = 0;
  for (size_t i = 0; i < p->n; i++) {
    uint64_t sz;
    if (nnmem__align_up(p->bufs[i].size,
                        nnmem__max_u64(p->bufs[i].align, align), &sz) ||
        nnmem__add_overflow(total, sz, &total))
      return NNMEM_ERR_OVERFLOW;
  }
  *total_out = total;
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
  return NNMEM_OK;
}

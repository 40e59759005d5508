/* planned.c - record a run's allocations; serve a later run from a plan of
 * them (nnmem/planned.h).
 *
 * Recording: every allocation appends {size, first = step, last = 0}; an
 * address -> buffer map (open addressing, linear probing, backward-shift
 * deletion) finds the buffer on free, which sets last = step + 1.
 *
 * Serving, built once from the plan:
 *   steps[s]  {start: the first buffer whose first step is s (buffers are
 *             in recording order, so step s owns start .. steps[s+1].start
 *             - 1); ended: how many ends[] entries have last <= s};
 *   req[b]    {size, offset} of buffer b, in request order;
 *   ends[]    {offset, last step, buffer, done} in the expected free order:
 *             by planned last step, then buffer; pos[b] is b's entry;
 *   oslot[]   a static hash of the distinct offsets {offset + 1, the
 *             buffers planned there: obuf[lo .. lo + count), ascending};
 *   cur, end  steps[step].start + k and steps[step + 1].start, kept by the step
 *             boundary, so a request reads neither steps[] nor k;
 *   fc        the first entry of ends[] not done (every one before it is
 *             freed or was never served): the free the run should make
 *             next if it frees in the recorded order.
 *
 *   request k of step s --> steps[s].start + k = i --> req[i] {size, off}
 *   free(base + off) == base + ends[j].off, j in fc .. fc + 15, same last
 *                                       --> ends[j].done, fc moves on
 *   any other free in range --hash(off)--> obuf: the buffer at off with the
 *                                           largest index < cur
 *
 * A request (O(1), no hashing, nothing written but cur):
 *   1. i = cur (= steps[step].start + k, k = requests so far in the step);
 *   2. if serving is on, i < end and req[i].size == size: cur++ and return
 *      base + req[i].off (the inline fast path: no register saved);
 *   3. otherwise (out of line) cur++ all the same, mark ends[pos[i]] done
 *      (b will never be freed from the plan), count the divergence and
 *      return nnmem_alloc(a, size).
 * A free, fast path: the pointer is base + the offset of one of the first
 * FREE_SCAN entries from fc with the same planned end as ends[fc] (the
 * frees due in this step, in any order), not done, whose buffer has been
 * requested (index < cur): done, and fc moves over the done entries (a run
 * that frees as recorded reads ends[] nearly sequentially and touches no
 * table at random). Otherwise, inside the plan's range: the offset's
 * buffers; at most one requested buffer there can be live (the verified
 * plan gives buffers at one offset disjoint lifetimes and none is served
 * while an earlier one overstays), the one with the largest index < cur;
 * not done: it is freed; done: misuse (counted, ignored).
 * At each step end, the requests the step planned but never got are done,
 * and every entry with last <= the new step must be done: as every entry
 * before fc is, one compare, fc >= steps[step].ended (past the plan's
 * steps, a cursor over ends[]); one that is not disables serving.
 * Each buffer is requested at most once (steps and cur only grow), so a
 * served buffer is never live twice.
 *
 * Invariant (why served blocks never overlap): a block is served at step s
 * only if no served block with a planned last <= s is live (checked at the
 * step boundary) - so every live served block is live in the plan at s,
 * and the verified plan places those disjointly.
 *
 * Thread-safety: none inside; one run per object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/io.h"
#include "nnmem/plan.h"
#include "nnmem/planned.h"
#include "nnmem/planned_inline.h"
#include "runtime/pool_internal.h"

/* How many entries of a step's expected frees the free fast path scans
 * (frees of one step may come in any order). */
enum { FREE_SCAN = 16 };

/* nnmem_planned_end_t.done: 0 while the buffer may still be served or is
 * live; freed; or requested but served by the pools / never requested
 * (it will never be freed from the plan). */
enum { DONE_FREED = 1, DONE_UNSERVED = 2 };

typedef struct planned_buf {
  uint64_t size, first, last; /* recording: last 0 while live */
} planned_buf_t;

/* Types of the fast paths (planned_end_t: one buffer's end in the
 * expected free order; planned_step_t: a step's first request and how
 * many ends[] entries end by it; planned_req_t: a request) are public in
 * nnmem/planned_inline.h, with the object's first fields. */
typedef nnmem_planned_end_t planned_end_t;
typedef nnmem_planned_step_t planned_step_t;
typedef nnmem_planned_req_t planned_req_t;

/* One distinct offset of the plan: key = offset + 1 (0: empty entry); the
 * buffers planned at it are obuf[lo .. lo + count), ascending. Read only
 * by frees off the recorded order. */
typedef struct planned_slot {
  uint64_t key;
  uint32_t lo, count;
} planned_slot_t;

struct nnmem_planned {
  /* first: the fast paths' fields (nnmem/planned_inline.h; h.fast is
   * NNMEM_PLANNED_HOT_ABI when serving, no auto steps, not disabled) */
  nnmem_planned_hot_t h;
  int serving;
  nnmem_allocator_t *a;
  int auto_steps, any_alloc;
  nnmem_planned_stats_t st;
  /* counted off the fast paths; stats derives served and allocs */
  uint64_t skipped;           /* planned requests a step never made */
  uint64_t consumed_unserved; /* planned requests served by `a` */
  /* recording */
  planned_buf_t *buf;
  size_t n, cap;
  uintptr_t *key; /* address map: key 0 = empty */
  uint32_t *val;
  size_t mcap, mcount;
  /* serving */
  uint32_t *pos;  /* buffer -> its entry in ends[] */
  uint32_t *obuf; /* buffers grouped by offset (oslot) */
  planned_slot_t *oslot;
  size_t ocap;
  uint64_t ec; /* ends[] checked by the step boundary */
  void *owned_base;
};

void nnmem_planned_config_init(nnmem_planned_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

/* Home slot of key x in a table of `cap` (a power of 2, >= 2) entries:
 * Fibonacci hashing, the product's top bits (offsets and addresses are
 * multiples of large powers of 2, whose products differ only there). */
static inline size_t hash_in(uint64_t x, size_t cap) {
  return (size_t)((x * 0x9E3779B97F4A7C15ULL) >>
                  (64 - __builtin_ctzll((unsigned long long)cap)));
}

/* ---- recording --------------------------------------------------------- */

static int map_grow(nnmem_planned_t *r) {
  size_t nc = r->mcap ? r->mcap * 2 : 1024;
  uintptr_t *k = calloc(nc, sizeof *k);
  uint32_t *v = malloc(nc * sizeof *v);
  if (!k || !v) {
    free(k);
    free(v);
    return -1;
  }
  for (size_t i = 0; i < r->mcap; i++)
    if (r->key[i]) {
      size_t h = hash_in(r->key[i], nc);
      while (k[h])
        h = (h + 1) & (nc - 1);
      k[h] = r->key[i];
      v[h] = r->val[i];
    }
  free(r->key);
  free(r->val);
  r->key = k;
  r->val = v;
  r->mcap = nc;
  return 0;
}

static int map_put(nnmem_planned_t *r, uintptr_t p, uint32_t b) {
  if ((r->mcount + 1) * 2 > r->mcap && map_grow(r) != 0) return -1;
  size_t h = hash_in(p, r->mcap);
  while (r->key[h])
    h = (h + 1) & (r->mcap - 1);
  r->key[h] = p;
  r->val[h] = b;
  r->mcount++;
  return 0;
}

/* Removes p; returns its buffer or -1 (backward-shift deletion keeps every
 * probe chain unbroken). */
static int64_t map_take(nnmem_planned_t *r, uintptr_t p) {
  if (!r->mcap) return -1;
  size_t m = r->mcap - 1, h = hash_in(p, r->mcap);
  while (r->key[h] && r->key[h] != p)
    h = (h + 1) & m;
  if (!r->key[h]) return -1;
  int64_t b = r->val[h];
  size_t hole = h;
  for (size_t j = (h + 1) & m; r->key[j]; j = (j + 1) & m) {
    size_t home = hash_in(r->key[j], r->mcap);
    /* move j into the hole when its home is not in (hole, j] cyclically */
    if (((j - home) & m) >= ((j - hole) & m)) {
      r->key[hole] = r->key[j];
      r->val[hole] = r->val[j];
      hole = j;
    }
  }
  r->key[hole] = 0;
  r->mcount--;
  return b;
}

nnmem_status_t nnmem_planned_record(nnmem_allocator_t *a,
                                    const nnmem_planned_config_t *cfg,
                                    nnmem_planned_t **out) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  if (!a) return NNMEM_ERR_INVALID;
  nnmem_planned_config_t c;
  nnmem_planned_config_init(&c);
  if (cfg) nnmem__config_copy(&c, sizeof c, cfg);
  nnmem_planned_t *r = calloc(1, sizeof *r);
  if (!r) return NNMEM_ERR_NOMEM;
  r->a = a;
  r->auto_steps = c.auto_steps != 0;
  r->st.size = sizeof r->st;
  *out = r;
  return NNMEM_OK;
}

static void *record_alloc(nnmem_planned_t *r, size_t size) {
  if (r->n >= UINT32_MAX) return NULL;
  if (r->n == r->cap) {
    size_t nc = r->cap ? r->cap * 2 : 256;
    planned_buf_t *b = realloc(r->buf, nc * sizeof *b);
    if (!b) return NULL;
    r->buf = b;
    r->cap = nc;
  }
  void *p = nnmem_alloc(r->a, size);
  if (!p) return NULL;
  if (map_put(r, (uintptr_t)p, (uint32_t)r->n) != 0) {
    nnmem_free(r->a, p);
    return NULL;
  }
  r->buf[r->n++] = (planned_buf_t){size, r->h.step, 0};
  return p;
}

/* ---- serving ----------------------------------------------------------- */

/* cur and end for the current step (serving); past the plan's steps no
 * request is planned (cur == end). */
static void step_window(nnmem_planned_t *r) {
  if (r->h.step < r->h.nsteps) {
    r->h.cur = r->h.steps[r->h.step].start;
    r->h.end = r->h.steps[r->h.step + 1].start;
  } else {
    r->h.cur = r->h.end = r->n;
  }
}

/* Moves fc over the done entries. */
static inline void skip_done(nnmem_planned_t *r) {
  uint64_t j = r->h.fc;
  while (j < r->h.nends && r->h.ends[j].done)
    j++;
  r->h.fc = j;
}

/* Entries up to `upto` (those with last <= the step) not done: they
 * overstay; serving stops. Entries before ec were counted already. */
static __attribute__((noinline)) void overstay(nnmem_planned_t *r,
                                               uint64_t upto) {
  uint64_t j = r->ec > r->h.fc ? r->ec : r->h.fc;
  for (; j < upto; j++)
    if (!r->h.ends[j].done) {
      r->st.overstayed++;
      r->st.disabled = 1;
      r->h.fast = 0;
    }
  if (upto > r->ec) r->ec = upto;
}

static __attribute__((noinline)) void skip_requests(nnmem_planned_t *r) {
  r->skipped += r->h.end - r->h.cur;
  for (uint64_t i = r->h.cur; i < r->h.end; i++)
    r->h.ends[r->pos[i]].done = DONE_UNSERVED;
  skip_done(r);
}

static void advance(nnmem_planned_t *r) {
  r->h.step++;
  if (!r->serving) return;
  if (__builtin_expect(r->h.cur < r->h.end, 0))
    skip_requests(r); /* planned requests this step did not make */
  if (__builtin_expect(r->h.step < r->h.nsteps, 1)) {
    const planned_step_t *s = &r->h.steps[r->h.step];
    r->h.cur = s->start;
    r->h.end = s[1].start;
    /* entries before fc are done; those before s->ended end by now */
    if (__builtin_expect(r->h.fc < s->ended, 0)) overstay(r, s->ended);
    return;
  }
  r->h.cur = r->h.end = r->n; /* past the plan's steps: nothing is planned */
  uint64_t j = r->ec > r->h.fc ? r->ec : r->h.fc;
  while (j < r->h.nends && r->h.ends[j].last <= r->h.step)
    j++;
  if (r->h.fc < j) overstay(r, j);
}

void nnmem_step(nnmem_planned_t *r) {
  if (r) advance(r);
}

/* Every request but a served one on the fast path: recording, auto steps,
 * serving disabled, a divergence. */
static __attribute__((noinline)) void *alloc_slow(nnmem_planned_t *r,
                                                  size_t size) {
  if (!r || size == 0) return NULL;
  if (r->auto_steps && r->any_alloc) advance(r);
  r->any_alloc = 1;
  if (!r->serving) {
    r->st.allocs++;
    return record_alloc(r, size);
  }
  uint64_t i = r->h.cur;
  if (i < r->h.end) {
    r->h.cur = i + 1; /* each buffer is requested once: cur only grows */
    const planned_req_t *q = &r->h.req[i];
    if (!r->st.disabled && q->size == size) return r->h.base + q->off;
    r->consumed_unserved++;
    r->h.ends[r->pos[i]].done = DONE_UNSERVED; /* never freed from the plan */
    skip_done(r);
    if (!r->st.disabled) r->st.size_diverged++;
  } else if (!r->st.disabled) {
    r->st.order_diverged++; /* past the step's planned count, or its steps */
  }
  r->st.fallback++;
  return nnmem_alloc(r->a, size);
}

void *nnmem_planned_alloc(nnmem_planned_t *r, size_t size) {
  uint64_t i;
  const planned_req_t *q;
  /* size 0 fails the size test: no planned buffer has size 0 */
  if (__builtin_expect(!r || !r->h.fast || (i = r->h.cur) >= r->h.end ||
                           (q = &r->h.req[i])->size != size,
                       0))
    return alloc_slow(r, size);
  r->h.cur = i + 1;
  return r->h.base + q->off;
}

/* The entry of the block served at `off` and live now, or NULL. Of the
 * buffers planned at off and requested (index < cur), only the last one
 * served can be live (one served later would have needed the earlier to
 * be free by its planned end, or serving stopped); those requested after
 * it but never served are skipped (done == DONE_UNSERVED). */
static planned_end_t *live_at(const nnmem_planned_t *r, uint64_t off) {
  size_t m = r->ocap - 1, h = hash_in(off, r->ocap);
  for (;; h = (h + 1) & m) {
    const planned_slot_t *e = &r->oslot[h];
    if (!e->key) return NULL;
    if (e->key != off + 1) continue;
    const uint32_t *v = r->obuf + e->lo;
    size_t lo = 0, hi = e->count; /* first with index >= cur */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (v[mid] < r->h.cur)
        lo = mid + 1;
      else
        hi = mid;
    }
    while (lo > 0) {
      planned_end_t *x = &r->h.ends[r->pos[v[--lo]]];
      if (x->done != DONE_UNSERVED) return x->done ? NULL : x;
    }
    return NULL;
  }
}

/* Every free but one in the recorded order: recording, a pointer outside
 * the plan's range, a free off the order, misuse. */
static __attribute__((noinline)) void free_slow(nnmem_planned_t *r, void *ptr) {
  if (!r || !ptr) return;
  if (!r->serving) {
    int64_t b = map_take(r, (uintptr_t)ptr);
    if (b >= 0) r->buf[b].last = r->h.step + 1;
    nnmem_free(r->a, ptr); /* a foreign pointer: counted by the allocator */
    return;
  }
  uintptr_t p = (uintptr_t)ptr, lo = (uintptr_t)r->h.base;
  if (p < lo || p - lo >= r->st.height) {
    nnmem_free(r->a, ptr);
    return;
  }
  planned_end_t *e = live_at(r, p - lo);
  if (!e) {
    r->st.misuse++; /* interior, never served or already freed */
    return;
  }
  e->done = DONE_FREED;
  skip_done(r);
}

/* A free that is not ends[fc]'s: the frees the recorded order expects now
 * are ends[fc] and the entries after it with the same planned end (a
 * step's frees may come in any order), at most FREE_SCAN of them; offsets
 * within one such group are distinct (their blocks are all live just
 * before that end). Anything else: free_slow. */
static __attribute__((noinline)) void free_scan(nnmem_planned_t *r,
                                                void *ptr) {
  uint64_t j = r->h.fc, lim = j + FREE_SCAN,
           off = (uintptr_t)ptr - (uintptr_t)r->h.base;
  const uint64_t last = r->h.ends[j].last;
  if (lim > r->h.nends) lim = r->h.nends;
  for (j++; j < lim && r->h.ends[j].last == last; j++) {
    planned_end_t *e = &r->h.ends[j];
    if (e->off == off && !e->done && e->index < r->h.cur) {
      e->done = DONE_FREED; /* requested, not done: live at its offset */
      return;
    }
  }
  free_slow(r, ptr);
}

void nnmem_planned_free(nnmem_planned_t *r, void *ptr) {
  uint64_t j;
  planned_end_t *e;
  if (__builtin_expect(!r || (j = r->h.fc) >= r->h.nends, 0)) {
    free_slow(r, ptr);
    return;
  }
  e = &r->h.ends[j];
  if (__builtin_expect((uintptr_t)ptr - (uintptr_t)r->h.base != e->off ||
                           e->index >= r->h.cur,
                       0)) {
    free_scan(r, ptr);
    return;
  }
  /* the next free in the recorded order: entries before fc are done, so
   * this one is requested, not done, and live at its offset */
  e->done = DONE_FREED;
  skip_done(r);
}

static nnmem_status_t check_trace(const nnmem_problem_t *p, uint64_t *nsteps,
                                  nnmem_diag_t *diag) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  if (n == 0)
    return nnmem__diag(diag, NNMEM_ERR_PARSE, "the plan has no buffers");
  if (n > ((size_t)1 << 30)) /* the offset hash indexes with 32 bits */
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "too many buffers (%zu; at most 2^30)", n);
  if (nnmem_problem_gapped_count(p) || nnmem_problem_child_count(p))
    return nnmem__diag(diag, NNMEM_ERR_PARSE,
                       "a recorded trace has no gaps or sub-buffers");
  for (size_t i = 0; i < n; i++) {
    const char *id = nnmem_problem_id(p, i);
    if (b[i].size == 0)
      return nnmem__diag(diag, NNMEM_ERR_PARSE,
                         "buffer '%s' (number %zu) has size 0: never recorded",
                         id ? id : "?", i + 1);
    if (i && b[i].first < b[i - 1].first)
      return nnmem__diag(
          diag, NNMEM_ERR_PARSE,
          "buffer '%s' (number %zu) starts at step %llu, before the buffer "
          "above it (step %llu): not a trace in recording order",
          id ? id : "?", i + 1, (unsigned long long)b[i].first,
          (unsigned long long)b[i - 1].first);
  }
  uint64_t maxs = b[n - 1].first;
  if (maxs > 16 * (uint64_t)n + 1024)
    return nnmem__diag(
        diag, NNMEM_ERR_PARSE,
        "buffer '%s' (number %zu) starts at step %llu: too far "
        "past %zu buffers for a recorded trace",
        nnmem_problem_id(p, n - 1) ? nnmem_problem_id(p, n - 1) : "?", n,
        (unsigned long long)maxs, n);
  *nsteps = maxs + 1;
  return NNMEM_OK;
}

static int by_last(const void *x, const void *y) {
  const planned_end_t *a = x, *b = y;
  if (a->last != b->last) return a->last < b->last ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

typedef struct off_idx {
  uint64_t off;
  uint32_t index, pad_;
} off_idx_t;

static int by_off(const void *x, const void *y) {
  const off_idx_t *a = x, *b = y;
  if (a->off != b->off) return a->off < b->off ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

/* The offset table: distinct offsets -> their buffers, ascending. */
static nnmem_status_t build_offsets(nnmem_planned_t *r, size_t n,
                                    const uint64_t *offsets) {
  off_idx_t *o = malloc(n * sizeof *o);
  r->obuf = malloc(n * sizeof *r->obuf);
  if (!o || !r->obuf) {
    free(o);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++)
    o[i] = (off_idx_t){offsets[i], (uint32_t)i, 0};
  qsort(o, n, sizeof *o, by_off);
  size_t distinct = 0;
  for (size_t i = 0; i < n; i++) {
    distinct += i == 0 || o[i].off != o[i - 1].off;
    r->obuf[i] = o[i].index;
  }
  r->ocap = 2;
  while (r->ocap < 2 * distinct) /* load <= 1/2 */
    r->ocap *= 2;
  r->oslot = calloc(r->ocap, sizeof *r->oslot);
  if (!r->oslot) {
    free(o);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && o[j].off == o[i].off; j++)
      ;
    size_t h = hash_in(o[i].off, r->ocap);
    while (r->oslot[h].key)
      h = (h + 1) & (r->ocap - 1);
    r->oslot[h] = (planned_slot_t){o[i].off + 1, (uint32_t)i, (uint32_t)(j - i)};
  }
  free(o);
  return NNMEM_OK;
}

static nnmem_status_t build(nnmem_planned_t *r, const nnmem_problem_t *p,
                            const uint64_t *offsets) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  r->n = n;
  r->h.req = malloc(n * sizeof *r->h.req);
  r->h.steps = calloc(r->h.nsteps + 1, sizeof *r->h.steps);
  r->h.ends = malloc(n * sizeof *r->h.ends);
  r->pos = malloc(n * sizeof *r->pos);
  if (!r->h.req || !r->h.steps || !r->h.ends || !r->pos) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    r->h.req[i] = (planned_req_t){b[i].size, offsets[i]};
    r->h.ends[i] = (planned_end_t){offsets[i], b[i].last, (uint32_t)i, 0};
    r->h.steps[b[i].first + 1].start++;
    if (offsets[i] + b[i].size > r->st.height)
      r->st.height = offsets[i] + b[i].size;
  }
  qsort(r->h.ends, n, sizeof *r->h.ends, by_last);
  for (size_t j = 0; j < n; j++)
    r->pos[r->h.ends[j].index] = (uint32_t)j;
  r->h.nends = n;
  for (uint64_t s = 0, j = 0; s <= r->h.nsteps; s++) {
    if (s < r->h.nsteps) r->h.steps[s + 1].start += r->h.steps[s].start;
    while (j < n && r->h.ends[j].last <= s)
      j++;
    r->h.steps[s].ended = (uint32_t)j;
  }
  step_window(r);
  return build_offsets(r, n, offsets);
}

nnmem_status_t nnmem_planned_serve(nnmem_allocator_t *a,
                                   const nnmem_problem_t *problem,
                                   const uint64_t *offsets,
                                   const nnmem_planned_config_t *cfg,
                                   nnmem_planned_t **out, nnmem_diag_t *diag) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  if (!a || !problem || !offsets) return NNMEM_ERR_INVALID;
  nnmem_planned_config_t c;
  nnmem_planned_config_init(&c);
  if (cfg) nnmem__config_copy(&c, sizeof c, cfg);
  uint64_t nsteps = 0;
  nnmem_status_t st = check_trace(problem, &nsteps, diag);
  if (st != NNMEM_OK) return st;
  st = nnmem_plan_verify(problem, offsets, 1, 0, NULL, diag);
  if (st != NNMEM_OK) return st;
  nnmem_planned_t *r = calloc(1, sizeof *r);
  if (!r) return NNMEM_ERR_NOMEM;
  r->a = a;
  r->serving = 1;
  r->auto_steps = c.auto_steps != 0;
  r->h.fast = r->auto_steps ? 0 : NNMEM_PLANNED_HOT_ABI;
  r->st.size = sizeof r->st;
  r->h.nsteps = nsteps;
  st = build(r, problem, offsets);
  if (st == NNMEM_OK) {
    r->h.base = c.base;
    if (!r->h.base) {
      r->owned_base = nnmem_alloc_aligned(a, r->st.height, 64);
      r->h.base = r->owned_base;
      if (!r->h.base) st = NNMEM_ERR_NOMEM;
    }
  }
  if (st != NNMEM_OK) {
    nnmem_planned_destroy(r);
    return nnmem__diag(diag, st,
                       "cannot reserve the plan's tables or its "
                       "height of memory");
  }
  *out = r;
  return NNMEM_OK;
}

/* ---- results ------------------------------------------------------------ */

nnmem_status_t nnmem_planned_problem(const nnmem_planned_t *r,
                                     nnmem_problem_t **out) {
  if (!r || !out) return NNMEM_ERR_INVALID;
  *out = NULL;
  if (r->serving || r->n == 0) return NNMEM_ERR_STATE;
  nnmem_problem_t *p = NULL;
  nnmem_status_t st = nnmem_problem_create(&p);
  char id[24];
  for (size_t i = 0; st == NNMEM_OK && i < r->n; i++) {
    const planned_buf_t *b = &r->buf[i];
    snprintf(id, sizeof id, "%zu", i);
    st = nnmem_problem_add(p, id, b->size, 1, b->first,
                           b->last ? b->last : r->h.step + 1, NULL);
  }
  if (st != NNMEM_OK) {
    nnmem_problem_destroy(p);
    return st;
  }
  *out = p;
  return NNMEM_OK;
}

nnmem_status_t nnmem_planned_write_csv(const nnmem_planned_t *r,
                                       const char *path, nnmem_diag_t *diag) {
  if (!path) return NNMEM_ERR_INVALID;
  nnmem_problem_t *p;
  nnmem_status_t st = nnmem_planned_problem(r, &p);
  if (st != NNMEM_OK) return st;
  st = nnmem_problem_write_csv(p, NULL, path, diag);
  nnmem_problem_destroy(p);
  return st;
}

nnmem_status_t nnmem_planned_usable_size(const nnmem_planned_t *r,
                                         const void *ptr, size_t *out) {
  if (!r || !ptr || !out) return NNMEM_ERR_INVALID;
  if (!r->serving) return NNMEM_ERR_STATE;
  uintptr_t p = (uintptr_t)ptr, lo = (uintptr_t)r->h.base;
  if (p < lo || p - lo >= r->st.height) return NNMEM_ERR_INVALID;
  const planned_end_t *e = live_at(r, p - lo);
  if (!e) return NNMEM_ERR_INVALID;
  *out = (size_t)r->h.req[e->index].size;
  return NNMEM_OK;
}

nnmem_status_t nnmem_planned_stats(const nnmem_planned_t *r,
                                   nnmem_planned_stats_t *out) {
  if (!r || !out) return NNMEM_ERR_INVALID;
  *out = r->st;
  out->steps = r->h.step;
  if (r->serving) { /* the fast paths count nothing but cur */
    out->served = r->h.cur - r->skipped - r->consumed_unserved;
    out->allocs = out->served + r->st.fallback;
  }
  return NNMEM_OK;
}

void nnmem_planned_destroy(nnmem_planned_t *r) {
  if (!r) return;
  for (size_t i = 0; i < r->mcap; i++) /* recording: blocks still live */
    if (r->key[i]) nnmem_free(r->a, (void *)r->key[i]);
  nnmem_free(r->a, r->owned_base);
  free(r->buf);
  free(r->key);
  free(r->val);
  free(r->h.req);
  free(r->h.steps);
  free(r->h.ends);
  free(r->pos);
  free(r->obuf);
  free(r->oslot);
  free(r);
}

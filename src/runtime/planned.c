/* planned.c - record a run's allocations; serve a later run from a plan of
 * them (nnmem/planned.h).
 *
 * Recording: every allocation appends {size, first = step, last = 0}; an
 * address -> buffer map (open addressing, linear probing, backward-shift
 * deletion) finds the buffer on free, which sets last = step + 1.
 *
 * Serving, built once from the plan:
 *   start[s]  index of the first buffer whose first step is s (buffers are
 *             in recording order, so step s owns start[s] .. start[s+1]-1);
 *   req[b]    {size, offset, slot} of buffer b, in request order;
 *   ends[]    {last step, buffer, slot} sorted by last step, with a
 *             cursor (the step boundary reads it in order);
 *   oslot[]   a static hash of the distinct offsets (open addressing,
 *             Fibonacci hashing, load <= 1/8 of the distinct offsets: one
 *             probe nearly always; never deleted from): {offset + 1, 1 +
 *             the buffer now served there or 0}; req[b].slot is the entry
 *             of b's offset;
 *   cur, end  start[step] + k and start[step + 1], kept by the step
 *             boundary, so a request reads neither start[] nor k.
 *
 *   request k of step s --> start[s] + k = i --> req[i] {size, off, slot}
 *                                                  |              |
 *   free(base + off) --hash(off)--> oslot[slot] {off + 1, live = i + 1}
 *
 * Steps of one request (O(1), no hashing):
 *   1. i = cur (= start[step] + k, k = requests so far in this step);
 *   2. if serving is on, i < end and req[i].size == size: cur++, set
 *      oslot[req[i].slot].live = i + 1 and return base + req[i].off (the
 *      inline fast path: no register saved);
 *   3. otherwise (out of line) cur++ all the same, count the divergence
 *      and return nnmem_alloc(a, size).
 * A free inside the plan's range: one probe sequence to the offset's entry
 * (its key is the offset: an entry found with live != 0 is the block),
 * live = 0; no entry or live == 0 is misuse (counted, ignored).
 * At each step end, every buffer b with last <= the new step must not be
 * live (oslot[slot].live != b + 1; amortized O(1): the ends[] cursor); one
 * that is disables serving. Each buffer is requested at most once (steps and
 * cur only grow), so a served buffer is never live twice.
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
#include "runtime/pool_internal.h"

typedef struct planned_buf {
  uint64_t size, first, last; /* recording: last 0 while live */
} planned_buf_t;

/* A buffer's end, for the step boundary check (sorted by last, index). */
typedef struct end_key {
  uint64_t last;
  uint32_t index, slot;
} end_key_t;

/* One request of the served run, in request order (the k-th request of
 * step s is req[start[s] + k]: the alloc path reads consecutive entries). */
typedef struct planned_req {
  uint64_t size, off;
  uint32_t slot; /* index of off in the offset hash */
  uint32_t pad_;
} planned_req_t;

/* One distinct offset of the plan: key = offset + 1 (0: empty entry), live
 * = 1 + the buffer now served there (0: none). A free finds its entry by
 * one probe sequence and reads and clears `live` in the same line. */
typedef struct planned_slot {
  uint64_t key;
  uint32_t live;
  uint32_t pad_;
} planned_slot_t;

struct nnmem_planned {
  /* the fast paths' fields first, in one 64-byte line: fast = serving, no
   * auto steps, not disabled */
  int fast, serving;
  planned_req_t *req; /* by buffer (recording order = request order) */
  uint64_t cur, end;  /* request index: next, end of this step's */
  char *base;
  uint64_t span;          /* the plan's height: [base, base + span) is served */
  planned_slot_t *oslot;  /* static offset hash */
  uint32_t omask, oshift; /* ocap - 1; 64 - log2(ocap): hash_in's shift */
  size_t ocap;
  nnmem_allocator_t *a;
  int auto_steps, any_alloc;
  uint64_t step;
  nnmem_planned_stats_t st;
  /* recording */
  planned_buf_t *buf;
  size_t n, cap;
  uintptr_t *key; /* address map: key 0 = empty */
  uint32_t *val;
  size_t mcap, mcount;
  /* serving */
  uint32_t *start;
  end_key_t *ends;
  uint64_t nsteps, end_cur;
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
  r->buf[r->n++] = (planned_buf_t){size, r->step, 0};
  return p;
}

/* ---- serving ----------------------------------------------------------- */

/* The offset hash entry of `off`, or NULL when no buffer starts there. */
static inline planned_slot_t *off_slot(const nnmem_planned_t *r, uint64_t off) {
  size_t m = r->omask, h = (size_t)((off * 0x9E3779B97F4A7C15ULL) >> r->oshift);
  for (;; h = (h + 1) & m) {
    planned_slot_t *e = &r->oslot[h];
    if (e->key == off + 1) return e;
    if (!e->key) return NULL;
  }
}

/* cur and end for the current step (serving); past the plan's steps no
 * request is planned (cur == end). */
static void step_window(nnmem_planned_t *r) {
  if (r->step < r->nsteps) {
    r->cur = r->start[r->step];
    r->end = r->start[r->step + 1];
  } else {
    r->cur = r->end = r->n;
  }
}

static void advance(nnmem_planned_t *r) {
  r->step++;
  r->st.steps++;
  if (!r->serving) return;
  step_window(r);
  while (r->end_cur < r->n && r->ends[r->end_cur].last <= r->step) {
    const end_key_t *e = &r->ends[r->end_cur];
    if (r->oslot[e->slot].live == e->index + 1) {
      r->st.overstayed++;
      r->st.disabled = 1;
      r->fast = 0;
    }
    r->end_cur++;
  }
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
  r->st.allocs++;
  if (!r->serving) return record_alloc(r, size);
  uint64_t i = r->cur;
  if (i < r->end) {
    r->cur = i + 1; /* each buffer is requested once: cur only grows */
    const planned_req_t *q = &r->req[i];
    if (!r->st.disabled && q->size == size) {
      r->oslot[q->slot].live = (uint32_t)i + 1;
      r->st.served++;
      return r->base + q->off;
    }
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
  if (__builtin_expect(!r || !r->fast || (i = r->cur) >= r->end ||
                           (q = &r->req[i])->size != size,
                       0))
    return alloc_slow(r, size);
  r->cur = i + 1;
  r->oslot[q->slot].live = (uint32_t)i + 1;
  r->st.allocs++;
  r->st.served++;
  return r->base + q->off;
}

/* Every free but one of a served block: recording, a pointer outside the
 * plan's range, misuse. */
static __attribute__((noinline)) void free_slow(nnmem_planned_t *r, void *ptr) {
  if (!r || !ptr) return;
  if (!r->serving) {
    int64_t b = map_take(r, (uintptr_t)ptr);
    if (b >= 0) r->buf[b].last = r->step + 1;
    nnmem_free(r->a, ptr); /* a foreign pointer: counted by the allocator */
    return;
  }
  uintptr_t p = (uintptr_t)ptr, lo = (uintptr_t)r->base;
  if (p >= lo && p - lo < r->st.height) {
    r->st.misuse++; /* interior, never served or already freed */
    return;
  }
  nnmem_free(r->a, ptr);
}

void nnmem_planned_free(nnmem_planned_t *r, void *ptr) {
  uintptr_t p = (uintptr_t)ptr, lo;
  planned_slot_t *e;
  if (__builtin_expect(!r || !r->serving || p < (lo = (uintptr_t)r->base) ||
                           p - lo >= r->span || !(e = off_slot(r, p - lo)) ||
                           !e->live,
                       0)) {
    free_slow(r, ptr);
    return;
  }
  e->live = 0; /* the entry's key is ptr's offset: the block is found */
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
  const end_key_t *a = x, *b = y;
  if (a->last != b->last) return a->last < b->last ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

static nnmem_status_t build(nnmem_planned_t *r, const nnmem_problem_t *p,
                            const uint64_t *offsets) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  r->n = n;
  r->req = malloc(n * sizeof *r->req);
  r->start = calloc(r->nsteps + 1, sizeof *r->start);
  r->ends = malloc(n * sizeof *r->ends);
  if (!r->req || !r->start || !r->ends) return NNMEM_ERR_NOMEM;
  /* two passes: count the distinct offsets in a table sized for n (load
   * <= 1/2), then the table the run uses, sized for them at load <= 1/8:
   * nearly every free then finds its entry at the first probe, and the
   * probe loop's branch is predicted (at load 1/2, measured on
   * iopddl_S_1's ~7,200 offsets: 1.4 probes and ~40% slower replays) */
  size_t distinct = 0;
  for (int pass = 0; pass < 2; pass++) {
    size_t want = pass ? 4 * distinct : n;
    free(r->oslot);
    r->ocap = 2;
    while (r->ocap < 2 * want)
      r->ocap *= 2;
    r->oslot = calloc(r->ocap, sizeof *r->oslot);
    if (!r->oslot) return NNMEM_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
      size_t h = hash_in(offsets[i], r->ocap);
      while (r->oslot[h].key && r->oslot[h].key != offsets[i] + 1)
        h = (h + 1) & (r->ocap - 1);
      if (!r->oslot[h].key) distinct += !pass;
      r->oslot[h].key = offsets[i] + 1;
      r->req[i] = (planned_req_t){b[i].size, offsets[i], (uint32_t)h, 0};
      r->ends[i] = (end_key_t){b[i].last, (uint32_t)i, (uint32_t)h};
    }
  }
  r->omask = (uint32_t)(r->ocap - 1);
  r->oshift = 64u - (uint32_t)__builtin_ctzll((unsigned long long)r->ocap);
  for (size_t i = 0; i < n; i++) {
    r->start[b[i].first + 1]++;
    if (offsets[i] + b[i].size > r->st.height)
      r->st.height = offsets[i] + b[i].size;
  }
  r->span = r->st.height;
  for (uint64_t s = 0; s < r->nsteps; s++)
    r->start[s + 1] += r->start[s];
  qsort(r->ends, n, sizeof *r->ends, by_last);
  step_window(r);
  return NNMEM_OK;
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
  r->fast = !r->auto_steps;
  r->st.size = sizeof r->st;
  r->nsteps = nsteps;
  st = build(r, problem, offsets);
  if (st == NNMEM_OK) {
    r->base = c.base;
    if (!r->base) {
      r->owned_base = nnmem_alloc_aligned(a, r->st.height, 64);
      r->base = r->owned_base;
      if (!r->base) st = NNMEM_ERR_NOMEM;
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

nnmem_status_t nnmem_planned_load(nnmem_allocator_t *a,
                                  const char *plan_json_path,
                                  const nnmem_planned_config_t *cfg,
                                  nnmem_planned_t **out, nnmem_diag_t *diag) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  if (!a || !plan_json_path) return NNMEM_ERR_INVALID;
  nnmem_problem_t *p = NULL;
  uint64_t *off = NULL;
  nnmem_status_t st = nnmem_plan_read_json_file(plan_json_path, &p, &off, diag);
  if (st == NNMEM_OK) st = nnmem_planned_serve(a, p, off, cfg, out, diag);
  nnmem_problem_destroy(p);
  free(off);
  return st;
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
                           b->last ? b->last : r->step + 1, NULL);
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

nnmem_status_t nnmem_planned_stats(const nnmem_planned_t *r,
                                   nnmem_planned_stats_t *out) {
  if (!r || !out) return NNMEM_ERR_INVALID;
  *out = r->st;
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
  free(r->req);
  free(r->start);
  free(r->ends);
  free(r->oslot);
  free(r);
}

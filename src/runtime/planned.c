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
 *   by_end    buffer indices sorted by last step, with a cursor;
 *   slot[b]   index of b's offset among the distinct offsets, found by a
 *             static hash of the offsets (no deletion needed);
 *   live_at[slot]  1 + the buffer now live at that offset, or 0.
 * Steps of one request (O(1)):
 *   1. i = start[step] + k (k = requests so far in this step); k++;
 *   2. if serving is on, i < start[step + 1] and size[i] == size: mark i
 *      live and return base + offset[i];
 *   3. otherwise count the divergence and return nnmem_alloc(a, size).
 * At each step end, every buffer with last <= the new step must not be
 * live (amortized O(1): the by_end cursor); one that is disables serving.
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

struct nnmem_planned {
  nnmem_allocator_t *a;
  int serving, auto_steps, any_alloc;
  uint64_t step, k;
  nnmem_planned_stats_t st;
  /* recording */
  planned_buf_t *buf;
  size_t n, cap;
  uintptr_t *key; /* address map: key 0 = empty */
  uint32_t *val;
  size_t mcap, mcount;
  /* serving */
  uint64_t *size, *off, *last;
  uint32_t *start, *by_end, *slot, *live_at;
  uint8_t *live;
  uint64_t nsteps, end_cur;
  uint64_t *okey; /* static offset hash: key + 1, 0 = empty */
  uint32_t *oval;
  size_t ocap;
  char *base;
  void *owned_base;
};

void nnmem_planned_config_init(nnmem_planned_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

static size_t hash64(uint64_t x) {
  return (size_t)((x * 0x9E3779B97F4A7C15ULL) >> 20);
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
      size_t h = hash64(r->key[i]) & (nc - 1);
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
  size_t h = hash64(p) & (r->mcap - 1);
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
  size_t m = r->mcap - 1, h = hash64(p) & m;
  while (r->key[h] && r->key[h] != p)
    h = (h + 1) & m;
  if (!r->key[h]) return -1;
  int64_t b = r->val[h];
  size_t hole = h;
  for (size_t j = (h + 1) & m; r->key[j]; j = (j + 1) & m) {
    size_t home = hash64(r->key[j]) & m;
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

static uint32_t off_slot(const nnmem_planned_t *r, uint64_t off) {
  size_t h = hash64(off) & (r->ocap - 1);
  while (r->okey[h] && r->okey[h] != off + 1)
    h = (h + 1) & (r->ocap - 1);
  return r->okey[h] ? r->oval[h] : UINT32_MAX;
}

static void advance(nnmem_planned_t *r) {
  r->step++;
  r->k = 0;
  r->st.steps++;
  if (!r->serving) return;
  while (r->end_cur < r->n && r->last[r->by_end[r->end_cur]] <= r->step) {
    if (r->live[r->by_end[r->end_cur]]) {
      r->st.overstayed++;
      r->st.disabled = 1;
    }
    r->end_cur++;
  }
}

void nnmem_step(nnmem_planned_t *r) {
  if (r) advance(r);
}

void *nnmem_planned_alloc(nnmem_planned_t *r, size_t size) {
  if (!r || size == 0) return NULL;
  if (r->auto_steps && r->any_alloc) advance(r);
  r->any_alloc = 1;
  r->st.allocs++;
  if (!r->serving) return record_alloc(r, size);
  uint64_t k = r->k++;
  if (!r->st.disabled && r->step < r->nsteps) {
    uint64_t i = r->start[r->step] + k;
    if (i < r->start[r->step + 1]) {
      if (r->size[i] == size && !r->live[i]) {
        r->live[i] = 1;
        r->live_at[r->slot[i]] = (uint32_t)i + 1;
        r->st.served++;
        return r->base + r->off[i];
      }
      r->st.size_diverged++;
    } else {
      r->st.order_diverged++;
    }
  } else if (!r->st.disabled) {
    r->st.order_diverged++; /* a step the plan does not have */
  }
  r->st.fallback++;
  return nnmem_alloc(r->a, size);
}

void nnmem_planned_free(nnmem_planned_t *r, void *ptr) {
  if (!r || !ptr) return;
  if (!r->serving) {
    int64_t b = map_take(r, (uintptr_t)ptr);
    if (b >= 0) r->buf[b].last = r->step + 1;
    nnmem_free(r->a, ptr); /* a foreign pointer: counted by the allocator */
    return;
  }
  uintptr_t p = (uintptr_t)ptr, lo = (uintptr_t)r->base;
  if (p >= lo && p - lo < r->st.height) {
    uint32_t s = off_slot(r, p - lo);
    uint32_t b = s == UINT32_MAX ? 0 : r->live_at[s];
    if (!b || r->base + r->off[b - 1] != (char *)ptr) {
      r->st.misuse++; /* interior, never served or already freed */
      return;
    }
    r->live[b - 1] = 0;
    r->live_at[s] = 0;
    return;
  }
  nnmem_free(r->a, ptr);
}

static nnmem_status_t check_trace(const nnmem_problem_t *p, uint64_t *nsteps,
                                  nnmem_diag_t *diag) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  if (n == 0)
    return nnmem__diag(diag, NNMEM_ERR_PARSE, "the plan has no buffers");
  if (n >= UINT32_MAX)
    return nnmem__diag(diag, NNMEM_ERR_PARSE, "too many buffers (%zu)", n);
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

typedef struct end_key {
  uint64_t last;
  uint32_t index;
} end_key_t;
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
  r->size = malloc(n * sizeof *r->size);
  r->off = malloc(n * sizeof *r->off);
  r->last = malloc(n * sizeof *r->last);
  r->start = calloc(r->nsteps + 1, sizeof *r->start);
  r->by_end = malloc(n * sizeof *r->by_end);
  r->slot = malloc(n * sizeof *r->slot);
  r->live_at = calloc(n, sizeof *r->live_at);
  r->live = calloc(n, 1);
  r->ocap = 2;
  while (r->ocap < 2 * n)
    r->ocap *= 2;
  r->okey = calloc(r->ocap, sizeof *r->okey);
  r->oval = malloc(r->ocap * sizeof *r->oval);
  if (!r->size || !r->off || !r->last || !r->start || !r->by_end || !r->slot ||
      !r->live_at || !r->live || !r->okey || !r->oval)
    return NNMEM_ERR_NOMEM;
  uint32_t nslots = 0;
  for (size_t i = 0; i < n; i++) {
    r->size[i] = b[i].size;
    r->off[i] = offsets[i];
    r->last[i] = b[i].last;
    r->by_end[i] = (uint32_t)i;
    r->start[b[i].first + 1]++;
    if (offsets[i] + b[i].size > r->st.height)
      r->st.height = offsets[i] + b[i].size;
    size_t h = hash64(offsets[i]) & (r->ocap - 1);
    while (r->okey[h] && r->okey[h] != offsets[i] + 1)
      h = (h + 1) & (r->ocap - 1);
    if (!r->okey[h]) {
      r->okey[h] = offsets[i] + 1;
      r->oval[h] = nslots++;
    }
    r->slot[i] = r->oval[h];
  }
  for (uint64_t s = 0; s < r->nsteps; s++)
    r->start[s + 1] += r->start[s];
  end_key_t *e = malloc(n * sizeof *e);
  if (!e) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < n; i++)
    e[i] = (end_key_t){r->last[i], (uint32_t)i};
  qsort(e, n, sizeof *e, by_last);
  for (size_t i = 0; i < n; i++)
    r->by_end[i] = e[i].index;
  free(e);
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
  free(r->size);
  free(r->off);
  free(r->last);
  free(r->start);
  free(r->by_end);
  free(r->slot);
  free(r->live_at);
  free(r->live);
  free(r->okey);
  free(r->oval);
  free(r);
}

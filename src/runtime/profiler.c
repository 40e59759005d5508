/* profiler.c - the run-time memory profiler (nnmem/profiler.h): exact live
 * bytes by tag over time for the blocks of one watched allocator or pool
 * (through the hooks of profiler_internal.h), or blocks the caller
 * reports (an arena's planned buffers).
 *
 *   watched object --on_alloc(p, size)--> lock; live[p] = (size, tag);
 *                  --on_free(p)---------> lock; live.remove(p)
 *   live_total, live_tag[t]  --->  peak / at_peak[t] / peak_step
 *                            --->  timeline[step]: highest live in the step
 *
 * Steps of an allocation seen: 1. the calling thread's tag (thread-local,
 * keyed by the profiler's id so a stale pointer never matches); 2. under
 * the profiler's mutex, record p -> (size, tag) in a hash map (a pointer
 * already there: the old record is dropped as freed; a failed insert counts
 * as untracked); 3. live_total += size, live_tag[tag] += size, the
 * non-weight bytes likewise; naive_arena (non-weight) or weight_alloc adds
 * size; 4. a new maximum of live_total sets peak, at_peak[] and
 * peak_step; the step's entry keeps its own maximum; each tag its own.
 * A free: remove p from the map (absent: not ours, ignored), subtract.
 * Invariants: live_total = sum of the map's sizes = sum of live_tag[];
 * peak >= live_total; sum of at_peak[] = peak; every timeline entry's
 * peak_bytes <= peak and the entry of peak_step has peak_bytes = peak.
 * Complexity: O(1) expected per event, O(steps) memory. Thread-safety: one
 * mutex per profiler; tags are thread-local. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/addrmap.h"
#include "runtime/pool_internal.h"
#include "runtime/profiler_internal.h"

typedef enum { K_ALLOCATOR, K_POOL, K_ARENA } kind_t;

struct nnmem_profiler {
  kind_t kind;
  nnmem_allocator_t *a;
  nnmem_pool_t *pool;
  nnmem_arena_t *arena;
  uint64_t id;
  pthread_mutex_t lock;
  int running;
  nnmem__addrmap_t live; /* key: address; a: size; b: tag */
  uint64_t live_total, live_tag[NNMEM_TAG_COUNT_], arena_live;
  uint64_t peak, at_peak[NNMEM_TAG_COUNT_], peak_step, arena_peak;
  uint64_t tag_peak[NNMEM_TAG_COUNT_];
  uint64_t naive_arena, weight_alloc, allocs, frees, untracked;
  nnmem_profiler_step_figures_t *tl; /* tl[n_tl - 1]: the current step */
  size_t n_tl, cap_tl;
  nnmem_stats_t stats; /* read at stop */
};

static _Atomic uint64_t next_id = 1;
static _Thread_local struct {
  uint64_t id;
  nnmem_tag_t tag;
} tls_tag;

const char *nnmem_tag_name(nnmem_tag_t tag) {
  switch (tag) {
    case NNMEM_TAG_ACTIVATION:
      return "activation";
    case NNMEM_TAG_WEIGHT:
      return "weight";
    case NNMEM_TAG_WORKSPACE:
      return "workspace";
    default:
      return "unknown";
  }
}

static nnmem_tag_t current_tag(const nnmem_profiler_t *pr) {
  return tls_tag.id == pr->id ? tls_tag.tag : NNMEM_TAG_ACTIVATION;
}

nnmem_tag_t nnmem_profiler_tag(nnmem_profiler_t *pr, nnmem_tag_t tag) {
  if (!pr) return NNMEM_TAG_ACTIVATION;
  nnmem_tag_t old = current_tag(pr);
  if ((unsigned)tag < NNMEM_TAG_COUNT_) {
    tls_tag.id = pr->id;
    tls_tag.tag = tag;
  }
  return old;
}

/* Opens the entry of step `step` at the current live bytes. */
static int step_open_locked(nnmem_profiler_t *pr, uint64_t step) {
  if (pr->n_tl == pr->cap_tl) {
    size_t cap = pr->cap_tl ? 2 * pr->cap_tl : 64;
    void *p = realloc(pr->tl, cap * sizeof *pr->tl);
    if (!p) return 0;
    pr->tl = p;
    pr->cap_tl = cap;
  }
  nnmem_profiler_step_figures_t *s = &pr->tl[pr->n_tl++];
  s->step = step;
  s->peak_bytes = pr->live_total;
  memcpy(s->by_tag, pr->live_tag, sizeof s->by_tag);
  return 1;
}

void nnmem_profiler_step(nnmem_profiler_t *pr) {
  if (!pr) return;
  pthread_mutex_lock(&pr->lock);
  uint64_t next = pr->tl[pr->n_tl - 1].step + 1;
  if (!step_open_locked(pr, next)) { /* no memory: the last entry grows */
    pr->tl[pr->n_tl - 1].step = next;
    pr->tl[pr->n_tl - 1].peak_bytes = pr->live_total;
    memcpy(pr->tl[pr->n_tl - 1].by_tag, pr->live_tag, sizeof pr->live_tag);
  }
  pthread_mutex_unlock(&pr->lock);
}

static void add_locked(nnmem_profiler_t *pr, uint64_t size, nnmem_tag_t tag) {
  pr->allocs++;
  pr->live_total += size;
  pr->live_tag[tag] += size;
  if (pr->live_tag[tag] > pr->tag_peak[tag])
    pr->tag_peak[tag] = pr->live_tag[tag];
  if (tag == NNMEM_TAG_WEIGHT) {
    pr->weight_alloc += size;
  } else {
    pr->naive_arena += size;
    pr->arena_live += size;
    if (pr->arena_live > pr->arena_peak) pr->arena_peak = pr->arena_live;
  }
  nnmem_profiler_step_figures_t *s = &pr->tl[pr->n_tl - 1];
  if (pr->live_total > s->peak_bytes) {
    s->peak_bytes = pr->live_total;
    memcpy(s->by_tag, pr->live_tag, sizeof s->by_tag);
  }
  if (pr->live_total > pr->peak) {
    pr->peak = pr->live_total;
    memcpy(pr->at_peak, pr->live_tag, sizeof pr->at_peak);
    pr->peak_step = s->step;
  }
}

static void sub_locked(nnmem_profiler_t *pr, const nnmem__addrmap_entry_t *e) {
  pr->frees++;
  pr->live_total -= e->a;
  pr->live_tag[e->b] -= e->a;
  if (e->b != NNMEM_TAG_WEIGHT) pr->arena_live -= e->a;
}

/* 1 when recorded; 0 when `key` was live already (the old record is
 * then dropped as freed first when `replace`). */
static int record_locked(nnmem_profiler_t *pr, uint64_t key, uint64_t size,
                         nnmem_tag_t tag, int replace) {
  nnmem__addrmap_entry_t old;
  if (nnmem__addrmap_get(&pr->live, key)) {
    if (!replace) return 0;
    (void)nnmem__addrmap_remove(&pr->live, key, &old);
    sub_locked(pr, &old);
  }
  nnmem__addrmap_entry_t e = {key, size, (uint64_t)tag, NULL};
  if (nnmem__addrmap_put(&pr->live, &e) != NNMEM_OK) {
    pr->untracked++;
    return 1;
  }
  add_locked(pr, size, tag);
  return 1;
}

void nnmem__profiler_on_alloc(nnmem_profiler_t *pr, const void *p,
                              uint64_t size) {
  nnmem_tag_t tag = current_tag(pr);
  pthread_mutex_lock(&pr->lock);
  if (pr->running)
    (void)record_locked(pr, (uint64_t)(uintptr_t)p, size, tag, 1);
  pthread_mutex_unlock(&pr->lock);
}

void nnmem__profiler_on_free(nnmem_profiler_t *pr, const void *p) {
  nnmem__addrmap_entry_t e;
  pthread_mutex_lock(&pr->lock);
  if (pr->running &&
      nnmem__addrmap_remove(&pr->live, (uint64_t)(uintptr_t)p, &e))
    sub_locked(pr, &e);
  pthread_mutex_unlock(&pr->lock);
}

nnmem_status_t nnmem_profiler_record_alloc(nnmem_profiler_t *pr,
                                           const void *ptr, uint64_t size,
                                           nnmem_tag_t tag) {
  if (!pr || !ptr || !size || (unsigned)tag >= NNMEM_TAG_COUNT_)
    return NNMEM_ERR_INVALID;
  nnmem_status_t st = NNMEM_OK;
  pthread_mutex_lock(&pr->lock);
  if (!pr->running)
    st = NNMEM_ERR_STATE;
  else if (!record_locked(pr, (uint64_t)(uintptr_t)ptr, size, tag, 0))
    st = NNMEM_ERR_INVALID;
  pthread_mutex_unlock(&pr->lock);
  return st;
}

nnmem_status_t nnmem_profiler_record_free(nnmem_profiler_t *pr,
                                          const void *ptr) {
  if (!pr || !ptr) return NNMEM_ERR_INVALID;
  nnmem__addrmap_entry_t e;
  nnmem_status_t st = NNMEM_OK;
  pthread_mutex_lock(&pr->lock);
  if (!pr->running)
    st = NNMEM_ERR_STATE;
  else if (nnmem__addrmap_remove(&pr->live, (uint64_t)(uintptr_t)ptr, &e))
    sub_locked(pr, &e);
  else
    st = NNMEM_ERR_INVALID;
  pthread_mutex_unlock(&pr->lock);
  return st;
}

/* ---- lifecycle ---------------------------------------------------------- */

static nnmem_status_t make(kind_t kind, nnmem_profiler_t **out) {
  nnmem_profiler_t *pr = calloc(1, sizeof *pr);
  if (!pr) return NNMEM_ERR_NOMEM;
  pr->kind = kind;
  pr->id = atomic_fetch_add(&next_id, 1);
  pr->running = 1;
  nnmem__addrmap_init(&pr->live);
  nnmem_stats_init(&pr->stats);
  if (!step_open_locked(pr, 0)) {
    free(pr);
    return NNMEM_ERR_NOMEM;
  }
  pthread_mutex_init(&pr->lock, NULL);
  *out = pr;
  return NNMEM_OK;
}

static nnmem_status_t attach(nnmem_profiler_t *pr) {
  switch (pr->kind) {
    case K_ALLOCATOR:
      return nnmem__allocator_attach_profiler(pr->a, pr);
    case K_POOL:
      return nnmem__pool_attach_profiler(pr->pool, pr);
    default:
      return NNMEM_OK; /* an arena makes no calls to watch */
  }
}

static void detach(nnmem_profiler_t *pr) {
  if (pr->kind == K_ALLOCATOR)
    (void)nnmem__allocator_attach_profiler(pr->a, NULL);
  if (pr->kind == K_POOL) (void)nnmem__pool_attach_profiler(pr->pool, NULL);
}

static nnmem_status_t start(kind_t kind, nnmem_allocator_t *a,
                            nnmem_pool_t *pool, nnmem_arena_t *arena,
                            nnmem_profiler_t **out) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  if (!a && !pool && !arena) return NNMEM_ERR_INVALID;
  nnmem_profiler_t *pr;
  nnmem_status_t st = make(kind, &pr);
  if (st != NNMEM_OK) return st;
  pr->a = a;
  pr->pool = pool;
  pr->arena = arena;
  st = attach(pr);
  if (st != NNMEM_OK) { /* never attached: nothing to stop or detach */
    nnmem__addrmap_free(&pr->live);
    pthread_mutex_destroy(&pr->lock);
    free(pr->tl);
    free(pr);
    return st;
  }
  *out = pr;
  return NNMEM_OK;
}

nnmem_status_t nnmem_profiler_start_allocator(nnmem_allocator_t *a,
                                              nnmem_profiler_t **out) {
  return start(K_ALLOCATOR, a, NULL, NULL, out);
}

nnmem_status_t nnmem_profiler_start_pool(nnmem_pool_t *pool,
                                         nnmem_profiler_t **out) {
  return start(K_POOL, NULL, pool, NULL, out);
}

nnmem_status_t nnmem_profiler_start_arena(nnmem_arena_t *arena,
                                          nnmem_profiler_t **out) {
  return start(K_ARENA, NULL, NULL, arena, out);
}

/* The watched object's stats now. */
static void read_stats(nnmem_profiler_t *pr, nnmem_stats_t *st) {
  nnmem_stats_init(st);
  if (pr->kind == K_ALLOCATOR) {
    (void)nnmem_allocator_stats(pr->a, st);
  } else if (pr->kind == K_POOL) {
    (void)nnmem_pool_stats(pr->pool, st);
  } else {
    nnmem_arena_info_t info;
    nnmem_arena_info(pr->arena, &info);
    snprintf(st->name, sizeof st->name, "arena");
    st->reserved_bytes = st->reserved_bytes_peak = info.size;
  }
}

nnmem_status_t nnmem_profiler_stop(nnmem_profiler_t *pr) {
  if (!pr) return NNMEM_ERR_INVALID;
  pthread_mutex_lock(&pr->lock);
  int was = pr->running;
  pr->running = 0;
  pthread_mutex_unlock(&pr->lock);
  if (!was) return NNMEM_ERR_STATE;
  detach(pr); /* hooks in flight find running == 0 */
  nnmem_stats_t st;
  read_stats(pr, &st);
  pthread_mutex_lock(&pr->lock);
  pr->stats = st;
  pthread_mutex_unlock(&pr->lock);
  return NNMEM_OK;
}

void nnmem_profiler_destroy(nnmem_profiler_t *pr) {
  if (!pr) return;
  if (pr->running) (void)nnmem_profiler_stop(pr);
  nnmem__addrmap_free(&pr->live);
  pthread_mutex_destroy(&pr->lock);
  free(pr->tl);
  free(pr);
}

/* ---- figures ------------------------------------------------------------ */

nnmem_status_t nnmem_profiler_result(nnmem_profiler_t *pr,
                                     nnmem_profiler_result_t *out) {
  if (!pr || !out) return NNMEM_ERR_INVALID;
  nnmem_stats_t now;
  int running;
  pthread_mutex_lock(&pr->lock);
  running = pr->running;
  pthread_mutex_unlock(&pr->lock);
  if (running) read_stats(pr, &now); /* outside the lock: it takes others */
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  pthread_mutex_lock(&pr->lock);
  out->peak_memory = pr->peak;
  out->weight_memory = pr->at_peak[NNMEM_TAG_WEIGHT];
  out->activation_memory = pr->at_peak[NNMEM_TAG_ACTIVATION];
  out->workspace_memory = pr->at_peak[NNMEM_TAG_WORKSPACE];
  out->arena_height = pr->arena_peak;
  out->naive_arena = pr->naive_arena;
  out->naive_memory = pr->weight_alloc + pr->naive_arena;
  out->reuse_ratio =
      pr->naive_arena ? 1.0 - (double)pr->arena_peak / (double)pr->naive_arena
                      : 0.0;
  out->peak_step = pr->peak_step;
  out->steps = pr->tl[pr->n_tl - 1].step + 1;
  out->allocations = pr->allocs;
  out->frees = pr->frees;
  out->live_bytes = pr->live_total;
  memcpy(out->tag_peak, pr->tag_peak, sizeof out->tag_peak);
  out->untracked = pr->untracked;
  out->stats = running ? now : pr->stats;
  pthread_mutex_unlock(&pr->lock);
  return NNMEM_OK;
}

nnmem_status_t nnmem_profiler_timeline(nnmem_profiler_t *pr,
                                       nnmem_profiler_step_figures_t *steps,
                                       size_t cap, size_t *n_out) {
  if (!pr || !n_out || (!steps && cap)) return NNMEM_ERR_INVALID;
  pthread_mutex_lock(&pr->lock);
  size_t n = pr->n_tl;
  if (cap) memcpy(steps, pr->tl, (n < cap ? n : cap) * sizeof *steps);
  pthread_mutex_unlock(&pr->lock);
  *n_out = n;
  return n <= cap ? NNMEM_OK : NNMEM_ERR_OVERFLOW;
}

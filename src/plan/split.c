/* split.c - large problems placed in parts of time, the parts in
 * parallel; the plan is that of one run over a schedule derived from the
 * ordering, the same for any number of threads.
 *
 * On a long schedule most buffers live for a short while, and a buffer
 * interacts only with those whose lifetimes meet its own. Cut the
 * schedule at K - 1 steps t_1 < ... < t_{K-1} into parts: a buffer lies
 * in parts plo(x) .. phi(x) (those of its first and last steps); it
 * "crosses" when plo < phi, else it is "own" to its part. Each part keeps
 * its own occupancy map (occupancy.c) over the buffers that meet its
 * span. A buffer's gaps are those of its part's map, or, crossing, the
 * intersection of the gaps of the maps it meets: every placed buffer
 * meeting it in time is in one of them. So placing x reads and writes
 * exactly the maps plo(x) .. phi(x).
 *
 * The schedule. The ordering is cut into runs, maximal stretches whose
 * first steps do not decrease (the class orderings sort by time inside a
 * size class, so a run is a class). Each run is placed as: its crossing
 * buffers in order (task X(r)), then its own buffers, part by part (tasks
 * O(q, r), in order inside each). Own buffers of different parts never
 * meet, so the O(q, r) of one run run in parallel; nnmem__split_schedule
 * writes this sequence, and nnmem__place_in_order over it gives the same
 * plan, offset for offset (tests/unit/test_plan_split.c checks it).
 * Against the ordering itself a crossing buffer only moves ahead of the
 * own buffers of its run; measured on 1,000,000 random buffers: 1.0440 x
 * the bound against 1.0436 for one run over the ordering.
 *
 * Dependencies (a task starts when the earlier writers of every map it
 * touches are done, and so the later ones wait for it): X(r) waits for
 * X(r - 1) and O(q, r - 1) for each map q its buffers touch; O(q, r)
 * waits for O(q, r - 1) and, when X(r) touches map q, X(r). Each
 * dependency is earlier in the schedule, two tasks touching one map never
 * run at once, and every map receives its buffers in schedule order. So a
 * part may go on to the next run while others finish this one.
 *
 * Errors (capacity, overflow): a task stops at its first failing buffer
 * and records its position in the schedule; tasks skip positions past the
 * least failure known. As every dependency is earlier, every position
 * before the first failure is placed, and that failure is the one
 * reported, as in one run.
 *
 * Cuts: around each quantile k / K of the buffers' first steps (K = n /
 * PART_BUFFERS, at most MAX_PARTS), the step that the fewest bytes cross
 * (see choose_cuts). One run over the ordering instead when: fewer than
 * NNMEM__SPLIT_MIN buffers, more than n / MAX_CROSSING_SHARE would cross
 * (long lifetimes: the problem does not split well), more than MAX_RUNS
 * runs (an ordering not sorted by time inside classes), or a deadline is
 * set (its fast mode lives in place.c).
 *
 * Thread-safety: reentrant. Workers share a mutex-protected ready list; a
 * running task writes only its buffers' offsets and the maps it touches,
 * which no other running task touches. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "plan/place.h"
#include "plan/radix.h"

#define PART_BUFFERS 100000u  /* buffers a part aims at */
#define MAX_PARTS 16u         /* parts at most */
#define MAX_CROSSING_SHARE 8u /* at most n / this buffers may cross */
#define MAX_RUNS 4096u        /* runs of the ordering at most */

/* Intersects the free pieces c[0..nc) with those of one map (its gaps
 * g[0..ng), sorted, and everything from its top up) into out, keeping
 * pieces of at least `size` bytes. Returns the count. */
static size_t intersect(const nnmem__range_t *c, size_t nc,
                        const nnmem__range_t *g, size_t ng, uint64_t top,
                        uint64_t size, nnmem__range_t *out) {
  size_t k = 0, j = 0;
  for (size_t q = 0; q < nc; q++) {
    for (; j < ng && g[j].hi <= c[q].lo; j++) {
    }
    for (size_t t = j; t <= ng; t++) { /* t == ng: [top, max) */
      uint64_t lo = t < ng ? g[t].lo : top, hi = t < ng ? g[t].hi : UINT64_MAX;
      if (lo >= c[q].hi) break;
      lo = nnmem__max_u64(lo, c[q].lo);
      hi = hi < c[q].hi ? hi : c[q].hi;
      if (hi > lo && hi - lo >= size) out[k++] = (nnmem__range_t){lo, hi};
    }
  }
  return k;
}

/* Threads for the parts: NNMEM_PLAN_THREADS when set (1 = the caller's
 * only; the plan is the same for every value), else the online CPUs; at
 * most MAX_PARTS. */
static unsigned plan_threads(void) {
  const char *env = getenv("NNMEM_PLAN_THREADS");
  long c = 0;
  if (env && *env) {
    char *end = NULL;
    c = strtol(env, &end, 10);
    if (*end) c = 0; /* not a number: as if unset */
  }
  if (c <= 0) c = sysconf(_SC_NPROCESSORS_ONLN);
  return c < 1 ? 1u : c > (long)MAX_PARTS ? MAX_PARTS : (unsigned)c;
}

/* A buffer's first or last step with its size, for the cut choice. */
typedef struct stamp {
  uint64_t t, size;
} stamp_t;

/* The cut steps, strictly increasing. Around each quantile k / K of the
 * buffers' first steps (within n / (4 K) buffers either way, so parts
 * stay balanced) the step where the fewest bytes cross: a buffer crossing
 * a cut goes before its class's own buffers (split schedule above), which
 * costs nothing where memory is slack, and the step with the fewest
 * crossing bytes is the slackest one. Returns how many (0: none). */
static size_t choose_cuts(const nnmem_buffer_t *b, size_t n, size_t parts,
                          uint64_t *cuts, int *nomem) {
  stamp_t *f = malloc(n * sizeof *f), *l = malloc(n * sizeof *l);
  stamp_t *tmp = malloc(n * sizeof *tmp);
  size_t nc = 0;
  stamp_t *fs = NULL, *ls = NULL;
  if (f && l && tmp) {
    for (size_t i = 0; i < n; i++) {
      f[i] = (stamp_t){b[i].first, b[i].size};
      l[i] = (stamp_t){b[i].last, b[i].size};
    }
    fs = nnmem__radix_sort(f, tmp, n, sizeof *f, 0, 0);
    if (fs) {
      stamp_t *spare = fs == f ? tmp : f;
      ls = nnmem__radix_sort(l, spare, n, sizeof *l, 0, 0);
    }
  }
  if (!fs || !ls) {
    *nomem = 1;
  } else {
    /* at position i of fs (a new first step t = fs[i].t): bytes crossing
     * t = sizes of first < t minus sizes of last <= t */
    size_t half = n / (4 * parts), k = 1, j = 0;
    uint64_t began = 0, ended = 0, best = UINT64_MAX, best_t = 0;
    for (size_t i = 0; i < n && k < parts; i++) {
      size_t lo = k * n / parts - half, hi = k * n / parts + half;
      if (i > 0 && fs[i].t != fs[i - 1].t && i >= lo) {
        for (; j < n && ls[j].t <= fs[i].t; j++)
          ended += ls[j].size;
        uint64_t cross = began - ended;
        if (cross < best) best = cross, best_t = fs[i].t;
      }
      began += fs[i].size;
      if (i == hi || i == n - 1) { /* the window closes */
        if (best != UINT64_MAX && (nc == 0 || best_t > cuts[nc - 1]))
          cuts[nc++] = best_t;
        best = UINT64_MAX;
        k++;
      }
    }
  }
  free(f);
  free(l);
  free(tmp);
  return nc;
}

/* The part holding step t: the number of cuts <= t. */
static uint32_t part_of(const uint64_t *cuts, size_t nc, uint64_t t) {
  size_t lo = 0, hi = nc;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cuts[mid] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (uint32_t)lo;
}

/* The runs of the ordering: maximal stretches whose first steps do not
 * decrease. Stores where each ends into ends[] when given; returns how
 * many. */
static size_t count_runs(const nnmem_buffer_t *b, const uint32_t *order,
                         size_t n, size_t *ends) {
  size_t runs = 0;
  for (size_t j = 1; j <= n; j++)
    if (j == n || b[order[j]].first < b[order[j - 1]].first) {
      if (ends) ends[runs] = j;
      runs++;
    }
  return runs;
}

/* A task: the positions [begin, end) of the schedule it places, the
 * tasks waiting on it, how many it waits on. */
typedef struct task {
  size_t begin, end;
  size_t dep_begin, dep_end; /* into job.dependents */
  uint32_t waits;
} task_t;

/* A worker's scratch. */
typedef struct scratch {
  nnmem__range_t *gaps, *cand;
  size_t gaps_cap, cand_cap;
  uint64_t top;
} scratch_t;

/* What the threads share. */
typedef struct job {
  const nnmem_problem_t *p;
  const uint32_t *order; /* the schedule */
  const uint32_t *plo, *phi;
  uint64_t align, limit;
  nnmem__fit_t fit;
  uint64_t *offsets;
  nnmem__occ_t **occ; /* each part's map */
  task_t *tasks;
  const uint32_t *dependents; /* task indices */
  size_t ntasks;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t *ready; /* a stack of tasks whose waits are over */
  size_t nready, finished;
  size_t fail_pos; /* least failing position (n: none); under mu */
  nnmem_status_t fail_st;
  size_t fail_seen; /* a copy read without the lock: only ever lowers */
} job_t;

/* Places buffer x among the buffers placed in the maps of parts
 * plo(x) .. phi(x) (their gaps intersected), then adds it to each. */
static nnmem_status_t place_one(job_t *jb, scratch_t *sc, uint32_t x) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(jb->p);
  uint32_t lo = jb->plo[x], hi = jb->phi[x];
  uint64_t size, al = nnmem__max_u64(b[x].align, jb->align), e, top = 0;
  jb->offsets[x] = 0;
  if (b[x].size == 0) return NNMEM_OK; /* occupies nothing */
  if (nnmem__padded_size_checked(&b[x], jb->align, &size))
    return NNMEM_ERR_OVERFLOW;
  nnmem_status_t st = NNMEM_OK;
  size_t nc = 0;
  const nnmem__range_t *pieces;
  if (lo == hi) { /* one map: its gaps as they are */
    st = nnmem__occ_gaps(jb->occ[lo], x, size, &sc->gaps, &nc, &sc->gaps_cap,
                         &top);
    if (st) return st;
    pieces = sc->gaps;
  } else { /* candidates: everything, cut down map by map */
    if ((st = nnmem__grow((void **)&sc->cand, &sc->cand_cap, 2,
                          sizeof *sc->cand)))
      return st;
    nc = 1;
    sc->cand[0] = (nnmem__range_t){0, UINT64_MAX};
    for (uint32_t q = lo; q <= hi; q++) {
      size_t k = 0;
      uint64_t t = 0;
      st = nnmem__occ_gaps(jb->occ[q], x, size, &sc->gaps, &k, &sc->gaps_cap,
                           &t);
      if (st == NNMEM_OK) /* the pieces at most double, plus one */
        st = nnmem__grow((void **)&sc->cand, &sc->cand_cap, 2 * (nc + k + 1),
                         sizeof *sc->cand);
      if (st) return st;
      nnmem__range_t *out = sc->cand + nc + k + 1; /* past the live ones */
      size_t m = intersect(sc->cand, nc, sc->gaps, k, t, size, out);
      memmove(sc->cand, out, m * sizeof *out);
      nc = m;
      top = nnmem__max_u64(top, t);
    }
    /* the pieces below the top are the gaps; the last one may run to the
     * top of the address space, which is the top itself */
    if (nc && sc->cand[nc - 1].hi == UINT64_MAX) nc--;
    pieces = sc->cand;
  }
  if (nnmem__choose_gap(pieces, nc, top, size, al, jb->fit, &jb->offsets[x]) ||
      nnmem__add_overflow(jb->offsets[x], size, &e))
    return NNMEM_ERR_OVERFLOW;
  if (e > jb->limit) return NNMEM_ERR_CAPACITY;
  for (uint32_t q = lo; q <= hi && st == NNMEM_OK; q++)
    st = nnmem__occ_add(jb->occ[q], x, jb->offsets[x], e);
  sc->top = nnmem__max_u64(sc->top, e);
  return st;
}

/* Runs task t up to the least failing position known. */
static void run_task(job_t *jb, scratch_t *sc, const task_t *t) {
  for (size_t pos = t->begin; pos < t->end; pos++) {
    if (pos >= __atomic_load_n(&jb->fail_seen, __ATOMIC_RELAXED)) return;
    nnmem_status_t st = place_one(jb, sc, jb->order[pos]);
    if (st == NNMEM_OK) continue;
    pthread_mutex_lock(&jb->mu);
    if (pos < jb->fail_pos) {
      jb->fail_pos = pos, jb->fail_st = st;
      __atomic_store_n(&jb->fail_seen, pos, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&jb->mu);
    return;
  }
}

typedef struct worker_arg {
  job_t *jb;
  scratch_t sc;
} worker_arg_t;

static void *worker(void *arg) {
  worker_arg_t *w = arg;
  job_t *jb = w->jb;
  pthread_mutex_lock(&jb->mu);
  for (;;) {
    while (jb->nready == 0 && jb->finished < jb->ntasks)
      pthread_cond_wait(&jb->cv, &jb->mu);
    if (jb->nready == 0) break; /* all finished */
    task_t *t = &jb->tasks[jb->ready[--jb->nready]];
    pthread_mutex_unlock(&jb->mu);
    run_task(jb, &w->sc, t);
    pthread_mutex_lock(&jb->mu);
    jb->finished++;
    int woke = 0;
    for (size_t d = t->dep_begin; d < t->dep_end; d++)
      if (--jb->tasks[jb->dependents[d]].waits == 0)
        jb->ready[jb->nready++] = jb->dependents[d], woke = 1;
    if (woke || jb->finished == jb->ntasks) pthread_cond_broadcast(&jb->cv);
  }
  pthread_mutex_unlock(&jb->mu);
  return NULL;
}

/* Runs fn on up to `threads` threads, the caller's included; thread t gets
 * (char *)arg + t * stride (stride 0: all the same argument). A thread that
 * cannot be started leaves its share to the others, so fn must take work
 * from a shared queue until none is left. */
static void on_threads(unsigned threads, void *(*fn)(void *), void *arg,
                       size_t stride) {
  pthread_t tid[MAX_PARTS];
  unsigned started = 0;
  for (unsigned t = 1; t < threads && t < MAX_PARTS; t++)
    if (pthread_create(&tid[started], NULL, fn, (char *)arg + t * stride) == 0)
      started++;
  fn(arg);
  for (unsigned t = 0; t < started; t++)
    pthread_join(tid[t], NULL);
}

/* Runs every task on up to `threads` threads (on_threads). Returns the
 * highest end placed. */
static nnmem_status_t run_tasks(job_t *jb, unsigned threads, uint64_t *top) {
  worker_arg_t w[MAX_PARTS];
  memset(w, 0, sizeof w);
  if (pthread_mutex_init(&jb->mu, NULL)) return NNMEM_ERR_NOMEM;
  if (pthread_cond_init(&jb->cv, NULL)) {
    pthread_mutex_destroy(&jb->mu);
    return NNMEM_ERR_NOMEM;
  }
  for (unsigned t = 0; t < threads; t++)
    w[t].jb = jb;
  on_threads(threads, worker, w, sizeof *w);
  pthread_cond_destroy(&jb->cv);
  pthread_mutex_destroy(&jb->mu);
  *top = 0;
  for (unsigned t = 0; t < threads; t++) {
    *top = nnmem__max_u64(*top, w[t].sc.top);
    free(w[t].sc.gaps);
    free(w[t].sc.cand);
  }
  return NNMEM_OK;
}

/* How a problem is split: the parts of each buffer, the runs, and the
 * schedule (see the top). */
typedef struct layout {
  size_t np, nruns;
  uint32_t *plo, *phi; /* per buffer */
  uint32_t *sched;     /* the schedule: buffer indices */
  size_t *xend;        /* per run: the end of its crossing buffers, then
                          nruns * np ends of its own ones, part by part */
} layout_t;

static void layout_free(layout_t *L) {
  free(L->plo);
  free(L->phi);
  free(L->sched);
  free(L->xend);
  memset(L, 0, sizeof *L);
}

/* Decides whether `p` splits under `order`; when it does (L->np > 1)
 * fills L. NNMEM_OK with L->np == 0: one run over the ordering. */
static nnmem_status_t layout_make(const nnmem_problem_t *p,
                                  const uint32_t *order, layout_t *L) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t want = n / PART_BUFFERS < MAX_PARTS ? n / PART_BUFFERS : MAX_PARTS;
  memset(L, 0, sizeof *L);
  if (n < NNMEM__SPLIT_MIN || want < 2) return NNMEM_OK;
  size_t nruns = count_runs(b, order, n, NULL);
  if (nruns > MAX_RUNS) return NNMEM_OK;
  uint64_t cuts[MAX_PARTS];
  int nomem = 0;
  size_t ncut = choose_cuts(b, n, want, cuts, &nomem), np = ncut + 1;
  if (nomem) return NNMEM_ERR_NOMEM;
  if (ncut == 0) return NNMEM_OK;
  L->plo = malloc(n * sizeof *L->plo), L->phi = malloc(n * sizeof *L->phi);
  if (!L->plo || !L->phi) {
    layout_free(L);
    return NNMEM_ERR_NOMEM;
  }
  size_t ncross = 0;
  for (size_t i = 0; i < n; i++) {
    L->plo[i] = part_of(cuts, ncut, b[i].first);
    L->phi[i] = part_of(cuts, ncut, b[i].last - 1);
    ncross += L->plo[i] != L->phi[i];
  }
  if (ncross > n / MAX_CROSSING_SHARE) { /* does not split */
    layout_free(L);
    return NNMEM_OK;
  }
  size_t *stop = malloc(nruns * sizeof *stop); /* per run: its end */
  L->sched = malloc(n * sizeof *L->sched);
  L->xend = calloc(nruns * (np + 1), sizeof *L->xend);
  if (!stop || !L->sched || !L->xend) {
    free(stop);
    layout_free(L);
    return NNMEM_ERR_NOMEM;
  }
  L->np = np, L->nruns = nruns;
  count_runs(b, order, n, stop);
  /* per run: count, then fill (crossing, then own part by part) */
  size_t *x = L->xend, *own = L->xend + nruns;
  for (size_t r = 0, j = 0; r < nruns; r++)
    for (; j < stop[r]; j++) {
      uint32_t i = order[j];
      if (L->plo[i] != L->phi[i])
        x[r]++;
      else
        own[r * np + L->plo[i]]++;
    }
  size_t at = 0;
  for (size_t r = 0; r < nruns; r++) { /* counts to starts */
    size_t c = x[r];
    x[r] = at, at += c;
    for (size_t q = 0; q < np; q++) {
      c = own[r * np + q];
      own[r * np + q] = at, at += c;
    }
  }
  for (size_t r = 0, j = 0; r < nruns; r++)
    for (; j < stop[r]; j++) {
      uint32_t i = order[j];
      size_t *slot = L->plo[i] != L->phi[i] ? &x[r] : &own[r * np + L->plo[i]];
      L->sched[(*slot)++] = i; /* starts become ends */
    }
  free(stop);
  return NNMEM_OK;
}

nnmem_status_t nnmem__split_schedule(const nnmem_problem_t *p,
                                     const uint32_t *order, uint32_t *sched) {
  size_t n = nnmem_problem_count(p);
  layout_t L;
  nnmem_status_t st = layout_make(p, order, &L);
  if (st == NNMEM_OK) memcpy(sched, L.np ? L.sched : order, n * sizeof *sched);
  layout_free(&L);
  return st;
}

/* The tasks of layout L in jb: X(r) is task r * (np + 1), O(q, r) task
 * r * (np + 1) + 1 + q; their positions in the schedule, dependencies and
 * the first ready ones. */
static nnmem_status_t build_tasks(job_t *jb, const layout_t *L) {
  size_t np = L->np, nr = L->nruns, w = np + 1, nt = nr * w;
  task_t *tk = calloc(nt, sizeof *tk);
  uint32_t *lo = malloc(nr * sizeof *lo), *hi = calloc(nr, sizeof *hi);
  size_t *ndep = calloc(nt + 1, sizeof *ndep);
  uint32_t *ready = malloc(nt * sizeof *ready), *deps = NULL;
  nnmem_status_t st =
      tk && lo && hi && ndep && ready ? NNMEM_OK : NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) {
    /* 1. slices of the schedule; the maps each X(r) touches: lo..hi */
    const size_t *x = L->xend, *own = L->xend + nr;
    size_t at = 0;
    for (size_t r = 0; r < nr; r++) {
      lo[r] = UINT32_MAX;
      tk[r * w] = (task_t){.begin = at, .end = x[r]};
      for (size_t i = at; i < x[r]; i++) {
        uint32_t b = L->sched[i];
        if (L->plo[b] < lo[r]) lo[r] = L->plo[b];
        if (L->phi[b] > hi[r]) hi[r] = L->phi[b];
      }
      at = x[r];
      for (size_t q = 0; q < np; q++) {
        tk[r * w + 1 + q] = (task_t){.begin = at, .end = own[r * np + q]};
        at = own[r * np + q];
      }
    }
    /* 2. edges u -> k: counted per u, then listed (CSR) */
    for (int pass = 0; pass < 2 && st == NNMEM_OK; pass++) {
      for (size_t r = 0; r < nr; r++)
        for (size_t c = 0; c < w; c++) {
          size_t k = r * w + c, u[MAX_PARTS + 2], nu = 0;
          if (c == 0) { /* X(r) */
            if (r > 0) {
              u[nu++] = k - w;
              for (uint32_t q = lo[r]; q <= hi[r] && lo[r] != UINT32_MAX; q++)
                u[nu++] = k - w + 1 + q;
            }
          } else { /* O(c - 1, r) */
            if (r > 0) u[nu++] = k - w;
            if (lo[r] <= c - 1 && c - 1 <= hi[r] && lo[r] != UINT32_MAX)
              u[nu++] = r * w;
          }
          tk[k].waits = (uint32_t)nu;
          for (size_t i = 0; i < nu; i++)
            if (pass == 0)
              ndep[u[i] + 1]++;
            else
              deps[tk[u[i]].dep_end++] = (uint32_t)k;
        }
      if (pass == 0) {
        for (size_t k = 0; k < nt; k++) {
          ndep[k + 1] += ndep[k];
          tk[k].dep_begin = tk[k].dep_end = ndep[k];
        }
        deps = malloc((ndep[nt] ? ndep[nt] : 1) * sizeof *deps);
        if (!deps) st = NNMEM_ERR_NOMEM;
      }
    }
  }
  if (st == NNMEM_OK) {
    jb->nready = 0;
    for (size_t k = nt; k-- > 0;) /* a stack: task 0 on top */
      if (tk[k].waits == 0) ready[jb->nready++] = (uint32_t)k;
    jb->tasks = tk, jb->dependents = deps, jb->ready = ready, jb->ntasks = nt;
  } else {
    free(tk);
    free(deps);
    free(ready);
  }
  free(lo);
  free(hi);
  free(ndep);
  return st;
}

/* Building and freeing the parts' maps, one part per thread at a time. */
typedef struct maps_job {
  const nnmem_problem_t *p;
  nnmem__occ_t **occ;
  const uint32_t *members[MAX_PARTS];
  size_t count[MAX_PARTS], np;
  nnmem_status_t st[MAX_PARTS];
  int destroy;
  size_t next; /* atomic: the next part to take */
} maps_job_t;

static void *maps_worker(void *arg) {
  maps_job_t *mj = arg;
  for (;;) {
    size_t q = __atomic_fetch_add(&mj->next, 1, __ATOMIC_RELAXED);
    if (q >= mj->np) return NULL;
    if (mj->destroy)
      nnmem__occ_destroy(mj->occ[q]);
    else
      mj->st[q] = nnmem__occ_create_subset(mj->p, mj->members[q], mj->count[q],
                                           &mj->occ[q]);
  }
}

/* Runs maps_worker on up to `threads` threads (at most one per part);
 * returns the first part's failure, if any. */
static nnmem_status_t run_maps(maps_job_t *mj, unsigned threads) {
  mj->next = 0;
  on_threads(threads < mj->np ? threads : (unsigned)mj->np, maps_worker, mj, 0);
  for (size_t q = 0; q < mj->np && !mj->destroy; q++)
    if (mj->st[q]) return mj->st[q];
  return NNMEM_OK;
}

nnmem_status_t nnmem__place_split(const nnmem_problem_t *p,
                                  const uint32_t *order, uint64_t align,
                                  nnmem__fit_t fit, uint64_t limit,
                                  nnmem__place_ctl_t *ctl, uint64_t *offsets,
                                  uint64_t *height) {
  size_t n = nnmem_problem_count(p);
  layout_t L = {0};
  nnmem_status_t st = ctl->deadline > 0 ? NNMEM_OK : layout_make(p, order, &L);
  if (st) return st;
  if (L.np == 0)
    return nnmem__place_in_order(p, order, align, fit, limit, ctl, offsets,
                                 height);
  nnmem__occ_t *occ[MAX_PARTS] = {0};
  job_t jb = {.p = p,
              .order = L.sched,
              .plo = L.plo,
              .phi = L.phi,
              .align = align,
              .limit = limit,
              .fit = fit,
              .offsets = offsets,
              .occ = occ,
              .fail_pos = n,
              .fail_seen = n};
  unsigned threads = plan_threads();
  maps_job_t mj = {.p = p, .occ = occ, .np = L.np};
  /* each part's map over the buffers that meet its span */
  size_t members[MAX_PARTS] = {0}, nmem = 0;
  for (size_t i = 0; i < n; i++)
    for (uint32_t q = L.plo[i]; q <= L.phi[i]; q++)
      members[q]++;
  for (size_t q = 0; q < L.np; q++)
    nmem += members[q];
  uint32_t *mem = malloc((nmem ? nmem : 1) * sizeof *mem);
  if (!mem) st = NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) {
    uint32_t *at[MAX_PARTS], *cur = mem;
    for (size_t q = 0; q < L.np; q++)
      at[q] = cur, cur += members[q];
    for (size_t i = 0; i < n; i++)
      for (uint32_t q = L.plo[i]; q <= L.phi[i]; q++)
        *at[q]++ = (uint32_t)i;
    cur = mem;
    for (size_t q = 0; q < L.np; q++) {
      mj.members[q] = cur, mj.count[q] = members[q];
      cur += members[q];
    }
    st = run_maps(&mj, threads);
  }
  free(mem);
  if (st == NNMEM_OK) st = build_tasks(&jb, &L);
  uint64_t top = 0;
  if (st == NNMEM_OK) st = run_tasks(&jb, threads, &top);
  if (st == NNMEM_OK && jb.fail_pos < n) {
    st = jb.fail_st;
    if (st == NNMEM_ERR_OVERFLOW) ctl->overflow_buf = L.sched[jb.fail_pos];
  }
  if (st == NNMEM_OK) *height = top;
  mj.destroy = 1; /* a map never made is NULL: destroy takes it */
  run_maps(&mj, threads);
  free(jb.tasks);
  free((void *)jb.dependents);
  free(jb.ready);
  layout_free(&L);
  return st;
}

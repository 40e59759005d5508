/* split.c - large problems placed in parts of time, the parts in parallel.
 *
 * On a long schedule most buffers live for a short while, and a buffer
 * interacts only with those whose lifetimes meet its own. Cut the
 * schedule at K - 1 steps t_1 < ... < t_{K-1}: a buffer crossing a cut
 * (first < t <= last - 1) is a "crossing" buffer; every other one lies in
 * one part [t_p, t_{p+1}). Each part keeps its own occupancy map
 * (occupancy.c) over its own buffers and the crossing buffers that meet
 * its span. Buffers of different parts never meet in time, so the parts
 * can place their own buffers independently, on as many threads as the
 * machine has.
 *
 * The ordering is kept, in R rounds of consecutive positions of it:
 *   1. the round's crossing buffers, one by one: the gaps of every map the
 *      buffer meets, intersected, give the gaps among every placed buffer
 *      it meets (two buffers meeting in time share a part); best (or
 *      first) fit as in place.c; the buffer then goes into each of those
 *      maps;
 *   2. the round's own buffers of every part, the parts in parallel.
 * So the plan is the one-run plan except that inside a round the crossing
 * buffers go first; it depends on the problem and the ordering only,
 * never on the number of threads (measured in bench/plan on 1,000,000
 * random buffers: see the README).
 *
 * Cuts: at the quantiles of the buffers' first steps (K = n /
 * PART_BUFFERS, at most MAX_PARTS), so parts hold similar numbers of
 * buffers. When more than n / MAX_CROSSING_SHARE buffers would cross
 * (long lifetimes: the problem does not split well), or a deadline is set
 * (its fast mode lives in place.c), the whole problem is placed in one
 * run instead.
 *
 * Thread-safety: reentrant. In step 2 each part writes only its own
 * buffers' offsets and its own map. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "plan/place.h"
#include "plan/radix.h"

#define PART_BUFFERS 100000u  /* buffers a part aims at */
#define MAX_PARTS 16u         /* parts at most */
#define MAX_CROSSING_SHARE 8u /* at most n / this buffers may cross */

#define ROUNDS 256u /* rounds of the ordering */

/* One part: its map and its own buffers in the ordering's order, with
 * where each round ends among them. */
typedef struct part {
  nnmem__occ_t *occ;
  uint32_t *own;
  size_t nown;
  size_t round_end[ROUNDS];
  size_t done; /* own buffers placed */
  nnmem__range_t *gaps;
  size_t gaps_cap;
  uint64_t top;
  size_t overflow_buf;
  nnmem_status_t st;
} part_t;

/* What the threads share. */
typedef struct job {
  const nnmem_problem_t *p;
  uint64_t align, limit;
  nnmem__fit_t fit;
  uint64_t *offsets;
  part_t *parts;
  size_t nparts, round;
  atomic_size_t next; /* the next part to take */
} job_t;

/* Places part pt's own buffers of the current round. */
static void run_part(job_t *jb, part_t *pt) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(jb->p);
  size_t end = pt->round_end[jb->round];
  for (; pt->done < end && pt->st == NNMEM_OK; pt->done++) {
    uint32_t x = pt->own[pt->done];
    uint64_t size, al = nnmem__max_u64(b[x].align, jb->align), e = 0;
    size_t k = 0;
    uint64_t top = 0;
    jb->offsets[x] = 0;
    if (b[x].size == 0) continue; /* occupies nothing */
    nnmem_status_t st = NNMEM_OK;
    if (nnmem__padded_size_checked(&b[x], jb->align, &size))
      st = NNMEM_ERR_OVERFLOW;
    else if (!(st = nnmem__occ_gaps(pt->occ, x, size, &pt->gaps, &k,
                                    &pt->gaps_cap, &top)) &&
             (nnmem__choose_gap(pt->gaps, k, top, size, al, jb->fit,
                                &jb->offsets[x]) ||
              nnmem__add_overflow(jb->offsets[x], size, &e)))
      st = NNMEM_ERR_OVERFLOW;
    if (st == NNMEM_OK && e > jb->limit) st = NNMEM_ERR_CAPACITY;
    if (st == NNMEM_OK) st = nnmem__occ_add(pt->occ, x, jb->offsets[x], e);
    if (st == NNMEM_ERR_OVERFLOW) pt->overflow_buf = x;
    pt->st = st;
    pt->top = nnmem__max_u64(pt->top, e);
  }
}

static void *worker(void *arg) {
  job_t *jb = arg;
  for (;;) {
    size_t k = atomic_fetch_add(&jb->next, 1);
    if (k >= jb->nparts) return NULL;
    run_part(jb, &jb->parts[k]);
  }
}

/* Runs every part's round on up to `threads` threads (the caller's
 * included; a thread that cannot be started leaves its share to the
 * others). */
static void run_parts(job_t *jb, unsigned threads) {
  pthread_t tid[MAX_PARTS];
  unsigned started = 0;
  atomic_store(&jb->next, 0);
  for (unsigned t = 1; t < threads && t < jb->nparts; t++)
    if (pthread_create(&tid[started], NULL, worker, jb) == 0) started++;
  worker(jb);
  for (unsigned t = 0; t < started; t++)
    pthread_join(tid[t], NULL);
}

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

/* Step 1 for crossing buffer x: its offset among the buffers placed in the
 * maps of parts plo..phi, and it goes into each of them. */
static nnmem_status_t place_crossing(job_t *jb, uint32_t x, uint32_t plo,
                                     uint32_t phi, nnmem__range_t **cand,
                                     size_t *cand_cap, uint64_t *top_out) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(jb->p);
  uint64_t size, al = nnmem__max_u64(b[x].align, jb->align), e, top = 0;
  jb->offsets[x] = 0;
  if (b[x].size == 0) return NNMEM_OK;
  if (nnmem__padded_size_checked(&b[x], jb->align, &size))
    return NNMEM_ERR_OVERFLOW;
  /* candidates: everything, cut down map by map */
  nnmem_status_t st = nnmem__grow((void **)cand, cand_cap, 2, sizeof **cand);
  if (st) return st;
  size_t nc = 1;
  (*cand)[0] = (nnmem__range_t){0, UINT64_MAX};
  for (uint32_t q = plo; q <= phi && st == NNMEM_OK; q++) {
    part_t *pt = &jb->parts[q];
    size_t k = 0;
    uint64_t t = 0;
    st = nnmem__occ_gaps(pt->occ, x, size, &pt->gaps, &k, &pt->gaps_cap, &t);
    if (st == NNMEM_OK) /* the pieces at most double, plus one */
      st =
          nnmem__grow((void **)cand, cand_cap, 2 * (nc + k + 1), sizeof **cand);
    if (st) break;
    nnmem__range_t *out = *cand + nc + k + 1; /* past the live ones */
    size_t m = intersect(*cand, nc, pt->gaps, k, t, size, out);
    memmove(*cand, out, m * sizeof *out);
    nc = m;
    top = nnmem__max_u64(top, t);
  }
  if (st) return st;
  /* the pieces below the top are the gaps; the last one may run to the
   * top of the address space, which is the top itself */
  if (nc && (*cand)[nc - 1].hi == UINT64_MAX) nc--;
  if (nnmem__choose_gap(*cand, nc, top, size, al, jb->fit, &jb->offsets[x]) ||
      nnmem__add_overflow(jb->offsets[x], size, &e))
    return NNMEM_ERR_OVERFLOW;
  if (e > jb->limit) return NNMEM_ERR_CAPACITY;
  for (uint32_t q = plo; q <= phi && st == NNMEM_OK; q++)
    st = nnmem__occ_add(jb->parts[q].occ, x, jb->offsets[x], e);
  *top_out = nnmem__max_u64(*top_out, e);
  return st;
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

/* The cut steps: the first steps at the quantiles k / K, strictly
 * increasing (repeated ones dropped). Returns how many (0: none). */
static size_t choose_cuts(const nnmem_buffer_t *b, size_t n, size_t parts,
                          uint64_t *cuts, int *nomem) {
  uint64_t *first = malloc(n * sizeof *first), *tmp = malloc(n * sizeof *tmp);
  size_t nc = 0;
  uint64_t *sorted = NULL;
  if (first && tmp) {
    for (size_t i = 0; i < n; i++)
      first[i] = b[i].first;
    sorted = nnmem__radix_sort(first, tmp, n, sizeof *first, 0, 0);
  }
  if (!sorted) {
    *nomem = 1;
  } else {
    for (size_t k = 1; k < parts; k++) {
      uint64_t t = sorted[k * n / parts];
      if (t > 0 && (nc == 0 || t > cuts[nc - 1])) cuts[nc++] = t;
    }
  }
  free(first);
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

nnmem_status_t nnmem__place_split(const nnmem_problem_t *p,
                                  const uint32_t *order, uint64_t align,
                                  nnmem__fit_t fit, uint64_t limit,
                                  nnmem__place_ctl_t *ctl, uint64_t *offsets,
                                  uint64_t *height) {
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  size_t want = n / PART_BUFFERS < MAX_PARTS ? n / PART_BUFFERS : MAX_PARTS;
  if (n < NNMEM__SPLIT_MIN || want < 2 || ctl->deadline > 0)
    return nnmem__place_in_order(p, order, align, fit, limit, ctl, offsets,
                                 height);
  uint64_t cuts[MAX_PARTS];
  int nomem = 0;
  size_t ncut = choose_cuts(b, n, want, cuts, &nomem), np = ncut + 1;
  if (nomem) return NNMEM_ERR_NOMEM;
  /* the parts each buffer meets; how many buffers each part's map holds */
  uint32_t *plo = malloc(n * sizeof *plo), *phi = malloc(n * sizeof *phi);
  size_t members[MAX_PARTS] = {0}, own[MAX_PARTS] = {0}, ncross = 0;
  if (!plo || !phi) {
    free(plo);
    free(phi);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    plo[i] = part_of(cuts, ncut, b[i].first);
    phi[i] = part_of(cuts, ncut, b[i].last - 1);
    own[plo[i]] += plo[i] == phi[i];
    ncross += plo[i] != phi[i];
    for (uint32_t q = plo[i]; q <= phi[i]; q++)
      members[q]++;
  }
  if (ncut == 0 || ncross > n / MAX_CROSSING_SHARE) { /* does not split */
    free(plo);
    free(phi);
    return nnmem__place_in_order(p, order, align, fit, limit, ctl, offsets,
                                 height);
  }
  part_t parts[MAX_PARTS];
  memset(parts, 0, sizeof parts);
  size_t nmem = 0;
  for (size_t q = 0; q < np; q++)
    nmem += members[q];
  /* one array: each part's members (for its map), then the crossing
   * buffers in order, then each part's own buffers in order */
  uint32_t *buf = malloc((nmem + n) * sizeof *buf);
  uint32_t *cross = NULL;
  size_t cross_end[ROUNDS];
  nnmem_status_t st = buf ? NNMEM_OK : NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) {
    uint32_t *at = buf, *mem[MAX_PARTS];
    for (size_t q = 0; q < np; q++)
      mem[q] = at, at += members[q];
    cross = at, at += ncross;
    for (size_t q = 0; q < np; q++)
      parts[q].own = at, at += own[q];
    size_t nm[MAX_PARTS] = {0}, nc = 0;
    for (size_t i = 0; i < n; i++)
      for (uint32_t q = plo[i]; q <= phi[i]; q++)
        mem[q][nm[q]++] = (uint32_t)i;
    for (size_t r = 0, j = 0; r < ROUNDS; r++) { /* the rounds' members */
      size_t stop = (size_t)((uint64_t)n * (r + 1) / ROUNDS);
      for (; j < stop; j++) {
        uint32_t x = order[j];
        if (plo[x] != phi[x])
          cross[nc++] = x;
        else
          parts[plo[x]].own[parts[plo[x]].nown++] = x;
      }
      cross_end[r] = nc;
      for (size_t q = 0; q < np; q++)
        parts[q].round_end[r] = parts[q].nown;
    }
    for (size_t q = 0; q < np && st == NNMEM_OK; q++)
      st = nnmem__occ_create_subset(p, mem[q], members[q], &parts[q].occ);
  }
  job_t jb = {.p = p,
              .align = align,
              .limit = limit,
              .fit = fit,
              .offsets = offsets,
              .parts = parts,
              .nparts = np};
  nnmem__range_t *cand = NULL;
  size_t cand_cap = 0, done = 0;
  uint64_t top = 0;
  unsigned threads = plan_threads();
  for (size_t r = 0; r < ROUNDS && st == NNMEM_OK; r++) {
    for (; done < cross_end[r] && st == NNMEM_OK; done++) { /* 1. */
      uint32_t x = cross[done];
      st = place_crossing(&jb, x, plo[x], phi[x], &cand, &cand_cap, &top);
      if (st == NNMEM_ERR_OVERFLOW) ctl->overflow_buf = x;
    }
    if (st) break;
    jb.round = r; /* 2. */
    run_parts(&jb, threads);
    for (size_t q = 0; q < np && st == NNMEM_OK; q++)
      if ((st = parts[q].st) == NNMEM_ERR_OVERFLOW) /* the first, in order */
        ctl->overflow_buf = parts[q].overflow_buf;
  }
  for (size_t q = 0; q < np; q++) {
    top = nnmem__max_u64(top, parts[q].top);
    nnmem__occ_destroy(parts[q].occ);
    free(parts[q].gaps);
  }
  if (st == NNMEM_OK) *height = top;
  free(cand);
  free(buf);
  free(plo);
  free(phi);
  return st;
}

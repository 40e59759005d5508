/* order_exact.c - the exact operator order of one part: best-first search
 * over scheduled-op sets (step 3 of order_search.c; after SERENITY, Ahn et
 * al., MLSys 2020, which runs the same dynamic program breadth-first).
 *
 * A state is (S, T): the part's ops already run and the in-place decisions
 * of the buffers still live. The bytes live after it depend on the state
 * only (order_model.c), so two paths to one state differ only in their peak
 * and the lower one dominates: the table keeps, per state, the lowest peak
 * seen and the (parent, op) that reached it.
 *
 *   1. f(state) = max(peak, bytes live after its last op, max over the
 *      unscheduled ops o of lb(o)), where lb(o) = bytes o's inputs, new
 *      outputs and workspace occupy in every order: no completion of the
 *      state has a peak below f.
 *   2. Pop the state with the lowest f (ties: deeper first, then lower
 *      index). The peak is a bottleneck cost, monotone along a path, so the
 *      first complete state popped has the minimum peak of the part.
 *   3. Expand by each ready op; a successor with f >= ub (the beam's peak)
 *      cannot beat the beam and is dropped; one already in the table with a
 *      peak <= the new one is dropped; otherwise it is stored / lowered and
 *      pushed (stale heap entries are skipped when popped).
 *   4. An empty heap proves ub optimal; a full table (max_states, or the
 *      256 MiB memory cap) ends the search unproven.
 *
 *    table (open addressing, Zobrist hash of S and T) --> state index
 *    states[i]: peak, after, parent, op, depth      bits[i]: S | T
 *
 * Complexity: O(states * k * W) time for a part of k ops (W = k / 64 words),
 * O(states * (2W * 8 + 48)) bytes.
 * Thread-safety: works on the caller's search state only. */
#include <string.h>

#include "analysis/order_search.h"
#include "common/util.h"

typedef struct xst {
  uint64_t peak, after, hash;
  uint32_t parent, op, depth;
  uint32_t closed;
} xst_t;

typedef struct hent {
  uint64_t f;
  uint32_t depth, idx;
} hent_t;

typedef struct xs {
  search_t *s;
  xst_t *st;
  uint64_t *bits;
  size_t n, alloc, cap; /* states: used, allocated, budget */
  uint32_t *table;
  size_t tmask;
  hent_t *heap;
  size_t hn, hcap;
  uint64_t *lb;            /* per local op */
  uint32_t *rop;           /* scratch: ready ops of the state expanded */
  nnmem__om_step_t *rstep; /* and their steps */
} xs_t;

static int hless(const hent_t *a, const hent_t *b) {
  if (a->f != b->f) return a->f < b->f;
  if (a->depth != b->depth) return a->depth > b->depth;
  return a->idx < b->idx;
}

static nnmem_status_t hpush(xs_t *x, hent_t e) {
  if (x->hn == x->hcap) {
    nnmem_status_t st =
        nnmem__grow((void **)&x->heap, &x->hcap, x->hn + 1, sizeof *x->heap);
    if (st != NNMEM_OK) return st;
  }
  size_t i = x->hn++;
  while (i && hless(&e, &x->heap[(i - 1) / 2])) {
    x->heap[i] = x->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  x->heap[i] = e;
  return NNMEM_OK;
}

static hent_t hpop(xs_t *x) {
  hent_t top = x->heap[0], e = x->heap[--x->hn];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= x->hn) break;
    if (c + 1 < x->hn && hless(&x->heap[c + 1], &x->heap[c])) c++;
    if (!hless(&x->heap[c], &e)) break;
    x->heap[i] = x->heap[c];
    i = c;
  }
  if (x->hn) x->heap[i] = e;
  return top;
}

/* Table slot of (S, T) with hash h: an index into states or UINT32_MAX. */
static uint32_t *lookup(xs_t *x, const uint64_t *bits, uint64_t h) {
  size_t W2 = 2 * (size_t)x->s->W;
  for (size_t i = (size_t)h & x->tmask;; i = (i + 1) & x->tmask) {
    uint32_t j = x->table[i];
    if (j == UINT32_MAX) return &x->table[i];
    if (x->st[j].hash == h &&
        !memcmp(x->bits + (size_t)j * W2, bits, W2 * sizeof *bits))
      return &x->table[i];
  }
}

/* Doubles the state arrays (up to the budget) and rebuilds the table at
 * twice their size, so it stays at most half full. */
static nnmem_status_t grow(xs_t *x) {
  size_t W2 = 2 * (size_t)x->s->W, na = x->alloc ? 2 * x->alloc : 1024;
  if (na > x->cap) na = x->cap;
  xst_t *st = realloc(x->st, (na + 1) * sizeof *st);
  if (!st) return NNMEM_ERR_NOMEM;
  x->st = st;
  uint64_t *bits = realloc(x->bits, (na + 1) * W2 * sizeof *bits);
  if (!bits) return NNMEM_ERR_NOMEM;
  x->bits = bits;
  size_t ts = 1;
  while (ts < 2 * na + 2)
    ts <<= 1;
  uint32_t *t = malloc(ts * sizeof *t);
  if (!t) return NNMEM_ERR_NOMEM;
  free(x->table);
  x->table = t;
  x->tmask = ts - 1;
  x->alloc = na;
  memset(t, 0xff, ts * sizeof *t);
  for (size_t j = 0; j < x->n; j++)
    *lookup(x, x->bits + j * W2, x->st[j].hash) = (uint32_t)j;
  return NNMEM_OK;
}

/* Step 1's remaining-ops term. */
static uint64_t lb_rest(const xs_t *x, const uint64_t *S) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < x->s->k; i++)
    if (!nnmem__om_bit(S, i) && x->lb[i] > b) b = x->lb[i];
  return b;
}

/* Step 3 for one successor (bits = S' | T'). Returns NNMEM_ERR_TIMEOUT when
 * the table is full. */
static nnmem_status_t offer(xs_t *x, const uint64_t *bits, uint64_t h,
                            uint64_t peak, uint64_t after, uint64_t f,
                            uint32_t parent, uint32_t op, uint32_t depth) {
  uint32_t *slot = lookup(x, bits, h);
  uint32_t j = *slot;
  if (j != UINT32_MAX) {
    xst_t *e = &x->st[j];
    if (e->closed || e->peak <= peak) return NNMEM_OK;
  } else {
    if (x->n >= x->cap) return NNMEM_ERR_TIMEOUT;
    if (x->n >= x->alloc) {
      nnmem_status_t gs = grow(x);
      if (gs != NNMEM_OK) return gs;
      slot = lookup(x, bits, h);
    }
    j = (uint32_t)x->n++;
    *slot = j;
    memcpy(x->bits + (size_t)j * 2 * x->s->W, bits,
           2 * (size_t)x->s->W * sizeof *bits);
    x->st[j].hash = h;
    x->st[j].closed = 0;
    x->s->states++;
  }
  xst_t *e = &x->st[j];
  e->peak = peak;
  e->after = after;
  e->parent = parent;
  e->op = op;
  e->depth = depth;
  hent_t he = {f, depth, j};
  return hpush(x, he);
}

/* Expands state j (step 3). */
static nnmem_status_t expand(xs_t *x, uint32_t j, uint64_t ub, uint64_t *tmp) {
  search_t *s = x->s;
  size_t W = s->W;
  uint64_t *S = tmp + 2 * W, *T = S + W; /* a copy: offer may move bits */
  memcpy(S, x->bits + (size_t)j * 2 * W, 2 * W * sizeof *S);
  xst_t e = x->st[j];
  int neutral = s->m->ip_neutral;
  uint32_t nr = 0, only = UINT32_MAX;
  for (uint32_t i = 0; i < s->k; i++) { /* each ready op's step, once */
    if (!nnmem__order_ready(s, S, i)) continue;
    nnmem__order_step(s, S, T, e.after, i, &x->rstep[nr], NULL);
    x->rop[nr++] = i;
  }
  for (uint32_t q = 0; q < nr && neutral && only == UINT32_MAX; q++)
    if (x->rstep[q].live <= e.peak && x->rstep[q].after <= e.after)
      only = q; /* nnmem__order_free_op's rule */
  nnmem_status_t st = NNMEM_OK;
  for (uint32_t q = 0; q < nr && st == NNMEM_OK; q++) {
    if (only != UINT32_MAX && q != only) continue;
    uint32_t i = x->rop[q];
    nnmem__om_step_t r = x->rstep[q];
    uint64_t peak = nnmem__max_u64(e.peak, r.live), f = peak;
    if (e.depth + 1 < s->k) f = nnmem__max_u64(f, r.after);
    if (f >= ub) continue;
    memcpy(tmp, S, W * sizeof *tmp);
    nnmem__om_set(tmp, i);
    f = nnmem__max_u64(f, lb_rest(x, tmp));
    if (f >= ub) continue;
    uint64_t h;
    if (neutral) { /* T stays empty: the hash is S's */
      memset(tmp + W, 0, W * sizeof *tmp);
      h = e.hash ^ s->zob[i];
    } else {
      memcpy(tmp + W, T, W * sizeof *tmp);
      nnmem__order_step(s, S, T, e.after, i, &r, tmp + W);
      h = 0;
      for (size_t w = 0; w < W; w++)
        for (uint64_t b = tmp[w]; b; b &= b - 1)
          h ^= s->zob[w * 64 + (size_t)__builtin_ctzll(b)];
      h ^= nnmem__order_hash_t(s, tmp + W);
    }
    st = offer(x, tmp, h, peak, r.after, f, j, i, e.depth + 1);
  }
  return st;
}

static nnmem_status_t xs_init(xs_t *x, search_t *s) {
  memset(x, 0, sizeof *x);
  x->s = s;
  size_t per = 2 * (size_t)s->W * 8 + sizeof(xst_t) + 2 * sizeof(uint32_t) +
               sizeof(hent_t);
  size_t cap = (size_t)s->states_left, by_mem = EXACT_MEM_BYTES / per;
  if (cap > by_mem) cap = by_mem;
  if (cap > UINT32_MAX / 4) cap = UINT32_MAX / 4;
  x->cap = cap ? cap : 1;
  x->lb = malloc(((size_t)s->k + 1) * sizeof *x->lb);
  x->rop = malloc(((size_t)s->k + 1) * sizeof *x->rop);
  x->rstep = malloc(((size_t)s->k + 1) * sizeof *x->rstep);
  if (!x->lb || !x->rop || !x->rstep || grow(x) != NNMEM_OK)
    return NNMEM_ERR_NOMEM;
  for (uint32_t i = 0; i < s->k; i++)
    x->lb[i] = s->m->ops[s->ops[i]].lb;
  return NNMEM_OK;
}

static void xs_free(xs_t *x) {
  free(x->st), free(x->bits), free(x->table), free(x->heap), free(x->lb);
  free(x->rop), free(x->rstep);
}

nnmem_status_t nnmem__order_exact(search_t *s, uint64_t ub, uint32_t *lorder,
                                  int *exact) {
  xs_t x;
  memset(&x, 0, sizeof x);
  *exact = 0;
  size_t W = s->W;
  uint64_t *tmp = calloc(4 * W + 1, sizeof *tmp);
  nnmem_status_t st = tmp ? xs_init(&x, s) : NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) /* the root: nothing of this part ran */
    st = offer(&x, tmp, 0, 0, s->m_start, 0, UINT32_MAX, UINT32_MAX, 0);
  while (st == NNMEM_OK && x.hn) {
    hent_t e = hpop(&x);
    xst_t *z = &x.st[e.idx];
    if (z->closed) continue; /* stale: a lower peak popped first */
    if (e.f >= ub) break;    /* nothing left below ub */
    if (z->depth == s->k) {  /* step 2: a complete order below ub */
      uint32_t j = e.idx;
      for (uint32_t d = s->k; d-- > 0; j = x.st[j].parent)
        lorder[d] = x.st[j].op;
      *exact = 1;
      break;
    }
    z->closed = 1;
    st = expand(&x, e.idx, ub, tmp);
  }
  if (st == NNMEM_OK && !*exact) *exact = 1;  /* step 4: ub is optimal */
  if (st == NNMEM_ERR_TIMEOUT) st = NNMEM_OK; /* budget: unproven */
  s->states_left -= x.n < s->states_left ? x.n : s->states_left;
  xs_free(&x);
  free(tmp);
  return st;
}

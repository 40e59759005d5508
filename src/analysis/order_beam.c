/* order_beam.c - the heuristic operator order: beam search over the ready
 * ops of one part (step 2 of order_search.c).
 *
 * Algorithm: keep up to B states (set of scheduled ops S, in-place
 * decisions T, bytes live, peak so far, count of unscheduled predecessors
 * per op). Each step:
 *   1. every kept state is expanded by every ready op, scored with the step
 *      function (order_model.c) without copying the state;
 *   2. candidates are sorted by (peak so far, bytes live after the op,
 *      parent's rank, op index): the lowest peak first, then the op that
 *      frees the most;
 *   3. the first B with distinct S (Zobrist hash) become the next beam.
 * B = 1 is the greedy "lowest peak, then most freed" order; a chain has a
 * single order, which every B finds. The result is one complete order and
 * its peak; it bounds the exact search from above.
 * Complexity: O(k * B * k) ready scans and step evaluations for k ops,
 * O(B * k) memory. Deterministic (ties broken by indices).
 * Thread-safety: works on the caller's search state only. */
#include <string.h>

#include "analysis/order_search.h"
#include "common/util.h"

typedef struct cand {
  uint64_t peak, after, hash;
  uint32_t b, i;
} cand_t;

static int cand_cmp(const void *pa, const void *pb) {
  const cand_t *a = pa, *b = pb;
  if (a->peak != b->peak) return a->peak < b->peak ? -1 : 1;
  if (a->after != b->after) return a->after < b->after ? -1 : 1;
  if (a->b != b->b) return a->b < b->b ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

typedef struct beam {
  uint64_t *bits; /* B * 2W: S then T */
  uint32_t *cnt;  /* B * k */
  uint64_t *m, *peak, *hash;
  uint32_t *node;
} beam_t;

static int beam_alloc(beam_t *b, size_t B, size_t k, size_t W) {
  b->bits = calloc(B * 2 * W + 1, sizeof *b->bits);
  b->cnt = calloc(B * k + 1, sizeof *b->cnt);
  b->m = calloc(B, sizeof *b->m);
  b->peak = calloc(B, sizeof *b->peak);
  b->hash = calloc(B, sizeof *b->hash);
  b->node = calloc(B, sizeof *b->node);
  return b->bits && b->cnt && b->m && b->peak && b->hash && b->node;
}

static void beam_free(beam_t *b) {
  free(b->bits), free(b->cnt), free(b->m), free(b->peak), free(b->hash);
  free(b->node);
}

/* Steps 1-2: candidates of the nb states of `cur`, sorted. */
static size_t expand(search_t *s, const beam_t *cur, size_t nb, cand_t *c) {
  size_t n = 0, W = s->W;
  for (uint32_t b = 0; b < nb; b++) {
    const uint64_t *S = cur->bits + (size_t)b * 2 * W, *T = S + W;
    const uint32_t *cnt = cur->cnt + (size_t)b * s->k;
    uint32_t only = nnmem__order_free_op(s, S, T, cur->m[b], cur->peak[b], cnt);
    for (uint32_t i = 0; i < s->k; i++) {
      if (only != UINT32_MAX && i != only) continue;
      if (cnt[i] || nnmem__om_bit(S, i)) continue;
      nnmem__om_step_t r;
      nnmem__order_step(s, S, T, cur->m[b], i, &r, NULL);
      c[n].peak = nnmem__max_u64(cur->peak[b], r.live);
      c[n].after = r.after;
      c[n].hash = cur->hash[b] ^ s->zob[i];
      c[n].b = b;
      c[n++].i = i;
    }
  }
  qsort(c, n, sizeof *c, cand_cmp);
  return n;
}

/* Step 3: the successor of candidate c into slot `to` of `nx`. */
static void advance(search_t *s, const beam_t *cur, beam_t *nx, uint32_t to,
                    const cand_t *c, uint32_t node) {
  size_t W = s->W, k = s->k;
  const uint64_t *S = cur->bits + (size_t)c->b * 2 * W, *T = S + W;
  uint64_t *S2 = nx->bits + (size_t)to * 2 * W, *T2 = S2 + W;
  memcpy(S2, S, 2 * W * sizeof *S);
  memcpy(nx->cnt + (size_t)to * k, cur->cnt + (size_t)c->b * k,
         k * sizeof *nx->cnt);
  nnmem__om_step_t r;
  nnmem__order_step(s, S, T, cur->m[c->b], c->i, &r, T2);
  nnmem__om_set(S2, c->i);
  const nnmem__om_op_t *op = &s->m->ops[s->ops[c->i]];
  uint32_t *cnt = nx->cnt + (size_t)to * k;
  for (uint32_t j = 0; j < op->succ_n; j++) {
    uint32_t q = s->m->idx[op->succ_off + j];
    if (s->part[q] == s->v.cur) cnt[s->local[q]]--;
  }
  nx->m[to] = r.after;
  nx->peak[to] = c->peak;
  nx->hash[to] = c->hash;
  nx->node[to] = node;
}

nnmem_status_t nnmem__order_beam(search_t *s, uint32_t B, uint32_t *lorder,
                                 uint64_t *peak) {
  size_t k = s->k, W = s->W;
  if (B < 1) B = 1;
  beam_t cur, nx;
  memset(&cur, 0, sizeof cur);
  memset(&nx, 0, sizeof nx);
  cand_t *c = malloc((B * k + 1) * sizeof *c);
  uint32_t *par = malloc((B * k + 1) * sizeof *par);
  uint32_t *opi = malloc((B * k + 1) * sizeof *opi);
  nnmem_status_t st = NNMEM_OK;
  if (!c || !par || !opi || !beam_alloc(&cur, B, k, W) ||
      !beam_alloc(&nx, B, k, W))
    st = NNMEM_ERR_NOMEM;
  size_t nb = 1, nodes = 0;
  if (st == NNMEM_OK) {
    for (uint32_t i = 0; i < k; i++)
      for (size_t w = 0; w < W; w++)
        cur.cnt[i] +=
            (uint32_t)__builtin_popcountll(s->predmask[(size_t)i * W + w]);
    cur.m[0] = s->m_start;
    cur.node[0] = UINT32_MAX;
  }
  for (size_t d = 0; d < k && st == NNMEM_OK; d++) {
    size_t n = expand(s, &cur, nb, c), kept = 0;
    for (size_t j = 0; j < n && kept < B; j++) {
      int dup = 0;
      for (size_t q = 0; q < kept && !dup; q++)
        dup = nx.hash[q] == c[j].hash;
      if (dup) continue;
      par[nodes] = cur.node[c[j].b];
      opi[nodes] = c[j].i;
      advance(s, &cur, &nx, (uint32_t)kept++, &c[j], (uint32_t)nodes++);
    }
    s->states += kept;
    beam_t t = cur;
    cur = nx;
    nx = t;
    nb = kept;
  }
  if (st == NNMEM_OK) {
    *peak = k ? cur.peak[0] : 0;
    uint32_t nd = k ? cur.node[0] : UINT32_MAX;
    for (size_t d = k; d-- > 0; nd = par[nd])
      lorder[d] = opi[nd];
  }
  beam_free(&cur);
  beam_free(&nx);
  free(c), free(par), free(opi);
  return st;
}

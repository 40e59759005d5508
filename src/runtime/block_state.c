/* block_state.c - the block state machine (include/nnmem/block_state.h).
 *
 *   word (64 bits):  | epoch (32) | holders (30) | state (2) |
 *
 * Steps of a transition: 1. load the word; 2. decide from (state, holders)
 * whether the transition is legal (else count it and return
 * NNMEM_ERR_STATE); 3. compute the new word; 4. compare-and-swap (acq_rel);
 * on failure count a retry and go to 2 with the fresh value. The epoch makes
 * a word of a reused slot differ from every earlier word of that slot (no
 * ABA within 2^32 reuses).
 * Invariants (nnmem_block_table_check): state <= RECYCLED; holders > 0
 * exactly when state == ACTIVE.
 * Complexity: O(1) expected per call (retries only under contention).
 * Thread-safety: lock-free; counters are relaxed atomics. */
#include <stdatomic.h>
#include <stdlib.h>

#include "common/util.h"
#include "nnmem/block_state.h"

#define HOLDERS_MAX ((1u << 30) - 1)

struct nnmem_block_table {
  size_t n;
  _Atomic uint64_t *w;
  atomic_uint_fast64_t transitions, illegal, bad_index, retries;
};

static inline uint64_t pack(unsigned st, uint32_t holders, uint32_t epoch) {
  return ((uint64_t)epoch << 32) | ((uint64_t)holders << 2) | st;
}
static inline unsigned st_of(uint64_t w) {
  return (unsigned)(w & 3u);
}
static inline uint32_t holders_of(uint64_t w) {
  return (uint32_t)((w >> 2) & HOLDERS_MAX);
}
static inline uint32_t epoch_of(uint64_t w) {
  return (uint32_t)(w >> 32);
}

const char *nnmem_block_state_name(nnmem_block_state_t s) {
  static const char *const names[] = {"allocated", "active", "released",
                                      "recycled"};
  return (unsigned)s < 4 ? names[s] : "?";
}

nnmem_status_t nnmem_block_table_create(size_t n, nnmem_block_table_t **out) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  if (n == 0 || n > SIZE_MAX / sizeof(uint64_t)) return NNMEM_ERR_INVALID;
  nnmem_block_table_t *t = calloc(1, sizeof *t);
  if (!t) return NNMEM_ERR_NOMEM;
  t->w = calloc(n, sizeof *t->w);
  if (!t->w) {
    free(t);
    return NNMEM_ERR_NOMEM;
  }
  t->n = n;
  for (size_t i = 0; i < n; i++)
    atomic_init(&t->w[i], 0);
  atomic_init(&t->transitions, 0);
  atomic_init(&t->illegal, 0);
  atomic_init(&t->bad_index, 0);
  atomic_init(&t->retries, 0);
  *out = t;
  return NNMEM_OK;
}

void nnmem_block_table_destroy(nnmem_block_table_t *t) {
  if (!t) return;
  free((void *)t->w);
  free(t);
}

enum { OP_ACQUIRE, OP_RELEASE, OP_RECYCLE, OP_REUSE };

/* The word after `op` on `w`, or 0 with *legal = 0. */
static uint64_t next_word(int op, uint64_t w, int *legal, int *last) {
  unsigned st = st_of(w);
  uint32_t h = holders_of(w), e = epoch_of(w);
  *legal = 1;
  switch (op) {
    case OP_ACQUIRE:
      if ((st == NNMEM_BLOCK_ALLOCATED || st == NNMEM_BLOCK_ACTIVE) &&
          h < HOLDERS_MAX)
        return pack(NNMEM_BLOCK_ACTIVE, h + 1, e);
      break;
    case OP_RELEASE:
      if (st == NNMEM_BLOCK_ACTIVE && h > 0) {
        *last = h == 1;
        return h == 1 ? pack(NNMEM_BLOCK_RELEASED, 0, e)
                      : pack(NNMEM_BLOCK_ACTIVE, h - 1, e);
      }
      break;
    case OP_RECYCLE:
      if (st == NNMEM_BLOCK_RELEASED) return pack(NNMEM_BLOCK_RECYCLED, 0, e);
      break;
    default:
      if (st == NNMEM_BLOCK_RECYCLED)
        return pack(NNMEM_BLOCK_ALLOCATED, 0, e + 1);
      break;
  }
  *legal = 0;
  return 0;
}

static nnmem_status_t transition(nnmem_block_table_t *t, size_t i, int op,
                                 int *last_out) {
  if (!t) return NNMEM_ERR_INVALID;
  if (i >= t->n) {
    atomic_fetch_add_explicit(&t->bad_index, 1, memory_order_relaxed);
    return NNMEM_ERR_INVALID;
  }
  uint64_t w = atomic_load_explicit(&t->w[i], memory_order_acquire);
  for (;;) {
    int legal, last = 0;
    uint64_t nw = next_word(op, w, &legal, &last);
    if (!legal) {
      atomic_fetch_add_explicit(&t->illegal, 1, memory_order_relaxed);
      return NNMEM_ERR_STATE;
    }
    if (atomic_compare_exchange_weak_explicit(
            &t->w[i], &w, nw, memory_order_acq_rel, memory_order_acquire)) {
      atomic_fetch_add_explicit(&t->transitions, 1, memory_order_relaxed);
      if (last_out) *last_out = last;
      return NNMEM_OK;
    }
    atomic_fetch_add_explicit(&t->retries, 1, memory_order_relaxed);
  }
}

nnmem_status_t nnmem_block_acquire(nnmem_block_table_t *t, size_t i) {
  return transition(t, i, OP_ACQUIRE, NULL);
}
nnmem_status_t nnmem_block_release(nnmem_block_table_t *t, size_t i,
                                   int *last_out) {
  if (last_out) *last_out = 0;
  return transition(t, i, OP_RELEASE, last_out);
}
nnmem_status_t nnmem_block_recycle(nnmem_block_table_t *t, size_t i) {
  return transition(t, i, OP_RECYCLE, NULL);
}
nnmem_status_t nnmem_block_reuse(nnmem_block_table_t *t, size_t i) {
  return transition(t, i, OP_REUSE, NULL);
}

nnmem_status_t nnmem_block_get(const nnmem_block_table_t *t, size_t i,
                               nnmem_block_state_t *state, uint32_t *holders,
                               uint32_t *epoch) {
  if (!t || i >= t->n) return NNMEM_ERR_INVALID;
  uint64_t w = atomic_load_explicit(&t->w[i], memory_order_acquire);
  if (state) *state = (nnmem_block_state_t)st_of(w);
  if (holders) *holders = holders_of(w);
  if (epoch) *epoch = epoch_of(w);
  return NNMEM_OK;
}

nnmem_status_t nnmem_block_table_counters(const nnmem_block_table_t *t,
                                          nnmem_block_counters_t *out) {
  if (!t || !out) return NNMEM_ERR_INVALID;
  out->size = sizeof *out;
  out->transitions = atomic_load(&t->transitions);
  out->illegal = atomic_load(&t->illegal);
  out->bad_index = atomic_load(&t->bad_index);
  out->cas_retries = atomic_load(&t->retries);
  return NNMEM_OK;
}

nnmem_status_t nnmem_block_table_check(const nnmem_block_table_t *t,
                                       nnmem_diag_t *diag) {
  if (!t) return NNMEM_ERR_INVALID;
  for (size_t i = 0; i < t->n; i++) {
    uint64_t w = atomic_load(&t->w[i]);
    int active = st_of(w) == NNMEM_BLOCK_ACTIVE;
    if (active != (holders_of(w) > 0))
      return nnmem__diag(
          diag, NNMEM_ERR_STATE, "block %zu: state %s with %u holders", i,
          nnmem_block_state_name((nnmem_block_state_t)st_of(w)), holders_of(w));
  }
  return NNMEM_OK;
}

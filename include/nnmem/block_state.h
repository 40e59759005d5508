/* nnmem/block_state.h - the block state machine: a checked life cycle for
 * arena and pool blocks shared by several ops or threads.
 *
 *   ALLOCATED --acquire--> ACTIVE (holders >= 1) --release (last)--> RELEASED
 *                            ^  |acquire / release (not last)
 *                            +--+
 *   RELEASED --recycle--> RECYCLED --reuse--> ALLOCATED (epoch + 1)
 *
 * Every transition is one compare-and-swap on a 64-bit word (state, holder
 * count, epoch), so concurrent holders never lose an update and exactly one
 * releaser moves a block to RELEASED. An illegal transition (acquire of a
 * released block, release without a holder, recycle of a live block, ...)
 * is refused with NNMEM_ERR_STATE, counted, and changes nothing; an index
 * out of range is NNMEM_ERR_INVALID, also counted.
 *
 * Thread-safety: every function is thread-safe (lock-free); create and
 * destroy are not concurrent with anything else. */
#ifndef NNMEM_BLOCK_STATE_H
#define NNMEM_BLOCK_STATE_H

#include "nnmem/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nnmem_block_state {
  NNMEM_BLOCK_ALLOCATED = 0,
  NNMEM_BLOCK_ACTIVE,
  NNMEM_BLOCK_RELEASED,
  NNMEM_BLOCK_RECYCLED
} nnmem_block_state_t;

/* "allocated", "active", "released", "recycled"; "?" otherwise. */
NNMEM_API const char *nnmem_block_state_name(nnmem_block_state_t s);

typedef struct nnmem_block_table nnmem_block_table_t;

/* A table of `n` blocks (n >= 1), all ALLOCATED at epoch 0. */
NNMEM_API nnmem_status_t nnmem_block_table_create(size_t n,
                                                  nnmem_block_table_t **out);
NNMEM_API void nnmem_block_table_destroy(nnmem_block_table_t *t);

/* ALLOCATED or ACTIVE -> ACTIVE, holders + 1. */
NNMEM_API nnmem_status_t nnmem_block_acquire(nnmem_block_table_t *t, size_t i);
/* ACTIVE, holders - 1; the last holder moves it to RELEASED and gets
 * *last_out = 1 (nullable). */
NNMEM_API nnmem_status_t nnmem_block_release(nnmem_block_table_t *t, size_t i,
                                             int *last_out);
/* RELEASED -> RECYCLED (the memory went back to its pool). */
NNMEM_API nnmem_status_t nnmem_block_recycle(nnmem_block_table_t *t, size_t i);
/* RECYCLED -> ALLOCATED with the epoch + 1 (a new life of the slot). */
NNMEM_API nnmem_status_t nnmem_block_reuse(nnmem_block_table_t *t, size_t i);
/* Current state, holder count and epoch (each nullable). */
NNMEM_API nnmem_status_t nnmem_block_get(const nnmem_block_table_t *t, size_t i,
                                         nnmem_block_state_t *state,
                                         uint32_t *holders, uint32_t *epoch);

typedef struct nnmem_block_counters {
  uint32_t size;        /* sizeof(nnmem_block_counters_t) */
  uint64_t transitions; /* successful transitions */
  uint64_t illegal;     /* refused transitions (NNMEM_ERR_STATE) */
  uint64_t bad_index;   /* indices out of range (NNMEM_ERR_INVALID) */
  uint64_t cas_retries; /* compare-and-swap failures retried (contention) */
} nnmem_block_counters_t;

NNMEM_API nnmem_status_t nnmem_block_table_counters(
    const nnmem_block_table_t *t, nnmem_block_counters_t *out);

/* Checks every word (state in range, holders > 0 exactly when ACTIVE).
 * NNMEM_ERR_STATE and diag on the first violation. Not concurrent with
 * transitions. */
NNMEM_API nnmem_status_t nnmem_block_table_check(const nnmem_block_table_t *t,
                                                 nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_BLOCK_STATE_H */

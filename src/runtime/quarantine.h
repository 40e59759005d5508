/* quarantine.h - the allocator's quarantine of freed blocks (opt-in,
 * nnmem_allocator_config_t.quarantine_bytes): a FIFO of blocks the
 * program freed and the allocator has not yet taken back, bounded by a
 * byte budget. Only the queue lives here; what a quarantined block holds
 * (its quarantine tag, the fill) and how it is released are the
 * allocator's (allocator.c). Not installed.
 *
 *   push (tail) -> [ oldest ... newest ] -> pop while bytes > budget
 *   ring: a growable circular array of {block, bytes}, outside the blocks
 *   (a use after free cannot reach it)
 *
 * Invariants: bytes == the sum of the held entries' bytes; after a
 * push and the pops that follow it, bytes <= budget; entries leave in
 * the order they came. Complexity: O(1) amortized per push and pop (the
 * ring doubles). Thread-safety: one mutex; every *_locked function wants
 * it held. */
#ifndef NNMEM_QUARANTINE_H
#define NNMEM_QUARANTINE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nnmem__quar_ent {
  void *p;
  uint64_t n; /* bytes held (the block's usable size) */
} nnmem__quar_ent_t;

typedef struct nnmem__quar {
  pthread_mutex_t lock;
  nnmem__quar_ent_t *ring;
  size_t cap, head, count; /* entries: ring[(head + i) % cap], i < count */
  uint64_t budget, bytes;
} nnmem__quar_t;

/* An empty quarantine of `budget` bytes (> 0). */
void nnmem__quar_init(nnmem__quar_t *q, uint64_t budget);
/* Frees the ring (the blocks are the allocator's). */
void nnmem__quar_fini(nnmem__quar_t *q);

/* Appends (p, n) as the newest entry: 0, or -1 when the ring cannot grow
 * (out of memory: nothing held, the caller releases p at once). */
int nnmem__quar_push_locked(nnmem__quar_t *q, void *p, uint64_t n);

/* Moves up to `max` of the oldest entries into out[] while the bytes held
 * exceed the budget (all of them, whatever the budget, when `all`);
 * returns how many. The caller releases them. */
size_t nnmem__quar_pop_locked(nnmem__quar_t *q, nnmem__quar_ent_t *out,
                              size_t max, int all);

/* Fork hooks: 0 takes the lock, 1 releases it (parent), 2 makes it anew
 * (child). */
void nnmem__quar_fork(nnmem__quar_t *q, int phase);

#endif /* NNMEM_QUARANTINE_H */

/* quarantine.c - the FIFO of quarantined blocks (quarantine.h): a
 * circular array of {block, bytes} that doubles when full, and the byte
 * count that decides how many of the oldest leave after each push.
 *
 * Steps: push: 1. grow the ring when full (copy the entries in order to
 * a ring twice as large, head at 0); 2. store at (head + count) % cap,
 * add the bytes. pop: take ring[head] while bytes > budget (or all),
 * subtracting its bytes. Invariants and thread-safety: quarantine.h.
 * Complexity: O(1) amortized; the ring holds at most one entry per 16
 * bytes of budget (the smallest block) plus the one pushed last. */
#include "runtime/quarantine.h"

#include <stdlib.h>
#include <string.h>

#define RING_MIN 64

void nnmem__quar_init(nnmem__quar_t *q, uint64_t budget) {
  memset(q, 0, sizeof *q);
  q->budget = budget;
  pthread_mutex_init(&q->lock, NULL);
}

void nnmem__quar_fini(nnmem__quar_t *q) {
  free(q->ring);
  q->ring = NULL;
  q->cap = q->head = q->count = 0;
  pthread_mutex_destroy(&q->lock);
}

/* Doubles the ring, entries in order from index 0: 0, or -1. */
static int ring_grow(nnmem__quar_t *q) {
  size_t cap = q->cap ? 2 * q->cap : RING_MIN;
  if (cap < q->cap || cap > SIZE_MAX / sizeof *q->ring) return -1;
  nnmem__quar_ent_t *r = malloc(cap * sizeof *r);
  if (!r) return -1;
  for (size_t i = 0; i < q->count; i++)
    r[i] = q->ring[(q->head + i) % q->cap];
  free(q->ring);
  q->ring = r;
  q->cap = cap;
  q->head = 0;
  return 0;
}

int nnmem__quar_push_locked(nnmem__quar_t *q, void *p, uint64_t n) {
  if (q->count == q->cap && ring_grow(q) != 0) return -1;
  q->ring[(q->head + q->count) % q->cap] = (nnmem__quar_ent_t){p, n};
  q->count++;
  q->bytes += n;
  return 0;
}

size_t nnmem__quar_pop_locked(nnmem__quar_t *q, nnmem__quar_ent_t *out,
                              size_t max, int all) {
  size_t k = 0;
  while (k < max && q->count && (all || q->bytes > q->budget)) {
    out[k++] = q->ring[q->head];
    q->bytes -= q->ring[q->head].n;
    q->head = (q->head + 1) % q->cap;
    q->count--;
  }
  return k;
}

void nnmem__quar_fork(nnmem__quar_t *q, int phase) {
  if (phase == 0)
    pthread_mutex_lock(&q->lock);
  else if (phase == 1)
    pthread_mutex_unlock(&q->lock);
  else /* the child: the prepare's thread is the one left */
    pthread_mutex_unlock(&q->lock);
}

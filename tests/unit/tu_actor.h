/* tu_actor.h - a lockstep thread for the allocator tests: the test asks it
 * for one allocator call at a time (on its own thread cache and free
 * queue) and waits for it; tu_act_here makes the same call in the calling
 * thread. Used by test_allocator.c and test_review3.c (their models of
 * frees across threads). */
#ifndef NNMEM_TU_ACTOR_H
#define NNMEM_TU_ACTOR_H

#include <pthread.h>
#include <string.h>

#include "testutil.h"

enum { TU_OP_NONE, TU_OP_ALLOC, TU_OP_ALIGNED, TU_OP_FREE, TU_OP_FLUSH,
       TU_OP_QUIT };

/* The call's arguments (n, align, p) and results (p, st). */
typedef struct tu_actor {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  nnmem_allocator_t *a;
  int op;
  size_t n, align;
  void *p;
  nnmem_status_t st;
  pthread_t t;
} tu_actor_t;

/* Makes call `op` in the calling thread. */
static inline void tu_act_here(tu_actor_t *w, int op) {
  switch (op) {
  case TU_OP_ALLOC: w->p = nnmem_alloc(w->a, w->n); break;
  case TU_OP_ALIGNED: w->p = nnmem_alloc_aligned(w->a, w->n, w->align); break;
  case TU_OP_FREE: w->st = nnmem_allocator_free(w->a, w->p); break;
  case TU_OP_FLUSH: nnmem_allocator_thread_flush(w->a); break;
  default: break;
  }
}

static inline void *tu_actor_main(void *arg) {
  tu_actor_t *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (w->op == TU_OP_NONE) pthread_cond_wait(&w->cv, &w->mu);
    int op = w->op;
    tu_act_here(w, op);
    w->op = TU_OP_NONE;
    pthread_cond_broadcast(&w->cv);
    if (op == TU_OP_QUIT) break;
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* Makes call `op` in the actor's thread and waits for it. */
static inline void tu_act(tu_actor_t *w, int op) {
  pthread_mutex_lock(&w->mu);
  w->op = op;
  pthread_cond_broadcast(&w->cv);
  while (w->op != TU_OP_NONE) pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
}

static inline void tu_actor_start(tu_actor_t *w, nnmem_allocator_t *a) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->a = a;
  assert_int_equal(pthread_create(&w->t, NULL, tu_actor_main, w), 0);
}

/* Ends the actor's thread (its exit flushes its cache) and joins it. */
static inline void tu_actor_stop(tu_actor_t *w) {
  tu_act(w, TU_OP_QUIT);
  pthread_join(w->t, NULL);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
}

#endif

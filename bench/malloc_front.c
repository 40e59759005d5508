/* malloc_front.c - libnnmem_malloc.so against glibc, jemalloc and mimalloc
 * on allocation-heavy workloads, all LD_PRELOADed in the same run.
 *
 * Usage: build/bench/malloc_front [--reps N] [--csv FILE] [--only W]
 *
 * The driver runs itself once per (workload, allocator, repetition) as a
 * child: `malloc_front --work NAME` with LD_PRELOAD set to the allocator
 * (none for glibc), and measures wall time on the monotonic clock, CPU time
 * (user + system) and peak RSS (ru_maxrss) from wait4. Repetitions are
 * interleaved across allocators (A B C D A B C D ...) so that a change of
 * machine load hits all of them alike; the table gives medians and the
 * ratios nnmem / other (time: < 1 is faster; RSS: < 1 is smaller).
 * Workloads (ideas from mimalloc-bench, code written here):
 *   larson  2 threads replace random slots of their block arrays with
 *           random sizes (16..1024 B); every round new threads take over
 *           the previous threads' arrays: blocks are freed by threads other
 *           than the ones that allocated them, threads come and go;
 *   small   many small objects (16..128 B): a million-node linked list
 *           built, walked, freed in random order; three rounds;
 *   realloc 4096 buffers grown by small steps to up to 64 KiB each with
 *           realloc (string building), then freed;
 *   mixed2  2 threads: a producer allocates mixed sizes (16 B..96 KiB, 1 in
 *           256 of 256 KiB..1 MiB) and hands them in batches of 64 through
 *           a ring to a consumer, which reads and frees them (cross-thread
 *           frees).
 * The workloads use a fixed seed (printed) and write and read every block,
 * so no allocator can skip work. Not a test: it asserts nothing. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define SEED 0x5eed1234u

static inline uint64_t rnd(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1Dull;
}

static volatile uint64_t sink;

/* ---- larson ---------------------------------------------------------------
 */

#define L_SLOTS 4000
#define L_OPS 400000
#define L_ROUNDS 10

typedef struct larson_arg {
  char **slots;
  uint64_t seed;
} larson_arg_t;

static void *larson_thread(void *v) {
  larson_arg_t *a = v;
  uint64_t s = a->seed, acc = 0;
  for (int i = 0; i < L_OPS; i++) {
    uint64_t r = rnd(&s);
    size_t k = r % L_SLOTS, n = 16 + (r >> 20) % 1009;
    if (a->slots[k]) acc += (unsigned char)a->slots[k][0];
    free(a->slots[k]);
    a->slots[k] = malloc(n);
    a->slots[k][0] = (char)r;
    a->slots[k][n - 1] = 1;
  }
  a->seed = s;
  sink += acc;
  return NULL;
}

static void work_larson(void) {
  static char *slots[2][L_SLOTS];
  larson_arg_t arg[2] = {{slots[0], SEED}, {slots[1], SEED * 3}};
  for (int round = 0; round < L_ROUNDS; round++) {
    pthread_t t[2];
    larson_arg_t *sw[2] = {&arg[round & 1], &arg[!(round & 1)]};
    for (int i = 0; i < 2; i++) /* arrays change hands every round */
      pthread_create(&t[i], NULL, larson_thread, sw[i]);
    for (int i = 0; i < 2; i++)
      pthread_join(t[i], NULL);
  }
  for (int j = 0; j < 2; j++)
    for (int k = 0; k < L_SLOTS; k++)
      free(slots[j][k]);
}

/* ---- small ----------------------------------------------------------------
 */

typedef struct node {
  struct node *next;
  uint64_t v;
} node_t;

static void work_small(void) {
  enum { N = 1000000 };
  node_t **all = malloc(N * sizeof *all);
  uint64_t s = SEED;
  for (int round = 0; round < 3; round++) {
    node_t *head = NULL;
    for (int i = 0; i < N; i++) {
      node_t *x = malloc(sizeof *x + (size_t)(rnd(&s) % 7) * 16);
      x->v = (uint64_t)i;
      x->next = head;
      head = x;
      all[i] = x;
    }
    uint64_t acc = 0;
    for (node_t *x = head; x; x = x->next)
      acc += x->v;
    sink += acc;
    for (int i = N - 1; i > 0; i--) { /* free in random order */
      int j = (int)(rnd(&s) % (uint64_t)(i + 1));
      node_t *t = all[i];
      all[i] = all[j];
      all[j] = t;
    }
    for (int i = 0; i < N; i++)
      free(all[i]);
  }
  free(all);
}

/* ---- realloc --------------------------------------------------------------
 */

static void work_realloc(void) {
  enum { B = 4096 };
  static char *buf[B];
  static size_t len[B];
  uint64_t s = SEED;
  for (int round = 0; round < 3; round++) {
    for (int step = 0; step < 400; step++)
      for (int b = 0; b < B; b++) {
        size_t limit = 1024 + (size_t)(b % 64) * 1024;
        if (len[b] >= limit) continue;
        size_t add = 8 + rnd(&s) % 312;
        char *n = realloc(buf[b], len[b] + add);
        memset(n + len[b], 'a' + b % 26, add);
        buf[b] = n;
        len[b] += add;
      }
    uint64_t acc = 0;
    for (int b = 0; b < B; b++) {
      acc += (unsigned char)buf[b][len[b] - 1];
      free(buf[b]);
      buf[b] = NULL;
      len[b] = 0;
    }
    sink += acc;
  }
}

/* ---- mixed2 ---------------------------------------------------------------
 */

#define RING 64
#define M_ITEMS 1500000
typedef struct ring {
  _Atomic(void *) slot[RING];
  _Atomic size_t head, tail;
} ring_t;

static size_t mixed_size(uint64_t r) {
  if ((r & 255) == 0) return (256u << 10) + (size_t)(r >> 40) % (768u << 10);
  unsigned shift = 4 + (unsigned)((r >> 8) % 13); /* 16 B .. 64 KiB */
  return ((size_t)1 << shift) + (size_t)(r >> 32) % ((size_t)1 << shift) / 2;
}

#define BATCH 64

static void ring_put(ring_t *q, void *p) {
  size_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  while (h - atomic_load_explicit(&q->tail, memory_order_acquire) >= RING)
    sched_yield();
  atomic_store_explicit(&q->slot[h % RING], p, memory_order_relaxed);
  atomic_store_explicit(&q->head, h + 1, memory_order_release);
}

static void *ring_get(ring_t *q) {
  size_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
  while (atomic_load_explicit(&q->head, memory_order_acquire) == t)
    sched_yield();
  void *p = atomic_load_explicit(&q->slot[t % RING], memory_order_relaxed);
  atomic_store_explicit(&q->tail, t + 1, memory_order_release);
  return p;
}

/* Blocks travel in batches of BATCH (the batch array is a block too), so
 * the threads meet at the ring rarely and the allocator dominates. */
static void *producer(void *v) {
  ring_t *q = v;
  uint64_t s = SEED;
  for (size_t i = 0; i < M_ITEMS / BATCH; i++) {
    char **batch = malloc(BATCH * sizeof *batch);
    for (size_t k = 0; k < BATCH; k++) {
      size_t n = mixed_size(rnd(&s));
      char *p = malloc(n);
      p[0] = (char)k;
      p[n - 1] = (char)n;
      batch[k] = p;
      /* the producer also keeps a few short-lived blocks of its own */
      char *t = malloc(32 + (k & 511));
      t[0] = 1;
      sink += (unsigned char)t[0];
      free(t);
    }
    ring_put(q, batch);
  }
  return NULL;
}

static void *consumer(void *v) {
  ring_t *q = v;
  uint64_t acc = 0;
  for (size_t i = 0; i < M_ITEMS / BATCH; i++) {
    char **batch = ring_get(q);
    for (size_t k = 0; k < BATCH; k++) {
      acc += (unsigned char)batch[k][0];
      free(batch[k]);
    }
    free(batch);
  }
  sink += acc;
  return NULL;
}

static void work_mixed2(void) {
  static ring_t q;
  pthread_t a, b;
  pthread_create(&a, NULL, producer, &q);
  pthread_create(&b, NULL, consumer, &q);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
}

/* ---- driver -----------------------------------------------------------------
 */

typedef struct workload {
  const char *name;
  void (*fn)(void);
} workload_t;

static const workload_t works[] = {{"larson", work_larson},
                                   {"small", work_small},
                                   {"realloc", work_realloc},
                                   {"mixed2", work_mixed2}};
#define NWORK (sizeof works / sizeof works[0])

typedef struct alloc {
  const char *name, *lib; /* lib NULL: glibc */
} alloc_t;

static int run_child(const char *self, const char *work, const char *lib,
                     double *wall, double *cpu, double *rss_mib) {
  double t0 = now();
  pid_t pid = fork();
  if (pid == 0) {
    if (lib)
      setenv("LD_PRELOAD", lib, 1);
    else
      unsetenv("LD_PRELOAD");
    execl(self, self, "--work", work, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  struct rusage ru;
  if (pid < 0 || wait4(pid, &st, 0, &ru) != pid) return -1;
  *wall = now() - t0;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
  *cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  *rss_mib = (double)ru.ru_maxrss / 1024.0;
  return 0;
}

static const char *first_readable(const char *env, const char *const *paths) {
  const char *e = getenv(env);
  if (e && *e) return access(e, R_OK) == 0 ? e : NULL;
  for (; *paths; paths++)
    if (access(*paths, R_OK) == 0) return *paths;
  return NULL;
}

int main(int argc, char **argv) {
  int reps = 3;
  const char *csv = NULL, *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--work") == 0 && i + 1 < argc) {
      for (size_t w = 0; w < NWORK; w++)
        if (strcmp(argv[i + 1], works[w].name) == 0) {
          works[w].fn();
          return 0;
        }
      return 2;
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
      csv = argv[++i];
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      fprintf(stderr, "usage: %s [--reps N] [--csv FILE] [--only WORKLOAD]\n",
              argv[0]);
      return 1;
    }
  }
  if (reps < 1 || reps > 50) reps = 3;
  static const char *const je[] = {"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
                                   NULL};
  static const char *const mi[] = {"/usr/lib/x86_64-linux-gnu/libmimalloc.so.2",
                                   NULL};
  static const char *const nn[] = {NNMEM_MALLOC_SO, NULL};
  alloc_t al[4];
  int na = 0;
  al[na++] = (alloc_t){"glibc", NULL};
  const char *p;
  if ((p = first_readable("NNMEM_BENCH_JEMALLOC", je)))
    al[na++] = (alloc_t){"jemalloc", p};
  if ((p = first_readable("NNMEM_BENCH_MIMALLOC", mi)))
    al[na++] = (alloc_t){"mimalloc", p};
  if (!(p = first_readable("NNMEM_MALLOC_LIB", nn))) {
    fprintf(stderr, "malloc_front: libnnmem_malloc.so not found\n");
    return 1;
  }
  al[na++] = (alloc_t){"nnmem", p};
  FILE *out = csv ? fopen(csv, "w") : NULL;
  if (out) fprintf(out, "workload,allocator,wall_s,cpu_s,peak_rss_mib\n");
  printf("malloc front: %d repetitions (interleaved), medians; seed 0x%x\n",
         reps, SEED);
  printf("%-8s %-9s %8s %8s %9s   %s\n", "workload", "allocator", "wall s",
         "cpu s", "RSS MiB", "nnmem/this: wall cpu RSS");
  for (size_t w = 0; w < NWORK; w++) {
    if (only && strcmp(only, works[w].name) != 0) continue;
    double wall[4][50], cpu[4][50], rss[4][50], mw[4], mc[4], mr[4];
    for (int r = 0; r < reps; r++)
      for (int a = 0; a < na; a++)
        if (run_child(argv[0], works[w].name, al[a].lib, &wall[a][r],
                      &cpu[a][r], &rss[a][r]) != 0) {
          fprintf(stderr, "malloc_front: %s under %s failed\n", works[w].name,
                  al[a].name);
          return 1;
        }
    for (int a = 0; a < na; a++) {
      mw[a] = median(wall[a], reps);
      mc[a] = median(cpu[a], reps);
      mr[a] = median(rss[a], reps);
    }
    int nn_i = na - 1;
    for (int a = 0; a < na; a++) {
      printf("%-8s %-9s %8.3f %8.3f %9.1f", works[w].name, al[a].name, mw[a],
             mc[a], mr[a]);
      if (a != nn_i)
        printf("   %.2f %.2f %.2f", mw[nn_i] / mw[a], mc[nn_i] / mc[a],
               mr[nn_i] / mr[a]);
      printf("\n");
      if (out)
        fprintf(out, "%s,%s,%.4f,%.4f,%.1f\n", works[w].name, al[a].name, mw[a],
                mc[a], mr[a]);
    }
  }
  if (out) fclose(out);
  return 0;
}

/* malloc_edges.c - the C allocation functions' edge cases, run under
 * LD_PRELOAD=libnnmem_malloc.so (tests/malloc/run_edges.sh): malloc(0),
 * realloc (NULL, 0, growth and shrink chains keeping the bytes, huge),
 * huge sizes -> NULL + ENOMEM, overflowing calloc / reallocarray,
 * alignment (posix_memalign, aligned_alloc, memalign, valloc, pvalloc),
 * malloc_usable_size, calloc zeroing of recycled blocks, blocks freed by
 * another thread after their allocating thread exited, fork from a thread
 * while other threads allocate, and a double free (child processes: the
 * report, NNMEM_MALLOC_ABORT=1).
 *
 * Not cmocka: a plain program whose every check prints what failed and
 * exits 1 (the runner starts it with and without the front: the same
 * checks hold under glibc, which proves they test the C contract). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                              \
    }                                                                          \
  } while (0)

/* Opaque to the compiler: keeps it from folding malloc(huge) to NULL. */
static size_t opaque(size_t v) {
  volatile size_t x = v;
  return x;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(seed + i * 131);
}

static int same(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(seed + i * 131)) return 0;
  return 1;
}

static void test_zero_and_huge(void) {
  void *a = malloc(0), *b = malloc(0);
  CHECK(a && b && a != b);
  free(a);
  free(b);
  errno = 0;
  CHECK(malloc(opaque(SIZE_MAX)) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(malloc(opaque(PTRDIFF_MAX)) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(malloc(opaque((size_t)1 << 60)) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(calloc(opaque(SIZE_MAX / 2), 3) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(calloc(opaque((size_t)1 << 33), (size_t)1 << 31) == NULL &&
        errno == ENOMEM);
  void *p = malloc(100);
  CHECK(p != NULL);
  fill(p, 100, 7);
  errno = 0;
  CHECK(realloc(p, opaque(SIZE_MAX)) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(reallocarray(p, opaque(SIZE_MAX / 2), 4) == NULL && errno == ENOMEM);
  CHECK(same(p, 100, 7)); /* a failed realloc leaves the block alone */
  free(p);
}

static void test_realloc(void) {
  free(realloc(NULL, 0)); /* a block or NULL: both allowed, must not crash */
  unsigned char *p = realloc(NULL, 10);
  CHECK(p != NULL);
  fill(p, 10, 1);
  /* growth chain through every size range, bytes kept each step */
  size_t n = 10;
  for (size_t next = 11; next <= (size_t)3 << 20; next += next / 3 + 1) {
    unsigned char *q = realloc(p, next);
    CHECK(q != NULL);
    if (!q) break;
    CHECK(same(q, n, 1));
    p = q;
    fill(p, next, 1);
    n = next;
  }
  /* shrink chain */
  while (n > 1) {
    size_t next = n / 3;
    unsigned char *q = realloc(p, next ? next : 1);
    CHECK(q != NULL);
    if (!q) break;
    p = q;
    n = next ? next : 1;
    CHECK(same(p, n, 1));
  }
  errno = 0;
  CHECK(realloc(p, 0) == NULL); /* frees (glibc's behaviour) */
  /* many small +1 growths: still one valid block */
  char *s = NULL;
  for (int i = 0; i < 20000; i++) {
    char *t = realloc(s, (size_t)i + 2);
    CHECK(t != NULL);
    if (!t) break;
    s = t;
    s[i] = (char)('a' + i % 26);
    s[i + 1] = 0;
  }
  for (int i = 0; s && i < 20000; i++)
    if (s[i] != (char)('a' + i % 26)) {
      CHECK(!"realloc growth lost a byte");
      break;
    }
  free(s);
}

static void test_align(void) {
  for (size_t al = sizeof(void *); al <= ((size_t)1 << 21); al <<= 1) {
    size_t sizes[] = {1, 24, 100, 4096, 70000, 300000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
      void *p = NULL;
      CHECK(posix_memalign(&p, al, sizes[k]) == 0 && p);
      CHECK(((uintptr_t)p & (al - 1)) == 0);
      CHECK(malloc_usable_size(p) >= sizes[k]);
      memset(p, 0x5a, sizes[k]);
      void *q = aligned_alloc(al, sizes[k]);
      CHECK(q && ((uintptr_t)q & (al - 1)) == 0);
      free(p);
      free(q);
    }
  }
  void *p = (void *)1;
  CHECK(posix_memalign(&p, 24, 10) == EINVAL && p == (void *)1);
  CHECK(posix_memalign(&p, 0, 10) == EINVAL);
  CHECK(posix_memalign(&p, 4, 10) == EINVAL); /* not a multiple of void* */
  CHECK(posix_memalign(&p, 64, opaque(SIZE_MAX)) == ENOMEM);
  /* errno as glibc leaves it: posix_memalign's ENOMEM sets it too, its
   * success does not touch it; alignments up to SIZE_MAX / 2 + 1 that no
   * memory can give are ENOMEM, only larger ones EINVAL */
  errno = 77;
  CHECK(posix_memalign(&p, 64, opaque(SIZE_MAX)) == ENOMEM && errno == ENOMEM);
  errno = 77;
  void *ok = NULL;
  CHECK(posix_memalign(&ok, 64, 100) == 0 && errno == 77);
  free(ok);
  for (int sh = 57; sh <= 63; sh += 3) {
    errno = 0;
    CHECK(aligned_alloc(opaque((size_t)1 << sh), 1) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(memalign(opaque((size_t)1 << sh), 1) == NULL && errno == ENOMEM);
  }
  errno = 0;
  CHECK(memalign(opaque(((size_t)1 << 63) + 1), 1) == NULL && errno == EINVAL);
  void *m = memalign(48, 100); /* rounded up to 64 */
  CHECK(m && ((uintptr_t)m & 63) == 0);
  free(m);
  m = aligned_alloc(48, 96); /* glibc 2.36: as memalign */
  CHECK(m && ((uintptr_t)m & 63) == 0);
  free(m);
  long pg = sysconf(_SC_PAGESIZE);
  void *v = valloc(10);
  CHECK(v && ((uintptr_t)v % (uintptr_t)pg) == 0);
  free(v);
  void *pv = pvalloc(1);
  CHECK(pv && ((uintptr_t)pv % (uintptr_t)pg) == 0 &&
        malloc_usable_size(pv) >= (size_t)pg);
  free(pv);
}

static void test_usable_and_calloc(void) {
  CHECK(malloc_usable_size(NULL) == 0);
  for (size_t n = 1; n < 600000; n = n * 2 + 1) {
    unsigned char *p = malloc(n);
    CHECK(p != NULL);
    size_t u = malloc_usable_size(p);
    CHECK(u >= n);
    memset(p, 0xff, u); /* the whole usable size is ours */
    free(p);
    unsigned char *z = calloc(1, n);
    CHECK(z != NULL);
    size_t nz = 0;
    for (size_t i = 0; i < n; i++)
      nz += z[i] != 0;
    CHECK(nz == 0);
    free(z);
  }
}

/* Blocks allocated by threads that exit, freed by the main thread. */
static void *alloc_and_exit(void *arg) {
  void **slots = arg;
  for (int i = 0; i < 1000; i++) {
    slots[i] = malloc((size_t)(16 + i % 300));
    if (slots[i]) memset(slots[i], i & 0xff, 16);
  }
  return NULL;
}

static void test_thread_exit(void) {
  static void *slots[16][1000];
  for (int round = 0; round < 4; round++) {
    pthread_t t[16];
    for (int i = 0; i < 16; i++)
      CHECK(pthread_create(&t[i], NULL, alloc_and_exit, slots[i]) == 0);
    for (int i = 0; i < 16; i++)
      pthread_join(t[i], NULL);
    for (int i = 0; i < 16; i++)
      for (int j = 0; j < 1000; j++) {
        CHECK(slots[i][j] && ((unsigned char *)slots[i][j])[15] == (j & 0xff));
        free(slots[i][j]);
      }
  }
}

/* fork from a thread while two others allocate and free: the child must
 * get the allocator's locks free (it would hang otherwise: alarm). */
static volatile int churn_stop;

static void *churn(void *arg) {
  (void)arg;
  void *keep[64] = {0};
  for (unsigned i = 0; !churn_stop; i++) {
    unsigned k = i % 64;
    free(keep[k]);
    keep[k] = malloc((size_t)(i * 7919 % 200000) + 1);
  }
  for (int k = 0; k < 64; k++)
    free(keep[k]);
  return NULL;
}

static void *forker(void *arg) {
  int *bad = arg;
  for (int i = 0; i < 40; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(20);
      void *p[100];
      for (int k = 0; k < 100; k++)
        p[k] = malloc((size_t)(k * 1000 + 1));
      for (int k = 0; k < 100; k++)
        free(p[k]);
      _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0)
      (*bad)++;
  }
  return NULL;
}

static void test_fork_in_thread(void) {
  pthread_t c[2], f;
  int bad = 0;
  churn_stop = 0;
  for (int i = 0; i < 2; i++)
    pthread_create(&c[i], NULL, churn, NULL);
  pthread_create(&f, NULL, forker, &bad);
  pthread_join(f, NULL);
  churn_stop = 1;
  for (int i = 0; i < 2; i++)
    pthread_join(c[i], NULL);
  CHECK(bad == 0);
}

/* Mode "double-free": free the same small and large block twice, then keep
 * allocating; the heap must stay whole. */
static int double_free_child(void) {
  char *a = malloc(40), *b = malloc(40), *big = malloc(100000);
  strcpy(b, "intact");
  free(a);
  free(a); /* small, owner thread */
  free(big);
  free(big); /* pool block */
  int foreign;
  free(&foreign + 0); /* a stack address */
  /* the twice-freed block must come back once only */
  char *x = malloc(40), *y = malloc(40);
  if (x == y || strcmp(b, "intact") != 0) return 3;
  free(x);
  free(y);
  free(b);
  puts("continued");
  return 0;
}

/* Mode "double-free-reuse": second frees of blocks that are free already
 * (their first free flushed from the front's free queue), each followed by
 * allocations that may hand the block out again before the second free
 * is looked at: one by the owner thread (queued), one by another thread.
 * No block may be handed out twice: the blocks handed out are distinct,
 * keep their contents through the frees (and flushes) that follow, and
 * the next allocations return none of them. Then a realloc of a freed
 * block (queued, and flushed) must be refused. Exit 3 when a block was
 * handed out twice (the front's queue before its filter did that) or a
 * freed block reallocated in place. */
enum { DF_B = 64 };

static void *free_elsewhere(void *p) {
  free(p);
  return NULL;
}

static int handed_twice(char **m, int n) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++)
      if (m[i] == m[j]) return 1;
    for (int k = 0; k < 64; k++)
      if (m[i][k] != (char)i) return 1;
  }
  return 0;
}

static int double_free_reuse_round(int other_thread) {
  char *p = malloc(64), *o[DF_B], *m[2 * DF_B], *more[2 * DF_B];
  if (!p) return 2;
  for (int i = 0; i < DF_B; i++)
    if (!(o[i] = malloc(64))) return 2;
  free(p);
  for (int i = 0; i < DF_B; i++) /* a full queue's worth: p is free */
    free(o[i]);
  if (other_thread) { /* the second free, from another thread */
    pthread_t t;
    if (pthread_create(&t, NULL, free_elsewhere, p) != 0) return 2;
    pthread_join(t, NULL);
  } else {
    free(p); /* the second free, queued */
  }
  for (int i = 0; i < 2 * DF_B; i++) { /* p among them, once at most */
    if (!(m[i] = malloc(64))) return 2;
    memset(m[i], i, 64);
  }
  for (int i = 0; i < 2 * DF_B; i++) /* a queue's worth of frees more */
    if (!(more[i] = malloc(64))) return 2;
  for (int i = 0; i < 2 * DF_B; i++)
    free(more[i]);
  for (int i = 0; i < 2 * DF_B; i++) { /* none of the live blocks */
    char *q = malloc(64);
    for (int j = 0; j < 2 * DF_B; j++)
      if (q == m[j]) return 3;
    more[i] = q;
  }
  if (handed_twice(m, 2 * DF_B)) return 3;
  for (int i = 0; i < 2 * DF_B; i++) {
    free(more[i]);
    free(m[i]);
  }
  return 0;
}

/* realloc of a freed block (its free queued, then flushed): refused
 * (NULL, EINVAL), not handed back in place; the block comes out once. */
static int realloc_freed_round(void) {
  char *p = malloc(64), *q = malloc(64), *o[DF_B], *m[2 * DF_B];
  if (!p || !q) return 2;
  free(p); /* queued */
  errno = 0;
  if (realloc(p, 32) != NULL || errno != EINVAL) return 3;
  for (int i = 0; i < DF_B; i++)
    if (!(o[i] = malloc(64))) return 2;
  free(q);
  for (int i = 0; i < DF_B; i++) /* a queue's worth: q is flushed */
    free(o[i]);
  errno = 0;
  if (realloc(q, 48) != NULL || errno != EINVAL) return 3;
  for (int i = 0; i < 2 * DF_B; i++) {
    if (!(m[i] = malloc(64))) return 2;
    memset(m[i], i, 64);
  }
  if (handed_twice(m, 2 * DF_B)) return 3;
  for (int i = 0; i < 2 * DF_B; i++) free(m[i]);
  return 0;
}

static int double_free_reuse_child(void) {
  int rc = double_free_reuse_round(0);
  if (rc == 0) rc = double_free_reuse_round(1);
  if (rc == 0) rc = realloc_freed_round();
  if (rc == 0) puts("continued");
  return rc;
}

/* Mode "steps" (tests/malloc/record.sh): allocations between step markers
 * whose recorded lifetimes are known: 1000 B on [0, 2), 2000 B on [1, 3),
 * 3000 B live at exit on [2, 3). Prints nothing (stdio would allocate). */
static int steps_child(void) {
  void (*step)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "nnmem_record_step");
  if (!step) return 2;
  char *a = malloc(1000); /* step 0 */
  step();
  char *b = malloc(2000); /* step 1 */
  free(a);
  step();
  free(b); /* step 2 */
  char *c = malloc(3000);
  return c ? 0 : 3;
}

/* Mode "realloc-fail" (tests/malloc/serve.sh): served from a plan, a
 * realloc that no memory can satisfy (64 TiB) fails, and its block stays
 * the caller's: its size and bytes, then its free (the first block) or a
 * realloc and a free (the second), with no bad-free report. */
static int realloc_fail_child(void) {
  char *a = malloc(1000), *b = malloc(1000);
  if (!a || !b) return 2;
  memset(a, 7, 1000);
  memset(b, 8, 1000);
  if (realloc(a, opaque((size_t)1 << 46)) != NULL) return 3;
  if (realloc(b, opaque((size_t)1 << 46)) != NULL) return 3;
  if (malloc_usable_size(a) < 1000 || malloc_usable_size(b) < 1000) return 4;
  if (a[999] != 7 || b[999] != 8) return 5;
  free(a);
  char *c = realloc(b, 2000);
  if (!c || c[999] != 8) return 6;
  free(c);
  printf("realloc-fail: ok\n");
  return 0;
}

/* Mode "steps2" (tests/malloc/serve.sh): two allocations in step 0, so
 * the recorded steps are the markers, not the allocation order. */
static int steps2_child(void) {
  void (*step)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "nnmem_record_step");
  if (!step) return 2;
  char *a = malloc(1000), *b = malloc(500); /* step 0 */
  step();
  char *c = malloc(2000); /* step 1 */
  free(a);
  step();
  free(b); /* step 2 */
  free(c);
  char *d = malloc(3000);
  return b && c && d ? 0 : 3;
}

/* Mode "leaks" (tests/malloc/leaks.sh): blocks left live at two sites, in
 * the main thread and in a second one, and one freed. The functions are
 * exported (the executable is linked with -rdynamic) so that the report
 * names them. */
__attribute__((noinline)) void *leak_here(size_t n) {
  void *p = malloc(n);
  __asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call */
  return p;
}

__attribute__((noinline)) void *leak_there(size_t n) {
  void *p = calloc(1, n);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

static void *leak_thread(void *arg) {
  (void)arg;
  return leak_there(7000);
}

static int leaks_child(void) {
  void *kept[3];
  for (int i = 0; i < 3; i++)
    kept[i] = leak_here(1000); /* 3000 bytes live at exit */
  free(leak_here(5000));       /* freed: not in the report */
  pthread_t t;
  void *there = NULL;
  if (pthread_create(&t, NULL, leak_thread, NULL) != 0) return 2;
  pthread_join(t, &there); /* 7000 bytes from the thread, live at exit */
  return kept[0] && kept[1] && kept[2] && there ? 0 : 3;
}

/* A realloc that grows a 300 MiB block to 500 MiB under an address-space
 * limit with room for the 500 MiB but not for twice 300 (the front's first
 * try for a large growth): it succeeds, and errno is what it was (the
 * front's failed first try set ENOMEM and left it). In a child: the limit
 * stays there. */
static void test_realloc_errno_under_limit(void) {
  pid_t pid = fork();
  if (pid == 0) {
    long kb = 0;
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
      if (sscanf(line, "VmSize: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    if (kb <= 0) _exit(0); /* no /proc: nothing to measure against */
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = (rlim_t)kb * 1024 + ((rlim_t)850 << 20);
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(0);
    size_t mb = (size_t)1 << 20;
    char *p = malloc(opaque(300 * mb));
    if (!p) _exit(2);
    memset(p, 1, 300 * mb);
    errno = 0;
    char *q = realloc(p, opaque(500 * mb));
    if (!q) _exit(3);
    if (errno != 0) _exit(4);
    if (q[300 * mb - 1] != 1) _exit(5);
    free(q);
    _exit(0);
  }
  int st = 0;
  CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
  if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
    fprintf(stderr, "realloc under a limit: child status %d\n",
            WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "leaks") == 0) return leaks_child();
  if (argc > 1 && strcmp(argv[1], "steps2") == 0) return steps2_child();
  if (argc > 1 && strcmp(argv[1], "double-free") == 0)
    return double_free_child();
  if (argc > 1 && strcmp(argv[1], "double-free-reuse") == 0)
    return double_free_reuse_child();
  if (argc > 1 && strcmp(argv[1], "steps") == 0) return steps_child();
  if (argc > 1 && strcmp(argv[1], "realloc-fail") == 0)
    return realloc_fail_child();
  int front = dlsym(RTLD_DEFAULT, "nnmem_record_step") != NULL;
  printf("allocator: %s\n", front ? "libnnmem_malloc.so" : "glibc");
  test_zero_and_huge();
  test_realloc();
  test_realloc_errno_under_limit();
  test_align();
  test_usable_and_calloc();
  test_thread_exit();
  test_fork_in_thread();
  printf("%s: %d failed checks\n", failures ? "FAIL" : "ok", failures);
  return failures ? 1 : 0;
}

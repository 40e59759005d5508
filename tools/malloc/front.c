/* front.c - libnnmem_malloc.so: the C allocation functions (malloc, free,
 * calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign,
 * valloc, pvalloc, malloc_usable_size) on nnmem's thread-caching allocator,
 * for LD_PRELOAD. It is a program's front, not the library: it may print
 * (one line on stderr for a bad free) and abort (NNMEM_MALLOC_ABORT=1).
 *
 *   program --malloc()--> front.c --nnmem_alloc()--> allocator.c
 *                                                     | <= 128 KiB: thread cache
 *                                                     | < 1 MiB: slab classes
 *                                                     | larger: own mmap region
 *   nnmem's own metadata (pool tables, registry leaves, cache structs)
 *   --malloc()--> ld --wrap --> __wrap_malloc --> glibc's __libc_malloc
 *
 * Steps of every entry point:
 *   1. the allocator: created by the first call (or the constructor) under
 *      a compare-and-swap state word; calls made while it is created (by
 *      the creating thread: pthread_atfork, libc internals) get bump
 *      blocks of a static bootstrap arena (16-byte header: the size),
 *      which free ignores; other threads wait for the creation, up to
 *      ~1,000 yields (one of them may hold a lock the creation needs),
 *      then take bootstrap blocks too;
 *   2. the call itself (the edge cases of glibc's functions: malloc(0) is
 *      a unique pointer, realloc(p, 0) frees and returns NULL, overflowing
 *      calloc / reallocarray and sizes over PTRDIFF_MAX fail with ENOMEM,
 *      a bad alignment fails with EINVAL, memalign rounds it up);
 *   3. record mode (record.c) sees every successful allocation and free;
 *      serve mode (serve.c) hands the allocations out of a plan of a
 *      recorded run and takes back their frees (both: nnmem__divert, the
 *      fast paths' one test).
 * A free the allocator rejects (double free, foreign or interior pointer)
 * changes nothing; the first one is reported on stderr, later ones are
 * counted silently; NNMEM_MALLOC_ABORT=1 aborts instead.
 * NNMEM_MALLOC_QUARANTINE=<size> holds that many bytes of freed blocks
 * back before they are reused (a second free within that window is
 * refused); NNMEM_MALLOC_QUARANTINE_FILL=1 also reports a held block
 * written after its free.
 * Fork: pthread_atfork takes the allocator's locks and the recorder's
 * before fork and gives them back (re-initialised in the child) after.
 * Thread exit: the allocator's key destructor flushes the thread's cache.
 * Invariants: a pointer handed out lies in the bootstrap arena or is a
 * live block of the allocator, never both. Complexity: that of the
 * allocator. Thread-safety: every function from any thread. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"
#include "nnmem/allocator.h"
#include "nnmem/backend.h"
#include "common/util.h"
#include "runtime/allocator_internal.h"
#include "runtime/leaks_internal.h"
#include "units.h"

#define API __attribute__((visibility("default")))
#define SMALL_MAX (1u << 20) /* tiered: slab classes below (no TLSF tier) */
#define LARGE_MIN (1u << 20) /* tiered: a mapping per block from here */
#define BOOT_SIZE (1u << 20)
#define FREE_BATCH 64 /* queued small frees (nnmem_allocator_config_t) */

int nnmem__divert;

/* glibc's own functions, for nnmem's metadata (see the link options in
 * tools/malloc/CMakeLists.txt). */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

void *__wrap_malloc(size_t n) {
  return __libc_malloc(n);
}
void *__wrap_calloc(size_t n, size_t m) {
  return __libc_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n) {
  return __libc_realloc(p, n);
}
void __wrap_free(void *p) {
  __libc_free(p);
}
void *__wrap_aligned_alloc(size_t al, size_t n) {
  return __libc_memalign(al, n);
}
int __wrap_posix_memalign(void **out, size_t al, size_t n) {
  void *p = __libc_memalign(al, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
char *__wrap_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = __libc_malloc(n);
  return d ? memcpy(d, s, n) : NULL;
}

enum { ST_NONE, ST_INIT, ST_READY, ST_FAILED };
static _Atomic int state = ST_NONE;
static nnmem_allocator_t *heap_a;
/* heap_a once it is ready and neither recording nor serving diverts the
 * calls; NULL otherwise: the one load and test of malloc's and free's
 * common case */
static _Atomic(nnmem_allocator_t *) fast_a;
static int abort_on_misuse;
static _Atomic int misuse_reported, write_reported;
static _Thread_local __attribute__((tls_model("initial-exec"))) int in_init;

/* ---- bootstrap arena ---------------------------------------------------- */

static _Alignas(64) unsigned char boot[BOOT_SIZE];
static _Atomic size_t boot_used;

static inline int in_boot(const void *p) {
  return (const unsigned char *)p >= boot &&
         (const unsigned char *)p < boot + BOOT_SIZE;
}

static void *boot_alloc(size_t n, size_t align) {
  if (align < 16) align = 16;
  if (n > BOOT_SIZE || align > 4096) return NULL;
  size_t need = ((n + 15) & ~(size_t)15) + 16 + align;
  size_t at = atomic_fetch_add(&boot_used, need);
  if (at + need > BOOT_SIZE) return NULL;
  uintptr_t p = ((uintptr_t)(boot + at + 16) + align - 1) & ~(align - 1);
  ((size_t *)p)[-1] = n;
  return (void *)p;
}

static size_t boot_size(const void *p) {
  return ((const size_t *)p)[-1];
}

/* ---- messages (no stdio: no allocation while the heap may be broken) -- */

void nnmem__say(const char *s) {
  size_t n = strlen(s);
  while (n) {
    ssize_t w = write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

int nnmem__abs_path(const char *p, char *out, size_t cap) {
  size_t n = strlen(p), at = 0;
  if (p[0] != '/') {
    if (!getcwd(out, cap - 2)) return -1;
    at = strlen(out);
    out[at++] = '/';
  }
  if (at + n + 32 >= cap) return 0;
  memcpy(out + at, p, n + 1);
  return 1;
}

/* "0x..." of p into hex (19 bytes); returns its start. */
static char *hex_of(const void *p, char hex[2 + 16 + 1]) {
  char *h = hex + 2 + 16;
  uintptr_t v = (uintptr_t)p;
  *h = 0;
  do {
    *--h = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v);
  *--h = 'x';
  *--h = '0';
  return h;
}

/* 1 when a bad call is to be said: always with NNMEM_MALLOC_ABORT=1,
 * else the first time `reported` is seen 0. */
static int report_due(_Atomic int *reported) {
  int zero = 0;
  return abort_on_misuse || atomic_compare_exchange_strong(reported, &zero, 1);
}

/* Ends a report: aborts with NNMEM_MALLOC_ABORT=1, else says `going_on`. */
static void report_end(const char *going_on) {
  if (abort_on_misuse) {
    nnmem__say("aborting (NNMEM_MALLOC_ABORT=1)\n");
    abort();
  }
  nnmem__say(going_on);
}

static void bad_pointer(const char *fn, const void *p) {
  if (!report_due(&misuse_reported)) return;
  char hex[2 + 16 + 1], *h = hex_of(p, hex);
  nnmem__say("nnmem malloc: ");
  nnmem__say(fn);
  nnmem__say("(");
  nnmem__say(h);
  nnmem__say("): not a live block (double free or foreign pointer); ");
  report_end("ignored (reported once; NNMEM_MALLOC_ABORT=1 aborts)\n");
}

/* ---- creation and fork ----------------------------------------------------
 */

static void fork_prepare(void) {
  nnmem__record_fork(0);
  nnmem__serve_fork(0);
  nnmem__allocator_fork_prepare(heap_a);
}
static void fork_parent(void) {
  nnmem__allocator_fork_parent(heap_a);
  nnmem__serve_fork(1);
  nnmem__record_fork(1);
}
static void fork_child(void) {
  nnmem__allocator_fork_child(heap_a);
  nnmem__serve_fork(2);
  nnmem__record_fork(2);
}

/* A queued free the allocator found bad when it flushed the queue (or a
 * quarantined block that could not be freed when it left). */
static void late_bad_free(void *ctx, const void *p) {
  (void)ctx;
  bad_pointer("free", p);
}

/* A quarantined block found written when it left (NNMEM_MALLOC_QUARANTINE
 * with NNMEM_MALLOC_QUARANTINE_FILL=1): reported once, or abort. */
static void quarantine_write(void *ctx, const void *p) {
  (void)ctx;
  if (!report_due(&write_reported)) return;
  char hex[2 + 16 + 1], *h = hex_of(p, hex);
  nnmem__say("nnmem malloc: block ");
  nnmem__say(h);
  nnmem__say(": written after its free (use after free, found when it left "
             "the quarantine); ");
  report_end("reported once; NNMEM_MALLOC_ABORT=1 aborts\n");
}

/* NNMEM_MALLOC_QUARANTINE=<size> (B, K, M, G, KiB.., KB..: the CLI's
 * sizes; 0 or unset: off) and NNMEM_MALLOC_QUARANTINE_FILL=1 into cfg. A
 * malformed size: one line on stderr, no quarantine. */
static void quarantine_from_env(nnmem_allocator_config_t *cfg) {
  const char *v = getenv("NNMEM_MALLOC_QUARANTINE");
  uint64_t n = 0;
  const char *why = NULL;
  if (!v || !*v) return;
  if (cli_parse_size(v, &n, &why) != 0) {
    nnmem__say("nnmem malloc: NNMEM_MALLOC_QUARANTINE not understood (");
    nnmem__say(why);
    nnmem__say("; a size such as 16M); no quarantine\n");
    return;
  }
  cfg->quarantine_bytes = n;
  const char *f = getenv("NNMEM_MALLOC_QUARANTINE_FILL");
  cfg->quarantine_fill = f && f[0] == '1';
  cfg->on_quarantine_write = quarantine_write;
}

/* ---- leak records (NNMEM_LEAKS) ------------------------------------------ */

/* The report's path, absolute (the working directory at start), with
 * "%p" for the process id (filled in at exit: a forked child writes its
 * own); empty while records are off. */
static char leaks_path[4096];
static nnmem_leaks_format_t leaks_format;

/* NNMEM_LEAKS_REPORT, or nnmem-leaks.%p.txt in the working directory; 0
 * when the path cannot be made absolute (records stay off). */
static int leaks_path_init(void) {
  const char *p = getenv("NNMEM_LEAKS_REPORT");
  if (!p || !*p) p = "nnmem-leaks.%p.txt";
  if (nnmem__abs_path(p, leaks_path, sizeof leaks_path) != 1) {
    nnmem__say("nnmem malloc: NNMEM_LEAKS_REPORT: cannot make the path "
               "absolute; no leak records\n");
    leaks_path[0] = '\0';
    return 0;
  }
  return 1;
}

/* Writes the leak report of the process's live blocks (atomically: a
 * temporary, then a rename). At exit, after the program's own handlers. */
static void leaks_at_exit(nnmem_allocator_t *a) {
  if (!leaks_path[0]) return;
  char path[sizeof leaks_path + 24], *o = path;
  const char *end = path + sizeof path - 1;
  for (const char *c = leaks_path; *c && o < end; c++) {
    if (c[0] == '%' && c[1] == 'p') {
      o += snprintf(o, (size_t)(end - o) + 1, "%ld", (long)getpid());
      c++;
    } else {
      *o++ = *c;
    }
  }
  *o = '\0';
  /* sites start at the program's call: this library's frames left out */
  Dl_info di;
  if (dladdr((void *)leaks_at_exit, &di)) nnmem__leaks_hide_base = di.dli_fbase;
  if (nnmem_allocator_leaks_write(a, leaks_format, path) != NNMEM_OK) {
    nnmem__say("nnmem malloc: cannot write the leak report ");
    nnmem__say(path);
    nnmem__say("\n");
  }
}

static void create(void) {
  in_init = 1;
  nnmem_backend_t *be = NULL;
  nnmem_allocator_t *a = NULL;
  if (nnmem_backend_mmap_create(NULL, &be) == NNMEM_OK) {
    nnmem_allocator_config_t cfg;
    nnmem_allocator_config_init(&cfg);
    /* leak records when NNMEM_LEAKS asks (written at exit: leaks_at_exit) */
    nnmem_leaks_config_t lc;
    int want = nnmem_leaks_config_from_env(&lc);
    if (want < 0)
      nnmem__say("nnmem malloc: NNMEM_LEAKS not understood (1, full, "
                 "sampled or sampled:BYTES); no leak records\n");
    if (want == 1 && leaks_path_init()) {
      leaks_format = lc.report_format;
      lc.report_path = NULL; /* the allocator is never destroyed here */
    } else {
      nnmem_leaks_config_init(&lc);
      lc.mode = NNMEM_LEAKS_OFF;
    }
    cfg.backend = be;
    cfg.small_max = SMALL_MAX;
    cfg.large_min = LARGE_MIN;
    /* empty slabs each class keeps: a producer / consumer pair (mixed2)
     * empties dozens of slabs of one class at a time; with 2 kept, 48,000
     * slab mappings came and went (1.4 s of system time, futex waits on
     * the pool lock meanwhile); with 32, 1,100 */
    cfg.keep_empty = 32;
    /* nobody reads the stats of a preloaded heap: no latency sampling (and
     * no 2 ms cycle-counter calibration at every program's start) */
    cfg.latency_sample = UINT32_MAX;
    cfg.leaks = &lc;
    const char *ab = getenv("NNMEM_MALLOC_ABORT");
    abort_on_misuse = ab && ab[0] == '1';
    /* small frees are queued and returned FREE_BATCH at a time (their cache
     * misses overlap); a bad one is then reported at the flush. Aborting on
     * misuse wants the bad call itself: no queue then. */
    cfg.free_batch = abort_on_misuse ? 0 : FREE_BATCH;
    cfg.on_misuse = late_bad_free;
    /* a quarantine (off by default): every free then goes to the slow
     * path, and a second free of a held block is refused at the call */
    quarantine_from_env(&cfg);
    /* spans of blocks over 8 KiB that empty give their pages back once
     * 64 MiB of them are resident, and free blocks from 8 KiB in spans
     * idle for 1-2 ms give theirs back: the resident size follows the
     * live blocks, without refaulting a producer / consumer's spans */
    cfg.decommit_spans = 1;
    if (nnmem_allocator_create(&cfg, &a) != NNMEM_OK) a = NULL;
  }
  heap_a = a;
  if (a) {
    nnmem__record_init();
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
  }
  nnmem__divert = nnmem__recording;
  atomic_store_explicit(&state, a ? ST_READY : ST_FAILED, memory_order_release);
  /* serving reads the plan (its CSV reader allocates through us): once
   * the allocator is ready; blocks handed out before come from the pools,
   * and the plan sends their frees there */
  if (a) { /* the fast paths step aside before the first planned block */
    const char *sv = getenv("NNMEM_SERVE");
    if (sv && *sv) __atomic_store_n(&nnmem__divert, 1, __ATOMIC_SEQ_CST);
    nnmem__serve_init(a);
    if (!nnmem__serving) /* not serving after all: no planned block exists */
      __atomic_store_n(&nnmem__divert, nnmem__recording, __ATOMIC_RELEASE);
  }
  if (a && !__atomic_load_n(&nnmem__divert, __ATOMIC_ACQUIRE))
    atomic_store_explicit(&fast_a, a, memory_order_release);
  in_init = 0;
  if (!a) {
    nnmem__say("nnmem malloc: cannot create the allocator (no memory); aborting\n");
    abort();
  }
}

/* The allocator, or NULL while it is being created (bootstrap arena). */
static __attribute__((noinline)) nnmem_allocator_t *heap_slow(void) {
  if (in_init) return NULL;
  int s = ST_NONE;
  if (atomic_compare_exchange_strong(&state, &s, ST_INIT)) {
    create();
    return heap_a;
  }
  /* another thread creates it (a few hundred microseconds): wait, but
   * not forever - this thread may hold a lock the creation needs (the
   * loader's, libc's): past ~1,000 yields, the bootstrap arena */
  for (int i = 0; i < 1000; i++) {
    if ((s = atomic_load_explicit(&state, memory_order_acquire)) != ST_INIT)
      return s == ST_READY ? heap_a : NULL;
    sched_yield();
  }
  return NULL;
}

static inline nnmem_allocator_t *heap(void) {
  if (__builtin_expect(
          atomic_load_explicit(&state, memory_order_acquire) == ST_READY, 1))
    return heap_a;
  return heap_slow();
}

__attribute__((constructor)) static void front_init(void) {
  (void)heap();
}

/* The exiting thread's queued frees (a bad one is reported now); other
 * threads' queues are flushed when those threads exit. Then the leak
 * report, when NNMEM_LEAKS asked for records. */
__attribute__((destructor)) static void front_fini(void) {
  if (atomic_load_explicit(&state, memory_order_acquire) == ST_READY) {
    nnmem_allocator_thread_flush(heap_a);
    leaks_at_exit(heap_a);
  }
}

/* ---- the functions ------------------------------------------------------- */

static inline void *do_alloc(size_t n, size_t align) {
  if (n > PTRDIFF_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  nnmem_allocator_t *a = heap();
  void *p;
  if (__builtin_expect(!a, 0))
    p = boot_alloc(n, align);
  else if (__builtin_expect(nnmem__serving, 0))
    p = nnmem__serve_alloc(n, align < 16 ? 16 : align);
  else if (align <= 16)
    p = nnmem_alloc(a, n ? n : 1);
  else
    p = nnmem_alloc_aligned(a, n ? n : 1, align);
  if (__builtin_expect(!p, 0)) {
    errno = ENOMEM;
    return NULL;
  }
  if (__builtin_expect(nnmem__recording, 0) && a) nnmem__record_alloc(p, n);
  return p;
}

static inline void do_free(const char *fn, void *p) {
  if (!p || in_boot(p)) return;
  nnmem_allocator_t *a = heap();
  if (!a) { /* a pointer from before us: not ours */
    bad_pointer(fn, p);
    return;
  }
  if (__builtin_expect(nnmem__recording, 0)) nnmem__record_free(p);
  int served = nnmem__serving ? nnmem__serve_free(p) : 0;
  if (served < 0 ||
      (!served && __builtin_expect(nnmem_allocator_free(a, p) != NNMEM_OK, 0)))
    bad_pointer(fn, p);
}

/* Usable bytes of a live pointer; 0 (and a report unless quiet) when it is
 * none of ours. */
static size_t usable(const char *fn, void *p, int quiet) {
  if (in_boot(p)) return boot_size(p);
  nnmem_allocator_t *a = heap();
  size_t n = 0;
  if (nnmem__serving && (n = nnmem__serve_usable(p)) != 0) return n;
  if (!a || nnmem__allocator_usable_size(a, p, &n) != NNMEM_OK) {
    if (!quiet) bad_pointer(fn, p);
    return 0;
  }
  return n;
}

/* Out of line: the common paths below save no registers. */
static __attribute__((noinline)) void *malloc_slow(size_t n) {
  return do_alloc(n, 16);
}
static __attribute__((noinline)) void free_slow(void *p) {
  do_free("free", p);
}

/* The common case first: the allocator ready, neither recording nor
 * serving: one call. Its fast path takes sizes in (0, 8 KiB]; any other
 * size (0, large, over PTRDIFF_MAX) takes the allocator's slower path
 * and, when that gives NULL, do_alloc (errno, size 0 as 1 byte). */
API void *malloc(size_t n) {
  nnmem_allocator_t *a = atomic_load_explicit(&fast_a, memory_order_acquire);
  if (__builtin_expect(a != NULL, 1))
    return nnmem__allocator_alloc_or(n, a, malloc_slow);
  return malloc_slow(n);
}

/* The common case is one call: a block of a span queued (a refused one
 * reaches bad_pointer at the queue's flush, through the allocator's
 * on_misuse: late_bad_free); anything else, NULL and the bootstrap arena
 * included, is do_free. */
API void free(void *p) {
  nnmem_allocator_t *a = atomic_load_explicit(&fast_a, memory_order_acquire);
  if (__builtin_expect(a != NULL, 1)) {
    nnmem__allocator_free_or(p, a, free_slow);
    return;
  }
  free_slow(p);
}

API void *calloc(size_t n, size_t m) {
  size_t total;
  if (__builtin_mul_overflow(n, m, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  void *p = do_alloc(total, 16);
  /* a block of LARGE_MIN or more is a fresh mapping: zero already (not
   * one served from a plan: its bytes were used before) */
  if (p && (total < LARGE_MIN || in_boot(p) || nnmem__debug || nnmem__serving))
    memset(p, 0, total); /* debug builds fill fresh blocks with 0xAA */
  return p;
}

/* realloc while serving a plan: every call is one planned request (the
 * recorder wrote each realloc as a free and an allocation), so nothing
 * stays in place; a planned block through serve.c, another one allocated
 * (from the plan), copied and freed. */
static __attribute__((noinline)) void *serve_realloc(void *p, size_t n) {
  int bad = 0;
  void *q = nnmem__serve_realloc(p, n, &bad);
  if (!bad) {
    if (!q) errno = ENOMEM;
    return q;
  }
  size_t have = usable("realloc", p, 0);
  if (!have) {
    errno = EINVAL;
    return NULL; /* reported; the pointer is left alone */
  }
  q = do_alloc(n, 16);
  if (!q) return NULL;
  memcpy(q, p, have < n ? have : n);
  do_free("realloc", p);
  return q;
}

/* Grows or shrinks in place while the block's usable size allows (and a
 * shrink keeps at least half of it); a growing block of 4 KiB or more
 * moves to twice its old size, so a chain of small growths copies O(n)
 * bytes in all. */
API void *realloc(void *p, size_t n) {
  if (!p) return do_alloc(n, 16);
  if (n == 0) {
    do_free("realloc", p);
    return NULL;
  }
  if (n > PTRDIFF_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  if (nnmem__serving && !in_boot(p)) return serve_realloc(p, n);
  size_t have = usable("realloc", p, 0);
  if (!have && !in_boot(p)) {
    errno = EINVAL;
    return NULL; /* reported; the pointer is left alone */
  }
  if (!in_boot(p) && n <= have && n >= have / 2) {
    if (__builtin_expect(nnmem__recording, 0)) { /* a new buffer, in place */
      nnmem__record_free(p);
      nnmem__record_alloc(p, n);
    }
    return p;
  }
  size_t want = n;
  if (n > have && have >= 4096 && 2 * have > n) want = 2 * have;
  int saved = errno;
  void *q = do_alloc(want, 16);
  if (!q && want != n && (q = do_alloc(n, 16)) != NULL)
    errno = saved; /* the doubled size failed, the size asked for did not */
  if (!q) return NULL;
  if (__builtin_expect(nnmem__recording, 0) && want != n)
    nnmem__record_resize(q, n);
  memcpy(q, p, have < n ? have : n);
  do_free("realloc", p);
  return q;
}

API void *reallocarray(void *p, size_t n, size_t m) {
  size_t total;
  if (__builtin_mul_overflow(n, m, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, total);
}

static int pow2(size_t x) {
  return x && !(x & (x - 1));
}

/* As glibc's: a bad alignment returns EINVAL with errno untouched; no
 * memory returns ENOMEM with errno set to it as well (glibc's allocation
 * sets it on the way); success leaves errno as it was. */
API int posix_memalign(void **out, size_t align, size_t n) {
  if (!pow2(align) || align % sizeof(void *)) return EINVAL;
  int saved = errno;
  void *p = do_alloc(n, align);
  if (!p) {
    errno = ENOMEM;
    return ENOMEM;
  }
  errno = saved;
  *out = p;
  return 0;
}

/* glibc's EINVAL: an alignment over SIZE_MAX / 2 + 1 (no power of two
 * above it); a larger one than memory allows is ENOMEM. */
API void *memalign(size_t align, size_t n) {
  if (align > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return NULL;
  }
  size_t a = 16;
  while (a < align)
    a <<= 1; /* glibc rounds a non-power of two up */
  return do_alloc(n, a);
}

/* glibc 2.36's aligned_alloc is its memalign (2.38 refuses a non-power of
 * two); the front follows the glibc it runs on (Debian 12). */
API void *aligned_alloc(size_t align, size_t n) {
  return memalign(align, n);
}

API void *valloc(size_t n) {
  return memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

API void *pvalloc(size_t n) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), r;
  if (__builtin_add_overflow(n, pg - 1, &r)) {
    errno = ENOMEM;
    return NULL;
  }
  r &= ~(pg - 1);
  return memalign(pg, r ? r : pg);
}

API size_t malloc_usable_size(void *p) {
  return p ? usable("", p, 1) : 0;
}

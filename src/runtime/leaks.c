/* leaks.c - leak records of the allocator (nnmem/leaks.h): one record per
 * live block that is recorded, grouped by call site in reports.
 *
 * Steps:
 *   1. alloc (full): take a backtrace of `depth` frames (outside the
 *      lock), then, under the records' lock, take a spare record (or a
 *      new one: every record has room for `depth` frames, so a freed one
 *      is kept for the next, up to MAX_SPARE) and insert {ptr, size, file,
 *      line, tid, cycle counter, frames} into a chained hash table keyed
 *      by address, and raise the page marks of a small page's block
 *      (nnmem__leaks_mark_t) in the same critical section. The unwinder:
 *      libunwind's unw_backtrace when libunwind.so.8 opens (dlopen, once
 *      per process; nothing links against it; not under ThreadSanitizer),
 *      else glibc's backtrace().
 *      Measured in bench/leaks: 16 frames from 24 deep cost ~1.8 us with
 *      glibc's (DWARF unwinding through libgcc_s, an FDE search per frame)
 *      and ~0.1 us with libunwind's (it caches the unwinding rule of each
 *      return address). The allocator's fast path takes the backtrace in
 *      its own frame (nnmem__leaks_backtrace: one frame less to unwind);
 *      the other paths here (record: the records' two frames skipped).
 *      The time is the cycle counter (runtime/cycles.h), turned into ns
 *      by the report: no clock_gettime on the recording path;
 *   2. alloc (sampled): byte countdowns, each an exponential draw of mean
 *      N = sample_bytes: the allocator's own, one per thread cache (its
 *      fast path: nnmem__leaks_arm, due below 0), and the thread's, one
 *      per distinct N in the process for the other paths (slots 1..7 of
 *      nnmem__leaks_left, due at <= 0; records with the same N share one).
 *      When an allocation of s bytes makes its countdown due the block is
 *      recorded as in step 1 and a new count is drawn: the process is
 *      memoryless, so an allocation is recorded with exactly probability
 *      p = 1 - exp(-s / N) whichever countdown counts it (jemalloc's prof
 *      sampling). An 8th distinct N gets slot 0: a fresh draw for every
 *      allocation, recorded iff the draw <= s (the same p). The record
 *      stands for s / p bytes and 1 / p blocks (Horvitz-Thompson:
 *      unbiased); p is computed by the report, from s;
 *   3. free: the allocator asks only when the block may have a record: a
 *      block of a thread cache's small page when the page's mark names it
 *      (its index + 1, or MANY: nnmem__leaks_mark_hit), any other block
 *      after a counting filter (one counter per address hash, raised by
 *      every record without page marks, lowered by its removal, both under
 *      the lock) is read: a zero proves there is no record and the free
 *      takes no lock. Else the record is removed under the lock (the
 *      page marks lowered with it) and kept as a spare;
 *   4. report: copy the records under the lock, sort by site key (file
 *      and line when given, else the frames), add up each group, sort the
 *      groups by estimated bytes (largest first) and render text, JSON
 *      (common/json_write.h) or folded stacks (frames root first, joined
 *      by ';', file:line as the leaf, then the bytes).
 *
 * Invariants (nnmem__leaks_check; the page marks: the allocator's
 * nnmem__allocator_leaks_check): count == number of records in the table,
 * each in its address's bucket; for every address hash h, filter[h] ==
 * number of records without page marks whose address hashes to h; nspare
 * <= MAX_SPARE.
 *
 * Complexity: O(1) expected per recorded alloc / free plus the backtrace;
 * O(1) and lock-free for a free with no record; report O(r log r) for r
 * records.
 *
 * Thread-safety: all entries may run concurrently; the table, the spares,
 * the filter's writes and the page marks' writes are under `lock` (a
 * futex lock, leaks_lock_t; the filter and the marks are read without
 * it), the sampling countdowns are per thread (per thread cache), the slot
 * table is atomic. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <execinfo.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__) && defined(SYS_futex)
#include <linux/futex.h>
#define NNMEM_LEAKS_FUTEX 1
#endif

#include "common/json_write.h"
#include "common/mathx.h"
#include "common/text.h"
#include "common/util.h"
#include "nnmem/io.h"
#include "runtime/cycles.h"
#include "runtime/leaks_internal.h"

enum { FILTER = NNMEM__LEAKS_FILTER, SKIP_FRAMES = 2 };

/* One record; every record of a nnmem__leaks_t has room for `depth`
 * frames, so a freed one is kept for the next (the spare list). */
typedef struct rec {
  struct rec *next;
  uintptr_t ptr;
  uint64_t size;
  const char *file;
  int line;
  uint32_t tid;
  uint64_t t_cyc; /* nnmem__cycles() when recorded; ns in the reports */
  uint32_t depth;
  uint8_t marked; /* counted by page marks (else by the filter) */
  void *frames[];
} rec_t;

typedef int (*backtrace_fn)(void **frames, int n);

/* The records' lock: a futex word (Drepper, "Futexes Are Tricky", 2011,
 * mutex type 3): 0 free, 1 taken, 2 taken and a thread may be asleep on
 * it. Taking it free is one locked compare-and-swap 0 -> 1; giving it back
 * one locked exchange with 0, and a FUTEX_WAKE only when the word was 2 (a
 * waiter said it sleeps): no system call while nobody waits. A waiter
 * spins SPIN_TRIES times on a plain load (every critical section but a
 * report's copy, the checker and destroy is a few dozen instructions),
 * then swaps in 2 and sleeps in FUTEX_WAIT until the word changes. An
 * earlier round's spinlock (a release store to give) yielded but never
 * slept: under SCHED_FIFO / SCHED_RR a waiter of higher priority on the
 * holder's CPU kept it from ever running, and a report held the lock for
 * O(records) while every recording thread burnt its time slices in
 * sched_yield. The exchange costs the give one locked instruction more
 * than that store (docs/runtime.md, thirteenth round: measured). Off Linux
 * the waiter yields instead of sleeping. */
typedef struct leaks_lock {
  _Atomic uint32_t word;
} leaks_lock_t;

enum { SPIN_TRIES = 64 };

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Sleeps while *w == v (returns at once when it differs, on a wake, or on
 * a signal: the caller looks again either way). */
static void futex_wait(_Atomic uint32_t *w, uint32_t v) {
#ifdef NNMEM_LEAKS_FUTEX
  (void)syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
#else
  (void)w, (void)v;
  (void)sched_yield();
#endif
}

static void futex_wake_one(_Atomic uint32_t *w) {
#ifdef NNMEM_LEAKS_FUTEX
  (void)syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
  (void)w;
#endif
}

static __attribute__((noinline)) void lock_wait(leaks_lock_t *l) {
  for (unsigned n = 0; n < SPIN_TRIES; n++) {
    cpu_relax();
    uint32_t c = atomic_load_explicit(&l->word, memory_order_relaxed);
    if (c == 0 && atomic_compare_exchange_weak_explicit(
                      &l->word, &c, 1, memory_order_acquire,
                      memory_order_relaxed))
      return;
  }
  /* 2 from here on: this thread may sleep, so the holder's give must wake
   * one (taken with 2, the lock is given back with a wake that may find
   * nobody: harmless) */
  while (atomic_exchange_explicit(&l->word, 2, memory_order_acquire) != 0)
    futex_wait(&l->word, 2);
}

static inline void lock_take(leaks_lock_t *l) {
  uint32_t c = 0;
  if (__builtin_expect(!atomic_compare_exchange_strong_explicit(
                           &l->word, &c, 1, memory_order_acquire,
                           memory_order_relaxed),
                       0))
    lock_wait(l);
}

static inline void lock_give(leaks_lock_t *l) {
  if (__builtin_expect(
          atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2, 0))
    futex_wake_one(&l->word);
}

struct nnmem__leaks {
  nnmem__leaks_head_t head; /* first: mode + filter, read inline */
  uint64_t sample_bytes;
  double mean; /* sample_bytes as a double (the draw's scale) */
  uint32_t depth;
  uint64_t id, seed;
  char *report_path;
  nnmem_leaks_format_t report_format;
  leaks_lock_t lock;
  rec_t **bucket;
  size_t nbucket, count;
  rec_t *spare; /* freed records kept for reuse (under lock) */
  size_t nspare;
  _Atomic uint64_t dropped;
};

enum { MAX_SPARE = 1024 };

static _Atomic uint64_t next_leaks_id = 1;
static _Atomic uint64_t next_thread_seq = 1;

_Thread_local __attribute__((tls_model("initial-exec")))
int64_t nnmem__leaks_left[NNMEM__LEAKS_SLOTS];

_Thread_local __attribute__((tls_model("initial-exec"))) int nnmem__leaks_busy;

/* slot_rate[k]: the N of countdown slot k (1 .. 7; 0: free). Taken by the
 * first records with that N, never given back. */
static _Atomic uint64_t slot_rate[NNMEM__LEAKS_SLOTS];

static uint32_t slot_for(uint64_t n) {
  for (uint32_t k = 1; k < NNMEM__LEAKS_SLOTS; k++) {
    uint64_t v = atomic_load(&slot_rate[k]);
    if (v == 0 && atomic_compare_exchange_strong(&slot_rate[k], &v, n))
      return k;
    if (v == n) return k;
  }
  return 0; /* an 8th distinct N: a draw per allocation */
}

/* Per thread: the sampling random state (0 until the thread's first
 * sampled allocation), the slots whose countdown has started (bit k) and
 * the cached kernel thread id. initial-exec: no __tls_get_addr call (as
 * allocator.c's tls_cur). */
static _Thread_local __attribute__((tls_model("initial-exec"))) struct {
  uint64_t rng;
  uint32_t tid, started;
} tl;

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* 1 + floor of an exponential draw of mean N: -ln(u) N, u uniform in
 * (0, 1] from 53 random bits (nnmem__neg_ln_u53; lk->mean is N as a
 * double, converted once). */
static int64_t draw_interval(nnmem__leaks_t *lk) {
  double v = nnmem__neg_ln_u53((splitmix(&tl.rng) >> 11) + 1) * lk->mean;
  return v >= 9.0e18 ? INT64_MAX : (int64_t)v + 1;
}

static uint32_t thread_id(void) {
  if (!tl.tid) tl.tid = (uint32_t)syscall(SYS_gettid);
  return tl.tid;
}

/* Probability that a block of `size` bytes was recorded: 1 in full mode,
 * 1 - exp(-size / N) in sampled mode (step 2). Computed when reporting,
 * not when recording: it depends on the size alone. */
static double rec_p(const nnmem__leaks_t *lk, const rec_t *r) {
  if (lk->head.mode != NNMEM_LEAKS_SAMPLED) return 1.0;
  return nnmem__one_minus_exp_neg((double)r->size / (double)lk->sample_bytes);
}

static inline size_t hash_ptr(uintptr_t p) {
  return nnmem__leaks_hash(p);
}

/* ---- lifecycle ------------------------------------------------------- */

/* ---- the unwinder ------------------------------------------------------ */

static backtrace_fn bt_fn;
static pthread_once_t bt_once = PTHREAD_ONCE_INIT;

/* Under ThreadSanitizer libunwind is not used: its per-thread cache's
 * destructor locks a mutex after TSan has torn down the exiting thread's
 * state, which crashes the sanitizer's runtime (not the program). */
#if defined(__SANITIZE_THREAD__)
#define NNMEM_LEAKS_NO_LIBUNWIND 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NNMEM_LEAKS_NO_LIBUNWIND 1
#endif
#endif

static void pick_unwinder(void) {
  bt_fn = backtrace;
#ifndef NNMEM_LEAKS_NO_LIBUNWIND
  /* RTLD_LOCAL: libunwind's own `backtrace` interposes nothing */
  void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  void *f = h ? dlsym(h, "unw_backtrace") : NULL;
  /* POSIX: a data pointer from dlsym converts to a function pointer; the
   * handle stays open for the process */
  if (f) memcpy(&bt_fn, &f, sizeof f);
#endif
}

/* libunwind's unw_backtrace when it loads, else glibc's backtrace; both
 * write return addresses, the caller's first. */
static inline backtrace_fn unwinder(void) {
  pthread_once(&bt_once, pick_unwinder);
  return bt_fn;
}

const char *nnmem__leaks_unwinder(void) {
  return unwinder() == backtrace ? "glibc backtrace()" : "libunwind";
}

nnmem_status_t nnmem__leaks_create(const nnmem_leaks_config_t *cfg,
                                   nnmem__leaks_t **out) {
  *out = NULL;
  if (cfg->mode == NNMEM_LEAKS_OFF) return NNMEM_OK;
  if ((cfg->mode != NNMEM_LEAKS_FULL && cfg->mode != NNMEM_LEAKS_SAMPLED) ||
      cfg->depth > NNMEM_LEAKS_MAX_DEPTH ||
      (cfg->mode == NNMEM_LEAKS_SAMPLED && cfg->sample_bytes == 0) ||
      (unsigned)cfg->report_format > NNMEM_LEAKS_FOLDED)
    return NNMEM_ERR_INVALID;
  nnmem__leaks_t *lk = calloc(1, sizeof *lk);
  if (!lk) return NNMEM_ERR_NOMEM;
  lk->nbucket = 1024;
  lk->bucket = calloc(lk->nbucket, sizeof *lk->bucket);
  if (cfg->report_path) { /* room for the default name of a forked child */
    size_t n = strlen(cfg->report_path) + 1;
    if ((lk->report_path = malloc(n < 64 ? 64 : n)) != NULL)
      memcpy(lk->report_path, cfg->report_path, n);
  }
  if (!lk->bucket || (cfg->report_path && !lk->report_path)) {
    free(lk->bucket);
    free(lk->report_path);
    free(lk);
    return NNMEM_ERR_NOMEM;
  }
  lk->head.mode = cfg->mode;
  lk->head.slot =
      cfg->mode == NNMEM_LEAKS_SAMPLED ? slot_for(cfg->sample_bytes) : 0;
  lk->sample_bytes = cfg->sample_bytes;
  lk->mean = (double)cfg->sample_bytes;
  lk->depth = cfg->depth;
  lk->seed = cfg->seed ? cfg->seed : 0x6E6E6D656D6C6BULL;
  lk->report_format = cfg->report_format;
  lk->id = atomic_fetch_add(&next_leaks_id, 1);
  atomic_init(&lk->lock.word, 0);
  (void)nnmem__ns_per_cycle(); /* calibrated once per process (~2 ms) */
  if (lk->depth) { /* the first call loads the unwinder: not on a hot path */
    void *f[2];
    lk->head.depth = lk->depth;
    lk->head.bt = unwinder();
    (void)lk->head.bt(f, 2);
  }
  *out = lk;
  return NNMEM_OK;
}

void nnmem__leaks_destroy(nnmem__leaks_t *lk) {
  if (!lk) return;
  if (lk->report_path) {
    char *doc = NULL;
    size_t len = 0;
    if (nnmem__leaks_report(lk, lk->report_format, &doc, &len) == NNMEM_OK) {
      /* whole or not at all: a temporary, then a rename */
      (void)nnmem_file_write_atomic(lk->report_path, doc, len, NULL);
    }
    free(doc);
  }
  for (size_t i = 0; i < lk->nbucket; i++)
    for (rec_t *r = lk->bucket[i], *n; r; r = n) {
      n = r->next;
      free(r);
    }
  for (rec_t *r = lk->spare, *n; r; r = n) {
    n = r->next;
    free(r);
  }
  free(lk->bucket);
  free(lk->report_path);
  free(lk);
}

/* ---- recording --------------------------------------------------------- */

static void grow_locked(nnmem__leaks_t *lk) {
  size_t n = lk->nbucket * 2;
  rec_t **b = calloc(n, sizeof *b);
  if (!b) return; /* longer chains, still correct */
  for (size_t i = 0; i < lk->nbucket; i++)
    for (rec_t *r = lk->bucket[i], *nx; r; r = nx) {
      nx = r->next;
      size_t h = hash_ptr(r->ptr) & (n - 1);
      r->next = b[h];
      b[h] = r;
    }
  free(lk->bucket);
  lk->bucket = b;
  lk->nbucket = n;
}

/* A filter counter changes only under the lock: a plain load and store (no
 * locked instruction); lock-free readers see one value or the other. */
static inline void filter_add_locked(_Atomic uint32_t *f, int d) {
  atomic_store_explicit(
      f, atomic_load_explicit(f, memory_order_relaxed) + (uint32_t)d,
      memory_order_relaxed);
}

/* A spare record (room for lk->depth frames), else a new one; NULL when
 * out of memory. */
static rec_t *rec_new_locked(nnmem__leaks_t *lk) {
  rec_t *r = lk->spare;
  if (r) {
    lk->spare = r->next;
    lk->nspare--;
    return r;
  }
  return malloc(sizeof *r + lk->depth * sizeof(void *));
}

/* The page marks (nnmem__leaks_mark_t) change only under the lock: plain
 * loads and stores; lock-free readers see one value or the other. A record
 * added raises the count and sets its index's bit in recs; the mark
 * becomes its index + 1 when it is the page's only record, else MANY with
 * bit i % 16 of each record's block i (nnmem__leaks_mark_hit). One
 * removed lowers the count; the page's last clears both. */
static void mark_add_locked(const nnmem__leaks_mark_t *m) {
  uint64_t w = atomic_load_explicit(m->recs, memory_order_relaxed);
  atomic_store_explicit(m->recs, (w + (1ull << 32)) | (1ull << (m->idx & 31)),
                        memory_order_relaxed);
  /* several: MANY with bit i % 16 of each record's block i (a single
   * mark turns into the bits of its block and this one) */
  uint32_t f = atomic_load_explicit(m->mark, memory_order_relaxed);
  if ((w >> 32) == 0 && m->idx + 1 < NNMEM__LEAKS_MANY)
    f = m->idx + 1;
  else if ((w >> 32) == 0 || (f & NNMEM__LEAKS_MANY))
    f |= NNMEM__LEAKS_MANY | (1u << (m->idx & 15));
  else /* f == the other record's index + 1 */
    f = NNMEM__LEAKS_MANY | (1u << ((f - 1) & 15)) | (1u << (m->idx & 15));
  atomic_store_explicit(m->mark, (uint16_t)f, memory_order_relaxed);
}

static void mark_remove_locked(const nnmem__leaks_mark_t *m) {
  uint64_t w = atomic_load_explicit(m->recs, memory_order_relaxed);
  uint64_t n = w - (1ull << 32);
  if ((n >> 32) == 0) {
    n = 0;
    atomic_store_explicit(m->mark, 0, memory_order_relaxed);
  }
  atomic_store_explicit(m->recs, n, memory_order_relaxed);
}

/* Stores the record of block ptr with its n frames (under the lock). */
static int record_frames(nnmem__leaks_t *lk, void *ptr, size_t size,
                         const char *file, int line,
                         const nnmem__leaks_mark_t *mark, void *const *frames,
                         int n) {
  uint64_t t = nnmem__cycles();
  size_t h = hash_ptr((uintptr_t)ptr);
  lock_take(&lk->lock);
  rec_t *r = rec_new_locked(lk);
  if (!r) {
    lock_give(&lk->lock);
    atomic_fetch_add_explicit(&lk->dropped, 1, memory_order_relaxed);
    return 0;
  }
  r->ptr = (uintptr_t)ptr;
  r->size = size;
  r->file = file;
  r->line = line;
  r->tid = thread_id();
  r->t_cyc = t;
  r->depth = (uint32_t)n;
  r->marked = mark != NULL;
  if (n) memcpy(r->frames, frames, (size_t)n * sizeof(void *));
  /* a block with page marks is found through them: the filter counts
   * only the others (one random line less per record and per free) */
  if (!mark) filter_add_locked(&lk->head.filter[h & (FILTER - 1)], 1);
  if (lk->count >= lk->nbucket) grow_locked(lk);
  h &= lk->nbucket - 1;
  r->next = lk->bucket[h];
  lk->bucket[h] = r;
  lk->count++;
  if (mark) mark_add_locked(mark);
  lock_give(&lk->lock);
  return 1;
}

/* The backtrace taken here (the records' own two frames skipped: this
 * one and on_alloc's caller, which calls on_alloc as its tail), then the
 * record. */
static __attribute__((noinline)) int record(nnmem__leaks_t *lk, void *ptr,
                                            size_t size, const char *file,
                                            int line,
                                            const nnmem__leaks_mark_t *mark) {
  void *fr[NNMEM_LEAKS_MAX_DEPTH + SKIP_FRAMES];
  int n = 0;
  if (nnmem__leaks_busy) return 0; /* the unwinder's own allocation */
  if (lk->depth) {
    nnmem__leaks_busy = 1;
    n = lk->head.bt(fr, (int)lk->depth + SKIP_FRAMES) - SKIP_FRAMES;
    nnmem__leaks_busy = 0;
    if (n < 0) n = 0;
  }
  return record_frames(lk, ptr, size, file, line, mark, fr + SKIP_FRAMES, n);
}

/* The thread's sampling random state, seeded on first use from the
 * records' seed and the thread's sequence number. */
static void rng_start(const nnmem__leaks_t *lk) {
  if (tl.rng == 0) {
    tl.rng = lk->seed ^
             (atomic_fetch_add(&next_thread_seq, 1) * 0xD1B54A32D192ED03ULL);
    if (!tl.rng) tl.rng = 1;
  }
}

int64_t nnmem__leaks_arm(nnmem__leaks_t *lk) {
  if (lk->head.mode != NNMEM_LEAKS_SAMPLED) return -1;
  rng_start(lk);
  return draw_interval(lk) - 1; /* due below 0: the same law as the slots */
}

int nnmem__leaks_record(nnmem__leaks_t *lk, void *ptr, size_t size,
                        const char *file, int line,
                        const nnmem__leaks_mark_t *mark, void *const *frames,
                        int n) {
  if (n > (int)lk->depth) n = (int)lk->depth;
  if (nnmem__leaks_busy) return 0; /* the unwinder's own allocation */
  return record_frames(lk, ptr, size, file, line, mark, frames, n > 0 ? n : 0);
}

int nnmem__leaks_slot_due(nnmem__leaks_t *lk, size_t size) {
  uint32_t k = lk->head.slot;
  if (k == 0) {
    nnmem__leaks_left[0] = 0; /* slot 0 stays <= 0 */
    if (lk->head.mode == NNMEM_LEAKS_FULL) return 1;
  }
  rng_start(lk);
  if (k == 0 || !(tl.started & (1u << k))) {
    /* no countdown yet (or none for this N): draw one; this block is
     * recorded iff the draw is <= its size (probability 1 - e^(-s/N)) */
    int64_t left = draw_interval(lk) - (int64_t)size;
    if (k == 0) return left <= 0;
    tl.started |= 1u << k;
    nnmem__leaks_left[k] = left;
    if (left > 0) return 0;
  }
  nnmem__leaks_left[k] = draw_interval(lk);
  return 1;
}

int nnmem__leaks_on_alloc(nnmem__leaks_t *lk, void *ptr, size_t size,
                          const char *file, int line,
                          const nnmem__leaks_mark_t *mark) {
  return nnmem__leaks_slot_due(lk, size)
             ? record(lk, ptr, size, file, line, mark)
             : 0;
}

int nnmem__leaks_on_free(nnmem__leaks_t *lk, void *ptr,
                         const nnmem__leaks_mark_t *mark) {
  size_t h = hash_ptr((uintptr_t)ptr);
  _Atomic uint32_t *f = &lk->head.filter[h & (FILTER - 1)];
  if (!mark && atomic_load_explicit(f, memory_order_relaxed) == 0) return 0;
  rec_t *found = NULL;
  int removed = 0;
  lock_take(&lk->lock);
  for (rec_t **pp = &lk->bucket[h & (lk->nbucket - 1)]; *pp; pp = &(*pp)->next)
    if ((*pp)->ptr == (uintptr_t)ptr) {
      found = *pp;
      *pp = found->next;
      lk->count--;
      removed = 1;
      if (!found->marked)
        filter_add_locked(f, -1);
      else if (mark) /* the allocator passes the marks of every block it
                        marked (the same page test on both sides) */
        mark_remove_locked(mark);
      if (lk->nspare < MAX_SPARE) {
        found->next = lk->spare;
        lk->spare = found;
        lk->nspare++;
        found = NULL;
      }
      break;
    }
  lock_give(&lk->lock);
  if (found) free(found); /* over MAX_SPARE: no call to free(NULL) */
  return removed;
}

nnmem_status_t nnmem__leaks_check(nnmem__leaks_t *lk,
                                  int (*each)(void *ctx, uintptr_t ptr,
                                              int marked),
                                  void *ctx, nnmem_diag_t *diag) {
  nnmem_status_t st = NNMEM_OK;
  uint32_t *cnt = calloc(FILTER, sizeof *cnt);
  if (!cnt) return nnmem__diag(diag, NNMEM_ERR_NOMEM, "leak records: check");
  lock_take(&lk->lock);
  size_t n = 0, ns = 0;
  for (size_t i = 0; i < lk->nbucket && st == NNMEM_OK; i++)
    for (rec_t *r = lk->bucket[i]; r && st == NNMEM_OK; r = r->next) {
      n++;
      size_t h = hash_ptr(r->ptr);
      if ((h & (lk->nbucket - 1)) != i)
        st = nnmem__diag(diag, NNMEM_ERR_STATE,
                         "leak records: block 0x%llx in bucket %zu, hashes "
                         "to %zu",
                         (unsigned long long)r->ptr, i, h & (lk->nbucket - 1));
      else if (r->depth > lk->depth)
        st = nnmem__diag(diag, NNMEM_ERR_STATE,
                         "leak records: block 0x%llx has %u frames > depth %u",
                         (unsigned long long)r->ptr, r->depth, lk->depth);
      if (!r->marked) cnt[h & (FILTER - 1)]++;
      if (st == NNMEM_OK && each && each(ctx, r->ptr, r->marked))
        st = nnmem__diag(diag, NNMEM_ERR_STATE,
                         "leak records: block 0x%llx (%s) disagrees with its "
                         "page",
                         (unsigned long long)r->ptr,
                         r->marked ? "page-marked" : "in the filter");
    }
  for (rec_t *r = lk->spare; r; r = r->next)
    ns++;
  if (st == NNMEM_OK && n != lk->count)
    st = nnmem__diag(diag, NNMEM_ERR_STATE,
                     "leak records: %zu in the table, count says %zu", n,
                     lk->count);
  if (st == NNMEM_OK && (ns != lk->nspare || ns > MAX_SPARE))
    st = nnmem__diag(diag, NNMEM_ERR_STATE,
                     "leak records: %zu spares, nspare says %zu (max %d)", ns,
                     lk->nspare, (int)MAX_SPARE);
  for (size_t h = 0; h < FILTER && st == NNMEM_OK; h++)
    if (atomic_load_explicit(&lk->head.filter[h], memory_order_relaxed) !=
        cnt[h])
      st = nnmem__diag(
          diag, NNMEM_ERR_STATE,
          "leak records: filter[%zu] = %u, %u records without page marks "
          "hash there",
          h, atomic_load_explicit(&lk->head.filter[h], memory_order_relaxed),
          cnt[h]);
  lock_give(&lk->lock);
  free(cnt);
  return st;
}

/* ---- reports ----------------------------------------------------------- */

typedef struct site {
  const rec_t *first; /* representative record (its key) */
  uint64_t records, bytes, est_blocks, est_bytes, threads;
  uint64_t oldest_ns;
} site_t;

static int key_cmp(const rec_t *x, const rec_t *y) {
  if (x->file || y->file) {
    if (!x->file) return 1; /* sites with file:line first */
    if (!y->file) return -1;
    int c = strcmp(x->file, y->file);
    if (c) return c;
    return (x->line > y->line) - (x->line < y->line);
  }
  if (x->depth != y->depth) return x->depth < y->depth ? -1 : 1;
  for (uint32_t i = 0; i < x->depth; i++)
    if (x->frames[i] != y->frames[i])
      return (uintptr_t)x->frames[i] < (uintptr_t)y->frames[i] ? -1 : 1;
  return 0;
}

static int rec_cmp(const void *a, const void *b) {
  const rec_t *x = *(const rec_t *const *)a, *y = *(const rec_t *const *)b;
  int c = key_cmp(x, y);
  if (c) return c;
  return (x->tid > y->tid) - (x->tid < y->tid); /* threads adjacent */
}

static int site_cmp(const void *a, const void *b) {
  const site_t *x = a, *y = b;
  if (x->est_bytes != y->est_bytes) return x->est_bytes > y->est_bytes ? -1 : 1;
  return key_cmp(x->first, y->first);
}

static uint64_t est(double v) {
  return nnmem__round_u64(v);
}

void *nnmem__leaks_hide_base;

/* Drops the leading frames of a copied record that lie in the hidden
 * module (nnmem__leaks_hide_base). dladdr takes the loader's lock: never
 * under the records' lock (a thread in dlopen may be allocating). */
static void strip_hidden(rec_t *r) {
  void *base = nnmem__leaks_hide_base;
  uint32_t k = 0;
  Dl_info di;
  while (base && k < r->depth && dladdr(r->frames[k], &di) &&
         di.dli_fbase == base)
    k++;
  if (!k) return;
  memmove(r->frames, r->frames + k, (r->depth - k) * sizeof r->frames[0]);
  r->depth -= k;
}

/* Copies the records (under the lock) and groups them: *sites_out sorted
 * by bytes. The copies stay valid until freed (*recs_out). */
static nnmem_status_t collect(nnmem__leaks_t *lk, rec_t ***recs_out,
                              site_t **sites_out, size_t *nsites) {
  *recs_out = NULL;
  *sites_out = NULL;
  *nsites = 0;
  lock_take(&lk->lock);
  size_t n = lk->count, k = 0;
  rec_t **v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; v && i < lk->nbucket; i++)
    for (rec_t *r = lk->bucket[i]; r; r = r->next) {
      size_t sz = sizeof *r + r->depth * sizeof(void *);
      rec_t *c = malloc(sz);
      if (!c) continue;
      memcpy(c, r, sz);
      v[k++] = c;
    }
  lock_give(&lk->lock);
  if (!v) return NNMEM_ERR_NOMEM;
  for (size_t i = 0; i < k; i++)
    strip_hidden(v[i]);
  qsort(v, k, sizeof *v, rec_cmp);
  site_t *s = calloc(k ? k : 1, sizeof *s);
  if (!s) {
    for (size_t i = 0; i < k; i++)
      free(v[i]);
    free(v);
    return NNMEM_ERR_NOMEM;
  }
  uint64_t now = nnmem__cycles();
  double ns_per_cycle = nnmem__ns_per_cycle();
  size_t m = 0;
  double eb = 0, en = 0;
  for (size_t i = 0; i < k; i++) {
    if (i == 0 || key_cmp(v[i - 1], v[i]) != 0) {
      if (m) s[m - 1].est_bytes = est(eb), s[m - 1].est_blocks = est(en);
      s[m++].first = v[i];
      eb = en = 0;
    }
    site_t *t = &s[m - 1];
    t->records++;
    t->bytes += v[i]->size;
    double p = rec_p(lk, v[i]);
    eb += (double)v[i]->size / p;
    en += 1.0 / p;
    if (t->records == 1 || v[i - 1]->tid != v[i]->tid) t->threads++;
    uint64_t age =
        now > v[i]->t_cyc
            ? (uint64_t)((double)(now - v[i]->t_cyc) * ns_per_cycle + 0.5)
            : 0;
    if (age > t->oldest_ns) t->oldest_ns = age;
  }
  if (m) s[m - 1].est_bytes = est(eb), s[m - 1].est_blocks = est(en);
  qsort(s, m, sizeof *s, site_cmp);
  *recs_out = v;
  *sites_out = s;
  *nsites = m;
  return NNMEM_OK;
}

/* "func+0xoff" or "module+0xoff" (no allocation besides `t`). */
static void put_frame(nnmem__text_t *t, void *pc) {
  Dl_info di;
  const ElfW(Sym) *sym = NULL;
  memset(&di, 0, sizeof di); /* dladdr1 fills it only when it finds pc */
  int found = dladdr1(pc, &di, (void **)&sym, RTLD_DL_SYMENT) != 0;
  uintptr_t off = (uintptr_t)pc - (uintptr_t)di.dli_saddr;
  /* the nearest symbol below pc: its name only when pc lies inside it (a
   * stripped executable's local functions have no symbol: the nearest
   * exported one, far below, would name them wrongly); its size unknown
   * (0), trusted */
  if (found && di.dli_sname && di.dli_saddr &&
      (!sym || sym->st_size == 0 || off < sym->st_size)) {
    nnmem__text_printf(t, "%s+0x%lx", di.dli_sname, (unsigned long)off);
  } else if (found && di.dli_fname && di.dli_fbase) {
    const char *b = strrchr(di.dli_fname, '/');
    nnmem__text_printf(
        t, "%s+0x%lx", b ? b + 1 : di.dli_fname,
        (unsigned long)((uintptr_t)pc - (uintptr_t)di.dli_fbase));
  } else {
    nnmem__text_printf(t, "0x%lx", (unsigned long)(uintptr_t)pc);
  }
}

/* A caller's file name in a line of the text report: a control character
 * (a newline would split the site's line) as \xNN, a backslash as \\. */
static void put_file_text(nnmem__text_t *t, const char *file) {
  for (const unsigned char *c = (const unsigned char *)file; *c; c++) {
    if (*c < 0x20 || *c == 0x7f)
      nnmem__text_printf(t, "\\x%02x", *c);
    else if (*c == '\\')
      nnmem__text_puts(t, "\\\\");
    else
      nnmem__text_putc(t, (char)*c);
  }
}

static void put_site_name(nnmem__text_t *t, const rec_t *r) {
  if (r->file) {
    put_file_text(t, r->file);
    nnmem__text_printf(t, ":%d", r->line);
  }
  else if (r->depth)
    put_frame(t, r->frames[0]);
  else
    nnmem__text_puts(t, "(unknown)");
}

static const char *mode_name(nnmem_leaks_mode_t m) {
  return m == NNMEM_LEAKS_SAMPLED ? "sampled" : "full";
}

static void render_text(nnmem__leaks_t *lk, nnmem__text_t *t, site_t *s,
                        size_t m) {
  uint64_t tb = 0, tn = 0;
  for (size_t i = 0; i < m; i++)
    tb += s[i].est_bytes, tn += s[i].est_blocks;
  nnmem__text_printf(t, "nnmem leaks (%s", mode_name(lk->head.mode));
  if (lk->head.mode == NNMEM_LEAKS_SAMPLED)
    nnmem__text_printf(t, ", 1 in %llu bytes, estimates",
                       (unsigned long long)lk->sample_bytes);
  nnmem__text_printf(t, "): %llu bytes in %llu blocks live at %zu sites\n",
                     (unsigned long long)tb, (unsigned long long)tn, m);
  nnmem__text_printf(t, "%14s %10s %8s %10s  %s\n", "bytes", "blocks",
                     "threads", "oldest_ms", "site");
  for (size_t i = 0; i < m; i++) {
    nnmem__text_printf(
        t, "%14llu %10llu %8llu %10.1f  ", (unsigned long long)s[i].est_bytes,
        (unsigned long long)s[i].est_blocks, (unsigned long long)s[i].threads,
        (double)s[i].oldest_ns / 1e6);
    put_site_name(t, s[i].first);
    nnmem__text_putc(t, '\n');
    const rec_t *r = s[i].first;
    for (uint32_t f = 0; f < r->depth; f++) {
      nnmem__text_puts(t, "        at ");
      put_frame(t, r->frames[f]);
      nnmem__text_putc(t, '\n');
    }
  }
}

static void render_json(nnmem__leaks_t *lk, nnmem__text_t *t, site_t *s,
                        size_t m) {
  nnmem__jw_t w;
  nnmem__jw_init(&w, t, NNMEM__JW_PRETTY);
  nnmem__jw_object(&w);
  nnmem__jw_key(&w, "mode");
  nnmem__jw_string(&w, mode_name(lk->head.mode));
  nnmem__jw_key(&w, "sample_bytes");
  nnmem__jw_u64(&w,
                lk->head.mode == NNMEM_LEAKS_SAMPLED ? lk->sample_bytes : 1);
  nnmem__jw_key(&w, "dropped");
  nnmem__jw_u64(&w, atomic_load(&lk->dropped));
  nnmem__jw_key(&w, "unwinder");
  nnmem__jw_string(&w, lk->depth ? nnmem__leaks_unwinder() : NULL);
  nnmem__jw_key(&w, "sites");
  nnmem__jw_array(&w);
  nnmem__text_t f;
  for (size_t i = 0; i < m; i++) {
    const rec_t *r = s[i].first;
    nnmem__jw_object(&w);
    nnmem__jw_key(&w, "bytes");
    nnmem__jw_u64(&w, s[i].est_bytes);
    nnmem__jw_key(&w, "blocks");
    nnmem__jw_u64(&w, s[i].est_blocks);
    nnmem__jw_key(&w, "recorded_blocks");
    nnmem__jw_u64(&w, s[i].records);
    nnmem__jw_key(&w, "recorded_bytes");
    nnmem__jw_u64(&w, s[i].bytes);
    nnmem__jw_key(&w, "threads");
    nnmem__jw_u64(&w, s[i].threads);
    nnmem__jw_key(&w, "oldest_ns");
    nnmem__jw_u64(&w, s[i].oldest_ns);
    nnmem__jw_key(&w, "file");
    nnmem__jw_string(&w, r->file);
    nnmem__jw_key(&w, "line");
    if (r->file)
      nnmem__jw_i64(&w, r->line);
    else
      nnmem__jw_null(&w);
    nnmem__jw_key(&w, "thread");
    nnmem__jw_u64(&w, r->tid);
    nnmem__jw_key(&w, "stack");
    nnmem__jw_array(&w);
    for (uint32_t k = 0; k < r->depth; k++) {
      nnmem__text_init(&f);
      put_frame(&f, r->frames[k]);
      nnmem__jw_string(&w, f.data ? f.data : "?");
      nnmem__text_free(&f);
    }
    nnmem__jw_end(&w);
    nnmem__jw_end(&w);
  }
  nnmem__jw_end(&w);
  nnmem__jw_end(&w);
  if (nnmem__jw_finish(&w) != NNMEM_OK) t->failed = 1;
}

/* Folded stacks: frames root first, ';' between them (a ';' or ' ' inside
 * a frame name becomes '_'), file:line as the leaf when given. */
/* One frame of a folded stack, from byte `from` of f on: a ';' (the frame
 * separator), white space (the count's separator) or another control
 * character (a newline would end the line) becomes '_'. */
static void folded_clean(nnmem__text_t *f, size_t from) {
  for (size_t c = from; f->data && c < f->len; c++) {
    unsigned char ch = (unsigned char)f->data[c];
    if (ch == ';' || ch == ' ' || ch < 0x20 || ch == 0x7f) f->data[c] = '_';
  }
}

static void render_folded(nnmem__text_t *t, site_t *s, size_t m) {
  nnmem__text_t f;
  for (size_t i = 0; i < m; i++) {
    const rec_t *r = s[i].first;
    nnmem__text_init(&f);
    for (uint32_t k = r->depth; k-- > 0;) {
      size_t from = f.len;
      put_frame(&f, r->frames[k]);
      folded_clean(&f, from);
      if (k || r->file) nnmem__text_putc(&f, ';');
    }
    if (r->file) {
      size_t from = f.len;
      nnmem__text_printf(&f, "%s:%d", r->file, r->line);
      folded_clean(&f, from);
    }
    if (!r->depth && !r->file) nnmem__text_puts(&f, "(unknown)");
    if (f.data) nnmem__text_append(t, f.data, f.len);
    nnmem__text_printf(t, " %llu\n", (unsigned long long)s[i].est_bytes);
    nnmem__text_free(&f);
  }
}

nnmem_status_t nnmem__leaks_report(nnmem__leaks_t *lk, nnmem_leaks_format_t fmt,
                                   char **out, size_t *len) {
  if ((unsigned)fmt > NNMEM_LEAKS_FOLDED) return NNMEM_ERR_INVALID;
  rec_t **v;
  site_t *s;
  size_t m;
  nnmem_status_t st = collect(lk, &v, &s, &m);
  if (st != NNMEM_OK) return st;
  nnmem__text_t t;
  nnmem__text_init(&t);
  if (fmt == NNMEM_LEAKS_TEXT)
    render_text(lk, &t, s, m);
  else if (fmt == NNMEM_LEAKS_JSON)
    render_json(lk, &t, s, m);
  else
    render_folded(&t, s, m);
  nnmem__text_putc(&t, '\0'); /* an empty folded report still allocates */
  size_t total = 0;
  for (size_t i = 0; i < m; i++)
    total += s[i].records;
  for (size_t i = 0; i < total; i++)
    free(v[i]);
  free(v);
  free(s);
  st = nnmem__text_status(&t);
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    return st;
  }
  *len = t.len - 1;
  *out = t.data;
  return NNMEM_OK;
}

void nnmem__leaks_summary(nnmem__leaks_t *lk, nnmem_leaks_summary_t *out) {
  rec_t **v;
  site_t *s;
  size_t m;
  out->mode = lk->head.mode;
  if (collect(lk, &v, &s, &m) != NNMEM_OK) return;
  for (size_t i = 0; i < m; i++) {
    out->records += s[i].records;
    out->bytes += s[i].bytes;
    out->est_blocks += s[i].est_blocks;
    out->est_bytes += s[i].est_bytes;
  }
  out->sites = m;
  for (size_t i = 0; i < out->records; i++)
    free(v[i]);
  free(v);
  free(s);
}

/* ---- config ------------------------------------------------------------ */

void nnmem_leaks_config_init(nnmem_leaks_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
  cfg->mode = NNMEM_LEAKS_FULL;
  cfg->sample_bytes = 512 * 1024;
  cfg->depth = 16;
}

static const char *report_suffix_path(nnmem_leaks_config_t *cfg,
                                      const char *path) {
  size_t n = strlen(path);
  if (n >= 5 && strcmp(path + n - 5, ".json") == 0)
    cfg->report_format = NNMEM_LEAKS_JSON;
  else if (n >= 7 && strcmp(path + n - 7, ".folded") == 0)
    cfg->report_format = NNMEM_LEAKS_FOLDED;
  else
    cfg->report_format = NNMEM_LEAKS_TEXT;
  return path;
}

int nnmem_leaks_config_from_env(nnmem_leaks_config_t *cfg) {
  /* per thread: allocators created at once on two threads (the path is
   * copied by the records' creation) */
  static _Thread_local char default_path[64];
  if (!cfg) return -1;
  nnmem_leaks_config_init(cfg);
  cfg->mode = NNMEM_LEAKS_OFF;
  const char *v = getenv("NNMEM_LEAKS");
  if (!v || !*v || strcmp(v, "0") == 0) return 0;
  if (strcmp(v, "1") == 0 || strcmp(v, "full") == 0) {
    cfg->mode = NNMEM_LEAKS_FULL;
  } else if (strncmp(v, "sampled", 7) == 0 && (v[7] == '\0' || v[7] == ':')) {
    cfg->mode = NNMEM_LEAKS_SAMPLED;
    if (v[7] == ':') {
      /* decimal digits only (strtoull alone would take a sign, leading
       * white space and, on overflow, ULLONG_MAX), 1 .. 2^62 */
      const uint64_t max = UINT64_C(1) << 62;
      uint64_t n = 0;
      const char *c = v + 8;
      for (; *c >= '0' && *c <= '9' && n <= max / 10; c++)
        n = n * 10 + (uint64_t)(*c - '0');
      if (c == v + 8 || *c || n == 0 || n > max) {
        cfg->mode = NNMEM_LEAKS_OFF;
        return -1;
      }
      cfg->sample_bytes = n;
    }
  } else {
    return -1;
  }
  const char *p = getenv("NNMEM_LEAKS_REPORT");
  if (!p || !*p) {
    snprintf(default_path, sizeof default_path, "nnmem-leaks.%ld.txt",
             (long)getpid());
    p = default_path;
  }
  cfg->report_path = report_suffix_path(cfg, p);
  return 1;
}

void nnmem__leaks_fork(nnmem__leaks_t *lk, int phase) {
  if (phase == 0) {
    lock_take(&lk->lock);
  } else if (phase == 1) {
    lock_give(&lk->lock);
  } else {
    atomic_store_explicit(&lk->lock.word, 0, memory_order_relaxed);
    /* the default report names the process: the child's own, so that its
     * report at exit does not replace the parent's */
    char was[64];
    snprintf(was, sizeof was, "nnmem-leaks.%ld.txt", (long)getppid());
    if (lk->report_path && strcmp(lk->report_path, was) == 0)
      snprintf(lk->report_path, sizeof was, "nnmem-leaks.%ld.txt",
               (long)getpid()); /* room made at create: no allocation */
  }
}

/* record.c - record mode of libnnmem_malloc.so: every allocation of the
 * process becomes one buffer of a MiniMalloc CSV problem
 * (id,lower,upper,size), written when the process exits.
 *
 * Switched on by NNMEM_RECORD=PATH (read once, when the allocator is
 * created); NNMEM_RECORD_PID, when set, limits it to the process with that
 * id (programs the recorded one starts inherit the environment, and a
 * forked child stops recording). `nnmem record -- prog` sets both.
 *
 * Steps (lifetimes are half-open [lower, upper)):
 *   1. allocation k (0-based, in the order the recorder sees them) opens
 *      record k: size (0 counts as 1; rounded up to 16 bytes, malloc's
 *      alignment, so that a plan of the trace serves aligned blocks), its
 *      allocation index k and the step
 *      marker count m (calls of nnmem_record_step so far); a hash table maps
 *      the pointer to k;
 *   2. a free closes the pointer's record with the allocation count at
 *      that moment (>= k + 1) and the marker count; a realloc is a free
 *      and an allocation (in place or not);
 *   3. at exit (library destructor), with no markers: lower = k, upper =
 *      the allocation count at the free (live blocks: the total); with
 *      markers: lower = m at the allocation, upper = m at the free + 1
 *      (the step of the free still uses the block; live blocks: last + 1);
 *      the rows go to PATH.tmp.PID, renamed to PATH once complete, so PATH
 *      is either absent or whole.
 * Invariants: lower < upper for every row; the table holds exactly the
 * open records. Complexity: O(1) expected per call, under one mutex.
 * Thread-safety: every function from any thread; the destructor runs
 * alone (exit). Memory for the records comes from glibc (__libc_*), never
 * from the allocator being recorded. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"

#define API __attribute__((visibility("default")))

extern void *__libc_realloc(void *, size_t);
extern void *__libc_calloc(size_t, size_t);
extern void __libc_free(void *);

typedef struct rec {
  uint64_t size, lo_ord, hi_ord, lo_mark, hi_mark; /* hi_ord 0: live */
} rec_t;

typedef struct slot {
  uintptr_t key; /* 0: empty */
  uint64_t idx;
} slot_t;

int nnmem__recording;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static rec_t *recs;
static uint64_t nrec, caprec;
static slot_t *tab;
static uint64_t tcap, tcount; /* tcap: a power of two or 0 */
static _Atomic uint64_t marks;
static char path[4096];
static pid_t owner;
static int failed; /* out of memory while recording: no trace */

/* Marks the start of the next step of the recorded program. Programs call
 * it through dlsym(RTLD_DEFAULT, "nnmem_record_step") so that they run
 * without the front as well. */
API void nnmem_record_step(void) {
  atomic_fetch_add(&marks, 1);
  if (nnmem__serving) nnmem__serve_step();
}

void nnmem__record_init(void) {
  const char *p = getenv("NNMEM_RECORD");
  if (!p || !*p) return;
  const char *pid = getenv("NNMEM_RECORD_PID");
  if (pid && *pid && strtoll(pid, NULL, 10) != (long long)getpid()) return;
  int ok = nnmem__abs_path(p, path, sizeof path);
  if (ok < 0) return;
  if (ok == 0) {
    nnmem__say("nnmem malloc: NNMEM_RECORD path too long; not recording\n");
    return;
  }
  owner = getpid();
  nnmem__recording = 1;
}

/* A recorded size: the request (0 counts as 1) rounded up to 16 bytes,
 * what malloc hands out at least (and what serve.c asks the plan for): a
 * plan of such sizes keeps every offset a multiple of 16, malloc's
 * alignment. */
static inline uint64_t rounded(size_t n) {
  return ((uint64_t)(n ? n : 1) + 15) & ~(uint64_t)15;
}

static inline uint64_t hash(uintptr_t k, uint64_t cap) {
  return ((uint64_t)(k >> 4) * 0x9E3779B97F4A7C15ull) >>
         (64 - __builtin_ctzll(cap));
}

static int tab_grow_locked(void) {
  uint64_t ncap = tcap ? tcap * 2 : 1024;
  slot_t *nt = __libc_calloc(ncap, sizeof *nt);
  if (!nt) return -1;
  for (uint64_t i = 0; i < tcap; i++) {
    if (!tab[i].key) continue;
    uint64_t h = hash(tab[i].key, ncap);
    while (nt[h].key)
      h = (h + 1) & (ncap - 1);
    nt[h] = tab[i];
  }
  __libc_free(tab);
  tab = nt;
  tcap = ncap;
  return 0;
}

static slot_t *tab_find_locked(uintptr_t k) {
  if (!tcap) return NULL;
  for (uint64_t h = hash(k, tcap);; h = (h + 1) & (tcap - 1)) {
    if (tab[h].key == k) return &tab[h];
    if (!tab[h].key) return NULL;
  }
}

/* Linear probing deletion by backward shift (no tombstones). */
static void tab_remove_locked(slot_t *s) {
  uint64_t i = (uint64_t)(s - tab), j = i;
  for (;;) {
    j = (j + 1) & (tcap - 1);
    if (!tab[j].key) break;
    uint64_t h = hash(tab[j].key, tcap);
    /* move j into the hole at i when its home h is not in (i, j] */
    if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
      tab[i] = tab[j];
      i = j;
    }
  }
  tab[i].key = 0;
  tcount--;
}

void nnmem__record_alloc(void *p, size_t n) {
  pthread_mutex_lock(&lock);
  if (!nnmem__recording || failed) goto out;
  if (nrec == caprec) {
    uint64_t nc = caprec ? caprec * 2 : 4096;
    rec_t *nr = __libc_realloc(recs, nc * sizeof *nr);
    if (!nr) {
      failed = 1;
      goto out;
    }
    recs = nr;
    caprec = nc;
  }
  if ((tcount + 1) * 2 > tcap && tab_grow_locked() != 0) {
    failed = 1;
    goto out;
  }
  uintptr_t k = (uintptr_t)p;
  slot_t *s = tab_find_locked(k);
  if (!s) { /* not open (the usual case): a new slot */
    uint64_t h = hash(k, tcap);
    while (tab[h].key)
      h = (h + 1) & (tcap - 1);
    s = &tab[h];
    s->key = k;
    tcount++;
  } /* else an unseen free: the old record stays open, as if leaked */
  s->idx = nrec;
  rec_t *r = &recs[nrec];
  r->size = rounded(n);
  r->lo_ord = nrec;
  r->hi_ord = 0;
  r->lo_mark = atomic_load(&marks);
  nrec++;
out:
  pthread_mutex_unlock(&lock);
}

void nnmem__record_free(void *p) {
  pthread_mutex_lock(&lock);
  slot_t *s = nnmem__recording ? tab_find_locked((uintptr_t)p) : NULL;
  if (s) {
    rec_t *r = &recs[s->idx];
    r->hi_ord = nrec;
    r->hi_mark = atomic_load(&marks);
    tab_remove_locked(s);
  }
  pthread_mutex_unlock(&lock);
}

void nnmem__record_resize(void *p, size_t n) {
  pthread_mutex_lock(&lock);
  slot_t *s = nnmem__recording ? tab_find_locked((uintptr_t)p) : NULL;
  if (s) recs[s->idx].size = rounded(n);
  pthread_mutex_unlock(&lock);
}

void nnmem__record_fork(int phase) {
  if (phase == 0)
    pthread_mutex_lock(&lock);
  else if (phase == 1)
    pthread_mutex_unlock(&lock);
  else {
    pthread_mutex_unlock(&lock); /* the prepare's thread is the one left */
    nnmem__recording = 0; /* the child is not the recorded process */
  }
}

/* ---- the file ------------------------------------------------------------ */

typedef struct out {
  int fd, err;
  size_t len;
  char buf[1 << 16];
} out_t;

static void out_flush(out_t *o) {
  size_t at = 0;
  while (at < o->len && !o->err) {
    ssize_t w = write(o->fd, o->buf + at, o->len - at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      o->err = 1;
    else
      at += (size_t)w;
  }
  o->len = 0;
}

static void out_row(out_t *o, uint64_t id, uint64_t lo, uint64_t hi,
                    uint64_t size) {
  if (sizeof o->buf - o->len < 100) out_flush(o);
  o->len += (size_t)snprintf(o->buf + o->len, sizeof o->buf - o->len,
                             "%llu,%llu,%llu,%llu\n", (unsigned long long)id,
                             (unsigned long long)lo, (unsigned long long)hi,
                             (unsigned long long)size);
}

static out_t out_buf; /* static: the destructor's stack may be small */

__attribute__((destructor)) static void record_write(void) {
  pthread_mutex_lock(&lock);
  int on = nnmem__recording && owner == getpid();
  nnmem__recording = 0;
  pthread_mutex_unlock(&lock);
  if (!on) return;
  if (failed) {
    nnmem__say("nnmem malloc: out of memory while recording; no trace written\n");
    return;
  }
  char tmp[sizeof path + 32];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  out_t *o = &out_buf;
  o->fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (o->fd < 0) {
    nnmem__say("nnmem malloc: cannot create the trace file; no trace written\n");
    return;
  }
  o->err = 0;
  o->len = (size_t)snprintf(o->buf, sizeof o->buf, "id,lower,upper,size\n");
  uint64_t m = atomic_load(&marks);
  for (uint64_t i = 0; i < nrec; i++) {
    const rec_t *r = &recs[i];
    uint64_t lo, hi;
    if (m) {
      lo = r->lo_mark;
      hi = (r->hi_ord ? r->hi_mark : m) + 1;
    } else {
      lo = r->lo_ord;
      hi = r->hi_ord ? r->hi_ord : nrec;
    }
    out_row(o, i, lo, hi, r->size);
  }
  out_flush(o);
  if (close(o->fd) != 0) o->err = 1;
  if (o->err || rename(tmp, path) != 0) {
    unlink(tmp);
    nnmem__say("nnmem malloc: cannot write the trace file; no trace written\n");
  }
}

/* serve.c - serve mode of libnnmem_malloc.so: a run's allocations come
 * from the plan of an earlier recorded run (record.c, then `nnmem plan
 * TRACE.csv --out PLAN.csv`), through the plan-backed allocator
 * (nnmem/planned.h): the k-th allocation of a step gets its planned offset
 * in one reserved range of the plan's height.
 *
 * Switched on by NNMEM_SERVE=PLAN.csv, the plan as a CSV with an offset
 * column (`nnmem plan TRACE.csv --out PLAN.csv`; `nnmem serve` writes one
 * from a plan JSON: the front links no JSON parser), read once, right
 * after the allocator is created; NNMEM_SERVE_PID, when set, limits it to the
 * process with that id; NNMEM_SERVE_REPORT=PATH has the process write its
 * serving counts there at exit (PATH.tmp.PID renamed: absent or whole).
 * `nnmem serve PLAN -- prog` sets all three.
 *
 * Steps:
 *   1. the plan is read and checked (the plan-backed allocator verifies
 *      it); its steps are allocations when every buffer i starts at step i
 *      (a trace recorded without markers), else nnmem_record_step() calls;
 *      the plan's height is reserved (mmap, MAP_NORESERVE: pages are
 *      committed when used); any failure: one line on stderr and the
 *      program runs on the pools as without NNMEM_SERVE;
 *   2. every allocation asks the plan for the next request, with the size
 *      the recorder wrote (rounded up to 16, as record.c does); a block the
 *      plan places off the requested alignment is given back at once (an
 *      early free) and the pools serve the request; a divergent request
 *      (another size, more than planned) is served by the pools - the plan
 *      counts it and never fails the run;
 *   3. a free inside the plan's range goes to the plan (a bad one is
 *      reported like any bad free), any other to the allocator; realloc of
 *      a planned block is a free, then an allocation, then memmove (the
 *      recorder wrote a realloc as a free and an allocation, in either
 *      order: freeing first keeps the plan's order whichever it was, and
 *      the old bytes stay in place until the next request);
 *   4. at exit the counts go to NNMEM_SERVE_REPORT.
 * Invariants: a pointer in [base, base + height) was served by the plan
 * and is live in it, or is misuse. A realloc that finds no memory after
 * giving its block back to the plan stops serving (every later request
 * from the pools), so the block it keeps for the caller is never served
 * again; the caller's later free, size or realloc of it are answered from
 * a short list (held). Thread-safety: every function from any thread (one mutex: the
 * plan is one sequence of requests, as the recording was); a forked child
 * keeps serving with its own copy. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "front.h"
#include "common/util.h"
#include "nnmem/io.h"
#include "nnmem/planned.h"
#include "nnmem/planned_inline.h"
#include "nnmem/problem.h"

int nnmem__serving;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static nnmem_planned_t *pl;
static nnmem_allocator_t *heap;
static char *base;
static uint64_t height;
static int markers;  /* steps are nnmem_record_step() calls */
static int stopped;  /* a realloc found no memory: pools only from then */
static pid_t owner;
static char report[4096];

static void say3(const char *a, const char *b, const char *c) {
  nnmem__say(a);
  nnmem__say(b);
  nnmem__say(c);
}

void nnmem__serve_init(nnmem_allocator_t *a) {
  const char *path = getenv("NNMEM_SERVE");
  if (!path || !*path) return;
  const char *pid = getenv("NNMEM_SERVE_PID");
  if (pid && *pid && strtoll(pid, NULL, 10) != (long long)getpid()) return;
  if (nnmem__recording) {
    nnmem__say("nnmem malloc: NNMEM_SERVE and NNMEM_RECORD are both set; "
        "recording, not serving\n");
    return;
  }
  const char *rep = getenv("NNMEM_SERVE_REPORT");
  if (rep && *rep && nnmem__abs_path(rep, report, sizeof report) != 1) {
    nnmem__say("nnmem malloc: NNMEM_SERVE_REPORT path too long; not serving\n");
    return;
  }
  nnmem_csv_t *csv = NULL;
  const nnmem_problem_t *p = NULL;
  const uint64_t *off = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = nnmem_csv_read_file(path, &csv, &d);
  if (st == NNMEM_OK) {
    p = nnmem_csv_problem(csv);
    off = nnmem_csv_offsets(csv);
    if (!off)
      st = nnmem__diag(&d, NNMEM_ERR_PARSE,
                       "%s has no offset column: not a plan (nnmem plan "
                       "TRACE.csv --out PLAN.csv)",
                       path);
  }
  if (st == NNMEM_OK) {
    size_t n = nnmem_problem_count(p);
    const nnmem_buffer_t *b = nnmem_problem_buffers(p);
    for (size_t i = 0; i < n; i++)
      if (b[i].first != i) markers = 1;
    void *m = MAP_FAILED;
    if (nnmem_problem_height(p, off, &height) == NNMEM_OK && height)
      m = mmap(NULL, height, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      st = NNMEM_ERR_NOMEM;
      snprintf(d.message, sizeof d.message,
               "%s: cannot reserve the plan's height (%llu bytes)", path,
               (unsigned long long)height);
    } else {
      base = m;
      nnmem_planned_config_t c;
      nnmem_planned_config_init(&c);
      c.auto_steps = !markers;
      c.base = base;
      st = nnmem_planned_serve(a, p, off, &c, &pl, &d);
      if (st != NNMEM_OK) {
        munmap(base, height);
        base = NULL;
      }
    }
  }
  nnmem_csv_destroy(csv);
  if (st != NNMEM_OK) {
    say3("nnmem malloc: NNMEM_SERVE: ",
         d.message[0] ? d.message : nnmem_status_str(st),
         "; not serving\n");
    height = 0;
    return;
  }
  heap = a;
  owner = getpid();
  __atomic_store_n(&nnmem__serving, 1, __ATOMIC_RELEASE);
}

static inline int in_plan(const void *p) {
  return (uintptr_t)p - (uintptr_t)base < height;
}

static inline size_t rounded(size_t n) {
  return ((n ? n : 1) + 15) & ~(size_t)15;
}

void *nnmem__serve_alloc(size_t n, size_t align) {
  size_t want = rounded(n);
  void *p = NULL;
  if (want >= n) { /* no overflow (n near SIZE_MAX: the pools refuse it) */
    pthread_mutex_lock(&lock);
    if (!stopped) {
      p = nnmem_planned_alloc_inline(pl, want);
      if (p && ((uintptr_t)p & (align - 1))) {
        nnmem_planned_free_inline(pl, p); /* off alignment: back at once */
        p = NULL;
      }
    }
    pthread_mutex_unlock(&lock);
  }
  if (p) return p;
  return align <= 16 ? nnmem_alloc(heap, n ? n : 1)
                     : nnmem_alloc_aligned(heap, n ? n : 1, align);
}

/* Blocks a realloc gave back to the plan and then found no memory to
 * replace (step 3; the pools failed too): still the caller's, as the
 * failed realloc says, their bytes in the plan's range, which serves
 * nothing any more (stopped). Their free, usable size and realloc are
 * answered here (under the lock); beyond HELD at once (each one a failure
 * of the pools as well) a later free of one is reported as a bad free. */
enum { HELD = 16 };
static struct {
  void *p;
  size_t n;
} held[HELD];
static int nheld;

static int held_find(const void *p) {
  for (int i = 0; i < nheld; i++)
    if (held[i].p == p) return i;
  return -1;
}
static void held_drop(int i) {
  held[i] = held[--nheld];
}

int nnmem__serve_free(void *p) {
  if (!in_plan(p)) return 0;
  nnmem_planned_stats_t before, after;
  pthread_mutex_lock(&lock);
  int h = held_find(p);
  if (h >= 0) {
    held_drop(h); /* its bytes stay unused: the plan serves no more */
    pthread_mutex_unlock(&lock);
    return 1;
  }
  nnmem_planned_stats(pl, &before);
  nnmem_planned_free_inline(pl, p);
  nnmem_planned_stats(pl, &after);
  pthread_mutex_unlock(&lock);
  return after.misuse == before.misuse ? 1 : -1;
}

size_t nnmem__serve_usable(const void *p) {
  if (!in_plan(p)) return 0;
  size_t n = 0;
  pthread_mutex_lock(&lock);
  int h = held_find(p);
  if (h >= 0)
    n = held[h].n;
  else if (nnmem_planned_usable_size(pl, p, &n) != NNMEM_OK)
    n = 0;
  pthread_mutex_unlock(&lock);
  return n;
}

void *nnmem__serve_realloc(void *p, size_t n, int *bad) {
  *bad = 0;
  size_t have = 0, want = rounded(n);
  void *q = NULL;
  pthread_mutex_lock(&lock);
  int h = held_find(p);
  if (h >= 0) { /* held after a failed realloc: the pools' turn */
    have = held[h].n;
    if ((q = nnmem_alloc(heap, n)) != NULL) {
      memmove(q, p, have < n ? have : n);
      held_drop(h);
    }
    pthread_mutex_unlock(&lock);
    return q;
  }
  if (nnmem_planned_usable_size(pl, p, &have) != NNMEM_OK) {
    pthread_mutex_unlock(&lock);
    *bad = 1;
    return NULL;
  }
  nnmem_planned_free_inline(pl, p); /* first: see step 3 above */
  if (!stopped && want >= n) {
    q = nnmem_planned_alloc_inline(pl, want);
    if (q && ((uintptr_t)q & 15)) {
      nnmem_planned_free_inline(pl, q);
      q = NULL;
    }
  }
  if (!q) q = nnmem_alloc(heap, n);
  if (q) {
    memmove(q, p, have < n ? have : n);
  } else {
    stopped = 1; /* p stays the caller's: never serve its bytes again */
    if (nheld < HELD) {
      held[nheld].p = p;
      held[nheld++].n = have;
    }
  }
  pthread_mutex_unlock(&lock);
  return q;
}

void nnmem__serve_step(void) {
  if (!markers) return;
  pthread_mutex_lock(&lock);
  nnmem_step_inline(pl);
  pthread_mutex_unlock(&lock);
}

void nnmem__serve_fork(int phase) {
  if (phase == 0)
    pthread_mutex_lock(&lock);
  else if (phase == 1)
    pthread_mutex_unlock(&lock);
  else
    pthread_mutex_unlock(&lock); /* the child serves its own copy */
}

__attribute__((destructor)) static void serve_report(void) {
  if (!nnmem__serving || owner != getpid() || !report[0]) return;
  nnmem_planned_stats_t st;
  pthread_mutex_lock(&lock);
  nnmem_planned_stats(pl, &st);
  pthread_mutex_unlock(&lock);
  char tmp[sizeof report + 32], buf[1024];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", report, (long)getpid());
  int len = snprintf(
      buf, sizeof buf,
      "allocs %llu\nserved %llu\nfallback %llu\nsize_diverged %llu\n"
      "order_diverged %llu\noverstayed %llu\nmisuse %llu\ndisabled %d\n"
      "steps %llu\nheight %llu\nstep_kind %s\n",
      (unsigned long long)st.allocs, (unsigned long long)st.served,
      (unsigned long long)st.fallback, (unsigned long long)st.size_diverged,
      (unsigned long long)st.order_diverged,
      (unsigned long long)st.overstayed, (unsigned long long)st.misuse,
      st.disabled || stopped, (unsigned long long)st.steps,
      (unsigned long long)st.height, markers ? "markers" : "allocations");
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int ok = fd >= 0 && len > 0 && write(fd, buf, (size_t)len) == len;
  if (fd >= 0 && close(fd) != 0) ok = 0;
  if (!ok || rename(tmp, report) != 0) {
    unlink(tmp);
    nnmem__say("nnmem malloc: cannot write NNMEM_SERVE_REPORT\n");
  }
}

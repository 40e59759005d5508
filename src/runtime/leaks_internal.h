/* leaks_internal.h - the allocator's hooks into the leak records
 * (internal, never installed). The allocator holds a nnmem__leaks_t
 * pointer that is NULL while records are off: its hot path tests that one
 * pointer and nothing else. */
#ifndef NNMEM_LEAKS_INTERNAL_H
#define NNMEM_LEAKS_INTERNAL_H

#include <stddef.h>

#include "nnmem/leaks.h"

#include <stdatomic.h>
#include <stdint.h>

typedef struct nnmem__leaks nnmem__leaks_t;

/* The part of the records the allocator's inline checks read: the mode,
 * the countdown slot and the counting filter (one counter per address
 * hash: a zero proves a block has no record). It is the first member of
 * struct nnmem__leaks. */
#define NNMEM__LEAKS_FILTER (1u << 12)
#define NNMEM__LEAKS_SLOTS 8
typedef struct nnmem__leaks_head {
  nnmem_leaks_mode_t mode;
  /* index into nnmem__leaks_left: 1 .. 7, one per distinct sample_bytes N
   * in the process (records with the same N share it); 0 in full mode and
   * for an 8th distinct N: every allocation then goes to on_alloc */
  uint32_t slot;
  /* backtrace frames per record (0: none) and the unwinder (NULL when 0),
   * for nnmem__leaks_backtrace */
  uint32_t depth;
  int (*bt)(void **frames, int n);
  _Atomic uint32_t filter[NNMEM__LEAKS_FILTER];
} nnmem__leaks_head_t;

/* The thread's sampling countdowns, one per slot: bytes it may still
 * allocate before the next sample at that slot's N. Shared by every
 * allocator of the thread whose records have that N (the byte process is
 * memoryless, so that changes no probability). Slot 0 stays <= 0. <= 0
 * sends the allocation to nnmem__leaks_on_alloc. initial-exec: one
 * %fs-relative read-modify-write, no __tls_get_addr (64 bytes of static
 * TLS). */
extern _Thread_local __attribute__((tls_model("initial-exec")))
int64_t nnmem__leaks_left[NNMEM__LEAKS_SLOTS];

/* Nonzero while this thread runs the records' unwinder. An unwinder
 * that allocates (in a new thread, say) would, under the malloc front,
 * come back through the allocator to the records: such an allocation is
 * not recorded. (The library's own allocations never come back: the
 * front links them to glibc's malloc, tools/malloc/CMakeLists.txt.) */
extern _Thread_local
    __attribute__((tls_model("initial-exec"))) int nnmem__leaks_busy;

/* The load address of a module whose frames at the top of a record's
 * backtrace reports leave out (NULL: none). The malloc front sets its own:
 * its malloc / calloc / realloc frames are not the caller's site. */
extern void *nnmem__leaks_hide_base;

static inline size_t nnmem__leaks_hash(uintptr_t p) {
  uint64_t h = (uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ULL;
  return (size_t)(h >> 32);
}

/* 1 when an allocation of `size` must go to nnmem__leaks_on_alloc: the
 * countdown of the records' slot runs out (always for slot 0). One load
 * and one subtraction from thread-local memory. */
static inline int nnmem__leaks_wants(const nnmem__leaks_t *lk, size_t size) {
  const nnmem__leaks_head_t *h = (const nnmem__leaks_head_t *)lk;
  return (nnmem__leaks_left[h->slot] -= (int64_t)size) <= 0;
}

/* The records' countdown slot, which the allocator keeps beside its
 * records pointer (nnmem__leaks_wants_slot). */
static inline uint32_t nnmem__leaks_slot(const nnmem__leaks_t *lk) {
  return ((const nnmem__leaks_head_t *)lk)->slot;
}

/* nnmem__leaks_wants with the slot already at hand: the countdown does
 * not wait on a load through the records pointer. */
static inline int nnmem__leaks_wants_slot(uint32_t slot, size_t size) {
  return (nnmem__leaks_left[slot] -= (int64_t)size) <= 0;
}

/* 1 in full mode: any block may have a record (every free looks). 0 in
 * sampled mode: the allocator counts the records of each small page, and
 * a free on a page without any skips the records. */
static inline int nnmem__leaks_full(const nnmem__leaks_t *lk) {
  return ((const nnmem__leaks_head_t *)lk)->mode == NNMEM_LEAKS_FULL;
}

/* 1 when `ptr` may have a record (the filter's counter is not zero). */
static inline int nnmem__leaks_maybe(const nnmem__leaks_t *lk,
                                     const void *ptr) {
  const nnmem__leaks_head_t *h = (const nnmem__leaks_head_t *)lk;
  return atomic_load_explicit(&h->filter[nnmem__leaks_hash((uintptr_t)ptr) &
                                         (NNMEM__LEAKS_FILTER - 1)],
                              memory_order_relaxed) != 0;
}

/* The marks of the small page a block lies in (allocator.c's page
 * header), which let a free skip the records when its block has none:
 *
 *   mark (16 bits, in the header line every free reads; the free's test):
 *     0                      no record on the page
 *     i + 1                  exactly one, block i (i + 1 < NNMEM__LEAKS_MANY)
 *     NNMEM__LEAKS_MANY | b  several (or one of an index too large): bit
 *                            i % 16 of b set for each record's block i (bit
 *                            15 is MANY itself: a block with i % 16 == 15
 *                            always looks)
 *   recs (64 bits, the header's second line, read only past a MANY hit):
 *     count << 32 | bit i % 32 set for each record's index
 *
 * A free of block i looks for a record only when mark == i + 1, or when
 * the mark is MANY with bit i % 16 set (nnmem__leaks_mark_hit): a page
 * with one record sends that block's free alone, one with several about
 * (records + 1) / 16 of its frees, a test that is rarely true and so
 * rarely mispredicted (a test of "mark != 0" sent every free of a marked
 * page to a second test: 8% of the ring's frees, measured slower; a MANY
 * without bits sent every free of such a page, 0.85% of the ring's frees
 * with sampled records, to read the second line). Both are written only by
 * nnmem__leaks_on_alloc / _on_free, under the records' lock, in the
 * critical section that adds or removes the record (plain loads and
 * stores, no locked instruction); the allocator reads them without the
 * lock. Invariant (under the lock): the count is the page's number of
 * records; mark == 0 iff it is 0; mark == i + 1 only when it is 1 and the
 * record is block i's, else MANY with bit i % 16 set for each record's
 * block i (a page that had several keeps its MANY bits, a superset, until
 * its last record goes); each record's block i has bit i % 32 of recs. A
 * mark read without the lock may be stale only for blocks other than the
 * reader's own (whose record, if any, was added before the block was
 * handed out and goes only with its free): the free then looks in vain. */
#define NNMEM__LEAKS_MANY 0x8000u
typedef struct nnmem__leaks_mark {
  _Atomic uint64_t *recs;
  _Atomic uint16_t *mark;
  uint32_t idx; /* the block's index in its page */
} nnmem__leaks_mark_t;

/* 1 when block idx of a page whose mark is m may have a record. */
static inline int nnmem__leaks_mark_hit(uint32_t m, uint32_t idx) {
  return m == idx + 1 || ((m & NNMEM__LEAKS_MANY) && ((m >> (idx & 15)) & 1));
}

/* Resolved config (env already applied); NULL *out with NNMEM_OK when the
 * mode is off. */
nnmem_status_t nnmem__leaks_create(const nnmem_leaks_config_t *cfg,
                                   nnmem__leaks_t **out);
/* Writes the configured report (if any), then frees every record. */
void nnmem__leaks_destroy(nnmem__leaks_t *lk);
/* A block was handed out after nnmem__leaks_wants said 1: record it (full),
 * or (sampled) draw the next countdown and record it with its probability
 * (the first call of a thread only starts its countdown). `file` may be
 * NULL; `mark` is the block's page marks (NULL: not a small page's block),
 * raised with the record. Returns 1 when a record was stored. Never fails
 * the allocation: a record that cannot be stored is counted as dropped. */
int nnmem__leaks_on_alloc(nnmem__leaks_t *lk, void *ptr, size_t size,
                          const char *file, int line,
                          const nnmem__leaks_mark_t *mark);
/* nnmem__leaks_on_alloc's decision alone: 1 when the block of `size` that
 * made the thread's slot countdown run out (nnmem__leaks_wants said 1)
 * must be recorded (the caller then records it: nnmem__leaks_record); the
 * countdown is started or drawn anew as on_alloc does. */
int nnmem__leaks_slot_due(nnmem__leaks_t *lk, size_t size);
/* A countdown of the caller's own (allocator.c: one per thread cache, on
 * its fast path) for these records, due when an allocation takes it below
 * 0: sampled, floor of an exponential draw of mean N (the same law as the
 * thread's slots, which are due at <= 0 and start one higher: the byte
 * process is memoryless, so an allocation counted by either is recorded
 * with probability 1 - e^(-s/N)); full, -1 (every allocation). */
int64_t nnmem__leaks_arm(nnmem__leaks_t *lk);
/* The backtrace of a record, taken in the caller's own frame (inline: no
 * frame of the records' code to unwind and skip): fr[0] is an address in
 * the caller, fr[1..] the return addresses above it; fr has room for
 * NNMEM_LEAKS_MAX_DEPTH + 1. Returns the number of entries (<= depth + 1),
 * 0 when the records take no backtrace. */
static inline int nnmem__leaks_backtrace(const nnmem__leaks_t *lk, void **fr) {
  const nnmem__leaks_head_t *h = (const nnmem__leaks_head_t *)lk;
  if (!h->depth || nnmem__leaks_busy) return 0;
  nnmem__leaks_busy = 1; /* an unwinder that allocates records nothing */
  int n = h->bt(fr, (int)h->depth + 1);
  nnmem__leaks_busy = 0;
  return n > 0 ? n : 0;
}
/* Records block ptr now (the caller's own countdown ran out, or full
 * mode): as nnmem__leaks_on_alloc without its countdown, with the n
 * frames the caller took (nnmem__leaks_backtrace, its first entry
 * dropped: frames[0] is the allocation's caller). */
int nnmem__leaks_record(nnmem__leaks_t *lk, void *ptr, size_t size,
                        const char *file, int line,
                        const nnmem__leaks_mark_t *mark, void *const *frames,
                        int n);
/* A block is about to be freed and nnmem__leaks_maybe said 1: forget its
 * record, if any, lowering `mark` (NULL: none) with it; returns 1 when one
 * was removed. Must run before the block returns to the allocator (its
 * address may be reused at once). */
int nnmem__leaks_on_free(nnmem__leaks_t *lk, void *ptr,
                         const nnmem__leaks_mark_t *mark);
/* The records' checker (tests): under their lock, the table holds count
 * records, each in its address's bucket with at most depth frames; the
 * spare list holds nspare <= MAX_SPARE; filter[h] is the number of records
 * without page marks whose address hashes to h. each(ctx, ptr, marked) is
 * called for every record, still under the lock (page marks change only
 * under it); nonzero means the caller found it inconsistent.
 * NNMEM_ERR_STATE with diag naming the first violation. */
nnmem_status_t nnmem__leaks_check(nnmem__leaks_t *lk,
                                  int (*each)(void *ctx, uintptr_t ptr,
                                              int marked),
                                  void *ctx, nnmem_diag_t *diag);
nnmem_status_t nnmem__leaks_report(nnmem__leaks_t *lk, nnmem_leaks_format_t fmt,
                                   char **out, size_t *len);
void nnmem__leaks_summary(nnmem__leaks_t *lk, nnmem_leaks_summary_t *out);
/* Fork hooks (the allocator's, pthread_atfork order): phase 0 takes the
 * records' lock before fork, 1 gives it back in the parent, 2
 * re-initialises it in the child (a thread that held it is gone there). */
void nnmem__leaks_fork(nnmem__leaks_t *lk, int phase);
/* The unwinder the records use: "libunwind" (libunwind.so.8 opened) or
 * "glibc backtrace()". */
const char *nnmem__leaks_unwinder(void);

#endif /* NNMEM_LEAKS_INTERNAL_H */

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

/* The part of the records the allocator's inline checks read: the mode and
 * the counting filter (one counter per address hash: a zero proves a block
 * has no record). It is the first member of struct nnmem__leaks. */
#define NNMEM__LEAKS_FILTER (1u << 12)
typedef struct nnmem__leaks_head {
  nnmem_leaks_mode_t mode;
  _Atomic uint32_t filter[NNMEM__LEAKS_FILTER];
} nnmem__leaks_head_t;

/* Bytes this thread may still allocate before the next sample (sampled
 * mode; shared by every allocator of the thread: the byte process is
 * memoryless, so that changes no probability). <= 0 sends the allocation
 * to nnmem__leaks_on_alloc. initial-exec: one %fs-relative access. */
extern _Thread_local __attribute__((tls_model("initial-exec")))
int64_t nnmem__leaks_left;

static inline size_t nnmem__leaks_hash(uintptr_t p) {
  uint64_t h = (uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ULL;
  return (size_t)(h >> 32);
}

/* 1 when an allocation of `size` must go to nnmem__leaks_on_alloc: always
 * in full mode, when the countdown runs out in sampled mode. */
static inline int nnmem__leaks_wants(const nnmem__leaks_t *lk, size_t size) {
  const nnmem__leaks_head_t *h = (const nnmem__leaks_head_t *)lk;
  if (h->mode == NNMEM_LEAKS_FULL) return 1;
  return (nnmem__leaks_left -= (int64_t)size) <= 0;
}

/* 1 when `ptr` may have a record (the filter's counter is not zero). */
static inline int nnmem__leaks_maybe(const nnmem__leaks_t *lk,
                                     const void *ptr) {
  const nnmem__leaks_head_t *h = (const nnmem__leaks_head_t *)lk;
  return atomic_load_explicit(&h->filter[nnmem__leaks_hash((uintptr_t)ptr) &
                                         (NNMEM__LEAKS_FILTER - 1)],
                              memory_order_relaxed) != 0;
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
 * NULL. Never fails the allocation: a record that cannot be stored is
 * counted as dropped. */
void nnmem__leaks_on_alloc(nnmem__leaks_t *lk, void *ptr, size_t size,
                           const char *file, int line);
/* A block is about to be freed and nnmem__leaks_maybe said 1: forget its
 * record, if any. Must run before
 * the block returns to the allocator (its address may be reused at once). */
void nnmem__leaks_on_free(nnmem__leaks_t *lk, void *ptr);
nnmem_status_t nnmem__leaks_report(nnmem__leaks_t *lk, nnmem_leaks_format_t fmt,
                                   char **out, size_t *len);
void nnmem__leaks_summary(nnmem__leaks_t *lk, nnmem_leaks_summary_t *out);
/* The unwinder the records use: "libunwind" (libunwind.so.8 opened) or
 * "glibc backtrace()". */
const char *nnmem__leaks_unwinder(void);

#endif /* NNMEM_LEAKS_INTERNAL_H */

/* fuzz_allocator.c - libFuzzer harness for the thread-caching allocator's
 * bad frees: the input is a program of operations (one opcode byte, then
 * its operands) on an allocator whose free batch (0..64) and leak records
 * (off, full) the first two bytes choose, with blocks from 1 byte to
 * 20,000 bytes (thread-cached spans and the shared pool).
 *
 * Operations: allocate; free a live block; free a block again that the
 * model knows is free (its first free made, not handed out since); free an
 * interior pointer of a live block; free a pointer that is none of the
 * allocator's (a static and a stack address); flush the thread's queue.
 *
 * Checked: an allocation never overlaps a live block; live blocks keep
 * the bytes written when they were allocated (checked at their free and
 * at the end); a good free returns NNMEM_OK; a bad one returns NNMEM_OK
 * (queued) or NNMEM_ERR_INVALID; at the end, after the flush, the
 * allocator's misuse count equals the number of bad frees made and its
 * live count the model's. A block handed out twice (a second free of a
 * free block that freed the block's new owner) breaks the first check or
 * the count. After every operation the thread's cache passes its checker
 * (nnmem__allocator_cache_check: the avail stacks' links, spans and
 * empty counts). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "nnmem/allocator.h"
#include "runtime/allocator_internal.h"

#define SLOTS 64

typedef struct slot {
  unsigned char *p;
  size_t n;
  unsigned char fill;
  int live;  /* handed out and not freed */
  int freed; /* freed once and not handed out again since */
} slot_t;

static void check_bytes(const slot_t *s) {
  for (size_t i = 0; i < s->n; i++)
    if (s->p[i] != s->fill) {
      fprintf(stderr, "fuzz finding: block %p byte %zu changed\n",
              (void *)s->p, i);
      abort();
    }
}

static unsigned char not_ours[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  const uint8_t *p = data, *end = data + size;
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
  cfg.free_batch = fuzz_take(&p, end) % 65;
  uint8_t mode = fuzz_take(&p, end);
  nnmem_allocator_t *a = NULL;
  if (nnmem_allocator_create(&cfg, &a) != NNMEM_OK) return 0;
  if (mode & 1) {
    nnmem_leaks_config_t lc;
    nnmem_leaks_config_init(&lc);
    if (nnmem_allocator_leaks_enable(a, &lc) != NNMEM_OK) {
      nnmem_allocator_destroy(a);
      return 0;
    }
  }
  slot_t s[SLOTS];
  memset(s, 0, sizeof s);
  uint64_t bad = 0, step = 0;
  while (p < end) {
    uint8_t op = fuzz_take(&p, end) % 6;
    slot_t *t = &s[fuzz_take(&p, end) % SLOTS];
    step++;
    switch (op) {
    case 0: { /* allocate into the slot (a live block there is kept) */
      if (t->live) break;
      /* two bytes, high first, in two statements (the order of two calls
       * in one expression is unspecified: the corpus must decode alike
       * under every compiler) */
      size_t hi = fuzz_take(&p, end), lo = fuzz_take(&p, end);
      size_t n = 1 + (hi << 8 | lo) % 20000;
      unsigned char *b = nnmem_alloc(a, n);
      if (!b) break;
      for (int i = 0; i < SLOTS; i++) {
        if (s[i].live && b < s[i].p + s[i].n && s[i].p < b + n) {
          fprintf(stderr, "fuzz finding: %p (%zu B) overlaps live %p (%zu B)\n",
                  (void *)b, n, (void *)s[i].p, s[i].n);
          abort();
        }
        if (s[i].freed && b < s[i].p + s[i].n && s[i].p < b + n)
          s[i].freed = 0; /* handed out again: no second free of it */
      }
      *t = (slot_t){b, n, (unsigned char)(step | 1), 1, 0};
      memset(b, t->fill, n);
      break;
    }
    case 1: /* a good free */
      if (!t->live) break;
      check_bytes(t);
      if (nnmem_allocator_free(a, t->p) != NNMEM_OK) {
        fprintf(stderr, "fuzz finding: good free of %p refused\n",
                (void *)t->p);
        abort();
      }
      t->live = 0;
      t->freed = 1;
      break;
    case 2:   /* a second free of a free block */
    case 3:   /* an interior pointer of a live block */
    case 4: { /* none of the allocator's */
      unsigned char *q;
      uint8_t k = fuzz_take(&p, end);
      if (op == 2) {
        if (!t->freed) break;
        q = t->p;
      } else if (op == 3) {
        if (!t->live || t->n < 2) break;
        q = t->p + 1 + k % (t->n - 1);
      } else {
        unsigned char local[64];
        q = (k & 1) ? not_ours + (k >> 1) % 64 : local + (k >> 1) % 64;
      }
      nnmem_status_t st = nnmem_allocator_free(a, q);
      if (st != NNMEM_OK && st != NNMEM_ERR_INVALID) {
        fprintf(stderr, "fuzz finding: bad free -> %s\n",
                nnmem_status_name(st));
        abort();
      }
      bad++;
      break;
    }
    default:
      nnmem_allocator_thread_flush(a);
      break;
    }
    nnmem_diag_t d;
    if (nnmem__allocator_cache_check(a, &d) != NNMEM_OK) {
      fprintf(stderr, "fuzz finding: step %llu: %s\n", (unsigned long long)step,
              d.message);
      abort();
    }
  }
  nnmem_allocator_thread_flush(a);
  uint64_t live = 0;
  for (int i = 0; i < SLOTS; i++)
    if (s[i].live) {
      check_bytes(&s[i]);
      live++;
    }
  nnmem_stats_t st;
  if (nnmem_allocator_stats(a, &st) != NNMEM_OK) abort();
  if (st.misuse_count != bad || st.live_count != live) {
    fprintf(stderr,
            "fuzz finding: misuse %llu for %llu bad frees, live %llu for "
            "%llu\n",
            (unsigned long long)st.misuse_count, (unsigned long long)bad,
            (unsigned long long)st.live_count, (unsigned long long)live);
    abort();
  }
  nnmem_allocator_destroy(a);
  return 0;
}

/* fuzz_heap.c - libFuzzer harness for the handle heap and the block state
 * machine: the input is a program of operations (one opcode byte, then its
 * operands) on a 64 KiB heap over backed simulated memory, with handles
 * taken from a table of the ones handed out (live or already freed) or
 * forged from raw input bytes.
 *
 * Checked after every operation: nnmem_heap_check passes; a handle the
 * model knows is stale or forged is refused with NNMEM_ERR_INVALID and one
 * the model knows is live is accepted; a pinned block keeps its address
 * across compactions; every live block still holds the byte pattern written
 * when it was allocated (compaction moved the data, not just the offsets);
 * block state transitions are accepted exactly when a model of the state
 * diagram says they are legal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

#define SLOTS 64

typedef struct model {
  nnmem_handle_t h;
  uint64_t size;
  uint32_t pins;
  int live;
  void *pinned_at;
  uint8_t tag;
} model_t;

static int intact(nnmem_heap_t *h, const model_t *m) {
  uint8_t *p = NULL;
  if (nnmem_handle_pin(h, m->h, (void **)&p) != NNMEM_OK) return 0;
  int ok = 1;
  for (uint64_t i = 0; i < m->size && i < 32; i++)
    ok &= p[i] == (uint8_t)(m->tag + i);
  return nnmem_handle_unpin(h, m->h) == NNMEM_OK && ok;
}

static void heap_op(nnmem_heap_t *h, model_t *m, const uint8_t **p,
                    const uint8_t *end) {
  uint8_t op = fuzz_take(p, end) % 6, k = fuzz_take(p, end) % SLOTS;
  model_t *s = &m[k];
  nnmem_status_t st;
  void *addr = NULL;
  switch (op) {
    case 0: { /* alloc into an empty model slot */
      if (s->live) return;
      uint64_t size = (uint64_t)fuzz_take(p, end) << 4 | fuzz_take(p, end);
      uint64_t align = 1ULL << (fuzz_take(p, end) % 13);
      st = nnmem_handle_alloc(h, size, align, &s->h);
      if (size == 0 && st != NNMEM_ERR_INVALID) fuzz_fail("size 0", NULL);
      if (st != NNMEM_OK) return;
      s->size = size;
      s->live = 1;
      s->pins = 0;
      s->tag = (uint8_t)(k * 37 + size);
      if (nnmem_handle_pin(h, s->h, (void **)&addr) != NNMEM_OK)
        fuzz_fail("pin of a fresh handle", NULL);
      for (uint64_t i = 0; i < size && i < 32; i++)
        ((uint8_t *)addr)[i] = (uint8_t)(s->tag + i);
      nnmem_handle_unpin(h, s->h);
      return;
    }
    case 1: /* free: live and unpinned ok, pinned STATE, stale INVALID */
      if (!s->h.bits) return;
      if (s->live && !intact(h, s)) fuzz_fail("data lost", NULL);
      st = nnmem_handle_free(h, s->h);
      if (st != (!s->live  ? NNMEM_ERR_INVALID
                 : s->pins ? NNMEM_ERR_STATE
                           : NNMEM_OK))
        fuzz_fail("free status disagrees with the model", NULL);
      if (st == NNMEM_OK) s->live = 0;
      return;
    case 2:
      if (!s->h.bits) return;
      st = nnmem_handle_pin(h, s->h, &addr);
      if (st != (s->live ? NNMEM_OK : NNMEM_ERR_INVALID))
        fuzz_fail("pin status disagrees with the model", NULL);
      if (st == NNMEM_OK && s->pins++ == 0) s->pinned_at = addr;
      if (st == NNMEM_OK && addr != s->pinned_at)
        fuzz_fail("a pinned block moved", NULL);
      return;
    case 3:
      if (!s->h.bits) return;
      st = nnmem_handle_unpin(h, s->h);
      if (st != (!s->live  ? NNMEM_ERR_INVALID
                 : s->pins ? NNMEM_OK
                           : NNMEM_ERR_STATE))
        fuzz_fail("unpin status disagrees with the model", NULL);
      if (st == NNMEM_OK) s->pins--;
      return;
    case 4: {
      nnmem_compact_report_t r;
      if (nnmem_heap_compact(h, &r) != NNMEM_OK) fuzz_fail("compact", NULL);
      if (r.largest_after < r.largest_before && r.pinned_blocks == 0)
        fuzz_fail("compaction made the largest gap smaller", NULL);
      for (int i = 0; i < SLOTS; i++) {
        if (!m[i].live) continue;
        if (!intact(h, &m[i])) fuzz_fail("data lost in compaction", NULL);
        if (m[i].pins && (nnmem_handle_pin(h, m[i].h, &addr) != NNMEM_OK ||
                          addr != m[i].pinned_at ||
                          nnmem_handle_unpin(h, m[i].h) != NNMEM_OK))
          fuzz_fail("a pinned block moved in compaction", NULL);
      }
      return;
    }
    default: { /* forged bits */
      nnmem_handle_t f = {0};
      for (int i = 0; i < 8; i++)
        f.bits = f.bits << 8 | fuzz_take(p, end);
      int valid = 0;
      for (int i = 0; i < SLOTS; i++)
        valid |= m[i].live && m[i].h.bits == f.bits;
      st = nnmem_handle_pin(h, f, &addr);
      if (!valid && st != NNMEM_ERR_INVALID)
        fuzz_fail("a forged handle was accepted", NULL);
      if (st == NNMEM_OK) nnmem_handle_unpin(h, f);
      return;
    }
  }
}

/* Block states: a model of the diagram decides legality. */
static void block_op(nnmem_block_table_t *t, int *state, uint32_t *holders,
                     uint8_t a, uint8_t b) {
  size_t i = b % 9; /* index 8 is out of range */
  int op = a % 4, legal, last = 0;
  nnmem_status_t st = op == 0   ? nnmem_block_acquire(t, i)
                      : op == 1 ? nnmem_block_release(t, i, &last)
                      : op == 2 ? nnmem_block_recycle(t, i)
                                : nnmem_block_reuse(t, i);
  if (i >= 8) {
    if (st != NNMEM_ERR_INVALID) fuzz_fail("block index out of range", NULL);
    return;
  }
  legal = op == 0   ? state[i] <= 1
          : op == 1 ? state[i] == 1
          : op == 2 ? state[i] == 2
                    : state[i] == 3;
  if ((st == NNMEM_OK) != legal) fuzz_fail("block transition legality", NULL);
  if (!legal) return;
  if (op == 0) state[i] = 1, holders[i]++;
  if (op == 1 && --holders[i] == 0) state[i] = 2;
  if (op == 1 && last != (holders[i] == 0)) fuzz_fail("last releaser", NULL);
  if (op == 2) state[i] = 3;
  if (op == 3) state[i] = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  nnmem_sim_config_t sc = {0};
  sc.backed = 1;
  nnmem_backend_t *b = NULL;
  nnmem_heap_t *h = NULL;
  nnmem_block_table_t *t = NULL;
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.capacity = 64 << 10;
  c.alignment = 16;
  c.granule = 1024;
  c.defrag = size && (data[0] & 1) ? NNMEM_DEFRAG_AUTO : NNMEM_DEFRAG_OFF;
  c.check_every = 4;
  if (nnmem_backend_sim_create(&sc, &b) != NNMEM_OK ||
      nnmem_heap_create(&c, b, &h, NULL) != NNMEM_OK ||
      nnmem_block_table_create(8, &t) != NNMEM_OK)
    fuzz_fail("setup", NULL);
  model_t m[SLOTS];
  memset(m, 0, sizeof m);
  int state[8] = {0};
  uint32_t holders[8] = {0};
  const uint8_t *p = data + (size ? 1 : 0), *end = data + size;
  while (p < end) {
    if (*p >= 0xF0) {
      uint8_t a = fuzz_take(&p, end), bb = fuzz_take(&p, end);
      block_op(t, state, holders, a, bb);
      continue;
    }
    heap_op(h, m, &p, end);
    nnmem_diag_t d = {{0}};
    if (nnmem_heap_check(h, &d) != NNMEM_OK) fuzz_fail("heap check", &d);
  }
  if (nnmem_block_table_check(t, NULL) != NNMEM_OK)
    fuzz_fail("block table check", NULL);
  nnmem_block_table_destroy(t);
  nnmem_heap_destroy(h);
  nnmem_backend_destroy(b);
  return 0;
}

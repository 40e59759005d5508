/* fuzz_cuda_vm.c - libFuzzer harness for the handle heap on a CUDA
 * virtual-memory segment (NNMEM_SEGMENT_CUDA_VM) over the stand-in driver
 * (tests/fakes/fake_cuda.c; its path in $NNMEM_FAKE_CUDA, set by CTest;
 * without it the harness does nothing). The input is a program: byte 0
 * chooses remap and the defrag mode, then one opcode byte and its operands
 * per operation on a 256 KiB heap over a 192 KiB device (so both the heap
 * and the device run out): alloc (size, alignment up to 8 KiB, granules of
 * 4 KiB),
 * free, pin, unpin, compact, or a fault armed in the driver (the n-th next
 * cuMemCreate / cuMemMap / cuMemSetAccess / cuMemUnmap / cuMemRelease
 * fails with out of memory or an invalid value; arming one clears the
 * others unless bit 0x40 of its function byte keeps them, so two calls of
 * different functions can fail in one compaction, the second inside the
 * recovery from the first: the heap restores its mappings, retrying).
 *
 * Checked after every operation: nnmem_heap_check passes (every granule
 * with refs is backed, no other); statuses agree with a model (stale
 * handles refused, pinned blocks not freed); a pinned block keeps its
 * address; every live block still holds the bytes written at allocation
 * (read back through the driver), also after a compaction that failed;
 * the driver holds at least one mapping per committed granule. At the end,
 * with the faults cleared: the heap destroyed, the driver holds no
 * physical handle, mapping, reservation or allocation. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

#define SLOTS 32
#define G 4096u

typedef struct model {
  nnmem_handle_t h;
  uint64_t size;
  uint32_t pins;
  int live;
  void *pinned_at;
  uint8_t tag;
} model_t;

typedef struct fake {
  void *lib;
  long (*handles)(void), (*mappings)(void), (*reserved)(void), (*live)(void);
  int (*fail)(const char *, long, int);
} fake_t;

static void pattern(uint8_t tag, uint8_t *buf, uint64_t n) {
  for (uint64_t i = 0; i < n; i++)
    buf[i] = (uint8_t)(tag + i * 3);
}

/* The first 32 bytes of a live block are its pattern. */
static int intact(nnmem_heap_t *h, nnmem_backend_t *b, const model_t *m) {
  uint8_t want[32], got[32];
  uint64_t n = m->size < 32 ? m->size : 32;
  void *p = NULL;
  if (nnmem_handle_pin(h, m->h, &p) != NNMEM_OK) return 0;
  pattern(m->tag, want, n);
  int ok =
      nnmem_backend_copy(b, got, p, n, NNMEM_COPY_DEVICE_TO_HOST) == NNMEM_OK &&
      memcmp(want, got, n) == 0;
  return nnmem_handle_unpin(h, m->h) == NNMEM_OK && ok;
}

static void all_intact(nnmem_heap_t *h, nnmem_backend_t *b, model_t *m) {
  void *addr = NULL;
  for (int i = 0; i < SLOTS; i++) {
    if (!m[i].live) continue;
    if (!intact(h, b, &m[i])) fuzz_fail("data lost", NULL);
    if (m[i].pins &&
        (nnmem_handle_pin(h, m[i].h, &addr) != NNMEM_OK ||
         addr != m[i].pinned_at || nnmem_handle_unpin(h, m[i].h) != NNMEM_OK))
      fuzz_fail("a pinned block moved", NULL);
  }
}

static void op_alloc(nnmem_heap_t *h, nnmem_backend_t *b, model_t *s, int k,
                     const uint8_t **p, const uint8_t *end) {
  if (s->live) return;
  uint64_t size = (uint64_t)fuzz_take(p, end) << 8 | fuzz_take(p, end);
  uint64_t align = 1ULL << (fuzz_take(p, end) % 14);
  nnmem_status_t st = nnmem_handle_alloc(h, size, align, &s->h);
  if (size == 0 && st != NNMEM_ERR_INVALID) fuzz_fail("size 0", NULL);
  if (st != NNMEM_OK) {
    if (s->h.bits) fuzz_fail("a failed alloc returned a handle", NULL);
    return;
  }
  s->size = size, s->live = 1, s->pins = 0;
  s->tag = (uint8_t)(k * 37 + size);
  uint8_t buf[32];
  uint64_t n = size < 32 ? size : 32;
  pattern(s->tag, buf, n);
  void *addr = NULL;
  if (nnmem_handle_pin(h, s->h, &addr) != NNMEM_OK ||
      nnmem_backend_copy(b, addr, buf, n, NNMEM_COPY_HOST_TO_DEVICE) !=
          NNMEM_OK ||
      nnmem_handle_unpin(h, s->h) != NNMEM_OK)
    fuzz_fail("a fresh block is not writable", NULL);
}

static void clear_faults(const fake_t *f) {
  static const char *const fns[] = {"cuMemCreate",    "cuMemMap",
                                    "cuMemSetAccess", "cuMemUnmap",
                                    "cuMemRelease",   "cuMemAddressReserve"};
  for (int i = 0; i < 6; i++)
    f->fail(fns[i], 0, 0);
}

static void heap_op(nnmem_heap_t *h, nnmem_backend_t *b, const fake_t *f,
                    model_t *m, const uint8_t **p, const uint8_t *end) {
  static const char *const fns[] = {"cuMemCreate", "cuMemMap", "cuMemSetAccess",
                                    "cuMemUnmap", "cuMemRelease"};
  uint8_t op = fuzz_take(p, end) % 6, k = fuzz_take(p, end) % SLOTS;
  model_t *s = &m[k];
  nnmem_status_t st;
  void *addr = NULL;
  switch (op) {
    case 0:
      op_alloc(h, b, s, k, p, end);
      return;
    case 1: /* free: live and unpinned ok, pinned STATE, stale INVALID */
      if (!s->h.bits) return;
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
    case 4: /* may fail under an armed fault: the blocks stay intact */
      (void)nnmem_heap_compact(h, NULL);
      all_intact(h, b, m);
      return;
    default: { /* arming one fault clears the others, unless bit 0x40 of
                  `which` keeps them: two driver calls of different
                  functions fail, e.g. a map while undoing an exchange */
      uint8_t which = fuzz_take(p, end), n = fuzz_take(p, end);
      if (!(which & 0x40)) clear_faults(f);
      f->fail(fns[which % 5], 1 + n % 8, which & 0x80 ? 1 : 2);
      return;
    }
  }
}

static int load(fake_t *f) {
  const char *path = getenv("NNMEM_FAKE_CUDA");
  if (!path || !(f->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) return -1;
  *(void **)&f->handles = dlsym(f->lib, "fake_cuda_vm_handles");
  *(void **)&f->mappings = dlsym(f->lib, "fake_cuda_vm_mappings");
  *(void **)&f->reserved = dlsym(f->lib, "fake_cuda_vm_reserved");
  *(void **)&f->live = dlsym(f->lib, "fake_cuda_live");
  *(void **)&f->fail = dlsym(f->lib, "fake_cuda_vm_fail");
  return f->handles && f->mappings && f->reserved && f->live && f->fail ? 0
                                                                        : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fake_t f;
  if (size > FUZZ_MAX_INPUT) return 0;
  if (!f.lib && load(&f) != 0) return 0; /* no stand-in driver: nothing */
  setenv("FAKE_CUDA_GRANULARITY", "4096", 1);
  setenv("FAKE_CUDA_CAPACITY", "196608", 1); /* below the heap: device OOM */
  nnmem_cuda_config_t cc = {sizeof cc, 0, getenv("NNMEM_FAKE_CUDA")};
  nnmem_backend_t *b = NULL;
  nnmem_heap_t *h = NULL;
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.capacity = 256 << 10;
  c.alignment = 16;
  c.granule = G;
  c.segment = NNMEM_SEGMENT_CUDA_VM;
  c.remap = size && (data[0] & 1);
  c.defrag = size && (data[0] & 2) ? NNMEM_DEFRAG_AUTO : NNMEM_DEFRAG_OFF;
  c.check_every = 4;
  clear_faults(&f);
  if (nnmem_backend_cuda_create(&cc, &b, NULL) != NNMEM_OK ||
      nnmem_heap_create(&c, b, &h, NULL) != NNMEM_OK)
    fuzz_fail("setup", NULL);
  model_t m[SLOTS];
  memset(m, 0, sizeof m);
  const uint8_t *p = data + (size ? 1 : 0), *end = data + size;
  while (p < end) {
    heap_op(h, b, &f, m, &p, end);
    nnmem_diag_t d = {{0}};
    if (nnmem_heap_check(h, &d) != NNMEM_OK) fuzz_fail("heap check", &d);
    nnmem_stats_t st;
    if (nnmem_heap_stats(h, &st, NULL) != NNMEM_OK ||
        f.mappings() < (long)(st.reserved_bytes / G))
      fuzz_fail("a committed granule is not mapped in the driver", NULL);
  }
  clear_faults(&f);
  all_intact(h, b, m);
  nnmem_heap_destroy(h);
  nnmem_backend_destroy(b);
  if (f.handles() || f.mappings() || f.reserved() || f.live())
    fuzz_fail("the driver still holds memory after destroy", NULL);
  return 0;
}

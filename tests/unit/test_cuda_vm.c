/* test_cuda_vm.c - the handle heap on a CUDA virtual-memory segment
 * (NNMEM_SEGMENT_CUDA_VM: src/backend/cuda_vm.c under src/runtime/segment.c)
 * over the stand-in driver (tests/fakes/fake_cuda.c, path in
 * $NNMEM_FAKE_CUDA), which enforces the driver's mapping rules and counts
 * live physical handles, mappings and reserved ranges:
 *   - creation: granule rounding to the device granularity, refusals (not a
 *     cuda backend, no VMM support, reservation failure) with a diag;
 *   - alloc / free commit and release exactly the granules touched;
 *   - compaction by remapping and by copying: the same layout, contents
 *     preserved (patterns written and read back through the backend's
 *     copies), pinned blocks stay, bytes remapped equal to a count made
 *     from the block offsets before and after;
 *   - stale handles; commit failures (cuMemCreate / cuMemMap /
 *     cuMemSetAccess failing at the N-th call, N swept) roll back with no
 *     leaked handle or mapping; out of device memory names free/total;
 *     failures in the middle of a remapping compaction leave every block
 *     intact;
 *   - a randomized run (fixed seed, printed) against a host shadow copy;
 *   - with --gpu (CTest: test_cuda_vm_gpu) the compaction scenario on a
 *     real GPU, exit 77 (skipped) where there is none. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnmem/heap.h"
#include "testutil.h"

static void *fake;
static long (*fake_live)(void);
static int (*fake_depth)(void);
static long (*vm_handles)(void);
static long (*vm_mappings)(void);
static long (*vm_reserved)(void);
static int (*vm_fail)(const char *, long, int);
static int (*vm_fail_times)(const char *, long, int, long);
static long (*vm_calls)(const char *);

#define SYM(var, name)                    \
  do {                                    \
    *(void **)&(var) = dlsym(fake, name); \
    if (!(var)) return -1;                \
  } while (0)

static int setup(void **state) {
  (void)state;
  const char *path = getenv("NNMEM_FAKE_CUDA");
  if (!path || !(fake = dlopen(path, RTLD_NOW | RTLD_LOCAL))) return -1;
  SYM(fake_live, "fake_cuda_live");
  SYM(fake_depth, "fake_cuda_ctx_depth");
  SYM(vm_handles, "fake_cuda_vm_handles");
  SYM(vm_mappings, "fake_cuda_vm_mappings");
  SYM(vm_reserved, "fake_cuda_vm_reserved");
  SYM(vm_fail, "fake_cuda_vm_fail");
  SYM(vm_fail_times, "fake_cuda_vm_fail_times");
  SYM(vm_calls, "fake_cuda_vm_calls");
  /* 64 KiB granules keep the fake's memfds small; 64 MiB of "device" */
  setenv("FAKE_CUDA_GRANULARITY", "65536", 1);
  setenv("FAKE_CUDA_CAPACITY", "67108864", 1);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (fake) dlclose(fake);
  return 0;
}

static nnmem_backend_t *fake_backend(void) {
  nnmem_cuda_config_t cfg = {sizeof cfg, 0, getenv("NNMEM_FAKE_CUDA")};
  nnmem_backend_t *b = NULL;
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_backend_cuda_create(&cfg, &b, &d), NNMEM_OK);
  return b;
}

static nnmem_heap_t *vm_heap(nnmem_backend_t *b, uint64_t cap, int remap) {
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.capacity = cap;
  c.segment = NNMEM_SEGMENT_CUDA_VM;
  c.remap = remap;
  nnmem_heap_t *h = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = nnmem_heap_create(&c, b, &h, &d);
  if (st) print_message("heap_create: %s\n", d.message);
  assert_int_equal(st, NNMEM_OK);
  return h;
}

static void check(nnmem_heap_t *h) {
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = nnmem_heap_check(h, &d);
  if (st) print_message("heap_check: %s\n", d.message);
  assert_int_equal(st, NNMEM_OK);
}

static uint64_t committed(nnmem_heap_t *h) {
  nnmem_stats_t st;
  assert_int_equal(nnmem_heap_stats(h, &st, NULL), NNMEM_OK);
  return st.reserved_bytes;
}

/* The fake's books agree with the heap: one handle and one mapping per
 * committed granule, one reservation. */
static void books(nnmem_heap_t *h, uint64_t granule) {
  if (!fake) return;
  long n = (long)(committed(h) / granule);
  assert_int_equal(vm_handles(), n);
  assert_int_equal(vm_mappings(), n);
  assert_int_equal(vm_reserved(), 1);
  assert_int_equal(fake_depth(), 0);
}

static void nothing_left(void) {
  assert_int_equal(vm_handles(), 0);
  assert_int_equal(vm_mappings(), 0);
  assert_int_equal(vm_reserved(), 0);
  assert_int_equal(fake_live(), 0);
  assert_int_equal(fake_depth(), 0);
}

static unsigned char pat(uint32_t tag, uint64_t i) {
  return (unsigned char)((i * 131 + tag * 29 + (i >> 9)) ^ (tag >> 3));
}

/* Writes block t's pattern (tag) through the backend's copy. */
static void fill(nnmem_heap_t *h, nnmem_backend_t *b, nnmem_handle_t t,
                 uint64_t n, uint32_t tag) {
  unsigned char *buf = malloc(n);
  assert_non_null(buf);
  for (uint64_t i = 0; i < n; i++)
    buf[i] = pat(tag, i);
  void *p = NULL;
  assert_int_equal(nnmem_handle_pin(h, t, &p), NNMEM_OK);
  assert_int_equal(nnmem_backend_copy(b, p, buf, n, NNMEM_COPY_HOST_TO_DEVICE),
                   NNMEM_OK);
  assert_int_equal(nnmem_handle_unpin(h, t), NNMEM_OK);
  free(buf);
}

/* Reads block t back and compares with its pattern. */
static void expect(nnmem_heap_t *h, nnmem_backend_t *b, nnmem_handle_t t,
                   uint64_t n, uint32_t tag) {
  unsigned char *buf = malloc(n);
  assert_non_null(buf);
  void *p = NULL;
  assert_int_equal(nnmem_handle_pin(h, t, &p), NNMEM_OK);
  assert_int_equal(nnmem_backend_copy(b, buf, p, n, NNMEM_COPY_DEVICE_TO_HOST),
                   NNMEM_OK);
  assert_int_equal(nnmem_handle_unpin(h, t), NNMEM_OK);
  for (uint64_t i = 0; i < n; i++)
    if (buf[i] != pat(tag, i)) {
      print_message("block tag %u: byte %llu is %u, want %u\n", tag,
                    (unsigned long long)i, buf[i], pat(tag, i));
      fail();
    }
  free(buf);
}

static void test_create(void **state) {
  (void)state;
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.capacity = 1000000; /* not a multiple of anything */
  c.granule = 4096;     /* below the device's 64 KiB */
  c.segment = NNMEM_SEGMENT_CUDA_VM;
  nnmem_heap_t *h = NULL;
  nnmem_diag_t d = {{0}};
  /* no backend; a backend that is not cuda */
  assert_int_equal(nnmem_heap_create(&c, NULL, &h, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "cuda_vm"));
  nnmem_backend_t *sim = NULL;
  assert_int_equal(nnmem_backend_sim_create(NULL, &sim), NNMEM_OK);
  assert_int_equal(nnmem_heap_create(&c, sim, &h, &d), NNMEM_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.message, "not cuda"));
  nnmem_backend_destroy(sim);
  nnmem_backend_t *b = fake_backend();
  /* the granule becomes the device's, the capacity a multiple of it */
  assert_int_equal(nnmem_heap_create(&c, b, &h, &d), NNMEM_OK);
  nnmem_handle_t t;
  assert_int_equal(nnmem_handle_alloc(h, 1, 0, &t), NNMEM_OK);
  assert_int_equal(committed(h), 65536);
  nnmem_stats_t st;
  assert_int_equal(nnmem_heap_stats(h, &st, NULL), NNMEM_OK);
  assert_int_equal(st.free_bytes + 256, 16 * 65536); /* 1000000 -> 16 G */
  books(h, 65536);
  nnmem_heap_destroy(h); /* with a live block: released all the same */
  nothing_left();
  /* a granule above the device's is kept */
  c.granule = 131072;
  assert_int_equal(nnmem_heap_create(&c, b, &h, &d), NNMEM_OK);
  assert_int_equal(nnmem_handle_alloc(h, 1, 0, &t), NNMEM_OK);
  assert_int_equal(committed(h), 131072);
  assert_int_equal(vm_handles(), 1);
  nnmem_heap_destroy(h);
  nothing_left();
  /* remap is allowed on cuda_vm, refused on a plain backend segment */
  c.remap = 1;
  c.segment = NNMEM_SEGMENT_BACKEND;
  assert_int_equal(nnmem_heap_create(&c, b, &h, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "remap"));
  c.segment = NNMEM_SEGMENT_CUDA_VM;
  /* the reservation refused: the driver's words in the diag */
  assert_int_equal(vm_fail("cuMemAddressReserve", 1, 2), 0);
  assert_int_equal(nnmem_heap_create(&c, b, &h, &d), NNMEM_ERR_NOMEM);
  print_message("refused as expected: %s\n", d.message);
  assert_non_null(strstr(d.message, "cuMemAddressReserve"));
  assert_non_null(strstr(d.message, "CUDA_ERROR_OUT_OF_MEMORY"));
  /* a device without virtual memory management */
  setenv("FAKE_CUDA_NO_VMM", "1", 1);
  assert_int_equal(nnmem_heap_create(&c, b, &h, &d), NNMEM_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.message, "virtual memory"));
  unsetenv("FAKE_CUDA_NO_VMM");
  assert_null(h);
  nothing_left();
  nnmem_backend_destroy(b);
}

static void test_commit_decommit(void **state) {
  (void)state;
  nnmem_backend_t *b = fake_backend();
  const uint64_t G = 65536;
  nnmem_heap_t *h = vm_heap(b, 64 * G, 0);
  nnmem_handle_t t[4];
  /* [0, 1.5G) [1.5G, 2G) [2G, 5G) [5G, 5G + 256) */
  assert_int_equal(nnmem_handle_alloc(h, G + G / 2, 0, &t[0]), NNMEM_OK);
  assert_int_equal(committed(h), 2 * G);
  assert_int_equal(nnmem_handle_alloc(h, G / 2, 0, &t[1]), NNMEM_OK);
  assert_int_equal(committed(h), 2 * G); /* shares granule 1 */
  assert_int_equal(nnmem_handle_alloc(h, 3 * G, 0, &t[2]), NNMEM_OK);
  assert_int_equal(nnmem_handle_alloc(h, 1, 0, &t[3]), NNMEM_OK);
  assert_int_equal(committed(h), 6 * G);
  books(h, G);
  fill(h, b, t[1], G / 2, 11);
  fill(h, b, t[2], 3 * G, 12);
  /* freeing t[0] keeps granule 1 (t[1] is still in it) */
  assert_int_equal(nnmem_handle_free(h, t[0]), NNMEM_OK);
  assert_int_equal(committed(h), 5 * G);
  books(h, G);
  check(h);
  expect(h, b, t[1], G / 2, 11);
  expect(h, b, t[2], 3 * G, 12);
  /* a decommitted granule is no longer accessible to the driver's copies */
  void *p = NULL;
  assert_int_equal(nnmem_handle_pin(h, t[1], &p), NNMEM_OK);
  unsigned char x = 0;
  assert_int_not_equal(
      nnmem_backend_copy(b, &x, (char *)p - G, 1, NNMEM_COPY_DEVICE_TO_HOST),
      NNMEM_OK);
  assert_int_equal(nnmem_handle_unpin(h, t[1]), NNMEM_OK);
  /* stale and forged handles, pinned frees */
  assert_int_equal(nnmem_handle_free(h, t[0]), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_handle_pin(h, t[0], &p), NNMEM_ERR_INVALID);
  nnmem_handle_t forged = {t[1].bits + (2ULL << 32)}; /* wrong generation */
  assert_int_equal(nnmem_handle_free(h, forged), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_handle_pin(h, t[2], &p), NNMEM_OK);
  assert_int_equal(nnmem_handle_free(h, t[2]), NNMEM_ERR_STATE);
  assert_int_equal(nnmem_handle_unpin(h, t[2]), NNMEM_OK);
  for (int i = 1; i < 4; i++)
    assert_int_equal(nnmem_handle_free(h, t[i]), NNMEM_OK);
  assert_int_equal(committed(h), 0);
  books(h, G);
  check(h);
  nnmem_heap_destroy(h);
  nothing_left();
  nnmem_backend_destroy(b);
}

/* The whole granules a move of [src, src+len) to dst remaps: counted from
 * the offsets, independently of cuda_vm.c. */
static uint64_t whole_granules(uint64_t src, uint64_t dst, uint64_t len,
                               uint64_t G) {
  if (src == dst || (src - dst) % G) return 0;
  uint64_t n = 0;
  for (uint64_t g = src / G; g * G < src + len; g++)
    if (g * G >= src && (g + 1) * G <= src + len) n += G;
  return n;
}

enum { NB = 14 };

/* The compaction scenario on backend b (the fake or a GPU): blocks of
 * whole granules (aligned to the granule) and odd sizes, every other one
 * freed, one pinned; compact; every survivor's bytes read back. Returns
 * the report; *expect_remap the whole-granule bytes counted from the
 * offsets. */
static nnmem_compact_report_t scenario(nnmem_backend_t *b, int remap,
                                       uint64_t *expect_remap) {
  nnmem_heap_t *h = vm_heap(b, 1, remap); /* learn the granule */
  nnmem_handle_t t[NB];
  assert_int_equal(nnmem_handle_alloc(h, 1, 0, &t[0]), NNMEM_OK);
  const uint64_t G = committed(h);
  nnmem_heap_destroy(h);
  h = vm_heap(b, 64 * G, remap);
  uint64_t size[NB], off0[NB], off1[NB];
  for (int i = 0; i < NB; i++) {
    int whole = i % 3 != 2;
    size[i] = whole ? (uint64_t)(1 + i % 4) * G : G / 2 + 256 * (uint64_t)i;
    assert_int_equal(nnmem_handle_alloc(h, size[i], whole ? G : 0, &t[i]),
                     NNMEM_OK);
    fill(h, b, t[i], size[i], (uint32_t)i + 1);
  }
  books(h, G);
  void *pinned_addr = NULL;
  assert_int_equal(nnmem_handle_pin(h, t[7], &pinned_addr), NNMEM_OK);
  for (int i = 0; i < NB; i += 2)
    assert_int_equal(nnmem_handle_free(h, t[i]), NNMEM_OK);
  books(h, G);
  for (int i = 1; i < NB; i += 2)
    assert_int_equal(nnmem_handle_info(h, t[i], &off0[i], NULL, NULL),
                     NNMEM_OK);
  nnmem_compact_report_t r;
  assert_int_equal(nnmem_heap_compact(h, &r), NNMEM_OK);
  check(h);
  books(h, G);
  *expect_remap = 0;
  uint64_t moved = 0;
  for (int i = 1; i < NB; i += 2) {
    uint64_t sz;
    assert_int_equal(nnmem_handle_info(h, t[i], &off1[i], &sz, NULL), NNMEM_OK);
    expect(h, b, t[i], size[i], (uint32_t)i + 1);
    if (off1[i] != off0[i]) moved += sz;
    if (remap) *expect_remap += whole_granules(off0[i], off1[i], sz, G);
  }
  assert_int_equal(off1[7], off0[7]); /* pinned: stayed */
  void *again = NULL;
  assert_int_equal(nnmem_handle_pin(h, t[7], &again), NNMEM_OK);
  assert_ptr_equal(again, pinned_addr);
  assert_int_equal(nnmem_handle_unpin(h, t[7]), NNMEM_OK);
  assert_int_equal(nnmem_handle_unpin(h, t[7]), NNMEM_OK);
  assert_int_equal(r.bytes_moved, moved);
  assert_int_equal(r.pinned_blocks, 1);
  assert_true(r.blocks_moved > 0);
  print_message(
      "compaction (%s, granule %llu): %llu B moved, %llu remapped, "
      "%llu copied\n",
      remap ? "remap" : "copy", (unsigned long long)G,
      (unsigned long long)r.bytes_moved, (unsigned long long)r.bytes_remapped,
      (unsigned long long)(r.bytes_moved - r.bytes_remapped));
  for (int i = 1; i < NB; i += 2)
    assert_int_equal(nnmem_handle_free(h, t[i]), NNMEM_OK);
  assert_int_equal(committed(h), 0);
  nnmem_heap_destroy(h);
  return r;
}

static void test_compact(void **state) {
  (void)state;
  nnmem_backend_t *b = fake_backend();
  uint64_t want_r = 0, want_c = 0;
  long creates = vm_calls("cuMemCreate");
  nnmem_compact_report_t rr = scenario(b, 1, &want_r);
  nothing_left();
  nnmem_compact_report_t rc = scenario(b, 0, &want_c);
  nothing_left();
  assert_true(vm_calls("cuMemCreate") > creates);
  assert_int_equal(rr.bytes_remapped, want_r);
  assert_true(want_r > 0); /* the scenario does exercise remapping */
  assert_int_equal(rc.bytes_remapped, 0);
  assert_int_equal(rr.bytes_moved, rc.bytes_moved); /* the same layout */
  assert_true(rr.bytes_moved > rr.bytes_remapped);  /* and some copying */
  nnmem_backend_destroy(b);
}

/* cuMemCreate / cuMemMap / cuMemSetAccess failing at the n-th call of an
 * allocation of 5 granules: refused, nothing half-mapped, nothing leaked,
 * the heap unchanged; then the same allocation succeeds. */
static void test_commit_failure(void **state) {
  (void)state;
  nnmem_backend_t *b = fake_backend();
  const uint64_t G = 65536;
  static const struct {
    const char *fn;
    int code;
    nnmem_status_t want;
    long max_n;
  } cases[] = {{"cuMemCreate", 2, NNMEM_ERR_NOMEM, 5},
               {"cuMemMap", 2, NNMEM_ERR_NOMEM, 5},
               {"cuMemMap", 1, NNMEM_ERR_INVALID, 5},
               {"cuMemSetAccess", 1, NNMEM_ERR_INVALID, 1}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
    for (long n = 1; n <= cases[k].max_n; n++) {
      nnmem_heap_t *h = vm_heap(b, 32 * G, 1);
      nnmem_handle_t a, t;
      assert_int_equal(nnmem_handle_alloc(h, G / 2, 0, &a), NNMEM_OK);
      fill(h, b, a, G / 2, 99);
      assert_int_equal(vm_fail(cases[k].fn, n, cases[k].code), 0);
      /* [G/2, G/2 + 4.5G): granule 0 shared, granules 1..4 new */
      assert_int_equal(
          nnmem_handle_alloc(h, 4 * G + G / 2, 0, &t),
          n <= (cases[k].fn[5] == 'S' ? 1 : 4) ? cases[k].want : NNMEM_OK);
      if (n <= (cases[k].fn[5] == 'S' ? 1 : 4)) {
        const char *e = nnmem_backend_cuda_last_error(b);
        assert_non_null(strstr(e, cases[k].fn));
        if (cases[k].want == NNMEM_ERR_NOMEM)
          assert_non_null(strstr(e, "device free"));
        assert_int_equal(committed(h), G);
        assert_int_equal(t.bits, 0);
      } else {
        vm_fail(cases[k].fn, 0, 0);
        assert_int_equal(nnmem_handle_free(h, t), NNMEM_OK);
      }
      books(h, G);
      check(h);
      expect(h, b, a, G / 2, 99);
      assert_int_equal(nnmem_handle_alloc(h, 4 * G + G / 2, 0, &t), NNMEM_OK);
      assert_int_equal(committed(h), 5 * G);
      books(h, G);
      nnmem_heap_destroy(h);
      nothing_left();
    }
  /* the device itself full: 64 MiB of fake memory, 2 x 40 MiB */
  nnmem_heap_t *h = vm_heap(b, 2048 * G, 0);
  nnmem_handle_t x, y;
  assert_int_equal(nnmem_handle_alloc(h, 640 * G, 0, &x), NNMEM_OK);
  assert_int_equal(nnmem_handle_alloc(h, 640 * G, 0, &y), NNMEM_ERR_NOMEM);
  const char *e = nnmem_backend_cuda_last_error(b);
  print_message("out of device memory: %s\n", e);
  assert_non_null(strstr(e, "CUDA_ERROR_OUT_OF_MEMORY"));
  assert_non_null(strstr(e, "of 67108864 bytes"));
  books(h, G);
  check(h);
  nnmem_heap_destroy(h);
  nothing_left();
  nnmem_backend_destroy(b);
}

/* A remapping compaction whose n-th cuMemMap or cuMemUnmap fails: the
 * compaction reports the error, every block still holds its bytes where
 * the heap says it is, the books balance; n swept until it succeeds. */
static void test_compact_failure(void **state) {
  (void)state;
  nnmem_backend_t *b = fake_backend();
  const uint64_t G = 65536;
  const char *fns[] = {"cuMemMap", "cuMemUnmap", "cuMemCreate"};
  for (int f = 0; f < 3; f++) {
    int succeeded = 0, failed = 0;
    for (long n = 1; !succeeded && n < 200; n++) {
      nnmem_heap_t *h = vm_heap(b, 64 * G, 1);
      nnmem_handle_t t[8];
      uint64_t sz[8];
      for (int i = 0; i < 8; i++) {
        sz[i] = i % 2 ? (uint64_t)(i + 1) * G : G + 4096 * (uint64_t)i;
        assert_int_equal(nnmem_handle_alloc(h, sz[i], G, &t[i]), NNMEM_OK);
        fill(h, b, t[i], sz[i], 200u + (uint32_t)i);
      }
      for (int i = 0; i < 8; i += 3)
        assert_int_equal(nnmem_handle_free(h, t[i]), NNMEM_OK);
      vm_fail(fns[f], n, 2);
      nnmem_status_t st = nnmem_heap_compact(h, NULL);
      vm_fail(fns[f], 0, 0);
      succeeded = st == NNMEM_OK;
      check(h);
      /* an unmap the driver refused leaves an orphan mapping until the
         next commit of that granule or destroy */
      assert_true(vm_mappings() >= (long)(committed(h) / G));
      for (int i = 0; i < 8; i++)
        if (i % 3) expect(h, b, t[i], sz[i], 200u + (uint32_t)i);
      nnmem_heap_destroy(h);
      nothing_left();
      if (!succeeded) failed++;
    }
    assert_true(succeeded);
    print_message("%s failing: %d compactions refused, then one succeeded\n",
                  fns[f], failed);
    assert_true(failed > 0);
  }
  nnmem_backend_destroy(b);
}

/* Two driver calls of different functions failing in one remapping
 * compaction (e.g. the second cuMemUnmap of an exchange, then the cuMemMap
 * that puts the source granule back): swept over the pairs of functions and
 * the call numbers of both. Each time the heap passes its check (the
 * segment restored or, when the driver refused every retry, reported
 * broken: not reachable with two one-shot faults, so here always
 * restored), every block still holds its bytes, and destroy leaves nothing
 * in the driver. */
static void test_compact_two_failures(void **state) {
  (void)state;
  nnmem_backend_t *b = fake_backend();
  const uint64_t G = 65536;
  const char *fns[] = {"cuMemMap", "cuMemUnmap", "cuMemSetAccess"};
  int failed = 0, runs = 0;
  for (int f1 = 0; f1 < 3; f1++)
    for (int f2 = 0; f2 < 3; f2++)
      for (long n1 = 1; f1 != f2 && n1 <= 6; n1++)
        for (long n2 = 1; n2 <= 6; n2++) {
          nnmem_heap_t *h = vm_heap(b, 64 * G, 1);
          nnmem_handle_t t[8];
          uint64_t sz[8];
          for (int i = 0; i < 8; i++) {
            sz[i] = i % 2 ? (uint64_t)(i + 1) * G : G + 4096 * (uint64_t)i;
            assert_int_equal(nnmem_handle_alloc(h, sz[i], G, &t[i]), NNMEM_OK);
            fill(h, b, t[i], sz[i], 300u + (uint32_t)i);
          }
          for (int i = 0; i < 8; i += 3)
            assert_int_equal(nnmem_handle_free(h, t[i]), NNMEM_OK);
          vm_fail(fns[f1], n1, 2);
          vm_fail(fns[f2], n2, 2);
          nnmem_status_t st = nnmem_heap_compact(h, NULL);
          vm_fail(fns[f1], 0, 0);
          vm_fail(fns[f2], 0, 0);
          failed += st != NNMEM_OK;
          runs++;
          check(h);
          assert_true(vm_mappings() >= (long)(committed(h) / G));
          for (int i = 0; i < 8; i++)
            if (i % 3) expect(h, b, t[i], sz[i], 300u + (uint32_t)i);
          nnmem_heap_destroy(h);
          nothing_left();
        }
  print_message("two failing calls: %d of %d compactions refused\n", failed,
                runs);
  assert_true(failed > 0);
  nnmem_backend_destroy(b);
}

/* A driver that keeps refusing cuMemMap (10 calls in a row from the n-th)
 * after one cuMemUnmap failed (the m-th) in a remapping compaction: either
 * the compaction fails cleanly (check passes, the block intact) or the
 * segment is broken: NNMEM_ERR_STATE, the heap's checker names the
 * granule, a later allocation that needs a commit is refused, and destroy
 * still leaves nothing in the driver. Swept over n and m; the broken state
 * must be reached. */
static void test_compact_broken(void **state) {
  (void)state;
  nnmem_backend_t *b = fake_backend();
  const uint64_t G = 65536;
  int broken = 0, clean = 0;
  for (long m = 1; m <= 3; m++)
    for (long n = 1; n <= 4; n++) {
      nnmem_heap_t *h = vm_heap(b, 64 * G, 1);
      nnmem_handle_t a, c, t;
      assert_int_equal(nnmem_handle_alloc(h, G, G, &a), NNMEM_OK);
      assert_int_equal(nnmem_handle_alloc(h, 2 * G, G, &c), NNMEM_OK);
      fill(h, b, c, 2 * G, 77);
      assert_int_equal(nnmem_handle_free(h, a), NNMEM_OK);
      vm_fail("cuMemUnmap", m, 2);
      vm_fail_times("cuMemMap", n, 2, 10);
      nnmem_status_t st = nnmem_heap_compact(h, NULL);
      vm_fail("cuMemUnmap", 0, 0);
      vm_fail("cuMemMap", 0, 0);
      nnmem_diag_t d = {{0}};
      nnmem_status_t cst = nnmem_heap_check(h, &d);
      if (cst == NNMEM_OK) {
        clean += st != NNMEM_OK;
        expect(h, b, c, 2 * G, 77);
      } else {
        broken++;
        assert_int_equal(st, NNMEM_ERR_STATE);
        assert_non_null(strstr(d.message, "cuda vm: granule"));
        assert_int_not_equal(nnmem_handle_alloc(h, 8 * G, G, &t), NNMEM_OK);
      }
      nnmem_heap_destroy(h);
      nothing_left();
    }
  print_message("map refused 10 times: %d broken, %d clean failures\n", broken,
                clean);
  assert_true(broken > 0);
  nnmem_backend_destroy(b);
}

/* A long block moved a short distance: through the scratch buffer, and
 * in direct chunks when the device has no room for the scratch buffer;
 * the bytes survive both ways and the scratch buffer is freed. */
static void test_short_moves(void **state) {
  (void)state;
  nnmem_backend_t *b = fake_backend();
  const uint64_t G = 65536;
  static const uint64_t first[2] = {256, 4096},
                        big[2] = {3 * G + 1000, 900 * G};
  for (int k = 0; k < 2; k++) {
    nnmem_heap_t *h = vm_heap(b, 1024 * G, 0);
    nnmem_handle_t a, c;
    assert_int_equal(nnmem_handle_alloc(h, first[k], 0, &a), NNMEM_OK);
    assert_int_equal(nnmem_handle_alloc(h, big[k], 0, &c), NNMEM_OK);
    fill(h, b, c, big[k], 77u + (uint32_t)k);
    assert_int_equal(nnmem_handle_free(h, a), NNMEM_OK);
    if (k == 1) { /* 56.25 MiB of 64 committed: no 16 MiB scratch */
      uint64_t f = 0, t = 0;
      assert_int_equal(nnmem_backend_mem_info(b, &f, &t), NNMEM_OK);
      assert_true(f < 16u << 20);
    }
    nnmem_compact_report_t r;
    assert_int_equal(nnmem_heap_compact(h, &r), NNMEM_OK);
    assert_int_equal(r.blocks_moved, 1);
    uint64_t off = 1;
    assert_int_equal(nnmem_handle_info(h, c, &off, NULL, NULL), NNMEM_OK);
    assert_int_equal(off, 0);
    expect(h, b, c, big[k], 77u + (uint32_t)k);
    check(h);
    books(h, G);
    assert_int_equal(fake_live(), 0); /* the scratch buffer is gone */
    nnmem_heap_destroy(h);
    nothing_left();
  }
  nnmem_backend_destroy(b);
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

/* Random allocs, frees, pins and compactions (remap on), every live block
 * checked against its pattern after each compaction. */
static void test_random(void **state) {
  (void)state;
  const uint64_t seed = 20261201, G = 65536;
  print_message("seed %llu\n", (unsigned long long)seed);
  uint64_t s = seed;
  nnmem_backend_t *b = fake_backend();
  nnmem_heap_t *h = vm_heap(b, 256 * G, 1);
  enum { SLOTS = 24 };
  nnmem_handle_t t[SLOTS] = {{0}};
  uint64_t sz[SLOTS] = {0};
  int pinned[SLOTS] = {0};
  uint32_t tag[SLOTS] = {0};
  for (int step = 0; step < 600; step++) {
    int i = (int)(rnd(&s) % SLOTS);
    uint64_t r = rnd(&s) % 10;
    if (r < 6 && !t[i].bits) {
      sz[i] = rnd(&s) % 2 ? (1 + rnd(&s) % 6) * G : 1 + rnd(&s) % (3 * G);
      nnmem_status_t st =
          nnmem_handle_alloc(h, sz[i], sz[i] % G ? 0 : G, &t[i]);
      assert_true(st == NNMEM_OK || st == NNMEM_ERR_NOMEM);
      if (st == NNMEM_OK) fill(h, b, t[i], sz[i], tag[i] = (uint32_t)step);
    } else if (r < 8 && t[i].bits && !pinned[i]) {
      assert_int_equal(nnmem_handle_free(h, t[i]), NNMEM_OK);
      t[i].bits = 0;
    } else if (r < 9 && t[i].bits) {
      void *p;
      if (pinned[i])
        assert_int_equal(nnmem_handle_unpin(h, t[i]), NNMEM_OK);
      else
        assert_int_equal(nnmem_handle_pin(h, t[i], &p), NNMEM_OK);
      pinned[i] = !pinned[i];
    } else if (r == 9) {
      assert_int_equal(nnmem_heap_compact(h, NULL), NNMEM_OK);
      for (int k = 0; k < SLOTS; k++)
        if (t[k].bits) expect(h, b, t[k], sz[k], tag[k]);
    }
    check(h);
    books(h, G);
  }
  nnmem_heap_counters_t hc;
  assert_int_equal(nnmem_heap_stats(h, NULL, &hc), NNMEM_OK);
  print_message("%llu compactions, %llu B moved, %llu remapped\n",
                (unsigned long long)hc.compactions,
                (unsigned long long)hc.bytes_moved,
                (unsigned long long)hc.bytes_remapped);
  assert_true(hc.bytes_remapped > 0);
  nnmem_heap_destroy(h);
  nothing_left();
  nnmem_backend_destroy(b);
}

/* The stand-in's own rules, called directly: what the tests above rely
 * on it to refuse, it refuses with the driver's codes. */
typedef unsigned long long cu_ptr;
typedef struct {
  int type, id;
} loc_t;
typedef struct {
  int type, handle_types;
  loc_t location;
  void *win32;
  unsigned char flags[8];
} prop_t;
typedef struct {
  loc_t location;
  int flags;
} access_t;

#define FN(type, name) type name = (type)dlsym(fake, #name)

static void test_fake_rules(void **state) {
  (void)state;
  typedef int (*init_t)(unsigned);
  typedef int (*retain_t)(void **, int);
  typedef int (*push_t)(void *);
  typedef int (*pop_t)(void **);
  typedef int (*reserve_t)(cu_ptr *, size_t, size_t, cu_ptr,
                           unsigned long long);
  typedef int (*afree_t)(cu_ptr, size_t);
  typedef int (*create_t)(unsigned long long *, size_t, const prop_t *,
                          unsigned long long);
  typedef int (*release_t)(unsigned long long);
  typedef int (*map_t)(cu_ptr, size_t, size_t, unsigned long long,
                       unsigned long long);
  typedef int (*unmap_t)(cu_ptr, size_t);
  typedef int (*access_fn_t)(cu_ptr, size_t, const access_t *, size_t);
  typedef int (*htod_t)(cu_ptr, const void *, size_t);
  typedef int (*release_ctx_t)(int);
  FN(init_t, cuInit);
  FN(retain_t, cuDevicePrimaryCtxRetain);
  FN(release_ctx_t, cuDevicePrimaryCtxRelease_v2);
  FN(push_t, cuCtxPushCurrent_v2);
  FN(pop_t, cuCtxPopCurrent_v2);
  FN(reserve_t, cuMemAddressReserve);
  FN(afree_t, cuMemAddressFree);
  FN(create_t, cuMemCreate);
  FN(release_t, cuMemRelease);
  FN(map_t, cuMemMap);
  FN(unmap_t, cuMemUnmap);
  FN(access_fn_t, cuMemSetAccess);
  FN(htod_t, cuMemcpyHtoD_v2);
  enum { OK = 0, INVALID = 1, OOM = 2 };
  const size_t G = 65536;
  void *ctx = NULL;
  assert_int_equal(cuInit(0), OK);
  assert_int_equal(cuDevicePrimaryCtxRetain(&ctx, 0), OK);
  cu_ptr va = 0;
  assert_int_equal(cuMemAddressReserve(&va, 4 * G, G, 0, 0), 201); /* ctx */
  assert_int_equal(cuCtxPushCurrent_v2(ctx), OK);
  assert_int_equal(cuMemAddressReserve(&va, 4 * G + 1, G, 0, 0), INVALID);
  assert_int_equal(cuMemAddressReserve(&va, 4 * G, G, 0, 0), OK);
  assert_int_equal(va % G, 0);
  prop_t prop = {1, 0, {1, 0}, NULL, {0}};
  unsigned long long h1 = 0, h2 = 0;
  assert_int_equal(cuMemCreate(&h1, G + 4096, &prop, 0), INVALID);
  prop.type = 2;
  assert_int_equal(cuMemCreate(&h1, G, &prop, 0), INVALID);
  prop.type = 1;
  assert_int_equal(cuMemCreate(&h1, G, &prop, 0), OK);
  assert_int_equal(cuMemCreate(&h2, 2 * G, &prop, 0), OK);
  assert_int_equal(vm_handles(), 2);
  assert_int_equal(cuMemMap(va + 4096, G, 0, h1, 0), INVALID);  /* misaligned */
  assert_int_equal(cuMemMap(va, G, G, h1, 0), INVALID);         /* offset */
  assert_int_equal(cuMemMap(va + 4 * G, G, 0, h1, 0), INVALID); /* outside */
  assert_int_equal(cuMemMap(va, G, 0, h1, 0), OK);
  assert_int_equal(cuMemMap(va, G, 0, h2, 0), INVALID); /* over a mapping */
  assert_int_equal(cuMemMap(va + G, 2 * G, 0, h2, 0), OK);
  access_t rw = {{1, 0}, 3};
  unsigned char byte = 7, two[2] = {1, 2};
  assert_int_equal(cuMemcpyHtoD_v2(va, &byte, 1), INVALID);     /* no access */
  assert_int_equal(cuMemSetAccess(va, 4 * G, &rw, 1), INVALID); /* unmapped */
  assert_int_equal(cuMemSetAccess(va, 3 * G, &rw, 1), OK);   /* two mappings */
  assert_int_equal(cuMemcpyHtoD_v2(va + G - 1, two, 2), OK); /* across */
  assert_int_equal(cuMemUnmap(va + G, G), INVALID); /* part of a mapping */
  assert_int_equal(cuMemAddressFree(va, 4 * G), INVALID); /* still mapped */
  assert_int_equal(cuMemRelease(h2), OK); /* deferred: still mapped */
  assert_int_equal(vm_handles(), 2);
  assert_int_equal(cuMemRelease(h2), INVALID); /* twice */
  assert_int_equal(cuMemUnmap(va + G, 2 * G), OK);
  assert_int_equal(vm_handles(), 1); /* freed at its last unmap */
  assert_int_equal(cuMemUnmap(va + G, 2 * G), INVALID); /* not mapped */
  assert_int_equal(cuMemUnmap(va, G), OK);
  assert_int_equal(cuMemcpyHtoD_v2(va, &byte, 1), INVALID); /* unmapped */
  assert_int_equal(cuMemRelease(h1), OK);
  assert_int_equal(cuMemAddressFree(va, 2 * G), INVALID); /* wrong size */
  assert_int_equal(cuMemAddressFree(va, 4 * G), OK);
  /* injected: the 2nd next cuMemCreate fails with the code asked for */
  assert_int_equal(vm_fail("cuMemCreate", 2, OOM), 0);
  assert_int_equal(cuMemCreate(&h1, G, &prop, 0), OK);
  assert_int_equal(cuMemCreate(&h2, G, &prop, 0), OOM);
  assert_int_equal(cuMemCreate(&h2, G, &prop, 0), OK);
  assert_int_equal(cuMemRelease(h1), OK);
  assert_int_equal(cuMemRelease(h2), OK);
  void *popped;
  assert_int_equal(cuCtxPopCurrent_v2(&popped), OK);
  assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), OK);
  nothing_left();
}

/* The compaction scenario on a real GPU (test_cuda_vm --gpu, CTest's
 * test_cuda_vm_gpu): exit 77 where there is none. */
static nnmem_backend_t *gpu;

static void test_real_gpu(void **state) {
  (void)state;
  print_message("device: %s\n", nnmem_backend_cuda_device_name(gpu));
  void *saved = fake;
  fake = NULL; /* books() counts the fake's handles only */
  uint64_t want_r = 0, want_c = 0;
  nnmem_compact_report_t rr = scenario(gpu, 1, &want_r);
  nnmem_compact_report_t rc = scenario(gpu, 0, &want_c);
  fake = saved;
  assert_int_equal(rr.bytes_remapped, want_r);
  assert_true(want_r > 0);
  assert_int_equal(rc.bytes_remapped, 0);
  assert_int_equal(rr.bytes_moved, rc.bytes_moved);
}

static int run_gpu(void) {
  nnmem_cuda_config_t cfg = {sizeof cfg, 0, "libcuda.so.1"};
  nnmem_diag_t d = {{0}};
  nnmem_status_t st = nnmem_backend_cuda_create(&cfg, &gpu, &d);
  if (st == NNMEM_ERR_UNSUPPORTED) {
    printf("no GPU here: %s: skipped\n", d.message);
    return 77;
  }
  if (st != NNMEM_OK) {
    printf("cuda backend: %s\n", d.message);
    return 1;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_real_gpu)};
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  nnmem_backend_destroy(gpu);
  return failed;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--gpu")) return run_gpu();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fake_rules),
      cmocka_unit_test(test_create),
      cmocka_unit_test(test_commit_decommit),
      cmocka_unit_test(test_compact),
      cmocka_unit_test(test_commit_failure),
      cmocka_unit_test(test_compact_failure),
      cmocka_unit_test(test_compact_two_failures),
      cmocka_unit_test(test_compact_broken),
      cmocka_unit_test(test_short_moves),
      cmocka_unit_test(test_random),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

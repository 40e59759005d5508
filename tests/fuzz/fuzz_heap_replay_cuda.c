/* fuzz_heap_replay_cuda.c - libFuzzer harness for the input path of
 * `nnmem replay TRACE.csv --backend cuda --defrag MODE --segment cuda-vm`:
 * a MiniMalloc CSV replayed through a handle heap on a CUDA virtual-memory
 * segment (nnmem_heap_replay_backend) over the stand-in driver
 * (tests/fakes/fake_cuda.c; its path in $NNMEM_FAKE_CUDA, set by CTest;
 * without it the harness does nothing).
 *
 * Input: byte 0 chooses remap (bit 0), the defrag mode (bit 1) and an
 * optional driver fault (bits 2-4: none, or the n-th cuMemCreate /
 * cuMemMap / cuMemSetAccess / cuMemUnmap failing, n from byte 1; bit 5:
 * out of memory, else an invalid value); the rest is the CSV text. The
 * heap has 256 KiB of 4 KiB granules over a 192 KiB device, so both the
 * heap and the device run out.
 *
 * Checked: a CSV that parses replays to NNMEM_OK or to an error with a
 * message; without a fault and with the device large enough, the result
 * and remap off equals the same replay on the unbacked simulated device (operations,
 * peak live, failure point, compactions, bytes moved: the heap's decisions
 * do not depend on its segment); with remap off nothing is remapped; after
 * every replay the driver holds no physical handle, mapping, reservation
 * or allocation. Linked with libFuzzer or replay_main.c (CTest replays the
 * committed corpus/heap_replay_cuda/). Not thread-safe. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

typedef struct fake {
  void *lib;
  long (*handles)(void), (*mappings)(void), (*reserved)(void), (*live)(void);
  int (*fail)(const char *, long, int);
} fake_t;

static const char *const fns[] = {"cuMemCreate", "cuMemMap", "cuMemSetAccess",
                                  "cuMemUnmap"};

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

static void clear_faults(const fake_t *f) {
  for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
    f->fail(fns[i], 0, 0);
}

/* One replay on the fake GPU; the driver is empty afterwards. */
static nnmem_status_t replay_gpu(const fake_t *f, const nnmem_problem_t *p,
                                 const nnmem_heap_config_t *c,
                                 const char *capacity,
                                 nnmem_heap_replay_result_t *r,
                                 nnmem_diag_t *d) {
  setenv("FAKE_CUDA_CAPACITY", capacity, 1);
  nnmem_cuda_config_t cc = {sizeof cc, 0, getenv("NNMEM_FAKE_CUDA")};
  nnmem_backend_t *b = NULL;
  if (nnmem_backend_cuda_create(&cc, &b, NULL) != NNMEM_OK)
    fuzz_fail("setup", NULL);
  nnmem_status_t st = nnmem_heap_replay_backend(p, c, b, NULL, NULL, r, d);
  nnmem_backend_destroy(b);
  clear_faults(f);
  if (f->handles() || f->mappings() || f->reserved() || f->live())
    fuzz_fail("the driver still holds memory after the replay", d);
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fake_t f;
  if (size < 2 || size > FUZZ_MAX_INPUT) return 0;
  if (!f.lib && load(&f) != 0) return 0; /* no stand-in driver: nothing */
  setenv("FAKE_CUDA_GRANULARITY", "4096", 1);
  nnmem_csv_t *csv = NULL;
  nnmem_diag_t d = {{0}};
  if (nnmem_csv_parse((const char *)data + 2, size - 2, "fuzz.csv", &csv,
                      &d) != NNMEM_OK)
    return 0;
  const nnmem_problem_t *p = nnmem_csv_problem(csv);
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.capacity = 256 << 10;
  c.alignment = 16;
  c.granule = 4096;
  c.segment = NNMEM_SEGMENT_CUDA_VM;
  c.remap = data[0] & 1;
  c.defrag = data[0] & 2 ? NNMEM_DEFRAG_AUTO : NNMEM_DEFRAG_OFF;
  c.check_every = 4;
  unsigned fault = (data[0] >> 2) & 7;
  clear_faults(&f);
  if (fault >= 1 && fault <= 4)
    f.fail(fns[fault - 1], 1 + data[1] % 32, data[0] & 0x20 ? 2 : 1);
  nnmem_heap_replay_result_t r;
  nnmem_status_t st = replay_gpu(&f, p, &c, "196608", &r, &d);
  if (st != NNMEM_OK && !d.message[0])
    fuzz_fail("a failed replay without a message", NULL);
  if (st == NNMEM_OK && !c.remap && r.bytes_remapped)
    fuzz_fail("bytes remapped without remap", NULL);
  if ((fault < 1 || fault > 4) && !c.remap) { /* the oracle: the simulated
                                                  device (remap changes the
                                                  alignment of big buffers) */
    nnmem_heap_replay_result_t g, s;
    nnmem_diag_t d2 = {{0}};
    st = replay_gpu(&f, p, &c, "1048576", &g, &d2);
    nnmem_heap_config_t cs = c;
    cs.segment = NNMEM_SEGMENT_BACKEND;
    cs.remap = 0;
    nnmem_status_t ss = nnmem_heap_replay(p, &cs, NULL, NULL, &s, &d2);
    if (st != ss) fuzz_fail("GPU and simulated replays disagree", &d2);
    if (st == NNMEM_OK &&
        (g.operations != s.operations ||
         g.peak_live_bytes != s.peak_live_bytes ||
         g.failed_at != s.failed_at || g.compactions != s.compactions ||
         g.bytes_moved != s.bytes_moved || g.peak_top != s.peak_top))
      fuzz_fail("the GPU replay differs from the simulated one", NULL);
  }
  nnmem_csv_destroy(csv);
  return 0;
}

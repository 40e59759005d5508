/* cuda_vm.c - GPU virtual address ranges backed granule by granule with the
 * CUDA driver's virtual memory management API (cuMemAddressReserve,
 * cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease,
 * cuMemAddressFree; CUDA 10.2 and later), for the growable segments of the
 * handle heap (NNMEM_SEGMENT_CUDA_VM) and their compaction by remapping.
 *
 *   base                                                    base + size
 *   | G0      | G1      | G2      | G3      | ...     | Gn-1    |
 *     h[0]      -         h[2]      h[3]                 -        handles
 *     mapped    reserved  mapped    mapped               reserved
 *
 * Each granule is either only reserved (no handle) or backed: one physical
 * allocation of exactly one granule (cuMemCreate, pinned device memory on
 * the backend's device) mapped at the granule's address (cuMemMap, offset
 * 0) with read/write access for that device (cuMemSetAccess). The handle
 * table h[] keeps each backed granule's physical handle, so a granule can
 * be unmapped and its memory mapped elsewhere without copying.
 *
 * Steps: create: 1. load the entry points (once per backend); 2. check
 * CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED; 3. granularity
 * g = cuMemGetAllocationGranularity(MINIMUM) for pinned memory on the
 * device; granule = max(requested, g) rounded up to a multiple of g; 4.
 * cuMemAddressReserve(size rounded to the granule, alignment = granule).
 * commit [g0, g1): create + map each granule, then one set-access over the
 * run; any failure unmaps and releases what this call backed (all or
 * nothing). decommit: cuCtxSynchronize, then unmap + release each granule.
 * move (compaction): see cuda_vm.h; a whole-granule move exchanges the
 * handles of source and destination granule instead of releasing the
 * destination's, so every granule the segment counts as committed stays
 * backed throughout (the source granule holds the destination's old memory
 * until the segment decommits it) and a move never needs new memory.
 * A failed exchange maps both handles back (restore: unmap, map, set
 * access, 3 attempts), and a failed move exchanges back what it exchanged
 * (3 attempts each); if the driver refuses all of them the segment is
 * broken (sticky, named by the checker; commit and move refuse).
 * Invariants (nnmem__cuda_vm_check): not broken; backed[g] == 1 <=> the
 * segment's refs[g] > 0; n_backed == |{g : backed[g] == 1}|; the driver's
 * own view matches (the fake driver's counters in tests: live handles ==
 * mapped granules == n_backed). Complexity: O(granules touched) driver
 * calls per commit, decommit or move. Thread-safety: driver calls under the
 * backend's mutex with its context current; the tables belong to the
 * segment's (serialized) caller.
 * Untested on a real GPU so far: only the stand-in driver has run it. */
#include "backend/cuda_vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda_internal.h"
#include "common/util.h"

struct nnmem__cuda_vm {
  cuda_t *c;
  cu_ptr_t base;
  uint64_t size, granule, n;
  cu_mem_handle_t *h;    /* per granule: its physical handle when backed */
  unsigned char *backed; /* per granule: 1 mapped with access; 2 or 3 an
                            orphan (unmap or release refused; retried) */
  uint64_t n_backed;     /* granules backed */
  int pending;           /* copies issued since the last synchronize */
  int broken;            /* a granule's bytes are lost or misplaced (the
                            driver refused every attempt to put them back):
                            check fails, commit and move refuse */
  char broken_msg[200];  /* which granule and why */
};

/* Entry point names, in the order of cu_vm_api_t's members (none has a
 * _v2 variant in cuda.h). */
static const char *const vm_names[] = {"cuDeviceGetAttribute",
                                       "cuMemGetAllocationGranularity",
                                       "cuMemAddressReserve",
                                       "cuMemAddressFree",
                                       "cuMemCreate",
                                       "cuMemRelease",
                                       "cuMemMap",
                                       "cuMemUnmap",
                                       "cuMemSetAccess",
                                       "cuCtxSynchronize"};

static cu_mem_prop_t pinned_prop(const cuda_t *c) {
  cu_mem_prop_t p;
  memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = c->dev;
  return p;
}

static cu_mem_access_t rw_access(const cuda_t *c) {
  cu_mem_access_t a;
  memset(&a, 0, sizeof a);
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = c->dev;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return a;
}

/* Maps r to a status (text in last_error); out of memory also names the
 * device's free and total bytes. Called with the context current. */
static nnmem_status_t vm_status(cuda_t *c, cu_result_t r, const char *what) {
  nnmem_status_t st = nnmem__cuda_status(c, r, what);
  if (st == NNMEM_ERR_NOMEM) {
    size_t f = 0, t = 0;
    if (c->api.mem_info(&f, &t) == CU_SUCCESS) {
      size_t len = strlen(c->last_error);
      snprintf(c->last_error + len, sizeof c->last_error - len,
               " (device free %zu of %zu bytes)", f, t);
    }
  }
  return st;
}

static cu_ptr_t addr_of(const nnmem__cuda_vm_t *vm, uint64_t g) {
  return vm->base + (cu_ptr_t)(g * vm->granule);
}

/* Loads the group once, checks support and reads the granularity; with
 * the context current. */
static nnmem_status_t vm_prepare(cuda_t *c, size_t *gran, nnmem_diag_t *diag) {
  nnmem_status_t st = NNMEM_OK;
  if (!c->vm_loaded) {
    st = nnmem__cuda_load(c, vm_names, sizeof vm_names / sizeof *vm_names,
                          (void **)&c->vm, diag);
    if (st) return st;
    c->vm_loaded = 1;
  }
  int ok = 0;
  st = nnmem__cuda_status(
      c,
      c->vm.device_attribute(
          &ok, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, c->dev),
      "cuDeviceGetAttribute");
  if (st == NNMEM_OK && !ok)
    return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                       "cuda vm: %s does not support virtual memory "
                       "management",
                       c->name);
  cu_mem_prop_t prop = pinned_prop(c);
  if (st == NNMEM_OK)
    st = nnmem__cuda_status(
        c, c->vm.granularity(gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  if (st == NNMEM_OK && *gran == 0) {
    snprintf(c->last_error, sizeof c->last_error,
             "cuMemGetAllocationGranularity: granularity 0");
    st = NNMEM_ERR_IO;
  }
  if (st) nnmem__diag(diag, st, "cuda vm: %s", c->last_error);
  return st;
}

nnmem_status_t nnmem__cuda_vm_create(nnmem_backend_t *backend,
                                     uint64_t capacity, uint64_t *granule,
                                     uint64_t *capacity_out, uint64_t *base_out,
                                     nnmem__cuda_vm_t **out,
                                     nnmem_diag_t *diag) {
  *out = NULL;
  cuda_t *c = nnmem__cuda_of(backend);
  if (!c)
    return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                       "cuda vm: the backend is %s, not cuda",
                       backend && backend->name ? backend->name : "NULL");
  if (capacity == 0 || *granule == 0)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "cuda vm: capacity and granule must be > 0");
  nnmem_status_t st = nnmem__cuda_enter(c, "cuda vm");
  if (st) return nnmem__diag(diag, st, "cuda vm: %s", c->last_error);
  size_t gran = 0;
  st = vm_prepare(c, &gran, diag);
  uint64_t g = *granule, size = 0;
  if (st == NNMEM_OK) {
    g = *granule < gran ? gran : *granule;
    if (g % gran) g += gran - g % gran;
    uint64_t n = capacity / g + (capacity % g != 0);
    if (n > SIZE_MAX / g || nnmem__mul_overflow(n, g, &size))
      st = nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
                       "cuda vm: capacity %llu too large",
                       (unsigned long long)capacity);
  }
  nnmem__cuda_vm_t *vm = NULL;
  if (st == NNMEM_OK) {
    vm = calloc(1, sizeof *vm);
    if (vm) {
      vm->n = size / g;
      vm->h = calloc(vm->n, sizeof *vm->h);
      vm->backed = calloc(vm->n, 1);
    }
    if (!vm || !vm->h || !vm->backed) st = NNMEM_ERR_NOMEM;
  }
  if (st == NNMEM_OK) {
    vm->c = c;
    vm->size = size;
    vm->granule = g;
    st = vm_status(
        c, c->vm.address_reserve(&vm->base, (size_t)size, (size_t)g, 0, 0),
        "cuMemAddressReserve");
    if (st)
      nnmem__diag(diag, st, "cuda vm: reserving %llu bytes: %s",
                  (unsigned long long)size, c->last_error);
  }
  nnmem__cuda_leave(c);
  if (st) {
    if (vm) free(vm->h), free(vm->backed);
    free(vm);
    return st;
  }
  *granule = g;
  *capacity_out = size;
  *base_out = vm->base;
  *out = vm;
  return NNMEM_OK;
}

/* Unmaps and releases granule g (backed, or an orphan: see below); the
 * first error wins. When the driver refuses the unmap or the release, the
 * granule becomes an orphan, no longer counted: backed[g] == 2 still
 * mapped, 3 unmapped but not released; the next commit of g and destroy
 * finish the job, so nothing leaks. */
static nnmem_status_t unback(nnmem__cuda_vm_t *vm, uint64_t g) {
  cuda_t *c = vm->c;
  if (vm->backed[g] == 1) vm->n_backed--;
  if (vm->backed[g] != 3) {
    nnmem_status_t st = vm_status(
        c, c->vm.unmap(addr_of(vm, g), (size_t)vm->granule), "cuMemUnmap");
    if (st) {
      vm->backed[g] = 2;
      return st;
    }
  }
  nnmem_status_t st = vm_status(c, c->vm.release(vm->h[g]), "cuMemRelease");
  vm->backed[g] = st ? 3 : 0;
  return st;
}

static nnmem_status_t sync_pending(nnmem__cuda_vm_t *vm) {
  if (!vm->pending) return NNMEM_OK;
  vm->pending = 0;
  return vm_status(vm->c, vm->c->vm.synchronize(), "cuCtxSynchronize");
}

/* NNMEM_ERR_STATE, the broken granule named in last_error, when the
 * segment is broken (see vm_break); else NNMEM_OK. */
static nnmem_status_t refuse_broken(const nnmem__cuda_vm_t *vm) {
  if (!vm->broken) return NNMEM_OK;
  snprintf(vm->c->last_error, sizeof vm->c->last_error, "%s", vm->broken_msg);
  return NNMEM_ERR_STATE;
}

nnmem_status_t nnmem__cuda_vm_commit(nnmem__cuda_vm_t *vm, uint64_t g0,
                                     uint64_t g1) {
  if (g0 >= g1 || g1 > vm->n) return NNMEM_ERR_INVALID;
  if (vm->broken) return refuse_broken(vm);
  cuda_t *c = vm->c;
  nnmem_status_t st = nnmem__cuda_enter(c, "cuda vm commit");
  if (st) return st;
  cu_mem_prop_t prop = pinned_prop(c);
  uint64_t g = g0;
  for (; st == NNMEM_OK && g < g1; g++) {
    if (vm->backed[g] >= 2 && (st = unback(vm, g)) != NNMEM_OK) break;
    cu_mem_handle_t h = 0;
    st = vm_status(c, c->vm.create(&h, (size_t)vm->granule, &prop, 0),
                   "cuMemCreate");
    if (st) break;
    st = vm_status(c, c->vm.map(addr_of(vm, g), (size_t)vm->granule, 0, h, 0),
                   "cuMemMap");
    if (st) { /* never mapped: released at once, else an orphan */
      if (c->vm.release(h) != CU_SUCCESS) vm->h[g] = h, vm->backed[g] = 3;
      break;
    }
    vm->h[g] = h;
    vm->backed[g] = 1;
    vm->n_backed++;
  }
  if (st == NNMEM_OK) {
    cu_mem_access_t a = rw_access(c);
    st = vm_status(c,
                   c->vm.set_access(addr_of(vm, g0),
                                    (size_t)((g1 - g0) * vm->granule), &a, 1),
                   "cuMemSetAccess");
  }
  if (st) { /* roll back what this call backed; keep the first error */
    char keep[sizeof c->last_error];
    memcpy(keep, c->last_error, sizeof keep);
    for (uint64_t k = g0; k < g1; k++)
      if (vm->backed[k] == 1) (void)unback(vm, k);
    memcpy(c->last_error, keep, sizeof keep);
  }
  nnmem__cuda_leave(c);
  return st;
}

nnmem_status_t nnmem__cuda_vm_decommit(nnmem__cuda_vm_t *vm, uint64_t g0,
                                       uint64_t g1) {
  if (g0 >= g1 || g1 > vm->n) return NNMEM_ERR_INVALID;
  cuda_t *c = vm->c;
  nnmem_status_t st = nnmem__cuda_enter(c, "cuda vm decommit");
  if (st) return st;
  vm->pending = 1; /* kernels or copies may still use the memory */
  st = sync_pending(vm);
  for (uint64_t g = g0; g < g1; g++) {
    if (vm->backed[g] != 1) continue;
    nnmem_status_t s = unback(vm, g);
    if (st == NNMEM_OK) st = s;
  }
  nnmem__cuda_leave(c);
  return st;
}

/* A short move of a long range would take n / (src - dst) copies: below
 * this distance the bytes go through a scratch buffer instead. */
#define BOUNCE_BELOW (1u << 20)
#define BOUNCE_MAX (16u << 20)

/* Copies [src, src + n) to [dst, dst + n), dst < src, through a scratch
 * buffer of up to 16 MiB, ascending: each chunk is read whole before it is
 * written, and writes reach only source bytes already read. 1 when the
 * scratch buffer could not be had (the caller copies directly). */
static int bounce(nnmem__cuda_vm_t *vm, uint64_t dst, uint64_t src, uint64_t n,
                  nnmem_status_t *st) {
  cuda_t *c = vm->c;
  uint64_t cap = n < BOUNCE_MAX ? n : BOUNCE_MAX;
  cu_ptr_t tmp = 0;
  if (c->api.mem_alloc(&tmp, (size_t)cap) != CU_SUCCESS) return 1;
  *st = NNMEM_OK;
  for (uint64_t i = 0; *st == NNMEM_OK && i < n; i += cap) {
    size_t k = (size_t)(n - i < cap ? n - i : cap);
    vm->pending = 1;
    *st = vm_status(c, c->api.dtod(tmp, vm->base + src + i, k), "cuMemcpyDtoD");
    if (*st == NNMEM_OK)
      *st =
          vm_status(c, c->api.dtod(vm->base + dst + i, tmp, k), "cuMemcpyDtoD");
  }
  nnmem_status_t s2 = sync_pending(vm);
  if (*st == NNMEM_OK) *st = s2;
  (void)c->api.mem_free(tmp);
  return 0;
}

/* Copies [src, src + n) to [dst, dst + n), dst < src, in ascending chunks
 * of at most src - dst bytes (each chunk's ranges disjoint), or through a
 * scratch buffer when that would take many chunks. */
static nnmem_status_t copy_down(nnmem__cuda_vm_t *vm, uint64_t dst,
                                uint64_t src, uint64_t n) {
  cuda_t *c = vm->c;
  uint64_t step = src - dst;
  nnmem_status_t bst;
  if (step < BOUNCE_BELOW && n / step > 16 && !bounce(vm, dst, src, n, &bst))
    return bst;
  for (uint64_t i = 0; i < n; i += step) {
    uint64_t k = n - i < step ? n - i : step;
    vm->pending = 1;
    nnmem_status_t st = vm_status(
        c, c->api.dtod(vm->base + dst + i, vm->base + src + i, (size_t)k),
        "cuMemcpyDtoD");
    if (st) return st;
  }
  return NNMEM_OK;
}

/* Attempts at restoring a mapping, and at exchanging a granule back, before
 * the segment gives up: one failing driver call, or two of different
 * functions, leave at least one clean attempt. */
#define RETRIES 3

/* Marks the segment broken: a granule whose bytes are no longer where the
 * heap believes them. Sticky: check reports it, commit and move refuse. */
static nnmem_status_t vm_break(nnmem__cuda_vm_t *vm, uint64_t g,
                               const char *why) {
  if (!vm->broken)
    snprintf(vm->broken_msg, sizeof vm->broken_msg,
             "cuda vm: granule %llu %.60s (driver: %.80s)",
             (unsigned long long)g, why, vm->c->last_error);
  vm->broken = 1;
  snprintf(vm->c->last_error, sizeof vm->c->last_error, "%s", vm->broken_msg);
  return NNMEM_ERR_STATE;
}

/* Maps handle h at granule g with read/write access, whatever g holds now
 * (a mapping there is undone first; its failure is ignored, as g may well
 * be unmapped); up to RETRIES attempts. */
static nnmem_status_t restore(nnmem__cuda_vm_t *vm, uint64_t g,
                              cu_mem_handle_t h) {
  cuda_t *c = vm->c;
  size_t G = (size_t)vm->granule;
  cu_mem_access_t a = rw_access(c);
  nnmem_status_t st = NNMEM_ERR_IO;
  for (int i = 0; i < RETRIES && st != NNMEM_OK; i++) {
    (void)c->vm.unmap(addr_of(vm, g), G);
    st = vm_status(c, c->vm.map(addr_of(vm, g), G, 0, h, 0), "cuMemMap");
    if (st == NNMEM_OK)
      st = vm_status(c, c->vm.set_access(addr_of(vm, g), G, &a, 1),
                     "cuMemSetAccess");
  }
  return st;
}

/* Exchanges the physical memory of granules gs and gd (both backed): each
 * handle mapped at the other's address, access set on both. On success
 * *done = 1. When a step fails, both handles are mapped back where they
 * were (restore, with retries) and *done = 0 with the first error; when
 * even that fails, or access cannot be set after a successful exchange, the
 * segment is broken (vm_break) and the status is NNMEM_ERR_STATE. */
static nnmem_status_t exchange(nnmem__cuda_vm_t *vm, uint64_t gs, uint64_t gd,
                               int *done) {
  cuda_t *c = vm->c;
  size_t G = (size_t)vm->granule;
  cu_ptr_t as = addr_of(vm, gs), ad = addr_of(vm, gd);
  cu_mem_handle_t hs = vm->h[gs], hd = vm->h[gd];
  cu_mem_access_t a = rw_access(c);
  *done = 0;
  nnmem_status_t st = vm_status(c, c->vm.unmap(as, G), "cuMemUnmap");
  if (st) return st;
  int unmapped_d = 0;
  st = vm_status(c, c->vm.unmap(ad, G), "cuMemUnmap");
  if (st == NNMEM_OK) {
    unmapped_d = 1;
    st = vm_status(c, c->vm.map(ad, G, 0, hs, 0), "cuMemMap");
  }
  if (st == NNMEM_OK) st = vm_status(c, c->vm.map(as, G, 0, hd, 0), "cuMemMap");
  if (st) { /* back to where they were; keep the first error */
    char keep[sizeof c->last_error];
    memcpy(keep, c->last_error, sizeof keep);
    if (restore(vm, gs, hs) != NNMEM_OK)
      return vm_break(vm, gs, "lost its mapping undoing a failed exchange");
    if (unmapped_d && restore(vm, gd, hd) != NNMEM_OK)
      return vm_break(vm, gd, "lost its mapping undoing a failed exchange");
    memcpy(c->last_error, keep, sizeof keep);
    return st;
  }
  vm->h[gd] = hs;
  vm->h[gs] = hd;
  *done = 1;
  for (int i = 0; i < 2; i++) {
    uint64_t g = i ? gs : gd;
    st = vm_status(c, c->vm.set_access(addr_of(vm, g), G, &a, 1),
                   "cuMemSetAccess");
    if (st && restore(vm, g, vm->h[g]) != NNMEM_OK)
      return vm_break(vm, g, "mapped without access after an exchange");
  }
  return NNMEM_OK;
}

nnmem_status_t nnmem__cuda_vm_move(nnmem__cuda_vm_t *vm, uint64_t dst,
                                   uint64_t src, uint64_t len, int remap,
                                   uint64_t *remapped) {
  if (dst == src || len == 0) return NNMEM_OK;
  if (dst > src || src > vm->size || len > vm->size - src)
    return NNMEM_ERR_INVALID;
  if (vm->broken) return refuse_broken(vm);
  cuda_t *c = vm->c;
  uint64_t G = vm->granule, d = src - dst;
  /* whole granules of the source: [lo, hi) */
  uint64_t lo = (src + G - 1) / G * G, hi = (src + len) / G * G;
  int whole = remap && d % G == 0 && hi > lo;
  nnmem_status_t st = nnmem__cuda_enter(c, "cuda vm move");
  if (st) return st;
  if (!whole) {
    st = copy_down(vm, dst, src, len);
  } else {
    st = copy_down(vm, dst, src, lo - src); /* head (may be empty) */
    if (st == NNMEM_OK) st = sync_pending(vm);
    uint64_t g0 = lo / G, swapped = 0;
    for (uint64_t g = g0; st == NNMEM_OK && g < hi / G; g++) {
      int done = 0;
      st = exchange(vm, g, g - d / G, &done);
      swapped += (uint64_t)done;
    }
    if (st == NNMEM_OK) st = copy_down(vm, hi - d, hi, src + len - hi);
    if (st == NNMEM_OK) {
      *remapped += hi - lo;
    } else { /* undo the exchanges, last first (each is its own inverse):
                the source granules get their memory back, the block is
                intact where it was */
      char keep[sizeof c->last_error];
      memcpy(keep, c->last_error, sizeof keep);
      (void)sync_pending(vm);
      while (swapped-- && !vm->broken) {
        uint64_t gs = g0 + swapped, gd = gs - d / G;
        int done = 0;
        for (int i = 0; i < RETRIES && !done && !vm->broken; i++)
          (void)exchange(vm, gs, gd, &done);
        if (!done)
          (void)vm_break(vm, gd, "holds another's bytes (move not undone)");
      }
      if (vm->broken)
        st = NNMEM_ERR_STATE;
      else
        memcpy(c->last_error, keep, sizeof keep);
    }
  }
  nnmem_status_t s2 = sync_pending(vm);
  nnmem__cuda_leave(c);
  return st ? st : s2;
}

void nnmem__cuda_vm_destroy(nnmem__cuda_vm_t *vm) {
  if (!vm) return;
  cuda_t *c = vm->c;
  if (nnmem__cuda_enter(c, "cuda vm destroy") == NNMEM_OK) {
    if (vm->n_backed) {
      vm->pending = 1;
      (void)sync_pending(vm);
    }
    /* an unmap or release refused is retried (3 attempts, as a move's
     * restore), so a passing failure leaves no mapping behind (the range
     * could not be freed under it); still refused (or, broken, nothing
     * mapped): release anyway, the driver frees at unmap */
    for (uint64_t g = 0; g < vm->n; g++) {
      for (int k = 0; k < 3 && vm->backed[g]; k++)
        (void)unback(vm, g);
      if (vm->backed[g] == 2) (void)c->vm.release(vm->h[g]);
    }
    (void)vm_status(c, c->vm.address_free(vm->base, (size_t)vm->size),
                    "cuMemAddressFree");
    nnmem__cuda_leave(c);
  }
  free(vm->h);
  free(vm->backed);
  free(vm);
}

int nnmem__cuda_vm_check(const nnmem__cuda_vm_t *vm, const uint32_t *refs,
                         uint64_t n, char *msg, size_t cap) {
  if (n != vm->n) {
    snprintf(msg, cap, "cuda vm: %llu granules, the segment has %llu",
             (unsigned long long)vm->n, (unsigned long long)n);
    return 1;
  }
  if (vm->broken) {
    snprintf(msg, cap, "%s", vm->broken_msg);
    return 1;
  }
  uint64_t backed = 0;
  for (uint64_t g = 0; g < n; g++) {
    backed += vm->backed[g] == 1;
    if ((refs[g] > 0) != (vm->backed[g] == 1)) {
      snprintf(msg, cap, "cuda vm: granule %llu is %s but has %u refs",
               (unsigned long long)g, vm->backed[g] ? "backed" : "not backed",
               refs[g]);
      return 1;
    }
  }
  if (backed != vm->n_backed) {
    snprintf(msg, cap, "cuda vm: %llu granules backed, %llu counted",
             (unsigned long long)backed, (unsigned long long)vm->n_backed);
    return 1;
  }
  return 0;
}

uint64_t nnmem__cuda_vm_backed(const nnmem__cuda_vm_t *vm) {
  return vm ? vm->n_backed : 0;
}

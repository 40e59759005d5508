/* segment.c - growable virtual segments (the idea behind PyTorch's
 * expandable segments: reserve address space once, back it granule by
 * granule as the pool grows, give granules back as it shrinks, so growth
 * never adds a disjoint chunk).
 *
 *   base                                                   base+capacity
 *   |  G0  |  G1  |  G2  |  G3  |  G4  |  ...  |  Gn-1 |
 *   [blk a ][ blk b    ]        [c]
 *   refs: 1    2     1     0     1     0 ...     0
 *   committed = 4 granules (G0, G1, G2, G4)
 *
 * Steps: 1. init reserves `capacity` bytes: HOST_VM with mmap(PROT_NONE,
 * MAP_NORESERVE), BACKEND with one backend region; 2. ref(off, len) adds 1
 * to every granule the block touches; a granule going 0 -> 1 is committed
 * (HOST_VM: mprotect read/write, runs of granules in one call); 3. unref
 * subtracts 1; a granule going 1 -> 0 is decommitted (HOST_VM:
 * madvise(MADV_DONTNEED) then mprotect(PROT_NONE)); 4. move copies with
 * memmove, or with mremap(MREMAP_FIXED) in chunks no longer than src - dst
 * (so each chunk's source and target are disjoint) and re-maps each chunk's
 * vacated pages read/write, so the range stays mapped; a chunk mremap refuses
 * (e.g. spanning two kernel mappings) is copied instead.
 * CUDA_VM (backend/cuda_vm.c): init reserves device virtual addresses
 * (cuMemAddressReserve, granule >= the device's allocation granularity);
 * commit backs each granule with its own physical allocation (cuMemCreate
 * + cuMemMap + cuMemSetAccess), decommit unmaps and releases it; move
 * exchanges whole granules' physical handles (remap) or copies with
 * cuMemcpyDtoD. A commit that fails is rolled back entirely: the refs of
 * the block, and every granule of the block that this ref had backed.
 * Invariant: committed == granule x |{g : refs[g] > 0}|; on HOST_VM every
 * granule with refs > 0 is mapped read/write; on CUDA_VM every granule with
 * refs > 0, and no other, is backed (nnmem__cuda_vm_check).
 * Complexity: O(granules touched) per ref/unref plus the system calls.
 * Thread-safety: none (the heap's caller serializes). */
#define _GNU_SOURCE
#include "runtime/segment.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/cuda_vm.h"
#include "common/util.h"

nnmem_status_t nnmem__segment_init(nnmem__segment_t *s,
                                   nnmem_segment_kind_t kind,
                                   nnmem_backend_t *backend, uint64_t capacity,
                                   uint64_t granule, nnmem_diag_t *diag) {
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->backend = backend;
  s->granule = granule;
  s->page = (uint64_t)sysconf(_SC_PAGESIZE);
  if (kind == NNMEM_SEGMENT_CUDA_VM) {
    nnmem_status_t st = nnmem__cuda_vm_create(
        backend, capacity, &s->granule, &s->capacity, &s->base, &s->vm, diag);
    if (st != NNMEM_OK) return st;
    s->n_granules = s->capacity / s->granule;
    s->refs = calloc(s->n_granules ? s->n_granules : 1, sizeof *s->refs);
    if (!s->refs) {
      nnmem__cuda_vm_destroy(s->vm);
      s->vm = NULL;
      return NNMEM_ERR_NOMEM;
    }
    return NNMEM_OK; /* device memory: not host-accessible */
  }
  if (nnmem__align_up(capacity, granule, &s->capacity))
    return NNMEM_ERR_OVERFLOW;
  s->n_granules = s->capacity / granule;
  s->refs = calloc(s->n_granules ? s->n_granules : 1, sizeof *s->refs);
  if (!s->refs) return NNMEM_ERR_NOMEM;
  if (kind == NNMEM_SEGMENT_HOST_VM) {
    void *p = mmap(NULL, (size_t)s->capacity, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      free(s->refs);
      s->refs = NULL;
      return NNMEM_ERR_NOMEM;
    }
    s->base = (uint64_t)(uintptr_t)p;
    s->backed = 1;
    return NNMEM_OK;
  }
  void *p = NULL;
  nnmem_status_t st = nnmem_backend_alloc(backend, s->capacity, granule, &p);
  if (st != NNMEM_OK) {
    free(s->refs);
    s->refs = NULL;
    return st;
  }
  s->base = (uint64_t)(uintptr_t)p;
  s->backed = (backend->flags & NNMEM_BACKEND_BACKED) != 0;
  return NNMEM_OK;
}

void nnmem__segment_fini(nnmem__segment_t *s) {
  if (!s->refs) return;
  void *p = (void *)(uintptr_t)s->base;
  if (s->kind == NNMEM_SEGMENT_CUDA_VM)
    nnmem__cuda_vm_destroy(s->vm); /* releases granules still backed */
  else if (s->kind == NNMEM_SEGMENT_HOST_VM)
    (void)munmap(p, (size_t)s->capacity);
  else
    (void)nnmem_backend_free(s->backend, p, s->capacity);
  free(s->refs);
  s->refs = NULL;
}

/* Commits (on) or decommits granules [g0, g1): HOST_VM mprotect (after
 * madvise DONTNEED when decommitting), CUDA_VM physical memory; accounting
 * only otherwise. */
static nnmem_status_t protect(nnmem__segment_t *s, uint64_t g0, uint64_t g1,
                              int on) {
  if (g0 == g1) return NNMEM_OK;
  if (s->kind == NNMEM_SEGMENT_CUDA_VM)
    return on ? nnmem__cuda_vm_commit(s->vm, g0, g1)
              : nnmem__cuda_vm_decommit(s->vm, g0, g1);
  if (s->kind != NNMEM_SEGMENT_HOST_VM) return NNMEM_OK;
  void *p = (void *)(uintptr_t)(s->base + g0 * s->granule);
  size_t n = (size_t)((g1 - g0) * s->granule);
  if (on)
    return mprotect(p, n, PROT_READ | PROT_WRITE) ? NNMEM_ERR_NOMEM : NNMEM_OK;
  (void)madvise(p, n, MADV_DONTNEED);
  return mprotect(p, n, PROT_NONE) ? NNMEM_ERR_IO : NNMEM_OK;
}

static void range(const nnmem__segment_t *s, uint64_t off, uint64_t len,
                  uint64_t *g0, uint64_t *g1) {
  *g0 = off / s->granule;
  *g1 = (off + len + s->granule - 1) / s->granule;
}

/* Decommits the runs of granules in [g0, g1) whose refs are `level`. */
static void decommit_runs(nnmem__segment_t *s, uint64_t g0, uint64_t g1,
                          uint32_t level) {
  for (uint64_t g = g0; g < g1;) {
    if (s->refs[g] != level) {
      g++;
      continue;
    }
    uint64_t r = g;
    while (g < g1 && s->refs[g] == level)
      g++;
    (void)protect(s, r, g, 0);
  }
}

void nnmem__segment_unref(nnmem__segment_t *s, uint64_t off, uint64_t len) {
  uint64_t g0, g1;
  range(s, off, len, &g0, &g1);
  for (uint64_t g = g0; g < g1; g++)
    if (--s->refs[g] == 0) {
      s->committed -= s->granule;
      s->decommits++;
    }
  decommit_runs(s, g0, g1, 0);
}

/* Steps: 1. refs + 1 over the block (a granule now at 1 was born); 2.
 * commit each run of born granules; 3. on a failure decommit the runs up to
 * and including the failing one (CUDA_VM's failing run has rolled itself
 * back: its decommit finds nothing backed) and take the refs back, so
 * nothing changed. */
nnmem_status_t nnmem__segment_ref(nnmem__segment_t *s, uint64_t off,
                                  uint64_t len) {
  uint64_t g0, g1, born = 0;
  range(s, off, len, &g0, &g1);
  for (uint64_t g = g0; g < g1; g++)
    born += s->refs[g]++ == 0;
  nnmem_status_t st = NNMEM_OK;
  uint64_t g = g0;
  while (g < g1) {
    if (s->refs[g] != 1) {
      g++;
      continue;
    }
    uint64_t r = g;
    while (g < g1 && s->refs[g] == 1)
      g++;
    st = protect(s, r, g, 1);
    if (st != NNMEM_OK) {
      decommit_runs(s, g0, g, 1); /* the failing run too (HOST_VM) */
      for (uint64_t k = g0; k < g1; k++)
        s->refs[k]--;
      return st;
    }
  }
  s->committed += born * s->granule;
  s->commits += born;
  if (s->committed > s->committed_peak) s->committed_peak = s->committed;
  return NNMEM_OK;
}

/* Moves one chunk (disjoint source and target) by mremap; 0 on success. */
static int remap_chunk(nnmem__segment_t *s, uint64_t dst, uint64_t src,
                       uint64_t n) {
  void *from = (void *)(uintptr_t)(s->base + src);
  void *to = (void *)(uintptr_t)(s->base + dst);
  void *r =
      mremap(from, (size_t)n, (size_t)n, MREMAP_MAYMOVE | MREMAP_FIXED, to);
  if (r == MAP_FAILED) return -1;
  /* The vacated source pages are unmapped now: map fresh zero pages. */
  void *m = mmap(from, (size_t)n, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  return m == MAP_FAILED ? -2 : 0;
}

nnmem_status_t nnmem__segment_move(nnmem__segment_t *s, uint64_t dst,
                                   uint64_t src, uint64_t len, int remap,
                                   uint64_t *remapped) {
  if (dst == src || len == 0) return NNMEM_OK;
  if (s->kind == NNMEM_SEGMENT_CUDA_VM)
    return nnmem__cuda_vm_move(s->vm, dst, src, len, remap, remapped);
  if (!s->backed) return NNMEM_OK; /* simulated DMA: nothing to copy */
  int pages = remap && s->kind == NNMEM_SEGMENT_HOST_VM &&
              (dst % s->page) == 0 && (src % s->page) == 0 &&
              (len % s->page) == 0 && dst < src;
  if (!pages) {
    if (s->kind == NNMEM_SEGMENT_HOST_VM) {
      memmove((void *)(uintptr_t)(s->base + dst),
              (const void *)(uintptr_t)(s->base + src), (size_t)len);
      return NNMEM_OK;
    }
    return nnmem_backend_copy(s->backend, (void *)(uintptr_t)(s->base + dst),
                              (const void *)(uintptr_t)(s->base + src), len,
                              NNMEM_COPY_DEVICE_TO_DEVICE);
  }
  uint64_t step = src - dst < len ? src - dst : len;
  for (uint64_t i = 0; i < len; i += step) {
    uint64_t n = len - i < step ? len - i : step;
    int r = remap_chunk(s, dst + i, src + i, n);
    if (r == -2) return NNMEM_ERR_IO;
    if (r == 0) {
      *remapped += n;
    } else {
      memmove((void *)(uintptr_t)(s->base + dst + i),
              (const void *)(uintptr_t)(s->base + src + i), (size_t)n);
    }
  }
  return NNMEM_OK;
}

int nnmem__segment_check(const nnmem__segment_t *s, char *msg, size_t cap) {
  uint64_t live = 0;
  for (uint64_t g = 0; g < s->n_granules; g++)
    if (s->refs[g]) live++;
  if (live * s->granule != s->committed) {
    snprintf(msg, cap, "segment: committed %llu != %llu live granules x %llu",
             (unsigned long long)s->committed, (unsigned long long)live,
             (unsigned long long)s->granule);
    return 1;
  }
  if (s->committed > s->committed_peak) {
    snprintf(msg, cap, "segment: committed above its peak");
    return 1;
  }
  if (s->kind == NNMEM_SEGMENT_CUDA_VM)
    return nnmem__cuda_vm_check(s->vm, s->refs, s->n_granules, msg, cap);
  return 0;
}

/* segment.h - growable virtual segments: one contiguous address range whose
 * granules are committed while live blocks touch them (segment.c). Used by
 * the handle heap (heap.c). Not installed. */
#ifndef NNMEM_SEGMENT_H
#define NNMEM_SEGMENT_H

#include <stdint.h>

#include "nnmem/heap.h"

struct nnmem__cuda_vm;

typedef struct nnmem__segment {
  nnmem_segment_kind_t kind;
  nnmem_backend_t *backend; /* BACKEND kind: the region's owner */
  uint64_t base;            /* first address */
  uint64_t capacity;        /* bytes reserved (a multiple of granule) */
  uint64_t granule;         /* commit unit (pow2) */
  uint64_t page;            /* host page size */
  uint32_t *refs;           /* per granule: live blocks touching it */
  uint64_t n_granules;
  uint64_t committed; /* bytes of granules with refs > 0 */
  uint64_t committed_peak;
  uint64_t commits, decommits; /* granule transitions */
  int backed;                  /* addresses are host memory */
  struct nnmem__cuda_vm *vm;   /* CUDA_VM: the reserved device range */
} nnmem__segment_t;

/* Reserves the range. NNMEM_ERR_NOMEM when refused. CUDA_VM: the granule
 * becomes at least the device's allocation granularity (s->granule says
 * which), the capacity a multiple of it; NNMEM_ERR_UNSUPPORTED when the
 * backend is not cuda or the device has no virtual memory management;
 * `diag` (may be NULL) says why. */
nnmem_status_t nnmem__segment_init(nnmem__segment_t *s,
                                   nnmem_segment_kind_t kind,
                                   nnmem_backend_t *backend, uint64_t capacity,
                                   uint64_t granule, nnmem_diag_t *diag);
void nnmem__segment_fini(nnmem__segment_t *s);
/* A block [off, off+len) becomes live / dead: granule refs +1 / -1,
 * committing on 0 -> 1 and decommitting on 1 -> 0. NNMEM_ERR_NOMEM when the
 * kernel or the device refuses a commit (CUDA_VM: or the driver's status);
 * then refs and commits are rolled back: nothing changed. */
nnmem_status_t nnmem__segment_ref(nnmem__segment_t *s, uint64_t off,
                                  uint64_t len);
void nnmem__segment_unref(nnmem__segment_t *s, uint64_t off, uint64_t len);
/* Moves the bytes [src, src+len) to [dst, dst+len) (dst < src, ranges may
 * overlap; both committed). With `remap` and page alignment the pages are
 * moved with mremap; *remapped gets the bytes moved that way. CUDA_VM: whole
 * granules are moved by exchanging physical handles when src - dst is a
 * multiple of the granule (cuda_vm.h), the rest with cuMemcpyDtoD. Other
 * unbacked segments move nothing (a simulated DMA). */
nnmem_status_t nnmem__segment_move(nnmem__segment_t *s, uint64_t dst,
                                   uint64_t src, uint64_t len, int remap,
                                   uint64_t *remapped);
/* 0 when consistent (committed == granules with refs x granule); else 1
 * with msg. */
int nnmem__segment_check(const nnmem__segment_t *s, char *msg, size_t cap);

#endif /* NNMEM_SEGMENT_H */

/* cuda_vm.h - a reserved range of GPU virtual addresses backed granule by
 * granule with physical memory from the CUDA driver's virtual memory
 * management API (cuda_vm.c). Used by the growable segment
 * (runtime/segment.c, NNMEM_SEGMENT_CUDA_VM). Not installed.
 *
 * Offsets are relative to the range's base; granule indexes are offset /
 * granule. Thread-safety: every call takes the backend's mutex; the range's
 * own tables are not synchronized (the segment's caller serializes). */
#ifndef NNMEM_BACKEND_CUDA_VM_H
#define NNMEM_BACKEND_CUDA_VM_H

#include <stddef.h>
#include <stdint.h>

#include "nnmem/backend.h"
#include "nnmem/status.h"

typedef struct nnmem__cuda_vm nnmem__cuda_vm_t;

/* Reserves at least `capacity` bytes of virtual addresses on the device of
 * `backend` (which must come from nnmem_backend_cuda_create). *granule: in,
 * the requested commit unit; out, max(requested, the device's allocation
 * granularity) rounded up to a multiple of that granularity. *capacity_out:
 * the reserved size (a multiple of the granule); *base_out its first
 * address. NNMEM_ERR_UNSUPPORTED (diag says why) when the backend is not
 * CUDA, the driver lacks the entry points or the device does not support
 * virtual memory management; the driver's status otherwise. */
nnmem_status_t nnmem__cuda_vm_create(nnmem_backend_t *backend,
                                     uint64_t capacity, uint64_t *granule,
                                     uint64_t *capacity_out, uint64_t *base_out,
                                     nnmem__cuda_vm_t **out,
                                     nnmem_diag_t *diag);
/* Unmaps and releases every granule still backed, frees the range. */
void nnmem__cuda_vm_destroy(nnmem__cuda_vm_t *vm);
/* Backs granules [g0, g1) (none of them backed): one cuMemCreate + cuMemMap
 * per granule, one cuMemSetAccess over the run. All or nothing: on a
 * failure every granule of the run it had backed is unmapped and released.
 * NNMEM_ERR_NOMEM when the device is out of memory (the backend's last
 * error carries the driver's text and the device's free/total). */
nnmem_status_t nnmem__cuda_vm_commit(nnmem__cuda_vm_t *vm, uint64_t g0,
                                     uint64_t g1);
/* Waits for the device (cuCtxSynchronize: work in flight may still touch
 * the memory), then unmaps and releases granules [g0, g1) (all backed).
 * Returns the first driver error; goes on with the other granules. */
nnmem_status_t nnmem__cuda_vm_decommit(nnmem__cuda_vm_t *vm, uint64_t g0,
                                       uint64_t g1);
/* Moves the bytes [src, src + len) to [dst, dst + len), dst < src (the
 * ranges may overlap; every granule of both is backed). With `remap` and
 * src - dst a multiple of the granule, each whole granule of the source is
 * moved by exchanging physical handles with its destination granule (unmap
 * both, map each handle at the other's address, set access), so no byte
 * is copied; the partial granules at both ends, and everything without
 * remap, are copied with cuMemcpyDtoD in ascending chunks no longer than
 * src - dst (each chunk's source and target are disjoint), or, when that
 * distance is short (< 1 MiB, over 16 chunks), through a scratch buffer of
 * up to 16 MiB from cuMemAlloc (chunks if it cannot be had). *remapped gets
 * the bytes moved by exchange. The device is synchronized before any unmap
 * and before returning, so the bytes are in place on return. A failure
 * undoes the exchanges done so far (the block intact at src); a mapping the
 * driver refuses to put back is retried (3 attempts). When every attempt
 * fails the segment is broken: NNMEM_ERR_STATE, the granule named in
 * last_error and by the checker, and commit and move refuse from then on
 * (no silent loss; destroy still releases everything). */
nnmem_status_t nnmem__cuda_vm_move(nnmem__cuda_vm_t *vm, uint64_t dst,
                                   uint64_t src, uint64_t len, int remap,
                                   uint64_t *remapped);
/* Checker: not broken (see move), granule g is backed exactly when
 * refs[g] > 0, and the backed count matches. 0 when consistent; else 1
 * with msg. */
int nnmem__cuda_vm_check(const nnmem__cuda_vm_t *vm, const uint32_t *refs,
                         uint64_t n, char *msg, size_t cap);
/* Granules backed now. */
uint64_t nnmem__cuda_vm_backed(const nnmem__cuda_vm_t *vm);

#endif /* NNMEM_BACKEND_CUDA_VM_H */

/* cuda_stream.c - loads the driver API used for asynchronous work on the
 * CUDA backend's device: streams, events, async copies, pinned host memory,
 * modules and kernel launches (cuda_stream.h).
 *
 * The entry points are looked up by their exported names in the driver the
 * backend opened (nnmem__cuda_load), the ABI versions that take 64-bit
 * device pointers and size_t sizes: cuMemcpyHtoDAsync_v2 and
 * cuMemcpyDtoHAsync_v2 (the per-thread-default-stream variants, *_ptsz,
 * are not used: every call names its stream), cuStreamDestroy_v2,
 * cuEventDestroy_v2. cuEventElapsedTime is the original entry point (its
 * _v2 exists only in CUDA 12.8+ drivers and has the same arguments).
 *
 * Callers hold the backend's context (nnmem__cuda_enter) around calls.
 * Thread-safety: load is a pure lookup; the table is read-only after. */
#include "backend/cuda_stream.h"
#include "common/util.h"

/* In the order of cu_stream_api_t's members. */
static const char *const names[] = {
    "cuStreamCreate",       "cuStreamDestroy_v2",   "cuStreamSynchronize",
    "cuStreamWaitEvent",    "cuEventCreate",        "cuEventDestroy_v2",
    "cuEventRecord",        "cuEventSynchronize",   "cuEventElapsedTime",
    "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemHostAlloc",
    "cuMemFreeHost",        "cuModuleLoadData",     "cuModuleUnload",
    "cuModuleGetFunction",  "cuLaunchKernel",       "cuDeviceGetAttribute",
    "cuCtxSynchronize",     "cuEventQuery"};

_Static_assert(sizeof names / sizeof *names ==
                   sizeof(cu_stream_api_t) / sizeof(void (*)(void)),
               "one name per entry point");

nnmem_status_t nnmem__cuda_stream_load(cuda_t *c, cu_stream_api_t *api,
                                       nnmem_diag_t *diag) {
  if (!c || !api)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem__cuda_stream_load: NULL argument");
  return nnmem__cuda_load(c, names, sizeof names / sizeof *names, (void **)api,
                          diag);
}

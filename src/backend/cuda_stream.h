/* cuda_stream.h - the driver entry points for streams, events, async
 * copies, pinned host memory, modules and kernel launches, loaded into the
 * CUDA backend's driver (cuda_internal.h) by nnmem__cuda_stream_load. Used
 * by the GPU executor (src/fit/exec_cuda.c). Not installed.
 *
 * Types and values are those of cuda.h (CUDA 4.0 and later; the library
 * builds without the header): CUstream, CUevent, CUmodule and CUfunction
 * are opaque pointers; CU_STREAM_NON_BLOCKING = 0x1; CU_EVENT_DEFAULT =
 * 0x0 (timing on); CU_MEMHOSTALLOC_PORTABLE = 0x1;
 * CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16; CUDA_ERROR_NOT_READY = 600
 * (cuEventQuery: the event's work is still pending). */
#ifndef NNMEM_BACKEND_CUDA_STREAM_H
#define NNMEM_BACKEND_CUDA_STREAM_H

#include "backend/cuda_internal.h"

typedef struct cu_stream *cu_stream_t;     /* CUstream */
typedef struct cu_event *cu_event_t;       /* CUevent */
typedef struct cu_module *cu_module_t;     /* CUmodule */
typedef struct cu_function *cu_function_t; /* CUfunction */

#define CU_STREAM_NON_BLOCKING 0x1u
#define CU_EVENT_DEFAULT 0x0u
#define CU_MEMHOSTALLOC_PORTABLE 0x1u
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_ERROR_NOT_READY 600

typedef struct cu_stream_api {
  cu_result_t (*stream_create)(cu_stream_t *, unsigned);
  cu_result_t (*stream_destroy)(cu_stream_t);
  cu_result_t (*stream_synchronize)(cu_stream_t);
  cu_result_t (*stream_wait_event)(cu_stream_t, cu_event_t, unsigned);
  cu_result_t (*event_create)(cu_event_t *, unsigned);
  cu_result_t (*event_destroy)(cu_event_t);
  cu_result_t (*event_record)(cu_event_t, cu_stream_t);
  cu_result_t (*event_synchronize)(cu_event_t);
  cu_result_t (*event_elapsed)(float *, cu_event_t, cu_event_t);
  cu_result_t (*htod_async)(cu_ptr_t, const void *, size_t, cu_stream_t);
  cu_result_t (*dtoh_async)(void *, cu_ptr_t, size_t, cu_stream_t);
  cu_result_t (*host_alloc)(void **, size_t, unsigned);
  cu_result_t (*host_free)(void *);
  cu_result_t (*module_load_data)(cu_module_t *, const void *);
  cu_result_t (*module_unload)(cu_module_t);
  cu_result_t (*module_get_function)(cu_function_t *, cu_module_t,
                                     const char *);
  cu_result_t (*launch)(cu_function_t, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, cu_stream_t, void **,
                        void **);
  cu_result_t (*device_attribute)(int *, int, cu_device_t);
  cu_result_t (*ctx_synchronize)(void);
  cu_result_t (*event_query)(cu_event_t); /* CU_ERROR_NOT_READY: pending */
} cu_stream_api_t;

/* Resolves every entry point of cu_stream_api_t in c's driver.
 * NNMEM_ERR_UNSUPPORTED naming the first one missing. */
nnmem_status_t nnmem__cuda_stream_load(cuda_t *c, cu_stream_api_t *api,
                                       nnmem_diag_t *diag);

#endif

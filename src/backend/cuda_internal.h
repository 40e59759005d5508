/* cuda_internal.h - the CUDA backend's state, shared inside the library by
 * the code that drives the same device through more of the driver API
 * (virtual memory, streams and events, kernels): one dlopen'ed driver, one
 * primary context, one mutex.
 *
 * nnmem__cuda_of answers the state behind a backend created by
 * nnmem_backend_cuda_create (NULL for any other backend);
 * nnmem__cuda_load resolves a further group of entry points by name into
 * consecutive function-pointer slots (NNMEM_ERR_UNSUPPORTED naming the
 * first one missing: the driver is too old); nnmem__cuda_enter /
 * nnmem__cuda_leave bracket every driver call (mutex + context current);
 * nnmem__cuda_status maps a CUresult to a status, keeping the driver's
 * error name and text in last_error. */
#ifndef NNMEM_BACKEND_CUDA_INTERNAL_H
#define NNMEM_BACKEND_CUDA_INTERNAL_H

#include <pthread.h>
#include <stddef.h>

#include "nnmem/backend.h"
#include "nnmem/status.h"

/* The driver API types used (cuda.h). */
typedef int cu_result_t; /* CUresult: 0 = CUDA_SUCCESS */
typedef int cu_device_t; /* CUdevice */
typedef struct cu_ctx *cu_context_t;
typedef unsigned long long cu_ptr_t; /* CUdeviceptr (64-bit) */
#define CU_SUCCESS 0
#define CU_ERROR_INVALID_VALUE 1
#define CU_ERROR_OUT_OF_MEMORY 2

typedef struct cu_api {
  cu_result_t (*init)(unsigned);
  cu_result_t (*device_count)(int *);
  cu_result_t (*device_get)(cu_device_t *, int);
  cu_result_t (*device_name)(char *, int, cu_device_t);
  cu_result_t (*ctx_retain)(cu_context_t *, cu_device_t);
  cu_result_t (*ctx_release)(cu_device_t);
  cu_result_t (*ctx_push)(cu_context_t);
  cu_result_t (*ctx_pop)(cu_context_t *);
  cu_result_t (*mem_alloc)(cu_ptr_t *, size_t);
  cu_result_t (*mem_free)(cu_ptr_t);
  cu_result_t (*htod)(cu_ptr_t, const void *, size_t);
  cu_result_t (*dtoh)(void *, cu_ptr_t, size_t);
  cu_result_t (*dtod)(cu_ptr_t, cu_ptr_t, size_t);
  cu_result_t (*memset_d8)(cu_ptr_t, unsigned char, size_t);
  cu_result_t (*mem_info)(size_t *, size_t *);
  cu_result_t (*error_name)(cu_result_t, const char **);
  cu_result_t (*error_string)(cu_result_t, const char **);
} cu_api_t;

/* An over-allocated region: the aligned address handed out and the base
 * the driver returned. */
typedef struct moved {
  cu_ptr_t addr, base;
} moved_t;

typedef struct cuda {
  nnmem_backend_t table; /* handed out; freed with the rest */
  void *lib;
  cu_api_t api;
  cu_device_t dev;
  cu_context_t ctx;
  pthread_mutex_t mu;
  moved_t *moved; /* regions whose address is not their base */
  size_t n_moved, moved_cap;
  char last_error[256];
  char name[128];
  char path[256]; /* the driver library opened */
} cuda_t;

cuda_t *nnmem__cuda_of(const nnmem_backend_t *b);
nnmem_status_t nnmem__cuda_load(cuda_t *c, const char *const *names, size_t n,
                                void **slots, nnmem_diag_t *diag);
nnmem_status_t nnmem__cuda_status(cuda_t *c, cu_result_t r, const char *what);
nnmem_status_t nnmem__cuda_enter(cuda_t *c, const char *what);
void nnmem__cuda_leave(cuda_t *c);

#endif /* NNMEM_BACKEND_CUDA_INTERNAL_H */

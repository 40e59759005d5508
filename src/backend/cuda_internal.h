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

/* ---- virtual memory (cuda_vm.c) ------------------------------------
 * The driver API's virtual memory management types, with the layout of
 * cuda.h (CUDA 10.2 and later; checked against CUDA 13's header):
 * CUmemGenericAllocationHandle, CUmemLocation, CUmemAllocationProp (32
 * bytes on LP64), CUmemAccessDesc (12 bytes). */
typedef unsigned long long cu_mem_handle_t;
typedef struct cu_mem_location {
  int type; /* CUmemLocationType: 1 = CU_MEM_LOCATION_TYPE_DEVICE */
  int id;   /* device ordinal */
} cu_mem_location_t;
typedef struct cu_mem_prop {
  int type;         /* CUmemAllocationType: 1 = CU_MEM_ALLOCATION_TYPE_PINNED */
  int handle_types; /* CUmemAllocationHandleType: 0 = none */
  cu_mem_location_t location;
  void *win32_meta; /* must be NULL off Windows */
  struct {
    unsigned char compression_type, rdma_capable;
    unsigned short usage;
    unsigned char reserved[4];
  } alloc_flags;
} cu_mem_prop_t;
typedef struct cu_mem_access {
  cu_mem_location_t location;
  int flags; /* CUmemAccess_flags: 3 = CU_MEM_ACCESS_FLAGS_PROT_READWRITE */
} cu_mem_access_t;
#define CU_MEM_ALLOCATION_TYPE_PINNED 1
#define CU_MEM_LOCATION_TYPE_DEVICE 1
#define CU_MEM_ACCESS_FLAGS_PROT_READWRITE 3
#define CU_MEM_ALLOC_GRANULARITY_MINIMUM 0
#define CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED 102
_Static_assert(sizeof(void *) != 8 || sizeof(cu_mem_prop_t) == 32,
               "CUmemAllocationProp layout");
_Static_assert(sizeof(cu_mem_access_t) == 12, "CUmemAccessDesc layout");

/* Entry points of the virtual memory group, loaded on first use. */
typedef struct cu_vm_api {
  cu_result_t (*device_attribute)(int *, int, cu_device_t);
  cu_result_t (*granularity)(size_t *, const cu_mem_prop_t *, int);
  cu_result_t (*address_reserve)(cu_ptr_t *, size_t, size_t, cu_ptr_t,
                                 unsigned long long);
  cu_result_t (*address_free)(cu_ptr_t, size_t);
  cu_result_t (*create)(cu_mem_handle_t *, size_t, const cu_mem_prop_t *,
                        unsigned long long);
  cu_result_t (*release)(cu_mem_handle_t);
  cu_result_t (*map)(cu_ptr_t, size_t, size_t, cu_mem_handle_t,
                     unsigned long long);
  cu_result_t (*unmap)(cu_ptr_t, size_t);
  cu_result_t (*set_access)(cu_ptr_t, size_t, const cu_mem_access_t *, size_t);
  cu_result_t (*synchronize)(void);
} cu_vm_api_t;

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
  /* virtual memory (cuda_vm.c): its entry points, loaded on first use */
  cu_vm_api_t vm;
  int vm_loaded;
} cuda_t;

cuda_t *nnmem__cuda_of(const nnmem_backend_t *b);
nnmem_status_t nnmem__cuda_load(cuda_t *c, const char *const *names, size_t n,
                                void **slots, nnmem_diag_t *diag);
nnmem_status_t nnmem__cuda_status(cuda_t *c, cu_result_t r, const char *what);
nnmem_status_t nnmem__cuda_enter(cuda_t *c, const char *what);
void nnmem__cuda_leave(cuda_t *c);

#endif /* NNMEM_BACKEND_CUDA_INTERNAL_H */

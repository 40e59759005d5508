/* cuda.c - the CUDA device backend: device memory from the CUDA driver
 * API behind the backend table.
 *
 * The driver library (libcuda.so.1, installed with the NVIDIA driver) is
 * opened at run time with dlopen, and the handful of entry points used are
 * looked up by name, so nnmem builds and runs everywhere: on a machine
 * without the driver nnmem_backend_cuda_create answers
 * NNMEM_ERR_UNSUPPORTED with a message, and nothing else changes. No CUDA
 * header or toolkit is needed to build this file; the prototypes below are
 * those of the driver API (cuda.h, CUDA 3.2 and later: the *_v2 entry
 * points with 64-bit CUdeviceptr and size_t sizes).
 *
 * Steps of create:
 *   1. dlopen the library (cfg->library, else $NNMEM_CUDA_LIBRARY, else
 *      libcuda.so.1) and resolve every entry point (a missing one: the
 *      driver is too old, UNSUPPORTED naming it);
 *   2. cuInit(0), cuDeviceGetCount, cuDeviceGet(cfg->device);
 *   3. retain the device's primary context (the one the runtime API uses,
 *      so memory is shared with cudaMalloc'ed code in the same process) and
 *      make it current for each call (cuCtxPushCurrent / cuCtxPopCurrent
 *      around every operation: any thread may call the backend).
 * alloc: cuMemAlloc (256-byte aligned by the driver); a larger alignment is
 * served by over-allocating and returning an aligned address inside, the
 * base kept in a small address map for free. copy: cuMemcpyHtoD / DtoH /
 * DtoD (synchronous: the backend contract is that the bytes are there on
 * return). memset: cuMemsetD8. mem_info: cuMemGetInfo.
 * Errors: CUDA_ERROR_OUT_OF_MEMORY becomes NNMEM_ERR_NOMEM, an invalid
 * value NNMEM_ERR_INVALID, anything else NNMEM_ERR_IO; the driver's error
 * name and string are kept and nnmem_backend_cuda_last_error returns them.
 * No CUDA call can abort the process.
 *
 * Thread-safety: every operation runs under the backend's mutex with the
 * context pushed, so the table may be called from any thread. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/backend.h"

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

/* Entry point names, in the order of cu_api_t's members. */
static const char *const cu_names[] = {"cuInit",
                                       "cuDeviceGetCount",
                                       "cuDeviceGet",
                                       "cuDeviceGetName",
                                       "cuDevicePrimaryCtxRetain",
                                       "cuDevicePrimaryCtxRelease_v2",
                                       "cuCtxPushCurrent_v2",
                                       "cuCtxPopCurrent_v2",
                                       "cuMemAlloc_v2",
                                       "cuMemFree_v2",
                                       "cuMemcpyHtoD_v2",
                                       "cuMemcpyDtoH_v2",
                                       "cuMemcpyDtoD_v2",
                                       "cuMemsetD8_v2",
                                       "cuMemGetInfo_v2",
                                       "cuGetErrorName",
                                       "cuGetErrorString"};

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
} cuda_t;

/* Maps a driver result to a status, keeping its name and text. */
static nnmem_status_t cu_status(cuda_t *c, cu_result_t r, const char *what) {
  if (r == CU_SUCCESS) return NNMEM_OK;
  const char *name = NULL, *text = NULL;
  if (c->api.error_name) c->api.error_name(r, &name);
  if (c->api.error_string) c->api.error_string(r, &text);
  snprintf(c->last_error, sizeof c->last_error, "%s: %s (%d): %s", what,
           name ? name : "CUDA error", r, text ? text : "no description");
  if (r == CU_ERROR_OUT_OF_MEMORY) return NNMEM_ERR_NOMEM;
  if (r == CU_ERROR_INVALID_VALUE) return NNMEM_ERR_INVALID;
  return NNMEM_ERR_IO;
}

/* Runs with the context current and the mutex held: enter / leave. */
static nnmem_status_t enter(cuda_t *c, const char *what) {
  pthread_mutex_lock(&c->mu);
  nnmem_status_t st = cu_status(c, c->api.ctx_push(c->ctx), what);
  if (st) pthread_mutex_unlock(&c->mu);
  return st;
}

static void leave(cuda_t *c) {
  cu_context_t popped;
  c->api.ctx_pop(&popped);
  pthread_mutex_unlock(&c->mu);
}

static nnmem_status_t cu_alloc(void *ctx, uint64_t size, uint64_t align,
                               void **out) {
  cuda_t *c = ctx;
  uint64_t want = size, pad = align > 256 ? align - 1 : 0;
  if (nnmem__add_overflow(size, pad, &want) || want > SIZE_MAX)
    return NNMEM_ERR_NOMEM;
  nnmem_status_t st = enter(c, "cuMemAlloc");
  if (st) return st;
  cu_ptr_t base = 0;
  st = cu_status(c, c->api.mem_alloc(&base, (size_t)want), "cuMemAlloc");
  cu_ptr_t addr = base;
  if (st == NNMEM_OK && pad && (base & pad)) {
    addr = (base + pad) & ~(cu_ptr_t)pad;
    st = nnmem__grow((void **)&c->moved, &c->moved_cap, c->n_moved + 1,
                     sizeof *c->moved);
    if (st == NNMEM_OK)
      c->moved[c->n_moved++] = (moved_t){addr, base};
    else
      c->api.mem_free(base);
  }
  leave(c);
  if (st == NNMEM_OK) *out = (void *)(uintptr_t)addr;
  return st;
}

static nnmem_status_t cu_free(void *ctx, void *ptr, uint64_t size) {
  cuda_t *c = ctx;
  (void)size;
  cu_ptr_t addr = (cu_ptr_t)(uintptr_t)ptr, base = addr;
  nnmem_status_t st = enter(c, "cuMemFree");
  if (st) return st;
  for (size_t i = 0; i < c->n_moved; i++)
    if (c->moved[i].addr == addr) {
      base = c->moved[i].base;
      c->moved[i] = c->moved[--c->n_moved];
      break;
    }
  st = cu_status(c, c->api.mem_free(base), "cuMemFree");
  leave(c);
  return st;
}

static nnmem_status_t cu_copy(void *ctx, void *dst, const void *src, uint64_t n,
                              nnmem_copy_kind_t kind) {
  cuda_t *c = ctx;
  if (n > SIZE_MAX) return NNMEM_ERR_INVALID;
  nnmem_status_t st = enter(c, "cuMemcpy");
  if (st) return st;
  cu_ptr_t d = (cu_ptr_t)(uintptr_t)dst, s = (cu_ptr_t)(uintptr_t)src;
  switch (kind) {
    case NNMEM_COPY_HOST_TO_DEVICE:
      st = cu_status(c, c->api.htod(d, src, (size_t)n), "cuMemcpyHtoD");
      break;
    case NNMEM_COPY_DEVICE_TO_HOST:
      st = cu_status(c, c->api.dtoh(dst, s, (size_t)n), "cuMemcpyDtoH");
      break;
    case NNMEM_COPY_DEVICE_TO_DEVICE:
      st = cu_status(c, c->api.dtod(d, s, (size_t)n), "cuMemcpyDtoD");
      break;
    default:
      st = NNMEM_ERR_INVALID;
  }
  leave(c);
  return st;
}

static nnmem_status_t cu_memset(void *ctx, void *dst, int value, uint64_t n) {
  cuda_t *c = ctx;
  if (n > SIZE_MAX) return NNMEM_ERR_INVALID;
  nnmem_status_t st = enter(c, "cuMemsetD8");
  if (st) return st;
  st = cu_status(c,
                 c->api.memset_d8((cu_ptr_t)(uintptr_t)dst,
                                  (unsigned char)value, (size_t)n),
                 "cuMemsetD8");
  leave(c);
  return st;
}

static nnmem_status_t cu_mem_info(void *ctx, uint64_t *free_bytes,
                                  uint64_t *total_bytes) {
  cuda_t *c = ctx;
  size_t f = 0, t = 0;
  nnmem_status_t st = enter(c, "cuMemGetInfo");
  if (st) return st;
  st = cu_status(c, c->api.mem_info(&f, &t), "cuMemGetInfo");
  leave(c);
  if (st == NNMEM_OK) *free_bytes = f, *total_bytes = t;
  return st;
}

static void cuda_release(cuda_t *c) {
  if (!c) return;
  if (c->ctx && c->api.ctx_release) c->api.ctx_release(c->dev);
  if (c->lib) dlclose(c->lib);
  pthread_mutex_destroy(&c->mu);
  free(c->moved);
  free(c);
}

static void cu_destroy(void *ctx) {
  cuda_release(ctx);
}

nnmem_status_t nnmem_backend_cuda_create(const nnmem_cuda_config_t *cfg,
                                         nnmem_backend_t **out,
                                         nnmem_diag_t *diag) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  nnmem_cuda_config_t def = {0};
  if (!cfg) cfg = &def;
  if (cfg->size && cfg->size < sizeof(uint32_t)) return NNMEM_ERR_INVALID;
  const char *path = cfg->library;
  if (!path || !*path) path = getenv("NNMEM_CUDA_LIBRARY");
  if (!path || !*path) path = "libcuda.so.1";
  cuda_t *c = calloc(1, sizeof *c);
  if (!c) return NNMEM_ERR_NOMEM;
  if (pthread_mutex_init(&c->mu, NULL)) {
    free(c);
    return NNMEM_ERR_NOMEM;
  }
  c->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!c->lib) {
    const char *why = dlerror();
    cuda_release(c);
    return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                       "cuda backend: no CUDA driver: cannot open %s (%s)",
                       path, why ? why : "dlopen failed");
  }
  void **slot = (void **)&c->api;
  for (size_t i = 0; i < sizeof cu_names / sizeof *cu_names; i++) {
    slot[i] = dlsym(c->lib, cu_names[i]);
    if (!slot[i]) {
      cuda_release(c);
      return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                         "cuda backend: %s has no %s (driver too old?)", path,
                         cu_names[i]);
    }
  }
  int count = 0;
  nnmem_status_t st = cu_status(c, c->api.init(0), "cuInit");
  if (st == NNMEM_OK)
    st = cu_status(c, c->api.device_count(&count), "cuDeviceGetCount");
  if (st == NNMEM_OK && (cfg->device < 0 || cfg->device >= count)) {
    int n = count;
    cuda_release(c);
    return nnmem__diag(diag, n ? NNMEM_ERR_INVALID : NNMEM_ERR_UNSUPPORTED,
                       "cuda backend: device %d does not exist (%d CUDA "
                       "device%s)",
                       cfg->device, n, n == 1 ? "" : "s");
  }
  if (st == NNMEM_OK)
    st = cu_status(c, c->api.device_get(&c->dev, cfg->device), "cuDeviceGet");
  if (st == NNMEM_OK)
    st = cu_status(c, c->api.ctx_retain(&c->ctx, c->dev),
                   "cuDevicePrimaryCtxRetain");
  if (st != NNMEM_OK) {
    c->ctx = NULL; /* not retained */
    nnmem__diag(diag, st == NNMEM_ERR_IO ? NNMEM_ERR_UNSUPPORTED : st,
                "cuda backend: %s", c->last_error);
    st = st == NNMEM_ERR_IO ? NNMEM_ERR_UNSUPPORTED : st;
    cuda_release(c);
    return st;
  }
  if (c->api.device_name(c->name, sizeof c->name, c->dev) != CU_SUCCESS)
    snprintf(c->name, sizeof c->name, "CUDA device %d", cfg->device);
  nnmem_backend_t *b = &c->table;
  *b = (nnmem_backend_t){.size = sizeof *b,
                         .version = NNMEM_BACKEND_VERSION,
                         .name = "cuda",
                         .ctx = c,
                         .flags = 0, /* device memory: not host-accessible */
                         .alignment = 256,
                         .alloc = cu_alloc,
                         .free = cu_free,
                         .copy = cu_copy,
                         .memset = cu_memset,
                         .mem_info = cu_mem_info,
                         .destroy = cu_destroy};
  *out = b;
  return NNMEM_OK;
}

const char *nnmem_backend_cuda_last_error(const nnmem_backend_t *b) {
  if (!b || !b->name || strcmp(b->name, "cuda") != 0 || !b->ctx) return "";
  return ((const cuda_t *)b->ctx)->last_error;
}

const char *nnmem_backend_cuda_device_name(const nnmem_backend_t *b) {
  if (!b || !b->name || strcmp(b->name, "cuda") != 0 || !b->ctx) return "";
  return ((const cuda_t *)b->ctx)->name;
}

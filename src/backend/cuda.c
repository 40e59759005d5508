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
#include "backend/cuda_internal.h"
#include "nnmem/backend.h"

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

/* Maps a driver result to a status, keeping its name and text. */
nnmem_status_t nnmem__cuda_status(cuda_t *c, cu_result_t r, const char *what) {
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
nnmem_status_t nnmem__cuda_enter(cuda_t *c, const char *what) {
  pthread_mutex_lock(&c->mu);
  nnmem_status_t st = nnmem__cuda_status(c, c->api.ctx_push(c->ctx), what);
  if (st) pthread_mutex_unlock(&c->mu);
  return st;
}

void nnmem__cuda_leave(cuda_t *c) {
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
  nnmem_status_t st = nnmem__cuda_enter(c, "cuMemAlloc");
  if (st) return st;
  cu_ptr_t base = 0;
  st = nnmem__cuda_status(c, c->api.mem_alloc(&base, (size_t)want),
                          "cuMemAlloc");
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
  nnmem__cuda_leave(c);
  if (st == NNMEM_OK) *out = (void *)(uintptr_t)addr;
  return st;
}

static nnmem_status_t cu_free(void *ctx, void *ptr, uint64_t size) {
  cuda_t *c = ctx;
  (void)size;
  cu_ptr_t addr = (cu_ptr_t)(uintptr_t)ptr, base = addr;
  nnmem_status_t st = nnmem__cuda_enter(c, "cuMemFree");
  if (st) return st;
  for (size_t i = 0; i < c->n_moved; i++)
    if (c->moved[i].addr == addr) {
      base = c->moved[i].base;
      c->moved[i] = c->moved[--c->n_moved];
      break;
    }
  st = nnmem__cuda_status(c, c->api.mem_free(base), "cuMemFree");
  nnmem__cuda_leave(c);
  return st;
}

static nnmem_status_t cu_copy(void *ctx, void *dst, const void *src, uint64_t n,
                              nnmem_copy_kind_t kind) {
  cuda_t *c = ctx;
  if (n > SIZE_MAX) return NNMEM_ERR_INVALID;
  nnmem_status_t st = nnmem__cuda_enter(c, "cuMemcpy");
  if (st) return st;
  cu_ptr_t d = (cu_ptr_t)(uintptr_t)dst, s = (cu_ptr_t)(uintptr_t)src;
  switch (kind) {
    case NNMEM_COPY_HOST_TO_DEVICE:
      st =
          nnmem__cuda_status(c, c->api.htod(d, src, (size_t)n), "cuMemcpyHtoD");
      break;
    case NNMEM_COPY_DEVICE_TO_HOST:
      st =
          nnmem__cuda_status(c, c->api.dtoh(dst, s, (size_t)n), "cuMemcpyDtoH");
      break;
    case NNMEM_COPY_DEVICE_TO_DEVICE:
      st = nnmem__cuda_status(c, c->api.dtod(d, s, (size_t)n), "cuMemcpyDtoD");
      break;
    default:
      st = NNMEM_ERR_INVALID;
  }
  nnmem__cuda_leave(c);
  return st;
}

static nnmem_status_t cu_memset(void *ctx, void *dst, int value, uint64_t n) {
  cuda_t *c = ctx;
  if (n > SIZE_MAX) return NNMEM_ERR_INVALID;
  nnmem_status_t st = nnmem__cuda_enter(c, "cuMemsetD8");
  if (st) return st;
  st = nnmem__cuda_status(c,
                          c->api.memset_d8((cu_ptr_t)(uintptr_t)dst,
                                           (unsigned char)value, (size_t)n),
                          "cuMemsetD8");
  nnmem__cuda_leave(c);
  return st;
}

static nnmem_status_t cu_mem_info(void *ctx, uint64_t *free_bytes,
                                  uint64_t *total_bytes) {
  cuda_t *c = ctx;
  size_t f = 0, t = 0;
  nnmem_status_t st = nnmem__cuda_enter(c, "cuMemGetInfo");
  if (st) return st;
  st = nnmem__cuda_status(c, c->api.mem_info(&f, &t), "cuMemGetInfo");
  nnmem__cuda_leave(c);
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
  nnmem_status_t st;
  c->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  snprintf(c->path, sizeof c->path, "%s", path);
  if (!c->lib) {
    const char *why = dlerror();
    cuda_release(c);
    return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                       "cuda backend: no CUDA driver: cannot open %s (%s)",
                       path, why ? why : "dlopen failed");
  }
  st = nnmem__cuda_load(c, cu_names, sizeof cu_names / sizeof *cu_names,
                        (void **)&c->api, diag);
  if (st) {
    cuda_release(c);
    return st;
  }
  int count = 0;
  st = nnmem__cuda_status(c, c->api.init(0), "cuInit");
  if (st == NNMEM_OK)
    st = nnmem__cuda_status(c, c->api.device_count(&count), "cuDeviceGetCount");
  if (st == NNMEM_OK && (cfg->device < 0 || cfg->device >= count)) {
    int n = count;
    cuda_release(c);
    return nnmem__diag(diag, n ? NNMEM_ERR_INVALID : NNMEM_ERR_UNSUPPORTED,
                       "cuda backend: device %d does not exist (%d CUDA "
                       "device%s)",
                       cfg->device, n, n == 1 ? "" : "s");
  }
  if (st == NNMEM_OK)
    st = nnmem__cuda_status(c, c->api.device_get(&c->dev, cfg->device),
                            "cuDeviceGet");
  if (st == NNMEM_OK)
    st = nnmem__cuda_status(c, c->api.ctx_retain(&c->ctx, c->dev),
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

cuda_t *nnmem__cuda_of(const nnmem_backend_t *b) {
  if (!b || b->destroy != cu_destroy || !b->ctx) return NULL;
  return b->ctx;
}

nnmem_status_t nnmem__cuda_load(cuda_t *c, const char *const *names, size_t n,
                                void **slots, nnmem_diag_t *diag) {
  for (size_t i = 0; i < n; i++) {
    slots[i] = dlsym(c->lib, names[i]);
    if (!slots[i])
      return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                         "cuda backend: %s has no %s (driver too old?)",
                         c->path, names[i]);
  }
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

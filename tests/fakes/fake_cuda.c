/* fake_cuda.c - a stand-in for the CUDA driver library (libcuda.so.1) so
 * that the cuda backend (src/backend/cuda.c) is tested on machines without
 * a GPU: the same entry points, "device" memory from the host heap with a
 * capacity, the driver's error codes and strings.
 *
 * Environment (read at cuInit): FAKE_CUDA_DEVICES (default 1),
 * FAKE_CUDA_CAPACITY (bytes, default 1 MiB), FAKE_CUDA_INIT_ERROR (a
 * CUresult cuInit returns, e.g. 100 = CUDA_ERROR_NO_DEVICE).
 * fake_cuda_live() answers how many allocations are outstanding and
 * fake_cuda_ctx_depth() the context stack depth, for leak and balance
 * checks. Device pointers are host pointers offset by 256-byte alignment.
 * Not thread-safe beyond what the backend's mutex gives. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
  OK = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  NOT_INITIALIZED = 3,
  INVALID_DEVICE = 101,
  INVALID_CONTEXT = 201
};

static int inited, devices = 1, depth, retained;
static size_t capacity = 1u << 20, used;
static long live;
static int ctx_token;

typedef struct blk {
  struct blk *next;
  void *raw;
  CUdeviceptr ptr;
  size_t size;
} blk_t;
static blk_t *blocks;

long fake_cuda_live(void) {
  return live;
}
int fake_cuda_ctx_depth(void) {
  return depth;
}
int fake_cuda_retained(void) {
  return retained;
}

CUresult cuInit(unsigned flags) {
  if (flags) return INVALID_VALUE;
  const char *e = getenv("FAKE_CUDA_INIT_ERROR");
  if (e && atoi(e)) return atoi(e);
  e = getenv("FAKE_CUDA_DEVICES");
  devices = e ? atoi(e) : 1;
  e = getenv("FAKE_CUDA_CAPACITY");
  capacity = e ? (size_t)strtoull(e, NULL, 10) : (size_t)1 << 20;
  inited = 1;
  return OK;
}

CUresult cuDeviceGetCount(int *n) {
  if (!inited) return NOT_INITIALIZED;
  *n = devices;
  return OK;
}

CUresult cuDeviceGet(int *d, int ordinal) {
  if (ordinal < 0 || ordinal >= devices) return INVALID_DEVICE;
  *d = ordinal;
  return OK;
}

CUresult cuDeviceGetName(char *name, int len, int d) {
  (void)d;
  if (len < 1) return INVALID_VALUE;
  strncpy(name, "Fake GPU", (size_t)len - 1);
  name[len - 1] = '\0';
  return OK;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) {
  if (d < 0 || d >= devices) return INVALID_DEVICE;
  retained++;
  *ctx = &ctx_token;
  return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(int d) {
  (void)d;
  retained--;
  return OK;
}

CUresult cuCtxPushCurrent_v2(void *ctx) {
  if (ctx != &ctx_token) return INVALID_CONTEXT;
  depth++;
  return OK;
}

CUresult cuCtxPopCurrent_v2(void **ctx) {
  if (depth == 0) return INVALID_CONTEXT;
  depth--;
  if (ctx) *ctx = &ctx_token;
  return OK;
}

static int in_ctx(void) {
  return depth > 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (size == 0) return INVALID_VALUE;
  if (size > capacity - used) return OUT_OF_MEMORY;
  blk_t *b = malloc(sizeof *b);
  void *raw = malloc(size + 256);
  if (!b || !raw) {
    free(b);
    free(raw);
    return OUT_OF_MEMORY;
  }
  b->raw = raw;
  b->ptr = ((CUdeviceptr)(uintptr_t)raw + 255) & ~(CUdeviceptr)255;
  b->size = size;
  b->next = blocks;
  blocks = b;
  used += size;
  live++;
  *p = b->ptr;
  return OK;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  if (!in_ctx()) return INVALID_CONTEXT;
  for (blk_t **at = &blocks; *at; at = &(*at)->next)
    if ((*at)->ptr == p) {
      blk_t *b = *at;
      *at = b->next;
      used -= b->size;
      live--;
      free(b->raw);
      free(b);
      return OK;
    }
  return INVALID_VALUE;
}

/* Is [p, p + n) inside one allocation? */
static int valid(CUdeviceptr p, size_t n) {
  for (blk_t *b = blocks; b; b = b->next)
    if (p >= b->ptr && p - b->ptr <= b->size && n <= b->size - (p - b->ptr))
      return 1;
  return 0;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (!valid(d, n)) return INVALID_VALUE;
  memcpy((void *)(uintptr_t)d, s, n);
  return OK;
}

CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (!valid(s, n)) return INVALID_VALUE;
  memcpy(d, (const void *)(uintptr_t)s, n);
  return OK;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (!valid(d, n) || !valid(s, n)) return INVALID_VALUE;
  memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  return OK;
}

CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (!valid(d, n)) return INVALID_VALUE;
  memset((void *)(uintptr_t)d, v, n);
  return OK;
}

CUresult cuMemGetInfo_v2(size_t *f, size_t *t) {
  if (!in_ctx()) return INVALID_CONTEXT;
  *f = capacity - used;
  *t = capacity;
  return OK;
}

CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
    case OK:
      *s = "CUDA_SUCCESS";
      return OK;
    case INVALID_VALUE:
      *s = "CUDA_ERROR_INVALID_VALUE";
      return OK;
    case OUT_OF_MEMORY:
      *s = "CUDA_ERROR_OUT_OF_MEMORY";
      return OK;
    case NOT_INITIALIZED:
      *s = "CUDA_ERROR_NOT_INITIALIZED";
      return OK;
    case 100:
      *s = "CUDA_ERROR_NO_DEVICE";
      return OK;
    case INVALID_DEVICE:
      *s = "CUDA_ERROR_INVALID_DEVICE";
      return OK;
    case INVALID_CONTEXT:
      *s = "CUDA_ERROR_INVALID_CONTEXT";
      return OK;
    default:
      *s = NULL;
      return INVALID_VALUE;
  }
}

CUresult cuGetErrorString(CUresult r, const char **s) {
  switch (r) {
    case OUT_OF_MEMORY:
      *s = "out of memory";
      return OK;
    case 100:
      *s = "no CUDA-capable device is detected";
      return OK;
    case INVALID_VALUE:
      *s = "invalid argument";
      return OK;
    default:
      *s = "fake driver error";
      return OK;
  }
}

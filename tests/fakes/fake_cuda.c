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
 * The virtual memory management entry points (cuMemAddressReserve,
 * cuMemCreate, cuMemMap, ...) are in their own block at the end.
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

/* The executor's block (end of file) names the errors it injects. */
static const char *fake_exec_error_name(CUresult r);
static const char *fake_exec_error_string(CUresult r);
/* An asynchronous fault (FAKE_CUDA_FAULT_LAUNCH, end of file): the sticky
 * error, 0 while none; once a synchronizing call has reported it, every
 * call that uses the context answers it. */
static CUresult fx_sticky;
static int fx_known;
static CUresult fx_surface(void) {
  if (fx_sticky) fx_known = 1;
  return fx_sticky;
}

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
  if (--retained == 0) fx_sticky = 0, fx_known = 0; /* context destroyed */
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

static int vm_valid(CUdeviceptr p, size_t n); /* virtual memory, below */

/* Is [p, p + n) inside one allocation? */
static int valid(CUdeviceptr p, size_t n) {
  if (vm_valid(p, n)) return 1;
  for (blk_t *b = blocks; b; b = b->next)
    if (p >= b->ptr && p - b->ptr <= b->size && n <= b->size - (p - b->ptr))
      return 1;
  return 0;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (fx_sticky) return fx_surface();
  if (!valid(d, n)) return INVALID_VALUE;
  memcpy((void *)(uintptr_t)d, s, n);
  return OK;
}

CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (fx_sticky) return fx_surface();
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
      *s = fake_exec_error_name(r);
      return *s ? OK : INVALID_VALUE;
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
      *s = fake_exec_error_string(r);
      if (!*s) *s = "fake driver error";
      return OK;
  }
}

/* ---- virtual memory management (cuMemAddressReserve & co.) ----------
 *
 * A reserved range is real host address space (mmap PROT_NONE); a physical
 * allocation (cuMemCreate) is a memfd of its size, counted against the
 * device capacity; cuMemMap maps the memfd over the reserved addresses
 * (MAP_FIXED, still PROT_NONE) and cuMemSetAccess makes a fully mapped
 * range read/write, so the data lives in the handle and moves with it when
 * it is mapped elsewhere, and the ordinary copies work on those addresses
 * only after access was set (vm_valid). The driver's rules are enforced
 * with its error codes (CUDA_ERROR_INVALID_VALUE): sizes and addresses
 * multiples of the granularity, mapping only inside a reservation and not
 * over a mapping, offset 0, unmapping exactly one whole mapping, access
 * only over fully mapped ranges, freeing a reservation only with no
 * mapping left; releasing a mapped handle defers the free to its last
 * unmap, as the driver does.
 * Environment (read at cuInit): FAKE_CUDA_GRANULARITY (bytes, default
 * 2 MiB as on current GPUs), FAKE_CUDA_NO_VMM=1 (the device attribute says
 * unsupported). Counters: fake_cuda_vm_handles() (physical allocations not
 * yet freed), fake_cuda_vm_mappings(), fake_cuda_vm_reserved() (ranges),
 * fake_cuda_vm_calls(name) (calls so far). Fault injection:
 * fake_cuda_vm_fail(name, n, code) makes the n-th next call of name
 * ("cuMemCreate", "cuMemMap", "cuMemSetAccess", "cuMemUnmap",
 * "cuMemAddressReserve") return `code` (n = 0 clears);
 * fake_cuda_vm_fail_times(name, n, code, k) the k calls from the n-th.
 * For a program run as a whole (the CLI tests), FAKE_CUDA_VM_FAIL=
 * "name:n:code[:k]" does the same from the process's first call of the
 * group. FAKE_CUDA_LEAKS=1: at exit, one line on stderr counts what is
 * still held ("fake_cuda at exit: allocations A, vm handles H, mappings M,
 * reservations R, exec objects O"). */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

enum { VM_MAX = 4096, NOT_SUPPORTED = 801 };

typedef struct vm_res {
  CUdeviceptr base;
  size_t size;
  void *raw; /* mmap'ed: base aligned inside [raw, raw + raw_size) */
  size_t raw_size;
} vm_res_t;

typedef struct vm_handle {
  unsigned long long id; /* 0: free slot */
  int fd;
  size_t size;
  int released, maps;
} vm_handle_t;

typedef struct vm_map {
  CUdeviceptr addr;
  size_t size;
  unsigned long long handle; /* 0: free slot */
  int access;
} vm_map_t;

typedef struct vm_loc {
  int type, id;
} vm_loc_t;
typedef struct vm_prop {
  int type, handle_types;
  vm_loc_t location;
  void *win32;
  unsigned char flags[8];
} vm_prop_t;
typedef struct vm_access {
  vm_loc_t location;
  int flags;
} vm_access_t;

static vm_res_t vm_res[64];
static vm_handle_t vm_handles[VM_MAX];
static vm_map_t vm_maps[VM_MAX];
static unsigned long long vm_next_id = 0x1000;
static long vm_n_handles, vm_n_maps, vm_n_res;
static size_t vm_handles_top, vm_maps_top; /* slots in use lie below */

typedef struct vm_fault {
  const char *name;
  long calls;   /* so far */
  long fail_at; /* call number that fails; 0 = none */
  CUresult code;
  long times; /* consecutive calls failing from fail_at (1 when 0) */
} vm_fault_t;
static vm_fault_t vm_faults[] = {
    {"cuMemCreate", 0, 0, 0, 0},         {"cuMemMap", 0, 0, 0, 0},
    {"cuMemSetAccess", 0, 0, 0, 0},      {"cuMemUnmap", 0, 0, 0, 0},
    {"cuMemAddressReserve", 0, 0, 0, 0}, {"cuMemRelease", 0, 0, 0, 0}};
#define N_FAULTS (sizeof vm_faults / sizeof *vm_faults)

static vm_fault_t *vm_fault(const char *name) {
  for (size_t i = 0; i < N_FAULTS; i++)
    if (!strcmp(vm_faults[i].name, name)) return &vm_faults[i];
  return NULL;
}

int fake_cuda_vm_fail_times(const char *name, long n, int code, long times);

/* FAKE_CUDA_VM_FAIL="name:n:code[:k]", read once. */
static void vm_env_faults(void) {
  static int read;
  const char *e = getenv("FAKE_CUDA_VM_FAIL");
  if (read++ || !e || !*e) return;
  char name[64];
  long n = 0, code = 0, k = 1;
  if (sscanf(e, "%63[^:]:%ld:%ld:%ld", name, &n, &code, &k) >= 3 && n > 0)
    fake_cuda_vm_fail_times(name, n, (int)code, k > 0 ? k : 1);
}

/* Counts a call; its injected error, or OK. */
static CUresult vm_call(const char *name) {
  vm_env_faults();
  vm_fault_t *f = vm_fault(name);
  f->calls++;
  if (f->fail_at && f->calls >= f->fail_at) {
    if (f->calls - f->fail_at + 1 >= (f->times > 0 ? f->times : 1))
      f->fail_at = 0;
    return f->code;
  }
  return OK;
}

int fake_cuda_vm_fail(const char *name, long n, int code) {
  vm_fault_t *f = vm_fault(name);
  if (!f) return -1;
  f->fail_at = n ? f->calls + n : 0;
  f->code = code;
  f->times = 1;
  return 0;
}
/* As fake_cuda_vm_fail, but `times` consecutive calls fail from the n-th. */
int fake_cuda_vm_fail_times(const char *name, long n, int code, long times) {
  if (fake_cuda_vm_fail(name, n, code)) return -1;
  vm_fault(name)->times = times;
  return 0;
}
long fake_cuda_vm_calls(const char *name) {
  vm_fault_t *f = vm_fault(name);
  return f ? f->calls : -1;
}
long fake_cuda_vm_handles(void) {
  return vm_n_handles;
}
long fake_cuda_vm_mappings(void) {
  return vm_n_maps;
}
long fake_cuda_vm_reserved(void) {
  return vm_n_res;
}

static size_t vm_gran(void) {
  const char *e = getenv("FAKE_CUDA_GRANULARITY");
  size_t g = e ? (size_t)strtoull(e, NULL, 10) : 0;
  return g ? g : (size_t)2 << 20;
}

static vm_res_t *vm_res_of(CUdeviceptr p, size_t n) {
  for (size_t i = 0; i < sizeof vm_res / sizeof *vm_res; i++)
    if (vm_res[i].size && p >= vm_res[i].base &&
        p - vm_res[i].base <= vm_res[i].size &&
        n <= vm_res[i].size - (p - vm_res[i].base))
      return &vm_res[i];
  return NULL;
}

static vm_handle_t *vm_handle_of(unsigned long long id) {
  for (size_t i = 0; i < vm_handles_top; i++)
    if (id && vm_handles[i].id == id) return &vm_handles[i];
  return NULL;
}

/* The mapping that contains address p, or NULL. */
static vm_map_t *vm_map_at(CUdeviceptr p) {
  for (size_t i = 0; i < vm_maps_top; i++)
    if (vm_maps[i].handle && p >= vm_maps[i].addr &&
        p - vm_maps[i].addr < vm_maps[i].size)
      return &vm_maps[i];
  return NULL;
}

/* Is every byte of [p, p + n) mapped (and, with `access`, accessible)? */
static int vm_covered(CUdeviceptr p, size_t n, int access) {
  while (n) {
    vm_map_t *m = vm_map_at(p);
    if (!m || (access && !m->access)) return 0;
    size_t k = m->size - (size_t)(p - m->addr);
    if (k >= n) return 1;
    p += k, n -= k;
  }
  return 1;
}

static int vm_valid(CUdeviceptr p, size_t n) {
  return vm_n_maps && vm_res_of(p, n) && vm_covered(p, n ? n : 1, 1);
}

CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  if (!inited) return NOT_INITIALIZED;
  if (!v || dev < 0 || dev >= devices)
    return dev < 0 || dev >= devices ? INVALID_DEVICE : INVALID_VALUE;
  const char *e = getenv("FAKE_CUDA_NO_VMM");
  if (attr == 102) /* CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
    *v = !(e && atoi(e));
  else /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT (16): 4 */
    *v = attr == 16 ? 4 : 0;
  return OK;
}

CUresult cuMemGetAllocationGranularity(size_t *g, const vm_prop_t *prop,
                                       int option) {
  if (!g || !prop || (option != 0 && option != 1)) return INVALID_VALUE;
  if (prop->type != 1 || prop->location.type != 1) return INVALID_VALUE;
  if (prop->location.id < 0 || prop->location.id >= devices)
    return INVALID_DEVICE;
  *g = vm_gran();
  return OK;
}

CUresult cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t align,
                             CUdeviceptr addr, unsigned long long flags) {
  (void)addr; /* a hint */
  if (!in_ctx()) return INVALID_CONTEXT;
  CUresult r = vm_call("cuMemAddressReserve");
  if (r) return r;
  size_t g = vm_gran();
  if (!p || !size || size % g || flags || (align & (align - 1)))
    return INVALID_VALUE;
  if (align < g) align = g;
  vm_res_t *slot = NULL;
  for (size_t i = 0; i < sizeof vm_res / sizeof *vm_res && !slot; i++)
    if (!vm_res[i].size) slot = &vm_res[i];
  if (!slot) return OUT_OF_MEMORY;
  size_t raw_size = size + align;
  void *raw = mmap(NULL, raw_size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return OUT_OF_MEMORY;
  slot->raw = raw;
  slot->raw_size = raw_size;
  slot->base =
      ((CUdeviceptr)(uintptr_t)raw + align - 1) & ~(CUdeviceptr)(align - 1);
  slot->size = size;
  vm_n_res++;
  *p = slot->base;
  return OK;
}

CUresult cuMemAddressFree(CUdeviceptr p, size_t size) {
  if (!in_ctx()) return INVALID_CONTEXT;
  for (size_t i = 0; i < sizeof vm_res / sizeof *vm_res; i++) {
    vm_res_t *v = &vm_res[i];
    if (!v->size || v->base != p) continue;
    if (v->size != size) return INVALID_VALUE;
    for (size_t k = 0; k < vm_maps_top; k++) /* still mapped inside: refused */
      if (vm_maps[k].handle && vm_maps[k].addr >= p &&
          vm_maps[k].addr - p < size)
        return INVALID_VALUE;
    munmap(v->raw, v->raw_size);
    memset(v, 0, sizeof *v);
    vm_n_res--;
    return OK;
  }
  return INVALID_VALUE;
}

CUresult cuMemCreate(unsigned long long *h, size_t size, const vm_prop_t *prop,
                     unsigned long long flags) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (!h || !prop || flags || !size || size % vm_gran()) return INVALID_VALUE;
  if (prop->type != 1 || prop->location.type != 1 || prop->handle_types ||
      prop->win32)
    return INVALID_VALUE;
  if (prop->location.id < 0 || prop->location.id >= devices)
    return INVALID_DEVICE;
  CUresult r = vm_call("cuMemCreate");
  if (r) return r;
  if (size > capacity - used) return OUT_OF_MEMORY;
  vm_handle_t *slot = NULL;
  for (size_t i = 0; i < VM_MAX && !slot; i++)
    if (!vm_handles[i].id) slot = &vm_handles[i];
  if (!slot) return OUT_OF_MEMORY;
  if ((size_t)(slot - vm_handles) >= vm_handles_top)
    vm_handles_top = (size_t)(slot - vm_handles) + 1;
  int fd = memfd_create("fake_cuda_vm", MFD_CLOEXEC);
  if (fd < 0) return OUT_OF_MEMORY;
  if (ftruncate(fd, (off_t)size) != 0) {
    close(fd);
    return OUT_OF_MEMORY;
  }
  *slot = (vm_handle_t){vm_next_id++, fd, size, 0, 0};
  used += size;
  vm_n_handles++;
  *h = slot->id;
  return OK;
}

static void vm_handle_free(vm_handle_t *v) {
  close(v->fd);
  used -= v->size;
  vm_n_handles--;
  memset(v, 0, sizeof *v);
}

CUresult cuMemRelease(unsigned long long h) {
  if (!in_ctx()) return INVALID_CONTEXT;
  vm_handle_t *v = vm_handle_of(h);
  if (!v || v->released) return INVALID_VALUE;
  CUresult r = vm_call("cuMemRelease");
  if (r) return r;
  v->released = 1;
  if (!v->maps) vm_handle_free(v); /* else at its last unmap */
  return OK;
}

CUresult cuMemMap(CUdeviceptr p, size_t size, size_t offset,
                  unsigned long long h, unsigned long long flags) {
  if (!in_ctx()) return INVALID_CONTEXT;
  size_t g = vm_gran();
  vm_handle_t *v = vm_handle_of(h);
  if (!v || v->released || offset || flags || !size || size % g || p % g ||
      size > v->size || !vm_res_of(p, size))
    return INVALID_VALUE;
  for (size_t k = 0; k < vm_maps_top; k++) /* over a mapping: refused */
    if (vm_maps[k].handle && vm_maps[k].addr < p + size &&
        p < vm_maps[k].addr + vm_maps[k].size)
      return INVALID_VALUE;
  CUresult r = vm_call("cuMemMap");
  if (r) return r;
  vm_map_t *slot = NULL;
  for (size_t i = 0; i < VM_MAX && !slot; i++)
    if (!vm_maps[i].handle) slot = &vm_maps[i];
  if (!slot) return OUT_OF_MEMORY;
  if ((size_t)(slot - vm_maps) >= vm_maps_top)
    vm_maps_top = (size_t)(slot - vm_maps) + 1;
  void *at = mmap((void *)(uintptr_t)p, size, PROT_NONE, MAP_SHARED | MAP_FIXED,
                  v->fd, 0);
  if (at == MAP_FAILED) return OUT_OF_MEMORY;
  *slot = (vm_map_t){p, size, h, 0};
  v->maps++;
  vm_n_maps++;
  return OK;
}

CUresult cuMemUnmap(CUdeviceptr p, size_t size) {
  if (!in_ctx()) return INVALID_CONTEXT;
  vm_map_t *m = vm_map_at(p);
  if (!m || m->addr != p || m->size != size) return INVALID_VALUE;
  CUresult r = vm_call("cuMemUnmap");
  if (r) return r;
  /* back to a bare reservation */
  mmap((void *)(uintptr_t)p, size, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  vm_handle_t *v = vm_handle_of(m->handle);
  memset(m, 0, sizeof *m);
  vm_n_maps--;
  if (--v->maps == 0 && v->released) vm_handle_free(v);
  return OK;
}

CUresult cuMemSetAccess(CUdeviceptr p, size_t size, const vm_access_t *desc,
                        size_t count) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (!desc || count != 1 || !size || !vm_covered(p, size, 0))
    return INVALID_VALUE;
  if (desc->location.type != 1) return INVALID_VALUE;
  if (desc->location.id < 0 || desc->location.id >= devices)
    return INVALID_DEVICE;
  if (desc->flags != 0 && desc->flags != 1 && desc->flags != 3)
    return INVALID_VALUE;
  CUresult r = vm_call("cuMemSetAccess");
  if (r) return r;
  int prot = desc->flags == 3   ? PROT_READ | PROT_WRITE
             : desc->flags == 1 ? PROT_READ
                                : PROT_NONE;
  if (mprotect((void *)(uintptr_t)p, size, prot) != 0) return INVALID_VALUE;
  for (CUdeviceptr q = p; q < p + size;) {
    vm_map_t *m = vm_map_at(q);
    m->access = desc->flags == 3; /* the copies need read/write */
    q = m->addr + m->size;
  }
  return OK;
}

/* ==== streams, events, async copies, pinned host memory, modules and
 * kernel launches: what the GPU executor (src/fit/exec_cuda.c) uses. ====
 *
 * Work runs at call time (copies copy, kernels run their C versions below
 * on the fake device memory), while a virtual clock per stream gives the
 * events their times: a kernel takes its spin cycles / FAKE_CUDA_CLOCK_HZ
 * (default 1e9), a copy bytes / FAKE_CUDA_LINK_BW (default 25e9) on one
 * engine per direction shared by all streams; cuStreamWaitEvent moves a
 * stream's clock to the event's; cuEventElapsedTime answers the difference.
 * So the measured exposed time of a run depends on the events it waits
 * for exactly as on a GPU whose kernels take their spin time.
 * The kernels are recognized by name in the image given to
 * cuModuleLoadData (a fatbin: its header bounds the search; else a PTX
 * text); their arguments are read from kernelParams as exec_kernels.cu
 * declares them. Fault injection (read at cuModuleLoadData, which also
 * resets the counters): FAKE_CUDA_FAIL_LAUNCH=N fails the N-th
 * cuLaunchKernel with CUDA_ERROR_LAUNCH_FAILED, FAKE_CUDA_FAIL_COPY=N the
 * N-th async copy with CUDA_ERROR_ILLEGAL_ADDRESS, FAKE_CUDA_FAIL_EVENT=N
 * the N-th cuEventRecord with CUDA_ERROR_INVALID_HANDLE (all three at the
 * call). FAKE_CUDA_FAULT_LAUNCH=N makes the N-th cuLaunchKernel fault as a
 * kernel does on a GPU, asynchronously: the launch succeeds, the kernel
 * and all work after it do nothing, and the host learns of the sticky
 * CUDA_ERROR_ILLEGAL_ADDRESS only from a call that waits for that work
 * (cuEventQuery / cuEventSynchronize of an event recorded after it,
 * cuStreamSynchronize, cuCtxSynchronize, a synchronous copy); from then on
 * every call that uses the context answers it (frees and destroys still
 * work; the context's last release clears it). fake_cuda_fault_step()
 * answers the step argument of the faulting kernel.
 * FAKE_CUDA_QUERY_PENDING=1: cuEventQuery answers CUDA_ERROR_NOT_READY (a
 * device that lags the host), so the executor learns only from its waits.
 * fake_cuda_exec_objects() counts streams, events, modules and pinned host
 * allocations outstanding (leak checks). */
#include <stdio.h>

enum {
  FX_INVALID_HANDLE = 400,
  FX_NOT_FOUND = 500,
  FX_ILLEGAL_ADDRESS = 700,
  FX_LAUNCH_FAILED = 719
};

typedef struct fx_stream {
  double t;
} fx_stream_t;
typedef struct fx_event {
  double t;
  int recorded;
  int after_fault; /* recorded after the fault: its work never ends well */
} fx_event_t;
typedef struct fx_module {
  int magic;
} fx_module_t;
enum { FX_CHECK = 1, FX_WRITE, FX_SPIN };
static int fx_functions[4]; /* handles: &fx_functions[kind] */

static long fx_objects;
static double fx_clock = 1e9, fx_link = 25e9, fx_engine[2];
static long fx_fail_launch, fx_fail_copy, fx_fail_event;
static long fx_launches, fx_copies, fx_events;
static long fx_fault_launch, fx_flaunches;
static long fx_fault_step = -1;

long fake_cuda_fault_step(void) {
  return fx_fault_step;
}

long fake_cuda_exec_objects(void) {
  return fx_objects;
}

static const char *fake_exec_error_name(CUresult r) {
  switch (r) {
    case FX_INVALID_HANDLE:
      return "CUDA_ERROR_INVALID_HANDLE";
    case FX_NOT_FOUND:
      return "CUDA_ERROR_NOT_FOUND";
    case FX_ILLEGAL_ADDRESS:
      return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case FX_LAUNCH_FAILED:
      return "CUDA_ERROR_LAUNCH_FAILED";
    default:
      return NULL;
  }
}

static const char *fake_exec_error_string(CUresult r) {
  switch (r) {
    case FX_INVALID_HANDLE:
      return "invalid resource handle";
    case FX_NOT_FOUND:
      return "named symbol not found";
    case FX_ILLEGAL_ADDRESS:
      return "an illegal memory access was encountered";
    case FX_LAUNCH_FAILED:
      return "unspecified launch failure";
    default:
      return NULL;
  }
}

static double fx_env(const char *name, double def) {
  const char *e = getenv(name);
  return e && *e ? strtod(e, NULL) : def;
}

CUresult cuStreamCreate(void **s, unsigned flags) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (flags > 1) return INVALID_VALUE;
  fx_stream_t *x = calloc(1, sizeof *x);
  if (!x) return OUT_OF_MEMORY;
  fx_objects++;
  *s = x;
  return OK;
}

CUresult cuStreamDestroy_v2(void *s) {
  if (!s) return FX_INVALID_HANDLE;
  free(s);
  fx_objects--;
  return OK;
}

CUresult cuStreamSynchronize(void *s) {
  return !s ? FX_INVALID_HANDLE : fx_surface();
}

CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) {
  if (!s || !e || flags) return s && e ? INVALID_VALUE : FX_INVALID_HANDLE;
  if (fx_known) return fx_sticky;
  fx_stream_t *x = s;
  fx_event_t *v = e;
  if (v->recorded && v->t > x->t) x->t = v->t; /* unrecorded: no-op */
  return OK;
}

CUresult cuEventCreate(void **e, unsigned flags) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (flags & 2) return INVALID_VALUE; /* the executor times every event */
  fx_event_t *v = calloc(1, sizeof *v);
  if (!v) return OUT_OF_MEMORY;
  fx_objects++;
  *e = v;
  return OK;
}

CUresult cuEventDestroy_v2(void *e) {
  if (!e) return FX_INVALID_HANDLE;
  free(e);
  fx_objects--;
  return OK;
}

CUresult cuEventRecord(void *e, void *s) {
  if (!e || !s) return FX_INVALID_HANDLE;
  if (fx_known) return fx_sticky;
  if (fx_fail_event && ++fx_events == fx_fail_event) return FX_INVALID_HANDLE;
  ((fx_event_t *)e)->t = ((fx_stream_t *)s)->t;
  ((fx_event_t *)e)->recorded = 1;
  ((fx_event_t *)e)->after_fault = fx_sticky != 0;
  return OK;
}

/* Work runs at call time, so an event is complete unless a fault came
 * before it. */
CUresult cuEventSynchronize(void *e) {
  if (!e) return FX_INVALID_HANDLE;
  return fx_known || ((fx_event_t *)e)->after_fault ? fx_surface() : OK;
}

/* FAKE_CUDA_QUERY_PENDING=1: as if the device lagged behind the host,
 * every query answers CUDA_ERROR_NOT_READY (600) until a fault is known;
 * cuEventSynchronize still answers at once. */
static int fx_query_pending;

CUresult cuEventQuery(void *e) {
  if (e && fx_query_pending && !fx_known) return 600;
  return cuEventSynchronize(e);
}

CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
  fx_event_t *x = a, *y = b;
  if (!x || !y || !x->recorded || !y->recorded) return FX_INVALID_HANDLE;
  if (fx_known) return fx_sticky;
  *ms = (float)((y->t - x->t) * 1e3);
  return OK;
}

static CUresult fx_copy(void *s, int dir, size_t n) {
  fx_stream_t *x = s;
  if (!x) return FX_INVALID_HANDLE;
  if (fx_known) return fx_sticky;
  if (fx_fail_copy && ++fx_copies == fx_fail_copy) return FX_ILLEGAL_ADDRESS;
  double b = x->t > fx_engine[dir] ? x->t : fx_engine[dir];
  x->t = fx_engine[dir] = b + (double)n / fx_link;
  return OK;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, void *s) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (!valid(d, n)) return INVALID_VALUE;
  CUresult r = fx_copy(s, 0, n);
  if (r == OK && !fx_sticky) memcpy((void *)(uintptr_t)d, h, n);
  return r;
}

CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, void *s) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (!valid(d, n)) return INVALID_VALUE;
  CUresult r = fx_copy(s, 1, n);
  if (r == OK && !fx_sticky) memcpy(h, (const void *)(uintptr_t)d, n);
  return r;
}

CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (n == 0 || flags > 0xf) return INVALID_VALUE;
  if (!(*p = malloc(n))) return OUT_OF_MEMORY;
  fx_objects++;
  return OK;
}

CUresult cuMemFreeHost(void *p) {
  if (!p) return INVALID_VALUE;
  free(p);
  fx_objects--;
  return OK;
}

/* The image's bytes: a fatbin's header says its size (magic 0xBA55ED50,
 * u16 version, u16 header size, u64 payload size); else a NUL-ended PTX. */
static size_t fx_image_size(const void *image) {
  const unsigned char *b = image;
  uint32_t magic;
  memcpy(&magic, b, 4);
  if (magic == 0xBA55ED50u) {
    uint16_t hs;
    uint64_t fs;
    memcpy(&hs, b + 6, 2);
    memcpy(&fs, b + 8, 8);
    return (size_t)hs + (size_t)fs;
  }
  return strlen(image);
}

static int fx_has(const void *image, size_t n, const char *name) {
  size_t k = strlen(name);
  const unsigned char *b = image;
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(b + i, name, k) == 0) return 1;
  return 0;
}

CUresult cuModuleLoadData(void **m, const void *image) {
  if (!in_ctx()) return INVALID_CONTEXT;
  if (!image) return INVALID_VALUE;
  size_t n = fx_image_size(image);
  if (!fx_has(image, n, "nnmem_exec_check") ||
      !fx_has(image, n, "nnmem_exec_write") ||
      !fx_has(image, n, "nnmem_exec_spin"))
    return 200; /* CUDA_ERROR_INVALID_IMAGE */
  fx_module_t *x = calloc(1, sizeof *x);
  if (!x) return OUT_OF_MEMORY;
  x->magic = 0x6d6f64;
  fx_clock = fx_env("FAKE_CUDA_CLOCK_HZ", 1e9);
  fx_link = fx_env("FAKE_CUDA_LINK_BW", 25e9);
  fx_fail_launch = (long)fx_env("FAKE_CUDA_FAIL_LAUNCH", 0);
  fx_fail_copy = (long)fx_env("FAKE_CUDA_FAIL_COPY", 0);
  fx_fail_event = (long)fx_env("FAKE_CUDA_FAIL_EVENT", 0);
  fx_fault_launch = (long)fx_env("FAKE_CUDA_FAULT_LAUNCH", 0);
  fx_query_pending = fx_env("FAKE_CUDA_QUERY_PENDING", 0) != 0;
  fx_launches = fx_copies = fx_events = fx_flaunches = 0;
  fx_fault_step = -1;
  fx_sticky = 0, fx_known = 0;
  fx_engine[0] = fx_engine[1] = 0;
  fx_objects++;
  *m = x;
  return OK;
}

CUresult cuModuleUnload(void *m) {
  if (!m || ((fx_module_t *)m)->magic != 0x6d6f64) return FX_INVALID_HANDLE;
  free(m);
  fx_objects--;
  return OK;
}

CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  if (!m) return FX_INVALID_HANDLE;
  int k = strcmp(name, "nnmem_exec_check") == 0   ? FX_CHECK
          : strcmp(name, "nnmem_exec_write") == 0 ? FX_WRITE
          : strcmp(name, "nnmem_exec_spin") == 0  ? FX_SPIN
                                                  : 0;
  if (!k) return FX_NOT_FOUND;
  *f = &fx_functions[k];
  return OK;
}

CUresult cuCtxSynchronize(void) {
  return in_ctx() ? fx_surface() : INVALID_CONTEXT;
}

/* exec_kernels.cu's structures and kernels, in C. */
typedef struct fx_seg {
  uint64_t addr, len, pat, phase, buf_off;
  uint32_t tier, buffer;
} fx_seg_t;
typedef struct fx_err {
  uint32_t flag, step, tier, buffer;
  uint64_t offset;
  uint32_t expected, found;
} fx_err_t;

static CUresult fx_segs(uint64_t segs, uint32_t n, fx_err_t *err, uint32_t step,
                        int write) {
  if (n && !valid(segs, (size_t)n * sizeof(fx_seg_t)))
    return FX_ILLEGAL_ADDRESS;
  const fx_seg_t *s = (const fx_seg_t *)(uintptr_t)segs;
  for (uint32_t i = 0; i < n && !err->flag; i++) {
    if (!valid(s[i].addr, s[i].len)) return FX_ILLEGAL_ADDRESS;
    unsigned char *p = (unsigned char *)(uintptr_t)s[i].addr;
    for (uint64_t k = 0; k < s[i].len; k++) {
      unsigned char want =
          (unsigned char)(s[i].pat >> (8 * ((s[i].phase + k) & 7)));
      if (write) {
        p[k] = want;
      } else if (p[k] != want) {
        *err = (fx_err_t){1,    step, s[i].tier, s[i].buffer, s[i].buf_off + k,
                          want, p[k]};
        break;
      }
    }
  }
  return OK;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                        void *s, void **params, void **extra) {
  (void)shmem;
  if (!in_ctx()) return INVALID_CONTEXT;
  int k = f ? (int)((int *)f - fx_functions) : 0;
  if (k < FX_CHECK || k > FX_SPIN || !s) return FX_INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 ||
      !params || extra)
    return INVALID_VALUE;
  if (fx_known) return fx_sticky;
  if (fx_fail_launch && ++fx_launches == fx_fail_launch)
    return FX_LAUNCH_FAILED;
  if (fx_fault_launch && ++fx_flaunches == fx_fault_launch) {
    fx_sticky = FX_ILLEGAL_ADDRESS; /* the host is told later */
    fx_fault_step = k == FX_SPIN ? -1 : (long)*(uint32_t *)params[3];
  }
  if (fx_sticky) return OK; /* faulted: no more work runs */
  fx_stream_t *x = s;
  if (k == FX_SPIN) {
    x->t += (double)*(long long *)params[0] / fx_clock;
    return OK;
  }
  uint64_t segs = *(uint64_t *)params[0], errp = *(uint64_t *)params[2];
  uint32_t n = *(uint32_t *)params[1], step = *(uint32_t *)params[3];
  if (!valid(errp, sizeof(fx_err_t))) return FX_ILLEGAL_ADDRESS;
  fx_err_t *err = (fx_err_t *)(uintptr_t)errp;
  if (err->flag) return OK; /* the kernels return at once */
  CUresult r = fx_segs(segs, n, err, step, k == FX_WRITE);
  if (r == OK && k == FX_WRITE)
    x->t += (double)*(long long *)params[4] / fx_clock;
  return r;
}

/* FAKE_CUDA_LEAKS=1: what is still held when the process exits. */
__attribute__((destructor)) static void fake_cuda_leaks(void) {
  const char *e = getenv("FAKE_CUDA_LEAKS");
  if (!e || !atoi(e)) return;
  fprintf(stderr,
          "fake_cuda at exit: allocations %ld, vm handles %ld, mappings %ld, "
          "reservations %ld, exec objects %ld\n",
          live, vm_n_handles, vm_n_maps, vm_n_res, fx_objects);
}

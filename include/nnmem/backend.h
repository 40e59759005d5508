/* nnmem/backend.h - the physical layer: where raw regions come from.
 *
 * A backend is a versioned table of functions plus a context pointer. The
 * pools, arenas and the allocator only ever talk to memory through it, so an
 * accelerator runtime (CUDA, ROCm, Ascend ACL, ...) plugs in by filling one
 * table (see docs/backends.md). Three backends are built in:
 *
 *   host   aligned heap memory (posix_memalign / free);
 *   mmap   anonymous mappings, optionally on huge pages (MAP_HUGETLB, else
 *          madvise(MADV_HUGEPAGE), falling back to normal pages cleanly);
 *   sim    a simulated device: a capacity, a device alignment, fault
 *          injection (fail the N-th request), request counting, and, unless
 *          asked to back them, addresses that are NOT host memory (so traces
 *          whose live bytes exceed host RAM replay fine).
 *
 * Addresses are returned as void * even when they are not dereferenceable
 * (unbacked sim); NNMEM_BACKEND_BACKED in `flags` says whether the host may
 * touch them.
 *
 * Thread-safety: the built-in backends are thread-safe (the sim backend
 * takes an internal mutex). A custom backend states its own rules; pools
 * call it under their own lock. */
#ifndef NNMEM_BACKEND_H
#define NNMEM_BACKEND_H

#include "nnmem/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NNMEM_BACKEND_VERSION 1

/* flags */
#define NNMEM_BACKEND_BACKED 1u /* addresses are host-accessible memory */

/* Copy directions for backend->copy. */
typedef enum nnmem_copy_kind {
  NNMEM_COPY_HOST_TO_DEVICE = 0,
  NNMEM_COPY_DEVICE_TO_HOST,
  NNMEM_COPY_DEVICE_TO_DEVICE
} nnmem_copy_kind_t;

/* The table. `size`/`version` come first so the struct may grow. Required:
 * alloc, free. Optional (NULL = unsupported): copy, memset, mem_info,
 * destroy (called by nnmem_backend_destroy with ctx). */
typedef struct nnmem_backend {
  uint32_t size;      /* sizeof(nnmem_backend_t) */
  uint32_t version;   /* NNMEM_BACKEND_VERSION */
  const char *name;   /* "host", "mmap", "sim", ... (static string) */
  void *ctx;          /* passed to every function */
  uint32_t flags;     /* NNMEM_BACKEND_* */
  uint64_t alignment; /* every region is aligned to at least this (pow2) */
  /* Reserves `size` bytes aligned to `align` (power of two; 0 = default).
   * NNMEM_ERR_NOMEM when the device is full or a fault is injected. */
  nnmem_status_t (*alloc)(void *ctx, uint64_t size, uint64_t align, void **out);
  /* Returns a region; `size` is the size it was reserved with. */
  nnmem_status_t (*free)(void *ctx, void *ptr, uint64_t size);
  nnmem_status_t (*copy)(void *ctx, void *dst, const void *src, uint64_t n,
                         nnmem_copy_kind_t kind);
  nnmem_status_t (*memset)(void *ctx, void *dst, int value, uint64_t n);
  /* Free and total bytes of the device (like aclrtGetMemInfo). */
  nnmem_status_t (*mem_info)(void *ctx, uint64_t *free_bytes,
                             uint64_t *total_bytes);
  void (*destroy)(void *ctx);
} nnmem_backend_t;

/* Host heap backend (posix_memalign). Alignment at least 16. */
NNMEM_API nnmem_status_t nnmem_backend_host_create(nnmem_backend_t **out);

/* mmap backend options; zero means default. */
typedef struct nnmem_mmap_config {
  uint32_t size;  /* sizeof(nnmem_mmap_config_t); 0 = current */
  int huge_pages; /* 1: try MAP_HUGETLB, then madvise(MADV_HUGEPAGE) */
} nnmem_mmap_config_t;

/* Anonymous-mapping backend; `cfg` may be NULL. Alignment = page size;
 * larger alignments are served by over-mapping and trimming. */
NNMEM_API nnmem_status_t nnmem_backend_mmap_create(
    const nnmem_mmap_config_t *cfg, nnmem_backend_t **out);

/* Simulated device options; zero means default. */
typedef struct nnmem_sim_config {
  uint32_t size;         /* sizeof(nnmem_sim_config_t); 0 = current */
  uint64_t capacity;     /* bytes; 0 = 2^46 */
  uint64_t alignment;    /* device alignment 64/128/256/512; 0 = 256 */
  int backed;            /* 1: regions are real host memory */
  uint64_t fail_at;      /* fail the N-th alloc request (1-based); 0 = never */
  int fail_after;        /* 1: also fail every request after fail_at */
  uint64_t address_base; /* unbacked: the first address; 0 = 2^44. Gives
                            several devices disjoint address ranges (e.g.
                            one per simulated NUMA node) */
} nnmem_sim_config_t;

/* Simulated device. Unbacked addresses start at 2^44 (or address_base)
 * and are never reused while the backend lives; they must not be
 * dereferenced. */
NNMEM_API nnmem_status_t nnmem_backend_sim_create(const nnmem_sim_config_t *cfg,
                                                  nnmem_backend_t **out);

/* Sim counters. NNMEM_ERR_INVALID when `b` is not a sim backend. */
typedef struct nnmem_sim_counters {
  uint64_t requests;     /* alloc calls seen (failed ones included) */
  uint64_t failed;       /* alloc calls that failed */
  uint64_t frees;        /* free calls */
  uint64_t live_regions; /* regions currently reserved */
  uint64_t live_bytes;   /* bytes currently reserved */
  uint64_t peak_bytes;   /* maximum of live_bytes */
} nnmem_sim_counters_t;
NNMEM_API nnmem_status_t nnmem_backend_sim_counters(const nnmem_backend_t *b,
                                                    nnmem_sim_counters_t *out);
/* Re-arms fault injection: fail the `n`-th request counted from now
 * (1 = the next one); 0 disarms. */
NNMEM_API nnmem_status_t nnmem_backend_sim_fail_at(nnmem_backend_t *b,
                                                   uint64_t n, int fail_after);

/* CUDA device backend options; zero means default. */
typedef struct nnmem_cuda_config {
  uint32_t size;       /* sizeof(nnmem_cuda_config_t); 0 = current */
  int device;          /* CUDA device ordinal */
  const char *library; /* the driver library; NULL: $NNMEM_CUDA_LIBRARY,
                          else libcuda.so.1 */
} nnmem_cuda_config_t;

/* Device memory of an NVIDIA GPU through the CUDA driver API, loaded at run
 * time (no toolkit needed to build; see src/backend/cuda.c). Regions are
 * device addresses (not host-accessible); copy moves bytes between host and
 * device (synchronously); alignment 256, larger ones by over-allocation.
 * NNMEM_ERR_UNSUPPORTED with a message in `diag` when there is no driver or
 * no device; the driver's errors become status codes (out of memory:
 * NNMEM_ERR_NOMEM) with the last one's text in
 * nnmem_backend_cuda_last_error. Thread-safe. */
NNMEM_API nnmem_status_t nnmem_backend_cuda_create(
    const nnmem_cuda_config_t *cfg, nnmem_backend_t **out, nnmem_diag_t *diag);

/* The last CUDA error of a cuda backend ("" if none or not a cuda backend)
 * and the device's name. */
NNMEM_API const char *nnmem_backend_cuda_last_error(const nnmem_backend_t *b);
NNMEM_API const char *nnmem_backend_cuda_device_name(const nnmem_backend_t *b);

/* Destroys a backend made by one of the create functions above (or any
 * table whose destroy is set). NULL is a no-op. Regions still reserved
 * from a sim backend are released. */
NNMEM_API void nnmem_backend_destroy(nnmem_backend_t *b);

/* Checked wrappers: validate arguments (size 0, non-power-of-two align,
 * NULL table), then call the table. */
NNMEM_API nnmem_status_t nnmem_backend_alloc(nnmem_backend_t *b, uint64_t size,
                                             uint64_t align, void **out);
NNMEM_API nnmem_status_t nnmem_backend_free(nnmem_backend_t *b, void *ptr,
                                            uint64_t size);
/* NNMEM_ERR_UNSUPPORTED when the backend has no mem_info. */
NNMEM_API nnmem_status_t nnmem_backend_mem_info(nnmem_backend_t *b,
                                                uint64_t *free_bytes,
                                                uint64_t *total_bytes);
/* Uses the table's copy, or memcpy for backed host backends. */
NNMEM_API nnmem_status_t nnmem_backend_copy(nnmem_backend_t *b, void *dst,
                                            const void *src, uint64_t n,
                                            nnmem_copy_kind_t kind);
NNMEM_API nnmem_status_t nnmem_backend_memset(nnmem_backend_t *b, void *dst,
                                              int value, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_BACKEND_H */

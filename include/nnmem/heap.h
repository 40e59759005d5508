/* nnmem/heap.h - a handle heap: relocatable blocks behind handles, with
 * compaction (defragmentation) and a growable virtual segment underneath.
 *
 * A caller never keeps a raw pointer into a heap across compactions: it
 * keeps an nnmem_handle_t (slot index + generation), pins the handle to get
 * an address that stays valid while pinned, and unpins it. Compaction moves
 * every unpinned live block towards the start of the heap (with the
 * backend's copy, or by remapping pages on a host segment) and updates the
 * handle table; pinned blocks stay put and the layout is packed around them.
 *
 * The memory is one contiguous segment of `capacity` bytes:
 *   - NNMEM_SEGMENT_BACKEND: one region of `capacity` bytes is taken from the
 *     backend at creation; commit and decommit are accounting only (the
 *     simulated device honours the same contract as host memory);
 *   - NNMEM_SEGMENT_HOST_VM: `capacity` bytes of address space are reserved
 *     with mmap(PROT_NONE); a granule is committed (mprotect read/write) when
 *     the first live block touches it and decommitted (madvise DONTNEED +
 *     PROT_NONE) when the last one leaves. Compaction may move whole pages
 *     with mremap instead of copying (cfg.remap).
 *   - NNMEM_SEGMENT_CUDA_VM: over a backend from nnmem_backend_cuda_create,
 *     `capacity` bytes of GPU virtual addresses are reserved
 *     (cuMemAddressReserve); the granule becomes max(cfg.granule, the
 *     device's allocation granularity, 2 MiB on current GPUs) and capacity
 *     a multiple of it. A granule is committed with its own physical
 *     allocation (cuMemCreate + cuMemMap + cuMemSetAccess, device
 *     read/write) and decommitted with cuMemUnmap + cuMemRelease (after
 *     synchronizing the device). With cfg.remap, compaction moves the
 *     whole granules of a block whose move distance is a multiple of the
 *     granule (allocate with align = granule to get those) by remapping
 *     their physical memory, and copies the rest with cuMemcpyDtoD.
 *     Addresses from pin are device addresses (use the backend's copy).
 *     Out of device memory: NNMEM_ERR_NOMEM, and
 *     nnmem_backend_cuda_last_error names the driver's error and the
 *     device's free/total bytes. Tested against a stand-in driver only:
 *     not yet run on a GPU.
 * reserved_bytes in the stats are the committed bytes, so the heap grows and
 * shrinks with its live blocks without ever taking a second disjoint chunk.
 *
 * Thread-safety: a heap is NOT synchronized. One thread at a time may call
 * into it (callers sharing a heap wrap it in their own lock). To compact,
 * the caller quiesces: every thread stops using raw addresses it got from
 * pin (or unpins them); blocks still pinned are not moved. Addresses from
 * pin are invalid after the block is unpinned and a compaction runs; in
 * NNMEM_DEFRAG_AUTO mode any nnmem_handle_alloc may compact. */
#ifndef NNMEM_HEAP_H
#define NNMEM_HEAP_H

#include "nnmem/backend.h"
#include "nnmem/problem.h"
#include "nnmem/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A handle: (generation << 32) | (slot + 1). 0 is never a valid handle.
 * A slot whose generation would wrap is retired, so a stale handle is
 * always detected. */
typedef struct nnmem_handle {
  uint64_t bits;
} nnmem_handle_t;

typedef enum nnmem_segment_kind {
  NNMEM_SEGMENT_BACKEND = 0, /* one backend region, accounting commits */
  NNMEM_SEGMENT_HOST_VM,     /* reserved host address space (mmap) */
  NNMEM_SEGMENT_CUDA_VM      /* reserved GPU address space (CUDA VMM) */
} nnmem_segment_kind_t;

typedef enum nnmem_defrag_mode {
  NNMEM_DEFRAG_OFF = 0, /* compaction only when nnmem_heap_compact is called */
  NNMEM_DEFRAG_AUTO     /* also on allocation failure and by the policy */
} nnmem_defrag_mode_t;

/* Heap options; zero means default. */
typedef struct nnmem_heap_config {
  uint32_t size;      /* sizeof(nnmem_heap_config_t); 0 = current */
  const char *name;   /* stats label (copied); NULL = "heap" */
  uint64_t capacity;  /* bytes of the segment (required, > 0) */
  uint64_t alignment; /* minimum block alignment (pow2); 0 = 256 */
  uint64_t granule;   /* commit granule (pow2, >= page for HOST_VM); 0 =
                         64 KiB */
  nnmem_segment_kind_t segment;
  int remap; /* HOST_VM: move page-aligned blocks by mremap; CUDA_VM: move
                whole granules by remapping physical memory */
  nnmem_defrag_mode_t defrag; /* default off */
  double util_min;            /* policy: live / committed at least; 0 = 0.70 */
  double frag_high;     /* policy: compact at fragmentation >=; 0 = 0.30 */
  double frag_low;      /* policy: re-arm at fragmentation <=; 0 = 0.10 */
  uint32_t check_every; /* policy: evaluated every N allocs; 0 = 256 */
  /* Latency signal of the AUTO policy (off unless lat_high > 0): one
   * allocation in lat_every is timed; an exponentially weighted moving
   * average (weight 1/8) of those times is compared with a baseline, the
   * lowest average seen after the first 8 samples. Latency is rising when
   * average >= lat_high x baseline; the signal then compacts (when
   * utilization >= util_min) and stays disarmed until the average falls
   * to lat_low x baseline (hysteresis). Off by default: a policy that
   * reads the clock makes a replay's compactions depend on the machine. */
  double lat_high;    /* 0 = signal off; else > 1, e.g. 2.0 */
  double lat_low;     /* re-arm at <= lat_low x baseline; 0 = 1.25 */
  uint32_t lat_every; /* time one allocation in N; 0 = 16 */
  /* The clock in ns (tests inject one); NULL = CLOCK_MONOTONIC. */
  uint64_t (*clock_ns)(void *user);
  void *clock_user;
} nnmem_heap_config_t;

NNMEM_API void nnmem_heap_config_init(nnmem_heap_config_t *cfg);

typedef struct nnmem_heap nnmem_heap_t;

/* Creates a heap on `backend` (not owned; must outlive the heap; unused for
 * HOST_VM). NNMEM_ERR_INVALID and diag for a bad config (capacity 0, bad
 * alignment or granule, remap on a BACKEND segment); NNMEM_ERR_NOMEM when
 * the segment cannot be reserved; CUDA_VM: NNMEM_ERR_UNSUPPORTED when the
 * backend is not cuda or the device lacks virtual memory management, the
 * driver's status otherwise (diag carries its text). `diag` may be NULL. */
NNMEM_API nnmem_status_t nnmem_heap_create(const nnmem_heap_config_t *cfg,
                                           nnmem_backend_t *backend,
                                           nnmem_heap_t **out,
                                           nnmem_diag_t *diag);
/* Releases the segment. NULL: no-op. */
NNMEM_API void nnmem_heap_destroy(nnmem_heap_t *h);

/* Allocates `bytes` aligned to `align` (0 = heap alignment; else a power of
 * two). In AUTO mode an allocation that finds no gap compacts and retries.
 * NNMEM_ERR_INVALID for size 0 or a bad alignment, NNMEM_ERR_NOMEM when it
 * does not fit; *out is {0} on failure. */
NNMEM_API nnmem_status_t nnmem_handle_alloc(nnmem_heap_t *h, uint64_t bytes,
                                            uint64_t align,
                                            nnmem_handle_t *out);
/* Frees a block. NNMEM_ERR_INVALID for a stale or forged handle,
 * NNMEM_ERR_STATE for a pinned block (unpin first); counted in the stats. */
NNMEM_API nnmem_status_t nnmem_handle_free(nnmem_heap_t *h, nnmem_handle_t t);
/* Pins the block (pin count + 1) and returns its address, stable until the
 * matching unpin. NNMEM_ERR_INVALID for a stale or forged handle,
 * NNMEM_ERR_OVERFLOW at 2^32 - 1 pins. */
NNMEM_API nnmem_status_t nnmem_handle_pin(nnmem_heap_t *h, nnmem_handle_t t,
                                          void **addr_out);
/* NNMEM_ERR_STATE when the block is not pinned, NNMEM_ERR_INVALID for a
 * stale or forged handle. */
NNMEM_API nnmem_status_t nnmem_handle_unpin(nnmem_heap_t *h, nnmem_handle_t t);
/* Offset of the block from the start of the segment and its size; for
 * tests and tools (the offset changes when a compaction moves it). */
NNMEM_API nnmem_status_t nnmem_handle_info(const nnmem_heap_t *h,
                                           nnmem_handle_t t,
                                           uint64_t *offset_out,
                                           uint64_t *size_out,
                                           uint32_t *pins_out);

/* What one compaction did. */
typedef struct nnmem_compact_report {
  uint32_t size;                  /* sizeof(nnmem_compact_report_t) */
  uint64_t blocks_moved;          /* live blocks whose address changed */
  uint64_t bytes_moved;           /* their bytes */
  uint64_t bytes_remapped;        /* of those, moved by remapping (mremap,
                                     CUDA: physical handles); the rest,
                                     bytes_moved - bytes_remapped, copied */
  uint64_t pinned_blocks;         /* blocks left in place because pinned */
  double frag_before, frag_after; /* 1 - largest free / free bytes */
  uint64_t largest_before, largest_after; /* largest allocatable gap */
  uint64_t free_bytes; /* capacity - allocated (unchanged by compaction) */
  double seconds;      /* wall time */
} nnmem_compact_report_t;

/* Stop-the-world compaction (see the thread-safety note). `report` may be
 * NULL. NNMEM_ERR_NOMEM when its scratch arrays or a granule commit are
 * refused, NNMEM_ERR_IO (or the backend copy's status) when a move fails
 * midway: blocks already moved keep their new addresses and the heap stays
 * consistent, but a block whose mremap failed halfway may have lost data. */
NNMEM_API nnmem_status_t nnmem_heap_compact(nnmem_heap_t *h,
                                            nnmem_compact_report_t *report);

/* Heap counters beyond the pool stats. */
typedef struct nnmem_heap_counters {
  uint32_t size;                          /* sizeof(nnmem_heap_counters_t) */
  uint64_t stale_handles;                 /* rejected stale or forged handles */
  uint64_t bad_unpins;                    /* unpin without pin */
  uint64_t pinned_frees;                  /* free of a pinned block refused */
  uint64_t compactions, compactions_auto; /* auto: by policy or failure */
  uint64_t bytes_moved, bytes_remapped, blocks_moved;
  uint64_t pinned_in_the_way;   /* pinned blocks met by compactions */
  uint64_t commits, decommits;  /* granule transitions */
  uint64_t top_peak;            /* highest end offset ever used */
  uint64_t compactions_latency; /* of compactions_auto: by the latency
                                   signal (the rest: fragmentation or a
                                   failed allocation) */
  uint64_t lat_samples;         /* timed allocations */
  uint64_t lat_avg_ns;          /* moving average now (0: no sample) */
  uint64_t lat_baseline_ns;     /* its baseline (0: still warming up) */
  uint64_t granule;             /* the commit granule in effect (CUDA_VM: at
                                   least the device's granularity) */
} nnmem_heap_counters_t;

/* Pool-style snapshot (reserved = committed bytes, misuse = every rejected
 * call) and the heap counters; either may be NULL. */
NNMEM_API nnmem_status_t nnmem_heap_stats(nnmem_heap_t *h, nnmem_stats_t *st,
                                          nnmem_heap_counters_t *hc);
/* Walks every invariant (see heap.c). NNMEM_ERR_STATE and diag on the first
 * violation. O(slots + granules). */
NNMEM_API nnmem_status_t nnmem_heap_check(const nnmem_heap_t *h,
                                          nnmem_diag_t *diag);

/* Replays a problem as a trace through a heap (events as nnmem_pool_replay:
 * frees before allocations at equal times), on an unbacked simulated
 * device. Fragmentation is sampled after every allocation. */
typedef struct nnmem_heap_replay_result {
  uint64_t operations;
  uint64_t peak_live_bytes;      /* requested bytes */
  uint64_t peak_committed_bytes; /* granules touched by live blocks */
  uint64_t peak_top;             /* highest end offset (address range used) */
  double frag_mean, frag_max;    /* over allocations */
  uint64_t compactions, bytes_moved;
  uint64_t compactions_latency; /* of compactions: by the latency signal */
  uint64_t lat_samples;         /* allocations timed for it */
  uint64_t failed_at; /* 1-based buffer index of the first allocation that
                         did not fit (0 = all fit) */
  uint64_t bytes_remapped; /* of bytes_moved, moved by remapping pages
                              (HOST_VM) or physical granules (CUDA_VM) */
} nnmem_heap_replay_result_t;

/* Optional per-allocation callback: fragmentation over time. */
typedef void (*nnmem_heap_replay_cb)(void *user, uint64_t op, uint64_t live,
                                     uint64_t committed, double frag);

NNMEM_API nnmem_status_t nnmem_heap_replay(const nnmem_problem_t *problem,
                                           const nnmem_heap_config_t *cfg,
                                           nnmem_heap_replay_cb cb, void *user,
                                           nnmem_heap_replay_result_t *out,
                                           nnmem_diag_t *diag);
/* As nnmem_heap_replay, on `backend` (not owned; NULL = the unbacked
 * simulated device, as nnmem_heap_replay): a BACKEND segment takes its
 * capacity from it at once, a CUDA_VM segment reserves GPU addresses on
 * it (a cuda backend; errors as nnmem_heap_create: NNMEM_ERR_UNSUPPORTED
 * with the reason when the driver or device lacks virtual memory
 * management). On a CUDA_VM segment with cfg->remap, a buffer of at least
 * one granule is allocated aligned to the granule, so that a compaction
 * can move it by remapping (the padding shows in peak_top). A driver error during the replay (a commit or a move
 * refused other than for lack of memory) is returned with the diag naming
 * the buffer; out of memory ends the replay with failed_at, as a result. */
NNMEM_API nnmem_status_t nnmem_heap_replay_backend(
    const nnmem_problem_t *problem, const nnmem_heap_config_t *cfg,
    nnmem_backend_t *backend, nnmem_heap_replay_cb cb, void *user,
    nnmem_heap_replay_result_t *out, nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_HEAP_H */

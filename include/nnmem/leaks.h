/* nnmem/leaks.h - leak records of the general-purpose allocator: who holds
 * the live blocks (call site, thread, age, backtrace), on demand or when
 * the allocator is destroyed.
 *
 *   nnmem_leaks_config_t lc; nnmem_leaks_config_init(&lc);
 *   lc.mode = NNMEM_LEAKS_FULL;              or NNMEM_LEAKS_SAMPLED
 *   nnmem_allocator_leaks_enable(a, &lc);
 *   void *p = NNMEM_ALLOC(a, 4096);          records file:line too
 *   char *txt; size_t n;
 *   nnmem_allocator_leaks_report(a, NNMEM_LEAKS_TEXT, &txt, &n); free(txt);
 *
 * Modes:
 *   off      no record; the allocation path pays one predictable branch;
 *   full     every live block: size, file:line (NNMEM_ALLOC), thread id,
 *            timestamp, a glibc backtrace() of up to `depth` frames;
 *   sampled  1 in `sample_bytes` bytes (a Poisson process over the bytes
 *            each thread allocates, as jemalloc's prof.lg_sample): an
 *            allocation of s bytes is recorded with probability
 *            p = 1 - exp(-s / sample_bytes) and stands for s / p bytes and
 *            1 / p blocks, so the report's byte figures are unbiased
 *            estimates of the live bytes per site.
 *
 * Environment (read by nnmem_allocator_create when the allocator config's
 * `leaks` is NULL, so an unchanged program can be switched on from the
 * shell): NNMEM_LEAKS=1 or full; NNMEM_LEAKS=sampled[:BYTES] (default
 * 524288); NNMEM_LEAKS_REPORT=PATH: the report written when the allocator
 * is destroyed (.json: JSON, .folded: folded stacks, otherwise text;
 * default nnmem-leaks.PID.txt in the working directory when NNMEM_LEAKS is
 * set). Nothing is printed to a terminal. libnnmem_malloc.so (LD_PRELOAD)
 * reads the same variables and writes the report at each process's exit
 * ("%p" in the path: the process id).
 *
 * Thread-safety: every function may be called from any thread while the
 * allocator is in use; records are kept under a mutex of their own. */
#ifndef NNMEM_LEAKS_H
#define NNMEM_LEAKS_H

#include <stddef.h>

#include "nnmem/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nnmem_allocator nnmem_allocator_t;

typedef enum nnmem_leaks_mode {
  NNMEM_LEAKS_OFF = 0,
  NNMEM_LEAKS_FULL = 1,
  NNMEM_LEAKS_SAMPLED = 2
} nnmem_leaks_mode_t;

typedef enum nnmem_leaks_format {
  NNMEM_LEAKS_TEXT = 0, /* one line per site, sorted by bytes */
  NNMEM_LEAKS_JSON =
      1, /* {"mode", "sample_bytes", "dropped", "unwinder", "sites": [...]} */
  NNMEM_LEAKS_FOLDED = 2 /* "root;...;leaf BYTES" (flamegraph.pl, speedscope) */
} nnmem_leaks_format_t;

#define NNMEM_LEAKS_MAX_DEPTH 32

typedef struct nnmem_leaks_config {
  uint32_t size;           /* sizeof(nnmem_leaks_config_t); 0 = current */
  nnmem_leaks_mode_t mode; /* default NNMEM_LEAKS_FULL */
  uint64_t sample_bytes;   /* mean bytes between samples; default 512 KiB */
  uint32_t depth;          /* backtrace frames, 0..NNMEM_LEAKS_MAX_DEPTH;
                              default 16; 0: no backtrace */
  uint64_t seed;           /* sampling random numbers; 0 = a fixed seed */
  const char *report_path; /* written at destroy; NULL: none (copied) */
  nnmem_leaks_format_t report_format;
} nnmem_leaks_config_t;

/* Totals of the live records (estimates in sampled mode). */
typedef struct nnmem_leaks_summary {
  uint32_t size; /* sizeof(nnmem_leaks_summary_t) */
  nnmem_leaks_mode_t mode;
  uint64_t records;    /* live blocks recorded */
  uint64_t bytes;      /* recorded blocks' requested bytes */
  uint64_t est_blocks; /* sum of 1/p (= records in full mode) */
  uint64_t est_bytes;  /* sum of size/p (= bytes in full mode) */
  uint64_t sites;      /* distinct call sites among the records */
} nnmem_leaks_summary_t;

NNMEM_API void nnmem_leaks_config_init(nnmem_leaks_config_t *cfg);

/* Fills `cfg` from NNMEM_LEAKS / NNMEM_LEAKS_REPORT (see above). Returns 1
 * when NNMEM_LEAKS asks for records, 0 when it is unset or "0", -1 when it
 * is malformed (cfg->mode is then off). */
NNMEM_API int nnmem_leaks_config_from_env(nnmem_leaks_config_t *cfg);

/* Starts recording (blocks allocated earlier are not recorded; freeing them
 * is fine). NNMEM_ERR_INVALID for a bad mode, depth over the maximum or
 * sample_bytes 0 in sampled mode; NNMEM_ERR_STATE when records are already
 * on (one enable per allocator). O(1). */
NNMEM_API nnmem_status_t nnmem_allocator_leaks_enable(
    nnmem_allocator_t *a, const nnmem_leaks_config_t *cfg);

/* The live records grouped by call site (file:line when given, else the
 * backtrace), sorted by bytes, largest first. *out is NUL-terminated,
 * malloc'ed, freed by the caller with free(); *len its length. Symbols are
 * resolved with dladdr (a static function of an executable linked without
 * -rdynamic shows as module+offset). NNMEM_ERR_STATE when records are off.
 * O(records log records). */
NNMEM_API nnmem_status_t nnmem_allocator_leaks_report(nnmem_allocator_t *a,
                                                      nnmem_leaks_format_t fmt,
                                                      char **out, size_t *len);

/* The same written to `path` atomically (a temporary, then a rename: on
 * any failure the old file stays whole); NNMEM_ERR_IO (or the failed
 * step's status) when it cannot be written. */
NNMEM_API nnmem_status_t nnmem_allocator_leaks_write(nnmem_allocator_t *a,
                                                     nnmem_leaks_format_t fmt,
                                                     const char *path);

NNMEM_API nnmem_status_t
nnmem_allocator_leaks_summary(nnmem_allocator_t *a, nnmem_leaks_summary_t *out);

/* nnmem_alloc that also records the call site when records are on. */
NNMEM_API void *nnmem_alloc_at(nnmem_allocator_t *a, size_t size,
                               const char *file, int line);

#define NNMEM_ALLOC(a, size) nnmem_alloc_at((a), (size), __FILE__, __LINE__)

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_LEAKS_H */

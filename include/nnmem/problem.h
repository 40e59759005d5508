/* nnmem/problem.h - the static allocation problem.
 *
 * A problem is a flat array of buffers, each with a size, an alignment and a
 * half-open lifetime [first, last) in schedule steps. Two buffers whose
 * lifetimes intersect must not overlap in [offset, offset + size). This is the
 * seam between analysis (graphs -> problems) and planning (problems -> plans);
 * MiniMalloc CSV files are problems as they are.
 *
 * Thread-safety: a problem is not synchronized; concurrent reads are safe,
 * a write must not run concurrently with anything else on the same problem. */
#ifndef NNMEM_PROBLEM_H
#define NNMEM_PROBLEM_H

#include "nnmem/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One buffer of a problem (a record; read through nnmem_problem_buffers). */
typedef struct nnmem_buffer {
  uint64_t size;  /* bytes; 0 is allowed and occupies nothing */
  uint64_t align; /* power of two >= 1 */
  uint64_t first; /* first step the buffer is live */
  uint64_t last;  /* first step it is dead again: live on [first, last) */
} nnmem_buffer_t;

typedef struct nnmem_problem nnmem_problem_t;

/* Creates an empty problem. Returns NNMEM_ERR_NOMEM on allocation failure. */
NNMEM_API nnmem_status_t nnmem_problem_create(nnmem_problem_t **out);

/* Frees the problem; NULL is a no-op. */
NNMEM_API void nnmem_problem_destroy(nnmem_problem_t *p);

/* Appends a buffer. `id` is an optional name (copied; NULL gives none).
 * `align` 0 means 1. Fails with NNMEM_ERR_INVALID when last <= first or align
 * is not a power of two, NNMEM_ERR_OVERFLOW when size rounded up to align
 * overflows. `index_out` (nullable) receives the buffer's index. */
NNMEM_API nnmem_status_t nnmem_problem_add(nnmem_problem_t *p, const char *id,
                                           uint64_t size, uint64_t align,
                                           uint64_t first, uint64_t last,
                                           size_t *index_out);

/* Number of buffers. */
NNMEM_API size_t nnmem_problem_count(const nnmem_problem_t *p);

/* The buffer array (valid until the next nnmem_problem_add). */
NNMEM_API const nnmem_buffer_t *nnmem_problem_buffers(const nnmem_problem_t *p);

/* The id of buffer `i`, or NULL when it has none. */
NNMEM_API const char *nnmem_problem_id(const nnmem_problem_t *p, size_t i);

/* Looks a buffer up by id. NNMEM_ERR_NOT_FOUND when absent. */
NNMEM_API nnmem_status_t nnmem_problem_find(const nnmem_problem_t *p,
                                            const char *id, size_t *index_out);

/* Lower bound on the height of any plan: the maximum over steps of the live
 * bytes, each buffer's size rounded up to max(its align, `align`).
 * O(n log n). */
NNMEM_API nnmem_status_t nnmem_problem_lower_bound(const nnmem_problem_t *p,
                                                   uint64_t align,
                                                   uint64_t *lb_out);

/* Sum of all buffer sizes (each rounded up to max(its align, `align`)): the
 * height of a plan without any reuse. NNMEM_ERR_OVERFLOW past 2^64. */
NNMEM_API nnmem_status_t nnmem_problem_total_bytes(const nnmem_problem_t *p,
                                                   uint64_t align,
                                                   uint64_t *total_out);

/* Invariant checker: every buffer has last > first, power-of-two align, and
 * ids are unique. Fills `diag` with the first violation. */
NNMEM_API nnmem_status_t nnmem_problem_check(const nnmem_problem_t *p,
                                             nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_PROBLEM_H */

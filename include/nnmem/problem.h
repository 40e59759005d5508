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

/* Lower bound on the height of any plan: the maximum over steps of the
 * active bytes of roots (sub-buffers lie inside their parents; gaps hold
 * nothing), each size rounded up to max(its align, `align`).
 * O(n) per byte in which the steps differ (radix sort of the events). */
NNMEM_API nnmem_status_t nnmem_problem_lower_bound(const nnmem_problem_t *p,
                                                   uint64_t align,
                                                   uint64_t *lb_out);

/* The same maximum (*bytes_out) and the first step at which it is live
 * (*step_out; 0 for an empty problem). NNMEM_ERR_OVERFLOW when the live
 * bytes pass 2^64 - 1. Either output may be NULL. */
NNMEM_API nnmem_status_t nnmem_problem_peak(const nnmem_problem_t *p,
                                            uint64_t align, uint64_t *bytes_out,
                                            uint64_t *step_out);

/* Sum of the sizes of all roots (each rounded up to max(its align,
 * `align`); sub-buffers lie inside their parents): the height of a plan
 * without any reuse. NNMEM_ERR_OVERFLOW past 2^64. */
NNMEM_API nnmem_status_t nnmem_problem_total_bytes(const nnmem_problem_t *p,
                                                   uint64_t align,
                                                   uint64_t *total_out);

/* The height of an assignment of offsets (one per buffer, in the problem's
 * order): the largest offset + size, 0 for an empty problem. Nothing else
 * is checked. NNMEM_ERR_OVERFLOW when an offset + size passes 2^64 - 1. */
NNMEM_API nnmem_status_t nnmem_problem_height(const nnmem_problem_t *p,
                                              const uint64_t *offsets,
                                              uint64_t *height_out);

/* ---- Gaps and sub-buffers ---------------------------------------------------
 *
 * A buffer's *active* time is its lifetime [first, last) minus its gaps:
 * during a gap it holds nothing anyone needs, so another buffer may use its
 * bytes. Two buffers conflict only when their active times intersect.
 *
 *   step:    0   1   2   3   4   5   6
 *   buffer   [=======)       [=======)      first 0, last 6, gap [2,4)
 *
 * A *sub-buffer* (child) lies inside another buffer (its parent) at a fixed
 * relative offset: offset(child) = offset(parent) + rel_offset. Planners
 * place only roots (buffers without a parent) and derive every child's
 * offset; the lower bound counts roots only. Rules (nnmem_problem_check):
 *   - rel_offset + size(child) <= size(parent);
 *   - align(child) <= align(parent) and rel_offset % align(child) == 0, so
 *     an aligned parent gives an aligned child (the planner's minimum
 *     alignment applies to roots; a child's place is fixed by its parent);
 *   - the parent is active whenever the child is (a parent that dies first
 *     or has a gap while the child is active is an error: nnmem never
 *     stretches a lifetime behind the caller's back);
 *   - no cycles; a child of a child is fine.
 * A child and its ancestors share bytes by design; two children of one
 * parent must not overlap while both are active. */

/* One interval of steps, half-open [first, last). */
typedef struct nnmem_interval {
  uint64_t first;
  uint64_t last;
} nnmem_interval_t;

/* Adds the gap [from, to) to buffer `i` (gaps are kept sorted by `from`).
 * NNMEM_ERR_INVALID when i is out of range or to <= from. Whether the gap
 * lies inside the lifetime and overlaps no other gap is checked by
 * nnmem_problem_check (so a reader can name the line). */
NNMEM_API nnmem_status_t nnmem_problem_add_gap(nnmem_problem_t *p, size_t i,
                                               uint64_t from, uint64_t to);

/* The gaps of buffer `i`, sorted by first step: returns their count and
 * points *gaps_out (nullable) at them (valid until the next change). */
NNMEM_API size_t nnmem_problem_gaps(const nnmem_problem_t *p, size_t i,
                                    const nnmem_interval_t **gaps_out);

/* Makes buffer `child` a sub-buffer of `parent` at `rel_offset` bytes from
 * the parent's start (replacing an earlier relation). NNMEM_ERR_INVALID
 * when an index is out of range or child == parent; the rules above are
 * checked by nnmem_problem_check. */
NNMEM_API nnmem_status_t nnmem_problem_set_parent(nnmem_problem_t *p,
                                                  size_t child, size_t parent,
                                                  uint64_t rel_offset);

/* The parent of buffer `i` and its relative offset (both nullable).
 * NNMEM_ERR_NOT_FOUND when `i` is a root (no parent). */
NNMEM_API nnmem_status_t nnmem_problem_parent(const nnmem_problem_t *p,
                                              size_t i, size_t *parent_out,
                                              uint64_t *rel_offset_out);

/* Number of buffers with gaps and of sub-buffers (children). */
NNMEM_API size_t nnmem_problem_gapped_count(const nnmem_problem_t *p);
NNMEM_API size_t nnmem_problem_child_count(const nnmem_problem_t *p);

/* Invariant checker: every buffer has last > first, power-of-two align, and
 * ids are unique; gaps lie inside the lifetime, do not overlap and leave
 * some active time; sub-buffers follow the rules above. Fills `diag` with
 * the first violation (naming the buffer). */
NNMEM_API nnmem_status_t nnmem_problem_check(const nnmem_problem_t *p,
                                             nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_PROBLEM_H */

/* nnmem/io.h - file formats: MiniMalloc CSV problems and plans, the JSON
 * graph format (docs/graph-format.md), plan JSON and memory_profile.json.
 *
 * Readers take a path or a memory buffer (with a display name used in
 * messages). Errors name the file and line (CSV) or the node / tensor (JSON)
 * in `diag`. Writers build the whole output in memory, write it to a
 * temporary file next to the target and rename it into place, so a failure
 * never leaves a partial file.
 *
 * Thread-safety: each call is independent. */
#ifndef NNMEM_IO_H
#define NNMEM_IO_H

#include "nnmem/graph.h"
#include "nnmem/liveness.h"
#include "nnmem/plan.h"
#include "nnmem/problem.h"
#include "nnmem/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- MiniMalloc CSV -------------------------------------------------------
 * Header `id,lower,upper,size` (any order) with optional `alignment` and
 * `offset` columns and any extra columns (kept verbatim). Lifetimes are
 * half-open [lower, upper). The legacy header `buffer,start,end,size` has an
 * inclusive `end` (upper = end + 1). */
typedef struct nnmem_csv nnmem_csv_t;

NNMEM_API nnmem_status_t nnmem_csv_parse(const char *data, size_t len,
                                         const char *display_name,
                                         nnmem_csv_t **out, nnmem_diag_t *diag);
NNMEM_API nnmem_status_t nnmem_csv_read_file(const char *path,
                                             nnmem_csv_t **out,
                                             nnmem_diag_t *diag);
NNMEM_API void nnmem_csv_destroy(nnmem_csv_t *csv);

/* The problem the file describes (owned by the csv object). */
NNMEM_API const nnmem_problem_t *nnmem_csv_problem(const nnmem_csv_t *csv);
/* The `offset` column, one per buffer; NULL when the file has none. */
NNMEM_API const uint64_t *nnmem_csv_offsets(const nnmem_csv_t *csv);

/* Writes the file's columns plus `offset` (replacing an existing one) with
 * the given offsets, atomically. */
NNMEM_API nnmem_status_t nnmem_csv_write_solution(const nnmem_csv_t *csv,
                                                  const uint64_t *offsets,
                                                  const char *path,
                                                  nnmem_diag_t *diag);

/* The text nnmem_csv_write_solution writes, as a new malloc'd
 * NUL-terminated string (*out, caller frees) of *len_out bytes (len_out may
 * be NULL), for callers that stage several outputs (all or none). */
NNMEM_API nnmem_status_t nnmem_csv_format_solution(const nnmem_csv_t *csv,
                                                   const uint64_t *offsets,
                                                   char **out, size_t *len_out,
                                                   nnmem_diag_t *diag);

/* Writes any problem and offsets in MiniMalloc form
 * (`id,lower,upper,size,alignment,offset`), atomically. */
NNMEM_API nnmem_status_t nnmem_problem_write_csv(const nnmem_problem_t *p,
                                                 const uint64_t *offsets,
                                                 const char *path,
                                                 nnmem_diag_t *diag);

/* The text nnmem_problem_write_csv writes, as a new malloc'd string. */
NNMEM_API nnmem_status_t nnmem_problem_format_csv(const nnmem_problem_t *p,
                                                  const uint64_t *offsets,
                                                  char **out, size_t *len_out,
                                                  nnmem_diag_t *diag);

/* ---- JSON graph ---------------------------------------------------------- */
NNMEM_API nnmem_status_t nnmem_graph_parse_json(const char *data, size_t len,
                                                const char *display_name,
                                                nnmem_graph_t **out,
                                                nnmem_diag_t *diag);
NNMEM_API nnmem_status_t nnmem_graph_read_json_file(const char *path,
                                                    nnmem_graph_t **out,
                                                    nnmem_diag_t *diag);

/* ---- Plan JSON and profile ------------------------------------------------
 * Plan JSON of a graph: {"model", "strategy", "alignment", "arena_height",
 * "weight_bytes", "order": [op names in step order], "concat_kept_out":
 * [op names] (only when the liveness kept ops out of concat-into-output),
 * "buffers":
 * [{"id","offset","size","first","last","kind"}], "tensors":
 * [{"name","kind","region":"arena"|"weights","buffer","offset",
 * "size","first","last"}]}. */
NNMEM_API nnmem_status_t nnmem_plan_write_json(
    const nnmem_graph_t *g, const nnmem_liveness_t *l, const nnmem_plan_t *plan,
    uint64_t alignment, const char *path, nnmem_diag_t *diag);

/* Plan JSON of a bare problem (e.g. a MiniMalloc CSV): {"strategy",
 * "alignment", "arena_height", "buffers": [{"id","offset","size","first",
 * "last"}]} (a buffer without an id gets its index as text), atomically.
 * Every integer is exact. NNMEM_ERR_INVALID when the plan is not of `p`. */
NNMEM_API nnmem_status_t nnmem_problem_write_plan_json(const nnmem_problem_t *p,
                                                       const nnmem_plan_t *plan,
                                                       uint64_t alignment,
                                                       const char *path,
                                                       nnmem_diag_t *diag);
/* The text nnmem_problem_write_plan_json writes, as a new malloc'd string
 * (*out, caller frees; *len_out bytes, may be NULL). */
NNMEM_API nnmem_status_t nnmem_problem_format_plan_json(
    const nnmem_problem_t *p, const nnmem_plan_t *plan, uint64_t alignment,
    char **out, size_t *len_out, nnmem_diag_t *diag);

/* Reads a plan JSON (either form above) back: its buffers as a new problem
 * (ids, sizes, lifetimes [first, last); alignment 1) and their offsets, in
 * file order (*offsets_out: new array, caller frees; *problem_out: caller
 * destroys). Integers are read exactly up to 2^64 - 1. Errors name the file
 * and the buffer (a missing key, a negative or fractional number, a
 * duplicate id) in diag: NNMEM_ERR_PARSE, NNMEM_ERR_DUPLICATE. The text
 * must be strict JSON in UTF-8 (no NUL, no trailing text, no key twice in a
 * buffer); strings may not hold \u0000 nor start with \u0001. */
NNMEM_API nnmem_status_t nnmem_plan_read_json(const char *data, size_t len,
                                              const char *display_name,
                                              nnmem_problem_t **problem_out,
                                              uint64_t **offsets_out,
                                              nnmem_diag_t *diag);
NNMEM_API nnmem_status_t
nnmem_plan_read_json_file(const char *path, nnmem_problem_t **problem_out,
                          uint64_t **offsets_out, nnmem_diag_t *diag);

/* Reads the "order" of a graph's plan JSON (the op names in step order)
 * as op ids of `g` into *order_out (nnmem_graph_op_count entries, new
 * array, caller frees), or NULL when the plan has no "order" (the file
 * order: plans written before it existed). NNMEM_ERR_PARSE for a list of
 * the wrong length or a non-string element, NNMEM_ERR_NOT_FOUND for a name
 * the graph lacks, NNMEM_ERR_DUPLICATE for an op listed twice; diag names
 * the file and the element. Whether the order is topological is checked by
 * nnmem_liveness_analyze. */
NNMEM_API nnmem_status_t nnmem_plan_read_json_order(
    const char *data, size_t len, const char *display_name,
    const nnmem_graph_t *g, uint32_t **order_out, nnmem_diag_t *diag);

/* Reads the "concat_kept_out" of a graph's plan JSON (the Concat / Split
 * ops its liveness kept out of concat-into-output, written when
 * nnmem_graph_order_memory chose so) into *kept_out (one flag per op id,
 * new array, caller frees; pass it as nnmem_liveness_config_t.
 * no_concat_ops), or NULL when the plan has none. Errors as
 * nnmem_plan_read_json_order (each op at most once). */
NNMEM_API nnmem_status_t nnmem_plan_read_json_concat_kept_out(
    const char *data, size_t len, const char *display_name,
    const nnmem_graph_t *g, uint8_t **kept_out, nnmem_diag_t *diag);

/* ---- multi-plan documents ---------------------------------------------------
 * What `nnmem plan a.onnx b.onnx --shared-arena --out x.json` and `nnmem plan
 * m.onnx --dim NAME=LO..HI --out x.json` write ("format":
 * "nnmem-shared-arena", version 1): "mode" ("shared-arena" or
 * "shape-buckets"), "arena_bytes", "dim" (shape buckets: the bucketed dim's
 * name) and "plans", each {label, input, value (buckets), group, base, plan}
 * where "plan" is a plan JSON as nnmem_plan_read_json reads it.
 * The reader checks the document's own structure and every plan's buffers;
 * whether each plan solves its model's problem, and whether the arena holds
 * the plans, is for the caller (nnmem verify) with the models in hand. */
typedef struct nnmem_multi_plan nnmem_multi_plan_t;

typedef struct nnmem_multi_plan_entry {
  const char *label;  /* "models/a.onnx" or "batch=8" */
  const char *input;  /* the model as given to nnmem plan */
  int has_value;      /* shape buckets: 1 */
  int64_t value;      /* the bucket's value of the dim (>= 1) */
  uint32_t group;     /* 0: runs alone; else its --concurrent group */
  uint64_t base;      /* where the plan's offsets start in the arena */
  uint64_t alignment; /* the plan's "alignment" (1 when absent) */
  const nnmem_problem_t *problem; /* the plan's buffers (alignment 1) */
  const uint64_t *offsets;        /* their offsets, relative to base */
} nnmem_multi_plan_entry_t;

/* Reads a multi-plan document (integers exact up to 2^64 - 1). Errors name
 * the file, the plan (plans[i] and its label) and the key or buffer:
 * NNMEM_ERR_PARSE (structure, a wrong format tag or version, a bucket
 * document without "dim" or a plan without "value"), NNMEM_ERR_DUPLICATE.
 * *out: destroy with nnmem_multi_plan_destroy. */
NNMEM_API nnmem_status_t nnmem_multi_plan_read_json(const char *data,
                                                    size_t len,
                                                    const char *display_name,
                                                    nnmem_multi_plan_t **out,
                                                    nnmem_diag_t *diag);
NNMEM_API void nnmem_multi_plan_destroy(nnmem_multi_plan_t *m);
/* 1 for a shape-bucket document; its dim name (NULL for shared arenas). */
NNMEM_API int nnmem_multi_plan_is_buckets(const nnmem_multi_plan_t *m);
NNMEM_API const char *nnmem_multi_plan_dim(const nnmem_multi_plan_t *m);
NNMEM_API uint64_t nnmem_multi_plan_arena_bytes(const nnmem_multi_plan_t *m);
NNMEM_API size_t nnmem_multi_plan_count(const nnmem_multi_plan_t *m);
/* Plan i (pointers valid until destroy); NNMEM_ERR_INVALID past the end. */
NNMEM_API nnmem_status_t nnmem_multi_plan_entry(
    const nnmem_multi_plan_t *m, size_t i, nnmem_multi_plan_entry_t *out);
/* Plan i's "order" and "concat_kept_out" against its graph, as
 * nnmem_plan_read_json_order / _concat_kept_out (NULL when absent). */
NNMEM_API nnmem_status_t nnmem_multi_plan_order(const nnmem_multi_plan_t *m,
                                                size_t i,
                                                const nnmem_graph_t *g,
                                                uint32_t **order_out,
                                                nnmem_diag_t *diag);
NNMEM_API nnmem_status_t nnmem_multi_plan_concat_kept_out(
    const nnmem_multi_plan_t *m, size_t i, const nnmem_graph_t *g,
    uint8_t **kept_out, nnmem_diag_t *diag);

/* The text nnmem_plan_write_json writes, as a new malloc'd string. */
NNMEM_API nnmem_status_t nnmem_plan_format_json(
    const nnmem_graph_t *g, const nnmem_liveness_t *l, const nnmem_plan_t *plan,
    uint64_t alignment, char **out, size_t *len_out, nnmem_diag_t *diag);

/* Formats the profile as a JSON object into a new malloc'd string
 * (caller frees). `model` may be NULL. */
NNMEM_API nnmem_status_t nnmem_profile_format_json(const nnmem_profile_t *prof,
                                                   const char *model,
                                                   char **out);
/* Writes nnmem_profile_format_json's text to `path` atomically. */
NNMEM_API nnmem_status_t nnmem_profile_write_json(const nnmem_profile_t *prof,
                                                  const char *model,
                                                  const char *path,
                                                  nnmem_diag_t *diag);

/* The default limit on an input file: 2 GiB. No single-file ONNX model is
 * larger (protobuf messages are limited to 2 GiB; bigger models keep their
 * weights in external data files, which nnmem never reads), and a
 * MiniMalloc CSV of 2 GiB holds some 50 million buffers. Reading stops
 * there instead of at the end of memory (/dev/zero, an endless pipe). */
#define NNMEM_INPUT_MAX_DEFAULT ((uint64_t)2 << 30)

/* Reads a whole file into a new NUL-terminated malloc'd buffer (*data_out,
 * caller frees; *len_out bytes without the NUL). `path` "-" reads standard
 * input. Inputs over `max_bytes` (0 = NNMEM_INPUT_MAX_DEFAULT) fail with
 * NNMEM_ERR_UNSUPPORTED; a regular file is refused by its size before any
 * byte is read, a pipe or device after max_bytes + 1 bytes. */
NNMEM_API nnmem_status_t nnmem_file_read_limited(const char *path,
                                                 uint64_t max_bytes,
                                                 char **data_out,
                                                 size_t *len_out,
                                                 nnmem_diag_t *diag);
/* nnmem_file_read_limited with the default limit. */
NNMEM_API nnmem_status_t nnmem_file_read(const char *path, char **data_out,
                                         size_t *len_out, nnmem_diag_t *diag);
/* Writes `len` bytes to `path` through a temporary file and rename. */
NNMEM_API nnmem_status_t nnmem_file_write_atomic(const char *path,
                                                 const void *data, size_t len,
                                                 nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_IO_H */

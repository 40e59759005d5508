/* json_exact.h - cJSON with numbers kept exact (plan_json_read.c, steps 1
 * and 2): every number becomes a string "\u0001<digits>", so 64-bit
 * integers read back exactly. For readers of nnmem's own JSON documents
 * (plans, memory profiles). Not installed. */
#ifndef NNMEM_JSON_EXACT_H
#define NNMEM_JSON_EXACT_H

#include <cjson/cJSON.h>

#include "common/util.h"
#include "nnmem/graph.h"
#include "nnmem/problem.h"

/* Parses data[0, len) (nothing but whitespace after the document); errors
 * name `name` with line:column where known. *out: cJSON_Delete it. */
nnmem_status_t nnmem__json_exact_parse(const char *name, const char *data,
                                       size_t len, cJSON **out,
                                       nnmem_diag_t *diag);
/* A tagged number as a whole number in [0, 2^64 - 1] / any double; -1
 * when j is not one. */
int nnmem__json_exact_u64(const cJSON *j, uint64_t *v);
int nnmem__json_exact_double(const cJSON *j, double *v);
/* Member `key` of obj (NULL when absent); *twice = 1 when given twice. */
const cJSON *nnmem__json_member(const cJSON *obj, const char *key, int *twice);

/* A plan JSON object `doc` already parsed by nnmem__json_exact_parse (a
 * member of a larger document): its buffers, "order" and "concat_kept_out"
 * as nnmem_plan_read_json, _order and _concat_kept_out read them; errors
 * name `name`. */
nnmem_status_t nnmem__plan_read_doc(const char *name, const cJSON *doc,
                                    nnmem_problem_t **problem_out,
                                    uint64_t **offsets_out,
                                    nnmem_diag_t *diag);
nnmem_status_t nnmem__plan_read_doc_order(const char *name, const cJSON *doc,
                                          const nnmem_graph_t *g,
                                          uint32_t **order_out,
                                          nnmem_diag_t *diag);
nnmem_status_t nnmem__plan_read_doc_kept_out(const char *name,
                                             const cJSON *doc,
                                             const nnmem_graph_t *g,
                                             uint8_t **kept_out,
                                             nnmem_diag_t *diag);

#endif /* NNMEM_JSON_EXACT_H */

/* json_exact.h - cJSON with numbers kept exact (plan_json_read.c, steps 1
 * and 2): every number becomes a string "\u0001<digits>", so 64-bit
 * integers read back exactly. For readers of nnmem's own JSON documents
 * (plans, memory profiles). Not installed. */
#ifndef NNMEM_JSON_EXACT_H
#define NNMEM_JSON_EXACT_H

#include <cjson/cJSON.h>

#include "common/util.h"

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

#endif /* NNMEM_JSON_EXACT_H */

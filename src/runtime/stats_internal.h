/* stats_internal.h - one stats record as a JSON object written into an open
 * writer (stats.c), for documents that embed it (the profiler's "pools").
 * Not installed. */
#ifndef NNMEM_STATS_INTERNAL_H
#define NNMEM_STATS_INTERNAL_H

#include "common/json_write.h"
#include "nnmem/stats.h"

void nnmem__stats_json_object(nnmem__jw_t *w, const nnmem_stats_t *s);

#endif /* NNMEM_STATS_INTERNAL_H */

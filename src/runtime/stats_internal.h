/* stats_internal.h - pieces of the stats renderings (stats.c) that other
 * writers embed through the one JSON writer: one domain record
 * (nnmem_domain_stats_format_json and `nnmem replay --tenants --json` print
 * the same keys) and one pool stats record (the profiler's "pools"). Not
 * installed. */
#ifndef NNMEM_STATS_INTERNAL_H
#define NNMEM_STATS_INTERNAL_H

#include "common/json_write.h"
#include "nnmem/domain.h"
#include "nnmem/stats.h"

/* Writes `s` as one JSON object (the caller has opened an array or a
 * key). */
void nnmem__domain_stats_json(nnmem__jw_t *w, const nnmem_domain_stats_t *s);

/* Writes `s` as one JSON object, likewise. */
void nnmem__stats_json_object(nnmem__jw_t *w, const nnmem_stats_t *s);

#endif /* NNMEM_STATS_INTERNAL_H */

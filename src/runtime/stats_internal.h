/* stats_internal.h - pieces of the stats renderings (stats.c) that other
 * writers embed: one domain record as a JSON object through the one JSON
 * writer (nnmem_domain_stats_format_json and `nnmem replay --tenants
 * --json` print the same keys). Not installed. */
#ifndef NNMEM_STATS_INTERNAL_H
#define NNMEM_STATS_INTERNAL_H

#include "common/json_write.h"
#include "nnmem/domain.h"

/* Writes `s` as one JSON object (the caller has opened an array or a
 * key). */
void nnmem__domain_stats_json(nnmem__jw_t *w, const nnmem_domain_stats_t *s);

#endif /* NNMEM_STATS_INTERNAL_H */

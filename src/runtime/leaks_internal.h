/* leaks_internal.h - the allocator's hooks into the leak records
 * (internal, never installed). The allocator holds a nnmem__leaks_t
 * pointer that is NULL while records are off: its hot path tests that one
 * pointer and nothing else. */
#ifndef NNMEM_LEAKS_INTERNAL_H
#define NNMEM_LEAKS_INTERNAL_H

#include <stddef.h>

#include "nnmem/leaks.h"

typedef struct nnmem__leaks nnmem__leaks_t;

/* Resolved config (env already applied); NULL *out with NNMEM_OK when the
 * mode is off. */
nnmem_status_t nnmem__leaks_create(const nnmem_leaks_config_t *cfg,
                                   nnmem__leaks_t **out);
/* Writes the configured report (if any), then frees every record. */
void nnmem__leaks_destroy(nnmem__leaks_t *lk);
/* A block was handed out: record it (full) or maybe (sampled). `file` may
 * be NULL. Never fails the allocation: a record that cannot be stored is
 * counted as dropped. */
void nnmem__leaks_on_alloc(nnmem__leaks_t *lk, void *ptr, size_t size,
                           const char *file, int line);
/* A block is about to be freed: forget its record, if any. Must run before
 * the block returns to the allocator (its address may be reused at once). */
void nnmem__leaks_on_free(nnmem__leaks_t *lk, void *ptr);
nnmem_status_t nnmem__leaks_report(nnmem__leaks_t *lk, nnmem_leaks_format_t fmt,
                                   char **out, size_t *len);
void nnmem__leaks_summary(nnmem__leaks_t *lk, nnmem_leaks_summary_t *out);

#endif /* NNMEM_LEAKS_INTERNAL_H */

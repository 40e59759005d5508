/* addrmap.h - internal open-addressing hash map from an address (nonzero
 * uint64) to a small record; used by the pools (live blocks), the sim
 * backend (live regions) and the allocator (large blocks). Not installed. */
#ifndef NNMEM_ADDRMAP_H
#define NNMEM_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "nnmem/status.h"

typedef struct nnmem__addrmap_entry {
  uint64_t key; /* 0 = empty slot */
  uint64_t a;   /* caller data */
  uint64_t b;
  void *p;
} nnmem__addrmap_entry_t;

typedef struct nnmem__addrmap {
  nnmem__addrmap_entry_t *slots;
  size_t cap; /* power of two or 0 */
  size_t count;
} nnmem__addrmap_t;

void nnmem__addrmap_init(nnmem__addrmap_t *m);
void nnmem__addrmap_free(nnmem__addrmap_t *m);
/* Makes room for `extra` more entries without failing later. */
nnmem_status_t nnmem__addrmap_reserve(nnmem__addrmap_t *m, size_t extra);
/* Inserts or replaces; NNMEM_ERR_NOMEM when growing fails. */
nnmem_status_t nnmem__addrmap_put(nnmem__addrmap_t *m,
                                  const nnmem__addrmap_entry_t *e);
/* Pointer to the entry or NULL (valid until the next put/remove). */
nnmem__addrmap_entry_t *nnmem__addrmap_get(const nnmem__addrmap_t *m,
                                           uint64_t key);
/* Removes `key`; 1 when it was present (entry copied to *out if non-NULL). */
int nnmem__addrmap_remove(nnmem__addrmap_t *m, uint64_t key,
                          nnmem__addrmap_entry_t *out);

/* Removes the entry `e` got from nnmem__addrmap_get (no second lookup). */
void nnmem__addrmap_remove_entry(nnmem__addrmap_t *m,
                                 nnmem__addrmap_entry_t *e);

#endif /* NNMEM_ADDRMAP_H */

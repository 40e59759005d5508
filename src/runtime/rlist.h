/* rlist.h - block records shared by the TLSF and ordered-tree (best-fit,
 * first-fit) pools: out-of-band descriptions of address ranges inside the
 * chunks a pool took from its backend. Not installed. */
#ifndef NNMEM_RLIST_H
#define NNMEM_RLIST_H

#include <stdint.h>

typedef struct nnmem__rblock {
  uint64_t addr, size;
  struct nnmem__rblock *prev_phys, *next_phys; /* NULL at chunk edges */
  struct nnmem__rblock *fprev, *fnext;         /* TLSF free list */
  struct nnmem__rblock *left, *right;          /* treap children */
  uint64_t prio, max_size;                     /* treap heap key, subtree max */
  struct nnmem__rblock *cprev, *cnext; /* chunk list (first blocks only) */
  uint64_t chunk_len;                  /* first blocks only */
  int is_free;
} nnmem__rblock_t;

/* TLSF index (tlsf.c). */
typedef struct nnmem__tlsf_index {
  unsigned granule_log2;
  uint64_t fl_bitmap;
  uint32_t sl_bitmap[64];
  nnmem__rblock_t *heads[64][16];
} nnmem__tlsf_index_t;

void nnmem__tlsf_insert(nnmem__tlsf_index_t *t, nnmem__rblock_t *b);
void nnmem__tlsf_remove(nnmem__tlsf_index_t *t, nnmem__rblock_t *b);
nnmem__rblock_t *nnmem__tlsf_find(const nnmem__tlsf_index_t *t, uint64_t size);
uint64_t nnmem__tlsf_largest(const nnmem__tlsf_index_t *t);
/* 0 when consistent; else fills msg. Counts free blocks into *n. */
int nnmem__tlsf_check(const nnmem__tlsf_index_t *t, uint64_t *n, char *msg,
                      size_t cap);

/* Treap index (fit_tree.c); by_size: key (size, addr), else key addr. */
typedef struct nnmem__fit_tree {
  nnmem__rblock_t *root;
  int by_size;
  uint64_t rng;
} nnmem__fit_tree_t;

void nnmem__fit_insert(nnmem__fit_tree_t *t, nnmem__rblock_t *b);
void nnmem__fit_remove(nnmem__fit_tree_t *t, nnmem__rblock_t *b);
/* Best fit (by_size) or first fit (by address) block of >= size. */
nnmem__rblock_t *nnmem__fit_find(const nnmem__fit_tree_t *t, uint64_t size);
uint64_t nnmem__fit_largest(const nnmem__fit_tree_t *t);
int nnmem__fit_check(const nnmem__fit_tree_t *t, uint64_t *n, char *msg,
                     size_t cap);

#endif /* NNMEM_RLIST_H */

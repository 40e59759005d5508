/* front.h - between the malloc front (front.c) and its recorder
 * (record.c) inside libnnmem_malloc.so. Not installed. */
#ifndef NNMEM_MALLOC_FRONT_H
#define NNMEM_MALLOC_FRONT_H

#include <stddef.h>

/* 1 while this process records (NNMEM_RECORD set at start); written once
 * before the allocator is published, cleared in a forked child. */
extern int nnmem__recording;

void nnmem__record_init(void);
void nnmem__record_alloc(void *p, size_t n);
void nnmem__record_free(void *p);
/* The live block at p now counts n bytes (a growth served larger). */
void nnmem__record_resize(void *p, size_t n);
/* 0: before fork (lock), 1: parent (unlock), 2: child (re-init, stop). */
void nnmem__record_fork(int phase);

#endif /* NNMEM_MALLOC_FRONT_H */

/* front.h - between the malloc front (front.c) and its recorder
 * (record.c) inside libnnmem_malloc.so. Not installed. */
#ifndef NNMEM_MALLOC_FRONT_H
#define NNMEM_MALLOC_FRONT_H

#include <stddef.h>

/* 1 while this process records (NNMEM_RECORD set at start); written once
 * before the allocator is published, cleared in a forked child. */
extern int nnmem__recording;

/* 1 while recording or serving: the fast paths of malloc and free step
 * aside (front.c). */
extern int nnmem__divert;

/* serve.c: 1 while this process serves from a plan (NNMEM_SERVE). */
extern int nnmem__serving;
typedef struct nnmem_allocator nnmem_allocator_t;
void nnmem__serve_init(nnmem_allocator_t *a);
/* A block of n bytes aligned to align (>= 16): from the plan when it has
 * the request, else from the pools; NULL when out of memory. */
void *nnmem__serve_alloc(size_t n, size_t align);
/* 1: p was a planned block, freed; -1: p lies in the plan but is no live
 * block (misuse, counted); 0: not the plan's (the allocator's). */
int nnmem__serve_free(void *p);
/* The bytes of the planned block p, 0 when p is not one. */
size_t nnmem__serve_usable(const void *p);
/* realloc of a planned block (*bad = 1 and NULL when p is not one). */
void *nnmem__serve_realloc(void *p, size_t n, int *bad);
/* nnmem_record_step() while serving a plan recorded with markers. */
void nnmem__serve_step(void);
/* As nnmem__record_fork. */
void nnmem__serve_fork(int phase);

/* One line on stderr, written whole (no stdio: no allocation). */
void nnmem__say(const char *s);
/* An absolute copy of path p in out (a program may chdir later), with room
 * for a 32-byte suffix: 1; 0 when it is too long; -1 without a working
 * folder. */
int nnmem__abs_path(const char *p, char *out, size_t cap);

void nnmem__record_init(void);
void nnmem__record_alloc(void *p, size_t n);
void nnmem__record_free(void *p);
/* The live block at p now counts n bytes (a growth served larger). */
void nnmem__record_resize(void *p, size_t n);
/* 0: before fork (lock), 1: parent (unlock), 2: child (re-init, stop). */
void nnmem__record_fork(int phase);

#endif /* NNMEM_MALLOC_FRONT_H */

/* plan_search.h - the search tables of bench/plan (plan_search.c). */
#ifndef NNMEM_BENCH_PLAN_SEARCH_H
#define NNMEM_BENCH_PLAN_SEARCH_H

#include "nnmem/nnmem.h"

/* A zero-slack problem: [0, capacity) x [0, 1000) cut recursively into n
 * buffers (random cuts along address or time, xorshift seeded by `seed`),
 * so a packing of height exactly `capacity` exists. */
nnmem_status_t zeroslack_problem(uint64_t seed, size_t n, uint64_t capacity,
                                 nnmem_problem_t **out);
/* The zero-slack table: seeds 1..count, n buffers each. */
void bench_zeroslack(int count, size_t n, int *failures);
/* All three search tables for the data folder `dir`. */
void bench_search(const char *dir, int *failures);

#endif

/* cycles.h - a cheap cycle counter calibrated to nanoseconds, for sampled
 * latency (pool.c, allocator.c). Internal, not installed.
 *
 * x86-64: rdtsc (invariant TSC on every CPU of the last decade; not
 * serializing, so a sample may be off by the few instructions the CPU
 * reorders around it: fine for a log2 histogram). Elsewhere: CLOCK_MONOTONIC
 * in ns (nnmem__cycles_per_ns() is then 1).
 * Calibration (cycles.c): once per process, the counter against
 * CLOCK_MONOTONIC over about 2 ms of spinning.
 * Thread-safety: every function may be called from any thread. */
#ifndef NNMEM_RUNTIME_CYCLES_H
#define NNMEM_RUNTIME_CYCLES_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define NNMEM__CYCLES_TSC 1
#else
#define NNMEM__CYCLES_TSC 0
#endif

static inline uint64_t nnmem__mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t nnmem__cycles(void) {
#if NNMEM__CYCLES_TSC
  return __rdtsc();
#else
  return nnmem__mono_ns();
#endif
}

/* Nanoseconds per counter tick (calibrated on the first call). */
double nnmem__ns_per_cycle(void);

/* `cycles` ticks in whole ns (rounded to nearest). */
static inline uint64_t nnmem__cycles_to_ns(uint64_t cycles) {
  return (uint64_t)((double)cycles * nnmem__ns_per_cycle() + 0.5);
}

#endif /* NNMEM_RUNTIME_CYCLES_H */

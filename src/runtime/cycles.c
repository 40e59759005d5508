/* cycles.c - calibration of the cycle counter (cycles.h).
 *
 * Steps: 1. read CLOCK_MONOTONIC and the counter; 2. spin until 2 ms of
 * CLOCK_MONOTONIC have passed; 3. read both again; ns per tick = elapsed ns
 * / elapsed ticks. Done once per process (pthread_once); a counter that did
 * not advance (or no TSC) gives 1.0.
 * Cost: about 2 ms, once. Thread-safety: pthread_once. */
#include <pthread.h>

#include "runtime/cycles.h"

static double ns_per_tick = 1.0;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void calibrate(void) {
#if NNMEM__CYCLES_TSC
  uint64_t n0 = nnmem__mono_ns(), c0 = nnmem__cycles(), n1, c1;
  do {
    n1 = nnmem__mono_ns();
  } while (n1 - n0 < 2000000);
  c1 = nnmem__cycles();
  if (c1 > c0) ns_per_tick = (double)(n1 - n0) / (double)(c1 - c0);
#endif
}

double nnmem__ns_per_cycle(void) {
  pthread_once(&once, calibrate);
  return ns_per_tick;
}

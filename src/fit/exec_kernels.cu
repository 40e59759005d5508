/* exec_kernels.cu - the GPU executor's kernels (src/fit/exec_cuda.c). Built
 * by nvcc into a fatbin (machine code for sm_90, PTX for later GPUs) that
 * the library embeds and loads with cuModuleLoadData; the stand-in driver
 * (tests/fakes/fake_cuda.c) runs C versions of the same three kernels.
 *
 * A segment is a byte range in device memory that must hold (check) or
 * receive (write) a pattern: byte k of the segment is byte
 * ((phase + k) & 7) of the 64-bit pattern, little-endian. Where the
 * address and the phase agree modulo 8 the middle of the segment is done
 * in 64-bit words, the ends byte by byte.
 *
 *   nnmem_exec_check(segs, n, err, step): every byte of every segment;
 *       the first mismatch found (atomicCAS on err->flag) records the step,
 *       tier, buffer, the byte's offset in the buffer, expected and found.
 *   nnmem_exec_write(segs, n, err, step, spin): fills every segment, then
 *       thread 0 of block 0 spins `spin` clock64 cycles (the op's time).
 *   nnmem_exec_spin(cycles): one thread spins (clock calibration).
 * A kernel whose err->flag is already set returns at once, so after a
 * mismatch the rest of the run does no work. Layouts must match
 * exec_cuda.c's exec_seg_t / exec_err_t (static asserts there). */
#include <stdint.h>

struct exec_seg {
  unsigned long long addr, len, pat, phase; /* phase: offset in the root */
  unsigned long long buf_off; /* offset of addr in the buffer named */
  unsigned int tier, buffer;
};

struct exec_err {
  unsigned int flag, step, tier, buffer;
  unsigned long long offset;
  unsigned int expected, found;
};

__device__ static unsigned char pat_byte(unsigned long long pat,
                                         unsigned long long pos) {
  return (unsigned char)(pat >> (8 * (pos & 7)));
}

__device__ static void report(exec_err *err, const exec_seg *s,
                              unsigned long long k, unsigned step,
                              unsigned char found) {
  if (atomicCAS(&err->flag, 0u, 1u) == 0u) {
    err->step = step;
    err->tier = s->tier;
    err->buffer = s->buffer;
    err->offset = s->buf_off + k;
    err->expected = pat_byte(s->pat, s->phase + k);
    err->found = found;
    __threadfence();
  }
}

/* One segment, all threads of the grid: check (write == 0) or fill. */
__device__ static void do_seg(const exec_seg *s, exec_err *err, unsigned step,
                              int write) {
  unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x +
                           threadIdx.x;
  unsigned long long nth = (unsigned long long)gridDim.x * blockDim.x;
  unsigned char *p = (unsigned char *)s->addr;
  unsigned long long head = 0, words = 0;
  if (((s->addr - s->phase) & 7) == 0) {
    head = (8 - (s->addr & 7)) & 7;
    if (head > s->len) head = s->len;
    words = (s->len - head) / 8;
  }
  unsigned long long body = head + words * 8;
  /* bytes outside the word body: [0, head) and [body, len) */
  for (unsigned long long k = tid; k < s->len - words * 8; k += nth) {
    unsigned long long at = k < head ? k : body + (k - head);
    unsigned char want = pat_byte(s->pat, s->phase + at);
    if (write)
      p[at] = want;
    else if (p[at] != want)
      report(err, s, at, step, p[at]);
  }
  unsigned long long *w = (unsigned long long *)(p + head);
  for (unsigned long long k = tid; k < words; k += nth) {
    if (write) {
      w[k] = s->pat;
    } else if (w[k] != s->pat) {
      unsigned long long x = w[k] ^ s->pat;
      unsigned b = (unsigned)(__ffsll((long long)x) - 1) / 8;
      report(err, s, head + k * 8 + b, step,
             (unsigned char)(w[k] >> (8 * b)));
    }
  }
}

extern "C" __global__ void nnmem_exec_check(const exec_seg *segs, unsigned n,
                                            exec_err *err, unsigned step) {
  if (*(volatile unsigned *)&err->flag) return;
  for (unsigned i = 0; i < n; i++)
    do_seg(&segs[i], err, step, 0);
}

extern "C" __global__ void nnmem_exec_write(const exec_seg *segs, unsigned n,
                                            exec_err *err, unsigned step,
                                            long long spin) {
  if (*(volatile unsigned *)&err->flag) return;
  for (unsigned i = 0; i < n; i++)
    do_seg(&segs[i], err, step, 1);
  if (blockIdx.x == 0 && threadIdx.x == 0 && spin > 0) {
    long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
  }
}

extern "C" __global__ void nnmem_exec_spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

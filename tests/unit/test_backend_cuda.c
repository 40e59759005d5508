/* test_backend_cuda.c - the CUDA backend (src/backend/cuda.c) against a
 * stand-in driver library (tests/fakes/fake_cuda.c, path in
 * $NNMEM_FAKE_CUDA) so that it runs without a GPU: loading, device checks,
 * alignment, copies both ways, memset, free/total, out of memory with the
 * driver's error text, balanced contexts, no leaked device memory, a pool
 * over it; and the real driver when one is there (skipped otherwise). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnmem/pool.h"
#include "testutil.h"

static void *fake;                 /* the stand-in, kept loaded */
static long (*fake_live)(void);    /* outstanding device allocations */
static int (*fake_depth)(void);    /* context stack depth */
static int (*fake_retained)(void); /* primary context retains */

static int setup(void **state) {
  (void)state;
  const char *path = getenv("NNMEM_FAKE_CUDA");
  if (!path) return -1;
  fake = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!fake) return -1;
  *(void **)&fake_live = dlsym(fake, "fake_cuda_live");
  *(void **)&fake_depth = dlsym(fake, "fake_cuda_ctx_depth");
  *(void **)&fake_retained = dlsym(fake, "fake_cuda_retained");
  return fake_live && fake_depth && fake_retained ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  if (fake) dlclose(fake);
  return 0;
}

static nnmem_backend_t *make(int device, nnmem_status_t want) {
  nnmem_cuda_config_t cfg = {sizeof cfg, device, getenv("NNMEM_FAKE_CUDA")};
  nnmem_backend_t *b = NULL;
  nnmem_diag_t d = {0};
  assert_int_equal(nnmem_backend_cuda_create(&cfg, &b, &d), want);
  if (want) {
    assert_null(b);
    assert_true(d.message[0] != '\0');
    print_message("refused as expected: %s\n", d.message);
  }
  return b;
}

static void test_no_driver(void **state) {
  (void)state;
  nnmem_cuda_config_t cfg = {sizeof cfg, 0, "/nonexistent/libcuda.so.1"};
  nnmem_backend_t *b = NULL;
  nnmem_diag_t d = {0};
  assert_int_equal(nnmem_backend_cuda_create(&cfg, &b, &d),
                   NNMEM_ERR_UNSUPPORTED);
  assert_null(b);
  assert_non_null(strstr(d.message, "no CUDA driver"));
  /* a library without the driver's entry points */
  cfg.library = "libm.so.6";
  assert_int_equal(nnmem_backend_cuda_create(&cfg, &b, &d),
                   NNMEM_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.message, "has no cuInit"));
  assert_int_equal(nnmem_backend_cuda_create(&cfg, NULL, NULL),
                   NNMEM_ERR_INVALID);
}

static void test_devices(void **state) {
  (void)state;
  assert_int_equal(setenv("FAKE_CUDA_DEVICES", "0", 1), 0);
  make(0, NNMEM_ERR_UNSUPPORTED); /* no device at all */
  assert_int_equal(setenv("FAKE_CUDA_DEVICES", "2", 1), 0);
  make(2, NNMEM_ERR_INVALID); /* "device 2 does not exist (2 CUDA devices)" */
  make(-1, NNMEM_ERR_INVALID);
  assert_int_equal(setenv("FAKE_CUDA_INIT_ERROR", "100", 1), 0);
  make(0, NNMEM_ERR_UNSUPPORTED); /* CUDA_ERROR_NO_DEVICE from cuInit */
  unsetenv("FAKE_CUDA_INIT_ERROR");
  nnmem_backend_t *b = make(1, NNMEM_OK);
  assert_string_equal(nnmem_backend_cuda_device_name(b), "Fake GPU");
  nnmem_backend_destroy(b);
  unsetenv("FAKE_CUDA_DEVICES");
  assert_int_equal(fake_retained(), 0);
}

static void test_memory(void **state) {
  (void)state;
  assert_int_equal(setenv("FAKE_CUDA_CAPACITY", "65536", 1), 0);
  nnmem_backend_t *b = make(0, NNMEM_OK);
  assert_string_equal(b->name, "cuda");
  assert_int_equal(b->flags & NNMEM_BACKEND_BACKED, 0);
  assert_int_equal(b->alignment, 256);
  void *p = NULL, *q = NULL;
  assert_ok(nnmem_backend_alloc(b, 1000, 0, &p));
  assert_int_equal((uintptr_t)p % 256, 0);
  assert_ok(nnmem_backend_alloc(b, 3000, 4096, &q)); /* over-allocated */
  assert_int_equal((uintptr_t)q % 4096, 0);
  unsigned char in[1000], out[1000];
  for (size_t i = 0; i < sizeof in; i++)
    in[i] = (unsigned char)(i * 7 + 3);
  assert_ok(nnmem_backend_copy(b, p, in, sizeof in, NNMEM_COPY_HOST_TO_DEVICE));
  assert_ok(
      nnmem_backend_copy(b, q, p, sizeof in, NNMEM_COPY_DEVICE_TO_DEVICE));
  memset(out, 0, sizeof out);
  assert_ok(
      nnmem_backend_copy(b, out, q, sizeof out, NNMEM_COPY_DEVICE_TO_HOST));
  assert_memory_equal(in, out, sizeof in);
  assert_ok(nnmem_backend_memset(b, q, 0xab, 16));
  assert_ok(nnmem_backend_copy(b, out, q, 16, NNMEM_COPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < 16; i++)
    assert_int_equal(out[i], 0xab);
  uint64_t free_b = 0, total = 0;
  assert_ok(nnmem_backend_mem_info(b, &free_b, &total));
  assert_int_equal(total, 65536);
  assert_int_equal(free_b, 65536 - 1000 - (3000 + 4095));
  /* the device is full: out of memory, with the driver's words */
  void *big = NULL;
  assert_int_equal(nnmem_backend_alloc(b, 60000, 0, &big), NNMEM_ERR_NOMEM);
  assert_non_null(
      strstr(nnmem_backend_cuda_last_error(b), "CUDA_ERROR_OUT_OF_MEMORY"));
  /* a copy past the end of an allocation is refused by the driver */
  assert_int_equal(
      nnmem_backend_copy(b, p, in, 5000, NNMEM_COPY_HOST_TO_DEVICE),
      NNMEM_ERR_INVALID);
  assert_ok(nnmem_backend_free(b, q, 3000));
  assert_ok(nnmem_backend_free(b, p, 1000));
  assert_int_equal(fake_live(), 0);
  assert_int_equal(fake_depth(), 0);
  nnmem_backend_destroy(b);
  assert_int_equal(fake_retained(), 0);
  unsetenv("FAKE_CUDA_CAPACITY");
}

/* A TLSF pool on device memory: metadata on the host, regions from the
 * driver; everything returned at destroy. */
static void test_pool_on_device(void **state) {
  (void)state;
  assert_int_equal(setenv("FAKE_CUDA_CAPACITY", "16777216", 1), 0);
  nnmem_backend_t *b = make(0, NNMEM_OK);
  nnmem_pool_t *pool = NULL;
  assert_ok(nnmem_pool_create(NNMEM_POOL_TLSF, NULL, b, &pool));
  void *blk[64];
  for (size_t i = 0; i < 64; i++)
    assert_ok(nnmem_pool_alloc(pool, 1000 + 512 * i, 256, &blk[i]));
  for (size_t i = 0; i < 64; i += 2)
    assert_ok(nnmem_pool_free(pool, blk[i]));
  for (size_t i = 1; i < 64; i += 2)
    assert_ok(nnmem_pool_free(pool, blk[i]));
  nnmem_pool_destroy(pool);
  assert_int_equal(fake_live(), 0);
  nnmem_backend_destroy(b);
  unsetenv("FAKE_CUDA_CAPACITY");
}

/* The real driver, where there is one (a GPU machine). */
static void test_real_device(void **state) {
  (void)state;
  nnmem_cuda_config_t cfg = {sizeof cfg, 0, "libcuda.so.1"};
  nnmem_backend_t *b = NULL;
  nnmem_diag_t d = {0};
  nnmem_status_t st = nnmem_backend_cuda_create(&cfg, &b, &d);
  if (st == NNMEM_ERR_UNSUPPORTED) {
    print_message("no GPU here: %s\n", d.message);
    skip();
  }
  assert_ok(st);
  print_message("device: %s\n", nnmem_backend_cuda_device_name(b));
  void *p = NULL;
  assert_ok(nnmem_backend_alloc(b, 1 << 20, 4096, &p));
  static unsigned char in[1 << 20], out[1 << 20];
  for (size_t i = 0; i < sizeof in; i++)
    in[i] = (unsigned char)(i * 31);
  assert_ok(nnmem_backend_copy(b, p, in, sizeof in, NNMEM_COPY_HOST_TO_DEVICE));
  assert_ok(
      nnmem_backend_copy(b, out, p, sizeof out, NNMEM_COPY_DEVICE_TO_HOST));
  assert_memory_equal(in, out, sizeof in);
  uint64_t f = 0, t = 0;
  assert_ok(nnmem_backend_mem_info(b, &f, &t));
  assert_true(t > 0 && f <= t);
  assert_ok(nnmem_backend_free(b, p, 1 << 20));
  nnmem_backend_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_driver),   cmocka_unit_test(test_devices),
      cmocka_unit_test(test_memory),      cmocka_unit_test(test_pool_on_device),
      cmocka_unit_test(test_real_device),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

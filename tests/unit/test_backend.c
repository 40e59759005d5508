/* test_backend.c - host, mmap and simulated-device backends: alignment,
 * capacity, fault injection, request counting, unbacked addresses, memory
 * info, checked wrappers and misuse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static void test_host(void **state) {
  (void)state;
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_host_create(&b));
  assert_string_equal(b->name, "host");
  assert_true(b->flags & NNMEM_BACKEND_BACKED);
  void *p = NULL;
  assert_ok(nnmem_backend_alloc(b, 1000, 4096, &p));
  assert_int_equal((uintptr_t)p % 4096, 0);
  assert_ok(nnmem_backend_memset(b, p, 7, 1000));
  assert_int_equal(((unsigned char *)p)[999], 7);
  char src[16] = "hello";
  assert_ok(nnmem_backend_copy(b, p, src, 6, NNMEM_COPY_HOST_TO_DEVICE));
  assert_string_equal((char *)p, "hello");
  uint64_t fr = 0, tot = 0;
  assert_ok(nnmem_backend_mem_info(b, &fr, &tot));
  assert_true(tot > 0 && fr <= tot);
  assert_ok(nnmem_backend_free(b, p, 1000));
  /* misuse: size 0, non-power-of-two alignment */
  assert_int_equal(nnmem_backend_alloc(b, 0, 16, &p), NNMEM_ERR_INVALID);
  assert_null(p);
  assert_int_equal(nnmem_backend_alloc(b, 10, 24, &p), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_backend_alloc(NULL, 10, 16, &p), NNMEM_ERR_INVALID);
  nnmem_backend_destroy(b);
  nnmem_backend_destroy(NULL);
}

static void test_mmap(void **state) {
  (void)state;
  for (int huge = 0; huge <= 1; huge++) {
    nnmem_mmap_config_t cfg = {sizeof cfg, huge};
    nnmem_backend_t *b = NULL;
    assert_ok(nnmem_backend_mmap_create(&cfg, &b));
    void *p = NULL, *q = NULL;
    assert_ok(nnmem_backend_alloc(b, 3 << 20, 0, &p));
    memset(p, 1, 3 << 20); /* writable; falls back when no huge pages */
    assert_ok(nnmem_backend_alloc(b, 5000, 1 << 21, &q));
    assert_int_equal((uintptr_t)q % (1 << 21), 0);
    memset(q, 2, 5000);
    assert_ok(nnmem_backend_free(b, p, 3 << 20));
    assert_ok(nnmem_backend_free(b, q, 5000));
    /* alignments between the page and 2 MiB hold on the fallback to normal
     * pages too (it used to map at page alignment only) */
    void *r[8];
    for (int i = 0; i < 8; i++) {
      assert_ok(
          nnmem_backend_alloc(b, 4096 + (uint64_t)i * 8192, 1 << 20, &r[i]));
      assert_int_equal((uintptr_t)r[i] % (1 << 20), 0);
      memset(r[i], 3, 4096);
    }
    for (int i = 0; i < 8; i++)
      assert_ok(nnmem_backend_free(b, r[i], 4096 + (uint64_t)i * 8192));
    uint64_t fr = 0, tot = 0;
    assert_ok(nnmem_backend_mem_info(b, &fr, &tot));
    assert_true(tot > 0 && fr <= tot);
    nnmem_backend_destroy(b);
  }
}

static void test_sim_unbacked(void **state) {
  (void)state;
  nnmem_sim_config_t cfg = {0};
  cfg.capacity = 64ULL << 30; /* far beyond this machine's memory */
  cfg.alignment = 512;
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_sim_create(&cfg, &b));
  assert_false(b->flags & NNMEM_BACKEND_BACKED);
  assert_int_equal(b->alignment, 512);
  void *p = NULL, *q = NULL;
  assert_ok(nnmem_backend_alloc(b, 40ULL << 30, 0, &p));
  assert_int_equal((uintptr_t)p % 512, 0);
  assert_int_equal((uintptr_t)p, 1ULL << 44);
  assert_ok(nnmem_backend_alloc(b, 100, 0, &q)); /* rounded to 512 */
  uint64_t fr, tot;
  assert_ok(nnmem_backend_mem_info(b, &fr, &tot));
  assert_int_equal(tot, 64ULL << 30);
  assert_int_equal(fr, (64ULL << 30) - (40ULL << 30) - 512);
  /* over capacity */
  void *r = NULL;
  assert_int_equal(nnmem_backend_alloc(b, 30ULL << 30, 0, &r), NNMEM_ERR_NOMEM);
  /* wrong size or unknown address on free */
  assert_int_equal(nnmem_backend_free(b, q, 4096), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_backend_free(b, (char *)q + 512, 100),
                   NNMEM_ERR_INVALID);
  /* memset/copy are unsupported on unbacked memory */
  assert_int_equal(nnmem_backend_memset(b, q, 0, 10), NNMEM_ERR_UNSUPPORTED);
  nnmem_sim_counters_t c;
  assert_ok(nnmem_backend_sim_counters(b, &c));
  assert_int_equal(c.requests, 3);
  assert_int_equal(c.failed, 1);
  assert_int_equal(c.live_regions, 2);
  assert_int_equal(c.live_bytes, (40ULL << 30) + 512);
  assert_ok(nnmem_backend_free(b, p, 40ULL << 30));
  assert_ok(nnmem_backend_free(b, q, 100));
  assert_ok(nnmem_backend_sim_counters(b, &c));
  assert_int_equal(c.live_bytes, 0);
  assert_int_equal(c.peak_bytes, (40ULL << 30) + 512);
  nnmem_backend_destroy(b);
}

static void test_sim_faults(void **state) {
  (void)state;
  nnmem_sim_config_t cfg = {0};
  cfg.backed = 1;
  cfg.fail_at = 3;
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_sim_create(&cfg, &b));
  void *p[6] = {0};
  nnmem_status_t expect[6] = {NNMEM_OK, NNMEM_OK, NNMEM_ERR_NOMEM,
                              NNMEM_OK, NNMEM_OK, NNMEM_OK};
  for (int i = 0; i < 6; i++) {
    assert_int_equal(nnmem_backend_alloc(b, 64, 0, &p[i]), expect[i]);
    if (p[i]) memset(p[i], i, 64); /* backed: real memory */
  }
  assert_ok(nnmem_backend_sim_fail_at(b, 1, 1)); /* fail everything now */
  void *x = NULL;
  assert_int_equal(nnmem_backend_alloc(b, 64, 0, &x), NNMEM_ERR_NOMEM);
  assert_int_equal(nnmem_backend_alloc(b, 64, 0, &x), NNMEM_ERR_NOMEM);
  assert_ok(nnmem_backend_sim_fail_at(b, 0, 0));
  assert_ok(nnmem_backend_alloc(b, 64, 0, &x));
  nnmem_sim_counters_t c;
  assert_ok(nnmem_backend_sim_counters(b, &c));
  assert_int_equal(c.requests, 9);
  assert_int_equal(c.failed, 3);
  /* destroy releases what is still reserved (ASan checks no leak) */
  nnmem_backend_destroy(b);
  nnmem_backend_t *h = NULL;
  assert_ok(nnmem_backend_host_create(&h));
  nnmem_sim_counters_t c2;
  assert_int_equal(nnmem_backend_sim_counters(h, &c2), NNMEM_ERR_INVALID);
  nnmem_backend_destroy(h);
  cfg.alignment = 96; /* not a power of two */
  assert_int_equal(nnmem_backend_sim_create(&cfg, &b), NNMEM_ERR_INVALID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host),
      cmocka_unit_test(test_mmap),
      cmocka_unit_test(test_sim_unbacked),
      cmocka_unit_test(test_sim_faults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

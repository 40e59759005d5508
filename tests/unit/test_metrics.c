/* test_metrics.c - the live Prometheus endpoint (nnmem/metrics.h) over an
 * allocator while it runs: scraped with a raw HTTP GET on a socket, the
 * served counters equal the allocator's stats read right after (no other
 * thread allocates); 404 for other paths; a port in use is NNMEM_ERR_IO
 * naming the address; a bad address and nothing to serve are refused; the
 * render without HTTP. Skips (77) when nnmem has no libmicrohttpd. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testutil.h"

/* GET `path` from 127.0.0.1:port; the whole response (free it). */
static char *http_get(uint16_t port, const char *path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  char req[256];
  int n =
      snprintf(req, sizeof req,
               "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
  assert_int_equal(write(fd, req, (size_t)n), n);
  size_t cap = 1 << 20, len = 0;
  char *buf = malloc(cap);
  ssize_t r;
  while ((r = read(fd, buf + len, cap - 1 - len)) > 0)
    len += (size_t)r;
  buf[len] = '\0';
  close(fd);
  return buf;
}

static uint64_t sample(const char *text, const char *line_start) {
  const char *p = strstr(text, line_start);
  if (!p) fail_msg("no sample '%s'", line_start);
  return strtoull(p + strlen(line_start), NULL, 10);
}

static void test_scrape_allocator(void **state) {
  (void)state;
  nnmem_allocator_t *a;
  assert_ok(nnmem_allocator_create(NULL, &a));
  nnmem_metrics_config_t mc;
  nnmem_metrics_config_init(&mc);
  mc.allocator = a;
  nnmem_metrics_t *m = NULL;
  nnmem_diag_t d = {0};
  nnmem_status_t st = nnmem_metrics_start(&mc, &m, &d);
  if (st == NNMEM_ERR_UNSUPPORTED) {
    nnmem_allocator_destroy(a);
    printf("skip: %s\n", d.message);
    exit(77);
  }
  assert_ok(st);
  uint16_t port = nnmem_metrics_port(m);
  assert_true(port != 0);
  void *p[300];
  for (int i = 0; i < 300; i++)
    p[i] = nnmem_alloc(a, i < 200 ? 48 : 200000); /* cached and shared */
  char *resp = http_get(port, "/metrics");
  assert_non_null(strstr(resp, "HTTP/1.1 200"));
  assert_non_null(strstr(resp, "Content-Type: text/plain; version=0.0.4"));
  nnmem_stats_t s;
  assert_ok(nnmem_allocator_stats(a, &s));
  assert_int_equal(
      sample(resp, "nnmem_pool_allocations_total{pool=\"allocator\"} "),
      s.alloc_count);
  assert_int_equal(s.alloc_count, 300);
  assert_int_equal(sample(resp, "nnmem_pool_live_blocks{pool=\"allocator\"} "),
                   300);
  assert_int_equal(
      sample(resp, "nnmem_pool_cache_misses_total{pool=\"allocator\"} "),
      s.cache_misses);
  assert_non_null(
      strstr(resp, "nnmem_pool_cache_hit_ratio{pool=\"allocator\"} 0.99"));
  free(resp);
  for (int i = 0; i < 300; i++)
    nnmem_free(a, p[i]);
  resp = http_get(port, "/metrics");
  assert_int_equal(sample(resp, "nnmem_pool_live_blocks{pool=\"allocator\"} "),
                   0);
  free(resp);
  resp = http_get(port, "/nothing");
  assert_non_null(strstr(resp, "HTTP/1.1 404"));
  free(resp);
  assert_int_equal(nnmem_metrics_scrapes(m), 2);

  /* the same port again: in use, named */
  nnmem_metrics_t *m2 = (nnmem_metrics_t *)1;
  mc.port = port;
  assert_int_equal(nnmem_metrics_start(&mc, &m2, &d), NNMEM_ERR_IO);
  assert_null(m2);
  char want[64];
  snprintf(want, sizeof want, "127.0.0.1:%u: Address already in use",
           (unsigned)port);
  if (!strstr(d.message, want)) fail_msg("'%s' lacks '%s'", d.message, want);
  nnmem_metrics_stop(m);

  mc.addr = "localhost:1";
  assert_int_equal(nnmem_metrics_start(&mc, &m2, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "not an IPv4 or IPv6 address"));
  nnmem_metrics_config_init(&mc);
  assert_int_equal(nnmem_metrics_start(&mc, &m2, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "nothing to serve"));
  nnmem_allocator_destroy(a);
}

static nnmem_status_t two_records(void *ctx, nnmem_stats_t *out, size_t cap,
                                  size_t *n) {
  (void)ctx;
  assert_true(cap >= 2);
  for (int i = 0; i < 2; i++) {
    nnmem_stats_init(&out[i]);
    snprintf(out[i].name, sizeof out[i].name, "r%d", i);
    out[i].lock_acquisitions = 10;
    out[i].lock_contended = (uint64_t)i;
  }
  *n = 2;
  return NNMEM_OK;
}

static void test_render(void **state) {
  (void)state;
  nnmem_metrics_config_t mc;
  nnmem_metrics_config_init(&mc);
  mc.collect = two_records;
  char *text;
  size_t len;
  assert_ok(nnmem_metrics_render(&mc, &text, &len));
  assert_int_equal(strlen(text), len);
  assert_non_null(
      strstr(text, "nnmem_pool_lock_contention_ratio{pool=\"r0\"} 0\n"));
  assert_non_null(strstr(
      text,
      "nnmem_pool_lock_contention_ratio{pool=\"r1\"} 0.10000000000000001\n"));
  assert_non_null(
      strstr(text, "nnmem_pool_cache_hit_ratio{pool=\"r1\"} NaN\n"));
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_render),
      cmocka_unit_test(test_scrape_allocator),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

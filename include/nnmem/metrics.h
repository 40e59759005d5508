/* nnmem/metrics.h - a live Prometheus endpoint: GET /metrics answers with
 * the stats of an allocator, of pools and of whatever a callback collects,
 * in the text exposition format of nnmem_stats_format_prometheus.
 *
 *   nnmem_metrics_config_t cfg; nnmem_metrics_config_init(&cfg);
 *   cfg.port = 9464; cfg.allocator = a;
 *   nnmem_metrics_t *m; nnmem_metrics_start(&cfg, &m, &diag);
 *   ... the workload runs; Prometheus scrapes http://127.0.0.1:9464/metrics
 *   nnmem_metrics_stop(m);
 *
 * HTTP comes from libmicrohttpd, opened at run time (dlopen of
 * libmicrohttpd.so.12): without it, or in a build without its header,
 * nnmem_metrics_start returns NNMEM_ERR_UNSUPPORTED and says why. The
 * socket is bound by nnmem itself (so a port in use is reported as such,
 * NNMEM_ERR_IO, "127.0.0.1:9464: address already in use") and served by
 * one libmicrohttpd thread. Bound to 127.0.0.1 unless cfg.addr says
 * otherwise (an IPv4 or IPv6 literal). Other paths answer 404, other
 * methods 405.
 *
 * Thread-safety: each scrape runs on the server's thread: it reads the
 * allocator's stats (thread-safe), the pools' stats (the pools must be
 * thread_safe if the workload uses them at the same time) and calls
 * `collect` (which must be safe to call from that thread). start/stop are
 * not synchronized with each other for the same server. */
#ifndef NNMEM_METRICS_H
#define NNMEM_METRICS_H

#include "nnmem/allocator.h"
#include "nnmem/pool.h"
#include "nnmem/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills out[0, cap) with up to `cap` records and sets *n (the number
 * written); called on every scrape. */
typedef nnmem_status_t (*nnmem_metrics_collect_fn)(void *ctx,
                                                   nnmem_stats_t *out,
                                                   size_t cap, size_t *n);

typedef struct nnmem_metrics_config {
  uint32_t size;    /* sizeof; 0 = current */
  const char *addr; /* NULL = "127.0.0.1" */
  uint16_t port;    /* 0 = any free port (nnmem_metrics_port says which) */
  nnmem_allocator_t *allocator; /* NULL = none; label pool="allocator" */
  nnmem_pool_t *const *pools;   /* n_pools pools (labels: their names) */
  size_t n_pools;
  nnmem_metrics_collect_fn collect; /* NULL = none; up to 64 records */
  void *collect_ctx;
} nnmem_metrics_config_t;

typedef struct nnmem_metrics nnmem_metrics_t;

NNMEM_API void nnmem_metrics_config_init(nnmem_metrics_config_t *cfg);

/* Starts serving. NNMEM_ERR_INVALID (bad address, nothing to serve),
 * NNMEM_ERR_IO (the socket: port in use, permission), NNMEM_ERR_UNSUPPORTED
 * (no libmicrohttpd), NNMEM_ERR_NOMEM; diag says which and where. */
NNMEM_API nnmem_status_t nnmem_metrics_start(const nnmem_metrics_config_t *cfg,
                                             nnmem_metrics_t **out,
                                             nnmem_diag_t *diag);
/* The port served (the one chosen when cfg.port was 0). */
NNMEM_API uint16_t nnmem_metrics_port(const nnmem_metrics_t *m);
/* Scrapes answered so far. */
NNMEM_API uint64_t nnmem_metrics_scrapes(const nnmem_metrics_t *m);
/* Stops the thread, closes the socket, frees. NULL is a no-op. */
NNMEM_API void nnmem_metrics_stop(nnmem_metrics_t *m);

/* The text one scrape answers (free() it): what the server would send now.
 * The same rendering without HTTP, for tests and embedding elsewhere. */
NNMEM_API nnmem_status_t nnmem_metrics_render(const nnmem_metrics_config_t *cfg,
                                              char **out, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_METRICS_H */

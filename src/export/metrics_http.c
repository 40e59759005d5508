/* metrics_http.c - the live Prometheus endpoint (nnmem/metrics.h) over
 * libmicrohttpd, opened at run time.
 *
 *   nnmem_metrics_start: socket(), bind(addr:port), listen()  <- our errors
 *        |               dlopen("libmicrohttpd.so.12"), dlsym x5
 *        v
 *   MHD_start_daemon(INTERNAL_POLLING_THREAD, LISTEN_SOCKET = fd)
 *        |  one thread: accept, parse HTTP, call answer()
 *        v
 *   answer(GET /metrics): render() -> stats records -> Prometheus text
 *
 * Steps of start: 1. resolve the address literal (IPv4, else IPv6); 2. bind
 * and listen on our own socket, so a port in use is EADDRINUSE with the
 * address in the message (libmicrohttpd would only say "failed"); 3. open
 * the library and its five entry points; 4. start the daemon on the socket
 * (it closes the socket on stop). Each scrape: 1. collect the records (the
 * allocator's, each pool's, the callback's); 2. render them with
 * nnmem_stats_format_prometheus; 3. answer 200 with Content-Type
 * "text/plain; version=0.0.4". Other paths: 404; other methods: 405.
 * Invariants: while started, the daemon owns the socket; the library stays
 * open until stop. Complexity: O(records) per scrape.
 * Thread-safety: see the header; the scrape counter is atomic. */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "nnmem/metrics.h"

#define MAX_COLLECT 64

void nnmem_metrics_config_init(nnmem_metrics_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

static nnmem_metrics_config_t copy_config(const nnmem_metrics_config_t *cfg) {
  nnmem_metrics_config_t c;
  nnmem_metrics_config_init(&c);
  uint32_t n = cfg->size;
  if (n == 0 || n > sizeof c) n = sizeof c;
  memcpy(&c, cfg, n);
  c.size = sizeof c;
  return c;
}

nnmem_status_t nnmem_metrics_render(const nnmem_metrics_config_t *cfg,
                                    char **out, size_t *len) {
  if (!cfg || !out || !len) return NNMEM_ERR_INVALID;
  *out = NULL;
  *len = 0;
  nnmem_metrics_config_t c = copy_config(cfg);
  size_t cap = 1 + c.n_pools + (c.collect ? MAX_COLLECT : 0), n = 0;
  nnmem_stats_t *st = calloc(cap, sizeof *st);
  if (!st) return NNMEM_ERR_NOMEM;
  nnmem_status_t s = NNMEM_OK;
  if (c.allocator &&
      (s = nnmem_allocator_stats(c.allocator, &st[n])) == NNMEM_OK)
    n++;
  for (size_t i = 0; s == NNMEM_OK && i < c.n_pools; i++)
    if ((s = nnmem_pool_stats(c.pools[i], &st[n])) == NNMEM_OK) n++;
  size_t got = 0;
  if (s == NNMEM_OK && c.collect) {
    s = c.collect(c.collect_ctx, &st[n], MAX_COLLECT, &got);
    if (s == NNMEM_OK) n += got < MAX_COLLECT ? got : MAX_COLLECT;
  }
  size_t need = 0;
  if (s == NNMEM_OK) s = nnmem_stats_format_prometheus(st, n, NULL, 0, &need);
  if (s == NNMEM_ERR_OVERFLOW) {
    char *buf = malloc(need + 1);
    s = buf ? nnmem_stats_format_prometheus(st, n, buf, need + 1, len)
            : NNMEM_ERR_NOMEM;
    if (s == NNMEM_OK)
      *out = buf;
    else
      free(buf);
  }
  free(st);
  return s;
}

/* Binds and listens: the fd, or -1 with diag set. */
static int listen_on(const char *addr, uint16_t port, uint16_t *bound,
                     nnmem_diag_t *diag, nnmem_status_t *st) {
  struct sockaddr_storage ss;
  socklen_t sl;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    sl = sizeof *v4;
  } else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    sl = sizeof *v6;
  } else {
    *st = nnmem__diag(diag, NNMEM_ERR_INVALID,
                      "metrics: '%s' is not an IPv4 or IPv6 address", addr);
    return -1;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, (struct sockaddr *)&ss, sl) != 0 ||
      listen(fd, 16) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    *st = nnmem__diag(diag, NNMEM_ERR_IO, "metrics: %s%s%s:%u: %s",
                      ss.ss_family == AF_INET6 ? "[" : "", addr,
                      ss.ss_family == AF_INET6 ? "]" : "", (unsigned)port,
                      strerror(e));
    return -1;
  }
  sl = sizeof ss;
  getsockname(fd, (struct sockaddr *)&ss, &sl);
  *bound = ntohs(ss.ss_family == AF_INET6 ? v6->sin6_port : v4->sin_port);
  return fd;
}

#ifdef NNMEM_HAVE_MICROHTTPD
#include <microhttpd.h>

typedef struct mhd_api {
  struct MHD_Daemon *(*start)(unsigned int, uint16_t, MHD_AcceptPolicyCallback,
                              void *, MHD_AccessHandlerCallback, void *, ...);
  void (*stop)(struct MHD_Daemon *);
  struct MHD_Response *(*from_buffer)(size_t, void *,
                                      enum MHD_ResponseMemoryMode);
  enum MHD_Result (*add_header)(struct MHD_Response *, const char *,
                                const char *);
  enum MHD_Result (*queue)(struct MHD_Connection *, unsigned int,
                           struct MHD_Response *);
  void (*destroy)(struct MHD_Response *);
} mhd_api_t;

struct nnmem_metrics {
  nnmem_metrics_config_t cfg;
  void *lib;
  mhd_api_t api;
  struct MHD_Daemon *daemon;
  uint16_t port;
  _Atomic uint64_t scrapes;
};

static enum MHD_Result reply(nnmem_metrics_t *m, struct MHD_Connection *conn,
                             unsigned code, char *body, size_t len,
                             const char *type) {
  struct MHD_Response *r = m->api.from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  m->api.add_header(r, "Content-Type", type);
  enum MHD_Result ok = m->api.queue(conn, code, r);
  m->api.destroy(r);
  return ok;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_size, void **req) {
  nnmem_metrics_t *m = cls;
  if (*req == NULL) { /* first call: headers only; answer on the next */
    *req = m;
    return MHD_YES;
  }
  *upload_size = 0;
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return reply(m, conn, 405, strdup("method not allowed\n"), 19,
                 "text/plain");
  if (strcmp(url, "/metrics") != 0)
    return reply(m, conn, 404, strdup("not found: try /metrics\n"), 24,
                 "text/plain");
  char *text = NULL;
  size_t len = 0;
  nnmem_status_t st = nnmem_metrics_render(&m->cfg, &text, &len);
  if (st != NNMEM_OK) {
    char msg[96];
    int n =
        snprintf(msg, sizeof msg, "stats failed: %s\n", nnmem_status_str(st));
    return reply(m, conn, 500, strdup(msg), (size_t)n, "text/plain");
  }
  atomic_fetch_add(&m->scrapes, 1);
  return reply(m, conn, 200, text, len, "text/plain; version=0.0.4");
}

static nnmem_status_t open_mhd(nnmem_metrics_t *m, nnmem_diag_t *diag) {
  m->lib = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
  if (!m->lib)
    return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                       "metrics: libmicrohttpd.so.12 not found (install "
                       "libmicrohttpd12): %s",
                       dlerror());
  void *f[6] = {dlsym(m->lib, "MHD_start_daemon"),
                dlsym(m->lib, "MHD_stop_daemon"),
                dlsym(m->lib, "MHD_create_response_from_buffer"),
                dlsym(m->lib, "MHD_add_response_header"),
                dlsym(m->lib, "MHD_queue_response"),
                dlsym(m->lib, "MHD_destroy_response")};
  for (int i = 0; i < 6; i++)
    if (!f[i])
      return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                         "metrics: libmicrohttpd lacks an entry point");
  /* POSIX: a data pointer from dlsym converts to a function pointer */
  memcpy(&m->api.start, &f[0], sizeof f[0]);
  memcpy(&m->api.stop, &f[1], sizeof f[1]);
  memcpy(&m->api.from_buffer, &f[2], sizeof f[2]);
  memcpy(&m->api.add_header, &f[3], sizeof f[3]);
  memcpy(&m->api.queue, &f[4], sizeof f[4]);
  memcpy(&m->api.destroy, &f[5], sizeof f[5]);
  return NNMEM_OK;
}

nnmem_status_t nnmem_metrics_start(const nnmem_metrics_config_t *cfg,
                                   nnmem_metrics_t **out, nnmem_diag_t *diag) {
  if (!cfg || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "metrics: NULL argument");
  *out = NULL;
  nnmem_metrics_t *m = calloc(1, sizeof *m);
  if (!m) return nnmem__diag(diag, NNMEM_ERR_NOMEM, "metrics: out of memory");
  m->cfg = copy_config(cfg);
  if (!m->cfg.allocator && !m->cfg.n_pools && !m->cfg.collect) {
    free(m);
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "metrics: nothing to serve (no allocator, pools or "
                       "collect callback)");
  }
  const char *addr = m->cfg.addr ? m->cfg.addr : "127.0.0.1";
  nnmem_status_t st = NNMEM_OK;
  int fd = listen_on(addr, m->cfg.port, &m->port, diag, &st);
  if (fd < 0) {
    free(m);
    return st;
  }
  st = open_mhd(m, diag);
  if (st == NNMEM_OK) {
    m->daemon =
        m->api.start(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer, m,
                     MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_END);
    if (!m->daemon)
      st = nnmem__diag(diag, NNMEM_ERR_IO,
                       "metrics: libmicrohttpd could not start on %s:%u", addr,
                       (unsigned)m->port);
  }
  if (st != NNMEM_OK) {
    close(fd);
    if (m->lib) dlclose(m->lib);
    free(m);
    return st;
  }
  *out = m;
  return NNMEM_OK;
}

void nnmem_metrics_stop(nnmem_metrics_t *m) {
  if (!m) return;
  m->api.stop(m->daemon); /* joins its thread, closes the socket */
  dlclose(m->lib);
  free(m);
}

#else /* built without microhttpd.h */

struct nnmem_metrics {
  uint16_t port;
  uint64_t scrapes;
};

nnmem_status_t nnmem_metrics_start(const nnmem_metrics_config_t *cfg,
                                   nnmem_metrics_t **out, nnmem_diag_t *diag) {
  (void)listen_on;
  if (out) *out = NULL;
  if (!cfg || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "metrics: NULL argument");
  return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                     "metrics: this nnmem was built without libmicrohttpd "
                     "(install libmicrohttpd-dev and rebuild)");
}

void nnmem_metrics_stop(nnmem_metrics_t *m) {
  free(m);
}

#endif

uint16_t nnmem_metrics_port(const nnmem_metrics_t *m) {
  return m ? m->port : 0;
}

uint64_t nnmem_metrics_scrapes(const nnmem_metrics_t *m) {
  return m ? (uint64_t)m->scrapes : 0;
}

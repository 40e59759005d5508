/* stats.c - statistics records and their JSON / Prometheus renderings.
 *
 * Steps of each formatter: 1. write into the caller's buffer with a
 * bounded appender that keeps counting past the end; 2. when the text did
 * not fit, return NNMEM_ERR_OVERFLOW with the length needed.
 * JSON: pool names escaped as JSON strings (control characters \u00XX).
 * Prometheus: one # HELP and one # TYPE line per metric family, then one
 * sample per record labelled pool="<name>" (quotes and backslashes in names
 * escaped); counters end in _total, byte gauges in _bytes.
 * Complexity: O(n * metrics). Thread-safety: pure functions. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nnmem/stats.h"

typedef struct out {
  char *buf;
  size_t cap, len;
} out_t;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
put(out_t *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = o->len < o->cap ? o->cap - o->len : 0;
  int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0) o->len += (size_t)n;
}

static nnmem_status_t finish(out_t *o, size_t *len_out) {
  if (len_out) *len_out = o->len;
  if (o->len >= o->cap) {
    if (o->cap) o->buf[o->cap - 1] = '\0';
    return NNMEM_ERR_OVERFLOW;
  }
  return NNMEM_OK;
}

void nnmem_stats_init(nnmem_stats_t *st) {
  memset(st, 0, sizeof *st);
  st->size = sizeof *st;
  st->version = NNMEM_STATS_VERSION;
}

uint64_t nnmem_stats_latency_percentile(const nnmem_stats_t *st, double pct) {
  if (!st || !st->latency_samples) return 0;
  double want = pct / 100.0 * (double)st->latency_samples;
  uint64_t acc = 0;
  for (int i = 0; i < NNMEM_STATS_LAT_BUCKETS; i++) {
    acc += st->latency_hist[i];
    if ((double)acc >= want && acc) return 2ULL << i;
  }
  return 2ULL << (NNMEM_STATS_LAT_BUCKETS - 1);
}

typedef struct metric {
  const char *name, *type, *help;
  size_t off; /* offset of a uint64_t field, or SIZE_MAX for computed */
} metric_t;

#define U64(f) offsetof(nnmem_stats_t, f)
static const metric_t metrics[] = {
    {"requested_bytes", "gauge", "Bytes requested by callers",
     U64(requested_bytes)},
    {"requested_bytes_peak", "gauge", "Peak of requested bytes",
     U64(requested_bytes_peak)},
    {"allocated_bytes", "gauge", "Bytes handed out in blocks",
     U64(allocated_bytes)},
    {"allocated_bytes_peak", "gauge", "Peak of allocated bytes",
     U64(allocated_bytes_peak)},
    {"reserved_bytes", "gauge", "Bytes held from the backend",
     U64(reserved_bytes)},
    {"reserved_bytes_peak", "gauge", "Peak of reserved bytes",
     U64(reserved_bytes_peak)},
    {"free_bytes", "gauge", "Free bytes inside reserved regions",
     U64(free_bytes)},
    {"largest_free_bytes", "gauge", "Largest free block", U64(largest_free)},
    {"live_blocks", "gauge", "Blocks currently allocated", U64(live_count)},
    {"allocations_total", "counter", "Successful allocations",
     U64(alloc_count)},
    {"frees_total", "counter", "Successful frees", U64(free_count)},
    {"failed_allocations_total", "counter", "Allocations that failed",
     U64(failed_count)},
    {"misuse_total", "counter", "Rejected frees (double, foreign, misaligned)",
     U64(misuse_count)},
    {"backend_allocations_total", "counter", "Regions taken from the backend",
     U64(backend_allocs)},
    {"backend_frees_total", "counter", "Regions returned to the backend",
     U64(backend_frees)},
    {"cache_hits_total", "counter", "Thread-cache hits", U64(cache_hits)},
    {"cache_misses_total", "counter", "Thread-cache misses", U64(cache_misses)},
    {"lock_acquisitions_total", "counter", "Lock acquisitions",
     U64(lock_acquisitions)},
    {"lock_contended_total", "counter",
     "Failed try-locks before an acquisition", U64(lock_contended)},
};
#define N_METRICS (sizeof metrics / sizeof metrics[0])

static uint64_t field(const nnmem_stats_t *s, size_t off) {
  uint64_t v;
  memcpy(&v, (const char *)s + off, sizeof v);
  return v;
}

static void put_label(out_t *o, const char *name) {
  for (const char *c = name; *c; c++) {
    if (*c == '"' || *c == '\\')
      put(o, "\\%c", *c);
    else if (*c == '\n')
      put(o, "\\n");
    else
      put(o, "%c", *c);
  }
}

/* A JSON string body: quotes and backslashes escaped, control characters
 * as \u00XX (JSON allows none raw). */
static void put_json_str(out_t *o, const char *name) {
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
    if (*c == '"' || *c == '\\')
      put(o, "\\%c", *c);
    else if (*c < 0x20)
      put(o, "\\u%04x", *c);
    else
      put(o, "%c", *c);
  }
}

nnmem_status_t nnmem_stats_format_json(const nnmem_stats_t *st, size_t n,
                                       char *buf, size_t cap, size_t *len_out) {
  if ((!st && n) || (!buf && cap)) return NNMEM_ERR_INVALID;
  out_t o = {buf, cap, 0};
  put(&o, "[");
  for (size_t i = 0; i < n; i++) {
    const nnmem_stats_t *s = &st[i];
    put(&o, "%s{\"pool\":\"", i ? "," : "");
    put_json_str(&o, s->name);
    put(&o, "\"");
    for (size_t m = 0; m < N_METRICS; m++)
      put(&o, ",\"%s\":%llu", metrics[m].name,
          (unsigned long long)field(s, metrics[m].off));
    put(&o,
        ",\"fragmentation\":%.6f,\"latency_samples\":%llu,"
        "\"latency_p50_ns\":%llu,\"latency_p99_ns\":%llu}",
        s->fragmentation, (unsigned long long)s->latency_samples,
        (unsigned long long)nnmem_stats_latency_percentile(s, 50),
        (unsigned long long)nnmem_stats_latency_percentile(s, 99));
  }
  put(&o, "]\n");
  return finish(&o, len_out);
}

static void prom_histogram(out_t *o, const nnmem_stats_t *st, size_t n) {
  put(o,
      "# HELP nnmem_pool_op_latency_ns Sampled latency of pool "
      "operations\n# TYPE nnmem_pool_op_latency_ns histogram\n");
  for (size_t i = 0; i < n; i++) {
    uint64_t acc = 0;
    for (int b = 0; b < NNMEM_STATS_LAT_BUCKETS; b++) {
      acc += st[i].latency_hist[b];
      put(o, "nnmem_pool_op_latency_ns_bucket{pool=\"");
      put_label(o, st[i].name);
      put(o, "\",le=\"%llu\"} %llu\n", 2ULL << b, (unsigned long long)acc);
    }
    put(o, "nnmem_pool_op_latency_ns_bucket{pool=\"");
    put_label(o, st[i].name);
    put(o, "\",le=\"+Inf\"} %llu\nnmem_pool_op_latency_ns_count{pool=\"",
        (unsigned long long)acc);
    put_label(o, st[i].name);
    put(o, "\"} %llu\n", (unsigned long long)st[i].latency_samples);
  }
}

nnmem_status_t nnmem_stats_format_prometheus(const nnmem_stats_t *st, size_t n,
                                             char *buf, size_t cap,
                                             size_t *len_out) {
  if ((!st && n) || (!buf && cap)) return NNMEM_ERR_INVALID;
  out_t o = {buf, cap, 0};
  for (size_t m = 0; m < N_METRICS; m++) {
    put(&o, "# HELP nnmem_pool_%s %s\n# TYPE nnmem_pool_%s %s\n",
        metrics[m].name, metrics[m].help, metrics[m].name, metrics[m].type);
    for (size_t i = 0; i < n; i++) {
      put(&o, "nnmem_pool_%s{pool=\"", metrics[m].name);
      put_label(&o, st[i].name);
      put(&o, "\"} %llu\n", (unsigned long long)field(&st[i], metrics[m].off));
    }
  }
  put(&o,
      "# HELP nnmem_pool_fragmentation_ratio (free - largest free block) "
      "/ free\n# TYPE nnmem_pool_fragmentation_ratio gauge\n");
  for (size_t i = 0; i < n; i++) {
    put(&o, "nnmem_pool_fragmentation_ratio{pool=\"");
    put_label(&o, st[i].name);
    put(&o, "\"} %.6f\n", st[i].fragmentation);
  }
  prom_histogram(&o, st, n);
  return finish(&o, len_out);
}

/* stats.c - statistics records (pools, and tenant domains of
 * nnmem/domain.h) and their JSON / Prometheus renderings.
 *
 * Steps of each formatter: 1. build the whole text in memory (JSON through
 * the one JSON writer, src/common/json_write.c: exact integers, pretty
 * style); 2. copy it into the caller's buffer; when it does not fit, return
 * NNMEM_ERR_OVERFLOW with the length needed.
 * Prometheus, text exposition format 0.0.4:
 *   - one family after another, each introduced by exactly one # HELP and
 *     one # TYPE line, then one sample per record labelled pool="<name>";
 *   - label values escape backslash, double quote and newline (\\, \",
 *     \n); bytes that are not UTF-8 become U+FFFD; HELP text escapes
 *     backslash and newline;
 *   - counters end in _total, byte gauges in _bytes;
 *   - the latency histogram has, per record, the cumulative buckets
 *     _bucket{le="2^(i+1)"} (bucket i counts [2^i, 2^(i+1)) ns) for all but
 *     the last, open-ended bucket, then le="+Inf", _sum (ns) and _count,
 *     with _count == the +Inf bucket.
 * Complexity: O(n * metrics). Thread-safety: pure functions. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/json_write.h"
#include "common/text.h"
#include "nnmem/domain.h"
#include "nnmem/stats.h"
#include "runtime/stats_internal.h"

/* Copies the finished text `t` into buf[cap] (NUL-terminated) and frees
 * it; NNMEM_ERR_OVERFLOW (with a truncated, terminated copy) when it does
 * not fit, *len_out = the length needed either way. */
static nnmem_status_t deliver(nnmem__text_t *t, nnmem_status_t st, char *buf,
                              size_t cap, size_t *len_out) {
  if (st == NNMEM_OK) st = nnmem__text_status(t);
  if (st != NNMEM_OK) {
    nnmem__text_free(t);
    return st;
  }
  size_t len = t->len;
  if (len_out) *len_out = len;
  if (len >= cap) {
    if (cap) {
      memcpy(buf, t->data, cap - 1);
      buf[cap - 1] = '\0';
    }
    st = NNMEM_ERR_OVERFLOW;
  } else {
    memcpy(buf, t->data, len + 1);
  }
  nnmem__text_free(t);
  return st;
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
    {"refills_total", "counter",
     "Chunks taken by background replenishment (fixed pool)", U64(refills)},
    {"refill_failures_total", "counter",
     "Background chunk requests the backend refused", U64(refill_failures)},
    {"empty_hits_total", "counter",
     "Allocations that found the pool empty and waited on the backend",
     U64(empty_hits)},
    {"remote_frees_total", "counter", "Frees by a thread of another NUMA node",
     U64(remote_frees)},
    {"remote_allocs_total", "counter",
     "Allocations served for a thread of another NUMA node",
     U64(remote_allocs)},
    {"bad_node_requests_total", "counter",
     "Requests naming a NUMA node that does not exist", U64(bad_node_requests)},
    {"compactions_total", "counter", "Heap compactions", U64(compactions)},
    {"compactions_latency_total", "counter",
     "Heap compactions started by the allocation latency signal",
     U64(compactions_latency)},
    {"quarantine_bytes", "gauge",
     "Bytes of freed blocks held in the allocator's quarantine",
     U64(quarantine_bytes)},
    {"quarantine_blocks", "gauge",
     "Freed blocks held in the allocator's quarantine", U64(quarantine_blocks)},
    {"quarantine_writes_total", "counter",
     "Quarantined blocks found written after their free",
     U64(quarantine_writes)},
};
#define N_METRICS (sizeof metrics / sizeof metrics[0])

static uint64_t field(const nnmem_stats_t *s, size_t off) {
  uint64_t v;
  memcpy(&v, (const char *)s + off, sizeof v);
  return v;
}

/* A Prometheus label value: \\, \" and \n escaped; invalid UTF-8 bytes
 * become U+FFFD (the format is UTF-8). */
static void put_label(nnmem__text_t *t, const char *name) {
  const unsigned char *p = (const unsigned char *)name;
  size_t len = strnlen(name, NNMEM_STATS_NAME_MAX);
  for (size_t i = 0; i < len;) {
    size_t n = nnmem__utf8_seq(p + i, len - i);
    if (p[i] == '"' || p[i] == '\\') {
      nnmem__text_putc(t, '\\');
      nnmem__text_putc(t, (char)p[i]);
    } else if (p[i] == '\n') {
      nnmem__text_puts(t, "\\n");
    } else if (n) {
      nnmem__text_append(t, name + i, n);
      i += n;
      continue;
    } else {
      nnmem__text_puts(t, "\xef\xbf\xbd");
    }
    i++;
  }
}

/* # HELP (backslash and newline escaped) and # TYPE of one family. */
static void put_family(nnmem__text_t *t, const char *name, const char *type,
                       const char *help) {
  nnmem__text_printf(t, "# HELP %s ", name);
  for (const char *c = help; *c; c++) {
    if (*c == '\\')
      nnmem__text_puts(t, "\\\\");
    else if (*c == '\n')
      nnmem__text_puts(t, "\\n");
    else
      nnmem__text_putc(t, *c);
  }
  nnmem__text_printf(t, "\n# TYPE %s %s\n", name, type);
}

/* `name{pool="<label>"` (the caller closes the label set). */
static void put_sample_start(nnmem__text_t *t, const char *name,
                             const nnmem_stats_t *s) {
  nnmem__text_printf(t, "%s{pool=\"", name);
  put_label(t, s->name);
  nnmem__text_putc(t, '"');
}

double nnmem_stats_hit_rate(const nnmem_stats_t *st) {
  if (!st || !(st->cache_hits + st->cache_misses)) return NAN;
  return (double)st->cache_hits / (double)(st->cache_hits + st->cache_misses);
}

double nnmem_stats_lock_contention(const nnmem_stats_t *st) {
  if (!st || !st->lock_acquisitions) return 0.0;
  return (double)st->lock_contended / (double)st->lock_acquisitions;
}

double nnmem_stats_latency_mean_ns(const nnmem_stats_t *st) {
  if (!st || !st->latency_samples) return NAN;
  return (double)st->latency_sum_ns / (double)st->latency_samples;
}

void nnmem__stats_json_object(nnmem__jw_t *w, const nnmem_stats_t *s) {
  char name[NNMEM_STATS_NAME_MAX + 1];
  snprintf(name, sizeof name, "%.*s", NNMEM_STATS_NAME_MAX, s->name);
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "pool", name);
  for (size_t m = 0; m < N_METRICS; m++)
    nnmem__jw_kv_u64(w, metrics[m].name, field(s, metrics[m].off));
  nnmem__jw_kv_double(w, "fragmentation", s->fragmentation);
  nnmem__jw_kv_double(w, "cache_hit_rate", nnmem_stats_hit_rate(s));
  nnmem__jw_kv_double(w, "lock_contention", nnmem_stats_lock_contention(s));
  nnmem__jw_kv_u64(w, "latency_samples", s->latency_samples);
  nnmem__jw_kv_u64(w, "latency_sum_ns", s->latency_sum_ns);
  nnmem__jw_kv_double(w, "latency_mean_ns", nnmem_stats_latency_mean_ns(s));
  nnmem__jw_kv_u64(w, "latency_p50_ns", nnmem_stats_latency_percentile(s, 50));
  nnmem__jw_kv_u64(w, "latency_p99_ns", nnmem_stats_latency_percentile(s, 99));
  nnmem__jw_end(w);
}

/* A pretty JSON array of n records of `stride` bytes, each written by
 * `one`, delivered into buf as the format functions promise. */
static nnmem_status_t format_json_array(
    const void *items, size_t n, size_t stride,
    void (*one)(nnmem__jw_t *, const void *), char *buf, size_t cap,
    size_t *len_out) {
  if ((!items && n) || (!buf && cap)) return NNMEM_ERR_INVALID;
  nnmem__text_t t;
  nnmem__jw_t w;
  nnmem__text_init(&t);
  nnmem__jw_init(&w, &t, NNMEM__JW_PRETTY);
  nnmem__jw_array(&w);
  for (size_t i = 0; i < n; i++)
    one(&w, (const char *)items + i * stride);
  nnmem__jw_end(&w);
  return deliver(&t, nnmem__jw_finish(&w), buf, cap, len_out);
}

static void pool_json_one(nnmem__jw_t *w, const void *s) {
  nnmem__stats_json_object(w, s);
}

nnmem_status_t nnmem_stats_format_json(const nnmem_stats_t *st, size_t n,
                                       char *buf, size_t cap, size_t *len_out) {
  return format_json_array(st, n, sizeof *st, pool_json_one, buf, cap, len_out);
}

static void prom_histogram(nnmem__text_t *t, const nnmem_stats_t *st,
                           size_t n) {
  static const char fam[] = "nnmem_pool_op_latency_ns";
  put_family(t, fam, "histogram",
             "Sampled latency of pool operations in nanoseconds");
  for (size_t i = 0; i < n; i++) {
    uint64_t acc = 0;
    /* the last bucket is open-ended (everything >= 2^31 ns): it counts
     * only in +Inf, since a finite le would be a false upper bound */
    for (int b = 0; b < NNMEM_STATS_LAT_BUCKETS - 1; b++) {
      acc += st[i].latency_hist[b];
      put_sample_start(t, "nnmem_pool_op_latency_ns_bucket", &st[i]);
      nnmem__text_printf(t, ",le=\"%llu\"} %llu\n", 2ULL << b,
                         (unsigned long long)acc);
    }
    acc += st[i].latency_hist[NNMEM_STATS_LAT_BUCKETS - 1];
    put_sample_start(t, "nnmem_pool_op_latency_ns_bucket", &st[i]);
    nnmem__text_printf(t, ",le=\"+Inf\"} %llu\n", (unsigned long long)acc);
    put_sample_start(t, "nnmem_pool_op_latency_ns_sum", &st[i]);
    nnmem__text_printf(t, "} %llu\n", (unsigned long long)st[i].latency_sum_ns);
    put_sample_start(t, "nnmem_pool_op_latency_ns_count", &st[i]);
    nnmem__text_printf(t, "} %llu\n", (unsigned long long)acc);
  }
}

nnmem_status_t nnmem_stats_format_prometheus(const nnmem_stats_t *st, size_t n,
                                             char *buf, size_t cap,
                                             size_t *len_out) {
  if ((!st && n) || (!buf && cap)) return NNMEM_ERR_INVALID;
  nnmem__text_t t;
  nnmem__text_init(&t);
  char name[96];
  for (size_t m = 0; m < N_METRICS; m++) {
    snprintf(name, sizeof name, "nnmem_pool_%s", metrics[m].name);
    put_family(&t, name, metrics[m].type, metrics[m].help);
    for (size_t i = 0; i < n; i++) {
      put_sample_start(&t, name, &st[i]);
      nnmem__text_printf(&t, "} %llu\n",
                         (unsigned long long)field(&st[i], metrics[m].off));
    }
  }
  put_family(&t, "nnmem_pool_fragmentation_ratio", "gauge",
             "1 - largest free block / free bytes inside reserved regions");
  for (size_t i = 0; i < n; i++) {
    put_sample_start(&t, "nnmem_pool_fragmentation_ratio", &st[i]);
    nnmem__text_printf(&t, "} %.17g\n", st[i].fragmentation);
  }
  put_family(&t, "nnmem_pool_cache_hit_ratio", "gauge",
             "Thread-cache hits / lookups (NaN without lookups)");
  for (size_t i = 0; i < n; i++) {
    double h = nnmem_stats_hit_rate(&st[i]);
    put_sample_start(&t, "nnmem_pool_cache_hit_ratio", &st[i]);
    if (isnan(h)) /* no cache lookups: not 0 (that would alert) */
      nnmem__text_puts(&t, "} NaN\n");
    else
      nnmem__text_printf(&t, "} %.17g\n", h);
  }
  put_family(&t, "nnmem_pool_lock_contention_ratio", "gauge",
             "Failed try-locks / lock acquisitions");
  for (size_t i = 0; i < n; i++) {
    put_sample_start(&t, "nnmem_pool_lock_contention_ratio", &st[i]);
    nnmem__text_printf(&t, "} %.17g\n", nnmem_stats_lock_contention(&st[i]));
  }
  prom_histogram(&t, st, n);
  return deliver(&t, NNMEM_OK, buf, cap, len_out);
}

/* Tenant domains (nnmem/domain.h): the same two renderings, label
 * domain="name"; refusals by reason in one family. */
typedef struct dmetric {
  const char *name, *type, *help;
  size_t off;
} dmetric_t;

#define DU64(f) offsetof(nnmem_domain_stats_t, f)
static const dmetric_t dmetrics[] = {
    {"quota_bytes", "gauge", "Bytes the domain may hold live", DU64(quota)},
    {"live_bytes", "gauge", "Requested bytes the domain holds",
     DU64(live_bytes)},
    {"peak_bytes", "gauge", "Peak of live bytes", DU64(peak_bytes)},
    {"live_blocks", "gauge", "Blocks the domain holds", DU64(live_blocks)},
    {"allocations_total", "counter", "Successful allocations", DU64(allocs)},
    {"frees_total", "counter", "Successful frees by the domain", DU64(frees)},
    {"granted_frees_total", "counter",
     "Frees of other domains' blocks under a grant", DU64(frees_granted)},
    {"isolation_checks_total", "counter",
     "Ownership checks of frees and accesses naming a live block",
     DU64(checks)},
    {"grants_total", "counter", "Grants given", DU64(grants)},
    {"revokes_total", "counter", "Grants revoked", DU64(revokes)},
};
#define N_DMETRICS (sizeof dmetrics / sizeof dmetrics[0])

static const struct {
  const char *reason;
  size_t off;
} refusals[] = {{"quota", DU64(refused_quota)},
                {"pool", DU64(refused_pool)},
                {"denied", DU64(refused_denied)},
                {"invalid", DU64(refused_invalid)},
                {"bad_input", DU64(refused_bad_input)}};
#define N_REFUSALS (sizeof refusals / sizeof refusals[0])

static uint64_t dfield(const nnmem_domain_stats_t *s, size_t off) {
  uint64_t v;
  memcpy(&v, (const char *)s + off, sizeof v);
  return v;
}

void nnmem__domain_stats_json(nnmem__jw_t *w, const nnmem_domain_stats_t *s) {
  char name[NNMEM_STATS_NAME_MAX + 1];
  snprintf(name, sizeof name, "%.*s", NNMEM_STATS_NAME_MAX, s->name);
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "domain", name);
  nnmem__jw_kv_u64(w, "id", s->id);
  nnmem__jw_kv_u64(w, "colour", s->colour);
  for (size_t m = 0; m < N_DMETRICS; m++)
    nnmem__jw_kv_u64(w, dmetrics[m].name, dfield(s, dmetrics[m].off));
  nnmem__jw_key(w, "refused");
  nnmem__jw_object(w);
  for (size_t r = 0; r < N_REFUSALS; r++)
    nnmem__jw_kv_u64(w, refusals[r].reason, dfield(s, refusals[r].off));
  nnmem__jw_end(w);
  nnmem__jw_end(w);
}

static void domain_json_one(nnmem__jw_t *w, const void *s) {
  nnmem__domain_stats_json(w, s);
}

nnmem_status_t nnmem_domain_stats_format_json(const nnmem_domain_stats_t *st,
                                              size_t n, char *buf, size_t cap,
                                              size_t *len_out) {
  return format_json_array(st, n, sizeof *st, domain_json_one, buf, cap,
                           len_out);
}

static void put_domain_start(nnmem__text_t *t, const char *name,
                             const nnmem_domain_stats_t *s) {
  nnmem__text_printf(t, "%s{domain=\"", name);
  put_label(t, s->name);
  nnmem__text_putc(t, '"');
}

nnmem_status_t nnmem_domain_stats_format_prometheus(
    const nnmem_domain_stats_t *st, size_t n, char *buf, size_t cap,
    size_t *len_out) {
  if ((!st && n) || (!buf && cap)) return NNMEM_ERR_INVALID;
  nnmem__text_t t;
  nnmem__text_init(&t);
  char name[96];
  for (size_t m = 0; m < N_DMETRICS; m++) {
    snprintf(name, sizeof name, "nnmem_domain_%s", dmetrics[m].name);
    put_family(&t, name, dmetrics[m].type, dmetrics[m].help);
    for (size_t i = 0; i < n; i++) {
      put_domain_start(&t, name, &st[i]);
      nnmem__text_printf(&t, "} %llu\n",
                         (unsigned long long)dfield(&st[i], dmetrics[m].off));
    }
  }
  static const char fam[] = "nnmem_domain_refusals_total";
  put_family(&t, fam, "counter",
             "Refused calls by reason: quota, pool, denied (no ownership or "
             "grant), invalid (not a live block), bad_input");
  for (size_t i = 0; i < n; i++)
    for (size_t r = 0; r < N_REFUSALS; r++) {
      put_domain_start(&t, fam, &st[i]);
      nnmem__text_printf(&t, ",reason=\"%s\"} %llu\n", refusals[r].reason,
                         (unsigned long long)dfield(&st[i], refusals[r].off));
    }
  return deliver(&t, NNMEM_OK, buf, cap, len_out);
}

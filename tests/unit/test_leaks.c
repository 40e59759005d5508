/* test_leaks.c - leak records: sites by file:line and by backtrace, the
 * report in text / JSON (read back with cJSON) / folded stacks, threads,
 * the sampled mode's byte-weighted estimates against the known truth
 * (fixed seed), enabling late, the environment switch and misuse; the
 * sampling's own ln / 1 - e^-x / rounding against libm, and its draw's
 * accuracy and law (fixed seed). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/mathx.h"
#include "runtime/leaks_internal.h"
#include "runtime/allocator_internal.h"
#include "testutil.h"

static nnmem_allocator_t *make(nnmem_leaks_mode_t mode, uint64_t sample) {
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  lc.mode = mode;
  if (sample) lc.sample_bytes = sample;
  nnmem_allocator_config_t cfg;
  nnmem_allocator_config_init(&cfg);
  cfg.leaks = &lc; /* explicit: the environment does not matter here */
  nnmem_allocator_t *a = NULL;
  assert_ok(nnmem_allocator_create(&cfg, &a));
  return a;
}

/* The records' and the page marks' checker must pass (quiescent a). */
static void check(nnmem_allocator_t *a) {
  nnmem_diag_t d = {{0}};
  if (nnmem__allocator_leaks_check(a, &d) != NNMEM_OK)
    fail_msg("leak records check: %s", d.message);
}

static cJSON *report_json(nnmem_allocator_t *a) {
  char *doc;
  size_t len;
  assert_ok(nnmem_allocator_leaks_report(a, NNMEM_LEAKS_JSON, &doc, &len));
  assert_int_equal(strlen(doc), len);
  cJSON *j = cJSON_Parse(doc);
  free(doc);
  assert_non_null(j);
  return j;
}

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  assert_non_null(v);
  return v->valuedouble;
}

static void test_full_sites(void **state) {
  (void)state;
  nnmem_allocator_t *a = make(NNMEM_LEAKS_FULL, 0);
  void *p[3];
  int line_a = __LINE__ + 2;
  for (int i = 0; i < 3; i++)
    p[i] = NNMEM_ALLOC(a, 1000);
  int line_b = __LINE__ + 1;
  void *big = NNMEM_ALLOC(a, 50000);
  void *plain = nnmem_alloc(a, 16); /* freed below: never reported */
  nnmem_free(a, p[1]);
  nnmem_free(a, plain);
  check(a);
  nnmem_leaks_summary_t s;
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.records, 3);
  assert_int_equal(s.bytes, 2 * 1000 + 50000);
  assert_int_equal(s.est_bytes, s.bytes);
  assert_int_equal(s.est_blocks, 3);
  assert_int_equal(s.sites, 2);

  cJSON *j = report_json(a);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "mode")->valuestring,
                      "full");
  const cJSON *sites = cJSON_GetObjectItemCaseSensitive(j, "sites");
  assert_int_equal(cJSON_GetArraySize(sites), 2);
  const cJSON *s0 = cJSON_GetArrayItem(sites, 0),
              *s1 = cJSON_GetArrayItem(sites, 1);
  assert_true(num(s0, "bytes") == 50000 && num(s0, "blocks") == 1);
  assert_true(num(s0, "line") == line_b);
  assert_true(num(s1, "bytes") == 2000 && num(s1, "blocks") == 2);
  assert_true(num(s1, "line") == line_a);
  assert_non_null(
      strstr(cJSON_GetObjectItemCaseSensitive(s1, "file")->valuestring,
             "test_leaks.c"));
  assert_true(
      cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s0, "stack")) > 0);
  cJSON_Delete(j);

  char *doc;
  size_t len;
  char want[64];
  assert_ok(nnmem_allocator_leaks_report(a, NNMEM_LEAKS_TEXT, &doc, &len));
  snprintf(want, sizeof want, "test_leaks.c:%d\n", line_b);
  const char *first = strstr(doc, "site\n"); /* after the header */
  assert_non_null(first);
  assert_non_null(strstr(first, "50000"));
  assert_true(strstr(first, want) < strstr(first, "2000 ")); /* by bytes */
  assert_non_null(strstr(doc, "52000 bytes in 3 blocks live at 2 sites"));
  free(doc);

  assert_ok(nnmem_allocator_leaks_report(a, NNMEM_LEAKS_FOLDED, &doc, &len));
  /* two lines "frames;...;file:line BYTES", biggest first */
  char *nl = strchr(doc, '\n');
  assert_non_null(nl);
  *nl = '\0';
  snprintf(want, sizeof want, "test_leaks.c:%d 50000", line_b);
  assert_non_null(strstr(doc, want));
  assert_non_null(strchr(doc, ';')); /* frames above the leaf */
  assert_ptr_equal(strchr(doc, ' '), strrchr(doc, ' ')); /* one space */
  snprintf(want, sizeof want, "test_leaks.c:%d 2000\n", line_a);
  assert_non_null(strstr(nl + 1, want));
  free(doc);

  nnmem_free(a, p[0]);
  nnmem_free(a, p[2]);
  nnmem_free(a, big);
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.records, 0);
  assert_int_equal(s.sites, 0);
  nnmem_allocator_destroy(a);
}

/* Without file:line, the backtrace is the site: two call paths, two
 * sites, told apart by their return addresses. */
/* noclone: no via_one.constprop copy, so the return address lies inside
 * the symbol the test looks up */
#if defined(__GNUC__) && !defined(__clang__)
#define NOCLONE __attribute__((noclone))
#else
#define NOCLONE
#endif
__attribute__((noinline)) NOCLONE static void *via_one(nnmem_allocator_t *a,
                                                       size_t n) {
  void *p = nnmem_alloc(a, n);
  __asm__ volatile("" ::: "memory");
  return p;
}
__attribute__((noinline)) NOCLONE static void *via_two(nnmem_allocator_t *a,
                                                       size_t n) {
  void *p = nnmem_alloc_aligned(a, n, 64);
  __asm__ volatile("" ::: "memory");
  return p;
}

static void test_backtrace_sites(void **state) {
  (void)state;
  nnmem_allocator_t *a = make(NNMEM_LEAKS_FULL, 0);
  void *p[10];
  for (int i = 0; i < 5; i++)
    p[i] = via_one(a, 100);
  for (int i = 5; i < 10; i++)
    p[i] = via_two(a, 20000);
  nnmem_leaks_summary_t s;
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.sites, 2);
  assert_int_equal(s.bytes, 5 * 100 + 5 * 20000);
  cJSON *j = report_json(a);
  const cJSON *sites = cJSON_GetObjectItemCaseSensitive(j, "sites");
  assert_true(num(cJSON_GetArrayItem(sites, 0), "bytes") == 100000);
  assert_true(num(cJSON_GetArrayItem(sites, 1), "bytes") == 500);
  assert_true(cJSON_IsNull(
      cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(sites, 0), "file")));
  const char *uw = cJSON_GetObjectItemCaseSensitive(j, "unwinder")->valuestring;
  assert_true(strcmp(uw, "libunwind") == 0 ||
              strcmp(uw, "glibc backtrace()") == 0);
  /* a frame of each site is the return address inside via_two / via_one
   * (whichever unwinder the records use: libunwind or glibc): it names the
   * function, or the module with an offset inside it. In an optimised
   * build it is the first frame; unoptimised, the allocator's own frames
   * come first (the records skip a fixed two). */
  for (int k = 0; k < 2; k++) {
    void *fn = k == 0 ? (void *)via_two : (void *)via_one;
    const char *name = k == 0 ? "via_two+0x" : "via_one+0x";
    const cJSON *st =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(sites, k), "stack");
    Dl_info di;
    assert_true(dladdr(fn, &di) && di.dli_fname);
    const char *base = strrchr(di.dli_fname, '/');
    base = base ? base + 1 : di.dli_fname;
    size_t bl = strlen(base);
    uintptr_t lo = (uintptr_t)fn - (uintptr_t)di.dli_fbase;
    int found = 0;
    for (const cJSON *f = st ? st->child : NULL; f && !found; f = f->next) {
      const char *s = f->valuestring;
      if (strncmp(s, name, strlen(name)) == 0) {
        found = 1;
      } else if (strncmp(s, base, bl) == 0 && strncmp(s + bl, "+0x", 3) == 0) {
        uintptr_t off = (uintptr_t)strtoull(s + bl + 3, NULL, 16);
        found = off > lo && off <= lo + 64;
      }
    }
    if (!found)
      fail_msg("site %d: no frame inside %s (at %s+0x%lx); first '%s'", k, name,
               base, (unsigned long)lo, cJSON_GetArrayItem(st, 0)->valuestring);
  }
  cJSON_Delete(j);
  for (int i = 0; i < 10; i++)
    nnmem_free(a, p[i]);
  nnmem_allocator_destroy(a);
}

typedef struct job {
  nnmem_allocator_t *a;
  void *p[50];
} job_t;

static void *thread_alloc(void *arg) {
  job_t *j = arg;
  for (int i = 0; i < 50; i++)
    j->p[i] = NNMEM_ALLOC(j->a, 64);
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  nnmem_allocator_t *a = make(NNMEM_LEAKS_FULL, 0);
  job_t jobs[3] = {{a, {0}}, {a, {0}}, {a, {0}}};
  pthread_t th[3];
  for (int t = 0; t < 3; t++)
    assert_int_equal(pthread_create(&th[t], NULL, thread_alloc, &jobs[t]), 0);
  for (int t = 0; t < 3; t++)
    pthread_join(th[t], NULL);
  for (int i = 0; i < 25; i++) /* cross-thread frees drop their records */
    nnmem_free(a, jobs[0].p[i]);
  check(a);
  cJSON *j = report_json(a);
  const cJSON *sites = cJSON_GetObjectItemCaseSensitive(j, "sites");
  assert_int_equal(cJSON_GetArraySize(sites), 1);
  const cJSON *s0 = cJSON_GetArrayItem(sites, 0);
  assert_true(num(s0, "threads") == 3);
  assert_true(num(s0, "blocks") == 125);
  assert_true(num(s0, "bytes") == 125 * 64);
  cJSON_Delete(j);
  nnmem_allocator_destroy(a); /* live blocks and records go with it */
}

/* Sampled: N = 16 KiB, 60,000 blocks of 512 B (p = 1 - e^(-1/32), about
 * 1,846 records expected) and 16 of 1 MiB (p ~ 1). The estimate must be
 * within 5 standard deviations of the truth, the record count within 5
 * sigma of its binomial mean; both are deterministic for the seed. */
static void test_sampled_estimates(void **state) {
  (void)state;
  const uint64_t N = 16384, n_small = 60000, n_big = 16;
  printf("sampled: seed 0 (the default fixed seed), N=%llu\n",
         (unsigned long long)N);
  nnmem_allocator_t *a = make(NNMEM_LEAKS_SAMPLED, N);
  void **p = malloc((n_small + n_big) * sizeof *p);
  for (uint64_t i = 0; i < n_small; i++)
    p[i] = nnmem_alloc(a, 512);
  for (uint64_t i = 0; i < n_big; i++)
    p[n_small + i] = nnmem_alloc(a, 1 << 20);
  check(a);
  nnmem_leaks_summary_t s;
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  double q = -expm1(-512.0 / (double)N);
  double mean = n_small * q, sd = sqrt(n_small * q * (1 - q));
  double truth = (double)n_small * 512 + (double)n_big * (1 << 20);
  /* sd of the estimate: the small blocks' (512 / q) * sd(records) */
  double est_sd = 512.0 / q * sd;
  printf(
      "records %llu (expected %.0f +- %.0f), est_bytes %llu (truth %.0f +- "
      "%.0f)\n",
      (unsigned long long)s.records, mean + n_big, sd,
      (unsigned long long)s.est_bytes, truth, est_sd);
  assert_true(fabs((double)s.records - (mean + n_big)) < 5 * sd + 1);
  assert_true(fabs((double)s.est_bytes - truth) < 5 * est_sd);
  assert_true(s.records < n_small / 10); /* it did sample */
  /* the estimate of blocks counts 1/p for each record */
  assert_true(fabs((double)s.est_blocks - (double)(n_small + n_big)) <
              5 * sd / q);
  for (uint64_t i = 0; i < n_small + n_big; i++)
    nnmem_free(a, p[i]);
  check(a);
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.records, 0);
  free(p);
  nnmem_allocator_destroy(a);
}

/* Records of sample_bytes `n` on an allocator configured by `cfg` (NULL:
 * defaults). */
static nnmem_allocator_t *make_cfg(nnmem_allocator_config_t *cfg,
                                   nnmem_leaks_mode_t mode, uint64_t n) {
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  lc.mode = mode;
  if (n) lc.sample_bytes = n;
  nnmem_allocator_config_t c;
  if (!cfg) nnmem_allocator_config_init(&c);
  if (!cfg) cfg = &c;
  cfg->leaks = &lc;
  nnmem_allocator_t *a = NULL;
  assert_ok(nnmem_allocator_create(cfg, &a));
  return a;
}

/* The records' count and estimate of `count` blocks of `size` bytes on
 * allocator a (sample_bytes n) within 5 standard deviations of the truth. */
static void check_estimate(nnmem_allocator_t *a, const char *what, uint64_t n,
                           uint64_t count, uint64_t size) {
  nnmem_leaks_summary_t s;
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  double q = -expm1(-(double)size / (double)n);
  double mean = (double)count * q, sd = sqrt((double)count * q * (1 - q));
  double truth = (double)count * (double)size, est_sd = (double)size / q * sd;
  printf(
      "%s: N=%llu records %llu (expected %.1f +- %.1f), est_bytes %llu "
      "(truth %.0f +- %.0f)\n",
      what, (unsigned long long)n, (unsigned long long)s.records, mean, sd,
      (unsigned long long)s.est_bytes, truth, est_sd);
  assert_true(fabs((double)s.records - mean) < 5 * sd + 1);
  assert_true(fabs((double)s.est_bytes - truth) < 5 * est_sd + (double)size);
}

/* One thread allocating from records of different N in turn: each
 * allocator's records keep their own rate (a countdown per N), so both
 * estimates are unbiased; with one countdown shared by all N, the rare
 * 4 MiB draws starve the 8 KiB records. Then 9 more distinct N: the
 * process has 7 countdown slots and this test alone uses 11 N values, so
 * at least 4 of these allocators take the draw-per-allocation path of slot
 * 0; every one must still be unbiased. Seed: the default fixed seed. */
static void test_sampled_mixed_rates(void **state) {
  (void)state;
  const uint64_t count = 40000, size = 512;
  nnmem_allocator_t *a = make(NNMEM_LEAKS_SAMPLED, 8192);
  nnmem_allocator_t *b = make(NNMEM_LEAKS_SAMPLED, 4 << 20);
  void **pa = malloc(count * sizeof *pa), **pb = malloc(count * sizeof *pb);
  for (uint64_t i = 0; i < count; i++) {
    pa[i] = nnmem_alloc(a, size);
    pb[i] = nnmem_alloc(b, size);
  }
  check_estimate(a, "mixed a", 8192, count, size);
  check_estimate(b, "mixed b", 4 << 20, count, size);
  for (uint64_t i = 0; i < count; i++) {
    nnmem_free(a, pa[i]);
    nnmem_free(b, pb[i]);
  }
  nnmem_leaks_summary_t s;
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.records, 0);
  nnmem_allocator_destroy(a);
  nnmem_allocator_destroy(b);

  enum { NA = 9 };
  const uint64_t c2 = 20000, s2 = 256;
  nnmem_allocator_t *al[NA];
  for (int k = 0; k < NA; k++)
    al[k] = make(NNMEM_LEAKS_SAMPLED, 3000 + 7 * (uint64_t)k);
  for (uint64_t i = 0; i < c2; i++)
    for (int k = 0; k < NA; k++)
      (void)nnmem_alloc(al[k], s2); /* freed by destroy */
  for (int k = 0; k < NA; k++) {
    char what[32];
    snprintf(what, sizeof what, "distinct N #%d", k);
    check_estimate(al[k], what, 3000 + 7 * (uint64_t)k, c2, s2);
    nnmem_allocator_destroy(al[k]);
  }
  free(pa);
  free(pb);
}

/* Sampled records on small pages with N = 1 (p = 1 - e^-48 = 1 in double:
 * every block is recorded, so counts are exact): many records per page
 * (the page's marks collide, index % 32), freed in a shuffled order
 * (fixed seed) by the owner thread, by another thread (the remote path),
 * through queued frees (free_batch) and with no thread cache (the pool);
 * after each half the records must be exactly the live blocks. */
typedef struct frees {
  nnmem_allocator_t *a;
  void **p;
  size_t n;
} frees_t;

static void *free_some(void *arg) {
  frees_t *f = arg;
  for (size_t i = 0; i < f->n; i++)
    nnmem_free(f->a, f->p[i]);
  return NULL;
}

static void test_sampled_pages(void **state) {
  (void)state;
  enum { N = 3000 };
  printf("sampled pages: shuffle seed 12345\n");
  for (int variant = 0; variant < 4; variant++) {
    nnmem_allocator_config_t cfg;
    nnmem_allocator_config_init(&cfg);
    if (variant == 2) cfg.free_batch = 64;
    if (variant == 3) cfg.no_thread_cache = 1;
    nnmem_allocator_t *a = make_cfg(&cfg, NNMEM_LEAKS_SAMPLED, 1);
    void *p[N];
    for (int i = 0; i < N; i++)
      p[i] = nnmem_alloc(a, 48);
    uint64_t seed = 12345;
    for (int i = N - 1; i > 0; i--) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      int j = (int)((seed >> 33) % (uint64_t)(i + 1));
      void *t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
    nnmem_leaks_summary_t s;
    check(a);
    assert_ok(nnmem_allocator_leaks_summary(a, &s));
    assert_int_equal(s.records, N);
    frees_t half = {a, p, N / 2};
    if (variant == 1) {
      pthread_t th;
      assert_int_equal(pthread_create(&th, NULL, free_some, &half), 0);
      pthread_join(th, NULL);
    } else {
      free_some(&half);
    }
    check(a);
    assert_ok(nnmem_allocator_leaks_summary(a, &s));
    assert_int_equal(s.records, N - N / 2);
    assert_int_equal(s.bytes, (N - N / 2) * 48);
    nnmem_free(a, p[0]); /* a second free: refused, no record touched */
    assert_ok(nnmem_allocator_leaks_summary(a, &s));
    assert_int_equal(s.records, N - N / 2);
    /* the other half, then the same blocks again from a fresh round */
    frees_t rest = {a, p + N / 2, N - N / 2};
    free_some(&rest);
    assert_ok(nnmem_allocator_leaks_summary(a, &s));
    assert_int_equal(s.records, 0);
    for (int i = 0; i < N; i++)
      p[i] = nnmem_alloc(a, 48);
    assert_ok(nnmem_allocator_leaks_summary(a, &s));
    assert_int_equal(s.records, N);
    free_some(&(frees_t){a, p, N});
    nnmem_allocator_thread_flush(a);
    check(a);
    assert_ok(nnmem_allocator_leaks_summary(a, &s));
    assert_int_equal(s.records, 0);
    nnmem_allocator_destroy(a);
  }
}

/* A page with a few records among blocks without any (records enabled
 * after most of its blocks were handed out): its mark goes from one
 * record's index + 1 to MANY with bit i % 16 of each record's block i, so
 * most frees of the page skip the records. Every free (shuffled, fixed
 * seed, printed) must keep the records exactly the live recorded blocks
 * and the marks consistent (check: every record's bit set), including
 * blocks freed and handed out again while the page is MANY. */
static void test_mark_bits(void **state) {
  (void)state;
  enum { OLD = 300, NEW = 5, ALL = OLD + 2 * NEW };
  const uint64_t seed0 = 4242;
  printf("mark bits: shuffle seed %llu\n", (unsigned long long)seed0);
  nnmem_allocator_t *a = make(NNMEM_LEAKS_OFF, 0);
  void *p[ALL];
  int rec[ALL] = {0};
  for (int i = 0; i < OLD; i++)
    p[i] = nnmem_alloc(a, 48);
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  lc.depth = 0;
  assert_ok(nnmem_allocator_leaks_enable(a, &lc));
  for (int i = OLD; i < OLD + NEW; i++) {
    p[i] = nnmem_alloc(a, 48);
    rec[i] = 1;
  }
  /* free a few old blocks, then take blocks again: recorded, at the old
   * blocks' indices (the free list's front), on the page already MANY */
  for (int i = 0; i < NEW; i++)
    nnmem_free(a, p[i * 37]);
  for (int i = 0; i < NEW; i++) {
    p[i * 37] = nnmem_alloc(a, 48);
    rec[i * 37] = 1;
    p[OLD + NEW + i] = nnmem_alloc(a, 48);
    rec[OLD + NEW + i] = 1;
  }
  check(a);
  size_t live = 3 * NEW;
  nnmem_leaks_summary_t s;
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.records, live);
  uint64_t seed = seed0;
  for (int i = ALL - 1; i > 0; i--) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    int j = (int)((seed >> 33) % (uint64_t)(i + 1));
    void *t = p[i];
    p[i] = p[j];
    p[j] = t;
    int r = rec[i];
    rec[i] = rec[j];
    rec[j] = r;
  }
  for (int i = 0; i < ALL; i++) {
    nnmem_free(a, p[i]);
    live -= (size_t)rec[i];
    assert_ok(nnmem_allocator_leaks_summary(a, &s));
    if (s.records != live)
      fail_msg("seed %llu: after free %d, %llu records, %zu recorded live",
               (unsigned long long)seed0, i, (unsigned long long)s.records,
               live);
    if (i % 16 == 0) check(a);
  }
  check(a);
  nnmem_free(a, p[0]); /* a second free: refused, nothing recorded */
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.records, 0);
  nnmem_allocator_destroy(a);
}

/* Every allocation path counts down an exponential countdown of mean N:
 * the thread cache's (the fast path, and a small block past it), or the
 * thread's slot for N (large blocks, no thread cache, file:line, aligned),
 * so a block of s bytes is recorded with probability q = 1 - e^(-s/N)
 * whichever path it takes and however the paths mix. For each path, and
 * for all of them interleaved on one allocator, SEEDS runs with seeds
 * 1..SEEDS (printed): the z-score of each run's record count against its
 * binomial law must average 0 (within 4 standard errors: a bias of a
 * fraction of a standard deviation fails) with variance near 1, and the
 * byte estimate summed over the runs must be within 4 standard errors of
 * the truth. */
enum {
  PATH_FAST,
  PATH_PLAIN,
  PATH_LARGE,
  PATH_SWITCH,
  PATH_NOCACHE,
  PATH_AT,
  PATH_ALIGNED,
  PATH_MIXED,
  NPATH
};

static void *path_alloc(nnmem_allocator_t *a, int path, size_t size) {
  switch (path) {
    case PATH_AT:
      return NNMEM_ALLOC(a, size);
    case PATH_ALIGNED:
      return nnmem_alloc_aligned(a, size, 64);
    default:
      return nnmem_alloc(a, size);
  }
}

/* One run of test_sampled_unbiased_paths, on a thread of its own (the
 * thread's random stream starts from the run's seed): z of the record
 * count, the byte estimate, its truth and its variance. */
typedef struct path_run {
  int path;
  uint64_t seed;
  double z, est, truth, est_var;
} path_run_t;

static void *path_run(void *arg) {
  path_run_t *r = arg;
  int path = r->path;
  size_t count = path == PATH_LARGE ? 100 : 6000;
  uint64_t n = path == PATH_LARGE ? (1u << 20) : 16384;
  static const size_t mixed[4] = {256, 9000, 160 << 10, 700};
  nnmem_allocator_t *al[2];
  int nal = path == PATH_SWITCH ? 2 : 1;
  for (int k = 0; k < nal; k++) {
    nnmem_leaks_config_t lc;
    nnmem_leaks_config_init(&lc);
    lc.mode = NNMEM_LEAKS_SAMPLED;
    lc.sample_bytes = n;
    lc.depth = 0;
    lc.seed = r->seed * 7919 + (uint64_t)k;
    nnmem_allocator_config_t cfg;
    nnmem_allocator_config_init(&cfg);
    cfg.no_thread_cache = path == PATH_NOCACHE;
    cfg.leaks = &lc;
    assert_ok(nnmem_allocator_create(&cfg, &al[k]));
  }
  double mean = 0, var = 0;
  r->truth = r->est_var = 0;
  for (size_t i = 0; i < count; i++) {
    size_t size = path == PATH_MIXED   ? mixed[i % 4]
                  : path == PATH_PLAIN ? 9000
                  : path == PATH_LARGE ? (160u << 10)
                                       : 256;
    int kind = path;
    if (path == PATH_MIXED) /* sizes and calls out of step */
      kind = i / 4 % 3 == 0   ? PATH_FAST
             : i / 4 % 3 == 1 ? PATH_AT
                              : PATH_ALIGNED;
    assert_non_null(path_alloc(al[i % (size_t)nal], kind, size));
    double q = -expm1(-(double)size / (double)n);
    mean += q;
    var += q * (1 - q);
    r->truth += (double)size;
    r->est_var += (double)size * (double)size * (1 - q) / q;
  }
  uint64_t records = 0, eb = 0;
  for (int k = 0; k < nal; k++) {
    check(al[k]);
    nnmem_leaks_summary_t s;
    assert_ok(nnmem_allocator_leaks_summary(al[k], &s));
    records += s.records;
    eb += s.est_bytes;
    nnmem_allocator_destroy(al[k]); /* frees the blocks */
  }
  r->z = ((double)records - mean) / sqrt(var);
  r->est = (double)eb;
  return NULL;
}

static void test_sampled_unbiased_paths(void **state) {
  (void)state;
  enum { SEEDS = 40 };
  static const char *name[NPATH] = {"fast",     "small past the fast path",
                                    "large",    "two allocators in turn",
                                    "no cache", "file:line",
                                    "aligned",  "all mixed"};
  for (int path = 0; path < NPATH; path++) {
    double zsum = 0, zsq = 0, est = 0, truth = 0, est_var = 0;
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
      path_run_t r = {.path = path, .seed = seed};
      pthread_t th;
      assert_int_equal(pthread_create(&th, NULL, path_run, &r), 0);
      pthread_join(th, NULL);
      zsum += r.z;
      zsq += r.z * r.z;
      est += r.est;
      truth += r.truth;
      est_var += r.est_var;
    }
    double zm = zsum / SEEDS, zv = zsq / SEEDS - zm * zm;
    double est_z = (est - truth) / sqrt(est_var);
    printf(
        "sampled path %-24s seeds 1..%d: mean z %+.3f (limit %.3f), var z "
        "%.3f, estimate/truth %.4f (z %+.2f)\n",
        name[path], SEEDS, zm, 4 / sqrt((double)SEEDS), zv, est / truth, est_z);
    assert_true(fabs(zm) < 4 / sqrt((double)SEEDS));
    assert_true(zv > 0.4 && zv < 1.8);
    assert_true(fabs(est_z) < 4);
  }
}

static void test_enable_late_and_misuse(void **state) {
  (void)state;
  nnmem_allocator_t *a = make(NNMEM_LEAKS_OFF, 0);
  nnmem_leaks_summary_t s;
  char *doc = (char *)1;
  size_t len = 1;
  assert_int_equal(nnmem_allocator_leaks_summary(a, &s), NNMEM_ERR_STATE);
  assert_int_equal(
      nnmem_allocator_leaks_report(a, NNMEM_LEAKS_TEXT, &doc, &len),
      NNMEM_ERR_STATE);
  assert_null(doc);
  void *early = nnmem_alloc(a, 300);
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  lc.depth = NNMEM_LEAKS_MAX_DEPTH + 1;
  assert_int_equal(nnmem_allocator_leaks_enable(a, &lc), NNMEM_ERR_INVALID);
  nnmem_leaks_config_init(&lc);
  lc.mode = NNMEM_LEAKS_SAMPLED;
  lc.sample_bytes = 0;
  assert_int_equal(nnmem_allocator_leaks_enable(a, &lc), NNMEM_ERR_INVALID);
  lc.mode = (nnmem_leaks_mode_t)7;
  assert_int_equal(nnmem_allocator_leaks_enable(a, &lc), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_allocator_leaks_enable(NULL, &lc), NNMEM_ERR_INVALID);
  nnmem_leaks_config_init(&lc);
  lc.depth = 0; /* no backtrace: sites by file:line only */
  assert_ok(nnmem_allocator_leaks_enable(a, &lc));
  assert_int_equal(nnmem_allocator_leaks_enable(a, &lc), NNMEM_ERR_STATE);
  void *late = NNMEM_ALLOC(a, 700);
  /* the fast path: the thread's cache was made before the records (its
   * countdown re-armed when enabling gave the allocator a new identity) */
  void *fast = nnmem_alloc(a, 300);
  nnmem_free(a, early); /* never recorded: fine */
  check(a);
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.records, 2);
  assert_int_equal(s.bytes, 1000);
  nnmem_free(a, fast);
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.records, 1);
  assert_int_equal(s.bytes, 700);
  assert_int_equal(
      nnmem_allocator_leaks_report(a, (nnmem_leaks_format_t)9, &doc, &len),
      NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_allocator_leaks_write(a, NNMEM_LEAKS_TEXT,
                                               "/nonexistent-dir/x.txt"),
                   NNMEM_ERR_IO);
  /* written whole through a temporary: an old file is replaced, a
   * directory in the way is refused and kept, no temporary is left */
  int before = tu_tmpdir_count();
  char rep[512], dir[512]; /* tu_tmp_path's buffer is static */
  snprintf(rep, sizeof rep, "%s", tu_tmp_path("late.txt"));
  snprintf(dir, sizeof dir, "%s", tu_tmp_path("a-dir"));
  FILE *old = fopen(rep, "w");
  assert_non_null(old);
  fputs("old report\n", old);
  fclose(old);
  assert_ok(nnmem_allocator_leaks_write(a, NNMEM_LEAKS_TEXT, rep));
  char text[4096];
  FILE *rf = fopen(rep, "r");
  assert_non_null(rf);
  size_t got = fread(text, 1, sizeof text - 1, rf);
  fclose(rf);
  text[got] = '\0';
  assert_null(strstr(text, "old report"));
  assert_non_null(strstr(text, "700")); /* the one live record's bytes */
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_not_equal(nnmem_allocator_leaks_write(a, NNMEM_LEAKS_JSON, dir),
                       NNMEM_OK);
  struct stat sb;
  assert_int_equal(stat(dir, &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
  assert_int_equal(rmdir(dir), 0);
  assert_int_equal(tu_tmpdir_count(), before + 1); /* late.txt alone */
  assert_int_equal(unlink(rep), 0);
  nnmem_free(a, late);
  nnmem_free(a, late); /* double free: rejected by the allocator, no record */
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.records, 0);
  nnmem_allocator_destroy(a);
}

/* Records enabled while another thread's cache is current: enabling gives
 * the allocator a new identity, so that thread's next allocation re-arms
 * its cache's countdown and the fast path records (full mode: all). */
typedef struct late_job {
  nnmem_allocator_t *a;
  pthread_barrier_t *bar;
  void *p[10];
} late_job_t;

static void *late_thread(void *arg) {
  late_job_t *j = arg;
  void *before = nnmem_alloc(j->a, 64); /* makes the cache, records off */
  pthread_barrier_wait(j->bar);         /* the main thread enables */
  pthread_barrier_wait(j->bar);
  for (int i = 0; i < 10; i++)
    j->p[i] = nnmem_alloc(j->a, 64);
  nnmem_free(j->a, before); /* never recorded */
  return NULL;
}

static void test_enable_late_threads(void **state) {
  (void)state;
  nnmem_allocator_t *a = make(NNMEM_LEAKS_OFF, 0);
  pthread_barrier_t bar;
  assert_int_equal(pthread_barrier_init(&bar, NULL, 2), 0);
  late_job_t j = {a, &bar, {0}};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, late_thread, &j), 0);
  pthread_barrier_wait(&bar);
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc); /* full */
  lc.depth = 0;
  assert_ok(nnmem_allocator_leaks_enable(a, &lc));
  pthread_barrier_wait(&bar);
  pthread_join(th, NULL);
  pthread_barrier_destroy(&bar);
  check(a);
  nnmem_leaks_summary_t s;
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.records, 10);
  assert_int_equal(s.bytes, 640);
  for (int i = 0; i < 10; i++)
    nnmem_free(a, j.p[i]); /* a thread that exited: its cache's blocks */
  check(a);
  assert_ok(nnmem_allocator_leaks_summary(a, &s));
  assert_int_equal(s.records, 0);
  nnmem_allocator_destroy(a);
}

/* Reports of records whose names are awkward: a frame in no loaded module
 * (code unloaded since, JIT code; dladdr fills in nothing: printed as its
 * address, not read from an unset Dl_info), and caller file names with
 * the folded format's separators (';', ' ') and control characters (a
 * newline): each site stays one line of "frames;leaf BYTES" with one
 * space, and the text report's site line stays one line. */
static void test_awkward_names(void **state) {
  (void)state;
  nnmem_leaks_config_t cfg;
  nnmem_leaks_config_init(&cfg);
  cfg.mode = NNMEM_LEAKS_FULL;
  nnmem__leaks_t *lk = NULL;
  assert_ok(nnmem__leaks_create(&cfg, &lk));
  assert_non_null(lk);
  static char b1[16], b2[16], b3[16];
  void *fr[2] = {(void *)(uintptr_t)0x1234, (void *)(uintptr_t)0x5678};
  assert_int_equal(nnmem__leaks_record(lk, b1, 100, NULL, 0, NULL, fr, 2), 1);
  assert_int_equal(
      nnmem__leaks_record(lk, b2, 200, "dir/a;b c.c", 7, NULL, fr, 1), 1);
  assert_int_equal(
      nnmem__leaks_record(lk, b3, 300, "we\"ird\n\t.c", 9, NULL, NULL, 0), 1);
  char *doc;
  size_t len;
  assert_ok(nnmem__leaks_report(lk, NNMEM_LEAKS_FOLDED, &doc, &len));
  /* three lines, each with one space, before the count */
  int lines = 0;
  for (char *l = doc, *nl; (nl = strchr(l, '\n')) != NULL; l = nl + 1) {
    *nl = '\0';
    char *sp = strchr(l, ' ');
    assert_non_null(sp);
    assert_ptr_equal(sp, strrchr(l, ' '));
    assert_true(sp[1] >= '1' && sp[1] <= '9');
    lines++;
  }
  assert_int_equal(lines, 3);
  assert_int_equal(strlen(doc) + 1 <= len, 1);
  free(doc);
  assert_ok(nnmem__leaks_report(lk, NNMEM_LEAKS_FOLDED, &doc, &len));
  assert_non_null(strstr(doc, "0x5678;0x1234 100\n")); /* root first */
  assert_non_null(strstr(doc, "0x1234;dir/a_b_c.c:7 200\n"));
  assert_non_null(strstr(doc, "we\"ird__.c:9 300\n"));
  free(doc);
  assert_ok(nnmem__leaks_report(lk, NNMEM_LEAKS_TEXT, &doc, &len));
  assert_non_null(strstr(doc, "  we\"ird\\x0a\\x09.c:9\n"));
  assert_non_null(strstr(doc, "  0x1234\n        at 0x1234\n        at 0x5678\n"));
  free(doc);
  nnmem__leaks_destroy(lk);
}

/* The text of file `path` (up to n - 1 bytes, NUL-terminated) in buf. */
static void read_text(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t got = fread(buf, 1, n - 1, f);
  fclose(f);
  buf[got] = '\0';
}

/* The default report (nnmem-leaks.PID.txt, NNMEM_LEAKS_REPORT unset)
 * names the process that writes it: a forked child that destroys its copy
 * of the allocator writes its own file, and the parent's stays. */
static void test_default_report_after_fork(void **state) {
  (void)state;
  char cwd[4096];
  assert_non_null(getcwd(cwd, sizeof cwd));
  const char *dir = tu_tmp_path("forkrep");
  mkdir(dir, 0700);
  assert_int_equal(chdir(dir), 0);
  setenv("NNMEM_LEAKS", "1", 1);
  unsetenv("NNMEM_LEAKS_REPORT");
  nnmem_allocator_t *a = NULL;
  assert_ok(nnmem_allocator_create(NULL, &a));
  unsetenv("NNMEM_LEAKS");
  void *p = NNMEM_ALLOC(a, 100);
  assert_non_null(p);
  nnmem__allocator_fork_prepare(a);
  pid_t pid = fork();
  if (pid == 0) {
    nnmem__allocator_fork_child(a);
    void *q = NNMEM_ALLOC(a, 200); /* the child's own leak */
    nnmem_allocator_destroy(a);
    _exit(q ? 0 : 1);
  }
  nnmem__allocator_fork_parent(a);
  assert_true(pid > 0);
  int ws = 0;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  nnmem_allocator_destroy(a);
  char mine[64], child[64];
  snprintf(mine, sizeof mine, "nnmem-leaks.%ld.txt", (long)getpid());
  snprintf(child, sizeof child, "nnmem-leaks.%ld.txt", (long)pid);
  char buf[4096];
  read_text(mine, buf, sizeof buf);
  assert_non_null(strstr(buf, "100 bytes in 1 blocks"));
  read_text(child, buf, sizeof buf);
  assert_non_null(strstr(buf, "300 bytes in 2 blocks"));
  unlink(mine);
  unlink(child);
  assert_int_equal(chdir(cwd), 0);
  rmdir(dir);
}

static void test_environment(void **state) {
  (void)state;
  nnmem_leaks_config_t lc;
  setenv("NNMEM_LEAKS", "bogus", 1);
  assert_int_equal(nnmem_leaks_config_from_env(&lc), -1);
  assert_int_equal(lc.mode, NNMEM_LEAKS_OFF);
  setenv("NNMEM_LEAKS", "sampled:-5", 1);
  assert_int_equal(nnmem_leaks_config_from_env(&lc), -1);
  /* decimal digits only, 1 .. 2^62: no sign, no white space, no
   * overflow to ULLONG_MAX (which never samples) */
  static const char *const bad[] = {
      "sampled: 5", "sampled:+7", "sampled:\t12", "sampled:0", "sampled:",
      "sampled:12k", "sampled:99999999999999999999999",
      "sampled:4611686018427387905", "sampledx", "full:1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("NNMEM_LEAKS", bad[i], 1);
    assert_int_equal(nnmem_leaks_config_from_env(&lc), -1);
    assert_int_equal(lc.mode, NNMEM_LEAKS_OFF);
  }
  setenv("NNMEM_LEAKS", "sampled:4611686018427387904", 1); /* 2^62 */
  assert_int_equal(nnmem_leaks_config_from_env(&lc), 1);
  assert_true(lc.sample_bytes == (UINT64_C(1) << 62));
  setenv("NNMEM_LEAKS", "0", 1);
  assert_int_equal(nnmem_leaks_config_from_env(&lc), 0);

  const char *path = tu_tmp_path("leaks.json");
  setenv("NNMEM_LEAKS", "sampled:4096", 1);
  setenv("NNMEM_LEAKS_REPORT", path, 1);
  assert_int_equal(nnmem_leaks_config_from_env(&lc), 1);
  assert_int_equal(lc.mode, NNMEM_LEAKS_SAMPLED);
  assert_int_equal(lc.sample_bytes, 4096);
  assert_int_equal(lc.report_format, NNMEM_LEAKS_JSON);
  nnmem_allocator_t *a = NULL;
  assert_ok(nnmem_allocator_create(NULL, &a)); /* leaks from the env */
  int line = __LINE__ + 1;
  void *p = NNMEM_ALLOC(a, 1 << 20); /* p = 1 - e^-256: recorded */
  (void)p;
  nnmem_allocator_destroy(a); /* a leak: reported at destroy */
  unsetenv("NNMEM_LEAKS");
  unsetenv("NNMEM_LEAKS_REPORT");
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  cJSON *j = cJSON_Parse(buf);
  assert_non_null(j);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "mode")->valuestring,
                      "sampled");
  const cJSON *s0 =
      cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "sites"), 0);
  assert_non_null(s0);
  assert_true(num(s0, "line") == line);
  assert_true(num(s0, "bytes") == 1 << 20);
  cJSON_Delete(j);
}

static int setup(void **state) {
  (void)state;
  return tu_tmpdir_create("leaks");
}
static int teardown(void **state) {
  (void)state;
  return tu_tmpdir_remove();
}

/* The sampling's libm-free functions (common/mathx.h) against libm: over
 * every binade of (0, 1] with subnormals, the sampler's own draws (53-bit
 * uniforms), and size / N ratios from 1e-12 to 800 (fixed seed). */
static void test_math_against_libm(void **state) {
  (void)state;
  uint64_t s = 0x5eed1eaf;
  printf("# seed 0x5eed1eaf\n");
  double worst_ln = 0, worst_ex = 0;
  for (int i = 0; i < 200000; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = ((double)(s >> 11) + 1.0) * 0x1p-53; /* as draw_interval */
    double x = i < 2200 ? ldexp(1.0 + (double)(i % 7) / 7.0, -(i / 2))
                        : u; /* 2^0 down to 2^-1099 (subnormal) */
    if (x > 1.0) x = 1.0;
    double want = log(x), got = nnmem__ln(x);
    double err = fabs(got - want) / (want != 0 ? fabs(want) : 1.0);
    if (want == 0) err = fabs(got);
    if (err > worst_ln) worst_ln = err;
    double r = exp(-28.0 + 35.0 * u); /* 7e-13 .. 1.2e3 */
    double we = -expm1(-r), ge = nnmem__one_minus_exp_neg(r);
    double ee = fabs(ge - we) / we;
    if (ee > worst_ex) worst_ex = ee;
  }
  printf("# worst relative error: ln %.3g, 1-e^-x %.3g\n", worst_ln, worst_ex);
  assert_true(worst_ln < 1e-14);
  assert_true(worst_ex < 1e-14);
  assert_true(nnmem__one_minus_exp_neg(0.0) == 0.0);
  assert_true(nnmem__one_minus_exp_neg(1e6) == 1.0);
  assert_true(nnmem__ln(1.0) == 0.0);
  const double r[] = {0.0, 0.49999999999999994, 0.5, 1.5, 2.5, 1e15 + 0.5,
                      9007199254740993.0, 1.8e19, -3.0, 1e300};
  const uint64_t want[] = {0, 0, 1, 2, 3, 1000000000000001ULL,
                           9007199254740992ULL, 18000000000000000000ULL, 0,
                           UINT64_MAX};
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
    assert_true(nnmem__round_u64(r[i]) == want[i]);
  assert_true(nnmem__round_u64(NAN) == 0);
}

/* The sampling interval's draw (nnmem__neg_ln_u53, -ln(x / 2^53) for x in
 * [1, 2^53]): against libm within 1e-9 absolute, at the ends, at every
 * power of two and next to the range reduction's switch (the mantissa of
 * sqrt2), and over 53-bit uniforms; then its law: 2,000,000 draws from a
 * fixed splitmix64 seed, their mean within 5 standard deviations of 1 (an
 * exponential of mean 1 has variance 1), and the share above t for t in
 * {0.1, 0.5, 1, 2, 4, 8} within 5 binomial sigma of e^-t. */
static uint64_t splitmix_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static void draw_near(uint64_t x, double *worst) {
  double want = -log((double)x * 0x1p-53), got = nnmem__neg_ln_u53(x);
  double e = fabs(got - want);
  if (e > *worst) *worst = e;
}

static void test_draw_law(void **state) {
  (void)state;
  const uint64_t seed0 = 0xd1ce5eedULL;
  printf("# seed 0x%llx\n", (unsigned long long)seed0);
  double worst = 0;
  draw_near(1, &worst);
  draw_near(1ULL << 53, &worst);
  assert_true(nnmem__neg_ln_u53(1ULL << 53) == 0.0);
  for (int e = 0; e <= 53; e++) {
    uint64_t p = 1ULL << e;
    draw_near(p, &worst);
    if (e < 53) draw_near(p + p / 2, &worst);
    /* around m = sqrt2 (mantissa 0x6a09e667f3bcd): both sides of the
     * switch to e + 1 */
    double r = ldexp(1.41421356237309504880, e);
    uint64_t q = (uint64_t)r;
    for (uint64_t d = 0; d < 3 && e >= 1 && e < 53; d++) {
      draw_near(q - d > 0 ? q - d : 1, &worst);
      if (q + d <= (1ULL << 53)) draw_near(q + d, &worst);
    }
  }
  uint64_t s = seed0;
  for (int i = 0; i < 200000; i++)
    draw_near((splitmix_next(&s) >> 11) + 1, &worst);
  printf("# worst absolute error of the draw: %.3g\n", worst);
  assert_true(worst < 1e-9);

  enum { DRAWS = 2000000 };
  const double t[] = {0.1, 0.5, 1, 2, 4, 8};
  uint64_t above[6] = {0};
  double sum = 0;
  s = seed0;
  for (int i = 0; i < DRAWS; i++) {
    double v = nnmem__neg_ln_u53((splitmix_next(&s) >> 11) + 1);
    sum += v;
    for (int k = 0; k < 6; k++)
      above[k] += v > t[k];
  }
  double mean = sum / DRAWS, sd = 1.0 / sqrt((double)DRAWS);
  printf("# mean of %d draws: %.6f (5 sigma: %.6f)\n", DRAWS, mean, 5 * sd);
  assert_true(fabs(mean - 1.0) < 5 * sd);
  for (int k = 0; k < 6; k++) {
    double p = exp(-t[k]), got = (double)above[k] / DRAWS;
    double sig = sqrt(p * (1 - p) / DRAWS);
    printf("# P(draw > %g): %.6f, e^-t %.6f\n", t[k], got, p);
    assert_true(fabs(got - p) < 5 * sig);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_math_against_libm),
      cmocka_unit_test(test_draw_law),
      cmocka_unit_test(test_full_sites),
      cmocka_unit_test(test_backtrace_sites),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_sampled_estimates),
      cmocka_unit_test(test_sampled_mixed_rates),
      cmocka_unit_test(test_sampled_pages),
      cmocka_unit_test(test_mark_bits),
      cmocka_unit_test(test_sampled_unbiased_paths),
      cmocka_unit_test(test_enable_late_and_misuse),
      cmocka_unit_test(test_enable_late_threads),
      cmocka_unit_test(test_awkward_names),
      cmocka_unit_test(test_environment),
      cmocka_unit_test(test_default_report_after_fork),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

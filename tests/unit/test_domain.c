/* test_domain.c - tenant domains: ownership, grants and revocation, quotas,
 * colour tags, every bad input (status, diag text, counter), a randomized
 * run of 10^6 operations by 8 tenants against a shadow model (fixed seed,
 * printed) in which every cross-domain free without a grant must be
 * refused, the allocator as the underlying source, hardware enforcement
 * (a child that touches a neighbour's block takes a SIGSEGV), the JSON and
 * Prometheus renderings and the tenant trace replay. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/domain_internal.h"
#include "testutil.h"

typedef struct fixture {
  nnmem_backend_t *dev;
  nnmem_pool_t *pool;
  nnmem_domain_set_t *set;
} fixture_t;

static void fx_open(fixture_t *f, uint64_t capacity) {
  nnmem_sim_config_t sc = {0};
  sc.capacity = capacity;
  assert_ok(nnmem_backend_sim_create(&sc, &f->dev));
  assert_ok(nnmem_pool_create(NNMEM_POOL_TLSF, NULL, f->dev, &f->pool));
  nnmem_domain_set_config_t c;
  nnmem_domain_set_config_init(&c);
  c.pool = f->pool;
  nnmem_diag_t d = {{0}};
  assert_ok(nnmem_domain_set_create(&c, &f->set, &d));
}

static void fx_close(fixture_t *f) {
  nnmem_diag_t d = {{0}};
  nnmem_status_t s = nnmem_domain_set_check(f->set, &d);
  if (s != NNMEM_OK) fail_msg("check: %s", d.message);
  nnmem_domain_set_destroy(f->set);
  nnmem_stats_t st;
  assert_ok(nnmem_pool_stats(f->pool, &st));
  assert_int_equal(st.live_count, 0); /* destroy gave every block back */
  nnmem_pool_destroy(f->pool);
  nnmem_backend_destroy(f->dev);
}

static nnmem_domain_t *mk(nnmem_domain_set_t *set, uint64_t quota) {
  nnmem_domain_config_t c;
  nnmem_domain_config_init(&c);
  c.quota = quota;
  nnmem_domain_t *d = NULL;
  assert_ok(nnmem_domain_create(set, &c, &d, NULL));
  return d;
}

static nnmem_domain_stats_t stats_of(const nnmem_domain_t *d) {
  nnmem_domain_stats_t st;
  assert_ok(nnmem_domain_stats(d, &st));
  return st;
}

static void test_grants(void **state) {
  (void)state;
  fixture_t f;
  fx_open(&f, 0);
  nnmem_domain_t *a = mk(f.set, 1 << 20), *b = mk(f.set, 1 << 20);
  assert_string_equal(nnmem_domain_name(a), "tenant0");
  assert_int_equal(nnmem_domain_id(b), 1);
  void *p = NULL, *q = NULL;
  assert_ok(nnmem_domain_alloc(a, 1000, 0, &p, NULL));
  assert_ok(nnmem_domain_alloc(b, 24, 0, &q, NULL));
  uint32_t owner = 9, colour = 0;
  uint64_t size = 0;
  assert_ok(nnmem_domain_block_info(f.set, p, &owner, &colour, &size));
  assert_int_equal(owner, 0);
  assert_int_equal(colour, 1); /* default colour: id + 1 */
  assert_int_equal(size, 1000);
  assert_ok(nnmem_domain_block_info(f.set, q, &owner, &colour, NULL));
  assert_int_equal(owner, 1);
  assert_int_equal(colour, 2);

  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_domain_free(b, p, &d), NNMEM_ERR_DENIED);
  assert_non_null(strstr(d.message, "tenant1"));
  assert_non_null(strstr(d.message, "of domain 'tenant0'"));
  assert_int_equal(nnmem_domain_access(b, p, NNMEM_GRANT_READ, NULL),
                   NNMEM_ERR_DENIED);
  assert_ok(
      nnmem_domain_access(a, p, NNMEM_GRANT_READ | NNMEM_GRANT_FREE, NULL));
  /* only the owner grants */
  assert_int_equal(nnmem_domain_grant(b, p, 1, NNMEM_GRANT_READ, NULL),
                   NNMEM_ERR_DENIED);
  assert_ok(nnmem_domain_grant(a, p, 1, NNMEM_GRANT_READ, NULL));
  assert_ok(nnmem_domain_access(b, p, NNMEM_GRANT_READ, NULL));
  /* READ does not let b free it */
  assert_int_equal(nnmem_domain_free(b, p, NULL), NNMEM_ERR_DENIED);
  assert_int_equal(
      nnmem_domain_access(b, p, NNMEM_GRANT_READ | NNMEM_GRANT_FREE, NULL),
      NNMEM_ERR_DENIED);
  assert_ok(nnmem_domain_grant(a, p, 1, NNMEM_GRANT_FREE, NULL));
  assert_ok(nnmem_domain_revoke(a, p, 1, NNMEM_GRANT_FREE, NULL));
  assert_int_equal(nnmem_domain_free(b, p, NULL), NNMEM_ERR_DENIED);
  assert_ok(nnmem_domain_grant(a, p, 1, NNMEM_GRANT_FREE, NULL));
  assert_ok(nnmem_domain_free(b, p, NULL)); /* under the grant */
  /* the bytes left a's account; the free counts on b */
  nnmem_domain_stats_t sa = stats_of(a), sb = stats_of(b);
  assert_int_equal(sa.live_bytes, 0);
  assert_int_equal(sa.peak_bytes, 1000);
  assert_int_equal(sa.live_blocks, 0);
  assert_int_equal(sa.frees, 0);
  assert_int_equal(sa.grants, 3);
  assert_int_equal(sa.revokes, 1);
  assert_int_equal(sb.frees, 1);
  assert_int_equal(sb.frees_granted, 1);
  assert_int_equal(sb.refused_denied, 6); /* 3 frees, 2 accesses, 1 grant */
  assert_int_equal(sb.live_bytes, 24);
  /* the grant died with the block: a new block at the same address is
   * a's again, b has no right to it */
  void *p2 = NULL;
  assert_ok(nnmem_domain_alloc(a, 1000, 0, &p2, NULL));
  assert_int_equal(nnmem_domain_free(b, p2, NULL), NNMEM_ERR_DENIED);
  assert_ok(nnmem_domain_free(a, p2, NULL));
  /* the owner frees a block it granted (the one-call pool path): the
   * grant record goes with it, and b gets nothing at that address */
  void *r = NULL;
  assert_ok(nnmem_domain_alloc(a, 64, 0, &r, NULL));
  assert_ok(
      nnmem_domain_grant(a, r, 1, NNMEM_GRANT_READ | NNMEM_GRANT_FREE, NULL));
  assert_int_equal(f.set->grants.count, 1);
  assert_ok(nnmem_domain_free(a, r, NULL));
  assert_int_equal(f.set->grants.count, 0);
  assert_int_equal(stats_of(a).live_bytes, 0);
  assert_int_equal(nnmem_domain_free(b, r, NULL), NNMEM_ERR_INVALID);
  fx_close(&f); /* q is still live: destroy frees it */
}

static void test_bad_input(void **state) {
  (void)state;
  nnmem_diag_t d = {{0}};
  nnmem_domain_set_t *set = NULL;
  nnmem_domain_set_config_t c;
  nnmem_domain_set_config_init(&c);
  assert_int_equal(nnmem_domain_set_create(&c, &set, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "exactly one of pool and allocator"));
  assert_null(set);

  fixture_t f;
  fx_open(&f, 0);
  nnmem_domain_config_t dc;
  nnmem_domain_config_init(&dc);
  dc.name = "zero";
  nnmem_domain_t *z = (nnmem_domain_t *)&dc; /* must be cleared */
  assert_int_equal(nnmem_domain_create(f.set, &dc, &z, &d), NNMEM_ERR_INVALID);
  assert_null(z);
  assert_non_null(strstr(d.message, "domain 'zero': quota 0"));
  nnmem_domain_t *a = mk(f.set, 4096);
  void *p = NULL;
  assert_ok(nnmem_domain_alloc(a, 100, 0, &p, NULL));
  /* grant to a domain that does not exist */
  assert_int_equal(nnmem_domain_grant(a, p, 7, NNMEM_GRANT_READ, &d),
                   NNMEM_ERR_NOT_FOUND);
  assert_non_null(strstr(d.message, "domain 7, which does not exist"));
  assert_int_equal(nnmem_domain_grant(a, p, 0, 0, NULL), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_domain_grant(a, p, 0, 4, NULL), NNMEM_ERR_INVALID);
  /* forged, interior, NULL pointers; then a double free */
  assert_int_equal(nnmem_domain_free(a, (void *)(uintptr_t)0x1234, &d),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "not a live block"));
  assert_int_equal(nnmem_domain_free(a, (char *)p + 16, NULL),
                   NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_domain_free(a, NULL, NULL), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_domain_access(a, (char *)p + 1, 1, NULL),
                   NNMEM_ERR_INVALID);
  assert_ok(nnmem_domain_free(a, p, NULL));
  assert_int_equal(nnmem_domain_free(a, p, NULL), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_domain_alloc(a, 0, 0, &p, NULL), NNMEM_ERR_INVALID);
  assert_null(p);
  assert_int_equal(nnmem_domain_alloc(a, 8, 3, &p, NULL), NNMEM_ERR_INVALID);
  nnmem_domain_stats_t st = stats_of(a);
  assert_int_equal(st.refused_bad_input, 5); /* 3 grants, 2 allocs */
  assert_int_equal(st.refused_invalid, 5);
  assert_int_equal(st.refused_denied, 0);
  assert_int_equal(st.frees, 1);
  for (int i = 1; i < NNMEM_DOMAIN_MAX; i++)
    (void)mk(f.set, 1);
  nnmem_domain_t *extra = NULL;
  dc.quota = 1;
  dc.name = NULL;
  assert_int_equal(nnmem_domain_create(f.set, &dc, &extra, &d),
                   NNMEM_ERR_OVERFLOW);
  nnmem_domain_t *g = NULL;
  assert_int_equal(nnmem_domain_get(f.set, NNMEM_DOMAIN_MAX, &g),
                   NNMEM_ERR_NOT_FOUND);
  assert_ok(nnmem_domain_get(f.set, NNMEM_DOMAIN_MAX - 1, &g));
  assert_int_equal(nnmem_domain_id(g), NNMEM_DOMAIN_MAX - 1);
  nnmem_domain_set_counters_t sc;
  assert_ok(nnmem_domain_set_counters(f.set, &sc));
  assert_int_equal(sc.bad_input, 2); /* quota 0, the 65th domain */
  assert_int_equal(sc.domains, NNMEM_DOMAIN_MAX);
  assert_int_equal(sc.protect, NNMEM_PROTECT_NONE);
  assert_int_equal(nnmem_domain_enter(f.set, a), NNMEM_ERR_STATE);
  /* a grant to the 64th domain (bit 63) */
  assert_ok(nnmem_domain_alloc(a, 100, 0, &p, NULL));
  assert_ok(nnmem_domain_grant(a, p, 63, NNMEM_GRANT_FREE, NULL));
  assert_ok(nnmem_domain_free(g, p, NULL));
  fx_close(&f);
}

static void test_quota(void **state) {
  (void)state;
  fixture_t f;
  fx_open(&f, 8u << 20);
  nnmem_domain_t *a = mk(f.set, 3000), *b = mk(f.set, 64u << 20);
  void *p[3];
  assert_ok(nnmem_domain_alloc(a, 1000, 0, &p[0], NULL));
  assert_ok(nnmem_domain_alloc(a, 2000, 0, &p[1], NULL)); /* exactly full */
  nnmem_diag_t d = {{0}};
  p[2] = &d; /* a refusal clears *out */
  assert_int_equal(nnmem_domain_alloc(a, 1, 0, &p[2], &d), NNMEM_ERR_NOMEM);
  assert_null(p[2]);
  assert_non_null(strstr(d.message, "quota (3000 of 3000 bytes live)"));
  assert_ok(nnmem_domain_free(a, p[0], NULL));
  assert_ok(nnmem_domain_alloc(a, 1000, 0, &p[0], NULL));
  /* b's quota is larger than the device: the pool refuses */
  void *big = &d;
  assert_int_equal(nnmem_domain_alloc(b, 32u << 20, 0, &big, &d),
                   NNMEM_ERR_NOMEM);
  assert_null(big);
  assert_non_null(strstr(d.message, "the pool refused"));
  nnmem_domain_stats_t sa = stats_of(a), sb = stats_of(b);
  assert_int_equal(sa.refused_quota, 1);
  assert_int_equal(sa.live_bytes, 3000);
  assert_int_equal(sa.peak_bytes, 3000);
  assert_int_equal(sb.refused_pool, 1);
  assert_int_equal(sb.refused_quota, 0);
  assert_int_equal(sb.live_bytes, 0);
  fx_close(&f);
}

/* The randomized run: 8 tenants, 10^6 operations, a shadow model of every
 * live block (owner, size, FREE grants); each status must be the one the
 * model predicts. */
enum { TENANTS = 8, OPS = 1000000, SLOTS = 4096 };

typedef struct shadow {
  void *p;
  uint32_t owner;
  uint64_t size, can_free; /* bit i: tenant i holds a FREE grant */
} shadow_t;

/* The bytes a block of `size` is charged: over an allocator, a block of at
 * most 8 KiB is charged its size class (16-byte steps to 128 B, then four
 * classes per power of two: the largest power of two below the size, over
 * 4, is the step), computed here independently of the allocator's table;
 * over a pool, the request. */
static uint64_t charged(uint64_t size, int by_class) {
  if (!by_class || size > 8192) return size;
  uint64_t step = 16;
  if (size > 128) {
    uint64_t pow = 128;
    while (pow * 2 < size)
      pow *= 2;
    step = pow / 4;
  }
  return (size + step - 1) / step * step;
}

/* The randomized run on `set` (a pool set or, by_class, an allocator set
 * whose small blocks carry their owner in their page). */
static void random_run(nnmem_domain_set_t *set, int by_class,
                       const char *what) {
  const uint64_t seed = 20261201;
  uint64_t rng = seed;
  printf("test_random (%s): seed %llu, %d tenants, %d operations\n", what,
         (unsigned long long)seed, TENANTS, OPS);
  struct {
    nnmem_domain_set_t *set;
  } f = {set};
  nnmem_domain_t *dom[TENANTS];
  uint64_t live[TENANTS] = {0}, quota = 1u << 20;
  for (int i = 0; i < TENANTS; i++)
    dom[i] = mk(f.set, quota);
  static shadow_t sh[SLOTS];
  memset(sh, 0, sizeof sh);
  uint64_t cross = 0, cross_refused = 0, granted = 0, forged = 0;
  uint64_t quota_refusals = 0, frees = 0;
  for (long op = 0; op < OPS; op++) {
    shadow_t *s = &sh[tu_rand(&rng) % SLOTS];
    uint32_t t = (uint32_t)(tu_rand(&rng) % TENANTS);
    uint64_t r = tu_rand(&rng) % 100;
    nnmem_status_t st;
    if (!s->p) {
      if (r < 10) { /* a forged pointer: never a live block */
        st = nnmem_domain_free(dom[t], (void *)(uintptr_t)(8 + 16 * op), NULL);
        if (st != NNMEM_ERR_INVALID)
          fail_msg("seed %llu op %ld: forged free -> %s",
                   (unsigned long long)seed, op, nnmem_status_name(st));
        forged++;
        continue;
      }
      /* one in 16 past the small sizes: the table path beside the pages */
      uint64_t size = r % 16 == 15 ? 8193 + tu_rand(&rng) % 16384
                                   : 1 + tu_rand(&rng) % 8192;
      st = nnmem_domain_alloc(dom[t], size, 0, &s->p, NULL);
      size = charged(size, by_class);
      if (live[t] + size > quota) {
        if (st != NNMEM_ERR_NOMEM)
          fail_msg("seed %llu op %ld: over quota -> %s",
                   (unsigned long long)seed, op, nnmem_status_name(st));
        quota_refusals++;
        continue;
      }
      if (st != NNMEM_OK)
        fail_msg("seed %llu op %ld: alloc -> %s", (unsigned long long)seed, op,
                 nnmem_status_name(st));
      live[t] += size;
      s->owner = t, s->size = size, s->can_free = 0;
      uint32_t owner = 99;
      uint64_t bsize = 0;
      assert_ok(nnmem_domain_block_info(f.set, s->p, &owner, NULL, &bsize));
      if (owner != t || bsize != size)
        fail_msg("seed %llu op %ld: block of %u, %llu bytes; expected %u, "
                 "%llu",
                 (unsigned long long)seed, op, owner,
                 (unsigned long long)bsize, t, (unsigned long long)size);
      continue;
    }
    if (r < 10 && t != s->owner) { /* the owner grants t */
      assert_ok(
          nnmem_domain_grant(dom[s->owner], s->p, t, NNMEM_GRANT_FREE, NULL));
      s->can_free |= 1ULL << t;
      continue;
    }
    if (r < 15 && s->can_free) { /* the owner revokes everything */
      for (uint32_t g = 0; g < TENANTS; g++)
        if (s->can_free >> g & 1)
          assert_ok(nnmem_domain_revoke(dom[s->owner], s->p, g,
                                        NNMEM_GRANT_FREE, NULL));
      s->can_free = 0;
      continue;
    }
    if (r < 25) { /* an interior pointer */
      if (s->size > 1) {
        st = nnmem_domain_free(dom[t], (char *)s->p + 1, NULL);
        if (st != NNMEM_ERR_INVALID)
          fail_msg("seed %llu op %ld: interior free -> %s",
                   (unsigned long long)seed, op, nnmem_status_name(st));
        forged++;
      }
      continue;
    }
    int allowed = t == s->owner || (s->can_free >> t & 1);
    st = nnmem_domain_free(dom[t], s->p, NULL);
    if (t != s->owner) cross++;
    if (!allowed) {
      if (st != NNMEM_ERR_DENIED)
        fail_msg(
            "seed %llu op %ld: tenant %u freed tenant %u's block "
            "without a grant -> %s",
            (unsigned long long)seed, op, t, s->owner, nnmem_status_name(st));
      cross_refused++;
      continue;
    }
    if (st != NNMEM_OK)
      fail_msg("seed %llu op %ld: allowed free -> %s", (unsigned long long)seed,
               op, nnmem_status_name(st));
    if (t != s->owner) granted++;
    frees++;
    live[s->owner] -= s->size;
    s->p = NULL;
    if (op % 10000 == 0) {
      nnmem_diag_t d = {{0}};
      if (nnmem_domain_set_check(f.set, &d) != NNMEM_OK)
        fail_msg("seed %llu op %ld: %s", (unsigned long long)seed, op,
                 d.message);
    }
  }
  uint64_t denied = 0, invalid = 0, qref = 0, gfree = 0, nfree = 0;
  for (int i = 0; i < TENANTS; i++) {
    nnmem_domain_stats_t st = stats_of(dom[i]);
    assert_int_equal(st.live_bytes, live[i]);
    denied += st.refused_denied;
    invalid += st.refused_invalid;
    qref += st.refused_quota;
    gfree += st.frees_granted;
    nfree += st.frees;
  }
  printf(
      "test_random: %llu cross-domain frees, %llu without a grant "
      "refused (%.1f%%), %llu granted; %llu forged/interior refused, "
      "%llu quota refusals\n",
      (unsigned long long)cross, (unsigned long long)cross_refused,
      cross - granted
          ? 100.0 * (double)cross_refused / (double)(cross - granted)
          : 0.0,
      (unsigned long long)granted, (unsigned long long)forged,
      (unsigned long long)quota_refusals);
  assert_true(cross_refused > 100000); /* the run drove the state */
  assert_true(granted > 1000);
  assert_int_equal(cross_refused + granted, cross);
  assert_int_equal(denied, cross_refused);
  assert_int_equal(invalid, forged);
  assert_int_equal(qref, quota_refusals);
  assert_int_equal(gfree, granted);
  assert_int_equal(nfree, frees);
}

static void test_random(void **state) {
  (void)state;
  fixture_t f;
  fx_open(&f, 0);
  random_run(f.set, 0, "tlsf pool");
  fx_close(&f);
}

/* The same run over the allocator: small blocks in the domains' own
 * pages (owner read from the page), large ones in the table. */
static void test_random_allocator(void **state) {
  (void)state;
  nnmem_allocator_t *al = NULL;
  assert_ok(nnmem_allocator_create(NULL, &al));
  nnmem_domain_set_config_t c;
  nnmem_domain_set_config_init(&c);
  c.allocator = al;
  nnmem_domain_set_t *set = NULL;
  assert_ok(nnmem_domain_set_create(&c, &set, NULL));
  random_run(set, 1, "allocator");
  nnmem_diag_t d = {{0}};
  if (nnmem_domain_set_check(set, &d) != NNMEM_OK) fail_msg("%s", d.message);
  nnmem_domain_set_destroy(set); /* frees every live block */
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(al, &st));
  assert_int_equal(st.live_count, 0);
  nnmem_allocator_destroy(al);
}

static void test_allocator(void **state) {
  (void)state;
  nnmem_allocator_t *al = NULL;
  assert_ok(nnmem_allocator_create(NULL, &al));
  nnmem_domain_set_config_t c;
  nnmem_domain_set_config_init(&c);
  c.allocator = al;
  nnmem_domain_set_t *set = NULL;
  assert_ok(nnmem_domain_set_create(&c, &set, NULL));
  nnmem_domain_t *a = mk(set, 1 << 20), *b = mk(set, 4 << 20);
  char *p = NULL, *q = NULL;
  assert_ok(nnmem_domain_alloc(a, 100, 0, (void **)&p, NULL));
  assert_ok(nnmem_domain_alloc(b, 3 << 19, 64, (void **)&q, NULL));
  assert_int_equal((uintptr_t)q % 64, 0);
  memset(p, 1, 100); /* real memory */
  memset(q, 2, 3 << 19);
  assert_int_equal(nnmem_domain_free(a, q, NULL), NNMEM_ERR_DENIED);
  assert_ok(nnmem_domain_free(b, q, NULL));
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(al, &st));
  assert_int_equal(st.live_count, 1);
  nnmem_domain_set_destroy(set); /* frees p */
  assert_ok(nnmem_allocator_stats(al, &st));
  assert_int_equal(st.live_count, 0);
  nnmem_allocator_destroy(al);
}

/* Over an allocator: the owner comes from the block's page. Pointers the
 * set never handed out are refused whatever page they sit in: a block of
 * the allocator's own thread cache, a block of another set over the same
 * allocator, a freed block, an interior pointer; the checker sees a
 * counter that disagrees with the pages. */
static void test_allocator_pages(void **state) {
  (void)state;
  nnmem_allocator_t *al = NULL;
  assert_ok(nnmem_allocator_create(NULL, &al));
  nnmem_domain_set_config_t c;
  nnmem_domain_set_config_init(&c);
  c.allocator = al;
  nnmem_domain_set_t *s1 = NULL, *s2 = NULL;
  assert_ok(nnmem_domain_set_create(&c, &s1, NULL));
  assert_ok(nnmem_domain_set_create(&c, &s2, NULL));
  nnmem_domain_t *a = mk(s1, 1 << 20), *b = mk(s1, 1 << 20);
  nnmem_domain_t *x = mk(s2, 1 << 20);
  char *p = NULL, *q = NULL, *r = NULL;
  assert_ok(nnmem_domain_alloc(a, 100, 0, (void **)&p, NULL));
  assert_ok(nnmem_domain_alloc(x, 100, 0, (void **)&q, NULL));
  r = nnmem_alloc(al, 100); /* the thread's cache, no domain's */
  assert_non_null(r);
  uint64_t size = 0;
  uint32_t owner = 9;
  assert_ok(nnmem_domain_block_info(s1, p, &owner, NULL, &size));
  assert_int_equal(owner, 0);
  assert_int_equal(size, 112); /* charged its size class */
  assert_int_equal(stats_of(a).live_bytes, 112);
  nnmem_diag_t d = {{0}};
  assert_int_equal(nnmem_domain_free(a, q, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "not a live block of the set"));
  assert_int_equal(nnmem_domain_free(a, r, NULL), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_domain_free(a, p + 16, NULL), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_domain_free(b, p, &d), NNMEM_ERR_DENIED);
  assert_non_null(strstr(d.message, "of domain 'tenant0' refused"));
  /* a grant on a page block, then the grantee frees it */
  assert_ok(nnmem_domain_grant(a, p, 1, NNMEM_GRANT_FREE, NULL));
  assert_ok(nnmem_domain_free(b, p, NULL));
  assert_int_equal(stats_of(a).live_bytes, 0);
  assert_int_equal(stats_of(b).frees_granted, 1);
  assert_int_equal(nnmem_domain_free(a, p, NULL), NNMEM_ERR_INVALID); /* twice */
  assert_int_equal(stats_of(a).refused_invalid, 4);
  /* a counter off: the checker's walk over the pages sees it */
  assert_ok(nnmem_domain_alloc(a, 3000, 0, (void **)&p, NULL));
  assert_ok(nnmem_domain_set_check(s1, NULL));
  a->st.live_bytes += 16;
  assert_int_equal(nnmem_domain_set_check(s1, &d), NNMEM_ERR_STATE);
  assert_non_null(strstr(d.message, "tenant0"));
  a->st.live_bytes -= 16;
  assert_ok(nnmem_domain_set_check(s1, NULL));
  nnmem_free(al, r);
  nnmem_domain_set_destroy(s1); /* frees p */
  assert_ok(nnmem_domain_free(x, q, NULL));
  nnmem_domain_set_destroy(s2);
  nnmem_stats_t st;
  assert_ok(nnmem_allocator_stats(al, &st));
  assert_int_equal(st.live_count, 0);
  nnmem_allocator_destroy(al);
}

/* The child's SIGSEGV handler: a distinct exit code (a handler rather than
 * death by signal, so sanitizer runtimes that catch SIGSEGV agree). */
static void on_segv(int sig) {
  (void)sig;
  _exit(42);
}

/* In a child: enter `a`, write a's block (must work: a fault there kills
 * the child, no handler yet), then b's block (must fault: exit 42; no fault:
 * exit 0). Returns the child's wait status. */
static int touch_in_child(nnmem_domain_set_t *set, nnmem_domain_t *a, char *pa,
                          char *pb) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    if (nnmem_domain_enter(set, a) != NNMEM_OK) _exit(2);
    ((volatile char *)pa)[0] = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sigaction(SIGSEGV, &sa, NULL);
    ((volatile char *)pb)[0] = 1; /* must fault */
    _exit(0);
  }
  int ws = 0;
  waitpid(pid, &ws, 0);
  return ws;
}

static void protect_case(nnmem_domain_protect_t mode) {
  nnmem_domain_set_config_t c;
  nnmem_domain_set_config_init(&c);
  c.protect = mode;
  nnmem_domain_set_t *set = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t s = nnmem_domain_set_create(&c, &set, &d);
  if (mode == NNMEM_PROTECT_PKEY && s == NNMEM_ERR_UNSUPPORTED) {
    assert_non_null(strstr(d.message, "memory protection keys"));
    printf("protect pkey: not supported here (%s)\n", d.message);
    return;
  }
  assert_ok(s);
  nnmem_domain_protect_t in_force = nnmem_domain_set_protect(set);
  printf("protect %s: in force %s\n", nnmem_domain_protect_name(mode),
         nnmem_domain_protect_name(in_force));
  assert_true(in_force == NNMEM_PROTECT_PKEY ||
              in_force == NNMEM_PROTECT_MPROTECT);
  if (mode != NNMEM_PROTECT_AUTO) assert_int_equal(in_force, mode);
  nnmem_domain_t *a = mk(set, 100000), *b = mk(set, 5000);
  char *pa = NULL, *pb = NULL;
  assert_ok(nnmem_domain_alloc(a, 4000, 0, (void **)&pa, NULL));
  assert_ok(nnmem_domain_alloc(b, 4000, 0, (void **)&pb, NULL));
  pa[0] = pb[0] = 7; /* trusted: both open */
  int ws = touch_in_child(set, a, pa, pb);
  assert_true(WIFEXITED(ws));
  assert_int_equal(WEXITSTATUS(ws), 42);
  /* entering b from a; then a domain created while b is entered is closed */
  assert_ok(nnmem_domain_enter(set, a));
  pa[1] = 2;
  assert_ok(nnmem_domain_enter(set, b));
  pb[1] = 3;
  nnmem_domain_t *e = mk(set, 4096);
  char *pe = NULL;
  assert_ok(nnmem_domain_alloc(e, 4096, 0, (void **)&pe, NULL));
  ws = touch_in_child(set, b, pb, pe);
  assert_true(WIFEXITED(ws));
  assert_int_equal(WEXITSTATUS(ws), 42);
  assert_ok(nnmem_domain_enter(set, NULL));
  pe[0] = 1;
  assert_int_equal(pa[0] + pa[1] + pb[0] + pb[1], 7 + 2 + 7 + 3);
  /* the software checks hold as well */
  assert_int_equal(nnmem_domain_free(a, pb, NULL), NNMEM_ERR_DENIED);
  /* b's region is its quota: a 2nd block of 4000 passes the quota */
  assert_int_equal(nnmem_domain_alloc(b, 4000, 0, (void **)&pe, NULL),
                   NNMEM_ERR_NOMEM);
  nnmem_domain_set_counters_t sc;
  assert_ok(nnmem_domain_set_counters(set, &sc));
  assert_int_equal(sc.enters, 3);
  assert_int_equal(sc.live_blocks, 3);
  assert_ok(nnmem_domain_set_check(set, NULL));
  assert_ok(nnmem_domain_enter(set, b)); /* destroy opens everything */
  nnmem_domain_set_destroy(set);
}

static void test_protect(void **state) {
  (void)state;
  protect_case(NNMEM_PROTECT_MPROTECT);
  protect_case(NNMEM_PROTECT_AUTO);
  protect_case(NNMEM_PROTECT_PKEY);
  /* a pool together with protect is refused */
  nnmem_domain_set_config_t c;
  nnmem_domain_set_config_init(&c);
  c.protect = NNMEM_PROTECT_MPROTECT;
  c.pool = (nnmem_pool_t *)&c;
  nnmem_domain_set_t *set = NULL;
  assert_int_equal(nnmem_domain_set_create(&c, &set, NULL), NNMEM_ERR_INVALID);
}

static void test_format(void **state) {
  (void)state;
  fixture_t f;
  fx_open(&f, 0);
  nnmem_domain_t *a = mk(f.set, 5000000000ULL), *b = mk(f.set, 10);
  void *p = NULL;
  assert_ok(nnmem_domain_alloc(a, 4000000000ULL, 0, &p, NULL));
  assert_int_equal(nnmem_domain_free(b, p, NULL), NNMEM_ERR_DENIED);
  assert_int_equal(nnmem_domain_alloc(b, 11, 0, &p, NULL), NNMEM_ERR_NOMEM);
  nnmem_domain_stats_t st[2] = {stats_of(a), stats_of(b)};
  size_t len = 0;
  assert_int_equal(nnmem_domain_stats_format_json(st, 2, NULL, 0, &len),
                   NNMEM_ERR_OVERFLOW);
  char *buf = malloc(len + 1);
  assert_ok(nnmem_domain_stats_format_json(st, 2, buf, len + 1, &len));
  cJSON *j = cJSON_Parse(buf);
  assert_non_null(j);
  assert_int_equal(cJSON_GetArraySize(j), 2);
  cJSON *j0 = cJSON_GetArrayItem(j, 0), *j1 = cJSON_GetArrayItem(j, 1);
  assert_string_equal(cJSON_GetObjectItem(j0, "domain")->valuestring,
                      "tenant0");
  assert_true(cJSON_GetObjectItem(j0, "live_bytes")->valuedouble ==
              4000000000.0);
  assert_true(cJSON_GetObjectItem(j0, "quota_bytes")->valuedouble ==
              5000000000.0);
  cJSON *r1 = cJSON_GetObjectItem(j1, "refused");
  assert_int_equal(cJSON_GetObjectItem(r1, "denied")->valueint, 1);
  assert_int_equal(cJSON_GetObjectItem(r1, "quota")->valueint, 1);
  assert_int_equal(cJSON_GetObjectItem(r1, "invalid")->valueint, 0);
  cJSON_Delete(j);
  free(buf);
  assert_int_equal(nnmem_domain_stats_format_prometheus(st, 2, NULL, 0, &len),
                   NNMEM_ERR_OVERFLOW);
  buf = malloc(len + 1);
  assert_ok(nnmem_domain_stats_format_prometheus(st, 2, buf, len + 1, &len));
  assert_non_null(strstr(
      buf, "\nnnmem_domain_live_bytes{domain=\"tenant0\"} 4000000000\n"));
  assert_non_null(strstr(
      buf,
      "\nnnmem_domain_refusals_total{domain=\"tenant1\",reason=\"denied\"} "
      "1\n"));
  assert_non_null(strstr(buf, "# TYPE nnmem_domain_refusals_total counter\n"));
  free(buf);
  fx_close(&f);
}

static void test_replay(void **state) {
  (void)state;
  /* 6 buffers of 100 bytes, all live at once over [0, 2); tenants 2 with a
   * quota of 250: each tenant gets 3 buffers and is refused its third */
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  for (int i = 0; i < 6; i++)
    assert_ok(nnmem_problem_add(p, NULL, 100, 1, 0, 2, NULL));
  nnmem_domain_replay_result_t r;
  nnmem_stats_t ps;
  nnmem_diag_t d = {{0}};
  assert_ok(nnmem_domain_replay(p, NNMEM_POOL_TLSF, 2, 250, &r, &ps, &d));
  assert_int_equal(r.tenants, 2);
  assert_int_equal(r.operations, 12);
  assert_int_equal(r.skipped, 2); /* buffers 4 and 5 */
  assert_int_equal(r.probes, 4);  /* one per block freed */
  assert_int_equal(r.probes_refused, 4);
  assert_int_equal(r.granted_frees, 0); /* no tenant reached its 4th */
  assert_int_equal(r.peak_live_bytes, 400);
  assert_int_equal(r.tenant[0].refused_quota, 1);
  assert_int_equal(r.tenant[1].refused_quota, 1);
  assert_int_equal(r.tenant[0].refused_denied, 2);
  assert_int_equal(r.tenant[0].peak_bytes, 200);
  assert_int_equal(ps.live_count, 0);
  free(r.tenant);
  /* a quota large enough: buffers 6.. (tenant 0: 0, 2, 4, 6 -> the 4th
   * block, buffer 6, is freed by tenant 1 under a grant) */
  for (int i = 0; i < 4; i++)
    assert_ok(nnmem_problem_add(p, NULL, 100, 1, 1, 3, NULL));
  assert_ok(nnmem_domain_replay(p, NNMEM_POOL_TLSF, 2, 1 << 20, &r, NULL, &d));
  assert_int_equal(r.skipped, 0);
  assert_int_equal(r.granted_frees, 2); /* buffers 6 and 7 */
  assert_int_equal(r.tenant[1].frees_granted, 1);
  assert_int_equal(r.tenant[0].frees_granted, 1);
  assert_int_equal(r.tenant[0].frees + r.tenant[1].frees, 10);
  free(r.tenant);
  /* one tenant: no probes */
  assert_ok(
      nnmem_domain_replay(p, NNMEM_POOL_BEST_FIT, 1, 1 << 20, &r, NULL, &d));
  assert_int_equal(r.probes, 0);
  assert_int_equal(r.tenant[0].frees, 10);
  free(r.tenant);
  assert_int_equal(nnmem_domain_replay(p, NNMEM_POOL_TLSF, 2, 0, &r, NULL, &d),
                   NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "quota 0"));
  assert_null(r.tenant);
  assert_int_equal(nnmem_domain_replay(p, NNMEM_POOL_TLSF, 65, 1, &r, NULL, &d),
                   NNMEM_ERR_INVALID);
  nnmem_problem_destroy(p);
}

/* The checker can fail: each invariant broken by hand is reported. The
 * block table first (an allocator set's blocks over 8 KiB live there),
 * then the owners in a pool's records. */
static void test_check(void **state) {
  (void)state;
  nnmem_allocator_t *al = NULL;
  assert_ok(nnmem_allocator_create(NULL, &al));
  nnmem_domain_set_config_t c;
  nnmem_domain_set_config_init(&c);
  c.allocator = al;
  struct {
    nnmem_domain_set_t *set;
  } f = {NULL};
  assert_ok(nnmem_domain_set_create(&c, &f.set, NULL));
  nnmem_domain_t *a = mk(f.set, 100000), *b = mk(f.set, 100000);
  void *p = NULL;
  assert_ok(nnmem_domain_alloc(a, 10000, 0, &p, NULL));
  assert_ok(nnmem_domain_grant(a, p, 1, NNMEM_GRANT_READ, NULL));
  nnmem_diag_t d = {{0}};
  assert_ok(nnmem_domain_set_check(f.set, &d));
  a->st.live_bytes += 1; /* a counter off by one */
  assert_int_equal(nnmem_domain_set_check(f.set, &d), NNMEM_ERR_STATE);
  assert_non_null(strstr(d.message, "domain 'tenant0': counted 10001 bytes"));
  a->st.live_bytes -= 1;
  nnmem__dt_entry_t *e = nnmem__dt_get(&f.set->blocks, (uintptr_t)p);
  assert_non_null(e);
  uint64_t meta = e->meta;
  e->meta = (meta & ~(63ULL << 48)) | (5ULL << 48); /* an owner that is not */
  assert_int_equal(nnmem_domain_set_check(f.set, &d), NNMEM_ERR_STATE);
  assert_non_null(strstr(d.message, "has owner 5 of 2"));
  e->meta = meta & ~NNMEM__DT_GRANTS; /* grants lost from the entry */
  assert_int_equal(nnmem_domain_set_check(f.set, &d), NNMEM_ERR_STATE);
  assert_non_null(strstr(d.message, "1 grant records"));
  e->meta = meta;
  nnmem__grants_t *g = nnmem__addrmap_get(&f.set->grants, e->key)->p;
  g->free |= 1ULL << 9; /* a grant to a domain that does not exist */
  assert_int_equal(nnmem_domain_set_check(f.set, &d), NNMEM_ERR_STATE);
  assert_non_null(strstr(d.message, "grants rights to a domain"));
  g->free = 0;
  b->st.peak_bytes = 0, b->st.live_bytes = 0; /* still consistent */
  assert_ok(nnmem_domain_set_check(f.set, &d));
  nnmem_domain_set_destroy(f.set);
  nnmem_allocator_destroy(al);
  /* a pool set: the owners ride in the pool's records */
  fixture_t h;
  fx_open(&h, 0);
  a = mk(h.set, 1000);
  assert_ok(nnmem_domain_alloc(a, 100, 0, &p, NULL));
  assert_int_equal(h.set->blocks.count, 0); /* not in the table */
  a->st.live_bytes += 1;
  assert_int_equal(nnmem_domain_set_check(h.set, &d), NNMEM_ERR_STATE);
  assert_non_null(strstr(d.message, "domain 'tenant0': counted 101 bytes"));
  a->st.live_bytes -= 1;
  /* a grant record of no live block */
  nnmem__addrmap_entry_t ge = {(uintptr_t)p + 4096, 0, 0, NULL};
  assert_ok(nnmem__addrmap_put(&h.set->grants, &ge));
  assert_int_equal(nnmem_domain_set_check(h.set, &d), NNMEM_ERR_STATE);
  assert_non_null(strstr(d.message, "1 grant records"));
  nnmem__addrmap_remove(&h.set->grants, ge.key, NULL);
  /* a second set over the same pool keeps its own table */
  nnmem_domain_set_config_t c2;
  nnmem_domain_set_config_init(&c2);
  c2.pool = h.pool;
  nnmem_domain_set_t *s2 = NULL;
  assert_ok(nnmem_domain_set_create(&c2, &s2, NULL));
  nnmem_domain_t *x = mk(s2, 1000);
  void *q = NULL;
  assert_ok(nnmem_domain_alloc(x, 100, 0, &q, NULL));
  assert_int_equal(s2->blocks.count, 1);
  assert_int_equal(nnmem_domain_free(a, q, NULL), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_domain_free(x, p, NULL), NNMEM_ERR_INVALID);
  assert_ok(nnmem_domain_set_check(s2, NULL));
  nnmem_domain_set_destroy(s2);
  fx_close(&h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grants),    cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_quota),     cmocka_unit_test(test_random),
      cmocka_unit_test(test_random_allocator),
      cmocka_unit_test(test_allocator_pages),
      cmocka_unit_test(test_allocator), cmocka_unit_test(test_protect),
      cmocka_unit_test(test_format),    cmocka_unit_test(test_replay),
      cmocka_unit_test(test_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

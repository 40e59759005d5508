/* bench/domain.c - tenant domains: what ownership tags, isolation checks and
 * hardware enforcement cost (not part of `make test`).
 *
 *   domain [--csv OUT.csv] [--repeat N] [--steps N] [--only a|b|c]
 *
 * Steps:
 *   1. (a) tagging on the allocation path: bench/alloc.c's ring (1,024 live
 *      blocks, each step frees a random slot and allocates a random size in
 *      [16, 4096] into it, one byte written per block; slots and sizes drawn
 *      beforehand) through nnmem's allocator and a TLSF pool on the host
 *      backend, each directly and through a domain set of 8 tenants over
 *      it (slot k belongs to tenant k % 8: every allocation recorded with
 *      owner and colour, every free checked). Rounds interleave direct and
 *      domain runs; ns per step by wall and by thread CPU time (which time
 *      slices lost to other processes do not inflate), medians of
 *      --repeat (default 7); overhead = domain / direct - 1, of the
 *      medians and (paired) the median of the per-round ratios, rounds
 *      running the ways forward and backward in turn;
 *   2. (b) isolation: 10^6 random operations by 8 tenants (seed printed):
 *      allocations, own frees, cross-tenant frees with and without a grant;
 *      prints how many cross-tenant frees without a grant were tried and
 *      how many were refused;
 *   3. (c) enforcement on host memory (protect sets, one region per
 *      tenant): ns per switch between two domains (nnmem_domain_enter) with
 *      pkeys (when the CPU has them) and with mprotect, and the ring on the
 *      protected set without switching and with a switch to the slot's
 *      tenant before every step (the worst case: every step changes
 *      tenant);
 *   4. every row also goes to OUT.csv (default bench-domain.csv).
 * It asserts nothing about time. Thread-safety: single-threaded. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "nnmem/nnmem.h"

enum { RING = 1024, TENANTS = 8, MAX_REPEAT = 51 };

static long g_steps = 2000000;

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* One way to allocate: direct (pool or allocator) or through domains. */
typedef struct way {
  const char *name;
  nnmem_allocator_t *al;
  nnmem_pool_t *pool;
  nnmem_domain_t **dom; /* NULL: direct */
  nnmem_domain_set_t *set;
  int switch_each; /* enter the slot's tenant before every step */
} way_t;

static void *way_alloc(const way_t *w, uint32_t k, size_t n) {
  void *p = NULL;
  if (w->dom)
    (void)nnmem_domain_alloc(w->dom[k % TENANTS], n, 0, &p, NULL);
  else if (w->pool)
    (void)nnmem_pool_alloc(w->pool, n, 0, &p);
  else
    p = nnmem_alloc(w->al, n);
  return p;
}

static void way_free(const way_t *w, uint32_t k, void *p) {
  if (w->dom)
    (void)nnmem_domain_free(w->dom[k % TENANTS], p, NULL);
  else if (w->pool)
    (void)nnmem_pool_free(w->pool, p);
  else
    nnmem_free(w->al, p);
}

/* The ring; *wall and *cpu in seconds. */
static void ring(const way_t *w, const uint32_t *slot, const uint32_t *size,
                 double *wall, double *cpu) {
  static void *live[RING];
  for (uint32_t i = 0; i < RING; i++) {
    if (w->switch_each) (void)nnmem_domain_enter(w->set, w->dom[i % TENANTS]);
    live[i] = way_alloc(w, i, 16 + (size_t)i % 4081);
    *(volatile char *)live[i] = 1;
  }
  double t0 = now(), c0 = cpu_now();
  for (long s = 0; s < g_steps; s++) {
    uint32_t k = slot[s];
    if (w->switch_each) (void)nnmem_domain_enter(w->set, w->dom[k % TENANTS]);
    way_free(w, k, live[k]);
    live[k] = way_alloc(w, k, size[s]);
    *(volatile char *)live[k] = 1;
  }
  *wall = now() - t0;
  *cpu = cpu_now() - c0;
  if (w->switch_each) (void)nnmem_domain_enter(w->set, NULL);
  for (uint32_t i = 0; i < RING; i++)
    way_free(w, i, live[i]);
}

static nnmem_domain_set_t *make_set(nnmem_pool_t *pool, nnmem_allocator_t *al,
                                    nnmem_domain_protect_t prot, uint64_t quota,
                                    nnmem_domain_t **dom) {
  nnmem_domain_set_config_t c;
  nnmem_domain_set_config_init(&c);
  c.pool = pool;
  c.allocator = al;
  c.protect = prot;
  nnmem_domain_set_t *set = NULL;
  nnmem_diag_t d = {{0}};
  if (nnmem_domain_set_create(&c, &set, &d) != NNMEM_OK) {
    printf("note: domain set (%s): %s\n", nnmem_domain_protect_name(prot),
           d.message);
    return NULL;
  }
  nnmem_domain_config_t dc;
  nnmem_domain_config_init(&dc);
  dc.quota = quota;
  for (int t = 0; t < TENANTS; t++)
    if (nnmem_domain_create(set, &dc, &dom[t], &d) != NNMEM_OK) {
      printf("note: domain: %s\n", d.message);
      nnmem_domain_set_destroy(set);
      return NULL;
    }
  return set;
}

/* Runs `n` ways `repeat` times interleaved, forward in even rounds and
 * backward in odd ones (so neither way of a pair always runs first);
 * medians in ns per step. paired[i] (odd i): the median over rounds of
 * way i's CPU time / way i-1's in the same round - 1, which a load that
 * drifts between rounds moves less than the ratio of the medians. */
static void run_ways(const way_t *ways, int n, int repeat, const uint32_t *slot,
                     const uint32_t *size, double *wall_ns, double *cpu_ns,
                     double *paired) {
  static double wv[8][MAX_REPEAT], cv[8][MAX_REPEAT], ratio[MAX_REPEAT];
  for (int r = 0; r < repeat; r++)
    for (int k = 0; k < n; k++) {
      int i = r & 1 ? n - 1 - k : k;
      ring(&ways[i], slot, size, &wv[i][r], &cv[i][r]);
    }
  for (int i = 0; i < n; i++) {
    wall_ns[i] = median(wv[i], repeat) * 1e9 / (double)g_steps;
    cpu_ns[i] = median(cv[i], repeat) * 1e9 / (double)g_steps;
    paired[i] = 0;
    if (!(i & 1)) continue;
    for (int r = 0; r < repeat; r++)
      ratio[r] = cv[i][r] / cv[i - 1][r] - 1;
    paired[i] = median(ratio, repeat);
  }
}

static void bench_tagging(int repeat, const uint32_t *slot,
                          const uint32_t *size, FILE *csv) {
  nnmem_allocator_t *al = NULL;
  nnmem_backend_t *host = NULL;
  nnmem_pool_t *pool = NULL;
  nnmem_domain_t *d1[TENANTS], *d2[TENANTS];
  if (nnmem_allocator_create(NULL, &al) != NNMEM_OK ||
      nnmem_backend_host_create(&host) != NNMEM_OK ||
      nnmem_pool_create(NNMEM_POOL_TLSF, NULL, host, &pool) != NNMEM_OK) {
    printf("(a) skipped: cannot create the allocator or pool\n");
    return;
  }
  nnmem_domain_set_t *s1 =
      make_set(NULL, al, NNMEM_PROTECT_NONE, 1ULL << 40, d1);
  nnmem_domain_set_t *s2 =
      make_set(pool, NULL, NNMEM_PROTECT_NONE, 1ULL << 40, d2);
  way_t ways[4] = {{"allocator", al, NULL, NULL, NULL, 0},
                   {"allocator+domains", al, NULL, d1, s1, 0},
                   {"tlsf", NULL, pool, NULL, NULL, 0},
                   {"tlsf+domains", NULL, pool, d2, s2, 0}};
  double wall[4], cpu[4], paired[4];
  run_ways(ways, 4, repeat, slot, size, wall, cpu, paired);
  printf(
      "\n(a) tagging on the allocation path: ring of %d blocks, 16 B - 4 KiB, "
      "%ld steps, %d tenants, median of %d (direct and domain rounds "
      "interleaved, order alternating)\n",
      RING, g_steps, TENANTS, repeat);
  printf("%-20s %12s %12s %14s %14s %14s\n", "way", "ns/step", "cpu ns/step",
         "overhead", "overhead (cpu)", "paired (cpu)");
  for (int i = 0; i < 4; i++) {
    int base = i & ~1;
    if (i & 1)
      printf("%-20s %12.1f %12.1f %13.1f%% %13.1f%% %13.1f%%\n", ways[i].name,
             wall[i], cpu[i], 100.0 * (wall[i] / wall[base] - 1),
             100.0 * (cpu[i] / cpu[base] - 1), 100.0 * paired[i]);
    else
      printf("%-20s %12.1f %12.1f %14s %14s %14s\n", ways[i].name, wall[i],
             cpu[i], "-", "-", "-");
    fprintf(csv, "ring,%s,%.2f,%.2f,%.4f,%.4f\n", ways[i].name, wall[i], cpu[i],
            (i & 1) ? cpu[i] / cpu[base] - 1 : 0.0, paired[i]);
  }
  nnmem_domain_set_destroy(s1);
  nnmem_domain_set_destroy(s2);
  nnmem_pool_destroy(pool);
  nnmem_backend_destroy(host);
  nnmem_allocator_destroy(al);
}

/* splitmix64: (b) draws slot, tenant and operation from one state; the
 * ring's xorshift would tie the tenant's low bits to the slot's. */
static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* (b) the isolation count, on a TLSF pool over an unbacked simulated
 * device (blocks in the set's table) or on the allocator (small blocks in
 * the domains' own pages, the owner read from the page). */
static void bench_isolation(FILE *csv, int use_allocator) {
  const uint64_t seed = 20261201;
  uint64_t rng = seed;
  nnmem_backend_t *dev = NULL;
  nnmem_pool_t *pool = NULL;
  nnmem_allocator_t *al = NULL;
  nnmem_domain_t *dom[TENANTS];
  if (use_allocator ? nnmem_allocator_create(NULL, &al) != NNMEM_OK
                    : nnmem_backend_sim_create(NULL, &dev) != NNMEM_OK ||
                          nnmem_pool_create(NNMEM_POOL_TLSF, NULL, dev,
                                            &pool) != NNMEM_OK)
    return;
  nnmem_domain_set_t *set =
      make_set(pool, al, NNMEM_PROTECT_NONE, 1u << 20, dom);
  enum { SLOTS = 4096 };
  static void *p[SLOTS];
  static uint32_t owner[SLOTS], granted_to[SLOTS]; /* +1; 0 = none */
  memset(p, 0, sizeof p); /* a second run starts empty */
  uint64_t tried = 0, refused = 0, granted = 0, ok_granted = 0, ops = 1000000;
  double t0 = now();
  for (uint64_t op = 0; op < ops; op++) {
    uint32_t k = (uint32_t)(mix(&rng) % SLOTS);
    uint32_t t = (uint32_t)(mix(&rng) % TENANTS);
    uint64_t r = mix(&rng) % 100;
    if (!p[k]) {
      if (nnmem_domain_alloc(dom[t], 1 + mix(&rng) % 8192, 0, &p[k], NULL) ==
          NNMEM_OK)
        owner[k] = t, granted_to[k] = 0;
      continue;
    }
    if (r < 10 && t != owner[k] && !granted_to[k]) {
      if (nnmem_domain_grant(dom[owner[k]], p[k], t, NNMEM_GRANT_FREE, NULL) ==
          NNMEM_OK)
        granted_to[k] = t + 1;
      continue;
    }
    nnmem_status_t s = nnmem_domain_free(dom[t], p[k], NULL);
    if (t != owner[k] && granted_to[k] != t + 1) {
      tried++;
      refused += s == NNMEM_ERR_DENIED;
      continue;
    }
    if (t != owner[k]) granted++, ok_granted += s == NNMEM_OK;
    if (s == NNMEM_OK) p[k] = NULL;
  }
  double dt = now() - t0;
  printf(
      "\n(b) isolation (%s): %llu random operations by %d tenants (seed "
      "%llu): %llu cross-tenant frees without a grant tried, %llu refused "
      "(%.2f%%); %llu with a grant, %llu done; %.1f ns/operation\n",
      use_allocator ? "allocator" : "tlsf", (unsigned long long)ops, TENANTS,
      (unsigned long long)seed,
      (unsigned long long)tried, (unsigned long long)refused,
      tried ? 100.0 * (double)refused / (double)tried : 0.0,
      (unsigned long long)granted, (unsigned long long)ok_granted,
      dt * 1e9 / (double)ops);
  fprintf(csv, "isolation,%s,tried,%llu,refused,%llu\n",
          use_allocator ? "allocator" : "tlsf", (unsigned long long)tried,
          (unsigned long long)refused);
  nnmem_domain_set_destroy(set);
  nnmem_pool_destroy(pool);
  nnmem_backend_destroy(dev);
  nnmem_allocator_destroy(al);
}

/* (c) switch cost and the ring under enforcement. */
static void bench_enforce(nnmem_domain_protect_t prot, int repeat,
                          const uint32_t *slot, const uint32_t *size,
                          FILE *csv) {
  nnmem_domain_t *dom[TENANTS];
  nnmem_domain_set_t *set = make_set(NULL, NULL, prot, 64u << 20, dom);
  if (!set) {
    printf("(c) %s: not available here\n", nnmem_domain_protect_name(prot));
    return;
  }
  const char *name = nnmem_domain_protect_name(nnmem_domain_set_protect(set));
  long n = prot == NNMEM_PROTECT_PKEY ? 2000000 : 50000;
  double sw[MAX_REPEAT];
  for (int r = 0; r < repeat; r++) {
    double t0 = now();
    for (long i = 0; i < n; i++)
      (void)nnmem_domain_enter(set, dom[i & 1]);
    sw[r] = (now() - t0) * 1e9 / (double)n;
  }
  (void)nnmem_domain_enter(set, NULL);
  double sw_ns = median(sw, repeat);
  long keep = g_steps;
  if (prot != NNMEM_PROTECT_PKEY && g_steps > 50000) g_steps = 50000;
  way_t ways[2] = {{"no switch", NULL, NULL, dom, set, 0},
                   {"switch every step", NULL, NULL, dom, set, 1}};
  double wall[2], cpu[2], paired[2];
  run_ways(ways, 2, repeat, slot, size, wall, cpu, paired);
  printf(
      "(c) %-8s switch between two domains: %.1f ns; ring (%ld steps) "
      "without switching %.1f ns/step, switching to the slot's tenant "
      "every step %.1f ns/step (cpu %.1f / %.1f)\n",
      name, sw_ns, g_steps, wall[0], wall[1], cpu[0], cpu[1]);
  fprintf(csv, "enforce,%s,switch_ns,%.2f,ring_ns,%.2f,ring_switch_ns,%.2f\n",
          name, sw_ns, wall[0], wall[1]);
  g_steps = keep;
  nnmem_domain_set_destroy(set);
}

int main(int argc, char **argv) {
  const char *csv_path = "bench-domain.csv";
  int repeat = 7;
  const char *only = "abc";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
      csv_path = argv[++i];
    else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
      repeat = atoi(argv[++i]);
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
      g_steps = atol(argv[++i]);
    else {
      fprintf(stderr,
              "usage: domain [--csv OUT.csv] [--repeat N] [--steps N] "
              "[--only a|b|c]\n");
      return 1;
    }
  }
  if (repeat < 1) repeat = 1;
  if (repeat > MAX_REPEAT) repeat = MAX_REPEAT;
  if (g_steps < 1) g_steps = 1;
  FILE *csv = fopen(csv_path, "w");
  if (!csv) {
    perror(csv_path);
    return 1;
  }
  fprintf(csv, "section,name,a,b,c,d\n");
  uint32_t *slot = malloc((size_t)g_steps * sizeof *slot);
  uint32_t *size = malloc((size_t)g_steps * sizeof *size);
  if (!slot || !size) return 1;
  uint64_t seed = 88172645463325252ULL;
  for (long s = 0; s < g_steps; s++) {
    slot[s] = (uint32_t)(rnd(&seed) % RING);
    size[s] = 16 + (uint32_t)(rnd(&seed) % 4081);
  }
  if (strchr(only, 'a')) bench_tagging(repeat, slot, size, csv);
  if (strchr(only, 'b')) {
    bench_isolation(csv, 0);
    bench_isolation(csv, 1);
  }
  if (strchr(only, 'c')) {
    printf("\n(c) enforcement on host memory (%d tenants, one region each)\n",
           TENANTS);
    bench_enforce(NNMEM_PROTECT_PKEY, repeat, slot, size, csv);
    bench_enforce(NNMEM_PROTECT_MPROTECT, repeat, slot, size, csv);
  }
  free(slot);
  free(size);
  fclose(csv);
  printf("\nwrote %s\n", csv_path);
  return 0;
}

/* domain_protect.c - hardware enforcement of tenant domains on host memory:
 * one mmap region per domain, closed to everyone but the entered domain by
 * memory protection keys or, where there are none, by mprotect.
 *
 *   domain 0 region [quota0 rounded to pages]  pkey k0 ─┐  PKRU of the
 *   domain 1 region [quota1 ...             ]  pkey k1 ─┤  thread: AD bit
 *   ...                                                 ┘  set for every
 *                                                          key but the
 *                                                          entered one's
 *
 * Steps: 1. resolve (AUTO: pkey_alloc probe; the key is freed again);
 * 2. per domain: mmap(quota rounded up to the page size, read/write,
 * NORESERVE); PKEY: pkey_alloc + pkey_mprotect tag the whole region once;
 * the region becomes the one chunk of a TLSF pool (a one-region backend
 * table; the pool keeps its metadata outside, so it never touches the
 * bytes, and its flags say "not backed" so debug fills stay off);
 * 3. switch(from, to): for each domain whose access changes (from NULL:
 * all but `to`; between two domains: those two), pkey_set(key, 0 or
 * PKEY_DISABLE_ACCESS) - a PKRU write of the calling thread - or
 * mprotect(region, RW or NONE) for the whole process.
 * Invariants: with a domain entered, exactly its region is open (under
 * pkeys: for the thread that entered); every region is open when trusted.
 * Complexity: a switch compares O(domains) flags and changes two regions
 * between domains (every region from or to trusted).
 * Thread-safety: the set's (none). pkeys rights are per thread: other
 * threads keep theirs (new threads start with Linux's default PKRU, which
 * closes every key but 0 - enter NULL on them to open). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/util.h"
#include "runtime/domain_internal.h"

#if defined(__linux__) && defined(__GLIBC__) &&                     \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 27)) && \
    defined(PKEY_DISABLE_ACCESS)
#define HAVE_PKEYS 1
#else
#define HAVE_PKEYS 0
#endif

static int pkeys_work(void) {
#if HAVE_PKEYS
  int k = pkey_alloc(0, 0);
  if (k < 0) return 0;
  pkey_free(k);
  return 1;
#else
  return 0;
#endif
}

nnmem_status_t nnmem__protect_resolve(nnmem_domain_protect_t want,
                                      nnmem_domain_protect_t *out,
                                      nnmem_diag_t *diag) {
  int pk = want == NNMEM_PROTECT_MPROTECT ? 0 : pkeys_work();
  if (want == NNMEM_PROTECT_PKEY && !pk)
    return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                       "domain set: memory protection keys are not "
                       "available here (pkey_alloc failed: no PKU in the CPU "
                       "or kernel); use protect auto or mprotect");
  *out = pk ? NNMEM_PROTECT_PKEY : NNMEM_PROTECT_MPROTECT;
  return NNMEM_OK;
}

/* The one-region backend the domain's pool takes its chunk from. */
static nnmem_status_t region_alloc(void *ctx, uint64_t size, uint64_t align,
                                   void **out) {
  nnmem__region_t *r = ctx;
  if (r->taken || size > r->len ||
      ((uintptr_t)r->base & (align ? align - 1 : 0)))
    return NNMEM_ERR_NOMEM;
  r->taken = 1;
  *out = r->base;
  return NNMEM_OK;
}

static nnmem_status_t region_free(void *ctx, void *ptr, uint64_t size) {
  nnmem__region_t *r = ctx;
  (void)size;
  if (ptr != r->base || !r->taken) return NNMEM_ERR_INVALID;
  r->taken = 0;
  return NNMEM_OK;
}

/* Opens (open = 1) or closes the region of `d`. */
static nnmem_status_t set_open(const nnmem_domain_set_t *set,
                               const nnmem_domain_t *d, int open) {
#if HAVE_PKEYS
  if (set->protect == NNMEM_PROTECT_PKEY)
    return pkey_set(d->region.pkey, open ? 0 : PKEY_DISABLE_ACCESS) == 0
               ? NNMEM_OK
               : NNMEM_ERR_IO;
#endif
  (void)set;
  return mprotect(d->region.base, (size_t)d->region.len,
                  open ? PROT_READ | PROT_WRITE : PROT_NONE) == 0
             ? NNMEM_OK
             : NNMEM_ERR_IO;
}

void nnmem__protect_domain_fini(nnmem_domain_t *d) {
  nnmem_pool_destroy(d->pool);
  d->pool = NULL;
  if (d->region.base) munmap(d->region.base, (size_t)d->region.len);
#if HAVE_PKEYS
  if (d->region.pkey >= 0) pkey_free(d->region.pkey);
#endif
  d->region.base = NULL;
  d->region.pkey = -1;
}

nnmem_status_t nnmem__protect_domain_init(nnmem_domain_set_t *set,
                                          nnmem_domain_t *d,
                                          nnmem_diag_t *diag) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), len;
  if (nnmem__align_up(d->st.quota, page, &len) || len > SIZE_MAX)
    return nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
                       "domain '%s': quota %llu too large for a region",
                       d->st.name, (unsigned long long)d->st.quota);
  nnmem__region_t *r = &d->region;
  r->len = len;
  r->pkey = -1;
  void *base = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED)
    return nnmem__diag(diag, NNMEM_ERR_NOMEM,
                       "domain '%s': cannot reserve its %llu-byte region",
                       d->st.name, (unsigned long long)len);
  r->base = base;
  nnmem_status_t s = NNMEM_OK;
#if HAVE_PKEYS
  if (set->protect == NNMEM_PROTECT_PKEY) {
    r->pkey = pkey_alloc(0, 0);
    if (r->pkey < 0)
      s = nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
                      "domain '%s': no protection key left (the CPU has "
                      "16, the kernel keeps some)",
                      d->st.name);
    else if (pkey_mprotect(base, (size_t)len, PROT_READ | PROT_WRITE,
                           r->pkey) != 0)
      s = nnmem__diag(diag, NNMEM_ERR_IO,
                      "domain '%s': pkey_mprotect of its region failed",
                      d->st.name);
  }
#endif
  if (s == NNMEM_OK && set->entered) s = set_open(set, d, 0);
  if (s == NNMEM_OK) {
    r->table =
        (nnmem_backend_t){.size = sizeof r->table,
                          .version = NNMEM_BACKEND_VERSION,
                          .name = "domain-region",
                          .ctx = r,
                          .flags = 0,      /* the pool must not touch it */
                          .alignment = 64, /* blocks need not be page aligned */
                          .alloc = region_alloc,
                          .free = region_free};
    nnmem_pool_config_t pc;
    nnmem_pool_config_init(&pc);
    pc.name = d->st.name;
    pc.capacity = len;
    pc.chunk_size = len;
    pc.retain_empty = 1;
    s = nnmem_pool_create_diag(NNMEM_POOL_TLSF, &pc, &r->table, &d->pool, diag);
  }
  if (s != NNMEM_OK) nnmem__protect_domain_fini(d);
  return s;
}

nnmem_status_t nnmem__protect_switch(nnmem_domain_set_t *set,
                                     nnmem_domain_t *to) {
  nnmem_domain_t *from = set->entered;
  nnmem_status_t s = NNMEM_OK;
  for (uint32_t i = 0; i < set->n && s == NNMEM_OK; i++) {
    nnmem_domain_t *d = set->dom[i];
    int was = !from || d == from, now = !to || d == to;
    if (was != now) s = set_open(set, d, now);
  }
  return s;
}

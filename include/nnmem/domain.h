/* nnmem/domain.h - tenant domains: quotas, colour tags, grants and
 * (optionally) hardware-enforced isolation of host memory.
 *
 *   nnmem_domain_set_t   the registry several tenants share over one
 *                        underlying pool or allocator: who owns each live
 *                        block (its colour, size, grants). The owner rides
 *                        with the block where the source allows: over an
 *                        allocator a small block (<= 8 KiB, alignment
 *                        <= 16) comes from pages of its domain's own cache;
 *                        over a pool (the first set on it) the pool's
 *                        record of the block holds it; else a block table;
 *   nnmem_domain_t       one tenant: a quota in bytes, a colour tag carried
 *                        by every block it owns, counters.
 *
 *   nnmem_domain_set_config_t sc; nnmem_domain_set_config_init(&sc);
 *   sc.pool = pool;                         (or sc.allocator, or protect)
 *   nnmem_domain_set_create(&sc, &set, &diag);
 *   nnmem_domain_config_t dc; nnmem_domain_config_init(&dc);
 *   dc.quota = 256 << 20;
 *   nnmem_domain_create(set, &dc, &a, &diag);   (and b)
 *   nnmem_domain_alloc(a, 4096, 0, &p, &diag);
 *   nnmem_domain_free(b, p, &diag);             NNMEM_ERR_DENIED, counted
 *   nnmem_domain_grant(a, p, nnmem_domain_id(b), NNMEM_GRANT_FREE, &diag);
 *   nnmem_domain_free(b, p, &diag);             ok: b holds a grant
 *
 * A free or an access check by a domain that neither owns the block nor
 * holds a grant for it is refused with NNMEM_ERR_DENIED; a pointer that is
 * not the start of a live block of the set (forged, stale, interior) with
 * NNMEM_ERR_INVALID; an allocation past the quota with NNMEM_ERR_NOMEM.
 * Each refusal is counted on the calling domain by reason and described in
 * `diag` (which domain, which block, why). Nothing changes on a refusal.
 *
 * Hardware enforcement (cfg.protect, host memory only): each domain gets
 * its own region of `quota` bytes (rounded up to pages), reserved with mmap
 * and sub-allocated by a TLSF pool of its own; nnmem_domain_enter(set, d)
 * makes the regions of every other domain inaccessible, so a stray load or
 * store from code running "as" d faults (SIGSEGV) instead of reading a
 * neighbour's tensors. With memory protection keys (Linux pkeys, x86 PKU)
 * each region is tagged with its own key once and a switch is two writes
 * of the thread's PKRU register (no system call, per thread); without
 * them the switch is mprotect on the two regions that change (system
 * calls, process-wide). NNMEM_PROTECT_AUTO picks pkeys when
 * pkey_alloc succeeds at run time, else mprotect.
 *
 * Limits: at most NNMEM_DOMAIN_MAX domains per set; grants name whole
 * blocks by their start address; domains live until their set is
 * destroyed; destroy a set before its pool or allocator. A domain's blocks
 * are freed through the domain: a block given to nnmem_free or
 * nnmem_pool_free directly leaves the domain's counters stale.
 * Allocations through a domain over an allocator
 * bypass the allocator's leak records and latency sampling.
 *
 * Thread-safety: a set and its domains are NOT synchronized: one thread at
 * a time (callers sharing a set wrap it in their own lock). Under pkeys
 * nnmem_domain_enter changes the calling thread's access rights only. */
#ifndef NNMEM_DOMAIN_H
#define NNMEM_DOMAIN_H

#include "nnmem/allocator.h"
#include "nnmem/pool.h"
#include "nnmem/problem.h"
#include "nnmem/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NNMEM_DOMAIN_MAX 64

/* Rights a grant gives (bit set). */
#define NNMEM_GRANT_READ 1u /* nnmem_domain_access(.., NNMEM_GRANT_READ) */
#define NNMEM_GRANT_FREE 2u /* nnmem_domain_free */

typedef enum nnmem_domain_protect {
  NNMEM_PROTECT_NONE = 0, /* software checks only (any backend) */
  NNMEM_PROTECT_AUTO,     /* pkeys where the CPU and kernel have them, else
                             mprotect */
  NNMEM_PROTECT_PKEY,     /* NNMEM_ERR_UNSUPPORTED where absent */
  NNMEM_PROTECT_MPROTECT
} nnmem_domain_protect_t;

/* "none", "auto", "pkey", "mprotect". */
NNMEM_API const char *nnmem_domain_protect_name(nnmem_domain_protect_t p);

/* Set options; zero means default. */
typedef struct nnmem_domain_set_config {
  uint32_t size;                  /* sizeof(nnmem_domain_set_config_t); 0 =
                                     current */
  nnmem_pool_t *pool;             /* blocks come from here (not owned) ... */
  nnmem_allocator_t *allocator;   /* ... or from here; exactly one of the two
                                     without protect, neither with it */
  nnmem_domain_protect_t protect; /* default NONE */
} nnmem_domain_set_config_t;

NNMEM_API void nnmem_domain_set_config_init(nnmem_domain_set_config_t *cfg);

/* Domain options. */
typedef struct nnmem_domain_config {
  uint32_t size;    /* sizeof(nnmem_domain_config_t); 0 = current */
  const char *name; /* stats label (copied); NULL = "tenant<id>" */
  uint64_t quota;   /* bytes this domain may hold live (required, > 0) */
  uint32_t colour;  /* tag carried by its blocks; 0 = id + 1 */
} nnmem_domain_config_t;

NNMEM_API void nnmem_domain_config_init(nnmem_domain_config_t *cfg);

typedef struct nnmem_domain_set nnmem_domain_set_t;
typedef struct nnmem_domain nnmem_domain_t;

/* Creates a set. NNMEM_ERR_INVALID and diag for a bad config (no pool and
 * no allocator, both, a pool or allocator together with protect);
 * NNMEM_ERR_UNSUPPORTED for NNMEM_PROTECT_PKEY where pkeys are absent.
 * `diag` may be NULL. */
NNMEM_API nnmem_status_t
nnmem_domain_set_create(const nnmem_domain_set_config_t *cfg,
                        nnmem_domain_set_t **out, nnmem_diag_t *diag);
/* Frees every live block of every domain to where it came from, releases
 * the protected regions and keys, and frees the set. NULL: no-op. */
NNMEM_API void nnmem_domain_set_destroy(nnmem_domain_set_t *set);

/* The protection actually in force (AUTO resolved to PKEY or MPROTECT). */
NNMEM_API nnmem_domain_protect_t
nnmem_domain_set_protect(const nnmem_domain_set_t *set);

/* Adds a domain (id = number of domains before it). NNMEM_ERR_INVALID for
 * quota 0 (counted in the set's bad_input), NNMEM_ERR_OVERFLOW past
 * NNMEM_DOMAIN_MAX, NNMEM_ERR_NOMEM when its protected region cannot be
 * reserved. */
NNMEM_API nnmem_status_t nnmem_domain_create(nnmem_domain_set_t *set,
                                             const nnmem_domain_config_t *cfg,
                                             nnmem_domain_t **out,
                                             nnmem_diag_t *diag);
/* The domain with id `id`; NNMEM_ERR_NOT_FOUND when there is none. */
NNMEM_API nnmem_status_t nnmem_domain_get(const nnmem_domain_set_t *set,
                                          uint32_t id, nnmem_domain_t **out);
NNMEM_API uint32_t nnmem_domain_id(const nnmem_domain_t *d);
NNMEM_API uint32_t nnmem_domain_colour(const nnmem_domain_t *d);
NNMEM_API const char *nnmem_domain_name(const nnmem_domain_t *d);

/* Allocates `size` bytes (align: 0 = the pool's, else a power of two) for
 * `d`. NNMEM_ERR_NOMEM when the quota would be passed (live + size > quota)
 * or the pool refuses; NNMEM_ERR_INVALID for size 0, a size of 2^48 or
 * more, or a bad alignment.
 * Refusals are counted on `d` by reason. *out is NULL on failure. */
NNMEM_API nnmem_status_t nnmem_domain_alloc(nnmem_domain_t *d, uint64_t size,
                                            uint64_t align, void **out,
                                            nnmem_diag_t *diag);
/* Frees a block on behalf of `d` (the owner, or a domain holding a FREE
 * grant for it; the bytes leave the owner's account). NNMEM_ERR_DENIED
 * without ownership or grant, NNMEM_ERR_INVALID for a pointer that is not a
 * live block of the set; both counted on `d`, nothing changes. */
NNMEM_API nnmem_status_t nnmem_domain_free(nnmem_domain_t *d, void *ptr,
                                           nnmem_diag_t *diag);
/* Isolation check without side effects on the block: may `d` use `ptr`
 * with `rights` (NNMEM_GRANT_READ and/or NNMEM_GRANT_FREE)? NNMEM_OK for
 * the owner or a domain holding every right asked; else as free. */
NNMEM_API nnmem_status_t nnmem_domain_access(nnmem_domain_t *d, const void *ptr,
                                             uint32_t rights,
                                             nnmem_diag_t *diag);
/* The owner `d` gives domain `grantee` the `rights` on its block `ptr`
 * (added to those it has). NNMEM_ERR_NOT_FOUND for a grantee id that is
 * not a domain of the set, NNMEM_ERR_INVALID for rights outside READ|FREE
 * or 0 or a pointer that is not a live block, NNMEM_ERR_DENIED when `d`
 * does not own the block; each counted on `d` (bad input or denied). A
 * grant ends with the block or by nnmem_domain_revoke. */
NNMEM_API nnmem_status_t nnmem_domain_grant(nnmem_domain_t *d, void *ptr,
                                            uint32_t grantee, uint32_t rights,
                                            nnmem_diag_t *diag);
/* Takes `rights` back (revoking rights not given is not an error). The
 * same refusals as grant. */
NNMEM_API nnmem_status_t nnmem_domain_revoke(nnmem_domain_t *d, void *ptr,
                                             uint32_t grantee, uint32_t rights,
                                             nnmem_diag_t *diag);

/* Owner id, colour tag and size of a live block of the set (each out
 * pointer may be NULL): the bytes charged to the owner (the request; over
 * an allocator a small block's size class). NNMEM_ERR_INVALID for other
 * pointers. */
NNMEM_API nnmem_status_t nnmem_domain_block_info(const nnmem_domain_set_t *set,
                                                 const void *ptr,
                                                 uint32_t *owner_out,
                                                 uint32_t *colour_out,
                                                 uint64_t *size_out);

/* Hardware enforcement (protect sets only): from now on the calling thread
 * (pkeys) or the process (mprotect) may touch the regions of `d` only;
 * NULL: every domain's region (trusted code; the state after create).
 * NNMEM_ERR_STATE on a set without protection, NNMEM_ERR_IO when mprotect
 * fails. A set starts trusted. */
NNMEM_API nnmem_status_t nnmem_domain_enter(nnmem_domain_set_t *set,
                                            nnmem_domain_t *d);

/* Counters of one domain. Refusals by reason: quota (live + size > quota),
 * pool (the pool refused), denied (cross-domain free or access without a
 * grant), invalid (a pointer that is not a live block of the set: forged,
 * stale, interior), bad_input (bad size, alignment, rights, a grant to a
 * domain that does not exist). */
typedef struct nnmem_domain_stats {
  uint32_t size;                   /* sizeof(nnmem_domain_stats_t) */
  char name[NNMEM_STATS_NAME_MAX]; /* the domain's label */
  uint32_t id, colour;
  uint64_t quota;
  uint64_t live_bytes, peak_bytes; /* bytes held: the requests (over an
                                      allocator, a small block counts its
                                      size class, the bytes it holds) */
  uint64_t live_blocks;
  uint64_t allocs, frees; /* successful, by this domain */
  uint64_t frees_granted; /* of those frees: other domains' blocks */
  uint64_t checks;        /* ownership checks made for this domain: every
                             free, access, grant and revoke call that named
                             a live block */
  uint64_t refused_quota, refused_pool, refused_denied, refused_invalid,
      refused_bad_input;
  uint64_t grants, revokes; /* successful calls */
} nnmem_domain_stats_t;

NNMEM_API nnmem_status_t nnmem_domain_stats(const nnmem_domain_t *d,
                                            nnmem_domain_stats_t *out);

/* Set-wide counters. */
typedef struct nnmem_domain_set_counters {
  uint32_t size; /* sizeof(nnmem_domain_set_counters_t) */
  uint32_t domains;
  nnmem_domain_protect_t protect; /* in force */
  uint64_t live_blocks;
  uint64_t bad_input; /* refused domain creations (quota 0, too many) */
  uint64_t enters;    /* nnmem_domain_enter calls that switched */
} nnmem_domain_set_counters_t;

NNMEM_API nnmem_status_t nnmem_domain_set_counters(
    const nnmem_domain_set_t *set, nnmem_domain_set_counters_t *out);

/* Walks every invariant: per domain live bytes and blocks equal the sums
 * over the block table, the domains' cache pages and the pool's owned
 * records, each such block is seen as its owner's, live <= quota, owners
 * exist, grant masks name only existing domains and only live blocks.
 * NNMEM_ERR_STATE and diag on the first violation. O(blocks + pages). */
NNMEM_API nnmem_status_t nnmem_domain_set_check(const nnmem_domain_set_t *set,
                                                nnmem_diag_t *diag);

/* Renders `n` domain records like nnmem_stats_format_json /
 * nnmem_stats_format_prometheus (same buffer contract). JSON: an array of
 * objects, keys named like the fields ("domain" for the name), refusals in
 * a "refused" object by reason. Prometheus: families nnmem_domain_* with a
 * domain="name" label; refusals as nnmem_domain_refusals_total with a
 * reason="quota|pool|denied|invalid|bad_input" label. */
NNMEM_API nnmem_status_t
nnmem_domain_stats_format_json(const nnmem_domain_stats_t *st, size_t n,
                               char *buf, size_t cap, size_t *len_out);
NNMEM_API nnmem_status_t
nnmem_domain_stats_format_prometheus(const nnmem_domain_stats_t *st, size_t n,
                                     char *buf, size_t cap, size_t *len_out);

/* Replays a problem as a trace shared by `tenants` domains of `quota`
 * bytes each over one fresh pool of `kind` on an unbacked simulated device
 * (events as nnmem_pool_replay). Buffer i belongs to tenant i % tenants.
 * At each free: when there are two tenants or more, the next tenant
 * ((t + 1) % tenants) first tries to free the block without a grant (an
 * isolation probe; it must be refused); every fourth block of a tenant
 * (by its own count) is then freed by that next tenant under a FREE grant,
 * the others by the owner. A buffer refused for the quota is skipped (and
 * its free). out->tenant gets one record per tenant (release with free()).
 * NNMEM_ERR_INVALID for tenants 0 or over NNMEM_DOMAIN_MAX or quota 0;
 * NNMEM_ERR_STATE (diag) when a probe was not refused - a broken
 * isolation. */
typedef struct nnmem_domain_replay_result {
  uint64_t operations; /* allocations + frees attempted */
  uint64_t skipped;    /* buffers refused (quota or pool) */
  uint64_t probes;     /* cross-domain frees tried without a grant */
  uint64_t probes_refused;
  uint64_t granted_frees; /* frees by the next tenant under a grant */
  uint64_t peak_live_bytes, peak_reserved_bytes; /* all tenants; the pool */
  uint32_t tenants;
  nnmem_domain_stats_t *tenant; /* [tenants] */
} nnmem_domain_replay_result_t;

NNMEM_API nnmem_status_t nnmem_domain_replay(const nnmem_problem_t *problem,
                                             nnmem_pool_kind_t kind,
                                             uint32_t tenants, uint64_t quota,
                                             nnmem_domain_replay_result_t *out,
                                             nnmem_stats_t *pool_stats_out,
                                             nnmem_diag_t *diag);

#ifdef __cplusplus
}
#endif
#endif /* NNMEM_DOMAIN_H */

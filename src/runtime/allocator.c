/* allocator.c - the general-purpose front: per-thread caches of blocks up
 * to 128 KiB in front of shared pools on a (host) backend.
 *
 *   thread A tcache                      shared span pools (fixed, mutex):
 *   avail[cls] -> span -> span           one per span length (1..33 units
 *   remote: MPSC stack <- frees by B     of 64 KiB, aligned to 64 KiB),
 *                                        kept until destroy (decommit_spans:
 *                                        emptied spans madvised away beyond
 *                                        64 MiB (128 MiB of one-unit spans)
 *                                        still resident; free
 *                                        blocks >= 8 KiB of idle spans
 *                                        purged after 1-2 ms)
 *                                        shared tiered pool (mutex): large
 *                                        blocks (> 128 KiB or aligned > 16)
 *
 *   span (1 unit for classes <= 8 KiB, else room for 16 blocks):
 *   +----------+-----+-------+-------+-----+------------------------+
 *   | rem bits | pad | blk 0 | blk 1 | ... | never carved yet       |
 *   +----------+-----+-------+-------+-----+------------------------+
 *   0                first   a free block: [link | tag]  ^ first + carved
 *   rem bits: ceil(cap / 64) words rounded to 16 bytes; pad: 64 x
 *   (address bits 16..19), the colour (block 0 of equal classes spread
 *   over 16 L1 sets). Its header (192
 *   bytes) lies out of the span, dense with other spans' headers in 64
 *   KiB chunks of the one-unit span pool (hdr_take); the registry maps
 *   each unit of the span to it.
 *
 * Steps of nnmem_alloc(size):
 *   1. size <= 128 KiB: size class (16-byte steps to 128 B, then 4 classes
 *      per power of two; by table up to 8 KiB); take the calling thread's
 *      cache (thread-local pointer, else pthread key, else adopt a parked
 *      cache of an exited thread: the owner of the block a free is
 *      returning when that one is parked, else the first; else a new one);
 *   2. pop a block from the free list of the first span of avail[cls] and
 *      clear its tag word. No lock, no atomic read-modify-write: a hit;
 *   3. miss: drain the remote frees (blocks other threads freed); with
 *      decommit_spans, purge the idle spans' free blocks every 1 ms
 *      (purge_tick, below); take back a purged block, else carve up to 64
 *      never-used blocks (at most 16 KiB of them) onto the free list,
 *      each tagged (spans are carved lazily); drop exhausted spans from
 *      avail; else take a new span from its pool under its mutex and mark
 *      its units in the registry (each unit's entry: the header);
 *   4. larger sizes or alignments > 16 go to the shared pool.
 * Steps of nnmem_free(p): 1. the registry entry of p's 64 KiB unit is
 * the header of the span holding it, or NULL (two acquire loads); p must
 * sit on a block
 * boundary below the span's last block (misuse otherwise: interior
 * pointer, tail); 2. if the span belongs to the calling thread's cache
 * and p is below the bump pointer and p's word 1 is neither its tag nor
 * its remote tag nor p purged (misuse otherwise: never handed out,
 * double free), write the link and the tag and push p on the span's free
 * list (a span that empties is returned to its pool when its class
 * already keeps two empty ones and it waits for no drain); 3. otherwise
 * (neither tag) move word 1 to the remote tag with a CAS from the value
 * checked (it changed meanwhile: a second free racing, refused), set the
 * block's rem bit with an atomic or and, when the span's rqueued flag
 * was 0, push the span on the owner cache's remote stack with a CAS
 * (lock-free multi-producer, the owner takes the whole stack with one
 * exchange: no ABA); the owner's drain clears each span's flag, takes its
 * rem words and frees each block still carrying the remote tag, refusing
 * one past its bump pointer, purged, or whose tag the owner's own free
 * overwrote (a double free racing: blk_tag); 4. other pointers go to the
 * shared pool, which rejects foreign ones (misuse). With free_batch, step
 * 2-3 run for a batch of queued frees after their headers and blocks were
 * prefetched. With a quarantine (quarantine_bytes) every free is
 * free_general's: the block is checked, tagged as held and queued in a
 * FIFO; steps 2-4 run when it leaves (quar_free, below). At thread exit (key destructor) the cache drains its remote
 * frees, gives empty spans back and is parked for adoption; spans never
 * change owner. Invariants: a span's used count = blocks handed out -
 * blocks returned to its free list; every carved block below bump is
 * either handed out (word 1 neither tag), free (tagged: on the free
 * list; remote-tagged: its rem bit set, for the drain) or purged (its bit
 * in the span's `purged`
 * mask, on no list: classes from 8 KiB, purge_tick); a span on
 * avail[cls] may have a free, purged or uncarved block (exhausted spans
 * leave it lazily, on the next miss); a
 * span off it rejoins once max(1, cap / 8) blocks are free (wake, 0 on
 * the stack, cap - max(1, cap / 8) off it: a free that leaves used <=
 * wake has that, or an emptied span, to handle), so every span with
 * used == 0 is on it; each such span is one of its class's kept ones
 * (kept[cls]), on the retry list, or has a remote free pending (its drain
 * decides); the registry entry of a unit is a header iff the unit is
 * in that header's live span. Complexity: O(1) per operation (plus the pools on
 * misses / large sizes; a purge sweep, at most every 1 ms, walks the
 * avail spans of the classes from 8 KiB). Thread-safety: every call may come
 * from any thread; counters are relaxed atomics written by their owner; destroy
 * must run alone. */
#define _DEFAULT_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "nnmem/allocator.h"
#include "nnmem/io.h"
#include "runtime/allocator_internal.h"
#include "runtime/cycles.h"
#include "runtime/leaks_internal.h"
#include "runtime/profiler_internal.h"
#include "runtime/pool_internal.h"
#include "runtime/quarantine.h"

#define PAGE_LOG2 16
#define PAGE_SIZE (1u << PAGE_LOG2) /* registry unit; a span is 1..32 */
/* a span header's bytes (hdr_take's stride; span_units keeps that much
 * room in a span) */
#define PAGE_HDR 192u
/* headers to a 64 KiB chunk; the chunk's last word links the chunks */
#define HDR_PER_CHUNK (PAGE_SIZE / PAGE_HDR)
#define HDR_LINK(chunk) ((char **)((char *)(chunk) + PAGE_SIZE) - 1)
_Static_assert(PAGE_SIZE - PAGE_SIZE / PAGE_HDR * PAGE_HDR >= sizeof(char *),
               "room for the chunks' link after the last header");
#define SMALL_MAX 8192u              /* classes found by table */
#define CACHE_MAX (128u << 10)       /* the largest cached class */
#define NCLASS 48
/* A span is 1..MAX_UNITS units: one for classes <= 8 KiB, room for
 * SPAN_BLOCKS blocks and a header above (measured: 2 and 4 blocks let
 * spans empty more often, realloc's RSS 232 / 279 MB against 315 MB, but
 * mixed2 then took and gave back spans all the time: 1-2 s of faults) */
#define SPAN_BLOCKS 16
#define MAX_UNITS 33 /* 16 x 128 KiB + header */
#define NSPAN (MAX_UNITS + 1) /* span pools by unit count; 0 unused */
#define DIRTY_MAGIC 0x6e6e6d64u /* a given-back span still resident */
#define DIRTY_MAX (64u << 20) /* resident given-back spans (decommit_spans) */
#define DIRTY1_MAX (128u << 20) /* the same for one-unit spans (<= 8 KiB) */
#define RECIP_SHIFT 40
#define PAGE_MAGIC 0x6e6e6d70u
#define KEEP_EMPTY 2 /* empty pages a class keeps before giving them back */
/* classes from 8 KiB (spans of <= 22 blocks) purge idle free blocks
 * (purge_tick) */
#define PURGE_MIN_CLS 31u

typedef struct tcache tcache_t;
typedef struct page page_t;
typedef _Atomic(page_t *) reg_ent_t; /* a registry entry */

struct page {
  /* the first 64 bytes hold everything a free or an allocation reads */
  uint32_t magic;
  uint8_t cls;
  uint8_t in_avail; /* on the owner's avail stack of its class */
  /* leak records (leaks.c), the free's only test: 0 while no block of the
   * page has a record (always while records are off), else the one
   * recorded block's index + 1 or MANY (nnmem__leaks_mark_t; written by
   * leaks.c under the records' lock only) */
  _Atomic uint16_t leak_mark;
  uint32_t bsize, used;
  uint32_t wake;     /* a free that leaves used <= wake has more to do
                        (local_free_tail): 0 on the avail stack (the span
                        emptied); off it, cap - max(1, cap / 8): it rejoins
                        once that many blocks are free (hysteresis). One
                        compare on the free path, taken once per change */
  /* bytes of blocks carved from block 0 on: the never-carved blocks start
   * at blk0 + carved (pg_bump); a free tests off < carved in one compare */
  uint32_t carved;
  /* the owner when its thread's queued and immediate frees may take the
   * one-pass path (flush_one_fast, free_direct), else NULL: a class from
   * PURGE_MIN_CLS (the purged mask to test), a released span. One compare
   * for the magic, the owner and the class (test_flush_released_span) */
  tcache_t *fown;
  uint64_t recip;    /* ceil(2^40 / bsize): exact offset / bsize for offsets
                        < 2^40 / bsize (>= 2^23 > any span) without a
                        division */
  void *free;        /* local free list (owner only) */
  char *blk0;        /* block 0: after the span's rem bits and colour */
  tcache_t *owner;   /* set before the page is published; never changes */
  char *end;         /* end of the last block */
  char *base;        /* the span's start (its rem bit words) */
  uint32_t cap;      /* blocks that fit */
  /* the owner's avail stack of the class, doubly linked: a span leaves
   * it from anywhere in O(1) (avail_unlink: a span given back, which is
   * rarely the top) */
  struct page *next, *prev;
  uint32_t span;     /* bytes of the span (span_units(cls) units) */
  /* on the owner's stack of spans with remote frees (tcache.remote) while
   * rqueued is 1: set by the remote free that finds it 0 (and pushes the
   * span, linked through rnext), cleared by the drain before it takes the
   * span's rem bits. A span stays while queued or with a rem bit set
   * (rem_pending). */
  _Atomic uint32_t rqueued;
  struct page *rnext;
  /* leak records of this span's blocks (leaks.c; 0 while records are
   * off): the high 32 bits count them; bit i of the low 32 is set when one
   * of them is a block whose index % 32 == i (all cleared with the count's
   * last; written with leak_mark). A free looks here only when leak_mark
   * says several records (this second header line is read only then). */
  _Atomic uint64_t leak_recs;
  /* rem bit i set: block i was freed by a thread other than the owner
   * (its tag word moved to the remote tag first: blk_rtag) and waits for
   * the owner's drain, which clears it; set with an atomic or. The words
   * sit at the span's start (page_bits). */
  /* decommit_spans, classes from 8 KiB (cap <= 64): bit i set, block i
   * is free, off the free list, its whole pages given back (purged: no
   * state in the block, it may read as 0); owner only */
  uint64_t purged;
  /* the used count and free list head (seen_free, in the third line:
   * read by the sweeps only) at the owner's last sweep: equal at the next
   * one, the span was idle for a whole tick (purge_tick) */
  uint16_t seen_used; /* (a span holds < 2^16 blocks) */
  /* drains of this span in progress (owner only; drain_remote): while
   * nonzero the span is not given back (rem_pending), so that an
   * on_misuse callback made from the drain may free and allocate without
   * the span going back (or coming back as another) under the drain */
  uint16_t draining;
  void *seen_free;
  /* The handshake of a remote free with the span's give-back (Dekker's,
   * on two words, sequentially consistent): a thread that is not the
   * owner raises rinflight, then reads dying and the registry; the owner
   * sets dying, then reads rinflight, and gives the span back only when
   * it is 0 (page_release: else it keeps the span, with dying cleared
   * again). So a free that passed its checks never writes into a span (its
   * block's word, its rem bit, rqueued, the owner's stack) that went back
   * meanwhile: one that comes later finds dying or another span there.
   * page_new clears dying (last, before the registry names the header) and
   * never rinflight: a stale remote free may still raise and lower it on a
   * header given back or made anew, and finds the registry changed. Last
   * in the header: page_new's memset stops before them. */
  _Atomic uint32_t dying;
  _Atomic uint32_t rinflight;
  /* on its owner's retry list (tcache retry), linked by rtry (owner only;
   * page_new's memset clears both: a header on the list is not given
   * back, so never made anew while on it) */
  uint32_t in_retry;
  struct page *rtry;
};
_Static_assert(offsetof(page_t, owner) == 56 && sizeof(page_t) <= PAGE_HDR &&
                   PAGE_HDR % 64 == 0,
               "the hot fields fill the header's first line; whole lines");
_Static_assert(offsetof(page_t, rnext) < 128 && offsetof(page_t, prev) < 128,
               "the avail links and the remote free's fields in the second");
_Static_assert(PAGE_SIZE / 16 < 65536, "seen_used counts a span's blocks");

/* The next never-carved block of pg (its bump pointer). */
static inline char *pg_bump(const page_t *pg) {
  return pg->blk0 + pg->carved;
}

/* the rem bit words, at the span's start */
static inline _Atomic uint64_t *page_bits(const page_t *pg) {
  return (_Atomic uint64_t *)pg->base;
}
#define REM_W(pg, i) (&page_bits(pg)[(i) >> 6])

/* A free block (on a free list, or carved and never handed out) carries
 * its link in word 0 and its tag in word 1: key ^ address, with the
 * allocator's random odd key (so the tag is odd); a block freed by
 * another thread and waiting for the owner's drain carries the remote
 * tag (the tag ^ 2) and no link; a block handed out has word 1 cleared
 * (0, or the debug fill 0xAA..: even), so a free that finds either tag is
 * a second free. The check reads the line the free writes anyway (no
 * side table on the allocation path). A program could forge a tag only by
 * reading freed memory; one that overwrites a freed block's word 1 (use after
 * free) hides a later second free.
 *
 * Word 1 is the only word of a block two threads may write: the owner
 * with relaxed stores (plain moves), a remote free with a compare-and-
 * swap from the value it checked to the remote tag; the drain frees only
 * blocks still remote-tagged. So of an owner's free and a remote free of
 * one block racing (a double free), either one is refused at once, or
 * the owner's tag overwrites the remote one and the drain refuses the
 * remote one: the block is freed once (and when the owner hands it out
 * again before the drain, word 1 is cleared: refused as well). What no
 * tag can tell: a remote free of a block that is not handed out and has
 * no tag (never carved, or purged: word 1 reads 0) that reads word 1
 * before the owner carves (or takes back) and hands out that block, and
 * swaps after it: the swap finds the 0 it read and the drain frees the
 * new owner's block, as a second free made after the block went out
 * again does (the quarantine only widens that window). The span itself is
 * safe from such frees (remote_enter: no write into a span given back). */
static inline uintptr_t blk_tag(uint64_t key, const void *b) {
  return (uintptr_t)(key ^ (uintptr_t)b); /* key odd: odd for a block */
}
static inline uintptr_t blk_rtag(uint64_t key, const void *b) {
  return blk_tag(key, b) ^ 2u;
}
/* 1 when word 1 (w) is the tag t or the remote tag t ^ 2: a free block.
 * (w | 2) == (t | 2) written as one xor and one test. */
static inline int tag_either(uintptr_t w, uintptr_t t) {
  return ((w ^ t) & ~(uintptr_t)2) == 0;
}
static inline _Atomic uintptr_t *blk_w1(const void *b) {
  return (_Atomic uintptr_t *)b + 1;
}
static inline uintptr_t w1_get(const void *b) {
  return atomic_load_explicit(blk_w1(b), memory_order_relaxed);
}
static inline void w1_set(void *b, uintptr_t v) {
  atomic_store_explicit(blk_w1(b), v, memory_order_relaxed);
}

typedef struct tstat { /* written by the owner only (relaxed) */
  _Atomic uint64_t misses;
  _Atomic uint64_t allocs[NCLASS], frees[NCLASS]; /* blocks, by class */
  /* the frees of the queue's one-pass path (flush_one_fast) and their
   * bytes, added once per flush (flush_run): no counter in memory changes
   * per block, so consecutive frees wait on no store of the one before */
  _Atomic uint64_t qfrees, qfree_bytes;
  /* sampled latency of the cached path (alloc and free), in ns */
  _Atomic uint64_t lat_hist[NNMEM_STATS_LAT_BUCKETS], lat_samples, lat_sum;
} tstat_t;

#define PEND_MAX 64 /* the largest free batch */
#define QF_LOG2 12 /* the queue's filter: 4,096 bytes */
typedef struct pend { /* a queued free */
  void *p;
  page_t *pg;
} pend_t;

struct tcache {
  nnmem_allocator_t *a;
  uint64_t key; /* a->tag_key (blk_tag), next to the hot fields */
  page_t *avail[NCLASS];
  uint32_t sample_left;   /* calls until the next timed one (owner only) */
  int leak_on;            /* leak_left is armed for a->leaks (owner only) */
  /* bytes the fast path may still allocate before the leak records must
   * see one (owner only): an allocation that takes it below 0 is due.
   * Records off, LEAK_IDLE; sampled, a countdown (nnmem__leaks_arm); full,
   * -1 */
  int64_t leak_left;
  uint64_t swept_us;      /* clock at the last purge sweep (us) */
  /* queued frees (free_batch; owner only): pend[0 .. ptop), each a block
   * and its span's header (registry); full at pend_end (pend +
   * free_batch: one compare within this line, no load of a->free_batch) */
  pend_t *ptop, *pend_end;
  /* a Bloom filter (one hash) of the queued blocks: qf_add at the queue,
   * qf_has before a block is handed out (page_pop's callers): a hit
   * flushes the queue first, so that a queued second free of a free
   * block is refused at the flush instead of freeing the block's new
   * owner's data. A slot holds the generation (qgen, 1..255) of the
   * queue that set it: the flush starts a new generation instead of
   * clearing the slots (cleared once per 255 flushes). 2^QF_LOG2 slots
   * for <= PEND_MAX blocks: a false hit (an early flush) on ~k / 2^QF_LOG2
   * of the hand-outs with k blocks queued. A byte per slot: one store to
   * add, one compare to test, no word index */
  uint8_t qgen;
  uint8_t qf[1u << QF_LOG2];
  pend_t pend[PEND_MAX];
  /* MPSC stack of spans with blocks freed by other threads (page rnext,
   * rqueued): written by them, so it has a 128-byte line pair of its own
   * (the owner's hot fields and counters stay out of it; 128: adjacent-
   * line prefetch pairs lines) */
  _Alignas(128) _Atomic(page_t *) remote;
  _Alignas(128) tstat_t st;
  tcache_t *next_all;
  page_t *hdr_spare; /* headers of spans it gave back (hdr_take) */
  /* empty spans page_release kept for a remote free inside the handshake
   * (page_t dying), tried again on the next miss (release_retry): linked
   * through the headers' rtry, each once (in_retry) */
  uint32_t nretry;
  page_t *retry;
  /* the empty spans each class keeps (KEEP_EMPTY; span_emptied): found
   * lazily, so that an allocation need not say when a span stops being
   * empty; an entry whose span handed a block out since leaves at the
   * class's next emptying; page_release clears its span's entry */
  page_t *kept[NCLASS][KEEP_EMPTY];
  int parked;
  /* a tagged cache (nnmem__tcache_create): belongs to no thread but to
   * `tag` (a tenant domain), never adopted while tagged; NULL for a
   * thread's cache. Atomic: a set on another thread may read it while
   * this one is released (relaxed: it only says whose page it is) */
  _Atomic(const void *) tag;
};

struct nnmem_allocator {
  /* this allocator's identity for tls_cur (a new one when leak records
   * are enabled, so that every thread re-arms its cache's countdown) */
  _Atomic uint64_t id;
  /* nonzero: no free is queued (free_batch 0, a profiler attached, or
   * leak records on: those frees take free_general): the queued free's
   * one test of the allocator's hooks */
  _Atomic uint32_t no_queue;
  nnmem_backend_t *backend, *owned_backend;
  nnmem_pool_t *pool;       /* large blocks */
  /* spans of the thread caches by unit count (1 .. MAX_UNITS, each aligned
   * to 64 KiB), kept until destroy (decommitted: not resident) */
  nnmem_pool_t *pages_pool[NSPAN];
  _Atomic uint64_t dirty; /* bytes of given-back spans still resident */
  _Atomic uint64_t dirty1; /* the same, one-unit spans (DIRTY1_MAX) */
  /* frees of small blocks by threads without a cache (after their cache's
   * exit, in a later thread-local destructor): by class, summed with the
   * caches' counters (remote_free) */
  _Atomic uint64_t nc_frees[NCLASS];
  int no_cache;
  uint32_t sample_every; /* time 1 cached call in this many */
  uint32_t free_batch;   /* 0: frees are not queued */
  int decommit;          /* madvise(MADV_DONTNEED) released large spans
                            and idle free blocks (purge_tick) */
  uint32_t os_page;      /* the system's page size (purge_runs) */
  char *hdr_next, *hdr_end; /* the headers' chunk (hdr_take; lock) */
  /* every headers' chunk, linked through its last word (HDR_LINK; lock):
   * a forked child clears their remote frees in flight (fork_child) */
  char *hdr_chunks;
  uint64_t tag_key;      /* random, for the free blocks' tags (blk_tag) */
  void (*on_misuse)(void *ctx, const void *ptr);
  void *misuse_ctx;
  /* the quarantine (quarantine_bytes; quar_free), NULL when off: tested
   * by free_general only (no_queue and tls_cur.fid keep every free off
   * the fast paths while it is on) */
  nnmem__quar_t *quar;
  int quar_fill; /* quarantine_fill */
  void (*on_quar_write)(void *ctx, const void *ptr);
  _Atomic uint64_t quar_writes;
  pthread_key_t key;
  pthread_mutex_t lock; /* tcache list, registry leaves */
  _Atomic uint64_t lock_acq, lock_cont, misuse, pages;
  tcache_t *caches;
  /* leak records (leaks.c): NULL while off; set once by create or
   * nnmem_allocator_leaks_enable, freed by destroy. Not read by the fast
   * paths: an allocation's is the cache's countdown (leak_left), a small
   * free's the page's leak_mark */
  _Atomic(nnmem__leaks_t *) leaks;
  nnmem__leaks_t *fork_leaks; /* the records locked by fork_prepare */
  /* the run-time profiler watching (profiler.c), NULL when none: one load
   * and a branch on the allocation's fast path */
  _Atomic(nnmem_profiler_t *) prof;
  /* the records' countdown slot (nnmem__leaks_slot) for the paths past
   * the fast one, beside `leaks` so that their countdown needs no load
   * through it; set after `leaks` by nnmem_allocator_leaks_enable: 0
   * meanwhile (slot 0 sends every allocation to the records: correct,
   * slower) */
  _Atomic uint32_t leak_slot;
  /* by address bits 32..47, then an entry per 64 KiB unit: NULL no span
   * of a cache, else the header of the live span holding the unit (one
   * load from a pointer to its span: no arithmetic on the free path; a
   * leaf is 512 KiB of address space, its pages made resident as spans
   * are registered there: 4 KiB per 32 MiB of spans) */
  _Atomic(reg_ent_t *) reg[1u << 16];
};

/* 16-byte steps to 128 B, then four classes per power of two; classes
 * above SMALL_MAX (from 32 on) live in larger spans. */
static const uint32_t class_size[NCLASS] = {
    16,    32,    48,    64,    80,    96,    112,    128,   160,   192,
    224,   256,   320,   384,   448,   512,   640,    768,   896,   1024,
    1280,  1536,  1792,  2048,  2560,  3072,  3584,   4096,  5120,  6144,
    7168,  8192,  10240, 12288, 14336, 16384, 20480,  24576, 28672, 32768,
    40960, 49152, 57344, 65536, 81920, 98304, 114688, 131072};
static inline unsigned span_units(unsigned cls) {
  if (cls < 32) return 1;
  return (PAGE_HDR + 16 + SPAN_BLOCKS * class_size[cls] + PAGE_SIZE - 1) >>
         PAGE_LOG2;
}
static uint8_t class_of[SMALL_MAX / 16 + 1]; /* by (size + 15) / 16 */
static pthread_once_t class_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t next_id = 1;

/* initial-exec: one %fs-relative load even in the shared library (32
 * bytes of static TLS, within glibc's reserve should it be dlopen'ed).
 * `exiting`: a cache of this thread was flushed by the key destructor; the
 * thread makes no new cache (frees that come later, from other destructors
 * or glibc's thread teardown, go to the owner's remote stack, allocations
 * to the shared pool), so a dying thread cannot strand a fresh cache. */
static _Thread_local __attribute__((tls_model("initial-exec"))) struct {
  nnmem_allocator_t *a;
  uint64_t id;
  tcache_t *tc;
  /* `id` when frees may be queued (free_batch, no profiler, no leak
   * records: no_queue 0 when the identity was taken), else 0: the queued
   * free's one test */
  uint64_t qid;
  /* `id` when a free may take free_direct's fast path (no quarantine),
   * else 0: that path's one test */
  uint64_t fid;
  /* `id` when the allocator times no call (latency_sample UINT32_MAX:
   * the malloc front), else 0: the allocation's fast path then skips the
   * sampling countdown */
  uint64_t sid;
  int exiting;
} tls_cur;

/* The class of a size in (SMALL_MAX, CACHE_MAX]: for 2^k < size <=
 * 2^(k+1), four steps of 2^(k-2). */
static inline unsigned class_big(size_t size) {
  unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)size - 1);
  unsigned sub = (unsigned)((size - 1 - ((size_t)1 << k)) >> (k - 2));
  return 32u + (k - 13u) * 4u + sub;
}

static inline unsigned class_for(size_t size) {
  return size <= SMALL_MAX ? class_of[(size + 15) >> 4] : class_big(size);
}

static void init_classes(void) {
  unsigned c = 0;
  for (unsigned i = 0; i <= SMALL_MAX / 16; i++) {
    while (class_size[c] < i * 16)
      c++;
    class_of[i] = (uint8_t)c;
  }
}

/* A counter's only writer adds d (readers: relaxed loads, the stats).
 * x86-64: one add to memory, where the relaxed load and store are three
 * instructions (compilers do not fuse atomics); its store is one aligned
 * 8-byte write, so a reader sees the old value or the new, as with the
 * store. ThreadSanitizer builds keep the atomics (it sees no asm). */
#if defined(__SANITIZE_THREAD__)
#define NNMEM_BUMP_ATOMIC 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NNMEM_BUMP_ATOMIC 1
#endif
#endif
static inline void bump(_Atomic uint64_t *c, uint64_t d) {
#if defined(__x86_64__) && !defined(NNMEM_BUMP_ATOMIC)
  __asm__ volatile("addq %1, %0" : "+m"(*(uint64_t *)c) : "er"(d));
#else
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + d,
                        memory_order_relaxed);
#endif
}

static void alock(nnmem_allocator_t *a) {
  if (pthread_mutex_trylock(&a->lock) != 0) {
    pthread_mutex_lock(&a->lock);
    atomic_fetch_add_explicit(&a->lock_cont, 1, memory_order_relaxed);
  }
  atomic_fetch_add_explicit(&a->lock_acq, 1, memory_order_relaxed);
}

/* ---- page registry ---------------------------------------------------- */

static inline reg_ent_t *reg_slot(nnmem_allocator_t *a, uintptr_t p,
                                  int create) {
  if ((uint64_t)p >> 48) return NULL;
  size_t hi = (p >> 32) & 0xFFFF;
  reg_ent_t *leaf = atomic_load_explicit(&a->reg[hi], memory_order_acquire);
  if (!leaf && create) {
    alock(a);
    leaf = atomic_load_explicit(&a->reg[hi], memory_order_acquire);
    if (!leaf) {
      leaf = calloc(1u << 16, sizeof *leaf);
      if (leaf) atomic_store_explicit(&a->reg[hi], leaf, memory_order_release);
    }
    pthread_mutex_unlock(&a->lock);
  }
  return leaf ? &leaf[(p >> PAGE_LOG2) & 0xFFFF] : NULL;
}

#define NCOLOR 16 /* block 0's colours (page_new) */

/* The registry's header for the unit of p (acquire: the header written
 * before the entry), NULL when no span is registered there. */
static inline page_t *reg_get(nnmem_allocator_t *a, uintptr_t p) {
  reg_ent_t *s = reg_slot(a, p, 0);
  return s ? atomic_load_explicit(s, memory_order_acquire) : NULL;
}

/* reg_get for the free fast paths, p below 2^48 (the caller tested it):
 * the two levels read directly, no slot creation path. */
static inline page_t *reg_get_fast(const nnmem_allocator_t *a, uintptr_t p) {
  reg_ent_t *leaf =
      atomic_load_explicit(&a->reg[p >> 32], memory_order_acquire);
  return leaf ? atomic_load_explicit(&leaf[(p >> PAGE_LOG2) & 0xFFFF],
                                     memory_order_acquire)
              : NULL;
}

static inline page_t *small_page_of(nnmem_allocator_t *a, const void *ptr) {
  uintptr_t p = (uintptr_t)ptr;
  page_t *pg = reg_get(a, p);
  if (!pg) return NULL;
  return pg->magic == PAGE_MAGIC ? pg : NULL;
}

/* The header of the span the registry names for ptr (a block that was a
 * cache's when it was queued), or NULL when no
 * span is registered there. No header read. */
static inline page_t *block_page(nnmem_allocator_t *a, const void *ptr) {
  return reg_get(a, (uintptr_t)ptr);
}

/* ---- pages ------------------------------------------------------------- */

/* Index of the block at p (p on a block boundary below end). */
static inline uint32_t blk_index(const page_t *pg, const void *p) {
  uint64_t off = (uintptr_t)p - (uintptr_t)pg->blk0;
  return (uint32_t)((off * pg->recip) >> RECIP_SHIFT);
}


/* The avail stack is doubly linked: a push writes the old top's back link
 * and a pop the new top's (the page used next), and a span given back
 * leaves from where it is in O(1) (avail_unlink; singly linked, that was a
 * walk from the top: `small` gave back ~1,000 spans per round from stacks
 * ~150 deep). */
static inline void avail_push(tcache_t *tc, page_t *pg) {
  page_t *top = tc->avail[pg->cls];
  pg->next = top;
  pg->prev = NULL;
  if (top) top->prev = pg;
  tc->avail[pg->cls] = pg;
  pg->in_avail = 1;
  pg->wake = 0;
}

/* pg leaves the avail stack: it rejoins once max(1, cap / 8) blocks are
 * free (wake). */
static inline void avail_left(page_t *pg) {
  pg->in_avail = 0;
  pg->wake = pg->cap - (pg->cap / 8 ? pg->cap / 8 : 1);
}

static inline void avail_pop(tcache_t *tc, page_t *pg) { /* pg is the top */
  tc->avail[pg->cls] = pg->next;
  if (pg->next) pg->next->prev = NULL;
  avail_left(pg);
}

static void avail_unlink(tcache_t *tc, page_t *pg) {
  if (pg->prev)
    pg->prev->next = pg->next;
  else
    tc->avail[pg->cls] = pg->next;
  if (pg->next) pg->next->prev = pg->prev;
  avail_left(pg);
}

/* Creates the registry leaves of a span's units (a span aligned to 1 MiB
 * may cross a 4 GiB boundary): 0, or -1 when out of memory. */
static int span_leaves(nnmem_allocator_t *a, void *mem, uint32_t span) {
  for (uint32_t u = 0; u < span >> PAGE_LOG2; u++)
    if (!reg_slot(a, (uintptr_t)mem + ((uintptr_t)u << PAGE_LOG2), 1))
      return -1;
  return 0;
}

/* Points the units of a span at its header pg in the registry (release:
 * after the header) or clears them (pg NULL); span_leaves made their
 * leaves. */
static void span_register(nnmem_allocator_t *a, void *mem, uint32_t span,
                          page_t *pg) {
  for (uint32_t u = 0; u < span >> PAGE_LOG2; u++)
    atomic_store_explicit(
        reg_slot(a, (uintptr_t)mem + ((uintptr_t)u << PAGE_LOG2), 0), pg,
        memory_order_release);
}

/* The word page_release leaves at the start of a span given back
 * resident (DIRTY_MAGIC and the span's address). */
static inline uint64_t dirty_mark(const void *base) {
  return (uint64_t)(uintptr_t)base ^ ((uint64_t)DIRTY_MAGIC << 32);
}

/* A span of `units` units just taken from its pool: its first word
 * cleared by an exchange (the first access a write: a read of a span
 * never touched maps the shared zero page, and the write that follows
 * faults again, replacing it, which flushes the TLB of every CPU running
 * the process), whose old value says whether page_release left it
 * resident (counted out of the resident given-back bytes). */
static void span_taken(nnmem_allocator_t *a, void *mem, unsigned units) {
  if (__atomic_exchange_n((uint64_t *)mem, 0, __ATOMIC_RELAXED) ==
      dirty_mark(mem))
    atomic_fetch_sub_explicit(units == 1 ? &a->dirty1 : &a->dirty,
                              (uint64_t)units << PAGE_LOG2,
                              memory_order_relaxed);
}

/* Span headers live out of the spans, dense: a chunk of PAGE_SIZE from
 * the one-unit span pool (never registered, so no free takes it for a
 * span; given back with the pool at destroy) holds PAGE_SIZE / PAGE_HDR
 * of them, handed out in order under the allocator's lock. Inside the
 * spans, at 64 KiB steps, the headers of a thousand spans fell in a few
 * dozen sets of a 1 MiB L2 and missed it on most frees (docs/runtime.md,
 * fifteenth round). A cache keeps the headers of the spans it gave back
 * for its next ones (owner only, no lock). A stale reader of a reused
 * header finds another span's magic, owner and blocks: the checks refuse
 * its pointer, as they did a span made anew in place. */
static page_t *hdr_take(tcache_t *tc) {
  page_t *pg = tc->hdr_spare;
  if (pg) {
    tc->hdr_spare = pg->next;
    return pg;
  }
  nnmem_allocator_t *a = tc->a;
  alock(a);
  if (a->hdr_next == a->hdr_end) {
    void *mem = NULL;
    if (nnmem_pool_alloc(a->pages_pool[1], PAGE_SIZE, PAGE_SIZE, &mem) ==
        NNMEM_OK) {
      span_taken(a, mem, 1);
      a->hdr_next = mem;
      a->hdr_end = (char *)mem + HDR_PER_CHUNK * PAGE_HDR;
      *HDR_LINK(mem) = a->hdr_chunks;
      a->hdr_chunks = mem;
    }
  }
  if (a->hdr_next != a->hdr_end) {
    pg = (page_t *)a->hdr_next;
    a->hdr_next += PAGE_HDR;
    /* never published: no remote free has seen it (page_t dying) */
    atomic_store_explicit(&pg->rinflight, 0, memory_order_relaxed);
  }
  pthread_mutex_unlock(&a->lock);
  return pg;
}
static void hdr_give(tcache_t *tc, page_t *pg) {
  pg->next = tc->hdr_spare;
  tc->hdr_spare = pg;
}

static page_t *page_new(tcache_t *tc, unsigned cls) {
  nnmem_allocator_t *a = tc->a;
  unsigned kind = span_units(cls);
  uint32_t span = kind << PAGE_LOG2;
  void *mem = NULL;
  if (nnmem_pool_alloc(a->pages_pool[kind], span, PAGE_SIZE, &mem) !=
      NNMEM_OK)
    return NULL;
  if (span_leaves(a, mem, span) != 0) {
    (void)nnmem_pool_free(a->pages_pool[kind], mem);
    return NULL;
  }
  page_t *pg = hdr_take(tc);
  if (!pg) {
    (void)nnmem_pool_free(a->pages_pool[kind], mem);
    return NULL;
  }
  span_taken(a, mem, kind);
  memset(pg, 0, offsetof(page_t, dying)); /* not the handshake's words */
  pg->in_retry = 0;
  pg->rtry = NULL;
  pg->magic = PAGE_MAGIC;
  pg->cls = (uint16_t)cls;
  pg->span = span;
  pg->bsize = class_size[cls];
  pg->recip = ((1ULL << RECIP_SHIFT) + pg->bsize - 1) / pg->bsize;
  pg->base = mem;
  /* the most blocks that fit after their bits and the span's colour:
   * block 0 sits 64 x (address bits 16..19) bytes further, so that the
   * first lines of large blocks (at equal offsets in every span) spread
   * over 16 sets of the L1 instead of one */
  uint32_t col = (uint32_t)(((uintptr_t)mem >> PAGE_LOG2) & (NCOLOR - 1)) << 6;
  uint32_t cap = (span - col) / pg->bsize, bits;
  for (;; cap--) {
    bits = 16 * ((cap + 127) / 128); /* 16-byte aligned */
    if (col + bits + (size_t)cap * pg->bsize <= span) break;
  }
  memset(mem, 0, bits); /* the rem bits of a reused span */
  pg->carved = 0;
  pg->blk0 = (char *)mem + col + bits;
  pg->end = pg->blk0 + (size_t)cap * pg->bsize;
  pg->cap = cap;
  pg->owner = tc;
  pg->fown = cls < PURGE_MIN_CLS ? tc : NULL;
  /* release: a stale remote free that reads 0 here reads the registry as
   * it is now (the span made anew), not as it was before the give-back */
  atomic_store_explicit(&pg->dying, 0, memory_order_release);
  span_register(a, mem, span, pg); /* release: after every field above */
  atomic_fetch_add_explicit(&a->pages, 1, memory_order_relaxed);
  avail_push(tc, pg);
  return pg;
}

static int rem_pending(const page_t *pg);

static void retry_add(tcache_t *tc, page_t *pg) {
  if (pg->in_retry) return;
  pg->in_retry = 1;
  pg->rtry = tc->retry;
  tc->retry = pg;
  tc->nretry++;
}
static void retry_drop(tcache_t *tc, page_t *pg) {
  if (!pg->in_retry) return;
  for (page_t **pp = &tc->retry; *pp; pp = &(*pp)->rtry)
    if (*pp == pg) {
      *pp = pg->rtry;
      break;
    }
  pg->in_retry = 0;
  pg->rtry = NULL;
  tc->nretry--;
}

static void page_release(tcache_t *tc, page_t *pg);

static void span_emptied(tcache_t *tc, page_t *pg);

/* The spans page_release kept, tried again (owner only; on a miss): each
 * still empty goes to span_emptied, which keeps it for its class, gives
 * it back (or, kept again by the handshake, lists it again) or leaves it
 * to a pending drain. */
static __attribute__((noinline)) void release_retry(tcache_t *tc) {
  page_t *pg = tc->retry;
  tc->retry = NULL;
  tc->nretry = 0;
  while (pg) {
    page_t *next = pg->rtry;
    pg->in_retry = 0;
    pg->rtry = NULL;
    if (pg->used == 0) span_emptied(tc, pg); /* (may list it again) */
    pg = next;
  }
}

static void page_release(tcache_t *tc, page_t *pg) {
  nnmem_allocator_t *a = tc->a;
  /* the handshake (page_t dying): a remote free between its checks and
   * its last write keeps the span; so does one that came and went since
   * the caller's rem_pending (its bit and rqueued are seen: the 0 read
   * from rinflight is its release). A span kept goes to the cache's retry
   * list: the next miss tries again (release_retry) */
  atomic_store_explicit(&pg->dying, 1, memory_order_seq_cst);
  if (atomic_load_explicit(&pg->rinflight, memory_order_seq_cst) != 0 ||
      rem_pending(pg)) {
    atomic_store_explicit(&pg->dying, 0, memory_order_relaxed);
    retry_add(tc, pg);
    return;
  }
  retry_drop(tc, pg);
  for (unsigned i = 0; i < KEEP_EMPTY; i++)
    if (tc->kept[pg->cls][i] == pg) tc->kept[pg->cls][i] = NULL;
  if (pg->in_avail) avail_unlink(tc, pg);
  void *base = pg->base;
  span_register(a, base, pg->span, NULL);
  pg->magic = 0;
  pg->fown = NULL; /* a queued free of it takes the general checks */
  atomic_fetch_sub_explicit(&a->pages, 1, memory_order_relaxed);
  unsigned kind = span_units(pg->cls);
  if (a->decommit) {
    /* up to DIRTY_MAX bytes of given-back spans stay resident (DIRTY1_MAX
     * of one-unit spans; before they had a bound, 600 MiB of small blocks
     * freed ahead of a phase of larger ones all stayed resident; marked,
     * so that page_new can count them out: reuse without page faults);
     * beyond, the pages go back to the system and read as 0 */
    _Atomic uint64_t *dc = kind == 1 ? &a->dirty1 : &a->dirty;
    uint64_t d = atomic_fetch_add_explicit(dc, pg->span, memory_order_relaxed);
    /* (debug builds: the pool fills a freed span, over the mark) */
    if (d + pg->span > (kind == 1 ? DIRTY1_MAX : DIRTY_MAX) || nnmem__debug) {
      atomic_fetch_sub_explicit(dc, pg->span, memory_order_relaxed);
      (void)madvise(base, pg->span, MADV_DONTNEED);
    } else {
      /* in its first rem bit word (all 0 now: no remote free writes into
       * a span going back, page_t dying) */
      atomic_store_explicit(&page_bits(pg)[0], dirty_mark(base),
                            memory_order_relaxed);
    }
  }
  (void)nnmem_pool_free(a->pages_pool[kind], base);
  hdr_give(tc, pg);
}

/* 1 when pg is on its owner's stack of spans with remote frees, or a
 * block of it waits for the drain (a rem bit is set). With used == 0
 * such a block is a refused free (never handed out, or free already)
 * still to be drained: the span stays until then, so that the drain
 * finds its header (and no span made anew there). */
static int rem_pending(const page_t *pg) {
  if (pg->draining) return 1;
  if (atomic_load_explicit(&pg->rqueued, memory_order_acquire)) return 1;
  for (uint32_t w = 0; w < (pg->cap + 63) / 64; w++)
    if (atomic_load_explicit(&page_bits(pg)[w], memory_order_relaxed)) return 1;
  return 0;
}

/* pg's last block came back (used 0; owner only): kept as one of its
 * class's KEEP_EMPTY empty spans, else given back; with a remote free
 * pending, neither: its drain decides. The class's kept spans that handed
 * a block out since they were kept leave the list here. */
static __attribute__((noinline)) void span_emptied(tcache_t *tc, page_t *pg) {
  if (rem_pending(pg)) return;
  page_t **k = tc->kept[pg->cls];
  unsigned held = 0, slot = KEEP_EMPTY;
  for (unsigned i = 0; i < KEEP_EMPTY; i++) {
    if (k[i] && (k[i] == pg || k[i]->used != 0)) k[i] = NULL;
    if (k[i])
      held++;
    else if (slot == KEEP_EMPTY)
      slot = i;
  }
  if (held < KEEP_EMPTY)
    k[slot] = pg; /* a class keeps a few empty spans */
  else
    page_release(tc, pg);
}

/* Returns block blk to its page (owner thread only); the page goes back
 * when it empties and its class keeps enough (unless `keep`: the drain,
 * which still reads the page, decides after it). */
static void local_free_k(tcache_t *tc, page_t *pg, void *blk, int keep) {
  if (nnmem__debug) memset(blk, 0x55, pg->bsize);
  *(void **)blk = pg->free;
  w1_set(blk, blk_tag(tc->key, blk));
  pg->free = blk;
  if (!pg->in_avail && pg->used - 1 <= pg->wake)
    avail_push(tc, pg); /* with a few free blocks, not just this one */
  if (--pg->used == 0 && !keep) span_emptied(tc, pg);
}

static void local_free(tcache_t *tc, page_t *pg, void *blk) {
  local_free_k(tc, pg, blk, 0);
}

static nnmem_status_t misuse(nnmem_allocator_t *a);
static void late_misuse(nnmem_allocator_t *a, const void *ptr);

/* local_free's cases past flush_one_fast: a page off its avail stack, or
 * one whose last block came back (empty count, relink, release). */
static __attribute__((noinline)) void local_free_tail(tcache_t *tc,
                                                      page_t *pg) {
  if (!pg->in_avail && pg->used <= pg->wake) avail_push(tc, pg);
  if (pg->used == 0) span_emptied(tc, pg);
}

/* ---- purging idle free blocks (decommit_spans) --------------------------
 *
 * A span of a class from 8 KiB stays resident while one block in it
 * lives, and so do its free blocks: a phase that leaves such spans sparse
 * (a realloc chain moves every buffer up a class; the stopped ones pin
 * the spans: on bench/malloc_front's realloc, 133 MiB of free blocks in
 * 585 spans at the peak) holds their pages. Decay, as a dirty-page decay:
 * on its misses the owner sweeps its avail spans of those classes at most
 * every PURGE_US; a span whose free-list head and used count are those of
 * the previous sweep was idle for a whole tick, and its free blocks leave
 * the free list for the `purged` mask; the whole pages of each run of
 * purged blocks (consecutive indices) go back with madvise(MADV_DONTNEED):
 *
 *   | live 3 |  purged 4  |  purged 5  | live 6 |     (x: given back)
 *   |  .. [p |xxxxxxxxxxxxxxxxxxxxxxxx] p  ..   |     p: a page shared
 *                                                     with a live block
 * A purged block keeps no state (its tag may read as 0): the mask says it
 * is free (a second free is refused: local_misuse, drain_remote). A span
 * in steady use (producer / consumer churn) changes between sweeps and
 * keeps its pages. A purged block is handed out again before the span's
 * uncarved tail (faulting its pages back in). Measured on that realloc
 * workload: PURGE_US 1 ms 178-182 MiB peak, 2 ms 185 MiB, 5 ms 210-217
 * MiB (10 ms, classes over 8 KiB only: 256 MiB), against 309 MiB without;
 * a purge per block that keeps the page of its tag: 207 MiB. */
#define PURGE_US 1000u

static inline char *blk_at(const page_t *pg, uint32_t i) {
  return pg->blk0 + (size_t)i * pg->bsize;
}

/* The mask sits on the header's second line: read only for the classes
 * that purge (cls is on the first). */
static inline int purged_has(const page_t *pg, const void *b) {
  return pg->cls >= PURGE_MIN_CLS && pg->purged &&
         ((pg->purged >> blk_index(pg, b)) & 1);
}

/* Gives back the whole pages of each run of purged blocks (consecutive
 * indices of pg->purged) that holds a block of `fresh`. */
static void purge_runs(nnmem_allocator_t *a, page_t *pg, uint64_t fresh) {
  uint64_t m = pg->purged;
  uintptr_t os = a->os_page;
  while (fresh) {
    unsigned lo = (unsigned)__builtin_ctzll(fresh), hi = lo;
    while (lo > 0 && ((m >> (lo - 1)) & 1))
      lo--;
    while (hi < 63 && ((m >> (hi + 1)) & 1))
      hi++;
    uintptr_t from = ((uintptr_t)blk_at(pg, lo) + os - 1) & ~(os - 1);
    uintptr_t to = (uintptr_t)(blk_at(pg, hi) + pg->bsize) & ~(os - 1);
    if (to > from) (void)madvise((void *)from, to - from, MADV_DONTNEED);
    uint64_t run = (hi == 63 ? ~0ull : (1ull << (hi + 1)) - 1) &
                   ~((1ull << lo) - 1);
    fresh &= ~run;
  }
}

/* Every block of pg's free list becomes purged. */
static void page_purge(nnmem_allocator_t *a, page_t *pg) {
  if (pg->cap > 64) return; /* not a class from 8 KiB */
  uint64_t fresh = 0;
  for (void *b = pg->free; b; b = *(void **)b)
    fresh |= 1ull << blk_index(pg, b);
  pg->free = NULL;
  pg->purged |= fresh;
  purge_runs(a, pg, fresh);
}

/* The lowest purged block of pg onto its (empty) free list: 1, or 0 when
 * none is purged. */
static int page_unpurge(page_t *pg, uint64_t key) {
  if (pg->cls < PURGE_MIN_CLS || !pg->purged) return 0;
  char *b = blk_at(pg, (uint32_t)__builtin_ctzll(pg->purged));
  pg->purged &= pg->purged - 1;
  *(void **)b = NULL;
  w1_set(b, blk_tag(key, b));
  pg->free = b;
  return 1;
}

/* On the owner's misses (decommit_spans): one clock read (vDSO); every
 * PURGE_US, purge the spans idle since the previous sweep. */
static void purge_tick(tcache_t *tc) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
  if (us - tc->swept_us < PURGE_US) return;
  tc->swept_us = us;
  for (unsigned c = PURGE_MIN_CLS; c < NCLASS; c++)
    for (page_t *pg = tc->avail[c]; pg; pg = pg->next) {
      if (pg->free && pg->free == pg->seen_free && pg->used == pg->seen_used)
        page_purge(tc->a, pg);
      pg->seen_free = pg->free;
      pg->seen_used = (uint16_t)pg->used;
    }
}

static inline int64_t small_index(const page_t *pg, const void *ptr);

/* One block of pg whose rem bit the drain took: freed when it still
 * carries the remote tag and was handed out; else a refused free (never
 * handed out, purged, or a double free that raced the owner's: see
 * blk_tag), counted and reported. */
static void drain_block(tcache_t *tc, page_t *pg, char *b) {
  if (b >= pg_bump(pg) || pg->used == 0 || purged_has(pg, b) ||
      w1_get(b) != blk_rtag(tc->key, b)) {
    /* the remote free counted a free that did not happen: taken back here
     * (the caches' counters are summed modulo 2^64) */
    bump(&tc->st.frees[pg->cls], UINT64_MAX);
    (void)misuse(tc->a);
    late_misuse(tc->a, b);
  } else {
    local_free_k(tc, pg, b, 1);
  }
}

/* Takes the stack of spans with remote frees; for each span, clears
 * rqueued first (a remote free after it queues the span again), then
 * takes its rem words (acquire: the remote tag written before the bit). */
static void drain_remote(tcache_t *tc) {
  page_t *pg =
      atomic_exchange_explicit(&tc->remote, NULL, memory_order_acquire);
  while (pg) {
    page_t *next = pg->rnext;
    pg->draining++;
    (void)atomic_exchange_explicit(&pg->rqueued, 0, memory_order_acq_rel);
    for (uint32_t w = 0; w < (pg->cap + 63) / 64; w++) {
      if (!atomic_load_explicit(&page_bits(pg)[w], memory_order_relaxed))
        continue;
      uint64_t m =
          atomic_exchange_explicit(&page_bits(pg)[w], 0, memory_order_acq_rel);
      while (m) {
        uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(m);
        m &= m - 1;
        drain_block(tc, pg, blk_at(pg, i));
      }
    }
    pg->draining--;
    /* the span may be empty now: kept when its class has enough */
    if (pg->used == 0) span_emptied(tc, pg);
    pg = next;
  }
}

/* ---- thread caches ----------------------------------------------------- */

static void flush_pending(tcache_t *tc);

static void cache_flush(tcache_t *tc) {
  if (tc->ptop != tc->pend) flush_pending(tc);
  drain_remote(tc);
  for (unsigned c = 0; c < NCLASS; c++) {
    page_t *pg = tc->avail[c];
    while (pg) {
      page_t *next = pg->next;
      if (pg->used == 0 && !rem_pending(pg)) page_release(tc, pg);
      pg = next;
    }
  }
}

static void cache_exit(void *v) { /* pthread key destructor */
  tcache_t *tc = v;
  nnmem_allocator_t *a = tc->a;
  cache_flush(tc);
  if (tls_cur.tc == tc) { /* the fast paths see no current cache */
    tls_cur.a = NULL;
    tls_cur.id = 0;
    tls_cur.qid = 0;
    tls_cur.fid = 0;
    tls_cur.sid = 0;
  }
  tls_cur.exiting = 1;
  alock(a);
  tc->parked = 1;
  pthread_mutex_unlock(&a->lock);
}

/* A new identity for a (release: after the change it announces): every
 * thread's next call finds its cache not current (cache_get_slow). */
static void new_identity(nnmem_allocator_t *a) {
  atomic_store_explicit(&a->id, atomic_fetch_add(&next_id, 1),
                        memory_order_release);
}

static inline uint64_t alloc_id(nnmem_allocator_t *a) {
  return atomic_load_explicit(&a->id, memory_order_relaxed);
}

static inline nnmem__leaks_t *leaks_of(nnmem_allocator_t *a) {
  return atomic_load_explicit(&a->leaks, memory_order_acquire);
}

/* records off: the fast path's countdown cannot run out in practice (2^62
 * bytes; if it does, alloc_leak_due sets it again) */
#define LEAK_IDLE ((int64_t)1 << 62)

/* Arms tc's countdown for the records, when they are on (leak_on: once;
 * records are never turned off). Called when the thread makes tc its
 * current cache: nnmem_allocator_leaks_enable changes a->id, so every
 * thread comes here before its next fast allocation. */
static void leak_arm(nnmem_allocator_t *a, tcache_t *tc) {
  nnmem__leaks_t *lk = leaks_of(a);
  if (!lk) {
    tc->leak_left = LEAK_IDLE;
    return;
  }
  tc->leak_left = nnmem__leaks_arm(lk);
  tc->leak_on = 1;
}

/* The thread's cache, made current; a thread without one adopts a parked
 * cache of an exited thread, else makes one. `hint`: the span of the block
 * the thread frees in this call (NULL: none), whose owner is adopted first
 * when it is parked: a thread that takes over an exited thread's data
 * (a worker handed another's structures: bench/malloc_front's larson)
 * then frees into its own cache and allocates from the spans it frees,
 * instead of filling fresh spans while the old ones wait, parked, for
 * their drain (measured: ~60 fresh 64 KiB spans per handover round). */
static tcache_t *cache_get_slow(nnmem_allocator_t *a, const page_t *hint) {
  tcache_t *tc = pthread_getspecific(a->key);
  if (!tc && tls_cur.exiting) return NULL;
  if (!tc) {
    /* read before the lock: a live span's owner never changes (the
     * registry entry was loaded with acquire); checked to be one of the
     * caches, parked and untagged, under it */
    const tcache_t *want = hint ? hint->owner : NULL;
    alock(a);
    for (tcache_t *t = a->caches; t && want && !tc; t = t->next_all)
      if (t == want && t->parked &&
          !atomic_load_explicit(&t->tag, memory_order_relaxed))
        tc = t;
    for (tcache_t *t = a->caches; t && !tc; t = t->next_all)
      if (t->parked) tc = t; /* adopt a cache of an exited thread */
    if (tc) {
      tc->parked = 0;
    } else if ((tc = aligned_alloc(128, (sizeof *tc + 127) & ~(size_t)127))) {
      memset(tc, 0, sizeof *tc); /* own cache lines: no false sharing */
      tc->a = a;
      tc->key = a->tag_key;
      tc->sample_left = a->sample_every;
      tc->ptop = tc->pend;
      tc->pend_end = tc->pend + a->free_batch;
      tc->qgen = 1; /* (the slots are 0) */
      tc->next_all = a->caches;
      a->caches = tc;
    }
    pthread_mutex_unlock(&a->lock);
    if (!tc) return NULL;
    if (pthread_setspecific(a->key, tc) != 0) {
      alock(a);
      tc->parked = 1;
      pthread_mutex_unlock(&a->lock);
      return NULL;
    }
  }
  /* the identity first (acquire: nnmem_allocator_leaks_enable stores it
   * after the records): read before the records are, an enable in between
   * leaves this cache not current, and the next allocation comes back */
  uint64_t id = atomic_load_explicit(&a->id, memory_order_acquire);
  if (__builtin_expect(!tc->leak_on, 0)) leak_arm(a, tc);
  tls_cur.a = a;
  tls_cur.tc = tc;
  /* a profiler watching (attached before that identity was stored): no
   * fast path until it is detached (identity 0 is never current, so every
   * call comes back here) */
  tls_cur.id = atomic_load_explicit(&a->prof, memory_order_acquire) ? 0 : id;
  /* (no_queue is set before the profiler or the records, each followed
   * by a new identity) */
  tls_cur.qid =
      atomic_load_explicit(&a->no_queue, memory_order_acquire) ? 0 : tls_cur.id;
  tls_cur.fid = a->quar ? 0 : tls_cur.id; /* set at create, never changes */
  tls_cur.sid = a->sample_every == UINT32_MAX ? tls_cur.id : 0;
  return tc;
}

static inline tcache_t *cache_get(nnmem_allocator_t *a) {
  if (tls_cur.a == a && tls_cur.id == alloc_id(a)) return tls_cur.tc;
  return cache_get_slow(a, NULL);
}

/* cache_get for a free of a block of span `hint` (see cache_get_slow). */
static inline tcache_t *cache_get_hint(nnmem_allocator_t *a,
                                       const page_t *hint) {
  if (tls_cur.a == a && tls_cur.id == alloc_id(a)) return tls_cur.tc;
  return cache_get_slow(a, hint);
}

/* ---- allocation -------------------------------------------------------- */

/* Threads up to EXTEND_BLOCKS never-used blocks of pg onto its free list
 * (so the fast path only ever looks at the free list); 0 when none are
 * left. */
#define EXTEND_BLOCKS 64
#define EXTEND_BYTES (16u << 10) /* at least one block: untouched memory of
                                    a large span stays unmapped */
static int page_extend(page_t *pg, uint64_t key) {
  char *first = pg_bump(pg);
  if (first >= pg->end) return 0;
  uint32_t n = EXTEND_BYTES / pg->bsize;
  n = n < 1 ? 1 : n > EXTEND_BLOCKS ? EXTEND_BLOCKS : n;
  char *stop = first + (size_t)n * pg->bsize;
  if (stop > pg->end) stop = pg->end;
  for (char *p = first; p < stop; p += pg->bsize) {
    *(void **)p = p + pg->bsize < stop ? p + pg->bsize : pg->free;
    w1_set(p, blk_tag(key, p));
  }
  pg->free = first;
  pg->carved = (uint32_t)(stop - pg->blk0);
  return 1;
}

/* The queue's filter (tcache qf): the slot of a block is the top QF_LOG2
 * bits of a multiplicative hash of its address (a class's blocks are
 * 16-aligned and a fixed stride apart: the address's low bits alone would
 * leave most slots unused). */
static inline size_t qf_slot(const void *p) {
  return (size_t)(((uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull) >>
                  (64 - QF_LOG2));
}
static inline void qf_add(tcache_t *tc, const void *p) {
  tc->qf[qf_slot(p)] = tc->qgen;
}
static inline int qf_has(const tcache_t *tc, const void *p) {
  return tc->qf[qf_slot(p)] == tc->qgen;
}

/* Hands out block b, the head of pg's free list; the caller checked that
 * the queue's filter does not hold it (qf_has). */
static inline void *page_pop(tcache_t *tc, page_t *pg, void *b) {
  pg->free = *(void **)b;
  w1_set(b, 0); /* handed out: no tag */
  pg->used++; /* (an empty span's kept entry leaves lazily: span_emptied) */
  return b;
}

/* Miss: drain the remote stack, then walk the avail stack, dropping pages
 * found exhausted (they return when a block is freed), extending pages
 * with uncarved blocks, and taking a new page when none is left. */
static __attribute__((noinline)) void *small_alloc_slow(tcache_t *tc,
                                                        unsigned cls) {
  if (atomic_load_explicit(&tc->remote, memory_order_relaxed)) drain_remote(tc);
  if (tc->nretry) release_retry(tc);
  /* the clock on misses of the purged classes and on new spans only: a
   * small class misses every few dozen allocations */
  if (tc->a->decommit && (cls >= PURGE_MIN_CLS || !tc->avail[cls]))
    purge_tick(tc);
  for (;;) {
    page_t *pg = tc->avail[cls];
    if (!pg) { /* a cache miss: the shared pool */
      bump(&tc->st.misses, 1);
      if (!(pg = page_new(tc, cls))) return NULL;
    }
    if (pg->free || page_unpurge(pg, tc->key) || page_extend(pg, tc->key)) {
      if (__builtin_expect(!qf_has(tc, pg->free), 1))
        return page_pop(tc, pg, pg->free);
      /* the block may be queued (a second free of a free block): the
       * flush refuses that free before the block is handed out */
      flush_pending(tc);
      continue;
    }
    avail_pop(tc, pg);
  }
}

static void *large_alloc(nnmem_allocator_t *a, size_t size, size_t align);

/* One sampled latency of the cached path: `t0` from nnmem__cycles(). */
static __attribute__((noinline)) void lat_record(tcache_t *tc, uint64_t t0) {
  uint64_t ns = nnmem__cycles_to_ns(nnmem__cycles() - t0);
  unsigned b = ns ? nnmem__log2(ns) : 0;
  if (b >= NNMEM_STATS_LAT_BUCKETS) b = NNMEM_STATS_LAT_BUCKETS - 1;
  bump(&tc->st.lat_hist[b], 1);
  bump(&tc->st.lat_samples, 1);
  bump(&tc->st.lat_sum, ns);
  tc->sample_left = tc->a->sample_every;
}

static inline void *small_alloc_in(tcache_t *tc, size_t size) {
  unsigned cls = class_for(size);
  page_t *pg = tc->avail[cls];
  void *b;
  if (pg && (b = pg->free) != NULL && !qf_has(tc, b))
    page_pop(tc, pg, b);
  else if (!(b = small_alloc_slow(tc, cls)))
    return NULL;
  bump(&tc->st.allocs[cls], 1);
  if (nnmem__debug) memset(b, 0xAA, class_size[cls]);
  return b;
}

static __attribute__((noinline)) void *small_alloc_timed(tcache_t *tc,
                                                         size_t size) {
  uint64_t t0 = nnmem__cycles();
  void *b = small_alloc_in(tc, size);
  lat_record(tc, t0);
  return b;
}

/* Sampling: one owner-only decrement and a predictable branch. */
static inline void *small_alloc_tc(tcache_t *tc, size_t size) {
  if (__builtin_expect(--tc->sample_left == 0, 0))
    return small_alloc_timed(tc, size);
  return small_alloc_in(tc, size);
}

static inline void *small_alloc(nnmem_allocator_t *a, size_t size) {
  tcache_t *tc = cache_get(a);
  if (__builtin_expect(!tc, 0)) return large_alloc(a, size, 16); /* exiting */
  return small_alloc_tc(tc, size);
}

static void *large_alloc(nnmem_allocator_t *a, size_t size, size_t align) {
  void *p = NULL;
  if (nnmem_pool_alloc(a->pool, size, align < 16 ? 16 : align, &p) != NNMEM_OK)
    return NULL;
  return p;
}

/* The page marks of block p for the records (*mk filled), NULL when p is
 * not a small page's block. */
static inline nnmem__leaks_mark_t *mark_of(nnmem_allocator_t *a, void *p,
                                           nnmem__leaks_mark_t *mk) {
  page_t *pg = a->no_cache ? NULL : small_page_of(a, p);
  if (!pg) return NULL;
  *mk = (nnmem__leaks_mark_t){&pg->leak_recs, &pg->leak_mark, blk_index(pg, p)};
  return mk;
}

/* An allocation the leak records want (nnmem__leaks_wants said 1): kept
 * out of the hot path. A recorded block on a small page has its page's
 * marks (leak_mark, leak_recs) raised with its record, under the records'
 * lock, before it is handed out, so that a free on a page without records
 * skips them (leaks_free_small). */
static __attribute__((noinline)) void *alloc_recorded(nnmem_allocator_t *a,
                                                      nnmem__leaks_t *lk,
                                                      size_t size, size_t align,
                                                      const char *file,
                                                      int line) {
  void *p = size <= CACHE_MAX && align <= 16 && !a->no_cache
                ? small_alloc(a, size)
                : large_alloc(a, size, align);
  nnmem__leaks_mark_t mk;
  if (p)
    (void)nnmem__leaks_on_alloc(lk, p, size, file, line, mark_of(a, p, &mk));
  return p;
}

/* leaks_free_small's rare case: the page's mark says block idx may have
 * a record (nnmem__leaks_mark_hit). A mark of one record (idx + 1) goes
 * straight to the records; MANY (several) is a superset, so leak_recs's
 * bit for idx % 32 and the filter are read first. Both marks are written
 * only under the records' lock (nnmem__leaks_mark_t): read here without
 * it, a stale mark costs only this look; a block with a record has its
 * marks from before its allocation returned until its record goes. */
static __attribute__((noinline)) void leaks_free_marked(nnmem__leaks_t *lk,
                                                        page_t *pg, void *ptr,
                                                        uint32_t idx,
                                                        uint32_t m) {
  if (m & NNMEM__LEAKS_MANY) {
    uint64_t w = atomic_load_explicit(&pg->leak_recs, memory_order_relaxed);
    if (!((w >> (idx & 31)) & 1)) return;
  }
  nnmem__leaks_mark_t mk = {&pg->leak_recs, &pg->leak_mark, idx};
  (void)nnmem__leaks_on_free(lk, ptr, &mk);
}

/* Block idx of small page pg about to be freed: two bytes of the header
 * line every free reads, 0 while records are off (no test of a->leaks:
 * the mark is that test); a page with one record sends only its block's
 * free to the records. */
static inline void leaks_free_small(nnmem_allocator_t *a, page_t *pg, void *ptr,
                                    uint32_t idx) {
  uint32_t m = atomic_load_explicit(&pg->leak_mark, memory_order_relaxed);
  if (__builtin_expect(nnmem__leaks_mark_hit(m, idx), 0)) {
    nnmem__leaks_t *lk = leaks_of(a); /* set: the mark was */
    if (lk) leaks_free_marked(lk, pg, ptr, idx, m);
  }
}

/* A block of the shared pool about to be freed: its record, if the
 * records are on and their filter says it may have one, is removed. */
static inline void leaks_free_large(nnmem_allocator_t *a, void *ptr) {
  nnmem__leaks_t *lk = leaks_of(a);
  if (__builtin_expect(lk != NULL, 0) && nnmem__leaks_maybe(lk, ptr))
    (void)nnmem__leaks_on_free(lk, ptr, NULL);
}

static inline nnmem_profiler_t *prof_of(nnmem_allocator_t *a) {
  return atomic_load_explicit(&a->prof, memory_order_acquire);
}

/* Every allocation while a profiler watches: the allocation as without it
 * (leak records included), then the profiler's record. */
static __attribute__((noinline)) void *alloc_profiled(nnmem_allocator_t *a,
                                                      nnmem_profiler_t *pr,
                                                      size_t size, size_t align,
                                                      const char *file,
                                                      int line) {
  nnmem__leaks_t *lk = leaks_of(a);
  void *p;
  if (lk && nnmem__leaks_wants(lk, size))
    p = alloc_recorded(a, lk, size, align, file, line);
  else if (size <= CACHE_MAX && align <= 16 && !a->no_cache)
    p = small_alloc(a, size);
  else
    p = large_alloc(a, size, align);
  if (p) nnmem__profiler_on_alloc(pr, p, size);
  return p;
}

/* A block of nnmem_alloc the records want: b, just allocated (pg its
 * page, NULL: looked up; b NULL: the allocation failed). tc non-NULL: the
 * countdown of tc (the thread's current cache) ran out on b: records off,
 * it is set again (LEAK_IDLE); sampled, b is recorded and the next
 * countdown drawn; full, b is recorded (the countdown stays -1). tc NULL:
 * the thread's slot said so (nnmem__leaks_slot_due). The backtrace is
 * taken here, one frame above the allocation's caller in an optimised
 * build (nnmem_alloc -> alloc_slow -> here: tail calls); unoptimised,
 * nnmem_alloc's and alloc_slow's frames come between, each from its one
 * call site, so a call site still gives one backtrace. Returns b. */
static __attribute__((noinline)) void *alloc_leak_due(nnmem_allocator_t *a,
                                                      tcache_t *tc, page_t *pg,
                                                      void *b, size_t size) {
  nnmem__leaks_t *lk = leaks_of(a);
  if (!lk) {
    if (tc) tc->leak_left = LEAK_IDLE;
    return b;
  }
  if (tc) tc->leak_left = nnmem__leaks_arm(lk);
  if (!b) return b;
  if (!pg && !a->no_cache) pg = small_page_of(a, b);
  void *fr[NNMEM_LEAKS_MAX_DEPTH + 1];
  int n = nnmem__leaks_backtrace(lk, fr); /* fr[0]: here */
  nnmem__leaks_mark_t mk;
  if (pg)
    mk =
        (nnmem__leaks_mark_t){&pg->leak_recs, &pg->leak_mark, blk_index(pg, b)};
  (void)nnmem__leaks_record(lk, b, size, NULL, 0, pg ? &mk : NULL, fr + 1,
                            n - 1);
  return b;
}

/* nnmem_alloc past its fast path (b NULL: large sizes, no cache, a cache
 * not yet current, a miss, a timed call), or the fast path's block b
 * (from page pg) when the cache's countdown ran out. A small block counts
 * down its cache's countdown as the fast path does; others the records'
 * slot (one per thread and N: either is an exponential countdown of mean
 * N, so a block is recorded with the same probability whichever counts
 * it). Out of line so that the fast path saves no registers. */
static __attribute__((noinline)) void *alloc_slow(nnmem_allocator_t *a,
                                                  size_t size, page_t *pg,
                                                  void *b) {
  tcache_t *tc = NULL;
  if (b) {
    tc = tls_cur.tc;
  } else if (pg = NULL, /* the fast path's empty page: not b's */
             size <= CACHE_MAX && !a->no_cache && (tc = cache_get(a)) != NULL) {
    b = small_alloc_tc(tc, size);
    if (__builtin_expect((tc->leak_left -= (int64_t)size) >= 0, 1)) return b;
  } else {
    nnmem__leaks_t *lk = leaks_of(a);
    if (__builtin_expect(lk == NULL, 1) ||
        !nnmem__leaks_wants_slot(
            atomic_load_explicit(&a->leak_slot, memory_order_relaxed), size))
      return large_alloc(a, size, 16);
    b = large_alloc(a, size, 16);
    if (!nnmem__leaks_slot_due(lk, size)) return b;
  }
  /* the one call: the same frames above it whichever way came here */
  return alloc_leak_due(a, tc, pg, b, size);
}

/* The fast path: a small size, the thread's cache current, no timed call
 * due, a block on the first available page, then the cache's leak
 * countdown: the same instructions with records off or sampled (one
 * subtraction in the cache's line; the countdown is LEAK_IDLE while
 * records are off). A profiler's hook comes first and the same way for
 * every size (a watched allocation always takes nnmem_alloc ->
 * alloc_rest -> alloc_profiled). Anything else, the countdown run out
 * included, is alloc_slow, from one call site (nnmem_alloc -> alloc_rest
 * -> alloc_slow -> alloc_leak_due: one call site gives one backtrace,
 * optimised or not). alloc_try is that path, inlined into nnmem_alloc and
 * the malloc front's nnmem__allocator_alloc_or: 1 with the block in *bo;
 * else 0, with the fast path's page (*pgo) and block (*bo: the countdown
 * ran out on it) or NULLs, for alloc_rest. */
/* alloc_try's pop: a block of the first available page of the size's
 * class (the countdown of timed calls taken when `timed`), counted, then
 * the cache's leak countdown. */
static inline __attribute__((always_inline)) int alloc_pop(
    tcache_t *tc, size_t size, int timed, page_t **pgo, void **bo) {
  unsigned cls = class_of[(size + 15) >> 4];
  page_t *pg = tc->avail[cls];
  void *b;
  if (__builtin_expect(!pg || !(b = pg->free) || qf_has(tc, b), 0)) {
    *pgo = pg; /* (small_alloc_slow flushes the queue on a filter hit) */
    return 0;
  }
  if (timed) tc->sample_left--;
  page_pop(tc, pg, b);
  bump(&tc->st.allocs[cls], 1);
  if (nnmem__debug) memset(b, 0xAA, class_size[cls]);
  *bo = b;
  if (__builtin_expect((tc->leak_left -= (int64_t)size) >= 0, 1)) return 1;
  *pgo = pg;
  return 0;
}

static inline __attribute__((always_inline)) int alloc_try(nnmem_allocator_t *a,
                                                           size_t size,
                                                           page_t **pgo,
                                                           void **bo) {
  *pgo = NULL;
  *bo = NULL;
  /* size 0 and sizes over SMALL_MAX: one compare; the thread's cache is
   * current when its identity is a's (identities are never reused, and
   * a cache's thread exit clears it); a current cache implies thread
   * caches (no_cache never makes one) */
  if (__builtin_expect(size - 1 >= SMALL_MAX, 0)) return 0;
  /* an allocator that times no call matches sid: no countdown (identity
   * 0 while a profiler watches: cache_get_slow) */
  uint64_t id = alloc_id(a);
  tcache_t *tc = tls_cur.tc;
  if (__builtin_expect(tls_cur.sid == id, 1))
    return alloc_pop(tc, size, 0, pgo, bo);
  if (tls_cur.id != id || tc->sample_left <= 1) return 0;
  return alloc_pop(tc, size, 1, pgo, bo);
}

/* nnmem_alloc past its fast path: no allocator, size 0, a profiler
 * watching, then alloc_slow (the one way to alloc_leak_due). */
static __attribute__((noinline)) void *alloc_rest(nnmem_allocator_t *a,
                                                  size_t size, page_t *pg,
                                                  void *b) {
  if (!b) {
    if (!a || size == 0) return NULL;
    nnmem_profiler_t *pr = prof_of(a);
    if (__builtin_expect(pr != NULL, 0))
      return alloc_profiled(a, pr, size, 16, NULL, 0);
  }
  return alloc_slow(a, size, pg, b);
}

void *nnmem_alloc(nnmem_allocator_t *a, size_t size) {
  page_t *pg = NULL;
  void *b = NULL;
  if (__builtin_expect(a != NULL, 1) && alloc_try(a, size, &pg, &b)) return b;
  return alloc_rest(a, size, pg, b);
}

static __attribute__((noinline)) void *alloc_or_rest(
    nnmem_allocator_t *a, size_t size, page_t *pg, void *b,
    void *(*fallback)(size_t)) {
  void *p = alloc_rest(a, size, pg, b);
  return p ? p : fallback(size);
}

void *nnmem__allocator_alloc_or(size_t size, nnmem_allocator_t *a,
                                void *(*fallback)(size_t)) {
  page_t *pg;
  void *b;
  if (__builtin_expect(alloc_try(a, size, &pg, &b), 1)) return b;
  return alloc_or_rest(a, size, pg, b, fallback);
}

void *nnmem_alloc_at(nnmem_allocator_t *a, size_t size, const char *file,
                     int line) {
  if (!a || size == 0) return NULL;
  nnmem_profiler_t *pr = prof_of(a);
  if (pr) return alloc_profiled(a, pr, size, 16, file, line);
  nnmem__leaks_t *lk = leaks_of(a);
  if (lk && nnmem__leaks_wants(lk, size))
    return alloc_recorded(a, lk, size, 16, file, line);
  if (size <= CACHE_MAX && !a->no_cache) return small_alloc(a, size);
  return large_alloc(a, size, 16);
}

void *nnmem_alloc_aligned(nnmem_allocator_t *a, size_t size, size_t align) {
  if (!a || size == 0 || (align & (align - 1))) return NULL;
  nnmem_profiler_t *pr = prof_of(a);
  if (__builtin_expect(pr != NULL, 0))
    return alloc_profiled(a, pr, size, align, NULL, 0);
  nnmem__leaks_t *lk = leaks_of(a);
  if (__builtin_expect(lk != NULL, 0) && nnmem__leaks_wants(lk, size))
    return alloc_recorded(a, lk, size, align, NULL, 0);
  if (size <= CACHE_MAX && align <= 16 && !a->no_cache)
    return small_alloc(a, size);
  return large_alloc(a, size, align);
}

/* Shared by nnmem_free and nnmem_allocator_free (a static function: no
 * PLT call between the two in the shared library). */
static nnmem_status_t misuse(nnmem_allocator_t *a) {
  atomic_fetch_add_explicit(&a->misuse, 1, memory_order_relaxed);
  return NNMEM_ERR_INVALID;
}

/* Owner-thread checks of a block about to return to its page: never carved
 * (at or past the bump pointer), or free already (a double free: tagged,
 * on the free list; remote-tagged, waiting for the drain). */
static inline int local_misuse(const page_t *pg, const void *ptr,
                               uint64_t key) {
  uintptr_t w = w1_get(ptr), t = blk_tag(key, ptr);
  /* a purged block may read as 0 (its tag page given back) */
  return (const char *)ptr >= pg_bump(pg) || tag_either(w, t) ||
         (__builtin_expect(pg->cls >= PURGE_MIN_CLS, 0) && w == 0 &&
          purged_has(pg, ptr));
}

/* Block index of ptr in its span pg, or -1 when ptr is no block
 * boundary of it (in the bits, interior, or in the unused tail). cap,
 * blk0 and bsize never change once the page is published: no race. */
static inline int64_t small_index(const page_t *pg, const void *ptr) {
  /* < span unless ptr lies in the block bits (wraps: caught below) */
  uint64_t off = (uintptr_t)ptr - (uintptr_t)pg->blk0;
  uint64_t idx = (off * pg->recip) >> RECIP_SHIFT; /* off / bsize, exact */
  if (__builtin_expect(
          off >= pg->span || idx >= pg->cap || idx * pg->bsize != off, 0))
    return -1;
  return (int64_t)idx;
}

/* A block of a span the calling thread's cache owns back on its free list:
 * counted, and timed when the latency sample is due. */
static inline void owner_free(tcache_t *tc, page_t *pg, void *ptr) {
  bump(&tc->st.frees[pg->cls], 1);
  if (__builtin_expect(--tc->sample_left == 0, 0)) {
    uint64_t t0 = nnmem__cycles();
    local_free(tc, pg, ptr);
    lat_record(tc, t0);
  } else {
    local_free(tc, pg, ptr);
  }
}

/* A thread other than pg's owner about to write into pg (its block ptr,
 * index idx, checked by the caller): the handshake with page_release
 * (page_t dying), then the checks again, as the span may have gone back,
 * or come back as another, since the caller read the registry: 1 when
 * pg is still ptr's live span, and stays so until remote_leave; 0 (left
 * already) when not. */
static int remote_enter(nnmem_allocator_t *a, page_t *pg, const void *ptr,
                        uint32_t idx) {
  atomic_fetch_add_explicit(&pg->rinflight, 1, memory_order_seq_cst);
  /* the registry's acquire: a header it names was written before */
  if (atomic_load_explicit(&pg->dying, memory_order_seq_cst) == 0 &&
      reg_get(a, (uintptr_t)ptr) == pg && pg->magic == PAGE_MAGIC &&
      small_index(pg, ptr) == (int64_t)idx)
    return 1;
  atomic_fetch_sub_explicit(&pg->rinflight, 1, memory_order_release);
  return 0;
}
static void remote_leave(page_t *pg) {
  atomic_fetch_sub_explicit(&pg->rinflight, 1, memory_order_release);
}

int nnmem__allocator_remote_enter(nnmem_allocator_t *a, const void *ptr) {
  page_t *pg = a && !a->no_cache ? small_page_of(a, ptr) : NULL;
  int64_t idx = pg ? small_index(pg, ptr) : -1;
  return idx >= 0 && remote_enter(a, pg, ptr, (uint32_t)idx);
}
void nnmem__allocator_remote_leave(nnmem_allocator_t *a, const void *ptr) {
  page_t *pg = a && !a->no_cache ? small_page_of(a, ptr) : NULL;
  if (pg) remote_leave(pg);
}

/* Word 1 of block ptr (index idx of span pg; NULL: a shared pool's
 * block) swapped from `from` to `to`, inside the handshake when pg is not
 * the calling thread's cache tc's (remote_enter: no write into a span
 * given back meanwhile): 1 when swapped, 0 when the word changed or the
 * span went. */
static int w1_swap(nnmem_allocator_t *a, tcache_t *tc, page_t *pg, void *ptr,
                   uint32_t idx, uintptr_t from, uintptr_t to) {
  int other = pg && pg->owner != tc;
  if (other && !remote_enter(a, pg, ptr, idx)) return 0;
  int won = atomic_compare_exchange_strong_explicit(
      blk_w1(ptr), &from, to, memory_order_relaxed, memory_order_relaxed);
  if (other) remote_leave(pg);
  return won;
}

/* small_free's case of another thread's span, inside remote_enter /
 * remote_leave. A block free already or waiting for the drain (either
 * tag) is a second free; word 1 moves to the remote tag with a
 * compare-and-swap from the value checked: of two frees racing, one wins
 * (a block never carved is refused by the owner's drain: the bump pointer
 * is the owner's). Counted by the calling thread's cache, or by the
 * allocator for a thread without one. */
static nnmem_status_t remote_free(nnmem_allocator_t *a, tcache_t *tc,
                                  page_t *pg, void *ptr, uint32_t idx) {
  uintptr_t t = blk_tag(a->tag_key, ptr), w = w1_get(ptr);
  if (__builtin_expect(tag_either(w, t), 0)) return misuse(a);
  if (__builtin_expect(!atomic_compare_exchange_strong_explicit(
                           blk_w1(ptr), &w, t ^ 2u, memory_order_relaxed,
                           memory_order_relaxed),
                       0))
    return misuse(a);
  if (tc)
    bump(&tc->st.frees[pg->cls], 1);
  else
    atomic_fetch_add_explicit(&a->nc_frees[pg->cls], 1, memory_order_relaxed);
  /* release: the drain that takes the bit sees the remote tag; a bit set
   * already is a stale one (a refused entry not drained yet) */
  (void)atomic_fetch_or_explicit(REM_W(pg, idx), 1ULL << (idx & 63),
                                 memory_order_release);
  if (atomic_exchange_explicit(&pg->rqueued, 1, memory_order_acq_rel))
    return NNMEM_OK; /* queued already (the drain clears rqueued first) */
  tcache_t *owner = pg->owner;
  page_t *old = atomic_load_explicit(&owner->remote, memory_order_relaxed);
  do {
    pg->rnext = old;
  } while (!atomic_compare_exchange_weak_explicit(
      &owner->remote, &old, pg, memory_order_release, memory_order_relaxed));
  return NNMEM_OK;
}

/* Returns block idx of span pg to its owner: the span's free list
 * when the calling thread's cache `tc` owns it, else the owner's remote
 * stack. A block not handed out (a second free) is misuse. */
static inline nnmem_status_t small_free(nnmem_allocator_t *a, tcache_t *tc,
                                        page_t *pg, void *ptr, uint32_t idx) {
  if (pg->owner == tc) {
    if (__builtin_expect(local_misuse(pg, ptr, tc->key), 0))
      return misuse(a);
    owner_free(tc, pg, ptr);
    return NNMEM_OK;
  }
  if (!remote_enter(a, pg, ptr, idx)) return misuse(a);
  nnmem_status_t st = remote_free(a, tc, pg, ptr, idx);
  remote_leave(pg);
  return st;
}

/* A queued free found bad at its flush (already counted): to on_misuse. */
static void late_misuse(nnmem_allocator_t *a, const void *ptr) {
  if (a->on_misuse) a->on_misuse(a->misuse_ctx, ptr);
}

/* flush_pending's common case, the same checks as small_index and
 * small_free's owner case in one pass over the header's first line: a
 * block of a live span of tc of a class below the purged ones (fown ==
 * tc: one compare, no magic; a span given back clears fown), carved (off
 * below carved: also below the span's end) and on a block boundary (off *
 * recip: the low 40 bits are below recip iff off is a multiple of bsize,
 * as in small_index), neither tag in word 1, no timed call due (`counted`
 * 0: the countdown taken here). No leak record can be among them: the
 * queue takes no free while records are on. 1 when freed, pushed on its
 * span's free list (the caller counts it and decrements used); 0: nothing
 * done (the general case decides, misuse included). */
static inline __attribute__((always_inline)) int flush_one_fast(
    tcache_t *tc, page_t *pg, void *p, int counted, uint64_t key) {
  if (pg->fown != tc || (!counted && tc->sample_left <= 1)) return 0;
  /* wraps below block 0: huge */
  uint64_t off = (uintptr_t)p - (uintptr_t)pg->blk0;
  uint64_t m = off * pg->recip;
  if (off >= pg->carved || (m & ((1ull << RECIP_SHIFT) - 1)) >= pg->recip)
    return 0;
  uintptr_t t = blk_tag(key, p);
  if (tag_either(w1_get(p), t)) return 0;
  if (!counted) tc->sample_left--;
  if (nnmem__debug) memset(p, 0x55, pg->bsize);
  *(void **)p = pg->free;
  w1_set(p, t);
  pg->free = p;
  return 1;
}

/* The entries of a flush past flush_one_fast: how many, and the refused
 * ones (counted as misuse, for on_misuse once the batch is done). */
typedef struct flush_other {
  uint32_t nslow, nbad;
  void *bad[PEND_MAX];
} flush_other_t;

/* An entry past flush_one_fast (out of line: the flush's loop keeps its
 * values in registers across the call): refused, or freed by the general
 * checks. */
static __attribute__((noinline)) void flush_one_slow(tcache_t *tc,
                                                     const pend_t *e,
                                                     flush_other_t *o) {
  nnmem_allocator_t *a = tc->a;
  page_t *pg = e->pg;
  int bad;
  o->nslow++;
  if (pg->fown != tc) { /* see pend_push */
    (void)misuse(a);
    bad = 1;
  } else {
    int64_t k = pg->magic == PAGE_MAGIC ? small_index(pg, e->p) : -1;
    bad = k < 0 ? misuse(a) != NNMEM_OK
                : small_free(a, tc, pg, e->p, (uint32_t)k) != NNMEM_OK;
  }
  if (bad) o->bad[o->nbad++] = e->p;
}

/* Returns the queued frees of tc (free_batch; each block prefetched when
 * it was queued, its span's header read then: the misses overlap): check
 * each page (fown says it is still this cache's, see pend_push) and block
 * index, and free, in queue order (a block queued twice: the second finds
 * its tag, misuse); the refusals go to o. The one-pass frees are counted
 * once, after the loop: no counter in memory changes per block, so
 * consecutive frees wait on no store of the one before. */
static inline __attribute__((always_inline)) void flush_run(
    tcache_t *tc, uint32_t n, int counted, flush_other_t *o) {
  uint64_t key = tc->key, bytes = 0;
  for (const pend_t *e = tc->pend, *stop = e + n; e < stop; e++) {
    page_t *pg = e->pg;
    if (__builtin_expect(!flush_one_fast(tc, pg, e->p, counted, key), 0)) {
      flush_one_slow(tc, e, o);
      continue;
    }
    bytes += pg->bsize;
    if (__builtin_expect(--pg->used <= pg->wake, 0)) local_free_tail(tc, pg);
  }
  bump(&tc->st.qfrees, n - o->nslow);
  bump(&tc->st.qfree_bytes, bytes);
}

static void flush_pending(tcache_t *tc) {
  uint32_t n = (uint32_t)(tc->ptop - tc->pend);
  tc->ptop = tc->pend;
  if (__builtin_expect(++tc->qgen == 0, 0)) { /* a new generation */
    memset(tc->qf, 0, sizeof tc->qf);
    tc->qgen = 1;
  }
  /* no timed call due in this batch: its countdown taken at once (a free
   * the general case takes counts again: a sample comes at most n calls
   * early) */
  flush_other_t o;
  o.nslow = o.nbad = 0;
  if (tc->sample_left > n + 1) {
    tc->sample_left -= n;
    flush_run(tc, n, 1, &o);
  } else {
    flush_run(tc, n, 0, &o);
  }
  /* the refusals go to on_misuse once the batch is done: a callback that
   * allocates or frees finds the queue empty and its filter clear, not
   * half-flushed entries that it could hand out or overwrite */
  for (uint32_t i = 0; i < o.nbad; i++) late_misuse(tc->a, o.bad[i]);
}

/* Queues the free of p, whose unit the registry gives to span pg, a live
 * span of tc (pg->fown == tc when queued); a full queue is flushed.
 * Only tc hands out pg's blocks, and it tests the queue's filter first
 * (qf_has): a block on pg's free list that is queued again (a second
 * free) is still free at the flush, and refused. A block handed out
 * keeps pg from emptying, so a span whose fown is no longer tc at the
 * flush was given back meanwhile: every entry of it is a bad free (a
 * second free of a free block, a pointer into the header), refused
 * without a look at the block (flush_run). Blocks of other spans are
 * freed at the call (free_other, free_general), with the check of the
 * block's tag:
 * queued, a second free of such a block could not be told from a first
 * free once its owner had handed it out again. */
static inline void pend_push(tcache_t *tc, void *p, page_t *pg) {
  pend_t *e = tc->ptop;
  e->p = p;
  e->pg = pg;
  qf_add(tc, p);
  /* the flush writes its link and tag (the header's line was read at the
   * call): the miss overlaps the frees until then */
  __builtin_prefetch(p, 1);
  tc->ptop = ++e;
  if (__builtin_expect(e >= tc->pend_end, 0)) flush_pending(tc);
}

/* ---- quarantine (quarantine_bytes; quarantine.h) -------------------------
 *
 * With a quarantine every free comes here (free_general: no_queue and
 * tls_cur.fid keep the fast paths off): the block's word 1 moves to its
 * quarantine tag, the tag ^ 4 (neither tag, so no path takes the block for
 * a free one), with a compare-and-swap from the value checked (of two
 * frees racing, one wins), and the block goes to the FIFO's tail; the
 * oldest blocks leave while the FIFO holds more than its budget, and each
 * is freed as free_general would have freed it at the call: word 1 back
 * to 0 (a CAS from the quarantine tag: a block whose tag changed
 * meanwhile is not freed, but reported), then small_free (its owner's
 * free list, or its remote stack) or the shared pool.
 *
 *   free(p) -> [checks] -> w1 = qtag -> FIFO tail ... FIFO head -> w1 = 0
 *                                                     -> small_free / pool
 *
 * A second free of a held block finds the quarantine tag: refused (as a
 * second free of a free block is, by its tag). What is left: a second
 * free made after the block left and was handed out again (it frees the
 * new owner's block, as without a quarantine); the budget only widens the
 * time between. Large blocks (shared pool) are tagged and checked under
 * the quarantine's mutex, after the pool said the block is live, and
 * leave under it too (the pool may unmap a freed one: no entry, no stale
 * free, touches a block the pool let go). Records and the profiler see
 * the program's free (at the call), the per-cache counters the real one
 * (when the block leaves). With quarantine_fill a small block is filled
 * (but word 1) with QUAR_FILL and checked when it leaves. */
#define QUAR_FILL 0xdbu
#define QUAR_BATCH 32 /* blocks taken out of the FIFO per lock hold */
/* A FIFO entry's pointer carries bit 0 = filled (blocks are 16-aligned) */
#define QUAR_PTR(e) ((void *)((uintptr_t)(e) & ~(uintptr_t)1))
#define QUAR_FILLED(e) ((int)((uintptr_t)(e) & 1))

static inline uintptr_t blk_qtag(uint64_t key, const void *b) {
  return blk_tag(key, b) ^ 4u;
}

/* The fill covers a held block past its first two words: word 1 is the
 * tag, and word 0 is what a non-owner's bad free of a never handed out
 * block could race with (the owner carving it writes the link there). */
#define QUAR_FILL_FROM 16u

/* 1 when a held small block (n bytes, a multiple of 16) has a byte past
 * QUAR_FILL_FROM that is not QUAR_FILL: compared a word at a time (a byte
 * loop cost 2,043 instructions per malloc + free pair of 16-515 B against
 * 636 without the fill) */
static int quar_written(const void *p, uint64_t n) {
  const uint64_t pat = 0x0101010101010101ull * QUAR_FILL;
  for (uint64_t i = QUAR_FILL_FROM; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, (const char *)p + i, sizeof w);
    if (w != pat) return 1;
  }
  return 0;
}

/* A held block leaves: its quarantine tag back to 0, then freed. A block
 * whose word 1 no longer holds its quarantine tag (overwritten after the
 * free, or a non-owner's free of a block that was not handed out: the
 * owner carved it, or took it back purged, meanwhile) is not freed:
 * counted: 1, for the caller to report (on_misuse) once no lock is held;
 * else 0. A small block that is no block boundary of its span now (a bad
 * free's entry whose span was given back and carved anew) is refused
 * before its word 1 is touched. `filled`: quar_free filled it. Large
 * blocks: under q->lock (quar_release_all). */
static int quar_release(nnmem_allocator_t *a, void *p, uint64_t n,
                        int filled) {
  page_t *pg = a->no_cache ? NULL : small_page_of(a, p);
  int64_t idx = pg ? small_index(pg, p) : 0;
  if (idx < 0) return misuse(a) != NNMEM_OK;
  uintptr_t q = blk_qtag(a->tag_key, p);
  if (pg && filled && w1_get(p) == q && quar_written(p, n)) {
    atomic_fetch_add_explicit(&a->quar_writes, 1, memory_order_relaxed);
    if (a->on_quar_write) a->on_quar_write(a->misuse_ctx, p);
  }
  /* (a quarantined bad free of a block never handed out does not hold
   * its span: the swap is w1_swap's, inside the handshake) */
  tcache_t *tc = pg ? cache_get_hint(a, pg) : NULL;
  if (!w1_swap(a, tc, pg, p, (uint32_t)idx, q, 0))
    return misuse(a) != NNMEM_OK;
  if (!pg) return nnmem_pool_free(a->pool, p) != NNMEM_OK; /* counted */
  return small_free(a, tc, pg, p, (uint32_t)idx) !=
         NNMEM_OK; /* counted by small_free */
}

static inline int quar_small(nnmem_allocator_t *a, const void *p) {
  return !a->no_cache && reg_get(a, (uintptr_t)p) != NULL;
}

/* Takes the blocks over the budget out of the FIFO and frees them (all
 * of them when `all`): large ones while q->lock is held (the caller's
 * hold, then each further one), small ones after it is released. */
static void quar_release_all(nnmem_allocator_t *a, int all) {
  nnmem__quar_t *q = a->quar;
  nnmem__quar_ent_t out[QUAR_BATCH];
  void *bad[QUAR_BATCH];
  for (;;) {
    size_t k = nnmem__quar_pop_locked(q, out, QUAR_BATCH, all), m = 0, nb = 0;
    for (size_t i = 0; i < k; i++) {
      void *p = QUAR_PTR(out[i].p);
      if (quar_small(a, p))
        out[m++] = out[i]; /* a span's block: after the unlock */
      else if (quar_release(a, p, out[i].n, 0))
        bad[nb++] = p;
    }
    pthread_mutex_unlock(&q->lock);
    for (size_t i = 0; i < nb; i++)
      late_misuse(a, bad[i]);
    for (size_t i = 0; i < m; i++) {
      void *p = QUAR_PTR(out[i].p);
      if (quar_release(a, p, out[i].n, QUAR_FILLED(out[i].p)))
        late_misuse(a, p);
    }
    if (k < QUAR_BATCH) return;
    pthread_mutex_lock(&q->lock);
  }
}

/* Puts p (n bytes, its word 1 the quarantine tag already) at the FIFO's
 * tail, with q->lock held, then releases the lock and frees what leaves
 * (p itself at once when the FIFO cannot grow). */
static void quar_push_locked(nnmem_allocator_t *a, void *p, uint64_t n,
                             int filled) {
  void *e = (void *)((uintptr_t)p | (filled != 0));
  if (nnmem__quar_push_locked(a->quar, e, n) == 0) {
    quar_release_all(a, 0);
    return;
  }
  int small = quar_small(a, p), bad = 0;
  if (!small) bad = quar_release(a, p, n, 0); /* large: under the lock */
  quar_release_all(a, 0);
  if (small) bad = quar_release(a, p, n, filled);
  if (bad) late_misuse(a, p);
}

/* A large block's free: quarantined when the shared pool says it is live
 * and its word 1 is not its quarantine tag (held already: refused). Under
 * q->lock, so that no block leaves (and is unmapped) between the pool's
 * answer and the tag. Blocks under 16 bytes (no word 1) go at once. */
static nnmem_status_t quar_free_large(nnmem_allocator_t *a, void *ptr) {
  nnmem__quar_t *q = a->quar;
  uint64_t n = 0;
  pthread_mutex_lock(&q->lock);
  if (nnmem_pool_usable_size(a->pool, ptr, &n) != NNMEM_OK || n < 16) {
    pthread_mutex_unlock(&q->lock); /* not live, or too small: at once */
    leaks_free_large(a, ptr);
    return nnmem_pool_free(a->pool, ptr); /* counts misuse itself */
  }
  if (w1_get(ptr) == blk_qtag(a->tag_key, ptr)) {
    pthread_mutex_unlock(&q->lock);
    return misuse(a);
  }
  w1_set(ptr, blk_qtag(a->tag_key, ptr));
  leaks_free_large(a, ptr);
  quar_push_locked(a, ptr, n, 0);
  return NNMEM_OK;
}

/* free_general with a quarantine (see above): the checks of a free at
 * the call (small: a block boundary; the owner's: carved, not free;
 * anyone's: neither tag nor the quarantine tag, then the CAS), the leak
 * record's removal, the fill, then the FIFO. */
static __attribute__((noinline)) nnmem_status_t quar_free(nnmem_allocator_t *a,
                                                         void *ptr) {
  page_t *pg = a->no_cache ? NULL : small_page_of(a, ptr);
  if (!pg) return quar_free_large(a, ptr);
  int64_t idx = small_index(pg, ptr);
  if (idx < 0) return misuse(a);
  tcache_t *tc = cache_get_hint(a, pg);
  if (atomic_load_explicit(&pg->owner->tag, memory_order_relaxed)) {
    /* a tagged cache's block (domains, which test liveness by the tags
     * alone): freed at once, as without a quarantine */
    leaks_free_small(a, pg, ptr, (uint32_t)idx);
    return small_free(a, tc, pg, ptr, (uint32_t)idx);
  }
  if (pg->owner == tc && local_misuse(pg, ptr, a->tag_key)) return misuse(a);
  /* (once quarantined, the block counts as used: its span stays) */
  uintptr_t t = blk_tag(a->tag_key, ptr), w = w1_get(ptr);
  if ((w | 2u) == (t | 2u) || w == (t ^ 4u) ||
      !w1_swap(a, tc, pg, ptr, (uint32_t)idx, w, t ^ 4u))
    return misuse(a);
  leaks_free_small(a, pg, ptr, (uint32_t)idx);
  /* filled by the owner only: another thread's free of a block the owner
   * never handed out (or took back purged) passes the tag checks, and the
   * owner may hand it out while the fill runs */
  int fill = a->quar_fill && pg->owner == tc;
  if (fill)
    memset((char *)ptr + QUAR_FILL_FROM, QUAR_FILL,
           pg->bsize - QUAR_FILL_FROM);
  pthread_mutex_lock(&a->quar->lock);
  quar_push_locked(a, ptr, pg->bsize, fill);
  return NNMEM_OK;
}

/* allocator_free past its fast path (every case). */
static __attribute__((noinline)) nnmem_status_t free_general(
    nnmem_allocator_t *a, void *ptr) {
  if (!a) return NNMEM_ERR_INVALID;
  if (!ptr) return NNMEM_OK;
  /* leak records go before the free (once freed, another thread may get
   * the address): by page for a small block, by the filter for the rest */
  nnmem_profiler_t *pr = prof_of(a);
  if (__builtin_expect(pr != NULL, 0)) nnmem__profiler_on_free(pr, ptr);
  if (__builtin_expect(a->quar != NULL, 0)) return quar_free(a, ptr);
  if (a->free_batch && (uintptr_t)ptr & (PAGE_SIZE - 1)) {
    /* queued: a block of a live span of this thread's (pend_push) */
    page_t *pg = block_page(a, ptr);
    tcache_t *tc;
    if (pg && (tc = cache_get_hint(a, pg)) != NULL && pg->fown == tc) {
      if (__builtin_expect(leaks_of(a) != NULL, 0)) {
        int64_t k = small_index(pg, ptr); /* < 0: misuse, at the flush */
        if (k >= 0) leaks_free_small(a, pg, ptr, (uint32_t)k);
      }
      pend_push(tc, ptr, pg);
      return NNMEM_OK;
    }
  }
  page_t *pg = a->no_cache ? NULL : small_page_of(a, ptr);
  if (!pg) {
    leaks_free_large(a, ptr);
    return nnmem_pool_free(a->pool, ptr); /* counts misuse itself */
  }
  int64_t idx = small_index(pg, ptr);
  if (__builtin_expect(idx < 0, 0)) return misuse(a);
  leaks_free_small(a, pg, ptr, (uint32_t)idx);
  /* NULL tc: a thread past its cache's exit */
  return small_free(a, cache_get_hint(a, pg), pg, ptr, (uint32_t)idx);
}

/* Shared by nnmem_free and nnmem_allocator_free (a static function: no
 * PLT call between the two in the shared library). The fast path queues a
 * small block (free_batch, no hooks, the thread's cache current); anything
 * else is free_general, which makes the same checks in the same order. */
/* Queues a small block of a live span of the thread's current cache
 * (free_batch, no hooks; pend_push): 1; else 0, nothing done
 * (free_general's case), with *pgo the span the registry gives for ptr's
 * unit when the identity matched (NULL: none, or not looked up). */
static inline int free_queued(nnmem_allocator_t *a, void *ptr,
                              page_t **pgo) {
  uintptr_t p = (uintptr_t)ptr;
  *pgo = NULL;
  /* the queue's identity: the thread's cache current and no_queue 0 (a
   * span's base, no block, is refused at the flush: off wraps) */
  if (__builtin_expect(tls_cur.qid != alloc_id(a), 0)) return 0;
  /* bits 32..47 index the registry's first level: a pointer above 2^48
   * aliases a unit below it, and when that unit is a span's, its offset
   * from the span's block 0 (>= 2^47) is refused at the flush, reported
   * like any bad queued free */
  reg_ent_t *leaf =
      atomic_load_explicit(&a->reg[(p >> 32) & 0xFFFF], memory_order_acquire);
  if (__builtin_expect(!leaf, 0)) return 0;
  page_t *pg = atomic_load_explicit(&leaf[(p >> PAGE_LOG2) & 0xFFFF],
                                    memory_order_acquire);
  *pgo = pg;
  if (__builtin_expect(!pg, 0)) return 0; /* not a span's unit */
  tcache_t *tc = tls_cur.tc;
  /* another's span (or one that purges or was given back): at the call */
  if (__builtin_expect(pg->fown != tc, 0)) return 0;
  pend_push(tc, ptr, pg);
  return 1;
}

/* free_direct's block of span pg (the thread's cache's, idx its index,
 * checked) on a page whose leak mark names it (nnmem__leaks_mark_hit):
 * a second free (either tag) is left to free_general, which reports it;
 * else the record, if any, goes (leaks_free_small: a page marked MANY
 * tests its bit first; before the block is back on the free list, where
 * only this thread can hand it out again), then the block returns as
 * free_general's owner case would return it (counted, timed when due).
 * Out of line and without free_general's second registry lookup: on the
 * ring (bench/leaks, sampled 1 in 512 KiB) about 1 free in 200 comes here
 * (1 in 80 before MANY marks carried bits), 85% of them to a record. */
static __attribute__((noinline)) nnmem_status_t free_marked(
    nnmem_allocator_t *a, tcache_t *tc, page_t *pg, void *ptr, uint32_t idx) {
  uintptr_t w = w1_get(ptr), t = blk_tag(tc->key, ptr);
  if (tag_either(w, t)) return free_general(a, ptr);
  leaks_free_small(a, pg, ptr, idx);
  owner_free(tc, pg, ptr);
  return NNMEM_OK;
}

/* An immediate free's common case: a block of a span of the thread's
 * current cache (registry entry, then the header's owner: a span of this
 * cache is registered only while it lives, and only this thread changes
 * it), of a class below the purged ones, carved (below the bump pointer:
 * also below the span's end), on a block boundary (off * recip: the low 40
 * bits are below recip iff off is a multiple of bsize, as in small_index),
 * no leak record for it by the page's mark, neither tag in word 1 (a
 * second free), no timed call due: pushed on its span's free list. No
 * profiler watches while the identity matches (cache_get_slow). Every
 * other case ends in a tail call (free_marked, else free_general, which
 * decides, misuse included), so that the common case saves no register. */
static inline nnmem_status_t free_direct(nnmem_allocator_t *a, void *ptr) {
  uintptr_t p = (uintptr_t)ptr;
  if (__builtin_expect((p >> 48) || tls_cur.fid != alloc_id(a), 0))
    return free_general(a, ptr);
  page_t *pg = reg_get_fast(a, p);
  if (__builtin_expect(!pg, 0))
    return free_general(a, ptr); /* not a span's unit */
  tcache_t *tc = tls_cur.tc;
  if (__builtin_expect(pg->fown != tc, 0)) return free_general(a, ptr);
  uint64_t off = p - (uintptr_t)pg->blk0; /* wraps below block 0 */
  uint64_t m = off * pg->recip;
  uintptr_t t = blk_tag(tc->key, ptr);
  if (__builtin_expect(off >= pg->carved ||
                           (m & ((1ull << RECIP_SHIFT) - 1)) >= pg->recip,
                       0))
    return free_general(a, ptr);
  /* a block the leak records may hold: its record goes first, then the
   * same free (free_marked), out of line */
  if (__builtin_expect(
          nnmem__leaks_mark_hit(
              atomic_load_explicit(&pg->leak_mark, memory_order_relaxed),
              (uint32_t)(m >> RECIP_SHIFT)),
          0))
    return free_marked(a, tc, pg, ptr, (uint32_t)(m >> RECIP_SHIFT));
  if (__builtin_expect(tag_either(w1_get(ptr), t) || tc->sample_left <= 1, 0))
    return free_general(a, ptr);
  tc->sample_left--;
  bump(&tc->st.frees[pg->cls], 1);
  if (nnmem__debug) memset(ptr, 0x55, pg->bsize);
  *(void **)ptr = pg->free;
  w1_set(ptr, t);
  pg->free = ptr;
  if (__builtin_expect(--pg->used <= pg->wake, 0)) local_free_tail(tc, pg);
  return NNMEM_OK;
}

/* free_queued's block of a span it does not queue (another thread's, one
 * that purges, one given back), the queue's identity current (so no
 * hooks: no profiler, records or quarantine): freed at the call with
 * free_general's checks (small_index, small_free: the tag) without its
 * lookups. A unit whose header is no live span's: free_general. */
static __attribute__((noinline)) nnmem_status_t free_other(
    nnmem_allocator_t *a, page_t *pg, void *ptr) {
  int64_t k;
  if (pg->magic != PAGE_MAGIC || (k = small_index(pg, ptr)) < 0)
    return free_general(a, ptr);
  return small_free(a, tls_cur.tc, pg, ptr, (uint32_t)k);
}

/* free_other for the malloc front: a refusal to on_misuse (out of line:
 * the front's free saves no register). */
static __attribute__((noinline)) void free_other_report(nnmem_allocator_t *a,
                                                        page_t *pg,
                                                        void *ptr) {
  if (free_other(a, pg, ptr) != NNMEM_OK) late_misuse(a, ptr);
}

static inline nnmem_status_t allocator_free(nnmem_allocator_t *a, void *ptr) {
  if (__builtin_expect(!a, 0)) return free_general(a, ptr);
  page_t *pg;
  if (free_queued(a, ptr, &pg)) return NNMEM_OK;
  if (pg) return free_other(a, pg, ptr);
  return free_direct(a, ptr); /* free_general past its common case */
}

void nnmem__allocator_free_or(void *ptr, nnmem_allocator_t *a,
                              void (*fallback)(void *)) {
  page_t *pg;
  if (__builtin_expect(free_queued(a, ptr, &pg), 1)) return;
  /* a block of a span not queued: freed (or refused and reported through
   * on_misuse) at once, not by the fallback's longer way */
  if (pg) {
    free_other_report(a, pg, ptr);
    return;
  }
  fallback(ptr);
}

nnmem_status_t nnmem_allocator_free(nnmem_allocator_t *a, void *ptr) {
  return allocator_free(a, ptr);
}

void nnmem_free(nnmem_allocator_t *a, void *ptr) {
  (void)allocator_free(a, ptr);
}

static __attribute__((noinline)) void free_report_slow(nnmem_allocator_t *a,
                                                       void *ptr) {
  if (free_general(a, ptr) != NNMEM_OK && a) late_misuse(a, ptr);
}

void nnmem__allocator_free_report(nnmem_allocator_t *a, void *ptr) {
  page_t *pg;
  if (__builtin_expect(!a || !free_queued(a, ptr, &pg), 0))
    free_report_slow(a, ptr);
}

void nnmem_allocator_thread_flush(nnmem_allocator_t *a) {
  if (!a || a->no_cache) return;
  tcache_t *tc = cache_get(a);
  if (tc) cache_flush(tc);
}

nnmem_status_t nnmem__allocator_usable_size(nnmem_allocator_t *a,
                                            const void *ptr, size_t *out) {
  if (!a || !ptr || !out) return NNMEM_ERR_INVALID;
  page_t *pg = a->no_cache ? NULL : small_page_of(a, ptr);
  if (pg) {
    uint64_t off = (uintptr_t)ptr - (uintptr_t)pg->blk0;
    uint64_t idx = (off * pg->recip) >> RECIP_SHIFT;
    if (off >= pg->span || idx >= pg->cap || idx * pg->bsize != off)
      return NNMEM_ERR_INVALID;
    /* no live block: a free one (either tag), one held by the quarantine,
     * one this thread's queue holds for its free (the filter: the queue
     * is flushed first, then the tag says); so the front's realloc of a
     * freed block is refused instead of handing it back in place */
    if (tls_cur.a == a && tls_cur.id == alloc_id(a)) {
      tcache_t *tc = tls_cur.tc;
      if (tc->ptop != tc->pend && qf_has(tc, ptr)) flush_pending(tc);
    }
    uintptr_t w = w1_get(ptr), t = blk_tag(a->tag_key, ptr);
    if (tag_either(w, t) || w == blk_qtag(a->tag_key, ptr))
      return NNMEM_ERR_INVALID;
    *out = pg->bsize;
    return NNMEM_OK;
  }
  uint64_t n = 0;
  nnmem_status_t st = nnmem_pool_usable_size(a->pool, ptr, &n);
  if (st == NNMEM_OK) *out = (size_t)n;
  return st;
}

void nnmem__allocator_fork_prepare(nnmem_allocator_t *a) {
  /* the quarantine first: a large block leaves it holding its lock, then
   * the pool's */
  if (a->quar) nnmem__quar_fork(a->quar, 0);
  pthread_mutex_lock(&a->lock);
  for (unsigned k = 1; k < NSPAN; k++)
    nnmem__pool_fork(a->pages_pool[k], 0);
  nnmem__pool_fork(a->pool, 0);
  /* last: a record is stored under its mutex without the others; the one
   * locked is the one unlocked (records may be enabled meanwhile) */
  if ((a->fork_leaks = leaks_of(a)) != NULL)
    nnmem__leaks_fork(a->fork_leaks, 0);
}

void nnmem__allocator_fork_parent(nnmem_allocator_t *a) {
  if (a->fork_leaks) nnmem__leaks_fork(a->fork_leaks, 1);
  nnmem__pool_fork(a->pool, 1);
  for (unsigned k = 1; k < NSPAN; k++)
    nnmem__pool_fork(a->pages_pool[k], 1);
  pthread_mutex_unlock(&a->lock);
  if (a->quar) nnmem__quar_fork(a->quar, 1);
}

void nnmem__allocator_fork_child(nnmem_allocator_t *a) {
  /* the child's one thread is in fork(): no remote free is in flight, but
   * one of another thread's (page_t rinflight) was at the fork and will
   * never leave: every header's count back to 0 */
  for (char *c = a->hdr_chunks; c; c = *HDR_LINK(c))
    for (unsigned i = 0; i < HDR_PER_CHUNK; i++)
      atomic_store_explicit(&((page_t *)(c + (size_t)i * PAGE_HDR))->rinflight,
                            0, memory_order_relaxed);
  if (a->fork_leaks) nnmem__leaks_fork(a->fork_leaks, 2);
  nnmem__pool_fork(a->pool, 2);
  for (unsigned k = 1; k < NSPAN; k++)
    nnmem__pool_fork(a->pages_pool[k], 2);
  /* the forking thread locked every mutex in the prepare handler: it
   * unlocks them in the child (initialising a locked mutex is undefined;
   * ThreadSanitizer reported the child's destroy of them) */
  pthread_mutex_unlock(&a->lock);
  if (a->quar) nnmem__quar_fork(a->quar, 2);
}

/* ---- tagged caches (allocator_internal.h) -------------------------------- */

nnmem_status_t nnmem__tcache_create(nnmem_allocator_t *a, const void *tag,
                                    nnmem__tcache_t **out) {
  if (!a || !tag || !out || a->no_cache) return NNMEM_ERR_INVALID;
  tcache_t *tc = aligned_alloc(128, (sizeof *tc + 127) & ~(size_t)127);
  if (!tc) return NNMEM_ERR_NOMEM;
  memset(tc, 0, sizeof *tc);
  tc->a = a;
  tc->key = a->tag_key;
  tc->sample_left = UINT32_MAX; /* not sampled: no clock on this path */
  tc->ptop = tc->pend; /* (never queues: a thread's free uses its own) */
  tc->pend_end = tc->pend + a->free_batch;
  tc->qgen = 1;
  atomic_store_explicit(&tc->tag, tag, memory_order_relaxed);
  alock(a);
  tc->next_all = a->caches; /* stats see it; destroy frees it */
  a->caches = tc;
  pthread_mutex_unlock(&a->lock);
  *out = tc;
  return NNMEM_OK;
}

void nnmem__tcache_release(nnmem__tcache_t *tc) {
  if (!tc) return;
  cache_flush(tc);
  alock(tc->a);
  /* an ordinary parked cache now: a thread may adopt it */
  atomic_store_explicit(&tc->tag, NULL, memory_order_relaxed);
  tc->sample_left = tc->a->sample_every;
  tc->parked = 1;
  pthread_mutex_unlock(&tc->a->lock);
}

void *nnmem__tcache_alloc(nnmem__tcache_t *tc, size_t size, uint32_t *usable) {
  void *b = small_alloc_in(tc, size);
  if (b) *usable = class_size[class_for(size)];
  return b;
}

/* Reads only what never changes once a page is published (and the tag,
 * atomically): any thread may ask about any page. */
const void *nnmem__allocator_block_tag(nnmem_allocator_t *a, const void *ptr,
                                       uint32_t *usable) {
  page_t *pg = a->no_cache ? NULL : small_page_of(a, ptr);
  if (!pg) return NULL;
  if (small_index(pg, ptr) < 0)
    return NULL; /* in the block bits, interior pointer or page tail */
  *usable = pg->bsize;
  return atomic_load_explicit(&pg->owner->tag, memory_order_relaxed);
}

/* A tagged cache's blocks are <= NNMEM__SMALL_MAX: one-unit spans, each
 * unit's registry entry its header. */
int nnmem__tcache_block_live(nnmem_allocator_t *a, const void *ptr) {
  const page_t *pg = small_page_of(a, ptr);
  if (!pg) return 0;
  int64_t idx = small_index(pg, ptr);
  return idx >= 0 && !local_misuse(pg, ptr, pg->owner->key);
}

void nnmem__tcache_free(nnmem__tcache_t *tc, void *ptr) {
  page_t *pg = small_page_of(tc->a, ptr);
  bump(&tc->st.frees[pg->cls], 1);
  local_free(tc, pg, ptr);
}

nnmem_status_t nnmem__tcache_each(nnmem__tcache_t *tc,
                                  void (*fn)(void *user, void *blk,
                                             uint32_t usable),
                                  void *user) {
  nnmem_allocator_t *a = tc->a;
  size_t n = 0, cap = 0;
  void **blk = NULL;
  nnmem_status_t s = NNMEM_OK;
  for (size_t hi = 0; hi < (1u << 16) && s == NNMEM_OK; hi++) {
    reg_ent_t *leaf = atomic_load_explicit(&a->reg[hi], memory_order_acquire);
    for (size_t i = 0; leaf && i < (1u << 16) && s == NNMEM_OK; i++) {
      page_t *pg = atomic_load_explicit(&leaf[i], memory_order_acquire);
      if (!pg || (uintptr_t)pg->base !=
                     (((uintptr_t)hi << 32) | ((uintptr_t)i << PAGE_LOG2)))
        continue; /* no span, or not its first unit */
      if (pg->magic != PAGE_MAGIC || pg->owner != tc) continue;
      for (uint32_t k = 0; k < pg->cap && s == NNMEM_OK; k++) {
        char *b = pg->blk0 + (size_t)k * pg->bsize;
        if (local_misuse(pg, b, tc->key)) continue;
        s = nnmem__grow((void **)&blk, &cap, n + 1, sizeof *blk);
        if (s == NNMEM_OK) blk[n++] = b;
      }
    }
  }
  /* after the walk: fn may free the block and with it its page */
  for (size_t k = 0; k < n && s == NNMEM_OK; k++) {
    page_t *pg = small_page_of(a, blk[k]);
    fn(user, blk[k], pg->bsize);
  }
  free(blk);
  return s;
}

/* ---- lifecycle and stats ----------------------------------------------- */

void nnmem_allocator_config_init(nnmem_allocator_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

nnmem_status_t nnmem_allocator_create(const nnmem_allocator_config_t *cfg,
                                      nnmem_allocator_t **out) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  nnmem_allocator_config_t c;
  nnmem_allocator_config_init(&c);
  if (cfg) nnmem__config_copy(&c, sizeof c, cfg);
  if (c.backend && !(c.backend->flags & NNMEM_BACKEND_BACKED))
    return NNMEM_ERR_INVALID;
  pthread_once(&class_once, init_classes);
  nnmem_allocator_t *a = calloc(1, sizeof *a);
  if (!a) return NNMEM_ERR_NOMEM;
  atomic_store_explicit(&a->id, atomic_fetch_add(&next_id, 1),
                        memory_order_relaxed);
  a->no_cache = c.no_thread_cache != 0;
  a->sample_every = c.latency_sample ? c.latency_sample : 64;
  a->free_batch = c.free_batch > PEND_MAX ? PEND_MAX : c.free_batch;
  atomic_store_explicit(&a->no_queue, a->free_batch == 0,
                        memory_order_relaxed);
  a->decommit = c.decommit_spans != 0;
  long os_page = sysconf(_SC_PAGESIZE);
  a->os_page = os_page > 0 ? (uint32_t)os_page : 4096u;
  if (getrandom(&a->tag_key, sizeof a->tag_key, GRND_NONBLOCK) !=
      sizeof a->tag_key)
    a->tag_key = (uintptr_t)a * 0x9e3779b97f4a7c15ull ^ nnmem__cycles();
  a->tag_key |= 1u; /* blocks are 16-aligned: every tag odd (blk_tag) */
  a->on_misuse = c.on_misuse;
  a->misuse_ctx = c.misuse_ctx;
  if (c.quarantine_bytes) {
    if (!(a->quar = malloc(sizeof *a->quar))) {
      free(a);
      return NNMEM_ERR_NOMEM;
    }
    nnmem__quar_init(a->quar, c.quarantine_bytes);
    a->quar_fill = c.quarantine_fill != 0;
    a->on_quar_write = c.on_quarantine_write;
    /* every free to free_general (quar_free): no queue; tls_cur.fid 0 */
    atomic_store_explicit(&a->no_queue, 1, memory_order_relaxed);
  }
  if (a->sample_every != 1 && a->sample_every != UINT32_MAX)
    (void)nnmem__ns_per_cycle(); /* calibrate now (2 ms, once per process);
                                    UINT32_MAX: lazily, if ever timed */
  a->backend = c.backend;
  nnmem_status_t st = NNMEM_OK;
  if (!a->backend) st = nnmem_backend_host_create(&a->owned_backend);
  if (!a->backend) a->backend = a->owned_backend;
  nnmem_pool_config_t pc;
  nnmem_pool_config_init(&pc);
  pc.name = "allocator";
  pc.small_max = c.small_max;
  pc.large_min = c.large_min;
  pc.thread_safe = 1;
  pc.alignment = 16;
  pc.keep_empty = c.keep_empty;
  pc.latency_sample = c.latency_sample;
  if (st == NNMEM_OK)
    st = nnmem_pool_create(NNMEM_POOL_TIERED, &pc, a->backend, &a->pool);
  for (unsigned k = 1; k < NSPAN && st == NNMEM_OK; k++) {
    nnmem_pool_config_init(&pc); /* spans: fixed blocks, kept until destroy */
    pc.name = "allocator-pages";
    pc.block_size = (uint64_t)k << PAGE_LOG2;
    pc.alignment = PAGE_SIZE; /* the registry finds a span's header */
    pc.latency_sample = c.latency_sample; /* as the config says */
    pc.chunk_size = k == 1 ? 16 * PAGE_SIZE : 4 * pc.block_size;
    pc.thread_safe = 1;
    st = nnmem_pool_create(NNMEM_POOL_FIXED, &pc, a->backend,
                           &a->pages_pool[k]);
  }
  if (st == NNMEM_OK && pthread_key_create(&a->key, cache_exit) != 0)
    st = NNMEM_ERR_NOMEM;
  if (st != NNMEM_OK) {
    for (unsigned k = 1; k < NSPAN; k++)
      nnmem_pool_destroy(a->pages_pool[k]);
    nnmem_pool_destroy(a->pool);
    nnmem_backend_destroy(a->owned_backend);
    if (a->quar) nnmem__quar_fini(a->quar);
    free(a->quar);
    free(a);
    return st;
  }
  pthread_mutex_init(&a->lock, NULL);
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  if (c.leaks)
    nnmem__config_copy(&lc, sizeof lc, c.leaks);
  else
    (void)nnmem_leaks_config_from_env(&lc); /* malformed: off */
  nnmem__leaks_t *lk = NULL;
  st = nnmem__leaks_create(&lc, &lk);
  if (st != NNMEM_OK) {
    nnmem_allocator_destroy(a);
    return st;
  }
  if (lk)
    atomic_store_explicit(&a->leak_slot, nnmem__leaks_slot(lk),
                          memory_order_relaxed);
  if (lk) atomic_store_explicit(&a->no_queue, 1, memory_order_relaxed);
  atomic_store_explicit(&a->leaks, lk, memory_order_release);
  *out = a;
  return NNMEM_OK;
}

void nnmem_allocator_destroy(nnmem_allocator_t *a) {
  if (!a) return;
  nnmem__leaks_destroy(leaks_of(a)); /* writes the report, if configured */
  pthread_key_delete(a->key);
  if (tls_cur.a == a) {
    tls_cur.a = NULL;
    tls_cur.id = 0;
    tls_cur.qid = 0;
    tls_cur.fid = 0;
    tls_cur.sid = 0;
  }
  while (a->caches) {
    tcache_t *t = a->caches;
    a->caches = t->next_all;
    free(t);
  }
  /* the block bits live in the pages: nothing to free per page */
  nnmem_pool_destroy(a->pool);       /* every large block */
  for (unsigned k = 1; k < NSPAN; k++)
    nnmem_pool_destroy(a->pages_pool[k]); /* every span */
  for (size_t i = 0; i < (1u << 16); i++)
    free((void *)atomic_load_explicit(&a->reg[i], memory_order_relaxed));
  nnmem_backend_destroy(a->owned_backend);
  pthread_mutex_destroy(&a->lock);
  if (a->quar) nnmem__quar_fini(a->quar); /* its blocks went with the pools */
  free(a->quar);
  free(a);
}

static uint64_t ld(_Atomic uint64_t *v) {
  return atomic_load_explicit(v, memory_order_relaxed);
}

/* The figures of the span pools that the allocator's stats report. */
static void spans_add(nnmem_stats_t *to, const nnmem_stats_t *s) {
  to->allocated_bytes += s->allocated_bytes;
  to->allocated_bytes_peak += s->allocated_bytes_peak;
  to->reserved_bytes += s->reserved_bytes;
  to->reserved_bytes_peak += s->reserved_bytes_peak;
  to->backend_allocs += s->backend_allocs;
  to->backend_frees += s->backend_frees;
  to->failed_count += s->failed_count;
  to->free_bytes += s->free_bytes;
  if (s->largest_free > to->largest_free) to->largest_free = s->largest_free;
  to->lock_acquisitions += s->lock_acquisitions;
  to->lock_contended += s->lock_contended;
  for (unsigned b = 0; b < NNMEM_STATS_LAT_BUCKETS; b++)
    to->latency_hist[b] += s->latency_hist[b];
  to->latency_samples += s->latency_samples;
  to->latency_sum_ns += s->latency_sum_ns;
}

nnmem_status_t nnmem_allocator_stats(nnmem_allocator_t *a, nnmem_stats_t *out) {
  if (!a || !out) return NNMEM_ERR_INVALID;
  nnmem_stats_t pg, pk;
  nnmem_status_t st = nnmem_pool_stats(a->pool, out);
  if (st == NNMEM_OK) st = nnmem_pool_stats(a->pages_pool[1], &pg);
  for (unsigned k = 2; k < NSPAN && st == NNMEM_OK; k++)
    if ((st = nnmem_pool_stats(a->pages_pool[k], &pk)) == NNMEM_OK)
      spans_add(&pg, &pk);
  if (st != NNMEM_OK) return st;
  if (a->quar) { /* before a->lock (fork_prepare's order) */
    pthread_mutex_lock(&a->quar->lock);
    out->quarantine_bytes = a->quar->bytes;
    out->quarantine_blocks = a->quar->count;
    pthread_mutex_unlock(&a->quar->lock);
  }
  out->quarantine_writes = ld(&a->quar_writes);
  uint64_t allocs = 0, frees = 0, out_b = 0, in_b = 0;
  alock(a);
  for (tcache_t *t = a->caches; t; t = t->next_all) {
    uint64_t miss = ld(&t->st.misses), n = 0;
    for (unsigned b = 0; b < NNMEM_STATS_LAT_BUCKETS; b++)
      out->latency_hist[b] += ld(&t->st.lat_hist[b]);
    out->latency_samples += ld(&t->st.lat_samples);
    out->latency_sum_ns += ld(&t->st.lat_sum);
    for (unsigned c = 0; c < NCLASS; c++) {
      uint64_t x = ld(&t->st.allocs[c]), y = ld(&t->st.frees[c]);
      n += x;
      frees += y;
      out_b += x * class_size[c];
      in_b += y * class_size[c];
    }
    frees += ld(&t->st.qfrees);
    in_b += ld(&t->st.qfree_bytes);
    allocs += n;
    out->cache_misses += miss;
    out->cache_hits += n - miss;
  }
  for (unsigned c = 0; c < NCLASS; c++) {
    uint64_t y = ld(&a->nc_frees[c]);
    frees += y;
    in_b += y * class_size[c];
  }
  pthread_mutex_unlock(&a->lock);
  /* large blocks + small blocks; pages count as allocated and reserved.
   * Counters of different caches are read at different instants: while
   * threads run, a free counted by one cache can be seen before the
   * allocation another cache counted, so the differences are clamped at 0
   * rather than wrapping around. */
  out->alloc_count += allocs;
  out->free_count += frees;
  out->live_count += allocs > frees ? allocs - frees : 0;
  out->requested_bytes += out_b > in_b ? out_b - in_b : 0;
  out->allocated_bytes += pg.allocated_bytes;
  out->allocated_bytes_peak += pg.allocated_bytes_peak;
  out->reserved_bytes += pg.reserved_bytes;
  out->reserved_bytes_peak += pg.reserved_bytes_peak; /* sum of peaks */
  out->backend_allocs += pg.backend_allocs;
  out->backend_frees += pg.backend_frees;
  out->failed_count += pg.failed_count;
  out->free_bytes += pg.free_bytes;
  if (pg.largest_free > out->largest_free) out->largest_free = pg.largest_free;
  out->fragmentation = out->free_bytes
                           ? (double)(out->free_bytes - out->largest_free) /
                                 (double)out->free_bytes
                           : 0.0;
  out->misuse_count += ld(&a->misuse);
  out->lock_acquisitions += ld(&a->lock_acq) + pg.lock_acquisitions;
  out->lock_contended += ld(&a->lock_cont) + pg.lock_contended;
  for (unsigned b = 0; b < NNMEM_STATS_LAT_BUCKETS; b++)
    out->latency_hist[b] += pg.latency_hist[b];
  out->latency_samples += pg.latency_samples;
  out->latency_sum_ns += pg.latency_sum_ns;
  snprintf(out->name, sizeof out->name, "allocator");
  return NNMEM_OK;
}

/* ---- leak records (nnmem/leaks.h) --------------------------------------- */

nnmem_status_t nnmem_allocator_leaks_enable(nnmem_allocator_t *a,
                                            const nnmem_leaks_config_t *cfg) {
  if (!a || !cfg) return NNMEM_ERR_INVALID;
  nnmem_leaks_config_t lc;
  nnmem_leaks_config_init(&lc);
  nnmem__config_copy(&lc, sizeof lc, cfg);
  if (lc.mode == NNMEM_LEAKS_OFF) return NNMEM_ERR_INVALID;
  if (leaks_of(a)) return NNMEM_ERR_STATE;
  nnmem__leaks_t *lk = NULL;
  nnmem_status_t st = nnmem__leaks_create(&lc, &lk);
  if (st != NNMEM_OK) return st;
  nnmem__leaks_t *none = NULL;
  /* no queued free from now on (before the records: a block recorded is
   * never freed past them; records are never turned off) */
  atomic_store_explicit(&a->no_queue, 1, memory_order_seq_cst);
  if (!atomic_compare_exchange_strong(&a->leaks, &none, lk)) {
    nnmem__leaks_destroy(lk); /* another thread won the race */
    return NNMEM_ERR_STATE;
  }
  atomic_store_explicit(&a->leak_slot, nnmem__leaks_slot(lk),
                        memory_order_relaxed);
  /* a new identity (release: after the records): every thread's next
   * allocation finds its cache not current and arms the cache's countdown
   * (leak_arm) */
  new_identity(a);
  return NNMEM_OK;
}

nnmem_status_t nnmem_allocator_leaks_report(nnmem_allocator_t *a,
                                            nnmem_leaks_format_t fmt,
                                            char **out, size_t *len) {
  if (!a || !out || !len) return NNMEM_ERR_INVALID;
  *out = NULL;
  *len = 0;
  nnmem__leaks_t *lk = leaks_of(a);
  if (!lk) return NNMEM_ERR_STATE;
  return nnmem__leaks_report(lk, fmt, out, len);
}

nnmem_status_t nnmem_allocator_leaks_write(nnmem_allocator_t *a,
                                           nnmem_leaks_format_t fmt,
                                           const char *path) {
  if (!path) return NNMEM_ERR_INVALID;
  char *doc;
  size_t len;
  nnmem_status_t st = nnmem_allocator_leaks_report(a, fmt, &doc, &len);
  if (st != NNMEM_OK) return st;
  st = nnmem_file_write_atomic(path, doc, len, NULL); /* whole or nothing */
  free(doc);
  return st;
}

nnmem_status_t nnmem_allocator_leaks_summary(nnmem_allocator_t *a,
                                             nnmem_leaks_summary_t *out) {
  if (!a || !out) return NNMEM_ERR_INVALID;
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  nnmem__leaks_t *lk = leaks_of(a);
  if (!lk) return NNMEM_ERR_STATE;
  nnmem__leaks_summary(lk, out);
  return NNMEM_OK;
}

/* The leak records' page marks against the records (nnmem__leaks_mark_t):
 * each record is page-marked iff its block lies on a small page; a page
 * with records has recs counting them with their index bits and mark ==
 * the index + 1 of its only one, or MANY; every other page of the
 * registry has mark == 0 and recs == 0. */
typedef struct mark_ref {
  page_t *pg;
  uint32_t idx;
} mark_ref_t;

typedef struct mark_refs {
  nnmem_allocator_t *a;
  mark_ref_t *v;
  size_t n, cap;
  int nomem;
} mark_refs_t;

static int mark_ref_each(void *ctx, uintptr_t ptr, int marked) {
  mark_refs_t *m = ctx;
  page_t *pg = m->a->no_cache ? NULL : small_page_of(m->a, (void *)ptr);
  if ((pg != NULL) != (marked != 0)) return 1;
  if (!pg) return 0;
  if (m->n == m->cap) {
    size_t c = m->cap ? 2 * m->cap : 256;
    mark_ref_t *v = realloc(m->v, c * sizeof *v);
    if (!v) {
      m->nomem = 1;
      return 0;
    }
    m->v = v;
    m->cap = c;
  }
  m->v[m->n++] = (mark_ref_t){pg, blk_index(pg, (void *)ptr)};
  return 0;
}

static int mark_ref_cmp(const void *x, const void *y) {
  const mark_ref_t *p = x, *q = y;
  if (p->pg != q->pg) return (uintptr_t)p->pg < (uintptr_t)q->pg ? -1 : 1;
  return (p->idx > q->idx) - (p->idx < q->idx);
}

static const mark_ref_t *mark_ref_find(const mark_refs_t *m, page_t *pg) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((uintptr_t)m->v[mid].pg < (uintptr_t)pg)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < m->n && m->v[lo].pg == pg ? &m->v[lo] : NULL;
}

/* The calling thread's cache against its invariants (allocator_internal.h). */
nnmem_status_t nnmem__allocator_cache_check(nnmem_allocator_t *a,
                                            nnmem_diag_t *diag) {
  if (!a) return NNMEM_ERR_INVALID;
  if (a->no_cache) return NNMEM_OK;
  tcache_t *tc = pthread_getspecific(a->key);
  if (!tc) return NNMEM_OK;
  for (unsigned c = 0; c < NCLASS; c++) {
    size_t n = 0;
    const page_t *before = NULL;
    for (const page_t *pg = tc->avail[c]; pg; before = pg, pg = pg->next) {
      /* a span is at most once on the stack: longer than the spans that
       * exist, it has a cycle */
      if (++n > atomic_load_explicit(&a->pages, memory_order_relaxed))
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "thread cache: class %u's avail stack has a cycle "
                           "(%zu spans)",
                           c, n);
      if (pg->prev != before)
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "thread cache: class %u, span %p: back link %p, "
                           "not %p",
                           c, (const void *)pg, (const void *)pg->prev,
                           (const void *)before);
      if (pg->magic != PAGE_MAGIC || pg->cls != c || pg->owner != tc ||
          !pg->in_avail || pg->used > pg->cap)
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "thread cache: class %u, span %p: magic 0x%x, "
                           "class %u, owner %s, in_avail %u, used %u of %u",
                           c, (const void *)pg, pg->magic, pg->cls,
                           pg->owner == tc ? "this cache" : "another",
                           pg->in_avail, pg->used, pg->cap);
      /* an empty span: kept, to retry, or its drain decides */
      int known = rem_pending(pg);
      for (unsigned i = 0; i < KEEP_EMPTY; i++)
        known |= tc->kept[c][i] == pg;
      known |= (int)pg->in_retry;
      if (pg->used == 0 && !known)
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "thread cache: class %u, span %p is empty but "
                           "neither kept nor to retry nor pending",
                           c, (const void *)pg);
    }
    /* the kept ones: live spans of this class, each once, on its avail
     * stack while empty (one that handed a block out since may have left
     * it: its entry goes at the class's next emptying) */
    for (unsigned i = 0; i < KEEP_EMPTY; i++) {
      const page_t *k = tc->kept[c][i];
      if (!k) continue;
      if (k->magic != PAGE_MAGIC || k->cls != c || k->owner != tc ||
          (k->used == 0 && !k->in_avail) || (i && tc->kept[c][0] == k))
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "thread cache: class %u keeps span %p: magic 0x%x, "
                           "class %u, owner %s, in_avail %u%s",
                           c, (const void *)k, k->magic, k->cls,
                           k->owner == tc ? "this cache" : "another",
                           k->in_avail,
                           i && tc->kept[c][0] == k ? ", twice" : "");
    }
  }
  uint32_t nr = 0;
  for (const page_t *r = tc->retry; r; r = r->rtry)
    if (++nr > tc->nretry || r->magic != PAGE_MAGIC || r->owner != tc ||
        !r->in_retry)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "thread cache: span %p to retry (%u of %u): magic "
                         "0x%x, owner %s, in_retry %u",
                         (const void *)r, nr, tc->nretry, r->magic,
                         r->owner == tc ? "this cache" : "another",
                         r->in_retry);
  if (nr != tc->nretry)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "thread cache: %u spans to retry, counted %u", nr,
                       tc->nretry);
  /* every avail span is the one the registry names for its units */
  for (unsigned c = 0; c < NCLASS; c++)
    for (const page_t *pg = tc->avail[c]; pg; pg = pg->next)
      if (reg_get(a, (uintptr_t)pg->base) != pg)
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "thread cache: class %u, span %p at %p: the "
                           "registry names %p",
                           c, (const void *)pg, (const void *)pg->base,
                           (const void *)reg_get(a, (uintptr_t)pg->base));
  /* the headers of given-back spans: each once (no cycle: Floyd's two
   * pointers), given back (no magic, dying, off every stack) and no
   * longer the registry's for the span it had */
  for (const page_t *pg = tc->hdr_spare, *fast = pg; pg; pg = pg->next) {
    if (fast && fast->next) {
      fast = fast->next->next;
      if (fast && fast == pg->next)
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "thread cache: its spare span headers have a "
                           "cycle at %p",
                           (const void *)fast);
    }
    if (pg->magic != 0 || pg->in_avail ||
        atomic_load_explicit(&pg->dying, memory_order_relaxed) != 1 ||
        reg_get(a, (uintptr_t)pg->base) == pg)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "thread cache: spare span header %p: magic 0x%x, "
                         "in_avail %u, dying %u, %s",
                         (const void *)pg, pg->magic, pg->in_avail,
                         atomic_load_explicit(&pg->dying, memory_order_relaxed),
                         reg_get(a, (uintptr_t)pg->base) == pg
                             ? "still registered"
                             : "unregistered");
  }
  /* the stack of spans with remote frees (a snapshot: pushes change only
   * its top): live spans of this cache, each queued once */
  const page_t *top = atomic_load_explicit(&tc->remote, memory_order_acquire);
  for (const page_t *pg = top, *fast = top; pg; pg = pg->rnext) {
    if (fast && fast->rnext) {
      fast = fast->rnext->rnext;
      if (fast && fast == pg->rnext)
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "thread cache: its remote stack has a cycle at %p",
                           (const void *)fast);
    }
    if (pg->magic != PAGE_MAGIC || pg->owner != tc ||
        !atomic_load_explicit(&pg->rqueued, memory_order_acquire))
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "thread cache: span %p on its remote stack: magic "
                         "0x%x, owner %s, rqueued %u",
                         (const void *)pg, pg->magic,
                         pg->owner == tc ? "this cache" : "another",
                         atomic_load_explicit(&pg->rqueued,
                                              memory_order_relaxed));
  }
  return NNMEM_OK;
}

/* One page's marks against its k records r[0..k). */
static nnmem_status_t mark_page_check(page_t *pg, const mark_ref_t *r, size_t k,
                                      nnmem_diag_t *diag) {
  uint32_t mark = atomic_load_explicit(&pg->leak_mark, memory_order_relaxed);
  uint64_t w = atomic_load_explicit(&pg->leak_recs, memory_order_relaxed);
  if (k == 0) {
    if (mark || w)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "leak marks: page %p has no record, mark %u recs "
                         "0x%llx",
                         (void *)pg, mark, (unsigned long long)w);
    return NNMEM_OK;
  }
  /* one record: its index + 1, or MANY (a page that had several keeps
   * MANY until its last goes); several: MANY; MANY has bit i % 16 of
   * every record's block i */
  if (!(mark & NNMEM__LEAKS_MANY) && (k != 1 || mark != r[0].idx + 1))
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "leak marks: page %p with %zu records (first block "
                       "%u): mark %u",
                       (void *)pg, k, r[0].idx, mark);
  for (size_t i = 0; i < k && (mark & NNMEM__LEAKS_MANY); i++)
    if (!((mark >> (r[i].idx & 15)) & 1))
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "leak marks: page %p's mark 0x%x lacks the bit of "
                         "block %u",
                         (void *)pg, mark, r[i].idx);
  if ((w >> 32) != k)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "leak marks: page %p counts %llu records, has %zu",
                       (void *)pg, (unsigned long long)(w >> 32), k);
  for (size_t i = 0; i < k; i++)
    if (!((w >> (r[i].idx & 31)) & 1))
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "leak marks: page %p lacks the bit of block %u",
                         (void *)pg, r[i].idx);
  return NNMEM_OK;
}

nnmem_status_t nnmem__allocator_leaks_check(nnmem_allocator_t *a,
                                            nnmem_diag_t *diag) {
  if (!a) return NNMEM_ERR_INVALID;
  nnmem__leaks_t *lk = leaks_of(a);
  if (!lk) return nnmem__diag(diag, NNMEM_ERR_STATE, "leak records are off");
  mark_refs_t m = {a, NULL, 0, 0, 0};
  nnmem_status_t st = nnmem__leaks_check(lk, mark_ref_each, &m, diag);
  if (st == NNMEM_OK && m.nomem)
    st = nnmem__diag(diag, NNMEM_ERR_NOMEM, "leak marks: check");
  if (st == NNMEM_OK && m.n) qsort(m.v, m.n, sizeof *m.v, mark_ref_cmp);
  for (size_t i = 0, j; st == NNMEM_OK && i < m.n; i = j) {
    for (j = i + 1; j < m.n && m.v[j].pg == m.v[i].pg; j++) {
    }
    st = mark_page_check(m.v[i].pg, m.v + i, j - i, diag);
  }
  /* every span's first unit (its entry's span starts there) has a page
   * header */
  for (size_t hi = 0; st == NNMEM_OK && hi < (1u << 16); hi++) {
    reg_ent_t *leaf = atomic_load_explicit(&a->reg[hi], memory_order_acquire);
    for (size_t lo = 0; leaf && st == NNMEM_OK && lo < (1u << 16); lo++) {
      page_t *pg = atomic_load_explicit(&leaf[lo], memory_order_acquire);
      if (!pg ||
          (uintptr_t)pg->base != (((uintptr_t)hi << 32) | (lo << PAGE_LOG2)))
        continue;
      if (pg->magic == PAGE_MAGIC && !mark_ref_find(&m, pg))
        st = mark_page_check(pg, NULL, 0, diag);
    }
  }
  free(m.v);
  return st;
}

/* ---- run-time profiler (profiler.c) ------------------------------------- */

nnmem_status_t nnmem__allocator_attach_profiler(nnmem_allocator_t *a,
                                                nnmem_profiler_t *pr) {
  if (!pr) {
    atomic_store_explicit(&a->prof, NULL, memory_order_release);
    atomic_store_explicit(&a->no_queue,
                          a->free_batch == 0 || leaks_of(a) || a->quar,
                          memory_order_release);
    new_identity(a); /* the fast paths again, from each thread's next call */
    return NNMEM_OK;
  }
  /* the queue's test first: a block the profiler saw allocated is never
   * freed past it (a failed attach leaves it: a profiler is attached) */
  atomic_store_explicit(&a->no_queue, 1, memory_order_seq_cst);
  nnmem_profiler_t *none = NULL;
  if (!atomic_compare_exchange_strong(&a->prof, &none, pr))
    return NNMEM_ERR_STATE;
  /* after the profiler (release): every thread's next call finds its cache
   * not current and sees the profiler (cache_get_slow), so the fast paths,
   * which test the identity alone, never pass it by */
  new_identity(a);
  return NNMEM_OK;
}

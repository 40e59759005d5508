/* heap.c - the handle heap: relocatable blocks behind generation-checked
 * handles, pin counts, and stop-the-world compaction that packs unpinned
 * blocks around pinned ones (see include/nnmem/heap.h).
 *
 *   handle bits:  | generation (32) | slot + 1 (32) |
 *   slots[]:      {off, size, gen, pins, prev, next}  32 bytes: the ring of
 *                 handles a pin touches stays in L1; gen is odd while the
 *                 slot is live, even while it is free (so no handle, whose
 *                 generation is always odd, matches a free slot)
 *   meta[]:       {req, align_log2}  (cold: alloc, free, compaction)
 *   address list: head -> a -> b -> c (live slots by offset, prev/next)
 *
 *   before:  [a][ free ][P][b][ free  ][c]........................
 *   after:   [a][b][c ][P]....................................     (P pinned)
 *
 * Steps of alloc: 1. round the size to the heap alignment; 2. best fit over
 * the gaps between consecutive live blocks and the tail gap up to the
 * capacity (O(live)), placed in its gap so that committed granules follow
 * live bytes (gap_place: whole-granule blocks on granule boundaries, odd
 * ones against the neighbour that holds the partial granule already);
 * 3. commit the granules it touches (segment.c);
 * 4. take a free slot (LIFO), link it after its predecessor. In AUTO mode a
 * miss compacts and retries, and every check_every allocations the policy
 * compacts when allocated / capacity >= util_min and fragmentation >=
 * frag_high, then stays disarmed until fragmentation <= frag_low
 * (hysteresis: pinned blocks that keep fragmentation high cannot make it
 * compact in a loop). The latency signal (cfg.lat_high > 0): one
 * allocation in lat_every is timed with the (injectable) clock, feeding
 * avg += (t - avg) / 8; after 8 samples baseline = min(avg); at a policy
 * check, avg >= lat_high x baseline and utilization >= util_min compacts
 * and disarms the signal until avg <= lat_low x baseline (its own
 * hysteresis, independent of the fragmentation one).
 * Steps of compact: 1. free space = [0, capacity) minus the pinned blocks
 * (an interval list); 2. for each unpinned block in address order, place it
 * at the lowest aligned start of a free interval that fits and is not above
 * its current offset (else it stays), carving the interval; when that
 * layout's largest gap is smaller than the heap's now (alignment can make
 * a first fit split what the old layout kept whole), nothing moves;
 * 3. move the
 * blocks in the same order (commit target granules, copy or remap,
 * decommit the source): a block only moves down and every block before it
 * has already left its old range, so no move overwrites live data;
 * 4. relink the address list sorted by the new offsets.
 * Invariants (nnmem_heap_check): the address list holds exactly the live
 * slots, strictly ordered, non-overlapping, inside the capacity, each
 * aligned; allocated == sum of live sizes; requested == sum of live
 * requests; top == end of the last block; each live block's granules have
 * refs (segment invariant); free slots are not live.
 * Complexity: alloc O(live), free/pin/unpin O(1), compact O(n log n + n x
 * pinned). Thread-safety: none (see heap.h: callers serialize and quiesce). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/heap.h"
#include "runtime/pool_internal.h"
#include "runtime/segment.h"

#define NIL UINT32_MAX

typedef struct slot {
  uint64_t off, size;
  uint32_t gen, pins;  /* gen odd <=> live */
  uint32_t prev, next; /* address list when live; next = free list else */
} slot_t;

typedef struct meta {
  uint64_t req;
  uint32_t align_log2, unused;
} meta_t;

#define LIVE(s) (((s)->gen & 1u) != 0)

struct nnmem_heap {
  nnmem_heap_config_t cfg;
  char name[NNMEM_STATS_NAME_MAX];
  nnmem__segment_t seg;
  slot_t *slots;
  meta_t *meta;
  size_t n_slots, cap_slots, cap_meta;
  uint32_t free_head, head, tail;
  uint64_t allocated, requested, live, top;
  uint64_t requested_peak, allocated_peak;
  uint64_t alloc_count, free_count, failed_count;
  uint64_t since_check;
  int armed;
  int lat_armed;            /* latency signal may fire */
  uint32_t lat_tick;        /* allocations since the last timed one */
  double lat_avg, lat_base; /* moving average; baseline (0: warming up) */
  nnmem_heap_counters_t c;
};

void nnmem_heap_config_init(nnmem_heap_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

static nnmem_status_t resolve(nnmem_heap_config_t *c, nnmem_backend_t *b,
                              nnmem_diag_t *diag) {
  uint64_t page = 4096;
  if (c->capacity == 0)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "heap config: capacity is 0");
  if (c->alignment == 0) c->alignment = 256;
  if (!nnmem__is_pow2(c->alignment) || c->alignment > (1ULL << 40))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "heap config: alignment %llu is not a power of two",
                       (unsigned long long)c->alignment);
  if (c->granule == 0) c->granule = 64 << 10;
  if (!nnmem__is_pow2(c->granule) ||
      (c->segment == NNMEM_SEGMENT_HOST_VM && c->granule < page))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "heap config: granule %llu is not a power of two of "
                       "at least a page",
                       (unsigned long long)c->granule);
  if (c->segment != NNMEM_SEGMENT_BACKEND &&
      c->segment != NNMEM_SEGMENT_HOST_VM &&
      c->segment != NNMEM_SEGMENT_CUDA_VM)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "heap config: unknown segment kind %d", (int)c->segment);
  if (c->segment != NNMEM_SEGMENT_HOST_VM && !b)
    return nnmem__diag(
        diag, NNMEM_ERR_INVALID, "heap config: a %s segment needs a backend",
        c->segment == NNMEM_SEGMENT_CUDA_VM ? "cuda_vm" : "backend");
  if (c->remap && c->segment == NNMEM_SEGMENT_BACKEND)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "heap config: remap needs the host_vm or cuda_vm "
                       "segment");
  /* host_vm: every block page-aligned; cuda_vm: blocks allocated with the
   * granule's alignment are remapped, others copied */
  if (c->remap && c->segment == NNMEM_SEGMENT_HOST_VM && c->alignment < page)
    c->alignment = page;
  if (c->defrag != NNMEM_DEFRAG_OFF && c->defrag != NNMEM_DEFRAG_AUTO)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "heap config: unknown defrag mode %d", (int)c->defrag);
  if (c->util_min == 0) c->util_min = 0.70;
  if (c->frag_high == 0) c->frag_high = 0.30;
  if (c->frag_low == 0) c->frag_low = 0.10;
  if (!(c->util_min > 0 && c->util_min <= 1 && c->frag_high > 0 &&
        c->frag_high <= 1 && c->frag_low >= 0 && c->frag_low <= c->frag_high))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "heap config: policy thresholds out of range "
                       "(0 < util_min <= 1, 0 <= frag_low <= frag_high <= 1)");
  if (c->check_every == 0) c->check_every = 256;
  if (c->lat_low == 0) c->lat_low = 1.25;
  if (c->lat_every == 0) c->lat_every = 16;
  if (c->lat_high != 0 &&
      !(c->lat_high > 1 && c->lat_low >= 1 && c->lat_low <= c->lat_high))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "heap config: latency thresholds out of range "
                       "(1 < lat_high, 1 <= lat_low <= lat_high; lat_high 0 "
                       "turns the signal off)");
  return NNMEM_OK;
}

nnmem_status_t nnmem_heap_create(const nnmem_heap_config_t *cfg,
                                 nnmem_backend_t *backend, nnmem_heap_t **out,
                                 nnmem_diag_t *diag) {
  if (!out) return nnmem__diag(diag, NNMEM_ERR_INVALID, "heap: out is NULL");
  *out = NULL;
  if (!cfg)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "heap config: NULL (capacity is required)");
  nnmem_heap_t *h = calloc(1, sizeof *h);
  if (!h) return NNMEM_ERR_NOMEM;
  nnmem_heap_config_init(&h->cfg);
  nnmem__config_copy(&h->cfg, sizeof h->cfg, cfg);
  nnmem_status_t s = resolve(&h->cfg, backend, diag);
  if (s == NNMEM_OK) {
    nnmem_diag_t why = {{0}};
    s = nnmem__segment_init(&h->seg, h->cfg.segment, backend, h->cfg.capacity,
                            h->cfg.granule, &why);
    if (s != NNMEM_OK)
      nnmem__diag(diag, s, "heap: cannot reserve a segment of %llu bytes%s%s",
                  (unsigned long long)h->cfg.capacity,
                  why.message[0] ? ": " : "", why.message);
    if (s == NNMEM_OK && h->cfg.segment == NNMEM_SEGMENT_CUDA_VM) {
      h->cfg.granule = h->seg.granule; /* at least the device's */
      h->cfg.capacity = h->seg.capacity;
    }
  }
  if (s != NNMEM_OK) {
    free(h);
    return s;
  }
  snprintf(h->name, sizeof h->name, "%s", cfg->name ? cfg->name : "heap");
  h->cfg.name = NULL;
  h->free_head = h->head = h->tail = NIL;
  h->armed = 1;
  h->lat_armed = 1;
  h->c.size = sizeof h->c;
  *out = h;
  return NNMEM_OK;
}

void nnmem_heap_destroy(nnmem_heap_t *h) {
  if (!h) return;
  nnmem__segment_fini(&h->seg);
  free(h->slots);
  free(h->meta);
  free(h);
}

/* The slot of a valid handle, else NULL (stale, forged or free). */
static inline slot_t *lookup(const nnmem_heap_t *h, nnmem_handle_t t) {
  uint64_t i = (uint64_t)(uint32_t)t.bits - 1;
  if (__builtin_expect(i >= h->n_slots, 0)) return NULL;
  slot_t *s = &h->slots[i];
  uint32_t g = (uint32_t)(t.bits >> 32);
  if (__builtin_expect(!(g & 1u) || s->gen != g, 0)) return NULL;
  return s;
}

static nnmem_status_t stale(nnmem_heap_t *h) {
  h->c.stale_handles++;
  return NNMEM_ERR_INVALID;
}

/* Granules a block at [off, off + size) inside a gap would commit: all it
 * touches but the first and last when a neighbour holds them already. */
static uint64_t new_granules(const nnmem_heap_t *h, uint64_t off,
                             uint64_t size) {
  uint64_t g = h->seg.granule, g0 = off / g, g1 = (off + size - 1) / g;
  return g1 - g0 + 1 - (h->seg.refs[g0] != 0) -
         (g1 != g0 && h->seg.refs[g1] != 0);
}

/* Where in a gap [start, end) (start aligned, room for size; tail: the
 * gap up to the capacity) the block goes, so that committed memory tracks
 * live bytes:
 *   1. a block of whole granules starts on a granule boundary when the gap
 *      has room: it then commits exactly its granules, and so does a run
 *      of such blocks, whatever sits beside it later (placed right after
 *      an odd-sized neighbour it would straddle one more granule for as
 *      long as it lives);
 *   2. in the tail gap, anything else goes at its start (the top stays
 *      low);
 *   3. in an inner gap, against its end instead of its start when that
 *      commits fewer granules (the partial granule of the next block is
 *      reused rather than one more opened). */
static uint64_t gap_place(const nnmem_heap_t *h, uint64_t start, uint64_t end,
                          uint64_t size, uint64_t align, int tail) {
  uint64_t g = h->seg.granule;
  if (align < g && size % g == 0) {
    uint64_t a = (start + g - 1) & ~(g - 1);
    if (a <= end && end - a >= size) return a;
  }
  if (tail) return start;
  uint64_t hi = (end - size) & ~(align - 1);
  if (hi <= start) return start;
  return new_granules(h, hi, size) < new_granules(h, start, size) ? hi
                                                                  : start;
}

/* Largest gap (inner or tail) and the gap before which a block of `size`
 * aligned to `align` fits best: *after = slot to link after (NIL = head). */
static int best_fit(const nnmem_heap_t *h, uint64_t size, uint64_t align,
                    uint64_t *off, uint32_t *after) {
  uint64_t best = UINT64_MAX, prev_end = 0;
  uint32_t prev = NIL;
  int found = 0;
  for (uint32_t i = h->head;; i = h->slots[i].next) {
    uint64_t end = i == NIL ? h->cfg.capacity : h->slots[i].off, start;
    if (!nnmem__align_up(prev_end, align, &start) && start <= end &&
        end - start >= size) {
      uint64_t waste = end - start - size;
      if (waste < best) {
        best = waste;
        *off = gap_place(h, start, end, size, align, i == NIL);
        *after = prev;
        found = 1;
        if (waste == 0) break;
      }
    }
    if (i == NIL) break;
    prev_end = h->slots[i].off + h->slots[i].size;
    prev = i;
  }
  return found;
}

static void gap_info(const nnmem_heap_t *h, uint64_t *largest, double *frag) {
  uint64_t prev_end = 0, big = 0;
  for (uint32_t i = h->head;; i = h->slots[i].next) {
    uint64_t end = i == NIL ? h->cfg.capacity : h->slots[i].off;
    if (end - prev_end > big) big = end - prev_end;
    if (i == NIL) break;
    prev_end = h->slots[i].off + h->slots[i].size;
  }
  uint64_t free_bytes = h->cfg.capacity - h->allocated;
  *largest = big;
  *frag = free_bytes ? 1.0 - (double)big / (double)free_bytes : 0.0;
}

static nnmem_status_t new_slot(nnmem_heap_t *h, uint32_t *idx) {
  if (h->free_head != NIL) {
    *idx = h->free_head;
    h->free_head = h->slots[*idx].next;
    return NNMEM_OK;
  }
  if (h->n_slots >= NIL - 1) return NNMEM_ERR_NOMEM;
  nnmem_status_t s = nnmem__grow((void **)&h->slots, &h->cap_slots,
                                 h->n_slots + 1, sizeof *h->slots);
  if (s == NNMEM_OK)
    s = nnmem__grow((void **)&h->meta, &h->cap_meta, h->n_slots + 1,
                    sizeof *h->meta);
  if (s != NNMEM_OK) return s;
  *idx = (uint32_t)h->n_slots++;
  h->slots[*idx] = (slot_t){0}; /* gen 0: free */
  h->meta[*idx] = (meta_t){0};
  return NNMEM_OK;
}

static void link_after(nnmem_heap_t *h, uint32_t i, uint32_t after) {
  slot_t *s = &h->slots[i];
  s->prev = after;
  s->next = after == NIL ? h->head : h->slots[after].next;
  if (s->next != NIL)
    h->slots[s->next].prev = i;
  else
    h->tail = i;
  if (after == NIL)
    h->head = i;
  else
    h->slots[after].next = i;
}

static uint64_t clock_now(const nnmem_heap_t *h) {
  if (h->cfg.clock_ns) return h->cfg.clock_ns(h->cfg.clock_user);
  return (uint64_t)(nnmem__now() * 1e9);
}

/* One timed allocation of `ns` into the moving average and baseline. */
static void lat_feed(nnmem_heap_t *h, uint64_t ns) {
  double t = (double)ns;
  h->lat_avg = h->c.lat_samples ? h->lat_avg + (t - h->lat_avg) / 8 : t;
  if (++h->c.lat_samples >= 8 && (h->lat_base == 0 || h->lat_avg < h->lat_base))
    h->lat_base = h->lat_avg;
}

/* 1 when the latency signal asks for a compaction (re-arms it first). */
static int lat_rising(nnmem_heap_t *h) {
  if (h->cfg.lat_high <= 0 || h->lat_base <= 0) return 0;
  if (h->lat_avg <= h->cfg.lat_low * h->lat_base) h->lat_armed = 1;
  return h->lat_armed && h->lat_avg >= h->cfg.lat_high * h->lat_base;
}

static void policy(nnmem_heap_t *h) {
  if (++h->since_check < h->cfg.check_every) return;
  h->since_check = 0;
  uint64_t largest;
  double frag;
  gap_info(h, &largest, &frag);
  if (frag <= h->cfg.frag_low) h->armed = 1;
  double util = (double)h->allocated / (double)h->cfg.capacity;
  int by_frag = h->armed && frag >= h->cfg.frag_high;
  int by_lat = lat_rising(h);
  if (util >= h->cfg.util_min && (by_frag || by_lat)) {
    if (by_frag)
      h->armed = 0;
    else
      h->c.compactions_latency++;
    if (by_lat) h->lat_armed = 0;
    h->c.compactions_auto++;
    (void)nnmem_heap_compact(h, NULL);
  }
}

static nnmem_status_t place(nnmem_heap_t *h, uint64_t size, uint64_t align,
                            uint64_t req, nnmem_handle_t *out) {
  uint64_t off = 0;
  uint32_t after = NIL, idx;
  if (!best_fit(h, size, align, &off, &after)) return NNMEM_ERR_NOMEM;
  nnmem_status_t s = new_slot(h, &idx);
  if (s != NNMEM_OK) return s;
  s = nnmem__segment_ref(&h->seg, off, size);
  if (s != NNMEM_OK) {
    h->slots[idx].next = h->free_head;
    h->free_head = idx;
    return s;
  }
  slot_t *b = &h->slots[idx];
  b->off = off;
  b->size = size;
  b->pins = 0;
  b->gen++; /* odd: live */
  h->meta[idx].req = req;
  h->meta[idx].align_log2 = (uint32_t)__builtin_ctzll(align);
  link_after(h, idx, after);
  if (b->next == NIL) h->top = off + size;
  if (h->top > h->c.top_peak) h->c.top_peak = h->top;
  h->allocated += size;
  h->requested += req;
  h->live++;
  if (h->allocated > h->allocated_peak) h->allocated_peak = h->allocated;
  if (h->requested > h->requested_peak) h->requested_peak = h->requested;
  out->bits = ((uint64_t)b->gen << 32) | (uint64_t)(idx + 1);
  return NNMEM_OK;
}

nnmem_status_t nnmem_handle_alloc(nnmem_heap_t *h, uint64_t bytes,
                                  uint64_t align, nnmem_handle_t *out) {
  if (!out) return NNMEM_ERR_INVALID;
  out->bits = 0;
  if (!h) return NNMEM_ERR_INVALID;
  if (align == 0) align = h->cfg.alignment;
  if (bytes == 0 || bytes > (1ULL << 56) || !nnmem__is_pow2(align) ||
      align > (1ULL << 40)) {
    h->failed_count++;
    return NNMEM_ERR_INVALID;
  }
  if (align < h->cfg.alignment) align = h->cfg.alignment;
  uint64_t size = bytes;
  (void)nnmem__align_up(bytes, h->cfg.alignment, &size);
  int timed = 0;
  uint64_t t0 = 0;
  if (h->cfg.defrag == NNMEM_DEFRAG_AUTO) {
    policy(h);
    if (h->cfg.lat_high > 0 && ++h->lat_tick >= h->cfg.lat_every) {
      h->lat_tick = 0;
      timed = 1;
      t0 = clock_now(h);
    }
  }
  nnmem_status_t s = place(h, size, align, bytes, out);
  if (timed) {
    uint64_t t1 = clock_now(h);
    lat_feed(h, t1 > t0 ? t1 - t0 : 0);
  }
  if (s == NNMEM_ERR_NOMEM && h->cfg.defrag == NNMEM_DEFRAG_AUTO &&
      h->cfg.capacity - h->allocated >= size) {
    h->c.compactions_auto++;
    if (nnmem_heap_compact(h, NULL) == NNMEM_OK)
      s = place(h, size, align, bytes, out);
  }
  if (s != NNMEM_OK)
    h->failed_count++;
  else
    h->alloc_count++;
  return s;
}

nnmem_status_t nnmem_handle_free(nnmem_heap_t *h, nnmem_handle_t t) {
  if (!h) return NNMEM_ERR_INVALID;
  slot_t *b = lookup(h, t);
  if (!b) return stale(h);
  if (b->pins) {
    h->c.pinned_frees++;
    return NNMEM_ERR_STATE;
  }
  uint32_t idx = (uint32_t)(b - h->slots);
  if (b->prev != NIL)
    h->slots[b->prev].next = b->next;
  else
    h->head = b->next;
  if (b->next != NIL)
    h->slots[b->next].prev = b->prev;
  else
    h->tail = b->prev;
  if (h->tail == NIL)
    h->top = 0;
  else
    h->top = h->slots[h->tail].off + h->slots[h->tail].size;
  nnmem__segment_unref(&h->seg, b->off, b->size);
  h->allocated -= b->size;
  h->requested -= h->meta[idx].req;
  h->live--;
  h->free_count++;
  if (++b->gen < UINT32_MAX - 1) { /* even: free; else retired */
    b->next = h->free_head;
    h->free_head = idx;
  }
  return NNMEM_OK;
}

nnmem_status_t nnmem_handle_pin(nnmem_heap_t *h, nnmem_handle_t t,
                                void **addr_out) {
  if (!h || !addr_out) return NNMEM_ERR_INVALID;
  slot_t *b = lookup(h, t);
  if (!b) {
    *addr_out = NULL;
    return stale(h);
  }
  if (__builtin_expect(b->pins == UINT32_MAX, 0)) {
    *addr_out = NULL;
    return NNMEM_ERR_OVERFLOW;
  }
  b->pins++;
  *addr_out = (void *)(uintptr_t)(h->seg.base + b->off);
  return NNMEM_OK;
}

nnmem_status_t nnmem_handle_unpin(nnmem_heap_t *h, nnmem_handle_t t) {
  if (!h) return NNMEM_ERR_INVALID;
  slot_t *b = lookup(h, t);
  if (!b) return stale(h);
  if (!b->pins) {
    h->c.bad_unpins++;
    return NNMEM_ERR_STATE;
  }
  b->pins--;
  return NNMEM_OK;
}

nnmem_status_t nnmem_handle_info(const nnmem_heap_t *h, nnmem_handle_t t,
                                 uint64_t *offset_out, uint64_t *size_out,
                                 uint32_t *pins_out) {
  if (!h) return NNMEM_ERR_INVALID;
  const slot_t *b = lookup(h, t);
  if (!b) return NNMEM_ERR_INVALID;
  if (offset_out) *offset_out = b->off;
  if (size_out) *size_out = b->size;
  if (pins_out) *pins_out = b->pins;
  return NNMEM_OK;
}

/* ---- compaction ---------------------------------------------------- */

typedef struct ival {
  uint64_t start, end;
} ival_t;

typedef struct layout {
  ival_t *iv;
  size_t n, cap;
} layout_t;

/* Removes [a, b) from interval k (which contains it). */
static nnmem_status_t carve(layout_t *L, size_t k, uint64_t a, uint64_t b) {
  ival_t v = L->iv[k];
  int left = a > v.start, right = b < v.end;
  if (left && right) {
    nnmem_status_t s =
        nnmem__grow((void **)&L->iv, &L->cap, L->n + 1, sizeof *L->iv);
    if (s != NNMEM_OK) return s;
    memmove(&L->iv[k + 2], &L->iv[k + 1], (L->n - k - 1) * sizeof *L->iv);
    L->iv[k] = (ival_t){v.start, a};
    L->iv[k + 1] = (ival_t){b, v.end};
    L->n++;
  } else if (left) {
    L->iv[k].end = a;
  } else if (right) {
    L->iv[k].start = b;
  } else {
    memmove(&L->iv[k], &L->iv[k + 1], (L->n - k - 1) * sizeof *L->iv);
    L->n--;
  }
  return NNMEM_OK;
}

/* Free space = [0, capacity) minus the pinned blocks (address order). */
static nnmem_status_t free_space(const nnmem_heap_t *h, layout_t *L,
                                 uint64_t *pinned) {
  uint64_t cursor = 0;
  *pinned = 0;
  for (uint32_t i = h->head;; i = h->slots[i].next) {
    if (i != NIL && !h->slots[i].pins) continue;
    uint64_t end = i == NIL ? h->cfg.capacity : h->slots[i].off;
    if (end > cursor) {
      nnmem_status_t s =
          nnmem__grow((void **)&L->iv, &L->cap, L->n + 1, sizeof *L->iv);
      if (s != NNMEM_OK) return s;
      L->iv[L->n++] = (ival_t){cursor, end};
    }
    if (i == NIL) break;
    cursor = h->slots[i].off + h->slots[i].size;
    (*pinned)++;
  }
  return NNMEM_OK;
}

/* The lowest aligned start <= limit where `size` fits, carved out. */
static nnmem_status_t choose(layout_t *L, const slot_t *b, uint32_t a_log2,
                             uint64_t *to) {
  uint64_t align = 1ULL << a_log2;
  for (size_t k = 0; k < L->n; k++) {
    uint64_t start;
    if (L->iv[k].start > b->off) break;
    if (nnmem__align_up(L->iv[k].start, align, &start)) continue;
    if (start <= b->off && start <= L->iv[k].end &&
        L->iv[k].end - start >= b->size) {
      *to = start;
      return carve(L, k, start, start + b->size);
    }
  }
  return NNMEM_ERR_STATE; /* unreachable: its own range is always free */
}

typedef struct by_off {
  uint64_t off;
  uint32_t idx;
} by_off_t;

static int cmp_off(const void *x, const void *y) {
  uint64_t a = ((const by_off_t *)x)->off, b = ((const by_off_t *)y)->off;
  return a < b ? -1 : a > b;
}

/* Relinks the live slots by their (new) offsets; `tmp` holds n entries. */
static void relink(nnmem_heap_t *h, const uint32_t *order, by_off_t *tmp,
                   size_t n) {
  for (size_t k = 0; k < n; k++)
    tmp[k] = (by_off_t){h->slots[order[k]].off, order[k]};
  qsort(tmp, n, sizeof *tmp, cmp_off);
  h->head = h->tail = NIL;
  for (size_t k = 0; k < n; k++)
    link_after(h, tmp[k].idx, h->tail);
  h->top = n ? h->slots[h->tail].off + h->slots[h->tail].size : 0;
}

/* The largest gap (as gap_info counts it) of the layout that puts block
 * order[k] at target[k]; `tmp` holds n entries. */
static uint64_t layout_largest(const nnmem_heap_t *h, const uint32_t *order,
                               const uint64_t *target, by_off_t *tmp,
                               size_t n) {
  for (size_t k = 0; k < n; k++) tmp[k] = (by_off_t){target[k], order[k]};
  qsort(tmp, n, sizeof *tmp, cmp_off);
  uint64_t prev_end = 0, big = 0;
  for (size_t k = 0; k <= n; k++) {
    uint64_t end = k == n ? h->cfg.capacity : tmp[k].off;
    if (end - prev_end > big) big = end - prev_end;
    if (k < n) prev_end = tmp[k].off + h->slots[tmp[k].idx].size;
  }
  return big;
}

nnmem_status_t nnmem_heap_compact(nnmem_heap_t *h,
                                  nnmem_compact_report_t *report) {
  if (!h) return NNMEM_ERR_INVALID;
  nnmem_compact_report_t r = {0};
  r.size = sizeof r;
  double t0 = nnmem__now();
  gap_info(h, &r.largest_before, &r.frag_before);
  layout_t L = {0};
  uint32_t *order = malloc((h->live ? h->live : 1) * sizeof *order);
  uint64_t *target = malloc((h->live ? h->live : 1) * sizeof *target);
  by_off_t *tmp = malloc((h->live ? h->live : 1) * sizeof *tmp);
  nnmem_status_t s = order && target && tmp
                         ? free_space(h, &L, &r.pinned_blocks)
                         : NNMEM_ERR_NOMEM;
  size_t n = 0;
  /* 2. the layout, in address order */
  for (uint32_t i = h->head; s == NNMEM_OK && i != NIL; i = h->slots[i].next) {
    order[n] = i;
    target[n] = h->slots[i].off;
    if (!h->slots[i].pins)
      s = choose(&L, &h->slots[i], h->meta[i].align_log2, &target[n]);
    n++;
  }
  /* a layout that would shrink the largest gap: nothing moves */
  if (s == NNMEM_OK && n &&
      layout_largest(h, order, target, tmp, n) < r.largest_before)
    for (size_t k = 0; k < n; k++) target[k] = h->slots[order[k]].off;
  /* 3. the moves, in the same order */
  for (size_t k = 0; s == NNMEM_OK && k < n; k++) {
    slot_t *b = &h->slots[order[k]];
    if (target[k] == b->off) continue;
    s = nnmem__segment_ref(&h->seg, target[k], b->size);
    if (s != NNMEM_OK) break;
    s = nnmem__segment_move(&h->seg, target[k], b->off, b->size, h->cfg.remap,
                            &r.bytes_remapped);
    if (s != NNMEM_OK) {
      nnmem__segment_unref(&h->seg, target[k], b->size);
      break;
    }
    nnmem__segment_unref(&h->seg, b->off, b->size);
    b->off = target[k];
    r.blocks_moved++;
    r.bytes_moved += b->size;
  }
  /* 4. the address list (also after a failure: offsets already moved) */
  if (tmp && n == h->live) relink(h, order, tmp, n);
  free(tmp);
  free(L.iv);
  free(order);
  free(target);
  gap_info(h, &r.largest_after, &r.frag_after);
  r.free_bytes = h->cfg.capacity - h->allocated;
  r.seconds = nnmem__now() - t0;
  h->c.compactions++;
  h->c.bytes_moved += r.bytes_moved;
  h->c.bytes_remapped += r.bytes_remapped;
  h->c.blocks_moved += r.blocks_moved;
  h->c.pinned_in_the_way += r.pinned_blocks;
  if (report) *report = r;
  return s;
}

/* ---- stats and checker --------------------------------------------- */

nnmem_status_t nnmem_heap_stats(nnmem_heap_t *h, nnmem_stats_t *st,
                                nnmem_heap_counters_t *hc) {
  if (!h) return NNMEM_ERR_INVALID;
  if (st) {
    nnmem_stats_init(st);
    snprintf(st->name, sizeof st->name, "%s", h->name);
    st->requested_bytes = h->requested;
    st->requested_bytes_peak = h->requested_peak;
    st->allocated_bytes = h->allocated;
    st->allocated_bytes_peak = h->allocated_peak;
    st->reserved_bytes = h->seg.committed;
    st->reserved_bytes_peak = h->seg.committed_peak;
    st->alloc_count = h->alloc_count;
    st->free_count = h->free_count;
    st->failed_count = h->failed_count;
    st->misuse_count = h->c.stale_handles + h->c.bad_unpins + h->c.pinned_frees;
    st->live_count = h->live;
    st->backend_allocs = h->seg.commits;
    st->backend_frees = h->seg.decommits;
    st->free_bytes = h->cfg.capacity - h->allocated;
    gap_info(h, &st->largest_free, &st->fragmentation);
    st->compactions = h->c.compactions;
    st->compactions_latency = h->c.compactions_latency;
  }
  if (hc) {
    *hc = h->c;
    hc->lat_avg_ns = (uint64_t)(h->lat_avg + 0.5);
    hc->lat_baseline_ns = (uint64_t)(h->lat_base + 0.5);
    hc->commits = h->seg.commits;
    hc->decommits = h->seg.decommits;
    hc->granule = h->cfg.granule;
  }
  return NNMEM_OK;
}

static nnmem_status_t check_list(const nnmem_heap_t *h, nnmem_diag_t *diag) {
  uint64_t alloc = 0, req = 0, n = 0, prev_end = 0;
  uint32_t prev = NIL;
  for (uint32_t i = h->head; i != NIL; i = h->slots[i].next) {
    const slot_t *b = &h->slots[i];
    if (i >= h->n_slots || !LIVE(b) || b->prev != prev || ++n > h->live)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "heap %s: address list broken at slot %u", h->name, i);
    if (b->off < prev_end || b->size == 0 || b->size > h->cfg.capacity ||
        b->off > h->cfg.capacity - b->size ||
        (b->off & ((1ULL << h->meta[i].align_log2) - 1)))
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "heap %s: slot %u at %llu+%llu overlaps, is "
                         "misaligned or leaves the capacity",
                         h->name, i, (unsigned long long)b->off,
                         (unsigned long long)b->size);
    for (uint64_t g = b->off / h->seg.granule;
         g < (b->off + b->size + h->seg.granule - 1) / h->seg.granule; g++)
      if (!h->seg.refs[g])
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "heap %s: slot %u touches uncommitted granule %llu",
                           h->name, i, (unsigned long long)g);
    alloc += b->size;
    req += h->meta[i].req;
    prev_end = b->off + b->size;
    prev = i;
  }
  if (prev != h->tail || n != h->live || alloc != h->allocated ||
      req != h->requested || prev_end != h->top)
    return nnmem__diag(
        diag, NNMEM_ERR_STATE,
        "heap %s: counters disagree with the address list "
        "(live %llu/%llu, allocated %llu/%llu, top %llu/%llu)",
        h->name, (unsigned long long)n, (unsigned long long)h->live,
        (unsigned long long)alloc, (unsigned long long)h->allocated,
        (unsigned long long)prev_end, (unsigned long long)h->top);
  return NNMEM_OK;
}

nnmem_status_t nnmem_heap_check(const nnmem_heap_t *h, nnmem_diag_t *diag) {
  if (!h) return NNMEM_ERR_INVALID;
  nnmem_status_t s = check_list(h, diag);
  if (s != NNMEM_OK) return s;
  uint64_t live = 0, free_n = 0;
  for (size_t i = 0; i < h->n_slots; i++)
    live += LIVE(&h->slots[i]);
  for (uint32_t i = h->free_head; i != NIL; i = h->slots[i].next)
    if (i >= h->n_slots || LIVE(&h->slots[i]) || ++free_n > h->n_slots)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "heap %s: free slot list broken at %u", h->name, i);
  if (live != h->live)
    return nnmem__diag(diag, NNMEM_ERR_STATE,
                       "heap %s: %llu live slots, %llu counted", h->name,
                       (unsigned long long)live, (unsigned long long)h->live);
  char msg[200];
  if (nnmem__segment_check(&h->seg, msg, sizeof msg))
    return nnmem__diag(diag, NNMEM_ERR_STATE, "heap %s: %s", h->name, msg);
  return NNMEM_OK;
}

/* heap_replay.c - replays a problem (MiniMalloc trace) through a handle
 * heap on an unbacked simulated device, or on a caller's backend
 * (nnmem_heap_replay_backend: real host memory, GPU memory through the
 * cuda backend, or GPU virtual memory with cfg->segment CUDA_VM):
 * fragmentation over time, committed bytes, compactions, bytes moved and
 * of those remapped.
 *
 * Steps: 1. two events per buffer of nonzero size, sorted by (time, frees
 * first, buffer index) as nnmem_pool_replay does; 2. run them through a
 * fresh heap with the caller's configuration (capacity required); after
 * each allocation sample live requested bytes, committed bytes and the
 * fragmentation (1 - largest allocatable gap / free bytes) and call the
 * callback; 3. an allocation that does not fit ends the replay with
 * failed_at set (status NNMEM_OK: not fitting is a result here).
 * Complexity: O(n log n) sort plus O(live) per allocation.
 * Thread-safety: uses only its own objects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/heap.h"
#include "nnmem/pool.h"

typedef nnmem_trace_event_t hevent_t;

/* `granule`: nonzero on a CUDA_VM segment with remap: buffers of at least
 * that size are allocated aligned to it (remappable moves). */
static nnmem_status_t run(const nnmem_problem_t *p, const hevent_t *ev,
                          size_t n, nnmem_heap_t *h, uint64_t granule,
                          nnmem_handle_t *hd,
                          nnmem_heap_replay_cb cb, void *user,
                          nnmem_heap_replay_result_t *r, nnmem_diag_t *diag) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  uint64_t live = 0, allocs = 0;
  double frag_sum = 0;
  nnmem_stats_t st;
  for (size_t i = 0; i < n; i++) {
    uint32_t j = ev[i].index;
    if (!ev[i].is_alloc) {
      if (hd[j].bits && nnmem_handle_free(h, hd[j]) == NNMEM_OK)
        live -= b[j].size;
      hd[j].bits = 0;
      r->operations++;
      continue;
    }
    uint64_t align = b[j].align;
    if (granule && b[j].size >= granule && align < granule) align = granule;
    nnmem_status_t s = nnmem_handle_alloc(h, b[j].size, align, &hd[j]);
    if (s == NNMEM_ERR_NOMEM) {
      r->failed_at = (uint64_t)j + 1;
      break;
    }
    if (s != NNMEM_OK) {
      const char *id = nnmem_problem_id(p, j);
      char name[80];
      if (id)
        snprintf(name, sizeof name, "'%.64s'", id);
      else
        snprintf(name, sizeof name, "#%u", (unsigned)j);
      return nnmem__diag(diag, s,
                         "heap replay: the allocation of buffer %s "
                         "(%llu B, operation %llu) failed: %s",
                         name, (unsigned long long)b[j].size,
                         (unsigned long long)r->operations + 1,
                         nnmem_status_str(s));
    }
    r->operations++;
    live += b[j].size;
    if (live > r->peak_live_bytes) r->peak_live_bytes = live;
    (void)nnmem_heap_stats(h, &st, NULL);
    frag_sum += st.fragmentation;
    if (st.fragmentation > r->frag_max) r->frag_max = st.fragmentation;
    if (cb) cb(user, r->operations, live, st.reserved_bytes, st.fragmentation);
    allocs++;
  }
  r->frag_mean = allocs ? frag_sum / (double)allocs : 0;
  return NNMEM_OK;
}

nnmem_status_t nnmem_heap_replay(const nnmem_problem_t *problem,
                                 const nnmem_heap_config_t *cfg,
                                 nnmem_heap_replay_cb cb, void *user,
                                 nnmem_heap_replay_result_t *out,
                                 nnmem_diag_t *diag) {
  return nnmem_heap_replay_backend(problem, cfg, NULL, cb, user, out, diag);
}

nnmem_status_t nnmem_heap_replay_backend(const nnmem_problem_t *problem,
                                         const nnmem_heap_config_t *cfg,
                                         nnmem_backend_t *backend,
                                         nnmem_heap_replay_cb cb, void *user,
                                         nnmem_heap_replay_result_t *out,
                                         nnmem_diag_t *diag) {
  if (!problem || !cfg || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "heap replay: NULL argument");
  memset(out, 0, sizeof *out);
  size_t nb = nnmem_problem_count(problem), n = 0;
  if (nb > UINT32_MAX) return NNMEM_ERR_OVERFLOW;
  hevent_t *ev = NULL;
  nnmem_handle_t *hd = calloc(nb + 1, sizeof *hd);
  nnmem_backend_t *dev = NULL; /* ours: the unbacked simulated device */
  nnmem_heap_t *h = NULL;
  nnmem_status_t s =
      hd ? nnmem_trace_events(problem, &ev, &n) : NNMEM_ERR_NOMEM;
  nnmem_sim_config_t sc = {0};
  if (s == NNMEM_OK && !backend && cfg->segment == NNMEM_SEGMENT_BACKEND)
    s = nnmem_backend_sim_create(&sc, &dev);
  if (s == NNMEM_OK)
    s = nnmem_heap_create(cfg, backend ? backend : dev, &h, diag);
  uint64_t granule = 0;
  if (s == NNMEM_OK && cfg->remap && cfg->segment == NNMEM_SEGMENT_CUDA_VM) {
    nnmem_heap_counters_t hc;
    if (nnmem_heap_stats(h, NULL, &hc) == NNMEM_OK) granule = hc.granule;
  }
  if (s == NNMEM_OK)
    s = run(problem, ev, n, h, granule, hd, cb, user, out, diag);
  if (s == NNMEM_OK) {
    nnmem_stats_t st;
    nnmem_heap_counters_t hc;
    (void)nnmem_heap_stats(h, &st, &hc);
    out->peak_committed_bytes = st.reserved_bytes_peak;
    out->peak_top = hc.top_peak;
    out->compactions = hc.compactions;
    out->bytes_moved = hc.bytes_moved;
    out->bytes_remapped = hc.bytes_remapped;
    out->compactions_latency = hc.compactions_latency;
    out->lat_samples = hc.lat_samples;
  }
  nnmem_heap_destroy(h);
  nnmem_backend_destroy(dev);
  free(ev);
  free(hd);
  return s;
}

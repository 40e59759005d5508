/* fit_moves.c - step 5 of the fitter (fit.c): which weights to stream and
 * which activations to offload so the main tier's live bytes stay under
 * the target.
 *
 * 1. candidates: every weight read by an op (stream: on the device only in
 *    a window [u - k, u + 1) per use u, k the fewest steps whose compute
 *    hides the copy, at most max_ahead; windows that meet merge), every
 *    idle stretch a < c of an activation root without gaps or sub-buffers
 *    (offload: device gap [a + 1 + d, c - k));
 * 2. the live-bytes profile of the main tier per step;
 * 3. repeatedly, at the most constrained over-target step (least freeable
 *    bytes per byte of excess), the move with the most useful bytes per
 *    byte copied (freed at every over-target step, capped by its excess;
 *    a stream of a weight read by the first op counts its copy twice: no
 *    compute can hide it; on bert-base the word embedding's slices, read
 *    by op 0, were streamed and waited for before it, while other
 *    weights' copies overlap compute);
 *    equal: the smallest that covers the excess, else the largest; when no
 *    move frees the step, a streamed weight's window is shortened;
 * 4. reverse delete: moves made redundant by later ones are undone,
 *    largest first; on fragmentation (placement fails) every lead halves.
 * Invariant: prof[s] = live bytes at s of the main tier minus what the
 * applied moves free at s.
 * Complexity: per move O(C * (log S + window steps) + S log S); C
 * candidates.
 * Thread-safety: works on one fitter. */
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "fit/fitter.h"

/* ---- step 5: moves ------------------------------------------------------- */

/* Fewest steps before `c` (at least 1, at most max_ahead, not before
 * `floor`) whose compute time covers `t` seconds. */
static uint64_t lead_steps(const fitter_t *x, uint64_t c, uint64_t floor,
                           double t, uint32_t max_ahead) {
  double acc = 0;
  uint64_t k = 0;
  while (k < max_ahead && c > floor + k) {
    k++;
    acc += x->win_s[c - k];
    if (acc >= t) break;
  }
  return k ? k : 1;
}

static uint64_t delay_steps(const fitter_t *x, uint64_t a1, double t,
                            uint32_t max_ahead) {
  double acc = 0;
  uint64_t d = 0;
  while (d < max_ahead && a1 + d < x->S) {
    acc += x->win_s[a1 + d];
    d++;
    if (acc >= t) break;
  }
  return d ? d : 1;
}

static nnmem_status_t add_cand(fitter_t *x, cand_t c) {
  if (nnmem__grow((void **)&x->cands, &x->cap_c, x->n_c + 1, sizeof c))
    return NNMEM_ERR_NOMEM;
  x->cands[x->n_c++] = c;
  return NNMEM_OK;
}

nnmem_status_t nnmem__fit_make_cands(fitter_t *x, uint32_t max_ahead) {
  double link = x->f->dev.tiers[x->main].link_bandwidth;
  nnmem_status_t st = NNMEM_OK;
  for (size_t i = 0; i < x->n_v && st == NNMEM_OK; i++) {
    fv_t *v = &x->v[i];
    if (v->tier != x->main || v->n_acc == 0 || v->size == 0) continue;
    double t = (double)v->size / link;
    if (v->kind == FIT_KIND_WEIGHT && !x->cfg->no_stream) {
      cand_t c = {.v = (uint32_t)i,
                  .kind = NNMEM_MOVE_STREAM,
                  .ahead = max_ahead,
                  .first_op = v->acc[0] == 0};
      st = add_cand(x, c);
      continue;
    }
    if (v->kind != FIT_KIND_ACTIVATION || x->cfg->no_offload ||
        v->parent >= 0 || v->has_children || v->has_gaps)
      continue;
    for (size_t k = 0; k + 1 < v->n_acc && st == NNMEM_OK; k++) {
      uint64_t a = v->acc[k], c = v->acc[k + 1];
      if (c < a + 4) continue;
      uint64_t d = delay_steps(x, a + 1, t, max_ahead);
      uint64_t lead = lead_steps(x, c, a + 1 + d, t, max_ahead);
      if (a + 1 + d >= c - lead) d = 1, lead = 1; /* not hidden: exposed */
      if (a + 1 + d >= c - lead) continue;        /* no gap left */
      cand_t cd = {.v = (uint32_t)i,
                   .kind = NNMEM_MOVE_OFFLOAD,
                   .a = a,
                   .c = c,
                   .d = d,
                   .k = lead,
                   .ahead = max_ahead};
      st = add_cand(x, cd);
    }
  }
  return st;
}

/* The device windows of a streamed weight: [u - k, u + 1) per use, merged.
 * Writes up to v->n_acc windows into w; returns the count. */
size_t nnmem__fit_stream_windows(const fitter_t *x, const fv_t *v,
                                 uint32_t ahead, nnmem_interval_t *w) {
  double t = (double)v->size / x->f->dev.tiers[x->main].link_bandwidth;
  size_t n = 0;
  for (size_t k = 0; k < v->n_acc; k++) {
    uint64_t u = v->acc[k];
    uint64_t lead = v->pace_lead ? v->pace_lead : lead_steps(x, u, 0, t, ahead);
    if (v->min_lead > lead) lead = v->min_lead;
    uint64_t from = u >= lead ? u - lead : 0;
    if (n && from <= w[n - 1].last) {
      w[n - 1].last = u + 1;
    } else {
      w[n].first = from;
      w[n].last = u + 1;
      n++;
    }
  }
  return n;
}

/* Bytes cand c frees at step s (0 when it does not cover s). */
static uint64_t frees_at(const fitter_t *x, const cand_t *c, uint64_t s,
                         uint32_t ahead, nnmem_interval_t *scratch) {
  const fv_t *v = &x->v[c->v];
  if (c->kind == NNMEM_MOVE_OFFLOAD)
    return s >= c->a + 1 + c->d && s < c->c - c->k ? v->asize : 0;
  (void)ahead;
  size_t n = nnmem__fit_stream_windows(x, v, c->ahead, scratch);
  for (size_t i = 0; i < n; i++)
    if (s >= scratch[i].first && s < scratch[i].last) return 0;
  return v->asize;
}

static double cand_cost(const fitter_t *x, const cand_t *c, uint32_t ahead,
                        nnmem_interval_t *scratch) {
  const fv_t *v = &x->v[c->v];
  double copies =
      c->kind == NNMEM_MOVE_OFFLOAD
          ? 2.0
          : (double)nnmem__fit_stream_windows(x, v, c->ahead, scratch);
  (void)ahead;
  /* transfer time per byte freed = copies / link; a weight read by the
   * first op costs its copy once more: no compute can hide that copy, it
   * is exposed whatever the leads (a weight read later may overlap) */
  return copies + (c->first_op ? 1.0 : 0.0);
}

/* Subtracts (sign -1) or adds back (+1) the bytes cand c frees: every
 * step outside its held windows (stream) or inside its idle stretch
 * (offload). O(S + uses). */
static void apply_to_profile(fitter_t *x, const cand_t *c, uint32_t ahead,
                             nnmem_interval_t *scratch, int sign) {
  const fv_t *v = &x->v[c->v];
  uint64_t lo = 0, hi = x->S;
  size_t n = 0, w = 0;
  (void)ahead;
  if (c->kind == NNMEM_MOVE_OFFLOAD) {
    lo = c->a + 1 + c->d;
    hi = c->c - c->k < x->S ? c->c - c->k : x->S;
  } else {
    n = nnmem__fit_stream_windows(x, v, c->ahead, scratch);
  }
  /* the stretches between held windows (sorted, disjoint), each one
   * tight loop; unsigned wrap-around makes the subtraction an addition */
  uint64_t delta = sign < 0 ? (uint64_t)0 - v->asize : v->asize;
  uint64_t *prof = x->prof, s = lo;
  for (; w <= n && s < hi; w++) {
    uint64_t end = w < n && scratch[w].first < hi ? scratch[w].first : hi;
    for (; s < end; s++)
      prof[s] += delta;
    if (w < n && scratch[w].last > s) s = scratch[w].last; /* held there */
  }
}

/* The largest prefetch lead with which streamed weight c frees step s (no
 * window covers s): every use u > s starts after s; 0 when a use is at s
 * or right after it. */
static uint32_t stream_ahead_for(const fitter_t *x, const cand_t *c,
                                 uint64_t s) {
  const fv_t *v = &x->v[c->v];
  uint64_t lim = c->ahead;
  for (size_t k = 0; k < v->n_acc; k++) {
    uint64_t u = v->acc[k];
    if (u == s) return 0;
    if (u > s && u - s - 1 < lim) lim = u - s - 1;
  }
  return (uint32_t)lim;
}

/* No new move frees step s at its best lead: shorten the prefetch of the
 * largest streamed weight (applied or not) whose window, not its use,
 * holds s. Returns 1 when one changed. */
static int shorten_prefetch(fitter_t *x, uint64_t s, uint32_t ahead,
                            nnmem_interval_t *scratch) {
  int64_t best = -1;
  uint32_t best_lead = 0;
  for (size_t i = 0; i < x->n_c; i++) {
    cand_t *c = &x->cands[i];
    if (c->kind != NNMEM_MOVE_STREAM || c->dead) continue;
    if (frees_at(x, c, s, ahead, scratch)) continue; /* not held at s */
    uint32_t lead = stream_ahead_for(x, c, s);
    if (lead < 1) continue;
    if (best < 0 || x->v[c->v].asize > x->v[x->cands[best].v].asize)
      best = (int64_t)i, best_lead = lead;
  }
  if (best < 0) return 0;
  cand_t *c = &x->cands[best];
  if (c->applied) apply_to_profile(x, c, ahead, scratch, +1);
  c->ahead = best_lead;
  if (!c->applied) {
    c->applied = 1;
    c->at = s;
    x->v[c->v].streamed = 1;
  }
  apply_to_profile(x, c, ahead, scratch, -1);
  return 1;
}

/* Sets the link-aware lead of the value of applied stream c, keeping the
 * profile in step: O(S + uses). */
void nnmem__fit_set_min_lead(fitter_t *x, const cand_t *c, uint64_t lead,
                             nnmem_interval_t *scratch) {
  apply_to_profile(x, c, 0, scratch, +1);
  x->v[c->v].min_lead = lead;
  apply_to_profile(x, c, 0, scratch, -1);
}

/* The same for the link-paced lead (it replaces the fewest steps hiding
 * the copy; 0: those again). */
void nnmem__fit_set_pace_lead(fitter_t *x, const cand_t *c, uint64_t lead,
                              nnmem_interval_t *scratch) {
  apply_to_profile(x, c, 0, scratch, +1);
  x->v[c->v].pace_lead = lead;
  apply_to_profile(x, c, 0, scratch, -1);
}

void nnmem__fit_build_profile(fitter_t *x) {
  memset(x->prof, 0, x->S * sizeof *x->prof);
  for (size_t i = 0; i < x->n_v; i++) {
    const fv_t *v = &x->v[i];
    if (v->tier != x->main || v->parent >= 0) continue;
    /* the lifetime before any round: a placed stream narrows first/last
     * to its windows, which the moves subtract here on their own */
    for (uint64_t s = v->orig_first; s < v->orig_last && s < x->S; s++)
      x->prof[s] += v->asize;
  }
}

/* The over-target step with the least room to move: the smallest ratio
 * of the bytes unapplied moves could free there to its excess (most
 * constrained first: a large weight used at the peak step itself must not
 * be streamed for the other steps when that step needs the same bytes
 * from elsewhere anyway). Per step the freeable bytes come from a
 * difference array, O(C * windows + S). UINT64_MAX when no step is over. */
static uint64_t tightest_step(fitter_t *x, uint64_t target, uint32_t ahead,
                              nnmem_interval_t *scratch) {
  int64_t *diff = calloc(x->S + 1, sizeof *diff);
  uint64_t best = UINT64_MAX;
  double best_ratio = 0;
  if (!diff) { /* fall back to the peak */
    for (uint64_t t = 0; t < x->S; t++)
      if (x->prof[t] > target &&
          (best == UINT64_MAX || x->prof[t] > x->prof[best]))
        best = t;
    return best;
  }
  for (size_t i = 0; i < x->n_c; i++) {
    const cand_t *c = &x->cands[i];
    if (c->applied || c->dead) continue;
    int64_t sz = (int64_t)x->v[c->v].asize;
    if (c->kind == NNMEM_MOVE_OFFLOAD) {
      diff[c->a + 1 + c->d] += sz;
      diff[c->c - c->k] -= sz;
      continue;
    }
    size_t n = nnmem__fit_stream_windows(x, &x->v[c->v], c->ahead, scratch);
    diff[0] += sz;
    diff[x->S] -= sz;
    for (size_t k = 0; k < n; k++) {
      diff[scratch[k].first] -= sz;
      diff[scratch[k].last < x->S ? scratch[k].last : x->S] += sz;
    }
  }
  (void)ahead;
  int64_t run = 0;
  for (uint64_t t = 0; t < x->S; t++) {
    run += diff[t];
    if (x->prof[t] <= target) continue;
    double ratio = (double)run / (double)(x->prof[t] - target);
    if (best == UINT64_MAX || ratio < best_ratio ||
        (ratio == best_ratio && x->prof[t] > x->prof[best]))
      best = t, best_ratio = ratio;
  }
  free(diff);
  return best;
}

/* The excesses of one greedy round's over-target steps, sorted with
 * prefix sums, so that the sum over all of them of min(excess, size) is
 * one binary search. */
typedef struct over_set {
  uint64_t *ex;     /* their excesses, ascending */
  uint64_t *prefix; /* prefix[i] = ex[0] + ... + ex[i-1] */
  size_t n;
} over_set_t;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int over_set_build(const fitter_t *x, uint64_t target, over_set_t *o) {
  o->n = 0;
  o->ex = malloc(x->S * sizeof *o->ex);
  o->prefix = malloc((x->S + 1) * sizeof *o->prefix);
  if (!o->ex || !o->prefix) return -1;
  for (uint64_t t = 0; t < x->S; t++)
    if (x->prof[t] > target) o->ex[o->n++] = x->prof[t] - target;
  qsort(o->ex, o->n, sizeof *o->ex, cmp_u64);
  o->prefix[0] = 0;
  for (size_t i = 0; i < o->n; i++)
    o->prefix[i + 1] = o->prefix[i] + o->ex[i];
  return 0;
}

static void over_set_free(over_set_t *o) {
  free(o->ex);
  free(o->prefix);
}

/* Sum over all over-target steps of min(excess, size). */
static uint64_t capped_total(const over_set_t *o, uint64_t size) {
  size_t lo = 0, hi = o->n; /* first excess >= size */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (o->ex[mid] < size)
      lo = mid + 1;
    else
      hi = mid;
  }
  return o->prefix[lo] + (uint64_t)(o->n - lo) * size;
}

/* Sum over the over-target steps that c frees of min(excess, size):
 * for a stream, the total less its held windows (O(log S + window
 * steps)); for an offload, its idle stretch (O(log S + stretch)). */
static double useful_bytes(const fitter_t *x, const cand_t *c, uint64_t target,
                           const over_set_t *o, nnmem_interval_t *scratch) {
  const fv_t *v = &x->v[c->v];
  uint64_t size = v->asize;
  uint64_t u = 0;
  if (c->kind == NNMEM_MOVE_OFFLOAD) {
    uint64_t lo = c->a + 1 + c->d, hi = c->c - c->k;
    if (hi > x->S) hi = x->S;
    for (uint64_t t = lo; t < hi; t++)
      if (x->prof[t] > target) {
        uint64_t e = x->prof[t] - target;
        u += e < size ? e : size;
      }
    return (double)u;
  }
  u = capped_total(o, size);
  size_t n = nnmem__fit_stream_windows(x, v, c->ahead, scratch);
  for (size_t w = 0; w < n; w++) {
    uint64_t hi = scratch[w].last < x->S ? scratch[w].last : x->S;
    for (uint64_t t = scratch[w].first; t < hi; t++)
      if (x->prof[t] > target) { /* held there: frees nothing */
        uint64_t e = x->prof[t] - target;
        u -= e < size ? e : size;
      }
  }
  return (double)u;
}

/* One greedy move at the tightest step; 0 when none is over. */
int nnmem__fit_relieve_peak(fitter_t *x, uint64_t target, uint32_t ahead,
                            nnmem_interval_t *scratch) {
  uint64_t s = tightest_step(x, target, ahead, scratch);
  if (s == UINT64_MAX) return 0;
  uint64_t excess = x->prof[s] - target;
  over_set_t over;
  if (over_set_build(x, target, &over) != 0) {
    over_set_free(&over);
    return -1;
  }
  int64_t best = -1;
  double best_cost = 0;
  uint64_t best_size = 0;
  for (size_t i = 0; i < x->n_c; i++) {
    cand_t *c = &x->cands[i];
    if (c->applied || c->dead) continue;
    /* one move per value stretch: a streamed weight or an offloaded
     * stretch excludes overlapping moves of the same value */
    if (!frees_at(x, c, s, ahead, scratch)) continue;
    uint64_t size = x->v[c->v].asize;
    /* useful bytes per byte moved: what it frees at every over-target
     * step, capped by that step's excess (max coverage per byte) */
    double useful = useful_bytes(x, c, target, &over, scratch);
    double cost =
        -useful / (cand_cost(x, c, ahead, scratch) * (double)(size ? size : 1));
    /* equal cost per byte: the smallest move that removes the whole
     * excess at s, else the largest (fewer bytes moved in total) */
    int covers = size >= excess, best_covers = best_size >= excess;
    int better = covers && best_covers   ? size < best_size
                 : covers != best_covers ? covers
                                         : size > best_size;
    if (best < 0 || cost < best_cost || (cost == best_cost && better)) {
      best = (int64_t)i;
      best_cost = cost;
      best_size = size;
    }
  }
  over_set_free(&over);
  if (best < 0) return shorten_prefetch(x, s, ahead, scratch) ? 1 : -1;
  cand_t *c = &x->cands[best];
  c->applied = 1;
  c->at = s;
  if (c->kind == NNMEM_MOVE_STREAM) x->v[c->v].streamed = 1;
  apply_to_profile(x, c, ahead, scratch, -1);
  return 1;
}

/* Halves the prefetch lead of every streamed weight (shorter windows
 * conflict with fewer buffers) and rebuilds the profile; 0 when all leads
 * are 1 already. */
int nnmem__fit_halve_leads(fitter_t *x, uint32_t ahead,
                           nnmem_interval_t *scratch) {
  int changed = 0;
  for (size_t i = 0; i < x->n_c; i++) {
    cand_t *c = &x->cands[i];
    if (c->applied && c->kind == NNMEM_MOVE_STREAM && c->ahead > 1)
      c->ahead /= 2, changed = 1;
  }
  if (!changed) return 0;
  nnmem__fit_build_profile(x);
  for (size_t i = 0; i < x->n_c; i++)
    if (x->cands[i].applied)
      apply_to_profile(x, &x->cands[i], ahead, scratch, -1);
  return 1;
}

/* The profile again from scratch: every main-tier root minus what the
 * applied moves free (after leads changed). */
void nnmem__fit_rebuild_profile(fitter_t *x, uint32_t ahead,
                                nnmem_interval_t *scratch) {
  nnmem__fit_build_profile(x);
  for (size_t i = 0; i < x->n_c; i++)
    if (x->cands[i].applied)
      apply_to_profile(x, &x->cands[i], ahead, scratch, -1);
}

/* Reverse delete: an applied move whose bytes are not needed any more
 * (later moves relieve every step it relieved) is undone, largest first.
 * Keeps the profile <= target. O(C * (C + S)). */
void nnmem__fit_prune_moves(fitter_t *x, uint64_t target, uint32_t ahead,
                            nnmem_interval_t *scratch) {
  for (;;) {
    int64_t undo = -1;
    for (size_t i = 0; i < x->n_c; i++) {
      cand_t *c = &x->cands[i];
      if (!c->applied) continue;
      if (undo >= 0 && x->v[c->v].asize <= x->v[x->cands[undo].v].asize)
        continue;
      apply_to_profile(x, c, ahead, scratch, +1);
      int fine = 1;
      for (uint64_t s = 0; s < x->S && fine; s++)
        fine = x->prof[s] <= target;
      apply_to_profile(x, c, ahead, scratch, -1);
      if (fine) undo = (int64_t)i;
    }
    if (undo < 0) return;
    cand_t *c = &x->cands[undo];
    apply_to_profile(x, c, ahead, scratch, +1);
    c->applied = 0;
    c->dead = 1; /* not again: it was redundant */
    if (c->kind == NNMEM_MOVE_STREAM) x->v[c->v].streamed = 0;
  }
}

/* fit_leads.c - how far ahead each streamed weight's copy starts (the
 * fitter's step 5b, fit.c): after the moves are chosen with short windows,
 * the prefetch leads grow where memory allows, so the copies overlap
 * compute.
 *
 * 1. Link-aware leads (ALAP): going back from the last use, each copy
 *    finishes by the start of its use and of the next copy on the one link
 *    (finish = min(T[use], start of next)); its lead is the steps back to
 *    where it must start, at most 64.
 * 2. Each lead grows towards its ALAP lead, last use first, by bisection
 *    (a longer window holds more bytes at more steps: feasibility is
 *    monotone) while every step it grows stays <= a target (the profile's
 *    peak, then 3 %, 6 %, 10 %, 15 %, 20 % below it, the first whose
 *    leads plan: fragmentation). Two rules: a copy alone, or grouped: with
 *    it, every copy of a use it passes is issued no later than it (the
 *    link serves copies in issue order, earliest deadline first within a
 *    step, so no copy waits behind one due later).
 * 2b. A third rule, link-paced (paced_leads): every window starts at lead
 *    1, then the copies in deadline order (first use first), each issued
 *    at the step during which the link finishes the copy before it (a
 *    forward replay of the link and the ops), or at the first later step
 *    whose held bytes stay <= a target (the limit, then 3 %, 6 %, ... as
 *    above, below it). Deadline order gives the memory to the copy the
 *    link serves next, and a copy that would wait for the link anyway
 *    holds nothing early: the link stays busy from the first step while
 *    memory allows (the other rules leave it idle where a late-use copy
 *    grew first and a 64-step cap stopped the early ones). Its windows may
 *    be shorter than the moves' (pace_lead replaces their lead).
 * 3. Of the rules' results the one with the least exposed time (the
 *    timeline of fit.c, step 7) is kept; a last pass moves every copy that
 *    is still issued after a copy of a later use back to that one's step,
 *    as far as the steps it grows stay <= the limit; it is kept when it
 *    plans and lowers the exposed time.
 * After on-chip placement (fit.c) the leads are chosen again with the
 * grouped and paced rules (x->skip_alone), the op times then faster and
 * the main tier emptier (the rule alone is skipped there: fit time).
 * Invariant: the profile (fitter.h) always equals the main tier's live
 * bytes under the current leads; when no rule's leads plan, the leads the
 * chosen moves fitted with stay (the fallback).
 * Complexity: per rule and target O(k log 64 * group * (S + uses)) for k
 * copies (paced: O(k log S * (S + uses))), plus one planning round.
 * Thread-safety: one fitter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "fit/fitter.h"

typedef struct alap_copy {
  uint64_t use;
  double t;
  size_t c; /* the stream move */
  uint64_t lead;
} alap_copy_t;

static int cmp_alap_desc(const void *a, const void *b) {
  const alap_copy_t *x = a, *y = b;
  return x->use < y->use ? 1 : x->use > y->use ? -1 : 0;
}

/* The step at which the copy of stream c for its use `use` is issued:
 * the first step of the window holding the use. */
static uint64_t copy_start(const fitter_t *x, const cand_t *c, uint64_t use,
                           nnmem_interval_t *w) {
  size_t n = nnmem__fit_stream_windows(x, &x->v[c->v], c->ahead, w);
  for (size_t i = 0; i < n; i++)
    if (use >= w[i].first && use < w[i].last) return w[i].first;
  return use;
}

/* Issues copy j (cp sorted by use, last first) `lead` steps ahead of its
 * use, and with it every copy of a use in between that would be issued
 * after it (so the link, which serves copies in issue order and earliest
 * deadline first within a step, never makes a copy wait behind one needed
 * later). The changed copies and their old leads go to idx[] / old[]
 * (k entries at most; undo_group restores them). Returns how many; *ok = 1
 * when the profile stays <= target. */
static size_t issue_group(fitter_t *x, const alap_copy_t *cp, size_t k,
                          size_t j, uint64_t lead, uint64_t target,
                          nnmem_interval_t *w, size_t *idx, uint64_t *old,
                          int *ok) {
  uint64_t s = cp[j].use - lead;
  size_t n = 0;
  for (size_t i = j; i < k && (i == j || cp[i].use > s); i++) {
    if (i > j && !x->group_leads) break; /* copy j alone */
    const cand_t *c = &x->cands[cp[i].c];
    uint64_t want = cp[i].use - s;
    if (copy_start(x, c, cp[i].use, w) <= s) continue;
    idx[n] = i;
    old[n++] = x->v[c->v].min_lead;
    if (want > x->v[c->v].min_lead) nnmem__fit_set_min_lead(x, c, want, w);
  }
  *ok = 1; /* the steps that grew stay <= target (others may be over:
              the target is below the peak in later rounds) */
  for (uint64_t t = 0; t < x->S && *ok; t++)
    *ok = x->prof[t] <= x->prof_before[t] || x->prof[t] <= target;
  return n;
}

static void undo_group(fitter_t *x, const alap_copy_t *cp, const size_t *idx,
                       const uint64_t *old, size_t n, nnmem_interval_t *w) {
  for (size_t q = n; q-- > 0;)
    nnmem__fit_set_min_lead(x, &x->cands[cp[idx[q]].c], old[q], w);
}

/* The longest lead in [lo, hi] with which copy j's group keeps the profile
 * <= target, lo feasible (feasibility is monotone in the lead): bisection,
 * each probe issued and undone. */
static uint64_t longest_lead(fitter_t *x, const alap_copy_t *cp, size_t k,
                             size_t j, uint64_t lo, uint64_t hi,
                             uint64_t target, nnmem_interval_t *w, size_t *idx,
                             uint64_t *old) {
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo + 1) / 2;
    int ok = 0;
    size_t n = issue_group(x, cp, k, j, mid, target, w, idx, old, &ok);
    undo_group(x, cp, idx, old, n, w);
    if (ok)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* Issue order, a last touch: going back from the last use, a copy issued
 * later than a copy of a later use (it would wait behind it on the link)
 * moves its issue step back to that one's, or as far as the steps it
 * grows stay <= target. */
static void order_leads(fitter_t *x, const alap_copy_t *cp, size_t k,
                        uint64_t target, nnmem_interval_t *w) {
  uint64_t earliest = UINT64_MAX;
  size_t idx[1];
  uint64_t old[1];
  int saved = x->group_leads;
  x->group_leads = 0;
  for (size_t j = 0; j < k; j++) {
    const cand_t *c = &x->cands[cp[j].c];
    uint64_t start = copy_start(x, c, cp[j].use, w);
    if (earliest < start) {
      memcpy(x->prof_before, x->prof, x->S * sizeof *x->prof);
      uint64_t lo = longest_lead(x, cp, k, j, cp[j].use - start,
                                 cp[j].use - earliest, target, w, idx, old);
      int ok = 0;
      if (lo > cp[j].use - start)
        (void)issue_group(x, cp, k, j, lo, target, w, idx, old, &ok);
      start = copy_start(x, c, cp[j].use, w);
    }
    if (start < earliest) earliest = start;
  }
  x->group_leads = saved;
}

/* Extends each copy's lead towards its link-aware lead, last use first,
 * with x->group_leads the copies of the uses it passes issued with it
 * (issue_group), else alone: the
 * longest lead whose group keeps the profile <= target, by bisection
 * (a longer lead holds more bytes at more steps: feasibility is monotone).
 * O(k * log 64 * group * (S + uses)). */
static nnmem_status_t extend_leads(fitter_t *x, const alap_copy_t *cp, size_t k,
                                   uint64_t target, nnmem_interval_t *w) {
  size_t *idx = malloc((k + 1) * sizeof *idx);
  uint64_t *old = malloc((k + 1) * sizeof *old);
  if (!idx || !old) {
    free(idx);
    free(old);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t j = 0; j < k; j++) {
    const cand_t *c = &x->cands[cp[j].c];
    memcpy(x->prof_before, x->prof, x->S * sizeof *x->prof);
    uint64_t cur = cp[j].use - copy_start(x, c, cp[j].use, w);
    uint64_t hi = cp[j].lead < cp[j].use ? cp[j].lead : cp[j].use;
    uint64_t lo = longest_lead(x, cp, k, j, cur, hi, target, w, idx, old);
    if (lo > cur) {
      int ok = 0;
      (void)issue_group(x, cp, k, j, lo, target, w, idx, old, &ok);
    }
  }
  free(idx);
  free(old);
  return NNMEM_OK;
}

/* Sets value c's paced lead to `lead` (never below what it has: a weight
 * used twice keeps the longer of its windows' leads); 1 when every step
 * that grew stays <= target. */
static int try_pace(fitter_t *x, const cand_t *c, uint64_t lead,
                    uint64_t target, nnmem_interval_t *w) {
  if (lead <= x->v[c->v].pace_lead) return 1;
  nnmem__fit_set_pace_lead(x, c, lead, w);
  for (uint64_t t = 0; t < x->S; t++)
    if (x->prof[t] > x->prof_before[t] && x->prof[t] > target) return 0;
  return 1;
}

/* The link-paced rule: the copies in deadline order (first use first),
 * each issued at the step during which the link finishes the one before
 * (so the link never idles while a copy could move) or, when memory is
 * short there, at the first later step whose held bytes stay <= target
 * (bisection: a shorter lead holds a subset of the steps). A forward
 * replay of the link (the copies back to back, op s begins when op s-1
 * has ended and the copies due at s are in) gives the time the link
 * frees and the time each step begins. Every window starts at lead 1, so
 * a copy that would wait for the link anyway holds no memory early.
 * Issue steps never go back (deadline order is issue order). Copies of
 * offloads are not paced (they keep their fitted steps). O(k * log S *
 * (S + uses)). */
static nnmem_status_t paced_leads(fitter_t *x, const alap_copy_t *cp,
                                  size_t k, uint64_t target,
                                  nnmem_interval_t *w) {
  double *tb = malloc((x->S + 1) * sizeof *tb);
  double *ready = calloc(x->S + 1, sizeof *ready);
  if (!tb || !ready) {
    free(tb), free(ready);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t j = 0; j < k; j++) {
    const cand_t *c = &x->cands[cp[j].c];
    x->v[c->v].min_lead = 0;
    x->v[c->v].pace_lead = 1;
  }
  nnmem__fit_rebuild_profile(x, 0, w);
  uint64_t done_to = 0, last_issue = 0; /* tb[0 .. done_to) final */
  double link_free = 0;
  tb[0] = 0;
  for (size_t j = k; j-- > 0;) { /* cp is sorted last use first */
    const cand_t *c = &x->cands[cp[j].c];
    uint64_t u = cp[j].use;
    for (; done_to < u; done_to++) { /* ops before u have all their copies */
      double t = done_to ? tb[done_to - 1] + x->op_s[done_to - 1] : 0;
      tb[done_to] = t > ready[done_to] ? t : ready[done_to];
    }
    if (u == 0) continue; /* needed before the first op: exposed anyway */
    uint64_t s = last_issue < u ? last_issue : u - 1; /* desired issue step */
    while (s + 1 < u && tb[s + 1] <= link_free)
      s++;
    memcpy(x->prof_before, x->prof, x->S * sizeof *x->prof);
    uint64_t lo = 1, hi = u - s; /* lead 1 holds nothing new */
    uint64_t have = x->v[c->v].pace_lead;
    if (!try_pace(x, c, hi, target, w)) {
      nnmem__fit_set_pace_lead(x, c, have, w);
      while (lo < hi) { /* the longest lead that stays <= target */
        uint64_t mid = lo + (hi - lo + 1) / 2;
        int ok = try_pace(x, c, mid, target, w);
        nnmem__fit_set_pace_lead(x, c, have, w);
        if (ok)
          lo = mid;
        else
          hi = mid - 1;
      }
      (void)try_pace(x, c, lo, target, w);
    }
    uint64_t issue = u - (x->v[c->v].pace_lead < u ? x->v[c->v].pace_lead : u);
    if (issue > last_issue) last_issue = issue;
    double begin = link_free > tb[issue] ? link_free : tb[issue];
    link_free = begin + cp[j].t;
    if (link_free > ready[u]) ready[u] = link_free;
  }
  free(tb);
  free(ready);
  return NNMEM_OK;
}

/* Link-aware leads: the copies in share one link, so a copy must start
 * early enough that every later one still finishes before its use. Going
 * back from the last use: finish = min(start time of its use step, start
 * of the next copy), start = finish - bytes / link; the lead is the steps
 * back to the step that begins before that start (as late as possible, so
 * no longer than the link needs). Each lead is extended only as far as
 * the profile stays under a target (the profile's peak with the leads
 * before, then 3 % below it when fragmentation keeps the tier from
 * planning); when neither plans, the leads before stay. */
nnmem_status_t nnmem__fit_alap_leads(fitter_t *x, uint32_t ahead) {
  size_t n = 0, wcap = 0;
  for (size_t i = 0; i < x->n_v; i++)
    if (x->v[i].n_acc > wcap) wcap = x->v[i].n_acc;
  for (size_t i = 0; i < x->n_c; i++)
    if (x->cands[i].applied && x->cands[i].kind == NNMEM_MOVE_STREAM)
      n += x->v[x->cands[i].v].n_acc;
  if (!n) return NNMEM_OK;
  double *T = malloc((x->S + 1) * sizeof *T);
  alap_copy_t *cp = malloc(n * sizeof *cp);
  nnmem_interval_t *w = malloc((wcap + 1) * sizeof *w);
  uint64_t *saved = malloc((x->n_v ? x->n_v : 1) * sizeof *saved);
  uint64_t *chosen = malloc((x->n_v ? x->n_v : 1) * sizeof *chosen);
  uint64_t *paced = malloc((x->n_v ? x->n_v : 1) * sizeof *paced);
  uint64_t *saved_pace = malloc((x->n_v ? x->n_v : 1) * sizeof *saved_pace);
  if (!T || !cp || !w || !saved || !chosen || !paced || !saved_pace) {
    free(T), free(cp), free(w), free(saved), free(chosen), free(paced);
    free(saved_pace);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t i = 0; i < x->n_v; i++)
    saved[i] = x->v[i].min_lead, saved_pace[i] = x->v[i].pace_lead;
  T[0] = 0;
  for (uint64_t s = 0; s < x->S; s++)
    T[s + 1] = T[s] + x->op_s[s];
  double link = x->f->dev.tiers[x->main].link_bandwidth;
  size_t k = 0;
  for (size_t i = 0; i < x->n_c; i++) {
    const cand_t *c = &x->cands[i];
    if (!c->applied || c->kind != NNMEM_MOVE_STREAM) continue;
    fv_t *v = &x->v[c->v];
    size_t nw = nnmem__fit_stream_windows(x, v, c->ahead, w);
    for (size_t j = 0; j < nw; j++) { /* the first use in each window */
      uint64_t u = w[j].last - 1;
      for (size_t a = 0; a < v->n_acc; a++)
        if (v->acc[a] >= w[j].first) {
          u = v->acc[a];
          break;
        }
      cp[k++] = (alap_copy_t){u, (double)v->size / link, i, 0};
    }
  }
  qsort(cp, k, sizeof *cp, cmp_alap_desc);
  double latest = T[x->S];
  for (size_t j = 0; j < k; j++) {
    double finish = T[cp[j].use] < latest ? T[cp[j].use] : latest;
    double start = finish - cp[j].t;
    latest = start;
    uint64_t s = cp[j].use;
    while (s > 0 && T[s] > start)
      s--;
    uint64_t lead = cp[j].use - s;
    cp[j].lead = lead > 64 ? 64 : lead;
  }
  /* the profile's peak with the leads that planned: longer leads fill
   * the valleys below it, so the tier's plan stays about as hard */
  nnmem__fit_rebuild_profile(x, ahead, w);
  uint64_t peak = 0;
  for (uint64_t s = 0; s < x->S; s++)
    if (x->prof[s] > peak) peak = x->prof[s];
  /* candidates: both extension rules, each at the largest target whose
   * leads still plan; the one with the least estimated exposed time wins
   * (op times before on-chip placement: a comparison, not the report) */
  static const double shrink[] = {1.0, 0.97, 0.94, 0.9, 0.85, 0.8};
  nnmem_status_t st = NNMEM_OK;
  double best = -1;
  for (int rule = x->skip_alone ? 1 : 0; rule < 3 && st == NNMEM_OK; rule++) {
    x->group_leads = rule == 1;
    /* paced leads may shorten windows, so they may fill up to the limit */
    uint64_t base = rule == 2 ? x->f->limit : peak;
    size_t r0 = rule == 2 && x->skip_alone && x->paced_r ? x->paced_r - 1 : 0;
    for (size_t r = r0; r < sizeof shrink / sizeof *shrink; r++) {
      for (size_t i = 0; i < x->n_v; i++)
        x->v[i].min_lead = saved[i], x->v[i].pace_lead = saved_pace[i];
      nnmem__fit_rebuild_profile(x, ahead, w);
      uint64_t target = (uint64_t)((double)base * shrink[r]);
      st = rule == 2 ? paced_leads(x, cp, k, target, w)
                     : extend_leads(x, cp, k, target, w);
      x->trial = 1;
      if (st == NNMEM_OK) st = nnmem__fit_build_round(x, ahead, w);
      x->trial = 0;
      if (st == NNMEM_ERR_CAPACITY) {
        st = NNMEM_OK;
        continue;
      }
      if (st != NNMEM_OK) break;
      if (rule == 2 && !x->skip_alone) x->paced_r = r;
      st = nnmem__fit_compute_costs(x);
      if (st != NNMEM_OK) break;
      if (best < 0 || x->f->costs.exposed_s < best) {
        best = x->f->costs.exposed_s;
        for (size_t i = 0; i < x->n_v; i++)
          chosen[i] = x->v[i].min_lead, paced[i] = x->v[i].pace_lead;
      }
      break;
    }
  }
  if (st == NNMEM_OK && best >= 0) { /* the winner in issue order */
    for (size_t i = 0; i < x->n_v; i++)
      x->v[i].min_lead = chosen[i], x->v[i].pace_lead = paced[i];
    nnmem__fit_rebuild_profile(x, ahead, w);
    order_leads(x, cp, k, x->f->limit, w);
    x->trial = 1;
    st = nnmem__fit_build_round(x, ahead, w);
    x->trial = 0;
    if (st == NNMEM_OK) st = nnmem__fit_compute_costs(x);
    if (st == NNMEM_OK && x->f->costs.exposed_s >= best)
      st = NNMEM_ERR_CAPACITY; /* no better: the winner as it was */
  } else if (st == NNMEM_OK) {
    st = NNMEM_ERR_CAPACITY;
  }
  if (st == NNMEM_ERR_CAPACITY) { /* the winner, else the leads that fitted */
    for (size_t i = 0; i < x->n_v; i++) {
      x->v[i].min_lead = best < 0 ? saved[i] : chosen[i];
      x->v[i].pace_lead = best < 0 ? saved_pace[i] : paced[i];
    }
    nnmem__fit_rebuild_profile(x, ahead, w);
    st = nnmem__fit_build_round(x, ahead, w);
  }
  free(T);
  free(cp);
  free(w);
  free(saved);
  free(chosen);
  free(paced);
  free(saved_pace);
  return st;
}

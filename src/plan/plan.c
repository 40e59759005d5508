/* plan.c - the planner front door: configs, strategy names, the plan
 * object, and `auto`.
 *
 * nnmem_plan_create:
 *   1. validate the problem (nnmem_problem_check);
 *   2. run the requested strategy; for `auto` run greedy-class,
 *      greedy-size, heap-best-fit and greedy-breadth in turn (stopping
 *      once a plan reaches the lower bound; a run that cannot beat the best
 *      plan so far gives up early; a run that overflows 64 bits is
 *      skipped) and keep the lowest plan (ties: the earlier strategy);
 *      with a time limit greedy-size runs first and to its end, and the
 *      clock is read between strategies, between orderings and every 256
 *      buffers inside the placement engine, so the limit bounds the
 *      search: the plan is the best found when it ran out
 *      (nnmem_plan_time_limited);
 *   3. compare the height with the capacity.
 * heap-best-fit itself runs the XLA heap twice, in size order and in
 * lifetime order, and keeps the lower; greedy-class runs three class
 * orderings (see order.c).
 *
 * A buffer occupies its size rounded up to max(its align, the planner's
 * alignment); the height counts those padded sizes.
 * Thread-safety: reentrant; a plan is immutable once returned. */
#include <string.h>

#include "common/util.h"
#include "nnmem/plan.h"
#include "plan/place.h"
#include "plan/search.h"

/* The bound is computed for plans of up to this many buffers when no
 * search ran (an O(n log n) sweep a million-buffer plan need not pay). */
#define BOUND_MAX_BUFFERS 200000u
#include "plan/roots.h"

struct nnmem_plan {
  size_t n;
  uint64_t *offsets;
  uint64_t height;
  uint64_t alignment; /* max(config alignment, every buffer's align) */
  nnmem_strategy_t strategy;
  double seconds;
  int time_limited;    /* the time limit cut the search */
  unsigned strategies; /* strategies that ran (not cut, not overflowed) */
  nnmem_plan_status_t status;
  uint64_t bound; /* proven lower bound; 0 = not computed */
  nnmem_bound_kind_t bound_kind;
  uint64_t nodes; /* search nodes spent */
  int stopped;    /* what ended the search: 1 stop flag, 2 clock, 3 nodes */
};

static const char *const status_names[] = {"feasible", "optimal", "infeasible",
                                           "unknown"};

const char *nnmem_plan_status_name(nnmem_plan_status_t s) {
  return (unsigned)s < 4 ? status_names[s] : "invalid";
}

const char *nnmem_bound_kind_name(nnmem_bound_kind_t k) {
  return k == NNMEM_BOUND_MAX_LIVE ? "max-live"
         : k == NNMEM_BOUND_SEARCH ? "search"
                                   : "invalid";
}

static const char *const strategy_names[NNMEM_STRATEGY_COUNT_] = {
    "auto",           "naive",         "greedy-size",
    "greedy-breadth", "heap-best-fit", "greedy-class"};

const char *nnmem_strategy_name(nnmem_strategy_t s) {
  if (s == NNMEM_STRATEGY_COUNT_) return "external"; /* from_offsets */
  return (unsigned)s < NNMEM_STRATEGY_COUNT_ ? strategy_names[s] : "unknown";
}

nnmem_status_t nnmem_strategy_parse(const char *name, nnmem_strategy_t *out) {
  if (!name || !out) return NNMEM_ERR_INVALID;
  for (int i = 0; i < NNMEM_STRATEGY_COUNT_; i++)
    if (strcmp(name, strategy_names[i]) == 0) {
      *out = (nnmem_strategy_t)i;
      return NNMEM_OK;
    }
  return NNMEM_ERR_NOT_FOUND;
}

void nnmem_planner_config_init(nnmem_planner_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->size = sizeof *cfg;
}

static nnmem_status_t plan_alloc(size_t n, nnmem_plan_t **out) {
  nnmem_plan_t *pl = calloc(1, sizeof *pl);
  if (!pl) return NNMEM_ERR_NOMEM;
  pl->n = n;
  pl->offsets = calloc(n ? n : 1, sizeof *pl->offsets);
  if (!pl->offsets) {
    free(pl);
    return NNMEM_ERR_NOMEM;
  }
  *out = pl;
  return NNMEM_OK;
}

void nnmem_plan_destroy(nnmem_plan_t *plan) {
  if (!plan) return;
  free(plan->offsets);
  free(plan);
}

size_t nnmem_plan_count(const nnmem_plan_t *pl) {
  return pl ? pl->n : 0;
}
const uint64_t *nnmem_plan_offsets(const nnmem_plan_t *pl) {
  return pl ? pl->offsets : NULL;
}
uint64_t nnmem_plan_height(const nnmem_plan_t *pl) {
  return pl ? pl->height : 0;
}
nnmem_strategy_t nnmem_plan_strategy(const nnmem_plan_t *pl) {
  return pl ? pl->strategy : NNMEM_STRATEGY_AUTO;
}
double nnmem_plan_seconds(const nnmem_plan_t *pl) {
  return pl ? pl->seconds : 0;
}
int nnmem_plan_time_limited(const nnmem_plan_t *pl) {
  return pl ? pl->time_limited : 0;
}
unsigned nnmem_plan_strategies_run(const nnmem_plan_t *pl) {
  return pl ? pl->strategies : 0;
}
nnmem_plan_status_t nnmem_plan_status(const nnmem_plan_t *pl) {
  return pl ? pl->status : NNMEM_PLAN_FEASIBLE;
}
uint64_t nnmem_plan_bound(const nnmem_plan_t *pl) {
  return pl ? pl->bound : 0;
}
nnmem_bound_kind_t nnmem_plan_bound_kind(const nnmem_plan_t *pl) {
  return pl ? pl->bound_kind : NNMEM_BOUND_MAX_LIVE;
}
uint64_t nnmem_plan_search_nodes(const nnmem_plan_t *pl) {
  return pl ? pl->nodes : 0;
}
uint64_t nnmem_plan_alignment(const nnmem_plan_t *pl) {
  return pl ? pl->alignment : 1;
}

/* The largest alignment any offset of a plan of `p` relies on. */
static uint64_t plan_alignment(const nnmem_problem_t *p, uint64_t align) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  for (size_t i = 0; i < nnmem_problem_count(p); i++)
    align = nnmem__max_u64(align, b[i].align);
  return align;
}

static nnmem_status_t plan_naive(const nnmem_problem_t *p, uint64_t align,
                                 nnmem__place_ctl_t *ctl, uint64_t *off,
                                 uint64_t *height) {
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  uint64_t top = 0, size;
  for (size_t i = 0; i < nnmem_problem_count(p); i++)
    if (nnmem__padded_size_checked(&b[i], align, &size) ||
        nnmem__align_up(top, nnmem__max_u64(b[i].align, align), &off[i]) ||
        nnmem__add_overflow(off[i], size, &top)) {
      ctl->overflow_buf = i;
      return NNMEM_ERR_OVERFLOW;
    }
  *height = top;
  return NNMEM_OK;
}

/* Runs the engine once per ordering in `orders` and keeps the lowest plan
 * whose height is at most `limit`. *found says whether any ordering
 * produced one (then `off` and *height hold it); a flag rather than a
 * sentinel height, since every height up to 2^64 - 1 is a real one. An
 * ordering that overflows 64 bits is skipped; NNMEM_ERR_OVERFLOW only when
 * every ordering overflowed (ctl names the buffer). The deadline cuts the
 * orderings (between them and inside the engine), except, when
 * ctl->finish_first, those run before one produced a plan: they complete,
 * in the engine's fast mode past the deadline. NNMEM_ERR_TIMEOUT when the
 * deadline cut before any plan. */
static nnmem_status_t plan_orders(const nnmem_problem_t *p, uint64_t align,
                                  const nnmem__order_t *orders, size_t n_orders,
                                  uint64_t limit, nnmem__place_ctl_t *ctl,
                                  uint64_t *off, uint64_t *height, int *found) {
  size_t n = nnmem_problem_count(p), m = n ? n : 1;
  uint32_t *order = malloc(m * sizeof *order);
  uint64_t *tmp = malloc(m * sizeof *tmp);
  nnmem_status_t st = order && tmp ? NNMEM_OK : NNMEM_ERR_NOMEM;
  size_t overflowed = 0;
  double deadline = ctl->deadline;
  int cut = 0; /* orderings skipped or stopped here */
  *found = 0;
  for (size_t f = 0; f < n_orders && st == NNMEM_OK; f++) {
    if (*found && *height == 0) break; /* nothing beats an empty plan */
    uint64_t h = 0, lim = *found && *height - 1 < limit ? *height - 1 : limit;
    /* until this strategy has a plan (an ordering may overflow), finish */
    ctl->must_finish = !*found && ctl->finish_first; /* the engine reads it */
    if (!ctl->must_finish && deadline > 0 && nnmem__now() > deadline) {
      cut = 1;
      break;
    }
    st = nnmem__order(p, align, orders[f], order);
    if (st == NNMEM_OK)
      st = nnmem__place_split(p, order, align, NNMEM__FIT_BEST, lim, ctl, tmp,
                              &h);
    if (st == NNMEM_ERR_TIMEOUT) {
      cut = 1;
      st = NNMEM_OK;
      break;
    }
    if (st == NNMEM_ERR_CAPACITY || st == NNMEM_ERR_OVERFLOW) {
      overflowed += st == NNMEM_ERR_OVERFLOW; /* skipped: see ctl */
      st = NNMEM_OK; /* gave up: above lim, or past 2^64 - 1 */
      continue;
    }
    if (st == NNMEM_OK) { /* h <= lim: better than what we had */
      *height = h;
      *found = 1;
      memcpy(off, tmp, n * sizeof *off);
    }
  }
  free(order);
  free(tmp);
  if (cut) ctl->cut = 1;
  if (st == NNMEM_OK && overflowed == n_orders) st = NNMEM_ERR_OVERFLOW;
  if (st == NNMEM_OK && cut && !*found) st = NNMEM_ERR_TIMEOUT;
  return st;
}

/* Runs strategy `s` (not auto); see plan_orders for `limit` and `found`. */
static nnmem_status_t run_strategy(const nnmem_problem_t *p, nnmem_strategy_t s,
                                   uint64_t align, uint64_t limit,
                                   nnmem__place_ctl_t *ctl, uint64_t *off,
                                   uint64_t *height, int *found) {
  static const nnmem__order_t size_orders[] = {NNMEM__ORDER_SIZE_FIRST};
  static const nnmem__order_t heap_orders[] = {NNMEM__ORDER_SIZE_LIFE,
                                               NNMEM__ORDER_LIFE_SIZE};
  static const nnmem__order_t breadth_orders[] = {NNMEM__ORDER_BREADTH};
  static const nnmem__order_t class_orders[] = {NNMEM__ORDER_CLASS4_LIFE,
                                                NNMEM__ORDER_CLASS4_FIRST,
                                                NNMEM__ORDER_CLASS2_FIRST};
#define RUN_(orders)                                                        \
  plan_orders(p, align, orders, sizeof orders / sizeof *orders, limit, ctl, \
              off, height, found)
  switch (s) {
    case NNMEM_STRATEGY_NAIVE:
      *found = 1;
      return plan_naive(p, align, ctl, off, height);
    case NNMEM_STRATEGY_GREEDY_SIZE:
      return RUN_(size_orders);
    case NNMEM_STRATEGY_HEAP_BEST_FIT:
      return RUN_(heap_orders);
    case NNMEM_STRATEGY_GREEDY_BREADTH:
      return RUN_(breadth_orders);
    case NNMEM_STRATEGY_GREEDY_CLASS:
      return RUN_(class_orders);
    default:
      return NNMEM_ERR_INVALID;
  }
#undef RUN_
}

/* auto on a huge problem (NNMEM__AUTO_HUGE buffers or more, no
 * deadline): one ordering, greedy-class by powers of 2, which gave the
 * lowest plans of all orderings on the large inputs measured (bench/plan:
 * 1,000,000 random buffers, 1.043 x the bound against 1.05-1.12 for the
 * others), placed in time parts in parallel (split.c). Running every
 * ordering would take minutes there; a user who wants them names the
 * strategy. */
static nnmem_status_t run_huge(const nnmem_problem_t *p, uint64_t align,
                               nnmem__place_ctl_t *ctl, nnmem_plan_t *pl) {
  static const nnmem__order_t huge_orders[] = {NNMEM__ORDER_CLASS2_FIRST};
  int found = 0;
  nnmem_status_t st = plan_orders(p, align, huge_orders, 1, UINT64_MAX, ctl,
                                  pl->offsets, &pl->height, &found);
  if (st == NNMEM_OK && found) {
    pl->strategy = NNMEM_STRATEGY_GREEDY_CLASS;
    pl->strategies = 1;
  }
  return st;
}

/* auto: the heuristics in turn, keeping the lowest plan. Each later run
 * gives up as soon as it cannot beat the best plan so far, and the loop
 * ends at the lower bound or at the deadline. With a deadline the fastest
 * strategy (greedy-size, one ordering) runs first and always to its end;
 * the others are cut by the deadline. A strategy that overflows 64 bits is
 * skipped; NNMEM_ERR_OVERFLOW only when all of them did. */
static nnmem_status_t run_auto(const nnmem_problem_t *p, uint64_t align,
                               nnmem__place_ctl_t *ctl, nnmem_plan_t *pl) {
  static const nnmem_strategy_t tries[] = {
      NNMEM_STRATEGY_GREEDY_CLASS, NNMEM_STRATEGY_GREEDY_SIZE,
      NNMEM_STRATEGY_HEAP_BEST_FIT, NNMEM_STRATEGY_GREEDY_BREADTH};
  static const nnmem_strategy_t timed[] = {
      NNMEM_STRATEGY_GREEDY_SIZE, NNMEM_STRATEGY_GREEDY_CLASS,
      NNMEM_STRATEGY_HEAP_BEST_FIT, NNMEM_STRATEGY_GREEDY_BREADTH};
  if (pl->n >= NNMEM__AUTO_HUGE && ctl->deadline <= 0)
    return run_huge(p, align, ctl, pl);
  const nnmem_strategy_t *order = ctl->deadline > 0 ? timed : tries;
  /* the lower bound ends the search early; with a deadline it is computed
   * only after the first plan, and only while time is left (an O(n log n)
   * sort the first strategy may not afford). A sum past 2^64 - 1 leaves
   * lb = 0: no early stop, still correct. */
  uint64_t lb = 0;
  int lb_known = ctl->deadline <= 0;
  if (lb_known) (void)nnmem_problem_lower_bound(p, align, &lb);
  uint64_t *tmp = malloc((pl->n ? pl->n : 1) * sizeof *tmp);
  if (!tmp) return NNMEM_ERR_NOMEM;
  int have = 0, overflowed = 0;
  nnmem_status_t st = NNMEM_OK;
  for (size_t i = 0; i < sizeof tries / sizeof *tries && st == NNMEM_OK; i++) {
    uint64_t h = 0;
    int found = 0;
    if (have && ctl->deadline > 0 && nnmem__now() > ctl->deadline) {
      ctl->cut = 1; /* the rest are not even started */
      break;
    }
    ctl->finish_first = !have; /* until one plan exists, finish it */
    st = run_strategy(p, order[i], align, have ? pl->height - 1 : UINT64_MAX,
                      ctl, tmp, &h, &found);
    if (st == NNMEM_ERR_OVERFLOW || st == NNMEM_ERR_TIMEOUT) {
      overflowed |= st == NNMEM_ERR_OVERFLOW; /* skipped; ctl says why */
      st = NNMEM_OK;
      continue;
    }
    if (st == NNMEM_OK) pl->strategies++;
    if (st == NNMEM_OK && found) { /* strictly below the best so far */
      pl->height = h;
      pl->strategy = order[i];
      have = 1;
      memcpy(pl->offsets, tmp, pl->n * sizeof *tmp);
    }
    if (have && !lb_known && nnmem__now() <= ctl->deadline) {
      (void)nnmem_problem_lower_bound(p, align, &lb);
      lb_known = 1;
    }
    if (have && lb_known && pl->height <= lb) break;
  }
  free(tmp);
  if (st == NNMEM_OK && !have)
    st = overflowed ? NNMEM_ERR_OVERFLOW : NNMEM_ERR_TIMEOUT;
  return st;
}

/* Names the buffer that no strategy could place below 2^64. */
static void overflow_diag(const nnmem_problem_t *p, uint64_t align,
                          const nnmem__place_ctl_t *ctl, nnmem_diag_t *diag) {
  size_t i = ctl->overflow_buf;
  const nnmem_buffer_t *b = nnmem_problem_buffers(p) + i;
  const char *id = nnmem_problem_id(p, i);
  nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
              "plan height overflows 64 bits: buffer %zu '%s' (size %llu, "
              "alignment %llu) does not fit below 2^64 in any strategy tried",
              i, id ? id : "", (unsigned long long)b->size,
              (unsigned long long)nnmem__max_u64(b->align, align));
}

/* A capacity below the live bytes of one step (or below the aligned
 * max-live bound) fails at once, before any strategy runs. */
static nnmem_status_t capacity_precheck(const nnmem_problem_t *p,
                                        uint64_t align, uint64_t capacity,
                                        nnmem_diag_t *diag) {
  uint64_t bound = 0, step = 0, bytes = 0;
  nnmem_status_t st = nnmem__search_bound(p, align, &bound, &step, &bytes);
  if (st == NNMEM_ERR_OVERFLOW || (st == NNMEM_OK && capacity < bytes))
    return nnmem__diag(diag, NNMEM_ERR_CAPACITY,
                       "does not fit: infeasible: step %llu alone needs %s%llu "
                       "bytes > capacity %llu",
                       (unsigned long long)step, st ? "over " : "",
                       (unsigned long long)(st ? UINT64_MAX : bytes),
                       (unsigned long long)capacity);
  if (st == NNMEM_OK && capacity < bound)
    return nnmem__diag(diag, NNMEM_ERR_CAPACITY,
                       "does not fit: infeasible: step %llu needs %llu bytes, "
                       "and with the alignment "
                       "every plan is at least %llu bytes > capacity %llu",
                       (unsigned long long)step, (unsigned long long)bytes,
                       (unsigned long long)bound, (unsigned long long)capacity);
  return st;
}

/* Whether the search runs after the heuristics (see plan.h). */
static int search_wanted(const nnmem_planner_config_t *c, nnmem_strategy_t s,
                         const nnmem_plan_t *pl) {
  if (s == NNMEM_STRATEGY_NAIVE) return 0;
  if (!c->optimal && !(c->capacity && pl->height > c->capacity)) return 0;
  return c->optimal || c->node_budget ||
         pl->n <= NNMEM_SEARCH_DEFAULT_MAX_BUFFERS;
}

/* Runs the search on the heuristic plan in `pl` and records what it
 * proved; without a search, the max-live bound (small plans). */
static nnmem_status_t run_search(const nnmem_problem_t *p, uint64_t align,
                                 const nnmem_planner_config_t *c,
                                 nnmem_strategy_t s, double t0,
                                 nnmem_plan_t *pl) {
  if (!search_wanted(c, s, pl)) {
    uint64_t step, bytes;
    if (pl->n <= BOUND_MAX_BUFFERS &&
        nnmem__search_bound(p, align, &pl->bound, &step, &bytes) == NNMEM_OK &&
        pl->height <= pl->bound)
      pl->status = NNMEM_PLAN_OPTIMAL;
    return NNMEM_OK;
  }
  nnmem__search_ctl_t ctl = {0};
  ctl.t0 = t0;
  ctl.deadline = c->time_limit_s > 0 ? t0 + c->time_limit_s : 0;
  ctl.stop = c->stop;
  ctl.node_budget =
      c->node_budget ? c->node_budget : NNMEM_SEARCH_DEFAULT_NODES;
  ctl.progress = c->progress;
  ctl.progress_ctx = c->progress_ctx;
  nnmem__search_out_t out;
  nnmem_status_t st = nnmem__search_improve(
      p, align, c->capacity, c->optimal, &ctl, pl->offsets, &pl->height, &out);
  pl->status = out.status;
  pl->bound = out.bound;
  pl->bound_kind = out.bound_kind;
  pl->nodes = ctl.nodes;
  if (ctl.stopped) pl->time_limited = 1;
  pl->stopped = ctl.stopped;
  return st;
}

/* The message of a plan over the capacity, by what the search found. */
static nnmem_status_t capacity_diag(const nnmem_plan_t *pl, uint64_t capacity,
                                    int searched, nnmem_diag_t *diag) {
  unsigned long long h = pl->height, cap = capacity, lb = pl->bound;
  const char *s = nnmem_strategy_name(pl->strategy);
  if (pl->status == NNMEM_PLAN_INFEASIBLE)
    return nnmem__diag(diag, NNMEM_ERR_CAPACITY,
                       "does not fit: proven infeasible: no plan fits "
                       "capacity %llu (search: lower bound %llu); best "
                       "height %llu",
                       cap, lb, h);
  if (pl->status == NNMEM_PLAN_UNKNOWN)
    return nnmem__diag(diag, NNMEM_ERR_CAPACITY,
                       "does not fit: no plan found within the %s: best "
                       "height %llu > capacity %llu, lower bound %llu "
                       "(not proven infeasible)",
                       pl->stopped == 1   ? "search (interrupted)"
                       : pl->stopped == 3 ? "search budget (--node-budget)"
                       : pl->stopped == 2
                           ? "time limit"
                           : "search (too many overlapping buffers to search)",
                       h, cap, lb);
  return nnmem__diag(diag, NNMEM_ERR_CAPACITY,
                     "does not fit: best height %llu > capacity %llu "
                     "(strategy %s%s)",
                     h, cap, s,
                     searched ? ""
                              : "; search skipped: too many "
                                "buffers, see --optimal");
}

/* Plans the root problem of `p` (roots.c), lowers roots into gaps, and
 * derives every child's offset; the plan's height counts the roots
 * (children lie inside them). */
static nnmem_status_t plan_through_roots(const nnmem_problem_t *p,
                                         const nnmem_planner_config_t *c,
                                         nnmem_plan_t **out,
                                         nnmem_diag_t *diag) {
  nnmem_problem_t *roots = NULL;
  uint32_t *map = NULL;
  nnmem_plan_t *rp = NULL, *pl = NULL;
  double t0 = nnmem__now();
  nnmem_planner_config_t rc = *c;
  if (nnmem_problem_gapped_count(p)) rc.capacity = 0; /* checked after gaps */
  nnmem_status_t st = nnmem__roots_build(p, &roots, &map);
  if (st == NNMEM_OK) st = nnmem_plan_create(roots, &rc, &rp, diag);
  uint64_t align = c->alignment ? c->alignment : 1, h = rp ? rp->height : 0;
  /* the gap pass is skipped once the time limit is spent: the hull plan
   * stands (valid, possibly higher) */
  int time_left = c->time_limit_s <= 0 || (rp && rp->seconds < c->time_limit_s);
  if (st == NNMEM_OK && time_left)
    st = nnmem__roots_lower(p, roots, map, align, rp->offsets, &h);
  if (st == NNMEM_OK && !time_left && nnmem_problem_gapped_count(p))
    rp->time_limited = 1;
  if (st == NNMEM_OK && c->capacity && h > c->capacity)
    st = nnmem__diag(diag, NNMEM_ERR_CAPACITY,
                     "does not fit: best height %llu > capacity %llu "
                     "(strategy %s)",
                     (unsigned long long)h, (unsigned long long)c->capacity,
                     nnmem_strategy_name(rp->strategy));
  if (st == NNMEM_OK) st = plan_alloc(nnmem_problem_count(p), &pl);
  if (st == NNMEM_OK)
    st = nnmem__roots_expand(p, map, rp->offsets, pl->offsets);
  if (st == NNMEM_OK) {
    pl->height = h;
    pl->alignment = nnmem__max_u64(rp->alignment, plan_alignment(p, 1));
    pl->strategy = rp->strategy;
    pl->seconds = nnmem__now() - t0; /* the gap pass included */
    pl->time_limited = rp->time_limited;
    pl->strategies = rp->strategies;
    *out = pl;
    pl = NULL;
  } else if (st == NNMEM_ERR_NOMEM || st == NNMEM_ERR_OVERFLOW) {
    nnmem__diag(diag, st, "planning failed: %s", nnmem_status_str(st));
  }
  nnmem_plan_destroy(pl);
  nnmem_plan_destroy(rp);
  nnmem_problem_destroy(roots);
  free(map);
  return st;
}

nnmem_status_t nnmem_plan_create(const nnmem_problem_t *problem,
                                 const nnmem_planner_config_t *cfg,
                                 nnmem_plan_t **out, nnmem_diag_t *diag) {
  if (!problem || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "problem or out is NULL");
  *out = NULL;
  nnmem_planner_config_t c;
  nnmem_planner_config_init(&c);
  if (cfg) { /* a caller built against an older, smaller layout: read only
                the fields it has (size 0 = the current layout) */
    size_t n = cfg->size && cfg->size < sizeof c ? cfg->size : sizeof c;
    memcpy(&c, cfg, n);
    c.size = sizeof c;
  }
  uint64_t align = c.alignment ? c.alignment : 1;
  if (!nnmem__is_pow2(align))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "alignment %llu is not a power of two",
                       (unsigned long long)align);
  if ((unsigned)c.strategy >= NNMEM_STRATEGY_COUNT_)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "unknown strategy %d",
                       (int)c.strategy);
  nnmem_status_t st = nnmem_problem_check(problem, diag);
  if (st) return st;
  if (c.status_out) *c.status_out = NNMEM_PLAN_FEASIBLE;
  if (c.capacity && !c.no_reuse &&
      (st = capacity_precheck(problem, align, c.capacity, diag))) {
    if (c.status_out && st == NNMEM_ERR_CAPACITY)
      *c.status_out = NNMEM_PLAN_INFEASIBLE;
    return st;
  }
  if (nnmem__roots_needed(problem)) /* gaps or sub-buffers: see roots.c */
    return plan_through_roots(problem, &c, out, diag);
  nnmem_plan_t *pl = NULL;
  if ((st = plan_alloc(nnmem_problem_count(problem), &pl))) return st;
  double t0 = nnmem__now();
  pl->alignment = plan_alignment(problem, align);
  nnmem_strategy_t s = c.no_reuse ? NNMEM_STRATEGY_NAIVE : c.strategy;
  pl->strategy = s;
  nnmem__place_ctl_t ctl = {0};
  ctl.deadline = c.time_limit_s > 0 ? t0 + c.time_limit_s : 0;
  ctl.finish_first = 1;
  if (s == NNMEM_STRATEGY_AUTO)
    st = run_auto(problem, align, &ctl, pl);
  else {
    int found = 0; /* always 1 on success: no limit, first ordering whole */
    st = run_strategy(problem, s, align, UINT64_MAX, &ctl, pl->offsets,
                      &pl->height, &found);
    pl->strategies = st == NNMEM_OK;
  }
  pl->time_limited = ctl.cut;
  int searched = 0;
  if (st == NNMEM_OK) {
    searched = search_wanted(&c, s, pl);
    st = run_search(problem, align, &c, s, t0, pl);
  }
  pl->seconds = nnmem__now() - t0;
  if (c.status_out) *c.status_out = pl->status;
  if (st == NNMEM_OK && c.capacity && pl->height > c.capacity) {
    if (pl->status != NNMEM_PLAN_INFEASIBLE) pl->status = NNMEM_PLAN_UNKNOWN;
    if (c.status_out) *c.status_out = pl->status;
    st = capacity_diag(pl, c.capacity, searched, diag);
  } else if (st == NNMEM_ERR_OVERFLOW)
    overflow_diag(problem, align, &ctl, diag);
  else if (st)
    nnmem__diag(diag, st, "planning failed: %s", nnmem_status_str(st));
  if (st) {
    nnmem_plan_destroy(pl);
    return st;
  }
  *out = pl;
  return NNMEM_OK;
}

nnmem_status_t nnmem_plan_from_offsets(const nnmem_problem_t *problem,
                                       const uint64_t *offsets,
                                       nnmem_plan_t **out) {
  if (!problem || !offsets || !out) return NNMEM_ERR_INVALID;
  nnmem_plan_t *pl = NULL;
  size_t n = nnmem_problem_count(problem);
  nnmem_status_t st = plan_alloc(n, &pl);
  if (st) return st;
  const nnmem_buffer_t *b = nnmem_problem_buffers(problem);
  for (size_t i = 0; i < n; i++) {
    uint64_t end, size;
    pl->offsets[i] = offsets[i];
    if (nnmem__padded_size_checked(&b[i], 1, &size) ||
        nnmem__add_overflow(offsets[i], size, &end)) {
      nnmem_plan_destroy(pl);
      return NNMEM_ERR_OVERFLOW;
    }
    if (end > pl->height) pl->height = end;
  }
  pl->strategy = NNMEM_STRATEGY_COUNT_; /* external */
  pl->alignment = plan_alignment(problem, 1);
  *out = pl;
  return NNMEM_OK;
}

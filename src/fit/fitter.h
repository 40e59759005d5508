/* fitter.h - the fitter's working state, shared by fit.c (values, tiers,
 * costs, the driver), fit_moves.c (step 5: choosing streams and offloads)
 * and baseline.c (the access trace). Not installed; see fit.c for the
 * algorithm. */
#ifndef NNMEM_FITTER_H
#define NNMEM_FITTER_H

#include <stdlib.h>

#include "fit/fit_internal.h"

typedef struct fv {
  const char *id;
  char *own_id;
  uint64_t size, asize, align, first, last;
  int kind;
  int64_t parent; /* value index or -1 */
  uint64_t rel;
  int has_children, has_gaps, io;
  int is_part; /* an output part of a split op (fit_split.c): a child of
                  its output's buffer, live at its part's step (an access
                  of the parent), in the parent's tier; not counted in
                  has_children (the parent may still be offloaded or sit
                  on chip) */
  uint64_t *acc;
  size_t n_acc, cap_acc;
  uint32_t tier;
  int streamed;
  /* device lifetime gaps (offloads / stream windows) */
  nnmem_interval_t *gaps;
  size_t n_gaps;
  size_t tbuf; /* buffer index in its tier */
  size_t hbuf; /* streamed weights: the host tier buffer */
  uint64_t orig_first, orig_last;
  uint64_t min_lead; /* streamed: copies start at least this many steps
                        ahead (link-aware leads, fit.c); 0 = none */
  uint32_t n_slices; /* weights: the first slice holds the slice count of
                        its weight (slices follow it in x->v), 0 on the
                        others (weight_values, fit.c) */
  uint64_t pace_lead; /* streamed: when nonzero, the lead of every window
                         instead of the fewest steps hiding the copy (the
                         link-paced rule, fit_leads.c); min_lead still
                         applies on top */
} fv_t;

typedef struct cand {
  uint32_t v;
  int kind;            /* NNMEM_MOVE_ */
  uint64_t a, c, d, k; /* offload: accesses a < c, out delay d, in lead k */
  uint64_t at;         /* the peak step it relieved */
  uint32_t ahead;      /* stream: most steps a copy starts ahead */
  int first_op;        /* stream: the weight is read by the first op, so
                          its copy is exposed whatever the leads (counted
                          twice in the move's cost, fit_moves.c) */
  int applied, dead;
} cand_t;

typedef struct fitter {
  const nnmem_graph_t *g;
  const nnmem_fit_config_t *cfg;
  nnmem_fit_t *f;
  nnmem_liveness_t *live;
  fv_t *v;
  size_t n_v, cap_v;
  double *op_s;     /* compute time of step s */
  double *win_s;    /* op times the stream windows and offload delays are
                       measured with: op_s before on-chip placement (the
                       moves were chosen with them), op_s itself until
                       then */
  double *op_flops; /* FLOPs of step s */
  double *op_bytes; /* bytes its operands move (cost model) */
  double *op_extra; /* launch overhead of the weight slices of step s */
  uint64_t slice_bytes; /* weights above this are sliced (0: never; the
                           baselines keep whole tensors) */
  /* operator splitting (fit_split.c): op step o runs as the steps
   * base[o] .. base[o + 1] - 1 (its parts); S = base[n_ops] */
  uint64_t n_ops;     /* ops in the order (liveness steps) */
  uint64_t *base;     /* n_ops + 1 entries */
  int64_t *split_w;   /* per op step: the weight tensor whose slices its
                         parts read, -1 when the op is whole */
  int64_t *part_v;    /* per op step: the value of its output's first part
                         (FIT_SPLIT_PARTS), -1 otherwise */
  uint64_t *prof;   /* main-tier live bytes per step */
  uint64_t *prof_before; /* alap_leads: prof before a tried extension */
  cand_t *cands;
  size_t n_c, cap_c;
  uint32_t main;
  uint64_t S;
  int group_leads; /* alap_leads: extend a lead with the copies it passes */
  int trial;       /* alap_leads: a trial round (a smaller search budget) */
  int skip_alone;  /* alap_leads: the grouped and link-paced rules only
                      (leads chosen again after on-chip placement) */
  size_t paced_r;  /* alap_leads: the first target of the paced rule that
                      planned; where the leads are chosen again they start
                      one target above it (a target that fails costs a
                      full search: light_shufflenet at 25 % fitted in 2.0 s
                      CPU trying them all again, 0.6 s so) */
  nnmem_diag_t *diag;
} fitter_t;

typedef struct step_root {
  uint64_t step;
  int64_t root;
} step_root_t;

/* fit_values.c */
/* The slice size of cfg under `limit` (0: weights stay whole). */
uint64_t nnmem__fit_slice_bytes(const nnmem_fit_config_t *cfg,
                                uint64_t limit);
/* The value of tensor t: its liveness buffer, or its weight's (first
 * slice); -1 when none. */
int64_t nnmem__fit_value_of(const fitter_t *x, const int64_t *wval,
                            uint32_t t);

/* fit_split.c */
/* The slice count of weight tensor `ti` (1: held whole). */
uint64_t nnmem__fit_slice_count(const fitter_t *x,
                                const nnmem_tensor_info_t *ti);
/* Decides which ops run in parts, fills x->base, x->split_w, x->f->step
 * and x->f->ops, and sizes the per-step arrays for the new step count. */
nnmem_status_t nnmem__fit_split_ops(fitter_t *x);
/* The output parts of split ops (FIT_SPLIT_PARTS): sub-buffers of the
 * output's buffer, one per part (x->part_v). */
nnmem_status_t nnmem__fit_part_values(fitter_t *x);
/* cfg as the current struct (fields a caller built before: defaults). */
void nnmem__fit_config_copy(nnmem_fit_config_t *dst,
                            const nnmem_fit_config_t *cfg);
/* Whether fits with cfg split ops (splitting on and slices on). */
int nnmem__fit_splits_on(const nnmem_fit_config_t *cfg);
/* The first step of op step o (o itself before splitting is decided). */
static inline uint64_t nnmem__fit_step_of(const fitter_t *x, uint64_t o) {
  return x->base ? x->base[o] : o;
}

/* fit.c */
int64_t nnmem__fit_root_of(const fitter_t *x, int64_t i);
int nnmem__fit_cmp_step_root(const void *a, const void *b);
nnmem_status_t nnmem__fit_setup(fitter_t *x, const nnmem_fit_config_t *cfg);
/* fit_values.c: steps 2 (values and accesses); wval[t] per tensor */
nnmem_status_t nnmem__fit_values(fitter_t *x, int64_t **wval_out);
nnmem_status_t nnmem__fit_op_time_check(fitter_t *x, uint64_t s);
void nnmem__fitter_free(fitter_t *x);

nnmem_status_t nnmem__fit_build_round(fitter_t *x, uint32_t ahead,
                                      nnmem_interval_t *scratch);
nnmem_status_t nnmem__fit_compute_costs(fitter_t *x);
nnmem_status_t nnmem__fit_link_idle(fitter_t *x, uint8_t *idle);

/* fit_leads.c */
nnmem_status_t nnmem__fit_alap_leads(fitter_t *x, uint32_t ahead);

/* fit_moves.c */
nnmem_status_t nnmem__fit_make_cands(fitter_t *x, uint32_t max_ahead);
size_t nnmem__fit_stream_windows(const fitter_t *x, const fv_t *v,
                                 uint32_t ahead, nnmem_interval_t *w);
void nnmem__fit_set_min_lead(fitter_t *x, const cand_t *c, uint64_t lead,
                             nnmem_interval_t *scratch);
void nnmem__fit_set_pace_lead(fitter_t *x, const cand_t *c, uint64_t lead,
                              nnmem_interval_t *scratch);
void nnmem__fit_build_profile(fitter_t *x);
int nnmem__fit_relieve_peak(fitter_t *x, uint64_t target, uint32_t ahead,
                            nnmem_interval_t *scratch);
int nnmem__fit_halve_leads(fitter_t *x, uint32_t ahead,
                           nnmem_interval_t *scratch);
void nnmem__fit_rebuild_profile(fitter_t *x, uint32_t ahead,
                                nnmem_interval_t *scratch);
void nnmem__fit_prune_moves(fitter_t *x, uint64_t target, uint32_t ahead,
                            nnmem_interval_t *scratch);

#endif

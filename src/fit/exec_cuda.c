/* exec_cuda.c - the executor on a GPU (nnmem_exec_run with cfg->cuda):
 * tensors in device memory at their planned offsets, one check kernel and
 * one write kernel per op (src/fit/exec_kernels.cu), weight streaming and
 * offload copies on their own streams ordered by events per the plan's
 * transfer schedule, and the measured exposed transfer time against the
 * cost model's.
 *
 * NOT YET RUN ON A REAL GPU: tested over the stand-in driver
 * (tests/fakes/fake_cuda.c), which runs C versions of the kernels and keeps
 * a virtual clock per stream; scripts/gpu-check.sh is the first real run.
 *
 * Memory: one cuMemAlloc region per device tier (the tier's plan height),
 * the host tier in pinned memory (cuMemHostAlloc), so copies are truly
 * asynchronous; one more region holds every kernel's segment table and the
 * error record. Before allocating, the tiers are compared with
 * cuMemGetInfo: NNMEM_ERR_NOMEM names the device's free and total bytes.
 *
 * Streams and events (three non-blocking streams: compute, copy in, copy
 * out - one per link direction of the cost model):
 *
 *   copy in  ---[wait done(s-1)]--[in i]--(cdone i)------------------
 *   compute  --(done s-1)--[wait cdone j, done(j) = s]--(ready s)
 *                           [check s][write+spin s]--(done s)--------
 *   copy out ---[wait done(s-1)]--[out k]--(cdone k)------------------
 *
 *   1. a copy starting at step s waits for done(s-1) (issued "at the
 *      beginning of step s", as the cost model issues it: the op before
 *      has finished, so the last writer of a copied-out buffer and the last
 *      reader of bytes a copy in overwrites are done); a copy in also waits
 *      for a copy out due at s whose device bytes it overwrites, and for
 *      the copy out that filled its host buffer (the cost model has
 *      neither wait: where they bind, the measured time is longer);
 *   2. before the op of step s the compute stream waits for every copy due
 *      at s (a copy in must have landed before its first use; a copied-out
 *      buffer's bytes may be overwritten from s on);
 *   3. ops in plan order on the compute stream;
 *   4. each copy stream is fed in the order the cost model's link begins
 *      the copies (earliest deadline first among those issued,
 *      link_timeline.c): a copy is enqueued at the first step at or after
 *      its issue step where every copy before it in that order is, and at
 *      its due step at the latest (copy_queue_t); copies out before copies
 *      in within a step, so the copy out a copy in waits for is enqueued
 *      first (it is fixed beforehand: the last copy out, in issue order,
 *      that wrote the host buffer). A FIFO stream fed in that order begins
 *      each copy exactly when the model's link does.
 * The expected content is computed on the host first (exec_stamp.h, the
 * same model as the simulated executor, in issue order): each kernel gets
 * (device range, pattern) segments; a check that fails sets the device's
 * error record (step, tier, buffer, byte, expected, found; kernels after a
 * failure return at once).
 *
 * Sync points (watch): before issuing step s the host (a) asks, without
 * blocking, which done events have completed (cuEventQuery), (b) keeps at
 * most E = cfg->check_every steps (default 8) in flight by waiting for
 * done(s - E), which leaves E steps queued on the device, and (c) each
 * time E more steps have finished reads the error record's 4-byte flag.
 * So a failed check stops the issuing within about 2E steps of the op
 * that found it (the record names that op), and a CUDA error raised
 * asynchronously by a kernel or a copy (an illegal address) surfaces at
 * the next query or wait: the run stops there, naming the steps in flight
 * (those after the last one known finished, by op; one step when the
 * device kept pace), and frees everything.
 *
 * Measurement: events ready(s) / done(s) on the compute stream give per
 * step the wait (done(s-1) .. ready(s)) and the kernel time; a step whose
 * op waits for a copy counts its wait as exposed transfer time, others as
 * launch gaps. The estimate is the cost model's timeline (fit.c step 7,
 * link_timeline.c: an op starts after the copies due; exposed = end -
 * compute) recomputed here from the plan's op times x
 * spin_scale and bytes / link_bandwidth, and again from the measured
 * kernel and copy times. Op time: the write kernel spins op seconds x
 * spin_scale x the clock64 rate, calibrated once per run with a spin
 * kernel timed by events.
 *
 * Errors: any failing driver call stops the run; the diag names the step,
 * the op and the CUDA error (name, code, text); everything is freed.
 * Complexity: O(steps x copies) issue, plus the bytes on the GPU.
 * Thread-safety: holds the backend's mutex and context for the whole run. */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda_stream.h"
#include "common/util.h"
#include "fit/exec_internal.h"
#include "fit/exec_stamp.h"
#include "fit/link_timeline.h"

#ifdef NNMEM_HAVE_EXEC_KERNELS
extern const unsigned char nnmem__exec_kernels[];
#endif

int nnmem_exec_cuda_kernels(void) {
#ifdef NNMEM_HAVE_EXEC_KERNELS
  return 1;
#else
  return 0;
#endif
}

/* Layouts shared with exec_kernels.cu (and the fake driver). */
typedef struct exec_seg {
  uint64_t addr, len, pat, phase, buf_off;
  uint32_t tier, buffer;
} exec_seg_t;
typedef struct exec_err {
  uint32_t flag, step, tier, buffer;
  uint64_t offset;
  uint32_t expected, found;
} exec_err_t;
_Static_assert(sizeof(exec_seg_t) == 48, "exec_seg_t layout");
_Static_assert(sizeof(exec_err_t) == 32, "exec_err_t layout");

typedef struct span {
  size_t first, n; /* segments [first, first + n) */
} span_t;

#define BLOCK 256
#define CALIB_CYCLES 10000000ll

typedef struct gpu {
  const nnmem_exec_plan_t *p;
  const nnmem_exec_config_t *cfg;
  nnmem_exec_report_t *rep;
  nnmem_diag_t *diag;
  cuda_t *c;
  cu_stream_api_t a;
  int entered;
  uint32_t host; /* the host tier */
  cu_ptr_t raw[NNMEM_DEVICE_MAX_TIERS], dev[NNMEM_DEVICE_MAX_TIERS];
  unsigned char *hmem;
  cu_ptr_t table, segs_dev, err_dev;
  cu_module_t mod;
  cu_function_t f_check, f_write, f_spin;
  cu_stream_t cs, is, os;
  cu_event_t *ev;
  size_t n_ev;
  exec_stamps_t *st[NNMEM_DEVICE_MAX_TIERS];
  exec_seg_t *segs;
  size_t n_segs, segs_cap;
  span_t *rd, *wr, init, fin; /* per step */
  long long *spin;            /* per step */
  double cycles_per_s;
  unsigned grid;
  uint64_t step; /* UINT64_MAX: not in a step */
  /* the watch (sync points): */
  uint32_t every;   /* steps in flight at most; flag read per `every` done */
  uint64_t n_done;  /* steps 0 .. n_done - 1 known finished */
  uint64_t flag_at; /* n_done when the error flag was last read */
  uint64_t stopped; /* the watch stopped the run before this step; else
                       UINT64_MAX */
} gpu_t;

/* Event slots: 0 start; per step ready, done; per copy start, done; 2
 * for calibration. */
#define EV_START 0
#define EV_READY(s) (1 + 2 * (size_t)(s))
#define EV_DONE(s) (2 + 2 * (size_t)(s))
#define EV_CSTART(g, i) (1 + 2 * (size_t)(g)->p->steps + 2 * (i))
#define EV_CDONE(g, i) (2 + 2 * (size_t)(g)->p->steps + 2 * (i))
#define EV_CAL(g, k) \
  (1 + 2 * (size_t)(g)->p->steps + 2 * (g)->p->n_copies + (k))

static const char *op_name(const gpu_t *g, uint64_t s) {
  return s < g->p->steps ? g->p->step[s].op : "";
}

static const char *buf_name(const gpu_t *g, uint32_t t, size_t i) {
  const char *id =
      t < g->p->n_tiers && i < nnmem_problem_count(g->p->tiers[t].problem)
          ? nnmem_problem_id(g->p->tiers[t].problem, i)
          : NULL;
  return id ? id : "?";
}

/* A driver result: NNMEM_OK, or the run's error naming step, op and the
 * CUDA error. */
static nnmem_status_t cu(gpu_t *g, cu_result_t r, const char *what) {
  if (r == CU_SUCCESS) return NNMEM_OK;
  nnmem_status_t st = nnmem__cuda_status(g->c, r, what);
  if (g->step < g->p->steps)
    return nnmem__diag(g->diag, st,
                       "step %" PRIu64
                       " (op %s): %s; run stopped, everything "
                       "freed",
                       g->step, op_name(g, g->step), g->c->last_error);
  return nnmem__diag(g->diag, st, "%s; run stopped, everything freed",
                     g->c->last_error);
}

/* ---- the content model: segments for every kernel ------------------------
 */

static nnmem_status_t add_seg(gpu_t *g, exec_seg_t sg) {
  if (nnmem__grow((void **)&g->segs, &g->segs_cap, g->n_segs + 1,
                  sizeof *g->segs))
    return NNMEM_ERR_NOMEM;
  g->segs[g->n_segs++] = sg;
  return NNMEM_OK;
}

/* Check segments of buffer i of tier t: its root's stamps, newest first,
 * split into disjoint pieces; bytes no stamp covers were never written. */
static nnmem_status_t check_segs(gpu_t *g, uint32_t t, size_t i,
                                 const char *what) {
  uint64_t rel;
  size_t root = nnmem__exec_root(g->p->tiers[t].problem, i, &rel);
  uint64_t size = nnmem_problem_buffers(g->p->tiers[t].problem)[i].size;
  const exec_stamps_t *s = &g->st[t][root];
  cu_ptr_t base = g->dev[t] + g->p->tiers[t].offsets[root];
  nnmem_interval_t todo[64];
  size_t nt = size ? 1 : 0;
  uint64_t emitted = 0; /* the checker: pieces cover the buffer once */
  todo[0] = (nnmem_interval_t){rel, rel + size};
  g->rep->checks++;
  for (size_t k = s->n; k-- > 0 && nt > 0;) {
    const exec_stamp_t *sp = &s->s[k];
    for (size_t q = 0; q < nt;) {
      uint64_t lo = todo[q].first > sp->a ? todo[q].first : sp->a;
      uint64_t hi = todo[q].last < sp->b ? todo[q].last : sp->b;
      if (lo >= hi) {
        q++;
        continue;
      }
      exec_seg_t sg = {base + lo, hi - lo, sp->pat,    lo,
                       lo - rel,  t,       (uint32_t)i};
      if (add_seg(g, sg)) return NNMEM_ERR_NOMEM;
      g->rep->bytes_checked += hi - lo;
      emitted += hi - lo;
      nnmem_interval_t left = {todo[q].first, lo}, right = {hi, todo[q].last};
      todo[q] = todo[--nt];
      if (left.last > left.first && nt < 64) todo[nt++] = left;
      if (right.last > right.first && nt < 64) todo[nt++] = right;
    }
  }
  if (nt > 0)
    return nnmem__diag(g->diag, NNMEM_ERR_CONFLICT,
                       "step %" PRIu64
                       ": %s buffer '%s' (tier %s): bytes "
                       "%" PRIu64 "..%" PRIu64 " were never written",
                       g->step, what, buf_name(g, t, i), g->p->tiers[t].name,
                       todo[0].first - rel, todo[0].last - rel);
  if (emitted != size) /* a piece lost (more than 64 at once) or doubled */
    return nnmem__diag(g->diag, NNMEM_ERR_STATE,
                       "GPU executor: the check of buffer '%s' covers %" PRIu64
                       " of its %" PRIu64 " B (internal error)",
                       buf_name(g, t, i), emitted, size);
  return NNMEM_OK;
}

/* A write of buffer i of tier t at step `step`: a segment on the device,
 * or the bytes themselves in the pinned host tier; a new stamp. */
static nnmem_status_t write_segs(gpu_t *g, uint32_t t, size_t i,
                                 uint64_t step) {
  uint64_t rel;
  size_t root = nnmem__exec_root(g->p->tiers[t].problem, i, &rel);
  uint64_t size = nnmem_problem_buffers(g->p->tiers[t].problem)[i].size;
  uint64_t pat = nnmem__exec_pattern(t, i, step);
  g->rep->writes++;
  if (!size) return NNMEM_OK;
  if (t == g->host) {
    unsigned char *b = g->hmem + g->p->tiers[t].offsets[root];
    for (uint64_t j = rel; j < rel + size; j++)
      b[j] = (unsigned char)(pat >> (8 * (j & 7)));
  } else {
    exec_seg_t sg = {g->dev[t] + g->p->tiers[t].offsets[root] + rel,
                     size,
                     pat,
                     rel,
                     0,
                     t,
                     (uint32_t)i};
    if (add_seg(g, sg)) return NNMEM_ERR_NOMEM;
  }
  return nnmem__exec_push_stamp(&g->st[t][root], rel, rel + size, pat);
}

/* A copy's content: the destination root takes the source root's stamps. */
static nnmem_status_t copy_stamps(gpu_t *g, const exec_copy_t *c) {
  exec_stamps_t *from =
      c->in ? &g->st[g->host][c->host_buffer] : &g->st[c->tier][c->buffer];
  exec_stamps_t *to =
      c->in ? &g->st[c->tier][c->buffer] : &g->st[g->host][c->host_buffer];
  to->n = 0;
  for (size_t k = 0; k < from->n; k++)
    if (nnmem__exec_push_stamp(to, from->s[k].a, from->s[k].b, from->s[k].pat))
      return NNMEM_ERR_NOMEM;
  return NNMEM_OK;
}

/* The whole run's segments, in issue order (the same order run_steps
 * issues copies and ops in). */
static nnmem_status_t build_model(gpu_t *g) {
  const nnmem_exec_plan_t *p = g->p;
  nnmem_status_t st = NNMEM_OK;
  g->step = UINT64_MAX;
  g->init.first = g->n_segs;
  for (size_t i = 0; i < p->n_init && st == NNMEM_OK; i++)
    st = write_segs(g, p->init[i].tier, p->init[i].buffer, UINT64_MAX);
  g->init.n = g->n_segs - g->init.first;
  for (uint64_t s = 0; s < p->steps && st == NNMEM_OK; s++) {
    const exec_step_t *e = &p->step[s];
    char what[96];
    g->step = s;
    for (size_t i = 0; i < p->n_copies && st == NNMEM_OK; i++)
      if (p->copies[i].start == s) st = copy_stamps(g, &p->copies[i]);
    snprintf(what, sizeof what, "op %.60s reads", e->op);
    g->rd[s].first = g->n_segs;
    for (size_t i = 0; i < e->n_reads && st == NNMEM_OK; i++)
      st = check_segs(g, e->reads[i].tier, e->reads[i].buffer, what);
    g->rd[s].n = g->n_segs - g->rd[s].first;
    g->wr[s].first = g->n_segs;
    for (size_t i = 0; i < e->n_writes && st == NNMEM_OK; i++)
      st = write_segs(g, e->writes[i].tier, e->writes[i].buffer, s);
    g->wr[s].n = g->n_segs - g->wr[s].first;
  }
  g->step = UINT64_MAX;
  g->fin.first = g->n_segs;
  for (size_t i = 0; i < p->n_final && st == NNMEM_OK; i++)
    st = check_segs(g, p->final[i].tier, p->final[i].buffer, "graph output");
  g->fin.n = g->n_segs - g->fin.first;
  return st;
}

/* ---- setup ---------------------------------------------------------------
 */

static nnmem_status_t alloc_memory(gpu_t *g) {
  const nnmem_exec_plan_t *p = g->p;
  size_t f = 0, total = 0;
  uint64_t need = 0;
  nnmem_status_t st = cu(g, g->c->api.mem_info(&f, &total), "cuMemGetInfo");
  for (uint32_t t = 0; t < g->host; t++)
    need += p->tiers[t].height + p->tiers[t].alignment;
  if (st == NNMEM_OK && need > f)
    return nnmem__diag(g->diag, NNMEM_ERR_NOMEM,
                       "the plan's device tiers need %" PRIu64
                       " B but %s has %zu B free of %zu B; nothing run",
                       need, g->c->name, f, total);
  for (uint32_t t = 0; t < g->host && st == NNMEM_OK; t++) {
    uint64_t h = p->tiers[t].height, al = p->tiers[t].alignment;
    if (!h) continue;
    uint64_t pad = al > 256 ? al - 1 : 0;
    cu_result_t r = g->c->api.mem_alloc(&g->raw[t], (size_t)(h + pad));
    if (r == CU_ERROR_OUT_OF_MEMORY) {
      g->raw[t] = 0;
      g->c->api.mem_info(&f, &total);
      return nnmem__diag(g->diag, NNMEM_ERR_NOMEM,
                         "tier %s: cuMemAlloc of %" PRIu64
                         " B: out of memory (%s: %zu B free of %zu B); run "
                         "stopped, everything freed",
                         p->tiers[t].name, h + pad, g->c->name, f, total);
    }
    st = cu(g, r, "cuMemAlloc");
    if (st != NNMEM_OK) g->raw[t] = 0;
    g->dev[t] = (g->raw[t] + pad) & ~(cu_ptr_t)pad;
    g->rep->tier_bytes[t] = h;
  }
  uint64_t hh = p->tiers[g->host].height;
  if (st == NNMEM_OK && hh) {
    st = cu(g,
            g->a.host_alloc((void **)&g->hmem, (size_t)hh,
                            CU_MEMHOSTALLOC_PORTABLE),
            "cuMemHostAlloc");
    if (st != NNMEM_OK) g->hmem = NULL;
    g->rep->tier_bytes[g->host] = hh;
  }
  return st;
}

static nnmem_status_t load_kernels(gpu_t *g) {
#ifdef NNMEM_HAVE_EXEC_KERNELS
  nnmem_status_t st = cu(g, g->a.module_load_data(&g->mod, nnmem__exec_kernels),
                         "cuModuleLoadData (the executor's kernels)");
  if (st != NNMEM_OK) {
    g->mod = NULL;
    return st;
  }
  st = cu(g, g->a.module_get_function(&g->f_check, g->mod, "nnmem_exec_check"),
          "cuModuleGetFunction nnmem_exec_check");
  if (st == NNMEM_OK)
    st =
        cu(g, g->a.module_get_function(&g->f_write, g->mod, "nnmem_exec_write"),
           "cuModuleGetFunction nnmem_exec_write");
  if (st == NNMEM_OK)
    st = cu(g, g->a.module_get_function(&g->f_spin, g->mod, "nnmem_exec_spin"),
            "cuModuleGetFunction nnmem_exec_spin");
  int sms = 0;
  if (st == NNMEM_OK)
    st = cu(g,
            g->a.device_attribute(
                &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->c->dev),
            "cuDeviceGetAttribute");
  g->grid = sms > 0 ? (unsigned)sms * 4 : 1;
  return st;
#else
  (void)g;
  return NNMEM_ERR_UNSUPPORTED;
#endif
}

static nnmem_status_t make_streams(gpu_t *g) {
  const nnmem_exec_plan_t *p = g->p;
  nnmem_status_t st = cu(g, g->a.stream_create(&g->cs, CU_STREAM_NON_BLOCKING),
                         "cuStreamCreate");
  if (st == NNMEM_OK)
    st = cu(g, g->a.stream_create(&g->is, CU_STREAM_NON_BLOCKING),
            "cuStreamCreate");
  if (st == NNMEM_OK)
    st = cu(g, g->a.stream_create(&g->os, CU_STREAM_NON_BLOCKING),
            "cuStreamCreate");
  if (st != NNMEM_OK) return st;
  size_t n = 1 + 2 * (size_t)p->steps + 2 * p->n_copies + 2;
  g->ev = calloc(n, sizeof *g->ev);
  if (!g->ev) return NNMEM_ERR_NOMEM;
  for (; g->n_ev < n && st == NNMEM_OK; g->n_ev++) {
    st = cu(g, g->a.event_create(&g->ev[g->n_ev], CU_EVENT_DEFAULT),
            "cuEventCreate");
    if (st != NNMEM_OK) break; /* this slot holds no event */
  }
  return st;
}

/* ---- issuing -------------------------------------------------------------
 */

static nnmem_status_t record(gpu_t *g, size_t ev, cu_stream_t s) {
  return cu(g, g->a.event_record(g->ev[ev], s), "cuEventRecord");
}

static nnmem_status_t wait(gpu_t *g, cu_stream_t s, size_t ev) {
  return cu(g, g->a.stream_wait_event(s, g->ev[ev], 0), "cuStreamWaitEvent");
}

/* kernelParams: one pointer per kernel parameter, in order (the check
 * kernel has four: the driver reads only those). */
static nnmem_status_t launch(gpu_t *g, cu_function_t f, span_t sp,
                             uint32_t step, long long spin) {
  cu_ptr_t segs = g->segs_dev + sp.first * sizeof(exec_seg_t);
  uint32_t n = (uint32_t)sp.n;
  void *args[] = {&segs, &n, &g->err_dev, &step, &spin};
  g->rep->launches++;
  return cu(g, g->a.launch(f, g->grid, 1, 1, BLOCK, 1, 1, 0, g->cs, args, NULL),
            "cuLaunchKernel");
}

/* Do two copies' device buffers share bytes? (A copy in due at s may land
 * where a copy out due at s is still reading; a copy out may read what a
 * copy in due at s brings.) */
static int overlap(const nnmem_exec_plan_t *p, const exec_copy_t *x,
                   const exec_copy_t *y) {
  if (x->tier != y->tier) return 0;
  const exec_tier_t *t = &p->tiers[x->tier];
  uint64_t a = t->offsets[x->buffer], b = t->offsets[y->buffer];
  return a < b + y->bytes && b < a + x->bytes;
}

/* Enqueues copy i (issued at the start of its step s = c->start) on its
 * direction's stream: after op s-1, after a copy of the other direction
 * due at s whose device bytes it overwrites, and (a copy in) after the copy
 * out that filled its host buffer, `dep` (-1: none). */
static nnmem_status_t issue_copy(gpu_t *g, size_t i, long dep) {
  const nnmem_exec_plan_t *p = g->p;
  const exec_copy_t *c = &p->copies[i];
  uint64_t s = c->start;
  cu_stream_t q = c->in ? g->is : g->os;
  nnmem_status_t st = wait(g, q, s > 0 ? EV_DONE(s - 1) : EV_START);
  for (size_t j = 0; j < p->n_copies && st == NNMEM_OK; j++) {
    const exec_copy_t *o = &p->copies[j];
    if (o->done == s && o->in != c->in && overlap(p, o, c))
      st = wait(g, q, EV_CDONE(g, j));
  }
  if (st == NNMEM_OK && c->in && dep >= 0)
    st = wait(g, q, EV_CDONE(g, (size_t)dep));
  if (st == NNMEM_OK) st = record(g, EV_CSTART(g, i), q);
  cu_ptr_t d = g->dev[c->tier] + p->tiers[c->tier].offsets[c->buffer];
  unsigned char *h = g->hmem + p->tiers[g->host].offsets[c->host_buffer];
  if (st == NNMEM_OK && c->in)
    st = cu(g, g->a.htod_async(d, h, (size_t)c->bytes, q), "cuMemcpyHtoDAsync");
  else if (st == NNMEM_OK)
    st = cu(g, g->a.dtoh_async(h, d, (size_t)c->bytes, q), "cuMemcpyDtoHAsync");
  if (st == NNMEM_OK) st = record(g, EV_CDONE(g, i), q);
  if (st == NNMEM_OK) {
    g->rep->copies++;
    g->rep->copy_bytes += c->bytes;
  }
  return st;
}

/* The copy queue of a run: each direction's copies in the order the cost
 * model's links begin them (earliest deadline first among those issued,
 * link_timeline.c), so the FIFO copy streams replay the model; and per
 * copy in the copy out it depends on (the last one, in issue order, that
 * wrote its host buffer). A copy is enqueued at the first step >= its
 * issue step where every copy before it in its direction's order has been
 * enqueued, and at its due step at the latest. */
typedef struct copy_queue {
  size_t *order;  /* all copies: begin order */
  long *dep;      /* per copy in: its copy out, or -1 */
  uint8_t *done;  /* enqueued */
  size_t next[2]; /* per direction (0 out, 1 in): scan position in order */
} copy_queue_t;

static void queue_free(copy_queue_t *cq) {
  free(cq->order), free(cq->dep), free(cq->done);
}

static nnmem_status_t queue_init(gpu_t *g, double scale, copy_queue_t *cq) {
  const nnmem_exec_plan_t *p = g->p;
  size_t n = p->n_copies, nh = nnmem_problem_count(p->tiers[g->host].problem);
  memset(cq, 0, sizeof *cq);
  cq->order = malloc((n + 1) * sizeof *cq->order);
  cq->dep = malloc((n + 1) * sizeof *cq->dep);
  cq->done = calloc(n + 1, 1);
  long *last_out = malloc((nh + 1) * sizeof *last_out);
  double *op = calloc(p->steps + 1, sizeof *op);
  nnmem__xfer_t *x = calloc(n + 1, sizeof *x);
  nnmem_status_t st = cq->order && cq->dep && cq->done && last_out && op && x
                          ? NNMEM_OK
                          : NNMEM_ERR_NOMEM;
  if (st == NNMEM_OK) {
    for (size_t i = 0; i < n; i++)
      cq->dep[i] = -1;
    for (size_t h = 0; h <= nh; h++)
      last_out[h] = -1;
    for (uint64_t s = 0; s < p->steps; s++) /* issue order: step, index */
      for (size_t i = 0; i < n; i++) {
        const exec_copy_t *c = &p->copies[i];
        if (c->start != s) continue;
        cq->dep[i] = c->in ? last_out[c->host_buffer] : -1;
        if (!c->in) last_out[c->host_buffer] = (long)i;
      }
    for (uint64_t s = 0; s < p->steps; s++)
      op[s] = p->step[s].seconds * scale;
    for (size_t i = 0; i < n; i++)
      x[i] = (nnmem__xfer_t){
          p->copies[i].start, p->copies[i].done,
          p->link_bandwidth > 0 ? (double)p->copies[i].bytes / p->link_bandwidth
                                : 0,
          p->copies[i].in};
    double T = 0, compute = 0;
    for (size_t i = 0; i < n; i++)
      cq->order[i] = SIZE_MAX;
    st = nnmem__link_timeline(op, p->steps, x, n, &T, &compute, cq->order);
    /* the same timeline is the run's estimate */
    g->rep->est_compute_s = compute;
    g->rep->est_exposed_s = T > compute ? T - compute : 0;
  }
  if (st == NNMEM_OK) { /* copies the model never began go last */
    size_t k = 0;
    uint8_t *seen = cq->done; /* scratch, cleared below */
    while (k < n && cq->order[k] != SIZE_MAX)
      seen[cq->order[k++]] = 1;
    for (size_t i = 0; i < n; i++)
      if (!seen[i]) cq->order[k++] = i;
    memset(cq->done, 0, n + 1);
  }
  free(last_out), free(op), free(x);
  if (st != NNMEM_OK) queue_free(cq);
  return st;
}

/* Enqueues what is due by step s: per direction (copies out first: a copy
 * in may wait for one), the copies next in the model's order whose issue
 * step has come, then any copy due at s not yet enqueued (a tie the order
 * put behind a later one). */
static nnmem_status_t queue_step(gpu_t *g, copy_queue_t *cq, uint64_t s) {
  const nnmem_exec_plan_t *p = g->p;
  nnmem_status_t st = NNMEM_OK;
  for (int in = 0; in < 2 && st == NNMEM_OK; in++) {
    size_t *k = &cq->next[in];
    for (; *k < p->n_copies && st == NNMEM_OK; (*k)++) {
      size_t i = cq->order[*k];
      if (p->copies[i].in != in || cq->done[i]) continue;
      if (p->copies[i].start > s) break;
      st = issue_copy(g, i, cq->dep[i]);
      cq->done[i] = 1;
    }
    for (size_t i = 0; i < p->n_copies && st == NNMEM_OK; i++)
      if (p->copies[i].in == in && !cq->done[i] && p->copies[i].done <= s &&
          p->copies[i].start <= s) {
        st = issue_copy(g, i, cq->dep[i]);
        cq->done[i] = 1;
      }
  }
  return st;
}

/* The test hook: one byte of step s's first output overwritten by a write
 * kernel with a one-byte segment of the inverted pattern (the table's last
 * slot, filled by setup). */
static nnmem_status_t corrupt(gpu_t *g, uint64_t s) {
  if (g->wr[s].n == 0) return NNMEM_OK;
  span_t sp = {g->n_segs, 1};
  return launch(g, g->f_write, sp, (uint32_t)s, 0);
}

/* An error the device reported at a sync point (asynchronous: a kernel or
 * a copy faulted earlier; the context is unusable from then on): the diag
 * names the steps whose work may have failed, those issued (< s) and not
 * yet known finished, by step and op. */
static nnmem_status_t fault(gpu_t *g, cu_result_t r, uint64_t s) {
  nnmem_status_t st = nnmem__cuda_status(g->c, r, "the device");
  uint64_t a = g->n_done, b = s ? s - 1 : 0;
  const char *fin = s == g->p->steps && g->fin.n && g->stopped == UINT64_MAX
                        ? ", or the graph outputs' check after it"
                        : "";
  if (a >= s) /* nothing in flight: the work after the steps */
    return nnmem__diag(g->diag, st,
                       "%s, found after the last step (the graph outputs' "
                       "check or a copy); run stopped, everything freed",
                       g->c->last_error);
  if (a == b)
    return nnmem__diag(g->diag, st,
                       "step %" PRIu64 " (op %s): %s (the op's kernels or a "
                       "copy it waits for%s; found at the sync point before "
                       "step %" PRIu64 "); run stopped, everything freed",
                       a, op_name(g, a), g->c->last_error, fin, s);
  return nnmem__diag(g->diag, st,
                     "steps %" PRIu64 "..%" PRIu64 " (op %s .. op %s): %s "
                     "(in the kernels of one of those ops or a copy they "
                     "wait for%s: steps before %" PRIu64 " had finished; "
                     "found at the sync point before step %" PRIu64
                     "); run stopped, everything freed",
                     a, b, op_name(g, a), op_name(g, b), g->c->last_error, fin,
                     a, s);
}

/* The sync point before step s: (1) learn without blocking which steps
 * have finished (cuEventQuery of their done events: no device work); (2)
 * keep at most `every` steps in flight (wait for done(s - every): the
 * device still has that many queued, so the wait costs it nothing); (3)
 * once `every` more steps have finished, read the error record's flag (a
 * 4-byte synchronous copy on the legacy stream, which the run's
 * non-blocking streams do not wait for). A CUDA error at any of them stops
 * the run naming the steps in flight; a set flag stops issuing (*stop) and
 * the record is read after the device drains (device_error). */
static nnmem_status_t watch(gpu_t *g, uint64_t s, int *stop) {
  while (g->n_done < s) {
    cu_result_t r = g->a.event_query(g->ev[EV_DONE(g->n_done)]);
    if (r == CU_ERROR_NOT_READY) break;
    if (r != CU_SUCCESS) return fault(g, r, s);
    g->n_done++;
  }
  if (s >= g->every && g->n_done < s - g->every + 1) {
    cu_result_t r = g->a.event_synchronize(g->ev[EV_DONE(s - g->every)]);
    if (r != CU_SUCCESS) return fault(g, r, s);
    g->n_done = s - g->every + 1;
  }
  if (g->n_done < g->flag_at + g->every && !(s == g->p->steps && s))
    return NNMEM_OK;
  uint32_t flag = 0;
  cu_result_t r = g->c->api.dtoh(&flag, g->err_dev, sizeof flag);
  if (r != CU_SUCCESS) return fault(g, r, s);
  g->flag_at = g->n_done;
  if (flag) {
    g->stopped = s;
    *stop = 1;
  }
  return NNMEM_OK;
}

static nnmem_status_t run_steps(gpu_t *g, double scale) {
  const nnmem_exec_plan_t *p = g->p;
  copy_queue_t cq;
  nnmem_status_t st = queue_init(g, scale, &cq);
  if (st != NNMEM_OK) return st;
  st = record(g, EV_START, g->cs);
  int stop = 0;
  for (uint64_t s = 0; s < p->steps && st == NNMEM_OK; s++) {
    g->step = s;
    if (s) st = watch(g, s, &stop);
    if (stop) break;
    if (st == NNMEM_OK) st = queue_step(g, &cq, s);
    for (size_t i = 0; i < p->n_copies && st == NNMEM_OK; i++)
      if (p->copies[i].done == s) st = wait(g, g->cs, EV_CDONE(g, i));
    if (st == NNMEM_OK) st = record(g, EV_READY(s), g->cs);
    if (st == NNMEM_OK && g->rd[s].n)
      st = launch(g, g->f_check, g->rd[s], (uint32_t)s, 0);
    if (st == NNMEM_OK)
      st = launch(g, g->f_write, g->wr[s], (uint32_t)s, g->spin[s]);
    if (st == NNMEM_OK && g->cfg->corrupt_step == s + 1) st = corrupt(g, s);
    if (st == NNMEM_OK) st = record(g, EV_DONE(s), g->cs);
  }
  queue_free(&cq);
  g->step = UINT64_MAX;
  if (st == NNMEM_OK && !stop && p->steps) /* the last steps' errors */
    st = watch(g, p->steps, &stop);
  if (st == NNMEM_OK && !stop && g->fin.n)
    st = launch(g, g->f_check, g->fin, (uint32_t)p->steps, 0);
  cu_result_t r = CU_SUCCESS;
  if (st == NNMEM_OK) r = g->a.stream_synchronize(g->cs);
  if (r == CU_SUCCESS && st == NNMEM_OK) r = g->a.ctx_synchronize();
  if (r != CU_SUCCESS) st = fault(g, r, g->stopped < p->steps ? g->stopped
                                                              : p->steps);
  return st;
}

/* ---- calibration and measurement -----------------------------------------
 */

static nnmem_status_t elapsed(gpu_t *g, size_t a, size_t b, double *out) {
  float ms = 0;
  nnmem_status_t st =
      cu(g, g->a.event_elapsed(&ms, g->ev[a], g->ev[b]), "cuEventElapsedTime");
  *out = st == NNMEM_OK && ms > 0 ? (double)ms / 1e3 : 0;
  return st;
}

/* clock64 cycles per second: a spin kernel timed by events (the second of
 * two runs); the pinned host -> device rate with one copy. */
static nnmem_status_t calibrate(gpu_t *g) {
  long long cycles = CALIB_CYCLES;
  void *args[] = {&cycles};
  double sec = 0;
  nnmem_status_t st = NNMEM_OK;
  for (int k = 0; k < 2 && st == NNMEM_OK; k++) {
    st = record(g, EV_CAL(g, 0), g->cs);
    if (st == NNMEM_OK)
      st = cu(g, g->a.launch(g->f_spin, 1, 1, 1, 1, 1, 1, 0, g->cs, args, NULL),
              "cuLaunchKernel (calibration)");
    if (st == NNMEM_OK) st = record(g, EV_CAL(g, 1), g->cs);
    if (st == NNMEM_OK)
      st = cu(g, g->a.event_synchronize(g->ev[EV_CAL(g, 1)]),
              "cuEventSynchronize");
    if (st == NNMEM_OK) st = elapsed(g, EV_CAL(g, 0), EV_CAL(g, 1), &sec);
  }
  if (st != NNMEM_OK) return st;
  if (!(sec > 0))
    return nnmem__diag(g->diag, NNMEM_ERR_IO,
                       "calibration: the spin kernel took no time");
  g->cycles_per_s = (double)cycles / sec;
  g->rep->cycles_per_s = g->cycles_per_s;
  uint32_t m = g->p->main_tier;
  uint64_t n = g->p->tiers[g->host].height;
  if (n > g->p->tiers[m].height) n = g->p->tiers[m].height;
  if (n > (64u << 20)) n = 64u << 20;
  if (!n || !g->hmem || !g->dev[m]) return NNMEM_OK;
  st = record(g, EV_CAL(g, 0), g->is);
  if (st == NNMEM_OK)
    st = cu(g, g->a.htod_async(g->dev[m], g->hmem, (size_t)n, g->is),
            "cuMemcpyHtoDAsync (calibration)");
  if (st == NNMEM_OK) st = record(g, EV_CAL(g, 1), g->is);
  if (st == NNMEM_OK)
    st = cu(g, g->a.event_synchronize(g->ev[EV_CAL(g, 1)]),
            "cuEventSynchronize");
  if (st == NNMEM_OK) st = elapsed(g, EV_CAL(g, 0), EV_CAL(g, 1), &sec);
  if (st == NNMEM_OK && sec > 0) g->rep->link_bytes_per_s = (double)n / sec;
  return st;
}

/* The cost model's timeline (src/fit/link_timeline.c, the fitter's step
 * 7), from op and copy times: the exposed time the run should measure,
 * since the copy streams are fed in the order that timeline begins the
 * copies (copy_queue_t). */
static double timeline_exposed(const nnmem_exec_plan_t *p, const double *op,
                               const double *cp) {
  nnmem__xfer_t *x = calloc(p->n_copies ? p->n_copies : 1, sizeof *x);
  if (!x) return 0;
  for (size_t i = 0; i < p->n_copies; i++)
    x[i] = (nnmem__xfer_t){p->copies[i].start, p->copies[i].done, cp[i],
                           p->copies[i].in};
  double T = 0, compute = 0;
  nnmem_status_t st =
      nnmem__link_timeline(op, p->steps, x, p->n_copies, &T, &compute, NULL);
  free(x);
  return st == NNMEM_OK && T > compute ? T - compute : 0;
}

/* The measured times from the events, and the model's timeline fed with
 * them (the estimate itself came with the copy queue, queue_init). */
static nnmem_status_t measure(gpu_t *g) {
  const nnmem_exec_plan_t *p = g->p;
  nnmem_exec_report_t *r = g->rep;
  double *op = calloc(p->steps + 1, sizeof *op);
  double *cp = calloc(p->n_copies + 1, sizeof *cp);
  nnmem_status_t st = op && cp ? NNMEM_OK : NNMEM_ERR_NOMEM;
  for (uint64_t s = 0; s < p->steps && st == NNMEM_OK; s++) {
    double w = 0, k = 0;
    int waits = 0;
    st = elapsed(g, s ? EV_DONE(s - 1) : EV_START, EV_READY(s), &w);
    if (st == NNMEM_OK) st = elapsed(g, EV_READY(s), EV_DONE(s), &k);
    for (size_t i = 0; i < p->n_copies && !waits; i++)
      waits = p->copies[i].done == s;
    if (waits) {
      r->wait_s += w;
      r->waiting_steps++;
    } else {
      r->gap_s += w;
    }
    r->kernel_s += k;
    op[s] = k;
    if (r->step_wait_s && s < r->step_wait_cap) r->step_wait_s[s] = w;
  }
  for (size_t i = 0; i < p->n_copies && st == NNMEM_OK; i++) {
    st = elapsed(g, EV_CSTART(g, i), EV_CDONE(g, i), &cp[i]);
    r->copy_s += cp[i];
  }
  if (st == NNMEM_OK && p->steps)
    st = elapsed(g, EV_START, EV_DONE(p->steps - 1), &r->total_s);
  if (st == NNMEM_OK) r->est_exposed_measured_s = timeline_exposed(p, op, cp);
  free(op);
  free(cp);
  return st;
}

/* ---- the run -------------------------------------------------------------
 */

static nnmem_status_t device_error(gpu_t *g) {
  exec_err_t e;
  nnmem_status_t st = cu(g, g->c->api.dtoh(&e, g->err_dev, sizeof e),
                         "cuMemcpyDtoH (error record)");
  if (st != NNMEM_OK || !e.flag) return st;
  char what[96];
  if (e.step < g->p->steps)
    snprintf(what, sizeof what, "op %.60s reads", op_name(g, e.step));
  else
    snprintf(what, sizeof what, "after the last step: graph output");
  char when[96] = "after the last step";
  if (g->stopped < g->p->steps)
    snprintf(when, sizeof when, "at the sync point before step %" PRIu64
             " of %" PRIu64, g->stopped, g->p->steps);
  return nnmem__diag(
      g->diag, NNMEM_ERR_CONFLICT,
      "step %" PRIu32 ": %s buffer '%s' (tier %s): byte %" PRIu64
      " holds 0x%02x, expected 0x%02x: another buffer or a copy overwrote "
      "it (found on the GPU, %s); run stopped, everything freed",
      e.step, what, buf_name(g, e.tier, e.buffer),
      e.tier < g->p->n_tiers ? g->p->tiers[e.tier].name : "?", e.offset,
      e.expected & 0xff, e.found & 0xff, when);
}

static nnmem_status_t setup(gpu_t *g) {
  const nnmem_exec_plan_t *p = g->p;
  nnmem_status_t st = nnmem__cuda_stream_load(g->c, &g->a, g->diag);
  if (st != NNMEM_OK) return st;
  for (uint32_t t = 0; t < p->n_tiers; t++) {
    size_t n = nnmem_problem_count(p->tiers[t].problem);
    if (!(g->st[t] = calloc(n ? n : 1, sizeof *g->st[t])))
      return NNMEM_ERR_NOMEM;
  }
  g->rd = calloc(p->steps + 1, sizeof *g->rd);
  g->wr = calloc(p->steps + 1, sizeof *g->wr);
  g->spin = calloc(p->steps + 1, sizeof *g->spin);
  if (!g->rd || !g->wr || !g->spin) return NNMEM_ERR_NOMEM;
  if ((st = nnmem__cuda_enter(g->c, "cuCtxPushCurrent")) != NNMEM_OK)
    return nnmem__diag(g->diag, st, "%s; nothing run", g->c->last_error);
  g->entered = 1;
  st = load_kernels(g);
  if (st == NNMEM_OK) st = make_streams(g);
  if (st == NNMEM_OK) st = alloc_memory(g);
  if (st == NNMEM_OK) st = build_model(g);
  if (st == NNMEM_OK && add_seg(g, (exec_seg_t){0}) != NNMEM_OK)
    st = NNMEM_ERR_NOMEM; /* the spare slot for the corruption hook */
  if (st != NNMEM_OK) return st;
  g->n_segs--;
  uint64_t cs = g->cfg->corrupt_step;
  if (cs && cs <= p->steps && g->wr[cs - 1].n) {
    exec_seg_t bad = g->segs[g->wr[cs - 1].first];
    bad.len = 1;
    bad.pat = ~bad.pat;
    g->segs[g->n_segs] = bad;
  }
  size_t bytes = (g->n_segs + 1) * sizeof(exec_seg_t) + sizeof(exec_err_t);
  st = cu(g, g->c->api.mem_alloc(&g->table, bytes), "cuMemAlloc (segments)");
  if (st != NNMEM_OK) {
    g->table = 0;
    return st;
  }
  g->err_dev = g->table;
  g->segs_dev = g->table + sizeof(exec_err_t);
  st = cu(g, g->c->api.memset_d8(g->err_dev, 0, sizeof(exec_err_t)),
          "cuMemsetD8");
  if (st == NNMEM_OK)
    st = cu(g,
            g->c->api.htod(g->segs_dev, g->segs,
                           (g->n_segs + 1) * sizeof(exec_seg_t)),
            "cuMemcpyHtoD (segments)");
  /* both may return before the bytes land (a pageable source is staged;
   * a device memset is asynchronous), and the run's streams do not wait
   * for the legacy stream: wait here */
  if (st == NNMEM_OK) st = cu(g, g->a.ctx_synchronize(), "cuCtxSynchronize");
  return st;
}

static void teardown(gpu_t *g) {
  if (g->entered) {
    if (g->a.ctx_synchronize) g->a.ctx_synchronize();
    for (size_t i = 0; i < g->n_ev; i++)
      g->a.event_destroy(g->ev[i]);
    if (g->cs) g->a.stream_destroy(g->cs);
    if (g->is) g->a.stream_destroy(g->is);
    if (g->os) g->a.stream_destroy(g->os);
    if (g->mod) g->a.module_unload(g->mod);
    for (uint32_t t = 0; t < NNMEM_DEVICE_MAX_TIERS; t++)
      if (g->raw[t]) g->c->api.mem_free(g->raw[t]);
    if (g->table) g->c->api.mem_free(g->table);
    if (g->hmem) g->a.host_free(g->hmem);
    nnmem__cuda_leave(g->c);
  }
  for (uint32_t t = 0; t < NNMEM_DEVICE_MAX_TIERS; t++) {
    if (!g->st[t]) continue;
    size_t n = nnmem_problem_count(g->p->tiers[t].problem);
    for (size_t i = 0; i < n; i++)
      free(g->st[t][i].s);
    free(g->st[t]);
  }
  free(g->ev);
  free(g->segs);
  free(g->rd);
  free(g->wr);
  free(g->spin);
}

nnmem_status_t nnmem__exec_run_cuda(const nnmem_exec_plan_t *p,
                                    const nnmem_exec_config_t *cfg,
                                    nnmem_exec_report_t *rep,
                                    nnmem_diag_t *diag) {
  if (!nnmem_exec_cuda_kernels())
    return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                       "--backend cuda: this nnmem was built without CUDA "
                       "kernels (no nvcc at build time: install the CUDA "
                       "toolkit and configure with -DNNMEM_CUDA=ON); nothing "
                       "run");
  gpu_t g;
  memset(&g, 0, sizeof g);
  g.p = p;
  g.cfg = cfg;
  g.rep = rep;
  g.diag = diag;
  g.host = p->n_tiers - 1;
  g.step = UINT64_MAX;
  g.stopped = UINT64_MAX;
  g.every = cfg->size == 0 || cfg->size >= offsetof(nnmem_exec_config_t,
                                                      check_every) +
                                             sizeof cfg->check_every
                ? cfg->check_every
                : 0;
  if (!g.every) g.every = NNMEM_EXEC_CHECK_EVERY;
  g.c = nnmem__cuda_of(cfg->cuda);
  if (!g.c)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_exec_run: cfg->cuda is not a cuda backend");
  double scale = cfg->spin_scale > 0 ? cfg->spin_scale : 1;
  nnmem_status_t st = setup(&g);
  if (st == NNMEM_OK) st = calibrate(&g);
  for (uint64_t s = 0; s < p->steps && st == NNMEM_OK; s++) {
    double c = p->step[s].seconds * scale * g.cycles_per_s;
    g.spin[s] = c < 9e18 ? (long long)llround(c) : (long long)9e18;
  }
  if (st == NNMEM_OK && g.init.n) /* inputs and weights, before timing */
    st = launch(&g, g.f_write, g.init, (uint32_t)p->steps, 0);
  if (st == NNMEM_OK)
    st = cu(&g, g.a.stream_synchronize(g.cs), "cuStreamSynchronize");
  if (st == NNMEM_OK) st = run_steps(&g, scale);
  if (st == NNMEM_OK) st = device_error(&g);
  if (st == NNMEM_OK) {
    rep->steps = p->steps;
    st = measure(&g);
  }
  if (st == NNMEM_ERR_NOMEM && diag && !diag->message[0])
    nnmem__diag(diag, st, "GPU executor: out of host memory");
  teardown(&g);
  return st;
}

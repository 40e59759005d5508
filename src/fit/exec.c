/* exec.c - the executor: replays a fitted plan on backends with real bytes
 * (nnmem_exec_run). The end-to-end proof that a plan plus its transfers is
 * correct: a buffer that shares bytes with another live one, a copy that
 * comes too late or lands in the wrong place, shows up as a wrong byte.
 *
 * With cfg->cuda set the run goes to the GPU executor (exec_cuda.c)
 * instead; the content model below is shared with it (exec_stamp.h).
 *
 * Memory: one simulated device (sim backend, backed, capacity = the tier's
 * limit, the tier's alignment) per device tier and one for the host tier;
 * each holds one region of the tier's plan height. Fault injection: the
 * N-th region allocation (all tiers, in tier order) is made to fail
 * through the sim backend's own fail_at; the N-th copy is failed by the
 * executor. Either stops the run with a clear error and frees everything.
 *
 * Content model ("stamps"): each root buffer keeps the list of its writes
 * still visible, newest last: (byte range relative to the root, pattern).
 * A write of a buffer (a root or a sub-buffer inside one) fills its range
 * with a 64-bit pattern derived from (tier, buffer, step) and appends a
 * stamp (stamps it covers entirely are dropped). A check of a range walks
 * the stamps newest first; every byte must hold the pattern of the newest
 * stamp covering it, and every byte must be covered (else it is read before
 * it was written). A copy checks its source, copies the bytes with the
 * backend's copy and gives the destination the source's stamps.
 *
 *   root:  [==== stamp A (step 3) ====)
 *             [= child stamp B (step 5) =)       check: B's bytes hold B's
 *                                                pattern, the rest A's
 * Steps of a run:
 *   0. regions; before step 0 write every "init" buffer (inputs, weights);
 *   per step s:
 *   1. copies out with done == s: check the device buffer, copy to host
 *      (the latest moment: its bytes may be reused from s on);
 *   2. copies in starting at s: check host, copy to the device (the
 *      earliest moment);
 *   3. copies in with done == s: check the device copy is still intact;
 *      copies out starting at s: check the device buffer;
 *   4. check every read; write every write; check every write again (two
 *      outputs or workspaces of one op must not overlap);
 *   after the last step: check every "final" buffer (graph outputs); free.
 * Complexity: O(bytes written + bytes checked) plus stamps (a few per root).
 * Thread-safety: each run is independent; the plan is only read. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "fit/exec_internal.h"
#include "fit/exec_stamp.h"
#include "nnmem/backend.h"

typedef struct run {
  const nnmem_exec_plan_t *p;
  const nnmem_exec_config_t *cfg;
  nnmem_exec_report_t *rep;
  nnmem_diag_t *diag;
  nnmem_backend_t *be[NNMEM_DEVICE_MAX_TIERS];
  unsigned char *base[NNMEM_DEVICE_MAX_TIERS];
  exec_stamps_t *st[NNMEM_DEVICE_MAX_TIERS]; /* per buffer (roots used) */
  uint64_t allocs, copies;
  uint64_t step; /* for messages */
} run_t;

static void fill(unsigned char *root, uint64_t a, uint64_t b, uint64_t pat) {
  const unsigned char *pb = (const unsigned char *)&pat;
  uint64_t j = a;
  for (; j < b && (j & 7); j++)
    root[j] = pb[j & 7];
  for (; j + 8 <= b; j += 8)
    memcpy(root + j, &pat, 8);
  for (; j < b; j++)
    root[j] = pb[j & 7];
}

/* First byte in [a, b) of root that differs from the pattern; b if none. */
static uint64_t first_diff(const unsigned char *root, uint64_t a, uint64_t b,
                           uint64_t pat) {
  const unsigned char *pb = (const unsigned char *)&pat;
  uint64_t j = a;
  for (; j < b && (j & 7); j++)
    if (root[j] != pb[j & 7]) return j;
  for (; j + 8 <= b; j += 8)
    if (memcmp(root + j, &pat, 8) != 0) break;
  for (; j < b; j++)
    if (root[j] != pb[j & 7]) return j;
  return b;
}

static const char *buf_name(const run_t *r, uint32_t t, size_t i) {
  const char *id = nnmem_problem_id(r->p->tiers[t].problem, i);
  return id ? id : "?";
}

/* Checks [a, b) of root `root` of tier t against its stamps (newest
 * first); `i` names the buffer read. Uncovered pieces kept in a small
 * list: at most one split per stamp. */
static nnmem_status_t check_range(run_t *r, uint32_t t, size_t root, size_t i,
                                  uint64_t a, uint64_t b, const char *what) {
  const exec_stamps_t *s = &r->st[t][root];
  const unsigned char *base = r->base[t] + r->p->tiers[t].offsets[root];
  nnmem_interval_t todo[64];
  size_t nt = 1;
  todo[0] = (nnmem_interval_t){a, b};
  for (size_t k = s->n; k-- > 0 && nt > 0;) {
    const exec_stamp_t *st = &s->s[k];
    for (size_t q = 0; q < nt;) {
      uint64_t lo = todo[q].first > st->a ? todo[q].first : st->a;
      uint64_t hi = todo[q].last < st->b ? todo[q].last : st->b;
      if (lo >= hi) {
        q++;
        continue;
      }
      uint64_t d = first_diff(base, lo, hi, st->pat);
      r->rep->bytes_checked += hi - lo;
      if (d < hi)
        return nnmem__diag(
            r->diag, NNMEM_ERR_CONFLICT,
            "step %" PRIu64 ": %s buffer '%s' (tier %s): byte %" PRIu64
            " holds 0x%02x, expected 0x%02x: another buffer or a copy "
            "overwrote it",
            r->step, what, buf_name(r, t, i), r->p->tiers[t].name, d, base[d],
            ((const unsigned char *)&st->pat)[d & 7]);
      nnmem_interval_t left = {todo[q].first, lo}, right = {hi, todo[q].last};
      todo[q] = todo[--nt];
      if (left.last > left.first && nt < 64) todo[nt++] = left;
      if (right.last > right.first && nt < 64) todo[nt++] = right;
    }
  }
  if (nt > 0)
    return nnmem__diag(r->diag, NNMEM_ERR_CONFLICT,
                       "step %" PRIu64
                       ": %s buffer '%s' (tier %s): bytes "
                       "%" PRIu64 "..%" PRIu64 " were never written",
                       r->step, what, buf_name(r, t, i), r->p->tiers[t].name,
                       todo[0].first, todo[0].last);
  return NNMEM_OK;
}

static nnmem_status_t check_buf(run_t *r, uint32_t t, size_t i,
                                const char *what) {
  uint64_t rel;
  size_t root = nnmem__exec_root(r->p->tiers[t].problem, i, &rel);
  uint64_t size = nnmem_problem_buffers(r->p->tiers[t].problem)[i].size;
  r->rep->checks++;
  return size ? check_range(r, t, root, i, rel, rel + size, what) : NNMEM_OK;
}

static nnmem_status_t write_buf(run_t *r, uint32_t t, size_t i, uint64_t step) {
  uint64_t rel;
  size_t root = nnmem__exec_root(r->p->tiers[t].problem, i, &rel);
  uint64_t size = nnmem_problem_buffers(r->p->tiers[t].problem)[i].size;
  uint64_t pat = nnmem__exec_pattern(t, i, step);
  r->rep->writes++;
  if (!size) return NNMEM_OK;
  fill(r->base[t] + r->p->tiers[t].offsets[root], rel, rel + size, pat);
  return nnmem__exec_push_stamp(&r->st[t][root], rel, rel + size, pat);
}

/* A whole-buffer copy between a device tier and the host tier (roots). */
static nnmem_status_t do_copy(run_t *r, const exec_copy_t *c) {
  uint32_t host = r->p->n_tiers - 1;
  uint32_t st_ = c->in ? host : c->tier, dt = c->in ? c->tier : host;
  size_t sb = c->in ? c->host_buffer : c->buffer;
  size_t db = c->in ? c->buffer : c->host_buffer;
  nnmem_status_t st =
      check_buf(r, st_, sb, c->in ? "copy in: source" : "copy out: source");
  if (st != NNMEM_OK) return st;
  if (r->cfg->fail_copy_at && ++r->copies == r->cfg->fail_copy_at)
    return nnmem__diag(r->diag, NNMEM_ERR_IO,
                       "step %" PRIu64
                       ": copy %s of buffer '%s' failed "
                       "(fault injected at copy %" PRIu64
                       "); run stopped, "
                       "everything freed",
                       r->step, c->in ? "in" : "out",
                       buf_name(r, c->tier, c->buffer), r->cfg->fail_copy_at);
  unsigned char *src = r->base[st_] + r->p->tiers[st_].offsets[sb];
  unsigned char *dst = r->base[dt] + r->p->tiers[dt].offsets[db];
  st = nnmem_backend_copy(
      r->be[c->tier], dst, src, c->bytes,
      c->in ? NNMEM_COPY_HOST_TO_DEVICE : NNMEM_COPY_DEVICE_TO_HOST);
  if (st != NNMEM_OK)
    return nnmem__diag(r->diag, st, "step %" PRIu64 ": copy failed: %s",
                       r->step, nnmem_status_str(st));
  r->rep->copies++;
  r->rep->copy_bytes += c->bytes;
  exec_stamps_t *from = &r->st[st_][sb], *to = &r->st[dt][db];
  to->n = 0;
  for (size_t k = 0; k < from->n; k++)
    if (nnmem__exec_push_stamp(to, from->s[k].a, from->s[k].b, from->s[k].pat))
      return NNMEM_ERR_NOMEM;
  return NNMEM_OK;
}

static nnmem_status_t alloc_tiers(run_t *r) {
  for (uint32_t t = 0; t < r->p->n_tiers; t++) {
    const exec_tier_t *tr = &r->p->tiers[t];
    nnmem_sim_config_t sc;
    memset(&sc, 0, sizeof sc);
    sc.size = sizeof sc;
    sc.capacity = t + 1 < r->p->n_tiers ? tr->capacity : 0;
    sc.alignment = tr->alignment < 64 ? 64 : tr->alignment;
    sc.backed = 1;
    nnmem_status_t st = nnmem_backend_sim_create(&sc, &r->be[t]);
    size_t n = nnmem_problem_count(tr->problem);
    r->st[t] = calloc(n ? n : 1, sizeof *r->st[t]);
    if (st != NNMEM_OK || !r->st[t])
      return nnmem__diag(r->diag, NNMEM_ERR_NOMEM, "tier %s: out of memory",
                         tr->name);
    if (!tr->height) continue;
    r->allocs++;
    if (r->cfg->fail_at == r->allocs) nnmem_backend_sim_fail_at(r->be[t], 1, 0);
    st = nnmem_backend_alloc(r->be[t], tr->height, sc.alignment,
                             (void **)&r->base[t]);
    if (st != NNMEM_OK) {
      r->base[t] = NULL;
      return nnmem__diag(
          r->diag, NNMEM_ERR_NOMEM,
          "tier %s: allocating %" PRIu64
          " B on the simulated "
          "device failed (%s%s); run stopped, everything freed",
          tr->name, tr->height, nnmem_status_str(st),
          r->cfg->fail_at == r->allocs ? ", fault injected" : "");
    }
    r->rep->tier_bytes[t] = tr->height;
  }
  return NNMEM_OK;
}

static void free_run(run_t *r) {
  for (uint32_t t = 0; t < NNMEM_DEVICE_MAX_TIERS; t++) {
    if (r->base[t])
      nnmem_backend_free(r->be[t], r->base[t], r->p->tiers[t].height);
    if (r->st[t]) {
      size_t n = nnmem_problem_count(r->p->tiers[t].problem);
      for (size_t i = 0; i < n; i++)
        free(r->st[t][i].s);
      free(r->st[t]);
    }
    nnmem_backend_destroy(r->be[t]);
  }
}

/* The report as far as the caller's `size` reaches (0: the whole). */
static void deliver_report(nnmem_exec_report_t *report,
                           const nnmem_exec_report_t *rep) {
  if (!report) return;
  uint32_t sz =
      report->size && report->size < sizeof *rep ? report->size : sizeof *rep;
  memcpy(report, rep, sz);
  report->size = sz;
}

/* Steps 1-3 of a step: copies due and copies starting. */
static nnmem_status_t step_copies(run_t *r, uint64_t s) {
  const nnmem_exec_plan_t *p = r->p;
  nnmem_status_t st = NNMEM_OK;
  for (size_t i = 0; i < p->n_copies && st == NNMEM_OK; i++)
    if (p->copies[i].done == s && !p->copies[i].in)
      st = do_copy(r, &p->copies[i]);
  for (size_t i = 0; i < p->n_copies && st == NNMEM_OK; i++)
    if (p->copies[i].start == s && p->copies[i].in)
      st = do_copy(r, &p->copies[i]);
  for (size_t i = 0; i < p->n_copies && st == NNMEM_OK; i++)
    if (p->copies[i].done == s && p->copies[i].in)
      st = check_buf(r, p->copies[i].tier, p->copies[i].buffer, "prefetched");
  for (size_t i = 0; i < p->n_copies && st == NNMEM_OK; i++)
    if (p->copies[i].start == s && !p->copies[i].in)
      st = check_buf(r, p->copies[i].tier, p->copies[i].buffer,
                     "copy out: source");
  return st;
}

static nnmem_status_t step_op(run_t *r, uint64_t s) {
  const exec_step_t *e = &r->p->step[s];
  nnmem_status_t st = NNMEM_OK;
  char what[96];
  snprintf(what, sizeof what, "op %.60s reads", e->op);
  for (size_t i = 0; i < e->n_reads && st == NNMEM_OK; i++)
    st = check_buf(r, e->reads[i].tier, e->reads[i].buffer, what);
  for (size_t i = 0; i < e->n_writes && st == NNMEM_OK; i++)
    st = write_buf(r, e->writes[i].tier, e->writes[i].buffer, s);
  snprintf(what, sizeof what, "op %.60s wrote", e->op);
  for (size_t i = 0; i < e->n_writes && st == NNMEM_OK; i++)
    st = check_buf(r, e->writes[i].tier, e->writes[i].buffer, what);
  return st;
}

nnmem_status_t nnmem_exec_run(const nnmem_exec_plan_t *p,
                              const nnmem_exec_config_t *cfg,
                              nnmem_exec_report_t *report, nnmem_diag_t *diag) {
  if (!p)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "nnmem_exec_run: NULL plan");
  nnmem_exec_config_t defcfg;
  memset(&defcfg, 0, sizeof defcfg);
  nnmem_exec_report_t rep;
  memset(&rep, 0, sizeof rep);
  rep.size = sizeof rep;
  if (report && report->size >= sizeof rep) { /* caller-owned wait array */
    rep.step_wait_s = report->step_wait_s;
    rep.step_wait_cap = report->step_wait_cap;
  }
  if (cfg &&
      (cfg->size == 0 ||
       cfg->size >= offsetof(nnmem_exec_config_t, cuda) + sizeof cfg->cuda) &&
      cfg->cuda) {
    nnmem_status_t cst = nnmem__exec_run_cuda(p, cfg, &rep, diag);
    deliver_report(report, &rep);
    return cst;
  }
  run_t r;
  memset(&r, 0, sizeof r);
  r.p = p;
  r.cfg = cfg ? cfg : &defcfg;
  r.rep = &rep;
  r.diag = diag;
  nnmem_status_t st = alloc_tiers(&r);
  for (size_t i = 0; i < p->n_init && st == NNMEM_OK; i++)
    st = write_buf(&r, p->init[i].tier, p->init[i].buffer, UINT64_MAX);
  for (uint64_t s = 0; s < p->steps && st == NNMEM_OK; s++) {
    r.step = s;
    st = step_copies(&r, s);
    if (st == NNMEM_OK) st = step_op(&r, s);
    if (st == NNMEM_OK) rep.steps++;
  }
  for (size_t i = 0; i < p->n_final && st == NNMEM_OK; i++)
    st = check_buf(&r, p->final[i].tier, p->final[i].buffer, "graph output");
  if (st == NNMEM_ERR_NOMEM && diag && !diag->message[0])
    nnmem__diag(diag, st, "executor: out of memory");
  free_run(&r);
  deliver_report(report, &rep);
  return st;
}

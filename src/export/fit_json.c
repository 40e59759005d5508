/* fit_json.c - writes a fit as plan JSON (nnmem_fit_format_json).
 *
 * The document keeps the classic plan JSON members for the main tier
 * ("model", "strategy", "alignment", "arena_height", "order", "buffers"),
 * so `nnmem verify` and older readers read it as before, and adds "fit":
 *
 *   "fit": {"version": 1, "model_digest": "89ab...", "limit": N,
 *           "steps": S, "main_tier": 1,
 *           "device": {... the device JSON format ...},
 *           "tiers": [{"name", "alignment", "capacity", "height",
 *                      "buffers": [{"id", "offset", "size", "first",
 *                                   "last", "kind", "gaps"?, "parent"?,
 *                                   "parent_offset"?}]}],
 *           "init": [[tier, buffer], ...],      written before step 0
 *           "schedule": [{"op", "part"?, "parts"?, "split"?, "seconds",
 *                         "reads": [[t, b]], "writes": [[t, b]]}],
 *                                  a split op (fit_split.c) runs as
 *                                  "parts" steps, "part" 0.., "split":
 *                                  "rows" | "accumulate"; "order" (top
 *                                  level) lists each op once
 *           "final": [[tier, buffer], ...],     read after the last step
 *           "copies": [{"dir": "in"|"out", "tier", "buffer",
 *                       "host_buffer", "bytes", "start", "done"}],
 *           "moves": [{"kind", "name", "bytes", "copies", "at_step",
 *                      "idle_steps"}],
 *           "costs": {...}, "tensors": [{"name", "size"}],
 *           "digest": "0123..."}
 *
 * "digest" is FNV-1a 64 over the executed content (exec_digest.h: limit,
 * steps, every tier buffer, accesses, copies) in a fixed order; the reader
 * recomputes it, so a changed number that still parses is refused.
 * Complexity O(buffers + accesses + copies). Thread-safety: reads only. */
#include <stdio.h>
#include <stdlib.h>

#include "common/json_write.h"
#include "common/util.h"
#include "fit/exec_digest.h"
#include "fit/fit_internal.h"

static const char *kind_name(int k) {
  return k == FIT_KIND_WORKSPACE ? "workspace"
         : k == FIT_KIND_WEIGHT  ? "weight"
                                 : "activation";
}

static void put_buffers(nnmem__jw_t *w, const nnmem_fit_t *f, uint32_t t,
                        uint64_t *h) {
  const nnmem_problem_t *p = f->problems[t];
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  const uint64_t *off = nnmem_plan_offsets(f->plans[t]);
  size_t n = nnmem_problem_count(p);
  nnmem__jw_key(w, "buffers");
  nnmem__jw_array(w);
  for (size_t i = 0; i < n; i++) {
    const nnmem_interval_t *g;
    size_t ng = nnmem_problem_gaps(p, i, &g), q = 0;
    uint64_t rel = 0;
    int child = nnmem_problem_parent(p, i, &q, &rel) == NNMEM_OK;
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "id", nnmem_problem_id(p, i));
    nnmem__jw_kv_u64(w, "offset", off[i]);
    nnmem__jw_kv_u64(w, "size", b[i].size);
    nnmem__jw_kv_u64(w, "first", b[i].first);
    nnmem__jw_kv_u64(w, "last", b[i].last);
    nnmem__jw_kv_string(w, "kind", kind_name(f->kinds[t][i]));
    nnmem__exec_digest_buffer(h, off[i], b[i].size, b[i].first, b[i].last);
    if (ng) {
      nnmem__jw_key(w, "gaps");
      nnmem__jw_array(w);
      for (size_t k = 0; k < ng; k++) {
        nnmem__jw_array(w);
        nnmem__jw_u64(w, g[k].first);
        nnmem__jw_u64(w, g[k].last);
        nnmem__jw_end(w);
        nnmem__exec_digest_pair(h, g[k].first, g[k].last);
      }
      nnmem__jw_end(w);
    }
    if (child) {
      nnmem__jw_kv_string(w, "parent", nnmem_problem_id(p, q));
      nnmem__jw_kv_u64(w, "parent_offset", rel);
      nnmem__exec_digest_pair(h, q, rel);
    }
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
}

static void put_acc_list(nnmem__jw_t *w, const char *key, const fit_access_t *a,
                         size_t n, uint64_t *h) {
  nnmem__jw_key(w, key);
  nnmem__jw_array(w);
  for (size_t i = 0; i < n; i++) {
    nnmem__jw_array(w);
    nnmem__jw_u64(w, a[i].tier);
    nnmem__jw_u64(w, a[i].buffer);
    nnmem__jw_end(w);
    nnmem__exec_digest_pair(h, a[i].tier, a[i].buffer);
  }
  nnmem__jw_end(w);
  nnmem__exec_digest_pair(h, 0xacce55, n);
}

static void put_device(nnmem__jw_t *w, const nnmem_device_t *d) {
  nnmem__jw_key(w, "device");
  nnmem__jw_object(w);
  nnmem__jw_kv_string(w, "name", d->name);
  nnmem__jw_kv_double(w, "compute_rate", d->compute_rate);
  nnmem__jw_kv_double(w, "op_overhead", d->op_overhead_s);
  nnmem__jw_kv_string(w, "conv_algorithm",
                      d->conv == NNMEM_CONV_IM2COL ? "im2col" : "direct");
  nnmem__jw_key(w, "tiers");
  nnmem__jw_array(w);
  for (uint32_t t = 0; t < d->n_tiers; t++) {
    const nnmem_tier_t *tr = &d->tiers[t];
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "name", tr->name);
    nnmem__jw_kv_u64(w, "capacity", tr->capacity);
    nnmem__jw_kv_u64(w, "alignment", tr->alignment);
    nnmem__jw_kv_double(w, "bandwidth", tr->bandwidth);
    if (t + 1 < d->n_tiers)
      nnmem__jw_kv_double(w, "link_bandwidth", tr->link_bandwidth);
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
  nnmem__jw_end(w);
}

static void put_copies(nnmem__jw_t *w, const nnmem_fit_t *f, uint64_t *h) {
  nnmem__jw_key(w, "copies");
  nnmem__jw_array(w);
  for (size_t i = 0; i < f->n_copies; i++) {
    const nnmem_fit_copy_t *c = &f->copies[i];
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "dir", c->dir == NNMEM_COPY_IN ? "in" : "out");
    nnmem__jw_kv_u64(w, "tier", c->dev_tier);
    nnmem__jw_kv_u64(w, "buffer", c->dev_buffer);
    nnmem__jw_kv_u64(w, "host_buffer", c->host_buffer);
    nnmem__jw_kv_u64(w, "bytes", c->bytes);
    nnmem__jw_kv_u64(w, "start", c->start);
    nnmem__jw_kv_u64(w, "done", c->done);
    nnmem__jw_end(w);
    nnmem__exec_digest_copy(h, c->dir, c->dev_tier, c->dev_buffer,
                            c->host_buffer, c->bytes, c->start, c->done);
  }
  nnmem__jw_end(w);
}

static void put_moves_costs(nnmem__jw_t *w, const nnmem_fit_t *f) {
  nnmem__jw_key(w, "moves");
  nnmem__jw_array(w);
  for (size_t i = 0; i < f->n_moves; i++) {
    const nnmem_fit_move_t *m = &f->moves[i];
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "kind",
                        m->kind == NNMEM_MOVE_STREAM ? "stream" : "offload");
    nnmem__jw_kv_string(w, "name", m->name);
    nnmem__jw_kv_u64(w, "bytes", m->bytes);
    nnmem__jw_kv_u64(w, "copies", m->copies);
    nnmem__jw_kv_u64(w, "at_step", m->at_step);
    nnmem__jw_kv_u64(w, "idle_steps", m->idle_steps);
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
  const nnmem_fit_costs_t *c = &f->costs;
  nnmem__jw_key(w, "costs");
  nnmem__jw_object(w);
  nnmem__jw_kv_double(w, "compute_s", c->compute_s);
  nnmem__jw_kv_double(w, "transfer_s", c->transfer_s);
  nnmem__jw_kv_double(w, "exposed_s", c->exposed_s);
  nnmem__jw_kv_double(w, "total_s", c->total_s);
  nnmem__jw_kv_u64(w, "transfer_bytes", c->transfer_bytes);
  nnmem__jw_kv_u64(w, "stream_bytes", c->stream_bytes);
  nnmem__jw_kv_u64(w, "offload_bytes", c->offload_bytes);
  nnmem__jw_end(w);
}

static void put_schedule(nnmem__jw_t *w, const nnmem_fit_t *f,
                         const nnmem_graph_t *g, uint64_t *h) {
  nnmem__jw_key(w, "schedule");
  nnmem__jw_array(w);
  for (uint64_t s = 0; s < f->steps; s++) {
    nnmem_op_info_t oi;
    nnmem__jw_object(w);
    const fit_step_t *sp = &f->step[s];
    nnmem__jw_kv_string(
        w, "op",
        nnmem_graph_op(g, f->order[sp->op_step], &oi) == NNMEM_OK ? oi.name
                                                                  : "");
    if (sp->parts > 1) { /* a part of a split op (fit_split.c) */
      nnmem__jw_kv_u64(w, "part", sp->part);
      nnmem__jw_kv_u64(w, "parts", sp->parts);
      nnmem__jw_kv_string(w, "split",
                          sp->mode == FIT_SPLIT_ACCUM ? "accumulate" : "rows");
      nnmem__exec_digest_pair(h, sp->part, sp->parts);
      nnmem__exec_digest_pair(h, sp->mode, 0);
    }
    nnmem__jw_kv_double(w, "seconds", f->op_s ? f->op_s[s] : 0);
    const fit_access_t *a = f->acc + f->acc_start[s];
    size_t n = f->acc_start[s + 1] - f->acc_start[s], nr = 0;
    nnmem__jw_key(w, "reads");
    nnmem__jw_array(w);
    for (size_t i = 0; i < n; i++)
      if (!a[i].write) {
        nnmem__jw_array(w);
        nnmem__jw_u64(w, a[i].tier);
        nnmem__jw_u64(w, a[i].buffer);
        nnmem__jw_end(w);
        nnmem__exec_digest_pair(h, a[i].tier, a[i].buffer);
        nr++;
      }
    nnmem__jw_end(w);
    nnmem__jw_key(w, "writes");
    nnmem__jw_array(w);
    for (size_t i = 0; i < n; i++)
      if (a[i].write) {
        nnmem__jw_array(w);
        nnmem__jw_u64(w, a[i].tier);
        nnmem__jw_u64(w, a[i].buffer);
        nnmem__jw_end(w);
        nnmem__exec_digest_pair(h, a[i].tier, a[i].buffer);
      }
    nnmem__jw_end(w);
    nnmem__exec_digest_pair(h, nr, n - nr);
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
}

static void put_tensors(nnmem__jw_t *w, const nnmem_graph_t *g) {
  nnmem__jw_key(w, "tensors");
  nnmem__jw_array(w);
  for (uint32_t t = 0; t < nnmem_graph_tensor_count(g); t++) {
    nnmem_tensor_info_t ti;
    if (nnmem_graph_tensor(g, t, &ti) != NNMEM_OK) continue;
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "name", ti.name);
    nnmem__jw_kv_u64(w, "size", ti.bytes);
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
}

static void put_fit(nnmem__jw_t *w, const nnmem_fit_t *f,
                    const nnmem_graph_t *g) {
  uint64_t h = NNMEM__FNV_SEED;
  char hex[24];
  nnmem__jw_key(w, "fit");
  nnmem__jw_object(w);
  nnmem__jw_kv_u64(w, "version", 1);
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)f->graph_digest);
  nnmem__jw_kv_string(w, "model_digest", hex);
  nnmem__jw_kv_u64(w, "limit", f->limit);
  nnmem__jw_kv_u64(w, "steps", f->steps);
  nnmem__jw_kv_u64(w, "main_tier", nnmem_device_main_tier(&f->dev));
  nnmem__jw_kv_u64(w, "unconstrained_peak", f->unconstrained_peak);
  nnmem__jw_kv_u64(w, "min_footprint", f->min_footprint);
  nnmem__exec_digest_pair(&h, f->limit, f->steps);
  nnmem__exec_digest_pair(&h, f->dev.n_tiers, nnmem_device_main_tier(&f->dev));
  put_device(w, &f->dev);
  nnmem__jw_key(w, "tiers");
  nnmem__jw_array(w);
  for (uint32_t t = 0; t < f->dev.n_tiers; t++) {
    nnmem__jw_object(w);
    nnmem__jw_kv_string(w, "name", f->dev.tiers[t].name);
    nnmem__jw_kv_u64(w, "alignment", f->dev.tiers[t].alignment);
    nnmem__jw_kv_u64(w, "capacity",
                     t == nnmem_device_main_tier(&f->dev)
                         ? f->limit
                         : f->dev.tiers[t].capacity);
    nnmem__jw_kv_u64(w, "height", nnmem_plan_height(f->plans[t]));
    nnmem__exec_digest_pair(&h, t, nnmem_problem_count(f->problems[t]));
    put_buffers(w, f, t, &h);
    nnmem__jw_end(w);
  }
  nnmem__jw_end(w);
  put_acc_list(w, "init", f->init, f->n_init, &h);
  put_schedule(w, f, g, &h);
  put_acc_list(w, "final", f->final, f->n_final, &h);
  put_copies(w, f, &h);
  put_moves_costs(w, f);
  put_tensors(w, g);
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
  nnmem__jw_kv_string(w, "digest", hex);
  nnmem__jw_end(w);
}

nnmem_status_t nnmem_fit_format_json(const nnmem_fit_t *f,
                                     const nnmem_graph_t *g, char **out,
                                     size_t *len_out, nnmem_diag_t *diag) {
  if (out) *out = NULL;
  if (!f || !g || !out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_fit_format_json: NULL argument");
  if (nnmem_graph_digest(g) != f->graph_digest)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_fit_format_json: the fit is of another graph");
  uint32_t m = nnmem_device_main_tier(&f->dev);
  nnmem__text_t t;
  nnmem__jw_t w;
  nnmem__text_init(&t);
  nnmem__jw_init(&w, &t, NNMEM__JW_PRETTY);
  nnmem__jw_object(&w);
  nnmem__jw_kv_string(&w, "model", f->model_name);
  nnmem__jw_kv_string(&w, "strategy",
                      nnmem_strategy_name(nnmem_plan_strategy(f->plans[m])));
  nnmem__jw_kv_u64(&w, "alignment", f->dev.tiers[m].alignment);
  nnmem__jw_kv_u64(&w, "arena_height", nnmem_plan_height(f->plans[m]));
  nnmem__jw_key(&w, "order");
  nnmem__jw_array(&w);
  for (uint64_t o = 0; o < f->ops; o++) {
    nnmem_op_info_t oi;
    nnmem__jw_string(
        &w, nnmem_graph_op(g, f->order[o], &oi) == NNMEM_OK ? oi.name : "");
  }
  nnmem__jw_end(&w);
  uint64_t scratch = 0;
  put_buffers(&w, f, m, &scratch);
  put_fit(&w, f, g);
  nnmem__jw_end(&w);
  nnmem_status_t st = nnmem__jw_finish(&w);
  if (st != NNMEM_OK) {
    nnmem__text_free(&t);
    return nnmem__diag(diag, st, "plan JSON: %s", nnmem_status_str(st));
  }
  *out = t.data;
  if (len_out) *len_out = t.len;
  return NNMEM_OK;
}

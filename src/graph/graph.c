/* graph.c - the graph IR: named tensors and operators, validation and a
 * stable topological schedule.
 *
 * Storage: tensors and ops live in two growable arrays indexed by their ids;
 * each op owns one array holding its input ids followed by its output ids.
 * Names are found through two open-addressing hash tables (FNV-1a, linear
 * probing, load <= 1/2) that store id + 1 (0 = empty slot).
 *
 * Algorithms:
 *   add_op: 1. check name/type/flags/ids without side effects;
 *           2. mark outputs (producer = -2) to catch a second producer, also
 *              within the op itself, undoing the marks on failure;
 *           3. allocate everything; 4. commit producers and consumer counts.
 *   check:  1. every read activation/output/workspace has a producer;
 *           2. every activation/output/workspace is produced;
 *           3. no cycle (runs the scheduler).
 *   schedule (Kahn 1962, "Topological sorting of large networks"):
 *           1. in-degree of an op = number of its input slots whose tensor
 *              has a producer; consumers of each tensor in CSR form;
 *           2. a binary min-heap on op index holds the ready ops; pop the
 *              smallest, append it, decrement its consumers, push the ones
 *              that reach 0;
 *           3. if fewer than all ops came out there is a cycle: walk back
 *              from an unscheduled op along unscheduled producers until an
 *              op repeats; that op is on a cycle, which the message spells.
 *
 * Invariants (checked by tests): tensors[t].producer is -1 or the one op that
 * lists t among its outputs; n_consumers counts distinct reading ops; every
 * name is in its hash table exactly once.
 * Complexity: add_tensor / add_op O(1) amortized + O(size of the op);
 * find O(1) average; check and schedule O((V + E) log V).
 * Thread-safety: none for writes; concurrent reads of a finished graph are
 * safe. */
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/graph.h"

#define PRODUCER_NONE (-1)
#define PRODUCER_MARK (-2) /* transient, inside add_op only */

typedef struct tensor_rec {
  char *name;
  nnmem_tensor_kind_t kind;
  nnmem_dtype_t dtype;
  uint32_t rank;
  int64_t shape[NNMEM_MAX_RANK];
  uint64_t bytes;
  uint64_t align;
  int32_t producer;
  uint32_t n_consumers;
  uint32_t last_reader; /* op id + 1 of the last op counted in n_consumers */
  uint32_t flags;       /* NNMEM_TENSOR_* */
} tensor_rec_t;

typedef struct op_rec {
  char *name;
  char *type;
  uint32_t *io; /* n_inputs input ids, then n_outputs output ids */
  uint32_t n_inputs, n_outputs;
  uint64_t workspace_bytes;
  uint32_t flags, inplace_input, view_input;
  int32_t slice_axis; /* -1, or output 0 = input 0 restricted along it */
  int64_t slice_start;
} op_rec_t;

typedef struct name_index {
  uint32_t *slots; /* id + 1, 0 = empty */
  size_t cap;      /* power of two or 0 */
  size_t used;
} name_index_t;

struct nnmem_graph {
  char *name;
  tensor_rec_t *tensors;
  size_t n_tensors, cap_tensors;
  op_rec_t *ops;
  size_t n_ops, cap_ops;
  name_index_t tensor_names, op_names;
};

/* ---- name index ---------------------------------------------------------*/

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static const char *tensor_name_of(const nnmem_graph_t *g, uint32_t id) {
  return g->tensors[id].name;
}

static const char *op_name_of(const nnmem_graph_t *g, uint32_t id) {
  return g->ops[id].name;
}

typedef const char *(*name_of_fn)(const nnmem_graph_t *, uint32_t);

/* Returns the slot holding `name` or the empty slot where it would go. */
static size_t index_slot(const nnmem_graph_t *g, const name_index_t *ix,
                         name_of_fn name_of, const char *name) {
  size_t mask = ix->cap - 1;
  size_t i = (size_t)hash_str(name) & mask;
  while (ix->slots[i] && strcmp(name_of(g, ix->slots[i] - 1), name) != 0) {
    i = (i + 1) & mask;
  }
  return i;
}

static int index_find(const nnmem_graph_t *g, const name_index_t *ix,
                      name_of_fn name_of, const char *name, uint32_t *id) {
  if (!ix->cap) return 0;
  size_t i = index_slot(g, ix, name_of, name);
  if (!ix->slots[i]) return 0;
  *id = ix->slots[i] - 1;
  return 1;
}

/* Makes room for one more name (load factor <= 1/2). */
static nnmem_status_t index_reserve(const nnmem_graph_t *g, name_index_t *ix,
                                    name_of_fn name_of) {
  if ((ix->used + 1) * 2 <= ix->cap) return NNMEM_OK;
  size_t ncap = ix->cap ? ix->cap * 2 : 64;
  if (ncap > SIZE_MAX / sizeof(uint32_t)) return NNMEM_ERR_OVERFLOW;
  uint32_t *slots = calloc(ncap, sizeof *slots);
  if (!slots) return NNMEM_ERR_NOMEM;
  name_index_t nix = {slots, ncap, ix->used};
  for (size_t i = 0; i < ix->cap; i++) {
    if (!ix->slots[i]) continue;
    const char *nm = name_of(g, ix->slots[i] - 1);
    nix.slots[index_slot(g, &nix, name_of, nm)] = ix->slots[i];
  }
  free(ix->slots);
  *ix = nix;
  return NNMEM_OK;
}

/* Inserts id (whose name is already stored) after index_reserve. */
static void index_insert(const nnmem_graph_t *g, name_index_t *ix,
                         name_of_fn name_of, uint32_t id) {
  size_t i = index_slot(g, ix, name_of, name_of(g, id));
  ix->slots[i] = id + 1;
  ix->used++;
}

/* ---- create / destroy ---------------------------------------------------*/

nnmem_status_t nnmem_graph_create(const char *name, nnmem_graph_t **out) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  nnmem_graph_t *g = calloc(1, sizeof *g);
  if (!g) return NNMEM_ERR_NOMEM;
  g->name = nnmem__strdup(name ? name : "");
  if (!g->name) {
    free(g);
    return NNMEM_ERR_NOMEM;
  }
  *out = g;
  return NNMEM_OK;
}

void nnmem_graph_destroy(nnmem_graph_t *g) {
  if (!g) return;
  for (size_t i = 0; i < g->n_tensors; i++)
    free(g->tensors[i].name);
  for (size_t i = 0; i < g->n_ops; i++) {
    free(g->ops[i].name);
    free(g->ops[i].type);
    free(g->ops[i].io);
  }
  free(g->tensors);
  free(g->ops);
  free(g->tensor_names.slots);
  free(g->op_names.slots);
  free(g->name);
  free(g);
}

const char *nnmem_graph_name(const nnmem_graph_t *g) {
  return g ? g->name : NULL;
}

/* ---- tensors ------------------------------------------------------------*/

/* Validates desc and computes its byte size into *bytes. */
static nnmem_status_t tensor_desc_check(const nnmem_tensor_desc_t *d,
                                        uint64_t *bytes, nnmem_diag_t *diag) {
  if (!d->name || !d->name[0])
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "tensor without a name");
  const char *n = d->name;
  if ((unsigned)d->kind >= NNMEM_TENSOR_KIND_COUNT_)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "tensor '%s': unknown kind %d",
                       n, (int)d->kind);
  if ((unsigned)d->dtype >= NNMEM_DTYPE_COUNT_)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "tensor '%s': unknown dtype %d",
                       n, (int)d->dtype);
  if (d->flags & ~NNMEM_TENSOR_UPPER_BOUND)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "tensor '%s': unknown flags 0x%x", n,
                       (unsigned)d->flags);
  if (d->rank > NNMEM_MAX_RANK)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "tensor '%s': rank %u exceeds %d", n, d->rank,
                       NNMEM_MAX_RANK);
  if (d->rank && !d->shape)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "tensor '%s': rank %u but no shape", n, d->rank);
  if (d->align && !nnmem__is_pow2(d->align))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "tensor '%s': alignment %llu is not a power of two", n,
                       (unsigned long long)d->align);
  for (uint32_t i = 0; i < d->rank; i++) {
    if (d->shape[i] < 0)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "tensor '%s': dim %u is negative (%lld)", n, i,
                         (long long)d->shape[i]);
  }
  if (d->bytes) {
    *bytes = d->bytes;
    return NNMEM_OK;
  }
  if (d->dtype == NNMEM_DTYPE_UNDEFINED)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "tensor '%s': no dtype and no byte size", n);
  uint64_t b = nnmem_dtype_size(d->dtype);
  for (uint32_t i = 0; i < d->rank; i++) {
    if (nnmem__mul_overflow(b, (uint64_t)d->shape[i], &b))
      return nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
                         "tensor '%s': byte size overflows 64 bits", n);
  }
  *bytes = b;
  return NNMEM_OK;
}

nnmem_status_t nnmem_graph_add_tensor(nnmem_graph_t *g,
                                      const nnmem_tensor_desc_t *desc,
                                      uint32_t *id_out, nnmem_diag_t *diag) {
  if (!g || !desc)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "add_tensor: NULL argument");
  uint64_t bytes = 0;
  nnmem_status_t st = tensor_desc_check(desc, &bytes, diag);
  if (st != NNMEM_OK) return st;
  uint32_t dup;
  if (index_find(g, &g->tensor_names, tensor_name_of, desc->name, &dup))
    return nnmem__diag(diag, NNMEM_ERR_DUPLICATE,
                       "tensor '%s' is defined twice", desc->name);
  if (g->n_tensors >= UINT32_MAX - 1)
    return nnmem__diag(diag, NNMEM_ERR_OVERFLOW, "too many tensors");
  st = nnmem__grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1,
                   sizeof *g->tensors);
  if (st == NNMEM_OK) st = index_reserve(g, &g->tensor_names, tensor_name_of);
  char *name = st == NNMEM_OK ? nnmem__strdup(desc->name) : NULL;
  if (st == NNMEM_OK && !name) st = NNMEM_ERR_NOMEM;
  if (st != NNMEM_OK)
    return nnmem__diag(diag, st, "tensor '%s': %s", desc->name,
                       nnmem_status_str(st));
  tensor_rec_t *t = &g->tensors[g->n_tensors];
  memset(t, 0, sizeof *t);
  t->name = name;
  t->kind = desc->kind;
  t->dtype = desc->dtype;
  t->rank = desc->rank;
  if (desc->rank)
    memcpy(t->shape, desc->shape, desc->rank * sizeof desc->shape[0]);
  t->bytes = bytes;
  t->align = desc->align ? desc->align : 1;
  t->flags = desc->flags;
  t->producer = PRODUCER_NONE;
  uint32_t id = (uint32_t)g->n_tensors++;
  index_insert(g, &g->tensor_names, tensor_name_of, id);
  if (id_out) *id_out = id;
  return NNMEM_OK;
}

/* ---- ops ----------------------------------------------------------------*/

static nnmem_status_t op_ids_check(const nnmem_graph_t *g,
                                   const nnmem_op_desc_t *d,
                                   nnmem_diag_t *diag);

/* Checks everything in desc that needs no marks on the tensors. */
static nnmem_status_t op_desc_check(const nnmem_graph_t *g,
                                    const nnmem_op_desc_t *d,
                                    nnmem_diag_t *diag) {
  if (!d->name || !d->name[0])
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "op without a name");
  const char *n = d->name;
  if (!d->type || !d->type[0])
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "op '%s': no type", n);
  uint32_t dup;
  if (index_find(g, &g->op_names, op_name_of, n, &dup))
    return nnmem__diag(diag, NNMEM_ERR_DUPLICATE, "op '%s' is defined twice",
                       n);
  if ((d->n_inputs && !d->inputs) || (d->n_outputs && !d->outputs))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "op '%s': input or output count without an array", n);
  if (d->flags & ~(NNMEM_OP_INPLACE | NNMEM_OP_VIEW))
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "op '%s': unknown flags 0x%x",
                       n, d->flags);
  if ((d->flags & NNMEM_OP_INPLACE) && (d->flags & NNMEM_OP_VIEW))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "op '%s': both INPLACE and VIEW", n);
  if (d->flags && (!d->n_inputs || !d->n_outputs))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "op '%s': a view / in-place op needs an input and an "
                       "output",
                       n);
  if ((d->flags & NNMEM_OP_INPLACE) && d->inplace_input >= d->n_inputs)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "op '%s': inplace_input %u out of range (%u inputs)", n,
                       d->inplace_input, d->n_inputs);
  if ((d->flags & NNMEM_OP_VIEW) && d->view_input >= d->n_inputs)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "op '%s': view_input %u out of range (%u inputs)", n,
                       d->view_input, d->n_inputs);
  return op_ids_check(g, d, diag);
}

/* Checks the input / output ids and the kinds of the outputs. */
static nnmem_status_t op_ids_check(const nnmem_graph_t *g,
                                   const nnmem_op_desc_t *d,
                                   nnmem_diag_t *diag) {
  const char *n = d->name;
  for (uint32_t i = 0; i < d->n_inputs; i++) {
    if (d->inputs[i] >= g->n_tensors)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "op '%s': input %u is an unknown tensor id %u", n, i,
                         d->inputs[i]);
  }
  for (uint32_t i = 0; i < d->n_outputs; i++) {
    uint32_t t = d->outputs[i];
    if (t >= g->n_tensors)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "op '%s': output %u is an unknown tensor id %u", n, i,
                         t);
    nnmem_tensor_kind_t k = g->tensors[t].kind;
    if (k == NNMEM_TENSOR_WEIGHT || k == NNMEM_TENSOR_CONSTANT ||
        k == NNMEM_TENSOR_INPUT)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "op '%s' writes tensor '%s' which is a graph %s", n,
                         g->tensors[t].name, nnmem_tensor_kind_name(k));
  }
  return NNMEM_OK;
}

static void unmark_outputs(nnmem_graph_t *g, const uint32_t *outs, uint32_t k) {
  for (uint32_t i = 0; i < k; i++)
    g->tensors[outs[i]].producer = PRODUCER_NONE;
}

/* Marks outputs as being produced; fails (undoing marks) on a second
 * producer, including the same tensor listed twice by this op. */
static nnmem_status_t mark_outputs(nnmem_graph_t *g, const nnmem_op_desc_t *d,
                                   nnmem_diag_t *diag) {
  for (uint32_t i = 0; i < d->n_outputs; i++) {
    tensor_rec_t *t = &g->tensors[d->outputs[i]];
    if (t->producer != PRODUCER_NONE) {
      const char *other = t->producer >= 0 ? g->ops[t->producer].name : d->name;
      unmark_outputs(g, d->outputs, i);
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "op '%s' writes tensor '%s' which op '%s' already "
                         "produces",
                         d->name, t->name, other);
    }
    t->producer = PRODUCER_MARK;
  }
  return NNMEM_OK;
}

/* Allocates the op record's strings and io array. */
static nnmem_status_t op_rec_fill(op_rec_t *r, const nnmem_op_desc_t *d) {
  memset(r, 0, sizeof *r);
  size_t nio = (size_t)d->n_inputs + d->n_outputs;
  r->name = nnmem__strdup(d->name);
  r->type = nnmem__strdup(d->type);
  r->io = malloc(nio ? nio * sizeof *r->io : 1);
  if (!r->name || !r->type || !r->io) {
    free(r->name);
    free(r->type);
    free(r->io);
    return NNMEM_ERR_NOMEM;
  }
  if (d->n_inputs) memcpy(r->io, d->inputs, d->n_inputs * sizeof *r->io);
  if (d->n_outputs)
    memcpy(r->io + d->n_inputs, d->outputs, d->n_outputs * sizeof *r->io);
  r->n_inputs = d->n_inputs;
  r->n_outputs = d->n_outputs;
  r->workspace_bytes = d->workspace_bytes;
  r->flags = d->flags;
  r->inplace_input = (d->flags & NNMEM_OP_INPLACE) ? d->inplace_input : 0;
  r->view_input = (d->flags & NNMEM_OP_VIEW) ? d->view_input : 0;
  r->slice_axis = -1;
  return NNMEM_OK;
}

nnmem_status_t nnmem_graph_add_op(nnmem_graph_t *g, const nnmem_op_desc_t *desc,
                                  uint32_t *id_out, nnmem_diag_t *diag) {
  if (!g || !desc)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "add_op: NULL argument");
  nnmem_status_t st = op_desc_check(g, desc, diag);
  if (st != NNMEM_OK) return st;
  if (g->n_ops >= INT32_MAX)
    return nnmem__diag(diag, NNMEM_ERR_OVERFLOW, "too many ops");
  st = mark_outputs(g, desc, diag);
  if (st != NNMEM_OK) return st;
  st = nnmem__grow((void **)&g->ops, &g->cap_ops, g->n_ops + 1, sizeof *g->ops);
  if (st == NNMEM_OK) st = index_reserve(g, &g->op_names, op_name_of);
  if (st == NNMEM_OK) st = op_rec_fill(&g->ops[g->n_ops], desc);
  if (st != NNMEM_OK) {
    unmark_outputs(g, desc->outputs, desc->n_outputs);
    return nnmem__diag(diag, st, "op '%s': %s", desc->name,
                       nnmem_status_str(st));
  }
  uint32_t id = (uint32_t)g->n_ops++;
  for (uint32_t i = 0; i < desc->n_outputs; i++)
    g->tensors[desc->outputs[i]].producer = (int32_t)id;
  for (uint32_t i = 0; i < desc->n_inputs; i++) {
    tensor_rec_t *t = &g->tensors[desc->inputs[i]];
    if (t->last_reader == id + 1) continue; /* same op reads it twice */
    t->last_reader = id + 1;
    t->n_consumers++;
  }
  index_insert(g, &g->op_names, op_name_of, id);
  if (id_out) *id_out = id;
  return NNMEM_OK;
}

/* ---- read-back ----------------------------------------------------------*/

size_t nnmem_graph_tensor_count(const nnmem_graph_t *g) {
  return g ? g->n_tensors : 0;
}

size_t nnmem_graph_op_count(const nnmem_graph_t *g) {
  return g ? g->n_ops : 0;
}

nnmem_status_t nnmem_graph_tensor(const nnmem_graph_t *g, uint32_t id,
                                  nnmem_tensor_info_t *out) {
  if (!g || !out) return NNMEM_ERR_INVALID;
  if (id >= g->n_tensors) return NNMEM_ERR_NOT_FOUND;
  const tensor_rec_t *t = &g->tensors[id];
  out->name = t->name;
  out->kind = t->kind;
  out->dtype = t->dtype;
  out->rank = t->rank;
  out->shape = t->shape;
  out->bytes = t->bytes;
  out->align = t->align;
  out->producer = t->producer;
  out->n_consumers = t->n_consumers;
  out->flags = t->flags;
  return NNMEM_OK;
}

int nnmem_graph_tensor_size_is_upper_bound(const nnmem_graph_t *g,
                                           uint32_t id) {
  if (!g || id >= g->n_tensors) return 0;
  return (g->tensors[id].flags & NNMEM_TENSOR_UPPER_BOUND) != 0;
}

nnmem_status_t nnmem_graph_op(const nnmem_graph_t *g, uint32_t id,
                              nnmem_op_info_t *out) {
  if (!g || !out) return NNMEM_ERR_INVALID;
  if (id >= g->n_ops) return NNMEM_ERR_NOT_FOUND;
  const op_rec_t *o = &g->ops[id];
  out->name = o->name;
  out->type = o->type;
  out->inputs = o->io;
  out->n_inputs = o->n_inputs;
  out->outputs = o->io + o->n_inputs;
  out->n_outputs = o->n_outputs;
  out->workspace_bytes = o->workspace_bytes;
  out->flags = o->flags;
  out->inplace_input = o->inplace_input;
  out->view_input = o->view_input;
  return NNMEM_OK;
}

/* The shapes of a slice op: output 0 equals input 0 but along `axis`, where
 * it covers [start, start + out dim) of the input. */
static nnmem_status_t slice_check(const nnmem_graph_t *g, const op_rec_t *o,
                                  uint32_t axis, int64_t start,
                                  nnmem_diag_t *diag) {
  const char *n = o->name;
  if (o->n_outputs != 1 || o->n_inputs < 1)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "op '%s': a slice needs one output and an input "
                       "(has %u outputs, %u inputs)",
                       n, o->n_outputs, o->n_inputs);
  const tensor_rec_t *in = &g->tensors[o->io[0]];
  const tensor_rec_t *out = &g->tensors[o->io[o->n_inputs]];
  if (in->rank != out->rank || in->dtype != out->dtype)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "op '%s': slice input '%s' and output '%s' differ in "
                       "rank or dtype",
                       n, in->name, out->name);
  if (axis >= in->rank)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "op '%s': slice axis %u out of range (rank %u)", n, axis,
                       in->rank);
  if (start < 0 || out->shape[axis] > in->shape[axis] - start)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "op '%s': slice [%lld, %lld + %lld) exceeds dim %u of "
                       "'%s' (%lld)",
                       n, (long long)start, (long long)start,
                       (long long)out->shape[axis], axis, in->name,
                       (long long)in->shape[axis]);
  for (uint32_t d = 0; d < in->rank; d++)
    if (d != axis && in->shape[d] != out->shape[d])
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "op '%s': slice along axis %u but dim %u differs "
                         "(%lld vs %lld)",
                         n, axis, d, (long long)in->shape[d],
                         (long long)out->shape[d]);
  return NNMEM_OK;
}

nnmem_status_t nnmem_graph_set_op_slice(nnmem_graph_t *g, uint32_t op,
                                        uint32_t axis, int64_t start,
                                        nnmem_diag_t *diag) {
  if (!g) return nnmem__diag(diag, NNMEM_ERR_INVALID, "set_op_slice: NULL");
  if (op >= g->n_ops)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "set_op_slice: unknown op id %u", op);
  op_rec_t *o = &g->ops[op];
  nnmem_status_t st = slice_check(g, o, axis, start, diag);
  if (st != NNMEM_OK) return st;
  o->slice_axis = (int32_t)axis;
  o->slice_start = start;
  return NNMEM_OK;
}

int nnmem_graph_op_slice(const nnmem_graph_t *g, uint32_t op, uint32_t *axis,
                         int64_t *start) {
  if (!g || op >= g->n_ops || g->ops[op].slice_axis < 0) return 0;
  if (axis) *axis = (uint32_t)g->ops[op].slice_axis;
  if (start) *start = g->ops[op].slice_start;
  return 1;
}

nnmem_status_t nnmem_graph_find_tensor(const nnmem_graph_t *g, const char *name,
                                       uint32_t *id_out) {
  if (!g || !name) return NNMEM_ERR_INVALID;
  uint32_t id;
  if (!index_find(g, &g->tensor_names, tensor_name_of, name, &id))
    return NNMEM_ERR_NOT_FOUND;
  if (id_out) *id_out = id;
  return NNMEM_OK;
}

/* ---- check --------------------------------------------------------------*/

static int needs_producer(nnmem_tensor_kind_t k) {
  return k == NNMEM_TENSOR_ACTIVATION || k == NNMEM_TENSOR_OUTPUT ||
         k == NNMEM_TENSOR_WORKSPACE;
}

nnmem_status_t nnmem_graph_check(const nnmem_graph_t *g, nnmem_diag_t *diag) {
  if (!g) return nnmem__diag(diag, NNMEM_ERR_INVALID, "check: NULL graph");
  for (size_t o = 0; o < g->n_ops; o++) {
    const op_rec_t *op = &g->ops[o];
    for (uint32_t i = 0; i < op->n_inputs; i++) {
      const tensor_rec_t *t = &g->tensors[op->io[i]];
      if (needs_producer(t->kind) && t->producer < 0)
        return nnmem__diag(diag, NNMEM_ERR_INVALID,
                           "op '%s' reads tensor '%s' which nobody produces",
                           op->name, t->name);
    }
  }
  for (size_t i = 0; i < g->n_tensors; i++) {
    const tensor_rec_t *t = &g->tensors[i];
    if (needs_producer(t->kind) && t->producer < 0)
      return nnmem__diag(diag, NNMEM_ERR_INVALID,
                         "tensor '%s' (%s) is never produced", t->name,
                         nnmem_tensor_kind_name(t->kind));
  }
  if (!g->n_ops) return NNMEM_OK;
  uint32_t *order = malloc(g->n_ops * sizeof *order);
  if (!order)
    return nnmem__diag(diag, NNMEM_ERR_NOMEM,
                       "out of memory checking the graph");
  nnmem_status_t st = nnmem_graph_schedule(g, order, diag);
  free(order);
  return st;
}

/* ---- schedule -----------------------------------------------------------*/

typedef struct sched {
  uint32_t *indeg;    /* per op: unscheduled producer slots */
  uint32_t *cons_off; /* per tensor + 1: CSR offsets into cons */
  uint32_t *cons;     /* consumer op per input slot */
  uint32_t *heap;     /* ready ops, min-heap */
  size_t heap_n;
} sched_t;

static void heap_push(sched_t *s, uint32_t v) {
  size_t i = s->heap_n++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (s->heap[p] <= v) break;
    s->heap[i] = s->heap[p];
    i = p;
  }
  s->heap[i] = v;
}

static uint32_t heap_pop(sched_t *s) {
  uint32_t top = s->heap[0];
  uint32_t v = s->heap[--s->heap_n];
  size_t i = 0, n = s->heap_n;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && s->heap[c + 1] < s->heap[c]) c++;
    if (v <= s->heap[c]) break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (n) s->heap[i] = v;
  return top;
}

static void sched_free(sched_t *s) {
  free(s->indeg);
  free(s->cons_off);
  free(s->cons);
  free(s->heap);
}

/* Builds in-degrees and the tensor -> consumer CSR. */
static nnmem_status_t sched_init(const nnmem_graph_t *g, sched_t *s) {
  memset(s, 0, sizeof *s);
  size_t slots = 0;
  for (size_t o = 0; o < g->n_ops; o++)
    slots += g->ops[o].n_inputs;
  if (slots >= UINT32_MAX) return NNMEM_ERR_OVERFLOW;
  s->indeg = calloc(g->n_ops, sizeof *s->indeg);
  s->cons_off = calloc(g->n_tensors + 1, sizeof *s->cons_off);
  s->cons = malloc((slots ? slots : 1) * sizeof *s->cons);
  s->heap = malloc(g->n_ops * sizeof *s->heap);
  if (!s->indeg || !s->cons_off || !s->cons || !s->heap) {
    sched_free(s);
    return NNMEM_ERR_NOMEM;
  }
  for (size_t o = 0; o < g->n_ops; o++) {
    const op_rec_t *op = &g->ops[o];
    for (uint32_t i = 0; i < op->n_inputs; i++) {
      s->cons_off[op->io[i] + 1]++;
      if (g->tensors[op->io[i]].producer >= 0) s->indeg[o]++;
    }
  }
  for (size_t t = 0; t < g->n_tensors; t++)
    s->cons_off[t + 1] += s->cons_off[t];
  for (size_t o = g->n_ops; o-- > 0;) { /* reverse fill keeps op order */
    const op_rec_t *op = &g->ops[o];
    for (uint32_t i = op->n_inputs; i-- > 0;)
      s->cons[--s->cons_off[op->io[i] + 1]] = (uint32_t)o;
  }
  /* After the reverse fill cons_off[t + 1] holds the start of tensor t;
   * shift back so cons_off[t] .. cons_off[t + 1] is tensor t's range. */
  for (size_t t = 0; t < g->n_tensors; t++)
    s->cons_off[t] = s->cons_off[t + 1];
  s->cons_off[g->n_tensors] = (uint32_t)slots;
  return NNMEM_OK;
}

/* Returns the first input producer of `o` not yet scheduled. */
static uint32_t unscheduled_pred(const nnmem_graph_t *g, const sched_t *s,
                                 uint32_t o) {
  const op_rec_t *op = &g->ops[o];
  for (uint32_t i = 0; i < op->n_inputs; i++) {
    int32_t p = g->tensors[op->io[i]].producer;
    if (p >= 0 && s->indeg[p]) return (uint32_t)p;
  }
  return o; /* unreachable for an op with indeg > 0 */
}

/* Finds an op on a cycle among the unscheduled ops and describes it. */
static nnmem_status_t cycle_diag(const nnmem_graph_t *g, const sched_t *s,
                                 uint32_t *seen, nnmem_diag_t *diag) {
  uint32_t v = 0;
  while (!s->indeg[v])
    v++;
  memset(seen, 0, g->n_ops * sizeof *seen);
  while (!seen[v]) {
    seen[v] = 1;
    v = unscheduled_pred(g, s, v);
  }
  /* v is on a cycle; list it forwards (the walk goes backwards). */
  size_t len = 0;
  uint32_t u = v;
  do {
    seen[len++] = u;
    u = unscheduled_pred(g, s, u);
  } while (u != v);
  /* seen[0] = v, seen[i + 1] = pred(seen[i]) and pred(seen[len - 1]) = v,
   * so the forward cycle is v -> seen[len - 1] -> ... -> seen[1] -> v. */
  char path[NNMEM_DIAG_MAX / 2];
  size_t at = 0;
  path[0] = 0;
  for (size_t k = 0; k <= len; k++) {
    /* k-th op of the forward cycle: k = 0 and k = len are v. */
    uint32_t op = (k == 0 || k == len) ? v : seen[len - k];
    int w = snprintf(path + at, sizeof path - at, "%s'%s'", k ? " -> " : "",
                     g->ops[op].name);
    if (w < 0 || (size_t)w >= sizeof path - at) {
      at = sizeof path - 1;
      break;
    }
    at += (size_t)w;
  }
  return nnmem__diag(diag, NNMEM_ERR_CYCLE,
                     "graph has a cycle through op '%s': %s", g->ops[v].name,
                     path);
}

nnmem_status_t nnmem_graph_schedule(const nnmem_graph_t *g, uint32_t *order,
                                    nnmem_diag_t *diag) {
  if (!g || (!order && g->n_ops))
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "schedule: NULL argument");
  if (!g->n_ops) return NNMEM_OK;
  sched_t s;
  nnmem_status_t st = sched_init(g, &s);
  if (st != NNMEM_OK)
    return nnmem__diag(diag, st, "ordering the operators: %s",
                       nnmem_status_str(st));
  for (uint32_t o = 0; o < g->n_ops; o++)
    if (!s.indeg[o]) heap_push(&s, o);
  size_t n = 0;
  while (s.heap_n) {
    uint32_t o = heap_pop(&s);
    order[n++] = o;
    const op_rec_t *op = &g->ops[o];
    for (uint32_t k = 0; k < op->n_outputs; k++) {
      uint32_t t = op->io[op->n_inputs + k];
      for (uint32_t c = s.cons_off[t]; c < s.cons_off[t + 1]; c++) {
        if (--s.indeg[s.cons[c]] == 0) heap_push(&s, s.cons[c]);
      }
    }
  }
  if (n < g->n_ops) st = cycle_diag(g, &s, s.heap, diag);
  sched_free(&s);
  return st;
}

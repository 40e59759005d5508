/* arena.c - binds static plans to one region of a backend.
 *
 * Steps of nnmem_arena_create_shared(problems, plans, n):
 *   1. for each model: the plan must have one offset per buffer, pass
 *      the independent verifier (no overlap of live buffers, offsets
 *      aligned) and hold every buffer below its height (a plan made for a
 *      problem with smaller buffers does not), else NNMEM_ERR_CONFLICT /
 *      NNMEM_ERR_INVALID with the model index in diag;
 *   2. size = max over models of the plan height (models never run at the
 *      same time, so they take turns in the same bytes); alignment = max of
 *      every plan's alignment (nnmem_plan_alignment: the planner's
 *      alignment and every buffer's own) and the backend alignment;
 *   3. reserve one region of `size` bytes at that alignment; a backend that
 *      returns a less aligned region is asked again for size + alignment - 1
 *      bytes and the base rounded up inside it; copy the offsets;
 *   4. address(model, buffer) = base + offset.
 * saving = sum of heights - size: what separate arenas would have cost more.
 * nnmem_arena_create_grouped: models of one concurrent group are stacked
 * (nnmem_arena_layout: each base = the previous member's base + height,
 * rounded up to the alignment), every other model starts at 0; size = the
 * highest base + height; the layout passes nnmem_arena_layout_check before
 * anything is reserved.
 * Invariants: every buffer's [offset, offset + size) lies inside the region;
 * base is a multiple of the alignment, so base + offset keeps every
 * alignment the planner gave the offset.
 * Complexity: O(total buffers log) for the verification; address O(1).
 * Thread-safety: create/destroy unsynchronized; address/info read-only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nnmem/arena.h"

typedef struct model {
  size_t n;
  uint64_t *offsets;
  uint64_t base; /* where the model's offsets start (stacked groups) */
} model_t;

struct nnmem_arena {
  nnmem_backend_t *backend;
  void *base; /* aligned start of the region */
  void *raw;  /* what the backend returned (freed with raw_size) */
  uint64_t raw_size;
  uint64_t size, sum_heights;
  size_t n_models;
  model_t *models;
};

static nnmem_status_t check_model(const nnmem_problem_t *pr,
                                  const nnmem_plan_t *pl, size_t m,
                                  uint64_t *align, nnmem_diag_t *diag) {
  if (!pr || !pl || nnmem_plan_count(pl) != nnmem_problem_count(pr))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "model %zu: the plan has %zu offsets for %zu "
                       "buffers",
                       m, nnmem_plan_count(pl), nnmem_problem_count(pr));
  nnmem_verify_report_t rep;
  nnmem_status_t st =
      nnmem_plan_verify(pr, nnmem_plan_offsets(pl), 0, 0, &rep, diag);
  if (st != NNMEM_OK) return st;
  if (rep.height > nnmem_plan_height(pl)) /* the region is sized by heights */
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "model %zu: buffers reach byte %llu, past the "
                       "plan's height %llu (a plan of another problem?)",
                       m, (unsigned long long)rep.height,
                       (unsigned long long)nnmem_plan_height(pl));
  const nnmem_buffer_t *b = nnmem_problem_buffers(pr);
  for (size_t i = 0; i < nnmem_problem_count(pr); i++)
    if (b[i].align > *align) *align = b[i].align;
  *align = nnmem__max_u64(*align, nnmem_plan_alignment(pl));
  return NNMEM_OK;
}

void nnmem_arena_destroy(nnmem_arena_t *a) {
  if (!a) return;
  if (a->raw) (void)nnmem_backend_free(a->backend, a->raw, a->raw_size);
  for (size_t i = 0; a->models && i < a->n_models; i++)
    free(a->models[i].offsets);
  free(a->models);
  free(a);
}

static nnmem_status_t copy_models(nnmem_arena_t *a,
                                  const nnmem_plan_t *const *plans) {
  for (size_t m = 0; m < a->n_models; m++) {
    size_t n = nnmem_plan_count(plans[m]);
    a->models[m].n = n;
    a->models[m].offsets = malloc((n ? n : 1) * sizeof(uint64_t));
    if (!a->models[m].offsets) return NNMEM_ERR_NOMEM;
    if (n)
      memcpy(a->models[m].offsets, nnmem_plan_offsets(plans[m]),
             n * sizeof(uint64_t));
  }
  return NNMEM_OK;
}

/* Step 3: a region of a->size bytes whose base is a multiple of `align`. */
static nnmem_status_t reserve(nnmem_arena_t *a, uint64_t align,
                              nnmem_diag_t *diag) {
  a->raw_size = a->size;
  nnmem_status_t st = nnmem_backend_alloc(a->backend, a->size, align, &a->raw);
  if (st == NNMEM_OK && ((uintptr_t)a->raw & (align - 1))) {
    /* the backend ignored the alignment: over-reserve and round up */
    (void)nnmem_backend_free(a->backend, a->raw, a->raw_size);
    a->raw = NULL;
    if (nnmem__add_overflow(a->size, align - 1, &a->raw_size))
      return nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
                         "the arena: %llu bytes aligned to %llu overflow",
                         (unsigned long long)a->size,
                         (unsigned long long)align);
    st = nnmem_backend_alloc(a->backend, a->raw_size, align, &a->raw);
  }
  if (st != NNMEM_OK) {
    a->raw = NULL;
    return nnmem__diag(diag, st, "the backend refused %llu bytes for the arena",
                       (unsigned long long)a->raw_size);
  }
  uintptr_t p =
      ((uintptr_t)a->raw + (uintptr_t)(align - 1)) & ~(uintptr_t)(align - 1);
  a->base = (void *)p;
  return NNMEM_OK;
}

void nnmem_arena_layout_config_init(nnmem_arena_layout_config_t *c) {
  memset(c, 0, sizeof *c);
  c->size = sizeof *c;
}

static void layout_config(const nnmem_arena_layout_config_t *in,
                          nnmem_arena_layout_config_t *c) {
  nnmem_arena_layout_config_init(c);
  if (!in) return;
  size_t n = in->size && in->size < sizeof *c ? in->size : sizeof *c;
  memcpy(c, in, n);
  c->size = sizeof *c;
}

static uint32_t group_of(const nnmem_arena_layout_config_t *c, size_t m) {
  return c->groups ? c->groups[m] : 0;
}

/* Steps: 1. each model alone starts at 0; 2. a model of group g starts at
 * the top of the previous member of g (rounded up to the alignment); 3. size
 * = max(base + height). The previous member is found by a backward scan:
 * O(n^2) worst case, n is a handful of models. */
nnmem_status_t nnmem_arena_layout(const uint64_t *heights, size_t n,
                                  const nnmem_arena_layout_config_t *cfg,
                                  uint64_t *bases, nnmem_arena_layout_t *out,
                                  nnmem_diag_t *diag) {
  nnmem_arena_layout_config_t c;
  layout_config(cfg, &c);
  if (!heights || !bases || !out || n == 0)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "an arena layout needs at least one model");
  uint64_t align = c.alignment ? c.alignment : 1;
  if (!nnmem__is_pow2(align))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "arena layout: alignment %llu is not a power of two",
                       (unsigned long long)c.alignment);
  memset(out, 0, sizeof *out);
  for (size_t m = 0; m < n; m++) {
    uint32_t g = group_of(&c, m);
    size_t prev = m;
    for (size_t j = m; g && j-- > 0;)
      if (group_of(&c, j) == g) {
        prev = j;
        break;
      }
    uint64_t base = 0, top;
    if (prev != m && (nnmem__add_overflow(bases[prev], heights[prev], &base) ||
                      nnmem__align_up(base, align, &base)))
      return nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
                         "arena layout: group %u overflows 64 bits", g);
    if (nnmem__add_overflow(base, heights[m], &top) ||
        nnmem__add_overflow(out->sum_heights, heights[m], &out->sum_heights))
      return nnmem__diag(diag, NNMEM_ERR_OVERFLOW,
                         "arena layout: model %zu overflows 64 bits", m);
    bases[m] = base;
    out->size = nnmem__max_u64(out->size, top);
    if (prev == m) out->slots++;
  }
  out->saving = out->sum_heights - out->size;
  return NNMEM_OK;
}

nnmem_status_t nnmem_arena_layout_check(const uint64_t *heights, size_t n,
                                        const nnmem_arena_layout_config_t *cfg,
                                        const uint64_t *bases, uint64_t size,
                                        nnmem_diag_t *diag) {
  nnmem_arena_layout_config_t c;
  layout_config(cfg, &c);
  if (!heights || !bases)
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "arena layout check: NULL");
  uint64_t align = c.alignment ? c.alignment : 1;
  for (size_t m = 0; m < n; m++) {
    if (bases[m] > size || heights[m] > size - bases[m])
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "arena layout: model %zu [%llu, +%llu) passes the "
                         "arena's %llu bytes",
                         m, (unsigned long long)bases[m],
                         (unsigned long long)heights[m],
                         (unsigned long long)size);
    if (bases[m] % align)
      return nnmem__diag(diag, NNMEM_ERR_STATE,
                         "arena layout: model %zu base %llu is not a "
                         "multiple of %llu",
                         m, (unsigned long long)bases[m],
                         (unsigned long long)align);
    for (size_t j = 0; j < m; j++) {
      if (!group_of(&c, m) || group_of(&c, j) != group_of(&c, m)) continue;
      /* both inside [0, size): the sums cannot overflow */
      if (heights[m] && heights[j] && bases[m] < bases[j] + heights[j] &&
          bases[j] < bases[m] + heights[m])
        return nnmem__diag(diag, NNMEM_ERR_STATE,
                           "arena layout: concurrent models %zu and %zu "
                           "overlap",
                           j, m);
    }
  }
  return NNMEM_OK;
}

nnmem_status_t nnmem_arena_create_grouped(
    const nnmem_problem_t *const *problems, const nnmem_plan_t *const *plans,
    size_t n, const nnmem_arena_layout_config_t *cfg, nnmem_backend_t *backend,
    nnmem_arena_t **out, nnmem_diag_t *diag) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = NULL;
  if (!problems || !plans || n == 0 || !backend)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "an arena needs at least one plan and a backend");
  uint64_t align = backend->alignment ? backend->alignment : 1;
  uint64_t *heights = calloc(2 * n, sizeof *heights), *bases = heights + n;
  if (!heights) return NNMEM_ERR_NOMEM;
  nnmem_status_t st = NNMEM_OK;
  for (size_t m = 0; m < n && st == NNMEM_OK; m++) {
    st = check_model(problems[m], plans[m], m, &align, diag);
    if (st == NNMEM_OK) heights[m] = nnmem_plan_height(plans[m]);
  }
  nnmem_arena_layout_config_t c;
  layout_config(cfg, &c);
  c.alignment = nnmem__max_u64(c.alignment, align); /* bases keep alignment */
  nnmem_arena_layout_t lay;
  if (st == NNMEM_OK)
    st = nnmem_arena_layout(heights, n, &c, bases, &lay, diag);
  if (st == NNMEM_OK)
    st = nnmem_arena_layout_check(heights, n, &c, bases, lay.size, diag);
  nnmem_arena_t *a = st == NNMEM_OK ? calloc(1, sizeof *a) : NULL;
  if (st == NNMEM_OK && !a) st = NNMEM_ERR_NOMEM;
  if (st != NNMEM_OK) {
    free(heights);
    return st;
  }
  a->backend = backend;
  a->n_models = n;
  a->sum_heights = lay.sum_heights;
  a->models = calloc(n, sizeof *a->models);
  st = a->models ? copy_models(a, plans) : NNMEM_ERR_NOMEM;
  for (size_t m = 0; st == NNMEM_OK && m < n; m++)
    a->models[m].base = bases[m];
  free(heights);
  a->size = lay.size ? lay.size : 1; /* an empty plan still gets a base */
  if (st == NNMEM_OK) st = reserve(a, align, diag);
  if (st != NNMEM_OK) {
    nnmem_arena_destroy(a);
    return st;
  }
  *out = a;
  return NNMEM_OK;
}

nnmem_status_t nnmem_arena_create_shared(const nnmem_problem_t *const *problems,
                                         const nnmem_plan_t *const *plans,
                                         size_t n, nnmem_backend_t *backend,
                                         nnmem_arena_t **out,
                                         nnmem_diag_t *diag) {
  return nnmem_arena_create_grouped(problems, plans, n, NULL, backend, out,
                                    diag);
}

nnmem_status_t nnmem_arena_model_base(const nnmem_arena_t *a, size_t model,
                                      uint64_t *base_out) {
  if (!a || !base_out) return NNMEM_ERR_INVALID;
  if (model >= a->n_models) return NNMEM_ERR_NOT_FOUND;
  *base_out = a->models[model].base;
  return NNMEM_OK;
}

nnmem_status_t nnmem_arena_create(const nnmem_problem_t *problem,
                                  const nnmem_plan_t *plan,
                                  nnmem_backend_t *backend, nnmem_arena_t **out,
                                  nnmem_diag_t *diag) {
  return nnmem_arena_create_shared(&problem, &plan, 1, backend, out, diag);
}

nnmem_status_t nnmem_arena_address(const nnmem_arena_t *a, size_t model,
                                   size_t buffer, void **out) {
  if (!a || !out) return NNMEM_ERR_INVALID;
  *out = NULL;
  if (model >= a->n_models || buffer >= a->models[model].n)
    return NNMEM_ERR_NOT_FOUND;
  *out = (char *)a->base + a->models[model].base +
         a->models[model].offsets[buffer];
  return NNMEM_OK;
}

void nnmem_arena_info(const nnmem_arena_t *a, nnmem_arena_info_t *out) {
  memset(out, 0, sizeof *out);
  if (!a) return;
  out->base = a->base;
  out->size = a->size;
  out->sum_heights = a->sum_heights;
  out->saving = a->sum_heights > a->size ? a->sum_heights - a->size : 0;
  out->models = a->n_models;
}

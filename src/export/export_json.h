/* export_json.h - the JSON documents of src/export as members written into
 * an open nnmem__jw_t (internal, never installed), so that the CLI can
 * embed them in its own reports with the same writer, the same style and
 * exact integers instead of re-parsing text. */
#ifndef NNMEM_EXPORT_JSON_H
#define NNMEM_EXPORT_JSON_H

#include "common/json_write.h"
#include "nnmem/io.h"

/* The members of memory_profile.json (see profile_json.c), written into
 * the object the caller opened. `model` may be NULL (no "model" key). */
void nnmem__profile_json_members(nnmem__jw_t *w, const nnmem_profile_t *prof,
                                 const char *model);

/* The "timeline" member of memory_profile.json for a plan of `p` (see
 * profile_timeline.c): the live root bytes per step (sizes rounded up to
 * `align`), plus `weights` in each entry's peak_bytes. NNMEM_ERR_NOMEM. */
nnmem_status_t nnmem__profile_json_timeline(nnmem__jw_t *w,
                                            const nnmem_problem_t *p,
                                            uint64_t align, uint64_t weights);

/* The whole plan JSON object of a graph (see plan_json.c). NNMEM_ERR_INVALID
 * when the plan, liveness and graph do not belong together. */
nnmem_status_t nnmem__plan_json(nnmem__jw_t *w, const nnmem_graph_t *g,
                                const nnmem_liveness_t *l,
                                const nnmem_plan_t *plan, uint64_t alignment);

/* The plan JSON object of a bare problem: the graph form without "model",
 * "weight_bytes", "tensors" and the buffers' "kind". NNMEM_ERR_INVALID when
 * the plan is not of this problem. */
nnmem_status_t nnmem__problem_plan_json(nnmem__jw_t *w,
                                        const nnmem_problem_t *p,
                                        const nnmem_plan_t *plan,
                                        uint64_t alignment);

#endif /* NNMEM_EXPORT_JSON_H */

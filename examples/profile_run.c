/* profile_run.c - the run-time profiler on a small "inference": weights
 * loaded once, then six operator steps whose activations and one workspace
 * come and go through nnmem's allocator. Writes the measured
 * memory_profile.json and the same buffers as a MiniMalloc problem, so the
 * planner's profile of that problem compares with `nnmem diff`:
 *
 *   profile_run measured.json problem.csv
 *   nnmem plan problem.csv --profile planned.json -q
 *   nnmem diff planned.json measured.json
 *
 * Buffers: {size, first step, last step (exclusive), tag}. The problem CSV
 * lists the activations and the workspace (a CSV problem has no weights). */
#include <stdio.h>
#include <stdlib.h>

#include "nnmem/nnmem.h"

typedef struct buf {
  const char *id;
  size_t size;
  unsigned first, last;
  nnmem_tag_t tag;
} buf_t;

static const buf_t bufs[] = {
    {"input", 150528, 0, 1, NNMEM_TAG_ACTIVATION},
    {"conv1", 802816, 0, 2, NNMEM_TAG_ACTIVATION},
    {"ws_conv1", 65536, 0, 1, NNMEM_TAG_WORKSPACE},
    {"relu1", 802816, 1, 3, NNMEM_TAG_ACTIVATION},
    {"pool1", 200704, 2, 4, NNMEM_TAG_ACTIVATION},
    {"conv2", 401408, 3, 5, NNMEM_TAG_ACTIVATION},
    {"fc", 4000, 4, 6, NNMEM_TAG_ACTIVATION},
    {"softmax", 4000, 5, 6, NNMEM_TAG_ACTIVATION},
};
#define N_BUFS (sizeof bufs / sizeof bufs[0])
#define STEPS 6

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: profile_run MEASURED.json PROBLEM.csv\n");
    return 1;
  }
  nnmem_allocator_t *a;
  if (nnmem_allocator_create(NULL, &a) != NNMEM_OK) return 1;
  nnmem_profiler_t *pr;
  if (nnmem_profiler_start(a, &pr) != NNMEM_OK) return 1;
  nnmem_profiler_tag(pr, NNMEM_TAG_WEIGHT); /* weights: 2 MiB, resident */
  void *weights = nnmem_alloc(a, 2u << 20);
  void *live[N_BUFS] = {0};
  for (unsigned s = 0; s < STEPS; s++) {
    for (size_t i = 0; i < N_BUFS; i++) /* frees first, as the planner */
      if (bufs[i].last == s && live[i]) nnmem_free(a, live[i]), live[i] = 0;
    for (size_t i = 0; i < N_BUFS; i++)
      if (bufs[i].first == s) {
        nnmem_profiler_tag(pr, bufs[i].tag);
        live[i] = nnmem_alloc(a, bufs[i].size);
      }
    nnmem_profiler_step(pr);
  }
  for (size_t i = 0; i < N_BUFS; i++)
    nnmem_free(a, live[i]);
  nnmem_free(a, weights);
  nnmem_profiler_stop(pr);
  nnmem_diag_t d = {0};
  if (nnmem_profiler_export(pr, argv[1], &d) != NNMEM_OK) {
    fprintf(stderr, "profile_run: %s\n", d.message);
    return 1;
  }
  nnmem_profiler_result_t r;
  nnmem_profiler_result(pr, &r);
  printf(
      "measured: peak %llu B at step %llu (weights %llu, activations %llu, "
      "workspace %llu), reuse %.3f\n",
      (unsigned long long)r.peak_memory, (unsigned long long)r.peak_step,
      (unsigned long long)r.weight_memory,
      (unsigned long long)r.activation_memory,
      (unsigned long long)r.workspace_memory, r.reuse_ratio);
  nnmem_profiler_destroy(pr);
  nnmem_allocator_destroy(a);
  FILE *f = fopen(argv[2], "w");
  if (!f) return 1;
  fprintf(f, "id,lower,upper,size\n");
  for (size_t i = 0; i < N_BUFS; i++)
    fprintf(f, "%s,%u,%u,%zu\n", bufs[i].id, bufs[i].first, bufs[i].last,
            bufs[i].size);
  return fclose(f) == 0 ? 0 : 1;
}

/* fuzz_planned.c - fuzz harness for the plan-backed allocator's loading
 * of a plan JSON (nnmem_planned_serve, src/runtime/planned.c).
 *
 * 1. nnmem_plan_read_json on the raw bytes, or when they are no plan
 *    JSON, the CSV reader (a plan CSV with an offset column: the malloc
 *    front's serve mode); unreadable input stops here (fuzz_plan_json and
 *    fuzz_csv cover the readers).
 * 2. Plans over 4 MiB high are skipped (the harness serves from real
 *    memory); otherwise nnmem_planned_serve: on error the output is NULL
 *    and diag says why.
 * 3. On success the run the plan describes is played three times - as
 *    planned, with every third request 8 bytes bigger (divergence), and
 *    with each step's frees in reverse order through the inline calls (the
 *    fast path's scan and the offset table): each block is filled with its index when allocated
 *    and checked when freed, so two served blocks that overlap while live
 *    are caught whatever the plan says; every request must get memory,
 *    and the stats must account for every request (served + fallback).
 * Findings: sanitizer reports, crashes, aborts on broken invariants.
 * Linked either with libFuzzer or with replay_main.c. Not thread-safe. */
#include <string.h>

#include "fuzz_common.h"
#include "nnmem/planned_inline.h"

enum { MAX_HEIGHT = 4u << 20, MAX_BUFS = 512 };

/* Returns the number of requests made. mode 1: bump, 2: frees reversed,
 * through nnmem/planned_inline.h. */
static uint64_t play(nnmem_planned_t *pl, const nnmem_buffer_t *b, size_t n,
                     int mode) {
  int bump = mode == 1;
  uint64_t nreq = 0;
  static unsigned char *ptr[MAX_BUFS];
  static uint64_t size[MAX_BUFS];
  uint64_t step = 0, end = 0;
  for (size_t i = 0; i < n; i++)
    if (b[i].last > end) end = b[i].last;
  for (; step < end; step++) {
    for (size_t i = 0; i < n; i++)
      if (b[i].first == step) {
        size[i] = b[i].size + (bump && i % 3 == 0 ? 8 : 0);
        ptr[i] = mode == 2 ? nnmem_planned_alloc_inline(pl, size[i])
                           : nnmem_planned_alloc(pl, size[i]);
        nreq++;
        if (!ptr[i]) fuzz_fail("a request got no memory", NULL);
        memset(ptr[i], (int)(i & 0xFF), size[i]);
      }
    for (size_t q = 0; q < n; q++) {
      size_t i = mode == 2 ? n - 1 - q : q;
      if (b[i].last == step + 1) {
        for (uint64_t k = 0; k < size[i]; k++)
          if (ptr[i][k] != (unsigned char)(i & 0xFF))
            fuzz_fail("a served block was overwritten while live", NULL);
        if (mode == 2)
          nnmem_planned_free_inline(pl, ptr[i]);
        else
          nnmem_planned_free(pl, ptr[i]);
      }
    }
    if (mode == 2)
      nnmem_step_inline(pl);
    else
      nnmem_step(pl);
  }
  return nreq;
}

/* Serves and plays the plan (p, offs) when it is small enough. */
static void serve_and_play(const nnmem_problem_t *p, const uint64_t *offs) {
  nnmem_diag_t diag = {0};
  size_t n = nnmem_problem_count(p);
  const nnmem_buffer_t *b = nnmem_problem_buffers(p);
  int small = n > 0 && n <= MAX_BUFS;
  for (size_t i = 0; small && i < n; i++)
    if (b[i].size > MAX_HEIGHT || offs[i] > MAX_HEIGHT - b[i].size ||
        b[i].last > 4 * MAX_BUFS)
      small = 0;
  nnmem_allocator_t *a = NULL;
  if (!small || nnmem_allocator_create(NULL, &a) != NNMEM_OK) return;
  for (int mode = 0; mode < 3; mode++) {
    nnmem_planned_t *pl = (nnmem_planned_t *)&diag;
    diag.message[0] = '\0';
    if (nnmem_planned_serve(a, p, offs, NULL, &pl, &diag) != NNMEM_OK) {
      if (pl) fuzz_fail("output set on error", NULL);
      if (!diag.message[0]) fuzz_fail("error without a message", NULL);
      break;
    }
    uint64_t nreq = play(pl, b, n, mode);
    nnmem_planned_stats_t st;
    if (nnmem_planned_stats(pl, &st) != NNMEM_OK ||
        st.served + st.fallback != nreq || st.allocs != nreq)
      fuzz_fail("served + fallback != requests", NULL);
    if (mode != 1 && st.fallback != 0)
      fuzz_fail("a run as planned fell back", NULL);
    nnmem_planned_destroy(pl);
  }
  nnmem_allocator_destroy(a);
}

/* The input as a plan JSON (nnmem_planned_load's reader) or, when it is
 * none, as a plan CSV with an offset column (what the malloc front's serve
 * mode reads, tools/malloc/serve.c). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  nnmem_problem_t *p = NULL;
  uint64_t *offs = NULL;
  nnmem_diag_t diag = {0};
  if (nnmem_plan_read_json((const char *)data, size, "fuzz.json", &p, &offs,
                           &diag) == NNMEM_OK) {
    serve_and_play(p, offs);
    nnmem_problem_destroy(p);
    free(offs);
    return 0;
  }
  nnmem_csv_t *csv = NULL;
  if (nnmem_csv_parse((const char *)data, size, "fuzz.csv", &csv, &diag) ==
      NNMEM_OK) {
    if (nnmem_csv_offsets(csv))
      serve_and_play(nnmem_csv_problem(csv), nnmem_csv_offsets(csv));
    nnmem_csv_destroy(csv);
  }
  return 0;
}

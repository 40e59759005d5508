/* test_heap.c - the handle heap: hand-computed compaction layouts (with and
 * without pinned blocks), data preserved across copy and mremap moves,
 * committed bytes recomputed independently from the live blocks, stale and
 * forged handles detected in a randomized run (fixed seed, printed),
 * misuse counted, the AUTO trigger, config errors with diag, and replay. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static nnmem_backend_t *sim(int backed) {
  nnmem_sim_config_t c = {0};
  c.backed = backed;
  nnmem_backend_t *b = NULL;
  assert_ok(nnmem_backend_sim_create(&c, &b));
  return b;
}

static nnmem_heap_t *make(nnmem_backend_t *b, uint64_t cap,
                          nnmem_segment_kind_t seg, int remap,
                          nnmem_defrag_mode_t defrag) {
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  c.capacity = cap;
  c.segment = seg;
  c.remap = remap;
  c.defrag = defrag;
  c.granule = 4096;
  nnmem_heap_t *h = NULL;
  nnmem_diag_t d = {{0}};
  nnmem_status_t s = nnmem_heap_create(&c, b, &h, &d);
  if (s != NNMEM_OK) fail_msg("heap create: %s", d.message);
  return h;
}

static void check(nnmem_heap_t *h, uint64_t seed, long step) {
  nnmem_diag_t d = {{0}};
  if (nnmem_heap_check(h, &d) != NNMEM_OK)
    fail_msg("seed %llu step %ld: %s", (unsigned long long)seed, step,
             d.message);
}

static uint64_t off_of(nnmem_heap_t *h, nnmem_handle_t t) {
  uint64_t off = 0;
  assert_ok(nnmem_handle_info(h, t, &off, NULL, NULL));
  return off;
}

static void fill(nnmem_heap_t *h, nnmem_handle_t t, uint64_t n) {
  unsigned char *p = NULL;
  assert_ok(nnmem_handle_pin(h, t, (void **)&p));
  for (uint64_t i = 0; i < n; i++)
    p[i] = (unsigned char)(t.bits * 31 + i);
  assert_ok(nnmem_handle_unpin(h, t));
}

static int intact(nnmem_heap_t *h, nnmem_handle_t t, uint64_t n) {
  unsigned char *p = NULL;
  assert_ok(nnmem_handle_pin(h, t, (void **)&p));
  int ok = 1;
  for (uint64_t i = 0; i < n && ok; i++)
    ok = p[i] == (unsigned char)(t.bits * 31 + i);
  assert_ok(nnmem_handle_unpin(h, t));
  return ok;
}

static uint64_t committed(nnmem_heap_t *h) {
  nnmem_stats_t st;
  assert_ok(nnmem_heap_stats(h, &st, NULL));
  return st.reserved_bytes;
}

/* Placement keeps committed granules near live bytes (4 KiB granules,
 * alignment 256; offsets worked out by hand):
 *   1. a block of whole granules starts on a granule boundary: after a
 *      1000 B block at 0, an 8 KiB block goes to 4096, not 1024 (where it
 *      would straddle three granules), so freeing the small one leaves
 *      exactly two granules committed;
 *   2. an odd-sized block in an inner gap goes against the gap's end when
 *      the next block already holds that granule: gap [4096, 12544) before
 *      a block at 12544, 256 B -> 12288, committing nothing new. */
static void test_placement(void **state) {
  (void)state;
  nnmem_backend_t *dev = NULL;
  nnmem_sim_config_t sc = {0};
  assert_ok(nnmem_backend_sim_create(&sc, &dev));
  nnmem_heap_t *h = make(dev, 1 << 20, NNMEM_SEGMENT_BACKEND, 0,
                         NNMEM_DEFRAG_OFF);
  nnmem_handle_t s, big;
  assert_ok(nnmem_handle_alloc(h, 1000, 0, &s));
  assert_ok(nnmem_handle_alloc(h, 8192, 0, &big));
  assert_int_equal(off_of(h, s), 0);
  assert_int_equal(off_of(h, big), 4096);
  assert_int_equal(committed(h), 3 * 4096);
  assert_ok(nnmem_handle_free(h, s));
  assert_int_equal(committed(h), 2 * 4096);
  assert_ok(nnmem_handle_free(h, big));
  assert_int_equal(committed(h), 0);
  nnmem_handle_t a, x, b, t;
  assert_ok(nnmem_handle_alloc(h, 4096, 0, &a));
  assert_ok(nnmem_handle_alloc(h, 8448, 0, &x));
  assert_ok(nnmem_handle_alloc(h, 1000, 0, &b));
  assert_int_equal(off_of(h, x), 4096);
  assert_int_equal(off_of(h, b), 12544);
  assert_ok(nnmem_handle_free(h, x)); /* granules 1 and 2 decommitted */
  assert_int_equal(committed(h), 2 * 4096);
  assert_ok(nnmem_handle_alloc(h, 256, 0, &t));
  assert_int_equal(off_of(h, t), 12288);
  assert_int_equal(committed(h), 2 * 4096);
  check(h, 0, 0);
  nnmem_heap_destroy(h);
  nnmem_backend_destroy(dev);
}

/* [a 1K][b 2K][c 1K][d 4K] free b and d? -> compaction slides c down. */
static void test_compact_layout(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(1);
  nnmem_heap_t *h = make(b, 64 << 10, NNMEM_SEGMENT_BACKEND, 0, 0);
  nnmem_handle_t t[4];
  uint64_t sz[4] = {1024, 2048, 1000, 4096};
  for (int i = 0; i < 4; i++) {
    assert_ok(nnmem_handle_alloc(h, sz[i], 0, &t[i]));
    fill(h, t[i], sz[i]);
  }
  assert_int_equal(off_of(h, t[2]), 3072);
  assert_int_equal(off_of(h, t[3]), 4096);
  assert_ok(nnmem_handle_free(h, t[1]));
  nnmem_compact_report_t r;
  assert_ok(nnmem_heap_compact(h, &r));
  check(h, 0, 0);
  /* c (1000 -> 1024 bytes) moves from 3072 to 1024, d from 4096 to 2048 */
  assert_int_equal(off_of(h, t[0]), 0);
  assert_int_equal(off_of(h, t[2]), 1024);
  assert_int_equal(off_of(h, t[3]), 2048);
  assert_int_equal(r.blocks_moved, 2);
  assert_int_equal(r.bytes_moved, 1024 + 4096);
  assert_int_equal(r.free_bytes, (64 << 10) - 6144);
  assert_int_equal(r.largest_after, r.free_bytes);
  assert_true(r.largest_before < r.free_bytes);
  assert_true(r.frag_after == 0.0 && r.frag_before > 0.0);
  assert_true(intact(h, t[0], 1024) && intact(h, t[2], 1000) &&
              intact(h, t[3], 4096));
  nnmem_heap_destroy(h);
  nnmem_backend_destroy(b);
}

/* Pinned blocks stay put; the others pack around them. */
static void test_compact_pinned(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(1);
  nnmem_heap_t *h = make(b, 16 << 10, NNMEM_SEGMENT_BACKEND, 0, 0);
  nnmem_handle_t t[8];
  for (int i = 0; i < 8; i++) {
    assert_ok(nnmem_handle_alloc(h, 1024, 0, &t[i]));
    fill(h, t[i], 1024);
  }
  /* free 0, 1, 3, 5; pin 4 (at 4096). Layout: [..][..][2][..][P4][..][6][7] */
  int freed[] = {0, 1, 3, 5};
  for (int i = 0; i < 4; i++)
    assert_ok(nnmem_handle_free(h, t[freed[i]]));
  void *p4;
  assert_ok(nnmem_handle_pin(h, t[4], &p4));
  nnmem_compact_report_t r;
  assert_ok(nnmem_heap_compact(h, &r));
  check(h, 0, 0);
  assert_int_equal(r.pinned_blocks, 1);
  assert_int_equal(off_of(h, t[4]), 4096); /* stayed */
  void *q4;
  assert_ok(nnmem_handle_pin(h, t[4], &q4));
  assert_ptr_equal(p4, q4);
  /* 2 -> 0, 6 -> 1024, 7 -> 2048: they jump below the pinned block */
  assert_int_equal(off_of(h, t[2]), 0);
  assert_int_equal(off_of(h, t[6]), 1024);
  assert_int_equal(off_of(h, t[7]), 2048);
  /* free = 16K - 4K; largest gap: after the pinned block, 16K - 5K */
  assert_int_equal(r.largest_after, (16 << 10) - 5120);
  for (int i = 2; i < 8; i++)
    if (i != 3 && i != 5) assert_true(intact(h, t[i], 1024));
  /* a pinned block cannot be freed */
  assert_int_equal(nnmem_handle_free(h, t[4]), NNMEM_ERR_STATE);
  assert_ok(nnmem_handle_unpin(h, t[4]));
  assert_ok(nnmem_handle_unpin(h, t[4]));
  assert_int_equal(nnmem_handle_unpin(h, t[4]), NNMEM_ERR_STATE);
  assert_ok(nnmem_heap_compact(h, &r));
  assert_int_equal(off_of(h, t[4]), 3072);
  assert_int_equal(r.largest_after, r.free_bytes);
  nnmem_heap_counters_t hc;
  nnmem_stats_t st;
  assert_ok(nnmem_heap_stats(h, &st, &hc));
  assert_int_equal(hc.pinned_frees, 1);
  assert_int_equal(hc.bad_unpins, 1);
  assert_int_equal(st.misuse_count, 2);
  assert_int_equal(hc.compactions, 2);
  nnmem_heap_destroy(h);
  nnmem_backend_destroy(b);
}

/* Committed bytes recomputed from the live blocks, by granule. */
static uint64_t committed_by_hand(nnmem_heap_t *h, nnmem_handle_t *t,
                                  const int *live, int n, uint64_t gran,
                                  uint64_t cap) {
  unsigned char *touched = calloc(cap / gran, 1);
  uint64_t c = 0;
  for (int i = 0; i < n; i++) {
    if (!live[i]) continue;
    uint64_t off, size;
    assert_ok(nnmem_handle_info(h, t[i], &off, &size, NULL));
    for (uint64_t g = off / gran; g < (off + size + gran - 1) / gran; g++)
      if (!touched[g]) touched[g] = 1, c += gran;
  }
  free(touched);
  return c;
}

/* Host virtual memory: copy and mremap moves keep the data; granules are
 * decommitted when blocks leave them. */
static void run_host_vm(int remap) {
  const uint64_t cap = 8 << 20, page = 4096;
  nnmem_heap_t *h = make(NULL, cap, NNMEM_SEGMENT_HOST_VM, remap, 0);
  enum { N = 64 };
  nnmem_handle_t t[N];
  int live[N];
  uint64_t seed = 7 + (uint64_t)remap, rng = seed;
  uint64_t sz[N];
  for (int i = 0; i < N; i++) {
    sz[i] = page * (1 + tu_rand(&rng) % 8) - (remap ? 0 : 100);
    assert_ok(nnmem_handle_alloc(h, sz[i], 0, &t[i]));
    fill(h, t[i], sz[i]);
    live[i] = 1;
  }
  for (int i = 0; i < N; i += 2) {
    assert_ok(nnmem_handle_free(h, t[i]));
    live[i] = 0;
  }
  nnmem_stats_t st;
  assert_ok(nnmem_heap_stats(h, &st, NULL));
  assert_int_equal(st.reserved_bytes,
                   committed_by_hand(h, t, live, N, page, cap));
  nnmem_compact_report_t r;
  assert_ok(nnmem_heap_compact(h, &r));
  check(h, seed, 0);
  assert_true(r.bytes_moved > 0);
  if (remap) assert_true(r.bytes_remapped > 0);
  if (!remap) assert_int_equal(r.bytes_remapped, 0);
  assert_int_equal(r.largest_after, r.free_bytes);
  for (int i = 1; i < N; i += 2)
    if (!intact(h, t[i], sz[i]))
      fail_msg("remap %d seed %llu: block %d corrupted by compaction", remap,
               (unsigned long long)seed, i);
  assert_ok(nnmem_heap_stats(h, &st, NULL));
  assert_int_equal(st.reserved_bytes,
                   committed_by_hand(h, t, live, N, page, cap));
  /* memory after the moved blocks is usable again (mapped read/write) */
  nnmem_handle_t big;
  assert_ok(nnmem_handle_alloc(h, 64 * page, 0, &big));
  fill(h, big, 64 * page);
  assert_true(intact(h, big, 64 * page));
  nnmem_heap_destroy(h);
}

static void test_host_vm_copy(void **state) {
  (void)state;
  run_host_vm(0);
}
static void test_host_vm_remap(void **state) {
  (void)state;
  run_host_vm(1);
}

/* Randomized: every stale or forged handle is refused; the live blocks
 * keep their data through compactions. */
static void test_stale_random(void **state) {
  (void)state;
  const uint64_t seed = 20261201;
  uint64_t rng = seed;
  printf("test_stale_random: seed %llu\n", (unsigned long long)seed);
  nnmem_backend_t *b = sim(1);
  nnmem_heap_t *h = make(b, 4 << 20, NNMEM_SEGMENT_BACKEND, 0, 0);
  enum { N = 256, DEAD = 4096 };
  nnmem_handle_t t[N], dead[DEAD];
  uint64_t sz[N];
  int live[N] = {0}, n_dead = 0;
  uint64_t stale_uses = 0;
  for (long step = 0; step < 200000; step++) {
    int i = (int)(tu_rand(&rng) % N);
    unsigned op = (unsigned)(tu_rand(&rng) % 8);
    if (!live[i]) {
      sz[i] = 1 + tu_rand(&rng) % 8192;
      if (nnmem_handle_alloc(h, sz[i], 0, &t[i]) == NNMEM_OK) {
        live[i] = 1;
        fill(h, t[i], sz[i] < 64 ? sz[i] : 64);
      }
    } else if (op < 3) {
      if (!intact(h, t[i], sz[i] < 64 ? sz[i] : 64))
        fail_msg("seed %llu step %ld: data lost", (unsigned long long)seed,
                 step);
      assert_ok(nnmem_handle_free(h, t[i]));
      live[i] = 0;
      dead[n_dead++ % DEAD] = t[i];
    } else if (op == 3 && n_dead) {
      nnmem_handle_t s = dead[tu_rand(&rng) % (n_dead < DEAD ? n_dead : DEAD)];
      void *p = (void *)1;
      int k = (int)(tu_rand(&rng) % 3);
      nnmem_status_t st = k == 0   ? nnmem_handle_pin(h, s, &p)
                          : k == 1 ? nnmem_handle_unpin(h, s)
                                   : nnmem_handle_free(h, s);
      if (st != NNMEM_ERR_INVALID)
        fail_msg("seed %llu step %ld: stale handle %llx accepted (%s)",
                 (unsigned long long)seed, step, (unsigned long long)s.bits,
                 nnmem_status_name(st));
      stale_uses++;
    } else if (op == 4) {
      nnmem_handle_t f = {tu_rand(&rng)}; /* forged: random bits */
      void *p;
      nnmem_status_t st = nnmem_handle_pin(h, f, &p);
      int valid = 0;
      for (int j = 0; j < N; j++)
        valid |= live[j] && t[j].bits == f.bits;
      if (!valid) {
        assert_int_equal(st, NNMEM_ERR_INVALID);
        stale_uses++;
      } else {
        assert_ok(nnmem_handle_unpin(h, f));
      }
    } else if (op == 5 && step % 97 == 0) {
      nnmem_compact_report_t r;
      assert_ok(nnmem_heap_compact(h, &r));
      assert_int_equal(r.largest_after, r.free_bytes);
      check(h, seed, step);
    }
    if (step % 4096 == 0) check(h, seed, step);
  }
  nnmem_heap_counters_t hc;
  assert_ok(nnmem_heap_stats(h, NULL, &hc));
  assert_int_equal(hc.stale_handles, stale_uses);
  assert_true(stale_uses > 10000);
  printf("test_stale_random: %llu stale/forged uses, all refused\n",
         (unsigned long long)stale_uses);
  nnmem_heap_destroy(h);
  nnmem_backend_destroy(b);
}

/* AUTO: a request that only fits after compaction succeeds; OFF fails. */
static void test_auto(void **state) {
  (void)state;
  for (int mode = 0; mode < 2; mode++) {
    nnmem_backend_t *b = sim(0);
    nnmem_heap_t *h = make(b, 8192, NNMEM_SEGMENT_BACKEND, 0,
                           mode ? NNMEM_DEFRAG_AUTO : NNMEM_DEFRAG_OFF);
    nnmem_handle_t t[8], big;
    for (int i = 0; i < 8; i++)
      assert_ok(nnmem_handle_alloc(h, 1024, 0, &t[i]));
    for (int i = 0; i < 8; i += 2)
      assert_ok(nnmem_handle_free(h, t[i]));
    nnmem_status_t s = nnmem_handle_alloc(h, 4096, 0, &big);
    assert_int_equal(s, mode ? NNMEM_OK : NNMEM_ERR_NOMEM);
    nnmem_heap_counters_t hc;
    assert_ok(nnmem_heap_stats(h, NULL, &hc));
    assert_int_equal(hc.compactions_auto, mode ? 1 : 0);
    /* 4 blocks left + 4096 > capacity: no compaction can help */
    assert_int_equal(nnmem_handle_alloc(h, 4096, 0, &big), NNMEM_ERR_NOMEM);
    check(h, 0, mode);
    nnmem_heap_destroy(h);
    nnmem_backend_destroy(b);
  }
}

/* A clock that advances `step` ns per reading: a timed allocation lasts
 * exactly `step`. */
typedef struct fake_clock {
  uint64_t now, step, reads;
} fake_clock_t;

static uint64_t fake_now(void *user) {
  fake_clock_t *c = user;
  c->reads++;
  return c->now += c->step;
}

static uint64_t lat_compactions(nnmem_heap_t *h, uint64_t *avg) {
  nnmem_heap_counters_t hc;
  assert_ok(nnmem_heap_stats(h, NULL, &hc));
  assert_int_equal(hc.compactions_auto, hc.compactions_latency);
  if (avg) *avg = hc.lat_avg_ns;
  return hc.compactions_latency;
}

/* Free the newest block and allocate it again: the same spot, so
 * utilization stays put and fragmentation stays 0 (only the latency signal
 * can fire). */
static void cycle(nnmem_heap_t *h, nnmem_handle_t *last) {
  assert_ok(nnmem_handle_free(h, *last));
  assert_ok(nnmem_handle_alloc(h, 1024, 0, last));
}

/* The latency signal with an injected clock: 64 KiB heap, blocks of 1 KiB,
 * every allocation timed and every one a policy check. Baseline 100 ns; at
 * 300 ns the average 300 - 200 x (7/8)^k first reaches 2 x 100 at k = 6
 * samples (k = 5 gives 197.4), so the 7th allocation's check compacts;
 * then nothing until the average has fallen to 1.25 x 100 and risen
 * again. Controls: utilization under util_min, and the signal off. */
static void run_latency(int blocks, double lat_high, uint64_t want_total) {
  nnmem_backend_t *b = sim(0);
  nnmem_heap_config_t c;
  nnmem_heap_config_init(&c);
  fake_clock_t clk = {0, 100, 0};
  c.capacity = 64 << 10;
  c.granule = 4096;
  c.defrag = NNMEM_DEFRAG_AUTO;
  c.check_every = 1;
  c.lat_every = 1;
  c.lat_high = lat_high;
  c.clock_ns = fake_now;
  c.clock_user = &clk;
  nnmem_heap_t *h = NULL;
  assert_ok(nnmem_heap_create(&c, b, &h, NULL));
  nnmem_handle_t last = {0};
  for (int i = 0; i < blocks; i++)
    assert_ok(nnmem_handle_alloc(h, 1024, 0, &last));
  assert_int_equal(lat_compactions(h, NULL), 0);
  int on = lat_high > 0 && blocks >= 45; /* 45 KiB / 64 KiB >= 0.70 */
  clk.step = 300;
  for (int i = 0; i < 20; i++) {
    assert_int_equal(lat_compactions(h, NULL), on && i > 6 ? 1 : 0);
    cycle(h, &last);
  }
  uint64_t avg = 0;
  clk.step = 100; /* falling: re-arms, never fires */
  for (int i = 0; i < 40; i++)
    cycle(h, &last);
  assert_int_equal(lat_compactions(h, &avg), on ? 1 : 0);
  if (lat_high > 0) assert_true(avg >= 100 && avg <= 102);
  clk.step = 300; /* rising again: fires again once */
  for (int i = 0; i < 40; i++)
    cycle(h, &last);
  assert_int_equal(lat_compactions(h, NULL), want_total);
  if (lat_high <= 0) assert_int_equal(clk.reads, 0);
  check(h, 0, blocks);
  nnmem_heap_destroy(h);
  nnmem_backend_destroy(b);
}

static void test_auto_latency(void **state) {
  (void)state;
  run_latency(48, 2.0, 2); /* 75% used: fires twice */
  run_latency(16, 2.0, 0); /* 25% used: never */
  run_latency(48, 0, 0);   /* signal off: the clock is never read */
}

static void test_bad_input(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(0);
  nnmem_heap_t *h = NULL;
  nnmem_heap_config_t c;
  nnmem_diag_t d = {{0}};
  nnmem_heap_config_init(&c);
  assert_int_equal(nnmem_heap_create(&c, b, &h, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "capacity"));
  c.capacity = 1 << 20;
  c.alignment = 48;
  assert_int_equal(nnmem_heap_create(&c, b, &h, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "alignment 48"));
  c.alignment = 0;
  c.remap = 1;
  assert_int_equal(nnmem_heap_create(&c, b, &h, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "remap"));
  c.remap = 0;
  c.frag_low = 0.9;
  c.frag_high = 0.5;
  assert_int_equal(nnmem_heap_create(&c, b, &h, &d), NNMEM_ERR_INVALID);
  assert_null(h);
  c.frag_low = c.frag_high = 0;
  c.lat_high = 0.5; /* "rising" below the baseline */
  assert_int_equal(nnmem_heap_create(&c, b, &h, &d), NNMEM_ERR_INVALID);
  assert_non_null(strstr(d.message, "latency"));
  c.lat_high = 2;
  c.lat_low = 3;
  assert_int_equal(nnmem_heap_create(&c, b, &h, &d), NNMEM_ERR_INVALID);
  c.lat_high = c.lat_low = 0;
  assert_int_equal(nnmem_heap_create(&c, NULL, &h, &d), NNMEM_ERR_INVALID);
  assert_ok(nnmem_heap_create(&c, b, &h, &d));
  nnmem_handle_t t, zero = {0}, far = {((uint64_t)1 << 32) | 4000000000u};
  void *p = (void *)1;
  assert_int_equal(nnmem_handle_alloc(h, 0, 0, &t), NNMEM_ERR_INVALID);
  assert_int_equal(t.bits, 0);
  assert_int_equal(nnmem_handle_alloc(h, 10, 3, &t), NNMEM_ERR_INVALID);
  assert_int_equal(nnmem_handle_alloc(h, 2 << 20, 0, &t), NNMEM_ERR_NOMEM);
  assert_int_equal(nnmem_handle_pin(h, zero, &p), NNMEM_ERR_INVALID);
  assert_null(p);
  assert_int_equal(nnmem_handle_free(h, far), NNMEM_ERR_INVALID);
  assert_ok(nnmem_handle_alloc(h, 100, 0, &t));
  assert_int_equal(nnmem_handle_unpin(h, t), NNMEM_ERR_STATE);
  nnmem_handle_t wrong_gen = {t.bits + (1ULL << 32)};
  assert_int_equal(nnmem_handle_unpin(h, wrong_gen), NNMEM_ERR_INVALID);
  assert_ok(nnmem_handle_free(h, t));
  assert_int_equal(nnmem_handle_free(h, t), NNMEM_ERR_INVALID);
  nnmem_stats_t st;
  nnmem_heap_counters_t hc;
  assert_ok(nnmem_heap_stats(h, &st, &hc));
  assert_int_equal(hc.stale_handles, 4);
  assert_int_equal(hc.bad_unpins, 1);
  assert_int_equal(st.misuse_count, 5);
  assert_int_equal(st.failed_count, 3);
  assert_int_equal(st.live_count, 0);
  assert_int_equal(st.reserved_bytes, 0);
  check(h, 0, 0);
  nnmem_heap_destroy(h);
  nnmem_heap_destroy(NULL);
  nnmem_backend_destroy(b);
}

/* Replay: a trace whose holes only compaction can use. Buffers of 1 KiB
 * live [0,2) and [0,10) alternately, then one 4 KiB buffer at step 5. */
static void test_replay(void **state) {
  (void)state;
  nnmem_problem_t *p = NULL;
  assert_ok(nnmem_problem_create(&p));
  for (int i = 0; i < 8; i++)
    assert_ok(nnmem_problem_add(p, NULL, 1024, 1, 0, (i % 2) ? 10 : 2, NULL));
  assert_ok(nnmem_problem_add(p, NULL, 4096, 1, 5, 10, NULL));
  for (int mode = 0; mode < 2; mode++) {
    nnmem_heap_config_t c;
    nnmem_heap_config_init(&c);
    c.capacity = 8192;
    c.granule = 1024;
    c.defrag = mode ? NNMEM_DEFRAG_AUTO : NNMEM_DEFRAG_OFF;
    nnmem_heap_replay_result_t r;
    assert_ok(nnmem_heap_replay(p, &c, NULL, NULL, &r, NULL));
    assert_int_equal(r.failed_at, mode ? 0 : 9);
    assert_int_equal(r.compactions, mode ? 1 : 0);
    if (mode) {
      assert_int_equal(r.peak_live_bytes, 8192);
      assert_int_equal(r.bytes_moved, 4 * 1024); /* blocks 1, 3, 5, 7 */
      assert_int_equal(r.peak_committed_bytes, 8192);
    }
  }
  nnmem_problem_destroy(p);
}

/* The heap's stats render through the pool stats writers: JSON read back
 * with a JSON parser (exact integers), Prometheus text with the label. */
static void test_stats_render(void **state) {
  (void)state;
  nnmem_backend_t *b = sim(0);
  nnmem_heap_t *h = make(b, 1 << 20, NNMEM_SEGMENT_BACKEND, 0, 0);
  nnmem_handle_t t, bad = {12345};
  assert_ok(nnmem_handle_alloc(h, 5000, 0, &t)); /* 5120 B, 2 granules */
  void *p;
  assert_int_equal(nnmem_handle_pin(h, bad, &p), NNMEM_ERR_INVALID);
  nnmem_stats_t st;
  assert_ok(nnmem_heap_stats(h, &st, NULL));
  char buf[8192];
  size_t len = 0;
  assert_ok(nnmem_stats_format_json(&st, 1, buf, sizeof buf, &len));
  cJSON *j = cJSON_Parse(buf);
  assert_non_null(j);
  cJSON *o = cJSON_GetArrayItem(j, 0);
  assert_string_equal(cJSON_GetObjectItem(o, "pool")->valuestring, "heap");
  assert_true(cJSON_GetObjectItem(o, "requested_bytes")->valuedouble == 5000);
  assert_true(cJSON_GetObjectItem(o, "allocated_bytes")->valuedouble == 5120);
  assert_true(cJSON_GetObjectItem(o, "reserved_bytes")->valuedouble == 8192);
  assert_true(cJSON_GetObjectItem(o, "misuse_total")->valuedouble == 1);
  cJSON_Delete(j);
  assert_ok(nnmem_stats_format_prometheus(&st, 1, buf, sizeof buf, &len));
  assert_non_null(
      strstr(buf, "nnmem_pool_reserved_bytes{pool=\"heap\"} 8192\n"));
  nnmem_heap_destroy(h);
  nnmem_backend_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_placement),
      cmocka_unit_test(test_compact_layout),
      cmocka_unit_test(test_compact_pinned),
      cmocka_unit_test(test_host_vm_copy),
      cmocka_unit_test(test_host_vm_remap),
      cmocka_unit_test(test_stale_random),
      cmocka_unit_test(test_auto),
      cmocka_unit_test(test_auto_latency),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_replay),
      cmocka_unit_test(test_stats_render),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

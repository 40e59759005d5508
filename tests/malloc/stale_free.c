/* stale_free.c - a program with a stale second free (tests/malloc/
 * quarantine.sh): block p is freed, its class is asked again (without a
 * quarantine the allocator hands p out again, as q), then p is freed a
 * second time and a third block r is asked for. Without a quarantine the
 * second free frees q's block and r may be q: r's text overwrites q's.
 * With NNMEM_MALLOC_QUARANTINE the allocator still holds p: the second
 * free is refused (one line on stderr) and q keeps its text.
 *
 * `stale-free` (default) prints "reused=<q == p> q=<q's text> r=<r's
 * text> same=<q == r>"; `write-after-free` frees p, writes into it and
 * frees enough blocks of its class to push it out of a quarantine of up
 * to 64 KiB, then prints "done". Frees of blocks of another size (16
 * bytes) between the steps fill the front's queue of 64 small frees, so
 * that each step is seen by the allocator before the next one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 100 /* the class under test */
#define OTHER 16
#define FLUSH 128

static void flush_queue(void) {
  void *o[FLUSH];
  for (int i = 0; i < FLUSH; i++)
    o[i] = malloc(OTHER);
  for (int i = 0; i < FLUSH; i++)
    free(o[i]);
}

static int stale_free(void) {
  char *p = malloc(N);
  if (!p) return 1;
  strcpy(p, "p's text");
  free(p);
  flush_queue();
  char *q = malloc(N);
  if (!q) return 1;
  strcpy(q, "q's text");
  int reused = q == p;
  free(p); /* the stale second free */
  flush_queue();
  char *r = malloc(N);
  if (!r) return 1;
  strcpy(r, "r's text");
  printf("reused=%d q=%s r=%s same=%d\n", reused, q, r, q == r);
  free(q);
  if (r != q) free(r);
  return 0;
}

static int write_after_free(void) {
  char *p = malloc(N);
  if (!p) return 1;
  free(p);
  p[50] = 'x'; /* a use after free */
  flush_queue();
  enum { PUSH = (64 << 10) / 112 + 8 }; /* 100 B: class 112 */
  static char *b[PUSH];
  for (int i = 0; i < PUSH; i++)
    if (!(b[i] = malloc(N))) return 1;
  for (int i = 0; i < PUSH; i++)
    free(b[i]);
  flush_queue();
  printf("done\n");
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc > 1 && strcmp(argv[1], "write-after-free") == 0)
    return write_after_free();
  return stale_free();
}

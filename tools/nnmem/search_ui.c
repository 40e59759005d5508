/* search_ui.c - what `nnmem plan` shows while the placement search runs,
 * and Ctrl-C during it.
 *
 *   1. cli_search_begin installs a SIGINT handler that only sets the stop
 *      flag the library polls (nnmem_planner_config_t.stop), so Ctrl-C ends
 *      the search and the best valid plan so far is kept and written; the
 *      previous handler comes back in cli_search_end. No output file is
 *      staged while planning runs (outputs.c guards them later), so no
 *      temporary can be left behind;
 *   2. the progress callback prints nothing during the first second; then,
 *      on a terminal, one line rewritten in place at most every 0.1 s
 *      (best height, bound, gap, the height being tried, nodes, elapsed;
 *      at once when the best or the bound changes); otherwise a plain line
 *      every 5 s; nothing with --quiet or --json;
 *   3. cli_search_end ends the terminal line.
 * Thread-safety: one search at a time (single-threaded program). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "units.h"

static volatile int stop_flag;
static struct sigaction previous_int;

static void on_sigint(int sig) {
  (void)sig;
  stop_flag = 1;
}

volatile int *cli_search_begin(cli_search_ui_t *ui, int silent) {
  struct sigaction sa;
  memset(ui, 0, sizeof *ui);
  ui->silent = silent;
  ui->tty = isatty(STDERR_FILENO);
  stop_flag = 0;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, &previous_int);
  return &stop_flag;
}

void cli_search_progress(void *ctx, const nnmem_search_progress_t *p) {
  cli_search_ui_t *ui = ctx;
  if (ui->silent || p->elapsed_s < 1.0) return;
  int news = p->best != ui->best || p->bound != ui->bound;
  double every = ui->tty ? 0.1 : 5.0; /* redraws; plain lines */
  if (ui->shown && !(ui->tty && news) && p->elapsed_s - ui->last < every)
    return;
  ui->best = p->best, ui->bound = p->bound;
  char b[40], l[40], t[40], nd[40];
  double gap =
      p->bound ? 100.0 * ((double)p->best - (double)p->bound) / (double)p->bound
               : 0.0;
  fprintf(stderr,
          "%ssearch: best %s B, bound %s B (gap %.3f%%), trying %s B, %s "
          "nodes, %.1f s%s",
          ui->tty ? "\r" : "", cli_fmt_grouped(p->best, b, sizeof b),
          cli_fmt_grouped(p->bound, l, sizeof l), gap,
          cli_fmt_grouped(p->target, t, sizeof t),
          cli_fmt_grouped(p->nodes, nd, sizeof nd), p->elapsed_s,
          ui->tty ? "\033[K" : "\n");
  fflush(stderr);
  ui->shown = 1;
  ui->last = p->elapsed_s;
}

int cli_search_end(cli_search_ui_t *ui) {
  sigaction(SIGINT, &previous_int, NULL);
  if (ui->shown && ui->tty) fputc('\n', stderr);
  return stop_flag;
}

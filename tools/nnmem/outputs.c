/* outputs.c - the CLI's side of output sets (src/common/outset.h): while a
 * command holds staged temporaries, SIGINT, SIGTERM and SIGHUP remove them
 * before the process dies, so an interrupted `nnmem plan --out f` leaves
 * neither a half-written f nor a ".f.tmp-XXXXXX" next to it.
 *
 *   1. cli_outputs_guard(set) remembers the set and installs the handlers;
 *   2. a signal: unlink the set's live temporaries (unlink only: async-
 *      signal-safe), restore the default action and raise the signal again,
 *      so the exit status says "killed by SIGINT" as usual;
 *   3. cli_outputs_unguard() restores the previous handlers.
 * Thread-safety: one guarded set at a time (single-threaded program). */
#include <signal.h>
#include <stddef.h>

#include "cli.h"

static const nnmem__outset_t *volatile guarded;
static const int guarded_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_GUARDED (sizeof guarded_signals / sizeof guarded_signals[0])
static struct sigaction previous[N_GUARDED];

static void on_signal(int sig) {
  nnmem__outset_unlink_temps(guarded);
  signal(sig, SIG_DFL);
  raise(sig);
}

void cli_outputs_guard(const nnmem__outset_t *set) {
  struct sigaction sa;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sa.sa_handler = on_signal;
  guarded = set;
  for (size_t i = 0; i < N_GUARDED; i++)
    sigaction(guarded_signals[i], &sa, &previous[i]);
}

void cli_outputs_unguard(void) {
  for (size_t i = 0; i < N_GUARDED; i++)
    sigaction(guarded_signals[i], &previous[i], NULL);
  guarded = NULL;
}

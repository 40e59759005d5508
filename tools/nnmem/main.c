/* main.c - entry point of the nnmem command-line tool: dispatches to the
 * subcommands (plan, inspect, verify, replay) and prints the top-level help and
 * version.
 *
 * Steps: 1. no argument -> usage (every command) on stderr, exit 1; 2. --help /
 * -h / help
 * -> help on stdout, exit 0; 3. --version / -V / version -> the library's
 *    version (nnmem_version()), exit 0;
 * 4. "plan" / "verify" / "replay" / "inspect" / "run" / "record" / "serve" -> the
 *    command with the
 *    remaining arguments;
 * 5. anything else -> "unknown command" (with the nearest command as a
 *    hint, suggest.c), exit 1;
 * 6. stdout is flushed at the end: a failed write (a full disk, a closed
 *    pipe, /dev/full) is reported and turns a success into exit 1.
 * Thread-safety: single-threaded program. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "suggest.h"

int cli_cmd_replay(int argc, char **argv); /* cmd_replay.c */

static void print_help(FILE *f) {
  fputs(
      "Usage: nnmem <command> [options]\n"
      "\n"
      "Plans where every tensor of a neural network lives in one memory "
      "arena,\n"
      "so that tensors whose lifetimes do not overlap share bytes.\n"
      "\n"
      "Commands:\n"
      "  plan [INPUT]          plan a model and print a report. INPUT is an\n"
      "                        ONNX model (.onnx), a graph (.json) or a\n"
      "                        MiniMalloc problem (.csv);\n"
      "                        without INPUT a built-in model is planned\n"
      "                        (resnet50 unless --model says otherwise)\n"
      "  inspect MODEL         list the tensors of an ONNX model or JSON "
      "graph:\n"
      "                        kind, dtype, shape, bytes, lifetime\n"
      "  verify PROBLEM [PLAN] check a plan independently: PROBLEM.csv with\n"
      "                        an offset column, or a problem (.csv), graph\n"
      "                        (.json) or model (.onnx) plus the plan that\n"
      "                        nnmem plan --out wrote (.json or .csv),\n"
      "                        matched by buffer id\n"
      "  replay TRACE          replay a buffer trace through a memory pool\n"
      "                        on a simulated device (--pool KIND|all)\n"
      "  run PLAN.json [MODEL] execute a fitted plan (plan --mem-limit --out)\n"
      "                        on the simulated device with real bytes\n"
      "  record -- PROG [ARGS] run PROG on libnnmem_malloc.so and write its\n"
      "                        allocation trace (a MiniMalloc problem)\n"
      "  serve PLAN -- PROG    run PROG with its allocations served from\n"
      "                        the plan of a recorded run\n"
      "  diff A.json B.json    compare two memory profiles (planned and\n"
      "                        measured) key by key\n"
      "\n"
      "Options:\n"
      "  -h, --help            show this help (also: nnmem <command> "
      "--help)\n"
      "  -V, --version         show the version (also: nnmem version)\n"
      "\n"
      "Exit codes:\n"
      "  0  success (verify: the plan is valid)\n"
      "  1  bad usage or bad input\n"
      "  2  the plan does not fit --capacity (verify: height > capacity;\n"
      "     diff: B's peak exceeds A's by more than --max-excess)\n"
      "  3  internal error (a produced plan failed verification, out of "
      "memory)\n"
      "  4  verify: the plan is invalid (overlapping buffers, a misaligned "
      "or\n"
      "     overflowing offset)\n"
      "\n"
      "Examples:\n"
      "  nnmem plan\n"
      "  nnmem plan --model mobilenetv2 --batch 32\n"
      "  nnmem plan graph.json --profile memory_profile.json --out plan.json\n"
      "  nnmem plan problem.csv --capacity 1MiB --out solved.csv\n"
      "  nnmem verify problem.csv solved.csv\n"
      "  nnmem verify graph.json plan.json --json\n"
      "  nnmem replay trace.csv --pool tlsf --json\n"
      "  nnmem diff planned.json measured.json\n",
      f);
}

/* Flushes stdout; a report that could not be written is an error. */
static int checked_exit(int rc) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "nnmem: cannot write to standard output: %s\n",
            strerror(errno));
    if (rc == CLI_EXIT_OK) rc = CLI_EXIT_INVALID;
  }
  return rc;
}

static int dispatch(int argc, char **argv) {
  if (argc < 2) {
    fputs(
        "Usage: nnmem <command> [options]   (commands: plan, inspect, verify, "
        "replay, run, record, serve, diff)\n"
        "Try 'nnmem --help' for more information.\n",
        stderr);
    return CLI_EXIT_INVALID;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
      strcmp(cmd, "help") == 0) {
    print_help(stdout);
    return CLI_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 ||
      strcmp(cmd, "version") == 0) {
    printf("nnmem %s\n", nnmem_version());
    return CLI_EXIT_OK;
  }
  if (strcmp(cmd, "plan") == 0) return cli_cmd_plan(argc - 2, argv + 2);
  if (strcmp(cmd, "verify") == 0) return cli_cmd_verify(argc - 2, argv + 2);
  if (strcmp(cmd, "inspect") == 0) return cli_cmd_inspect(argc - 2, argv + 2);
  if (strcmp(cmd, "replay") == 0) return cli_cmd_replay(argc - 2, argv + 2);
  if (strcmp(cmd, "run") == 0) return cli_cmd_run(argc - 2, argv + 2);
  if (strcmp(cmd, "record") == 0) return cli_cmd_record(argc - 2, argv + 2);
  if (strcmp(cmd, "serve") == 0) return cli_cmd_serve(argc - 2, argv + 2);
  if (strcmp(cmd, "diff") == 0) return cli_cmd_diff(argc - 2, argv + 2);
  static const char *const commands[] = {"plan",   "inspect", "verify",
                                         "replay", "run",     "record",
                                         "serve",  "diff",    "help"};
  char tail[64];
  if (cmd[0] == '-')
    fprintf(stderr, "nnmem: unknown option '%s'\n", cmd);
  else
    fprintf(stderr, "nnmem: unknown command '%s'%s\n", cmd,
            cli_did_you_mean(cli_suggest(cmd, commands, 9), tail, sizeof tail));
  fputs("Try 'nnmem --help' for more information.\n", stderr);
  return CLI_EXIT_INVALID;
}

int main(int argc, char **argv) {
  return checked_exit(dispatch(argc, argv));
}

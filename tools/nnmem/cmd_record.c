/* cmd_record.c - `nnmem record [--out TRACE.csv] -- PROG [ARGS...]`: runs
 * PROG on libnnmem_malloc.so in record mode and keeps its allocation trace
 * as a MiniMalloc CSV problem (id,lower,upper,size), which `nnmem plan`
 * reads like any other.
 *
 * Steps:
 *   1. find libnnmem_malloc.so: --malloc-lib, else $NNMEM_MALLOC_LIB, else
 *      next to this executable, else ../lib from it (an installed tree);
 *   2. a private temporary folder; fork; the child sets LD_PRELOAD (the
 *      library first), NNMEM_RECORD=<folder>/trace.csv and
 *      NNMEM_RECORD_PID=<its pid> (programs PROG starts do not record) and
 *      execs PROG (PATH searched);
 *   3. PROG must exit with status 0 (else: its status, no output); the
 *      library wrote the trace at exit (absent: PROG ended without exit(),
 *      a crash or _exit);
 *   4. the trace is parsed by the CSV reader (a truncated or inconsistent
 *      row is an error naming its line) and checked (lower < upper);
 *   5. it is staged and committed as --out (all or nothing, output set)
 *      and a summary is printed: allocations, steps, peak live bytes.
 * Exit codes: 0 recorded, 1 bad usage, PROG failed, no or bad trace, 3 out
 * of memory. Thread-safety: single-threaded program. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "nnmem/io.h"
#include "nnmem/problem.h"
#include "units.h"

#define MALLOC_LIB "libnnmem_malloc.so"

enum { OPT_HELP, OPT_OUT, OPT_LIB, OPT_QUIET };

static const cli_opt_t record_table[] = {{"help", 'h', 0, OPT_HELP},
                                         {"out", 'o', 1, OPT_OUT},
                                         {"malloc-lib", 0, 1, OPT_LIB},
                                         {"quiet", 'q', 0, OPT_QUIET},
                                         {NULL, 0, 0, 0}};

#define MAX_ARGS 4096

typedef struct record_opts {
  const char *out, *lib, *prog;
  const char *args[MAX_ARGS];
  size_t n_args;
  int quiet;
} record_opts_t;

static void print_record_help(void) {
  fputs(
      "Usage: nnmem record [options] -- PROG [ARGS...]\n"
      "\n"
      "Runs PROG with every malloc, free, realloc... served by\n" MALLOC_LIB
      " in record mode and writes its allocation trace\n"
      "as a MiniMalloc problem: one row per allocation (id, lower, upper,\n"
      "size), lifetimes [lower, upper) in steps. A step is one allocation\n"
      "(allocation order) unless PROG marks its steps by calling\n"
      "nnmem_record_step() (found with dlsym(RTLD_DEFAULT, ...)). Plan the\n"
      "trace with: nnmem plan TRACE.csv\n"
      "\n"
      "Options:\n"
      "  -o, --out FILE        the trace (default recorded.csv); written\n"
      "                        only when PROG exits with status 0\n"
      "      --malloc-lib SO   the library (default: $NNMEM_MALLOC_LIB, "
      "else\n"
      "                        " MALLOC_LIB
      " next to nnmem or in ../lib)\n"
      "  -q, --quiet           print nothing on success\n"
      "  -h, --help            show this help\n"
      "\n"
      "Exit codes: 0 recorded, 1 bad usage, PROG failed or left no "
      "valid\n"
      "trace, 3 out of memory.\n",
      stdout);
}

static int set_option(void *opts, int id, const char *v) {
  record_opts_t *o = opts;
  if (id == OPT_OUT) o->out = v;
  if (id == OPT_LIB) o->lib = v;
  if (id == OPT_QUIET) o->quiet = 1;
  return 0;
}

static int readable(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && access(p, R_OK) == 0;
}

/* Step 1: an absolute path of the library in `buf`, or 0. */
static int find_lib(const record_opts_t *o, char *buf, size_t cap) {
  const char *given = o->lib ? o->lib : getenv("NNMEM_MALLOC_LIB");
  if (given && *given) {
    if (!readable(given)) {
      fprintf(stderr, "nnmem record: %s: no such library\n", given);
      return 0;
    }
    return realpath(given, buf) != NULL;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    const char *tails[] = {"/" MALLOC_LIB, "/../lib/" MALLOC_LIB};
    for (size_t i = 0; i < 2; i++) {
      snprintf(buf, cap, "%s%s", exe, tails[i]);
      if (readable(buf)) return 1;
    }
  }
  fprintf(stderr, "nnmem record: cannot find " MALLOC_LIB
                  " next to nnmem or in ../lib; give --malloc-lib or "
                  "NNMEM_MALLOC_LIB\n");
  return 0;
}

/* Step 2 (child): the environment, then exec. Never returns. */
static void child_exec(const record_opts_t *o, const char *lib,
                       const char *trace) {
  char pid[32], *pre = NULL;
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  const char *old = getenv("LD_PRELOAD");
  if (old && *old) {
    size_t n = strlen(lib) + strlen(old) + 2;
    if ((pre = malloc(n))) snprintf(pre, n, "%s:%s", lib, old);
  }
  if (setenv("LD_PRELOAD", pre ? pre : lib, 1) != 0 ||
      setenv("NNMEM_RECORD", trace, 1) != 0 ||
      setenv("NNMEM_RECORD_PID", pid, 1) != 0)
    _exit(126);
  execvp(o->prog, (char *const *)o->args);
  fprintf(stderr, "nnmem record: cannot run %s: %s\n", o->prog,
          strerror(errno));
  _exit(127);
}

/* Steps 2-3: runs PROG; 0 when it exited with status 0. */
static int run_prog(const record_opts_t *o, const char *lib,
                    const char *trace) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "nnmem record: cannot fork: %s\n", strerror(errno));
    return -1;
  }
  if (pid == 0) child_exec(o, lib, trace);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) {
      fprintf(stderr, "nnmem record: waitpid: %s\n", strerror(errno));
      return -1;
    }
  if (WIFSIGNALED(st)) {
    fprintf(stderr, "nnmem record: %s was killed by signal %d (%s); no trace\n",
            o->prog, WTERMSIG(st), strsignal(WTERMSIG(st)));
    return -1;
  }
  if (WEXITSTATUS(st) == 127 || WEXITSTATUS(st) == 126) return -1;
  if (WEXITSTATUS(st) != 0) {
    fprintf(stderr, "nnmem record: %s exited with status %d; no trace\n",
            o->prog, WEXITSTATUS(st));
    return -1;
  }
  return 0;
}

/* Steps 4-5. */
static int keep_trace(const record_opts_t *o, const char *trace) {
  nnmem_diag_t diag = {{0}};
  char *data = NULL;
  size_t len = 0;
  if (!readable(trace)) {
    fprintf(stderr,
            "nnmem record: %s left no trace (it ended without exit(): "
            "_exit, exec or a crash)\n",
            o->prog);
    return CLI_EXIT_INVALID;
  }
  nnmem_csv_t *csv = NULL;
  nnmem_status_t st = nnmem_file_read(trace, &data, &len, &diag);
  if (st == NNMEM_OK) st = nnmem_csv_parse(data, len, "trace", &csv, &diag);
  const nnmem_problem_t *p = csv ? nnmem_csv_problem(csv) : NULL;
  if (st == NNMEM_OK) st = nnmem_problem_check(p, &diag);
  uint64_t peak = 0, steps = 0;
  size_t n = p ? nnmem_problem_count(p) : 0;
  if (st == NNMEM_OK) st = nnmem_problem_peak(p, 1, &peak, NULL);
  for (size_t i = 0; st == NNMEM_OK && i < n; i++)
    if (nnmem_problem_buffers(p)[i].last > steps)
      steps = nnmem_problem_buffers(p)[i].last;
  nnmem_csv_destroy(csv);
  if (st != NNMEM_OK) {
    free(data);
    fprintf(stderr, "nnmem record: the recorded trace is invalid: %s\n",
            diag.message[0] ? diag.message : nnmem_status_str(st));
    return st == NNMEM_ERR_NOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INVALID;
  }
  nnmem__outset_t *set = NULL;
  st = nnmem__outset_create(&set);
  if (st == NNMEM_OK)
    st = nnmem__outset_add_bytes(set, o->out, data, len, &diag);
  free(data);
  cli_outputs_guard(set);
  if (st == NNMEM_OK) st = nnmem__outset_commit(set, &diag);
  cli_outputs_unguard();
  nnmem__outset_destroy(set);
  if (st != NNMEM_OK) {
    fprintf(stderr, "nnmem record: %s\n",
            diag.message[0] ? diag.message : nnmem_status_str(st));
    return st == NNMEM_ERR_NOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INVALID;
  }
  if (!o->quiet) {
    char a[32];
    printf(
        "nnmem record: %s: %zu allocations over %llu steps, peak live "
        "%s B -> %s\n",
        o->prog, n, (unsigned long long)steps,
        cli_fmt_grouped(peak, a, sizeof a), o->out);
  }
  return CLI_EXIT_OK;
}

int cli_cmd_record(int argc, char **argv) {
  record_opts_t o = {0};
  o.out = "recorded.csv";
  const char **rest = o.args;
  cli_parse_t p = {
      "record", record_table,          OPT_HELP, print_record_help, set_option,
      &o,       {&o.prog, NULL, NULL}, rest + 1, MAX_ARGS - 2,      &o.n_args};
  int e = cli_args_parse(&p, argc, argv);
  if (e >= 0) return e;
  if (!o.prog)
    return cli_usage_error("record",
                           "missing the program: nnmem record "
                           "[options] -- PROG [ARGS...]");
  o.args[0] = o.prog;
  o.args[o.n_args + 1] = NULL;
  char lib[PATH_MAX];
  if (!find_lib(&o, lib, sizeof lib)) return CLI_EXIT_INVALID;
  const char *tmpdir = getenv("TMPDIR");
  char dir[PATH_MAX], trace[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/nnmem-record-XXXXXX",
           tmpdir && *tmpdir ? tmpdir : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(stderr, "nnmem record: cannot create a folder in %s: %s\n",
            tmpdir && *tmpdir ? tmpdir : "/tmp", strerror(errno));
    return CLI_EXIT_INVALID;
  }
  snprintf(trace, sizeof trace, "%s/trace.csv", dir);
  int rc =
      run_prog(&o, lib, trace) == 0 ? keep_trace(&o, trace) : CLI_EXIT_INVALID;
  unlink(trace);
  rmdir(dir);
  return rc;
}

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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "common/util.h"
#include "nnmem/io.h"
#include "nnmem/plan.h"
#include "nnmem/planned.h"
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
  const char *plan; /* serve: the plan as given */
  char plan_abs[PATH_MAX + 16]; /* serve: its CSV copy for the library */
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

/* "record" or "serve": the command in messages. */
static const char *cmd_name = "record";

/* Step 1: an absolute path of the library in `buf`, or 0. */
static int find_lib(const record_opts_t *o, char *buf, size_t cap) {
  const char *given = o->lib ? o->lib : getenv("NNMEM_MALLOC_LIB");
  if (given && *given) {
    if (!readable(given)) {
      fprintf(stderr, "nnmem %s: %s: no such library\n", cmd_name, given);
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
  fprintf(stderr,
          "nnmem %s: cannot find " MALLOC_LIB
          " next to nnmem or in ../lib; give --malloc-lib or "
          "NNMEM_MALLOC_LIB\n",
          cmd_name);
  return 0;
}

/* A new private folder $TMPDIR/nnmem-<command>-XXXXXX (or under /tmp) in
 * `dir`; 0 (and a message) when it cannot be made. */
static int private_dir(char *dir, size_t cap) {
  const char *tmpdir = getenv("TMPDIR");
  if (!tmpdir || !*tmpdir) tmpdir = "/tmp";
  snprintf(dir, cap, "%s/nnmem-%s-XXXXXX", tmpdir, cmd_name);
  if (mkdtemp(dir)) return 1;
  fprintf(stderr, "nnmem %s: cannot create a folder in %s: %s\n", cmd_name,
          tmpdir, strerror(errno));
  return 0;
}

/* Step 2 (child): the environment, then exec. Never returns. `out` is the
 * trace (record) or the report (serve). */
/* The child's side: the environment, then PROG. A failure before PROG
 * runs goes up the close-on-exec pipe `fd` ({what, errno}: 0 the
 * environment, 1 the exec; nothing arrives when the exec succeeded), so
 * that PROG's own exit status, 126 and 127 included, is never taken for
 * one. */
static void child_exec(const record_opts_t *o, const char *lib,
                       const char *out, int fd) {
  char pid[32], *pre = NULL;
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  const char *old = getenv("LD_PRELOAD");
  if (old && *old) {
    size_t n = strlen(lib) + strlen(old) + 2;
    if ((pre = malloc(n))) snprintf(pre, n, "%s:%s", lib, old);
  }
  int bad = setenv("LD_PRELOAD", pre ? pre : lib, 1) != 0;
  if (o->plan)
    bad = bad || setenv("NNMEM_SERVE", o->plan_abs, 1) != 0 ||
          setenv("NNMEM_SERVE_PID", pid, 1) != 0 ||
          setenv("NNMEM_SERVE_REPORT", out, 1) != 0 ||
          unsetenv("NNMEM_RECORD") != 0;
  else
    bad = bad || setenv("NNMEM_RECORD", out, 1) != 0 ||
          setenv("NNMEM_RECORD_PID", pid, 1) != 0 ||
          unsetenv("NNMEM_SERVE") != 0;
  int why[2] = {0, errno};
  if (!bad) {
    execvp(o->prog, (char *const *)o->args);
    why[0] = 1;
    why[1] = errno;
  }
  if (write(fd, why, sizeof why) != (ssize_t)sizeof why) _exit(126);
  _exit(127);
}

/* Steps 2-3: runs PROG; 0 when it exited with status 0. */
static int run_prog(const record_opts_t *o, const char *lib,
                    const char *trace) {
  fflush(NULL);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    fprintf(stderr, "nnmem %s: pipe: %s\n", cmd_name, strerror(errno));
    return -1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "nnmem %s: cannot fork: %s\n", cmd_name, strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    child_exec(o, lib, trace, fds[1]);
  }
  close(fds[1]);
  int why[2];
  ssize_t got;
  while ((got = read(fds[0], why, sizeof why)) < 0 && errno == EINTR)
    ;
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) {
      fprintf(stderr, "nnmem %s: waitpid: %s\n", cmd_name, strerror(errno));
      return -1;
    }
  if (WIFSIGNALED(st)) {
    fprintf(stderr, "nnmem %s: %s was killed by signal %d (%s)%s\n", cmd_name,
            o->prog, WTERMSIG(st), strsignal(WTERMSIG(st)),
            o->plan ? "" : "; no trace");
    return -1;
  }
  if (got == (ssize_t)sizeof why) { /* PROG never ran */
    if (why[0] == 1)
      fprintf(stderr, "nnmem %s: cannot run %s: %s\n", cmd_name, o->prog,
              strerror(why[1]));
    else
      fprintf(stderr, "nnmem %s: cannot set the environment for %s: %s\n",
              cmd_name, o->prog, strerror(why[1]));
    return -1;
  }
  if (WEXITSTATUS(st) != 0) {
    fprintf(stderr, "nnmem %s: %s exited with status %d%s\n", cmd_name,
            o->prog, WEXITSTATUS(st), o->plan ? "" : "; no trace");
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
  char dir[PATH_MAX], trace[PATH_MAX + 16];
  if (!private_dir(dir, sizeof dir)) return CLI_EXIT_INVALID;
  snprintf(trace, sizeof trace, "%s/trace.csv", dir);
  int rc =
      run_prog(&o, lib, trace) == 0 ? keep_trace(&o, trace) : CLI_EXIT_INVALID;
  unlink(trace);
  rmdir(dir);
  return rc;
}

/* ---- nnmem serve ---------------------------------------------------------
 *
 * `nnmem serve [options] PLAN.json -- PROG [ARGS...]`: runs PROG on
 * libnnmem_malloc.so in serve mode (tools/malloc/serve.c): its allocations
 * come from the plan of an earlier recorded run, one reserved range of the
 * plan's height, the k-th request of a step at its planned offset;
 * divergent requests go to the pools. Steps:
 *   1. the plan (JSON, or CSV with an offset column) is read and checked
 *      as the library will (the plan-backed allocator over a reserved,
 *      never touched range) and written as CSV to a private folder (the
 *      library reads CSV: the front links no JSON parser): a bad plan is
 *      an error naming the file, and PROG does not run;
 *   2. as record's steps 1-3, with NNMEM_SERVE=<folder>/plan.csv,
 *      NNMEM_SERVE_PID and NNMEM_SERVE_REPORT=<folder>/report;
 *   3. the report PROG's library wrote at exit is printed (requests from
 *      the plan and from the pools, why, the plan's height).
 * Exit codes: 0 PROG exited with 0, 1 bad usage, a bad plan, PROG failed,
 * 3 out of memory. */

static const cli_opt_t serve_table[] = {{"help", 'h', 0, OPT_HELP},
                                        {"malloc-lib", 0, 1, OPT_LIB},
                                        {"quiet", 'q', 0, OPT_QUIET},
                                        {NULL, 0, 0, 0}};

static void print_serve_help(void) {
  fputs(
      "Usage: nnmem serve [options] PLAN -- PROG [ARGS...]\n"
      "\n"
      "Runs PROG with its allocations served from PLAN (.json, or .csv with\n"
      "an offset column), the plan of an earlier recorded run (nnmem record\n"
      "--out T.csv -- PROG ...; nnmem plan T.csv --out PLAN.json): the k-th\n"
      "allocation of a step gets its planned\n"
      "offset in one range of the plan's height. A request the plan does not\n"
      "have (another size, more than recorded) is served by " MALLOC_LIB "'s\n"
      "pools and counted; the run never fails because of it. Steps are\n"
      "allocations, or nnmem_record_step() calls when the trace was recorded\n"
      "with them. Prints how many requests the plan served.\n"
      "\n"
      "Options:\n"
      "      --malloc-lib SO   the library (default: $NNMEM_MALLOC_LIB, else\n"
      "                        " MALLOC_LIB " next to nnmem or in ../lib)\n"
      "  -q, --quiet           print nothing on success\n"
      "  -h, --help            show this help\n"
      "\n"
      "Exit codes: 0 PROG exited with 0, 1 bad usage, a bad plan or PROG\n"
      "failed, 3 out of memory.\n",
      stdout);
}

/* Step 1: the plan (JSON, or CSV with an offset column) read and checked;
 * written as CSV to `csv_out` (what the library reads: the front links no
 * JSON parser). */
static int check_plan(record_opts_t *o, const char *csv_out) {
  nnmem_problem_t *p = NULL;
  nnmem_csv_t *csv = NULL;
  uint64_t *off = NULL, height = 0;
  const uint64_t *offs = NULL;
  const nnmem_problem_t *prob = NULL;
  nnmem_diag_t d = {{0}};
  cli_input_t in;
  nnmem_status_t st = cli_input_read(&in, o->plan, 0, &d);
  if (st == NNMEM_OK && in.format == CLI_FMT_JSON) {
    st = nnmem_plan_read_json(in.data, in.len, o->plan, &p, &off, &d);
    prob = p;
    offs = off;
  } else if (st == NNMEM_OK && in.format != CLI_FMT_CSV) {
    st = nnmem__diag(&d, NNMEM_ERR_PARSE,
                     "%s: not a plan (a plan JSON, or CSV with an offset "
                     "column)",
                     o->plan);
  } else if (st == NNMEM_OK) {
    st = nnmem_csv_parse(in.data, in.len, o->plan, &csv, &d);
    if (st == NNMEM_OK) {
      prob = nnmem_csv_problem(csv);
      offs = nnmem_csv_offsets(csv);
      if (!offs)
        st = nnmem__diag(&d, NNMEM_ERR_PARSE,
                         "%s: no offset column: not a plan (nnmem plan "
                         "TRACE.csv --out PLAN.json or PLAN.csv)",
                         o->plan);
    }
  }
  cli_input_free(&in);
  if (st == NNMEM_OK && nnmem_problem_height(prob, offs, &height) != NNMEM_OK)
    st = nnmem__diag(&d, NNMEM_ERR_OVERFLOW,
                     "%s: an offset + size passes 2^64 - 1", o->plan);
  void *range = MAP_FAILED;
  if (st == NNMEM_OK && height) /* reserved only: nothing is written */
    range = mmap(NULL, height, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (st == NNMEM_OK && range == MAP_FAILED)
    st = nnmem__diag(&d, NNMEM_ERR_NOMEM,
                     "%s: cannot reserve the plan's height (%llu bytes)",
                     o->plan, (unsigned long long)height);
  nnmem_allocator_t *a = NULL;
  nnmem_planned_t *r = NULL;
  if (st == NNMEM_OK) st = nnmem_allocator_create(NULL, &a);
  if (st == NNMEM_OK) {
    nnmem_planned_config_t c;
    nnmem_planned_config_init(&c);
    c.base = range;
    st = nnmem_planned_serve(a, prob, offs, &c, &r, &d);
  }
  nnmem_planned_destroy(r);
  nnmem_allocator_destroy(a);
  if (range != MAP_FAILED) munmap(range, height);
  if (st == NNMEM_OK) st = nnmem_problem_write_csv(prob, offs, csv_out, &d);
  nnmem_problem_destroy(p);
  nnmem_csv_destroy(csv);
  free(off);
  if (st != NNMEM_OK) {
    int named = strstr(d.message, o->plan) != NULL;
    fprintf(stderr, "nnmem serve: %s%s%s\n", named ? "" : o->plan,
            named ? "" : ": ", d.message[0] ? d.message : nnmem_status_str(st));
    return st == NNMEM_ERR_NOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INVALID;
  }
  return CLI_EXIT_OK;
}

/* Step 3: the report's value of `key`, or -1. */
static long long report_value(const char *text, const char *key) {
  size_t k = strlen(key);
  for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l)
    if (!strncmp(l, key, k) && l[k] == ' ') return strtoll(l + k + 1, NULL, 10);
  return -1;
}

static void print_report(const record_opts_t *o, const char *path) {
  char *text = NULL;
  size_t len = 0;
  nnmem_diag_t d = {{0}};
  if (nnmem_file_read(path, &text, &len, &d) != NNMEM_OK) {
    fprintf(stderr,
            "nnmem serve: %s left no report (it ended without exit(), or "
            "the plan was not served: see its messages)\n",
            o->prog);
    return;
  }
  char h[32];
  printf(
      "nnmem serve: %s: %lld requests: %lld from the plan, %lld from the "
      "pools (size diverged %lld, order diverged %lld, overstayed %lld, "
      "misuse %lld%s); steps: %s; plan height %s B\n",
      o->prog, report_value(text, "allocs"), report_value(text, "served"),
      report_value(text, "fallback"), report_value(text, "size_diverged"),
      report_value(text, "order_diverged"), report_value(text, "overstayed"),
      report_value(text, "misuse"),
      report_value(text, "disabled") > 0 ? "; serving stopped" : "",
      strstr(text, "step_kind markers") ? "markers" : "allocations",
      cli_fmt_grouped((uint64_t)report_value(text, "height"), h, sizeof h));
  free(text);
}

int cli_cmd_serve(int argc, char **argv) {
  record_opts_t o = {0};
  cmd_name = "serve";
  const char **rest = o.args;
  cli_parse_t p = {"serve",     serve_table,   OPT_HELP,
                   print_serve_help, set_option, &o,
                   {&o.plan, &o.prog, NULL}, rest + 1, MAX_ARGS - 2,
                   &o.n_args};
  int e = cli_args_parse(&p, argc, argv);
  if (e >= 0) return e;
  if (!o.plan || !o.prog)
    return cli_usage_error("serve",
                           "missing the plan or the program: nnmem serve "
                           "[options] PLAN -- PROG [ARGS...]");
  o.args[0] = o.prog;
  o.args[o.n_args + 1] = NULL;
  char lib[PATH_MAX], dir[PATH_MAX], report[PATH_MAX + 16];
  if (!private_dir(dir, sizeof dir)) return CLI_EXIT_INVALID;
  snprintf(report, sizeof report, "%s/report", dir);
  snprintf(o.plan_abs, sizeof o.plan_abs, "%s/plan.csv", dir);
  /* the plan first: a bad one is refused whether or not the library is
   * found */
  e = check_plan(&o, o.plan_abs);
  if (e == CLI_EXIT_OK && !find_lib(&o, lib, sizeof lib)) e = CLI_EXIT_INVALID;
  int rc = e;
  if (e == CLI_EXIT_OK) {
    rc = run_prog(&o, lib, report) == 0 ? CLI_EXIT_OK : CLI_EXIT_INVALID;
    if (!o.quiet || rc != CLI_EXIT_OK) print_report(&o, report);
  }
  unlink(report);
  unlink(o.plan_abs);
  rmdir(dir);
  return rc;
}

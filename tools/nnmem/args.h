/* args.h - a small table-driven command-line scanner for the nnmem CLI.
 *
 * Accepts `--name VALUE`, `--name=VALUE`, short aliases (`-o VALUE`),
 * flags with an optional inline value (`--json`, `--json=compact`),
 * boolean flags, positional arguments and `--` (everything after it is
 * positional). Unknown options and missing values are reported on stderr as
 * "nnmem <cmd>: ..." with a hint to --help. */
#ifndef NNMEM_CLI_ARGS_H
#define NNMEM_CLI_ARGS_H

#include <stddef.h>

#define CLI_OPT_INLINE 2

typedef struct cli_opt {
  const char *name; /* long name without dashes, e.g. "out" */
  char short_name;  /* e.g. 'o'; 0 for none */
  int takes_value;  /* 1: needs a value; 0: a flag; CLI_OPT_INLINE: a flag
                       that may take "=VALUE" (e.g. --json=compact) */
  int id;           /* returned to the caller */
} cli_opt_t;

typedef struct cli_args {
  const char *cmd; /* "plan", "verify": used in messages */
  int argc;
  char **argv;
  int next; /* index of the next argument to scan */
  int only_positional;
} cli_args_t;

enum {
  CLI_ARG_END = 0,    /* no more arguments */
  CLI_ARG_OPTION,     /* *id and *value (NULL for flags) are set */
  CLI_ARG_POSITIONAL, /* *value is the argument */
  CLI_ARG_ERROR       /* a message was printed */
};

void cli_args_init(cli_args_t *a, const char *cmd, int argc, char **argv);

/* Scans the next argument against `table` (terminated by a NULL name). */
int cli_args_next(cli_args_t *a, const cli_opt_t *table, int *id,
                  const char **value);

/* Prints "nnmem <cmd>: <msg>" and the --help hint on stderr. Returns 1 (the
 * usage exit code) so callers can `return cli_usage_error(...)`. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A whole command line: the option table, what --help prints, where
 * options and positional arguments go. */
typedef struct cli_parse {
  const char *cmd;        /* "plan": used in messages */
  const cli_opt_t *table; /* terminated by a NULL name */
  int help_id;            /* the id of --help in the table */
  void (*help)(void);     /* prints the command's help on stdout */
  /* applies one option to `opts`; 0, or the exit code of a usage error */
  int (*option)(void *opts, int id, const char *value);
  void *opts;
  /* positional arguments fill these in order (NULL-terminated, at most 2);
   * one more is "unexpected argument" */
  const char **positional[3];
  /* positional arguments past those go here when rest is set (at most
   * rest_cap; one more is "too many"); NULL: "unexpected argument" */
  const char **rest;
  size_t rest_cap;
  size_t *n_rest;
} cli_parse_t;

/* Scans every argument. Returns -1 when all were taken, 0 after printing the
 * help, or the exit code of the first error (already printed). */
int cli_args_parse(const cli_parse_t *p, int argc, char **argv);

/* 1 when the two paths name the same file: equal strings; existing regular
 * files with the same device and inode (links, "./x", "a/../x"); or, when
 * one does not exist yet, the same resolved folder and file name. "-" is
 * standard input: the file it was redirected from, or /dev/stdin. */
int cli_same_file(const char *a, const char *b);

#endif /* NNMEM_CLI_ARGS_H */

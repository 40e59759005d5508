/* args.c - the CLI's argument scanner (see args.h).
 *
 * Algorithm, per call to cli_args_next:
 *   1. past the end -> CLI_ARG_END;
 *   2. after "--", or for "-" and anything not starting with '-' ->
 *      CLI_ARG_POSITIONAL;
 *   3. "--name[=value]" or "-x": look the name up in the table; unknown ->
 *      error; a value-taking option reads "=value" or the next argument
 *      (missing -> error); a flag given "=value" -> error, unless the
 *      flag is CLI_OPT_INLINE (its value is "=value" or NULL); an
 *      unknown name gets the nearest known one as a hint (suggest.c).
 * Invariant: `next` only grows; every argument is consumed exactly once.
 * Complexity: O(table size) per argument. Thread-safety: none needed (one
 * scanner per command invocation). */
#define _DEFAULT_SOURCE /* realpath */
#include "args.h"

#include "cli.h"
#include "suggest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cli_args_init(cli_args_t *a, const char *cmd, int argc, char **argv) {
  a->cmd = cmd;
  a->argc = argc;
  a->argv = argv;
  a->next = 0;
  a->only_positional = 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "nnmem %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'nnmem %s --help' for more information.\n", cmd);
  return 1;
}

static const cli_opt_t *find_long(const cli_opt_t *t, const char *name,
                                  size_t len) {
  for (; t->name; t++)
    if (strlen(t->name) == len && strncmp(t->name, name, len) == 0) return t;
  return NULL;
}

static const cli_opt_t *find_short(const cli_opt_t *t, char c) {
  for (; t->name; t++)
    if (t->short_name && t->short_name == c) return t;
  return NULL;
}

/* Resolves "--name[=v]" / "-x" to a table entry; *inline_value gets the
 * text after '=' or NULL. */
static const cli_opt_t *lookup(const cli_opt_t *t, const char *arg,
                               const char **inline_value) {
  *inline_value = NULL;
  if (arg[1] == '-') {
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    if (eq) *inline_value = eq + 1;
    return find_long(t, name, len);
  }
  if (arg[2] != '\0') return NULL; /* no bundled short options */
  return find_short(t, arg[1]);
}

/* The long option nearest to the unknown "--name[=v]" / "-name", or NULL
 * ("-x" gets no hint: one letter is too little to guess from). */
static const char *suggest_option(const cli_opt_t *t, const char *arg) {
  const char *name = arg + (arg[1] == '-' ? 2 : 1);
  size_t len = strcspn(name, "=");
  if (arg[1] != '-' && len < 2) return NULL;
  cli_suggest_t s;
  cli_suggest_init(&s, name, len);
  for (; t->name; t++)
    cli_suggest_add(&s, t->name);
  return cli_suggest_result(&s);
}

int cli_args_next(cli_args_t *a, const cli_opt_t *table, int *id,
                  const char **value) {
  if (a->next >= a->argc) return CLI_ARG_END;
  const char *arg = a->argv[a->next++];
  if (!a->only_positional && strcmp(arg, "--") == 0) {
    a->only_positional = 1;
    return cli_args_next(a, table, id, value);
  }
  if (a->only_positional || arg[0] != '-' || arg[1] == '\0') {
    *value = arg;
    return CLI_ARG_POSITIONAL;
  }
  const char *inline_value;
  const cli_opt_t *o = lookup(table, arg, &inline_value);
  if (!o) {
    const char *hint = suggest_option(table, arg);
    char dashed[64], tail[96];
    if (hint) snprintf(dashed, sizeof dashed, "--%s", hint);
    cli_usage_error(a->cmd, "unknown option '%s'%s", arg,
                    cli_did_you_mean(hint ? dashed : NULL, tail, sizeof tail));
    return CLI_ARG_ERROR;
  }
  *id = o->id;
  *value = NULL;
  if (o->takes_value == CLI_OPT_INLINE) {
    *value = inline_value; /* NULL when given as a plain flag */
    return CLI_ARG_OPTION;
  }
  if (!o->takes_value) {
    if (inline_value) {
      cli_usage_error(a->cmd, "option '--%s' takes no value", o->name);
      return CLI_ARG_ERROR;
    }
    return CLI_ARG_OPTION;
  }
  if (inline_value) {
    *value = inline_value;
  } else if (a->next < a->argc) {
    *value = a->argv[a->next++];
  } else {
    cli_usage_error(a->cmd, "option '--%s' needs a value", o->name);
    return CLI_ARG_ERROR;
  }
  return CLI_ARG_OPTION;
}

int cli_args_parse(const cli_parse_t *p, int argc, char **argv) {
  cli_args_t a;
  int id = 0, rc;
  const char *v = NULL;
  cli_args_init(&a, p->cmd, argc, argv);
  while ((rc = cli_args_next(&a, p->table, &id, &v)) != CLI_ARG_END) {
    if (rc == CLI_ARG_ERROR) return CLI_EXIT_INVALID;
    if (rc == CLI_ARG_POSITIONAL) {
      size_t i = 0;
      while (p->positional[i] && *p->positional[i])
        i++;
      if (!p->positional[i] && p->rest && *p->n_rest < p->rest_cap) {
        p->rest[(*p->n_rest)++] = v;
        continue;
      }
      if (!p->positional[i] && p->rest)
        return cli_usage_error(p->cmd, "too many inputs (at most %zu): '%s'",
                               p->rest_cap + 1, v);
      if (!p->positional[i])
        return cli_usage_error(p->cmd, "unexpected argument '%s'", v);
      *p->positional[i] = v;
      continue;
    }
    if (id == p->help_id) {
      p->help();
      return CLI_EXIT_OK;
    }
    int e = p->option(p->opts, id, v);
    if (e) return e;
  }
  return -1;
}

/* realpath of the folder of `path` + "/" + its last component (the file
 * itself need not exist); NULL when the folder cannot be resolved. */
static char *canonical(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t dlen = slash ? (size_t)(slash - path) : 0;
  char *dir = malloc(dlen + 2);
  if (!dir) return NULL;
  if (slash)
    memcpy(dir, path, dlen ? dlen : 1); /* "/x": the folder is "/" */
  else
    dir[0] = '.';
  dir[slash && dlen ? dlen : 1] = '\0';
  char *real = realpath(dir, NULL);
  free(dir);
  if (!real) return NULL;
  size_t n = strlen(real), m = strlen(base);
  char *out = malloc(n + m + 2);
  if (out) snprintf(out, n + m + 2, "%s/%s", real, base);
  free(real);
  return out;
}

/* stat(2) of a command-line path; "-" is standard input (fstat of fd 0),
 * so "-" and /dev/stdin, or the file stdin was redirected from, compare
 * as the same file. */
static int stat_arg(const char *path, struct stat *st) {
  return strcmp(path, "-") == 0 ? fstat(0, st) : stat(path, st);
}

int cli_same_file(const char *a, const char *b) {
  if (!a || !b) return 0;
  if (strcmp(a, b) == 0) return 1;
  struct stat sa, sb;
  if (stat_arg(a, &sa) == 0 && stat_arg(b, &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino &&
           S_ISREG(sa.st_mode);
  char *ca = canonical(a), *cb = canonical(b);
  int same = ca && cb && strcmp(ca, cb) == 0;
  free(ca);
  free(cb);
  return same;
}

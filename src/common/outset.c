/* outset.c - output sets: stage N output files, then commit all or none.
 *
 * Staging one output (nnmem__outset_add_bytes / _add_fn):
 *   1. resolve the target: a symbolic link is followed (realpath), so the
 *      file it names is replaced and the link stays; a dangling link is an
 *      error (we do not create files through links: the user may not know
 *      where it points); a directory is an error;
 *   2. a target that exists and is not a regular file (a device such as
 *      /dev/null or /dev/full, a FIFO), and an existing link under /dev/
 *      or /proc/ (/dev/stdout, /dev/fd/3: they name the shell's file),
 *      cannot be replaced atomically: it is a "device" output, kept in
 *      memory and written in place at commit (a regular file reached so is
 *      truncated first, unless it is where standard output or error goes).
 *      A plain regular file under /dev/ (/dev/shm/p.json) is an ordinary
 *      target;
 *   3. otherwise check the name fits the file system (NAME_MAX), create a
 *      temporary "<dir>/.<name>.tmp-XXXXXX" next to the target with
 *      O_CREAT | O_EXCL and mode 0666 & ~umask (a replaced file keeps its
 *      own mode), write the bytes, flush and fsync it.
 * Committing:
 *   1. write the device outputs in the order added (a failure, e.g. ENOSPC
 *      on /dev/full, stops here: no regular target has changed); a device
 *      path naming the file standard output (or error) is redirected to is
 *      written through that descriptor, at its offset;
 *   2. rename(2) every temporary over its target (atomic per file on POSIX
 *      file systems; each stays on its own file system by construction).
 * Every failure unlinks the temporaries, so the targets keep their old bytes.
 *
 * Invariant: an entry's `tmp_live` is 1 exactly while its temporary file
 * exists, and the entry is in the list before its temporary is created;
 * nnmem__outset_unlink_temps only reads the list and calls unlink.
 * Complexity: O(total bytes). Thread-safety: a set belongs to one thread. */
#define _DEFAULT_SOURCE /* realpath, fsync */
#include "common/outset.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

typedef struct entry {
  struct entry *next;
  char *shown;  /* the path the caller gave (messages) */
  char *target; /* the file replaced (links resolved) */
  char *tmp;    /* the temporary (regular targets) */
  volatile int tmp_live;
  int device;
  char *bytes; /* device outputs given as bytes */
  size_t len;
  nnmem__outset_write_fn fn; /* device outputs given as a function */
  void *ctx;
} entry_t;

struct nnmem__outset {
  entry_t *volatile head;
  unsigned counter;
};

nnmem_status_t nnmem__outset_create(nnmem__outset_t **out) {
  if (!out) return NNMEM_ERR_INVALID;
  *out = calloc(1, sizeof **out);
  return *out ? NNMEM_OK : NNMEM_ERR_NOMEM;
}

static void entry_free(entry_t *e) {
  if (e->tmp_live) unlink(e->tmp);
  free(e->shown);
  free(e->target);
  free(e->tmp);
  free(e->bytes);
  free(e);
}

void nnmem__outset_unlink_temps(const nnmem__outset_t *s) {
  if (!s) return;
  for (entry_t *e = s->head; e; e = e->next)
    if (e->tmp_live) unlink(e->tmp);
}

void nnmem__outset_destroy(nnmem__outset_t *s) {
  if (!s) return;
  entry_t *e = s->head;
  s->head = NULL;
  while (e) {
    entry_t *next = e->next;
    entry_free(e);
    e = next;
  }
  free(s);
}

static int is_device_path(const char *p) {
  return strncmp(p, "/dev/", 5) == 0 || strncmp(p, "/proc/", 6) == 0;
}

/* Step 1-2: fills e->target and e->device. */
static nnmem_status_t resolve(entry_t *e, nnmem_diag_t *diag) {
  struct stat sb;
  int exists = stat(e->shown, &sb) == 0;
  if (exists && S_ISDIR(sb.st_mode))
    return nnmem__diag(diag, NNMEM_ERR_IO, "%s: is a directory", e->shown);
  struct stat lsb;
  int is_link = lstat(e->shown, &lsb) == 0 && S_ISLNK(lsb.st_mode);
  if (exists &&
      (!S_ISREG(sb.st_mode) || (is_link && is_device_path(e->shown)))) {
    e->device = 1;
    e->target = nnmem__strdup(e->shown);
    return e->target ? NNMEM_OK : NNMEM_ERR_NOMEM;
  }
  if (is_link) {
    if (!exists) {
      char to[512];
      ssize_t n = readlink(e->shown, to, sizeof to - 1);
      to[n > 0 ? n : 0] = '\0';
      return nnmem__diag(diag, NNMEM_ERR_IO,
                         "%s: is a symbolic link to '%s', which does not "
                         "exist; nnmem writes through links only to existing "
                         "files (create the file or remove the link)",
                         e->shown, to);
    }
    e->target = realpath(e->shown, NULL);
    if (!e->target)
      return nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot resolve the link: %s",
                         e->shown, strerror(errno));
    return NNMEM_OK;
  }
  e->target = nnmem__strdup(e->shown);
  return e->target ? NNMEM_OK : NNMEM_ERR_NOMEM;
}

/* Splits e->target into a new "dir" string and the base name. */
static char *dir_of(const char *path, const char **base) {
  const char *slash = strrchr(path, '/');
  *base = slash ? slash + 1 : path;
  if (!slash) return nnmem__strdup(".");
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, path, n);
    d[n] = '\0';
  }
  return d;
}

/* Step 3, creating the file: opens a new temporary next to e->target. */
static int open_temp(nnmem__outset_t *s, entry_t *e, nnmem_diag_t *diag,
                     nnmem_status_t *st) {
  const char *base;
  char *dir = dir_of(e->target, &base);
  if (!dir) return *st = NNMEM_ERR_NOMEM, -1;
  long name_max = pathconf(dir, _PC_NAME_MAX);
  if (name_max <= 0) name_max = 255;
  if (!*base || strlen(base) > (size_t)name_max) {
    free(dir);
    *st = nnmem__diag(diag, NNMEM_ERR_IO, "%s: %s", e->shown,
                      *base ? "the file name is too long (over NAME_MAX)"
                            : "names a folder, not a file");
    return -1;
  }
  size_t cap = strlen(dir) + 64;
  e->tmp = malloc(cap);
  int fd = -1, err = ENOMEM;
  for (int tries = 0; e->tmp && tries < 100 && fd < 0; tries++) {
    unsigned r = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL) ^
                 (++s->counter * 40503u) ^ (unsigned)(uintptr_t)e;
    snprintf(e->tmp, cap, "%s/.%.24s.tmp-%06x", dir, base, r & 0xffffffu);
    fd = open(e->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY, 0666);
    err = errno;
    if (fd < 0 && err != EEXIST) break;
  }
  free(dir);
  if (fd < 0) {
    *st = nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot create a file there: %s",
                      e->shown, strerror(err));
    return -1;
  }
  e->tmp_live = 1;
  struct stat sb; /* a replaced file keeps its mode */
  if (stat(e->target, &sb) == 0 && S_ISREG(sb.st_mode))
    (void)fchmod(fd, sb.st_mode & 07777);
  return fd;
}

/* Writes bytes or runs fn into `f`, then flushes; 0 or -1 (errno set, or
 * *st set by fn). */
static int fill(FILE *f, const void *data, size_t len,
                nnmem__outset_write_fn fn, void *ctx, nnmem_diag_t *diag,
                nnmem_status_t *st) {
  if (fn) {
    *st = fn(ctx, f, diag);
    if (*st != NNMEM_OK) return -1;
  } else if (len && fwrite(data, 1, len, f) != len) {
    return -1;
  }
  return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

/* Step 3, writing: the temporary gets the bytes and is synced. */
static nnmem_status_t stage_regular(nnmem__outset_t *s, entry_t *e,
                                    const void *data, size_t len,
                                    nnmem__outset_write_fn fn, void *ctx,
                                    nnmem_diag_t *diag) {
  nnmem_status_t st = NNMEM_OK;
  int fd = open_temp(s, e, diag, &st);
  if (fd < 0) return st;
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    close(fd);
    return nnmem__diag(diag, NNMEM_ERR_NOMEM, "%s: out of memory", e->shown);
  }
  int failed = fill(f, data, len, fn, ctx, diag, &st);
  int err = errno;
  if (!failed && fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS)
    failed = 1, err = errno;
  if (fclose(f) != 0 && !failed) failed = 1, err = errno;
  if (!failed) return NNMEM_OK;
  if (st != NNMEM_OK) return st;
  return nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot write: %s", e->shown,
                     strerror(err));
}

static nnmem_status_t add(nnmem__outset_t *s, const char *path,
                          const void *data, size_t len,
                          nnmem__outset_write_fn fn, void *ctx,
                          nnmem_diag_t *diag) {
  if (!s || !path || !*path || (!fn && !data && len))
    return nnmem__diag(diag, NNMEM_ERR_INVALID, "output set: bad argument");
  entry_t *e = calloc(1, sizeof *e);
  if (!e || !(e->shown = nnmem__strdup(path))) {
    free(e);
    return nnmem__diag(diag, NNMEM_ERR_NOMEM, "%s: out of memory", path);
  }
  /* append first (commit writes devices in the order added): a signal
   * handler calling nnmem__outset_unlink_temps while the temporary is being
   * written and synced must find it in the list */
  entry_t *volatile *link = &s->head;
  while (*link)
    link = &(*link)->next;
  *link = e;
  nnmem_status_t st = resolve(e, diag);
  if (st == NNMEM_OK && e->device) {
    e->fn = fn;
    e->ctx = ctx;
    if (!fn && len) {
      e->bytes = malloc(len);
      if (e->bytes) memcpy(e->bytes, data, len);
      e->len = len;
      if (!e->bytes) st = NNMEM_ERR_NOMEM;
    }
  } else if (st == NNMEM_OK) {
    st = stage_regular(s, e, data, len, fn, ctx, diag);
  }
  if (st != NNMEM_OK) {
    if (st == NNMEM_ERR_NOMEM && !(diag && diag->message[0]))
      nnmem__diag(diag, st, "%s: out of memory", path);
    *link = NULL; /* e is the last entry */
    entry_free(e);
    return st;
  }
  return NNMEM_OK;
}

nnmem_status_t nnmem__outset_add_bytes(nnmem__outset_t *s, const char *path,
                                       const void *data, size_t len,
                                       nnmem_diag_t *diag) {
  return add(s, path, data ? data : "", len, NULL, NULL, diag);
}

nnmem_status_t nnmem__outset_add_fn(nnmem__outset_t *s, const char *path,
                                    nnmem__outset_write_fn fn, void *ctx,
                                    nnmem_diag_t *diag) {
  if (!fn) return nnmem__diag(diag, NNMEM_ERR_INVALID, "output set: no fn");
  return add(s, path, NULL, 0, fn, ctx, diag);
}

/* Commit step 1 for one device output: open in place (no O_CREAT: the
 * device exists; O_TRUNC only for a regular file behind a /dev or /proc
 * link). */
static nnmem_status_t write_device(entry_t *e, nnmem_diag_t *diag) {
  int fd = -1;
  struct stat t, s;
  /* /dev/stdout on a redirected stdout: share its offset (dup), so what the
   * program prints next follows instead of overwriting these bytes */
  for (int std = 1; std <= 2 && fd < 0; std++)
    if (stat(e->target, &t) == 0 && fstat(std, &s) == 0 &&
        t.st_dev == s.st_dev && t.st_ino == s.st_ino && S_ISREG(s.st_mode))
      fd = dup(std);
  /* a regular file behind a link such as /dev/fd/3 is rewritten whole:
   * without O_TRUNC a shorter output would keep the old tail */
  int trunc = fd < 0 && stat(e->target, &t) == 0 && S_ISREG(t.st_mode);
  if (fd < 0) fd = open(e->target, O_WRONLY | O_NOCTTY | (trunc ? O_TRUNC : 0));
  if (fd < 0)
    return nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot open for writing: %s",
                       e->shown, strerror(errno));
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    close(fd);
    return nnmem__diag(diag, NNMEM_ERR_NOMEM, "%s: out of memory", e->shown);
  }
  nnmem_status_t st = NNMEM_OK;
  int failed = fill(f, e->bytes, e->len, e->fn, e->ctx, diag, &st);
  int err = errno;
  if (fclose(f) != 0 && !failed) failed = 1, err = errno;
  if (!failed) return NNMEM_OK;
  if (st != NNMEM_OK) return st;
  return nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot write: %s", e->shown,
                     strerror(err));
}

nnmem_status_t nnmem__outset_commit(nnmem__outset_t *s, nnmem_diag_t *diag) {
  if (!s) return nnmem__diag(diag, NNMEM_ERR_INVALID, "output set: NULL");
  for (entry_t *e = s->head; e; e = e->next) {
    if (!e->device) continue;
    nnmem_status_t st = write_device(e, diag);
    if (st != NNMEM_OK) {
      nnmem__outset_unlink_temps(s);
      for (entry_t *x = s->head; x; x = x->next)
        x->tmp_live = 0;
      return st;
    }
  }
  for (entry_t *e = s->head; e; e = e->next) {
    if (e->device) continue;
    if (rename(e->tmp, e->target) != 0) {
      int err = errno;
      nnmem__outset_unlink_temps(s);
      for (entry_t *x = s->head; x; x = x->next)
        x->tmp_live = 0;
      return nnmem__diag(diag, NNMEM_ERR_IO,
                         "%s: cannot rename the temporary file into place: %s",
                         e->shown, strerror(err));
    }
    e->tmp_live = 0;
  }
  return NNMEM_OK;
}

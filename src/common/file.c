/* file.c - whole-file reads and atomic whole-file writes.
 *
 * nnmem_file_read / nnmem_file_read_limited:
 *   1. open the file ("-": standard input); a regular file larger than the
 *      limit is refused before reading; any other file (a pipe, a FIFO,
 *      /dev/zero) is read in doubling chunks with the limit enforced while
 *      reading (at most limit + 1 bytes are ever held);
 *   2. append a NUL terminator.
 * nnmem_file_write_atomic:
 *   an output set (common/outset.c) of one file: a temporary next to the
 *   target (O_EXCL, umask honoured, fsync), then rename(2); a link is
 *   written through (its target replaced, the link stays), a dangling link
 *   is refused, a device (/dev/null, /dev/full, a FIFO) is written in place.
 *   On any failure the target keeps its old bytes.
 *
 * Complexity: O(file size). Thread-safety: each call is independent. */
#define _DEFAULT_SOURCE /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/outset.h"
#include "common/util.h"
#include "nnmem/io.h"

/* "1.5 GiB"-style text of a byte count for messages. */
static const char *human(uint64_t n, char *buf, size_t cap) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = (double)n;
  int u = 0;
  while (v >= 1024 && u < 5)
    v /= 1024, u++;
  snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

static nnmem_status_t too_large(const char *path, uint64_t size, int exact,
                                uint64_t max, nnmem_diag_t *diag) {
  char a[32], b[32];
  if (exact) /* a regular file: its size is known */
    return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                       "%s: the input is %s, over the limit of %s; raise it "
                       "with --max-input-size",
                       path, human(size, a, sizeof a), human(max, b, sizeof b));
  /* a stream: only the bytes read so far are known */
  return nnmem__diag(diag, NNMEM_ERR_UNSUPPORTED,
                     "%s: the input is over the limit of %s (stopped reading "
                     "after %s); raise it with --max-input-size",
                     path, human(max, b, sizeof b), human(size, a, sizeof a));
}

/* Step 1 on an open stream: reads at most max + 1 bytes. */
static nnmem_status_t read_stream(FILE *f, const char *path, uint64_t max,
                                  char **data_out, size_t *len_out,
                                  nnmem_diag_t *diag) {
  char *buf = NULL;
  size_t cap = 0, len = 0;
  nnmem_status_t st = NNMEM_OK;
  for (;;) {
    size_t want = cap - len > 1 ? cap - len - 1 : 0;
    if (want == 0) {
      size_t need = len < 65536 ? 65536 : len * 2; /* doubling */
      st = nnmem__grow((void **)&buf, &cap, need + 1, 1);
      if (st != NNMEM_OK) break;
      want = cap - len - 1;
    }
    if ((uint64_t)len + want > max + 1) want = (size_t)(max + 1 - len);
    size_t n = fread(buf + len, 1, want, f);
    len += n;
    if (n == 0 || (uint64_t)len > max) break;
  }
  if (st == NNMEM_OK && ferror(f))
    st = nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot read: %s", path,
                     strerror(errno));
  else if (st == NNMEM_OK && (uint64_t)len > max)
    st = too_large(path, len, 0, max, diag);
  else if (st != NNMEM_OK)
    nnmem__diag(diag, st, "%s: out of memory reading the file", path);
  if (st != NNMEM_OK) {
    free(buf);
    return st;
  }
  if (!buf && (st = nnmem__grow((void **)&buf, &cap, 1, 1)) != NNMEM_OK)
    return nnmem__diag(diag, st, "%s: out of memory", path);
  buf[len] = '\0';
  *data_out = buf;
  *len_out = len;
  return NNMEM_OK;
}

nnmem_status_t nnmem_file_read_limited(const char *path, uint64_t max_bytes,
                                       char **data_out, size_t *len_out,
                                       nnmem_diag_t *diag) {
  if (!path || !data_out || !len_out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_file_read: NULL argument");
  *data_out = NULL;
  *len_out = 0;
  uint64_t max = max_bytes ? max_bytes : NNMEM_INPUT_MAX_DEFAULT;
  if (max > SIZE_MAX - 2) max = SIZE_MAX - 2;
  int is_stdin = strcmp(path, "-") == 0;
  const char *shown = is_stdin ? "standard input" : path;
  FILE *f = is_stdin ? stdin : fopen(path, "rb");
  if (!f)
    return nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot open: %s", path,
                       strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
    if (!is_stdin) fclose(f);
    return nnmem__diag(diag, NNMEM_ERR_IO, "%s: is a directory", shown);
  }
  if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) &&
      (uint64_t)sb.st_size > max) { /* refused before reading a byte */
    if (!is_stdin) fclose(f);
    return too_large(shown, (uint64_t)sb.st_size, 1, max, diag);
  }
  nnmem_status_t st = read_stream(f, shown, max, data_out, len_out, diag);
  if (!is_stdin) fclose(f);
  return st;
}

nnmem_status_t nnmem_file_read(const char *path, char **data_out,
                               size_t *len_out, nnmem_diag_t *diag) {
  return nnmem_file_read_limited(path, 0, data_out, len_out, diag);
}

nnmem_status_t nnmem_file_write_atomic(const char *path, const void *data,
                                       size_t len, nnmem_diag_t *diag) {
  if (!path || !*path || (!data && len))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_file_write_atomic: NULL argument");
  nnmem__outset_t *set = NULL;
  nnmem_status_t st = nnmem__outset_create(&set);
  if (st != NNMEM_OK) return nnmem__diag(diag, st, "%s: out of memory", path);
  st = nnmem__outset_add_bytes(set, path, data, len, diag);
  if (st == NNMEM_OK) st = nnmem__outset_commit(set, diag);
  nnmem__outset_destroy(set);
  return st;
}

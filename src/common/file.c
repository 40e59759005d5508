/* file.c - whole-file reads and atomic whole-file writes.
 *
 * nnmem_file_read:
 *   1. open the file, read it in doubling chunks (works for pipes and files
 *      whose size changes while reading), append a NUL terminator.
 * nnmem_file_write_atomic:
 *   1. create a unique temporary file next to the target, named
 *      "<target>.tmp-XXXXXX" (mkstemp), so the rename stays on one
 *      file system;
 *   2. write all bytes (retrying short writes and EINTR), give it the
 *      target's permissions (or 0644 for a new file), fsync it;
 *   3. rename it over the target (atomic on POSIX file systems).
 *   On any failure the temporary file is closed and unlinked: the target is
 *   either the old file or the complete new one, never a partial file.
 *   A symbolic link is followed: the file it names is replaced (the
 *   temporary goes next to that file) and the link stays. A target that
 *   exists and is not a regular file once links are followed (a device such as
 * /dev/null or /dev/stdout, a FIFO) cannot be replaced atomically: it is opened
 * and written in place, so the device stays and a write error (ENOSPC on
 * /dev/full) is reported. A directory is an error.
 *
 * Complexity: O(file size). Thread-safety: each call is independent. */
#define _DEFAULT_SOURCE /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "nnmem/io.h"

nnmem_status_t nnmem_file_read(const char *path, char **data_out,
                               size_t *len_out, nnmem_diag_t *diag) {
  if (!path || !data_out || !len_out)
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_file_read: NULL argument");
  *data_out = NULL;
  *len_out = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot open: %s", path,
                       strerror(errno));
  char *buf = NULL;
  size_t cap = 0, len = 0;
  nnmem_status_t st = NNMEM_OK;
  for (;;) {
    st = nnmem__grow((void **)&buf, &cap, len + 65536 + 1, 1);
    if (st != NNMEM_OK) break;
    size_t n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
    if (n == 0) break;
  }
  if (st == NNMEM_OK && ferror(f))
    st = nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot read: %s", path,
                     strerror(errno));
  else if (st != NNMEM_OK)
    nnmem__diag(diag, st, "%s: out of memory reading the file", path);
  fclose(f);
  if (st != NNMEM_OK) {
    free(buf);
    return st;
  }
  buf[len] = '\0';
  *data_out = buf;
  *len_out = len;
  return NNMEM_OK;
}

static int write_all(int fd, const char *p, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Writes, sets the mode and syncs the open temporary file. 0 or -1. */
static int fill_temp(int fd, const char *path, const void *data, size_t len) {
  struct stat sb;
  mode_t mode = 0644;
  if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) mode = sb.st_mode & 07777;
  if (write_all(fd, data, len) != 0) return -1;
  if (fchmod(fd, mode) != 0) return -1;
  if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS) return -1;
  return 0;
}

/* Writes to an existing non-regular target (device, FIFO) in place. */
static nnmem_status_t write_special(const char *path, const void *data,
                                    size_t len, nnmem_diag_t *diag) {
  int fd = open(path, O_WRONLY | O_TRUNC | O_NOCTTY);
  if (fd < 0)
    return nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot open for writing: %s",
                       path, strerror(errno));
  int failed = write_all(fd, data, len) != 0;
  int e = errno;
  if (close(fd) != 0 && !failed) {
    failed = 1;
    e = errno;
  }
  if (failed)
    return nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot write: %s", path,
                       strerror(e));
  return NNMEM_OK;
}

/* Steps 1-3 for a regular (or new) file at `target`; messages name `shown`,
 * the path the caller gave. */
static nnmem_status_t replace_file(const char *target, const char *shown,
                                   const void *data, size_t len,
                                   nnmem_diag_t *diag) {
  static const char suffix[] = ".tmp-XXXXXX";
  size_t n = strlen(target);
  char *tmp = malloc(n + sizeof suffix);
  if (!tmp)
    return nnmem__diag(diag, NNMEM_ERR_NOMEM, "%s: out of memory", shown);
  memcpy(tmp, target, n);
  memcpy(tmp + n, suffix, sizeof suffix);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    return nnmem__diag(diag, NNMEM_ERR_IO, "%s: cannot create a file there: %s",
                       shown, strerror(e));
  }
  const char *what = "cannot write";
  int failed = fill_temp(fd, target, data, len) != 0;
  int e = errno;
  if (close(fd) != 0 && !failed) {
    failed = 1;
    e = errno;
  }
  if (!failed && rename(tmp, target) != 0) {
    failed = 1;
    e = errno;
    what = "cannot rename the temporary file into place";
  }
  if (failed) unlink(tmp);
  free(tmp);
  if (failed)
    return nnmem__diag(diag, NNMEM_ERR_IO, "%s: %s: %s", shown, what,
                       strerror(e));
  return NNMEM_OK;
}

nnmem_status_t nnmem_file_write_atomic(const char *path, const void *data,
                                       size_t len, nnmem_diag_t *diag) {
  if (!path || !*path || (!data && len))
    return nnmem__diag(diag, NNMEM_ERR_INVALID,
                       "nnmem_file_write_atomic: NULL argument");
  struct stat sb;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
    if (S_ISDIR(sb.st_mode))
      return nnmem__diag(diag, NNMEM_ERR_IO, "%s: is a directory", path);
    return write_special(path, data, len, diag);
  }
  /* a link is followed: the file it names is replaced, the link stays */
  char *resolved = NULL;
  if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
    resolved = realpath(path, NULL);
  nnmem_status_t st =
      replace_file(resolved ? resolved : path, path, data, len, diag);
  free(resolved);
  return st;
}

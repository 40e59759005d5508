/* file.c - whole-file reads and atomic whole-file writes.
 *
 * nnmem_file_read:
 *   1. open the file, read it in doubling chunks (works for pipes and files
 *      whose size changes while reading), append a NUL terminator.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/outset.h"
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

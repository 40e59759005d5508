/* replay_main.c - a main() for the fuzz harnesses without libFuzzer: runs
 * LLVMFuzzerTestOneInput over every file named on the command line (a
 * directory stands for the regular files in it, in name order).
 *
 * 1. For each argument: a directory is listed (scandir, sorted), a file is
 *    read whole into a buffer of exactly its size (so reads past the end
 *    are caught by ASan).
 * 2. The harness runs on the bytes; it aborts on a finding.
 * Exit status: 0 when every input ran, 1 when an argument cannot be read,
 * 2 on usage. CTest runs it on tests/fuzz/corpus/<target>/ (label unit).
 * Not thread-safe. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: %s\n", path, strerror(errno));
    return 1;
  }
  size_t cap = 4096, len = 0;
  uint8_t *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap) {
      uint8_t *nb = realloc(buf, cap * 2);
      if (!nb) break;
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (!buf) return 1;
  /* exact-size copy: a read past `len` is an ASan report */
  uint8_t *exact = malloc(len ? len : 1);
  if (!exact) {
    free(buf);
    return 1;
  }
  memcpy(exact, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 0;
}

static int skip_entry(const struct dirent *e) {
  return e->d_name[0] != '.' && strcmp(e->d_name, "README.md") != 0;
}

static int run_dir(const char *dir, size_t *count) {
  struct dirent **list = NULL;
  int n = scandir(dir, &list, skip_entry, alphasort);
  if (n < 0) {
    fprintf(stderr, "%s: %s\n", dir, strerror(errno));
    return 1;
  }
  int rc = 0;
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
    if (!rc) rc = run_file(path);
    (*count)++;
    free(list[i]);
  }
  free(list);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 2;
  }
  size_t count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    int rc;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      rc = run_dir(argv[i], &count);
    } else {
      rc = run_file(argv[i]);
      count++;
    }
    if (rc) return 1;
  }
  printf("replayed %zu inputs\n", count);
  return 0;
}

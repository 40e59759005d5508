/* version.c - nnmem_version() and nnmem_version_number(): the version of the
 * running library, taken from the generated nnmem/version.h (CMake's
 * project(VERSION ...)). A program compiled against one set of headers and
 * run with another libnnmem.so sees the difference between these and the
 * NNMEM_VERSION_* macros. Thread-safe: constants only. */
#include "nnmem/version.h"

const char *nnmem_version(void) {
  return NNMEM_VERSION_STRING;
}

uint32_t nnmem_version_number(void) {
  return NNMEM_VERSION_NUMBER;
}
